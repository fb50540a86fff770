// Creation ops: no inputs, so nothing to differentiate.
#include "vkml/ops/creation.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <mutex>
#include <random>

#include "vkml/ops/composite.h"
#include "vkml/ops/device_ops.h"
#include "vkml/ops/elementwise.h"
#include "vkml/ops/inplace.h"
#include "vkml/ops/op.h"
#include "vkml/ops/shape.h"

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
  return infer_creation(in, a, op);
}

constexpr std::string_view kCreation = "creation: no tensor inputs";

// Reserves the draws of one random op from `gen` (or the default generator); each element of a
// draw uses its own counter.
Attrs random_attrs(const Shape& shape, DType dtype, Device device, Generator* gen,
                   std::string_view op) {
  Attrs a;
  a.shape = shape;
  a.dtype = dtype;
  a.device = device;
  const RngState s = reserve_draws(gen, device, static_cast<uint64_t>(numel_of(shape, op)), op);
  a.seed = s.seed;
  a.offset = s.offset;
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
                 .grad_doc = kCreation});
  ops.push_back({.kind = OpKind::Arange,
                 .name = "arange",
                 .arity = 0,
                 .signature = "arange(start, stop, step, dtype)",
                 .summary = "start, start + step, ... up to but excluding stop",
                 .infer = infer_creation,
                 .grad_doc = kCreation});
  ops.push_back({.kind = OpKind::Rand,
                 .name = "rand",
                 .arity = 0,
                 .signature = "rand(shape, dtype)",
                 .summary = "uniform samples in [0, 1) from the counter-based generator",
                 .infer = infer_random_float,
                 .grad_doc = kCreation});
  ops.push_back({.kind = OpKind::Randn,
                 .name = "randn",
                 .arity = 0,
                 .signature = "randn(shape, dtype)",
                 .summary = "standard normal samples (Box-Muller pairs over Philox: the cosine and "
                            "sine of one draw)",
                 .infer = infer_random_float,
                 .grad_doc = kCreation});
  ops.push_back({.kind = OpKind::Randint,
                 .name = "randint",
                 .arity = 0,
                 .signature = "randint(low, high, shape, dtype)",
                 .summary = "uniform integers in [low, high)",
                 .infer = infer_randint,
                 .grad_doc = kCreation});
}

Tensor full(const Shape& shape, Scalar value, DType dtype, Device device) {
  VK_DISPATCH_STORAGE(dtype, "full", (void)value.to<T>("full"));  // raises when it does not fit
  Attrs a;
  a.shape = shape;
  a.value = value;
  a.dtype = dtype;
  a.device = device;
  return dispatch(OpKind::Full, {}, a);
}
Tensor zeros(const Shape& shape, DType dtype, Device device) {
  return full(shape, 0, dtype, device);
}
Tensor ones(const Shape& shape, DType dtype, Device device) {
  return full(shape, 1, dtype, device);
}
Tensor full_like(const Tensor& t, Scalar value) {
  return full(t.shape(), value, t.dtype(), t.device());
}
Tensor zeros_like(const Tensor& t) { return full(t.shape(), 0, t.dtype(), t.device()); }
Tensor ones_like(const Tensor& t) { return full(t.shape(), 1, t.dtype(), t.device()); }

// Made directly rather than through the op table: x * 2.0 makes one on every call.
Tensor scalar_tensor(Scalar value, DType dtype, std::string_view op) {
  Tensor t = Tensor::empty({}, dtype);
  VK_DISPATCH_STORAGE(dtype, op, *t.data<T>() = value.to<T>(op));
  return t;
}

Tensor scalar_like(Scalar value, const Tensor& like, std::string_view op) {
  const DType dtype = result_type(like.dtype(), value);
  Tensor t = Tensor::empty({}, dtype);
  // Arithmetic rounds a float into float32 (1e300 -> inf), as PyTorch; an int must fit.
  VK_DISPATCH_STORAGE(dtype, op, *t.data<T>() = value.to<T>(op, /*check_float_range=*/false));
  return t;
}

Scalar item_scalar(const Tensor& t) {
  VK_CHECK(t.numel() == 1, RuntimeError, "a Tensor with ", t.numel(),
           " elements cannot be converted to a scalar (it needs exactly one element)");
  switch (t.dtype()) {
    case DType::Bool:
      return *t.data<bool>();
    case DType::UInt8:
      return *t.data<uint8_t>();
    case DType::Int8:
      return *t.data<int8_t>();
    case DType::Int16:
      return *t.data<int16_t>();
    case DType::Float16:
      return static_cast<float>(*t.data<Half>());
    case DType::BFloat16:
      return static_cast<float>(*t.data<BFloat16>());
    case DType::Int32:
      return *t.data<int32_t>();
    case DType::Int64:
      return *t.data<int64_t>();
    case DType::Float32:
      return *t.data<float>();
    case DType::Float64:
      return *t.data<double>();
  }
  return {};
}

Tensor cast_checked(const Tensor& x, DType dtype, std::string_view op) {
  if (x.dtype() == dtype) return x;
  if (is_integral(dtype)) {  // into a float: rounds (1e300 -> inf); into bool: never fails
    Tensor c = host_read(x);
    VK_DISPATCH_STORAGE(c.dtype(), op, {
      using From = T;
      const From* p = c.data<From>();
      VK_DISPATCH_STORAGE(dtype, op, {
        for (int64_t i = 0; i < c.numel(); ++i) (void)Scalar(p[i]).to<T>(op, false);
      });
    });
  }
  return cast(x, dtype);
}

namespace {

// The length of an exact integer range: ceil((stop - start) / step), 0 when empty, computed in
// uint64 so that no step between int64 bounds can overflow.
uint64_t int_range_length(int64_t start, int64_t stop, int64_t step) {
  if (step > 0 && stop > start)
    return (static_cast<uint64_t>(stop) - static_cast<uint64_t>(start) - 1) /
               static_cast<uint64_t>(step) +
           1;
  if (step < 0 && stop < start)
    return (static_cast<uint64_t>(start) - static_cast<uint64_t>(stop) - 1) /
               (uint64_t{0} - static_cast<uint64_t>(step)) +
           1;
  return 0;
}

// Integer bounds and step into an integer dtype: the length and every value in integers.
Tensor arange_integers(int64_t start, int64_t stop, int64_t step, DType dtype, Device device) {
  VK_CHECK(step != 0, ShapeError, "arange: step must be nonzero");
  const uint64_t n = int_range_length(start, stop, step);
  VK_CHECK(n <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()), ShapeError,
           "arange: the range ", start, " -> ", stop, " with step ", step,
           " has too many elements");
  if (n > 0) {  // the first and last values bound the rest
    const int64_t last =
        static_cast<int64_t>(static_cast<uint64_t>(start) + (n - 1) * static_cast<uint64_t>(step));
    VK_DISPATCH_STORAGE(dtype, "arange", {
      (void)Scalar(start).to<T>("arange");
      (void)Scalar(last).to<T>("arange");
    });
  }
  Attrs a;
  a.dtype = dtype;
  a.device = device;
  a.arange.integers = true;
  a.shape = {static_cast<int64_t>(n)};
  a.start = start;
  a.step = step;
  return dispatch(OpKind::Arange, {}, a);
}

// Anything else: in double, as PyTorch (the length is ceil((stop - start) / step)).
Tensor arange_doubles(Scalar start, Scalar stop, Scalar step, DType dtype, Device device) {
  // An integer dtype must hold both bounds (a big int such as 2^63 does not), as PyTorch.
  if (is_integral(dtype))
    VK_DISPATCH_STORAGE(dtype, "arange", {
      (void)start.to<T>("arange");
      (void)stop.to<T>("arange");
    });
  const double first = start.to_double(), end = stop.to_double(), by = step.to_double();
  VK_CHECK(by != 0, ShapeError, "arange: step must be nonzero");
  VK_CHECK(std::isfinite(first) && std::isfinite(end) && std::isfinite(by), ShapeError,
           "arange: unsupported range ", start, " -> ", stop, " with step ", step,
           " (bounds and step must be finite)");
  const double count = std::ceil((end - first) / by);
  VK_CHECK(count < 9.0e18, ShapeError, "arange: the range ", start, " -> ", stop, " with step ",
           step, " has too many elements");
  if (count > 0)
    VK_DISPATCH_STORAGE(dtype, "arange", {
      (void)Scalar(first).to<T>("arange", false);
      (void)Scalar(first + (count - 1) * by).to<T>("arange", false);
    });
  Attrs a;
  a.dtype = dtype;
  a.device = device;
  a.shape = {count > 0 ? static_cast<int64_t>(count) : 0};
  a.arange.start = first;
  a.arange.step = by;
  return dispatch(OpKind::Arange, {}, a);
}

}  // namespace

Tensor arange(Scalar start, Scalar stop, Scalar step, DType dtype, Device device) {
  auto exact = [](const Scalar& s) { return !s.is_floating() && !s.is_big(); };
  if (!is_floating(dtype) && exact(start) && exact(stop) && exact(step))
    return arange_integers(start.to_int64(), stop.to_int64(), step.to_int64(), dtype, device);
  return arange_doubles(start, stop, step, dtype, device);
}

Tensor linspace(double start, double stop, int64_t steps, DType dtype) {
  VK_CHECK(steps >= 0, SizeError, "linspace: number of steps must be non-negative, got ", steps);
  if (steps <= 1) return full({steps}, start, dtype);
  Tensor i = arange(0, steps, 1, DType::Float64);
  return cast(i * ((stop - start) / static_cast<double>(steps - 1)) + start, dtype);
}

Tensor eye(int64_t n, DType dtype) { return eye(n, n, dtype); }

Tensor eye(int64_t n, int64_t m, DType dtype) {
  // Checked here: reshape would take a -1 for "infer this size" (eye(-1) was a 0 x 0 matrix).
  VK_CHECK(n >= 0, SizeError, "eye: n must be greater or equal to 0, got ", n);
  VK_CHECK(m >= 0, SizeError, "eye: m must be greater or equal to 0, got ", m);
  numel_of({n, m}, "eye");
  // Zeros with ones written on the diagonal view: no n x m intermediate (eq of an arange column
  // and row made an n x m bool first: a quarter of a float32 result again, written before the
  // result's own allocation could fail).
  Tensor out = zeros({n, m}, dtype);
  if (n > 0 && m > 0) fill_(diagonal(out), 1);
  return out;
}

Tensor rand(const Shape& shape, DType dtype, Device device, Generator* gen) {
  return dispatch(OpKind::Rand, {}, random_attrs(shape, dtype, device, gen, "rand"));
}
Tensor randn(const Shape& shape, DType dtype, Device device, Generator* gen) {
  return dispatch(OpKind::Randn, {}, random_attrs(shape, dtype, device, gen, "randn"));
}
Tensor randint(int64_t low, int64_t high, const Shape& shape, DType dtype, Device device,
               Generator* gen) {
  // As PyTorch: both ends of [low, high - 1] must fit the dtype (int32: 2^40 does not).
  if (high > low)
    VK_DISPATCH_STORAGE(dtype, "randint", {
      (void)Scalar(low).to<T>("randint");
      (void)Scalar(high - 1).to<T>("randint");
    });
  Attrs a = random_attrs(shape, dtype, device, gen, "randint");
  a.start = low;
  a.stop = high;
  return dispatch(OpKind::Randint, {}, a);
}

// ---- Generator (issue 15 item 3) ----

void Generator::manual_seed(uint64_t seed) {
  std::lock_guard<std::mutex> lock(mutex_);
  state_ = {seed, 0};
  initial_seed_ = seed;
}
uint64_t Generator::seed() {
  // As torch's Generator.seed(): a nondeterministic seed (here 64 bits of random_device).
  std::random_device source;
  const uint64_t s = (uint64_t{source()} << 32) ^ source();
  manual_seed(s);
  return s;
}
uint64_t Generator::initial_seed() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return initial_seed_;
}
RngState Generator::state() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return state_;
}
void Generator::set_state(RngState state) {
  std::lock_guard<std::mutex> lock(mutex_);
  state_ = state;
}
RngState Generator::reserve(uint64_t n) {
  std::lock_guard<std::mutex> lock(mutex_);
  const RngState before = state_;
  state_.offset += n;
  return before;
}

Generator& default_generator() {
  static Generator g;
  return g;
}

RngState reserve_draws(Generator* gen, Device device, uint64_t n, std::string_view op) {
  if (gen == nullptr) return default_generator().reserve(n);
  // As torch: a generator serves the device type it was made for (the default one serves all).
  VK_CHECK(gen->device().type == device.type, RuntimeError, op, ": expected a '",
           device_type_name(device.type), "' device type for generator but found '",
           device_type_name(gen->device().type), "'");
  return gen->reserve(n);
}

void manual_seed(uint64_t seed) { default_generator().manual_seed(seed); }
RngState get_rng_state() { return default_generator().state(); }
void set_rng_state(RngState state) { default_generator().set_state(state); }

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
  VK_DISPATCH_STORAGE(dtype, "from_vector", {
    T* p = t.data<T>();
    for (size_t i = 0; i < values.size(); ++i) p[i] = static_cast<T>(values[i]);
  });
  return t;
}

std::vector<double> to_vector(const Tensor& t) {
  Tensor c = host_read(t);
  std::vector<double> out(static_cast<size_t>(c.numel()));
  VK_DISPATCH_STORAGE(c.dtype(), "to_vector", {
    const T* p = c.data<T>();
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<double>(p[i]);
  });
  return out;
}

}  // namespace vk
