// See run.h. A run is: compile, open the session, agree across ranks, loop, tell the followers.
#include "runtime/train/run.h"

#include "attest/canonical_json.h"
#include "attest/sha256.h"
#include "base/exit_code.h"
#include "base/file_io.h"
#include "base/fs.h"
#include "runtime/cuda/cuda_backend.h"
#include "runtime/cuda/gpu.h"

namespace detrain::runtime {
namespace {

using nlohmann::json;

// The program compiled for the backend that runs it, and its session.
Result<std::unique_ptr<RunSession>> OpenProgram(const RunOptions& o,
                                                attest::DigestPolicy step_digest) {
  driver::CompileOptions copts;
  copts.cuda = o.executor.backend == Backend::kCuda;  // the executable it runs
  copts.plan_format_version = o.plan_format_version;
  copts.pipeline = o.pipeline;
  if (copts.cuda && !cuda::HasGpuSystem(o.executor.backend_options.get())) {
    // No GPU: say so before compiling for one.
    DETRAIN_RETURN_IF_ERROR(cuda::CountDriverGpus().status().WithContext("--backend cuda"));
  }
  DETRAIN_ASSIGN_OR_RETURN(driver::CompileResult compiled, driver::Compile(o.program, copts));
  if (!compiled.config.has_value()) {
    return InvalidArgument(o.program +
                           ": only a .dt program or a run spec can be run (they name their data)");
  }
  if (o.steps.has_value() && (*o.steps < 1 || *o.steps > frontend::kMaxSteps)) {
    return InvalidArgument("--steps must be from 1 to " + std::to_string(frontend::kMaxSteps) +
                           " (checkpoint names have eight digits)");
  }
  SessionOptions so;
  so.executor = o.executor;
  so.steps = o.steps;
  so.step_digest = step_digest;
  return RunSession::Open(std::move(compiled), so);
}

void Report(const RunOptions& o, RunProgress::Kind kind, int64_t done, int64_t steps, float loss,
            const std::optional<EvalResult>& eval) {
  if (!o.progress) return;
  RunProgress p;
  p.kind = kind;
  p.steps_done = done;
  p.steps = steps;
  p.loss = loss;
  p.eval = eval;
  o.progress(p);
}

// Training without a bundle: the same steps, no digests.
Result<RunSummary> TrainLoop(const RunOptions& o, RunSession& s) {
  RunSummary sum;
  sum.steps = s.schedule().steps;
  DETRAIN_ASSIGN_OR_RETURN(TrainState state, s.InitialState());
  Report(o, RunProgress::kStarted, 0, sum.steps, 0, std::nullopt);
  for (int64_t t = 0; t < sum.steps; ++t) {
    std::optional<EvalResult> eval;
    DETRAIN_ASSIGN_OR_RETURN(StepResult r, s.StepUnrecorded(t, &state, &eval, /*keep=*/true));
    if (!r.finite) {
      sum.stopped = true;
      sum.stop_reason = "step " + std::to_string(t) + ": " + r.nonfinite;
      break;
    }
    sum.steps_done = t + 1;
    sum.last_loss = r.loss;
    if (eval.has_value()) sum.last_eval = eval;
    Report(o, RunProgress::kStep, t + 1, sum.steps, r.loss, eval);
    if (o.interrupt != nullptr && o.interrupt->load()) {
      sum.interrupted = true;
      break;
    }
  }
  sum.complete = !sum.stopped && !sum.interrupted;
  if (!o.output_dir.empty() && !sum.interrupted) {  // an interrupted run writes nothing
    DETRAIN_RETURN_IF_ERROR(s.Sync(&state));
    DETRAIN_RETURN_IF_ERROR(MakeDirs(JoinPath(o.output_dir, "final")));
    DETRAIN_RETURN_IF_ERROR(
        WriteSafetensorsFile(JoinPath(o.output_dir, kFinalWeights),
                             {{"format", "pt"},
                              {"detrain.format", kWeightsFormat},
                              {"detrain.steps", std::to_string(sum.steps_done)}},
                             StateRefs(state, /*params_only=*/true)));
  }
  Report(o, RunProgress::kDone, sum.steps_done, sum.steps, sum.last_loss, sum.last_eval);
  return sum;
}

// What a rank says of itself before the first step: whether it compiled, and what.
json RankJson(const Cluster& c, const RunOptions& o, const Result<std::unique_ptr<RunSession>>& s) {
  json j = {{"rank", c.rank()},
            {"host", c.host()},
            {"devices", o.executor.devices},
            {"detrain", o.detrain_version}};
  if (!s.ok()) {
    j["error"] = s.status().message();
    return j;
  }
  j["stages"] = attest::Sha256Hex((*s)->stage_chain());
  json data = json::array();
  for (const auto& file : (*s)->compiled().dataset->file_sha256) data.push_back(file.second);
  j["data"] = data;
  return j;
}

// JSON for a message: never throws, whatever bytes a string holds.
std::string Text(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

// Every rank compiled the same stages from the same data, or the run stops before its first
// step — on every rank, with rank 0 naming the first rank that differs. Rank 0 gets the ranks'
// records (environment.json "processes").
Result<json> Handshake(Cluster& c, const RunOptions& o,
                       const Result<std::unique_ptr<RunSession>>& s) {
  constexpr int64_t kMaxRecord = 1 << 20;
  DETRAIN_ASSIGN_OR_RETURN(std::vector<std::string> all,
                           GatherToRankZero(c, Text(RankJson(c, o, s)), kMaxRecord));
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
  DETRAIN_ASSIGN_OR_RETURN(std::string agreed, BroadcastFromRankZero(c, verdict, kMaxRecord));
  if (!agreed.empty()) {
    if (!s.ok() && c.rank() == 0) return s.status();
    if (c.rank() != 0) return Cancelled(kStoppedByRankZero + agreed);
    return FailedPrecondition(agreed);
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

Result<RunSummary> RunOnRanks(const RunOptions& options, attest::DigestPolicy step_digest,
                              const std::function<Status()>& precheck, const RunLoop& loop) {
  Cluster* cluster = options.executor.cluster.get();
  if (cluster == nullptr || cluster->size() == 1) {
    if (precheck) DETRAIN_RETURN_IF_ERROR(precheck());
    DETRAIN_ASSIGN_OR_RETURN(std::unique_ptr<RunSession> s, OpenProgram(options, step_digest));
    return loop(*s, json());
  }
  Result<std::unique_ptr<RunSession>> s = OpenProgram(options, step_digest);
  DETRAIN_ASSIGN_OR_RETURN(json processes, Handshake(*cluster, options, s));
  if (cluster->rank() != 0) {  // a follower: serve the train step until rank 0 is done
    RunSummary sum;
    DETRAIN_ASSIGN_OR_RETURN(int64_t code, (*s)->trainer().Follow());
    sum.follower_exit_code = static_cast<int>(code);
    return sum;
  }
  const Status checked = precheck ? precheck() : Status::Ok();
  Result<RunSummary> r = !checked.ok() ? Result<RunSummary>(checked) : loop(**s, processes);
  // The followers wait for rank 0's next message — unless a transfer failed half-way, when
  // they wait for bytes instead and only aborting stops them (the caller's part).
  if (!cluster->broken()) {
    const ExitCode code = !r.ok()          ? ExitCode::kUsage
                          : r->stopped     ? ExitCode::kFailed
                          : r->interrupted ? ExitCode::kInterrupted
                                           : ExitCode::kOk;
    for (int f = 1; f < cluster->size(); ++f) {
      Status st = SendControl(*cluster, f, Control::kStop, ToInt(code));
      if (!st.ok()) {
        cluster->set_broken();
        if (r.ok()) return st;
      }
    }
  }
  return r;
}

Result<RunSummary> Train(const RunOptions& options) {
  return RunOnRanks(options, attest::DigestPolicy::kXxh3, nullptr,
                    [&options](RunSession& s, const json&) { return TrainLoop(options, s); });
}

}  // namespace detrain::runtime
