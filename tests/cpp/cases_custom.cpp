// Op cases for user-defined ops: a custom function with its own vjp, and checkpoint.
#include "op_cases.h"
#include "test_util.h"

namespace vk::test {
namespace {

using V = std::vector<Tensor>;

RegisterOpCases custom_cases({
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

});

}  // namespace
}  // namespace vk::test
