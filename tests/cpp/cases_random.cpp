// Op cases for the random sampling ops (issue 15 item 3). Each case draws from a generator of its
// own, seeded in the case, so that every evaluation (finite differences, the Vulkan sweep's runs
// on both devices) sees the same numbers. bernoulli and poisson are piecewise constant in their
// input, so finite differences see their zero gradient; normal's (zero, as torch, though the
// sample moves with mean and std) is checked through a case scaled by zero, its values in
// test_random.cpp.
#include "op_cases.h"
#include "test_util.h"

namespace vk::test {
namespace {

using V = std::vector<Tensor>;

RegisterOpCases random_cases({
    {OpKind::Randperm, "randperm", [] { return V{}; }, [](const V&) { return randperm(6); }},
    {OpKind::Multinomial, "multinomial/without_replacement",
     [] {
       return V{values({1, 0, 2, 3, 0.5, 0.5, 0, 1}, {2, 4}, false)};
     },
     [](const V& x) {
       Generator g(x[0].device(), 5);
       return multinomial(x[0], 2, false, &g);
     }},
    {OpKind::Multinomial, "multinomial/with_replacement",
     [] {
       return V{values({1, 0, 2, 3}, {4}, false)};
     },
     [](const V& x) {
       Generator g(x[0].device(), 6);
       return multinomial(x[0], 7, true, &g);
     }},
    {OpKind::Bernoulli, "bernoulli",
     [] {
       return V{values({0.1, 0.5, 0.9, 0.3, 0.7, 0.25}, {2, 3})};
     },
     [](const V& x) {
       Generator g(x[0].device(), 7);
       return bernoulli(x[0], &g);
     }},
    {OpKind::Normal, "normal/zero_gradient",
     [] {
       return V{values({0.5, -1, 2}, {3}), values({1, 2, 0.5}, {3})};
     },
     [](const V& x) {
       Generator g(x[0].device(), 8);
       return normal(x[0], x[1], &g) * 0.0;
     }},
    {OpKind::Poisson, "poisson",
     [] {
       return V{values({0.5, 3, 12, 40}, {2, 2})};
     },
     [](const V& x) {
       Generator g(x[0].device(), 9);
       return poisson(x[0], &g);
     }},
    // standard_gamma's rule is the implicit derivative of the sample at its quantile, which finite
    // differences through the rejection sampler do not see (a draw accepted at alpha moves along
    // Marsaglia and Tsang's transform instead): scaled by zero here, its values checked against
    // standard_gamma_grad, mpmath and the moments' derivatives in test_random.cpp and
    // tests/python/test_gamma_sampling.py. Second order off: it needs standard_gamma_grad's
    // derivative in alpha, which has no rule (as torch).
    {OpKind::StandardGamma, "standard_gamma/scaled_by_zero",
     [] {
       return V{values({0.3, 1, 2.5, 40}, {2, 2})};
     },
     [](const V& x) {
       Generator g(x[0].device(), 10);
       return standard_gamma(x[0], &g) * 0.0;
     },
     false},
});

}  // namespace
}  // namespace vk::test
