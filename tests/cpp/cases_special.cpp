// Op cases for the special functions (issue #15; the sweep gradchecks and gradgradchecks each in
// float64, and test_vulkan_sweep runs them on the Vulkan device). The Bessel functions on both
// sides of 0 and of the expansions' switch at |x| = 8; i1 and i1e also at 0 exactly, where their
// derivative's 0/0 is taken as its limit 1/2. igamma and igammac differentiate x only (a has no
// derivative, as in torch), on both sides of the series / continued fraction switch.
#include "op_cases.h"
#include "test_util.h"
#include "vkml/ops/special.h"

namespace vk::test {
namespace {

using V = std::vector<Tensor>;

Tensor around_eight() { return values({-9.5, -3.2, -0.4, 0.7, 2.5, 7.9, 8.3, 12.0}, {2, 4}); }
Tensor igamma_a() { return values({0.5, 1.0, 2.5, 7.0, 12.0, 30.0}, {2, 3}, false); }
Tensor igamma_x() { return values({0.3, 2.0, 1.7, 9.5, 10.0, 26.0}, {2, 3}); }

RegisterOpCases special_cases({
    {OpKind::I0, "i0", [] { return V{around_eight()}; }, [](const V& x) { return i0(x[0]); }},
    {OpKind::I0e, "i0e", [] { return V{around_eight()}; }, [](const V& x) { return i0e(x[0]); }},
    {OpKind::I1, "i1", [] { return V{around_eight()}; }, [](const V& x) { return i1(x[0]); }},
    {OpKind::I1e, "i1e", [] { return V{around_eight()}; }, [](const V& x) { return i1e(x[0]); }},
    // the rules' value at 0 (1/2), beside points close to it; second order off: the second
    // derivative's rule divides by x, which the finite differences straddle at 0
    {OpKind::I1, "i1/zero",
     [] {
       return V{values({0.0, 1e-3, -2e-3}, {3})};
     },
     [](const V& x) { return i1(x[0]); }, false},
    {OpKind::I1e, "i1e/zero",
     [] {
       return V{values({0.0, 0.5}, {2})};
     },
     [](const V& x) { return i1e(x[0]); }, false},
    {OpKind::Igamma, "igamma",
     [] {
       return V{igamma_a(), igamma_x()};
     },
     [](const V& x) { return igamma(x[0], x[1]); }},
    {OpKind::Igammac, "igammac",
     [] {
       return V{igamma_a(), igamma_x()};
     },
     [](const V& x) { return igammac(x[0], x[1]); }},
    // x only (alpha has no rule, as torch); both sides of the series / fraction switch at
    // x = alpha + 1, and alpha >= 1e5 near its mean (the Cornish-Fisher expansion)
    {OpKind::StandardGammaGrad, "standard_gamma_grad",
     [] {
       return V{values({0.05, 0.7, 2.5, 2.5, 30.0, 2e5}, {2, 3}, false),
                values({0.01, 2.4, 1.2, 6.0, 26.0, 2.003e5}, {2, 3})};
     },
     [](const V& x) { return standard_gamma_grad(x[0], x[1]); }},
    {OpKind::Igamma, "igamma/broadcast",
     [] {
       return V{values({0.8, 4.0, 15.0}, {3}, false), leaf({2, 3}, 0.5, 6.0)};
     },
     [](const V& x) { return igamma(x[0], x[1]); }},
});

}  // namespace
}  // namespace vk::test
