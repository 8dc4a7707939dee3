// The recompile phase (verifier.h): the bundled program compiled again with the data (every stage
// compared: recompile_stages.cc); every static file and manifest claim rebuilt and compared; the
// split, the lineage and the genesis hash recomputed.
#include <unistd.h>

#include <map>
#include <set>
#include <thread>

#include "attest/canonical_json.h"
#include "attest/prng/lineage.h"
#include "base/file_io.h"
#include "base/fs.h"
#include "evidence/bundle/bundle_files.h"
#include "evidence/verify/verifier_internal.h"

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
  std::set<std::string> named;
  if (b.manifest["data"].contains("files") && b.manifest["data"]["files"].is_array()) {
    for (const json& f : b.manifest["data"]["files"]) {
      if (f.is_object() && f.contains("path") && f["path"].is_string()) {
        named.insert(f["path"].get<std::string>());
      }
    }
  }
  const json& files = b.data_record["files"];
  if (files.size() != named.size()) {
    return Fail(std::string(bundle::kDataRecord) + ": field \"files\" lists " +
                std::to_string(files.size()) + " files; manifest.json's \"data.files\" names " +
                std::to_string(named.size()));
  }
  for (size_t i = 0; i < files.size(); ++i) {
    const json& f = files[i];
    const std::string field =
        std::string(bundle::kDataRecord) + ": field \"files[" + std::to_string(i) + "].";
    if (named.count(f["path"].get<std::string>()) == 0) {
      return Fail(field + "path\": \"" + f["path"].get<std::string>() +
                  "\" is not a file manifest.json's \"data.files\" names");
    }
    const std::string written = f["path"].get<std::string>();
    const std::string want = f["sha256"].get<std::string>();
    std::vector<std::string> candidates;
    if (auto given = o.data_files.find(written); given != o.data_files.end()) {
      Result<std::string> bytes = ReadFile(given->second);
      if (bytes.ok() && attest::Sha256Hex(*bytes) == want) candidates.push_back(given->second);
    }
    // Where the run found it: environment.json's hint (the digest decides).
    std::string hint;
    Result<std::string> env = ReadBounded(JoinPath(b.dir, bundle::kEnvironment), 1 << 20);
    Result<json> ej = env.ok() ? attest::ParseJson(*env) : Result<json>(env.status());
    if (ej.ok() && ej->is_object() && ej->contains("program") && (*ej)["program"].is_string()) {
      hint = (*ej)["program"].get<std::string>();
    }
    std::vector<std::string> dirs;
    if (!o.data_dir.empty()) dirs.push_back(o.data_dir);
    for (std::string& c : DataFileCandidates(
             b.dir, written, f.contains("embedded") ? f["embedded"].get<std::string>() : "", hint,
             dirs)) {
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
  const json& run = b.manifest["run"];
  if (!run.contains("embed_data") || !run["embed_data"].is_boolean()) {
    return Fail("manifest.json: field \"run.embed_data\": expected true or false");
  }
  bundle::RunOptions options;
  options.program = b.manifest["program"]["path"].get<std::string>();
  options.embed_data = run["embed_data"].get<bool>();
  options.executor.backend = r.backend;
  for (size_t i = 0; i < b.data_record["files"].size(); ++i) {
    const json& f = b.data_record["files"][i];
    if (f.contains("embedded") != options.embed_data) {
      return Fail(std::string("manifest.json: field \"run.embed_data\" is ") +
                  (options.embed_data ? "true" : "false") +
                  ", but data/data.json's field \"files[" + std::to_string(i) + "].embedded\" is " +
                  (options.embed_data ? "missing" : "present") + " (" +
                  f["path"].get<std::string>() + ")");
    }
  }
  bundle::BundleStatics statics;
  statics.options = &options;
  // With the bundle's PTX and cubins where they were not compiled again (recompile_stages.cc).
  statics.compiled = r.as_recorded.has_value() ? &*r.as_recorded : &r.compiled;
  statics.data = r.data.get();
  statics.schedule = &r.schedule;
  statics.data_files = data_files;
  Result<std::vector<std::pair<std::string, std::string>>> files = bundle::StaticFiles(statics);
  if (!files.ok()) return FailStatus(files.status());
  for (const auto& [rel, bytes] : *files) {
    if (rel == bundle::kEnvironment) continue;
    Result<std::string> have = ReadFile(JoinPath(b.dir, rel));
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
  const json& f = b.manifest["final"];
  fin.steps_done = f["steps_done"].get<int64_t>();
  attest::ParseDigestHex(f["step_hash"].get<std::string>(), &fin.step_hash);
  attest::ParseDigestHex(f["params_root"].get<std::string>(), &fin.params_root);
  attest::ParseDigestHex(f["optimizer_root"].get<std::string>(), &fin.optimizer_root);
  fin.genesis = b.steps.genesis;
  fin.stopped = b.stopped;
  if (b.stopped) fin.stop_reason = b.manifest["stop"]["reason"].get<std::string>();
  Result<json> expected = bundle::ManifestJson(statics, fin, b.manifest["files"]);
  if (!expected.ok()) return FailStatus(expected.status());
  json have = b.manifest;
  have.erase("root_digest");
  if (have != *expected) {
    return Fail("manifest.json: " + JsonDifference(have, *expected, ""));
  }
  // The bundle lists exactly the files this run writes.
  std::set<std::string> want = {bundle::kSteps, bundle::kLineage};
  for (const auto& [rel, bytes] : *files) want.insert(rel);
  for (const auto& [done, path] : b.checkpoints) want.insert(path);  // the schedule's (integrity)
  for (const json& entry : b.manifest["files"]) {
    const std::string path = entry["path"].get<std::string>();
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
  // pipeline gained a pass still reproduces this bundle's stages (schemas/bundle.md §9).
  for (const json& s : b.manifest["stages"]) {
    if (!s.is_object() || s.value("stage", "") != "opt-hlo" || !s.contains("transform")) continue;
    const json& t = s["transform"];
    if (t.is_object() && t.contains("options") && t["options"].is_object() &&
        t["options"].contains("pipeline") && t["options"]["pipeline"].is_string()) {
      copts.pipeline = t["options"]["pipeline"].get<std::string>();
    }
  }
  const std::string program = JoinPath(b.dir, b.manifest["program"]["path"].get<std::string>());
  if (!RegularFileSize(program).ok()) {
    return Fail("manifest.json: field \"program.path\": \"" +
                b.manifest["program"]["path"].get<std::string>() +
                "\" is not a file of the bundle");
  }
  if (Check c = CompileStages(b, program, copts, r)) return c;
  frontend::RunConfig& cfg = *r->compiled.config;
  const json& run = b.manifest["run"];
  cfg.train.steps = run["steps"].get<int64_t>();
  if (r->as_recorded.has_value()) r->as_recorded->config->train.steps = cfg.train.steps;
  r->seed = cfg.train.seed;
  r->schedule.steps = run["steps"].get<int64_t>();
  r->schedule.checkpoint_every = run["checkpoint_every"].get<int64_t>();
  r->schedule.eval_every = run["eval_every"].get<int64_t>();
  r->schedule.policy = b.steps.policy;
  if (r->schedule.checkpoint_every != cfg.train.checkpoint_every) {
    return Fail("manifest.json: field \"run.checkpoint_every\": recorded " +
                std::to_string(r->schedule.checkpoint_every) + ", the program's is " +
                std::to_string(cfg.train.checkpoint_every));
  }
  if (r->schedule.eval_every != cfg.train.eval_every) {
    return Fail("manifest.json: field \"run.eval_every\": recorded " +
                std::to_string(r->schedule.eval_every) + ", the program's is " +
                std::to_string(cfg.train.eval_every));
  }
  // The data: split and statistics recomputed, then the records compared byte for byte.
  runtime::RunKeys keys(cfg.train.seed, cfg.train.prng, cfg.train.shards);
  Result<prng::Key> split_key = keys.SplitKey();
  if (!split_key.ok()) return FailStatus(split_key.status());
  Result<runtime::TrainingData> data =
      runtime::TrainingData::Prepare(cfg, *r->compiled.dataset, *split_key);
  if (!data.ok()) return FailStatus(data.status());
  r->data = std::make_unique<runtime::TrainingData>(std::move(*data));
  Result<std::string> split = bundle::SplitFileBytes(*r->data);
  Result<std::string> bundled_split = ReadFile(JoinPath(b.dir, bundle::kSplitFile));
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
  for (const json& f : b.data_record["files"]) {
    sizes.emplace_back(f["path"].get<std::string>(), f["size"].get<uint64_t>());
    embedded.push_back(f.contains("embedded") ? f["embedded"].get<std::string>() : "");
  }
  for (size_t i = 0; i < sizes.size(); ++i) {
    Result<uint64_t> size = RegularFileSize(copts.data_files[sizes[i].first]);
    if (size.ok() && *size != sizes[i].second) {
      return Fail(std::string(bundle::kDataRecord) + ": field \"files[" + std::to_string(i) +
                  "].size\": recorded " + std::to_string(sizes[i].second) + ", dataset " +
                  sizes[i].first + " has " + std::to_string(*size) + " bytes");
    }
  }
  Result<json> dj = bundle::DataJson(cfg, *r->compiled.dataset, *r->data, sizes, embedded);
  if (!dj.ok()) return FailStatus(dj.status());
  if (*dj != b.data_record) {
    Result<std::string> a = attest::CanonicalJson(b.data_record), c = attest::CanonicalJson(*dj);
    return Fail(std::string(bundle::kDataRecord) + " differs from what the data gives; field " +
                JsonDifference(b.data_record, *dj, "") + "; " +
                FirstDifference(a.ok() ? *a : "", c.ok() ? *c : "", true));
  }
  // Genesis: the stage chain and the initial state.
  Result<std::unique_ptr<runtime::Trainer>> trainer =
      runtime::Trainer::Create(r->compiled, r->data.get(), o.executor);
  if (!trainer.ok()) return FailStatus(trainer.status());
  Result<runtime::TrainState> init = (*trainer)->InitialState(&keys);
  if (!init.ok()) return FailStatus(init.status());
  r->layout = (*trainer)->StateLayout();
  Result<std::string> chain = attest::CanonicalJson(driver::StageChainJson(r->compiled.stages));
  if (!chain.ok()) return FailStatus(chain.status());
  r->stage_chain = *chain;
  ThreadPool pool(1);
  Result<Digest256> genesis = bundle::Genesis(r->stage_chain, *init, &pool);
  if (!genesis.ok()) return FailStatus(genesis.status());
  if (*genesis != b.steps.genesis) {
    return Fail(
        "the genesis hash differs: the initial parameters or the stage chain are not what "
        "the program gives");
  }
  // The key lineage: recorded keys recomputed from their parents, and the whole log equal to
  // the one this run derives.
  const int64_t spe = r->data->split().steps_per_epoch;
  // A stopped run also derived (and recorded) the key of the step that stopped it, which has no
  // record; replay confirms the stop with that key.
  const int64_t derived = static_cast<int64_t>(b.steps.records.size()) + (b.stopped ? 1 : 0);
  for (int64_t t = 0; t < derived; ++t) {
    if (!keys.BeginStep(t, spe).ok())
      return Fail("cannot derive the key of step " + std::to_string(t));
  }
  // (Integrity parsed and replayed it.)
  Result<std::string> lineage = ReadBounded(JoinPath(b.dir, bundle::kLineage), kMaxJsonFile * 16);
  if (!lineage.ok()) return FailStatus(lineage.status());
  const std::string expected = keys.lineage().ToJsonl();
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
    runtime::TrainState state = r.layout;
    if (Status s = bundle::LoadState(*f, &state); !s.ok()) return FailStatus(s, path);
    if (Check c = CheckCheckpointState(b, done, state, &pool)) return c;
  }
  return std::nullopt;
}

}  // namespace detrain::verify::internal
