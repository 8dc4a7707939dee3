// `detrain run`, `verify` and `inspect` through the built binary: exit codes, messages, progress
// lines, the inspect summary and the verify report (src/cli/cmd_run.cc, cmd_verify.cc,
// cmd_inspect.cc). The library's contract is tested in tests/evidence/attested_run_test.cc.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/cli_runner.h"

namespace detrain::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kTinyDir = std::string(DETRAIN_SOURCE_DIR) + "/tests/evidence/testdata/tiny";
const std::string kTiny = kTinyDir + "/train.dt";

// A fresh directory, removed with the rest when the test program exits.
std::string TempDir() {
  struct Scratch {
    ~Scratch() {
      std::error_code ignored;
      for (const std::string& d : dirs) fs::remove_all(d, ignored);
    }
    std::vector<std::string> dirs;
  };
  static Scratch scratch;
  scratch.dirs.push_back(MakeTempDir());
  return scratch.dirs.back();
}

std::string Slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// The line of `text` that starts with `prefix`, without it; "" when none.
std::string LineAfter(const std::string& text, const std::string& prefix) {
  std::istringstream lines(text);
  for (std::string l; std::getline(lines, l);) {
    if (l.rfind(prefix, 0) == 0) return l.substr(prefix.size());
  }
  return "";
}

// A complete bundle of the tiny program in a fresh directory; its final step hash in *hash.
std::string TinyBundle(std::string* hash = nullptr) {
  const std::string dir = TempDir() + "/b";
  CliResult r = RunDetrain({"run", kTiny, "--attest", "-o", dir, "-q"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  if (hash != nullptr) *hash = LineAfter(r.out, "final step hash: ");
  return dir;
}

TEST(RunCliTest, RunPrintsProgressLinesAndTheBundle) {
  const std::string dir = TempDir() + "/b";
  CliResult r = RunDetrain({"run", kTiny, "--attest", "-o", dir});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // stderr is a pipe: plain lines (no bar, no carriage returns), one per checkpoint and eval.
  EXPECT_EQ(r.err.find('\r'), std::string::npos);
  EXPECT_EQ(r.err.find("\033["), std::string::npos);
  EXPECT_NE(r.err.find("step 8/24  loss "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("val accuracy"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("[checkpoint]"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("step 24/24"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("done: 24 steps"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("validation: loss "), std::string::npos) << r.err;
  EXPECT_EQ(LineAfter(r.out, "bundle: "), dir);
  EXPECT_EQ(LineAfter(r.out, "steps: "), "24/24");
  const std::string hash = LineAfter(r.out, "final step hash: ");
  EXPECT_EQ(hash.size(), 64u) << r.out;
  EXPECT_EQ(LineAfter(r.out, "root digest: ").size(), 64u) << r.out;
  json manifest = json::parse(Slurp(dir + "/manifest.json"));
  EXPECT_EQ(manifest["final"]["step_hash"], hash);
  // -q: nothing on stderr but the final validation line.
  CliResult quiet = RunDetrain({"run", kTiny, "--attest", "-o", dir + "q", "-q"});
  ASSERT_EQ(quiet.exit_code, 0) << quiet.err;
  EXPECT_EQ(quiet.err.find("step "), std::string::npos) << quiet.err;
  EXPECT_EQ(LineAfter(quiet.out, "final step hash: "), hash);
}

TEST(RunCliTest, ANonEmptyBundleDirectoryNeedsResume) {
  const std::string dir = TempDir();
  std::ofstream(dir + "/something") << "x";
  CliResult r = RunDetrain({"run", kTiny, "--attest", "-o", dir, "-q"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("not empty"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--resume"), std::string::npos) << r.err;
}

TEST(RunCliTest, ResumeNeedsAttest) {
  const std::string dir = TempDir();
  for (const char* flag : {"--resume", "--embed-data"}) {
    CliResult r = RunDetrain({"run", kTiny, "-o", dir, flag});
    EXPECT_EQ(r.exit_code, 2) << flag;
    EXPECT_NE(r.err.find("need --attest"), std::string::npos) << r.err;
  }
  CliResult r = RunDetrain({"run", kTiny, "-o", dir, "--step-digest", "sha256"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(fs::is_empty(dir)) << "a refused run wrote something";
}

TEST(RunCliTest, ResumeOfACompleteBundleIsAnInputError) {
  const std::string dir = TinyBundle();
  CliResult r = RunDetrain({"run", kTiny, "--attest", "-o", dir, "--resume", "-q"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("complete; there is nothing to resume"), std::string::npos) << r.err;
}

TEST(RunCliTest, AttestNeedsABundleDirectory) {
  CliResult r = RunDetrain({"run", kTiny, "--attest", "-q"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("-o BUNDLE"), std::string::npos) << r.err;
}

TEST(RunCliTest, ProgramErrorsArePositioned) {
  const std::string dir = TempDir();
  std::ofstream(dir + "/bad.dt") << "param w: f32[2, 2] = zeros\nparam b f32[2] = zeros\n";
  CliResult r = RunDetrain({"run", dir + "/bad.dt", "--attest", "-o", dir + "/b"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.substr(0, r.err.find('\n')),
            dir + "/bad.dt:2:9: error: expected ':' and the parameter's type, found 'f32'");
  EXPECT_FALSE(fs::exists(dir + "/b")) << "a program that does not compile made a bundle";
  CliResult missing = RunDetrain({"run", dir + "/none.dt", "--attest", "-o", dir + "/b"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("none.dt"), std::string::npos) << missing.err;
}

TEST(RunCliTest, ANonFiniteLossStopsTheRun) {
  const std::string dir = TempDir();
  std::string program = Slurp(kTiny);
  const std::string lr = "learning_rate = 1e-2";
  ASSERT_NE(program.find(lr), std::string::npos);
  program.replace(program.find(lr), lr.size(), "learning_rate = 1e30");
  std::ofstream(dir + "/train.dt") << program;
  fs::copy_file(kTinyDir + "/tiny.csv", dir + "/tiny.csv");
  CliResult r = RunDetrain({"run", dir + "/train.dt", "--attest", "-o", dir + "/b", "-q"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("stopped: step 1: loss is "), std::string::npos) << r.err;
  EXPECT_EQ(LineAfter(r.out, "steps: "), "1/24 (stopped)");
  CliResult v = RunDetrain({"verify", dir + "/b", "--json"});
  EXPECT_EQ(v.exit_code, 0) << v.err;
  json report = json::parse(v.out);
  EXPECT_EQ(report["outcome"], "verified");
  EXPECT_EQ(report["status"], "stopped");
  EXPECT_NE(v.err.find("; the run stopped: step 1: loss is "), std::string::npos) << v.err;
  CliResult i = RunDetrain({"inspect", dir + "/b"});
  EXPECT_EQ(i.exit_code, 0);
  EXPECT_NE(i.out.find("(complete, status stopped)"), std::string::npos) << i.out;
  EXPECT_NE(i.out.find("stopped     step 1: loss is "), std::string::npos) << i.out;
}

// The tensors of a safetensors file: its bytes after the header (whose metadata names the run).
std::string TensorBytes(const std::string& path) {
  const std::string bytes = Slurp(path);
  if (bytes.size() < 8) return "";
  uint64_t header = 0;
  for (int i = 7; i >= 0; --i) header = header << 8 | static_cast<unsigned char>(bytes[i]);
  return header > bytes.size() - 8 ? "" : bytes.substr(8 + header);
}

// `--pipeline` runs another stage 3 (here with merge-rows, docs/passes.md): the bundle records
// it and verifies, its optimized module differs, and the trained weights are the default
// pipeline's bit for bit. An unknown pass is an input error.
TEST(RunCliTest, APipelineIsRecordedAndVerifiesAndTrainsTheSameWeights) {
  const std::string rows =
      "inline,unroll-while,inline,cse,fold-constants,simplify,cse,fold-constants,merge-dots,"
      "merge-rows,fuse,combine-all-reduce,cse";
  const std::string dir = TempDir();
  CliResult merged = RunDetrain(
      {"run", kTiny, "--attest", "-o", dir + "/rows", "--pipeline", rows, "--steps", "4", "-q"});
  ASSERT_EQ(merged.exit_code, 0) << merged.err;
  CliResult plain =
      RunDetrain({"run", kTiny, "--attest", "-o", dir + "/default", "--steps", "4", "-q"});
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  const json m = json::parse(Slurp(dir + "/rows/manifest.json"));
  const json d = json::parse(Slurp(dir + "/default/manifest.json"));
  std::string recorded, opt_rows, opt_default;
  for (const json& s : m["stages"]) {
    if (s["stage"] == "opt-hlo") {
      recorded = s["transform"]["options"].value("pipeline", "");
      opt_rows = s["sha256"];
    }
  }
  for (const json& s : d["stages"]) {
    if (s["stage"] == "opt-hlo") opt_default = s["sha256"];
  }
  EXPECT_EQ(recorded, rows);
  EXPECT_NE(opt_rows, opt_default) << "merge-rows changed nothing in the tiny program";
  const std::string tensors = TensorBytes(dir + "/rows/final/weights.safetensors");
  EXPECT_FALSE(tensors.empty());
  EXPECT_EQ(tensors, TensorBytes(dir + "/default/final/weights.safetensors"));
  CliResult v = RunDetrain({"verify", dir + "/rows"});
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;
  CliResult bad = RunDetrain({"run", kTiny, "-o", dir + "/bad", "--pipeline", "fuse,bogus", "-q"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("unknown pass 'bogus'"), std::string::npos) << bad.err;
}

// --loops (docs/fused-loops.md): generated loops give the evaluator's step hashes and weights,
// are recorded in environment.json (the default, auto, runs them where the compiler detrain was
// built with is present, as it is here), verify either way; generated is refused for CUDA.
TEST(RunCliTest, GeneratedLoopsTrainTheSameBitsAndVerify) {
  const std::string dir = TempDir();
  CliResult gen = RunDetrain(
      {"run", kTiny, "--attest", "-o", dir + "/gen", "--loops", "generated", "--steps", "4"});
  ASSERT_EQ(gen.exit_code, 0) << gen.err;
  CliResult plain = RunDetrain(
      {"run", kTiny, "--attest", "-o", dir + "/eval", "--loops", "evaluator", "--steps", "4"});
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  CliResult automatic =
      RunDetrain({"run", kTiny, "--attest", "-o", dir + "/auto", "--steps", "4", "-q"});
  ASSERT_EQ(automatic.exit_code, 0) << automatic.err;
  EXPECT_NE(Slurp(dir + "/auto/environment.json").find("generated loops"), std::string::npos);
  const std::string hash = LineAfter(gen.out, "final step hash: ");
  EXPECT_FALSE(hash.empty()) << gen.out;
  EXPECT_EQ(hash, LineAfter(plain.out, "final step hash: "));
  EXPECT_EQ(TensorBytes(dir + "/gen/final/weights.safetensors"),
            TensorBytes(dir + "/eval/final/weights.safetensors"));
  EXPECT_NE(Slurp(dir + "/gen/environment.json").find("generated loops"), std::string::npos);
  EXPECT_EQ(Slurp(dir + "/eval/environment.json").find("generated loops"), std::string::npos);
  CliResult v = RunDetrain({"verify", dir + "/eval", "--loops", "generated"});
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;
  CliResult ve = RunDetrain({"verify", dir + "/gen", "--loops", "evaluator"});
  EXPECT_EQ(ve.exit_code, 0) << ve.out << ve.err;
  CliResult cuda = RunDetrain(
      {"run", kTiny, "-o", dir + "/cuda", "--backend", "cuda", "--loops", "generated", "-q"});
  EXPECT_EQ(cuda.exit_code, 2);
  EXPECT_NE(cuda.err.find("--loops generated is for the CPU backend"), std::string::npos)
      << cuda.err;
  CliResult bad = RunDetrain({"run", kTiny, "-o", dir + "/bad", "--loops", "jit", "-q"});
  EXPECT_EQ(bad.exit_code, 2);
}

TEST(RunCliTest, RunWithoutAttestWritesFinalWeights) {
  const std::string dir = TempDir() + "/w";
  CliResult r = RunDetrain({"run", kTiny, "-o", dir, "-q"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(LineAfter(r.out, "final weights: "), dir + "/final/weights.safetensors");
  EXPECT_TRUE(fs::is_regular_file(dir + "/final/weights.safetensors"));
}

TEST(RunCliTest, InspectShowsTheLossCurveAndTheFinalHash) {
  std::string hash;
  const std::string dir = TinyBundle(&hash);
  CliResult r = RunDetrain({"inspect", dir});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("(complete, status complete)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("loss curve  (training loss per step, 24 steps)"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("*"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("eval        step 7: loss "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("checkpoints after steps 8, 16"), std::string::npos) << r.out;
  EXPECT_EQ(LineAfter(r.out, "final hash  "), hash);
  EXPECT_EQ(LineAfter(r.out, "backend     "), "cpu (environment.json)");
  EXPECT_EQ(LineAfter(r.out, "cuda stage  "), "");

  CliResult j = RunDetrain({"inspect", dir, "--json"});
  ASSERT_EQ(j.exit_code, 0) << j.err;
  json s = json::parse(j.out);
  EXPECT_EQ(s["complete"], true);
  EXPECT_EQ(s["backend"], "cpu");
  EXPECT_EQ(s["cuda_stages"], json::array());
  EXPECT_EQ(s["final_step_hash"], hash);
  EXPECT_EQ(s["loss"].size(), 24u);
  EXPECT_EQ(s["steps"]["count"], 24);
}

TEST(RunCliTest, InspectWorksOnAnIncompleteBundle) {
  std::string hash;
  const std::string dir = TinyBundle(&hash);
  // As if killed between removing progress.json and writing manifest.json.
  fs::remove(dir + "/manifest.json");
  CliResult r = RunDetrain({"inspect", dir});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("INCOMPLETE"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("loss curve"), std::string::npos) << r.out;
  EXPECT_EQ(LineAfter(r.out, "last hash   "), hash + " (incomplete)");
  CliResult v = RunDetrain({"verify", dir});
  EXPECT_EQ(v.exit_code, 1);
  EXPECT_NE(v.err.find("INCOMPLETE"), std::string::npos) << v.err;
  CliResult j = RunDetrain({"verify", dir, "--json"});
  EXPECT_EQ(j.exit_code, 1);
  EXPECT_EQ(json::parse(j.out)["outcome"], "incomplete");

  // And it resumes from its newest checkpoint to the same final step hash.
  CliResult resumed = RunDetrain({"run", kTiny, "--attest", "-o", dir, "--resume"});
  EXPECT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_NE(resumed.err.find("resuming at step 16 of 24"), std::string::npos) << resumed.err;
  EXPECT_EQ(LineAfter(resumed.out, "final step hash: "), hash);

  CliResult none = RunDetrain({"inspect", TempDir()});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.err.find("not a bundle"), std::string::npos) << none.err;
}

TEST(RunCliTest, VerifyJsonReport) {
  std::string hash;
  const std::string dir = TinyBundle(&hash);
  CliResult r = RunDetrain({"verify", dir, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json report = json::parse(r.out);
  EXPECT_EQ(report["outcome"], "verified");
  EXPECT_EQ(report["exit_code"], 0);
  EXPECT_EQ(report["status"], "complete");
  EXPECT_EQ(report["steps"], 24);
  EXPECT_EQ(report["steps_replayed"], 24);
  EXPECT_EQ(report["final_step_hash"], hash);
  ASSERT_EQ(report["phases"].size(), 3u);
  for (const json& p : report["phases"]) EXPECT_EQ(p["ok"], true) << p.dump();
  EXPECT_NE(r.err.find("verified: 24 steps, 24 replayed"), std::string::npos) << r.err;
}

TEST(RunCliTest, VerifyStepRangeReplaysOnlyThoseSteps) {
  const std::string dir = TinyBundle();
  CliResult r = RunDetrain({"verify", dir, "--steps", "8:16", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out)["steps_replayed"], 8);
  // From the nearest checkpoint at or before the start: 8..19 replays 8 steps, then 4.
  CliResult mid = RunDetrain({"verify", dir, "--steps", "10:20", "--json"});
  ASSERT_EQ(mid.exit_code, 0) << mid.err;
  EXPECT_EQ(json::parse(mid.out)["steps_replayed"], 12);
  CliResult open = RunDetrain({"verify", dir, "--steps", "16:", "--json"});
  ASSERT_EQ(open.exit_code, 0) << open.err;
  EXPECT_EQ(json::parse(open.out)["steps_replayed"], 8);
  CliResult bad = RunDetrain({"verify", dir, "--steps", "8:99"});
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  CliResult garbled = RunDetrain({"verify", dir, "--steps", "8-16"});
  EXPECT_EQ(garbled.exit_code, 2) << garbled.err;
}

TEST(RunCliTest, VerifyJobsAndExecutorOptions) {
  const std::string dir = TinyBundle();
  CliResult r = RunDetrain(
      {"verify", dir, "--jobs", "2", "--threads", "2", "--devices", "2", "--isa", "scalar"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("replay: segment 3/3"), std::string::npos) << r.err;
  CliResult none = RunDetrain({"verify", TempDir() + "/none"});
  EXPECT_EQ(none.exit_code, 2);
}

}  // namespace
}  // namespace detrain::testing
