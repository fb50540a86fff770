// The CPU kernels of the activations with parameters (ops/activation.h), each in torch's order of
// operations, one element function per kernel (loops.h's map_elements: vectorised, and bitwise
// identical at any thread count). A side that computes is chosen by vmath's select, which
// vectorises on every target (?: with arithmetic on a side does only with AVX-512's masks).
#include "vkml/backend/cpu/activation.h"

#include "vkml/backend/cpu/loops.h"
#include "vkml/backend/cpu/vmath.h"

namespace vk::cpu {
inline namespace VKML_CPU_ISA {
namespace {

using vmath::detail::abs_;
using vmath::detail::select;

template <class F>
Tensor unary(const Tensor& x, const Meta& m, const char* name, F f) {
  Tensor out = Tensor::empty(m.shape, m.dtype);
  VK_DISPATCH_FLOAT(x.dtype(), name,
                    map_elements<T, T>(
                        out, {&x}, [&](T v) VK_ELEMENT -> T { return f(v); }, kElementwiseGrain));
  return out;
}

// (g, x): one floating dtype and shape after the op's prepare.
template <class F>
Tensor binary(const std::vector<Tensor>& in, const Meta& m, const char* name, F f) {
  Tensor out = Tensor::empty(m.shape, m.dtype);
  VK_DISPATCH_FLOAT(m.dtype, name,
                    map_elements<T, T, T>(
                        out, {&in[0], &in[1]}, [&](T g, T x) VK_ELEMENT -> T { return f(g, x); },
                        kElementwiseGrain));
  return out;
}

// min(max(x + 3, 0), 6), NaN passing (torch's std::min/max order).
template <class T>
T relu6_of_shifted(T x) {
  const T v = x + T(3);
  const T r = v < T(0) ? T(0) : v;
  return r > T(6) ? T(6) : r;
}
}  // namespace

VK_KERNEL(leaky_relu) {
  const double slope = a.activation.negative_slope;
  return unary(in[0], m, "leaky_relu", [slope](auto v) VK_ELEMENT {
    using T = decltype(v);
    return select(v > T(0), v, v * T(slope));
  });
}
VK_KERNEL(leaky_relu_backward) {
  const double slope = a.activation.negative_slope;
  return binary(in, m, "leaky_relu_backward", [slope](auto g, auto x) VK_ELEMENT {
    using T = decltype(g);
    return select(x > T(0), g, g * T(slope));
  });
}
VK_KERNEL(hardtanh_backward) {
  const double lo = a.lo->to_double(), hi = a.hi->to_double();
  return binary(in, m, "hardtanh_backward", [lo, hi](auto g, auto x) VK_ELEMENT {
    using T = decltype(g);
    return (x <= T(lo)) | (x >= T(hi)) ? T(0) : g;
  });
}
VK_KERNEL(elu) {
  const double alpha = a.activation.alpha, scale = a.activation.input_scale;
  return unary(in[0], m, "elu", [alpha, scale](auto v) VK_ELEMENT {
    using T = decltype(v);
    return select(v > T(0), v, vmath::expm1(v * T(scale)) * T(alpha));
  });
}
VK_KERNEL(elu_backward) {
  const double alpha = a.activation.alpha, scale = a.activation.input_scale;
  return binary(in, m, "elu_backward", [alpha, scale](auto g, auto x) VK_ELEMENT {
    using T = decltype(g);
    return select(x <= T(0), g * T(scale) * T(alpha) * vmath::exp(x * T(scale)), g);
  });
}
VK_KERNEL(softplus) {
  const double beta = a.activation.beta, threshold = a.activation.threshold;
  return unary(in[0], m, "softplus", [beta, threshold](auto v) VK_ELEMENT {
    using T = decltype(v);
    const T z = v * T(beta);
    return select(z > T(threshold), v, vmath::softplus(z) / T(beta));
  });
}
VK_KERNEL(softplus_backward) {
  const double beta = a.activation.beta, threshold = a.activation.threshold;
  return binary(in, m, "softplus_backward", [beta, threshold](auto g, auto x) VK_ELEMENT {
    using T = decltype(g);
    const T z = x * T(beta);
    return select(z > T(threshold), g, g * vmath::sigmoid(z));
  });
}
VK_KERNEL(hardsigmoid) {
  (void)a;
  return unary(in[0], m, "hardsigmoid",
               [](auto v) VK_ELEMENT { return relu6_of_shifted(v) / decltype(v)(6); });
}
VK_KERNEL(hardsigmoid_backward) {
  (void)a;
  return binary(in, m, "hardsigmoid_backward", [](auto g, auto x) VK_ELEMENT {
    using T = decltype(g);
    return select((x > T(-3)) & (x < T(3)), g * (T(1) / T(6)), T(0));
  });
}
VK_KERNEL(hardswish) {
  (void)a;
  return unary(in[0], m, "hardswish",
               [](auto v) VK_ELEMENT { return v * relu6_of_shifted(v) / decltype(v)(6); });
}
VK_KERNEL(hardswish_backward) {
  (void)a;
  return binary(in, m, "hardswish_backward", [](auto g, auto x) VK_ELEMENT {
    using T = decltype(g);
    const T inner = select(x <= T(3), g * (x / T(3) + T(0.5)), g);
    return select(x < T(-3), T(0), inner);
  });
}

VK_KERNEL(silu) {
  (void)a;
  return unary(in[0], m, "silu", [](auto v) VK_ELEMENT { return v * vmath::sigmoid(v); });
}
VK_KERNEL(silu_backward) {
  (void)a;
  return binary(in, m, "silu_backward", [](auto g, auto x) VK_ELEMENT {
    using T = decltype(g);
    const T s = vmath::sigmoid(x);
    return g * s * (T(1) + x * (T(1) - s));
  });
}
VK_KERNEL(squared_difference) {
  (void)a;
  return binary(in, m, "squared_difference", [](auto x, auto y) VK_ELEMENT {
    const auto d = x - y;
    return d * d;
  });
}
// torch's pieces and order of operations (an |x| on the boundary takes the linear piece).
VK_KERNEL(smooth_l1) {
  const double beta = a.activation.width;
  return unary(in[0], m, "smooth_l1", [beta](auto v) VK_ELEMENT {
    using T = decltype(v);
    const T z = abs_(v);
    return select(z < T(beta), T(0.5) * z * z / T(beta), z - T(0.5) * T(beta));
  });
}
VK_KERNEL(smooth_l1_backward) {
  const double beta = a.activation.width;
  return binary(in, m, "smooth_l1_backward", [beta](auto g, auto x) VK_ELEMENT {
    using T = decltype(g);
    const T inner = select(x >= T(beta), g, x * g / T(beta));
    return select(x <= -T(beta), -g, inner);
  });
}
VK_KERNEL(huber) {
  const double delta = a.activation.width;
  return unary(in[0], m, "huber", [delta](auto v) VK_ELEMENT {
    using T = decltype(v);
    const T z = abs_(v);
    return select(z < T(delta), T(0.5) * z * z, T(delta) * (z - T(0.5) * T(delta)));
  });
}
VK_KERNEL(huber_backward) {
  const double delta = a.activation.width;
  return binary(in, m, "huber_backward", [delta](auto g, auto x) VK_ELEMENT {
    using T = decltype(g);
    const T inner = select(x >= T(delta), g * T(delta), x * g);
    return select(x <= -T(delta), -g * T(delta), inner);
  });
}

}  // namespace VKML_CPU_ISA
}  // namespace vk::cpu
