// Structural checks of a bundle's JSON files against schemas/bundle.schema.json (format 1),
// written out in code so that every later field access in the verifier is safe: after
// CheckManifest succeeds, every field the verifier reads exists with the type it expects.
//
// Thread safety: pure functions.
#ifndef DETRAIN_EVIDENCE_VERIFY_MANIFEST_CHECK_H_
#define DETRAIN_EVIDENCE_VERIFY_MANIFEST_CHECK_H_

#include <nlohmann/json.hpp>

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

}  // namespace detrain::verify

#endif  // DETRAIN_EVIDENCE_VERIFY_MANIFEST_CHECK_H_
