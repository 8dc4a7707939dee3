// `detrain inspect`: what a bundle holds, for people (a summary; verify checks it). Works on
// incomplete bundles too: it reads what is there and says what is missing.
//
// Thread safety: pure function of the bundle's files.
#ifndef DETRAIN_EVIDENCE_REPORT_INSPECT_H_
#define DETRAIN_EVIDENCE_REPORT_INSPECT_H_

#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>

#include "base/status.h"

namespace detrain::report {

// {"bundle", "complete", "status", "program", "data": {files, rows, train_rows,
// validation_rows, standardize}, "stages": [{stage, sha256}], "stages_3_4"
// (BackendReproduction), "cuda_stages": [{stage, file, size,
// sha256}] (a CUDA run's executable; empty otherwise), "backend" and "devices" (environment.json's
// backend and device_list, as recorded), "lineage": {nodes, uses, purposes:
// {kind: count}}, "steps": {count, state_digest, genesis, final_step_hash}, "loss": [[step, loss]],
// "learning_rate": [[step, rate]],
// "eval": [[step, loss, accuracy|null]], "checkpoints": [steps_done], "root_digest",
// "attestations": [{file, predicate_type, key, result?, time?} or {file, problem}] (as read,
// not checked)}.
// Fails (InvalidArgument) when `dir` is not a bundle at all, or holds a link or special file
// (bundle/bundle_reader.h: the rules every reader of a bundle applies).
Result<nlohmann::json> InspectBundle(const std::string& dir);

// Whether this detrain reproduces the stages 3-4 a manifest records (schemas/bundle.md §9):
// {"pipeline", "plan_format_version", "reproduced_here": bool, "why_not": verify::BackendGap's
// sentence, "" when reproduced}; null when the manifest records no stage 3.
nlohmann::json BackendReproduction(const nlohmann::json& manifest);

// The member at `path` of nested objects, or null when a step is missing or not an object.
const nlohmann::json& JsonAt(const nlohmann::json& j, std::initializer_list<const char*> path);
// A JSON value as text: a string without quotes, null as "", anything else as compact JSON.
std::string JsonText(const nlohmann::json& j);

// The summary as text, with the loss curve drawn in `width` x `height` characters.
std::string InspectText(const nlohmann::json& summary, int width, int height);

}  // namespace detrain::report

#endif  // DETRAIN_EVIDENCE_REPORT_INSPECT_H_
