// Crash safety of `detrain run --attest` against real kills (DESIGN.md §5: "an interrupted run
// leaves a bundle that says it is incomplete and can be resumed to the identical result";
// evidence/bundle/attested_run.h).
//
// Each trial starts `detrain run tiny --attest -o DIR --steps 1000` (DIR made empty first) as a
// child process, kills it with SIGKILL after a delay drawn from a seeded RNG over 1.2 times the
// length of an uninterrupted run, and then requires:
//   - `verify DIR` says verified (the run had finished) or incomplete (exit 1), nothing else —
//     unless the child died before it wrote any file (while compiling), when DIR is no bundle
//     at all (exit 2);
//   - `run --resume` completes the bundle, and every file but environment.json is the bytes of
//     the uninterrupted run's bundle (so the final step hash is its final step hash).
// Five more kills land as the first static file appears (the bundle must already say it is
// incomplete), and one trial sends SIGINT instead: exit code 130, an incomplete bundle, and it
// resumes.
//
// 20 trials by default. The long run (200 trials) is
//   DETRAIN_INTERRUPT_TRIALS=200 build/tests/cli/interrupt_test
// (a test-only knob; the RNG seed is DETRAIN_INTERRUPT_SEED, default 20250101, printed).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <thread>

#include "cli/cli_runner.h"

extern char** environ;

namespace detrain::testing {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

const std::string kTiny =
    std::string(DETRAIN_SOURCE_DIR) + "/tests/evidence/testdata/tiny/train.dt";
const std::string kSteps = "1000";  // 125 checkpoints (every 8 steps): kills land mid-run

// The bundles live in memory where there is a tmpfs: a SIGKILL leaves the page cache as it is,
// so this loses nothing a kill could show, and the run's length no longer depends on how long
// a loaded disk takes to fsync (the kills are spread over that length).
std::string ScratchRoot() {
  std::error_code ec;
  if (fs::is_directory("/dev/shm", ec)) {
    std::string tmpl = "/dev/shm/detrain_interrupt.XXXXXX";
    if (::mkdtemp(tmpl.data()) != nullptr) return tmpl;
  }
  return MakeTempDir();
}

std::string Slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

std::map<std::string, std::string> ReadTree(const std::string& dir) {
  std::map<std::string, std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.is_regular_file()) files[fs::relative(e.path(), dir).string()] = Slurp(e.path());
  }
  return files;
}

// No file in `dir` yet but temporaries (*.tmp.*): the run had not begun writing its bundle.
bool NothingWritten(const std::string& dir) {
  if (!fs::exists(dir)) return true;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.is_regular_file() && e.path().filename().string().find(".tmp.") == std::string::npos) {
      return false;
    }
  }
  return true;
}

std::vector<std::string> RunArgs(const std::string& dir) {
  return {"run", kTiny, "--attest", "-o", dir, "--steps", kSteps, "-q"};
}

// Starts DETRAIN_BINARY with `args`, stdout and stderr to `log`.
pid_t Spawn(const std::vector<std::string>& args, const std::string& log) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  std::string bin = DETRAIN_BINARY;
  std::vector<std::string> copy = args;
  std::vector<char*> argv = {bin.data()};
  for (std::string& a : copy) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, bin.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  EXPECT_EQ(rc, 0) << "posix_spawn " << bin;
  return rc == 0 ? pid : -1;
}

int Wait(pid_t pid) {
  int status = 0;
  EXPECT_EQ(waitpid(pid, &status, 0), pid);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string FinalHash(const std::string& out) {
  const std::string key = "final step hash: ";
  size_t at = out.find(key);
  return at == std::string::npos ? "" : out.substr(at + key.size(), 64);
}

int64_t EnvOr(const char* name, int64_t otherwise) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::atoll(v) : otherwise;
}

class InterruptTest : public ::testing::Test {
 protected:
  // The uninterrupted run: its bundle, final step hash and wall time.
  static void SetUpTestSuite() {
    root_ = new std::string(ScratchRoot());
    reference_ = new std::string(*root_ + "/reference");
    // The median of three runs' wall times (a loaded machine slows some).
    std::vector<Clock::duration> times;
    for (int i = 0; i < 3; ++i) {
      const std::string dir = i == 0 ? *reference_ : *root_ + "/timing" + std::to_string(i);
      auto start = Clock::now();
      CliResult r = RunDetrain(RunArgs(dir));
      times.push_back(Clock::now() - start);
      ASSERT_EQ(r.exit_code, 0) << r.err;
      if (i == 0) hash_ = new std::string(FinalHash(r.out));
      EXPECT_EQ(FinalHash(r.out), *hash_) << "two uninterrupted runs differ";
    }
    std::sort(times.begin(), times.end());
    duration_ = times[1];
    CliResult v = RunDetrain({"verify", *reference_, "--jobs", "2"});
    ASSERT_EQ(v.exit_code, 0) << v.err;
    files_ = new std::map<std::string, std::string>(ReadTree(*reference_));
    files_->erase("environment.json");
  }
  static void TearDownTestSuite() {
    std::error_code ignored;
    fs::remove_all(*root_, ignored);
  }

  // `run --resume` completes `dir` to the reference bundle.
  static void ResumeToReference(const std::string& dir) {
    std::vector<std::string> args = RunArgs(dir);
    args.push_back("--resume");
    CliResult r = RunDetrain(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(FinalHash(r.out), *hash_);
    std::map<std::string, std::string> got = ReadTree(dir);
    got.erase("environment.json");
    ASSERT_EQ(got.size(), files_->size()) << dir;
    for (const auto& [name, bytes] : *files_) {
      auto it = got.find(name);
      ASSERT_TRUE(it != got.end()) << name << " missing from " << dir;
      EXPECT_TRUE(it->second == bytes) << name << " differs from the uninterrupted run's";
    }
  }

  static std::string* root_;
  static std::string* reference_;
  static std::string* hash_;
  static std::map<std::string, std::string>* files_;
  static Clock::duration duration_;
};

std::string* InterruptTest::root_ = nullptr;
std::string* InterruptTest::reference_ = nullptr;
std::string* InterruptTest::hash_ = nullptr;
std::map<std::string, std::string>* InterruptTest::files_ = nullptr;
Clock::duration InterruptTest::duration_{};

TEST_F(InterruptTest, SigkillAtRandomTimesThenResume) {
  const int64_t trials = EnvOr("DETRAIN_INTERRUPT_TRIALS", 20);
  const uint64_t seed = static_cast<uint64_t>(EnvOr("DETRAIN_INTERRUPT_SEED", 20250101));
  const double run_us = std::chrono::duration<double, std::micro>(duration_).count();
  std::printf("uninterrupted run: %.0f ms; %lld trials, seed %llu\n", run_us / 1000,
              static_cast<long long>(trials), static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  // A little past the typical length, so that some runs finish (or are killed as they exit).
  std::uniform_real_distribution<double> delay(0, 1.2 * run_us);
  std::map<std::string, int> seen;
  for (int64_t i = 0; i < trials; ++i) {
    const auto us = static_cast<int64_t>(delay(rng));
    SCOPED_TRACE("trial " + std::to_string(i) + ": SIGKILL after " + std::to_string(us) + " us");
    const std::string dir = *root_ + "/t" + std::to_string(i);
    fs::create_directory(dir);
    pid_t pid = Spawn(RunArgs(dir), *root_ + "/t" + std::to_string(i) + ".log");
    ASSERT_GT(pid, 0);
    std::this_thread::sleep_for(std::chrono::microseconds(us));
    kill(pid, SIGKILL);
    const int code = Wait(pid);
    ASSERT_TRUE(code == 0 || code == 128 + SIGKILL) << "exit " << code;
    CliResult v = RunDetrain({"verify", dir});
    if (v.exit_code == 0) {
      // Finished (a kill after manifest.json was written finds a complete bundle too).
      const std::string all = kSteps + " steps, " + kSteps + " replayed";
      EXPECT_NE(v.err.find("verified: " + all), std::string::npos) << v.err;
      std::map<std::string, std::string> got = ReadTree(dir);
      got.erase("environment.json");
      EXPECT_TRUE(got == *files_) << "a finished run differs from the uninterrupted one";
      ++seen["finished"];
    } else if (v.exit_code == 2 && NothingWritten(dir)) {
      EXPECT_NE(code, 0);
      EXPECT_NE(v.err.find("not a bundle"), std::string::npos) << v.err;
      ++seen["killed before the bundle began"];
      ResumeToReference(dir);
    } else {
      EXPECT_NE(code, 0) << "a run that exited 0 left an unverified bundle";
      EXPECT_EQ(v.exit_code, 1) << v.err;
      EXPECT_NE(v.err.find("INCOMPLETE: the bundle is incomplete"), std::string::npos) << v.err;
      ++seen["incomplete"];
      ResumeToReference(dir);
    }
    if (HasFatalFailure()) return;
    std::error_code ignored;
    fs::remove_all(dir, ignored);
  }
  for (const auto& [what, n] : seen) std::printf("  %s: %d\n", what.c_str(), n);
  EXPECT_GT(seen["incomplete"], 0) << "no kill landed in the middle of a run";
}

// The kill lands just as the first static file (data/data.json) appears: the bundle must
// already say it is incomplete (progress.json is written before anything else).
TEST_F(InterruptTest, SigkillWhileWritingTheStaticFiles) {
  for (int i = 0; i < 5; ++i) {
    SCOPED_TRACE("trial " + std::to_string(i));
    const std::string dir = *root_ + "/statics" + std::to_string(i);
    fs::create_directory(dir);
    pid_t pid = Spawn(RunArgs(dir), *root_ + "/statics.log");
    ASSERT_GT(pid, 0);
    const auto deadline = Clock::now() + std::chrono::seconds(60);
    std::error_code ec;
    while (!fs::exists(dir + "/data/data.json", ec) && Clock::now() < deadline) {
    }
    kill(pid, SIGKILL);
    EXPECT_EQ(Wait(pid), 128 + SIGKILL);
    CliResult v = RunDetrain({"verify", dir});
    EXPECT_EQ(v.exit_code, 1) << v.err;
    EXPECT_NE(v.err.find("INCOMPLETE: the bundle is incomplete"), std::string::npos) << v.err;
    ResumeToReference(dir);
    if (HasFatalFailure()) return;
  }
}

TEST_F(InterruptTest, SigintStopsAfterTheStepAndResumes) {
  const std::string dir = *root_ + "/sigint";
  fs::create_directory(dir);
  const std::string log = *root_ + "/sigint.log";
  pid_t pid = Spawn(RunArgs(dir), log);
  ASSERT_GT(pid, 0);
  // Wait for the second checkpoint (progress.json is replaced atomically), then interrupt.
  const auto deadline = Clock::now() + std::chrono::seconds(60);
  for (;;) {
    std::string p = Slurp(dir + "/progress.json");
    if (!p.empty() && nlohmann::json::parse(p, nullptr, false).value("steps_done", 0) >= 16) break;
    ASSERT_LT(Clock::now(), deadline) << "the run never reached its second checkpoint";
    std::this_thread::sleep_for(std::chrono::microseconds(500));
  }
  kill(pid, SIGINT);
  EXPECT_EQ(Wait(pid), 130) << Slurp(log);
  const std::string err = Slurp(log);
  EXPECT_NE(err.find("interrupted after step "), std::string::npos) << err;
  EXPECT_NE(err.find("the bundle is incomplete. Continue it with:"), std::string::npos) << err;
  EXPECT_NE(err.find("--resume"), std::string::npos) << err;
  EXPECT_FALSE(fs::exists(dir + "/manifest.json"));
  CliResult v = RunDetrain({"verify", dir});
  EXPECT_EQ(v.exit_code, 1) << v.err;
  EXPECT_NE(v.err.find("INCOMPLETE"), std::string::npos) << v.err;
  ResumeToReference(dir);
  CliResult again = RunDetrain({"verify", dir, "--jobs", "2"});
  EXPECT_EQ(again.exit_code, 0) << again.err;
}

}  // namespace
}  // namespace detrain::testing
