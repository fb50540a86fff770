// The narrow dtypes on the Vulkan device (#19 item 7): float16, bfloat16, uint8, int8 and int16
// are held in 16- and 8-bit storage and computed in float32 / int32 as on the CPU. The CPU's
// conversions (core/half.h, convert_element) are the contract, bit for bit: every float16 and
// bfloat16 pattern, float32 patterns at every rounding boundary, and every pair of the ten dtypes
// over values that overflow, wrap, round to even and are NaN.
#include <bit>
#include <cstdint>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "vulkan_fixture.h"

namespace vk {
namespace {

using test::kVulkan;
using Vulkan = test::VulkanTest;

constexpr DType kEvery[] = {DType::Bool,    DType::UInt8,  DType::Int8,    DType::Int16,
                            DType::Int32,   DType::Int64,  DType::Float16, DType::BFloat16,
                            DType::Float32, DType::Float64};

// t's bytes, read on the host (a contiguous copy).
std::vector<uint8_t> bytes_of(const Tensor& t) {
  const Tensor c = contiguous(to_cpu(t));
  std::vector<uint8_t> out(c.numel() * dtype_size(c.dtype()));
  if (!out.empty()) std::memcpy(out.data(), c.raw_data(), out.size());
  return out;
}

// The index and bits of the first element where a and b differ, for the failure message.
std::string first_difference(const Tensor& a, const Tensor& b) {
  const std::vector<uint8_t> x = bytes_of(a), y = bytes_of(b);
  const size_t es = dtype_size(a.dtype());
  for (size_t i = 0; i < x.size(); i += es)
    if (std::memcmp(&x[i], &y[i], es) != 0) {
      uint64_t bx = 0, by = 0;
      std::memcpy(&bx, &x[i], es);
      std::memcpy(&by, &y[i], es);
      std::ostringstream os;
      os << "element " << i / es << ": cpu bits 0x" << std::hex << bx << ", vulkan 0x" << by;
      return os.str();
    }
  return "none";
}

void expect_same_bits(const Tensor& cpu, const Tensor& vulkan, const std::string& what) {
  ASSERT_EQ(cpu.dtype(), vulkan.dtype()) << what;
  ASSERT_EQ(cpu.shape(), vulkan.shape()) << what;
  EXPECT_TRUE(bytes_of(cpu) == bytes_of(vulkan))
      << what << ": first difference at " << first_difference(cpu, vulkan);
}

Tensor from_bits16(const std::vector<uint16_t>& bits, DType dtype) {
  return from_data(bits.data(), {static_cast<int64_t>(bits.size())}, dtype);
}

// float32 patterns where rounding to 16 bits decides: every exponent with mantissas at, just
// below and just above each half-way point of both formats, the overflow and subnormal
// thresholds, signed zeros, infinities, NaNs with payloads, and random patterns.
Tensor float32_boundaries() {
  std::vector<uint32_t> bits;
  for (uint32_t sign : {0u, 0x80000000u})
    for (uint32_t e = 0; e < 256; ++e)
      for (uint32_t low : {0x0u, 0x1u, 0xfffu, 0x1000u, 0x1001u, 0x2000u, 0x3000u, 0x7fffu, 0x8000u,
                           0x8001u, 0x18000u, 0x7fffffu})
        bits.push_back(sign | (e << 23) | low);
  for (uint32_t b : {0x477fefffu, 0x477ff000u, 0x477fffffu, 0x38800000u, 0x387fffffu, 0x33000000u,
                     0x33000001u, 0x32ffffffu, 0x7f7fffffu, 0x7fc00001u, 0xff812345u})
    bits.push_back(b);
  std::mt19937 rng(19);
  for (int i = 0; i < 4096; ++i) bits.push_back(static_cast<uint32_t>(rng()));
  return from_data(bits.data(), {static_cast<int64_t>(bits.size())}, DType::Float32);
}

TEST_F(Vulkan, EveryHalfPatternWidensToFloat32AsTheCpu) {
  std::vector<uint16_t> every(1 << 16);
  for (size_t i = 0; i < every.size(); ++i) every[i] = static_cast<uint16_t>(i);
  for (DType t : {DType::Float16, DType::BFloat16}) {
    const Tensor x = from_bits16(every, t);
    expect_same_bits(cast(x, DType::Float32), cast(to_device(x, kVulkan), DType::Float32),
                     std::string(dtype_name(t)) + " -> float32");
  }
}

TEST_F(Vulkan, Float32RoundsToHalfAsTheCpuAtEveryBoundary) {
  const Tensor x = float32_boundaries();
  const Tensor xv = to_device(x, kVulkan);
  for (DType t : {DType::Float16, DType::BFloat16})
    expect_same_bits(cast(x, t), cast(xv, t),
                     std::string("float32 -> ") + std::string(dtype_name(t)));
}

// Values that overflow, wrap, round and are special in some dtype of the ten.
Tensor edge_values() {
  const double inf = std::numeric_limits<double>::infinity();
  return from_vector(
      {0.0,          -0.0,     1.0,       -1.0,      0.5,     1.5,     2.5,          -2.5,
       127.0,        128.0,    200.0,     255.0,     256.0,   300.5,   -129.0,       32767.0,
       32768.0,      -40000.0, 65504.0,   65519.0,   65520.0, 70000.0, 2147483647.0, 2147483648.0,
       3e9,          -3e9,     1e20,      -1e20,     1e-8,    3e-39,   inf,          -inf,
       std::nan(""), 0.1,      1.0 / 3.0, 16777217.0},
      {36}, DType::Float64);
}

TEST_F(Vulkan, CastsBetweenEveryPairOfTheTenDtypesMatchTheCpu) {
  ASSERT_TRUE(test::device_has_float64() && test::device_has_int64());  // lavapipe has both
  for (DType from : kEvery) {
    const Tensor x = cast(edge_values(), from);  // the CPU's conversion makes each source
    const Tensor xv = to_device(x, kVulkan);
    for (DType to : kEvery)
      expect_same_bits(cast(x, to), cast(xv, to),
                       std::string(dtype_name(from)) + " -> " + std::string(dtype_name(to)));
  }
}

TEST_F(Vulkan, NarrowViewsAndCopiesMoveTheBitsOfEveryElement) {
  std::vector<uint16_t> bits(6 * 7);
  for (size_t i = 0; i < bits.size(); ++i) bits[i] = static_cast<uint16_t>(0x3c00 + 37 * i);
  for (DType t : {DType::Float16, DType::BFloat16, DType::Int16, DType::Int8, DType::UInt8}) {
    const Tensor x = reshape(cast(from_bits16(bits, DType::Int16), t), {6, 7});
    const Tensor xv = to_device(x, kVulkan);
    const std::string name(dtype_name(t));
    const Tensor idx = from_vector({4.0, 0.0, 4.0}, {3}, DType::Int64);
    const auto ops = {
        std::pair<const char*, Tensor (*)(const Tensor&, const Tensor&)>{
            "transpose",
            [](const Tensor& a, const Tensor&) { return contiguous(transpose(a, 0, 1)); }},
        {"slice", [](const Tensor& a, const Tensor&) { return contiguous(slice(a, 1, 1, 6, 2)); }},
        {"flip",
         [](const Tensor& a, const Tensor&) {
           return flip(a, {0, 1});
         }},
        {"cat",
         [](const Tensor& a, const Tensor&) {
           return cat({a, slice(a, 0, 2, 4)}, 0);
         }},
        {"pad",
         [](const Tensor& a, const Tensor&) {
           return pad(a, {1, 2, 0, 1}, 3.0);
         }},
        {"index_select", [](const Tensor& a, const Tensor& i) { return index_select(a, 0, i); }},
        {"slice_backward", [](const Tensor& a, const Tensor&) {
           return slice_backward(a, {6, 15}, 1, 1, 15, 2);
         }}};
    for (const auto& [op, fn] : ops)
      expect_same_bits(fn(x, idx), fn(xv, to_device(idx, kVulkan)), name + " " + op);
  }
}

}  // namespace
}  // namespace vk
