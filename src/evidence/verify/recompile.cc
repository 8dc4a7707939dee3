// The recompile phase (verifier.h): the bundled program compiled again with the data (every stage
// compared: recompile_stages.cc); every static file and manifest claim rebuilt and compared; the
// split, the lineage and the genesis hash recomputed.
#include <unistd.h>

#include <map>
#include <set>
#include <thread>

#include "attest/canonical_json.h"
#include "attest/prng/lineage.h"
#include "attest/state_digest.h"
#include "base/file_io.h"
#include "base/fs.h"
#include "evidence/bundle/bundle_files.h"
#include "evidence/verify/verifier_internal.h"
#include "runtime/train/train_state.h"

namespace detrain::verify::internal {

std::vector<std::string> DataFileCandidates(const std::string& bundle_dir,
                                            const std::string& written, const std::string& embedded,
                                            const std::string& program_hint,
                                            const std::vector<std::string>& dirs) {
  std::vector<std::string> candidates;
  for (const std::string& d : dirs) candidates.push_back(JoinPath(d, BaseName(written)));
  if (!embedded.empty()) candidates.push_back(JoinPath(bundle_dir, embedded));
  if (!written.empty() && written[0] == '/') {
    candidates.push_back(written);
  } else {
    candidates.push_back(JoinPath(JoinPath(bundle_dir, bundle::kProgramDir), written));
    if (!program_hint.empty()) {
      candidates.push_back(JoinPath(program_hint.substr(0, program_hint.rfind('/') + 1), written));
    }
  }
  return candidates;
}

// Where each data file is read from: --data DIR, the embedded copy, or the program's path.
Check ResolveData(const Bundle& b, const VerifyOptions& o,
                  std::map<std::string, std::string>* out) {
  // The files the record lists are the ones manifest.json's data names (which recompiling then
  // checks against the program).
  const std::set<std::string> named(b.manifest.data_files.begin(), b.manifest.data_files.end());
  const std::vector<DataFileRecord>& files = b.data_files;
  if (files.size() != named.size()) {
    return Fail(std::string(bundle::kDataRecord) + ": field \"files\" lists " +
                std::to_string(files.size()) + " files; manifest.json's \"data.files\" names " +
                std::to_string(named.size()));
  }
  for (size_t i = 0; i < files.size(); ++i) {
    const DataFileRecord& f = files[i];
    const std::string field =
        std::string(bundle::kDataRecord) + ": field \"files[" + std::to_string(i) + "].";
    if (named.count(f.path) == 0) {
      return Fail(field + "path\": \"" + f.path +
                  "\" is not a file manifest.json's \"data.files\" names");
    }
    const std::string& written = f.path;
    const std::string& want = f.sha256;
    std::vector<std::string> candidates;
    if (auto given = o.data_files.find(written); given != o.data_files.end()) {
      Result<std::string> bytes = ReadFile(given->second);
      if (bytes.ok() && attest::Sha256Hex(*bytes) == want) candidates.push_back(given->second);
    }
    // Where the run found it: environment.json's hint (the digest decides).
    std::string hint;
    Result<std::string> env = bundle::ReadBundleFile(b.dir, bundle::kEnvironment, 1 << 20);
    Result<json> ej = env.ok() ? attest::ParseJson(*env) : Result<json>(env.status());
    if (ej.ok() && ej->is_object() && ej->contains("program") && (*ej)["program"].is_string()) {
      hint = (*ej)["program"].get<std::string>();
    }
    std::vector<std::string> dirs;
    if (!o.data_dir.empty()) dirs.push_back(o.data_dir);
    for (std::string& c : DataFileCandidates(b.dir, written, f.embedded, hint, dirs)) {
      candidates.push_back(std::move(c));
    }
    std::string found, looked;
    for (const std::string& c : candidates) {
      looked += "\n    " + c;
      if (!PathExists(c)) continue;
      Result<std::string> bytes = ReadFile(c);
      if (!bytes.ok()) return FailStatus(bytes.status());
      const std::string got = attest::Sha256Hex(*bytes);
      if (got != want) {
        return Fail("dataset " + written + " at " + c + " is not the one the run used: SHA-256 " +
                    got + ", expected " + want + " (" + field + "sha256\")");
      }
      found = c;
      break;
    }
    if (found.empty()) {
      return InputError("dataset " + written + " (SHA-256 " + want + ") not found; looked at:" +
                        looked + "\n  point --data at a directory that holds it");
    }
    std::string absolute = found;
    if (absolute[0] != '/') {
      char cwd[4096];
      if (::getcwd(cwd, sizeof(cwd)) != nullptr) absolute = std::string(cwd) + "/" + found;
    }
    (*out)[written] = absolute;
  }
  return std::nullopt;
}

// For a JSON or safetensors file that differs: the first field that does ("" when the values
// are the same and only the spelling differs).
std::string FieldDifference(const std::string& rel, const std::string& have,
                            const std::string& want) {
  if (rel.size() > 12 && rel.compare(rel.size() - 12, 12, ".safetensors") == 0) {
    return "; " + SafetensorsDifference(have, want);
  }
  if (rel.size() < 5 || rel.compare(rel.size() - 5, 5, ".json") != 0) return "";
  Result<json> a = attest::ParseJson(have), e = attest::ParseJson(want);
  if (!a.ok()) return "; " + std::string(a.status().message());
  if (!e.ok()) return "";
  const std::string d = JsonDifference(*a, *e, "");
  if (d.empty()) return "; the same values, not in canonical form: " + NonCanonicalAt(have, want);
  return "; field " + d;
}

// Every file the run writes when it starts (program/, stages/, data/, run.json) is what the
// recompiled run writes, byte for byte, and so is manifest.json (but for the file list, checked
// by integrity, and its root digest): no field of either can say something the run did not.
Check CheckStaticsAndManifest(const Bundle& b, const Replayable& r,
                              const std::map<std::string, std::string>& data_files) {
  bundle::BundleStatics statics;
  statics.program = b.manifest.program_path;
  statics.embed_data = b.manifest.run.embed_data;
  statics.backend = r.backend;
  for (size_t i = 0; i < b.data_files.size(); ++i) {
    const DataFileRecord& f = b.data_files[i];
    if (f.embedded.empty() == statics.embed_data) {
      return Fail(std::string("manifest.json: field \"run.embed_data\" is ") +
                  (statics.embed_data ? "true" : "false") +
                  ", but data/data.json's field \"files[" + std::to_string(i) + "].embedded\" is " +
                  (statics.embed_data ? "missing" : "present") + " (" + f.path + ")");
    }
  }
  const runtime::RunSession& s = *r.session;
  // With the bundle's PTX and cubins where they were not compiled again (recompile_stages.cc).
  statics.compiled = r.as_recorded.has_value() ? &*r.as_recorded : &s.compiled();
  statics.data = &s.data();
  statics.schedule = &s.schedule();
  statics.data_files = data_files;
  Result<std::vector<std::pair<std::string, std::string>>> files = bundle::StaticFiles(statics);
  if (!files.ok()) return FailStatus(files.status());
  for (const auto& [rel, bytes] : *files) {
    if (rel == bundle::kEnvironment) continue;
    Result<std::string> have = bundle::ReadBundleFile(b.dir, rel, bundle::kMaxTensorFileBytes);
    if (!have.ok() && have.status().code() == StatusCode::kResourceExhausted) {
      return FailStatus(have.status());  // too large for this verifier's budget
    }
    if (!have.ok()) return Fail(rel + ": missing (recompiling the run writes it)");
    if (*have != bytes) {
      // `name`, not a capture of `rel`: clang 14 cannot capture a structured binding.
      auto ends_with = [&name = rel](std::string_view suffix) {
        return name.size() >= suffix.size() &&
               name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
      };
      const bool binary = ends_with(".pb") || ends_with(".safetensors") ||
                          rel.rfind(bundle::kEmbeddedDataDir, 0) == 0;
      return Fail(rel + " differs from what recompiling the program gives; " +
                  FirstDifference(*have, bytes, !binary) + FieldDifference(rel, *have, bytes));
    }
  }
  bundle::FinalState fin;
  const Manifest::Final& f = b.manifest.final;
  fin.steps_done = f.steps_done;
  attest::ParseDigestHex(f.step_hash, &fin.step_hash);
  attest::ParseDigestHex(f.params_root, &fin.params_root);
  attest::ParseDigestHex(f.optimizer_root, &fin.optimizer_root);
  fin.genesis = b.steps.genesis;
  fin.stopped = b.stopped;
  if (b.stopped) fin.stop_reason = b.manifest.stop_reason;
  Result<json> expected = bundle::ManifestJson(statics, fin, b.manifest.json["files"]);
  if (!expected.ok()) return FailStatus(expected.status());
  json have = b.manifest.json;
  have.erase("root_digest");
  if (have != *expected) {
    return Fail("manifest.json: " + JsonDifference(have, *expected, ""));
  }
  // The bundle lists exactly the files this run writes.
  std::set<std::string> want = {bundle::kSteps, bundle::kLineage};
  for (const auto& [rel, bytes] : *files) want.insert(rel);
  for (const auto& [done, path] : b.checkpoints) want.insert(path);  // the schedule's (integrity)
  for (const Manifest::File& entry : b.manifest.files) {
    const std::string& path = entry.path;
    if (want.erase(path) == 0)
      return Fail("manifest.json lists " + path + ", not a file of this run");
  }
  if (!want.empty()) {
    return Fail("manifest.json does not list " + *want.begin() +
                ", which a bundle of this run holds");
  }
  return std::nullopt;
}

// "lineage.jsonl line N: field "key[0]": recorded X, expected Y", or the first differing line.
std::string LineageDifference(const std::string& have, const std::string& want) {
  size_t a = 0, e = 0, line = 1;
  while (a < have.size() && e < want.size()) {
    const size_t ae = have.find('\n', a), ee = want.find('\n', e);
    const std::string x = have.substr(a, ae == std::string::npos ? ae : ae - a);
    const std::string y = want.substr(e, ee == std::string::npos ? ee : ee - e);
    if (x != y) {
      Result<json> px = attest::ParseJson(x), py = attest::ParseJson(y);
      const std::string d = px.ok() && py.ok() ? JsonDifference(*px, *py, "") : "";
      if (!d.empty()) {
        return "lineage.jsonl line " + std::to_string(line) + ": field " + d +
               " (not the keys this run derives)";
      }
      break;
    }
    if (ae == std::string::npos || ee == std::string::npos) break;
    a = ae + 1;
    e = ee + 1;
    ++line;
  }
  return "lineage.jsonl differs from the keys this run derives; " +
         FirstDifference(have, want, true);
}

Check Recompile(const Bundle& b, const VerifyOptions& o, Replayable* r) {
  driver::CompileOptions copts;
  if (Check c = ResolveData(b, o, &copts.data_files)) return c;
  // The pass pipeline the run used (its stage-3 record), so that a later detrain whose default
  // pipeline gained a pass still reproduces this bundle's stages (schemas/bundle.md §9) — when
  // this detrain runs that pipeline and writes that plan format. Otherwise its own pipeline
  // makes the plan replay runs, and stages 3-4 are taken as recorded (CompileStages).
  const BackendGeneration backend = o.backend.value_or(CurrentBackend());
  if (b.manifest.pipeline.has_value()) {
    const int64_t format = b.manifest.plan_format_version.value_or(backend.plan_format_version);
    r->backend_gap = BackendGap(backend, *b.manifest.pipeline, format);
    copts.pipeline = r->backend_gap.empty() ? *b.manifest.pipeline : backend.default_pipeline;
    // A plan format this detrain still writes is written as recorded (no gap: it is one of them).
    if (r->backend_gap.empty()) copts.plan_format_version = static_cast<uint32_t>(format);
  }
  const std::string program = JoinPath(b.dir, b.manifest.program_path);
  if (!RegularFileSize(program).ok()) {
    return Fail("manifest.json: field \"program.path\": \"" + b.manifest.program_path +
                "\" is not a file of the bundle");
  }
  driver::CompileResult compiled;
  if (Check c = CompileStages(b, program, copts, r, &compiled)) return c;
  const Manifest::Run& run = b.manifest.run;
  const int64_t steps = run.steps;
  if (r->as_recorded.has_value()) r->as_recorded->config->train.steps = steps;
  runtime::StepSchedule recorded;
  recorded.checkpoint_every = run.checkpoint_every;
  recorded.eval_every = run.eval_every;
  const frontend::TrainConfig& train = compiled.config->train;
  if (recorded.checkpoint_every != train.checkpoint_every) {
    return Fail("manifest.json: field \"run.checkpoint_every\": recorded " +
                std::to_string(recorded.checkpoint_every) + ", the program's is " +
                std::to_string(train.checkpoint_every));
  }
  if (recorded.eval_every != train.eval_every) {
    return Fail("manifest.json: field \"run.eval_every\": recorded " +
                std::to_string(recorded.eval_every) + ", the program's is " +
                std::to_string(train.eval_every));
  }
  // The session: the data split and standardized with the run's split key, the schedule of the
  // recorded step count and digest policy, a trainer.
  runtime::SessionOptions so;
  so.executor = o.executor;
  so.steps = steps;
  so.step_digest = b.steps.policy;
  Result<std::unique_ptr<runtime::RunSession>> session =
      runtime::RunSession::Open(std::move(compiled), so);
  if (!session.ok()) return FailStatus(session.status());
  r->session = std::move(*session);
  runtime::RunSession& s = *r->session;
  // The data: split and statistics recomputed, then the records compared byte for byte.
  Result<std::string> split = bundle::SplitFileBytes(s.data());
  Result<std::string> bundled_split =
      bundle::ReadBundleFile(b.dir, bundle::kSplitFile, bundle::kMaxTensorFileBytes);
  if (!split.ok() || !bundled_split.ok() || *split != *bundled_split) {
    return Fail(std::string(bundle::kSplitFile) +
                ": the split or the standardization statistics differ from what the data and the "
                "seed give" +
                (split.ok() && bundled_split.ok()
                     ? " (" + SafetensorsDifference(*bundled_split, *split) + ")"
                     : std::string()));
  }
  std::vector<std::pair<std::string, uint64_t>> sizes;
  std::vector<std::string> embedded;
  for (const DataFileRecord& f : b.data_files) {
    sizes.emplace_back(f.path, f.size);
    embedded.push_back(f.embedded);
  }
  for (size_t i = 0; i < sizes.size(); ++i) {
    Result<uint64_t> size = RegularFileSize(copts.data_files[sizes[i].first]);
    if (size.ok() && *size != sizes[i].second) {
      return Fail(std::string(bundle::kDataRecord) + ": field \"files[" + std::to_string(i) +
                  "].size\": recorded " + std::to_string(sizes[i].second) + ", dataset " +
                  sizes[i].first + " has " + std::to_string(*size) + " bytes");
    }
  }
  Result<json> dj = bundle::DataJson(s.config(), *s.compiled().dataset, s.data(), sizes, embedded);
  if (!dj.ok()) return FailStatus(dj.status());
  if (*dj != b.data_record) {
    Result<std::string> a = attest::CanonicalJson(b.data_record), c = attest::CanonicalJson(*dj);
    return Fail(std::string(bundle::kDataRecord) + " differs from what the data gives; field " +
                JsonDifference(b.data_record, *dj, "") + "; " +
                FirstDifference(a.ok() ? *a : "", c.ok() ? *c : "", true));
  }
  // Genesis: the stage chain and the initial state.
  Result<runtime::TrainState> init = s.InitialState();
  if (!init.ok()) return FailStatus(init.status());
  ThreadPool pool(1);
  Result<Digest256> genesis = s.Genesis(*init, &pool);
  if (!r->backend_gap.empty()) {  // the chain the run committed to: its own stages 3-4
    Result<std::string> chain =
        attest::CanonicalJson(driver::StageChainJson(r->as_recorded->stages));
    Result<std::pair<Digest256, Digest256>> roots = runtime::StateRoots(*init, &pool);
    if (!chain.ok()) return FailStatus(chain.status());
    if (!roots.ok()) return FailStatus(roots.status());
    genesis = attest::GenesisHash(*chain, roots->first, roots->second);
  }
  if (!genesis.ok()) return FailStatus(genesis.status());
  if (*genesis != b.steps.genesis) {
    return Fail(
        "the genesis hash differs: the initial parameters or the stage chain are not what "
        "the program gives");
  }
  // The key lineage: recorded keys recomputed from their parents, and the whole log equal to
  // the one this run derives. A stopped run also derived (and recorded) the key of the step that
  // stopped it, which has no record; replay confirms the stop with that key.
  const int64_t derived = static_cast<int64_t>(b.steps.records.size()) + (b.stopped ? 1 : 0);
  if (!s.DeriveKeysBefore(derived).ok()) {
    return Fail("cannot derive the key of step " + std::to_string(derived - 1));
  }
  // (Integrity parsed and replayed it.)
  Result<std::string> lineage =
      bundle::ReadBundleFile(b.dir, bundle::kLineage, bundle::kMaxLogFileBytes);
  if (!lineage.ok()) return FailStatus(lineage.status());
  const std::string expected = s.keys().lineage().ToJsonl();
  if (expected != *lineage) return Fail(LineageDifference(*lineage, expected));
  return CheckStaticsAndManifest(b, *r, copts.data_files);
}

// Without replay: every checkpoint's tensors against its record's roots (replay does this for
// the checkpoints its segments start from).
Check CheckAllCheckpoints(const Bundle& b, const Replayable& r) {
  ThreadPool pool(std::max(1u, std::thread::hardware_concurrency()));
  for (const auto& [done, path] : b.checkpoints) {
    Result<SafetensorsFile> f = ReadCheckpoint(b, path);
    if (!f.ok()) return FailStatus(f.status());
    runtime::TrainState state = r.session->StateLayout();
    if (Status s = runtime::LoadState(*f, &state); !s.ok()) return FailStatus(s, path);
    if (Check c = CheckCheckpointState(b, done, state, &pool)) return c;
  }
  return std::nullopt;
}

}  // namespace detrain::verify::internal
