// safetensors save/load: round trips, the exact bytes of the format, and every kind of broken
// file (each must be a typed vk error, never a crash or a huge allocation). Failed saves must
// leave the previous file and no temp files behind.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>

#include "test_util.h"
#include "vkml/io/safetensors.h"

namespace vk::test {
namespace {

namespace fs = std::filesystem;
using io::NamedTensors;
using Bytes = std::vector<uint8_t>;

// A fresh directory per test, removed afterwards.
class Safetensors : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "vkml_st_XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    io::testing::fail_after_bytes(std::numeric_limits<size_t>::max());
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::vector<std::string> dir_entries() const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(dir_)) out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
  }
  fs::path dir_;
};

Bytes read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

void write_file(const std::string& path, const Bytes& b) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

void put_le64(Bytes& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

// A file from a header text and data bytes, with a correct length prefix (no padding).
Bytes blob(const std::string& header, const Bytes& data = {}) {
  Bytes out;
  put_le64(out, header.size());
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

NamedTensors parse(const Bytes& b, std::map<std::string, std::string>* meta = nullptr) {
  return io::parse_safetensors(b.data(), b.size(), meta);
}

template <class T>
Tensor make(const std::vector<T>& v, const Shape& shape) {
  if constexpr (std::is_same_v<T, bool>) {
    std::vector<uint8_t> b(v.begin(), v.end());
    return from_data(b.data(), shape, DType::Bool);
  } else {
    return from_data(v.data(), shape, dtype_of<T>::value);
  }
}

// Same dtype, shape and bytes.
void expect_identical(const Tensor& got, const Tensor& want) {
  ASSERT_EQ(got.dtype(), want.dtype());
  ASSERT_EQ(got.shape(), want.shape());
  Tensor a = contiguous(got), b = contiguous(want);
  size_t n = static_cast<size_t>(a.numel()) * dtype_size(a.dtype());
  EXPECT_EQ(std::memcmp(a.raw_data(), b.raw_data(), n), 0) << got.describe();
}

// Expects a vk::Error of exactly type E (not just any vk::Error) mentioning every part.
template <class E, class F>
void expect_error(F&& f, const std::vector<std::string>& parts) {
  try {
    f();
    ADD_FAILURE() << "expected an error mentioning " << (parts.empty() ? "" : parts[0]);
  } catch (const E& e) {
    for (const auto& p : parts)
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos)
          << "message '" << e.what() << "' lacks '" << p << "'";
  } catch (const Error& e) {
    ADD_FAILURE() << "wrong error type: " << e.what();
  }
}

template <class E = RuntimeError>
void expect_bad(const std::string& header, const Bytes& data,
                const std::vector<std::string>& parts) {
  SCOPED_TRACE(header);
  Bytes b = blob(header, data);
  expect_error<E>([&] { parse(b); }, parts);
}

NamedTensors sample() {
  return {{"w", make<float>({1.5f, -2.0f, 3.25f, 0.0f, 5.0f, -6.5f}, {2, 3})},
          {"idx", make<int64_t>({7, -8}, {2})},
          {"flag", make<bool>({true, false, true}, {3})},
          {"s", make<double>({3.5}, {})}};
}

// ---------------------------------------------------------------------------------------------
// Round trips.

TEST_F(Safetensors, RoundTripEveryDType) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  NamedTensors ts = {
      {"b", make<bool>({true, false, false, true}, {2, 2})},
      {"i32",
       make<int32_t>(
           {0, -1, std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()}, {4})},
      {"i64",
       make<int64_t>({std::numeric_limits<int64_t>::min(), 0, std::numeric_limits<int64_t>::max()},
                     {3, 1})},
      {"f32", make<float>({1.0f, -0.0f, static_cast<float>(nan), static_cast<float>(inf),
                           -static_cast<float>(inf), 1e-45f},
                          {2, 3})},
      {"f64", make<double>({nan, -inf, 0.1, -0.0, 4.9e-324, 1.7976931348623157e308}, {3, 2})},
  };
  std::string p = path("all.safetensors");
  io::save_safetensors(p, ts);
  NamedTensors got = io::load_safetensors(p);
  ASSERT_EQ(got.size(), ts.size());
  for (size_t i = 0; i < ts.size(); ++i) {
    EXPECT_EQ(got[i].first, ts[i].first);  // header order is the order given
    expect_identical(got[i].second, ts[i].second);
    EXPECT_FALSE(got[i].second.requires_grad());
    EXPECT_TRUE(got[i].second.is_contiguous());
  }
  // The same bytes parse the same from memory.
  NamedTensors mem = parse(read_file(p));
  ASSERT_EQ(mem.size(), ts.size());
  for (size_t i = 0; i < ts.size(); ++i) expect_identical(mem[i].second, ts[i].second);
}

TEST_F(Safetensors, RoundTripZeroDimEmptyAndStrided) {
  Tensor base = make<float>({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, {3, 4});
  Tensor t = transpose(base, 0, 1);                  // [4, 3], not contiguous
  Tensor sl = slice(base, 1, 1, 4, 2);               // [3, 2], step 2
  Tensor row = select(base, 0, 2);                   // contiguous with a storage offset
  Tensor ex = expand(make<int32_t>({5}, {1}), {4});  // stride 0
  ASSERT_FALSE(t.is_contiguous());
  NamedTensors ts = {{"scalar", make<int64_t>({42}, {})},
                     {"empty", Tensor::empty({0}, DType::Float32)},
                     {"empty3", Tensor::empty({2, 0, 3}, DType::Float64)},
                     {"t", t},
                     {"sl", sl},
                     {"row", row},
                     {"ex", ex},
                     {"bool0", make<bool>({true}, {})}};
  std::string p = path("views.safetensors");
  io::save_safetensors(p, ts);
  NamedTensors got = io::load_safetensors(p);
  ASSERT_EQ(got.size(), ts.size());
  for (size_t i = 0; i < ts.size(); ++i) {
    SCOPED_TRACE(ts[i].first);
    EXPECT_EQ(got[i].first, ts[i].first);
    expect_identical(got[i].second, ts[i].second);
  }
  expect_values(got[3].second, {0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11});
  expect_values(got[4].second, {1, 3, 5, 7, 9, 11});
  expect_values(got[5].second, {8, 9, 10, 11});
  expect_values(got[6].second, {5, 5, 5, 5});
}

TEST_F(Safetensors, RequiresGradTensorsSaveTheirData) {
  Tensor w = leaf({3, 2});
  Tensor y = w * 2.0;  // has history
  std::string p = path("g.safetensors");
  io::save_safetensors(p, {{"w", w}, {"y", y}});
  NamedTensors got = io::load_safetensors(p);
  expect_identical(got[0].second, w.detach());
  expect_identical(got[1].second, y.detach());
  EXPECT_FALSE(got[1].second.requires_grad());
  EXPECT_TRUE(got[1].second.is_leaf());
}

TEST_F(Safetensors, LargeTensorRoundTrip) {
  Tensor big = rand({1000, 1000}, DType::Float32);
  std::string p = path("big.safetensors");
  io::save_safetensors(p, {{"big", big}, {"tail", make<int32_t>({1, 2, 3}, {3})}});
  NamedTensors got = io::load_safetensors(p);
  expect_identical(got[0].second, big);
  expect_values(got[1].second, {1, 2, 3});
}

TEST_F(Safetensors, MetadataAndNamesRoundTrip) {
  std::map<std::string, std::string> meta = {{"format", "pt"},
                                             {"quote\"back\\slash", "new\nline\ttab\x01\x1f/\x7f"},
                                             {"unicode \xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", ""},
                                             {"", "empty key"}};
  NamedTensors ts = {{"layer.0/weight \"q\"\n\xc3\xa9", make<float>({1, 2}, {2})},
                     {"", make<int32_t>({3}, {1})}};
  std::string p = path("meta.safetensors");
  io::save_safetensors(p, ts, meta);
  std::map<std::string, std::string> got_meta = {{"stale", "x"}};
  NamedTensors got = io::load_safetensors(p, &got_meta);
  EXPECT_EQ(got_meta, meta);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].first, ts[0].first);
  EXPECT_EQ(got[1].first, "");
  expect_identical(got[0].second, ts[0].second);

  // No metadata: no "__metadata__" key, and the map comes back empty.
  io::save_safetensors(p, ts);
  Bytes b = read_file(p);
  EXPECT_EQ(std::string(b.begin(), b.end()).find("__metadata__"), std::string::npos);
  io::load_safetensors(p, &got_meta);
  EXPECT_TRUE(got_meta.empty());
}

TEST_F(Safetensors, NoTensorsAtAll) {
  std::string p = path("none.safetensors");
  io::save_safetensors(p, {}, {{"k", "v"}});
  std::map<std::string, std::string> meta;
  EXPECT_TRUE(io::load_safetensors(p, &meta).empty());
  EXPECT_EQ(meta.at("k"), "v");
  io::save_safetensors(p, {});
  Bytes b = read_file(p);
  Bytes want = {8, 0, 0, 0, 0, 0, 0, 0, '{', '}', ' ', ' ', ' ', ' ', ' ', ' '};
  EXPECT_EQ(b, want);
  EXPECT_TRUE(io::load_safetensors(p).empty());
}

TEST_F(Safetensors, OverwritesAnExistingFile) {
  std::string p = path("o.safetensors");
  io::save_safetensors(p, {{"a", make<float>({1, 2, 3}, {3})}});
  io::save_safetensors(p, {{"b", make<int64_t>({9}, {1})}});
  NamedTensors got = io::load_safetensors(p);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].first, "b");
  EXPECT_EQ(dir_entries(), std::vector<std::string>{"o.safetensors"});
}

// ---------------------------------------------------------------------------------------------
// The bytes of the format.

TEST_F(Safetensors, ExactBytesOfAKnownExample) {
  std::string p = path("known.safetensors");
  io::save_safetensors(
      p, {{"a", make<float>({1.0f, -2.0f}, {2})}, {"b", make<bool>({true}, {1, 1})}}, {{"k", "v"}});
  // Header, by hand (compact JSON, metadata first, tensors in the order given):
  std::string json =
      R"({"__metadata__":{"k":"v"},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
      R"("b":{"dtype":"BOOL","shape":[1,1],"data_offsets":[8,9]}})";
  ASSERT_EQ(json.size(), 135u);  // padded with 1 space to 136, a multiple of 8
  Bytes want = {136, 0, 0, 0, 0, 0, 0, 0};
  want.insert(want.end(), json.begin(), json.end());
  want.push_back(' ');
  // 1.0f = 0x3f800000, -2.0f = 0xc0000000, little-endian; then the bool.
  Bytes data = {0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x00, 0xc0, 0x01};
  want.insert(want.end(), data.begin(), data.end());
  EXPECT_EQ(read_file(p), want);
}

TEST_F(Safetensors, WrittenFileFollowsTheSpec) {
  std::string p = path("spec.safetensors");
  io::save_safetensors(p, sample(), {{"format", "pt"}});
  Bytes b = read_file(p);
  ASSERT_GE(b.size(), 8u);
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= static_cast<uint64_t>(b[i]) << (8 * i);
  EXPECT_EQ(n % 8, 0u) << "the data section starts 8-byte aligned";
  ASSERT_LE(8 + n, b.size());
  std::string header(b.begin() + 8, b.begin() + 8 + static_cast<std::ptrdiff_t>(n));
  EXPECT_EQ(header.front(), '{');
  size_t close = header.find_last_not_of(' ');
  EXPECT_EQ(header[close], '}');  // padding is spaces only
  EXPECT_LT(header.size() - close - 1, 8u);
  // 6 floats + 2 int64 + 3 bools + 1 double, back to back in the order given.
  EXPECT_EQ(b.size() - 8 - n, 24u + 16u + 3u + 8u);
  for (const char* part : {R"("w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]})",
                           R"("idx":{"dtype":"I64","shape":[2],"data_offsets":[24,40]})",
                           R"("flag":{"dtype":"BOOL","shape":[3],"data_offsets":[40,43]})",
                           R"("s":{"dtype":"F64","shape":[],"data_offsets":[43,51]})"})
    EXPECT_NE(header.find(part), std::string::npos) << part << " in " << header;
}

TEST_F(Safetensors, ReadsHandWrittenFiles) {
  // Whitespace, escapes, an unpadded header length, fields in any order, zero-size tensors.
  Bytes data = {0x00, 0x00, 0x80, 0x3f, 0x02, 0x00, 0x00, 0x00};
  Bytes b = blob(
      "\t{ \"__metadata__\" : { \"a\\u00e9\\ud83d\\ude00\" : \"\\\"\\\\\\/\\b\\f\\n\\r\\t\" } ,\n"
      " \"x\\u0041\" : { \"shape\" : [ 1 ] , \"data_offsets\" : [ 0 , 4 ] , \"dtype\" : \"F32\" },"
      " \"z0\": {\"dtype\": \"F64\", \"shape\": [0, 5], \"data_offsets\": [4, 4]},"
      " \"i\": {\"dtype\": \"I32\", \"shape\": [], \"data_offsets\": [4, 8]},"
      " \"z1\": {\"dtype\": \"I64\", \"shape\": [3, 0], \"data_offsets\": [8, 8]}} \r\n",
      data);
  std::map<std::string, std::string> meta;
  NamedTensors got = parse(b, &meta);
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(got[0].first, "xA");
  expect_values(got[0].second, {1.0});
  EXPECT_EQ(got[1].second.shape(), (Shape{0, 5}));
  EXPECT_EQ(got[2].second.dtype(), DType::Int32);
  expect_values(got[2].second, {2});
  EXPECT_EQ(got[3].second.shape(), (Shape{3, 0}));
  EXPECT_EQ(meta.at("a\xc3\xa9\xf0\x9f\x98\x80"), "\"\\/\b\f\n\r\t");
  // "-0" is JSON for 0.
  expect_values(parse(blob(R"({"a":{"dtype":"U8","shape":[-0],"data_offsets":[0,-0]}})"))[0].second,
                {});
}

TEST_F(Safetensors, ReadsTheNarrowDTypesAsThemselvesAndWidensTheUnsignedOnes) {
  // F16: 1.0, -2.0, 65504, smallest subnormal 2^-24, +inf, NaN, -0.
  Bytes f16 = {0x00, 0x3c, 0x00, 0xc0, 0xff, 0x7b, 0x01, 0x00, 0x00, 0x7c, 0x00, 0x7e, 0x00, 0x80};
  // BF16: 1.0 (0x3f80), -3.0 (0xc040).
  Bytes bf16 = {0x80, 0x3f, 0x40, 0xc0};
  Bytes ints = {0xff, 0x80,              // U8 255, I8 -128
                0x00, 0x80, 0xff, 0xff,  // I16 -32768, U16 65535
                0xff, 0xff, 0xff, 0xff,  // U32 4294967295
                0x00, 0x07, 0x01};       // BOOL: 0 -> false, 7 -> true, 1 -> true
  Bytes data = f16;
  data.insert(data.end(), bf16.begin(), bf16.end());
  data.insert(data.end(), ints.begin(), ints.end());
  Bytes b = blob(R"({"h":{"dtype":"F16","shape":[7],"data_offsets":[0,14]},)"
                 R"("bh":{"dtype":"BF16","shape":[2],"data_offsets":[14,18]},)"
                 R"("u8":{"dtype":"U8","shape":[1],"data_offsets":[18,19]},)"
                 R"("i8":{"dtype":"I8","shape":[1],"data_offsets":[19,20]},)"
                 R"("i16":{"dtype":"I16","shape":[1],"data_offsets":[20,22]},)"
                 R"("u16":{"dtype":"U16","shape":[1],"data_offsets":[22,24]},)"
                 R"("u32":{"dtype":"U32","shape":[1],"data_offsets":[24,28]},)"
                 R"("bool":{"dtype":"BOOL","shape":[3],"data_offsets":[28,31]}})",
                 data);
  NamedTensors got = parse(b);
  ASSERT_EQ(got.size(), 8u);
  EXPECT_EQ(got[0].second.dtype(), DType::Float16);
  const double inf = std::numeric_limits<double>::infinity();
  expect_values(got[0].second, {1.0, -2.0, 65504.0, std::ldexp(1.0, -24), inf, NAN, 0.0}, 0);
  EXPECT_TRUE(std::signbit(to_vector(got[0].second)[6]));
  EXPECT_EQ(got[1].second.dtype(), DType::BFloat16);
  expect_values(got[1].second, {1.0, -3.0}, 0);
  EXPECT_EQ(got[2].second.dtype(), DType::UInt8);
  EXPECT_EQ(got[3].second.dtype(), DType::Int8);
  EXPECT_EQ(got[4].second.dtype(), DType::Int16);
  EXPECT_EQ(got[5].second.dtype(), DType::Int32);  // U16: vkml has no uint16
  expect_values(got[2].second, {255}, 0);
  expect_values(got[3].second, {-128}, 0);
  expect_values(got[4].second, {-32768}, 0);
  expect_values(got[5].second, {65535}, 0);
  EXPECT_EQ(got[6].second.dtype(), DType::Int64);
  expect_values(got[6].second, {4294967295.0}, 0);
  const bool* bools = got[7].second.data<bool>();
  const auto* raw = reinterpret_cast<const uint8_t*>(bools);
  EXPECT_EQ(raw[0], 0);
  EXPECT_EQ(raw[1], 1);
  EXPECT_EQ(raw[2], 1);
}

TEST_F(Safetensors, HalfPrecisionEveryBitPattern) {
  // Every F16 value converts exactly: compare with the definition.
  Bytes data;
  for (uint32_t h = 0; h < 65536; ++h) {
    data.push_back(static_cast<uint8_t>(h));
    data.push_back(static_cast<uint8_t>(h >> 8));
  }
  Bytes b = blob(R"({"h":{"dtype":"F16","shape":[65536],"data_offsets":[0,131072]}})", data);
  Tensor t = parse(b)[0].second;
  ASSERT_EQ(t.dtype(), DType::Float16);
  std::vector<float> v(65536);
  for (uint32_t h = 0; h < 65536; ++h) v[h] = static_cast<float>(t.data<Half>()[h]);
  for (uint32_t h = 0; h < 65536; ++h) {
    int exp = (h >> 10) & 0x1F;
    int mant = h & 0x3FF;
    double want = exp == 0    ? std::ldexp(mant, -24)
                  : exp == 31 ? (mant ? NAN : INFINITY)
                              : std::ldexp(1024 + mant, exp - 25);
    if (h & 0x8000) want = -want;
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(v[h])) << h;
    } else {
      EXPECT_EQ(static_cast<double>(v[h]), want) << h;
      EXPECT_EQ(std::signbit(v[h]), (h & 0x8000) != 0) << h;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Broken files: each a typed error naming what and where.

TEST_F(Safetensors, TruncationAtEveryByteIsATypedError) {
  std::string p = path("full.safetensors");
  io::save_safetensors(p, sample(), {{"format", "pt"}});
  Bytes full = read_file(p);
  ASSERT_NO_THROW(parse(full));
  for (size_t k = 0; k < full.size(); ++k) {
    SCOPED_TRACE(k);
    Bytes cut(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(k));
    expect_error<RuntimeError>([&] { parse(cut); }, {});
    std::string q = path("cut.safetensors");
    write_file(q, cut);
    expect_error<RuntimeError>([&] { io::load_safetensors(q); }, {"cut.safetensors"});
  }
  // The messages say what is wrong.
  expect_error<RuntimeError>([&] { parse(Bytes(full.begin(), full.begin() + 5)); },
                             {"5 bytes", "fewer than the 8"});
  expect_error<RuntimeError>([&] { parse(Bytes(full.begin(), full.begin() + 40)); },
                             {"header length", "past the end of the file (40 bytes)"});
  expect_error<RuntimeError>([&] { parse(Bytes(full.begin(), full.end() - 1)); },
                             {"'s'", "past the end of the data section (50 bytes)"});
}

TEST_F(Safetensors, CorruptingAnyByteNeverCrashes) {
  std::string p = path("full.safetensors");
  io::save_safetensors(p, sample(), {{"format", "pt"}});
  Bytes full = read_file(p);
  size_t ok = 0, errors = 0;
  for (size_t k = 0; k < full.size(); ++k) {
    for (int v : std::initializer_list<int>{0x00, 0xff, 0x80, '"', '\\', '{', '}', '[', ']', ',',
                                            ':', '-', '0', '9', 'e', ' '}) {
      Bytes b = full;
      b[k] = static_cast<uint8_t>(v);
      try {
        NamedTensors t = parse(b);
        for (auto& [name, x] : t) (void)to_vector(x);
        ++ok;
      } catch (const Error&) {
        ++errors;
      }
    }
  }
  EXPECT_GT(errors, 0u);
  EXPECT_GT(ok, 0u);  // bytes in the data section change values only
}

TEST_F(Safetensors, HugeOrLyingHeaderLength) {
  Bytes b;
  put_le64(b, std::numeric_limits<uint64_t>::max());
  b.push_back('{');
  expect_error<RuntimeError>([&] { parse(b); }, {"header length 18446744073709551615", "limit"});
  b.clear();
  put_le64(b, 100'000'001);
  expect_error<RuntimeError>([&] { parse(b); }, {"100000001", "over the limit"});
  b = blob("{}");
  b[0] = 3;  // says 3 bytes, has 2
  expect_error<RuntimeError>([&] { parse(b); }, {"header length 3", "past the end"});
  b[0] = 0;  // an empty header is not JSON
  expect_error<RuntimeError>([&] { parse(b); }, {"expected '{'"});
  b[0] = 1;  // "{" and then data "}"
  expect_error<RuntimeError>([&] { parse(b); }, {"at byte 9", "end of the header"});
  // And through load: the file on disk is read only as far as it is long.
  std::string p = path("huge.safetensors");
  Bytes h;
  put_le64(h, 99'999'999);
  h.insert(h.end(), {'{', '}'});
  write_file(p, h);
  expect_error<RuntimeError>([&] { io::load_safetensors(p); }, {"huge.safetensors", "99999999"});
}

TEST_F(Safetensors, OffsetsThatLie) {
  Bytes d8(8, 0);
  // Size disagrees with shape and dtype.
  expect_bad(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", d8,
             {"tensor 'a'", "[3]", "F32", "3 * 4 bytes", "[0, 8]", "span 8"});
  // Past the end of the data section.
  expect_bad(R"({"a":{"dtype":"F64","shape":[2],"data_offsets":[0,16]}})", d8,
             {"tensor 'a'", "[0, 16]", "past the end of the data section (8 bytes)"});
  expect_bad(
      R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[9223372036854775799,9223372036854775807]}})",
      d8, {"tensor 'a'", "past the end of the data section"});
  // begin > end, negative, not two numbers.
  expect_bad(R"({"a":{"dtype":"F32","shape":[0],"data_offsets":[8,0]}})", d8,
             {"tensor 'a'", "begin <= end", "[8, 0]"});
  expect_bad(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[-8,0]}})", d8,
             {"tensor 'a'", "[-8, 0]"});
  expect_bad(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0]}})", d8, {"tensor 'a'", "[0]"});
  expect_bad(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8,8]}})", d8,
             {"tensor 'a'", "more than 2"});
  expect_bad(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":"0,8"}})", d8, {"expected '['"});
  // A hole, trailing bytes, a first tensor that does not start at 0.
  expect_bad(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
             R"("b":{"dtype":"I8","shape":[2],"data_offsets":[6,8]}})",
             d8, {"data bytes [4, 6)", "belong to no tensor", "'b'"});
  expect_bad(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", d8,
             {"8 bytes", "cover only the first 4"});
  expect_bad(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", d8, {"[0, 4)", "'a'"});
}

TEST_F(Safetensors, OverlappingTensors) {
  Bytes d8(8, 0);
  expect_bad(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
             R"("b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
             d8, {"'b'", "[4, 8)", "overlaps tensor 'a' at [0, 8)"});
  expect_bad(R"({"a":{"dtype":"F64","shape":[1],"data_offsets":[0,8]},)"
             R"("b":{"dtype":"F64","shape":[1],"data_offsets":[0,8]}})",
             d8, {"overlaps"});
  // A zero-size tensor inside another one is an overlap too (as the reference reader says).
  expect_bad(R"({"a":{"dtype":"F64","shape":[1],"data_offsets":[0,8]},)"
             R"("z":{"dtype":"F64","shape":[0],"data_offsets":[4,4]}})",
             d8, {"'z'", "overlaps"});
}

TEST_F(Safetensors, DTypes) {
  Bytes d4(4, 0);
  expect_bad<DTypeError>(R"({"w":{"dtype":"F17","shape":[1],"data_offsets":[0,4]}})", d4,
                         {"tensor 'w'", "unknown dtype 'F17'"});
  expect_bad<DTypeError>(R"({"w":{"dtype":"f32","shape":[1],"data_offsets":[0,4]}})", d4,
                         {"unknown dtype 'f32'"});
  expect_bad<DTypeError>(R"({"w":{"dtype":"U64","shape":[1],"data_offsets":[0,8]}})", Bytes(8),
                         {"tensor 'w'", "U64", "not supported"});
  expect_bad<DTypeError>(R"({"w":{"dtype":"F8_E4M3","shape":[4],"data_offsets":[0,4]}})", d4,
                         {"F8_E4M3", "not supported"});
  expect_bad(R"({"w":{"dtype":32,"shape":[1],"data_offsets":[0,4]}})", d4,
             {"expected a string (the dtype of tensor 'w')"});
}

TEST_F(Safetensors, Shapes) {
  expect_bad<ShapeError>(R"({"w":{"dtype":"F32","shape":[2,-1],"data_offsets":[0,0]}})", {},
                         {"tensor 'w'", "negative dimension -1", "[2, -1]"});
  expect_bad<ShapeError>(
      R"({"w":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,0]}})", {},
      {"tensor 'w'", "more elements than int64"});
  // numel fits, bytes do not.
  expect_bad(R"({"w":{"dtype":"F64","shape":[2305843009213693952],"data_offsets":[0,0]}})", {},
             {"tensor 'w'"});
  std::string many = R"({"w":{"dtype":"F32","shape":[)";
  for (int i = 0; i < 2000; ++i) many += i ? ",1" : "1";
  many += R"(],"data_offsets":[0,4]}})";
  expect_bad<ShapeError>(many, Bytes(4), {"tensor 'w'", "more than 1024 dimensions"});
  expect_bad(R"({"w":{"dtype":"F32","shape":[1.0],"data_offsets":[0,4]}})", Bytes(4),
             {"fraction or exponent"});
  expect_bad(R"({"w":{"dtype":"F32","shape":[1e0],"data_offsets":[0,4]}})", Bytes(4),
             {"fraction or exponent"});
  expect_bad(R"({"w":{"dtype":"F32","shape":[01],"data_offsets":[0,4]}})", Bytes(4),
             {"leading zero"});
  expect_bad(R"({"w":{"dtype":"F32","shape":[9223372036854775808],"data_offsets":[0,4]}})",
             Bytes(4), {"out of the int64 range"});
  expect_bad(R"({"w":{"dtype":"F32","shape":2,"data_offsets":[0,4]}})", Bytes(4), {"expected '['"});
}

TEST_F(Safetensors, DuplicateNames) {
  Bytes d8(8, 0);
  expect_bad(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
             R"("a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
             d8, {"duplicate tensor name 'a'"});
  // The same name spelled with an escape is the same name.
  expect_bad(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
             R"("\u0061":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
             d8, {"duplicate tensor name 'a'"});
  expect_bad(R"({"__metadata__":{},"__metadata__":{}})", {}, {"duplicate \"__metadata__\""});
  expect_bad(R"({"__metadata__":{"k":"1","k":"2"}})", {}, {"duplicate metadata key 'k'"});
  expect_bad(R"({"a":{"dtype":"F32","dtype":"F32","shape":[1],"data_offsets":[0,4]}})", Bytes(4),
             {"tensor 'a'", "duplicate field 'dtype'"});
}

TEST_F(Safetensors, MalformedJson) {
  struct Case {
    std::string header;
    std::string part;
  };
  const std::vector<Case> cases = {
      {"", "expected '{'"},
      {" ", "expected '{'"},
      {"[]", "expected '{'"},
      {"{", "expected a string"},
      {"{}}", "unexpected '}' after"},
      {"{} x", "unexpected 'x'"},
      {std::string("{}\0", 3), "byte 0x00"},
      {R"({"a"})", "expected ':'"},
      {R"({"a":1})", "expected '{'"},
      {R"({"a":{}})", "lacks \"dtype\""},
      {R"({"a":{"dtype":"F32"}})", "lacks \"shape\""},
      {R"({"a":{"dtype":"F32","shape":[]}})", "lacks \"data_offsets\""},
      {R"({"a":{"dtype":"F32","shape":[],"data_offsets":[0,4],}})", "expected a string"},
      {R"({"a":{"dtype":"F32","shape":[0],"data_offsets":[0,0]},})", "expected a string"},
      {R"({"a":{"dtype":"F32","shape":[,],"data_offsets":[0,4]}})", "expected an integer"},
      {R"({"a":{"dtype":"F32","shape":[1,],"data_offsets":[0,4]}})", "expected an integer"},
      {R"({"a":{"dtype":"F32","shape":[1 2],"data_offsets":[0,4]}})", "expected ','"},
      {R"({"a":{"dtype":"F32","shape":[+1],"data_offsets":[0,4]}})", "expected an integer"},
      {R"({"a":{"dtype":"F32","shape":[-],"data_offsets":[0,4]}})", "expected an integer"},
      {R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"extra":1}})",
       "unknown field 'extra'"},
      {R"({"a":{"dtype":"F32","shape":[0],"data_offsets":[0,0]})", "expected ','"},
      {R"({"a)", "unterminated string"},
      {R"({"a\)", "unterminated escape"},
      {R"({"a\x":1})", "invalid escape"},
      {R"({"a\u12":1})", "\\u escape"},
      {R"({"a\u12G4":1})", "invalid hex digit"},
      {R"({"\ud800":1})", "high surrogate"},
      {R"({"\ud800\u0041":1})", "high surrogate"},
      {R"({"\udc00":1})", "lone low surrogate"},
      {"{\"a\tb\":1}", "control character"},
      {"{\"\xff\":1}", "not valid UTF-8"},
      {"{\"\xc0\xaf\":1}", "not valid UTF-8"},          // overlong '/'
      {"{\"\xed\xa0\x80\":1}", "not valid UTF-8"},      // encoded surrogate
      {"{\"\xf4\x90\x80\x80\":1}", "not valid UTF-8"},  // above U+10FFFF
      {"{\"\xe2\x82\":1}", "not valid UTF-8"},          // cut sequence
      {R"({'a':1})", "expected a string"},
      {R"({"__metadata__":[]})", "expected '{'"},
      {R"({"__metadata__":{"k":1}})", "metadata key 'k'"},
      {R"({"__metadata__":{"k":null}})", "metadata key 'k'"},
      {R"({"__metadata__":null})", "expected '{'"},
      {R"({"a":{"dtype":"F32","shape":[true],"data_offsets":[0,4]}})", "expected an integer"},
  };
  for (const auto& c : cases) expect_bad(c.header, {}, {c.part});
  // Deep nesting is rejected at the first level the schema does not allow, without recursion.
  expect_bad(R"({"a":{"dtype":"F32","shape":[)" + std::string(100000, '[') + "]}}", {},
             {"expected an integer"});
}

TEST_F(Safetensors, ErrorMessagesSayWhere) {
  std::string p = path("where.safetensors");
  write_file(p, blob(R"({"ok":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                     R"("bad":{"dtype":"F17","shape":[1],"data_offsets":[4,8]}})",
                     Bytes(8)));
  // "bad" starts at header byte 55, which is byte 63 of the file.
  expect_error<DTypeError>([&] { io::load_safetensors(p); },
                           {"load_safetensors('", "where.safetensors", "at byte 63 of the file",
                            "tensor 'bad'", "'F17'"});
  // Names in messages are escaped and cut.
  std::string long_name(500, 'x');
  expect_bad<DTypeError>("{\"" + long_name +
                             "\\n\":{\"dtype\":\"F17\",\"shape\":[],"
                             "\"data_offsets\":[0,0]}}",
                         {}, {"'" + std::string(80, 'x') + "...'"});
  expect_bad<DTypeError>(R"({"a\u0001":{"dtype":"F17","shape":[],"data_offsets":[0,0]}})", {},
                         {"'a\\x01'"});
}

TEST_F(Safetensors, LoadErrors) {
  expect_error<RuntimeError>([&] { io::load_safetensors(path("missing.safetensors")); },
                             {"missing.safetensors", "No such file or directory"});
  expect_error<RuntimeError>([&] { io::load_safetensors(dir_.string()); }, {"not a regular file"});
}

// ---------------------------------------------------------------------------------------------
// Inputs the fuzzer (fuzz/fuzz_safetensors.cpp) found.

// crash-5f7bad06677fec54d131b7a20f4d9f3dcb0df9cf: a valid file with a [0, 0] tensor. The reader
// was right; the fuzzer's own check used Tensor::is_contiguous(), which is false for [0, 0].
TEST_F(Safetensors, FuzzFoundEmptyTensorWithTwoZeroDims) {
  const std::string header =
      R"({"__metadata__":{"format":"pt"},"b":{"dtype":"BOOL","shape":[3],"data_offsets":[0,3]},)"
      R"("1e3":{"dtype":"I32","shape":[2],"data_offsets":[3,11]},)"
      R"("#64":{"dtype":"I64","shape":[],"data_offsets":[11,19]},)"
      R"("f64":{"dtype":"F64","shape":[1,1],"data_offsets":[19,27]},)"
      R"("z":{"dtype":"F32","shape":[0,0],"data_offsets":[27,27]}})"
      "      ";
  const Bytes data = {0x01, 0x00, 0x01, 0xff, 0xff, 0xff, 0xff, 0x07, 0x00,
                      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
                      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xe0, 0x3f};
  Bytes b = blob(header, data);
  ASSERT_EQ(b.size(), 355u);
  NamedTensors got = parse(b);
  ASSERT_EQ(got.size(), 5u);
  expect_values(got[1].second, {-1, 7});
  expect_values(got[3].second, {0.5});
  const Tensor& z = got[4].second;
  EXPECT_EQ(z.shape(), (Shape{0, 0}));
  EXPECT_EQ(z.strides(), contiguous_strides(z.shape()));
  EXPECT_EQ(z.offset(), 0);
}

// ---------------------------------------------------------------------------------------------
// Atomic saves.

TEST_F(Safetensors, FailedSaveLeavesThePreviousFileIntact) {
  std::string p = path("model.safetensors");
  io::save_safetensors(p, sample(), {{"v", "1"}});
  const Bytes before = read_file(p);
  NamedTensors next = {{"w", rand({64, 64})}, {"x", make<int64_t>({1, 2, 3}, {3})}};
  io::save_safetensors(path("probe"), next);
  const size_t total = read_file(path("probe")).size();
  fs::remove(path("probe"));
  // The disk "fills" after k bytes: in the length, the header, the data, at the last byte.
  for (size_t k :
       {size_t{0}, size_t{3}, size_t{8}, size_t{20}, size_t{200}, size_t{16000}, total - 1}) {
    SCOPED_TRACE(k);
    io::testing::fail_after_bytes(k);
    expect_error<RuntimeError>([&] { io::save_safetensors(p, next); },
                               {"model.safetensors", "No space left on device", "unchanged"});
    io::testing::fail_after_bytes(std::numeric_limits<size_t>::max());
    EXPECT_EQ(read_file(p), before);
    EXPECT_EQ(dir_entries(), std::vector<std::string>{"model.safetensors"}) << "temp file left";
  }
  // Without a previous file, nothing is left at all.
  io::testing::fail_after_bytes(10);
  expect_error<RuntimeError>([&] { io::save_safetensors(path("new.safetensors"), next); },
                             {"new.safetensors", "No space left on device"});
  io::testing::fail_after_bytes(std::numeric_limits<size_t>::max());
  EXPECT_EQ(dir_entries(), std::vector<std::string>{"model.safetensors"});
  // And the hook off again, saving works.
  io::save_safetensors(p, next);
  expect_identical(io::load_safetensors(p)[0].second, next[0].second);
}

// FailedRenameLeavesNoTempFile and the file-system cases (symlinks, permissions, FIFOs, stale
// temp files): test_atomic_save.cpp.

TEST_F(Safetensors, SaveErrors) {
  expect_error<RuntimeError>(
      [&] { io::save_safetensors(path("no/such/dir/x.safetensors"), sample()); },
      {"no/such/dir/x.safetensors", "No such file or directory"});
  std::string p = path("e.safetensors");
  Tensor a = make<float>({1}, {1});
  expect_error<RuntimeError>(
      [&] {
        io::save_safetensors(p, {{"a", a}, {"a", a}});
      },
      {"duplicate tensor name 'a'"});
  expect_error<RuntimeError>(
      [&] {
        io::save_safetensors(p, {{"__metadata__", a}});
      },
      {"\"__metadata__\" cannot name a tensor"});
  expect_error<RuntimeError>(
      [&] {
        io::save_safetensors(p, {{"bad\xff", a}});
      },
      {"tensor name", "not valid UTF-8"});
  expect_error<RuntimeError>(
      [&] {
        io::save_safetensors(p, {{"a", a}}, {{"k", "\xc0\x80"}});
      },
      {"metadata key 'k'", "not valid UTF-8"});
  expect_error<RuntimeError>(
      [&] {
        io::save_safetensors(p, {{"u", Tensor()}});
      },
      {"tensor 'u' is undefined"});
  expect_error<RuntimeError>(
      [&] {
        io::save_safetensors(dir_.string() + "/", {{"a", a}});
      },
      {"does not name a file"});
  EXPECT_TRUE(dir_entries().empty());
  // The same tensor under two names is fine (each name gets its own copy of the data).
  io::save_safetensors(p, {{"a", a}, {"b", a}});
  EXPECT_EQ(io::load_safetensors(p).size(), 2u);
}

TEST_F(Safetensors, SavedFileHasDefaultPermissions) {
  std::string p = path("perm.safetensors");
  io::save_safetensors(p, sample());
  struct stat st;
  ASSERT_EQ(::stat(p.c_str(), &st), 0);
  mode_t mask = ::umask(0);
  ::umask(mask);
  EXPECT_EQ(st.st_mode & 0777, 0666 & ~mask);
}

TEST_F(Safetensors, RelativePathInTheWorkingDirectory) {
  struct Cwd {  // restored however the test ends
    fs::path old = fs::current_path();
    ~Cwd() { fs::current_path(old); }
  } cwd;
  fs::current_path(dir_);
  io::save_safetensors("rel.safetensors", sample());
  EXPECT_EQ(io::load_safetensors("rel.safetensors").size(), 4u);
  EXPECT_EQ(dir_entries(), std::vector<std::string>{"rel.safetensors"});
}

}  // namespace
}  // namespace vk::test
