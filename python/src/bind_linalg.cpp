// Bindings: linear algebra (ops/linalg.cpp): matmul and torch's names for its cases (mm, bmm,
// mv, dot), and addmm.
#include "bind_ops.h"

namespace vkpy {

using namespace bindings;

void bind_linalg(nb::module_& m, nb::class_<Tensor>& c) {
#define VKPY_MATMUL(NAME)                                                  \
  both(                                                                    \
      m, c, NAME,                                                          \
      [](const Tensor& x, nb::handle other) {                              \
        Tensor y = operand_or_raise(other, x, NAME);                       \
        return without_gil(heavy(x, y), [&] { return vk::matmul(x, y); }); \
      },                                                                   \
      "other"_a)
  VKPY_MATMUL("matmul");
  VKPY_MATMUL("mm");
  VKPY_MATMUL("bmm");
  VKPY_MATMUL("mv");
  VKPY_MATMUL("dot");
#undef VKPY_MATMUL
  // torch.addmm: beta * input + alpha * (mat1 @ mat2); an input of shape (N) or (M, N) with beta =
  // alpha = 1 is the fused addmm op, anything else the composed ops.
  m.def(
      "addmm",
      [](const Tensor& input, const Tensor& mat1, const Tensor& mat2, double beta, double alpha) {
        const bool shaped = mat1.ndim() == 2 && mat2.ndim() == 2 &&
                            (input.shape() == vk::Shape{mat2.shape()[1]} ||
                             input.shape() == vk::Shape{mat1.shape()[0], mat2.shape()[1]});
        const bool fused = beta == 1.0 && alpha == 1.0 && shaped && is_floating(mat1.dtype());
        return without_gil(heavy(mat1, mat2), [&] {
          if (fused) return vk::addmm(input, mat1, mat2);
          Tensor out = vk::matmul(mat1, mat2);
          if (alpha != 1.0) out = out * alpha;
          return (beta == 1.0 ? input : input * beta) + out;
        });
      },
      "input"_a, "mat1"_a, "mat2"_a, nb::kw_only(), "beta"_a = 1.0, "alpha"_a = 1.0);
}

}  // namespace vkpy
