// The atomic file replacement under save_safetensors. See atomic_file.h for the rules.
#include "vkml/io/atomic_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <limits>
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "vkml/core/error.h"
#include "vkml/io/safetensors.h"

namespace vk::io {
namespace {

std::atomic<size_t> g_fail_budget{std::numeric_limits<size_t>::max()};  // testing hook

constexpr int kMaxSymlinks = 40;  // Linux's limit for one path lookup (ELOOP beyond)
constexpr size_t kMaxBaseInTempName = 100;

// "dir/" (with its slash) and "name" of a path; prefix "" when there is no slash.
std::pair<std::string, std::string> split_path(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return {"", path};
  return {path.substr(0, slash + 1), path.substr(slash + 1)};
}

// `path` with the symlinks of its last component followed, as open() follows them: a relative
// link is relative to the directory holding it; a dangling link names the file to create.
// Iterative, and bounded as the kernel bounds it.
std::string follow_symlinks(const std::string& path) {
  std::string p = path;
  for (int hops = 0;; ++hops) {
    struct stat st;
    if (::lstat(p.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return p;
    VK_CHECK(hops < kMaxSymlinks, RuntimeError, "save_safetensors: cannot write ",
             internal::quoted(path), ": too many levels of symbolic links");
    std::vector<char> buf(static_cast<size_t>(std::max<off_t>(st.st_size, PATH_MAX)) + 1);
    ssize_t n = ::readlink(p.c_str(), buf.data(), buf.size());
    if (n < 0) {
      int err = errno;
      throw RuntimeError(detail::cat("save_safetensors: cannot write ", internal::quoted(path),
                                     ": reading the symbolic link ", internal::quoted(p),
                                     " failed: ", internal::errno_text(err)));
    }
    // A link that grew between lstat and readlink fills the buffer: read it again.
    if (static_cast<size_t>(n) == buf.size()) continue;
    std::string link(buf.data(), static_cast<size_t>(n));
    p = link.starts_with('/') ? link : split_path(p).first + link;
  }
}

bool pid_alive(pid_t pid) { return ::kill(pid, 0) == 0 || errno != ESRCH; }

// The pid of a temp file name "<stem><pid>.<n>", or -1 when `name` is not one.
pid_t temp_file_pid(std::string_view name, std::string_view stem) {
  if (!name.starts_with(stem)) return -1;
  name.remove_prefix(stem.size());
  size_t dot = name.find('.');
  if (dot == 0 || dot == std::string_view::npos || dot > 9 || dot + 1 == name.size()) return -1;
  auto digits = [](std::string_view s) {
    return std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  if (!digits(name.substr(0, dot)) || !digits(name.substr(dot + 1))) return -1;
  return static_cast<pid_t>(std::stol(std::string(name.substr(0, dot))));
}

// Removes the temp files named "<stem><pid>.<n>" in `dir` that a save killed before its rename
// left behind. Best effort: a file is left alone unless it is certainly abandoned (its pid is not
// a live process, and no one holds its flock: a pid of another pid namespace sharing the
// directory may look dead here).
void remove_stale_temps(const std::string& dir, const std::string& stem) {
  std::unique_ptr<DIR, int (*)(DIR*)> d(::opendir(dir.c_str()), ::closedir);
  if (!d) return;
  const std::string prefix = dir == "." ? "" : dir;
  while (const dirent* e = ::readdir(d.get())) {
    pid_t pid = temp_file_pid(e->d_name, stem);
    if (pid <= 0 || pid == ::getpid() || pid_alive(pid)) continue;
    const std::string file = prefix + e->d_name;
    int fd = ::open(file.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) continue;
    struct stat held, now;
    bool stale = ::fstat(fd, &held) == 0 && S_ISREG(held.st_mode) &&
                 (::flock(fd, LOCK_EX | LOCK_NB) == 0 || errno != EWOULDBLOCK) &&
                 ::lstat(file.c_str(), &now) == 0 && now.st_ino == held.st_ino &&
                 now.st_dev == held.st_dev;
    if (stale) ::unlink(file.c_str());
    ::close(fd);
  }
}

}  // namespace

namespace testing {
void fail_after_bytes(size_t n) { g_fail_budget = n; }
}  // namespace testing

namespace internal {

std::string file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

AtomicFile::AtomicFile(const std::string& path) : path_(path) {
  VK_CHECK(path.find('\0') == std::string::npos, RuntimeError, "save_safetensors: the path ",
           quoted(path), " contains a NUL byte");
  target_ = follow_symlinks(path);
  auto [prefix, base] = split_path(target_);
  VK_CHECK(!base.empty() && base != "." && base != "..", RuntimeError,
           "save_safetensors: ", quoted(path), " does not name a file");
  dir_ = prefix.empty() ? "." : prefix;

  struct stat st;
  bool exists = ::stat(target_.c_str(), &st) == 0;
  if (exists) {
    VK_CHECK(S_ISREG(st.st_mode), RuntimeError, "save_safetensors: cannot write ", quoted(path),
             ": it is ", file_kind(st.st_mode), ", not a regular file");
    // open(path, "w") would refuse a file the process may not write; so does the rename.
    if (::faccessat(AT_FDCWD, target_.c_str(), W_OK, AT_EACCESS) != 0) {
      int err = errno;
      throw RuntimeError(detail::cat("save_safetensors: cannot write ", quoted(path), ": ",
                                     errno_text(err), " (the file is not writable)"));
    }
  }
  remove_stale_temps(dir_, detail::cat(".", base.substr(0, kMaxBaseInTempName), ".tmp."));
  create_temp(prefix, base);
  if (exists) {
    try {
      copy_owner_and_mode(st);
    } catch (...) {
      discard();  // the destructor of a half-constructed object does not run
      throw;
    }
  }
}

void AtomicFile::create_temp(const std::string& prefix, const std::string& base) {
  static std::atomic<uint64_t> counter{0};
  for (int attempt = 0;; ++attempt) {
    tmp_ = detail::cat(prefix, ".", base.substr(0, kMaxBaseInTempName), ".tmp.", ::getpid(), ".",
                       counter.fetch_add(1));
    fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd_ >= 0) break;
    if (errno != EEXIST || attempt == 100) {
      int err = errno;
      throw RuntimeError(detail::cat("save_safetensors: cannot write ", quoted(path_),
                                     ": creating the temp file ", quoted(tmp_),
                                     " failed: ", errno_text(err)));
    }
  }
  // Held until the rename, so that no other save takes this file for a stale one. A file system
  // without flock (an error other than EWOULDBLOCK for both sides) leaves the pid check alone.
  (void)::flock(fd_, LOCK_EX | LOCK_NB);
}

// As open() on the existing file would keep them. Changing the owner needs privileges and
// changing the group membership of it: where the process lacks them, the new file keeps the
// process's own, as any newly created file does.
void AtomicFile::copy_owner_and_mode(const struct stat& target) {
  if (target.st_gid != ::getegid() && ::fchown(fd_, static_cast<uid_t>(-1), target.st_gid) != 0) {
    // not a member of the group: the group stays ours
  }
  if (target.st_uid != ::geteuid() && ::fchown(fd_, target.st_uid, static_cast<gid_t>(-1)) != 0) {
    // not privileged: the owner stays us
  }
  if (::fchmod(fd_, target.st_mode & 0777) != 0) fail("setting the permissions", errno);
}

AtomicFile::~AtomicFile() { discard(); }

void AtomicFile::discard() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (!renamed_ && !removed_) ::unlink(tmp_.c_str());
  removed_ = true;
}

void AtomicFile::write(const void* data, size_t n) {
  auto* p = static_cast<const char*>(data);
  while (n > 0) {
    size_t chunk = std::min(n, size_t{1} << 30);
    size_t budget = g_fail_budget.load();
    if (budget != std::numeric_limits<size_t>::max()) {
      if (budget == 0) fail("write", ENOSPC);
      chunk = std::min(chunk, budget);
    }
    ssize_t w = ::write(fd_, p, chunk);
    if (w < 0) {
      if (errno == EINTR) continue;
      fail("write", errno);
    }
    if (budget != std::numeric_limits<size_t>::max()) g_fail_budget -= static_cast<size_t>(w);
    p += w;
    n -= static_cast<size_t>(w);
  }
}

void AtomicFile::sync() {
  VK_CHECK(fd_ >= 0, RuntimeError, "save_safetensors: ", quoted(path_),
           renamed_ ? ": the save is already committed" : ": the save was discarded");
  if (!synced_ && ::fsync(fd_) != 0) fail("fsync", errno);
  synced_ = true;
}

void AtomicFile::commit() {
  sync();
  if (::rename(tmp_.c_str(), target_.c_str()) != 0) fail("rename", errno);
  renamed_ = true;
  // Closed after the rename: the flock guards the temp name until it is gone. The data is
  // already on disk (fsync), so close has nothing left to report on a local file system.
  int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0 && errno != EINTR) fail("close", errno);
  // Make the rename itself durable. Some file systems cannot fsync a directory (EINVAL).
  int dfd = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) fail("open the directory", errno);
  int rc = ::fsync(dfd);
  int err = errno;
  ::close(dfd);
  if (rc != 0 && err != EINVAL) fail("fsync the directory", err);
}

void AtomicFile::fail(const char* step, int err) const {
  throw RuntimeError(detail::cat("save_safetensors: cannot write ", quoted(path_), ": ", step,
                                 renamed_ ? " (after the new file replaced the old one)"
                                          : detail::cat(" of the temp file ", quoted(tmp_)),
                                 " failed: ", errno_text(err),
                                 renamed_ ? "" : "; the previous file, if any, is unchanged"));
}

}  // namespace internal
}  // namespace vk::io
