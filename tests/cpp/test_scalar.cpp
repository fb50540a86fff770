// Number operands (vk::Scalar): PyTorch's promotion by kind, exact int64 values, checked
// conversions, and integer arithmetic that wraps without undefined behaviour (the ASan+UBSan job
// runs these too).
#include <algorithm>
#include <cmath>
#include <limits>

#include "test_util.h"

namespace vk::test {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kBig = (int64_t{1} << 53) + 1;  // the first int a double cannot hold
const double kNaN = std::nan("");
const double kInf = std::numeric_limits<double>::infinity();

std::vector<int64_t> i64(const Tensor& t) {
  Tensor c = contiguous(t);
  const int64_t* p = c.data<int64_t>();
  return std::vector<int64_t>(p, p + c.numel());
}

Tensor one_of(DType dt) { return full({3}, 1, dt); }

TEST(Scalar, PromotionIsByKindNeverByValue) {
  // (tensor dtype, number) -> result dtype, PyTorch's table
  struct Row {
    DType t;
    Scalar s;
    DType want;
  };
  const Row rows[] = {
      {DType::Bool, true, DType::Bool},       {DType::Bool, 2, DType::Int64},
      {DType::Bool, 2.0, DType::Float32},     {DType::Int32, true, DType::Int32},
      {DType::Int32, 3, DType::Int32},        {DType::Int32, int64_t{-7}, DType::Int32},
      {DType::Int32, 2.0, DType::Float32},    {DType::Int64, 2.0, DType::Float32},
      {DType::Int64, 2.5, DType::Float32},    {DType::Int64, kInf, DType::Float32},
      {DType::Float32, 3, DType::Float32},    {DType::Float32, 1e300, DType::Float32},
      {DType::Float64, 2.5f, DType::Float64}, {DType::Float64, true, DType::Float64},
  };
  for (const Row& r : rows) {
    EXPECT_EQ(result_type(r.t, r.s), r.want) << dtype_name(r.t) << " with " << r.s;
    EXPECT_EQ((one_of(r.t) * r.s).dtype(), r.want) << dtype_name(r.t) << " * " << r.s;
    EXPECT_EQ((r.s * one_of(r.t)).dtype(), r.want) << r.s << " * " << dtype_name(r.t);
    EXPECT_EQ(scalar_like(r.s, one_of(r.t)).dtype(), r.want);
  }
  EXPECT_EQ(result_type(DType::Int32, kBig), DType::Int32);  // (and 2^53 + 1 does not fit it)
  VK_EXPECT_ERROR(one_of(DType::Int32) * kBig, RuntimeError, "mul", "9007199254740993", "int32");
  EXPECT_EQ(result_type(Scalar(1), Scalar(2.5)), DType::Float32);
  EXPECT_EQ(result_type(Scalar(true), Scalar(2)), DType::Int64);
}

TEST(Scalar, ChecksConversionsAsPyTorch) {
  EXPECT_TRUE(Scalar(kMax).fits<int64_t>());
  EXPECT_TRUE(Scalar(kMin).fits<int64_t>());
  EXPECT_FALSE(Scalar(int64_t{1} << 31).fits<int32_t>());
  EXPECT_TRUE(Scalar(-(int64_t{1} << 31)).fits<int32_t>());
  EXPECT_TRUE(Scalar(-2147483648.5).fits<int32_t>());  // truncates to INT32_MIN
  EXPECT_FALSE(Scalar(2147483648.0).fits<int32_t>());
  EXPECT_TRUE(Scalar(-0x1p63).fits<int64_t>());
  EXPECT_FALSE(Scalar(0x1p63).fits<int64_t>());
  EXPECT_FALSE(Scalar(kNaN).fits<int64_t>());
  EXPECT_FALSE(Scalar(kInf).fits<int32_t>());
  EXPECT_TRUE(Scalar(kInf).fits<float>());
  EXPECT_TRUE(Scalar(kNaN).fits<float>());
  EXPECT_FALSE(Scalar(1e300).fits<float>());
  EXPECT_TRUE(Scalar(1e300).fits<float>(/*check_float_range=*/false));
  EXPECT_FALSE(Scalar::big_int(0x1p63).fits<int64_t>());
  EXPECT_TRUE(Scalar::big_int(0x1p63).fits<double>());
  EXPECT_EQ(Scalar(2.9).to<int64_t>("t"), 2);
  EXPECT_EQ(Scalar(-2.9).to<int32_t>("t"), -2);
  EXPECT_TRUE(Scalar(kNaN).to<bool>("t"));
  VK_EXPECT_ERROR(Scalar(1e300).to<int64_t>("myop"), RuntimeError, "myop", "int64", "overflow");
  VK_EXPECT_ERROR(Scalar::big_int(0x1p63).to<int64_t>("myop"), RuntimeError, "9223372036854775808");
}

TEST(Scalar, IntOperandsStayExact) {
  EXPECT_EQ(i64(full({1}, 0, DType::Int64) + kBig), std::vector<int64_t>{kBig});
  EXPECT_EQ(i64(cast(eq(full({1}, kBig, DType::Int64), scalar_like(kBig, one_of(DType::Int64))),
                     DType::Int64)),
            std::vector<int64_t>{1});
  for (int64_t v : {kMax, kMin, kMax - 1, kMin + 1, kBig}) {
    EXPECT_EQ(i64(full({2}, v, DType::Int64)), (std::vector<int64_t>{v, v}));
    EXPECT_EQ(item_scalar(full({}, v, DType::Int64)).to_int64(), v);
    Tensor z = zeros({1}, DType::Int64);
    fill_(z, v);
    EXPECT_EQ(i64(z), std::vector<int64_t>{v});
    EXPECT_EQ(i64(clamp(zeros({1}, DType::Int64), v, v)), std::vector<int64_t>{v});
  }
}

TEST(Scalar, OutOfRangeRaises) {
  VK_EXPECT_ERROR(full({1}, 1e300, DType::Int64), RuntimeError, "full", "int64");
  VK_EXPECT_ERROR(full({1}, kNaN, DType::Int64), RuntimeError, "full", "nan");
  VK_EXPECT_ERROR(full({1}, 1e300, DType::Float32), RuntimeError, "full", "float32");
  VK_EXPECT_ERROR(full({1}, int64_t{1} << 40, DType::Int32), RuntimeError, "full", "1099511627776");
  VK_EXPECT_ERROR(one_of(DType::Int32) + (int64_t{1} << 40), RuntimeError, "add", "int32");
  VK_EXPECT_ERROR(fill_(zeros({1}, DType::Int32), int64_t{1} << 40), RuntimeError, "fill_",
                  "int32");
  VK_EXPECT_ERROR(cast_checked(full({1}, 1e10, DType::Float64), DType::Int32, "tensor"),
                  RuntimeError, "tensor", "int32");
  EXPECT_EQ(cast_checked(full({1}, -2.5, DType::Float64), DType::Int64, "tensor").item(), -2);
  // arithmetic rounds a float into float32 (as PyTorch): no error
  EXPECT_TRUE(std::isinf((full({}, 1, DType::Float32) * 1e300).item()));
  EXPECT_TRUE(full({1}, kNaN, DType::Bool).item() == 1);  // NaN is true
}

TEST(Scalar, ArangeIsExactOverInt64) {
  EXPECT_EQ(i64(arange(kBig, kBig + 2)), (std::vector<int64_t>{kBig, kBig + 1}));
  EXPECT_EQ(i64(arange(kMax - 2, kMax)), (std::vector<int64_t>{kMax - 2, kMax - 1}));
  EXPECT_EQ(i64(arange(kMin, kMin + 2)), (std::vector<int64_t>{kMin, kMin + 1}));
  EXPECT_EQ(i64(arange(kMin, kMax, int64_t{1} << 62)),
            (std::vector<int64_t>{kMin, -(int64_t{1} << 62), 0, int64_t{1} << 62}));
  EXPECT_EQ(i64(arange(kMax, kMin, kMin)), (std::vector<int64_t>{kMax, -1}));
  EXPECT_EQ(i64(arange(0, 10, 3)), (std::vector<int64_t>{0, 3, 6, 9}));
  EXPECT_EQ(i64(arange(10, 0, -3)), (std::vector<int64_t>{10, 7, 4, 1}));
  EXPECT_EQ(arange(0, 5, -1).numel(), 0);
  EXPECT_EQ(arange(0, 5, 1, DType::Int32).dtype(), DType::Int32);
  VK_EXPECT_ERROR(arange(0, int64_t{1} << 40, int64_t{1} << 39, DType::Int32), RuntimeError,
                  "arange", "int32");
  VK_EXPECT_ERROR(arange(0, Scalar::big_int(0x1p63)), RuntimeError, "arange", "int64");
  VK_EXPECT_ERROR(arange(0, 1, 0), ShapeError, "arange", "step");
  // floats: double arithmetic, as PyTorch
  EXPECT_EQ(arange(0, 1, 0.1, DType::Float32).numel(), 10);
  EXPECT_EQ(i64(arange(0.5, 3, 1, DType::Int64)), (std::vector<int64_t>{0, 1, 2}));
}

TEST(Scalar, RandintOverTheWholeInt64Range) {
  Tensor r = randint(kMin, kMax, {256});  // high - low overflows int64: computed in uint64
  EXPECT_EQ(r.dtype(), DType::Int64);
  std::vector<int64_t> v = i64(r);
  EXPECT_NE(*std::min_element(v.begin(), v.end()), *std::max_element(v.begin(), v.end()));
  VK_EXPECT_ERROR(randint(0, int64_t{1} << 40, {2}, DType::Int32), RuntimeError, "randint",
                  "int32");
}

TEST(Scalar, IntegerArithmeticWrapsWithoutUndefinedBehaviour) {
  Tensor hi = full({1}, kMax, DType::Int64), lo = full({1}, kMin, DType::Int64);
  EXPECT_EQ(i64(hi + 1), std::vector<int64_t>{kMin});
  EXPECT_EQ(i64(lo - 1), std::vector<int64_t>{kMax});
  EXPECT_EQ(i64(hi * 2), std::vector<int64_t>{-2});
  EXPECT_EQ(i64(add(hi, hi)), std::vector<int64_t>{-2});
  EXPECT_EQ(i64(sub(lo, hi)), std::vector<int64_t>{1});
  EXPECT_EQ(i64(mul(lo, lo)), std::vector<int64_t>{0});
  EXPECT_EQ(i64(neg(lo)), std::vector<int64_t>{kMin});
  EXPECT_EQ(i64(abs(lo)), std::vector<int64_t>{kMin});
  Tensor i32 = full({1}, std::numeric_limits<int32_t>::max(), DType::Int32);
  EXPECT_EQ((i32 + 1).item(), std::numeric_limits<int32_t>::min());
  EXPECT_EQ((i32 * i32).item(), 1);
}

TEST(Scalar, FloatToIntCastIsDefinedOutOfRange) {
  // NaN, +-inf and values beyond the integer type: its lowest value (PyTorch on x86), not UB
  Tensor f = from_vector({kNaN, kInf, -kInf, 1e20, -1e20, 3.7, -3.7, 0x1p31}, {8}, DType::Float64);
  EXPECT_EQ(i64(cast(f, DType::Int64)),
            (std::vector<int64_t>{kMin, kMin, kMin, kMin, kMin, 3, -3, int64_t{1} << 31}));
  Tensor i32 = cast(cast(f, DType::Float32), DType::Int32);
  const int32_t* p = i32.data<int32_t>();
  const int32_t lo = std::numeric_limits<int32_t>::min();
  EXPECT_EQ(std::vector<int32_t>(p, p + 8), (std::vector<int32_t>{lo, lo, lo, lo, lo, 3, -3, lo}));
  EXPECT_EQ(cast(full({}, kNaN, DType::Float32), DType::Bool).item(), 1);
}

TEST(Scalar, InPlaceNeverWritesIntoALowerCategory) {
  Tensor i = full({2}, 1, DType::Int64);
  VK_EXPECT_ERROR(add_(i, 1.5), RuntimeError, "add_", "float32", "can't be cast", "int64");
  VK_EXPECT_ERROR(add_(full({1}, true, DType::Bool), 1), RuntimeError, "add_", "int64", "bool");
  add_(i, full({2}, 2, DType::Int32));                           // same category: fine
  add_(full({1}, 1, DType::Int32), full({1}, 2, DType::Int64));  // narrower int: fine, as torch
  mul_(full({1}, 1.0, DType::Float32), full({1}, 2.0, DType::Float64));
  EXPECT_EQ(i64(i), (std::vector<int64_t>{3, 3}));
  VK_EXPECT_ERROR(clamp_(full({1}, 3, DType::Int64), 1.5, std::nullopt), RuntimeError, "clamp_");
}

}  // namespace
}  // namespace vk::test
