// Op cases for the math family (issue #15; the sweep gradchecks and gradgradchecks each in
// float64, and test_vulkan_sweep runs them on the Vulkan device). Inputs sit inside each op's
// domain, away from its poles and edges: asin/acos/atanh in (-1, 1), acosh above 1, lgamma and
// digamma on both sides of 0 but away from the non-positive integers, fmod away from the jumps
// of trunc(a / b).
#include "op_cases.h"
#include "test_util.h"
#include "vkml/ops/math.h"

namespace vk::test {
namespace {

using V = std::vector<Tensor>;

// Values on both sides of zero, away from the non-positive integers (lgamma's and digamma's
// poles) by at least 0.2.
Tensor off_poles() { return values({-2.6, -1.3, -0.4, 0.3, 0.8, 1.7, 3.2, 12.5}, {2, 4}); }

RegisterOpCases math_cases({
    {OpKind::Tan, "tan",
     [] {
       return V{leaf({2, 3}, -1.2, 1.2)};
     },
     [](const V& x) { return tan(x[0]); }},
    {OpKind::Tan, "tan/far",
     [] {
       return V{values({10.0, -20.5, 100.25}, {3})};
     },
     [](const V& x) { return tan(x[0]); }},
    {OpKind::Asin, "asin",
     [] {
       return V{leaf({2, 3}, -0.9, 0.9)};
     },
     [](const V& x) { return asin(x[0]); }},
    {OpKind::Acos, "acos",
     [] {
       return V{leaf({2, 3}, -0.9, 0.9)};
     },
     [](const V& x) { return acos(x[0]); }},
    {OpKind::Atan, "atan",
     [] {
       return V{leaf({2, 3}, -4.0, 4.0)};
     },
     [](const V& x) { return atan(x[0]); }},
    {OpKind::Sinh, "sinh",
     [] {
       return V{leaf({2, 3}, -3.0, 3.0)};
     },
     [](const V& x) { return sinh(x[0]); }},
    {OpKind::Cosh, "cosh",
     [] {
       return V{leaf({2, 3}, -3.0, 3.0)};
     },
     [](const V& x) { return cosh(x[0]); }},
    {OpKind::Asinh, "asinh",
     [] {
       return V{leaf({2, 3}, -4.0, 4.0)};
     },
     [](const V& x) { return asinh(x[0]); }},
    {OpKind::Acosh, "acosh",
     [] {
       return V{leaf({2, 3}, 1.2, 5.0)};
     },
     [](const V& x) { return acosh(x[0]); }},
    {OpKind::Atanh, "atanh",
     [] {
       return V{leaf({2, 3}, -0.8, 0.8)};
     },
     [](const V& x) { return atanh(x[0]); }},
    {OpKind::Lgamma, "lgamma", [] { return V{off_poles()}; },
     [](const V& x) { return lgamma(x[0]); }},
    {OpKind::Digamma, "digamma", [] { return V{off_poles()}; },
     [](const V& x) { return digamma(x[0]); }},
    {OpKind::Polygamma, "polygamma/1", [] { return V{off_poles()}; },
     [](const V& x) { return polygamma(1, x[0]); }},
    {OpKind::Polygamma, "polygamma/3",
     [] {
       return V{values({0.4, 1.5, 2.5, 7.0}, {4})};
     },
     [](const V& x) { return polygamma(3, x[0]); }},
    {OpKind::Erfinv, "erfinv",
     [] {
       return V{leaf({2, 3}, -0.95, 0.95)};
     },
     [](const V& x) { return erfinv(x[0]); }},
    {OpKind::Log2, "log2",
     [] {
       return V{leaf({2, 3}, 0.2, 5.0)};
     },
     [](const V& x) { return log2(x[0]); }},
    {OpKind::Log10, "log10",
     [] {
       return V{leaf({2, 3}, 0.2, 5.0)};
     },
     [](const V& x) { return log10(x[0]); }},
    {OpKind::Exp2, "exp2",
     [] {
       return V{leaf({2, 3}, -3.0, 3.0)};
     },
     [](const V& x) { return exp2(x[0]); }},
    {OpKind::Frac, "frac",  // away from the integers, where trunc jumps
     [] {
       return V{values({0.3, -1.6, 2.45, -0.2, 5.7, -3.35}, {2, 3})};
     },
     [](const V& x) { return frac(x[0]); }},
    {OpKind::Atan2, "atan2",
     [] {
       return V{values({1.0, -0.5, 2.0, -1.5, 0.3, -2.0}, {2, 3}),
                values({0.7, 1.2, -1.1, -0.4, -2.0, 0.5}, {2, 3})};
     },
     [](const V& x) { return atan2(x[0], x[1]); }},
    {OpKind::Atan2, "atan2/broadcast",
     [] {
       return V{leaf({2, 3}, -2.0, 2.0), values({0.5, -1.5, 2.0}, {3})};
     },
     [](const V& x) { return atan2(x[0], x[1]); }},
    {OpKind::Fmod, "fmod",
     [] {
       return V{values({5.3, -5.3, 2.2, -7.9, 0.45, 3.3}, {2, 3}),
                values({2.0, 2.0, -1.5, 3.0, 0.7, -1.4}, {2, 3})};
     },
     [](const V& x) { return fmod(x[0], x[1]); }},

    // ---- integer bits and steps (integer or stepped results: no rule) ----
    {OpKind::BitwiseLeftShift, "bitwise_left_shift",
     [] {
       return V{from_vector({3, -5, 7, 1, -1}, {5}, DType::Int64),
                from_vector({2, 1, 64, -1, 63}, {5}, DType::Int64)};
     },
     [](const V& x) { return bitwise_left_shift(x[0], x[1]); }},
    {OpKind::BitwiseRightShift, "bitwise_right_shift",
     [] {
       return V{from_vector({12, -12, 7, -7}, {2, 2}, DType::Int32),
                from_vector({2, 33}, {2}, DType::Int32)};
     },
     [](const V& x) { return bitwise_right_shift(x[0], x[1]); }},
    {OpKind::Gcd, "gcd",
     [] {
       return V{from_vector({12, -18, 0, 7, 0}, {5}, DType::Int64),
                from_vector({8, 24, 5, -21, 0}, {5}, DType::Int64)};
     },
     [](const V& x) { return gcd(x[0], x[1]); }},
    {OpKind::Lcm, "lcm",
     [] {
       return V{from_vector({4, -6, 0, 7}, {4}, DType::Int32),
                from_vector({6, 4, 5, -3}, {4}, DType::Int32)};
     },
     [](const V& x) { return lcm(x[0], x[1]); }},
    {OpKind::Nextafter, "nextafter",
     [] {
       return V{values({1.0, -1.0, 0.0, 2.5}, {4}, false),
                values({2.0, -2.0, -1.0, 2.5}, {4}, false)};
     },
     [](const V& x) { return nextafter(x[0], x[1]); }},
});

}  // namespace
}  // namespace vk::test
