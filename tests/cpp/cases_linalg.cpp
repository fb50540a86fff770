// Op cases for matmul: every torch.matmul shape combination the public wrapper maps onto the
// 2-D/batched core, and operands BLAS sees transposed.
#include "op_cases.h"
#include "test_util.h"

namespace vk::test {
namespace {

using V = std::vector<Tensor>;

RegisterOpCases linalg_cases({
    {OpKind::Addmm, "addmm/2d",
     [] {
       return V{leaf({4}), leaf({2, 3}), leaf({3, 4})};
     },
     [](const V& x) { return addmm(x[0], x[1], x[2]); }},
    {OpKind::Addmm, "addmm/weight_transposed",  // x @ W^T + b, as a linear layer
     [] {
       return V{leaf({3}), leaf({4, 2}), leaf({3, 2})};
     },
     [](const V& x) { return addmm(x[0], x[1], transpose(x[2], 0, 1)); }},
    {OpKind::Addmm, "addmm/matrix_bias",  // a recurrent step: x_t W^T + h W_hh^T in one GEMM
     [] {
       return V{leaf({3, 4}), leaf({3, 2}), leaf({2, 4})};
     },
     [](const V& x) { return addmm(x[0], x[1], x[2]); }},
    {OpKind::Addmm, "addmm/matrix_bias_strided",
     [] {
       return V{leaf({4, 3}), leaf({3, 5}), leaf({4, 5})};
     },
     [](const V& x) { return addmm(transpose(x[0], 0, 1), x[1], transpose(x[2], 0, 1)); }},
    {OpKind::Addmm, "addmm/strided_input",
     [] {
       return V{leaf({2}), leaf({5, 3}), leaf({5, 2})};
     },
     [](const V& x) { return addmm(x[0], transpose(x[1], 0, 1), x[2]); }},
    {OpKind::Matmul, "matmul/2d",
     [] {
       return V{leaf({2, 3}), leaf({3, 4})};
     },
     [](const V& x) { return matmul(x[0], x[1]); }},
    {OpKind::Matmul, "matmul/vec_mat",
     [] {
       return V{leaf({3}), leaf({3, 2})};
     },
     [](const V& x) { return matmul(x[0], x[1]); }},
    {OpKind::Matmul, "matmul/mat_vec",
     [] {
       return V{leaf({2, 3}), leaf({3})};
     },
     [](const V& x) { return matmul(x[0], x[1]); }},
    {OpKind::Matmul, "matmul/dot",
     [] {
       return V{leaf({4}), leaf({4})};
     },
     [](const V& x) { return matmul(x[0], x[1]); }},
    {OpKind::Matmul, "matmul/batched_broadcast",
     [] {
       return V{leaf({2, 1, 3, 4}), leaf({3, 4, 2})};
     },
     [](const V& x) { return matmul(x[0], x[1]); }},
    {OpKind::Matmul, "matmul/batched_times_matrix",
     [] {
       return V{leaf({2, 3, 4}), leaf({4, 2})};
     },
     [](const V& x) { return matmul(x[0], x[1]); }},
    {OpKind::Matmul, "matmul/matrix_times_batched",
     [] {
       return V{leaf({3, 4}), leaf({2, 4, 2})};
     },
     [](const V& x) { return matmul(x[0], x[1]); }},
    {OpKind::Matmul, "matmul/vec_batched",
     [] {
       return V{leaf({3}), leaf({2, 3, 2})};
     },
     [](const V& x) { return matmul(x[0], x[1]); }},
    {OpKind::Matmul, "matmul/batched_vec",
     [] {
       return V{leaf({2, 2, 3}), leaf({3})};
     },
     [](const V& x) { return matmul(x[0], x[1]); }},
    // Transposed (column-major) and strided operands: BLAS transpose flags and the packing path.
    {OpKind::Matmul, "matmul/transposed",
     [] {
       return V{leaf({3, 2}), leaf({4, 3})};
     },
     [](const V& x) { return matmul(transpose(x[0], 0, 1), transpose(x[1], 0, 1)); }},
    {OpKind::Matmul, "matmul/broadcast_rows",
     [] {
       return V{leaf({1, 3}), leaf({3, 2})};
     },
     [](const V& x) {
       return matmul(expand(x[0], {4, 3}), x[1]);
     }},
});

}  // namespace
}  // namespace vk::test
