// Internal to vk::io: the atomic file replacement under save_safetensors, and the text helpers
// that its messages share with the reader. Not part of the public API.
//
// An AtomicFile writes a fresh temp file beside its target, ".<name>.tmp.<pid>.<n>", and renames
// it over the target on commit(). What the target is, is decided as open(path, "w") would:
//   - a symlink (the last component, followed up to 40 times) is written through: the temp file
//     goes into the directory of the file it points to, which is replaced; the link stays;
//   - an existing target keeps its permission bits (and, where the process may set them, its
//     owner and group); a new file gets 0666 & ~umask;
//   - a target that is a directory, FIFO, device or socket, or a read-only file, is refused
//     before anything is written.
// Temp files that a killed save left beside the same target (".<name>.tmp.<pid>.<n>" with the
// same first 100 bytes of <name>) are removed first, when their pid is not a live process and
// no one holds the flock that every save keeps on its temp file until the rename.
#pragma once
#include <sys/stat.h>
#include <sys/types.h>

#include <cstddef>
#include <string>
#include <string_view>

namespace vk::io::internal {

// A name for a message: quoted, control characters and bytes that are not UTF-8 escaped (\xNN),
// long names cut.
std::string quoted(std::string_view s);
std::string errno_text(int err);
std::string file_kind(mode_t mode);  // "a directory", "a FIFO", ... for messages

class AtomicFile {
 public:
  // Resolves and checks the target, removes stale temp files, creates the temp file (RuntimeError
  // naming the path and the system's reason on failure).
  explicit AtomicFile(const std::string& path);
  // Without commit(), removes the temp file: the target is untouched.
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(const void* data, size_t n);
  // fsyncs the temp file (once: commit() does it too when it has not been done).
  void sync();
  // Renames the temp file over the target and fsyncs the directory.
  void commit();
  bool committed() const { return renamed_; }
  // Removes the temp file now (a no-op after commit()).
  void discard();

 private:
  [[noreturn]] void fail(const char* step, int err) const;
  void create_temp(const std::string& prefix, const std::string& base);
  void copy_owner_and_mode(const struct stat& target);

  std::string path_;    // as given, for messages
  std::string target_;  // the file that is replaced (path_ with its symlinks followed)
  std::string dir_, tmp_;
  int fd_ = -1;
  bool synced_ = false, renamed_ = false, removed_ = false;
};

}  // namespace vk::io::internal
