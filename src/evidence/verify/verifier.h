// `detrain verify`: checks an audit bundle in three phases (DESIGN.md §6; schemas/bundle.md
// "Verification"), stopping at the first failure with a message that names what is wrong.
//
//   integrity  manifest.json parses, has format version 1 and the fields of
//              schemas/bundle.schema.json, and its root digest is its own; every file is listed
//              with its size, Merkle root and SHA-256 and no file is missing or extra; the step
//              log parses, is numbered 0..N-1, chains from its genesis to the final step hash
//              and is byte for byte the canonical form of its records; every checkpoint holds
//              the state its step record's SHA-256 roots name, with exactly the writer's
//              metadata and layout; the final weights are exactly the bytes the final state and
//              the root digest give; the split is disjoint and covers every row; the key
//              lineage parses and every key recomputes from its parent; environment.json is
//              one canonical JSON object (its values are recorded, not checked).
//   recompile  stages 1-4 are rebuilt from the bundled program and the data (embedded, in
//              --data DIR, or where the program names it; each file must have its recorded
//              SHA-256) and must have the recorded digests — for a run on the CUDA backend also
//              its executable: the CUDA source always, the PTX and cubins where this detrain has
//              the NVRTC and nvJitLink versions they record (else a note says they were not
//              compiled again; verification still passes); the data record, the split, the key
//              lineage and the genesis hash are recomputed and compared; then the bundle must
//              list exactly the files of this run, hold every static one (but environment.json)
//              as the writer writes it, and its manifest must claim exactly what the run gives
//              (claims_check.h).
//   signatures every file in attestation/ (outside the manifest; schemas/attestation.md) is an
//              attestation this format defines, about this bundle's manifest and final weights,
//              and — given trusted keys — signed by one of them (sign/attestations.h). The
//              phase runs when the bundle has attestations or trusted keys are given.
//   replay     the steps are run again — all of them, or a range from the nearest checkpoint —
//              and every field of every record (the epoch too) must come out the same, ending
//              in the manifest's final state. Segments between checkpoints are independent,
//              so `jobs` of them run at once. It runs on the verifier's backend, whichever the
//              bundle was made on: every backend gives the same steps.
//
// Outcomes and exit codes: verified 0; failed 1 (a mismatch, a corrupt or incomplete bundle);
// input error 2 (no such directory, a format version this verifier does not read, a dataset it
// cannot find).
//
// Thread safety: VerifyBundle may run concurrently on different bundles.
#ifndef DETRAIN_EVIDENCE_VERIFY_VERIFIER_H_
#define DETRAIN_EVIDENCE_VERIFY_VERIFIER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "evidence/sign/attestations.h"
#include "runtime/executor.h"

namespace detrain::verify {

// What this verifier's compiler backend is, for deciding whether it reproduces a bundle's stages
// 3-4 (schemas/bundle.md §9): the pipeline it runs when it cannot run the recorded one and the
// plan format it writes. A recorded pipeline it runs exactly (passes::PipelineGap) and a plan
// format it writes give stages 3-4 byte for byte; otherwise verify recompiles with
// `default_pipeline`, replays on that plan, and notes the stages as not reproduced.
struct BackendGeneration {
  std::string default_pipeline;  // passes::kDefaultPipeline
  int64_t plan_format_version;   // plan::kPlanFormatVersion: the format it writes by default
  // For tests that stand for a later detrain: spec elements ("fuse", "cse@2") to treat as
  // passes this verifier no longer runs.
  std::vector<std::string> retired_passes;
  // The oldest plan format it still writes (plan::kOldestPlanFormatVersion); -1: none but
  // plan_format_version.
  int64_t oldest_plan_format_version = -1;
};
BackendGeneration CurrentBackend();

// Why `backend` cannot reproduce the stages 3-4 that `pipeline` and `plan_format_version` made
// ("" when it can), one sentence naming both sides.
std::string BackendGap(const BackendGeneration& backend, const std::string& pipeline,
                       int64_t plan_format_version);

struct VerifyOptions {
  std::string bundle;
  std::optional<int64_t> from_step, to_step;  // replay steps [from, to); default all
  int jobs = 1;                               // segments replayed at once
  bool replay = true;
  bool recompile = true;
  std::string data_dir;  // where to look for the dataset files first
  // Files to try before any other for a dataset, by its path as the program writes it (detrain
  // diff passes the files it found, digest-checked); a file that is not the one the run used is
  // skipped here, unlike one in data_dir.
  std::map<std::string, std::string> data_files;
  runtime::ExecutorOptions executor;                 // per replaying job
  int integrity_threads = 0;                         // 0: every hardware thread
  std::function<void(const std::string&)> progress;  // one line per event
  // Set, with more than one rank (`mpirun -np P detrain verify`): every rank checks integrity
  // and recompiles; the replay's checkpoint segments are dealt out over the ranks (segment i
  // to rank i mod P) and rank 0 merges their verdicts into its report. A rank that stops
  // before the replay stops every rank. Never changes a verdict.
  std::shared_ptr<runtime::Cluster> cluster;
  // The keys whose signatures are trusted (--trusted-key): with any, every attestation must be
  // signed by one of them, and a bundle without attestations fails.
  std::vector<sign::PublicKey> trusted_keys;
  // The backend to verify as; this detrain's (CurrentBackend()) when unset. Tests set a later
  // one (a pass retired, another default pipeline, a newer plan format).
  std::optional<BackendGeneration> backend;
};

enum class Outcome { kVerified, kFailed, kIncomplete, kInputError };

struct PhaseReport {
  std::string name;  // "integrity" | "recompile" | "replay"
  bool ok = false;
  std::string message;  // what failed, or a summary of what was checked
  double seconds = 0;
  // What a passing phase left unchecked, e.g. "CUDA PTX and cubins not recompiled: toolchain
  // nvrtc 13.1 here, 13.0 recorded; ..." (also in `message` and the report's).
  std::vector<std::string> notes;
  // The recompile phase: the stages compared byte for byte with the bundle's, and those that
  // were not (stages 3-4 made by a pipeline or plan format this detrain does not reproduce).
  std::vector<std::string> stages_reproduced, stages_not_reproduced;
};

struct VerifyReport {
  Outcome outcome = Outcome::kFailed;
  std::string message;  // one line: what was verified, or the first failure
  std::vector<PhaseReport> phases;
  int64_t steps = 0;  // records in the bundle
  int64_t steps_replayed = 0;
  std::string final_step_hash;
  std::string root_digest;
  std::string status;  // the manifest's: "complete" | "stopped"
  // The attestations checked by the signatures phase (signer set when a trusted key verified).
  std::vector<sign::AttestationCheck> attestations;

  int ExitCode() const;
  nlohmann::json ToJson() const;
};

VerifyReport VerifyBundle(const VerifyOptions& options);

}  // namespace detrain::verify

#endif  // DETRAIN_EVIDENCE_VERIFY_VERIFIER_H_
