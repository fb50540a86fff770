// Element-wise CPU kernels. Every kernel is one scalar function handed to loops.h's map_elements():
// operands are already of one shape and (except where's condition) one dtype, so a kernel only
// picks the C++ element type and says what happens to one element. Each output element depends only
// on the input elements at its index, so results are bitwise identical at any thread count.
#include "vkml/backend/cpu/elementwise.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <limits>
#include <optional>
#include <type_traits>

#include "vkml/backend/cpu/checked_blocks.h"
#include "vkml/backend/cpu/loops.h"
#include "vkml/backend/cpu/rounding.h"
#include "vkml/backend/cpu/vmath.h"
#include "vkml/backend/cpu/vmath_trig.h"

namespace vk::cpu {
inline namespace VKML_CPU_ISA {
namespace {

// Elements per thread for ops that still call scalar libm (sin, log1p, ...): each element
// costs tens of nanoseconds, so splitting pays off sooner.
constexpr int64_t kLibmGrain = kElementwiseGrain / 8;

template <class F>
Tensor unary_float(const Tensor& x, const Meta& m, const char* name, F f,
                   int64_t grain = kLibmGrain, ElementCost cost = ElementCost::costly) {
  Tensor out = Tensor::empty(m.shape, m.dtype);
  VK_DISPATCH_FLOAT(x.dtype(), name,
                    map_elements<T, T>(
                        out, {&x}, [&](T v) VK_ELEMENT -> T { return f(v); }, grain, cost));
  return out;
}

template <class F>
Tensor unary_numeric(const Tensor& x, const Meta& m, const char* name, F f) {
  Tensor out = Tensor::empty(m.shape, m.dtype);
  VK_DISPATCH_NUMERIC(x.dtype(), name,
                      map_elements<T, T>(
                          out, {&x}, [&](T v) VK_ELEMENT -> T { return f(v); }, kElementwiseGrain,
                          ElementCost::cheap));
  return out;
}

template <class F>
Tensor binary_numeric(const std::vector<Tensor>& in, const Meta& m, const char* name, F f,
                      int64_t grain = kElementwiseGrain, ElementCost cost = ElementCost::cheap) {
  Tensor out = Tensor::empty(m.shape, m.dtype);
  VK_DISPATCH_NUMERIC(
      in[0].dtype(), name,
      map_elements<T, T, T>(
          out, {&in[0], &in[1]}, [&](T x, T y) VK_ELEMENT -> T { return f(x, y); }, grain, cost));
  return out;
}

// Two floating operands of the output's dtype (the backward ops of the activations).
template <class F>
Tensor binary_float(const std::vector<Tensor>& in, const Meta& m, const char* name, F f,
                    ElementCost cost = ElementCost::cheap) {
  Tensor out = Tensor::empty(m.shape, m.dtype);
  VK_DISPATCH_FLOAT(m.dtype, name,
                    map_elements<T, T, T>(
                        out, {&in[0], &in[1]}, [&](T x, T y) VK_ELEMENT -> T { return f(x, y); },
                        kElementwiseGrain, cost));
  return out;
}

template <class F>
Tensor binary_all(const std::vector<Tensor>& in, const Meta& m, const char* name, F f) {
  Tensor out = Tensor::empty(m.shape, m.dtype);
  VK_DISPATCH_ALL(in[0].dtype(), name,
                  map_elements<T, T, T>(
                      out, {&in[0], &in[1]}, [&](T x, T y) VK_ELEMENT -> T { return f(x, y); },
                      kElementwiseGrain, ElementCost::cheap));
  return out;
}

// Bool and integer dtypes only (bitwise ops; the op's infer refuses floats).
template <class F>
Tensor binary_integral(const std::vector<Tensor>& in, const Meta& m, const char* name, F f) {
  Tensor out = Tensor::empty(m.shape, m.dtype);
  switch (in[0].dtype()) {
    VK_DTYPE_CASE(Bool, bool,
                  map_elements<T, T, T>(
                      out, {&in[0], &in[1]},
                      [&](T x, T y) VK_ELEMENT -> T { return static_cast<T>(f(x, y)); },
                      kElementwiseGrain, ElementCost::cheap))
    VK_DTYPE_CASE(Int32, int32_t,
                  map_elements<T, T, T>(
                      out, {&in[0], &in[1]},
                      [&](T x, T y) VK_ELEMENT -> T { return static_cast<T>(f(x, y)); },
                      kElementwiseGrain, ElementCost::cheap))
    VK_DTYPE_CASE(Int64, int64_t,
                  map_elements<T, T, T>(
                      out, {&in[0], &in[1]},
                      [&](T x, T y) VK_ELEMENT -> T { return static_cast<T>(f(x, y)); },
                      kElementwiseGrain, ElementCost::cheap))
    default:
      throw DTypeError(
          detail::cat(name, ": expected bool or integer tensors, got ", dtype_name(in[0].dtype())));
  }
  return out;
}

template <class F>
Tensor compare(const std::vector<Tensor>& in, const Meta& m, const char* name, F f) {
  Tensor out = Tensor::empty(m.shape, DType::Bool);
  VK_DISPATCH_ALL(in[0].dtype(), name,
                  map_elements<bool, T, T>(
                      out, {&in[0], &in[1]}, [&](T x, T y) VK_ELEMENT -> bool { return f(x, y); },
                      kElementwiseGrain, ElementCost::cheap));
  return out;
}

template <class T>
constexpr bool is_float_v = std::is_floating_point_v<T>;

// c ? x : y without a branch: the bits of x where c, of y elsewhere.
template <class T>
T select_bits(bool c, T x, T y) {
  if constexpr (std::is_same_v<T, bool>) {
    return c ? x : y;
  } else {
    using U = std::conditional_t<
        sizeof(T) == 1, uint8_t,
        std::conditional_t<sizeof(T) == 2, uint16_t,
                           std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>>;
    const U m = static_cast<U>(U{0} - static_cast<U>(c));
    return std::bit_cast<T>(static_cast<U>((std::bit_cast<U>(x) & m) | (std::bit_cast<U>(y) & ~m)));
  }
}

// Integer power by squaring, wrapping on overflow like C++ unsigned arithmetic (and PyTorch).
// A negative exponent truncates 1 / base^-e as torch's: 1 for base 1, +-1 for base -1 (by the
// exponent's parity), else 0. (A negative scalar exponent is refused before: ops' pow.)
template <class T>
T int_pow(T base, T e) {
  if (e < 0) {
    if (base == 1) return 1;
    if (base == -1) return (e & 1) != 0 ? T(-1) : T(1);
    return 0;
  }
  using U = std::make_unsigned_t<T>;
  U r = 1, b = static_cast<U>(base);
  for (U k = static_cast<U>(e); k != 0; k >>= 1) {
    if (k & 1) r *= b;
    b *= b;
  }
  return static_cast<T>(r);
}

// A clamp bound in the element type (clamp() checked that it fits); an open side is the type's
// extreme (-inf/inf for floats), which clamps nothing.
template <class T>
T bound(const std::optional<Scalar>& v, bool low) {
  if (v) return v->convert<T>();
  if constexpr (is_float_v<T>)
    return low ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::infinity();
  else
    return low ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max();
}

}  // namespace

// ---- unary ----

VK_KERNEL(neg) {
  (void)a;
  return unary_numeric(in[0], m, "neg", [](auto v) {
    using T = decltype(v);
    if constexpr (is_float_v<T>)
      return -v;  // (not 0 - v: -0.0 stays -0.0's negation)
    else
      return wrapping(T(0), v, [](auto x, auto y) { return x - y; });  // -INT_MIN wraps
  });
}

namespace {

// e^x of n contiguous floats: a block whose every x gives a normal e^x (vmath::kExpNormalLo <= x
// <= kExpNormalHi, i.e. -87 to 88) needs none of exp's clamps nor its two-step scaling
// (vmath::exp_normal_range, the same bits). Zen 3, one thread: 0.56 -> 0.37 ns an element over
// 64 KB, 0.55-0.57 -> 0.41-0.44 over 64 MB.
void exp_run_f32(const float* x, float* y, int64_t n) {
  map_checked_blocks(
      y, n,
      [](float v) VK_ELEMENT {
        return (v >= vmath::kExpNormalLo<float>)&(v <= vmath::kExpNormalHi<float>);
      },
      [](float v) VK_ELEMENT { return vmath::exp_normal_range(v); },
      [](float v) VK_ELEMENT { return vmath::exp(v); }, x);
}

// A large output is streamed (simd.h write_out) where more than one thread computes it: exp is
// then memory-bound, and a plain store's read of the line it overwrites costs. Zen 4, 64 MB, two
// threads: 3.3-3.8 -> 2.4-2.8 ms. One thread, where exp's arithmetic is the bound, gained 2-3%
// on Zen 4 but keeps plain stores: streamed, costly elements ran 10-18% slower there on Zen 3.
Tensor exp_contiguous_f32(const Tensor& x, const Meta& m) {
  Tensor out = Tensor::empty(m.shape, m.dtype);
  const float* px = x.data<float>();
  float* po = out.data<float>();
  const bool stream = num_threads() > 1 && streams(out);
  parallel_for(x.numel(), kElementwiseGrain, [&](int64_t b, int64_t e) {
    write_out(po + b, e - b, stream,
              [&](float* dst, int64_t i0, int64_t n) { exp_run_f32(px + b + i0, dst, n); });
    if (stream) stream_fence();
  });
  return out;
}

// gelu and its derivative d gelu / dx in one pass over a contiguous x (vmath::gelu_and_grad: the
// derivative costs a few operations more, where gelu_backward would evaluate the exponential and
// the polynomial again). The same bits as gelu and gelu_backward's derivative.
template <class T>
void gelu_and_grad_run(const T* x, T* __restrict y, T* __restrict d, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = vmath::gelu_and_grad(x[i], d[i]);
}

Outputs gelu_with_derivative(const Tensor& x, const Meta& m) {
  const auto gelu_of = [](auto v) VK_ELEMENT { return vmath::gelu(v); };
  const auto grad_of = [](auto v) VK_ELEMENT { return vmath::gelu_grad(v); };
  if (!x.is_contiguous() || x.dtype() != m.dtype)  // two passes: rare (gelu of a strided view)
    return {unary_float(x, m, "gelu", gelu_of, kElementwiseGrain),
            unary_float(x, m, "gelu", grad_of, kElementwiseGrain)};
  Tensor y = Tensor::empty(m.shape, m.dtype), d = Tensor::empty(m.shape, m.dtype);
  VK_DISPATCH_FLOAT(m.dtype, "gelu", {
    const T* px = x.data<T>();
    T* py = y.data<T>();
    T* pd = d.data<T>();
    parallel_for(x.numel(), kElementwiseGrain,
                 [&](int64_t b, int64_t e) { gelu_and_grad_run(px + b, py + b, pd + b, e - b); });
  });
  return {y, d};
}

}  // namespace

VK_KERNEL(exp) {
  (void)a;
  if (in[0].dtype() == DType::Float32 && m.dtype == DType::Float32 && in[0].is_contiguous())
    return exp_contiguous_f32(in[0], m);
  return unary_float(
      in[0], m, "exp", [](auto v) VK_ELEMENT { return vmath::exp(v); }, kElementwiseGrain);
}
VK_KERNEL(log) {
  (void)a;
  return unary_float(
      in[0], m, "log", [](auto v) VK_ELEMENT { return vmath::log(v); }, kElementwiseGrain);
}
VK_KERNEL(log1p) {
  (void)a;
  return unary_float(
      in[0], m, "log1p", [](auto v) VK_ELEMENT { return vmath::log1p(v); }, kElementwiseGrain);
}
VK_KERNEL(expm1) {
  (void)a;
  return unary_float(
      in[0], m, "expm1", [](auto v) VK_ELEMENT { return vmath::expm1(v); }, kElementwiseGrain);
}
VK_KERNEL(sqrt) {
  (void)a;
  return unary_float(
      in[0], m, "sqrt", [](auto v) { return std::sqrt(v); }, kElementwiseGrain, ElementCost::cheap);
}
VK_KERNEL(rsqrt) {
  (void)a;
  return unary_float(
      in[0], m, "rsqrt", [](auto v) { return decltype(v)(1) / std::sqrt(v); }, kElementwiseGrain,
      ElementCost::cheap);
}
VK_KERNEL(reciprocal) {
  (void)a;
  return unary_float(
      in[0], m, "reciprocal", [](auto v) { return decltype(v)(1) / v; }, kElementwiseGrain,
      ElementCost::cheap);
}
// sin, cos and tan: float32 by vmath's (vectorised, double inside: within about half an ulp) for
// |x| <= kTrigMaxArg, libm beyond it and for float64 (whose large arguments need libm's exact
// reduction). Zen 4, one thread, 1M and 16M floats: sin and cos 6.7 -> 0.81 ns an element, tan
// 12.7 -> 0.89 (torch 1.2-3.2 and 1.7-3.6), sin's forward and backward 13.9 -> 2.0.
template <class Fast, class Libm>
Tensor trig(const Tensor& x, const Meta& m, const char* name, Fast fast, Libm libm) {
  const auto each = [=](auto v) VK_ELEMENT {
    if constexpr (std::is_same_v<decltype(v), float>)
      return std::fabs(v) <= vmath::kTrigMaxArg ? fast(v) : libm(v);
    else
      return libm(v);
  };
  if (x.dtype() != DType::Float32 || m.dtype != DType::Float32 || !x.is_contiguous())
    return unary_float(x, m, name, each);
  Tensor out = Tensor::empty(m.shape, m.dtype);
  const float* px = x.data<float>();
  float* po = out.data<float>();
  parallel_for(x.numel(), kElementwiseGrain / 4, [&](int64_t b, int64_t e) {
    map_checked_blocks(
        po + b, e - b, [](float v) VK_ELEMENT { return std::fabs(v) <= vmath::kTrigMaxArg; }, fast,
        each, px + b);
  });
  return out;
}

VK_KERNEL(sin) {
  (void)a;
  return trig(
      in[0], m, "sin", [](float v) VK_ELEMENT { return vmath::sin(v); },
      [](auto v) { return std::sin(v); });
}
VK_KERNEL(cos) {
  (void)a;
  return trig(
      in[0], m, "cos", [](float v) VK_ELEMENT { return vmath::cos(v); },
      [](auto v) { return std::cos(v); });
}
VK_KERNEL(tan) {
  (void)a;
  return trig(
      in[0], m, "tan", [](float v) VK_ELEMENT { return vmath::tan(v); },
      [](auto v) { return std::tan(v); });
}
VK_KERNEL(tanh) {
  (void)a;
  return unary_float(
      in[0], m, "tanh", [](auto v) VK_ELEMENT { return vmath::tanh(v); }, kElementwiseGrain);
}
VK_KERNEL(sigmoid) {
  (void)a;
  return unary_float(
      in[0], m, "sigmoid", [](auto v) VK_ELEMENT { return vmath::sigmoid(v); }, kElementwiseGrain);
}
// Output 1: d gelu / dx where a.gelu.with_derivative asks for it (the erf form), else undefined.
VK_KERNEL(gelu) {
  if (a.gelu.tanh_approximation)
    return {unary_float(
                in[0], m, "gelu", [](auto v) VK_ELEMENT { return vmath::gelu_tanh(v); },
                kElementwiseGrain),
            Tensor()};
  if (a.gelu.with_derivative) return gelu_with_derivative(in[0], m);
  return {
      unary_float(
          in[0], m, "gelu", [](auto v) VK_ELEMENT { return vmath::gelu(v); }, kElementwiseGrain),
      Tensor()};
}
// From the output y: g * (1 - y^2) and g * y * (1 - y), torch's order of operations.
VK_KERNEL(tanh_backward) {
  (void)a;
  return binary_float(in, m, "tanh_backward", [](auto g, auto y) { return g * (1 - y * y); });
}
VK_KERNEL(sigmoid_backward) {
  (void)a;
  return binary_float(in, m, "sigmoid_backward", [](auto g, auto y) { return g * (1 - y) * y; });
}
// One pass (the rule it replaces, where(gt(x, 0), g, 0), took two and a bool temporary: 3.1x
// torch's time over 1M elements). As torch's threshold_backward: a NaN x passes g.
VK_KERNEL(relu_backward) {
  (void)a;
  return binary_float(in, m, "relu_backward",
                      [](auto g, auto x) { return x <= 0 ? decltype(g)(0) : g; });
}
// g * (Phi(x) + x phi(x)), the derivative the rule it replaces composed (PyTorch's formula), in
// one pass instead of eleven; vmath::gelu_grad shares one exp between Phi and phi.
VK_KERNEL(gelu_backward) {
  (void)a;
  return binary_float(
      in, m, "gelu_backward", [](auto g, auto x) VK_ELEMENT { return g * vmath::gelu_grad(x); },
      ElementCost::costly);
}
VK_KERNEL(erf) {
  (void)a;
  return unary_float(
      in[0], m, "erf", [](auto v) VK_ELEMENT { return vmath::erf(v); }, kElementwiseGrain);
}
VK_KERNEL(erfc) {
  (void)a;
  return unary_float(
      in[0], m, "erfc", [](auto v) VK_ELEMENT { return vmath::erfc(v); }, kElementwiseGrain);
}

VK_KERNEL(abs) {
  (void)a;
  return unary_numeric(in[0], m, "abs", [](auto v) {
    using T = decltype(v);
    if constexpr (is_float_v<T>)
      return std::fabs(v);
    else
      return v < 0 ? wrapping(T(0), v, [](auto x, auto y) { return x - y; }) : v;
  });
}
VK_KERNEL(sign) {  // NaN gives 0, as PyTorch
  (void)a;
  return unary_numeric(in[0], m, "sign", [](auto v) {
    using T = decltype(v);
    return static_cast<T>((T(0) < v) - (v < T(0)));
  });
}
VK_KERNEL(relu) {  // NaN stays NaN
  (void)a;
  return unary_numeric(in[0], m, "relu", [](auto v) { return v < 0 ? decltype(v)(0) : v; });
}
template <class F>
Tensor rounding(const Tensor& x, const Meta& m, const char* name, F f) {
  return unary_numeric(x, m, name, [f](auto v) {
    if constexpr (is_float_v<decltype(v)>)
      return f(v);
    else
      return v;  // integers are their own floor, ceil and trunc
  });
}
VK_KERNEL(floor) {
  (void)a;
  return rounding(in[0], m, "floor", [](auto v) { return floor_step(v); });
}
VK_KERNEL(ceil) {
  (void)a;
  return rounding(in[0], m, "ceil", [](auto v) { return ceil_step(v); });
}
VK_KERNEL(trunc) {
  (void)a;
  return rounding(in[0], m, "trunc", [](auto v) { return trunc_step(v); });
}
VK_KERNEL(frac) {  // x - trunc(x) is exact; +-inf give NaN (as torch: inf - inf)
  (void)a;
  return rounding(in[0], m, "frac", [](auto v) { return v - trunc_step(v); });
}
VK_KERNEL(round) {  // nearbyint in the default rounding mode: halves go to the even neighbour
  (void)a;
  return unary_numeric(in[0], m, "round", [](auto v) {
    if constexpr (is_float_v<decltype(v)>)
      return std::nearbyint(v);
    else
      return v;
  });
}

// ---- binary ----

// bool + bool is `or` and bool * bool is `and`, as PyTorch.
VK_KERNEL(add) {
  (void)a;
  return binary_all(in, m, "add", [](auto x, auto y) {
    if constexpr (std::is_same_v<decltype(x), bool>)
      return x || y;
    else
      return wrapping(x, y, [](auto p, auto q) { return p + q; });
  });
}
VK_KERNEL(sub) {
  (void)a;
  return binary_numeric(in, m, "sub", [](auto x, auto y) {
    return wrapping(x, y, [](auto p, auto q) { return p - q; });
  });
}
VK_KERNEL(mul) {
  (void)a;
  return binary_all(in, m, "mul", [](auto x, auto y) {
    if constexpr (std::is_same_v<decltype(x), bool>)
      return x && y;
    else
      return wrapping(x, y, [](auto p, auto q) { return p * q; });
  });
}
VK_KERNEL(div) {
  (void)a;
  return binary_numeric(in, m, "div", [](auto x, auto y) { return x / y; });
}

// float32 pow as e^(y log x) in double (vmath's log and exp: within 1e-14 of the exact power),
// rounded once: at most 0.5 ulp (and 1e-14 of one), exact where the power is a float. The
// domain: x positive and finite, y finite, the result normal (|y log x| <= 87); libm's powf
// elsewhere (zeros, negative bases, infinities, NaN, overflow, subnormal results), by checked
// blocks (checked_blocks.h) where the operands are contiguous or one value. Zen 4, one thread,
// 1M floats: 4.5 -> 3.1 ns an element (torch 2.6), exp2 (pow(2, x)) 4.4 -> 1.1 (torch 0.29).
namespace {
[[gnu::always_inline]] inline double pow_exponent(float x, float y) {
  return static_cast<double>(y) * vmath::log(static_cast<double>(x));
}
[[gnu::always_inline]] inline bool pow_vmath_domain(float x, float y) {
  return (x > 0.0f) & (x < std::numeric_limits<float>::infinity()) &
         (std::fabs(pow_exponent(x, y)) <= 87.0);  // NaN fails
}
[[gnu::always_inline]] inline float pow_vmath(float x, float y) {
  return static_cast<float>(vmath::exp(pow_exponent(x, y)));
}
// A cheaper test for the blocks, inside the domain: x a positive normal float (so |ln x| <=
// (|e| + 1) ln 2 for its exponent e), y finite, and that bound times |y| at most 86. Arguments it
// refuses that the domain takes (near the bound) go by pow_element, which gives them the same bits.
[[gnu::always_inline]] inline bool pow_block_domain(float x, float y) {
  const uint32_t bits = std::bit_cast<uint32_t>(x);
  const int biased = static_cast<int>(bits >> 23);  // the sign bit set: > 255
  const float log_bound = static_cast<float>(std::abs(biased - 127) + 1) * 0.6931472f;
  return (biased >= 1) & (biased <= 254) & (std::fabs(y) * log_bound <= 86.0f);  // NaN y fails
}
float pow_element(float x, float y) {
  return pow_vmath_domain(x, y) ? pow_vmath(x, y) : std::pow(x, y);
}

// Whether float32 pow goes by blocks: operands that are each contiguous of the output's size n or
// one value (a broadcast scalar: x ** 1.7, 2 ** x).
bool pow_f32_flat(const Tensor& t, int64_t n) {
  return t.dtype() == DType::Float32 && t.is_contiguous() && t.numel() == n;
}
bool pow_f32_by_blocks(const Tensor& x, const Tensor& y, DType out, int64_t n) {
  auto takes = [n](const Tensor& t) {
    return pow_f32_flat(t, n) || (t.dtype() == DType::Float32 && t.numel() > 0 && is_uniform(t));
  };
  return out == DType::Float32 && takes(x) && takes(y);
}

// float32 pow by blocks, where pow_f32_by_blocks.
void pow_f32_blocks(const Tensor& x, const Tensor& y, Tensor& out) {
  const int64_t n = out.numel();
  auto flat = [n](const Tensor& t) { return pow_f32_flat(t, n); };
  float* po = out.data<float>();
  const auto domain = [](float b, float e) VK_ELEMENT { return pow_block_domain(b, e); };
  const auto fast = [](float b, float e) VK_ELEMENT { return pow_vmath(b, e); };
  parallel_for(n, kElementwiseGrain / 4, [&](int64_t b, int64_t e) {
    if (flat(x) && flat(y)) {
      map_checked_blocks(po + b, e - b, domain, fast, pow_element, x.data<float>() + b,
                         y.data<float>() + b);
    } else if (flat(x)) {
      const float ye = *y.data<float>();
      map_checked_blocks(
          po + b, e - b, [&](float v) VK_ELEMENT { return domain(v, ye); },
          [&](float v) VK_ELEMENT { return fast(v, ye); },
          [&](float v) { return pow_element(v, ye); }, x.data<float>() + b);
    } else {
      const float xb = *x.data<float>();
      const float* py = y.data<float>() + (flat(y) ? b : 0);
      if (!flat(y)) {  // both one value
        std::fill(po + b, po + e, pow_element(xb, *py));
        return;
      }
      map_checked_blocks(
          po + b, e - b, [&](float v) VK_ELEMENT { return domain(xb, v); },
          [&](float v) VK_ELEMENT { return fast(xb, v); },
          [&](float v) { return pow_element(xb, v); }, py);
    }
  });
}

// x ** e by the products, roots and reciprocals PyTorch uses for these exponents (its bits:
// 1 / sqrt(x), 1 / (x * x)), several times faster than pow() and vectorised; false for another e.
template <class T>
bool small_power(const Tensor& x, T e, const Tensor& out) {
  const auto run = [&](auto f) {
    map_elements<T, T>(out, {&x}, f, kElementwiseGrain, ElementCost::cheap);
    return true;
  };
  if (e == T(2)) return run([](T v) { return v * v; });
  if (e == T(3)) return run([](T v) { return v * v * v; });
  if (e == T(1)) return run([](T v) { return v; });
  if (e == T(0.5)) return run([](T v) { return std::sqrt(v); });
  if (e == T(-0.5)) return run([](T v) { return T(1) / std::sqrt(v); });
  if (e == T(-1)) return run([](T v) { return T(1) / v; });
  if (e == T(-2)) return run([](T v) { return T(1) / (v * v); });
  return false;
}
}  // namespace

VK_KERNEL(pow) {
  (void)a;
  // One exponent for every element (x ** 2.0: a broadcast scalar).
  if (is_floating(m.dtype) && is_uniform(in[1]) && in[1].numel() > 0) {
    Tensor out = Tensor::empty(m.shape, m.dtype);
    VK_DISPATCH_FLOAT(m.dtype, "pow", {
      const T e = *in[1].data<T>();
      if (!small_power(in[0], e, out)) {
        if (pow_f32_by_blocks(in[0], in[1], m.dtype, out.numel()))
          pow_f32_blocks(in[0], in[1], out);
        else
          map_elements<T, T>(out, {&in[0]}, [e](T v) {
            if constexpr (std::is_same_v<T, float>)
              return pow_element(v, e);
            else
              return std::pow(v, e);
          });
      }
    });
    return out;
  }
  if (pow_f32_by_blocks(in[0], in[1], m.dtype, numel_of(m.shape))) {
    Tensor out = Tensor::empty(m.shape, m.dtype);
    pow_f32_blocks(in[0], in[1], out);
    return out;
  }
  return binary_numeric(
      in, m, "pow",
      [](auto x, auto y) {
        if constexpr (std::is_same_v<decltype(x), float>)
          return pow_element(x, y);
        else if constexpr (is_float_v<decltype(x)>)
          return std::pow(x, y);
        else
          return int_pow(x, y);
      },
      kLibmGrain, ElementCost::costly);
}

// maximum/minimum propagate NaN from either side, as PyTorch.
VK_KERNEL(maximum) {
  (void)a;
  return binary_all(in, m, "maximum", [](auto x, auto y) {
    if constexpr (is_float_v<decltype(x)>)
      if (std::isnan(x) || std::isnan(y)) return x + y;
    return x > y ? x : y;
  });
}
VK_KERNEL(minimum) {
  (void)a;
  return binary_all(in, m, "minimum", [](auto x, auto y) {
    if constexpr (is_float_v<decltype(x)>)
      if (std::isnan(x) || std::isnan(y)) return x + y;
    return x < y ? x : y;
  });
}

VK_KERNEL(where) {
  (void)a;
  Tensor out = Tensor::empty(m.shape, m.dtype);
  // A bit select rather than c ? x : y, which GCC leaves a branch per element (the condition
  // mixes a byte with wider elements): mispredicted on half the elements of relu's backward.
  VK_DISPATCH_ALL(m.dtype, "where",
                  map_elements<T, bool, T, T>(
                      out, {&in[0], &in[1], &in[2]},
                      [](bool c, T x, T y) VK_ELEMENT -> T { return select_bits(c, x, y); }));
  return out;
}

// min(max(x, lo), hi) as torch.clamp: with lo > hi every element becomes hi; NaN stays NaN, and
// a NaN bound makes every element NaN.
VK_KERNEL(clamp) {
  Tensor out = Tensor::empty(m.shape, m.dtype);
  VK_DISPATCH_NUMERIC(m.dtype, "clamp", {
    const T lo = bound<T>(a.lo, true), hi = bound<T>(a.hi, false);
    if constexpr (is_float_v<T>) {
      if (std::isnan(lo) || std::isnan(hi)) {
        map_elements<T, T>(out, {&in[0]}, [](T) { return std::numeric_limits<T>::quiet_NaN(); });
        return out;
      }
    }
    map_elements<T, T>(
        out, {&in[0]},
        [lo, hi](T v) -> T {
          T r = v < lo ? lo : v;
          return r > hi ? hi : r;
        },
        kElementwiseGrain, ElementCost::cheap);
  });
  return out;
}

// ---- comparisons ----

VK_KERNEL(eq) {
  (void)a;
  return compare(in, m, "eq", [](auto x, auto y) { return x == y; });
}
VK_KERNEL(ne) {
  (void)a;
  return compare(in, m, "ne", [](auto x, auto y) { return x != y; });
}
VK_KERNEL(lt) {
  (void)a;
  return compare(in, m, "lt", [](auto x, auto y) { return x < y; });
}
VK_KERNEL(le) {
  (void)a;
  return compare(in, m, "le", [](auto x, auto y) { return x <= y; });
}
VK_KERNEL(gt) {
  (void)a;
  return compare(in, m, "gt", [](auto x, auto y) { return x > y; });
}
VK_KERNEL(ge) {
  (void)a;
  return compare(in, m, "ge", [](auto x, auto y) { return x >= y; });
}

// ---- bitwise ----

VK_KERNEL(bitwise_and) {
  (void)a;
  return binary_integral(in, m, "bitwise_and", [](auto x, auto y) { return x & y; });
}
VK_KERNEL(bitwise_or) {
  (void)a;
  return binary_integral(in, m, "bitwise_or", [](auto x, auto y) { return x | y; });
}
VK_KERNEL(bitwise_xor) {
  (void)a;
  return binary_integral(in, m, "bitwise_xor", [](auto x, auto y) { return x ^ y; });
}

// ---- conversion ----

namespace {

// One element converted to Out. A float that an integer type cannot hold (NaN, +-inf, 1e20) is
// undefined behaviour in C++; it becomes the type's lowest value, which is what PyTorch gives on
// x86 (the "integer indefinite" of cvttss2si). A 16-bit float converts through float (double to
// float16 rounds twice, as PyTorch's). Into an 8- or 16-bit integer a float goes through int64
// and wraps, as PyTorch's (-1.0 -> uint8 255, 200.0 -> int8 -56).
template <class Out, class In>
Out convert_element(In v) {
  if constexpr (is_half_type<In>) {
    return convert_element<Out>(static_cast<float>(v));
  } else if constexpr (is_half_type<Out>) {
    return Out(static_cast<float>(v));
  } else if constexpr (std::is_floating_point_v<In> && std::is_integral_v<Out> &&
                       !std::is_same_v<Out, bool> && sizeof(Out) < 4) {
    return static_cast<Out>(convert_element<int64_t>(v));
  } else if constexpr (std::is_floating_point_v<In> && std::is_integral_v<Out> &&
                       !std::is_same_v<Out, bool>) {
    constexpr In lo = static_cast<In>(std::numeric_limits<Out>::min());  // -2^(n-1), exact
    constexpr In hi = -lo;
    return v >= lo && v < hi ? static_cast<Out>(v) : std::numeric_limits<Out>::min();
  } else {
    return static_cast<Out>(v);
  }
}

// A conversion from or to a narrow dtype: a plain strided loop over the coalesced runs (a
// contiguous run still vectorises). The vectorising map's variants for all 75 such pairs took
// minutes of compile time for nothing the plain loop does not do.
template <class Out, class In>
void convert_runs(const Tensor& dst, const Tensor& src) {
  for_each_run<2>(dst.shape(), {&dst, &src},
                  [](std::array<char*, 2> p, std::array<int64_t, 2> s, int64_t n) {
                    if (s[0] == sizeof(Out) && s[1] == sizeof(In)) {
                      Out* d = reinterpret_cast<Out*>(p[0]);
                      const In* x = reinterpret_cast<const In*>(p[1]);
                      for (int64_t i = 0; i < n; ++i) d[i] = convert_element<Out>(x[i]);
                      return;
                    }
                    for (int64_t i = 0; i < n; ++i)
                      *reinterpret_cast<Out*>(p[0] + i * s[0]) =
                          convert_element<Out>(*reinterpret_cast<const In*>(p[1] + i * s[1]));
                  });
}

}  // namespace

void copy_into(const Tensor& dst, const Tensor& src) {
  if (contains(kComputeDTypes, dst.dtype()) && contains(kComputeDTypes, src.dtype())) {
    VK_DISPATCH_ALL(dst.dtype(), "copy", {
      using Out = T;
      VK_DISPATCH_ALL(src.dtype(), "copy", {
        map_elements<Out, T>(
            dst, {&src}, [](T v) { return convert_element<Out>(v); }, kElementwiseGrain,
            ElementCost::cheap);
      });
    });
    return;
  }
  VK_DISPATCH_STORAGE(dst.dtype(), "copy", {
    using Out = T;
    VK_DISPATCH_STORAGE(src.dtype(), "copy", convert_runs<Out, T>(dst, src));
  });
}

// Every dtype but bool: a 16-bit float adds in float and rounds once, a narrow integer wraps
// (the gradient accumulation of 16-bit leaves).
void add_into(const Tensor& dst, const Tensor& a, const Tensor& b) {
  VK_CHECK(dst.dtype() != DType::Bool, DTypeError, "add: expected a numeric dtype, got bool");
  if (contains(kComputeDTypes, dst.dtype())) {
    VK_DISPATCH_NUMERIC(dst.dtype(), "add",
                        map_elements<T, T, T>(dst, {&a, &b}, [](T x, T y) -> T { return x + y; }));
    return;
  }
  VK_DISPATCH_STORAGE(dst.dtype(), "add", {
    for_each_run<3>(dst.shape(), {&dst, &a, &b},
                    [](std::array<char*, 3> p, std::array<int64_t, 3> s, int64_t n) {
                      for (int64_t i = 0; i < n; ++i)
                        *reinterpret_cast<T*>(p[0] + i * s[0]) =
                            static_cast<T>(*reinterpret_cast<const T*>(p[1] + i * s[1]) +
                                           *reinterpret_cast<const T*>(p[2] + i * s[2]));
                    });
  });
}

void binary_into(const Tensor& dst, const Tensor& a, const Tensor& b, InPlaceOp op) {
  VK_DISPATCH_FLOAT(dst.dtype(), "binary_into", {
    // The out-of-place kernels' arithmetic (add, sub, mul, div above) element for element.
    const auto run = [&](auto f) {
      map_elements<T, T, T>(dst, {&a, &b}, [&](T x, T y) VK_ELEMENT -> T { return f(x, y); });
    };
    switch (op) {
      case InPlaceOp::Add:
        run([](T x, T y) { return x + y; });
        break;
      case InPlaceOp::Sub:
        run([](T x, T y) { return x - y; });
        break;
      case InPlaceOp::Mul:
        run([](T x, T y) { return x * y; });
        break;
      case InPlaceOp::Div:
        run([](T x, T y) { return x / y; });
        break;
    }
  });
}

VK_KERNEL(cast) {
  (void)a;
  Tensor out = Tensor::empty(m.shape, m.dtype);
  copy_into(out, in[0]);
  return out;
}

}  // namespace VKML_CPU_ISA
}  // namespace vk::cpu
