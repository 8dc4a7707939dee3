// The audit report: `detrain inspect BUNDLE --html REPORT.html` (and `--json`), a page an
// auditor can read (docs/report.md).
//
// ReportJson gathers everything the page shows from the bundle's bytes: the summary (program,
// model, data with digests and row counts, the split and a check that it is disjoint and
// complete, seed, steps, final metrics, final step hash, root digest), the verification banner,
// the training curves, the stage chain with each stage's digest, transform, options and text,
// the key lineage as a tree and by purpose, the environment and the attestations. ReportHtml
// renders it as one self-contained HTML file: no script, no external resource of any kind (a
// Content-Security-Policy forbids them), plots as inline SVG, long parts collapsed in <details>.
//
// Deterministic: the same bundle and options give the same bytes — no timestamps of its own,
// every collection in a fixed order, numbers printed by one formatter. What the page says about
// verification comes only from `verification` (this process's verify run) and the signed
// verification summaries checked against `trusted_keys`; otherwise it says "not verified".
//
// Thread safety: pure functions of the bundle's files.
#ifndef DETRAIN_EVIDENCE_REPORT_REPORT_H_
#define DETRAIN_EVIDENCE_REPORT_REPORT_H_

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/status.h"
#include "evidence/sign/keys.h"
#include "evidence/verify/verifier.h"

namespace detrain::report {

// Text stages are shown up to this many bytes (the rest is summarised by size).
inline constexpr size_t kReportStageTextBytes = 64 * 1024;
// Lineage nodes drawn in the tree; a larger lineage is summarised by purpose.
inline constexpr size_t kReportLineageNodes = 4096;

struct ReportOptions {
  std::string name;            // the bundle as the user named it (a directory or an archive)
  std::string archive_sha256;  // when read from an archive
  const verify::VerifyReport* verification = nullptr;  // a verification this process ran, if any
  std::vector<sign::PublicKey> trusted_keys;           // to check signed verification summaries
};

// inspect's summary (InspectBundle) with the report's sections added. Fails only when `dir` is
// not a bundle.
Result<nlohmann::json> ReportJson(const std::string& dir, const ReportOptions& options);

std::string ReportHtml(const nlohmann::json& report);

}  // namespace detrain::report

#endif  // DETRAIN_EVIDENCE_REPORT_REPORT_H_
