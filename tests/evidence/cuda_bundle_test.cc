// Bundles of a run on the CUDA backend (schemas/bundle.md §4.1 "executables", §4.3, §6.1): the
// breast_cancer example trained for a few steps on emulated GPUs (the generated CUDA program run
// on the host: tests/compiler/codegen/cuda/emulator.h) and on the CPU.
//   - the CUDA bundle holds its executable (the CUDA source, PTX and cubins of the plan and the
//     eval plan) and lists it apart from the chain; its step log is the CPU bundle's, byte for
//     byte; each verifies on the other backend;
//   - a CUDA source, a PTX or an executables record edited (and the manifest resealed) is
//     rejected naming the stage; a toolchain other than the recorded one is noted, not failed;
//   - a resume on the other backend is refused with the backend to use;
//   - inspect shows the backend and the CUDA stages; tools/check_bundle.py accepts the bundle.
// The bundles need NVRTC and nvJitLink (CMake registers this test only with the CUDA toolkit);
// each is written once per suite (~15 s here), and the tests that run the toolchain again take
// ~12 s each.
#include <gtest/gtest.h>
#include <stdio.h>
#include <sys/wait.h>

#include "bundle_tamper_fixture.h"
#include "compiler/codegen/cuda/toolchain.h"
#include "evidence/report/inspect.h"
#include "tests/compiler/codegen/cuda/emulator.h"

namespace detrain::tamper_test {
namespace {

const std::string kBreastCancer =
    std::string(DETRAIN_SOURCE_DIR) + "/examples/breast_cancer/train.dt";
constexpr int64_t kSteps = 4;
const std::vector<std::string> kCudaStages = {
    "cuda",      "ptx",      "cubin-sm_80",      "cubin-sm_90",
    "eval-cuda", "eval-ptx", "eval-cubin-sm_80", "eval-cubin-sm_90"};

// One emulated GPU; the executor runs the generated source (no images are loaded).
runtime::ExecutorOptions EmulatedGpu() {
  runtime::ExecutorOptions e;
  e.backend = runtime::Backend::kCuda;
  e.backend_options = testing::EmulatedCuda(1);
  return e;
}

// Inserts the line "// edited" as line 2 of stages/FILE in the bundle `dir`; the new bytes.
std::string EditStage(const std::string& dir, const std::string& file) {
  const std::string path = dir + "/stages/" + file;
  std::string text = Slurp(path);
  text.insert(text.find('\n') + 1, "// edited\n");
  Spit(path, text);
  return text;
}

json ManifestOf(const std::string& dir) {
  return *attest::ParseJson(Slurp(dir + "/manifest.json"));
}

// The fixture's attackers (FixManifest), with bundles of breast_cancer on both backends.
class CudaBundleTest : public BundleTamperTest {
 protected:
  static void SetUpTestSuite() {
    if (!codegen::cuda::ToolchainAvailable()) return;
    char tmpl[] = "/tmp/detrain_cuda_bundle.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    for (bool cuda : {false, true}) {
      bundle::RunOptions o;
      o.program = kBreastCancer;
      o.output_dir = root_ + (cuda ? "/cuda" : "/cpu");
      o.embed_data = true;
      o.steps = kSteps;
      if (cuda) o.executor = EmulatedGpu();
      Result<bundle::RunSummary> r = bundle::RunAttested(o);
      ASSERT_TRUE(r.ok()) << r.status().message();
      ASSERT_TRUE(r->complete);
      (cuda ? cuda_ : cpu_) = o.output_dir;
    }
  }
  static void TearDownTestSuite() {
    if (!root_.empty()) fs::remove_all(root_);
  }

  void SetUp() override {
    if (!codegen::cuda::ToolchainAvailable()) {
      GTEST_SKIP() << "this detrain was built without NVRTC and nvJitLink: no CUDA bundle";
    }
    ASSERT_FALSE(cuda_.empty()) << "the suite's bundles were not written";
  }

  static std::string CopyOf(const std::string& bundle, const std::string& name) {
    const std::string d = root_ + "/" + name + "." + std::to_string(copies_++);
    fs::copy(bundle, d, fs::copy_options::recursive);
    return d;
  }

  static VerifyReport VerifyOn(const std::string& dir, runtime::ExecutorOptions executor,
                               bool replay = true) {
    verify::VerifyOptions o;
    o.bundle = dir;
    o.replay = replay;
    o.integrity_threads = 2;
    o.executor = std::move(executor);
    return verify::VerifyBundle(o);
  }

  static inline std::string cpu_, cuda_;
};

// The phase that passed with notes, or none.
const verify::PhaseReport* Recompiled(const VerifyReport& r) {
  for (const verify::PhaseReport& p : r.phases) {
    if (p.name == "recompile") return &p;
  }
  return nullptr;
}

TEST_F(CudaBundleTest, TheExecutableIsRecordedApartFromTheChain) {
  const json cuda = ManifestOf(cuda_), cpu = ManifestOf(cpu_);
  ASSERT_TRUE(cuda.contains("executables"));
  EXPECT_FALSE(cpu.contains("executables"));
  const json& records = cuda["executables"]["cuda"];
  ASSERT_EQ(records.size(), kCudaStages.size());
  for (size_t i = 0; i < records.size(); ++i) {
    const json& r = records[i];
    EXPECT_EQ(r["stage"], kCudaStages[i]);
    const std::string bytes = Slurp(cuda_ + "/stages/" + r["file"].get<std::string>());
    EXPECT_EQ(attest::Sha256Hex(bytes), r["sha256"]) << r["file"];
    EXPECT_EQ(bytes.size(), r["size"].get<size_t>()) << r["file"];
    EXPECT_FALSE(fs::exists(cpu_ + "/stages/" + r["file"].get<std::string>())) << r["file"];
  }
  EXPECT_EQ(records[1]["transform"]["input_sha256"], records[0]["sha256"]);  // ptx reads cuda
  EXPECT_EQ(cuda["run"]["backend"], "cuda");
  EXPECT_EQ(cpu["run"]["backend"], "cpu");
  // The chain, and so the genesis and every step, is the same on both backends.
  EXPECT_EQ(cuda["stages"], cpu["stages"]);
  EXPECT_EQ(cuda["steps"], cpu["steps"]);
  EXPECT_EQ(cuda["final"]["step_hash"], cpu["final"]["step_hash"]);
  for (const char* rel : {"steps.jsonl", "lineage.jsonl", "data/split.safetensors"}) {
    EXPECT_TRUE(Slurp(cuda_ + "/" + rel) == Slurp(cpu_ + "/" + rel)) << rel << " differs";
  }
  const json env = *attest::ParseJson(Slurp(cuda_ + "/environment.json"));
  EXPECT_EQ(env["backend"], "cuda");
  EXPECT_EQ(env["device_list"].size(), 1u);
}

TEST_F(CudaBundleTest, TheCudaBundleVerifiesOnTheCpu) {
  VerifyReport r = VerifyOn(cuda_, {});
  ASSERT_EQ(r.outcome, Outcome::kVerified) << r.message;
  EXPECT_EQ(r.steps_replayed, kSteps);
  // This detrain has the recorded toolchain: the PTX and cubins were compiled again.
  ASSERT_NE(Recompiled(r), nullptr);
  EXPECT_TRUE(Recompiled(r)->notes.empty()) << Recompiled(r)->message;
  EXPECT_EQ(r.message.find("not recompiled"), std::string::npos) << r.message;
}

TEST_F(CudaBundleTest, TheCpuBundleVerifiesOnEmulatedGpus) {
  VerifyReport r = VerifyOn(cpu_, EmulatedGpu());
  ASSERT_EQ(r.outcome, Outcome::kVerified) << r.message;
  EXPECT_EQ(r.steps_replayed, kSteps);
  EXPECT_TRUE(Recompiled(r)->notes.empty());
}

TEST_F(CudaBundleTest, AnEditedCudaSourceIsRejected) {
  // The careful attacker: the file, its record's digest and size, and the PTX's link to it.
  const std::string d = CopyOf(cuda_, "source");
  const std::string source = EditStage(d, "04.cuda.cu");
  const std::string digest = attest::Sha256Hex(source);
  FixManifest(d, [&](json& m) {
    json& records = m["executables"]["cuda"];
    records[0]["sha256"] = digest;
    records[0]["size"] = source.size();
    records[1]["transform"]["input_sha256"] = digest;
  });
  VerifyReport r = Verify(d, /*replay=*/false);
  EXPECT_REJECTED(r, Outcome::kFailed,
                  "stages/04.cuda.cu: stage 4 (cuda) differs: recorded sha256 " + digest,
                  "first difference on line ", "bundle:     // edited");
  EXPECT_EQ(LastPhase(r), "recompile");
}

TEST_F(CudaBundleTest, AnEditedPtxIsRejectedByTheToolchain) {
  const std::string d = CopyOf(cuda_, "ptx");
  const std::string ptx = EditStage(d, "04.ptx.ptx");
  // Careless: the record's digest is no longer the file's.
  FixManifest(d);
  EXPECT_REJECTED(Verify(d, false), Outcome::kFailed,
                  "manifest.json: \"executables.cuda[1].sha256\"",
                  "(the SHA-256 of stages/04.ptx.ptx)");
  // Careful: the record and the cubins' links follow the file; only NVRTC can tell.
  const std::string digest = attest::Sha256Hex(ptx);
  FixManifest(d, [&](json& m) {
    json& records = m["executables"]["cuda"];
    records[1]["sha256"] = digest;
    records[1]["size"] = ptx.size();
    records[2]["transform"]["input_sha256"] = digest;
    records[3]["transform"]["input_sha256"] = digest;
  });
  VerifyReport r = Verify(d, false);
  EXPECT_REJECTED(r, Outcome::kFailed,
                  "stages/04.ptx.ptx: stage 4 (ptx) differs: recorded sha256 " + digest,
                  "first difference on line 2:", "bundle:     // edited");
  EXPECT_EQ(LastPhase(r), "recompile");
}

TEST_F(CudaBundleTest, AnEditedExecutablesRecordIsRejected) {
  struct Case {
    std::function<void(json&)> edit;
    std::string message;
  };
  const std::vector<Case> cases = {
      {[](json& m) { m["executables"]["cuda"][0]["transform"]["options"]["format_version"] = 99; },
       "manifest.json: \"executables.cuda[0].transform.options.format_version\": recorded 99"},
      {[](json& m) { m["executables"]["cuda"][2]["number"] = 3; },
       "manifest.json: \"executables.cuda[2].number\": recorded 3, expected 4"},
      {[](json& m) { m["executables"]["cuda"].erase(7); },
       "(manifest.json's \"executables.cuda\"): no recorded stage 'eval-cubin-sm_90' (this "
       "detrain builds it)"},
      {[](json& m) { m["executables"]["cuda"].push_back(m["stages"][6]); },
       "manifest.json: field \"executables.cuda\": the bundle records 9 stages; recompiling "
       "gives 8"},
      {[](json& m) { std::swap(m["executables"]["cuda"][2], m["executables"]["cuda"][3]); },
       "\"executables.cuda[2].stage\": recorded \"cubin-sm_90\", expected \"cubin-sm_80\""},
      {[](json& m) { m["executables"]["cuda"][1]["stage"] = "ptx-2"; },
       "field \"executables.cuda[1].stage\": \"ptx-2\" is not a stage of detrain"},
      {[](json& m) { m["run"]["backend"] = "cpu"; },
       "a run on the cpu backend records no executables"},
      {[](json& m) { m.erase("executables"); },
       "field \"run.backend\" is \"cuda\", but there is no \"executables.cuda\""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.message);
    const std::string d = CopyOf(cuda_, "record");
    FixManifest(d, c.edit);
    VerifyReport r = Verify(d, false);
    EXPECT_REJECTED(r, Outcome::kFailed, c.message);
    EXPECT_EQ(LastPhase(r), "recompile");
    fs::remove_all(d);
  }
}

TEST_F(CudaBundleTest, AnotherToolchainIsNotedNotFailed) {
  // As if recorded by NVRTC 0.0 (resealed, so integrity passes): this detrain cannot compile the
  // PTX the same way, so the recorded PTX and cubins stand on their digests, and verification
  // says so — the source is still generated again and the steps replayed.
  const std::string d = CopyOf(cuda_, "toolchain");
  FixManifest(
      d, [](json& m) { m["executables"]["cuda"][1]["transform"]["options"]["nvrtc"] = "0.0"; });
  VerifyReport r = Verify(d);
  ASSERT_EQ(r.outcome, Outcome::kVerified) << r.message;
  EXPECT_EQ(r.steps_replayed, kSteps);
  const std::string here = codegen::cuda::Versions()->nvrtc;
  const std::string note =
      "CUDA PTX and cubins not recompiled: toolchain nvrtc " + here + " here, 0.0 recorded";
  ASSERT_NE(Recompiled(r), nullptr);
  ASSERT_EQ(Recompiled(r)->notes.size(), 1u);
  EXPECT_EQ(Recompiled(r)->notes[0].rfind(note, 0), 0u) << Recompiled(r)->notes[0];
  EXPECT_NE(r.message.find(note), std::string::npos) << r.message;
  const json report = r.ToJson();
  EXPECT_EQ(report["phases"][1]["notes"], json::array({Recompiled(r)->notes[0]}));
  EXPECT_EQ(report["phases"][0]["notes"], json::array());
  // The source is still generated again in that mode, and every stage file compared with it.
  const std::string s = CopyOf(d, "toolchain-source");
  EditStage(s, "04.eval-cuda.cu");
  FixManifest(s);
  EXPECT_REJECTED(Verify(s, false), Outcome::kFailed,
                  "stages/04.eval-cuda.cu differs from what recompiling the program gives; first "
                  "difference on line 2:");
}

TEST_F(CudaBundleTest, ResumeOnTheOtherBackendIsRefused) {
  struct Case {
    std::string bundle, started;
    runtime::ExecutorOptions executor;
  };
  for (const Case& c : {Case{cuda_, "cuda", {}}, Case{cpu_, "cpu", EmulatedGpu()}}) {
    SCOPED_TRACE(c.started);
    const std::string d = CopyOf(c.bundle, "resume");
    fs::remove(d + "/manifest.json");  // incomplete: as if killed before the end
    bundle::RunOptions o;
    o.program = kBreastCancer;
    o.output_dir = d;
    o.resume = true;
    o.embed_data = true;
    o.steps = kSteps;
    o.executor = c.executor;
    Result<bundle::RunSummary> r = bundle::RunAttested(o);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
    EXPECT_EQ(r.status().message(), d + ": this bundle was started with --backend " + c.started +
                                        "; resume it with --backend " + c.started);
  }
}

TEST_F(CudaBundleTest, InspectShowsTheBackendAndTheCudaStages) {
  Result<json> cuda = report::InspectBundle(cuda_), cpu = report::InspectBundle(cpu_);
  ASSERT_TRUE(cuda.ok() && cpu.ok());
  EXPECT_EQ((*cuda)["backend"], "cuda");
  EXPECT_EQ((*cpu)["backend"], "cpu");
  EXPECT_EQ((*cpu)["cuda_stages"], json::array());
  const json manifest = ManifestOf(cuda_);
  const json& records = manifest["executables"]["cuda"];
  ASSERT_EQ((*cuda)["cuda_stages"].size(), records.size());
  for (size_t i = 0; i < records.size(); ++i) {
    EXPECT_EQ((*cuda)["cuda_stages"][i]["stage"], records[i]["stage"]);
    EXPECT_EQ((*cuda)["cuda_stages"][i]["sha256"], records[i]["sha256"]);
  }
  const std::string text = report::InspectText(*cuda, 60, 8);
  EXPECT_NE(text.find("backend     cuda"), std::string::npos) << text;
  EXPECT_NE(
      text.find("cuda stage  eval-cubin-sm_90  sha256:" + records[7]["sha256"].get<std::string>()),
      std::string::npos)
      << text;
}

// tools/check_bundle.py BUNDLE -q: (exit code, output); -1 without python3.
std::pair<int, std::string> RunChecker(const std::string& dir) {
  if (std::system("command -v python3 >/dev/null 2>&1") != 0) return {-1, ""};
  const std::string cmd =
      "python3 " + std::string(DETRAIN_SOURCE_DIR) + "/tools/check_bundle.py -q '" + dir + "' 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return {-1, ""};
  std::string out;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof(buf), p)) > 0;) out.append(buf, n);
  const int status = ::pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

TEST_F(CudaBundleTest, TheIndependentCheckerAcceptsTheCudaBundle) {
  auto [code, out] = RunChecker(cuda_);
  if (code == -1) GTEST_SKIP() << "no python3 for tools/check_bundle.py";
  EXPECT_EQ(code, 0) << out;
  // And checks the executable's digests: a PTX edited, the file list resealed.
  const std::string d = CopyOf(cuda_, "checker");
  EditStage(d, "04.eval-ptx.ptx");
  FixManifest(d);
  std::tie(code, out) = RunChecker(d);
  EXPECT_EQ(code, 1) << out;
  EXPECT_NE(out.find("eval-ptx"), std::string::npos) << out;
}

}  // namespace
}  // namespace detrain::tamper_test
