// save_safetensors / load_safetensors against the file system (GitHub issue 12, items 6, 9, 10):
// paths with a NUL byte, FIFOs and devices, symlinks, permission bits, stale temp files of killed
// saves, and the two-step PendingSave.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <iterator>
#include <thread>

#include "test_util.h"
#include "vkml/io/safetensors.h"

namespace vk::test {
namespace {

namespace fs = std::filesystem;
using io::NamedTensors;

class AtomicSave : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "vkml_as_XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::vector<std::string> entries() const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(dir_)) out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
  }
  fs::path dir_;
};

std::string slurp(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

void spit(const std::string& p, const std::string& text) {
  std::ofstream f(p, std::ios::binary);
  f << text;
}

NamedTensors tensors(double v) { return {{"w", from_vector({v, v, v}, {3}, DType::Float32)}}; }

double first_value(const std::string& p) { return to_vector(io::load_safetensors(p)[0].second)[0]; }

mode_t mode_of(const std::string& p) {
  struct stat st;
  EXPECT_EQ(::stat(p.c_str(), &st), 0) << p;
  return st.st_mode & 0777;
}

// A pid that is certainly not running: a child that has exited and been reaped.
pid_t dead_pid() {
  pid_t pid = ::fork();
  if (pid == 0) ::_exit(0);
  ::waitpid(pid, nullptr, 0);
  return pid;
}

// ---------------------------------------------------------------------------------------------
// Item 6: a NUL byte in a path is refused, never cut.

TEST_F(AtomicSave, SaveNulByteInPathRaises) {
  std::string p = path("a");
  p += '\0';
  p += "b.safetensors";
  VK_EXPECT_ERROR(io::save_safetensors(p, tensors(1)), RuntimeError, "NUL byte", "\\x00");
  EXPECT_TRUE(entries().empty()) << "a file was written at the path cut at the NUL";
}

TEST_F(AtomicSave, LoadNulByteInPathRaises) {
  std::string p = path("m.safetensors");
  io::save_safetensors(p, tensors(1));
  std::string q = p;
  q += '\0';
  q += "x";
  VK_EXPECT_ERROR(io::load_safetensors(q), RuntimeError, "NUL byte");
}

// ---------------------------------------------------------------------------------------------
// Item 9: loading a FIFO, a device or a directory is an error at once, not a wait.

TEST_F(AtomicSave, LoadFifoDoesNotBlock) {
  std::string p = path("fifo");
  ASSERT_EQ(::mkfifo(p.c_str(), 0600), 0);
  auto result = std::async(std::launch::async, [&] {
    try {
      io::load_safetensors(p);
    } catch (const RuntimeError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  });
  if (result.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    ADD_FAILURE() << "load_safetensors blocked on a FIFO";
    int w = ::open(p.c_str(), O_WRONLY | O_NONBLOCK);  // let the reader through, so the test ends
    if (w >= 0) ::close(w);
  }
  std::string msg = result.get();
  EXPECT_NE(msg.find("a FIFO, not a regular file"), std::string::npos) << msg;
}

TEST_F(AtomicSave, LoadDeviceOrDirectoryRaises) {
  VK_EXPECT_ERROR(io::load_safetensors("/dev/zero"), RuntimeError, "/dev/zero",
                  "a character device, not a regular file");
  VK_EXPECT_ERROR(io::load_safetensors(dir_.string()), RuntimeError,
                  "a directory, not a regular file");
}

// ---------------------------------------------------------------------------------------------
// Item 10: what the save replaces, and what it leaves.

TEST_F(AtomicSave, SaveKeepsTheTargetsPermissionBits) {
  std::string p = path("private.safetensors");
  io::save_safetensors(p, tensors(1));
  ASSERT_EQ(::chmod(p.c_str(), 0600), 0);
  io::save_safetensors(p, tensors(2));
  EXPECT_EQ(mode_of(p), 0600u);
  ASSERT_EQ(::chmod(p.c_str(), 0640), 0);
  io::save_safetensors(p, tensors(3));
  EXPECT_EQ(mode_of(p), 0640u);
  EXPECT_EQ(first_value(p), 3.0);
  EXPECT_EQ(entries(), std::vector<std::string>{"private.safetensors"});
}

TEST_F(AtomicSave, SaveWritesThroughASymlink) {
  fs::create_directory(dir_ / "real");
  std::string target = path("real/model.safetensors");
  io::save_safetensors(target, tensors(1));
  ASSERT_EQ(::chmod(target.c_str(), 0600), 0);
  fs::create_symlink("real/model.safetensors", dir_ / "link");  // relative to the link's dir
  fs::create_symlink(dir_ / "link", dir_ / "link2");            // a chain, absolute
  io::save_safetensors(path("link2"), tensors(2));
  EXPECT_TRUE(fs::is_symlink(dir_ / "link"));
  EXPECT_TRUE(fs::is_symlink(dir_ / "link2"));
  EXPECT_EQ(first_value(target), 2.0);
  EXPECT_EQ(mode_of(target), 0600u);
  EXPECT_EQ(entries(), (std::vector<std::string>{"link", "link2", "real"}));
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_ / "real"), fs::directory_iterator()), 1)
      << "a temp file was left beside the target";
  // A dangling link: the file it names is created, as open(path, "w") would.
  fs::create_symlink("new.safetensors", dir_ / "dangling");
  io::save_safetensors(path("dangling"), tensors(3));
  EXPECT_TRUE(fs::is_symlink(dir_ / "dangling"));
  EXPECT_EQ(first_value(path("new.safetensors")), 3.0);
}

TEST_F(AtomicSave, SaveSymlinkLoopRaises) {
  fs::create_symlink("b", dir_ / "a");
  fs::create_symlink("a", dir_ / "b");
  VK_EXPECT_ERROR(io::save_safetensors(path("a"), tensors(1)), RuntimeError,
                  "too many levels of symbolic links");
  EXPECT_EQ(entries(), (std::vector<std::string>{"a", "b"}));
}

TEST_F(AtomicSave, SaveOverANonRegularFileRaises) {
  std::string fifo = path("fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  VK_EXPECT_ERROR(io::save_safetensors(fifo, tensors(1)), RuntimeError, "fifo",
                  "a FIFO, not a regular file");
  fs::create_directory(dir_ / "adir");
  VK_EXPECT_ERROR(io::save_safetensors(path("adir"), tensors(1)), RuntimeError, "adir",
                  "a directory, not a regular file");
  EXPECT_TRUE(fs::is_fifo(fifo));
  EXPECT_EQ(entries(), (std::vector<std::string>{"adir", "fifo"}));
}

TEST_F(AtomicSave, SaveOverAReadOnlyFileRaises) {
  if (::geteuid() == 0) GTEST_SKIP() << "root may write any file";
  std::string p = path("ro.safetensors");
  io::save_safetensors(p, tensors(1));
  ASSERT_EQ(::chmod(p.c_str(), 0444), 0);
  VK_EXPECT_ERROR(io::save_safetensors(p, tensors(2)), RuntimeError, "not writable");
  EXPECT_EQ(first_value(p), 1.0);
}

TEST_F(AtomicSave, SaveRemovesStaleTempFilesOfItsTarget) {
  const pid_t dead = dead_pid();
  const std::string stem = ".model.safetensors.tmp.";
  const std::string stale1 = detail::cat(stem, dead, ".0"), stale2 = detail::cat(stem, dead, ".17");
  const std::string live = stem + "1.0";  // pid 1 is always running
  const std::string locked = detail::cat(stem, dead, ".5");
  const std::string other = detail::cat(".other.safetensors.tmp.", dead, ".0");
  const std::string not_ours = detail::cat(stem, dead, ".x");  // not the shape of a temp name
  for (const auto& n : {stale1, stale2, live, locked, other, not_ours}) spit(path(n), "junk");
  // A save of another pid namespace holds its flock: its file must stay even if its pid looks
  // dead here.
  int fd = ::open(path(locked).c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::flock(fd, LOCK_EX | LOCK_NB), 0);

  io::save_safetensors(path("model.safetensors"), tensors(1));
  ::close(fd);
  std::vector<std::string> want = {live, locked, other, not_ours, "model.safetensors"};
  std::sort(want.begin(), want.end());
  EXPECT_EQ(entries(), want);
}

TEST_F(AtomicSave, PendingSaveCommitsOnlyWhenAsked) {
  std::string p = path("m.safetensors");
  io::save_safetensors(p, tensors(1));
  {
    io::PendingSave s(p, tensors(2));
    EXPECT_FALSE(s.committed());
    EXPECT_EQ(entries().size(), 2u) << "the written temp file is beside the target";
    EXPECT_EQ(first_value(p), 1.0);
  }  // destroyed uncommitted
  EXPECT_EQ(entries(), std::vector<std::string>{"m.safetensors"});
  EXPECT_EQ(first_value(p), 1.0);
  {
    io::PendingSave s(p, tensors(3));
    s.discard();
    EXPECT_EQ(entries(), std::vector<std::string>{"m.safetensors"});
    VK_EXPECT_ERROR(s.commit(), RuntimeError, "discarded");
  }
  io::PendingSave s(p, tensors(4));
  io::PendingSave moved = std::move(s);
  moved.commit();
  EXPECT_TRUE(moved.committed());
  moved.discard();  // a no-op now
  EXPECT_EQ(first_value(p), 4.0);
  EXPECT_EQ(entries(), std::vector<std::string>{"m.safetensors"});
}

TEST_F(AtomicSave, FailedRenameLeavesNoTempFile) {
  // The target turns into a non-empty directory between the write and the rename.
  std::string target = path("adir");
  io::PendingSave s(target, tensors(1));
  fs::create_directory(target);
  spit(target + "/keep", "123");
  VK_EXPECT_ERROR(s.commit(), RuntimeError, "adir", "rename", "failed", "unchanged");
  s.discard();
  EXPECT_EQ(entries(), std::vector<std::string>{"adir"});
  EXPECT_EQ(slurp(target + "/keep"), "123");
}

}  // namespace
}  // namespace vk::test
