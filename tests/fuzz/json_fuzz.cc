// libFuzzer harness: the bundle's JSON readers. The first byte picks the reader, the rest is the
// text:
//   0  attest::ParseJson, then CanonicalJson: canonical text must be a fixed point (it parses
//      and prints to the same bytes; schemas/canonical-json.md). The parser it rests on
//      (base/json_parse.h) must agree with nlohmann::json::parse (the same value, or the same
//      exception), and attest::ParseJsonMember with ParseJson (the same error, or the member)
//   1  bundle::ParseSteps (steps.jsonl); each record it accepts must survive
//      StepRecordJson -> ParseStepRecord
//   2  prng::KeyLineage::FromJsonl (lineage.jsonl); an accepted lineage prints (ToJsonl) to
//      text that parses and prints to the same bytes; ReplayLineage then runs on it
//   3  manifest.json: ParseJson, CheckFormatVersion, CheckManifest, ManifestRootDigest
//   4  data/data.json: ParseJson, CheckDataRecord
//   5  run configuration: ParseJson, frontend::ParseRunConfig, CanonicalRunConfig
//   6  the ranks' records of a multi-process run (runtime::CheckRankRecords), one per line; an
//      accepted set gives one environment.json entry per rank
//   7  a follower's replay verdicts (verify::internal::ReadSegmentVerdicts, rank 1 of 2, 8
//      segments); every accepted verdict is one of rank 1's segments
//   8  an attestation: sign::ParseEnvelope, then ParseStatement on its payload; an accepted
//      envelope prints (EnvelopeText) to text that parses to the same envelope
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "attest/canonical_json.h"
#include "attest/prng/lineage.h"
#include "base/budget.h"
#include "base/json_parse.h"
#include "evidence/bundle/attested_run.h"
#include "evidence/bundle/bundle_format.h"
#include "evidence/sign/dsse.h"
#include "evidence/verify/manifest_check.h"
#include "evidence/verify/verifier_internal.h"
#include "frontend/run_config.h"
#include "fuzz_util.h"

namespace {

using detrain::fuzz::PropertyFailed;

// The text's nlohmann::json::parse outcome: its value's dump, or its exception's message.
template <typename Parse>
std::string Outcome(const Parse& parse) {
  try {
    return "value " + parse().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  } catch (const nlohmann::json::exception& e) {
    return std::string("error ") + e.what();
  }
}

void SameAsNlohmann(std::string_view text) {
  std::optional<std::string> repeated;
  std::string ours = Outcome([&] { return detrain::ParseJsonText(text, &repeated); });
  std::string theirs = Outcome([&] { return nlohmann::json::parse(text.begin(), text.end()); });
  if (ours != theirs) PropertyFailed("ParseJsonText and nlohmann::json::parse differ", ours);
}

void MemberAsWhole(std::string_view text, const detrain::Result<nlohmann::json>& whole) {
  bool is_object = false;
  auto member = detrain::attest::ParseJsonMember(text, "a", &is_object);
  if (!whole.ok()) {
    if (member.ok() || member.status().message() != whole.status().message())
      PropertyFailed("ParseJsonMember and ParseJson fail differently", std::string(text));
    return;
  }
  if (!member.ok() || is_object != whole->is_object())
    PropertyFailed("ParseJsonMember fails where ParseJson does not", std::string(text));
  const bool has = whole->is_object() && whole->contains("a");
  if (member->has_value() != has || (has && **member != (*whole)["a"]))
    PropertyFailed("ParseJsonMember's member is not ParseJson's", std::string(text));
}

void CanonicalFixedPoint(std::string_view text) {
  auto parsed = detrain::attest::ParseJson(text);
  MemberAsWhole(text, parsed);
  // Past ParseJson's depth limit a parsed value's dump would recurse too deep.
  if (parsed.ok() || parsed.status().message().find("nested more than") == std::string::npos) {
    SameAsNlohmann(text);
  }
  if (!parsed.ok()) return;
  auto once = detrain::attest::CanonicalJson(*parsed);
  if (!once.ok()) return;  // e.g. a string that is not UTF-8
  auto again = detrain::attest::ParseJson(*once);
  if (!again.ok()) PropertyFailed("canonical JSON does not parse", *once);
  auto twice = detrain::attest::CanonicalJson(*again);
  if (!twice.ok() || *twice != *once) PropertyFailed("canonical JSON is not a fixed point", *once);
}

void Steps(std::string_view text) {
  auto steps = detrain::bundle::ParseSteps(text);
  if (!steps.ok()) return;
  if (steps->valid_bytes > text.size()) PropertyFailed("ParseSteps: valid_bytes past the end", "");
  for (const detrain::bundle::StepRecord& r : steps->records) {
    auto back = detrain::bundle::ParseStepRecord(detrain::bundle::StepRecordJson(r), steps->policy);
    if (!back.ok()) PropertyFailed("a parsed step record does not parse again", "");
  }
}

void Lineage(std::string_view text) {
  auto lineage = detrain::prng::KeyLineage::FromJsonl(text);
  if (!lineage.ok()) return;
  std::string once = lineage->ToJsonl();
  auto again = detrain::prng::KeyLineage::FromJsonl(once);
  if (!again.ok()) PropertyFailed("ToJsonl output does not parse", again.status().ToString());
  if (again->ToJsonl() != once) PropertyFailed("lineage parse/print is not a fixed point", once);
  (void)detrain::prng::ReplayLineage(*lineage);
}

void Manifest(std::string_view text) {
  auto json = detrain::attest::ParseJson(text);
  if (!json.ok()) return;
  if (!detrain::verify::CheckFormatVersion(*json).ok()) return;
  if (!detrain::verify::CheckManifest(*json).ok()) return;
  (void)detrain::bundle::ManifestRootDigest(*json);
}

void DataRecord(std::string_view text) {
  auto json = detrain::attest::ParseJson(text);
  if (json.ok()) (void)detrain::verify::CheckDataRecord(*json);
}

void RunConfig(std::string_view text) {
  auto json = detrain::attest::ParseJson(text);
  if (!json.ok()) return;
  auto config = detrain::frontend::ParseRunConfig(*json);
  if (config.ok()) (void)detrain::frontend::CanonicalRunConfig(*config);
}

void RankRecords(std::string_view text) {
  std::vector<std::string> records;
  for (size_t start = 0; start <= text.size() && records.size() < 16;) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    records.emplace_back(text.substr(start, end - start));
    start = end + 1;
  }
  auto processes = detrain::runtime::CheckRankRecords(
      records, [](int r) { return "rank " + std::to_string(r); });
  if (processes.ok() && processes->size() != records.size())
    PropertyFailed("one environment entry per rank", text);
}

void Verdicts(std::string_view text) {
  std::vector<detrain::verify::internal::SegmentVerdict> verdicts;
  if (!detrain::verify::internal::ReadSegmentVerdicts(text, 1, 2, 8, &verdicts).ok()) return;
  for (const auto& v : verdicts) {
    if (v.segment >= 8 || v.segment % 2 != 1 ||
        v.first_bad < detrain::verify::internal::kCannotReplayHere || v.replayed < 0)
      PropertyFailed("an accepted verdict out of range", text);
  }
}

void Attestation(std::string_view text) {
  auto e = detrain::sign::ParseEnvelope(text);
  if (!e.ok()) return;
  (void)detrain::sign::ParseStatement(e->payload);
  auto again = detrain::sign::ParseEnvelope(detrain::sign::EnvelopeText(*e));
  if (!again.ok() || again->payload != e->payload || again->payload_type != e->payload_type ||
      again->signatures.size() != e->signatures.size())
    PropertyFailed("an envelope does not survive EnvelopeText -> ParseEnvelope", text);
  for (size_t i = 0; i < e->signatures.size(); ++i) {
    if (again->signatures[i].sig != e->signatures[i].sig ||
        again->signatures[i].keyid != e->signatures[i].keyid)
      PropertyFailed("a signature does not survive EnvelopeText -> ParseEnvelope", text);
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  detrain::SetMemoryBudget({int64_t{256} << 20, int64_t{1} << 30});
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string_view text = detrain::fuzz::AsText(data + 1, size - 1);
  switch (data[0] % 9) {
    case 0:
      CanonicalFixedPoint(text);
      break;
    case 1:
      Steps(text);
      break;
    case 2:
      Lineage(text);
      break;
    case 3:
      Manifest(text);
      break;
    case 4:
      DataRecord(text);
      break;
    case 5:
      RunConfig(text);
      break;
    case 6:
      RankRecords(text);
      break;
    case 7:
      Verdicts(text);
      break;
    case 8:
      Attestation(text);
      break;
  }
  return 0;
}
