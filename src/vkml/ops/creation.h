// Creation ops and the random-number state.
#pragma once
#include <string_view>

#include "vkml/core/scalar.h"
#include "vkml/core/tensor.h"

namespace vk {

// Creation ops convert `value` to `dtype` as PyTorch does: floats truncate toward zero into
// integer dtypes, and a value that does not fit (2^40 into int32, NaN or 1e300 into int64, 1e300
// into float32) is a RuntimeError naming the op. Ints stay exact (no round trip through double).
// Every creation op makes its result on `device` (the *_like ones on t's).
Tensor full(const Shape& shape, Scalar value, DType dtype = DType::Float32, Device device = kCPU);
Tensor zeros(const Shape& shape, DType dtype = DType::Float32, Device device = kCPU);
Tensor ones(const Shape& shape, DType dtype = DType::Float32, Device device = kCPU);
Tensor full_like(const Tensor& t, Scalar value);
Tensor zeros_like(const Tensor& t);
Tensor ones_like(const Tensor& t);
// The other operand of a binary op with `like` when it is a number: a 0-d tensor already of the
// op's result dtype, result_type(like.dtype(), value) (float32 * 2.0 -> float32, int64 * 2.0 ->
// float32, int32 * 3 -> int32: the kind of the number decides, never its value). An int that the
// integer result dtype cannot hold is a RuntimeError naming `op`; a float rounds (1e300 -> inf
// in float32, as PyTorch's arithmetic).
Tensor scalar_like(Scalar value, const Tensor& like, std::string_view op = "scalar");
// A 0-d tensor of `dtype` holding `value`, converted as full() does.
Tensor scalar_tensor(Scalar value, DType dtype, std::string_view op = "scalar_tensor");
// The one element of t as a Scalar of t's kind (an int64 stays exact).
Scalar item_scalar(const Tensor& t);
// x converted to `dtype`, raising as full() does for an element that does not fit (creation from
// data: vk.tensor([2**40], dtype=vk.int32) is an error, never a silent wrap).
Tensor cast_checked(const Tensor& x, DType dtype, std::string_view op);
// start, start + step, ... up to but excluding stop. Integer bounds and step with an integer
// dtype compute exactly in int64 (the length too); anything else in double, as PyTorch.
Tensor arange(Scalar start, Scalar stop, Scalar step = 1, DType dtype = DType::Int64,
              Device device = kCPU);
Tensor linspace(double start, double stop, int64_t steps, DType dtype = DType::Float32);
Tensor eye(int64_t n, DType dtype = DType::Float32);
Tensor eye(int64_t n, int64_t m, DType dtype = DType::Float32);  // n x m, ones on the diagonal
// U[0, 1)
Tensor rand(const Shape& shape, DType dtype = DType::Float32, Device device = kCPU);
// N(0, 1)
Tensor randn(const Shape& shape, DType dtype = DType::Float32, Device device = kCPU);
Tensor randint(int64_t low, int64_t high, const Shape& shape, DType dtype = DType::Int64,
               Device device = kCPU);
// Copies host data of the given dtype into a new tensor.
Tensor from_data(const void* data, const Shape& shape, DType dtype);
Tensor from_vector(const std::vector<double>& values, const Shape& shape,
                   DType dtype = DType::Float32);
std::vector<double> to_vector(const Tensor& t);  // row-major values as double

// Counter-based RNG (Philox4x32-10): a draw depends only on (seed, offset), never on threads.
struct RngState {
  uint64_t seed;
  uint64_t offset;
};
void manual_seed(uint64_t seed);
RngState get_rng_state();
void set_rng_state(RngState state);

}  // namespace vk
