// safetensors save/load: a strict header parser and validator, an atomic writer. See safetensors.h
// for the format and the rules.
#include "vkml/io/safetensors.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <numeric>
#include <set>
#include <string_view>
#include <system_error>

#include "vkml/core/grad_mode.h"
#include "vkml/io/atomic_file.h"
#include "vkml/ops/device_ops.h"
#include "vkml/ops/shape.h"

namespace vk::io {

std::string internal::errno_text(int err) {
  return std::error_code(err, std::generic_category()).message();
}

namespace {

using internal::errno_text;

static_assert(std::endian::native == std::endian::little,
              "safetensors I/O copies little-endian bytes as they are: a little-endian host only");

constexpr uint64_t kMaxHeaderBytes = 100'000'000;  // the reference implementation's limit
constexpr size_t kMaxDims = 1024;
constexpr const char* kMetadataKey = "__metadata__";

// Length of the well-formed UTF-8 character at s (no overlong forms, no surrogates, nothing
// above U+10FFFF), or 0 when there is none.
size_t utf8_char_len(const uint8_t* s, size_t n) {
  uint8_t c = s[0];
  if (c < 0x80) return 1;
  size_t len;
  uint32_t cp, min;
  if ((c & 0xE0) == 0xC0) {
    len = 2, cp = c & 0x1Fu, min = 0x80;
  } else if ((c & 0xF0) == 0xE0) {
    len = 3, cp = c & 0x0Fu, min = 0x800;
  } else if ((c & 0xF8) == 0xF0) {
    len = 4, cp = c & 0x07u, min = 0x10000;
  } else {
    return 0;
  }
  if (n < len) return 0;
  for (size_t k = 1; k < len; ++k) {
    if ((s[k] & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (s[k] & 0x3Fu);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return len;
}

// Offset of the first byte that is not well-formed UTF-8, or n when all of [s, s + n) is.
size_t utf8_error_at(const uint8_t* s, size_t n) {
  for (size_t i = 0; i < n;) {
    size_t len = utf8_char_len(s + i, n - i);
    if (len == 0) return i;
    i += len;
  }
  return n;
}

}  // namespace

std::string internal::quoted(std::string_view s) {
  constexpr size_t kMax = 80;
  const auto* p = reinterpret_cast<const uint8_t*>(s.data());
  std::string out = "'";
  size_t i = 0;
  while (i < s.size() && i < kMax) {
    size_t len = utf8_char_len(p + i, s.size() - i);
    if (len == 0 || p[i] < 0x20 || p[i] == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", p[i]);
      out += buf;
      i += 1;
    } else {
      out.append(s.data() + i, len);
      i += len;
    }
  }
  if (i < s.size()) out += "...";
  out += "'";
  return out;
}

namespace {

using internal::quoted;

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// ---------------------------------------------------------------------------------------------
// The dtypes of the format.

struct FileDType {
  std::string_view name;
  size_t size;   // bytes per element in the file
  DType loaded;  // what it becomes in vkml (wider when vkml lacks the type; exact)
};

constexpr FileDType kFileDTypes[] = {
    {"BOOL", 1, DType::Bool},     {"I32", 4, DType::Int32},   {"I64", 8, DType::Int64},
    {"F32", 4, DType::Float32},   {"F64", 8, DType::Float64}, {"F16", 2, DType::Float16},
    {"BF16", 2, DType::BFloat16}, {"U8", 1, DType::UInt8},    {"I8", 1, DType::Int8},
    {"I16", 2, DType::Int16},     {"U16", 2, DType::Int32},   {"U32", 4, DType::Int64},
};

// Dtypes of the format that vkml does not read: named in the error.
constexpr std::string_view kUnsupportedDTypes[] = {
    "U64", "F8_E5M2", "F8_E4M3", "F8_E8M0", "F8_E4M3FNUZ", "F8_E5M2FNUZ",
    "F4",  "F6_E2M3", "F6_E3M2", "C64",     "C128",
};

const FileDType* find_file_dtype(std::string_view name) {
  for (const auto& d : kFileDTypes)
    if (d.name == name) return &d;
  return nullptr;
}

bool is_unsupported_dtype(std::string_view name) {
  return std::find(std::begin(kUnsupportedDTypes), std::end(kUnsupportedDTypes), name) !=
         std::end(kUnsupportedDTypes);
}

const char* file_dtype_name(DType t) {
  switch (t) {
    case DType::Bool:
      return "BOOL";
    case DType::Int32:
      return "I32";
    case DType::Int64:
      return "I64";
    case DType::Float32:
      return "F32";
    case DType::Float64:
      return "F64";
    case DType::Float16:
      return "F16";
    case DType::BFloat16:
      return "BF16";
    case DType::UInt8:
      return "U8";
    case DType::Int8:
      return "I8";
    case DType::Int16:
      return "I16";
  }
  return "?";
}

// ---------------------------------------------------------------------------------------------
// The header: a strict JSON reader driven by the schema, so nothing it builds is larger than a
// small constant times the header's size, and nothing recurses.

struct Entry {
  std::string name;
  const FileDType* dtype = nullptr;
  Shape shape;
  uint64_t begin = 0, end = 0;
  size_t at = 0;  // where the entry's name starts in the header, for messages
};

struct Header {
  std::vector<Entry> entries;
  std::map<std::string, std::string> metadata;
};

class JsonReader {
 public:
  JsonReader(const uint8_t* p, size_t n, const std::string& where) : p_(p), n_(n), where_(where) {}

  // Everything thrown about the header goes through here: "<where>: at byte N of the file: ...",
  // where `at` counts from the start of the header (byte 8 of the file).
  template <class E = RuntimeError>
  [[noreturn]] void fail(const std::string& what, size_t at) const {
    throw E(detail::cat(where_, ": at byte ", 8 + at, " of the file: ", what));
  }
  [[noreturn]] void fail(const std::string& what) const { fail(what, pos_); }

  size_t pos() const { return pos_; }

  void skip_ws() {
    while (pos_ < n_ &&
           (p_[pos_] == ' ' || p_[pos_] == '\t' || p_[pos_] == '\n' || p_[pos_] == '\r'))
      ++pos_;
  }
  int peek() {
    skip_ws();
    return pos_ < n_ ? p_[pos_] : -1;
  }
  bool at_end() { return peek() < 0; }
  bool consume(char c) {
    if (peek() != c) return false;
    ++pos_;
    return true;
  }
  void expect(char c, const std::string& context) {
    if (!consume(c)) fail(detail::cat("expected '", c, "' ", context, ", found ", found()));
  }

  // What sits at the cursor, for messages.
  std::string found() {
    int c = peek();
    if (c < 0) return "the end of the header";
    if (c >= 0x20 && c < 0x7F) return detail::cat("'", static_cast<char>(c), "'");
    char buf[16];
    std::snprintf(buf, sizeof buf, "byte 0x%02x", c);
    return buf;
  }

  std::string string(const std::string& what) {
    if (peek() != '"') fail(detail::cat("expected a string (", what, "), found ", found()));
    size_t start = pos_++;
    std::string out;
    for (;;) {
      size_t run = pos_;
      while (run < n_ && p_[run] != '"' && p_[run] != '\\' && p_[run] >= 0x20) ++run;
      out.append(reinterpret_cast<const char*>(p_ + pos_), run - pos_);
      pos_ = run;
      if (pos_ >= n_) fail(detail::cat("unterminated string (", what, ")"), start);
      uint8_t c = p_[pos_];
      if (c == '"') {
        ++pos_;
        return out;
      }
      if (c < 0x20) fail("control character in a string (JSON requires it escaped)");
      // A backslash escape.
      if (pos_ + 1 >= n_) fail("unterminated escape in a string");
      char e = static_cast<char>(p_[pos_ + 1]);
      switch (e) {
        case '"':
          out += '"';
          break;
        case '\\':
          out += '\\';
          break;
        case '/':
          out += '/';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u': {
          size_t esc = pos_;
          uint32_t cp = hex4(pos_ + 2);
          pos_ += 6;
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (pos_ + 1 >= n_ || p_[pos_] != '\\' || p_[pos_ + 1] != 'u')
              fail("\\u escape of a high surrogate not followed by a low surrogate", esc);
            uint32_t lo = hex4(pos_ + 2);
            if (lo < 0xDC00 || lo > 0xDFFF)
              fail("\\u escape of a high surrogate not followed by a low surrogate", esc);
            pos_ += 6;
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
            fail("\\u escape of a lone low surrogate", esc);
          }
          append_utf8(out, cp);
          continue;
        }
        default:
          fail("invalid escape in a string");
      }
      pos_ += 2;
    }
  }

  // An integer: JSON number syntax without fraction or exponent, within int64.
  int64_t integer(const std::string& what) {
    skip_ws();
    size_t start = pos_;
    bool negative = pos_ < n_ && p_[pos_] == '-';
    if (negative) ++pos_;
    if (pos_ >= n_ || !is_digit(p_[pos_])) {
      pos_ = start;
      fail(detail::cat("expected an integer (", what, "), found ", found()));
    }
    if (p_[pos_] == '0' && pos_ + 1 < n_ && is_digit(p_[pos_ + 1]))
      fail(detail::cat("number with a leading zero (", what, ")"), start);
    const uint64_t limit = negative ? uint64_t{1} << 63 : (uint64_t{1} << 63) - 1;
    uint64_t v = 0;
    while (pos_ < n_ && is_digit(p_[pos_])) {
      uint64_t d = p_[pos_] - '0';
      if (v > (limit - d) / 10)
        fail(detail::cat("integer out of the int64 range (", what, ")"), start);
      v = v * 10 + d;
      ++pos_;
    }
    if (pos_ < n_ && (p_[pos_] == '.' || p_[pos_] == 'e' || p_[pos_] == 'E'))
      fail(detail::cat("expected an integer (", what,
                       "), found a number with a fraction or exponent"),
           start);
    if (!negative) return static_cast<int64_t>(v);
    return v == (uint64_t{1} << 63) ? std::numeric_limits<int64_t>::min()
                                    : -static_cast<int64_t>(v);
  }

  // A JSON array of integers, at most max_len of them (more: fail with too_long).
  template <class E>
  std::vector<int64_t> integers(const std::string& what, size_t max_len,
                                const std::string& too_long) {
    expect('[', detail::cat("to open ", what));
    std::vector<int64_t> out;
    if (consume(']')) return out;
    for (;;) {
      if (out.size() == max_len) fail<E>(too_long, pos_);
      out.push_back(integer(detail::cat("an element of ", what)));
      if (consume(']')) return out;
      expect(',', detail::cat("or ']' in ", what));
    }
  }

 private:
  static bool is_digit(uint8_t c) { return c >= '0' && c <= '9'; }
  uint32_t hex4(size_t at) const {
    if (n_ < 4 || at > n_ - 4) fail("truncated \\u escape", at);
    uint32_t v = 0;
    for (size_t i = at; i < at + 4; ++i) {
      uint8_t c = p_[i];
      uint32_t d;
      if (c >= '0' && c <= '9') {
        d = c - '0';
      } else if (c >= 'a' && c <= 'f') {
        d = c - 'a' + 10;
      } else if (c >= 'A' && c <= 'F') {
        d = c - 'A' + 10;
      } else {
        fail("invalid hex digit in a \\u escape", i);
      }
      v = v * 16 + d;
    }
    return v;
  }

  const uint8_t* p_;
  size_t n_;
  size_t pos_ = 0;
  const std::string& where_;
};

// Parses and validates the header of a file whose data section has data_size bytes.
Header parse_header(const uint8_t* p, size_t n, uint64_t data_size, const std::string& where) {
  JsonReader r(p, n, where);
  if (size_t bad = utf8_error_at(p, n); bad < n) r.fail("the header is not valid UTF-8", bad);

  Header h;
  bool have_metadata = false;
  r.expect('{', "at the start of the header (a JSON object)");
  if (!r.consume('}')) {
    for (;;) {
      r.skip_ws();
      size_t at = r.pos();
      std::string name = r.string("a tensor name or \"__metadata__\"");
      r.expect(':', detail::cat("after the key ", quoted(name)));
      if (name == kMetadataKey) {
        if (have_metadata) r.fail("duplicate \"__metadata__\"", at);
        have_metadata = true;
        r.expect('{', "to open \"__metadata__\" (an object of strings)");
        if (!r.consume('}')) {
          for (;;) {
            r.skip_ws();
            size_t key_at = r.pos();
            std::string key = r.string("a metadata key");
            r.expect(':', detail::cat("after the metadata key ", quoted(key)));
            std::string value = r.string(detail::cat("the value of metadata key ", quoted(key)));
            if (h.metadata.contains(key))
              r.fail(detail::cat("duplicate metadata key ", quoted(key)), key_at);
            h.metadata.emplace(std::move(key), std::move(value));
            if (r.consume('}')) break;
            r.expect(',', "or '}' in \"__metadata__\"");
          }
        }
      } else {
        Entry e;
        e.name = std::move(name);
        e.at = at;
        const std::string tn = detail::cat("tensor ", quoted(e.name));
        r.expect('{', detail::cat("to open the entry of ", tn));
        bool have_dtype = false, have_shape = false, have_offsets = false;
        std::string dtype;
        std::vector<int64_t> offsets;
        if (!r.consume('}')) {
          for (;;) {
            r.skip_ws();
            size_t field_at = r.pos();
            std::string field = r.string(detail::cat("a field name of ", tn));
            r.expect(':', detail::cat("after the field ", quoted(field), " of ", tn));
            bool* seen = nullptr;
            if (field == "dtype") {
              seen = &have_dtype;
              dtype = r.string(detail::cat("the dtype of ", tn));
            } else if (field == "shape") {
              seen = &have_shape;
              e.shape =
                  r.integers<ShapeError>(detail::cat("the shape of ", tn), kMaxDims,
                                         detail::cat(tn, ": more than ", kMaxDims, " dimensions"));
            } else if (field == "data_offsets") {
              seen = &have_offsets;
              offsets = r.integers<RuntimeError>(
                  detail::cat("the data_offsets of ", tn), 2,
                  detail::cat(tn, ": data_offsets must be [begin, end], got more than 2 numbers"));
            } else {
              r.fail(detail::cat(tn, ": unknown field ", quoted(field),
                                 " (expected \"dtype\", \"shape\" and \"data_offsets\")"),
                     field_at);
            }
            if (*seen) r.fail(detail::cat(tn, ": duplicate field ", quoted(field)), field_at);
            *seen = true;
            if (r.consume('}')) break;
            r.expect(',', detail::cat("or '}' in the entry of ", tn));
          }
        }
        if (!have_dtype || !have_shape || !have_offsets)
          r.fail(detail::cat(tn, ": the entry lacks \"",
                             !have_dtype   ? "dtype"
                             : !have_shape ? "shape"
                                           : "data_offsets",
                             "\""),
                 at);

        // The entry's meaning.
        e.dtype = find_file_dtype(dtype);
        if (e.dtype == nullptr && is_unsupported_dtype(dtype))
          r.fail<DTypeError>(detail::cat(tn, ": dtype ", dtype,
                                         " is not supported by vkml (it reads BOOL, U8, I8, I16, "
                                         "U16, I32, U32, I64, F16, BF16, F32, F64)"),
                             at);
        if (e.dtype == nullptr)
          r.fail<DTypeError>(detail::cat(tn, ": unknown dtype ", quoted(dtype)), at);
        int64_t numel = 1;
        for (int64_t d : e.shape) {
          if (d < 0)
            r.fail<ShapeError>(
                detail::cat(tn, ": negative dimension ", d, " in shape ", shape_str(e.shape)), at);
          if (__builtin_mul_overflow(numel, d, &numel))
            r.fail<ShapeError>(detail::cat(tn, ": shape ", shape_str(e.shape),
                                           " has more elements than int64 holds"),
                               at);
        }
        if (offsets.size() != 2 || offsets[0] < 0 || offsets[1] < offsets[0])
          r.fail(detail::cat(tn, ": data_offsets must be [begin, end] with 0 <= begin <= end, got ",
                             shape_str(offsets)),
                 at);
        e.begin = static_cast<uint64_t>(offsets[0]);
        e.end = static_cast<uint64_t>(offsets[1]);
        int64_t nbytes = 0;
        if (__builtin_mul_overflow(numel, static_cast<int64_t>(e.dtype->size), &nbytes) ||
            static_cast<uint64_t>(nbytes) != e.end - e.begin)
          r.fail(detail::cat(tn, ": shape ", shape_str(e.shape), " and dtype ", dtype, " need ",
                             numel, " * ", e.dtype->size, " bytes, but data_offsets ",
                             shape_str(offsets), " span ", e.end - e.begin),
                 at);
        if (e.end > data_size)
          r.fail(detail::cat(tn, ": data_offsets ", shape_str(offsets),
                             " reach past the end of the data section (", data_size, " bytes)"),
                 at);
        h.entries.push_back(std::move(e));
      }
      if (r.consume('}')) break;
      r.expect(',', "or '}' after a header entry");
    }
  }
  if (!r.at_end()) r.fail(detail::cat("unexpected ", r.found(), " after the header's JSON object"));

  // Names are unique.
  const auto& es = h.entries;
  std::vector<size_t> order(es.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return es[a].name != es[b].name ? es[a].name < es[b].name : a < b;
  });
  for (size_t i = 1; i < order.size(); ++i)
    if (es[order[i]].name == es[order[i - 1]].name)
      r.fail(detail::cat("duplicate tensor name ", quoted(es[order[i]].name)), es[order[i]].at);

  // The tensors tile the data section exactly: no overlap, no hole, nothing after the last.
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return es[a].begin != es[b].begin ? es[a].begin < es[b].begin : es[a].end < es[b].end;
  });
  uint64_t covered = 0;
  const Entry* prev = nullptr;
  for (size_t i : order) {
    const Entry& e = es[i];
    if (e.begin < covered)
      r.fail(detail::cat("tensor ", quoted(e.name), " at data bytes [", e.begin, ", ", e.end,
                         ") overlaps tensor ", quoted(prev->name), " at [", prev->begin, ", ",
                         prev->end, ")"),
             e.at);
    if (e.begin > covered)
      r.fail(detail::cat("data bytes [", covered, ", ", e.begin,
                         ") belong to no tensor (a hole before tensor ", quoted(e.name), ")"),
             e.at);
    covered = e.end;
    prev = &e;
  }
  if (covered != data_size)
    r.fail(detail::cat("the data section has ", data_size,
                       " bytes but the tensors cover only the first ", covered),
           n);
  return h;
}

// ---------------------------------------------------------------------------------------------
// Data: every tensor is read (with `read(offset in the data section, bytes, destination)`) into a
// fresh contiguous vkml tensor, widened when its file dtype is not a vkml dtype.

template <class From, class To, class F>
void widen(const uint8_t* src, void* dst, size_t n, F f) {
  auto* out = static_cast<To*>(dst);
  for (size_t i = 0; i < n; ++i) {
    From v;
    std::memcpy(&v, src + i * sizeof(From), sizeof(From));
    out[i] = f(v);
  }
}

using ReadFn = std::function<void(uint64_t offset, size_t nbytes, void* dst)>;

NamedTensors materialize(const Header& h, const ReadFn& read) {
  NamedTensors out;
  out.reserve(h.entries.size());
  std::vector<uint8_t> buf;
  for (const Entry& e : h.entries) {
    Tensor t = Tensor::empty(e.shape, e.dtype->loaded);
    const size_t nbytes = static_cast<size_t>(e.end - e.begin);
    const size_t n = nbytes / e.dtype->size;
    void* dst = t.raw_data();
    std::string_view d = e.dtype->name;
    if (e.dtype->size == dtype_size(e.dtype->loaded)) {
      if (nbytes > 0) read(e.begin, nbytes, dst);
      if (d == "BOOL") {  // any non-zero byte is true; a bool must hold 0 or 1
        auto* b = static_cast<uint8_t*>(dst);
        for (size_t i = 0; i < n; ++i) b[i] = b[i] != 0;
      }
    } else {
      buf.resize(nbytes);
      if (nbytes > 0) read(e.begin, nbytes, buf.data());
      const uint8_t* s = buf.data();
      if (d == "U16") {
        widen<uint16_t, int32_t>(s, dst, n, [](uint16_t v) { return static_cast<int32_t>(v); });
      } else if (d == "U32") {
        widen<uint32_t, int64_t>(s, dst, n, [](uint32_t v) { return static_cast<int64_t>(v); });
      } else {
        throw RuntimeError(detail::cat("safetensors: no conversion for dtype ", d));  // unreachable
      }
    }
    out.emplace_back(e.name, std::move(t));
  }
  return out;
}

uint64_t read_le64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

// Checks the 8-byte prefix of a file of `size` bytes; returns the header length.
uint64_t check_prefix(const uint8_t* prefix, uint64_t size, const std::string& where) {
  VK_CHECK(size >= 8, RuntimeError, where, ": the file has ", size,
           " bytes, fewer than the 8 of the header length");
  uint64_t n = read_le64(prefix);
  VK_CHECK(n <= kMaxHeaderBytes, RuntimeError, where, ": header length ", n,
           " (at byte 0) is over the limit of ", kMaxHeaderBytes, " bytes");
  VK_CHECK(n <= size - 8, RuntimeError, where, ": header length ", n,
           " (at byte 0) runs past the end of the file (", size, " bytes)");
  return n;
}

// ---------------------------------------------------------------------------------------------
// Writing.

void json_string(std::string& out, std::string_view s) {  // escaped as serde_json does
  static constexpr char kHex[] = "0123456789abcdef";
  out += '"';
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20) {
          out += "\\u00";
          out += kHex[c >> 4];
          out += kHex[c & 0xF];
        } else {
          out += ch;
        }
    }
  }
  out += '"';
}

}  // namespace

struct PendingSave::Impl {
  explicit Impl(const std::string& path) : file(path) {}
  internal::AtomicFile file;
};

PendingSave::PendingSave(const std::string& path, const NamedTensors& tensors,
                         const std::map<std::string, std::string>& metadata) {
  NoGradGuard no_grad;
  auto check_text = [&](std::string_view s, const std::string& what) {
    VK_CHECK(utf8_error_at(reinterpret_cast<const uint8_t*>(s.data()), s.size()) == s.size(),
             RuntimeError, "save_safetensors(", quoted(path), "): ", what,
             " is not valid UTF-8 (as the format requires)");
  };

  std::string header = "{";
  if (!metadata.empty()) {
    json_string(header, kMetadataKey);
    header += ":{";
    bool first = true;
    for (const auto& [k, v] : metadata) {
      check_text(k, detail::cat("metadata key ", quoted(k)));
      check_text(v, detail::cat("the value of metadata key ", quoted(k)));
      if (!first) header += ',';
      first = false;
      json_string(header, k);
      header += ':';
      json_string(header, v);
    }
    header += '}';
  }

  std::set<std::string_view> names;
  std::vector<Tensor> data;
  data.reserve(tensors.size());
  uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    VK_CHECK(t.defined(), RuntimeError, "save_safetensors(", quoted(path), "): tensor ",
             quoted(name), " is undefined");
    VK_CHECK(name != kMetadataKey, RuntimeError, "save_safetensors(", quoted(path),
             "): \"__metadata__\" cannot name a tensor");
    check_text(name, detail::cat("tensor name ", quoted(name)));
    VK_CHECK(names.insert(name).second, RuntimeError, "save_safetensors(", quoted(path),
             "): duplicate tensor name ", quoted(name));
    // A tensor on another device is read back first (as torch's save does), so that a model
    // training on the GPU checkpoints as it does on the CPU.
    Tensor c = contiguous(to_cpu(t.detach()));
    uint64_t nbytes = static_cast<uint64_t>(c.numel()) * dtype_size(c.dtype());
    if (header.size() > 1) header += ',';
    json_string(header, name);
    header += ":{\"dtype\":\"";
    header += file_dtype_name(c.dtype());
    header += "\",\"shape\":[";
    for (size_t i = 0; i < c.shape().size(); ++i) {
      if (i > 0) header += ',';
      header += std::to_string(c.shape()[i]);
    }
    header += "],\"data_offsets\":[";
    header += std::to_string(offset);
    header += ',';
    header += std::to_string(offset + nbytes);
    header += "]}";
    offset += nbytes;
    data.push_back(std::move(c));
  }
  header += '}';
  header.append((8 - header.size() % 8) % 8, ' ');

  impl_ = std::make_unique<Impl>(path);
  internal::AtomicFile& file = impl_->file;
  uint8_t prefix[8];
  uint64_t n = header.size();
  std::memcpy(prefix, &n, 8);
  file.write(prefix, 8);
  file.write(header.data(), header.size());
  for (const Tensor& c : data)
    file.write(c.raw_data(), static_cast<size_t>(c.numel()) * dtype_size(c.dtype()));
  file.sync();
}

PendingSave::PendingSave(PendingSave&&) noexcept = default;
PendingSave& PendingSave::operator=(PendingSave&&) noexcept = default;
PendingSave::~PendingSave() = default;

void PendingSave::commit() {
  VK_CHECK(impl_ != nullptr, RuntimeError, "PendingSave::commit: the save was moved from");
  impl_->file.commit();
}

bool PendingSave::committed() const { return impl_ != nullptr && impl_->file.committed(); }

void PendingSave::discard() {
  if (impl_ != nullptr) impl_->file.discard();
}

void save_safetensors(const std::string& path, const NamedTensors& tensors,
                      const std::map<std::string, std::string>& metadata) {
  PendingSave(path, tensors, metadata).commit();
}

NamedTensors parse_safetensors(const uint8_t* data, size_t size,
                               std::map<std::string, std::string>* metadata,
                               const std::string& source) {
  const std::string where = detail::cat("parse_safetensors(", source, ")");
  uint64_t n = check_prefix(data, size, where);
  const uint8_t* data_section = data + 8 + n;
  Header h = parse_header(data + 8, static_cast<size_t>(n), size - 8 - n, where);
  NamedTensors out = materialize(h, [&](uint64_t off, size_t nbytes, void* dst) {
    std::memcpy(dst, data_section + off, nbytes);
  });
  if (metadata != nullptr) *metadata = std::move(h.metadata);
  return out;
}

NamedTensors load_safetensors(const std::string& path,
                              std::map<std::string, std::string>* metadata) {
  const std::string where = detail::cat("load_safetensors(", quoted(path), ")");
  // The C API would read the path only up to a NUL byte, another file.
  VK_CHECK(path.find('\0') == std::string::npos, RuntimeError, where,
           ": the path contains a NUL byte");
  // O_NONBLOCK: opening a FIFO (or a device) must not wait for a writer; the file type is
  // checked right after, and for a regular file the flag changes nothing.
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    throw RuntimeError(detail::cat(where, ": cannot open the file: ", errno_text(err)));
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    throw RuntimeError(detail::cat(where, ": cannot stat the file: ", errno_text(err)));
  }
  VK_CHECK(S_ISREG(st.st_mode), RuntimeError, where, ": it is ", internal::file_kind(st.st_mode),
           ", not a regular file");
  const auto size = static_cast<uint64_t>(st.st_size);

  // Reads exactly nbytes at file offset `at`.
  auto read_at = [&](uint64_t at, size_t nbytes, void* dst) {
    auto* p = static_cast<char*>(dst);
    while (nbytes > 0) {
      ssize_t got = ::pread(fd, p, std::min(nbytes, size_t{1} << 30), static_cast<off_t>(at));
      if (got < 0) {
        if (errno == EINTR) continue;
        int err = errno;
        throw RuntimeError(detail::cat(where, ": read at byte ", at, " failed: ", errno_text(err)));
      }
      VK_CHECK(got > 0, RuntimeError, where, ": the file ended at byte ", at,
               " (did it shrink while being read?)");
      p += got;
      at += static_cast<uint64_t>(got);
      nbytes -= static_cast<size_t>(got);
    }
  };

  uint8_t prefix[8] = {};
  if (size >= 8) read_at(0, 8, prefix);
  uint64_t n = check_prefix(prefix, size, where);
  std::vector<uint8_t> header(static_cast<size_t>(n));
  read_at(8, header.size(), header.data());
  Header h = parse_header(header.data(), header.size(), size - 8 - n, where);
  header = {};
  NamedTensors out = materialize(
      h, [&](uint64_t off, size_t nbytes, void* dst) { read_at(8 + n + off, nbytes, dst); });
  if (metadata != nullptr) *metadata = std::move(h.metadata);
  return out;
}

}  // namespace vk::io
