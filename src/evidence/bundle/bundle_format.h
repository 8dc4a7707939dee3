// The audit bundle, format version 1 (DESIGN.md §5; schemas/bundle.md is the specification,
// schemas/bundle.schema.json the JSON Schema of manifest.json): file names, the step record and
// its JSON line, the state's safetensors form, and the manifest's root digest. The writer
// (attested_run.h) and the verifier (evidence/verify) both use these, so the two cannot disagree on
// a name or a field.
//
// Thread safety: pure functions and constants.
#ifndef DETRAIN_EVIDENCE_BUNDLE_BUNDLE_FORMAT_H_
#define DETRAIN_EVIDENCE_BUNDLE_BUNDLE_FORMAT_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "attest/sha256.h"
#include "attest/state_digest.h"
#include "base/safetensors.h"
#include "base/status.h"
#include "runtime/train/step_record.h"
#include "runtime/train/train_state.h"

namespace detrain::bundle {

inline constexpr int kFormatVersion = 1;
inline constexpr char kManifestFormat[] = "detrain.bundle";
inline constexpr char kStepsFormat[] = "detrain.steps";
inline constexpr char kDataFormat[] = "detrain.data";
inline constexpr char kProgressFormat[] = "detrain.bundle.progress";
inline constexpr char kCheckpointFormat[] = "detrain.checkpoint.v1";
using runtime::kWeightsFormat;

inline constexpr char kManifest[] = "manifest.json";
inline constexpr char kProgress[] = "progress.json";
inline constexpr char kSteps[] = "steps.jsonl";
inline constexpr char kLineage[] = "lineage.jsonl";
inline constexpr char kEnvironment[] = "environment.json";
inline constexpr char kRunRecord[] = "run.json";
inline constexpr char kDataRecord[] = "data/data.json";
inline constexpr char kSplitFile[] = "data/split.safetensors";
inline constexpr char kEmbeddedDataDir[] = "data/files";
inline constexpr char kProgramDir[] = "program";
inline constexpr char kStagesDir[] = "stages";
inline constexpr char kCheckpointsDir[] = "checkpoints";
using runtime::kFinalWeights;

// "checkpoints/step-00000100.safetensors": the state after `steps_done` steps.
std::string CheckpointPath(int64_t steps_done);
// The inverse; nullopt for any other name.
std::optional<int64_t> CheckpointStepsOf(std::string_view relative_path);

std::string_view DigestPolicyName(
    attest::DigestPolicy policy);  // "xxh3-128" | "xxh3-128-chunked" | "sha256"
Result<attest::DigestPolicy> ParseDigestPolicy(std::string_view name);

// One line of steps.jsonl (runtime/train/step_record.h computes it; this file reads and writes it).
using runtime::ChainHash;
using runtime::StepRecord;

nlohmann::json StepRecordJson(const StepRecord& record);
// Parses and checks one record (every field present with the right type and size).
Result<StepRecord> ParseStepRecord(const nlohmann::json& json, attest::DigestPolicy policy);

// The header line of steps.jsonl.
nlohmann::json StepsHeaderJson(const attest::Digest256& genesis, attest::DigestPolicy policy);

struct ParsedSteps {
  attest::Digest256 genesis{};
  attest::DigestPolicy policy = attest::DigestPolicy::kXxh3;
  std::vector<StepRecord> records;
  size_t valid_bytes = 0;  // the prefix of the file that parsed (the header and whole records)
  std::string error;       // why parsing stopped early ("" when every line parsed)
  int64_t error_line = 0;  // 1-based line of `error`
};
// Parses steps.jsonl. Stops at the first line that is not a complete, valid record and says
// why in `error` (a torn last line after a crash is expected in an incomplete bundle); fails
// only when the header is unusable.
Result<ParsedSteps> ParseSteps(std::string_view text);

// The canonical JSON of `j` and a newline: one line of a bundle's JSON files as written.
Result<std::string> CanonicalLine(const nlohmann::json& j);

// root_digest = SHA-256 of the canonical JSON of the manifest without its "root_digest".
Result<std::string> ManifestRootDigest(const nlohmann::json& manifest);

std::string Hex(const attest::Digest256& d);
std::string Hex(std::string_view raw);
std::string BitsHex(uint32_t bits);  // 8 lowercase hex digits
using runtime::BitsOfFloat;
using runtime::FloatOfBits;

}  // namespace detrain::bundle

#endif  // DETRAIN_EVIDENCE_BUNDLE_BUNDLE_FORMAT_H_
