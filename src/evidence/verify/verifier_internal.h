// Internal to src/evidence/verify: what the verifier's phases share (verifier.h is the interface).
// integrity.cc reads and checks the bundle into a Bundle; recompile.cc rebuilds the run into a
// Replayable; verifier.cc replays and reports.
//
// Thread safety: the phases run one after another; replay reads Bundle and Replayable from
// several threads without writing them.
#ifndef DETRAIN_EVIDENCE_VERIFY_VERIFIER_INTERNAL_H_
#define DETRAIN_EVIDENCE_VERIFY_VERIFIER_INTERNAL_H_

#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/safetensors.h"
#include "base/status.h"
#include "driver/compile.h"
#include "evidence/bundle/bundle_format.h"
#include "evidence/bundle/bundle_reader.h"
#include "evidence/verify/manifest_check.h"
#include "evidence/verify/verifier.h"
#include "runtime/train/session.h"

namespace detrain::verify::internal {

using attest::Digest256;
using bundle::Hex;
using bundle::StepRecord;
using nlohmann::json;

inline constexpr uint64_t kMaxJsonFile = uint64_t{256} << 20;  // manifest, data record, step log

// A failure with its outcome (a plain Status cannot say "incomplete" or "input error").
struct Failure {
  Outcome outcome = Outcome::kFailed;
  std::string message;
};
using Check = std::optional<Failure>;

inline Check Fail(std::string m) { return Failure{Outcome::kFailed, std::move(m)}; }
inline Check InputError(std::string m) { return Failure{Outcome::kInputError, std::move(m)}; }
// What an input error about the machine or the options adds to its message.
inline constexpr const char* kNotAVerdict =
    " (a limit of this machine or of the options given, not a verdict on the bundle)";

// An error as a verdict — but for one about this machine, the auditor's options
// (StatusCode::kUnavailable: no GPU, --devices the program's shards do not allow) or the memory
// budget (kResourceExhausted: the message says to raise --max-memory), which is an input error:
// it says nothing about the bundle, so no verdict is made.
inline Check FailStatus(const Status& s, const std::string& context = "") {
  std::string m(s.message());
  if (!context.empty() && m.rfind(context, 0) != 0) m = context + ": " + m;
  if (s.code() == StatusCode::kUnavailable) return InputError(m + kNotAVerdict);
  if (s.code() == StatusCode::kResourceExhausted) return InputError(std::move(m));
  return Fail(std::move(m));
}

// The first line (text) or byte where two byte strings differ, for messages.
std::string FirstDifference(const std::string& a, const std::string& b, bool text);
// Where `text` departs from its canonical form: the byte offset and the text around it.
std::string NonCanonicalAt(const std::string& text, const std::string& canonical);
// The first metadata entry or tensor where two safetensors files differ (integrity.cc).
std::string SafetensorsDifference(const std::string& have, const std::string& want);
// The first field where two JSON values differ, for messages ("" when equal).
std::string JsonDifference(const json& recorded, const json& expected, const std::string& path);
// "%.9g (0x%08x)" of a float's bits.
std::string FloatText(uint32_t bits);

struct Bundle {
  std::string dir;
  Manifest manifest;
  json data_record;
  std::vector<DataFileRecord> data_files;  // data_record's "files", typed
  bundle::ParsedSteps steps;
  std::string root_digest;
  std::map<int64_t, std::string> checkpoints;  // steps_done -> relative path
  bool stopped = false;
};

// What the recompile phase builds and the replay phase uses.
struct Replayable {
  // The recompiled run (runtime/train/session.h): the compile result, the data, the schedule
  // (the manifest's step count and digest policy), the keys and a trainer.
  std::unique_ptr<runtime::RunSession> session;
  runtime::Backend backend = runtime::Backend::kCpu;  // the run's (run.backend)
  // A CUDA run whose PTX and cubins were not compiled again: the stages with the recorded ones
  // standing in (what the bundle must hold), while the session's (what replay runs) has none.
  std::optional<driver::CompileResult> as_recorded;
  std::vector<std::string> notes;  // what the phase did not check, for the report
  // Why this detrain does not reproduce the bundle's stages 3-4 (BackendGap; "" when it does):
  // then `as_recorded` holds the recorded stages 3-4 and pass dumps, and replay runs the plan
  // this detrain's pipeline makes.
  std::string backend_gap;
  std::vector<std::string> stages_reproduced, stages_not_reproduced;  // stage names
};

// A bundle's checkpoints and step log, for replay (runtime::RecordedRun): a checkpoint is read
// exactly as the writer wrote it (ReadCheckpoint) and must hold the state its record's roots
// name (CheckCheckpointState).
class BundleRun : public runtime::RecordedRun {
 public:
  explicit BundleRun(const Bundle& b) : b_(b) {}
  Status LoadCheckpoint(int64_t steps_done, runtime::TrainState* state) const override;
  std::vector<int64_t> Checkpoints() const override;
  Digest256 HashBefore(int64_t t) const override;

 private:
  const Bundle& b_;
};

// A follower rank's replay verdicts, as rank 0 receives them (`mpirun -np P detrain verify`):
// JSON text [[segment, first bad step or -1, message, steps replayed], ...] from rank `rank` of
// `ranks`, each segment one of that rank's (segment mod ranks == rank). Whatever the text, an
// error or verdicts in range; never throws.
// first_bad: the step of the first mismatch, -1 when none, kCannotReplayHere when the segment
// could not start on this machine with these options (StatusCode::kUnavailable).
inline constexpr int64_t kCannotReplayHere = -2;
struct SegmentVerdict {
  size_t segment = 0;
  int64_t first_bad = -1;
  std::string message;
  int64_t replayed = 0;
};
Status ReadSegmentVerdicts(std::string_view text, size_t rank, size_t ranks, size_t segments,
                           std::vector<SegmentVerdict>* out);

// Where a dataset file the program names as `written` may be, in the order to try: each of
// `dirs` (its base name), the bundle's embedded copy, then the path itself when absolute, else
// relative to program/ and to the directory of `program_hint` (environment.json's program). The
// caller accepts a candidate only with the recorded SHA-256 (recompile.cc; diff.cc).
std::vector<std::string> DataFileCandidates(const std::string& bundle_dir,
                                            const std::string& written, const std::string& embedded,
                                            const std::string& program_hint,
                                            const std::vector<std::string>& dirs);

// The phases (integrity.cc, recompile.cc).
Check Integrity(Bundle& b, const VerifyOptions& o);
Check Recompile(const Bundle& b, const VerifyOptions& o, Replayable* r);
// Recompile's first step (recompile_stages.cc): `program` compiled with `copts` (and a CUDA run's
// executable), every stage record compared with the manifest's; sets *out (what replay runs),
// r->backend, r->as_recorded and r->notes.
Check CompileStages(const Bundle& b, const std::string& program, driver::CompileOptions copts,
                    Replayable* r, driver::CompileResult* out);
// Without replay: every checkpoint's tensors against its record's roots.
Check CheckAllCheckpoints(const Bundle& b, const Replayable& r);

// A checkpoint, parsed, and checked to be exactly the writer's bytes.
Result<SafetensorsFile> ReadCheckpoint(const Bundle& b, const std::string& path);
// A checkpoint's tensors are the state its step record's SHA-256 roots name.
Check CheckCheckpointState(const Bundle& b, int64_t done, const runtime::TrainState& state,
                           ThreadPool* pool);

}  // namespace detrain::verify::internal

#endif  // DETRAIN_EVIDENCE_VERIFY_VERIFIER_INTERNAL_H_
