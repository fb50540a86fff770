// Creation ops and the random-number state.
#pragma once
#include <mutex>
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
// --- Random sampling (issue 15 item 3). Every random function draws from `gen`, or from the
// default generator (the one manual_seed seeds) when it is null; `gen` must be made for the
// result's device type (as torch). The same seed gives the same numbers on every device and at
// any thread count.
class Generator;
// U[0, 1)
Tensor rand(const Shape& shape, DType dtype = DType::Float32, Device device = kCPU,
            Generator* gen = nullptr);
// N(0, 1)
Tensor randn(const Shape& shape, DType dtype = DType::Float32, Device device = kCPU,
             Generator* gen = nullptr);
Tensor randint(int64_t low, int64_t high, const Shape& shape, DType dtype = DType::Int64,
               Device device = kCPU, Generator* gen = nullptr);
// A random permutation of 0 .. n - 1 (Fisher-Yates).
Tensor randperm(int64_t n, DType dtype = DType::Int64, Device device = kCPU,
                Generator* gen = nullptr);
// num_samples category indices (int64) per row of probs (1-d, or 2-d: one row per distribution),
// drawn with probability proportional to the row's weights; without replacement no index repeats
// in a row (an exponential race: the num_samples smallest of E_i / p_i, E_i ~ Exp(1)).
Tensor multinomial(const Tensor& probs, int64_t num_samples, bool replacement = false,
                   Generator* gen = nullptr);
// 1 with probability p, else 0, elementwise, in p's dtype; p in [0, 1].
Tensor bernoulli(const Tensor& p, Generator* gen = nullptr);
// Samples of N(mean, std^2), elementwise over mean and std broadcast together (mean's dtype).
Tensor normal(const Tensor& mean, const Tensor& std, Generator* gen = nullptr);
Tensor normal(const Tensor& mean, double std, Generator* gen = nullptr);
Tensor normal(double mean, const Tensor& std, Generator* gen = nullptr);
Tensor normal(double mean, double std, const Shape& shape, DType dtype = DType::Float32,
              Device device = kCPU, Generator* gen = nullptr);
// Poisson samples with the given rates (>= 0, finite), in rates' dtype.
Tensor poisson(const Tensor& rates, Generator* gen = nullptr);
// Gamma(concentration, 1) samples (concentration >= 0, not NaN), in its dtype, at least the
// dtype's smallest normal number (as torch, so their logs are finite). Reparameterised: the
// gradient is g * standard_gamma_grad(concentration, sample) (torch._standard_gamma).
Tensor standard_gamma(const Tensor& concentration, Generator* gen = nullptr);
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

// A random-number generator, as torch.Generator: a seed and the position in its stream. Each
// random op reserves as many counters as it draws (reserve), so that two ops never share one.
// Thread-safe: ops on several threads may draw from one generator.
class Generator {
 public:
  static constexpr uint64_t kDefaultSeed = 67280421310721ull;  // torch's default seed
  explicit Generator(Device device = kCPU, uint64_t seed = kDefaultSeed)
      : state_{seed, 0}, initial_seed_(seed), device_(device) {}
  Generator(const Generator&) = delete;
  Generator& operator=(const Generator&) = delete;

  void manual_seed(uint64_t seed);  // restarts the stream at seed's beginning
  uint64_t seed();                  // seeds from a nondeterministic source, returns the seed
  uint64_t initial_seed() const;    // the last seed given (manual_seed or seed)
  RngState state() const;
  void set_state(RngState state);
  Device device() const { return device_; }
  // The state before reserving: the caller draws counters offset .. offset + n - 1.
  RngState reserve(uint64_t n);

 private:
  mutable std::mutex mutex_;
  RngState state_;
  uint64_t initial_seed_;
  Device device_;
};
// The generator of every device that random ops use when given none (torch's default_generator).
Generator& default_generator();

// Reserves n draws (counters) of `gen`, or of the default generator when null, for a random op
// making its result on `device`; RuntimeError naming `op` when gen serves another device type.
RngState reserve_draws(Generator* gen, Device device, uint64_t n, std::string_view op);

// The default generator's seed and state.
void manual_seed(uint64_t seed);
RngState get_rng_state();
void set_rng_state(RngState state);

}  // namespace vk
