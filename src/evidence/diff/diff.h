// `detrain diff A B`: what differs between two training runs' bundles, and where they first
// diverge (docs/diff.md).
//
// DiffBundles reads both bundles (directories; the CLI unpacks archives) and compares, in this
// order:
//   inputs    the program (a unified diff of its text), each dataset (same or different SHA-256;
//             for files both sides can find — embedded, under a --data directory, or where the
//             program names them, the SHA-256 deciding — the lines or elements that differ and
//             the first of them), the parsed tensors' digests, the split and its index lists,
//             the program's configuration and the run options field by field (the seed among
//             them), the format and detrain versions;
//   stages    each stage of the chain (and a CUDA run's executable) by digest; for the first stage
//             of 1-4 that differs, the first differing line of its canonical text (the plan's text
//             form for the binary plan) with the lines before it, and from the per-pass records
//             the pass that first produced a difference;
//   training  the step records side by side: the first step whose chain entry (h_t) differs and
//             the first whose content differs — which of batch, key, learning rate, loss, state,
//             roots, evaluation — with both values; whether one run is a prefix of the other;
//             the loss curves. At the first step whose state differs, the first differing tensor
//             and element with both values, from checkpoints or the final weights when they hold
//             that state, otherwise by replaying each bundle from its nearest checkpoint (which
//             needs its data); when it cannot, it says why.
// Nothing here needs the data except the dataset contents and the replay.
//
// "identical" means the two bundles make the same claim: the same program, data, split,
// configuration, run options, stage chain, step records and final state. What does not change
// a bit of the training — the machine and its thread and device counts (environment.json), the
// backend and a CUDA run's executable, detrain's version — is reported but leaves the runs
// identical.
//
// The report is a JSON object (docs/diff.md lists its fields); DiffText and DiffHtml render it.
// Every string in it is printable UTF-8 (file contents are shown through Printable), so any
// bundle, however hostile, gives a report and never an exception.
//
// Thread safety: DiffBundles may run concurrently on different bundles.
#ifndef DETRAIN_EVIDENCE_DIFF_DIFF_H_
#define DETRAIN_EVIDENCE_DIFF_DIFF_H_

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/status.h"
#include "runtime/executor.h"

namespace detrain::diff {

struct DiffOptions {
  std::string name_a, name_b;                      // the bundles as the user named them
  std::string archive_sha256_a, archive_sha256_b;  // when read from archives
  std::vector<std::string> data_dirs;              // where to look for dataset files first (--data)
  bool replay = true;                              // may replay to find the first differing element
  runtime::ExecutorOptions executor;               // for the replay
  std::function<void(const std::string&)> progress;  // one line per event
};

// The comparison of the bundles in `dir_a` and `dir_b`. Fails (InvalidArgument) only when one
// is not a finished bundle this detrain reads (no manifest.json, another format version, an
// unreadable manifest); a difference, however large, is a result.
Result<nlohmann::json> DiffBundles(const std::string& dir_a, const std::string& dir_b,
                                   const DiffOptions& options);

// The report for people: a verdict line, then each difference.
std::string DiffText(const nlohmann::json& report);

// The report as one self-contained HTML page in the audit report's style (no script, nothing
// loaded); the same bytes for the same report.
std::string DiffHtml(const nlohmann::json& report);

}  // namespace detrain::diff

#endif  // DETRAIN_EVIDENCE_DIFF_DIFF_H_
