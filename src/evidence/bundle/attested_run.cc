// See attested_run.h. The run is a sequence: compile, prepare the data, build the trainer, open
// (or resume) the bundle, run the steps, finish the bundle.
#include "evidence/bundle/attested_run.h"

#include <cmath>

#include "attest/canonical_json.h"
#include "attest/sha256.h"
#include "attest/tensor_digest.h"
#include "base/file_io.h"
#include "base/fs.h"
#include "driver/compile.h"
#include "driver/dump.h"
#include "evidence/bundle/bundle_files.h"
#include "evidence/bundle/bundle_format.h"
#include "evidence/bundle/environment.h"
#include "evidence/bundle/step_runner.h"
#include "runtime/cuda/cuda_backend.h"

namespace detrain::bundle {
namespace {

using attest::Digest256;
using nlohmann::json;

Status WriteJson(const std::string& dir, const std::string& rel, const json& j) {
  DETRAIN_ASSIGN_OR_RETURN(std::string text, CanonicalLine(j));
  return WriteFileAtomic(JoinPath(dir, rel), text);
}

// Everything the run needs, built the same way for a fresh run and a resumed one.
struct Session {
  driver::CompileResult compiled;
  std::unique_ptr<runtime::RunKeys> keys;
  std::unique_ptr<runtime::TrainingData> data;
  std::unique_ptr<runtime::Trainer> trainer;
  StepSchedule schedule;
  std::string stage_chain;  // canonical JSON of the stage chain
};

Result<Session> Open(const RunOptions& o) {
  Session s;
  driver::CompileOptions copts;
  copts.cuda = o.executor.backend == runtime::Backend::kCuda;  // the executable it runs
  if (copts.cuda && !runtime::cuda::HasGpuSystem(o.executor.backend_options.get())) {
    // No GPU: say so before compiling for one.
    DETRAIN_RETURN_IF_ERROR(
        runtime::cuda::CountDriverGpus().status().WithContext("--backend cuda"));
  }
  DETRAIN_ASSIGN_OR_RETURN(s.compiled, driver::Compile(o.program, copts));
  if (!s.compiled.config.has_value()) {
    return InvalidArgument(o.program +
                           ": only a .dt program or a run spec can be run (they name their data)");
  }
  frontend::RunConfig& cfg = *s.compiled.config;
  if (o.steps.has_value()) {
    if (*o.steps < 1 || *o.steps > frontend::kMaxSteps) {
      return InvalidArgument("--steps must be from 1 to " + std::to_string(frontend::kMaxSteps) +
                             " (checkpoint names have eight digits)");
    }
    cfg.train.steps = *o.steps;
  }
  s.schedule.steps = *cfg.train.steps;
  s.schedule.checkpoint_every = cfg.train.checkpoint_every;
  s.schedule.eval_every = cfg.train.eval_every;
  s.schedule.policy = o.step_digest;
  s.keys = std::make_unique<runtime::RunKeys>(cfg.train.seed, cfg.train.prng, cfg.train.shards);
  DETRAIN_ASSIGN_OR_RETURN(prng::Key split_key, s.keys->SplitKey());
  DETRAIN_ASSIGN_OR_RETURN(runtime::TrainingData data,
                           runtime::TrainingData::Prepare(cfg, *s.compiled.dataset, split_key));
  s.data = std::make_unique<runtime::TrainingData>(std::move(data));
  DETRAIN_ASSIGN_OR_RETURN(s.trainer,
                           runtime::Trainer::Create(s.compiled, s.data.get(), o.executor));
  DETRAIN_ASSIGN_OR_RETURN(s.stage_chain,
                           attest::CanonicalJson(driver::StageChainJson(s.compiled.stages)));
  return s;
}

void Report(const RunOptions& o, RunProgress::Kind kind, int64_t done, int64_t first,
            const Session& s, float loss, const std::optional<runtime::EvalResult>& eval) {
  if (!o.progress) return;
  RunProgress p;
  p.kind = kind;
  p.steps_done = done;
  p.steps = s.schedule.steps;
  p.first_step = first;
  p.loss = loss;
  p.eval = eval;
  o.progress(p);
}

std::optional<runtime::EvalResult> EvalOf(const StepRecord& r) {
  if (!r.eval_loss_bits.has_value()) return std::nullopt;
  runtime::EvalResult e;
  e.loss = FloatOfBits(*r.eval_loss_bits);
  if (r.eval_accuracy_bits.has_value()) e.accuracy = FloatOfBits(*r.eval_accuracy_bits);
  return e;
}

// Training without a bundle: the same steps, no digests.
Result<RunSummary> RunPlain(const RunOptions& o, Session& s) {
  RunSummary sum;
  sum.steps = s.schedule.steps;
  DETRAIN_ASSIGN_OR_RETURN(runtime::TrainState state, s.trainer->InitialState(s.keys.get()));
  Report(o, RunProgress::kStarted, 0, 0, s, 0, std::nullopt);
  const int64_t spe = s.data->split().steps_per_epoch;
  for (int64_t t = 0; t < s.schedule.steps; ++t) {
    DETRAIN_ASSIGN_OR_RETURN(prng::Key key, s.keys->BeginStep(t, spe));
    DETRAIN_ASSIGN_OR_RETURN(runtime::StepResult r, s.trainer->Step(t, key, &state));
    if (!r.finite) {
      sum.stopped = true;
      sum.stop_reason = "step " + std::to_string(t) + ": " + r.nonfinite;
      break;
    }
    sum.steps_done = t + 1;
    sum.last_loss = r.loss;
    std::optional<runtime::EvalResult> eval;
    if (s.trainer->has_eval() && s.schedule.Evaluates(t)) {
      DETRAIN_ASSIGN_OR_RETURN(runtime::EvalResult e, s.trainer->Evaluate(state));
      eval = e;
      sum.last_eval = e;
    }
    Report(o, RunProgress::kStep, t + 1, 0, s, r.loss, eval);
    if (o.interrupt != nullptr && o.interrupt->load()) {
      sum.interrupted = true;
      break;
    }
  }
  sum.complete = !sum.stopped && !sum.interrupted;
  if (!o.output_dir.empty() && !sum.interrupted) {  // an interrupted run writes nothing
    DETRAIN_RETURN_IF_ERROR(MakeDirs(JoinPath(o.output_dir, "final")));
    runtime::TrainState params;
    for (const runtime::StateTensor& t : state) {
      if (t.role == plan::ParamRole::kParameter) params.push_back(t);
    }
    DETRAIN_RETURN_IF_ERROR(WriteSafetensorsFile(
        JoinPath(o.output_dir, kFinalWeights),
        StateFile(params, {{"format", "pt"},
                           {"detrain.format", kWeightsFormat},
                           {"detrain.steps", std::to_string(sum.steps_done)}})));
  }
  Report(o, RunProgress::kDone, sum.steps_done, 0, s, sum.last_loss, sum.last_eval);
  return sum;
}

// Where a resumed run starts: the records kept and the state after them.
struct ResumePoint {
  int64_t steps_done = 0;
  std::vector<StepRecord> records;
  runtime::TrainState state;
  size_t steps_bytes = 0;  // the prefix of steps.jsonl to keep
};

Result<ResumePoint> FindResumePoint(const std::string& dir, Session& s, const Digest256& genesis,
                                    runtime::TrainState init, const std::set<std::string>& written,
                                    ThreadPool* pool) {
  ResumePoint rp;
  rp.state = std::move(init);
  DETRAIN_ASSIGN_OR_RETURN(std::string text, ReadFile(JoinPath(dir, kSteps)));
  // A kill between creating steps.jsonl and finishing its header line leaves no whole line; no
  // record can follow it, so the run starts over from step 0 (and rewrites the header).
  ParsedSteps steps;
  steps.genesis = genesis;
  steps.policy = s.schedule.policy;
  if (text.find('\n') != std::string::npos) {
    DETRAIN_ASSIGN_OR_RETURN(steps, ParseSteps(text));
  }
  if (steps.genesis != genesis || steps.policy != s.schedule.policy) {
    return FailedPrecondition(dir +
                              ": the bundle's steps.jsonl belongs to another run "
                              "(genesis or step digest differ); start a new bundle");
  }
  // The records that chain from genesis, numbered 0, 1, ...
  Digest256 prev = genesis;
  size_t chained = 0;
  for (const StepRecord& r : steps.records) {
    if (r.step != static_cast<int64_t>(chained) || ChainHash(r, prev) != r.hash) break;
    prev = r.hash;
    ++chained;
  }
  // The newest checkpoint whose roots its record confirms.
  DETRAIN_ASSIGN_OR_RETURN(std::vector<std::string> files, ListFiles(dir));
  int64_t best = 0;
  runtime::TrainState best_state;
  for (const std::string& f : files) {
    std::optional<int64_t> done = CheckpointStepsOf(f);
    if (!done.has_value() || *done < 1 || *done > static_cast<int64_t>(chained) || *done <= best) {
      continue;
    }
    const StepRecord& r = steps.records[static_cast<size_t>(*done - 1)];
    Result<SafetensorsFile> file = ReadSafetensorsFile(JoinPath(dir, f));
    if (!file.ok() || !r.params_root.has_value()) continue;
    runtime::TrainState state = s.trainer->StateLayout();
    if (!LoadState(*file, &state).ok()) continue;
    Result<std::pair<Digest256, Digest256>> roots = StateRoots(state, pool);
    if (!roots.ok() || roots->first != *r.params_root || roots->second != *r.optimizer_root) {
      continue;
    }
    best = *done;
    best_state = std::move(state);
  }
  rp.steps_done = best;
  if (best > 0) rp.state = std::move(best_state);
  rp.records.assign(steps.records.begin(), steps.records.begin() + best);
  // The header line plus `best` whole lines.
  size_t pos = 0;
  for (int64_t line = 0; line <= best; ++line) pos = text.find('\n', pos) + 1;
  rp.steps_bytes = pos;
  // Checkpoints after the resume point are rewritten by the run; stale temporaries go now.
  for (const std::string& f : files) {
    std::optional<int64_t> done = CheckpointStepsOf(f);
    if ((done.has_value() && *done > best) || IsRunTemporary(f, written)) {
      DETRAIN_RETURN_IF_ERROR(RemoveFile(JoinPath(dir, f)));
    }
  }
  return rp;
}

Result<RunSummary> RunAttested(const RunOptions& o, Session& s) {
  const std::string& dir = o.output_dir;
  if (dir.empty()) return InvalidArgument("--attest needs a bundle directory (-o BUNDLE)");
  RunSummary sum;
  sum.steps = s.schedule.steps;
  Result<std::vector<std::string>> present = ListFiles(dir);
  const bool existing = IsDirectory(dir) && (!present.ok() || !present->empty());
  if (o.resume) {
    if (!IsDirectory(dir)) return InvalidArgument(dir + ": no bundle to resume");
    if (PathExists(JoinPath(dir, kManifest))) {
      return FailedPrecondition(dir + ": the bundle is complete; there is nothing to resume");
    }
  } else if (existing) {
    return InvalidArgument(dir +
                           ": exists and is not empty; choose a new directory, or add "
                           "--resume to continue an interrupted run");
  }
  ThreadPool pool(static_cast<size_t>(std::max(1, o.executor.threads)));
  auto progress_json = [&](int64_t done) {
    return json{
        {"format", kProgressFormat}, {"format_version", kFormatVersion},
        {"status", "incomplete"},    {"steps", s.schedule.steps},
        {"steps_done", done},        {"resume", "detrain run PROGRAM --attest -o BUNDLE --resume"}};
  };
  if (!o.resume || (!PathExists(JoinPath(dir, kProgress)) && !PathExists(JoinPath(dir, kSteps)))) {
    // progress.json before anything else: a run killed while it writes the static files leaves
    // a bundle that says it is incomplete (and resumes), not a directory that is no bundle —
    // also a resume of a run that failed or was killed before it had written either file.
    DETRAIN_RETURN_IF_ERROR(MakeDirs(dir));
    DETRAIN_RETURN_IF_ERROR(WriteJson(dir, kProgress, progress_json(0)));
  }

  // The initial state and the genesis hash.
  DETRAIN_ASSIGN_OR_RETURN(runtime::TrainState init, s.trainer->InitialState(s.keys.get()));
  DETRAIN_ASSIGN_OR_RETURN(Digest256 genesis, Genesis(s.stage_chain, init, &pool));

  // The static part of the bundle: identical bytes on every (re)start.
  BundleStatics statics;
  statics.options = &o;
  statics.compiled = &s.compiled;
  statics.data = s.data.get();
  statics.schedule = &s.schedule;
  statics.environment = EnvironmentJson(o.executor, s.trainer->isa(), s.trainer->devices(),
                                        o.detrain_version, o.program);
  if (!o.processes.is_null()) statics.environment["processes"] = o.processes;
  if (o.resume) {
    DETRAIN_RETURN_IF_ERROR(CheckStaticsMatch(dir, statics));
  }
  DETRAIN_RETURN_IF_ERROR(WriteStatics(dir, statics));

  ResumePoint rp;
  if (o.resume && PathExists(JoinPath(dir, kSteps))) {
    DETRAIN_ASSIGN_OR_RETURN(std::set<std::string> written, WrittenNames(statics));
    DETRAIN_ASSIGN_OR_RETURN(rp, FindResumePoint(dir, s, genesis, std::move(init), written, &pool));
  } else {
    rp.state = std::move(init);
  }
  AppendFile steps;
  if (rp.steps_bytes == 0) {
    DETRAIN_RETURN_IF_ERROR(steps.Open(JoinPath(dir, kSteps), 0));
    DETRAIN_ASSIGN_OR_RETURN(std::string header,
                             CanonicalLine(StepsHeaderJson(genesis, s.schedule.policy)));
    DETRAIN_RETURN_IF_ERROR(steps.Append(header));
  } else {
    DETRAIN_RETURN_IF_ERROR(steps.Open(JoinPath(dir, kSteps), rp.steps_bytes));
  }
  DETRAIN_RETURN_IF_ERROR(steps.Sync());

  // The keys of the steps already done, in run order, so the lineage matches a straight run.
  const int64_t spe = s.data->split().steps_per_epoch;
  for (int64_t t = 0; t < rp.steps_done; ++t) {
    DETRAIN_RETURN_IF_ERROR(s.keys->BeginStep(t, spe).status());
  }
  std::vector<StepRecord> records = std::move(rp.records);
  runtime::TrainState state = std::move(rp.state);
  const int64_t first = rp.steps_done;
  DETRAIN_RETURN_IF_ERROR(WriteJson(dir, kProgress, progress_json(first)));
  Report(o, RunProgress::kStarted, first, first, s, 0, std::nullopt);

  Digest256 prev = records.empty() ? genesis : records.back().hash;
  for (int64_t t = first; t < s.schedule.steps; ++t) {
    DETRAIN_ASSIGN_OR_RETURN(prng::Key key, s.keys->BeginStep(t, spe));
    DETRAIN_ASSIGN_OR_RETURN(StepOutcome out,
                             RunStep(*s.trainer, s.schedule, t, key, prev, &state, &pool));
    if (!out.finite) {
      sum.stopped = true;
      sum.stop_reason = "step " + std::to_string(t) + ": " + out.nonfinite;
      break;
    }
    DETRAIN_ASSIGN_OR_RETURN(std::string line, CanonicalLine(StepRecordJson(out.record)));
    DETRAIN_RETURN_IF_ERROR(steps.Append(line));
    prev = out.record.hash;
    sum.last_loss = FloatOfBits(out.record.loss_bits);
    std::optional<runtime::EvalResult> eval = EvalOf(out.record);
    if (eval.has_value()) sum.last_eval = eval;
    records.push_back(std::move(out.record));
    if (s.schedule.Checkpoints(t)) {
      DETRAIN_RETURN_IF_ERROR(steps.Sync());
      const StepRecord& r = records.back();
      DETRAIN_RETURN_IF_ERROR(MakeDirs(JoinPath(dir, kCheckpointsDir)));
      DETRAIN_RETURN_IF_ERROR(WriteSafetensorsFile(
          JoinPath(dir, CheckpointPath(t + 1)),
          StateFile(state, {{"detrain.format", kCheckpointFormat},
                            {"detrain.steps_done", std::to_string(t + 1)},
                            {"detrain.step_hash", Hex(r.hash)},
                            {"detrain.params_root", Hex(*r.params_root)},
                            {"detrain.optimizer_root", Hex(*r.optimizer_root)}})));
      DETRAIN_RETURN_IF_ERROR(WriteJson(dir, kProgress, progress_json(t + 1)));
      Report(o, RunProgress::kCheckpoint, t + 1, first, s, sum.last_loss, eval);
    } else {
      Report(o, RunProgress::kStep, t + 1, first, s, sum.last_loss, eval);
    }
    if (o.crash_after_steps.has_value() && t + 1 >= *o.crash_after_steps) {
      sum.steps_done = t + 1;
      return sum;  // as if killed: no sync, no manifest
    }
    if (o.interrupt != nullptr && o.interrupt->load() && t + 1 < s.schedule.steps) {
      DETRAIN_RETURN_IF_ERROR(steps.Sync());
      sum.interrupted = true;
      sum.steps_done = t + 1;
      sum.final_step_hash = Hex(prev);
      return sum;
    }
  }
  DETRAIN_RETURN_IF_ERROR(steps.Sync());
  DETRAIN_RETURN_IF_ERROR(steps.Close());
  sum.steps_done = static_cast<int64_t>(records.size());
  sum.final_step_hash = Hex(prev);

  // The roots of the last good state (a stopped run's last record may not have them).
  FinalState fin;
  fin.steps_done = sum.steps_done;
  fin.step_hash = prev;
  fin.genesis = genesis;
  DETRAIN_ASSIGN_OR_RETURN(auto roots, StateRoots(state, &pool));
  fin.params_root = roots.first;
  fin.optimizer_root = roots.second;
  fin.stopped = sum.stopped;
  fin.stop_reason = sum.stop_reason;
  DETRAIN_RETURN_IF_ERROR(WriteFileAtomic(JoinPath(dir, kLineage), s.keys->lineage().ToJsonl()));
  DETRAIN_ASSIGN_OR_RETURN(sum.root_digest, FinishBundle(dir, statics, fin, state));
  sum.complete = true;
  Report(o, RunProgress::kDone, sum.steps_done, first, s, sum.last_loss, sum.last_eval);
  return sum;
}

// A bundle holds the executable of the backend it was started on, and run.json names that
// backend (schemas/bundle.md §3): a resume on the other one would write another bundle. Said
// before compiling (for a GPU that may not be there). A run.json that cannot be read is left
// to CheckStaticsMatch; none yet (a kill before it was written) leaves the backend open.
Status CheckResumeBackend(const RunOptions& o) {
  const std::string path = JoinPath(o.output_dir, kRunRecord);
  if (!PathExists(path)) return Status::Ok();
  Result<uint64_t> size = RegularFileSize(path);
  if (!size.ok() || *size > (uint64_t{1} << 20)) return Status::Ok();
  Result<std::string> text = ReadFile(path);
  Result<json> run = text.ok() ? attest::ParseJson(*text) : Result<json>(text.status());
  if (!run.ok() || !run->is_object() || !run->contains("backend") ||
      !(*run)["backend"].is_string()) {
    return Status::Ok();
  }
  const std::string started = (*run)["backend"].get<std::string>();
  if (started == runtime::BackendName(o.executor.backend)) return Status::Ok();
  return FailedPrecondition(o.output_dir + ": this bundle was started with --backend " + started +
                            "; resume it with --backend " + started);
}

// What a rank says of itself before the first step: whether it compiled, and what.
json RankJson(const runtime::Cluster& c, const RunOptions& o, const Result<Session>& s) {
  json j = {{"rank", c.rank()},
            {"host", c.host()},
            {"devices", o.executor.devices},
            {"detrain", o.detrain_version}};
  if (!s.ok()) {
    j["error"] = s.status().message();
    return j;
  }
  j["stages"] = attest::Sha256Hex(s->stage_chain);
  json data = json::array();
  for (const auto& file : s->compiled.dataset->file_sha256) data.push_back(file.second);
  j["data"] = data;
  return j;
}

// JSON for a message: never throws, whatever bytes a string holds.
std::string Text(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

// Every rank compiled the same stages from the same data, or the run stops before its first
// step — on every rank, with rank 0 naming the first rank that differs. Rank 0 gets the ranks'
// records (environment.json "processes").
Result<json> Handshake(runtime::Cluster& c, const RunOptions& o, const Result<Session>& s) {
  constexpr int64_t kMaxRecord = 1 << 20;
  DETRAIN_ASSIGN_OR_RETURN(std::vector<std::string> all,
                           runtime::GatherToRankZero(c, Text(RankJson(c, o, s)), kMaxRecord));
  std::string verdict;
  json processes;
  if (c.rank() == 0) {
    Result<json> checked = CheckRankRecords(all, [&c](int r) { return c.Describe(r); });
    if (checked.ok()) {
      processes = std::move(*checked);
    } else {
      verdict = checked.status().message();
    }
  }
  DETRAIN_ASSIGN_OR_RETURN(std::string agreed,
                           runtime::BroadcastFromRankZero(c, verdict, kMaxRecord));
  if (!agreed.empty()) {
    if (!s.ok() && c.rank() == 0) return s.status();
    return FailedPrecondition(c.rank() == 0 ? agreed : kStoppedByRankZero + agreed);
  }
  if (!s.ok()) return s.status();
  return processes;
}

}  // namespace

Result<json> CheckRankRecords(const std::vector<std::string>& records,
                              const std::function<std::string(int)>& describe) {
  json processes = json::array();
  json mine;
  for (size_t r = 0; r < records.size(); ++r) {
    const std::string who = describe(static_cast<int>(r));
    Result<json> parsed = attest::ParseJson(records[r]);
    if (!parsed.ok() || !parsed->is_object()) {
      return FailedPrecondition(who + " sent an unreadable record" +
                                (parsed.ok()
                                     ? std::string(" (not an object)")
                                     : " (" + std::string(parsed.status().message()) + ")"));
    }
    const json& j = *parsed;
    if (j.contains("error")) {
      const json& e = j["error"];
      const std::string error = e.is_string() ? e.get<std::string>() : Text(e);
      return FailedPrecondition(r == 0 ? error : who + ": " + error);
    }
    if (r == 0) mine = j;
    for (const char* field : {"detrain", "stages", "data", "devices"}) {
      const std::string f = field;
      const json theirs = j.value(f, json()), ours = mine.value(f, json());
      if (theirs == ours) continue;
      const std::string what = f == "stages"    ? "compiled stages (SHA-256 of the stage chain)"
                               : f == "data"    ? "data files' SHA-256"
                               : f == "devices" ? "--devices (every rank must hold the same count)"
                                                : "detrain version";
      return FailedPrecondition(who + " differs from rank 0 in its " + what + ": " + Text(theirs) +
                                ", rank 0 " + Text(ours) +
                                "; every rank must run the same detrain on the same program and "
                                "data");
    }
    // What environment.json records of the rank (schemas/bundle.md §4.10): rank 0 says which
    // rank it is, not the rank itself; every field has the type the schema gives it.
    const json host = j.value("host", json()), devices = j.value("devices", json());
    json data = json::array();
    for (const json& d : j.value("data", json::array())) {
      if (d.is_string()) data.push_back(d);
    }
    processes.push_back({{"rank", static_cast<int64_t>(r)},
                         {"host", host.is_string() ? host : json("")},
                         {"devices", devices.is_number_integer() ? devices : json(0)},
                         {"data", data}});
  }
  return processes;
}

Result<RunSummary> RunProgram(const RunOptions& options) {
  runtime::Cluster* cluster = options.executor.cluster.get();
  if (cluster == nullptr || cluster->size() == 1) {
    if (options.attest && options.resume) DETRAIN_RETURN_IF_ERROR(CheckResumeBackend(options));
    DETRAIN_ASSIGN_OR_RETURN(Session s, Open(options));
    if (!options.attest) return RunPlain(options, s);
    return RunAttested(options, s);
  }
  Result<Session> s = Open(options);
  DETRAIN_ASSIGN_OR_RETURN(json processes, Handshake(*cluster, options, s));
  if (cluster->rank() != 0) {  // a follower: serve the train step until rank 0 is done
    RunSummary sum;
    DETRAIN_ASSIGN_OR_RETURN(int64_t code, s->trainer->Follow());
    sum.follower_exit_code = static_cast<int>(code);
    return sum;
  }
  RunOptions o = options;
  o.processes = std::move(processes);
  const Status backend = o.attest && o.resume ? CheckResumeBackend(o) : Status::Ok();
  Result<RunSummary> r = !backend.ok() ? Result<RunSummary>(backend)
                                       : (o.attest ? RunAttested(o, *s) : RunPlain(o, *s));
  // The followers wait for rank 0's next message — unless a transfer failed half-way, when
  // they wait for bytes instead and only aborting stops them (the caller's part).
  if (!cluster->broken()) {
    const int64_t code = !r.ok() ? 2 : (r->stopped ? 1 : (r->interrupted ? 130 : 0));
    for (int f = 1; f < cluster->size(); ++f) {
      Status st = runtime::SendControl(*cluster, f, runtime::Control::kStop, code);
      if (!st.ok()) {
        cluster->set_broken();
        if (r.ok()) return st;
      }
    }
  }
  return r;
}

}  // namespace detrain::bundle
