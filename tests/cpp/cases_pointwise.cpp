// Op cases for the pointwise family (ops/pointwise.h; the sweep gradchecks and gradgradchecks each
// in float64, and test_vulkan_sweep runs them on the Vulkan device): lerp on both sides of
// |w| = 0.5 and broadcast, addcmul and addcdiv with a value and broadcast (t2 away from 0).
#include "op_cases.h"
#include "test_util.h"
#include "vkml/ops/pointwise.h"

namespace vk::test {
namespace {

using V = std::vector<Tensor>;

RegisterOpCases pointwise_cases({
    {OpKind::Lerp, "lerp",
     [] {
       return V{leaf({2, 3}), leaf({2, 3}), values({0.1, 0.7, -0.3, 1.4, 0.45, -0.8}, {2, 3})};
     },
     [](const V& x) { return lerp(x[0], x[1], x[2]); }},
    {OpKind::Lerp, "lerp/broadcast",
     [] {
       return V{leaf({2, 3}), leaf({3}), values({0.3, 0.9}, {2, 1})};
     },
     [](const V& x) { return lerp(x[0], x[1], x[2]); }},
    {OpKind::Lerp, "lerp/scalar",
     [] {
       return V{leaf({2, 3}), leaf({2, 3})};
     },
     [](const V& x) { return lerp(x[0], x[1], Scalar(0.7)); }},
    {OpKind::Addcmul, "addcmul",
     [] {
       return V{leaf({2, 3}), leaf({2, 3}), leaf({3})};
     },
     [](const V& x) { return addcmul(x[0], x[1], x[2], Scalar(-0.5)); }},
    {OpKind::Addcdiv, "addcdiv",
     [] {
       return V{leaf({2, 3}), leaf({2, 1}), leaf({2, 3}, 0.5, 2.0)};
     },
     [](const V& x) { return addcdiv(x[0], x[1], x[2], Scalar(1.5)); }},
});

}  // namespace
}  // namespace vk::test
