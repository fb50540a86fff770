#include "vkml/ops/autocast.h"

#include <array>
#include <unordered_map>
#include <utility>

#include "vkml/core/error.h"
#include "vkml/core/grad_mode.h"
#include "vkml/ops/elementwise.h"
#include "vkml/ops/op.h"

namespace vk {
namespace {

thread_local AutocastState t_autocast;  // each thread starts with no region

struct CachedCast {
  Tensor source;  // held, so that the key below names it while the entry lives
  uint32_t version;
  Tensor cast;
};
struct CastCache {
  bool enabled = true;
  int nesting = 0;
  std::unordered_map<const TensorImpl*, CachedCast> casts;
};
thread_local CastCache t_cast_cache;

// t cast to `to`, through the cache when t is a weight (a float32 leaf requiring grad) cast to
// the low precision in grad mode.
Tensor cast_for_autocast(const Tensor& t, DType to) {
  CastCache& cache = t_cast_cache;
  // (only inside a counted region: a checkpoint's recompute runs in its forward's state outside
  // any, and nothing would ever clear what it cached)
  const bool cacheable = cache.enabled && cache.nesting > 0 && is_half(to) &&
                         t.dtype() == DType::Float32 && t.is_leaf() && t.requires_grad() &&
                         GradMode::is_enabled();
  if (!cacheable) return cast(t, to);
  auto it = cache.casts.find(t.impl());
  if (it != cache.casts.end()) {
    const CachedCast& c = it->second;
    if (c.version == t.version() && c.cast.dtype() == to && !c.cast.impl()->graph_freed)
      return c.cast;
  }
  Tensor out = cast(t, to);
  cache.casts.insert_or_assign(t.impl(), CachedCast{t, t.version(), out});
  return out;
}

uint32_t bit(DeviceType type) { return 1u << static_cast<unsigned>(type); }

// PyTorch's CUDA policy, the numerically safer of its two, on every device: matrix products in
// low precision; what needs float32's range or accumulates (exp/log/pow, softmax, sums, norms)
// in float32. PyTorch's CPU policy keeps softmax and layer_norm in bfloat16; vkml does not.
// Losses need no entry: they are composed of these ops (cross_entropy of log_softmax, mse of
// pow and mean), so they compute in float32. Ops not listed keep their inputs' dtypes; binary
// ops of a float16 and a float32 tensor promote to float32, as PyTorch's "promote" list does.
constexpr std::pair<OpKind, AutocastPolicy> kPolicies[] = {
    {OpKind::Matmul, AutocastPolicy::LowPrecision},
    {OpKind::Addmm, AutocastPolicy::LowPrecision},
    {OpKind::Conv2d, AutocastPolicy::LowPrecision},
    {OpKind::LstmCell, AutocastPolicy::LowPrecision},
    {OpKind::Attention, AutocastPolicy::LowPrecision},  // torch: scaled_dot_product_attention
    {OpKind::Exp, AutocastPolicy::Float32},
    {OpKind::Expm1, AutocastPolicy::Float32},
    {OpKind::Log, AutocastPolicy::Float32},
    {OpKind::Log1p, AutocastPolicy::Float32},
    {OpKind::Pow, AutocastPolicy::Float32},
    {OpKind::Reciprocal, AutocastPolicy::Float32},
    {OpKind::Rsqrt, AutocastPolicy::Float32},
    {OpKind::Tan, AutocastPolicy::Float32},
    {OpKind::Asin, AutocastPolicy::Float32},
    {OpKind::Acos, AutocastPolicy::Float32},
    {OpKind::Sinh, AutocastPolicy::Float32},
    {OpKind::Cosh, AutocastPolicy::Float32},
    {OpKind::Erfinv, AutocastPolicy::Float32},
    {OpKind::Log2, AutocastPolicy::Float32},
    {OpKind::Log10, AutocastPolicy::Float32},
    {OpKind::Softmax, AutocastPolicy::Float32},
    {OpKind::LogSoftmax, AutocastPolicy::Float32},
    {OpKind::LogSumExp, AutocastPolicy::Float32},
    {OpKind::Sum, AutocastPolicy::Float32},
    {OpKind::Mean, AutocastPolicy::Float32},
    {OpKind::Var, AutocastPolicy::Float32},
    {OpKind::SumSquares, AutocastPolicy::Float32},  // torch: norm
    {OpKind::Prod, AutocastPolicy::Float32},
    {OpKind::CumSum, AutocastPolicy::Float32},
    {OpKind::CumProd, AutocastPolicy::Float32},
    {OpKind::LayerNorm, AutocastPolicy::Float32},
    {OpKind::BatchNorm, AutocastPolicy::Float32},
};

}  // namespace

const char* autocast_policy_name(AutocastPolicy p) {
  switch (p) {
    case AutocastPolicy::LowPrecision:
      return "low precision";
    case AutocastPolicy::Float32:
      return "float32";
    case AutocastPolicy::Keep:
      break;
  }
  return "inputs' dtype";
}

// The dtype of a region without one given: bfloat16 on the CPU, float16 on GPUs.
AutocastState::AutocastState() {
  dtype.fill(DType::Float16);
  dtype[static_cast<size_t>(DeviceType::CPU)] = DType::BFloat16;
}

bool Autocast::is_enabled(DeviceType type) { return (t_autocast.enabled_mask & bit(type)) != 0; }
DType Autocast::dtype(DeviceType type) { return t_autocast.dtype[static_cast<size_t>(type)]; }
bool Autocast::any_enabled() { return t_autocast.enabled_mask != 0; }

void Autocast::set(DeviceType type, bool enabled, DType dtype) {
  VK_CHECK(is_half(dtype), DTypeError, "autocast: the lower precision dtype must be float16 or ",
           "bfloat16, got ", dtype_name(dtype));
  VK_CHECK(static_cast<size_t>(type) < kMaxDeviceTypes, RuntimeError, "autocast: bad device type");
  t_autocast.enabled_mask =
      enabled ? t_autocast.enabled_mask | bit(type) : t_autocast.enabled_mask & ~bit(type);
  t_autocast.dtype[static_cast<size_t>(type)] = dtype;
}

AutocastGuard::AutocastGuard(DeviceType type, bool enabled, DType dtype)
    : type_(type), saved_enabled_(Autocast::is_enabled(type)), saved_dtype_(Autocast::dtype(type)) {
  Autocast::set(type, enabled, dtype);
  Autocast::enter_region();
}

AutocastGuard::~AutocastGuard() {
  Autocast::exit_region();
  Autocast::set(type_, saved_enabled_, saved_dtype_);
}

const AutocastState& Autocast::state() { return t_autocast; }

bool Autocast::cache_enabled() { return t_cast_cache.enabled; }
void Autocast::set_cache_enabled(bool enabled) { t_cast_cache.enabled = enabled; }
void Autocast::clear_cache() { t_cast_cache.casts.clear(); }
size_t Autocast::cache_size() { return t_cast_cache.casts.size(); }
int Autocast::enter_region() { return ++t_cast_cache.nesting; }
int Autocast::exit_region() {
  if (--t_cast_cache.nesting <= 0) {
    t_cast_cache.nesting = 0;
    clear_cache();
  }
  return t_cast_cache.nesting;
}

AutocastStateGuard::AutocastStateGuard(const AutocastState& state) : saved_(t_autocast) {
  t_autocast = state;
}
AutocastStateGuard::~AutocastStateGuard() { t_autocast = saved_; }

NoAutocastGuard::NoAutocastGuard() : saved_mask_(t_autocast.enabled_mask) {
  t_autocast.enabled_mask = 0;
}
NoAutocastGuard::~NoAutocastGuard() { t_autocast.enabled_mask = saved_mask_; }

void set_autocast_policies(std::vector<OpDef>& table) {
  for (const auto& [kind, policy] : kPolicies) table[static_cast<size_t>(kind)].autocast = policy;
}

void autocast_inputs(const OpDef& def, std::vector<Tensor>& in, DeviceType type) {
  const DType to =
      def.autocast == AutocastPolicy::LowPrecision ? Autocast::dtype(type) : DType::Float32;
  // float64 is left alone (as PyTorch: a float64 input means the program asked for it), and so
  // are integers and bool (their ops decide what they compute in).
  for (Tensor& t : in)
    if (is_floating(t.dtype()) && t.dtype() != DType::Float64 && t.dtype() != to)
      t = cast_for_autocast(t, to);
}

}  // namespace vk
