// Bindings: the pointwise family (ops/pointwise.h): lerp, addcmul and addcdiv, as functions and
// methods (their in-place forms come from _C._inplace, bind_composite.cpp).
#include "bind_ops.h"
#include "vkml/ops/pointwise.h"

namespace vkpy {

using namespace bindings;

void bind_pointwise(nb::module_& m, nb::class_<Tensor>& c) {
  both(
      m, c, "lerp",
      [](const Tensor& x, const Tensor& end, nb::handle weight) {
        if (nb::isinstance<Tensor>(weight)) {
          const Tensor& w = nb::cast<const Tensor&>(weight);
          return without_gil(heavy(x), [&] { return vk::lerp(x, end, w); });
        }
        const vk::Scalar w = to_scalar(weight, "lerp");
        return without_gil(heavy(x), [&] { return vk::lerp(x, end, w); });
      },
      "end"_a, "weight"_a, "input + weight * (end - input), torch's two-sided form (one op).");
  for (bool is_div : {false, true}) {
    both(
        m, c, is_div ? "addcdiv" : "addcmul",
        [is_div](const Tensor& x, nb::handle t1, nb::handle t2, nb::handle value) {
          const char* op = is_div ? "addcdiv" : "addcmul";
          Tensor a = operand_or_raise(t1, x, op), b = operand_or_raise(t2, x, op);
          vk::Scalar v = to_scalar(value, op);
          return without_gil(
              heavy(x), [&] { return is_div ? vk::addcdiv(x, a, b, v) : vk::addcmul(x, a, b, v); });
        },
        "tensor1"_a, "tensor2"_a, nb::kw_only(), "value"_a = 1,
        "input + value * tensor1 * tensor2 (addcmul) or / tensor2 (addcdiv), one op (integers: "
        "mul and add).");
  }
}

}  // namespace vkpy
