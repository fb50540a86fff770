// Op cases for index_select, gather and scatter_add. Indices are int64 constants built inside the
// function, with repeats, so the adjoint scatter must add. Outputs are squared so gradgradcheck
// goes through the rules' own ops (scatter_add's rule gathers; gather's rule scatters).
#include "op_cases.h"
#include "test_util.h"

namespace vk::test {
namespace {

using V = std::vector<Tensor>;

Tensor sq(const Tensor& y) { return y * y; }

// Index tensors are inputs of the cases (not constants of their functions), so that the Vulkan
// sweep moves them to the device with the rest.
RegisterOpCases index_cases({
    {OpKind::IndexSelect, "index_select/repeated_rows",
     [] {
       return V{leaf({4, 3}), ints({0, 2, 0, 3, 0}, {5})};
     },
     [](const V& x) { return sq(index_select(x[0], 0, x[1])); }},
    {OpKind::IndexSelect, "index_select/middle_dim_repeated",
     [] {
       return V{leaf({2, 4, 3}), ints({3, 1, 3}, {3})};
     },
     [](const V& x) { return sq(index_select(x[0], 1, x[1])); }},
    {OpKind::IndexSelect, "index_select/strided_input",
     [] {
       return V{leaf({3, 4}), ints({2, 2, 0}, {3})};
     },
     [](const V& x) { return sq(index_select(transpose(x[0], 0, 1), 1, x[1])); }},
    {OpKind::InterpolateDim, "interpolate_dim/middle_dim_repeated",
     [] {
       return V{leaf({2, 3, 4}), ints({0, 0, 1, 2, 2}, {5}), ints({1, 1, 2, 2, 0}, {5}), leaf({5}),
                leaf({5})};
     },
     [](const V& x) { return sq(interpolate_dim(x[0], 1, x[1], x[2], x[3], x[4])); }},
    {OpKind::InterpolateDim, "interpolate_dim/last_dim_strided_input",
     [] {
       return V{leaf({3, 4}), ints({2, 1, 0}, {3}), cast(ints({2, 2, 1}, {3}), DType::Int32),
                leaf({3}), leaf({3})};
     },
     [](const V& x) {
       return sq(interpolate_dim(transpose(x[0], 0, 1), -1, x[1], x[2], x[3], x[4]));
     }},
    {OpKind::Gather, "gather/last_dim_repeated",
     [] {
       return V{leaf({3, 4}), ints({0, 1, 1, 3, 0, 2, 2, 2, 2}, {3, 3})};
     },
     [](const V& x) { return sq(gather(x[0], 1, x[1])); }},
    {OpKind::Gather, "gather/dim0_smaller_index",
     [] {
       return V{leaf({3, 4}), ints({2, 0, 2, 1, 1, 1}, {2, 3})};
     },
     [](const V& x) { return sq(gather(x[0], 0, x[1])); }},
    {OpKind::ScatterAdd, "scatter_add/repeated_base_and_src",
     [] {
       return V{leaf({3, 4}), leaf({2, 4}), ints({0, 1, 0, 2, 0, 0, 2, 1}, {2, 4})};
     },
     [](const V& x) { return sq(scatter_add(x[0], 0, x[2], x[1])); }},
    {OpKind::ScatterAdd, "scatter_add/src_larger_than_index",
     [] {
       return V{leaf({3, 4}), leaf({3, 5}), ints({3, 3, 0, 1, 2, 3}, {2, 3})};
     },
     [](const V& x) { return sq(scatter_add(x[0], 1, x[2], x[1])); }},
    // An int32 index, and one broadcast along the other dims (index_add: one line of buckets on
    // the Vulkan device).
    {OpKind::IndexSelect, "index_select/int32_index_negative_dim",
     [] {
       return V{leaf({3, 4}), cast(ints({3, 3, 1, 0}, {4}), DType::Int32)};
     },
     [](const V& x) { return sq(index_select(x[0], -1, x[1])); }},
    {OpKind::ScatterAdd, "scatter_add/index_add_repeated",
     [] {
       return V{leaf({3, 5}), leaf({3, 4}), ints({4, 0, 4, 2}, {4})};
     },
     [](const V& x) { return sq(index_add(x[0], 1, x[2], x[1])); }},
});

}  // namespace
}  // namespace vk::test
