// Op cases for the ops the core slice defines (creation, the first element-wise ops, sum and the
// view ops). Other families register theirs in cases_<family>.cpp.
#include "op_cases.h"
#include "test_util.h"

namespace vk::test {
namespace {

using V = std::vector<Tensor>;

RegisterOpCases core_cases({
    {OpKind::Full, "full", [] { return V{}; },
     [](const V&) {
       return full({2, 2}, 3.0);
     }},
    {OpKind::Arange, "arange", [] { return V{}; }, [](const V&) { return arange(0, 5); }},
    {OpKind::Rand, "rand", [] { return V{}; }, [](const V&) { return rand({3}); }},
    {OpKind::Randn, "randn", [] { return V{}; }, [](const V&) { return randn({3}); }},
    {OpKind::Randint, "randint", [] { return V{}; }, [](const V&) { return randint(0, 4, {3}); }},
    {OpKind::Neg, "neg",
     [] {
       return V{leaf({2, 3})};
     },
     [](const V& x) { return neg(x[0]); }},
    {OpKind::Exp, "exp",
     [] {
       return V{leaf({2, 3})};
     },
     [](const V& x) { return exp(x[0]); }},
    {OpKind::Add, "add/same",
     [] {
       return V{leaf({2, 3}), leaf({2, 3})};
     },
     [](const V& x) { return x[0] + x[1]; }},
    {OpKind::Add, "add/broadcast_row",
     [] {
       return V{leaf({2, 3}), leaf({3})};
     },
     [](const V& x) { return x[0] + x[1]; }},
    {OpKind::Add, "add/broadcast_both",
     [] {
       return V{leaf({2, 1}), leaf({1, 3})};
     },
     [](const V& x) { return x[0] + x[1]; }},
    {OpKind::Sub, "sub/broadcast_col",
     [] {
       return V{leaf({2, 3}), leaf({2, 1})};
     },
     [](const V& x) { return x[0] - x[1]; }},
    {OpKind::Mul, "mul/broadcast_scalar",
     [] {
       return V{leaf({2, 3}), leaf({})};
     },
     [](const V& x) { return x[0] * x[1]; }},
    {OpKind::Mul, "mul/self", [] { return V{leaf({4})}; }, [](const V& x) { return x[0] * x[0]; }},
    {OpKind::Div, "div/broadcast",
     [] {
       return V{leaf({2, 3}), leaf({1, 3}, 0.5, 2.0)};
     },
     [](const V& x) { return x[0] / x[1]; }},
    {OpKind::Eq, "eq", [] { return V{leaf({3})}; }, [](const V& x) { return eq(x[0], x[0]); }},
    {OpKind::Ne, "ne", [] { return V{leaf({3})}; },
     [](const V& x) { return ne(x[0], x[0] * 2.0); }},
    {OpKind::Cast, "cast/f32_roundtrip", [] { return V{leaf({3})}; },
     // float64 -> float32 -> float64 loses precision: compare at float32's resolution
     [](const V& x) { return cast(cast(x[0], DType::Float32), DType::Float64) * 0.0 + x[0]; }},
    {OpKind::Sum, "sum/all",
     [] {
       return V{leaf({2, 3})};
     },
     [](const V& x) { return sum(x[0]); }},
    {OpKind::Sum, "sum/dims_keepdim",
     [] {
       return V{leaf({2, 3, 4})};
     },
     [](const V& x) {
       return sum(x[0], {0, 2}, true);
     }},
    {OpKind::Sum, "sum/negative_dim",
     [] {
       return V{leaf({2, 3})};
     },
     [](const V& x) { return sum(x[0], {-1}); }},
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
    {OpKind::Custom, "custom/from_op_cube", [] { return V{leaf({3})}; },
     [](const V& x) {
       Tensor in = x[0];
       Tensor y = autograd::from_op(
           in.detach() * in.detach() * in.detach(), {in},
           [in](const Tensor& g) { return std::vector<Tensor>{g * in * in * 3.0}; }, "cube");
       return y * y;
     }},
    {OpKind::Custom, "custom/checkpoint",
     [] {
       return V{leaf({2, 3}), leaf({3})};
     },
     [](const V& x) {
       return autograd::checkpoint([](const V& in) { return exp(in[0] * in[1]) * in[1]; }, x);
     }},
    {OpKind::Contiguous, "contiguous",
     [] {
       return V{leaf({3, 2})};
     },
     [](const V& x) { return clone(transpose(x[0] * x[0], 0, 1)); }},
});

}  // namespace
}  // namespace vk::test
