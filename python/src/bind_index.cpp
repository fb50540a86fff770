// Bindings: Index ops (ops/index.cpp): index_select, gather, scatter_add, index_add,
// take_along_dim.
#include "bind_ops.h"

namespace vkpy {

using namespace bindings;

void bind_index(nb::module_& m, nb::class_<Tensor>& c) {
  // ---- index ops ----
  both(
      m, c, "gather",
      [](const Tensor& x, int64_t dim, const Tensor& index) {
        return without_gil(heavy(x, index), [&] { return vk::gather(x, dim, index); });
      },
      "dim"_a, "index"_a);
  both(
      m, c, "index_select",
      [](const Tensor& x, int64_t dim, const Tensor& index) {
        return without_gil(heavy(x, index), [&] { return vk::index_select(x, dim, index); });
      },
      "dim"_a, "index"_a);
  both(
      m, c, "scatter_add",
      [](const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
        return without_gil(heavy(x, src), [&] { return vk::scatter_add(x, dim, index, src); });
      },
      "dim"_a, "index"_a, "src"_a);
  both(
      m, c, "index_add",
      [](const Tensor& x, int64_t dim, const Tensor& index, const Tensor& source, double alpha) {
        return without_gil(heavy(x, source), [&] {
          return vk::index_add(x, dim, index, alpha == 1.0 ? source : source * alpha);
        });
      },
      "dim"_a, "index"_a, "source"_a, nb::kw_only(), "alpha"_a = 1.0);
  both(
      m, c, "nonzero",
      [](const Tensor& x, bool as_tuple) -> nb::object {
        Tensor mask = x.dtype() == DType::Bool ? x : vk::ne(x, vk::zeros({}, x.dtype()));
        Tensor nz = vk::nonzero(mask);
        if (!as_tuple) return nb::cast(nz);
        std::vector<Tensor> cols;
        for (int64_t d = 0; d < nz.shape()[1]; ++d) cols.push_back(vk::select(nz, 1, d));
        return to_tuple(cols);
      },
      nb::kw_only(), "as_tuple"_a = false);
}

}  // namespace vkpy
