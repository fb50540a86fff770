// safetensors save/load (https://github.com/huggingface/safetensors, "Format").
//
// File layout: an 8-byte little-endian unsigned header length N, then N bytes of UTF-8 JSON,
//   {"__metadata__": {str: str}, name: {"dtype": "F32", "shape": [2, 3], "data_offsets": [b, e]}}
// then the data section: every tensor's raw little-endian bytes, row-major, at [b, e) relative to
// the start of the data section.
//
// Writing (save_safetensors):
//   - the header is compact JSON (no spaces), "__metadata__" first (omitted when `metadata` is
//     empty), then the tensors in the order given, their data laid out back to back in that same
//     order; the header is padded with spaces so that N is a multiple of 8 (so the data section
//     starts 8-byte aligned), as the reference writer does. Strings are escaped as serde_json
//     escapes them, so for the same order the bytes equal the reference writer's;
//   - dtypes: bool -> BOOL, int32 -> I32, int64 -> I64, float32 -> F32, float64 -> F64;
//   - atomic: the bytes go to a fresh temp file in the target's directory
//     (".<name>.tmp.<pid>.<n>"), which is fsynced, renamed over the target, and the directory is
//     fsynced. On any failure the temp file is removed and vk::RuntimeError is thrown naming the
//     path and the system's reason; an existing file at `path` is left untouched.
//   - the target is what open(path, "w") would write: a symlink is followed (the file it points
//     to is replaced, the link stays); an existing file keeps its permission bits (and owner and
//     group where the process may set them), a new one gets 0666 & ~umask; a directory, FIFO,
//     device or socket, a read-only file, or a path with a NUL byte is refused (RuntimeError)
//     before anything is written. Temp files of the same target left by a killed save (their pid
//     dead, their flock free) are removed. Details: atomic_file.h.
//   - names must be unique, valid UTF-8 and not "__metadata__" (RuntimeError otherwise).
//
// Reading (load_safetensors / parse_safetensors) validates the whole header before it allocates
// anything for tensor data, and memory stays proportional to the input's size whatever the header
// claims. The JSON parser is strict (RFC 8259, integers only, nesting no deeper than the format
// needs, no duplicate keys, only spaces/tabs/newlines around values). Errors:
//   - vk::RuntimeError: the file cannot be read; shorter than 8 bytes; header length over 100 MB
//     (the reference limit) or beyond the end of the file; header not UTF-8 or not JSON; a value
//     of the wrong JSON type; a missing or unknown field in a tensor entry; duplicate names;
//     data_offsets not [begin, end] with begin <= end, past the data section, or not matching
//     shape and dtype; tensors that overlap or leave holes (the data section must be covered
//     exactly). Messages name the file, the tensor and the header byte or data offset.
//   - vk::ShapeError: a negative dimension, more than 1024 dimensions, an element count that
//     overflows int64.
//   - vk::DTypeError: an unknown dtype string ("F17"), or a dtype vkml cannot hold (U64, the F8
//     types, ...).
// Dtypes read: BOOL, U8, I8, I16, I32, I64, F16, BF16, F32, F64 as themselves; U16 widens to
// int32 and U32 to int64 (exact). BOOL bytes other than 0 read as true.
// Loaded tensors are contiguous leaves that do not require grad, in header order.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "vkml/core/tensor.h"

namespace vk::io {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

void save_safetensors(const std::string& path, const NamedTensors& tensors,
                      const std::map<std::string, std::string>& metadata = {});

// save_safetensors in two steps, so that a caller can still abandon a save whose data is written
// (vk.save does so when Ctrl-C arrives during the write): the constructor writes and fsyncs the
// temp file (the errors of save_safetensors), commit() renames it over the target. Destroyed or
// discard()ed before commit(), the temp file is removed and the target is untouched.
class PendingSave {
 public:
  PendingSave(const std::string& path, const NamedTensors& tensors,
              const std::map<std::string, std::string>& metadata = {});
  PendingSave(PendingSave&&) noexcept;
  PendingSave& operator=(PendingSave&&) noexcept;
  ~PendingSave();

  void commit();
  bool committed() const;
  void discard();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Reads a whole file. When `metadata` is given it receives "__metadata__" (cleared first).
// A path that is not a regular file (a directory, FIFO, device) is refused at once, without
// reading or blocking.
NamedTensors load_safetensors(const std::string& path,
                              std::map<std::string, std::string>* metadata = nullptr);

// The same from bytes in memory; `source` names them in error messages.
NamedTensors parse_safetensors(const uint8_t* data, size_t size,
                               std::map<std::string, std::string>* metadata = nullptr,
                               const std::string& source = "<memory>");

namespace testing {
// Test hook: the next saves fail with ENOSPC ("No space left on device") once `n` bytes in all
// have been written to their temp files; SIZE_MAX (the default) turns it off. Not thread-safe
// with respect to concurrent saves; for tests only.
void fail_after_bytes(size_t n);
}  // namespace testing

}  // namespace vk::io
