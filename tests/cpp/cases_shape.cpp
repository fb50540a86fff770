// Op cases for slice, slice_backward, cat, stack, pad, flip, as_strided and strided_scatter. Each
// output is squared (y * y) so the first derivative depends on the inputs: gradgradcheck then
// differentiates through the rule's own ops (slice's rule is slice_backward, whose rule is slice,
// and so on).
#include "op_cases.h"
#include "test_util.h"

namespace vk::test {
namespace {

using V = std::vector<Tensor>;

Tensor sq(const Tensor& y) { return y * y; }

RegisterOpCases shape_cases({
    {OpKind::Slice, "slice/step",
     [] {
       return V{leaf({3, 7})};
     },
     [](const V& x) { return sq(slice(x[0], 1, 1, 6, 2)); }},
    {OpKind::Slice, "slice/negative_bounds",
     [] {
       return V{leaf({5, 3})};
     },
     [](const V& x) { return sq(slice(x[0], 0, -4, -1)); }},
    {OpKind::Slice, "slice/clamped_step3_negative_dim",
     [] {
       return V{leaf({2, 3, 8})};
     },
     [](const V& x) { return sq(slice(x[0], -1, -100, 100, 3)); }},
    {OpKind::Slice, "slice/of_transposed",
     [] {
       return V{leaf({4, 5})};
     },
     [](const V& x) { return sq(slice(transpose(x[0], 0, 1), 0, 1, 5, 2)); }},
    {OpKind::SliceBackward, "slice_backward/direct",
     [] {
       return V{leaf({2, 3})};
     },
     [](const V& g) {
       return sq(slice_backward(g[0], {2, 7}, 1, 1, 6, 2));
     }},
    {OpKind::SliceBackward, "slice_backward/negative_dim",
     [] {
       return V{leaf({2, 4})};
     },
     [](const V& g) {
       return sq(slice_backward(g[0], {5, 4}, -2, 1, 3, 1));
     }},
    {OpKind::Cat, "cat/three_middle_dim",
     [] {
       return V{leaf({2, 3, 2}), leaf({2, 1, 2}), leaf({2, 4, 2})};
     },
     [](const V& x) {
       return sq(cat({x[0], x[1], x[2]}, 1));
     }},
    {OpKind::Cat, "cat/last_dim_strided",
     [] {
       return V{leaf({3, 2}), leaf({2, 3})};
     },
     [](const V& x) {
       return sq(cat({x[0], transpose(x[1], 0, 1)}, -1));
     }},
    {OpKind::Cat, "cat/same_tensor_twice",
     [] {
       return V{leaf({2, 2})};
     },
     [](const V& x) {
       return sq(cat({x[0], x[0] * 3.0}, 0));
     }},
    {OpKind::Stack, "stack/middle_dim",
     [] {
       return V{leaf({2, 3}), leaf({2, 3}), leaf({2, 3})};
     },
     [](const V& x) {
       return sq(stack({x[0], x[1], x[2]}, 1));
     }},
    {OpKind::Stack, "stack/last_dim",
     [] {
       return V{leaf({3}), leaf({3})};
     },
     [](const V& x) {
       return sq(stack({x[0], x[1]}, -1));
     }},
    {OpKind::Pad, "pad/last_two_dims",
     [] {
       return V{leaf({2, 3, 4})};
     },
     [](const V& x) {
       return sq(pad(x[0], {1, 2, 0, 1}, 0.5));
     }},
    {OpKind::Pad, "pad/negative_crops",
     [] {
       return V{leaf({3, 5})};
     },
     [](const V& x) {
       return sq(pad(x[0], {-1, 2, 1, -1}));
     }},
    {OpKind::Flip, "flip/two_dims",
     [] {
       return V{leaf({2, 3, 4})};
     },
     [](const V& x) {
       return sq(flip(x[0], {0, -1}));
     }},
    {OpKind::Flip, "flip/both_dims",
     [] {
       return V{leaf({3, 2})};
     },
     [](const V& x) {
       return sq(flip(x[0], {1, 0}));
     }},
    {OpKind::Reshape, "reshape",
     [] {
       return V{leaf({2, 3})};
     },
     [](const V& x) {
       return reshape(x[0] * x[0], {3, -1});
     }},
    {OpKind::Permute, "permute",
     [] {
       return V{leaf({2, 3, 4})};
     },
     [](const V& x) {
       return permute(x[0], {2, 0, 1}) * 2.0;
     }},
    {OpKind::Expand, "expand",
     [] {
       return V{leaf({3, 1})};
     },
     [](const V& x) {
       return expand(x[0], {2, 3, 4}) * expand(x[0], {2, 3, 4});
     }},
    // as_strided over a (3, 4, 5) tensor: rows 1 and 2 of every other column block, a 3-d region
    {OpKind::AsStrided, "as_strided/region",
     [] {
       return V{leaf({3, 4, 5})};
     },
     [](const V& x) {
       return sq(as_strided(x[0], {2, 2, 3}, {20, 10, 2}, 6));
     }},
    {OpKind::AsStrided, "as_strided/of_transposed",  // the region is of the row-major copy
     [] {
       return V{leaf({4, 3})};
     },
     [](const V& x) {
       return sq(as_strided(transpose(x[0], 0, 1), {3, 2}, {4, 1}, 1));
     }},
    {OpKind::StridedScatter, "strided_scatter/column",
     [] {
       return V{leaf({4, 5}), leaf({4})};
     },
     [](const V& x) { return sq(strided_scatter(x[0], x[1], {4}, {5}, 2)); }},
    {OpKind::StridedScatter, "strided_scatter/broadcast_strided_input",
     [] {
       return V{leaf({3, 4}), leaf({2, 1})};
     },
     [](const V& x) {
       return sq(strided_scatter(transpose(x[0], 0, 1), expand(x[1], {2, 2}), {2, 2}, {3, 1}, 4));
     }},
    {OpKind::Contiguous, "contiguous",
     [] {
       return V{leaf({3, 2})};
     },
     [](const V& x) { return clone(transpose(x[0] * x[0], 0, 1)); }},
});

}  // namespace
}  // namespace vk::test
