// environment.json: where a run happened (DESIGN.md §5) — machine, CPU, ISA path, threads,
// devices, toolchain and library versions. Recorded and covered by the manifest's digests, but
// not part of the reproducibility claim: the same program and data give the same step hashes
// in any environment.
#ifndef DETRAIN_EVIDENCE_BUNDLE_ENVIRONMENT_H_
#define DETRAIN_EVIDENCE_BUNDLE_ENVIRONMENT_H_

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "runtime/executor.h"

namespace detrain::bundle {

// `program`: the program's path as run, made absolute (a hint where its relative data paths
// point, for a verifier on the same machine; the data's digests decide, never the path).
// `devices`: what ran the steps (runtime::ExecutorStats::devices), e.g. each GPU's model and the
// image it loaded.
nlohmann::json EnvironmentJson(const runtime::ExecutorOptions& options, Isa isa,
                               const std::vector<std::string>& devices,
                               const std::string& detrain_version, const std::string& program);

}  // namespace detrain::bundle

#endif  // DETRAIN_EVIDENCE_BUNDLE_ENVIRONMENT_H_
