// The fixture of the bundle tamper tests (bundle_tamper_test.cc, bundle_manifest_test.cc;
// STYLE.md 9: evidence code is tested like a storage engine). One bundle of
// tests/evidence/testdata/tiny is written per suite; each test copies it, damages the copy and
// requires verify::VerifyBundle to reject it with a message that names what is wrong.
//
// Two kinds of attacker: a careless one, who edits a file and leaves manifest.json as it is (the
// integrity phase must name the file), and a careful one, who also rewrites the manifest's file
// entries and root digest (and, where needed, re-chains the step log and fixes the metadata of
// checkpoints and final weights) so that every digest in the bundle is consistent — then the
// recompile and replay phases must catch the lie.
#ifndef DETRAIN_TESTS_ATTEST_BUNDLE_TAMPER_FIXTURE_H_
#define DETRAIN_TESTS_ATTEST_BUNDLE_TAMPER_FIXTURE_H_

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "attest/canonical_json.h"
#include "attest/merkle.h"
#include "attest/sha256.h"
#include "base/fs.h"
#include "base/safetensors.h"
#include "base/thread_pool.h"
#include "evidence/bundle/attested_run.h"
#include "evidence/bundle/bundle_format.h"
#include "evidence/verify/verifier.h"

namespace detrain::tamper_test {

namespace fs = std::filesystem;
using nlohmann::json;
using verify::Outcome;
using verify::VerifyReport;

inline const std::string kProgram =
    std::string(DETRAIN_SOURCE_DIR) + "/tests/evidence/testdata/tiny/train.dt";

inline std::string Slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

inline void Spit(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

inline std::string Canonical(const json& j) { return *attest::CanonicalJson(j) + "\n"; }

// "%.9g (0x%08x)", as the verifier prints a float.
inline std::string FloatText(uint32_t bits) {
  char s[64];
  std::snprintf(s, sizeof(s), "%.9g (0x%08x)", static_cast<double>(bundle::FloatOfBits(bits)),
                bits);
  return s;
}

class BundleTamperTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    char tmpl[] = "/tmp/detrain_tamper.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    pristine_.clear();  // set once the bundle is written: SetUp checks it
    bundle::RunOptions o;
    o.program = kProgram;
    o.output_dir = root_ + "/pristine";
    o.embed_data = true;
    Result<bundle::RunSummary> r = bundle::RunAttested(o);
    ASSERT_TRUE(r.ok()) << r.status().message();
    ASSERT_TRUE(r->complete);
    ASSERT_EQ(r->steps_done, 24);
    pristine_ = o.output_dir;
  }
  static void TearDownTestSuite() { fs::remove_all(root_); }

  void SetUp() override {
    ASSERT_FALSE(pristine_.empty()) << "the suite's bundle was not written";
    dir_ = Copy(::testing::UnitTest::GetInstance()->current_test_info()->name());
  }

  // A fresh copy of the pristine bundle.
  std::string Copy(const std::string& name) {
    const std::string d = root_ + "/" + name + "." + std::to_string(copies_++);
    fs::copy(pristine_, d, fs::copy_options::recursive);
    return d;
  }

  static VerifyReport Verify(const std::string& dir, bool replay = true) {
    verify::VerifyOptions o;
    o.bundle = dir;
    o.replay = replay;
    o.integrity_threads = 2;
    return verify::VerifyBundle(o);
  }

  // Every file of the pristine bundle, relative, sorted.
  static std::vector<std::string> Files() { return *ListFiles(pristine_); }

  std::string P(const std::string& rel) const { return dir_ + "/" + rel; }

  // The careful attacker: rewrites manifest.json's file list from what `dir` now holds (size,
  // Merkle root), applies `edit` to the manifest, recomputes the root digest, and
  // rewrites the final weights' metadata that names the root digest and the final step hash.
  static void FixManifest(const std::string& dir, const std::function<void(json&)>& edit = {}) {
    json m = *attest::ParseJson(Slurp(dir + "/manifest.json"));
    ThreadPool pool(1);
    json files = json::array();
    const std::vector<std::string> present = *ListFiles(dir);
    for (const std::string& rel : present) {
      if (rel == bundle::kManifest || rel == bundle::kFinalWeights) continue;
      attest::FileDigests d = *attest::DigestFile(dir + "/" + rel, pool);
      files.push_back(
          {{"path", rel}, {"size", d.size}, {"merkle_root", bundle::Hex(d.merkle_root)}});
    }
    m["files"] = files;
    if (edit) edit(m);
    m["root_digest"] = *bundle::ManifestRootDigest(m);
    Spit(dir + "/manifest.json", Canonical(m));
    const std::string weights = dir + "/" + bundle::kFinalWeights;
    Result<SafetensorsFile> w = ParseSafetensors(Slurp(weights));
    if (!w.ok()) return;
    w->metadata["detrain.bundle_root"] = m["root_digest"].get<std::string>();
    if (m["final"].is_object() && m["final"]["step_hash"].is_string()) {
      w->metadata["detrain.final_step_hash"] = m["final"]["step_hash"].get<std::string>();
    }
    Spit(weights, *SerializeSafetensors(*w));
  }

  // The careful attacker on the step log: edits records, recomputes every chain hash from the
  // genesis, rewrites steps.jsonl canonically, fixes the checkpoints' step_hash metadata and the
  // manifest (final step hash, file list, root digest).
  static void Rechain(const std::string& dir,
                      const std::function<void(std::vector<bundle::StepRecord>&)>& edit) {
    bundle::ParsedSteps steps = *bundle::ParseSteps(Slurp(dir + "/steps.jsonl"));
    edit(steps.records);
    attest::Digest256 prev = steps.genesis;
    std::string text = Canonical(bundle::StepsHeaderJson(steps.genesis, steps.policy));
    for (bundle::StepRecord& r : steps.records) {
      r.hash = bundle::ChainHash(r, prev);
      prev = r.hash;
      text += Canonical(bundle::StepRecordJson(r));
    }
    Spit(dir + "/steps.jsonl", text);
    for (int64_t done : {8, 16}) {
      const std::string path = dir + "/" + bundle::CheckpointPath(done);
      SafetensorsFile f = *ParseSafetensors(Slurp(path));
      f.metadata["detrain.step_hash"] = bundle::Hex(steps.records[done - 1].hash);
      Spit(path, *SerializeSafetensors(f));
    }
    FixManifest(dir, [&](json& m) { m["final"]["step_hash"] = bundle::Hex(prev); });
  }

  // The name of the phase that ended verification.
  static std::string LastPhase(const VerifyReport& r) {
    return r.phases.empty() ? "" : r.phases.back().name;
  }

  static inline std::string root_, pristine_;
  static inline int copies_ = 0;
  std::string dir_;
};

// Asserts a failed verification whose message holds every one of `parts`.
#define EXPECT_REJECTED(report, want_outcome, ...)                           \
  do {                                                                       \
    const VerifyReport& r_ = (report);                                       \
    EXPECT_EQ(r_.outcome, want_outcome) << r_.message;                       \
    EXPECT_NE(r_.ExitCode(), 0);                                             \
    for (const std::string& part_ : std::vector<std::string>{__VA_ARGS__}) { \
      EXPECT_NE(r_.message.find(part_), std::string::npos)                   \
          << "message lacks \"" << part_ << "\":\n  " << r_.message;         \
    }                                                                        \
  } while (0)

}  // namespace detrain::tamper_test

#endif  // DETRAIN_TESTS_ATTEST_BUNDLE_TAMPER_FIXTURE_H_
