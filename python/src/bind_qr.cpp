// Bindings: QR (ops/qr.cpp, #15 linalg): vk.linalg's qr, householder_product, and geqrf and ormqr
// (in the _C._linalg submodule, arranged by vkml/linalg.py with torch's names and result types).
#include "bind_ops.h"
#include "vkml/ops/qr.h"

namespace vkpy {

using namespace bindings;

void bind_qr(nb::module_& m) {
  nb::module_ l = nb::borrow<nb::module_>(m.attr("_linalg"));
  // (Q, R) of linalg.qr in mode "reduced", "complete" or "r" (Q empty)
  l.def(
      "qr",
      [](const Tensor& A, const std::string& mode) {
        const vk::QrResult r = without_gil(heavy(A), [&] { return vk::qr(A, mode); });
        return nb::make_tuple(r.Q, r.R);
      },
      "A"_a, "mode"_a = "reduced");
  l.def(
      "householder_product",
      [](const Tensor& A, const Tensor& tau) { return vk::householder_product(A, tau); }, "A"_a,
      "tau"_a);
  l.def(
      "geqrf",
      [](const Tensor& A) {
        const vk::GeqrfResult r = vk::geqrf(A);
        return nb::make_tuple(r.a, r.tau);
      },
      "A"_a);
  l.def(
      "ormqr",
      [](const Tensor& A, const Tensor& tau, const Tensor& C, bool left, bool transpose) {
        return vk::ormqr(A, tau, C, left, transpose);
      },
      "A"_a, "tau"_a, "C"_a, "left"_a = true, "transpose"_a = false);
}

}  // namespace vkpy
