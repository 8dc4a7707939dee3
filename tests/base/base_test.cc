// Status/Result, atomic file writes and the thread pool.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <thread>
#include <vector>

#include "base/file_io.h"
#include "base/status.h"
#include "base/thread_pool.h"

namespace detrain {
namespace {

Result<int> Half(int x) {
  if (x % 2 != 0) return InvalidArgument("odd: " + std::to_string(x));
  return x / 2;
}

Result<int> Quarter(int x) {
  DETRAIN_ASSIGN_OR_RETURN(int h, Half(x));
  return Half(h);
}

TEST(StatusTest, ResultCarriesValueOrError) {
  EXPECT_EQ(*Quarter(8), 2);
  Result<int> r = Quarter(6);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().ToString(), "invalid argument: odd: 3");
  EXPECT_EQ(r.status().WithContext("f.dt:3:4").message(), "f.dt:3:4: odd: 3");
  Result<int> bad = Status::Ok();  // an OK status holds no value: that is an internal error
  EXPECT_EQ(bad.status().code(), StatusCode::kInternal);
}

class FileIoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/detrain_io_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

TEST_F(FileIoTest, AtomicWriteReplacesAndLeavesNoTempFiles) {
  std::string path = dir_ + "/f.json";
  ASSERT_TRUE(WriteFileAtomic(path, "first").ok());
  ASSERT_TRUE(WriteFileAtomic(path, "second, longer").ok());
  EXPECT_EQ(*ReadFile(path), "second, longer");
  size_t entries = 0;
  for (auto& e : std::filesystem::directory_iterator(dir_)) {
    (void)e;
    ++entries;
  }
  EXPECT_EQ(entries, 1u);
}

TEST_F(FileIoTest, FailedWriteKeepsOldContents) {
  std::string path = dir_ + "/keep";
  ASSERT_TRUE(WriteFileAtomic(path, "old").ok());
  if (geteuid() == 0) GTEST_SKIP() << "root ignores directory permissions";
  chmod(dir_.c_str(), 0500);
  Status st = WriteFileAtomic(path, "new");
  chmod(dir_.c_str(), 0700);
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(*ReadFile(path), "old");
}

TEST_F(FileIoTest, WriteIntoMissingDirectoryFailsNamingPath) {
  Status st = WriteFileAtomic(dir_ + "/no/such/dir/f", "x");
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find(dir_ + "/no/such/dir/f"), std::string::npos) << st.message();
}

TEST_F(FileIoTest, ReadMissingIsNotFound) {
  Result<std::string> r = ReadFile(dir_ + "/missing");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
}

// A FIFO would block (or never end) and /dev/zero never ends: ReadFile refuses anything that is
// not a regular file, without opening it for a blocking read.
TEST_F(FileIoTest, ReadRejectsNonRegularFiles) {
  std::string fifo = dir_ + "/pipe";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  for (const std::string& path : {fifo, std::string("/dev/zero"), dir_}) {
    Result<std::string> r = ReadFile(path);
    ASSERT_FALSE(r.ok()) << path;
    EXPECT_EQ(r.status().code(), StatusCode::kIoError) << path;
    EXPECT_EQ(r.status().message(),
              path + ": not a regular file (directory, device, socket or FIFO)");
  }
}

// Reading below a root (how a bundle is read): a link at any component — the file, a directory
// on the way, relative or dangling — is refused by name and never read through; so are '.',
// '..', empty components, special files and a file one byte past the limit.
TEST_F(FileIoTest, ReadBelowFollowsNoLinkAndKeepsItsLimit) {
  ASSERT_TRUE(WriteFileAtomic(dir_ + "/secret", "secret").ok());
  ASSERT_EQ(mkdir((dir_ + "/root").c_str(), 0700), 0);
  ASSERT_EQ(mkdir((dir_ + "/root/sub").c_str(), 0700), 0);
  ASSERT_TRUE(WriteFileAtomic(dir_ + "/root/sub/f", "12345").ok());
  ASSERT_EQ(symlink((dir_ + "/secret").c_str(), (dir_ + "/root/sub/abs").c_str()), 0);
  ASSERT_EQ(symlink("../../secret", (dir_ + "/root/sub/rel").c_str()), 0);
  ASSERT_EQ(symlink((dir_ + "/nope").c_str(), (dir_ + "/root/sub/dangling").c_str()), 0);
  ASSERT_EQ(symlink("sub", (dir_ + "/root/alias").c_str()), 0);
  ASSERT_EQ(mkfifo((dir_ + "/root/sub/pipe").c_str(), 0600), 0);
  const std::string root = dir_ + "/root";
  Result<std::string> ok = ReadFileBelow(root, "sub/f", 5);
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(*ok, "12345");
  EXPECT_EQ(*FileSizeBelow(root, "sub/f"), 5u);
  Result<std::string> past = ReadFileBelow(root, "sub/f", 4);
  ASSERT_FALSE(past.ok());
  EXPECT_EQ(past.status().message(), root + "/sub/f: file is 5 bytes; at most 4 can be read");
  for (const char* link : {"sub/abs", "sub/rel", "sub/dangling", "alias/f"}) {
    Result<std::string> r = ReadFileBelow(root, link);
    ASSERT_FALSE(r.ok()) << link;
    EXPECT_NE(r.status().message().find("a symbolic link, which is not followed"),
              std::string::npos)
        << r.status().message();
    EXPECT_FALSE(FileSizeBelow(root, link).ok()) << link;
  }
  EXPECT_EQ(ReadFileBelow(root, "alias/f").status().message(),
            root + "/alias: a symbolic link, which is not followed");
  for (const char* bad : {"", "/etc/passwd", "sub/../sub/f", "./sub/f", "sub//f", "sub/"}) {
    Result<std::string> r = ReadFileBelow(root, bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << bad;
  }
  Result<std::string> fifo = ReadFileBelow(root, "sub/pipe");  // must not block
  ASSERT_FALSE(fifo.ok());
  EXPECT_NE(fifo.status().message().find("not a regular file"), std::string::npos);
  EXPECT_FALSE(ReadFileBelow(root, "sub").ok());
  EXPECT_EQ(ReadFileBelow(root, "sub/missing").status().code(), StatusCode::kNotFound);
  // The root itself may be a link: the caller named it.
  ASSERT_EQ(symlink(root.c_str(), (dir_ + "/root-link").c_str()), 0);
  EXPECT_TRUE(ReadFileBelow(dir_ + "/root-link", "sub/f").ok());
}

TEST_F(FileIoTest, ReadsFilesWhoseSizeIsNotKnownInAdvance) {
  // /proc reports a size of 0 for its regular files; the contents are still read.
  if (!std::filesystem::exists("/proc/self/status")) GTEST_SKIP() << "no /proc";
  Result<std::string> r = ReadFile("/proc/self/status");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_NE(r->find("Name:"), std::string::npos);
}

TEST_F(FileIoTest, ReadRejectsFilesOverTheLimitBeforeReading) {
  std::string path = dir_ + "/huge";
  ASSERT_TRUE(WriteFileAtomic(path, "").ok());
  if (truncate(path.c_str(), static_cast<off_t>(kMaxReadFileBytes + 1)) != 0) {
    GTEST_SKIP() << "the file system cannot hold a sparse 64 GiB file";
  }
  Result<std::string> r = ReadFile(path);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            path + ": file is 68719476737 bytes; at most 68719476736 can be read");
}

TEST(ThreadPoolTest, EveryIndexExactlyOnce) {
  for (size_t threads : {1, 2, 3, 8}) {
    ThreadPool pool(threads);
    for (size_t n : {0, 1, 7, 1000}) {
      std::vector<std::atomic<int>> hits(n);
      pool.ParallelFor(n, [&](size_t i) { hits[i].fetch_add(1); });
      for (size_t i = 0; i < n; ++i)
        ASSERT_EQ(hits[i].load(), 1) << threads << " " << n << " " << i;
    }
  }
}

// Back-to-back calls of different sizes, each with its own function object on the stack (a
// worker late for one call must neither run it after it returned nor mix it with the next), and
// pauses long enough for idle workers to fall asleep between some of them.
TEST(ThreadPoolTest, BackToBackCallsOfEverySizeAndSleepingWorkers) {
  for (size_t threads : {2, 3, 4}) {
    ThreadPool pool(threads);
    for (int round = 0; round < 20000; ++round) {
      const size_t n = static_cast<size_t>(round % 7);  // 0 and 1 run inline
      std::vector<int> hits(n, 0);
      std::atomic<int> calls{0};
      pool.ParallelFor(n, [&hits, &calls, n](size_t i) {
        ASSERT_LT(i, n);
        ++hits[i];
        calls.fetch_add(1);
      });
      ASSERT_EQ(calls.load(), static_cast<int>(n)) << threads << " " << round;
      for (size_t i = 0; i < n; ++i) ASSERT_EQ(hits[i], 1) << threads << " " << round << " " << i;
      if (round % 5000 == 4999) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
}

TEST(ThreadPoolTest, ReusableManyTimes) {
  ThreadPool pool(4);
  std::atomic<long> sum{0};
  for (int round = 0; round < 200; ++round) {
    pool.ParallelFor(10, [&](size_t i) { sum += static_cast<long>(i); });
  }
  EXPECT_EQ(sum.load(), 200 * 45);
}

}  // namespace
}  // namespace detrain
