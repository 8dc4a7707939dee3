// See verifier.h. Each phase is a function that returns OK or the failure it found; the first
// failure ends verification. integrity.cc and recompile.cc hold the first two phases; this file
// holds replay and the report.
#include "evidence/verify/verifier.h"

#include <atomic>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <string_view>

#include "attest/canonical_json.h"
#include "base/budget.h"
#include "base/exit_code.h"
#include "base/fs.h"
#include "compiler/passes/pipeline.h"
#include "compiler/plan/schema.h"
#include "evidence/verify/verifier_internal.h"
#include "runtime/cuda/cuda_backend.h"

namespace detrain::verify {
namespace {

using namespace internal;  // NOLINT: the phases' shared vocabulary

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

// ---- replay ---------------------------------------------------------------------------------

// The first field of `got` that differs from the recorded `want`, described with the record's
// line in steps.jsonl and the field's name; "" when equal.
std::string CompareRecords(const StepRecord& want, const StepRecord& got) {
  const std::string step = "steps.jsonl line " + std::to_string(want.step + 2) + ": step " +
                           std::to_string(want.step) + ": ";
  auto field = [&](const char* name, const std::string& what) {
    return step + what + " (field \"" + name + "\")";
  };
  auto bits = [](const std::optional<uint32_t>& b) { return b ? FloatText(*b) : "none"; };
  if (want.epoch != got.epoch) {
    return field("epoch", "epoch recorded " + std::to_string(want.epoch) + ", replayed " +
                              std::to_string(got.epoch));
  }
  if (want.batch != got.batch)
    return field("batch", "the batch differs (the rows or their values)");
  if (want.key_hi != got.key_hi || want.key_lo != got.key_lo) {
    return field("key", "the step key differs");
  }
  if (want.learning_rate_bits != got.learning_rate_bits) {
    return field("learning_rate_bits", "learning rate recorded " +
                                           FloatText(want.learning_rate_bits) + ", replayed " +
                                           FloatText(got.learning_rate_bits));
  }
  if (want.loss_bits != got.loss_bits) {
    return field("loss_bits", "loss recorded " + FloatText(want.loss_bits) + ", replayed " +
                                  FloatText(got.loss_bits));
  }
  for (size_t i = 0; i < want.tensors.size() && i < got.tensors.size(); ++i) {
    if (want.tensors[i] != got.tensors[i]) {
      const std::string name = "tensors." + want.tensors[i].first;
      return field(name.c_str(), "tensor " + want.tensors[i].first +
                                     " differs after the step (digest " +
                                     Hex(want.tensors[i].second) + " recorded, " +
                                     Hex(got.tensors[i].second) + " replayed)");
    }
  }
  if (want.tensors.size() != got.tensors.size()) {
    return field("tensors", "the state has other tensors");
  }
  if (want.state != got.state) return field("state", "the state digest differs");
  if (want.params_root != got.params_root || want.optimizer_root != got.optimizer_root) {
    return field("roots", "the SHA-256 roots of the state differ");
  }
  if (want.eval_loss_bits != got.eval_loss_bits) {
    return field("eval.loss_bits", "eval loss recorded " + bits(want.eval_loss_bits) +
                                       ", replayed " + bits(got.eval_loss_bits));
  }
  if (want.eval_accuracy_bits != got.eval_accuracy_bits) {
    return field("eval.accuracy_bits", "eval accuracy recorded " + bits(want.eval_accuracy_bits) +
                                           ", replayed " + bits(got.eval_accuracy_bits));
  }
  if (want.hash != got.hash) return field("hash", "the step hash differs");
  return "";
}

// For a mismatch whose step is followed by a checkpoint: the first differing element.
std::string ElementDifference(const runtime::TrainState& state, const SafetensorsFile& f) {
  const std::map<std::string_view, const SafeTensor*> by_name = TensorsByName(f);
  for (const runtime::StateTensor& s : state) {
    auto it = by_name.find(s.name);
    if (it == by_name.end() || it->second->data.size() != s.value.bytes().size()) continue;
    const std::string& a = it->second->data;
    const std::string& b = s.value.bytes();
    for (size_t i = 0; i + 4 <= a.size(); i += 4) {
      if (std::memcmp(a.data() + i, b.data() + i, 4) != 0) {
        uint32_t x, y;
        std::memcpy(&x, a.data() + i, 4);
        std::memcpy(&y, b.data() + i, 4);
        return "; first differing element: " + s.name + "[" + std::to_string(i / 4) +
               "] (flat index) recorded " + FloatText(x) + ", replayed " + FloatText(y);
      }
    }
  }
  return "";
}

struct Segment {
  int64_t begin = 0, end = 0;  // steps [begin, end)
};

struct SegmentResult {
  int64_t first_bad = -1;  // step of the first mismatch (SegmentVerdict's values)
  std::string message;
  int64_t replayed = 0;
  bool exhausted = false;  // with kCannotReplayHere: the memory budget's (its message says so)
};

SegmentResult ReplaySegment(const Bundle& b, const Replayable& r, const VerifyOptions& o,
                            const Segment& seg, bool confirm_stop) {
  SegmentResult out;
  auto fail = [&](int64_t step, std::string m) {
    out.first_bad = step;
    out.message = std::move(m);
    return out;
  };
  // An error of this machine or the options (kUnavailable) or of the memory budget
  // (kResourceExhausted) is no mismatch: the segment could not run here.
  auto failed = [&](int64_t step, const Status& s, const std::string& prefix = "") {
    const bool here =
        s.code() == StatusCode::kUnavailable || s.code() == StatusCode::kResourceExhausted;
    out.exhausted = s.code() == StatusCode::kResourceExhausted;
    return fail(here ? internal::kCannotReplayHere : step, prefix + std::string(s.message()));
  };
  Result<std::unique_ptr<runtime::Replica>> replica = r.session->NewReplica(o.executor);
  if (!replica.ok()) return failed(seg.begin, replica.status());
  const BundleRun run(b);
  Result<runtime::TrainState> start = (*replica)->StartState(seg.begin, run);
  if (!start.ok()) return failed(seg.begin, start.status());
  runtime::TrainState state = std::move(*start);
  ThreadPool pool(1);
  const std::vector<StepRecord>& recs = b.steps.records;
  for (int64_t t = seg.begin; t < seg.end; ++t) {
    Result<runtime::StepOutcome> step =
        (*replica)->Step(t, run.HashBefore(t), &state, &pool, /*keep=*/true);
    if (!step.ok()) return failed(t, step.status(), "step " + std::to_string(t) + ": ");
    if (!step->finite) {
      return fail(t, "step " + std::to_string(t) + ": replay gives a non-finite result (" +
                         step->nonfinite + "); the run recorded a finite loss");
    }
    std::string diff = CompareRecords(recs[static_cast<size_t>(t)], step->record);
    if (!diff.empty()) {
      auto next = b.checkpoints.find(t + 1);
      if (next != b.checkpoints.end() && (*replica)->Sync(&state).ok()) {
        Result<SafetensorsFile> f = bundle::ReadBundleSafetensors(b.dir, next->second);
        if (f.ok()) diff += ElementDifference(state, *f);
      }
      return fail(t, diff);
    }
    ++out.replayed;
  }
  if (Status synced = (*replica)->Sync(&state); !synced.ok()) return failed(seg.end - 1, synced);
  if (seg.end == static_cast<int64_t>(recs.size())) {
    // The state after the last step is the one manifest.json's final roots (and so the final
    // weights) name.
    Result<std::pair<Digest256, Digest256>> roots = runtime::StateRoots(state, &pool);
    const Manifest::Final& fin = b.manifest.final;
    if (!roots.ok() || Hex(roots->first) != fin.params_root ||
        Hex(roots->second) != fin.optimizer_root) {
      return fail(seg.end - 1,
                  "the replayed final state is not manifest.json's (final "
                  "params_root or optimizer_root differ)");
    }
  }
  if (confirm_stop) {
    const int64_t t = seg.end;
    Result<runtime::StepOutcome> step = (*replica)->Step(t, run.HashBefore(t), &state, &pool);
    if (!step.ok() || step->finite) {
      return fail(t, "step " + std::to_string(t) +
                         ": the bundle says the run stopped on a non-finite loss here, but the "
                         "replayed loss is finite");
    }
    const std::string reason = "step " + std::to_string(t) + ": " + step->nonfinite;
    if (reason != b.manifest.stop_reason) {
      return fail(t, "manifest.json's stop reason is \"" + b.manifest.stop_reason +
                         "\"; replay gives \"" + reason + "\"");
    }
  }
  return out;
}

Check Replay(const Bundle& b, const Replayable& r, const VerifyOptions& o, int64_t* replayed) {
  const int64_t n = static_cast<int64_t>(b.steps.records.size());
  int64_t from = o.from_step.value_or(0), to = o.to_step.value_or(n);
  if (from < 0 || to > n || from > to) {
    return InputError("--steps " + std::to_string(from) + ":" + std::to_string(to) +
                      " is outside the bundle's steps 0:" + std::to_string(n));
  }
  // Start at the nearest checkpoint at or before `from`.
  int64_t start = 0;
  for (const auto& [done, path] : b.checkpoints) {
    if (done <= from) start = done;
  }
  std::vector<Segment> segments;
  int64_t begin = start;
  for (const auto& [done, path] : b.checkpoints) {
    if (done > begin && done < to) {
      segments.push_back({begin, done});
      begin = done;
    }
  }
  const bool confirm_stop = b.stopped && to == n;
  // An empty last segment still confirms a stop (a run stopped at step 0 has no records).
  if (begin < to || (confirm_stop && segments.empty())) segments.push_back({begin, to});
  if (segments.empty()) return std::nullopt;
  std::vector<SegmentResult> results(segments.size());
  // Across ranks: segment i is rank (i mod P)'s.
  runtime::Cluster* c = o.cluster != nullptr && o.cluster->size() > 1 ? o.cluster.get() : nullptr;
  const size_t ranks = c != nullptr ? static_cast<size_t>(c->size()) : 1;
  const size_t rank = c != nullptr ? static_cast<size_t>(c->rank()) : 0;
  std::vector<size_t> mine;
  for (size_t i = rank; i < segments.size(); i += ranks) mine.push_back(i);
  std::atomic<size_t> done{0};
  // Each segment's trainer holds a training state and the plan's buffers: no more run at once
  // than the memory budget holds (one always may: recompiling accounted for one).
  const int64_t each = std::max<int64_t>(1, driver::TrainerBytes(r.session->compiled()));
  const int64_t fit = std::max<int64_t>(1, CurrentMemoryBudget().max_total_bytes / each);
  const int jobs = static_cast<int>(std::min<int64_t>(o.jobs, fit));
  ThreadPool pool(static_cast<size_t>(
      std::max(1, std::min<int>(jobs, static_cast<int>(std::max<size_t>(1, mine.size()))))));
  std::mutex mu;
  pool.ParallelFor(mine.size(), [&](size_t j) {
    const size_t i = mine[j];
    results[i] = ReplaySegment(b, r, o, segments[i], confirm_stop && i + 1 == segments.size());
    size_t k = ++done;
    if (o.progress) {
      std::lock_guard<std::mutex> lock(mu);
      o.progress("replay: segment " + std::to_string(k) + "/" + std::to_string(segments.size()) +
                 " (steps " + std::to_string(segments[i].begin) + ".." +
                 std::to_string(segments[i].end - 1) + ") " +
                 (results[i].first_bad == -1                            ? "ok"
                  : results[i].first_bad == internal::kCannotReplayHere ? "NOT RUN"
                                                                        : "MISMATCH") +
                 (c != nullptr ? " on rank " + std::to_string(rank) : ""));
    }
  });
  if (c != nullptr) {  // the followers' verdicts, to rank 0
    constexpr int64_t kMaxVerdicts = 64 << 20;
    json verdicts = json::array();
    for (size_t i : mine) {
      verdicts.push_back({i, results[i].first_bad, results[i].message, results[i].replayed});
    }
    Result<std::vector<std::string>> all = runtime::GatherToRankZero(
        *c, verdicts.dump(-1, ' ', false, json::error_handler_t::replace), kMaxVerdicts);
    if (!all.ok()) return Fail(std::string(all.status().message()));
    for (size_t q = 1; q < all->size(); ++q) {
      std::vector<SegmentVerdict> theirs;
      if (Status st = ReadSegmentVerdicts((*all)[q], q, ranks, segments.size(), &theirs);
          !st.ok()) {
        return Fail(c->Describe(static_cast<int>(q)) + ": " + std::string(st.message()));
      }
      for (SegmentVerdict& v : theirs) {
        SegmentResult& res = results[v.segment];
        res.first_bad = v.first_bad;
        res.message = std::move(v.message);
        res.replayed = v.replayed;
      }
    }
  }
  *replayed = 0;
  for (const SegmentResult& s : results) {
    if (s.first_bad == internal::kCannotReplayHere) {
      return InputError(s.exhausted ? s.message : s.message + kNotAVerdict);
    }
  }
  for (const SegmentResult& s : results) {
    *replayed += s.replayed;
    if (s.first_bad >= 0) return Fail(s.message);  // segments are in step order
  }
  // The last segment's final state is the recorded final state (its record has the roots).
  return std::nullopt;
}

}  // namespace

Status internal::ReadSegmentVerdicts(std::string_view text, size_t rank, size_t ranks,
                                     size_t segments, std::vector<SegmentVerdict>* out) {
  Result<json> parsed = attest::ParseJson(text);
  if (!parsed.ok()) return DataLoss("unreadable verdicts (" + parsed.status().message() + ")");
  if (!parsed->is_array() || parsed->size() > segments)
    return DataLoss("verdicts: expected an array of at most " + std::to_string(segments));
  for (const json& e : *parsed) {
    // [segment, first bad step (-1: none), message, steps replayed]
    if (!e.is_array() || e.size() != 4 || !e[0].is_number_unsigned() ||
        e[0].get<uint64_t>() >= segments || e[0].get<uint64_t>() % ranks != rank ||
        !e[1].is_number_integer() || e[1].get<int64_t>() < kCannotReplayHere || !e[2].is_string() ||
        !e[3].is_number_integer() || e[3].get<int64_t>() < 0) {
      return DataLoss("a verdict that is not [segment of this rank, step, message, replayed]");
    }
    out->push_back({static_cast<size_t>(e[0].get<uint64_t>()), e[1].get<int64_t>(),
                    e[2].get<std::string>(), e[3].get<int64_t>()});
  }
  return Status::Ok();
}

int VerifyReport::ExitCode() const {
  switch (outcome) {
    case Outcome::kVerified:
      return ToInt(detrain::ExitCode::kOk);
    case Outcome::kInputError:
      return ToInt(detrain::ExitCode::kUsage);
    case Outcome::kFailed:
    case Outcome::kIncomplete:
      return ToInt(detrain::ExitCode::kFailed);
  }
  return ToInt(detrain::ExitCode::kFailed);
}

namespace {

json AttestationsJson(const std::vector<sign::AttestationCheck>& checked) {
  json out = json::array();
  for (const sign::AttestationCheck& a : checked) {
    json j = {{"file", a.file}, {"predicate_type", a.predicate_type}};
    if (!a.signer.empty()) j["signer"] = a.signer;
    if (!a.detail.empty()) j["detail"] = a.detail;
    out.push_back(std::move(j));
  }
  return out;
}

}  // namespace

BackendGeneration CurrentBackend() {
  return {passes::kDefaultPipeline, plan::kPlanFormatVersion, {}, plan::kOldestPlanFormatVersion};
}

std::string BackendGap(const BackendGeneration& backend, const std::string& pipeline,
                       int64_t plan_format_version) {
  const std::string why = passes::PipelineGap(pipeline, backend.retired_passes);
  std::string gap;
  if (!why.empty()) {
    gap = "the recorded pipeline \"" + pipeline + "\" is not one this detrain runs (" + why +
          "); this detrain's is \"" + backend.default_pipeline + "\"";
  }
  const int64_t oldest = backend.oldest_plan_format_version < 0
                             ? backend.plan_format_version
                             : backend.oldest_plan_format_version;
  if (plan_format_version < oldest || plan_format_version > backend.plan_format_version) {
    gap +=
        std::string(gap.empty() ? "" : "; ") + "the recorded plan format is " +
        std::to_string(plan_format_version) + ", this detrain writes plan format" +
        (oldest == backend.plan_format_version ? " " + std::to_string(oldest)
                                               : "s " + std::to_string(oldest) + " to " +
                                                     std::to_string(backend.plan_format_version));
  }
  // A recorded spec is bundle input: a note quotes it, but not without bound.
  constexpr size_t kMaxGap = 4096;
  if (gap.size() > kMaxGap) gap = gap.substr(0, kMaxGap) + "... (cut)";
  return gap;
}

json VerifyReport::ToJson() const {
  static const char* kNames[] = {"verified", "failed", "incomplete", "input-error"};
  json phases_json = json::array();
  for (const PhaseReport& p : phases) {
    json phase = {{"phase", p.name},
                  {"ok", p.ok},
                  {"message", p.message},
                  {"seconds", p.seconds},
                  {"notes", p.notes}};
    if (p.name == "recompile" && p.ok) {
      phase["stages_reproduced"] = p.stages_reproduced;
      phase["stages_not_reproduced"] = p.stages_not_reproduced;
    }
    phases_json.push_back(std::move(phase));
  }
  return {{"format", "detrain.verify-report"},
          {"format_version", 1},
          {"outcome", kNames[static_cast<int>(outcome)]},
          {"exit_code", ExitCode()},
          {"message", message},
          {"phases", phases_json},
          {"steps", steps},
          {"steps_replayed", steps_replayed},
          {"status", status},
          {"final_step_hash", final_step_hash},
          {"root_digest", root_digest},
          {"attestations", AttestationsJson(attestations)}};
}

namespace {

// Verification on one rank; `before_replay` returns why the replay cannot start (another rank
// stopped), or "".
VerifyReport VerifyOnRank(const VerifyOptions& o,
                          const std::function<std::string()>& before_replay) {
  VerifyReport report;
  Bundle b;
  b.dir = o.bundle;
  while (b.dir.size() > 1 && b.dir.back() == '/') b.dir.pop_back();
  std::string notes;  // every passing phase's notes, for the report's message
  auto run_phase = [&](const char* name, const std::function<Check()>& fn,
                       const std::vector<std::string>* phase_notes = nullptr) {
    if (o.progress) o.progress(std::string(name) + ": ...");
    auto start = std::chrono::steady_clock::now();
    Check c = fn();
    PhaseReport p;
    p.name = name;
    p.ok = !c.has_value();
    p.seconds = Seconds(start);
    p.message = c.has_value() ? c->message : "ok";
    if (p.ok && phase_notes != nullptr) {
      p.notes = *phase_notes;
      for (const std::string& n : p.notes) {
        p.message += "; " + n;
        notes += "; " + n;
        if (o.progress) o.progress(std::string(name) + ": note: " + n);
      }
    }
    report.phases.push_back(p);
    if (c.has_value()) {
      report.outcome = c->outcome;
      report.message = c->message;
    }
    if (o.progress) {
      char secs[32];
      std::snprintf(secs, sizeof(secs), "%.2f s", p.seconds);
      const char* result = p.ok                                 ? "ok"
                           : c->outcome == Outcome::kInputError ? "stopped (input error)"
                                                                : "FAILED";
      o.progress(std::string(name) + ": " + result + " (" + secs + ")");
    }
    return p.ok;
  };
  // The replay's backend, before any work: a machine without it says so at once, as an error of
  // the options (no verdict).
  if (o.replay && o.executor.backend == runtime::Backend::kCuda &&
      !runtime::cuda::HasGpuSystem(o.executor.backend_options.get())) {
    if (Result<int> gpus = runtime::cuda::CountDriverGpus(); !gpus.ok()) {
      report.outcome = Outcome::kInputError;
      report.message = "--backend cuda: " + std::string(gpus.status().message()) + kNotAVerdict;
      return report;
    }
  }
  if (!run_phase("integrity", [&] { return Integrity(b, o); })) return report;
  report.steps = static_cast<int64_t>(b.steps.records.size());
  report.root_digest = b.root_digest;
  report.final_step_hash = b.manifest.final.step_hash;
  report.status = b.manifest.stopped ? "stopped" : "complete";
  if (!o.trusted_keys.empty() || PathExists(JoinPath(b.dir, sign::kAttestationDir))) {
    std::vector<std::string> signature_notes;
    if (!run_phase(
            "signatures",
            [&]() -> Check {
              sign::AttestationReport a =
                  sign::CheckAttestations(b.dir, b.root_digest, o.trusted_keys);
              report.attestations = a.checked;
              signature_notes = a.notes;
              if (!a.ok) return Fail(a.message);
              return std::nullopt;
            },
            &signature_notes)) {
      return report;
    }
  }
  Replayable r;
  if (o.recompile || o.replay) {
    if (!run_phase(
            "recompile",
            [&] {
              Check c = Recompile(b, o, &r);
              if (!c.has_value() && !o.replay) c = CheckAllCheckpoints(b, r);
              return c;
            },
            &r.notes)) {
      return report;
    }
    report.phases.back().stages_reproduced = r.stages_reproduced;
    report.phases.back().stages_not_reproduced = r.stages_not_reproduced;
  }
  if (o.replay) {
    if (!run_phase("replay", [&]() -> Check {
          if (std::string why = before_replay(); !why.empty()) return Fail(why);
          return Replay(b, r, o, &report.steps_replayed);
        })) {
      return report;
    }
  }
  report.outcome = Outcome::kVerified;
  report.message =
      "verified: " + std::to_string(report.steps) + " steps" +
      (o.replay      ? ", " + std::to_string(report.steps_replayed) + " replayed"
       : o.recompile ? ", recompiled, not replayed"
                     : ", integrity only (not recompiled, not replayed)") +
      (report.status == "stopped" ? "; the run stopped: " + b.manifest.stop_reason : "") +
      "; final step hash " + report.final_step_hash + notes;
  return report;
}

}  // namespace

VerifyReport VerifyBundle(const VerifyOptions& o) {
  runtime::Cluster* c = o.cluster != nullptr && o.cluster->size() > 1 ? o.cluster.get() : nullptr;
  if (c == nullptr) return VerifyOnRank(o, [] { return std::string(); });
  // Every rank says whether it reached the replay; rank 0 decides for all, once.
  constexpr int64_t kMaxState = 1 << 20;
  bool synced = false;
  auto sync = [&](const std::string& mine) -> std::string {
    synced = true;
    Result<std::vector<std::string>> all = runtime::GatherToRankZero(*c, mine, kMaxState);
    if (!all.ok()) return std::string(all.status().message());
    std::string verdict;
    for (size_t q = 0; q < all->size() && verdict.empty(); ++q) {
      if ((*all)[q] == "ready") continue;
      verdict = q == 0
                    ? "rank 0 stopped before the replay"
                    : c->Describe(static_cast<int>(q)) + " stopped before the replay: " + (*all)[q];
    }
    Result<std::string> agreed = runtime::BroadcastFromRankZero(*c, verdict, kMaxState);
    return agreed.ok() ? *agreed : std::string(agreed.status().message());
  };
  VerifyReport report = VerifyOnRank(o, [&] { return sync("ready"); });
  if (!synced) sync(report.message.empty() ? "stopped" : report.message);
  // Rank 0's outcome is the run's: followers exit with it.
  Result<std::string> outcome =
      runtime::BroadcastFromRankZero(*c, std::to_string(static_cast<int>(report.outcome)), 16);
  if (c->rank() != 0) {
    if (outcome.ok() && (*outcome == "0" || *outcome == "1" || *outcome == "2" || *outcome == "3"))
      report.outcome = static_cast<Outcome>(std::stoi(*outcome));
    else
      report.outcome = Outcome::kFailed;
  }
  return report;
}

}  // namespace detrain::verify
