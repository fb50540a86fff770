#include "vkml/backend/cpu/elementwise.h"

#include <cmath>

#include "vkml/backend/cpu/loops.h"
#include "vkml/ops/op.h"

namespace vk::cpu {
namespace {

template <class F>
Tensor unary_float(const Tensor& x, const Meta& m, const char* name, F f) {
  Tensor out = Tensor::empty(m.shape, m.dtype);
  VK_DISPATCH_FLOAT(x.dtype(), name, map_elements<T, T>(out, {&x}, [&](T v) { return f(v); }));
  return out;
}

template <class F>
Tensor unary_numeric(const Tensor& x, const Meta& m, const char* name, F f) {
  Tensor out = Tensor::empty(m.shape, m.dtype);
  VK_DISPATCH_NUMERIC(x.dtype(), name, map_elements<T, T>(out, {&x}, [&](T v) { return f(v); }));
  return out;
}

template <class F>
Tensor binary_numeric(const std::vector<Tensor>& in, const Meta& m, const char* name, F f) {
  Tensor out = Tensor::empty(m.shape, m.dtype);
  VK_DISPATCH_NUMERIC(in[0].dtype(), name,
                      map_elements<T, T, T>(out, {&in[0], &in[1]}, [&](T a, T b) { return f(a, b); }));
  return out;
}

template <class F>
Tensor compare(const std::vector<Tensor>& in, const Meta& m, const char* name, F f) {
  Tensor out = Tensor::empty(m.shape, DType::Bool);
  VK_DISPATCH_ALL(in[0].dtype(), name,
                  map_elements<bool, T, T>(out, {&in[0], &in[1]},
                                           [&](T a, T b) -> bool { return f(a, b); }));
  return out;
}

}  // namespace

VK_KERNEL(neg) { (void)a; return unary_numeric(in[0], m, "neg", [](auto v) { return -v; }); }
VK_KERNEL(exp) { (void)a; return unary_float(in[0], m, "exp", [](auto v) { return std::exp(v); }); }

VK_KERNEL(add) { (void)a; return binary_numeric(in, m, "add", [](auto x, auto y) { return x + y; }); }
VK_KERNEL(sub) { (void)a; return binary_numeric(in, m, "sub", [](auto x, auto y) { return x - y; }); }
VK_KERNEL(mul) { (void)a; return binary_numeric(in, m, "mul", [](auto x, auto y) { return x * y; }); }
VK_KERNEL(div) { (void)a; return binary_numeric(in, m, "div", [](auto x, auto y) { return x / y; }); }

VK_KERNEL(eq) { (void)a; return compare(in, m, "eq", [](auto x, auto y) { return x == y; }); }
VK_KERNEL(ne) { (void)a; return compare(in, m, "ne", [](auto x, auto y) { return x != y; }); }

void copy_into(const Tensor& dst, const Tensor& src) {
  VK_DISPATCH_ALL(dst.dtype(), "copy", {
    using Out = T;
    VK_DISPATCH_ALL(src.dtype(), "copy", {
      map_elements<Out, T>(dst, {&src}, [](T v) { return static_cast<Out>(v); });
    });
  });
}

VK_KERNEL(cast) {
  (void)a;
  Tensor out = Tensor::empty(m.shape, m.dtype);
  copy_into(out, in[0]);
  return out;
}

}  // namespace vk::cpu
