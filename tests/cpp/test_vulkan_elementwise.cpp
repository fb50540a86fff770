// The element-wise family on the Vulkan device against the CPU's kernels, in every dtype they
// take: special values (NaN, +-inf, -0.0), integer extremes and wrap-around, integer errors,
// views (transposed, broadcast, sliced, bool bytes at odd offsets), and walks longer than one
// workgroup or than the shader's six dims.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "vkml/ops/math.h"  // hostwait: fmod
#include "vulkan_fixture.h"

namespace vk {
namespace {

using test::host;
using test::kVulkan;
using Vulkan = test::VulkanTest;
using Fn = std::function<Tensor(const std::vector<Tensor>&)>;

constexpr double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::nan("");
constexpr DType kFloats[] = {DType::Float32, DType::Float64};
constexpr DType kNumeric[] = {DType::Int32, DType::Int64, DType::Float32, DType::Float64};
constexpr DType kAll[] = {DType::Bool, DType::Int32, DType::Int64, DType::Float32, DType::Float64};

template <class T>
Tensor make(const std::vector<T>& v, const Shape& shape) {
  if constexpr (std::is_same_v<T, bool>) {
    std::vector<uint8_t> bytes(v.begin(), v.end());
    return from_data(bytes.data(), shape, DType::Bool);
  } else {
    return from_data(v.data(), shape, dtype_of<T>::value);
  }
}

// Values that exercise each dtype: extremes, signs, zeros, halves (rounding), and for floats the
// special values. No subnormals: a device may flush them (Vulkan allows it).
Tensor edge_values(DType t) {
  switch (t) {
    case DType::Bool:
      return make<bool>({false, true, true, false}, {4});
    case DType::Int32: {
      constexpr int32_t lo = std::numeric_limits<int32_t>::min(),
                        hi = std::numeric_limits<int32_t>::max();
      return make<int32_t>({lo, lo + 1, -1000, -7, -3, -2, -1, 0, 1, 2, 3, 7, 1000, hi - 1, hi},
                           {15});
    }
    case DType::Int64: {
      constexpr int64_t lo = std::numeric_limits<int64_t>::min(),
                        hi = std::numeric_limits<int64_t>::max();
      return make<int64_t>(
          {lo, lo + 1, -(int64_t{1} << 40), -7, -3, -2, -1, 0, 1, 2, 3, 7, int64_t{1} << 40, hi},
          {14});
    }
    case DType::Float64:  // and magnitudes float32 has not (fmod's longest division)
      return from_vector({-kInf, -1e300,  -1e30, -100.5, -7,     -3.5,  -2.5, -1,   -0.75, -0.5,
                          -1e-3, -1e-300, -0.0,  0.0,    1e-300, 1e-3,  0.5,  0.75, 1,     1.5,
                          2.5,   3,       7,     100.5,  1e30,   1e300, kInf, kNaN},
                         {28}, DType::Float64);
    default:
      return cast(
          from_vector({-kInf, -1e30, -100.5, -7, -3.5, -2.5, -1, -0.75, -0.5,  -1e-3, -0.0, 0.0,
                       1e-3,  0.5,   0.75,   1,  1.5,  2.5,  3,  7,     100.5, 1e30,  kInf, kNaN},
                      {24}, DType::Float64),
          t);
  }
}

double ulp_of(DType t) {
  return t == DType::Float32 ? std::numeric_limits<float>::epsilon()
                             : std::numeric_limits<double>::epsilon();
}

// Results below the smallest normal number carry fewer bits: an absolute slack there.
double subnormal_slack(DType t) {
  return 1e-5 * (t == DType::Float32 ? std::numeric_limits<float>::min()
                                     : std::numeric_limits<double>::min());
}

// Device result `got` against the CPU's `want`: integers and bools byte for byte; floats with
// NaN for NaN, infinities and zeros (with their sign) exactly, the rest within `ulps` units of
// the last place (0: bit for bit).
void expect_same(const Tensor& got, const Tensor& want, double ulps, const std::string& what,
                 double floor = 0.0) {
  ASSERT_EQ(got.device(), kVulkan) << what;
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  ASSERT_EQ(got.shape(), want.shape()) << what;
  const Tensor g = contiguous(to_cpu(got)), w = contiguous(want);
  if (!is_floating(want.dtype())) {
    EXPECT_EQ(std::memcmp(g.raw_data(), w.raw_data(), w.numel() * dtype_size(w.dtype())), 0)
        << what << ": " << testing::PrintToString(to_vector(g)) << " on the device, "
        << testing::PrintToString(to_vector(w)) << " on the cpu";
    return;
  }
  const std::vector<double> gv = to_vector(g), wv = to_vector(w);
  for (size_t i = 0; i < wv.size(); ++i) {
    if (std::isnan(wv[i]) && std::isnan(gv[i])) continue;
    const bool exact = ulps == 0 || std::isinf(wv[i]) || wv[i] == 0;
    const bool ok = exact ? gv[i] == wv[i] && std::signbit(gv[i]) == std::signbit(wv[i])
                          : std::abs(gv[i] - wv[i]) <=
                                ulps * ulp_of(w.dtype()) * std::max(std::abs(wv[i]), floor) +
                                    subnormal_slack(w.dtype());
    EXPECT_TRUE(ok) << what << " element " << i << ": " << gv[i] << " on the device, " << wv[i]
                    << " on the cpu";
  }
}

// f over `in` on the CPU and over copies of `in` on the device.
void expect_matches(const Fn& f, const std::vector<Tensor>& in, double ulps,
                    const std::string& what, double floor = 0.0) {
  std::vector<Tensor> on;
  for (const Tensor& t : in) on.push_back(to_device(t, kVulkan));
  expect_same(f(on), f(in), ulps, what, floor);
}

Tensor mod(const Tensor& x, int64_t k) { return remainder(x, full({}, k, x.dtype())); }

std::string name_of(const char* op, DType t) {
  return std::string(op) + " " + std::string(dtype_name(t));
}

// Every pair of x's values: x as a column against x as a row (both broadcast views).
std::vector<Tensor> all_pairs(const Tensor& x) {
  const int64_t n = x.numel();
  return {reshape(x, {n, 1}), reshape(x, {1, n})};
}

TEST_F(Vulkan, NumericUnaryOpsMatchTheCpuBitForBit) {
  const std::pair<const char*, Tensor (*)(const Tensor&)> ops[] = {
      {"neg", neg},     {"abs", abs},   {"sign", sign},  {"relu", relu},
      {"floor", floor}, {"ceil", ceil}, {"round", round}};
  for (DType t : kNumeric)
    for (const auto& [name, op] : ops)
      expect_matches([op](const auto& v) { return op(v[0]); }, {edge_values(t)}, 0,
                     name_of(name, t));
}

// Each float routine over the edge values and a dense sweep through all its branches; the
// device runs vmath.h's algorithms (shaders/vmath.glsl), log1p and expm1 near the CPU's libm.
void expect_float_math(DType t) {
  using Unary = Tensor (*)(const Tensor&);
  const std::vector<std::pair<const char*, Unary>> ops{{"exp", exp},
                                                       {"log", log},
                                                       {"sqrt", sqrt},
                                                       {"rsqrt", rsqrt},
                                                       {"tanh", tanh},
                                                       {"sigmoid", sigmoid},
                                                       {"erf", erf},
                                                       {"erfc", erfc},
                                                       {"log1p", log1p},
                                                       {"expm1", expm1},
                                                       {"reciprocal", reciprocal}};
  const Tensor sweep = cast(arange(-1000, 1000) * 0.0213, t);
  for (const auto& [name, op] : ops) {
    const Fn f = [op](const auto& v) { return op(v[0]); };
    // vmath's algorithms, the same operations on both sides (an fma made of products and sums
    // may round once more); sqrt and division correctly rounded; log1p and expm1 the CPU's libm
    const std::string n = name;
    // (4 ulp: the CPU's own result moves by up to ~2 ulp between builds with and without FMA
    // contraction; make test-asan builds without -march=native)
    const double ulps = n == "sqrt" || n == "rsqrt" || n == "reciprocal" ? 0 : 4;
    expect_matches(f, {edge_values(t)}, ulps, name_of(name, t));
    expect_matches(f, {sweep}, ulps, name_of(name, t) + " sweep");
  }
  // gelu's tails are ill-conditioned: exp(-x^2 / 2) carries the rounding of x^2, about x^2 ulp,
  // and the CPU's own result moves that much between builds with and without FMA contraction
  // (make test-asan builds without -march=native): the bound covers |x| up to ~10 (float32) and
  // ~40 (float64), the sweep's range.
  const double gelu_ulps = t == DType::Float32 ? 128 : 2048;
  for (bool approx : {false, true}) {
    const Fn f = [approx](const auto& v) { return gelu(v[0], approx); };
    expect_matches(f, {edge_values(t)}, gelu_ulps, name_of("gelu", t));
    expect_matches(f, {sweep}, gelu_ulps, name_of("gelu", t) + " sweep");
  }
  // Its terms (erf and x * exp) cancel near x = -0.75: a few ulp of the terms, O(1) there, not of
  // the small result (the floor of 1 in the bound).
  const Fn relu_back = [](const auto& v) { return relu_backward(v[0], v[1]); };
  expect_matches(relu_back, all_pairs(edge_values(t)), 0, name_of("relu_backward", t) + " pairs");
  const Fn tanh_back = [](const auto& v) { return tanh_backward(v[0], v[1]); };
  expect_matches(tanh_back, {sweep * 0.5, tanh(sweep)}, 4, name_of("tanh_backward", t), 1.0);
  const Fn sigmoid_back = [](const auto& v) { return sigmoid_backward(v[0], v[1]); };
  expect_matches(sigmoid_back, {sweep * 0.5, sigmoid(sweep)}, 4, name_of("sigmoid_backward", t),
                 1.0);
  const Fn backward = [](const auto& v) { return gelu_backward(v[0], v[1]); };
  expect_matches(backward, {sweep * 0.5, sweep}, 8, name_of("gelu_backward", t), 1.0);
  expect_matches(backward, all_pairs(edge_values(t)), 8, name_of("gelu_backward", t) + " pairs",
                 1.0);
}

// The activations with parameters (ops/activation.h) on edge values, every (g, x) pair for the
// gradients, and a sweep: piecewise-linear ones bit for bit; the exp-based ones run vmath's
// expm1, exp, log1p and sigmoid on both sides (a few ulp: the CPU's FMA contraction).
TEST_F(Vulkan, ActivationsMatchTheCpu) {
  for (DType t : kFloats) {
    const Tensor edges = edge_values(t);
    const Tensor sweep = cast(arange(-1000, 1000) * 0.0213, t);
    const std::vector<std::pair<std::string, Fn>> exact{
        {"leaky_relu", [](const auto& v) { return leaky_relu(v[0], 0.2); }},
        {"hardtanh", [](const auto& v) { return hardtanh(v[0], -2.5, 0.75); }},
        {"hardsigmoid", [](const auto& v) { return hardsigmoid(v[0]); }},
        {"hardswish", [](const auto& v) { return hardswish(v[0]); }},
        {"smooth_l1", [](const auto& v) { return smooth_l1(v[0], 0.75); }},
        {"huber", [](const auto& v) { return huber(v[0], 1.25); }}};
    for (const auto& [name, f] : exact) {
      expect_matches(f, {edges}, 0, name_of(name.c_str(), t));
      expect_matches(f, {sweep}, 0, name_of(name.c_str(), t) + " sweep");
    }
    const std::vector<std::pair<std::string, Fn>> exact_pairs{
        {"leaky_relu_backward", [](const auto& v) { return leaky_relu_backward(v[0], v[1], 0.2); }},
        {"hardtanh_backward",
         [](const auto& v) { return hardtanh_backward(v[0], v[1], -2.5, 0.75); }},
        {"hardsigmoid_backward", [](const auto& v) { return hardsigmoid_backward(v[0], v[1]); }},
        {"hardswish_backward", [](const auto& v) { return hardswish_backward(v[0], v[1]); }},
        {"smooth_l1_backward", [](const auto& v) { return smooth_l1_backward(v[0], v[1], 0.75); }},
        {"huber_backward", [](const auto& v) { return huber_backward(v[0], v[1], 1.25); }}};
    for (const auto& [name, f] : exact_pairs)
      expect_matches(f, all_pairs(edges), 0, name_of(name.c_str(), t) + " pairs");
    const std::vector<std::pair<std::string, Fn>> smooth{
        {"elu", [](const auto& v) { return elu(v[0], 0.7, 1.3); }},
        {"softplus", [](const auto& v) { return softplus(v[0], 2.0, 15.0); }},
        {"softplus no threshold", [](const auto& v) { return softplus(v[0], 1.0, kInf); }},
        {"silu", [](const auto& v) { return silu(v[0]); }}};
    for (const auto& [name, f] : smooth) {
      expect_matches(f, {edges}, 4, name_of(name.c_str(), t));
      expect_matches(f, {sweep}, 4, name_of(name.c_str(), t) + " sweep");
    }
    const std::vector<std::pair<std::string, Fn>> smooth_pairs{
        {"elu_backward", [](const auto& v) { return elu_backward(v[0], v[1], 0.7, 1.3); }},
        {"softplus_backward",
         [](const auto& v) { return softplus_backward(v[0], v[1], 2.0, 15.0); }}};
    for (const auto& [name, f] : smooth_pairs) {
      expect_matches(f, all_pairs(edges), 4, name_of(name.c_str(), t) + " pairs");
      expect_matches(f, {sweep * 0.5, sweep}, 4, name_of(name.c_str(), t) + " sweep");
    }
    // 1 + x (1 - s) cancels near x = -1.28, where silu's slope crosses 0: a few ulp of the terms
    // (the floor of 1 in the bound), as gelu_backward's
    const Fn silu_back = [](const auto& v) { return silu_backward(v[0], v[1]); };
    expect_matches(silu_back, all_pairs(edges), 4, name_of("silu_backward", t) + " pairs", 1.0);
    expect_matches(silu_back, {sweep * 0.5, sweep}, 4, name_of("silu_backward", t) + " sweep", 1.0);
  }
}

TEST_F(Vulkan, Float32MathMatchesTheCpu) { expect_float_math(DType::Float32); }
TEST_F(Vulkan, Float64MathMatchesTheCpu) { expect_float_math(DType::Float64); }

// sin and cos reduce exactly at every magnitude (the CPU's libm does): near multiples of pi/2,
// and far out, where a builtin's reduction loses every bit.
TEST_F(Vulkan, SinAndCosMatchTheCpu) {
  for (DType t : kFloats) {
    const Tensor sweep = cast(arange(-900, 900), t) * 0.0173;
    const Tensor far = cast(arange(-500, 500), t) * 1.37e5 + 0.5;
    const Tensor edges = cast(from_vector({0.5,         0.7853982,
                                           1.5707964,   3.1415927,
                                           4.712389,    6.2831855,
                                           12582912.0,  1e4,
                                           1e6,         1e20,
                                           -1e30,       3.4028235e38,
                                           1e-30,       -0.0,
                                           0.0,         kInf,
                                           -kInf,       kNaN,
                                           355.0,       103993.0,
                                           -80143857.0, 1.5707963267948966,
                                           1e300,       -1.7976931348623157e308,
                                           5e-324},
                                          {25}, DType::Float64),
                              t);
    const double ulps = t == DType::Float32 ? 1 : 2;
    for (const Tensor& x : {sweep, far, edges}) {
      expect_matches([](const auto& v) { return sin(v[0]); }, {x}, ulps, "sin of " + x.describe());
      expect_matches([](const auto& v) { return cos(v[0]); }, {x}, ulps, "cos of " + x.describe());
    }
  }
  // The double nearest a multiple of pi/2 (6381956970095103 * 2^797, 4.687e-19 from one): its
  // cosine to the last bit, -4.6871659242546276e-19 (glibc's cos gives ...462e-19, 8 ulp off).
  const Tensor hard = from_vector({6381956970095103.0 * 0x1p797}, {1}, DType::Float64);
  EXPECT_EQ(host(cos(to_device(hard, kVulkan)))[0], -4.6871659242546276e-19);
}

// Every pair of edge values, bit for bit. (Split so that each test stays short when the
// driver's shader cache is cold: lavapipe compiles each variant on first use, ~60 ms.)
TEST_F(Vulkan, ArithmeticMatchesTheCpuInEveryDtype) {
  const std::pair<const char*, Fn> everywhere[] = {
      {"add", [](const auto& v) { return v[0] + v[1]; }},
      {"mul", [](const auto& v) { return v[0] * v[1]; }},
      {"maximum", [](const auto& v) { return maximum(v[0], v[1]); }},
      {"minimum", [](const auto& v) { return minimum(v[0], v[1]); }}};
  for (DType t : kAll)
    for (const auto& [name, f] : everywhere)
      expect_matches(f, all_pairs(edge_values(t)), 0, name_of(name, t));
  for (DType t : kNumeric)
    expect_matches([](const auto& v) { return v[0] - v[1]; }, all_pairs(edge_values(t)), 0,
                   name_of("sub", t));
  for (DType t : kFloats)
    expect_matches([](const auto& v) { return v[0] / v[1]; }, all_pairs(edge_values(t)), 0,
                   name_of("div", t));
}

TEST_F(Vulkan, ComparisonsAndBitwiseOpsMatchTheCpu) {
  const std::pair<const char*, Fn> compare[] = {
      {"eq", [](const auto& v) { return eq(v[0], v[1]); }},
      {"ne", [](const auto& v) { return ne(v[0], v[1]); }},
      {"lt", [](const auto& v) { return lt(v[0], v[1]); }},
      {"le", [](const auto& v) { return le(v[0], v[1]); }},
      {"gt", [](const auto& v) { return gt(v[0], v[1]); }},
      {"ge", [](const auto& v) { return ge(v[0], v[1]); }}};
  for (DType t : kAll)
    for (const auto& [name, f] : compare)
      expect_matches(f, all_pairs(edge_values(t)), 0, name_of(name, t));
  for (DType t : {DType::Bool, DType::Int32, DType::Int64}) {
    expect_matches([](const auto& v) { return bitwise_and(v[0], v[1]); }, all_pairs(edge_values(t)),
                   0, name_of("bitwise_and", t));
    expect_matches([](const auto& v) { return bitwise_or(v[0], v[1]); }, all_pairs(edge_values(t)),
                   0, name_of("bitwise_or", t));
    expect_matches([](const auto& v) { return bitwise_xor(v[0], v[1]); }, all_pairs(edge_values(t)),
                   0, name_of("bitwise_xor", t));
  }
}

TEST_F(Vulkan, FloorDivideAndRemainderMatchTheCpu) {
  for (DType t : kNumeric) {
    // Integer division by zero is an error (IntegerErrorsAreTheCpusErrors): no zero divisor.
    std::vector<Tensor> xy = all_pairs(edge_values(t));
    if (!is_floating(t)) xy[1] = where(eq(xy[1], full({}, 0, t)), full({}, 5, t), xy[1]);
    expect_matches([](const auto& v) { return floor_divide(v[0], v[1]); }, xy, 0,
                   name_of("floor_divide", t));
    expect_matches([](const auto& v) { return remainder(v[0], v[1]); }, xy, 0,
                   name_of("remainder", t));
  }
}

// Integer division and remainder by zero are errors, as on the CPU, wherever the zero is; on the
// device they are raised at the next host read (hostwait: the error word, no wait at the call).
TEST_F(Vulkan, IntegerErrorsAreTheCpusErrors) {
  for (DType t : {DType::Int32, DType::Int64}) {
    const Tensor x = to_device(cast(arange(0, 600), t), kVulkan);
    const Tensor y = to_device(cast(arange(0, 600) - 599, t), kVulkan);  // 0 last
    VK_EXPECT_ERROR(to_cpu(floor_divide(x, y)), RuntimeError, "floor_divide", "ZeroDivisionError");
    VK_EXPECT_ERROR(to_cpu(remainder(x, y)), RuntimeError, "remainder", "division by zero");
    VK_EXPECT_ERROR(to_cpu(fmod(x, y)), RuntimeError, "fmod", "ZeroDivisionError");
    expect_same(floor_divide(x, y + 600), floor_divide(to_cpu(x), to_cpu(y) + 600), 0,
                name_of("floor_divide", t));  // and no error left over from the last call
  }
}

TEST_F(Vulkan, PowMatchesTheCpu) {
  const Fn p = [](const auto& v) { return pow(v[0], v[1]); };
  for (DType t : kFloats) {
    const double ulps = t == DType::Float32 ? 1 : 2;  // float64: vmath's exp against libm's pow
    expect_matches(p, all_pairs(edge_values(t)), ulps, name_of("pow", t));
    const Tensor base = cast(arange(1, 400), t) * 0.037;
    const Tensor e = cast(arange(-200, 199), t) * 0.173;
    expect_matches(p, {base, e}, ulps, name_of("pow sweep", t));
    expect_matches(p, {base * 1e5, e * 0.31}, ulps, name_of("pow large", t));
    // A broadcast scalar exponent: the CPU's products and roots (x * x * x rounds twice).
    for (double k : {2.0, 3.0, 1.0, 0.5, -1.0, 2.5, 1e-3})
      expect_matches([k](const auto& v) { return pow(v[0], k); }, {edge_values(t)}, ulps,
                     name_of("pow", t) + " ** " + std::to_string(k));
  }
  for (DType t : {DType::Int32, DType::Int64}) {
    const Tensor exps = cast(from_vector({0, 1, 2, 3, 7, 31, 62, 63}, {8}, DType::Float64), t);
    expect_matches(p, {reshape(edge_values(t), {-1, 1}), reshape(exps, {1, -1})}, 0,
                   name_of("pow", t));
  }
}

TEST_F(Vulkan, WhereClampAndCastMatchTheCpu) {
  for (DType t : kAll) {
    const Tensor x = edge_values(t);
    const int64_t n = x.numel();
    const Tensor cond = reshape(cast(mod(arange(0, 3 * n), 3), DType::Bool), {3, n});
    const Tensor other = flip(x, {0});
    expect_matches([](const auto& v) { return where(v[0], v[1], v[2]); },
                   {cond, reshape(x, {1, n}), other}, 0, name_of("where", t));
    for (DType to : kAll)
      expect_matches([to](const auto& v) { return cast(v[0], to); }, {x}, 0,
                     name_of("cast", t) + " to " + std::string(dtype_name(to)));
  }
  const double nan = kNaN;
  for (DType t : kNumeric) {
    const Tensor x = edge_values(t);
    const std::pair<std::optional<Scalar>, std::optional<Scalar>> bounds[] = {
        {Scalar(-3), Scalar(7)},
        {Scalar(5), Scalar(-5)},
        {std::nullopt, Scalar(2)},
        {Scalar(-1), std::nullopt}};
    for (const auto& [lo, hi] : bounds)
      expect_matches([&](const auto& v) { return clamp(v[0], lo, hi); }, {x}, 0,
                     name_of("clamp", t));
    if (is_floating(t))
      expect_matches([&](const auto& v) { return clamp(v[0], Scalar(nan), Scalar(1.5)); }, {x}, 0,
                     name_of("clamp NaN bound", t));
  }
}

// Conversions that round (float64 to float32, int64 to either float) or that an integer type
// cannot hold, at the edges of each range.
TEST_F(Vulkan, CastsRoundAndSaturateAsTheCpu) {
  const Tensor doubles = cast(arange(-500, 500), DType::Float64) * 0.0213 + 1e-9;
  const Tensor edges = from_vector({2147483647.0, 2147483648.0, -2147483648.0, -2147483649.0,
                                    2147483520.0, 9.2233720368547748e18, -9.2233720368547758e18,
                                    9.2233720368547758e18, 16777217.0, 3.4028235677973366e38},
                                   {10}, DType::Float64);
  const Tensor big = make<int64_t>({(int64_t{1} << 62) + 1, (int64_t{1} << 40) + 1, 16777217,
                                    -16777217, std::numeric_limits<int64_t>::max()},
                                   {5});
  for (const Tensor& x : {doubles, edges, cast(edges, DType::Float32), big})
    for (DType to : kAll)
      expect_matches([to](const auto& v) { return cast(v[0], to); }, {x}, 0,
                     "cast " + x.describe() + " to " + std::string(dtype_name(to)));
}

// Views of every kind in every dtype: the walk reads each tensor through its own strides.
TEST_F(Vulkan, ViewsInEveryDtype) {
  for (DType t : kAll) {
    const Tensor x = cast(reshape(mod(arange(0, 2 * 3 * 5 * 7), 11) - 5, {2, 3, 5, 7}), t);
    const Tensor tr = permute(x, {3, 1, 0, 2});
    const Tensor sl = slice(slice(x, 3, 1, 7, 2), 2, 1, 5);  // bools at odd byte offsets
    const Tensor row = slice(x, 0, 1, 2);                    // broadcast along dim 0
    const Fn m = [](const auto& v) { return maximum(v[0], v[1]); };
    expect_matches(
        [](const auto& v) {
          return maximum(v[0], permute(v[1], {3, 1, 0, 2}));
        },
        {tr, x}, 0, name_of("maximum transposed", t));
    expect_matches(m, {sl, slice(slice(x, 3, 0, 3), 2, 0, 4)}, 0, name_of("maximum sliced", t));
    expect_matches(m, {x, row}, 0, name_of("maximum broadcast", t));
    expect_matches([](const auto& v) { return eq(v[0], v[1]); }, {sl, permute(sl, {0, 1, 2, 3})}, 0,
                   name_of("eq sliced", t));
    expect_matches([](const auto& v) { return contiguous(v[0]); }, {tr}, 0,
                   name_of("contiguous", t));
  }
}

// Writes into a strided view leave the elements between untouched, bytes included.
TEST_F(Vulkan, CopyIntoViewsConvertsAndKeepsTheRest) {
  for (DType to : kAll) {
    for (DType from : kAll) {
      const Tensor base = cast(reshape(mod(arange(0, 24), 3), {4, 6}), to);
      const Tensor src = cast(reshape(arange(0, 12) - 6, {4, 3}), from);
      const Tensor on = to_device(base, kVulkan);
      in_place::copy(slice(on, 1, 1, 6, 2), to_device(src, kVulkan));
      in_place::copy(slice(base, 1, 1, 6, 2), src);
      expect_same(on, base, 0, name_of("copy into", to) + " from " + std::string(dtype_name(from)));
    }
  }
  for (DType t : kNumeric) {
    const Tensor a = cast(reshape(arange(0, 12), {3, 4}), t);
    const Tensor on = to_device(a, kVulkan);
    const Tensor b = cast(reshape(arange(0, 12) * 2 - 5, {4, 3}), t);
    in_place::add(on, on, transpose(to_device(b, kVulkan), 0, 1));  // into itself, transposed
    in_place::add(a, a, transpose(b, 0, 1));
    expect_same(on, a, 0, name_of("add into", t));
  }
}

// More elements than one workgroup, more dims than the shader walks (split into dispatches),
// and empty tensors.
TEST_F(Vulkan, LongWalksManyDimsAndEmptyTensors) {
  for (DType t : {DType::Bool, DType::Int64, DType::Float64}) {
    const Tensor x = cast(mod(arange(0, 1000), 7) - 3, t);
    expect_matches(
        [](const auto& v) {
          return maximum(v[0], reshape(transpose(reshape(v[0], {40, 25}), 0, 1), {1000}));
        },
        {x}, 0, name_of("1000 elements", t));
    // 8 dims of 2, every other one transposed: no two neighbours merge.
    const Tensor y = reshape(cast(mod(arange(0, 256), 5) - 2, t), {2, 2, 2, 2, 2, 2, 2, 2});
    expect_matches(
        [](const auto& v) {
          return contiguous(permute(v[0], {1, 0, 3, 2, 5, 4, 7, 6}));
        },
        {y}, 0, name_of("8 dims", t));
    expect_matches([](const auto& v) { return bitwise_or(ne(v[0], v[0]), eq(v[0], v[0])); },
                   {cast(zeros({0, 3}), t)}, 0, name_of("empty", t));
  }
}

}  // namespace
}  // namespace vk
