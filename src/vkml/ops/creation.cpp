// Creation ops: no inputs, so nothing to differentiate.
#include "vkml/ops/creation.h"

#include <cmath>
#include <cstring>
#include <mutex>

#include "vkml/backend/cpu/creation.h"
#include "vkml/core/grad_mode.h"
#include "vkml/ops/elementwise.h"
#include "vkml/ops/op.h"
#include "vkml/ops/shape_ops.h"

namespace vk {
namespace {

Meta infer_creation(const std::vector<Tensor>&, const Attrs& a, std::string_view op) {
  numel_of(a.shape, op);  // validates
  return {a.shape, a.dtype};
}

Meta infer_random_float(const std::vector<Tensor>& in, const Attrs& a, std::string_view op) {
  VK_CHECK(is_floating(a.dtype), DTypeError, op, ": expected a floating dtype, got ",
           dtype_name(a.dtype));
  return infer_creation(in, a, op);
}

Meta infer_randint(const std::vector<Tensor>& in, const Attrs& a, std::string_view op) {
  VK_CHECK(a.stop > a.start, ShapeError, op, ": empty range [", a.start, ", ", a.stop, ")");
  VK_CHECK(!is_floating(a.dtype) || a.dtype == DType::Float64 || a.dtype == DType::Float32,
           DTypeError, op, ": bad dtype");
  return infer_creation(in, a, op);
}

constexpr std::string_view kCreation = "creation: no tensor inputs";

struct Rng {
  std::mutex mutex;
  RngState state{0x5eed, 0};
};
Rng& rng() {
  static Rng r;
  return r;
}

// Reserves `n` counters of the global stream; each element of a draw uses its own counter.
Attrs random_attrs(const Shape& shape, DType dtype, std::string_view op) {
  Attrs a;
  a.shape = shape;
  a.dtype = dtype;
  std::lock_guard<std::mutex> lock(rng().mutex);
  a.seed = rng().state.seed;
  a.offset = rng().state.offset;
  rng().state.offset += static_cast<uint64_t>(numel_of(shape, op));
  return a;
}

}  // namespace

void add_creation_ops(OpList& ops) {
  ops.push_back({.kind = OpKind::Full,
                 .name = "full",
                 .arity = 0,
                 .signature = "full(shape, value, dtype)",
                 .summary = "a tensor of `shape` filled with `value`",
                 .infer = infer_creation,
                 .cpu = cpu::full,
                 .grad_doc = kCreation});
  ops.push_back({.kind = OpKind::Arange,
                 .name = "arange",
                 .arity = 0,
                 .signature = "arange(start, stop, step, dtype)",
                 .summary = "start, start + step, ... up to but excluding stop",
                 .infer = infer_creation,
                 .cpu = cpu::arange,
                 .grad_doc = kCreation});
  ops.push_back({.kind = OpKind::Rand,
                 .name = "rand",
                 .arity = 0,
                 .signature = "rand(shape, dtype)",
                 .summary = "uniform samples in [0, 1) from the counter-based generator",
                 .infer = infer_random_float,
                 .cpu = cpu::rand,
                 .grad_doc = kCreation});
  ops.push_back({.kind = OpKind::Randn,
                 .name = "randn",
                 .arity = 0,
                 .signature = "randn(shape, dtype)",
                 .summary = "standard normal samples (Box-Muller over Philox)",
                 .infer = infer_random_float,
                 .cpu = cpu::randn,
                 .grad_doc = kCreation});
  ops.push_back({.kind = OpKind::Randint,
                 .name = "randint",
                 .arity = 0,
                 .signature = "randint(low, high, shape, dtype)",
                 .summary = "uniform integers in [low, high)",
                 .infer = infer_randint,
                 .cpu = cpu::randint,
                 .grad_doc = kCreation});
}

Tensor full(const Shape& shape, double value, DType dtype) {
  Attrs a;
  a.shape = shape;
  a.scalar = value;
  a.dtype = dtype;
  return dispatch(OpKind::Full, {}, a);
}
Tensor zeros(const Shape& shape, DType dtype) { return full(shape, 0.0, dtype); }
Tensor ones(const Shape& shape, DType dtype) { return full(shape, 1.0, dtype); }
Tensor full_like(const Tensor& t, double value) { return full(t.shape(), value, t.dtype()); }
Tensor zeros_like(const Tensor& t) { return full(t.shape(), 0.0, t.dtype()); }
Tensor ones_like(const Tensor& t) { return full(t.shape(), 1.0, t.dtype()); }

Tensor scalar_like(double value, const Tensor& like) {
  DType dt = like.dtype();
  if (!is_floating(dt) && (value != std::floor(value) || !std::isfinite(value)))
    dt = DType::Float32;
  else if (dt == DType::Bool && value != 0.0 && value != 1.0)
    dt = DType::Int64;
  return full({}, value, dt);
}

Tensor arange(double start, double stop, double step, DType dtype) {
  VK_CHECK(step != 0, ShapeError, "arange: step must be nonzero");
  VK_CHECK(std::isfinite(start) && std::isfinite(stop) && std::isfinite(step), ShapeError,
           "arange: unsupported range ", start, " -> ", stop, " with step ", step,
           " (bounds and step must be finite)");
  double count = std::ceil((stop - start) / step);
  VK_CHECK(count < 9.0e18, ShapeError, "arange: the range ", start, " -> ", stop, " with step ",
           step, " has too many elements");
  Attrs a;
  a.shape = {count > 0 ? static_cast<int64_t>(count) : 0};
  a.scalar = start;
  a.scalar2 = step;
  a.dtype = dtype;
  return dispatch(OpKind::Arange, {}, a);
}

Tensor linspace(double start, double stop, int64_t steps, DType dtype) {
  VK_CHECK(steps >= 0, SizeError, "linspace: number of steps must be non-negative, got ", steps);
  if (steps <= 1) return full({steps}, start, dtype);
  Tensor i = arange(0, static_cast<double>(steps), 1, DType::Float64);
  return cast(i * ((stop - start) / static_cast<double>(steps - 1)) + start, dtype);
}

Tensor eye(int64_t n, DType dtype) { return eye(n, n, dtype); }

Tensor eye(int64_t n, int64_t m, DType dtype) {
  // Checked here: reshape would take a -1 for "infer this size" (eye(-1) was a 0 x 0 matrix).
  VK_CHECK(n >= 0, SizeError, "eye: n must be greater or equal to 0, got ", n);
  VK_CHECK(m >= 0, SizeError, "eye: m must be greater or equal to 0, got ", m);
  numel_of({n, m}, "eye");
  Tensor rows = reshape(arange(0, static_cast<double>(n), 1, DType::Int64), {n, 1});
  Tensor cols = reshape(arange(0, static_cast<double>(m), 1, DType::Int64), {1, m});
  return cast(eq(rows, cols), dtype);
}

Tensor rand(const Shape& shape, DType dtype) {
  return dispatch(OpKind::Rand, {}, random_attrs(shape, dtype, "rand"));
}
Tensor randn(const Shape& shape, DType dtype) {
  return dispatch(OpKind::Randn, {}, random_attrs(shape, dtype, "randn"));
}
Tensor randint(int64_t low, int64_t high, const Shape& shape, DType dtype) {
  Attrs a = random_attrs(shape, dtype, "randint");
  a.start = low;
  a.stop = high;
  return dispatch(OpKind::Randint, {}, a);
}

void manual_seed(uint64_t seed) {
  std::lock_guard<std::mutex> lock(rng().mutex);
  rng().state = {seed, 0};
}
RngState get_rng_state() {
  std::lock_guard<std::mutex> lock(rng().mutex);
  return rng().state;
}
void set_rng_state(RngState state) {
  std::lock_guard<std::mutex> lock(rng().mutex);
  rng().state = state;
}

Tensor from_data(const void* data, const Shape& shape, DType dtype) {
  Tensor t = Tensor::empty(shape, dtype);
  if (t.numel() > 0)
    std::memcpy(t.raw_data(), data, static_cast<size_t>(t.numel()) * dtype_size(dtype));
  return t;
}

Tensor from_vector(const std::vector<double>& values, const Shape& shape, DType dtype) {
  VK_CHECK(static_cast<int64_t>(values.size()) == numel_of(shape), ShapeError,
           "from_vector: ", values.size(), " values for shape ", shape_str(shape));
  Tensor t = Tensor::empty(shape, dtype);
  VK_DISPATCH_ALL(dtype, "from_vector", {
    T* p = t.data<T>();
    for (size_t i = 0; i < values.size(); ++i) p[i] = static_cast<T>(values[i]);
  });
  return t;
}

std::vector<double> to_vector(const Tensor& t) {
  NoGradGuard no_grad;
  Tensor c = contiguous(t);
  std::vector<double> out(static_cast<size_t>(c.numel()));
  VK_DISPATCH_ALL(c.dtype(), "to_vector", {
    const T* p = c.data<T>();
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<double>(p[i]);
  });
  return out;
}

}  // namespace vk
