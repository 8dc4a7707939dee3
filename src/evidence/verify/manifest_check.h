// Structural checks of a bundle's JSON files against schemas/bundle.schema.json (format 1),
// written out in code, and the typed records the verifier reads from them (ReadManifest,
// ReadDataRecord): each file is checked and read once, and no later phase reads a field by name.
//
// Thread safety: pure functions.
#ifndef DETRAIN_EVIDENCE_VERIFY_MANIFEST_CHECK_H_
#define DETRAIN_EVIDENCE_VERIFY_MANIFEST_CHECK_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"

namespace detrain::verify {

// "format" must be "detrain.bundle" (DataLoss otherwise); "format_version" must be 1 —
// InvalidArgument for another integer (a bundle this verifier cannot judge), DataLoss for a
// non-integer.
Status CheckFormatVersion(const nlohmann::json& manifest);

// Every field of manifest.json format 1, with its type and (for digests) its form — also the
// optional "executables" (at most 64 stage records per backend). DataLoss naming the field.
Status CheckManifest(const nlohmann::json& manifest);

// data/data.json's fields the verifier reads.
Status CheckDataRecord(const nlohmann::json& data);

// manifest.json (format 1), typed: every field the verifier reads. `json` keeps the parsed file
// for what the verifier rebuilds and compares as a whole (the claims, the stage records).
struct Manifest {
  nlohmann::json json;
  bool stopped = false;      // "status": "stopped" (else "complete")
  std::string stop_reason;   // "stop.reason", when stopped
  std::string program_path;  // "program.path": program/NAME
  struct Run {
    int64_t steps = 0, checkpoint_every = 0, eval_every = 0;
    bool embed_data = false;
    std::string backend;
  } run;
  int64_t data_rows = 0;                // "data.rows"
  std::vector<std::string> data_files;  // "data.files[].path", where listed
  struct Steps {
    int64_t count = 0;
    std::string genesis, state_digest;  // hex; the policy's name
  } steps;
  struct Final {
    int64_t steps_done = 0;
    std::string step_hash, params_root, optimizer_root;  // hex
  } final;
  struct File {
    std::string path;
    uint64_t size = 0;
    std::string merkle_root;  // hex
  };
  std::vector<File> files;
  std::string root_digest;  // hex
  // The pass pipeline stage 3's record names ("stages[opt-hlo].transform.options.pipeline").
  std::optional<std::string> pipeline;
  // The plan format stage 4's record names ("stages[plan].transform.plan_format_version").
  std::optional<int64_t> plan_format_version;
  bool has_executables = false;  // "executables" (a CUDA run's executable)
};

// CheckFormatVersion, then CheckManifest, then the typed record.
Result<Manifest> ReadManifest(nlohmann::json manifest);

// data/data.json's files, typed (after CheckDataRecord).
struct DataFileRecord {
  std::string path;  // as the program writes it
  std::string sha256;
  uint64_t size = 0;
  std::string embedded;  // the bundle's copy, data/files/NAME; "" when not embedded
};
Result<std::vector<DataFileRecord>> ReadDataFiles(const nlohmann::json& data);

}  // namespace detrain::verify

#endif  // DETRAIN_EVIDENCE_VERIFY_MANIFEST_CHECK_H_
