// Creation ops and the random-number state.
#pragma once
#include "vkml/core/tensor.h"

namespace vk {

Tensor full(const Shape& shape, double value, DType dtype = DType::Float32);
Tensor zeros(const Shape& shape, DType dtype = DType::Float32);
Tensor ones(const Shape& shape, DType dtype = DType::Float32);
Tensor full_like(const Tensor& t, double value);
Tensor zeros_like(const Tensor& t);
Tensor ones_like(const Tensor& t);
// A 0-d tensor holding `value` in `like`'s dtype (a float into an integer tensor's op: float32).
Tensor scalar_like(double value, const Tensor& like);
Tensor arange(double start, double stop, double step = 1.0, DType dtype = DType::Int64);
Tensor linspace(double start, double stop, int64_t steps, DType dtype = DType::Float32);
Tensor eye(int64_t n, DType dtype = DType::Float32);
Tensor eye(int64_t n, int64_t m, DType dtype = DType::Float32);  // n x m, ones on the diagonal
Tensor rand(const Shape& shape, DType dtype = DType::Float32);   // U[0, 1)
Tensor randn(const Shape& shape, DType dtype = DType::Float32);  // N(0, 1)
Tensor randint(int64_t low, int64_t high, const Shape& shape, DType dtype = DType::Int64);
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
