// See attested_run.h. The run is a sequence: open the session (runtime/train/run.h), open (or
// resume) the bundle, run the steps, finish the bundle.
#include "evidence/bundle/attested_run.h"

#include <cmath>

#include "attest/canonical_json.h"
#include "base/file_io.h"
#include "base/fs.h"
#include "evidence/bundle/bundle_files.h"
#include "evidence/bundle/bundle_format.h"
#include "evidence/bundle/bundle_reader.h"
#include "evidence/bundle/environment.h"

namespace detrain::bundle {
namespace {

using attest::Digest256;
using nlohmann::json;

Status WriteJson(const std::string& dir, const std::string& rel, const json& j) {
  DETRAIN_ASSIGN_OR_RETURN(std::string text, CanonicalLine(j));
  return WriteFileAtomic(JoinPath(dir, rel), text);
}

using runtime::RunSession;

void Report(const RunOptions& o, RunProgress::Kind kind, int64_t done, int64_t first,
            const RunSession& s, float loss, const std::optional<runtime::EvalResult>& eval) {
  if (!o.progress) return;
  RunProgress p;
  p.kind = kind;
  p.steps_done = done;
  p.steps = s.schedule().steps;
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

// Where a resumed run starts: the records kept and the state after them.
struct ResumePoint {
  int64_t steps_done = 0;
  std::vector<StepRecord> records;
  runtime::TrainState state;
  size_t steps_bytes = 0;  // the prefix of steps.jsonl to keep
};

Result<ResumePoint> FindResumePoint(const std::string& dir, RunSession& s, const Digest256& genesis,
                                    runtime::TrainState init, const std::set<std::string>& written,
                                    ThreadPool* pool) {
  ResumePoint rp;
  rp.state = std::move(init);
  DETRAIN_ASSIGN_OR_RETURN(std::string text, ReadBundleFile(dir, kSteps, kMaxLogFileBytes));
  // A kill between creating steps.jsonl and finishing its header line leaves no whole line; no
  // record can follow it, so the run starts over from step 0 (and rewrites the header).
  ParsedSteps steps;
  steps.genesis = genesis;
  steps.policy = s.schedule().policy;
  if (text.find('\n') != std::string::npos) {
    DETRAIN_ASSIGN_OR_RETURN(steps, ParseSteps(text));
  }
  if (steps.genesis != genesis || steps.policy != s.schedule().policy) {
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
    runtime::TrainState state = s.trainer().StateLayout();
    if (!runtime::LoadState(*file, &state).ok()) continue;
    Result<std::pair<Digest256, Digest256>> roots = runtime::StateRoots(state, pool);
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

Result<RunSummary> AttestedLoop(const RunOptions& o, RunSession& s, const json& processes) {
  const std::string& dir = o.output_dir;
  if (dir.empty()) return InvalidArgument("--attest needs a bundle directory (-o BUNDLE)");
  RunSummary sum;
  sum.steps = s.schedule().steps;
  Result<std::vector<std::string>> present = ListFiles(dir);
  const bool existing = IsDirectory(dir) && (!present.ok() || !present->empty());
  if (o.resume) {
    if (!IsDirectory(dir)) return InvalidArgument(dir + ": no bundle to resume");
    // A bundle is resumed under the rules every reader of one applies (bundle_reader.h).
    DETRAIN_RETURN_IF_ERROR(CheckBundleTree(dir).status());
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
        {"status", "incomplete"},    {"steps", s.schedule().steps},
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
  DETRAIN_ASSIGN_OR_RETURN(runtime::TrainState init, s.InitialState());
  DETRAIN_ASSIGN_OR_RETURN(Digest256 genesis, s.Genesis(init, &pool));

  // The static part of the bundle: identical bytes on every (re)start.
  BundleStatics statics;
  statics.program = o.program;
  statics.embed_data = o.embed_data;
  statics.backend = o.executor.backend;
  statics.compiled = &s.compiled();
  statics.data = &s.data();
  statics.schedule = &s.schedule();
  statics.environment = EnvironmentJson(o.executor, s.trainer().isa(), s.trainer().devices(),
                                        o.detrain_version, o.program);
  if (!processes.is_null()) statics.environment["processes"] = processes;
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
                             CanonicalLine(StepsHeaderJson(genesis, s.schedule().policy)));
    DETRAIN_RETURN_IF_ERROR(steps.Append(header));
  } else {
    DETRAIN_RETURN_IF_ERROR(steps.Open(JoinPath(dir, kSteps), rp.steps_bytes));
  }
  DETRAIN_RETURN_IF_ERROR(steps.Sync());

  // The keys of the steps already done, in run order, so the lineage matches a straight run.
  DETRAIN_RETURN_IF_ERROR(s.DeriveKeysBefore(rp.steps_done));
  std::vector<StepRecord> records = std::move(rp.records);
  runtime::TrainState state = std::move(rp.state);
  const int64_t first = rp.steps_done;
  DETRAIN_RETURN_IF_ERROR(WriteJson(dir, kProgress, progress_json(first)));
  Report(o, RunProgress::kStarted, first, first, s, 0, std::nullopt);

  Digest256 prev = records.empty() ? genesis : records.back().hash;
  for (int64_t t = first; t < s.schedule().steps; ++t) {
    // The state stays on the devices between the steps that need it here (checkpoints, the end).
    DETRAIN_ASSIGN_OR_RETURN(runtime::StepOutcome out,
                             s.Step(t, prev, &state, &pool, /*keep=*/true));
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
    if (s.schedule().Checkpoints(t)) {
      DETRAIN_RETURN_IF_ERROR(steps.Sync());
      const StepRecord& r = records.back();
      DETRAIN_RETURN_IF_ERROR(MakeDirs(JoinPath(dir, kCheckpointsDir)));
      DETRAIN_RETURN_IF_ERROR(
          WriteSafetensorsFile(JoinPath(dir, CheckpointPath(t + 1)),
                               {{"detrain.format", kCheckpointFormat},
                                {"detrain.steps_done", std::to_string(t + 1)},
                                {"detrain.step_hash", Hex(r.hash)},
                                {"detrain.params_root", Hex(*r.params_root)},
                                {"detrain.optimizer_root", Hex(*r.optimizer_root)}},
                               runtime::StateRefs(state)));
      DETRAIN_RETURN_IF_ERROR(WriteJson(dir, kProgress, progress_json(t + 1)));
      Report(o, RunProgress::kCheckpoint, t + 1, first, s, sum.last_loss, eval);
    } else {
      Report(o, RunProgress::kStep, t + 1, first, s, sum.last_loss, eval);
    }
    if (o.crash_after_steps.has_value() && t + 1 >= *o.crash_after_steps) {
      sum.steps_done = t + 1;
      return sum;  // as if killed: no sync, no manifest
    }
    if (o.interrupt != nullptr && o.interrupt->load() && t + 1 < s.schedule().steps) {
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
  DETRAIN_RETURN_IF_ERROR(s.Sync(&state));
  FinalState fin;
  fin.steps_done = sum.steps_done;
  fin.step_hash = prev;
  fin.genesis = genesis;
  DETRAIN_ASSIGN_OR_RETURN(auto roots, runtime::StateRoots(state, &pool));
  fin.params_root = roots.first;
  fin.optimizer_root = roots.second;
  fin.stopped = sum.stopped;
  fin.stop_reason = sum.stop_reason;
  DETRAIN_RETURN_IF_ERROR(WriteFileAtomic(JoinPath(dir, kLineage), s.keys().lineage().ToJsonl()));
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
  if (!PathExists(JoinPath(o.output_dir, kRunRecord))) return Status::Ok();
  Result<std::string> text = ReadBundleFile(o.output_dir, kRunRecord, uint64_t{1} << 20);
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

}  // namespace

Result<RunSummary> RunAttested(const RunOptions& options) {
  auto precheck = [&options]() {
    return options.resume ? CheckResumeBackend(options) : Status::Ok();
  };
  return runtime::RunOnRanks(options, options.step_digest, precheck,
                             [&options](RunSession& s, const json& processes) {
                               return AttestedLoop(options, s, processes);
                             });
}

}  // namespace detrain::bundle
