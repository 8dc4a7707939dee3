// The run / resume / invariance contract of `detrain run --attest` (evidence/bundle/attested_run.h;
// DESIGN.md §2 and §5), tested through the library:
//   - invariance: the tiny program's bundle is the same bytes across runs, and for every thread
//     count, device count and ISA path but for environment.json, which records them (and so the
//     manifest's entry for it, the root digest, and the final weights' copy of that digest);
//     it verifies under executor options other than the run's;
//   - resume: a run killed after any step (RunOptions::crash_after_steps) and resumed is the
//     uninterrupted run's bundle, byte for byte; a torn step log or a corrupt newest checkpoint
//     is survived, a complete or foreign bundle is refused;
//   - a non-finite loss stops the run with a bundle that verifies and says so;
//   - the step digest policy is hashed; `run` without --attest trains the same weights;
//   - the examples train and verify (breast_cancer to its target accuracy).
// Every bundle lives in a fresh temporary directory, removed at the end of its test.
#include "evidence/bundle/attested_run.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>

#include "attest/canonical_json.h"
#include "base/file_io.h"
#include "base/fs.h"
#include "base/safetensors.h"
#include "evidence/bundle/bundle_format.h"
#include "evidence/verify/verifier.h"
#include "runtime/runtime_test_util.h"

namespace detrain::bundle {
namespace {

using nlohmann::json;
using Files = std::map<std::string, std::string>;  // relative path -> bytes

const std::string kTinyDir = std::string(DETRAIN_SOURCE_DIR) + "/tests/evidence/testdata/tiny";
const std::string kTiny = kTinyDir + "/train.dt";
constexpr int64_t kTinySteps = 24;

// A fresh directory, removed (with everything in it) when the test ends. In memory where there
// is a tmpfs: these tests crash in-process, so the page cache is all a kill would leave, and the
// many small runs are not slowed by a loaded disk's fsync.
class TempDir {
 public:
  TempDir() {
    std::error_code ec;
    const std::filesystem::path base = std::filesystem::is_directory("/dev/shm", ec)
                                           ? std::filesystem::path("/dev/shm")
                                           : std::filesystem::temp_directory_path();
    std::string tmpl = (base / "detrain_run_test.XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) ADD_FAILURE() << "mkdtemp failed";
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  const std::string& path() const { return path_; }
  std::string Sub(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

RunOptions Options(const std::string& program, const std::string& dir) {
  RunOptions o;
  o.program = program;
  o.output_dir = dir;
  o.detrain_version = "test";
  return o;
}

RunSummary MustRun(const RunOptions& o) {
  Result<RunSummary> r = RunAttested(o);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? *r : RunSummary{};
}

verify::VerifyReport Verify(const std::string& dir, runtime::ExecutorOptions executor = {},
                            int jobs = 1) {
  verify::VerifyOptions o;
  o.bundle = dir;
  o.executor = executor;
  o.jobs = jobs;
  o.integrity_threads = 2;
  return verify::VerifyBundle(o);
}

void ExpectVerified(const std::string& dir, runtime::ExecutorOptions executor = {}, int jobs = 1) {
  verify::VerifyReport r = Verify(dir, executor, jobs);
  EXPECT_EQ(r.outcome, verify::Outcome::kVerified) << dir << ": " << r.message;
}

Files ReadBundle(const std::string& dir) {
  Files files;
  Result<std::vector<std::string>> names = ListFiles(dir);
  EXPECT_TRUE(names.ok()) << names.status().message();
  if (!names.ok()) return files;
  for (const std::string& n : *names) {
    Result<std::string> bytes = ReadFile(JoinPath(dir, n));
    EXPECT_TRUE(bytes.ok()) << bytes.status().message();
    if (bytes.ok()) files[n] = std::move(*bytes);
  }
  return files;
}

// The same set of files with the same bytes, but those in `except`.
void ExpectSameFiles(const Files& want, const Files& got, const std::set<std::string>& except,
                     const std::string& what) {
  std::set<std::string> names;
  for (const auto& [n, b] : want) names.insert(n);
  for (const auto& [n, b] : got) names.insert(n);
  for (const std::string& n : names) {
    if (except.count(n) != 0) continue;
    auto a = want.find(n), b = got.find(n);
    if (a == want.end() || b == got.end()) {
      ADD_FAILURE() << what << ": " << n << " is in only one bundle";
      continue;
    }
    EXPECT_TRUE(a->second == b->second) << what << ": " << n << " differs";
  }
}

std::string FinalHash(const Files& bundle) {
  Result<json> m = attest::ParseJson(bundle.at(kManifest));
  return m.ok() ? (*m)["final"]["step_hash"].get<std::string>() : "";
}

// environment.json records the threads, devices and ISA, so the manifest that lists its digest,
// the root digest and the final weights (which name the root digest) differ with them too. The
// rest of the manifest, and the weights' tensors, may not.
json ManifestWithoutEnvironment(const std::string& text) {
  Result<json> m = attest::ParseJson(text);
  EXPECT_TRUE(m.ok());
  if (!m.ok()) return {};
  json out = *m;
  out.erase("root_digest");
  json files = json::array();
  for (const json& f : out["files"]) {
    if (f["path"] != kEnvironment) files.push_back(f);
  }
  out["files"] = files;
  return out;
}

void ExpectSameTensors(const std::string& want, const std::string& got, const std::string& what) {
  Result<SafetensorsFile> a = ParseSafetensors(want), b = ParseSafetensors(got);
  ASSERT_TRUE(a.ok() && b.ok()) << what;
  ASSERT_EQ(a->tensors.size(), b->tensors.size()) << what;
  for (size_t i = 0; i < a->tensors.size(); ++i) {
    const SafeTensor &x = a->tensors[i], &y = b->tensors[i];
    EXPECT_EQ(x.name, y.name) << what;
    EXPECT_EQ(x.dtype, y.dtype) << what << " " << x.name;
    EXPECT_EQ(x.shape, y.shape) << what << " " << x.name;
    EXPECT_TRUE(x.data == y.data) << what << ": tensor " << x.name << " differs";
  }
}

// Everything that the reproducibility claim covers is identical; see ManifestWithoutEnvironment.
void ExpectSameRun(const Files& want, const Files& got, const std::string& what) {
  ExpectSameFiles(want, got, {kEnvironment, kManifest, kFinalWeights}, what);
  ASSERT_TRUE(want.count(kManifest) && got.count(kManifest)) << what;
  EXPECT_EQ(ManifestWithoutEnvironment(want.at(kManifest)),
            ManifestWithoutEnvironment(got.at(kManifest)))
      << what;
  ExpectSameTensors(want.at(kFinalWeights), got.at(kFinalWeights), what);
}

// A copy of the tiny program (and its data) in `dir`, with `from` replaced by `to` in its text.
std::string TinyVariant(const TempDir& dir, const std::string& from, const std::string& to) {
  Result<std::string> text = ReadFile(kTiny);
  EXPECT_TRUE(text.ok());
  std::string t = *text;
  size_t at = t.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) t.replace(at, from.size(), to);
  std::filesystem::copy_file(kTinyDir + "/tiny.csv", dir.Sub("tiny.csv"));
  EXPECT_TRUE(WriteFileAtomic(dir.Sub("train.dt"), t).ok());
  return dir.Sub("train.dt");
}

// ---- invariance ---------------------------------------------------------------------------

TEST(AttestedRun, SameBundleForEveryThreadDeviceAndIsa) {
  TempDir tmp;
  RunSummary base = MustRun(Options(kTiny, tmp.Sub("base")));
  ASSERT_TRUE(base.complete);
  EXPECT_EQ(base.steps_done, kTinySteps);
  const Files want = ReadBundle(tmp.Sub("base"));
  EXPECT_EQ(FinalHash(want), base.final_step_hash);

  // The same options again: every byte, environment.json included.
  {
    RunSummary again = MustRun(Options(kTiny, tmp.Sub("again")));
    EXPECT_EQ(again.final_step_hash, base.final_step_hash);
    EXPECT_EQ(again.root_digest, base.root_digest);
    ExpectSameFiles(want, ReadBundle(tmp.Sub("again")), {}, "a second run");
  }
  struct Variant {
    int threads, devices;
    std::optional<Isa> isa;
  };
  std::vector<Variant> variants = {{2, 1, {}}, {1, 2, {}}, {1, 4, {}}, {2, 4, {}}};
  for (Isa isa : runtime::SupportedIsas()) variants.push_back({1, 1, isa});
  for (const Variant& v : variants) {
    const std::string name = "threads " + std::to_string(v.threads) + " devices " +
                             std::to_string(v.devices) + " isa " +
                             (v.isa ? std::string(IsaName(*v.isa)) : "default");
    SCOPED_TRACE(name);
    const std::string dir =
        tmp.Sub("t" + std::to_string(v.threads) + "d" + std::to_string(v.devices) +
                (v.isa ? std::string(IsaName(*v.isa)) : ""));
    RunOptions o = Options(kTiny, dir);
    o.executor.threads = v.threads;
    o.executor.devices = v.devices;
    o.executor.isa = v.isa;
    RunSummary got = MustRun(o);
    EXPECT_TRUE(got.complete);
    EXPECT_EQ(got.final_step_hash, base.final_step_hash);
    ExpectSameRun(want, ReadBundle(dir), name);
  }
}

TEST(AttestedRun, VerifiesUnderOtherExecutorOptions) {
  TempDir tmp;
  RunOptions o = Options(kTiny, tmp.Sub("b"));
  o.executor.threads = 2;
  o.executor.devices = 4;
  ASSERT_TRUE(MustRun(o).complete);
  std::vector<runtime::ExecutorOptions> others = {{1, Isa::kScalar, 1}, {2, std::nullopt, 2}};
  for (Isa isa : runtime::SupportedIsas()) others.push_back({1, isa, 1});
  for (const runtime::ExecutorOptions& e : others) {
    SCOPED_TRACE("threads " + std::to_string(e.threads) + " devices " + std::to_string(e.devices));
    verify::VerifyReport r = Verify(tmp.Sub("b"), e, 2);
    EXPECT_EQ(r.outcome, verify::Outcome::kVerified) << r.message;
    EXPECT_EQ(r.steps_replayed, kTinySteps);
  }
}

TEST(AttestedRun, Sha256StepDigestVerifiesAndIsHashed) {
  TempDir tmp;
  RunSummary xxh3 = MustRun(Options(kTiny, tmp.Sub("xxh3")));
  RunOptions o = Options(kTiny, tmp.Sub("sha256"));
  o.step_digest = attest::DigestPolicy::kSha256;
  RunSummary sha = MustRun(o);
  ASSERT_TRUE(sha.complete);
  EXPECT_NE(sha.final_step_hash, xxh3.final_step_hash) << "the digest policy is not hashed";
  ExpectVerified(tmp.Sub("sha256"));
  Result<json> m = attest::ParseJson(ReadBundle(tmp.Sub("sha256")).at(kManifest));
  ASSERT_TRUE(m.ok());
  EXPECT_EQ((*m)["steps"]["state_digest"], "sha256");
  EXPECT_EQ((*m)["run"]["state_digest"], "sha256");
}

// ---- resume -------------------------------------------------------------------------------

// Crashes a run of the tiny program after `k` steps in `dir`, resumes it, and compares the
// result with the uninterrupted bundle `want`.
void CrashAndResume(const std::string& dir, int64_t k, const Files& want) {
  SCOPED_TRACE("crash after " + std::to_string(k) + " steps");
  RunOptions o = Options(kTiny, dir);
  o.crash_after_steps = k;
  RunSummary crashed = MustRun(o);
  EXPECT_FALSE(crashed.complete);
  EXPECT_EQ(crashed.steps_done, k);
  EXPECT_FALSE(PathExists(JoinPath(dir, kManifest)));
  EXPECT_TRUE(PathExists(JoinPath(dir, kProgress)));
  verify::VerifyReport v = Verify(dir);
  EXPECT_EQ(v.outcome, verify::Outcome::kIncomplete) << v.message;
  EXPECT_EQ(v.ExitCode(), 1);

  o.crash_after_steps.reset();
  o.resume = true;
  int64_t first = -1;
  o.progress = [&](const RunProgress& p) {
    if (p.kind == RunProgress::kStarted) first = p.first_step;
  };
  RunSummary resumed = MustRun(o);
  EXPECT_TRUE(resumed.complete);
  EXPECT_EQ(first, std::min<int64_t>(k / 8 * 8, 16)) << "the newest checkpoint (none at the end)";
  EXPECT_EQ(resumed.steps_done, kTinySteps);
  EXPECT_EQ(resumed.final_step_hash, FinalHash(want));
  ExpectSameFiles(want, ReadBundle(dir), {kEnvironment}, "resumed after " + std::to_string(k));
}

TEST(AttestedRun, ResumeAfterACrashAtEveryStep) {
  TempDir tmp;
  ASSERT_TRUE(MustRun(Options(kTiny, tmp.Sub("whole"))).complete);
  const Files want = ReadBundle(tmp.Sub("whole"));
  for (int64_t k = 1; k <= kTinySteps; ++k) {
    CrashAndResume(tmp.Sub("k" + std::to_string(k)), k, want);
    if (::testing::Test::HasFailure()) break;
  }
  ExpectVerified(tmp.Sub("k13"));
}

TEST(AttestedRun, ResumeOfACompleteBundleIsRefused) {
  TempDir tmp;
  ASSERT_TRUE(MustRun(Options(kTiny, tmp.Sub("b"))).complete);
  const Files before = ReadBundle(tmp.Sub("b"));
  RunOptions o = Options(kTiny, tmp.Sub("b"));
  o.resume = true;
  Result<RunSummary> r = RunAttested(o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("complete"), std::string::npos) << r.status().message();
  ExpectSameFiles(before, ReadBundle(tmp.Sub("b")), {}, "a refused resume");
}

TEST(AttestedRun, FreshRunIntoABundleIsRefused) {
  TempDir tmp;
  RunOptions o = Options(kTiny, tmp.Sub("b"));
  o.crash_after_steps = 5;
  MustRun(o);
  o.crash_after_steps.reset();
  Result<RunSummary> r = RunAttested(o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("--resume"), std::string::npos) << r.status().message();
}

TEST(AttestedRun, ResumeOfANonexistentBundleIsRefused) {
  TempDir tmp;
  RunOptions o = Options(kTiny, tmp.Sub("none"));
  o.resume = true;
  Result<RunSummary> r = RunAttested(o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("no bundle to resume"), std::string::npos);
}

// Resuming with another program or other options names the first static file that differs.
TEST(AttestedRun, ResumeWithADifferentRunIsRefused) {
  TempDir tmp;
  const std::string dir = tmp.Sub("b");
  RunOptions o = Options(kTiny, dir);
  o.crash_after_steps = 10;
  MustRun(o);
  const Files before = ReadBundle(dir);
  struct Case {
    std::string what, from, to;  // program text change
    std::optional<int64_t> steps;
    std::optional<attest::DigestPolicy> policy;
    std::string file;  // named in the message
  };
  const std::vector<Case> cases = {
      {"another learning rate",
       "learning_rate = 1e-2",
       "learning_rate = 2e-2",
       {},
       {},
       "program/train.dt"},
      {"another seed (another split)", "seed = 3", "seed = 4", {}, {}, "data/data.json"},
      {"--steps", "", "", 30, {}, "run.json"},
      {"--step-digest", "", "", {}, attest::DigestPolicy::kSha256, "run.json"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    TempDir other;
    RunOptions r = Options(c.from.empty() ? kTiny : TinyVariant(other, c.from, c.to), dir);
    r.resume = true;
    r.steps = c.steps;
    if (c.policy) r.step_digest = *c.policy;
    Result<RunSummary> got = RunAttested(r);
    ASSERT_FALSE(got.ok());
    EXPECT_NE(got.status().message().find("cannot resume: " + c.file), std::string::npos)
        << got.status().message();
  }
  ExpectSameFiles(before, ReadBundle(dir), {}, "refused resumes");
  // And the right run still resumes it.
  o.crash_after_steps.reset();
  o.resume = true;
  EXPECT_TRUE(MustRun(o).complete);
  ExpectVerified(dir);
}

// A kill in the middle of writing a record leaves a torn last line; it is dropped.
TEST(AttestedRun, ResumeAfterATornStepLog) {
  TempDir tmp;
  ASSERT_TRUE(MustRun(Options(kTiny, tmp.Sub("whole"))).complete);
  const Files want = ReadBundle(tmp.Sub("whole"));
  for (int64_t k : {5, 12, 17}) {
    SCOPED_TRACE("crash after " + std::to_string(k));
    const std::string dir = tmp.Sub("k" + std::to_string(k));
    RunOptions o = Options(kTiny, dir);
    o.crash_after_steps = k;
    MustRun(o);
    const std::string steps = JoinPath(dir, kSteps);
    Result<std::string> text = ReadFile(steps);
    ASSERT_TRUE(text.ok());
    // Cut the last record in half.
    size_t last = text->rfind('\n', text->size() - 2) + 1;
    std::filesystem::resize_file(steps, last + (text->size() - last) / 2);
    EXPECT_EQ(Verify(dir).outcome, verify::Outcome::kIncomplete);
    o.crash_after_steps.reset();
    o.resume = true;
    RunSummary r = MustRun(o);
    EXPECT_TRUE(r.complete);
    EXPECT_EQ(r.final_step_hash, FinalHash(want));
    ExpectSameFiles(want, ReadBundle(dir), {kEnvironment}, "torn log");
  }
}

// A kill while the static files are written: progress.json (written first) says the bundle is
// incomplete, and it resumes from step 0.
TEST(AttestedRun, ResumeAfterAKillWhileWritingStatics) {
  TempDir tmp;
  ASSERT_TRUE(MustRun(Options(kTiny, tmp.Sub("whole"))).complete);
  const Files want = ReadBundle(tmp.Sub("whole"));
  const std::string dir = tmp.Sub("b");
  RunOptions o = Options(kTiny, dir);
  o.crash_after_steps = 1;
  MustRun(o);
  // Keep progress.json and the first static files in write order (data/, program/).
  for (const auto& [name, bytes] : ReadBundle(dir)) {
    if (name != kProgress && name.rfind("data/", 0) != 0 && name.rfind("program/", 0) != 0) {
      ASSERT_TRUE(RemoveFile(JoinPath(dir, name)).ok());
    }
  }
  verify::VerifyReport v = Verify(dir);
  EXPECT_EQ(v.outcome, verify::Outcome::kIncomplete) << v.message;
  o.crash_after_steps.reset();
  o.resume = true;
  EXPECT_EQ(MustRun(o).final_step_hash, FinalHash(want));
  ExpectSameFiles(want, ReadBundle(dir), {kEnvironment}, "killed while writing statics");
}

// A kill right after steps.jsonl was created, or in the middle of its header line: no record
// can follow, so the run starts over from step 0.
TEST(AttestedRun, ResumeAfterATornStepLogHeader) {
  TempDir tmp;
  ASSERT_TRUE(MustRun(Options(kTiny, tmp.Sub("whole"))).complete);
  const Files want = ReadBundle(tmp.Sub("whole"));
  for (bool empty : {true, false}) {
    SCOPED_TRACE(empty ? "empty" : "half a header");
    const std::string dir = tmp.Sub(empty ? "empty" : "half");
    RunOptions o = Options(kTiny, dir);
    o.crash_after_steps = 3;
    MustRun(o);
    const std::string steps = JoinPath(dir, kSteps);
    Result<std::string> text = ReadFile(steps);
    ASSERT_TRUE(text.ok());
    std::filesystem::resize_file(steps, empty ? 0 : text->find('\n') / 2);
    EXPECT_EQ(Verify(dir).outcome, verify::Outcome::kIncomplete);
    o.crash_after_steps.reset();
    o.resume = true;
    RunSummary r = MustRun(o);
    EXPECT_TRUE(r.complete);
    EXPECT_EQ(r.final_step_hash, FinalHash(want));
    ExpectSameFiles(want, ReadBundle(dir), {kEnvironment}, "torn header");
  }
}

// A checkpoint whose bytes are not what its record's roots say is skipped for an older one.
TEST(AttestedRun, ResumeFallsBackFromACorruptCheckpoint) {
  TempDir tmp;
  ASSERT_TRUE(MustRun(Options(kTiny, tmp.Sub("whole"))).complete);
  const Files want = ReadBundle(tmp.Sub("whole"));
  enum Damage { kFlip, kTruncate, kRemove };
  for (Damage d : {kFlip, kTruncate, kRemove}) {
    SCOPED_TRACE("damage " + std::to_string(d));
    const std::string dir = tmp.Sub("d" + std::to_string(d));
    RunOptions o = Options(kTiny, dir);
    o.crash_after_steps = 20;
    MustRun(o);
    const std::string newest = JoinPath(dir, CheckpointPath(16));
    ASSERT_TRUE(PathExists(newest));
    Result<std::string> bytes = ReadFile(newest);
    ASSERT_TRUE(bytes.ok());
    std::string b = *bytes;
    if (d == kFlip) b[b.size() - 3] ^= 0x01;  // a tensor byte
    if (d == kTruncate) b.resize(b.size() / 2);
    if (d == kRemove) {
      ASSERT_TRUE(RemoveFile(newest).ok());
    } else {
      ASSERT_TRUE(WriteFileAtomic(newest, b).ok());
    }
    o.crash_after_steps.reset();
    o.resume = true;
    int64_t first = -1;
    o.progress = [&](const RunProgress& p) {
      if (p.kind == RunProgress::kStarted) first = p.first_step;
    };
    RunSummary r = MustRun(o);
    EXPECT_EQ(first, 8);
    EXPECT_TRUE(r.complete);
    EXPECT_EQ(r.final_step_hash, FinalHash(want));
    ExpectSameFiles(want, ReadBundle(dir), {kEnvironment}, "corrupt checkpoint");
  }
}

// Resumed with other executor options: the same records (environment.json says who ran last).
TEST(AttestedRun, ResumeUnderOtherExecutorOptions) {
  TempDir tmp;
  ASSERT_TRUE(MustRun(Options(kTiny, tmp.Sub("whole"))).complete);
  const Files want = ReadBundle(tmp.Sub("whole"));
  RunOptions o = Options(kTiny, tmp.Sub("b"));
  o.crash_after_steps = 11;
  MustRun(o);
  o.crash_after_steps.reset();
  o.resume = true;
  o.executor = {2, Isa::kScalar, 4};
  RunSummary r = MustRun(o);
  EXPECT_EQ(r.final_step_hash, FinalHash(want));
  ExpectSameRun(want, ReadBundle(tmp.Sub("b")), "resumed with threads 2, scalar, 4 devices");
  ExpectVerified(tmp.Sub("b"));
}

TEST(AttestedRun, InterruptStopsAfterTheCurrentStepAndResumes) {
  TempDir tmp;
  ASSERT_TRUE(MustRun(Options(kTiny, tmp.Sub("whole"))).complete);
  const Files want = ReadBundle(tmp.Sub("whole"));
  std::atomic<bool> interrupt{false};
  RunOptions o = Options(kTiny, tmp.Sub("b"));
  o.interrupt = &interrupt;
  o.progress = [&](const RunProgress& p) {
    if (p.steps_done == 13) interrupt.store(true);
  };
  RunSummary r = MustRun(o);
  EXPECT_TRUE(r.interrupted);
  EXPECT_FALSE(r.complete);
  EXPECT_EQ(r.steps_done, 13);
  EXPECT_EQ(Verify(tmp.Sub("b")).outcome, verify::Outcome::kIncomplete);
  o.interrupt = nullptr;
  o.progress = nullptr;
  o.resume = true;
  RunSummary resumed = MustRun(o);
  EXPECT_TRUE(resumed.complete);
  ExpectSameFiles(want, ReadBundle(tmp.Sub("b")), {kEnvironment}, "interrupted");
}

// ---- a non-finite loss --------------------------------------------------------------------

// Adam's first update moves every weight by about the learning rate: 1e30 makes the logits of
// step 1 overflow, and the loss NaN.
TEST(AttestedRun, NonFiniteLossStopsTheRun) {
  TempDir tmp;
  const std::string program = TinyVariant(tmp, "learning_rate = 1e-2", "learning_rate = 1e30");
  RunSummary r = MustRun(Options(program, tmp.Sub("b")));
  ASSERT_TRUE(r.stopped) << "the loss never became non-finite";
  EXPECT_TRUE(r.complete);
  EXPECT_EQ(r.steps_done, 1);
  EXPECT_NE(r.stop_reason.find("step 1:"), std::string::npos) << r.stop_reason;
  EXPECT_NE(r.stop_reason.find("loss"), std::string::npos) << r.stop_reason;
  const Files files = ReadBundle(tmp.Sub("b"));
  Result<json> m = attest::ParseJson(files.at(kManifest));
  ASSERT_TRUE(m.ok());
  EXPECT_EQ((*m)["status"], "stopped");
  EXPECT_EQ((*m)["stop"]["reason"], r.stop_reason);
  EXPECT_EQ((*m)["final"]["steps_done"], 1);
  EXPECT_EQ(files.count(kProgress), 0u);
  verify::VerifyReport v = Verify(tmp.Sub("b"));
  EXPECT_EQ(v.outcome, verify::Outcome::kVerified) << v.message;
  EXPECT_EQ(v.ExitCode(), 0);
  EXPECT_EQ(v.status, "stopped");
  EXPECT_NE(v.message.find("the run stopped"), std::string::npos) << v.message;
  // Resuming a stopped bundle is refused like any complete one.
  RunOptions o = Options(program, tmp.Sub("b"));
  o.resume = true;
  EXPECT_FALSE(RunAttested(o).ok());
}

// A stop at the very first step: no step records at all, and the verifier still replays the
// step that stopped the run.
TEST(AttestedRun, NonFiniteLossAtTheFirstStep) {
  TempDir tmp;
  const std::string program = TinyVariant(tmp, "param w1: f32[4, 8] = glorot_uniform",
                                          "param w1: f32[4, 8] = constant(3e38)");
  RunSummary r = MustRun(Options(program, tmp.Sub("b")));
  ASSERT_TRUE(r.stopped) << "the loss of step 0 is finite";
  EXPECT_EQ(r.steps_done, 0);
  EXPECT_NE(r.stop_reason.find("step 0:"), std::string::npos) << r.stop_reason;
  verify::VerifyOptions o;
  o.bundle = tmp.Sub("b");
  std::string lines;
  o.progress = [&](const std::string& l) { lines += l + "\n"; };
  verify::VerifyReport v = verify::VerifyBundle(o);
  EXPECT_EQ(v.outcome, verify::Outcome::kVerified) << v.message;
  EXPECT_EQ(v.status, "stopped");
  EXPECT_EQ(v.steps, 0);
  EXPECT_NE(lines.find("replay: segment 1/1 (steps 0..-1) ok"), std::string::npos)
      << "the stop was not replayed:\n"
      << lines;
}

// ---- without --attest ---------------------------------------------------------------------

TEST(AttestedRun, PlainRunWritesTheSameFinalWeights) {
  TempDir tmp;
  ASSERT_TRUE(MustRun(Options(kTiny, tmp.Sub("bundle"))).complete);
  Result<RunSummary> r = runtime::Train(Options(kTiny, tmp.Sub("plain")));
  ASSERT_TRUE(r.ok()) << r.status().message();
  RunSummary plain = *r;
  EXPECT_TRUE(plain.complete);
  EXPECT_EQ(plain.steps_done, kTinySteps);
  const Files got = ReadBundle(tmp.Sub("plain"));
  EXPECT_EQ(got.size(), 1u) << "only final/weights.safetensors";
  ASSERT_EQ(got.count(kFinalWeights), 1u);
  ExpectSameTensors(ReadBundle(tmp.Sub("bundle")).at(kFinalWeights), got.at(kFinalWeights),
                    "plain vs attested");
}

}  // namespace
}  // namespace detrain::bundle
