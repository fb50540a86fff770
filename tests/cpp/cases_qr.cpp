// Op cases for QR (#15 linalg): qr on tall (batched) and wide matrices, Q and R with LAPACK's
// signs (Gaussian inputs: no column is already reduced, so the signs stay put under finite
// differences), the reflector products composed of forward ops, and geqrf, which has no rule.
#include "op_cases.h"
#include "test_util.h"

namespace vk::test {
namespace {

using V = std::vector<Tensor>;

RegisterOpCases qr_cases({
    {OpKind::Qr, "qr/tall_q_and_r",  // Q and R of a tall batch, LAPACK's signs (no ties)
     [] {
       return V{leaf({2, 4, 3})};
     },
     [](const V& x) {
       const QrResult r = qr(x[0]);
       return cat({r.Q, r.R}, -2);
     }},
    {OpKind::Qr, "qr/wide",  // A = [X Y]: R_Y = Q^T Y
     [] {
       return V{leaf({2, 4})};
     },
     [](const V& x) {
       const QrResult r = qr(x[0]);
       return cat({r.Q, r.R}, -1);
     }},
    // householder_product and ormqr are composed of forward ops, filed under the family's op so
    // that the sweep checks them (gradients in A and tau, both devices)
    {OpKind::Qr, "qr/householder_product",
     [] {
       return V{leaf({4, 3}), leaf({2})};
     },
     [](const V& x) { return householder_product(x[0], x[1]); }},
    {OpKind::Qr, "qr/ormqr_right_transposed",
     [] {
       return V{leaf({3, 2}), leaf({2}), leaf({2, 3})};
     },
     [](const V& x) { return ormqr(x[0], x[1], x[2], false, true); }},
    {OpKind::Geqrf, "geqrf/no_rule",
     [] {
       return V{leaf({3, 2})};
     },
     [](const V& x) { return geqrf(x[0]).a; }},
});

}  // namespace
}  // namespace vk::test
