// The recompile phase's first step (verifier.h): the bundled program compiled again and every
// stage record compared with the bundle's — the contract's chain ("stages") and, for a run on
// the CUDA backend, its executable ("executables.cuda"; schemas/bundle.md §4.3, §6.1).
//
// A CUDA run's executable is checked in two steps. First the CUDA source is generated again from
// the recompiled plans (no toolkit needed) with the bundle's PTX and cubins standing in for
// NVRTC and nvJitLink, so that every record — the source byte for byte, the chain's links, the
// transforms — is compared at no cost. Then, when this detrain has NVRTC and nvJitLink of the
// versions the records name, the PTX and cubins are compiled again and must be the recorded
// bytes. Without them the recorded PTX and cubins are vouched for by their digests only: the
// phase says so in a note, and the replay does not run them (on --backend cuda the runtime
// compiles the plans itself).
//
// Thread safety: as the phase (verifier_internal.h). Hostile input: every field read here was
// shape-checked by integrity (manifest_check.cc); names and files are looked up, never trusted.
#include <set>

#include "attest/canonical_json.h"
#include "base/fs.h"
#include "compiler/codegen/cuda/toolchain.h"
#include "compiler/passes/pipeline.h"
#include "evidence/verify/verifier_internal.h"

namespace detrain::verify::internal {
namespace {

constexpr uint64_t kMaxStageFile = uint64_t{1} << 30;

// The backend run.backend names; a CUDA run (and only one) records "executables.cuda".
Check BundleBackend(const Bundle& b, runtime::Backend* out) {
  const std::string& name = b.manifest.run.backend;
  Result<runtime::Backend> backend = runtime::ParseBackend(name);
  if (!backend.ok()) {
    return Fail("manifest.json: field \"run.backend\": \"" + name +
                "\" is not a backend this detrain knows (cpu, cuda)");
  }
  const bool cuda = *backend == runtime::Backend::kCuda;
  if (cuda != b.manifest.has_executables) {
    return Fail(cuda ? "manifest.json: field \"run.backend\" is \"cuda\", but there is no "
                       "\"executables.cuda\" (the CUDA run's stages)"
                     : "manifest.json: field \"executables\": a run on the cpu backend records "
                       "no executables (field \"run.backend\" is \"cpu\")");
  }
  *out = *backend;
  return std::nullopt;
}

bool IsCudaSource(const std::string& stage) {
  return stage == driver::kStageCuda ||
         stage == std::string(driver::kEvalPrefix) + driver::kStageCuda;
}

// The bundle's PTX and cubins (every executables.cuda record but the generated sources), read
// from stages/ by their stage's file name, with their recorded transform options.
Check RecordedToolchainStages(const Bundle& b,
                              std::map<std::string, driver::CompileOptions::RecordedStage>* out) {
  const json& records = b.manifest.json["executables"][driver::kBackendCuda];
  for (size_t i = 0; i < records.size(); ++i) {
    const std::string field = "manifest.json: field \"executables.cuda[" + std::to_string(i) + "]";
    const std::string name = records[i]["stage"].get<std::string>();
    if (IsCudaSource(name)) continue;  // generated again
    Result<std::string> file = driver::StageFileName(name, driver::ProgramKind::kDt);
    if (!file.ok()) return Fail(field + ".stage\": \"" + name + "\" is not a stage of detrain");
    const std::string rel = std::string(bundle::kStagesDir) + "/" + *file;
    Result<std::string> bytes = bundle::ReadBundleFile(b.dir, rel, kMaxStageFile);
    if (!bytes.ok()) return FailStatus(bytes.status(), rel);
    Result<std::string> options = attest::CanonicalJson(records[i]["transform"]["options"]);
    if (!options.ok()) return FailStatus(options.status(), field + ".transform.options\"");
    if (!out->emplace(name, driver::CompileOptions::RecordedStage{*bytes, *options}).second) {
      return Fail(field + ".stage\": \"" + name + "\" is recorded twice");
    }
  }
  return std::nullopt;
}

// Why the PTX and cubins cannot be compiled again here ("" when they can): no toolkit, or NVRTC
// and nvJitLink of other versions than the records name (their output may differ).
std::string ToolchainGap(const json& records) {
  if (!codegen::cuda::ToolchainAvailable())
    return "this detrain was built without the CUDA toolkit";
  Result<codegen::cuda::ToolchainVersions> here = codegen::cuda::Versions();
  if (!here.ok())
    return "the CUDA toolkit does not load (" + std::string(here.status().message()) + ")";
  std::set<std::string> gaps;
  for (const json& r : records) {
    const std::string tool = r["transform"]["name"].get<std::string>();
    if (tool != "nvrtc" && tool != "nvjitlink") continue;
    const json& options = r["transform"]["options"];
    const std::string recorded = options.contains(tool) && options[tool].is_string()
                                     ? options[tool].get<std::string>()
                                     : std::string("no version");
    const std::string& have = tool == "nvrtc" ? here->nvrtc : here->nvjitlink;
    if (recorded != have)
      gaps.insert("toolchain " + tool + " " + have + " here, " + recorded + " recorded");
  }
  std::string out;
  for (const std::string& g : gaps) out += (out.empty() ? "" : "; ") + g;
  return out;
}

std::vector<const driver::StageRecord*> RecordsOf(const driver::CompileResult& c,
                                                  const std::string& backend) {
  std::vector<const driver::StageRecord*> out;
  for (const driver::StageRecord& r : c.stages.records()) {
    if (r.backend == backend) out.push_back(&r);
  }
  return out;
}

// The message for a stage whose recorded name or digest `s` is not the recompiled `rec`'s.
std::string StageMismatch(const Bundle& b, const std::string& at, const json& s,
                          const driver::StageRecord& rec, bool standin) {
  if (s["stage"] != rec.name) {
    return "manifest.json: " + JsonDifference(s["stage"], json(rec.name), at + ".stage") +
           " (recompiling gives the stages in this order)";
  }
  std::string bundled;
  Result<std::string> bytes =
      bundle::ReadBundleFile(b.dir, JoinPath(bundle::kStagesDir, rec.file_name), kMaxStageFile);
  if (bytes.ok()) bundled = *bytes;
  if (bytes.ok() && attest::Sha256Hex(bundled) == rec.sha256) {
    // The stage file is what recompiling gives (or, standing in, is itself): the manifest's entry
    // was edited.
    return "manifest.json: " + JsonDifference(s["sha256"], json(rec.sha256), at + ".sha256") +
           (standin
                ? " (the SHA-256 of " + std::string(bundle::kStagesDir) + "/" + rec.file_name + ")"
                : " (the stage file and recompiling the program agree)");
  }
  auto ends_with = [&](std::string_view suffix) {
    return rec.file_name.size() >= suffix.size() &&
           rec.file_name.compare(rec.file_name.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  const bool text = !ends_with(".pb") && !ends_with(".cubin");
  const std::string file = rec.number == 0 ? b.manifest.program_path
                                           : std::string(bundle::kStagesDir) + "/" + rec.file_name;
  return file + ": stage " + std::to_string(rec.number) + " (" + rec.name +
         ") differs: recorded sha256 " + s["sha256"].get<std::string>() + ", recompiled " +
         rec.sha256 + "; " + FirstDifference(bundled, rec.bytes, text);
}

// The recompiled record `rec` against entry `i` of the bundle's list `field` ("stages",
// "executables.cuda"): the same stage, with the recorded digest and record. `standin`: the stage
// was taken from the bundle, not compiled.
Check CompareStage(const Bundle& b, const std::string& field, const json& listed, size_t i,
                   const driver::StageRecord& rec, bool standin) {
  if (i >= listed.size()) {
    return Fail("manifest.json: field \"" + field + "\": the bundle records " +
                std::to_string(listed.size()) + " stages; recompiling gives more, the next \"" +
                rec.name + "\"");
  }
  const json& s = listed[i];
  const std::string at = field + "[" + std::to_string(i) + "]";
  if (s["stage"] != rec.name || s["sha256"] != rec.sha256) {
    return Fail(StageMismatch(b, at, s, rec, standin));
  }
  const json want = driver::StageRecordJson(rec);
  if (s != want) return Fail("manifest.json: " + JsonDifference(s, want, at));
  return std::nullopt;
}

// The recompiled `records` against the bundle's list `field`: the same stages in the same order,
// each with the recorded digest and record. `standins`: the stages that were taken from the
// bundle, not compiled.
Check CompareStages(const Bundle& b, const std::string& field, const json& listed,
                    const std::vector<const driver::StageRecord*>& records,
                    const std::set<std::string>& standins) {
  if (listed.size() != records.size()) {
    return Fail("manifest.json: field \"" + field + "\": the bundle records " +
                std::to_string(listed.size()) + " stages; recompiling gives " +
                std::to_string(records.size()));
  }
  for (size_t i = 0; i < records.size(); ++i) {
    const driver::StageRecord& rec = *records[i];
    if (Check c = CompareStage(b, field, listed, i, rec, standins.count(rec.name) > 0)) return c;
  }
  return std::nullopt;
}

// `c` without a backend's stages: what the replay may run when they were not compiled here.
Result<driver::CompileResult> WithoutBackendStages(const driver::CompileResult& c) {
  driver::CompileResult out = c;
  out.stages = driver::StageTable();
  for (const driver::StageRecord& r : c.stages.records()) {
    if (!r.backend.empty()) continue;
    DETRAIN_RETURN_IF_ERROR(out.stages.Add(r.name, r.bytes, r.transform, c.program_kind));
  }
  return out;
}

// A CUDA run's executable after its records matched with the recorded PTX and cubins standing
// in: compiled again when the toolchain is the recorded one, otherwise noted.
Check CheckToolchainStages(const Bundle& b, const std::string& program,
                           driver::CompileOptions copts, driver::CompileResult standing,
                           Replayable* r, driver::CompileResult* out) {
  const json& listed = b.manifest.json["executables"][driver::kBackendCuda];
  const std::string gap = ToolchainGap(listed);
  if (!gap.empty()) {
    r->notes.push_back("CUDA PTX and cubins not recompiled: " + gap +
                       "; only their digests vouch for them");
    Result<driver::CompileResult> runnable = WithoutBackendStages(standing);
    if (!runnable.ok()) return FailStatus(runnable.status());
    *out = std::move(*runnable);
    r->as_recorded = std::move(standing);
    return std::nullopt;
  }
  copts.recorded_toolchain_stages.reset();
  Result<driver::CompileResult> compiled = driver::Compile(program, copts);
  if (!compiled.ok()) return FailStatus(compiled.status(), "recompiling the CUDA executable");
  if (Check c = CompareStages(b, "executables.cuda", listed,
                              RecordsOf(*compiled, driver::kBackendCuda), {})) {
    return c;
  }
  *out = std::move(*compiled);
  return std::nullopt;
}

// At most as many pass records as a pipeline may run (passes/pipeline.cc).
constexpr size_t kMaxRecordedPasses = 64;

// One recorded pass record, {"pass", "options_sha256", "input_sha256", "output_sha256"}, all
// strings; the pass a spec element (letters, digits, '-', '@'), since it names a dump file.
Result<passes::PassRecord> PassRecordOf(const json& p) {
  auto field = [&](const char* key) -> const std::string* {
    return p.is_object() && p.contains(key) && p[key].is_string()
               ? &p[key].get_ref<const std::string&>()
               : nullptr;
  };
  const std::string *pass = field("pass"), *options = field("options_sha256"),
                    *input = field("input_sha256"), *output = field("output_sha256");
  if (pass == nullptr || options == nullptr || input == nullptr || output == nullptr) {
    return InvalidArgument("a record is not {pass, options_sha256, input_sha256, output_sha256}");
  }
  if (pass->empty() || pass->size() > 64 ||
      pass->find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-@") != std::string::npos) {
    return InvalidArgument("\"" + pass->substr(0, 64) + "\" is not a pass name");
  }
  return passes::PassRecord{*pass, *options, *input, *output};
}

// A recorded stage 3-4 entry's transform, as StageTable::Add takes it (it fills input_sha256).
Result<driver::Transform> TransformOf(const json& t) {
  if (!t.is_object() || !t.contains("name") || !t["name"].is_string() ||
      !t.contains("input_stage") || !t["input_stage"].is_string() || !t.contains("options") ||
      !t["options"].is_object()) {
    return InvalidArgument("not a transform record");
  }
  driver::Transform transform;
  transform.name = t["name"].get<std::string>();
  transform.input_stage = t["input_stage"].get<std::string>();
  DETRAIN_ASSIGN_OR_RETURN(transform.options, attest::CanonicalJson(t["options"]));
  if (t["options"].contains("pipeline") && t["options"]["pipeline"].is_string()) {
    transform.pipeline = t["options"]["pipeline"].get<std::string>();
  }
  if (t.contains("plan_format_version") && t["plan_format_version"].is_number_unsigned() &&
      t["plan_format_version"].get<uint64_t>() <= UINT32_MAX) {
    transform.plan_format_version = t["plan_format_version"].get<uint32_t>();
  }
  if (t.contains("passes") && t["passes"].is_array()) {
    if (t["passes"].size() > kMaxRecordedPasses) {
      return InvalidArgument("it lists more passes than a pipeline runs");
    }
    for (const json& p : t["passes"]) {
      DETRAIN_ASSIGN_OR_RETURN(passes::PassRecord record, PassRecordOf(p));
      transform.passes.push_back(std::move(record));
    }
  }
  return transform;
}

// The run's chain as its bundle records it, where this detrain does not reproduce stages 3-4
// (r->backend_gap): the recompiled stages 0-2 — each already equal to the bundle's — followed
// by the recorded stage 3-4 records, their files and stage 3's pass dumps. Each record is built
// back from its manifest entry and must give that entry again (CompareStages), so the entries
// are still checked for being records a detrain writes; only their content is vouched for by
// the bundle's digests alone. Integrity checked each entry's "stage" and "sha256"
// (manifest_check.cc); every other field is checked here as it is read.
Result<driver::CompileResult> RecordedBackendChain(const Bundle& b,
                                                   const driver::CompileResult& compiled) {
  driver::CompileResult out = compiled;
  out.stages = driver::StageTable();
  out.pass_dumps.clear();
  for (const driver::StageRecord& r : compiled.stages.records()) {
    if (r.backend.empty() && r.number < 3) {
      DETRAIN_RETURN_IF_ERROR(out.stages.Add(r.name, r.bytes, r.transform, compiled.program_kind));
    }
  }
  const json& listed = b.manifest.json["stages"];
  for (size_t i = 0; i < listed.size(); ++i) {
    const json& s = listed[i];
    const std::string at = "manifest.json: field \"stages[" + std::to_string(i) + "]";
    if (!s.contains("number") || !s["number"].is_number_integer()) {
      return InvalidArgument(at + ".number\" is not an integer");
    }
    if (s["number"].get<int64_t>() < 3) continue;
    const std::string name = s["stage"].get<std::string>();
    Result<int> number = driver::StageNumber(name);
    if (!number.ok() || *number < 3 || driver::IsBackendStage(name)) {
      return InvalidArgument(at + ".stage\": \"" + name.substr(0, 64) +
                             "\" is not a stage 3 or 4 of the chain");
    }
    Result<driver::Transform> transform =
        TransformOf(s.contains("transform") ? s["transform"] : json());
    if (!transform.ok()) {
      return InvalidArgument(at + ".transform\": " + std::string(transform.status().message()));
    }
    if (out.stages.Find(name) != nullptr) {
      return InvalidArgument(at + ".stage\": \"" + name + "\" is recorded twice");
    }
    if (out.stages.Find(transform->input_stage) == nullptr) {  // Add would call it internal
      return InvalidArgument(at + ".transform.input_stage\": \"" +
                             transform->input_stage.substr(0, 64) +
                             "\" is not a stage recorded before it");
    }
    DETRAIN_ASSIGN_OR_RETURN(std::string file, driver::StageFileName(name, compiled.program_kind));
    Result<std::string> bytes =
        bundle::ReadBundleFile(b.dir, std::string(bundle::kStagesDir) + "/" + file, kMaxStageFile);
    if (!bytes.ok()) return bytes.status();
    if (name == driver::kStageOptHlo) {
      for (size_t k = 0; k < transform->passes.size(); ++k) {
        const std::string dump = passes::DumpName(k + 1, transform->passes[k].pass);
        Result<std::string> text = bundle::ReadBundleFile(
            b.dir, std::string(bundle::kStagesDir) + "/" + driver::kPassDumpDir + "/" + dump,
            kMaxStageFile);
        if (!text.ok()) return text.status();
        out.pass_dumps.emplace_back(dump, std::move(*text));
      }
    }
    DETRAIN_RETURN_IF_ERROR(
        out.stages.Add(name, std::move(*bytes), std::move(*transform), compiled.program_kind));
  }
  return out;
}

}  // namespace

Check CompileStages(const Bundle& b, const std::string& program, driver::CompileOptions copts,
                    Replayable* r, driver::CompileResult* out) {
  if (Check c = BundleBackend(b, &r->backend)) return c;
  const bool cuda = r->backend == runtime::Backend::kCuda;
  std::set<std::string> standins;
  if (cuda) {
    std::map<std::string, driver::CompileOptions::RecordedStage> recorded;
    if (Check c = RecordedToolchainStages(b, &recorded)) return c;
    for (const auto& [name, stage] : recorded) standins.insert(name);
    copts.cuda = true;
    copts.recorded_toolchain_stages = std::move(recorded);
  }
  // The chain's stages are compared as they are made, and the first that differs ends the
  // compile: the front end's (stage 1 first) before anything the program declares is accounted
  // or allocated, so that a program that differs is FAILED quickly, under any memory budget.
  const json& listed = b.manifest.json["stages"];
  size_t compared = 0;
  Check differs;
  const bool reproduces_backend = r->backend_gap.empty();
  if (!reproduces_backend && cuda) {
    return FailStatus(Unavailable(
        "this CUDA run's stages 3-4 are not ones this detrain reproduces (" + r->backend_gap +
        "), and verifying a CUDA executable built from them is not supported yet"));
  }
  copts.on_stage = [&](const driver::StageRecord& rec) -> Status {
    if (!rec.backend.empty()) return Status::Ok();  // the executable's: compared below
    if (!reproduces_backend && rec.number >= 3) {   // this detrain's own: taken as recorded
      ++compared;
      return Status::Ok();
    }
    differs = CompareStage(b, "stages", listed, compared++, rec, false);
    if (!differs.has_value()) r->stages_reproduced.push_back(rec.name);
    return differs.has_value() ? Cancelled("the stage differs") : Status::Ok();
  };
  copts.stages_before_budget = true;
  Result<driver::CompileResult> compiled = driver::Compile(program, copts);
  copts.on_stage = nullptr;
  copts.stages_before_budget = false;
  if (differs.has_value()) return differs;
  if (!compiled.ok()) {
    return FailStatus(compiled.status(),
                      cuda ? "recompiling the bundled program with the recorded PTX and cubins "
                             "(manifest.json's \"executables.cuda\")"
                           : "recompiling the bundled program");
  }
  if (compared != listed.size()) {
    return Fail("manifest.json: field \"stages\": the bundle records " +
                std::to_string(listed.size()) + " stages; recompiling gives " +
                std::to_string(compared));
  }
  if (!reproduces_backend) {
    Result<driver::CompileResult> recorded = RecordedBackendChain(b, *compiled);
    if (!recorded.ok()) return FailStatus(recorded.status());
    std::vector<const driver::StageRecord*> records;
    for (const driver::StageRecord& rec : recorded->stages.records()) records.push_back(&rec);
    std::set<std::string> standins;
    for (const driver::StageRecord& rec : recorded->stages.records()) {
      if (rec.number >= 3) {
        standins.insert(rec.name);
        r->stages_not_reproduced.push_back(rec.name);
      }
    }
    if (Check c = CompareStages(b, "stages", listed, records, standins)) return c;
    r->notes.push_back("stages 3-4 (" + std::to_string(standins.size()) +
                       " stages) not reproduced: " + r->backend_gap +
                       "; only their digests vouch for them, and replay ran the plan this "
                       "detrain's pipeline makes");
    r->as_recorded = std::move(*recorded);
  }
  if (!cuda) {
    *out = std::move(*compiled);
    return std::nullopt;
  }
  if (Check c =
          CompareStages(b, "executables.cuda", b.manifest.json["executables"][driver::kBackendCuda],
                        RecordsOf(*compiled, driver::kBackendCuda), standins)) {
    return c;
  }
  return CheckToolchainStages(b, program, std::move(copts), std::move(*compiled), r, out);
}

}  // namespace detrain::verify::internal
