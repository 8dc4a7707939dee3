// Tamper tests for audit bundles, file by file (the fixture and the two attackers:
// bundle_tamper_fixture.h): every file flipped, truncated and deleted; extra, swapped and replaced
// content; the step log re-chained; derived files and manifest claims that no digest reaches.
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

// ---- the untouched bundle -------------------------------------------------------------------

TEST_F(BundleTamperTest, PristineCopyVerifies) {
  VerifyReport r = Verify(dir_);
  ASSERT_EQ(r.outcome, Outcome::kVerified) << r.message;
  EXPECT_EQ(r.ExitCode(), 0);
  EXPECT_EQ(r.steps, 24);
  EXPECT_EQ(r.steps_replayed, 24);
  EXPECT_EQ(r.phases.size(), 3u);
  EXPECT_NE(r.message.find("verified: 24 steps, 24 replayed"), std::string::npos) << r.message;
  // The careful attacker's tools reproduce the writer exactly (else the cases below prove
  // nothing): fixing an untouched bundle changes no byte.
  FixManifest(dir_);
  Rechain(dir_, [](std::vector<bundle::StepRecord>&) {});
  for (const std::string& rel : Files()) {
    EXPECT_EQ(Slurp(P(rel)), Slurp(pristine_ + "/" + rel)) << rel;
  }
}

TEST_F(BundleTamperTest, TheBundleHoldsTheExpectedFiles) {
  // The enumeration below must cover every kind of file (a check on this test, not on detrain).
  std::vector<std::string> files = Files();
  for (const char* want :
       {"manifest.json", "program/train.dt", "stages/00.program.dt", "stages/04.plan.txt",
        "data/data.json", "data/split.safetensors", "data/files/tiny.csv", "run.json",
        "environment.json", "lineage.jsonl", "steps.jsonl", "checkpoints/step-00000008.safetensors",
        "checkpoints/step-00000016.safetensors", "final/weights.safetensors"}) {
    EXPECT_NE(std::find(files.begin(), files.end(), want), files.end()) << want;
  }
}

// ---- every file: flip, truncate, delete (manifest left as it is) -----------------------------

// What the verifier must say about a damaged `rel`, beyond naming it.
std::string DamageMessage(const std::string& rel) {
  if (rel == bundle::kManifest || rel == bundle::kFinalWeights) return "";
  return ": content differs from manifest.json (Merkle root ";
}

TEST_F(BundleTamperTest, EveryFileWithOneByteFlippedIsRejected) {
  for (const std::string& rel : Files()) {
    const std::string original = Slurp(pristine_ + "/" + rel);
    ASSERT_FALSE(original.empty()) << rel;
    for (size_t pos : {size_t{0}, original.size() / 2, original.size() - 1}) {
      SCOPED_TRACE(rel + " byte " + std::to_string(pos));
      const std::string d = Copy("flip");
      std::string bytes = original;
      bytes[pos] = static_cast<char>(bytes[pos] ^ 0x20);
      Spit(d + "/" + rel, bytes);
      EXPECT_REJECTED(Verify(d), Outcome::kFailed, rel, rel + DamageMessage(rel));
      fs::remove_all(d);
    }
  }
}

TEST_F(BundleTamperTest, EveryFileTruncatedIsRejected) {
  for (const std::string& rel : Files()) {
    const std::string original = Slurp(pristine_ + "/" + rel);
    for (size_t size : {size_t{0}, original.size() / 2}) {
      SCOPED_TRACE(rel + " truncated to " + std::to_string(size));
      const std::string d = Copy("truncate");
      fs::resize_file(d + "/" + rel, size);
      std::string want = rel;
      if (rel != bundle::kManifest && rel != bundle::kFinalWeights) {
        want = rel + ": " + std::to_string(size) + " bytes; manifest.json records " +
               std::to_string(original.size());
      }
      EXPECT_REJECTED(Verify(d), Outcome::kFailed, want);
      fs::remove_all(d);
    }
  }
}

TEST_F(BundleTamperTest, EveryFileDeletedIsRejected) {
  for (const std::string& rel : Files()) {
    SCOPED_TRACE(rel + " deleted");
    const std::string d = Copy("delete");
    fs::remove(d + "/" + rel);
    if (rel == bundle::kManifest) {
      // Without a manifest a bundle cannot be told from one whose run was killed.
      EXPECT_REJECTED(Verify(d), Outcome::kIncomplete,
                      "the bundle is incomplete (no manifest.json)");
    } else {
      EXPECT_REJECTED(Verify(d), Outcome::kFailed,
                      "missing file " + rel + " (listed in manifest.json)");
    }
    fs::remove_all(d);
  }
}

TEST_F(BundleTamperTest, EveryFileDeletedAndUnlistedIsRejected) {
  // The careful attacker removes a file and its manifest entry: the recompile phase knows which
  // files a bundle of this run has.
  for (const std::string& rel : Files()) {
    if (rel == bundle::kManifest || rel == bundle::kFinalWeights) continue;
    SCOPED_TRACE(rel + " deleted, manifest fixed");
    const std::string d = Copy("unlist");
    fs::remove(d + "/" + rel);
    FixManifest(d);
    VerifyReport r = Verify(d);
    if (rel == bundle::kSteps || rel == bundle::kLineage || rel == bundle::kSplitFile ||
        rel == bundle::kDataRecord || rel == "program/train.dt") {
      // Integrity or recompile reads these before the file list is judged.
      EXPECT_REJECTED(r, Outcome::kFailed, rel);
    } else if (bundle::CheckpointStepsOf(rel).has_value()) {
      // Integrity knows the checkpoints the schedule writes.
      EXPECT_REJECTED(r, Outcome::kFailed, "missing checkpoint " + rel);
    } else if (rel.rfind("data/files/", 0) == 0 || rel.rfind("stages/", 0) == 0 ||
               rel == "run.json") {
      // Recompile rebuilds every static file. (Without its embedded copy the dataset is found
      // where the run read it, by its digest.)
      EXPECT_REJECTED(r, Outcome::kFailed, rel + ": missing (recompiling the run writes it)");
    } else {
      EXPECT_REJECTED(r, Outcome::kFailed,
                      "manifest.json does not list " + rel + ", which a bundle of this run holds");
    }
    fs::remove_all(d);
  }
}

// ---- extra files, reordered and replaced content ----------------------------------------------

TEST_F(BundleTamperTest, ExtraFilesAreRejected) {
  Spit(P("notes.txt"), "hello\n");
  EXPECT_REJECTED(Verify(dir_), Outcome::kFailed,
                  "extra file notes.txt: not listed in manifest.json");
  const std::string d = Copy("extra-subdir");
  Spit(d + "/stages/passes/10.extra.hlo", "x\n");
  EXPECT_REJECTED(Verify(d), Outcome::kFailed,
                  "extra file stages/passes/10.extra.hlo: not listed in manifest.json");
  // Listed in a fixed-up manifest: still not a file a bundle of this run has.
  FixManifest(d);
  VerifyReport r = Verify(d);
  EXPECT_REJECTED(r, Outcome::kFailed,
                  "manifest.json lists stages/passes/10.extra.hlo, not a file of this run");
  EXPECT_EQ(LastPhase(r), "recompile");
  // progress.json beside a manifest: a finished bundle never has one.
  const std::string p = Copy("extra-progress");
  Spit(p + "/progress.json", "{}\n");
  EXPECT_REJECTED(Verify(p), Outcome::kFailed,
                  "progress.json is present: the bundle is incomplete");
}

// steps.jsonl with the records of steps 1 and 2 (lines 3 and 4) swapped.
std::string SwapSteps(const std::string& text) {
  std::vector<std::string> lines;
  std::stringstream ss(text);
  for (std::string l; std::getline(ss, l);) lines.push_back(l + "\n");
  std::swap(lines[2], lines[3]);
  std::string out;
  for (const std::string& l : lines) out += l;
  return out;
}

TEST_F(BundleTamperTest, SwappedStepRecordsAreRejected) {
  Spit(P("steps.jsonl"), SwapSteps(Slurp(P("steps.jsonl"))));
  EXPECT_REJECTED(Verify(dir_), Outcome::kFailed,
                  "steps.jsonl: content differs from manifest.json");
  FixManifest(dir_);
  EXPECT_REJECTED(Verify(dir_), Outcome::kFailed,
                  "steps.jsonl line 3 is the record of step 2; expected step 1");
}

TEST_F(BundleTamperTest, EditedProgramIsRejected) {
  // One character of the comment on line 1; the program still compiles.
  std::string text = Slurp(P("program/train.dt"));
  ASSERT_EQ(text.rfind("# A tiny classifier", 0), 0u);
  text[2] = 'B';
  Spit(P("program/train.dt"), text);
  EXPECT_REJECTED(Verify(dir_), Outcome::kFailed, "program/train.dt: content differs");
  FixManifest(dir_);
  VerifyReport r = Verify(dir_);
  EXPECT_REJECTED(r, Outcome::kFailed, "stage 0 (program) differs: recorded sha256 ",
                  "first difference on line 1:", "bundle:     # A tiny classifier",
                  "recompiled: # B tiny classifier");
  EXPECT_EQ(LastPhase(r), "recompile");
}

TEST_F(BundleTamperTest, ReplacedCheckpointIsRejected) {
  fs::copy_file(P(bundle::CheckpointPath(8)), P(bundle::CheckpointPath(16)),
                fs::copy_options::overwrite_existing);
  EXPECT_REJECTED(Verify(dir_), Outcome::kFailed,
                  "checkpoints/step-00000016.safetensors: 1844 bytes; manifest.json records 1852");
  FixManifest(dir_);
  EXPECT_REJECTED(Verify(dir_), Outcome::kFailed,
                  "checkpoints/step-00000016.safetensors: holds the state after 8 steps, but its "
                  "name says 16");
}

TEST_F(BundleTamperTest, CheckpointMetadataIsChecked) {
  // Same tensors, a different step_hash in the header: the careful attacker re-lists it.
  const std::string path = P(bundle::CheckpointPath(16));
  SafetensorsFile f = *ParseSafetensors(Slurp(path));
  const std::string real = f.metadata["detrain.step_hash"];
  f.metadata["detrain.step_hash"] = std::string(64, '0');
  Spit(path, *SerializeSafetensors(f));
  FixManifest(dir_);
  EXPECT_REJECTED(Verify(dir_), Outcome::kFailed,
                  "checkpoints/step-00000016.safetensors: metadata \"detrain.step_hash\" is \"" +
                      std::string(64, '0') + "\"; step 15's record gives \"" + real + "\"");
  // An extra metadata key.
  const std::string d = Copy("ckpt-meta");
  SafetensorsFile g = *ParseSafetensors(Slurp(d + "/" + bundle::CheckpointPath(8)));
  g.metadata["note"] = "hi";
  Spit(d + "/" + bundle::CheckpointPath(8), *SerializeSafetensors(g));
  FixManifest(d);
  EXPECT_REJECTED(Verify(d), Outcome::kFailed,
                  "checkpoints/step-00000008.safetensors: metadata \"note\" is not one the "
                  "writer records");
  // The same header with 8 more bytes of whitespace: parses the same, laid out differently.
  const std::string e = Copy("ckpt-layout");
  const std::string path8 = e + "/" + bundle::CheckpointPath(8);
  std::string bytes = Slurp(path8);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<uint8_t>(bytes[static_cast<size_t>(i)]);
  n += 8;
  for (int i = 0; i < 8; ++i) bytes[static_cast<size_t>(i)] = static_cast<char>(n >> (8 * i));
  bytes.insert(9, 8, ' ');  // after the header's opening '{'
  Spit(path8, bytes);
  ASSERT_TRUE(ParseSafetensors(bytes).ok());
  FixManifest(e);
  EXPECT_REJECTED(Verify(e), Outcome::kFailed,
                  "checkpoints/step-00000008.safetensors: not the bytes the writer produces for "
                  "its tensors and metadata (first differing byte at offset 0");
}

TEST_F(BundleTamperTest, ChangedDatasetIsRejected) {
  std::string csv = Slurp(P("data/files/tiny.csv"));
  const size_t digit = csv.find_first_of("123456789", csv.find('\n'));
  ASSERT_NE(digit, std::string::npos);
  csv[digit] = csv[digit] == '9' ? '8' : static_cast<char>(csv[digit] + 1);
  Spit(P("data/files/tiny.csv"), csv);
  EXPECT_REJECTED(Verify(dir_), Outcome::kFailed, "data/files/tiny.csv: content differs");
  FixManifest(dir_);
  const std::string want_sha = attest::Sha256Hex(Slurp(pristine_ + "/data/files/tiny.csv"));
  VerifyReport r = Verify(dir_);
  EXPECT_REJECTED(
      r, Outcome::kFailed,
      "dataset tiny.csv at " + dir_ + "/data/files/tiny.csv is not the one the run used",
      "SHA-256 " + attest::Sha256Hex(csv) + ", expected " + want_sha);
  EXPECT_EQ(LastPhase(r), "recompile");
}

// ---- the careful attacker on the step log ------------------------------------------------------

TEST_F(BundleTamperTest, EditedStepRecordBreaksTheChain) {
  // loss and loss_bits of step 5 changed consistently, the chain hash not recomputed.
  bundle::ParsedSteps steps = *bundle::ParseSteps(Slurp(P("steps.jsonl")));
  steps.records[5].loss_bits ^= 1;
  std::string text = Canonical(bundle::StepsHeaderJson(steps.genesis, steps.policy));
  for (const bundle::StepRecord& rec : steps.records)
    text += Canonical(bundle::StepRecordJson(rec));
  Spit(P("steps.jsonl"), text);
  FixManifest(dir_);
  VerifyReport r = Verify(dir_);
  EXPECT_REJECTED(r, Outcome::kFailed, "step 5: its hash does not chain from step 4");
  EXPECT_EQ(LastPhase(r), "integrity");
}

TEST_F(BundleTamperTest, AlteredLossWithRecomputedChainFailsInReplay) {
  uint32_t recorded = 0, real = 0;
  Rechain(dir_, [&](std::vector<bundle::StepRecord>& recs) {
    real = recs[5].loss_bits;
    recorded = bundle::BitsOfFloat(bundle::FloatOfBits(real) * 0.5f);
    recs[5].loss_bits = recorded;
  });
  VerifyReport integrity_only = Verify(dir_, /*replay=*/false);
  EXPECT_EQ(integrity_only.outcome, Outcome::kVerified) << integrity_only.message;
  VerifyReport r = Verify(dir_);
  EXPECT_REJECTED(r, Outcome::kFailed,
                  "step 5: loss recorded " + FloatText(recorded) + ", replayed " + FloatText(real));
  EXPECT_EQ(LastPhase(r), "replay");
}

TEST_F(BundleTamperTest, TruncatedRunClaimedCompleteIsRejected) {
  // The last record dropped, everything re-chained and re-signed to match.
  Rechain(dir_, [](std::vector<bundle::StepRecord>& recs) { recs.pop_back(); });
  FixManifest(dir_, [](json& m) {
    m["steps"]["count"] = 23;
    m["final"]["steps_done"] = 23;
  });
  EXPECT_REJECTED(Verify(dir_), Outcome::kFailed,
                  "manifest.json says the run is complete, but steps.jsonl holds 23 of its 24 "
                  "steps");
}

TEST_F(BundleTamperTest, FieldsOutsideTheChainAreChecked) {
  // The epoch is not hashed: only replay catches it.
  Rechain(dir_, [](std::vector<bundle::StepRecord>& recs) { recs[0].epoch = 1; });
  EXPECT_REJECTED(Verify(dir_), Outcome::kFailed, "step 0: epoch recorded 1, replayed 0");
  // A readable copy edited by hand (the bits left alone), and an extra field.
  struct Case {
    std::string from, to, message;
  };
  const std::string line2 = "\"learning_rate\":0.009999999776482582,";
  for (const Case& c :
       {Case{line2, "\"learning_rate\":0.5,",
             "steps.jsonl line 2: step record 0: field \"learning_rate\": expected the value of "
             "learning_rate_bits"},
        Case{"{\"batch\"", "{\"audited\":true,\"batch\"",
             "steps.jsonl line 2 is not the canonical form of its record: \"audited\" is not a "
             "field of this format"},
        Case{"\"epoch\":0,", "\"epoch\": 0,",
             "steps.jsonl line 2 is not the canonical form of its record: whitespace, key order "
             "or number spelling differ"}}) {
    SCOPED_TRACE(c.to);
    const std::string d = Copy("readable");
    std::string text = Slurp(d + "/steps.jsonl");
    const size_t at = text.find(c.from, text.find('\n'));
    ASSERT_NE(at, std::string::npos);
    text.replace(at, c.from.size(), c.to);
    Spit(d + "/steps.jsonl", text);
    FixManifest(d);
    EXPECT_REJECTED(Verify(d, /*replay=*/false), Outcome::kFailed, c.message);
  }
}

TEST_F(BundleTamperTest, DeepStepRecordIsRejected) {
  std::string text = Slurp(P("steps.jsonl"));
  const size_t at = text.find("{\"batch\"");
  text.insert(at + 1, "\"x\":" + std::string(100000, '[') + std::string(100000, ']') + ",");
  Spit(P("steps.jsonl"), text);
  FixManifest(dir_);
  EXPECT_REJECTED(Verify(dir_), Outcome::kFailed, "steps.jsonl line 2", "nested more than 256");
}

// ---- the careful attacker on files no digest comparison reached --------------------------------

TEST_F(BundleTamperTest, EditedDerivedFilesAreRejected) {
  struct Case {
    std::string rel;
    size_t line;  // 1-based line whose first byte is changed
  };
  for (const Case& c :
       {Case{"stages/04.plan.txt", 5}, Case{"stages/01.source.hlo", 5},
        Case{"stages/passes/10.fuse.hlo", 5}, Case{"run.json", 1}, Case{"data/data.json", 1}}) {
    SCOPED_TRACE(c.rel);
    const std::string d = Copy("derived");
    std::string text = Slurp(d + "/" + c.rel);
    size_t at = 0;
    for (size_t l = 1; l < c.line; ++l) at = text.find('\n', at) + 1;
    text.insert(at, " ");
    Spit(d + "/" + c.rel, text);
    FixManifest(d);
    VerifyReport r = Verify(d);
    EXPECT_REJECTED(r, Outcome::kFailed,
                    c.rel +
                        " differs from what recompiling the program gives; first difference "
                        "on line " +
                        std::to_string(c.line) + ":");
    EXPECT_EQ(LastPhase(r), "recompile");
  }
  // A binary stage: the first differing byte.
  const std::string d = Copy("derived-pb");
  std::string pb = Slurp(d + "/stages/04.plan.pb");
  pb[100] = static_cast<char>(pb[100] ^ 1);
  Spit(d + "/stages/04.plan.pb", pb);
  FixManifest(d);
  EXPECT_REJECTED(Verify(d), Outcome::kFailed,
                  "stages/04.plan.pb differs from what recompiling the program gives; first "
                  "differing byte at offset 100");
}

TEST_F(BundleTamperTest, EnvironmentIsRecordedNotClaimed) {
  // DESIGN.md §5: environment.json is signed (the manifest covers it) but not part of the
  // reproducibility claim, so a re-signed bundle with another environment still verifies...
  Spit(P("environment.json"), "{\"machine\":\"elsewhere\"}\n");
  EXPECT_REJECTED(Verify(dir_), Outcome::kFailed, "environment.json: ");
  FixManifest(dir_);
  EXPECT_EQ(Verify(dir_).outcome, Outcome::kVerified);
}

TEST_F(BundleTamperTest, ManifestClaimsAreRecomputed) {
  struct Case {
    std::function<void(json&)> edit;
    std::string message;
    bool replay;
  };
  const std::vector<Case> cases = {
      {[](json& m) { m["config"]["optimizer"]["b1"] = 0.5; },
       "manifest.json: \"config.optimizer.b1\": recorded 0.5, expected 0.9", false},
      {[](json& m) { m["program"]["sha256"] = std::string(64, '0'); },
       "manifest.json: \"program.sha256\": recorded \"" + std::string(64, '0') + "\"", false},
      {[](json& m) { m["checkpoints"] = json::array(); },
       "manifest.json: \"checkpoints\": recorded [], expected [{", false},
      {[](json& m) { m["data"]["train_rows"] = 40; },
       "manifest.json: \"data.train_rows\": recorded 40, expected 48", false},
      {[](json& m) { m["run"]["backend"] = "cuda"; },
       "manifest.json: field \"run.backend\" is \"cuda\", but there is no \"executables.cuda\"",
       false},
      {[](json& m) { m["run"]["backend"] = "tpu"; },
       "manifest.json: field \"run.backend\": \"tpu\" is not a backend this detrain knows", false},
      {[](json& m) { m["lineage"] = "elsewhere.jsonl"; },
       "manifest.json: \"lineage\": recorded \"elsewhere.jsonl\", expected \"lineage.jsonl\"",
       false},
      {[](json& m) { m["audited_by"] = "me"; },
       "manifest.json: \"audited_by\" is not a field of this format", false},
      {[](json& m) { m["files"][3]["sha256"] = std::string(64, 'a'); },
       "a files[] entry has fields other than path, size and merkle_root", false},
      {[](json& m) { m["final"]["optimizer_root"] = std::string(64, 'b'); },
       "manifest.json's final params_root or optimizer_root differs from the roots in the "
       "record of step 23",
       false},
      {[](json& m) {
         m["status"] = "stopped";
         m["stop"] = {{"reason", "step 24: loss is NaN"}};
       },
       "manifest.json says the run stopped, but steps.jsonl holds 24 of its 24 steps", false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.message);
    const std::string d = Copy("claims");
    FixManifest(d, c.edit);
    EXPECT_REJECTED(Verify(d, c.replay), Outcome::kFailed, c.message);
  }
}

}  // namespace
}  // namespace detrain::tamper_test
