// Bindings: the sort family (ops/sort.cpp): sort, argsort, msort, topk, kthvalue, median, mode as
// functions and methods, the (values, indices) results as torch.return_types' named tuples;
// searchsorted (torch's side and sorter too) and bucketize; unique (dim=None), bincount and
// argwhere.
#include <optional>
#include <string>

#include "bind_ops.h"

namespace vkpy {

using namespace bindings;

namespace {

// torch.return_types.sort, .topk, .kthvalue, .median: (values, indices) named tuples.
nb::object g_sort_type, g_topk_type, g_kthvalue_type, g_median_type, g_mode_type;

nb::object named(const nb::object& type, const vk::ValuesIndices& r) {
  return type(r.values, r.indices);
}

// torch's side ("left"/"right") and right together: right unless side says otherwise.
bool right_of(bool right, const std::optional<std::string>& side) {
  if (!side) return right;
  VK_CHECK(*side == "left" || *side == "right", RuntimeError,
           "searchsorted: side can only be 'left' or 'right', got '", *side, "'");
  VK_CHECK(!(right && *side == "left"), RuntimeError,
           "searchsorted: side and right can't be set to opposites, got side of left while right "
           "was True");
  return *side == "right";
}

}  // namespace

void bind_sort(nb::module_& m, nb::class_<Tensor>& c) {
  nb::object namedtuple = nb::module_::import_("collections").attr("namedtuple");
  auto make = [&](const char* name) {
    return namedtuple(name, nb::make_tuple("values", "indices"), "module"_a = "vkml.return_types");
  };
  g_sort_type = make("sort");
  g_topk_type = make("topk");
  g_kthvalue_type = make("kthvalue");
  g_median_type = make("median");
  g_mode_type = make("mode");
  m.attr("_sort_type") = g_sort_type;
  m.attr("_topk_type") = g_topk_type;
  m.attr("_kthvalue_type") = g_kthvalue_type;
  m.attr("_median_type") = g_median_type;
  m.attr("_mode_type") = g_mode_type;

  // vkml's sort is always stable: `stable` is accepted and changes nothing.
  both(
      m, c, "sort",
      [](const Tensor& x, int64_t dim, bool descending, nb::handle stable) {
        (void)stable;
        auto r = without_gil(heavy(x), [&] { return vk::sort(x, dim, descending, true); });
        return named(g_sort_type, r);
      },
      "dim"_a = -1, "descending"_a = false, nb::kw_only(), "stable"_a = nb::none());
  both(
      m, c, "argsort",
      [](const Tensor& x, int64_t dim, bool descending, bool stable) {
        return without_gil(heavy(x), [&] { return vk::argsort(x, dim, descending, stable); });
      },
      "dim"_a = -1, "descending"_a = false, nb::kw_only(), "stable"_a = false);
  both(m, c, "msort",
       [](const Tensor& x) { return without_gil(heavy(x), [&] { return vk::msort(x); }); });
  both(
      m, c, "topk",
      [](const Tensor& x, int64_t k, int64_t dim, bool largest, bool sorted) {
        auto r = without_gil(heavy(x), [&] { return vk::topk(x, k, dim, largest, sorted); });
        return named(g_topk_type, r);
      },
      "k"_a, "dim"_a = -1, "largest"_a = true, "sorted"_a = true);
  both(
      m, c, "kthvalue",
      [](const Tensor& x, int64_t k, int64_t dim, bool keepdim) {
        auto r = without_gil(heavy(x), [&] { return vk::kthvalue(x, k, dim, keepdim); });
        return named(g_kthvalue_type, r);
      },
      "k"_a, "dim"_a = -1, "keepdim"_a = false);
  both(
      m, c, "median",
      [](const Tensor& x, nb::handle dim, bool keepdim) -> nb::object {
        if (dim.is_none()) return nb::cast(without_gil(heavy(x), [&] { return vk::median(x); }));
        const int64_t d = as_i64(dim);
        auto r = without_gil(heavy(x), [&] { return vk::median(x, d, keepdim); });
        return named(g_median_type, r);
      },
      "dim"_a = nb::none(), "keepdim"_a = false);
  both(
      m, c, "mode",
      [](const Tensor& x, int64_t dim, bool keepdim) {
        auto r = without_gil(heavy(x), [&] { return vk::mode(x, dim, keepdim); });
        return named(g_mode_type, r);
      },
      "dim"_a = -1, "keepdim"_a = false);
  m.def(
      "searchsorted",
      [](const Tensor& boundaries, nb::handle values, bool out_int32, bool right,
         const std::optional<std::string>& side, const std::optional<Tensor>& sorter) {
        const Tensor v = operand_or_raise(values, boundaries, "searchsorted");
        const Tensor b = sorter ? vk::gather(boundaries, -1, *sorter) : boundaries;
        return vk::searchsorted(b, v, right_of(right, side), out_int32);
      },
      "sorted_sequence"_a, "input"_a, nb::kw_only(), "out_int32"_a = false, "right"_a = false,
      "side"_a = nb::none(), "sorter"_a = nb::none());
  m.def(
      "bucketize",
      [](const Tensor& x, const Tensor& boundaries, bool out_int32, bool right) {
        return vk::bucketize(x, boundaries, right, out_int32);
      },
      "input"_a, "boundaries"_a, nb::kw_only(), "out_int32"_a = false, "right"_a = false);
  // unique: always sorted (sorted=False allows any order; sorted is the one given).
  both(
      m, c, "unique",
      [](const Tensor& x, bool sorted, bool return_inverse, bool return_counts,
         nb::handle dim) -> nb::object {
        (void)sorted;
        VK_CHECK(dim.is_none(), NotImplementedError,
                 "unique: dim is not supported by vkml (only the flattened tensor, dim=None)");
        const vk::Unique r = vk::unique(x, return_inverse);
        if (!return_inverse && !return_counts) return nb::cast(r.values);
        if (return_inverse && return_counts) return nb::make_tuple(r.values, r.inverse, r.counts);
        return nb::make_tuple(r.values, return_inverse ? r.inverse : r.counts);
      },
      "sorted"_a = true, "return_inverse"_a = false, "return_counts"_a = false,
      "dim"_a = nb::none());
  both(
      m, c, "bincount",
      [](const Tensor& x, const std::optional<Tensor>& weights, int64_t minlength) {
        return vk::bincount(x, weights ? *weights : Tensor(), minlength);
      },
      "weights"_a = nb::none(), "minlength"_a = 0);
  both(m, c, "argwhere", [](const Tensor& x) { return vk::argwhere(x); });
}

}  // namespace vkpy
