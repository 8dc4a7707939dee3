// `detrain run --attest` on a disk that fills up, with a real file system refusing the writes
// (the writer's own fault-injection points are tests/evidence/write_faults_test.cc):
//   (a) RLIMIT_FSIZE: the child runs with a file-size limit and SIGXFSZ ignored, so the write that
//       would pass the limit returns EFBIG ("File too large") — at 4 KiB, 64 KiB, 512 KiB and one
//       byte below the bundle's largest file (the step log, ~0.96 MB), and at 1 MiB, which every
//       file fits under (the control: that run must succeed);
//   (b) a small tmpfs, mounted in a user and mount namespace (`unshare -rm`), so the writes fail
//       with ENOSPC ("No space left on device") — at 32 KiB, 256 KiB, 1 MiB, 2 MiB and 16 KiB
//       below the bundle's size in pages (~2.9 MB); skipped,
//       with the reason, where this machine does not allow such a mount.
// Each must exit 2 with "detrain run: BUNDLE/FILE: <OS error>" naming a file of the bundle
// (under (a), one larger than the limit); leave no temporary and nothing half-written — every
// file left is the uninterrupted run's file byte for byte, but steps.jsonl (a prefix of it that
// ends at a whole line) and progress.json —; leave a bundle that `verify` calls incomplete
// (exit 1), or no bundle (exit 2); and `run --resume` with the space back must complete it to the
// uninterrupted run's bundle and final step hash.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "cli/cli_runner.h"

extern char** environ;

namespace detrain::testing {
namespace {

namespace fs = std::filesystem;
using Files = std::map<std::string, std::string>;

const std::string kTiny =
    std::string(DETRAIN_SOURCE_DIR) + "/tests/evidence/testdata/tiny/train.dt";
// 1000 steps (as interrupt_test): 124 checkpoints, and a step log (the largest file) of ~1.7 MB.
const std::string kSteps = "1000";

std::string Slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

Files ReadTree(const std::string& dir) {
  Files files;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return files;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.is_regular_file()) files[fs::relative(e.path(), dir).string()] = Slurp(e.path());
  }
  files.erase("environment.json");  // where the run ran: not part of the claim
  return files;
}

std::vector<std::string> RunArgs(const std::string& dir) {
  return {"run", kTiny, "--attest", "-o", dir, "--steps", kSteps, "-q"};
}

std::string FinalHash(const std::string& out) {
  const std::string key = "final step hash: ";
  size_t at = out.find(key);
  return at == std::string::npos ? "" : out.substr(at + key.size(), 64);
}

// Runs DETRAIN_BINARY `args` with RLIMIT_FSIZE = `limit` and SIGXFSZ ignored (so the write past
// the limit fails with EFBIG instead of killing the process); stderr to `err`.
int RunWithFileSizeLimit(const std::vector<std::string>& args, rlim_t limit,
                         const std::string& err) {
  std::string bin = DETRAIN_BINARY;
  std::vector<std::string> copy = args;
  std::vector<char*> argv = {bin.data()};
  for (std::string& a : copy) argv.push_back(a.data());
  argv.push_back(nullptr);
  // Opened before the limit applies; the message is far below any limit tried.
  int fd = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  EXPECT_GE(fd, 0) << err;
  pid_t pid = ::fork();
  if (pid == 0) {  // only async-signal-safe calls until exec
    ::signal(SIGXFSZ, SIG_IGN);
    struct rlimit rl = {limit, limit};
    if (::setrlimit(RLIMIT_FSIZE, &rl) != 0) ::_exit(120);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    ::execve(bin.c_str(), argv.data(), environ);
    ::_exit(121);
  }
  ::close(fd);
  EXPECT_GT(pid, 0) << "fork";
  int status = 0;
  EXPECT_EQ(::waitpid(pid, &status, 0), pid);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// Runs `argv` (PATH searched), returns its exit code.
int Spawn(std::vector<std::string> args) {
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  if (posix_spawnp(&pid, argv[0], nullptr, nullptr, argv.data(), environ) != 0) return 127;
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid) return 127;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

class FullDiskTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    root_ = new std::string(MakeTempDir());
    const std::string ref = *root_ + "/reference";
    CliResult r = RunDetrain(RunArgs(ref));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    hash_ = new std::string(FinalHash(r.out));
    reference_ = new Files(ReadTree(ref));
    for (const auto& [name, bytes] : *reference_) {
      largest_ = std::max<uint64_t>(largest_, bytes.size());
      pages_ += (bytes.size() + 4095) / 4096 * 4096;
    }
  }
  static void TearDownTestSuite() {
    std::error_code ignored;
    fs::remove_all(*root_, ignored);
  }

  // What a failed run left in `left` (its stderr `err`, exit `code`; `verify` of it: `v`).
  static void CheckLeftovers(const Files& left, const CliResult& v) {
    for (const auto& [name, bytes] : left) {
      EXPECT_EQ(name.find(".tmp."), std::string::npos) << "a temporary was left: " << name;
      if (name == "progress.json") continue;
      auto it = reference_->find(name);
      if (it == reference_->end()) {
        ADD_FAILURE() << name << " is not a file of the bundle";
        continue;
      }
      if (name == "steps.jsonl") {
        EXPECT_TRUE(it->second.compare(0, bytes.size(), bytes) == 0)
            << "steps.jsonl is not a prefix of the uninterrupted run's";
        EXPECT_TRUE(bytes.empty() || bytes.back() == '\n') << "steps.jsonl ends in a torn line";
      } else {
        EXPECT_TRUE(it->second == bytes) << name << " is half-written or differs";
      }
    }
    if (v.exit_code == 1) {
      EXPECT_NE(v.err.find("INCOMPLETE: the bundle is incomplete"), std::string::npos) << v.err;
    } else {
      EXPECT_EQ(v.exit_code, 2) << v.err;
      EXPECT_NE(v.err.find("not a bundle"), std::string::npos) << v.err;
    }
  }

  static void ExpectReference(const std::string& out, const Files& got) {
    EXPECT_EQ(FinalHash(out), *hash_);
    EXPECT_EQ(got.size(), reference_->size());
    for (const auto& [name, bytes] : *reference_) {
      auto it = got.find(name);
      if (it == got.end()) {
        ADD_FAILURE() << name << " missing after the resume";
      } else {
        EXPECT_TRUE(it->second == bytes) << name << " differs from the uninterrupted run's";
      }
    }
  }

  static std::string* root_;
  static std::string* hash_;
  static Files* reference_;
  static uint64_t largest_;  // the bundle's largest file (bytes)
  static uint64_t pages_;    // its files' sizes rounded up to 4 KiB pages
};

std::string* FullDiskTest::root_ = nullptr;
std::string* FullDiskTest::hash_ = nullptr;
Files* FullDiskTest::reference_ = nullptr;
uint64_t FullDiskTest::largest_ = 0;
uint64_t FullDiskTest::pages_ = 0;

TEST_F(FullDiskTest, FileSizeLimit) {
  std::printf("bundle: largest file %llu bytes\n", static_cast<unsigned long long>(largest_));
  ASSERT_GT(largest_, 512u << 10) << "the step log should pass 512 KiB";
  // 1 MiB is above the largest file: the control, which must succeed.
  for (uint64_t limit : {uint64_t{4} << 10, uint64_t{64} << 10, uint64_t{512} << 10,
                         uint64_t{1} << 20, largest_ - 1}) {
    SCOPED_TRACE("RLIMIT_FSIZE " + std::to_string(limit));
    const std::string dir = *root_ + "/fsize" + std::to_string(limit);
    const std::string err = dir + ".err";
    const int code = RunWithFileSizeLimit(RunArgs(dir), limit, err);
    if (limit >= largest_) {  // every file fits: the run must simply succeed
      EXPECT_EQ(code, 0) << Slurp(err);
      CliResult v = RunDetrain({"verify", dir});
      EXPECT_EQ(v.exit_code, 0) << v.err;
      continue;
    }
    const std::string msg = Slurp(err);
    std::printf("  RLIMIT_FSIZE %llu: exit %d, %s", static_cast<unsigned long long>(limit), code,
                msg.c_str());
    EXPECT_EQ(code, 2) << msg;
    const std::string head = "detrain run: " + dir + "/";
    const size_t tail = msg.find(": File too large");
    ASSERT_EQ(msg.rfind(head, 0), 0u) << msg;
    ASSERT_NE(tail, std::string::npos) << msg;
    const std::string named = msg.substr(head.size(), tail - head.size());
    auto ref = reference_->find(named);
    ASSERT_NE(ref, reference_->end()) << "the error names no file of the bundle: " << msg;
    EXPECT_GT(ref->second.size(), limit) << "the file named fits under the limit: " << msg;
    CliResult v = RunDetrain({"verify", dir});
    std::printf("    verify: exit %d\n", v.exit_code);
    CheckLeftovers(ReadTree(dir), v);
    std::vector<std::string> args = RunArgs(dir);
    if (fs::is_directory(dir)) args.push_back("--resume");
    CliResult r = RunDetrain(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    ExpectReference(r.out, ReadTree(dir));
  }
}

// The script run in the namespace: mount a tmpfs of $1 bytes on $2, run into $2/b, verify, copy
// what is left to $3/failed, make the tmpfs large, resume (or start, if nothing is left), copy
// the bundle to $3/resumed. Exit codes and output go to files in $3.
const char* kTmpfsScript = R"(set -u
size=$1 mnt=$2 out=$3 bin=$4 tiny=$5 steps=$6
mount -t tmpfs -o size=$size none "$mnt" || exit 77
"$bin" run "$tiny" --attest -o "$mnt/b" --steps "$steps" -q >"$out/run.out" 2>"$out/run.err"
echo $? >"$out/run.rc"
"$bin" verify "$mnt/b" >"$out/verify.out" 2>"$out/verify.err"
echo $? >"$out/verify.rc"
if [ -d "$mnt/b" ]; then cp -a "$mnt/b" "$out/failed"; resume=--resume; else resume=; fi
mount -o remount,size=64m "$mnt" || exit 78
"$bin" run "$tiny" --attest -o "$mnt/b" --steps "$steps" -q $resume >"$out/resume.out" \
  2>"$out/resume.err"
echo $? >"$out/resume.rc"
cp -a "$mnt/b" "$out/resumed"
)";

TEST_F(FullDiskTest, SmallTmpfs) {
  const std::string probe = *root_ + "/probe";
  fs::create_directory(probe);
  if (Spawn({"unshare", "-rm", "mount", "-t", "tmpfs", "-o", "size=64k", "none", probe}) != 0) {
    GTEST_SKIP() << "cannot mount a tmpfs here (`unshare -rm mount -t tmpfs` failed: user "
                    "namespaces or unshare unavailable)";
  }
  std::printf("bundle: %llu bytes in 4 KiB pages\n", static_cast<unsigned long long>(pages_));
  for (uint64_t size : {uint64_t{32} << 10, uint64_t{256} << 10, uint64_t{1} << 20,
                        uint64_t{2} << 20, pages_ - (uint64_t{16} << 10)}) {
    SCOPED_TRACE("tmpfs of " + std::to_string(size) + " bytes");
    const std::string mnt = *root_ + "/mnt" + std::to_string(size);
    const std::string out = *root_ + "/out" + std::to_string(size);
    fs::create_directory(mnt);
    fs::create_directory(out);
    const int rc = Spawn({"unshare", "-rm", "sh", "-c", kTmpfsScript, "sh", std::to_string(size),
                          mnt, out, DETRAIN_BINARY, kTiny, kSteps});
    ASSERT_EQ(rc, 0) << "the namespace script failed";
    const std::string msg = Slurp(out + "/run.err");
    std::printf("  tmpfs %llu: exit %s", static_cast<unsigned long long>(size), msg.c_str());
    EXPECT_EQ(Slurp(out + "/run.rc"), "2\n") << msg;
    EXPECT_EQ(msg.rfind("detrain run: " + mnt + "/b", 0), 0u) << msg;
    EXPECT_NE(msg.find(": No space left on device"), std::string::npos) << msg;
    CliResult v;
    v.exit_code = std::stoi(Slurp(out + "/verify.rc"));
    v.err = Slurp(out + "/verify.err");
    std::printf("    verify: exit %d\n", v.exit_code);
    CheckLeftovers(ReadTree(out + "/failed"), v);
    ASSERT_EQ(Slurp(out + "/resume.rc"), "0\n") << Slurp(out + "/resume.err");
    ExpectReference(Slurp(out + "/resume.out"), ReadTree(out + "/resumed"));
  }
}

}  // namespace
}  // namespace detrain::testing
