// Op cases for the creation ops (no inputs: the sweep checks their values, dtypes and that they
// record nothing).
#include "op_cases.h"
#include "test_util.h"

namespace vk::test {
namespace {

using V = std::vector<Tensor>;

RegisterOpCases creation_cases({
    {OpKind::Full, "full", [] { return V{}; },
     [](const V&) {
       return full({2, 2}, 3.0);
     }},
    {OpKind::Arange, "arange", [] { return V{}; }, [](const V&) { return arange(0, 5); }},
    {OpKind::Rand, "rand", [] { return V{}; }, [](const V&) { return rand({3}); }},
    {OpKind::Randn, "randn", [] { return V{}; }, [](const V&) { return randn({3}); }},
    {OpKind::Randint, "randint", [] { return V{}; }, [](const V&) { return randint(0, 4, {3}); }},

});

}  // namespace
}  // namespace vk::test
