// Internal to `detrain diff` (diff.h): what diff.cc (inputs, stages, the verdict) and
// diff_training.cc (the step logs, states and the replay) share.
//
// Thread safety: one Side per comparison, used by one thread.
#ifndef DETRAIN_EVIDENCE_DIFF_DIFF_INTERNAL_H_
#define DETRAIN_EVIDENCE_DIFF_DIFF_INTERNAL_H_

#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "evidence/diff/diff.h"
#include "evidence/report/html.h"
#include "evidence/report/inspect.h"
#include "evidence/verify/verifier_internal.h"

namespace detrain::diff {

// The report's vocabulary for JSON and HTML, which a comparison renders the same way.
using report::JsonAt;
using report::JsonText;
namespace html = report::html;

}  // namespace detrain::diff

namespace detrain::diff::internal {

using namespace verify::internal;  // NOLINT: the verifier's vocabulary (Bundle, Replayable, phases)

inline constexpr uint64_t kMaxText = uint64_t{64} << 20;  // a program, a stage, a pass output
inline constexpr size_t kMaxFields = 200;                 // differing fields listed per section
inline constexpr size_t kMaxValueText = 240;              // a listed value longer than this is cut

// One of the two bundles, as far as it could be read (ReadSide).
struct Side {
  std::string label;  // "A" or "B"
  std::string name;   // as the user named it
  std::string dir;
  std::string archive_sha256;
  json manifest, data_record, environment;
  std::string program_text;
  bool program_read = false;
  // A run spec's other files in program/ (the step's HLO, the initial state): name -> bytes.
  std::map<std::string, std::string> program_files;
  bundle::ParsedSteps steps;
  std::string steps_problem;  // why the step log could not be read (or stopped early)
  std::map<int64_t, std::string> checkpoints;  // steps_done -> relative path
  // The replay context, made on first use (integrity, recompile); `replay_problem` when not.
  bool replay_tried = false;
  std::string replay_problem;
  std::unique_ptr<Bundle> bundle;
  std::unique_ptr<Replayable> replayable;
};

// A string member, or "".
std::string Str(const json& j);
// A dataset file of a side, found where verify looks for it (the --data directories, the
// embedded copy, the program's directory, environment.json's hint) and accepted only with the
// recorded SHA-256. "" when not found; `looked` lists where it looked.
std::string LocateDataFile(const Side& s, const json& record, const std::vector<std::string>& dirs,
                           std::string* looked);
// "[i, j, k]" of flat index `flat` in a row-major array of `shape`.
std::string IndexText(int64_t flat, const std::vector<int64_t>& shape);

// One field difference ({"field", "a", "b", "absent"?}) as a line: "field: A -> B".
std::string FieldLine(const json& f);

// Derives the verdict (`identical`, `verdict`), the summary lines (`differences`) and
// `first_difference` from the report's sections (diff_render.cc).
void Finish(json* report);

// The training section of the report (diff_training.cc).
json TrainingSection(Side& a, Side& b, const DiffOptions& o);

}  // namespace detrain::diff::internal

#endif  // DETRAIN_EVIDENCE_DIFF_DIFF_INTERNAL_H_
