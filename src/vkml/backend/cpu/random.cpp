// Random sampling kernels (issue 15 item 3; standard_gamma #18). Each draws from the Philox stream
// at the op's (seed, offset) by fixed counters (element, sample or category i uses offset + i), so
// the result never depends on the thread count, and the Vulkan backend reproduces it by running
// these.
#include "vkml/backend/cpu/random.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <numeric>
#include <vector>

#include "vkml/backend/cpu/creation.h"
#include "vkml/backend/cpu/elementwise.h"
#include "vkml/backend/cpu/parallel.h"
#include "vkml/backend/cpu/vmath.h"

namespace vk::cpu {
inline namespace VKML_CPU_ISA {
namespace {

[[gnu::always_inline]] inline double uniform53(uint32_t hi, uint32_t lo) {  // [0, 1), 53 bits
  return static_cast<double>((uint64_t{hi} << 21) ^ (lo >> 11)) * 0x1.0p-53;
}

double uniform_at(uint64_t seed, uint64_t ctr) {
  uint32_t w[4];
  philox(seed, ctr, w);
  return uniform53(w[0], w[1]);
}

// x as a contiguous float64 tensor (the sampling arithmetic is in double for every dtype).
Tensor as_f64(const Tensor& x) {
  if (x.dtype() == DType::Float64 && x.is_contiguous()) return x;
  Tensor c = Tensor::empty(x.shape(), DType::Float64);
  copy_into(c, x);
  return c;
}

// One element's unbounded sequence of uniforms: blocks of four words at counter `ctr`, block
// number in the counter's third word, two words per uniform.
class UniformStream {
 public:
  UniformStream(uint64_t seed, uint64_t ctr) : seed_(seed), ctr_(ctr) {}
  double next() {
    if (pos_ == 4) {
      philox(seed_, ctr_, w_, block_++);
      pos_ = 0;
    }
    const double u = uniform53(w_[pos_], w_[pos_ + 1]);
    pos_ += 2;
    return u;
  }
  // The next block's four words whole (what is left of the current one is skipped).
  void block(uint32_t w[4]) {
    philox(seed_, ctr_, w, block_++);
    pos_ = 4;
  }

 private:
  uint64_t seed_, ctr_;
  uint32_t w_[4] = {0, 0, 0, 0};
  uint32_t block_ = 0;
  int pos_ = 4;
};

// Knuth's product of uniforms: the count of factors before the product drops to exp(-rate)
// (about rate + 1 uniforms: used below rate 10).
int64_t poisson_small(double rate, UniformStream& s) {
  const double limit = std::exp(-rate);
  int64_t k = 0;
  double prod = s.next();
  while (prod > limit) {
    ++k;
    prod *= s.next();
  }
  return k;
}

// Hormann's transformed rejection with squeeze (PTRS, 1993), as numpy's: about 1.1 pairs of
// uniforms per sample for rate >= 10.
double poisson_ptrs(double rate, UniformStream& s) {  // a double: huge rates overflow int64
  const double slam = std::sqrt(rate), loglam = std::log(rate);
  const double b = 0.931 + 2.53 * slam, a = -0.059 + 0.02483 * b;
  const double invalpha = 1.1239 + 1.1328 / (b - 3.4), vr = 0.9277 - 3.6224 / (b - 2);
  for (;;) {
    const double u = s.next() - 0.5, v = s.next();
    const double us = 0.5 - std::abs(u);
    const double k = std::floor((2 * a / us + b) * u + rate + 0.43);
    if (us >= 0.07 && v <= vr) return k;
    if (k < 0 || (us < 0.013 && v > us)) continue;
    if (std::log(v) + std::log(invalpha) - std::log(a / (us * us) + b) <=
        -rate + k * loglam - std::lgamma(k + 1))
      return k;
  }
}

// Marsaglia and Tsang (2000) for alpha >= 1: d v with v = (1 + c z)^3, z standard normal, accepted
// by the squeeze or the log test (1.02 to 1.05 attempts a sample). Each attempt takes one Philox
// block: a 53-bit uniform for the normal's radius (the cosine half of Box and Muller's pair), a
// 32-bit one for its angle and one in (0, 1) for the test (its log finite).
double gamma_marsaglia_tsang(double alpha, UniformStream& s) {
  const double d = alpha - 1.0 / 3, c = 1 / std::sqrt(9 * d);
  for (;;) {
    uint32_t w[4];
    s.block(w);
    // 1 - u is exact and in (0, 1], and libm's log is several times faster than its log1p
    const double radius = std::sqrt(-2 * std::log(1 - uniform53(w[0], w[1])));
    const double z = radius * std::cos(2 * std::numbers::pi * (w[2] * 0x1p-32));
    const double t = 1 + c * z;
    if (t <= 0) continue;
    const double v = t * t * t, u = (w[3] + 0.5) * 0x1p-32, z2 = z * z;
    if (u < 1 - 0.0331 * z2 * z2) return d * v;
    if (std::log(u) < 0.5 * z2 + d * (1 - v + std::log(v))) return d * v;
  }
}

// Gamma(alpha) for alpha < 1 as Gamma(alpha + 1) * U^(1 / alpha), in logs (U^(1/alpha)
// underflows for small alpha; the result then is 0, which the kernel raises to the smallest
// normal).
double standard_gamma_sample(double alpha, UniformStream& s) {
  if (std::isinf(alpha)) return alpha;
  if (alpha >= 1) return gamma_marsaglia_tsang(alpha, s);
  if (alpha == 0) return 0;
  const double g = gamma_marsaglia_tsang(alpha + 1, s);
  return std::exp(std::log(g) + std::log(s.next()) / alpha);
}

// Row r of multinomial with replacement: each sample is the first category whose running sum
// exceeds u * total, so a zero-weight category (no rise in the sum) is never drawn.
void sample_with_replacement(const double* p, int64_t categories, int64_t k, uint64_t seed,
                             uint64_t ctr, int64_t* out) {
  std::vector<double> cum(static_cast<size_t>(categories));
  double total = 0;
  int64_t last_positive = 0;
  for (int64_t c = 0; c < categories; ++c) {
    total += p[c];
    cum[static_cast<size_t>(c)] = total;
    if (p[c] > 0) last_positive = c;
  }
  for (int64_t j = 0; j < k; ++j) {
    const double u = uniform_at(seed, ctr + static_cast<uint64_t>(j)) * total;
    const auto it = std::upper_bound(cum.begin(), cum.end(), u);
    // u * total can round up to total itself: the last category with weight then.
    out[j] = it == cum.end() ? last_positive : static_cast<int64_t>(it - cum.begin());
  }
}

// Row r without replacement: the k smallest keys E_c / p_c (E_c = -log(1 - u_c) ~ Exp(1), u_c
// category c's uniform), in increasing order, are distributed as k successive draws each
// renormalised over what is left; weight 0 gives key infinity (drawn only after every positive
// category, lowest index first, as torch). The keys are made kPhiloxLanes categories at a time,
// vectorised (philox_lanes, vmath's log1p): a draw and libm's log1p per category took 1.6 ms for
// a row of 50257 (torch.multinomial(probs, 1) over GPT-2's vocabulary: replacement is off by
// default, and every category's key is needed even for one sample).
void sample_without_replacement(const double* p, int64_t categories, int64_t k, uint64_t seed,
                                uint64_t ctr, int64_t* out) {
  std::vector<double> key(static_cast<size_t>(categories));
  uint32_t w[4][kPhiloxLanes];
  double e[kPhiloxLanes];
  for (int64_t c0 = 0; c0 < categories; c0 += kPhiloxLanes) {
    philox_lanes(seed, ctr + static_cast<uint64_t>(c0), w);
    for (int64_t j = 0; j < kPhiloxLanes; ++j)  // a fixed count: vectorised
      e[j] = -vmath::log1p(-uniform53(w[0][j], w[1][j]));
    const int64_t n = std::min(kPhiloxLanes, categories - c0);
    for (int64_t j = 0; j < n; ++j) {
      const double pc = p[c0 + j];
      key[static_cast<size_t>(c0 + j)] = pc > 0 ? e[j] / pc : INFINITY;
    }
  }
  std::vector<int64_t> order(static_cast<size_t>(categories));
  std::iota(order.begin(), order.end(), int64_t{0});
  std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int64_t x, int64_t y) {
    const double kx = key[static_cast<size_t>(x)], ky = key[static_cast<size_t>(y)];
    return kx < ky || (kx == ky && x < y);
  });
  std::copy(order.begin(), order.begin() + k, out);
}

// torch's checks: every weight finite and >= 0, every row's sum > 0.
void check_distribution(const double* p, int64_t rows, int64_t categories) {
  for (int64_t r = 0; r < rows; ++r) {
    double total = 0;
    for (int64_t c = 0; c < categories; ++c) {
      const double v = p[r * categories + c];
      VK_CHECK(std::isfinite(v) && v >= 0, RuntimeError,
               "multinomial: probability tensor contains either `inf`, `nan` or element < 0 "
               "(row ",
               r, ", category ", c, ": ", v, ")");
      total += v;
    }
    VK_CHECK(total > 0, RuntimeError,
             "multinomial: invalid multinomial distribution (sum of probabilities <= 0) in row ",
             r);
  }
}

}  // namespace

VK_KERNEL(randperm) {
  (void)in;
  const int64_t n = m.shape[0];
  std::vector<int64_t> perm(static_cast<size_t>(n));
  std::iota(perm.begin(), perm.end(), int64_t{0});
  // Fisher-Yates from the top: position i swaps with a uniform j in [0, i], drawn at counter
  // offset + i (the modulo's bias is below n / 2^64). The draws come kPhiloxLanes counters at a
  // time (philox_lanes), then the block's swaps run from its top down: a scalar Philox per
  // position made randperm(60000) 0.84 ms, 3.4x torch's.
  uint32_t w[4][kPhiloxLanes];
  for (int64_t top = n - 1; top > 0;) {
    const int64_t base = std::max<int64_t>(1, top - kPhiloxLanes + 1);  // positions base..top
    philox_lanes(a.seed, a.offset + static_cast<uint64_t>(base), w);
    for (int64_t i = top; i >= base; --i) {
      const auto j = static_cast<size_t>(i - base);
      const uint64_t r = (uint64_t{w[0][j]} << 32) | w[1][j];
      std::swap(perm[static_cast<size_t>(i)], perm[r % static_cast<uint64_t>(i + 1)]);
    }
    top = base - 1;
  }
  Tensor out = Tensor::empty(m.shape, m.dtype);
  VK_DISPATCH_NUMERIC(m.dtype, "randperm", {
    T* o = out.data<T>();
    for (int64_t i = 0; i < n; ++i) o[i] = static_cast<T>(perm[static_cast<size_t>(i)]);
  });
  return out;
}

VK_KERNEL(multinomial) {
  const Tensor p = as_f64(in[0]);
  const int64_t categories = p.shape().back(), k = a.random.num_samples;
  const int64_t rows = p.ndim() == 2 ? p.shape()[0] : 1;
  const double* pp = p.data<double>();
  check_distribution(pp, rows, categories);
  Tensor out = Tensor::empty(m.shape, DType::Int64);
  int64_t* o = out.data<int64_t>();
  const uint64_t stride = static_cast<uint64_t>(a.random.replacement ? k : categories);
  parallel_for(rows, 1, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const uint64_t ctr = a.offset + static_cast<uint64_t>(r) * stride;
      if (a.random.replacement)
        sample_with_replacement(pp + r * categories, categories, k, a.seed, ctr, o + r * k);
      else
        sample_without_replacement(pp + r * categories, categories, k, a.seed, ctr, o + r * k);
    }
  });
  return out;
}

// One draw per element of in[0] (read in double), element i from its own stream at counter
// offset + i: draw(parameter, stream). Every parameter is checked first (valid(p), else a
// RuntimeError: `op: complaint, got p at element i`); at_least_min_normal raises a result that
// underflowed to the dtype's smallest normal number.
template <class Valid, class Draw>
Tensor sample_each(const std::vector<Tensor>& in, const Attrs& a, const Meta& m, const char* op,
                   Valid valid, const char* complaint, Draw draw, bool at_least_min_normal) {
  const Tensor params = as_f64(in[0]);
  const double* p = params.data<double>();
  const int64_t n = params.numel();
  for (int64_t i = 0; i < n; ++i)
    VK_CHECK(valid(p[i]), RuntimeError, op, ": ", complaint, ", got ", p[i], " at element ", i);
  Tensor out = Tensor::empty(m.shape, m.dtype);
  VK_DISPATCH_FLOAT(m.dtype, op, {
    T* o = out.data<T>();
    const T floor =
        at_least_min_normal ? std::numeric_limits<T>::min() : std::numeric_limits<T>::lowest();
    parallel_for(n, 1024, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        UniformStream s(a.seed, a.offset + static_cast<uint64_t>(i));
        o[i] = std::max(static_cast<T>(draw(p[i], s)), floor);
      }
    });
  });
  return out;
}

VK_KERNEL(poisson) {
  // torch raises for a negative or NaN rate; infinity too here
  return sample_each(
      in, a, m, "poisson", [](double rate) { return rate >= 0 && std::isfinite(rate); },
      "invalid Poisson rate, expected rate to be non-negative and finite",
      [](double rate, UniformStream& s) {
        return rate == 0   ? 0.0
               : rate < 10 ? static_cast<double>(poisson_small(rate, s))
                           : poisson_ptrs(rate, s);
      },
      false);
}

VK_KERNEL(standard_gamma) {
  // torch returns its smallest value for a negative or NaN concentration; an error here
  return sample_each(
      in, a, m, "standard_gamma", [](double alpha) { return alpha >= 0; },
      "invalid concentration, expected it to be non-negative", standard_gamma_sample, true);
}

}  // namespace VKML_CPU_ISA
}  // namespace vk::cpu
