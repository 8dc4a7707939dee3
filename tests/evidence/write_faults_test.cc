// Crash safety of every write of `detrain run --attest`, through the writer's own
// fault-injection points (base/fault_injection.h), in-process (attested_run.h, verifier.h).
//
// A run of the tiny program is first counted: N write operations (create, write, truncate,
// fsync, rename, mkdir, unlink, directory fsync). Then, for EVERY k in 1..N, a fresh run has
// operation k fail (ENOSPC for even k, EIO for odd k; a failed write writes half its bytes
// first) and the test requires:
//   - the run returns an error, never crashes, and the message names the path of operation k
//     and the OS error (strerror);
//   - no temporary (NAME.tmp.XXXXXX) is left behind;
//   - `verify` of the directory says input error (not a bundle: the failure came before any
//     bundle file existed), incomplete, or verified — the last only when operation k came
//     after manifest.json was renamed into place (the directory fsync that makes the rename
//     durable), and then the bundle must be the uninterrupted run's bytes. Never "failed"
//     (a corrupt bundle), never a crash;
//   - `run --resume` (or, where the failure left no directory, a fresh run) with no fault
//     completes the bundle to exactly the uninterrupted run's bytes, every file, so also its
//     steps.jsonl, final step hash and final weights.
// The same is done for the writes of `run --resume` itself, resuming a run that stopped (as if
// killed) after step 12 of 24: every operation of the resume fails in turn, then a second resume
// must still reach the uninterrupted bundle.
//
// The counts of each outcome are printed (docs/reliability.md, "Crash safety of writes").
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "base/fault_injection.h"
#include "base/file_io.h"
#include "base/fs.h"
#include "evidence/bundle/attested_run.h"
#include "evidence/verify/verifier.h"

namespace detrain::bundle {
namespace {

namespace fs = std::filesystem;
using Files = std::map<std::string, std::string>;  // relative path -> bytes

const std::string kTiny =
    std::string(DETRAIN_SOURCE_DIR) + "/tests/evidence/testdata/tiny/train.dt";

// In memory where there is a tmpfs (as attested_run_test): hundreds of small runs, no fsync
// waits on a loaded disk. The faults are injected, so the file system's own behaviour does not
// matter here (tests/cli/full_disk_test.cc fills real ones).
std::string ScratchRoot() {
  std::error_code ec;
  const fs::path base =
      fs::is_directory("/dev/shm", ec) ? fs::path("/dev/shm") : fs::temp_directory_path();
  std::string tmpl = (base / "detrain_write_faults.XXXXXX").string();
  if (::mkdtemp(tmpl.data()) == nullptr) ADD_FAILURE() << "mkdtemp failed";
  return tmpl;
}

RunOptions Options(const std::string& dir) {
  RunOptions o;
  o.program = kTiny;
  o.output_dir = dir;
  o.detrain_version = "test";
  return o;
}

Files ReadBundle(const std::string& dir) {
  Files files;
  Result<std::vector<std::string>> names = ListFiles(dir);
  if (!names.ok()) return files;
  for (const std::string& n : *names) {
    Result<std::string> bytes = ReadFile(JoinPath(dir, n));
    files[n] = bytes.ok() ? std::move(*bytes) : "<unreadable>";
  }
  return files;
}

verify::VerifyReport Verify(const std::string& dir) {
  verify::VerifyOptions o;
  o.bundle = dir;
  o.integrity_threads = 2;
  return verify::VerifyBundle(o);
}

std::string Names(const Files& f) {
  std::string s;
  for (const auto& [n, b] : f) s += " " + n;
  return s;
}

// The path of a logged operation ("OP PATH").
std::string LoggedPath(const std::string& entry) { return entry.substr(entry.find(' ') + 1); }
std::string OpKind(const std::string& entry) { return entry.substr(0, entry.find(' ')); }

struct Tally {
  int cases = 0;
  int no_bundle = 0;   // verify: input error (not a bundle)
  int incomplete = 0;  // verify: incomplete
  int verified = 0;    // verify: verified (the failure came after the manifest was in place)
  int resumed = 0;     // the follow-up run reached the uninterrupted bundle
  std::map<std::string, int> by_op;

  // how: "error" (the run returned one) or "killed".
  void Print(const char* what, const char* how, int64_t n) const {
    std::printf(
        "%s: N = %lld operations, %d cases: %d %s + not a bundle, %d %s + incomplete, "
        "%d %s + verified, %d completed to the uninterrupted bundle\n",
        what, static_cast<long long>(n), cases, no_bundle, how, incomplete, how, verified, how,
        resumed);
    std::string ops;
    for (const auto& [op, c] : by_op) ops += " " + op + "=" + std::to_string(c);
    std::printf("  operations by kind:%s\n", ops.c_str());
  }
};

// Runs `o` in a forked child that ends (_exit, as a kill -9 would) at operation k: before the
// system call, or half way through a write. Returns the child's exit status.
int RunUntilKilledAt(const RunOptions& o, int64_t k) {
  std::fflush(nullptr);
  pid_t pid = ::fork();
  if (pid == 0) {
    fault::Arm(k, EIO, fault::Mode::kExit);
    Result<RunSummary> r = RunAttested(o);
    ::_exit(r.ok() ? 0 : 1);
  }
  int status = 0;
  if (pid < 0 || ::waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// The operations tried: every one (1..n), or under a sanitizer build (about 20 times slower)
// every DETRAIN_FAULT_STRIDE-th plus the last few and those around the manifest's rename.
std::vector<int64_t> OperationsToTry(int64_t n, int64_t manifest) {
#ifdef DETRAIN_FAULT_STRIDE
  const int64_t stride = DETRAIN_FAULT_STRIDE;
#else
  const int64_t stride = 1;
#endif
  std::vector<int64_t> ks;
  for (int64_t k = 1; k <= n; ++k) {
    if ((k - 1) % stride == 0 || k > n - 3 || (k >= manifest - 1 && k <= manifest + 1)) {
      ks.push_back(k);
    }
  }
  return ks;
}

class WriteFaultsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    root_ = new std::string(ScratchRoot());
    Result<RunSummary> r = RunAttested(Options(*root_ + "/reference"));
    ASSERT_TRUE(r.ok()) << r.status().message();
    hash_ = new std::string(r->final_step_hash);
    reference_ = new Files(ReadBundle(*root_ + "/reference"));
    verify::VerifyReport v = Verify(*root_ + "/reference");
    ASSERT_EQ(v.outcome, verify::Outcome::kVerified) << v.message;
  }
  static void TearDownTestSuite() {
    fault::Disarm();
    std::error_code ignored;
    fs::remove_all(*root_, ignored);
  }
  void TearDown() override { fault::Disarm(); }

  // A run that stops after step 12 of 24 (between the checkpoints after steps 8 and 16), as if
  // killed: no manifest, records 0-11 in steps.jsonl.
  static void CrashAfterStep12(const std::string& dir) {
    RunOptions first = Options(dir);
    first.crash_after_steps = 12;
    Result<RunSummary> r = RunAttested(first);
    ASSERT_TRUE(r.ok()) << r.status().message();
  }
  // `run --resume` of a copy of `crashed` made at `to`.
  static RunOptions ResumeOfCopy(const std::string& crashed, const std::string& to) {
    fs::copy(crashed, to, fs::copy_options::recursive);
    RunOptions o = Options(to);
    o.resume = true;
    return o;
  }
  // Runs `o` until the process dies at operation k (as kill -9 would), then requires what
  // CheckThenComplete requires of the directory it left.
  void KillThenComplete(const RunOptions& o, const std::string& dir, int64_t k,
                        const std::vector<std::string>& log, int64_t manifest, Tally* tally) {
    SCOPED_TRACE("killed at operation " + std::to_string(k) + ": " +
                 log[static_cast<size_t>(k - 1)]);
    ASSERT_EQ(RunUntilKilledAt(o, k), fault::kExitStatus);
    ++tally->cases;
    ++tally->by_op[OpKind(log[static_cast<size_t>(k - 1)])];
    CheckThenComplete(Options(dir), k, manifest, tally);
  }
  // Calls play(dir, k) for each operation k tried (OperationsToTry), in a fresh directory
  // *root_ + prefix + k that is removed afterwards; stops at the first fatal failure. Returns
  // how many operations were tried.
  int64_t ForEachOperation(int64_t n, int64_t manifest, const std::string& prefix,
                           const std::function<void(const std::string&, int64_t)>& play) {
    const std::vector<int64_t> tried = OperationsToTry(n, manifest);
    for (int64_t k : tried) {
      const std::string dir = *root_ + prefix + std::to_string(k);
      play(dir, k);
      if (HasFatalFailure()) break;
      std::error_code ignored;
      fs::remove_all(dir, ignored);
    }
    return static_cast<int64_t>(tried.size());
  }

  // Runs `o` with no fault, counting its operations; it must give the reference bundle.
  static std::vector<std::string> CountOperations(const RunOptions& o) {
    fault::Arm(0, 0);
    Result<RunSummary> r = RunAttested(o);
    std::vector<std::string> log = fault::Log();
    fault::Disarm();
    EXPECT_TRUE(r.ok()) << r.status().message();
    EXPECT_TRUE(ReadBundle(o.output_dir) == *reference_) << "counting changed the bundle";
    return log;
  }

  // Runs `o` with operation k failing with `err`, checks what it leaves, then completes it.
  static void FaultThenComplete(RunOptions o, int64_t k, int err, int64_t manifest_in_place,
                                Tally* tally) {
    const std::string& dir = o.output_dir;
    fault::Arm(k, err);
    Result<RunSummary> r = RunAttested(o);
    const std::vector<std::string> log = fault::Log();
    fault::Disarm();
    ++tally->cases;
    ASSERT_GE(static_cast<int64_t>(log.size()), k) << "the run did not reach operation " << k;
    const std::string& op = log[static_cast<size_t>(k - 1)];
    SCOPED_TRACE("operation " + std::to_string(k) + ": " + op);
    ++tally->by_op[OpKind(op)];
    ASSERT_FALSE(r.ok()) << "the failed operation went unnoticed";
    const std::string msg(r.status().message());
    EXPECT_EQ(r.status().code(), StatusCode::kIoError) << msg;
    EXPECT_NE(msg.find(LoggedPath(op)), std::string::npos) << msg;
    EXPECT_NE(msg.find(std::strerror(err)), std::string::npos) << msg;

    const Files left = ReadBundle(dir);
    for (const auto& [name, bytes] : left) {
      EXPECT_EQ(name.find(".tmp."), std::string::npos) << "a temporary was left: " << name;
    }
    CheckThenComplete(o, k, manifest_in_place, tally);
  }

  // What a failed or killed run left in o.output_dir: verify must say not a bundle, incomplete,
  // or (only after operation manifest_in_place) verified; then a run completes it.
  static void CheckThenComplete(RunOptions o, int64_t k, int64_t manifest_in_place, Tally* tally) {
    const std::string& dir = o.output_dir;
    const Files left = ReadBundle(dir);
    verify::VerifyReport v = Verify(dir);
    switch (v.outcome) {
      case verify::Outcome::kInputError:
        EXPECT_TRUE(v.message.find("not a bundle") != std::string::npos ||
                    v.message.find("no such bundle directory") != std::string::npos)
            << v.message;
        ++tally->no_bundle;
        break;
      case verify::Outcome::kIncomplete:
        ++tally->incomplete;
        break;
      case verify::Outcome::kVerified:
        EXPECT_GT(k, manifest_in_place) << "a bundle verified although its run failed early";
        EXPECT_TRUE(left == *reference_) << "a verified bundle differs from the reference";
        ++tally->verified;
        return;  // complete: there is nothing to resume
      case verify::Outcome::kFailed:
        ADD_FAILURE() << "a corrupt bundle: " << v.message << "; files:" << Names(left);
        return;
    }
    o.resume = IsDirectory(dir);
    Result<RunSummary> again = RunAttested(o);
    ASSERT_TRUE(again.ok()) << again.status().message();
    EXPECT_EQ(again->final_step_hash, *hash_);
    const Files got = ReadBundle(dir);
    EXPECT_TRUE(got == *reference_) << "the completed bundle differs from the uninterrupted "
                                       "run's; files:"
                                    << Names(got);
    if (again->final_step_hash == *hash_ && got == *reference_) ++tally->resumed;
  }

  // The index (1-based) of the rename of manifest.json into place in `log`.
  static int64_t ManifestInPlace(const std::vector<std::string>& log) {
    for (size_t i = 0; i < log.size(); ++i) {
      if (log[i].rfind("rename ", 0) == 0 && log[i].size() > 14 &&
          log[i].compare(log[i].size() - 14, 14, "/manifest.json") == 0) {
        return static_cast<int64_t>(i + 1);
      }
    }
    ADD_FAILURE() << "no rename of manifest.json was logged";
    return static_cast<int64_t>(log.size());
  }

  static std::string* root_;
  static std::string* hash_;
  static Files* reference_;
};

std::string* WriteFaultsTest::root_ = nullptr;
std::string* WriteFaultsTest::hash_ = nullptr;
Files* WriteFaultsTest::reference_ = nullptr;

int ErrorFor(int64_t k) { return k % 2 == 0 ? ENOSPC : EIO; }

TEST_F(WriteFaultsTest, EveryWriteOfARunFailsInTurn) {
  const std::vector<std::string> log = CountOperations(Options(*root_ + "/count"));
  const auto n = static_cast<int64_t>(log.size());
  ASSERT_GT(n, 20) << "the fault-injection points are not reached";
  const int64_t manifest = ManifestInPlace(log);
  Tally tally;
  const int64_t tried =
      ForEachOperation(n, manifest, "/run", [&](const std::string& dir, int64_t k) {
        FaultThenComplete(Options(dir), k, ErrorFor(k), manifest, &tally);
      });
  tally.Print("run --attest", "error", n);
  EXPECT_EQ(tally.cases, tried);
  EXPECT_EQ(tally.resumed + tally.verified, tried);
  EXPECT_GT(tally.incomplete, 0);
}

TEST_F(WriteFaultsTest, EveryWriteOfAResumeFailsInTurn) {
  const std::string crashed = *root_ + "/crashed";
  CrashAfterStep12(crashed);
  if (HasFatalFailure()) return;
  const std::vector<std::string> log =
      CountOperations(ResumeOfCopy(crashed, *root_ + "/resume-count"));
  const auto n = static_cast<int64_t>(log.size());
  ASSERT_GT(n, 20);
  const int64_t manifest = ManifestInPlace(log);
  Tally tally;
  const int64_t tried =
      ForEachOperation(n, manifest, "/resume", [&](const std::string& dir, int64_t k) {
        FaultThenComplete(ResumeOfCopy(crashed, dir), k, ErrorFor(k), manifest, &tally);
      });
  tally.Print("run --attest --resume", "error", n);
  EXPECT_EQ(tally.cases, tried);
  EXPECT_EQ(tally.resumed + tally.verified, tried);
  EXPECT_EQ(tally.no_bundle, 0) << "a resume must never leave less than an incomplete bundle";
}

// The process dies at each operation in turn (what kill -9 leaves there, temporaries and torn
// lines included): also in the middle of writing the final weights and the manifest.
TEST_F(WriteFaultsTest, KilledAtEveryWriteOfARun) {
  const std::vector<std::string> log = CountOperations(Options(*root_ + "/kill-count"));
  const auto n = static_cast<int64_t>(log.size());
  const int64_t manifest = ManifestInPlace(log);
  Tally tally;
  const int64_t tried =
      ForEachOperation(n, manifest, "/kill", [&](const std::string& dir, int64_t k) {
        KillThenComplete(Options(dir), dir, k, log, manifest, &tally);
      });
  tally.Print("run --attest", "killed", n);
  EXPECT_EQ(tally.resumed + tally.verified, tried);
}

// The same during `run --resume` of a run that stopped after step 12: a resume killed at any
// operation resumes again to the uninterrupted bundle.
TEST_F(WriteFaultsTest, KilledAtEveryWriteOfAResume) {
  const std::string crashed = *root_ + "/kill-crashed";
  CrashAfterStep12(crashed);
  if (HasFatalFailure()) return;
  const std::vector<std::string> log =
      CountOperations(ResumeOfCopy(crashed, *root_ + "/kill-resume-count"));
  const auto n = static_cast<int64_t>(log.size());
  const int64_t manifest = ManifestInPlace(log);
  Tally tally;
  const int64_t tried =
      ForEachOperation(n, manifest, "/kill-resume", [&](const std::string& dir, int64_t k) {
        KillThenComplete(ResumeOfCopy(crashed, dir), dir, k, log, manifest, &tally);
      });
  tally.Print("run --attest --resume", "killed", n);
  EXPECT_EQ(tally.resumed + tally.verified, tried);
  EXPECT_EQ(tally.no_bundle, 0);
}

// Sticky faults: from operation k on, every write fails (a disk that stays full), for a spread
// of k; the first error is the one reported, and nothing the error path does makes it worse.
TEST_F(WriteFaultsTest, ADiskThatStaysFull) {
  const std::vector<std::string> log = CountOperations(Options(*root_ + "/sticky-count"));
  const auto n = static_cast<int64_t>(log.size());
  int cases = 0, completed = 0;
  for (int64_t k = 1; k <= n; k += 7) {
    ++cases;
    const std::string dir = *root_ + "/sticky" + std::to_string(k);
    SCOPED_TRACE("from operation " + std::to_string(k));
    fault::Arm(k, ENOSPC, fault::Mode::kSticky);
    Result<RunSummary> r = RunAttested(Options(dir));
    fault::Disarm();
    ASSERT_FALSE(r.ok());
    EXPECT_NE(
        r.status().message().find(
            LoggedPath(log[static_cast<size_t>(k - 1)]).substr((*root_ + "/sticky-count").size())),
        std::string::npos)
        << r.status().message();
    EXPECT_NE(r.status().message().find("No space left on device"), std::string::npos);
    verify::VerifyReport v = Verify(dir);
    EXPECT_NE(v.outcome, verify::Outcome::kFailed) << v.message;
    RunOptions o = Options(dir);
    o.resume = IsDirectory(dir) && v.outcome != verify::Outcome::kVerified;
    if (v.outcome == verify::Outcome::kVerified) {
      ++completed;
      continue;
    }
    Result<RunSummary> again = RunAttested(o);
    ASSERT_TRUE(again.ok()) << again.status().message();
    EXPECT_EQ(again->final_step_hash, *hash_);
    EXPECT_TRUE(ReadBundle(dir) == *reference_);
    if (again->final_step_hash == *hash_ && ReadBundle(dir) == *reference_) ++completed;
  }
  std::printf(
      "full from operation k on: %d cases (k = 1, 8, ..., of N = %lld), %d completed to "
      "the uninterrupted bundle\n",
      cases, static_cast<long long>(n), completed);
  EXPECT_EQ(completed, cases);
}

}  // namespace
}  // namespace detrain::bundle
