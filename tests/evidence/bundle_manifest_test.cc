// Tamper tests for audit bundles, the manifest itself (fixture: bundle_tamper_fixture.h):
// malformed, mis-shaped and hostile manifest.json files, files that are not files, incomplete
// bundles and input errors, and a run that stopped on a non-finite loss.
#include <sys/stat.h>

#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "attest/sha256.h"
#include "base/fs.h"
#include "base/safetensors.h"
#include "bundle_tamper_fixture.h"
#include "evidence/bundle/bundle_format.h"
#include "evidence/verify/verifier.h"

namespace detrain::tamper_test {
namespace {

// The same fixture under its own suite name (each suite writes its bundle once).
class BundleManifestTest : public BundleTamperTest {};

// ---- hostile manifests ------------------------------------------------------------------------

TEST_F(BundleManifestTest, MalformedManifestsAreRejected) {
  struct Case {
    std::string text, message;
  };
  const std::string deep = std::string(100000, '[');
  for (const Case& c : {
           Case{"", "manifest.json: invalid JSON at byte "},
           Case{"{\"format\": ", "manifest.json: invalid JSON at byte "},
           Case{"{\"a\":1,\"a\":2}", "duplicate object key \"a\""},
           Case{"[]", "manifest.json: expected a JSON object"},
           Case{"\"detrain.bundle\"", "manifest.json: expected a JSON object"},
           Case{"{}", "manifest.json: \"format\" is not \"detrain.bundle\""},
           Case{"{\"format\":\"detrain.bundle\",\"format_version\":\"1\"}",
                "manifest.json: \"format_version\" must be an integer"},
           Case{"{\"format\":\"detrain.bundle\",\"format_version\":1.5}",
                "manifest.json: \"format_version\" must be an integer"},
           Case{"{\"format\":\"detrain.bundle\",\"format_version\":1}",
                "manifest.json: missing field \"status\""},
           Case{deep, "nested more than 256"},
           Case{deep + std::string(100000, ']'), "nested more than 256"},
           Case{std::string(100000, '{'), "nested more than 256"},
           Case{"{\"x\":1e400}", "number overflow"},
           Case{std::string("{\"format\":\"detrain.bundle\xff\"}"), "manifest.json: invalid JSON"},
       }) {
    SCOPED_TRACE(c.text.substr(0, 40));
    const std::string d = Copy("malformed");
    Spit(d + "/manifest.json", c.text);
    EXPECT_REJECTED(Verify(d), Outcome::kFailed, c.message);
    fs::remove_all(d);
  }
}

TEST_F(BundleManifestTest, ManifestOfTheWrongShapeIsRejected) {
  // Each edit is re-signed (root digest recomputed), so the schema check must catch it.
  struct Case {
    std::function<void(json&)> edit;
    std::string message;
  };
  const std::vector<Case> cases = {
      {[](json& m) { m.erase("steps"); }, "manifest.json: missing field \"steps\""},
      {[](json& m) { m["final"].erase("step_hash"); },
       "manifest.json: missing field \"final.step_hash\""},
      {[](json& m) { m["run"]["steps"] = "24"; },
       "manifest.json: field \"run.steps\": expected a non-negative integer"},
      {[](json& m) { m["run"]["steps"] = -24; },
       "manifest.json: field \"run.steps\": expected a non-negative integer"},
      {[](json& m) { m["run"]["embed_data"] = 1; },
       "manifest.json: field \"run.embed_data\": expected true or false"},
      {[](json& m) { m["files"] = json::object(); },
       "manifest.json: field \"files\": expected an array"},
      {[](json& m) { m["files"][0] = 7; }, "manifest.json files[]: missing field \"path\""},
      {[](json& m) { m["files"][0]["size"] = 1.5; },
       "manifest.json files[]: field \"size\": expected a non-negative integer"},
      {[](json& m) { m["final"]["step_hash"] = std::string(64, 'A'); },
       "field \"final.step_hash\": expected 64 lowercase hex digits"},
      {[](json& m) { m["status"] = "fine"; },
       "\"status\" must be \"complete\" or \"stopped\", found \"fine\""},
      {[](json& m) { m["status"] = "stopped"; }, "missing field \"stop.reason\""},
      {[](json& m) { m["files"][0]["path"] = "../outside.txt"; },
       "file path \"../outside.txt\" leaves the bundle"},
      {[](json& m) { m["files"][0]["path"] = "/etc/passwd"; },
       "file path \"/etc/passwd\" leaves the bundle"},
      {[](json& m) { m["files"][0]["path"] = "data/../../x"; },
       "file path \"data/../../x\" leaves the bundle"},
      {[](json& m) { m["program"]["path"] = "program/../../../etc/passwd"; },
       "\"program.path\" must name a file in program/"},
      {[](json& m) { m["program"]["path"] = "/etc/passwd"; },
       "\"program.path\" must name a file in program/"},
      {[](json& m) { m["files"].push_back(m["files"][0]); }, "manifest.json lists "},
      {[](json& m) { m["steps"]["count"] = 23; }, "final.steps_done differs from steps.count"},
      // Huge numbers: compared, never allocated.
      {[](json& m) { m["files"][0]["size"] = UINT64_MAX; },
       " bytes; manifest.json records 18446744073709551615"},
      {[](json& m) {
         m["steps"]["count"] = int64_t{1} << 50;
         m["final"]["steps_done"] = int64_t{1} << 50;
       },
       "steps.jsonl holds 24 step records; manifest.json says 1125899906842624"},
      {[](json& m) { m["data"]["rows"] = int64_t{1} << 62; },
       "data/split.safetensors holds 64 row indices; manifest.json says the data has "
       "4611686018427387904 rows"},
      {[](json& m) { m["config"]["params"] = json::array({7}); },
       "manifest.json config.params[]: missing field \"name\""},
      {[](json& m) { m["run"].erase("backend"); }, "manifest.json: missing field \"run.backend\""},
      // A CUDA run's executable (shape-checked before anything reads it).
      {[](json& m) { m["executables"] = 7; },
       "manifest.json: field \"executables\": expected an object"},
      {[](json& m) { m["executables"] = json::object(); },
       "manifest.json: field \"executables\": expected \"cuda\""},
      {[](json& m) {
         m["executables"] = {{"tpu", json::array()}};
       },
       "manifest.json: field \"executables.tpu\": not a backend this detrain knows (cuda)"},
      {[](json& m) {
         m["executables"] = {{"cuda", json::object()}};
       },
       "field \"executables.cuda\": expected an array of 1 to 64 stage records"},
      {[](json& m) {
         m["executables"] = {{"cuda", json::array()}};
       },
       "field \"executables.cuda\": expected an array of 1 to 64 stage records"},
      {[](json& m) {
         m["executables"] = {{"cuda", json(65, m["stages"][6])}};
       },
       "field \"executables.cuda\": expected an array of 1 to 64 stage records"},
      {[](json& m) {
         m["executables"] = {{"cuda", json::array({7})}};
       },
       "manifest.json executables.cuda[0]: missing field \"stage\""},
      {[](json& m) {
         m["executables"] = {{"cuda", json::array({m["stages"][0]})}};
       },
       "manifest.json executables.cuda[0]: missing field \"transform\""},
      {[](json& m) {
         json r = m["stages"][6];
         r["transform"]["options"] = "{}";
         m["executables"] = {{"cuda", json::array({r})}};
       },
       "manifest.json executables.cuda[0]: field \"transform.options\": expected an object"},
      {[](json& m) {
         json r = m["stages"][6];
         r["sha256"] = std::string(63, 'a');
         m["executables"] = {{"cuda", json::array({r})}};
       },
       "manifest.json executables.cuda[0]: field \"sha256\": expected 64 lowercase hex digits"},
      // Well formed, but a cpu run records no executable (recompile).
      {[](json& m) {
         m["executables"] = {{"cuda", json::array({m["stages"][6]})}};
       },
       "manifest.json: field \"executables\": a run on the cpu backend records no executables"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.message);
    const std::string d = Copy("shape");
    FixManifest(d, c.edit);
    EXPECT_REJECTED(Verify(d), Outcome::kFailed, c.message);
    fs::remove_all(d);
  }
}

TEST_F(BundleManifestTest, ManifestWithADeepFieldIsRejectedNotACrash) {
  // Otherwise valid, with 100000 nested arrays in a field the schema check does not read: the
  // parser copes, but copying and printing the value for the root digest recursed once per
  // level and overflowed the stack. Refused when parsed, so re-signing it would not help.
  std::string text = Slurp(P("manifest.json"));
  text.insert(text.size() - 2, ",\"zz\":" + std::string(100000, '[') + std::string(100000, ']'));
  Spit(P("manifest.json"), text);
  EXPECT_REJECTED(Verify(dir_), Outcome::kFailed, "manifest.json: invalid JSON at byte ",
                  "arrays and objects nested more than 256 deep");
}

TEST_F(BundleManifestTest, UnknownFormatVersionIsAnInputError) {
  FixManifest(dir_, [](json& m) { m["format_version"] = 2; });
  VerifyReport r = Verify(dir_);
  EXPECT_REJECTED(r, Outcome::kInputError, "bundle format version 2",
                  "this detrain reads format version 1");
  EXPECT_EQ(r.ExitCode(), 2);
}

TEST_F(BundleManifestTest, ManifestThatIsNotAFileIsRejected) {
  // A FIFO: must not block waiting for a writer.
  fs::remove(P("manifest.json"));
  ASSERT_EQ(mkfifo(P("manifest.json").c_str(), 0644), 0);
  EXPECT_REJECTED(Verify(dir_), Outcome::kFailed, "manifest.json", "not a regular file");
  // A symbolic link to the genuine manifest outside the bundle: a bundle holds no links.
  const std::string d = Copy("symlink");
  fs::rename(d + "/manifest.json", root_ + "/outside-manifest.json");
  fs::create_symlink(root_ + "/outside-manifest.json", d + "/manifest.json");
  EXPECT_REJECTED(Verify(d), Outcome::kFailed,
                  "manifest.json: not a regular file or directory (a symbolic link)");
  // A directory.
  const std::string e = Copy("manifest-dir");
  fs::remove(e + "/manifest.json");
  fs::create_directory(e + "/manifest.json");
  EXPECT_REJECTED(Verify(e), Outcome::kFailed, "manifest.json", "not a regular file");
}

// ---- incomplete bundles and input errors -------------------------------------------------------

TEST_F(BundleManifestTest, KilledRunIsIncomplete) {
  const std::string d = root_ + "/killed";
  bundle::RunOptions o;
  o.program = kProgram;
  o.output_dir = d;
  o.embed_data = true;
  o.crash_after_steps = 10;
  Result<bundle::RunSummary> s = bundle::RunAttested(o);
  ASSERT_TRUE(s.ok()) << s.status().message();
  ASSERT_FALSE(s->complete);
  VerifyReport r = Verify(d);
  EXPECT_REJECTED(r, Outcome::kIncomplete, "the bundle is incomplete (no manifest.json)",
                  "the run did not finish; its last checkpoint holds 8 of 24 steps",
                  "detrain run PROGRAM --attest -o " + d + " --resume");
  EXPECT_EQ(r.ExitCode(), 1);
  // A hostile progress.json changes nothing but the detail.
  for (const std::string& junk :
       {std::string(100000, '['), std::string("{\"steps_done\":\"8\"}"), std::string("\xff\xfe")}) {
    Spit(d + "/progress.json", junk);
    EXPECT_REJECTED(Verify(d), Outcome::kIncomplete,
                    "the bundle is incomplete (no manifest.json); continue it");
  }
  // Resumed, it is the bundle of an uninterrupted run, byte for byte, and verifies.
  o.crash_after_steps.reset();
  o.resume = true;
  Result<bundle::RunSummary> resumed = bundle::RunAttested(o);
  ASSERT_TRUE(resumed.ok()) << resumed.status().message();
  ASSERT_TRUE(resumed->complete);
  EXPECT_EQ(Verify(d).outcome, Outcome::kVerified);
  EXPECT_EQ(*ListFiles(d), Files());
  for (const std::string& rel : Files()) {
    EXPECT_EQ(Slurp(d + "/" + rel), Slurp(pristine_ + "/" + rel)) << rel;
  }
}

TEST_F(BundleManifestTest, StoppedRunVerifiesAndItsClaimsAreChecked) {
  // The tiny program with a learning rate that makes step 1's loss NaN: the bundle is finished
  // with status "stopped" and one record, whose step takes no SHA-256 roots.
  const std::string src = root_ + "/stopper";
  fs::create_directory(src);
  fs::copy_file(fs::path(kProgram).parent_path() / "tiny.csv", src + "/tiny.csv");
  std::string program = Slurp(kProgram);
  const size_t at = program.find("learning_rate = 1e-2");
  ASSERT_NE(at, std::string::npos);
  program.replace(at, 20, "learning_rate = 1e30");
  Spit(src + "/train.dt", program);
  const std::string d = root_ + "/stopped";
  bundle::RunOptions o;
  o.program = src + "/train.dt";
  o.output_dir = d;
  o.embed_data = true;
  Result<bundle::RunSummary> s = bundle::RunAttested(o);
  ASSERT_TRUE(s.ok()) << s.status().message();
  ASSERT_TRUE(s->stopped);
  ASSERT_EQ(s->steps_done, 1);
  // The key of the stopped step is in the lineage; the verifier derived one key too few.
  VerifyReport r = Verify(d);
  ASSERT_EQ(r.outcome, Outcome::kVerified) << r.message;
  EXPECT_NE(r.message.find("the run stopped: step 1: loss is NaN"), std::string::npos) << r.message;
  // Another reason, re-signed: only replay knows the real one.
  const std::string reason = Copy("stop-reason");
  fs::remove_all(reason);
  fs::copy(d, reason, fs::copy_options::recursive);
  FixManifest(reason,
              [](json& m) { m["stop"]["reason"] = "step 1: the operator pulled the plug"; });
  EXPECT_REJECTED(Verify(reason), Outcome::kFailed,
                  "manifest.json's stop reason is \"step 1: the operator pulled the plug\"; "
                  "replay gives \"step 1: loss is NaN");
  // Another final optimizer root, re-signed: no record holds the final roots, replay does.
  const std::string root = Copy("stop-root");
  fs::remove_all(root);
  fs::copy(d, root, fs::copy_options::recursive);
  FixManifest(root, [](json& m) { m["final"]["optimizer_root"] = std::string(64, 'c'); });
  VerifyReport rr = Verify(root);
  EXPECT_REJECTED(rr, Outcome::kFailed,
                  "the replayed final state is not manifest.json's (final params_root or "
                  "optimizer_root differ)");
  EXPECT_EQ(LastPhase(rr), "replay");
}

TEST_F(BundleManifestTest, NotABundleIsAnInputError) {
  EXPECT_REJECTED(Verify(root_ + "/no-such-dir"), Outcome::kInputError, "no such bundle directory");
  const std::string empty = root_ + "/empty";
  fs::create_directory(empty);
  EXPECT_REJECTED(Verify(empty), Outcome::kInputError, "not a bundle (no manifest.json)");
  EXPECT_EQ(Verify(empty).ExitCode(), 2);
}

}  // namespace
}  // namespace detrain::tamper_test
