// Op cases for the activations with parameters (ops/activation.h): gradcheck and gradgradcheck
// in float64, inputs away from the kinks (0, hardtanh's bounds, softplus's threshold), where the
// central difference would straddle two pieces.
#include "op_cases.h"
#include "test_util.h"

namespace vk::test {
namespace {

using V = std::vector<Tensor>;

// |x| in [0.2, 1.4], both signs.
Tensor away_from_zero() { return values({-1.4, -0.6, 0.2, 0.9, -0.3, 1.1}, {2, 3}); }
// Inside (-1, 1.5), below -1 and above 1.5, none within 0.1 of a bound.
Tensor around_bounds() { return values({-1.6, -0.7, 0.3, 1.2, 1.9, -1.2}, {2, 3}); }
// beta x = 2x against threshold 1.5: both sides, none near.
Tensor around_threshold() { return values({-2.5, -0.4, 0.3, 0.6, 1.4, 3.0}, {2, 3}); }

RegisterOpCases activation_cases({
    {OpKind::LeakyRelu, "leaky_relu", [] { return V{away_from_zero()}; },
     [](const V& x) { return leaky_relu(x[0], 0.2); }},
    {OpKind::LeakyReluBackward, "leaky_relu_backward",
     [] {
       return V{leaf({2, 3}, -2.0, 2.0), away_from_zero()};
     },
     [](const V& x) { return leaky_relu_backward(x[0], x[1], 0.2); }},
    {OpKind::Hardtanh, "hardtanh", [] { return V{around_bounds()}; },
     [](const V& x) { return hardtanh(x[0], -1.0, 1.5); }},
    {OpKind::HardtanhBackward, "hardtanh_backward/broadcast_g",
     [] {
       return V{leaf({3}, -2.0, 2.0), around_bounds()};
     },
     [](const V& x) { return hardtanh_backward(x[0], x[1], -1.0, 1.5); }},
    {OpKind::Elu, "elu", [] { return V{away_from_zero()}; },
     [](const V& x) { return elu(x[0], 0.7, 1.3); }},
    {OpKind::EluBackward, "elu_backward",
     [] {
       return V{leaf({2, 3}, -2.0, 2.0), away_from_zero()};
     },
     [](const V& x) { return elu_backward(x[0], x[1], 0.7, 1.3); }},
    {OpKind::Softplus, "softplus", [] { return V{around_threshold()}; },
     [](const V& x) { return softplus(x[0], 2.0, 1.5); }},
    {OpKind::Softplus, "softplus/no_threshold",
     [] {
       return V{leaf({2, 3}, -30.0, 30.0)};
     },
     [](const V& x) { return softplus(x[0], 1.0, INFINITY); }},
    {OpKind::Hardsigmoid, "hardsigmoid",
     [] {
       return V{values({-3.5, -2.0, 0.4, 2.9, 3.3, -0.7}, {2, 3})};
     },
     [](const V& x) { return hardsigmoid(x[0]); }},
    {OpKind::HardsigmoidBackward, "hardsigmoid_backward",
     [] {
       return V{leaf({2, 3}, -2.0, 2.0), values({-3.5, -2.0, 0.4, 2.9, 3.3, -0.7}, {2, 3})};
     },
     [](const V& x) { return hardsigmoid_backward(x[0], x[1]); }},
    {OpKind::Hardswish, "hardswish",
     [] {
       return V{values({-3.5, -2.0, 0.4, 2.9, 3.3, -0.7}, {2, 3})};
     },
     [](const V& x) { return hardswish(x[0]); }},
    {OpKind::HardswishBackward, "hardswish_backward/broadcast_g",
     [] {
       return V{leaf({3}, -2.0, 2.0), values({-3.5, -2.0, 0.4, 2.9, 3.3, -0.7}, {2, 3})};
     },
     [](const V& x) { return hardswish_backward(x[0], x[1]); }},
    {OpKind::Silu, "silu",
     [] {
       return V{leaf({2, 3}, -6.0, 6.0)};
     },
     [](const V& x) { return silu(x[0]); }},
    {OpKind::SiluBackward, "silu_backward/broadcast_g",
     [] {
       return V{leaf({3}, -2.0, 2.0), leaf({2, 3}, -6.0, 6.0)};
     },
     [](const V& x) { return silu_backward(x[0], x[1]); }},
    // beta 0.5 against |x| in [0.2, 1.4]: both pieces, none within 0.1 of the joins
    {OpKind::SmoothL1, "smooth_l1", [] { return V{away_from_zero()}; },
     [](const V& x) { return smooth_l1(x[0], 0.5); }},
    {OpKind::SmoothL1Backward, "smooth_l1_backward",
     [] {
       return V{leaf({2, 3}, -2.0, 2.0), away_from_zero()};
     },
     [](const V& x) { return smooth_l1_backward(x[0], x[1], 0.5); }},
    {OpKind::SquaredDifference, "squared_difference",
     [] {
       return V{leaf({2, 3}), leaf({3})};
     },
     [](const V& x) { return squared_difference(x[0], x[1]); }},
    {OpKind::Huber, "huber", [] { return V{away_from_zero()}; },
     [](const V& x) { return huber(x[0], 0.75); }},
    {OpKind::HuberBackward, "huber_backward/broadcast_g",
     [] {
       return V{leaf({3}, -2.0, 2.0), away_from_zero()};
     },
     [](const V& x) { return huber_backward(x[0], x[1], 0.75); }},
    // beta = -1: log sigmoid (F.logsigmoid, the logit losses)
    {OpKind::Softplus, "softplus/negative_beta",
     [] {
       return V{leaf({2, 3}, -30.0, 30.0)};
     },
     [](const V& x) { return softplus(x[0], -1.0, INFINITY); }},
    {OpKind::SoftplusBackward, "softplus_backward/negative_beta",
     [] {
       return V{leaf({2, 3}, -2.0, 2.0), leaf({2, 3}, -5.0, 5.0)};
     },
     [](const V& x) { return softplus_backward(x[0], x[1], -1.0, INFINITY); }},
    {OpKind::SoftplusBackward, "softplus_backward",
     [] {
       return V{leaf({2, 3}, -2.0, 2.0), around_threshold()};
     },
     [](const V& x) { return softplus_backward(x[0], x[1], 2.0, 1.5); }},
});

}  // namespace
}  // namespace vk::test
