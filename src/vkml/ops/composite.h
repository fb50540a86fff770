// Composite ops: PyTorch functions built from the op table's ops, with no kernel and no table
// entry of their own. They run on every device whose kernels the ops they are made of have, and
// their gradients (any order) come from those ops' rules. Each comment names what it is made of.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "vkml/core/scalar.h"
#include "vkml/core/tensor.h"

namespace vk {

// ---- element-wise (composite.cpp) ----

// Bool results of x != 0 combined (ne, bitwise_*); no graph.
Tensor logical_not(const Tensor& x);
Tensor logical_and(const Tensor& a, const Tensor& b);
Tensor logical_or(const Tensor& a, const Tensor& b);
Tensor logical_xor(const Tensor& a, const Tensor& b);
// |a - b| <= atol + rtol * |b| (or a == b, or both NaN with equal_nan), as torch.isclose.
Tensor isclose(const Tensor& a, const Tensor& b, double rtol = 1e-5, double atol = 1e-8,
               bool equal_nan = false);
// isclose everywhere (a host read).
bool allclose(const Tensor& a, const Tensor& b, double rtol = 1e-5, double atol = 1e-8,
              bool equal_nan = false);
// Same shape and same values (a host read).
bool equal(const Tensor& a, const Tensor& b);
// NaN, +inf and -inf replaced (defaults: 0, the dtype's largest and lowest finite values); where.
Tensor nan_to_num(const Tensor& x, std::optional<double> nan = std::nullopt,
                  std::optional<double> posinf = std::nullopt,
                  std::optional<double> neginf = std::nullopt);
// x with `value` at the positions `index` (1-D) along dim (a mask from comparisons, where).
Tensor index_fill(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& value);
// x with `value` on its main diagonal (all dims of equal size; a tall 2-D matrix restarts the
// diagonal every cols + 1 rows when `wrap`), as torch's fill_diagonal_ writes it in place.
Tensor fill_diagonal(const Tensor& x, const Tensor& value, bool wrap = false);
// clamp with tensor bounds (maximum/minimum); an undefined bound leaves that side open.
Tensor clamp(const Tensor& x, const Tensor& min, const Tensor& max);

// ---- shape (composite.cpp) ----

// The n-th forward difference along dim (slices and sub; != for bool), after cat with
// prepend/append (undefined for none).
Tensor diff(const Tensor& x, int64_t n = 1, int64_t dim = -1, const Tensor& prepend = {},
            const Tensor& append = {});
// Elements shifted along dims (slices and cat); no dims: over the flattened tensor.
Tensor roll(const Tensor& x, const std::vector<int64_t>& shifts,
            const std::vector<int64_t>& dims = {});
// Coordinate grids (expanded views of reshapes); indexing "ij" or "xy".
std::vector<Tensor> meshgrid(const std::vector<Tensor>& xs, const std::string& indexing = "ij");
// Each element repeated `repeats` times along dim (none: the flattened tensor); expand+reshape.
Tensor repeat_interleave(const Tensor& x, int64_t repeats, std::optional<int64_t> dim = {},
                         std::optional<int64_t> output_size = {});
// Element i repeated repeats[i] times (repeats read on the host: the shape depends on them);
// index_select.
Tensor repeat_interleave(const Tensor& x, const Tensor& repeats, std::optional<int64_t> dim = {},
                         std::optional<int64_t> output_size = {});
// The positions 0.. each repeated repeats[i] times (torch.repeat_interleave(repeats)).
Tensor repeat_interleave(const Tensor& repeats, std::optional<int64_t> output_size = {});
// A view of the diagonal of dims (dim1, dim2), moved last (reshape and a strided slice).
Tensor diagonal(const Tensor& x, int64_t offset = 0, int64_t dim1 = 0, int64_t dim2 = 1);
// 1-D x: a square matrix with x on its offset diagonal; 2-D x: its offset diagonal.
Tensor diag(const Tensor& x, int64_t offset = 0);
// The last dim of x placed on the (dim1, dim2) diagonal of new square matrices (mul by eye, pad).
Tensor diag_embed(const Tensor& x, int64_t offset = 0, int64_t dim1 = -2, int64_t dim2 = -1);
Tensor trace(const Tensor& x);  // 2-D only, as torch
// dim split into `sizes` (one may be -1).
Tensor unflatten(const Tensor& x, int64_t dim, const std::vector<int64_t>& sizes);

// ---- reductions and norms (composite_linalg.cpp) ----

struct TensorPair {
  Tensor first, second;
};
TensorPair var_mean(const Tensor& x, const std::vector<int64_t>& dims = {}, double correction = 1,
                    bool keepdim = false);
TensorPair std_mean(const Tensor& x, const std::vector<int64_t>& dims = {}, double correction = 1,
                    bool keepdim = false);
// torch.linalg.vector_norm: ord any real (inf, -inf, 0 too); dims empty = all. At a zero the
// gradient is 0, as torch's subgradient.
Tensor vector_norm(const Tensor& x, double ord = 2, const std::vector<int64_t>& dims = {},
                   bool keepdim = false, std::optional<DType> dtype = {});
// torch.linalg.matrix_norm: "fro", 1, -1, inf, -inf ("nuc", 2, -2 need an SVD: NotImplemented).
Tensor matrix_norm(const Tensor& x, const std::string& ord, std::vector<int64_t> dims = {-2, -1},
                   bool keepdim = false, std::optional<DType> dtype = {});
Tensor matrix_norm(const Tensor& x, double ord, std::vector<int64_t> dims = {-2, -1},
                   bool keepdim = false, std::optional<DType> dtype = {});
Tensor dist(const Tensor& a, const Tensor& b, double p = 2);
// Pairwise p-norm distances between the rows of x1 (.., P, M) and x2 (.., R, M).
// compute_mode as torch's: Euclidean distances (p = 2) of more than 25 rows on either side by a
// matrix product ("use_mm_for_euclid_dist" always, "donot_use_mm_for_euclid_dist" never).
Tensor cdist(const Tensor& x1, const Tensor& x2, double p = 2,
             std::string_view compute_mode = "use_mm_for_euclid_dist_if_necessary");

// ---- products (composite_linalg.cpp) ----

Tensor outer(const Tensor& a, const Tensor& b);  // 1-D a and b: a[:, None] * b
// beta * input + alpha * (product); beta == 0 ignores input's values (NaN too), as torch.
Tensor addmv(const Tensor& input, const Tensor& mat, const Tensor& vec, Scalar beta = 1,
             Scalar alpha = 1);
Tensor addr(const Tensor& input, const Tensor& v1, const Tensor& v2, Scalar beta = 1,
            Scalar alpha = 1);
Tensor baddbmm(const Tensor& input, const Tensor& b1, const Tensor& b2, Scalar beta = 1,
               Scalar alpha = 1);
Tensor addbmm(const Tensor& input, const Tensor& b1, const Tensor& b2, Scalar beta = 1,
              Scalar alpha = 1);
// Cross product of 3-vectors along dim (none: torch.cross's first dim of size 3).
Tensor cross(const Tensor& a, const Tensor& b, std::optional<int64_t> dim = {});
// Contracts dims_a of a with dims_b of b (permute, reshape, matmul).
Tensor tensordot(const Tensor& a, const Tensor& b, const std::vector<int64_t>& dims_a,
                 const std::vector<int64_t>& dims_b);
Tensor tensordot(const Tensor& a, const Tensor& b, int64_t dims = 2);
Tensor kron(const Tensor& a, const Tensor& b);
// Operands contracted pairwise left to right with matmul, after their own repeated subscripts
// became diagonals and the subscripts no later operand nor the output uses were summed out.
Tensor einsum(const std::string& equation, const std::vector<Tensor>& operands);

}  // namespace vk
