// The training section of `detrain diff` (diff.h): the step logs side by side, and the first
// differing element of the state (and batch) from checkpoints, the final weights or a replay.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>
#include <string_view>
#include <tuple>

#include "base/fs.h"
#include "base/safetensors.h"
#include "evidence/bundle/bundle_format.h"
#include "evidence/bundle/bundle_reader.h"
#include "evidence/diff/diff_internal.h"
#include "evidence/diff/text_diff.h"
#include "evidence/report/inspect.h"

namespace detrain::diff::internal {
namespace {

json RecordValues(const StepRecord& r) {
  json j = {{"epoch", r.epoch},
            {"batch", Hex(r.batch)},
            {"key", {r.key_hi, r.key_lo}},
            {"learning_rate", FloatText(r.learning_rate_bits)},
            {"loss", FloatText(r.loss_bits)},
            {"state", Hex(r.state)},
            {"hash", Hex(r.hash)}};
  if (r.params_root)
    j["roots"] = {{"params", Hex(*r.params_root)}, {"optimizer", Hex(*r.optimizer_root)}};
  if (r.eval_loss_bits) j["eval_loss"] = FloatText(*r.eval_loss_bits);
  if (r.eval_accuracy_bits) j["eval_accuracy"] = FloatText(*r.eval_accuracy_bits);
  return j;
}

// The fields in which two records of the same step differ in what the step computed. `roots`
// and `eval` count only where both records have them: whether a record has them follows the
// run's schedule (a checkpoint or the end follows it), not the step.
std::vector<std::string> ContentFields(const StepRecord& a, const StepRecord& b,
                                       std::vector<std::string>* tensors) {
  std::vector<std::string> f;
  if (a.epoch != b.epoch) f.push_back("epoch");
  if (a.batch != b.batch) f.push_back("batch");
  if (a.key_hi != b.key_hi || a.key_lo != b.key_lo) f.push_back("key");
  if (a.learning_rate_bits != b.learning_rate_bits) f.push_back("learning_rate");
  if (a.loss_bits != b.loss_bits) f.push_back("loss");
  if (a.state != b.state) f.push_back("state");
  std::map<std::string, std::string> tb(b.tensors.begin(), b.tensors.end());
  for (const auto& [name, digest] : a.tensors) {
    auto it = tb.find(name);
    if (it == tb.end() || it->second != digest) tensors->push_back(name);
  }
  std::set<std::string_view> in_a;
  for (const auto& entry : a.tensors) in_a.insert(entry.first);
  for (const auto& entry : b.tensors) {
    if (in_a.count(entry.first) == 0) tensors->push_back(entry.first);
  }
  if (!tensors->empty() && std::find(f.begin(), f.end(), "state") == f.end())
    f.push_back("tensors");
  if (a.params_root && b.params_root &&
      (*a.params_root != *b.params_root || *a.optimizer_root != *b.optimizer_root)) {
    f.push_back("roots");
  }
  if (a.eval_loss_bits && b.eval_loss_bits &&
      (*a.eval_loss_bits != *b.eval_loss_bits || a.eval_accuracy_bits != b.eval_accuracy_bits)) {
    f.push_back("eval");
  }
  return f;
}

// The replay context of a side: its bundle checked for integrity and recompiled (which finds
// its data). Made once; `problem` says why not.
bool EnsureReplayable(Side& s, const DiffOptions& o, std::map<std::string, std::string> files) {
  if (s.replay_tried) return s.replayable != nullptr;
  s.replay_tried = true;
  if (o.progress) o.progress("diff: " + s.label + ": checking and recompiling " + s.name);
  verify::VerifyOptions vo;
  vo.bundle = s.dir;
  vo.data_files = std::move(files);
  if (!o.data_dirs.empty()) vo.data_dir = o.data_dirs.front();
  vo.executor = o.executor;
  auto b = std::make_unique<Bundle>();
  b->dir = s.dir;
  if (Check c = Integrity(*b, vo)) {
    s.replay_problem = s.label + " does not pass verify's integrity check: " + c->message;
    return false;
  }
  auto r = std::make_unique<Replayable>();
  if (Check c = Recompile(*b, vo, r.get())) {
    s.replay_problem =
        s.label + " cannot be recompiled" +
        (c->outcome == verify::Outcome::kInputError ? std::string(" (its data?)") : "") + ": " +
        c->message;
    return false;
  }
  s.bundle = std::move(b);
  s.replayable = std::move(r);
  return true;
}

// The dataset files of a side as found for it (path as written -> file), for Recompile.
std::map<std::string, std::string> FoundFiles(const Side& s, const DiffOptions& o) {
  std::map<std::string, std::string> out;
  const json& files = JsonAt(s.data_record, {"files"});
  if (!files.is_array()) return out;
  for (const json& f : files) {
    std::string looked;
    const std::string p = LocateDataFile(s, f, o.data_dirs, &looked);
    if (!p.empty()) out[Str(JsonAt(f, {"path"}))] = p;
  }
  return out;
}

struct StepState {
  std::vector<SafeTensor> tensors;
  std::string source;  // where the state came from
  std::optional<runtime::Batch> batch;
};

// The state after step t of a side, from the bundle's files when they hold it, else by replay.
Result<StepState> StateAfter(Side& s, int64_t t, const DiffOptions& o, bool want_batch) {
  StepState out;
  const int64_t done = t + 1;
  const bool need_replay = want_batch || (!s.checkpoints.count(done) &&
                                          done != static_cast<int64_t>(s.steps.records.size()));
  if (!need_replay && s.checkpoints.count(done)) {
    Result<SafetensorsFile> f = bundle::ReadBundleSafetensors(s.dir, s.checkpoints.at(done));
    if (f.ok()) {
      out.tensors = std::move(f->tensors);
      out.source = s.checkpoints.at(done);
      return out;
    }
  }
  if (!need_replay) {  // the final weights: the parameters after the last step
    Result<SafetensorsFile> f = bundle::ReadBundleSafetensors(s.dir, bundle::kFinalWeights);
    if (f.ok()) {
      out.tensors = std::move(f->tensors);
      out.source = std::string(bundle::kFinalWeights) + " (parameters only)";
      return out;
    }
  }
  if (!o.replay) return InvalidArgument("replay is off (--no-replay)");
  if (!EnsureReplayable(s, o, FoundFiles(s, o))) return InvalidArgument(s.replay_problem);
  const BundleRun run(*s.bundle);
  Result<std::unique_ptr<runtime::Replica>> replica = s.replayable->session->NewReplica(o.executor);
  if (!replica.ok()) return replica.status();
  ThreadPool pool(1);
  const std::vector<StepRecord>& recs = s.bundle->steps.records;
  auto check = [&](int64_t u, const runtime::StepOutcome& step) {
    if (!step.finite || step.record.hash != recs[static_cast<size_t>(u)].hash) {
      return InvalidArgument(s.label + ": replaying step " + std::to_string(u) +
                             " does not give its record (the bundle does not verify)");
    }
    return Status::Ok();
  };
  int64_t start = 0;
  auto report = [&](int64_t from) {
    start = from;
    if (o.progress) {
      o.progress("diff: " + s.label + ": replaying steps " + std::to_string(from) + ".." +
                 std::to_string(t));
    }
  };
  DETRAIN_ASSIGN_OR_RETURN(runtime::TrainState state,
                           (*replica)->StateAfter(t, run, check, report, &pool));
  if (want_batch) {
    Result<runtime::Batch> batch = (*replica)->data().BatchOf(t);
    if (!batch.ok()) return batch.status();
    out.batch = std::move(*batch);
  }
  out.tensors = runtime::StateFile(state, {}).tensors;
  out.source = "replay from " +
               (start == 0 ? std::string("the initial state") : s.bundle->checkpoints.at(start));
  return out;
}

// A 4-byte element as text: a float with its bits, or an s32.
std::string WordText(ir::ElementType type, const char* p) {
  if (type == ir::ElementType::kF32) {
    uint32_t bits;
    std::memcpy(&bits, p, 4);
    return FloatText(bits);
  }
  int32_t v;
  std::memcpy(&v, p, 4);
  return std::to_string(v);
}

// The first tensor (in A's order) and element where two states differ.
json ElementDifference(const std::vector<SafeTensor>& a, const std::vector<SafeTensor>& b) {
  for (const SafeTensor& x : a) {
    const SafeTensor* y = nullptr;
    for (const SafeTensor& t : b) {
      if (t.name == x.name) y = &t;
    }
    if (y == nullptr) continue;
    if (x.dtype != y->dtype || x.shape != y->shape || x.data.size() != y->data.size()) {
      if (x.data == y->data && x.dtype == y->dtype && x.shape == y->shape) continue;
      return {{"tensor", Printable(x.name, kMaxValueText)},
              {"problem", "the tensor has dtype " + x.dtype + " in A and " + y->dtype +
                              " in B, or another shape"}};
    }
    if (x.data == y->data) continue;
    // A state's tensors are f32 or s32 (4-byte words); anything else is compared bytewise.
    const std::optional<ir::ElementType> type = ir::ElementTypeFromSafetensors(x.dtype);
    const bool word = type == ir::ElementType::kF32 || type == ir::ElementType::kS32;
    const size_t width = word ? 4 : 1;
    int64_t differing = 0, first = -1;
    for (size_t i = 0; i + width <= x.data.size(); i += width) {
      if (std::memcmp(x.data.data() + i, y->data.data() + i, width) != 0) {
        if (first < 0) first = static_cast<int64_t>(i / width);
        ++differing;
      }
    }
    const size_t off = static_cast<size_t>(first) * width;
    json j = {{"tensor", Printable(x.name, kMaxValueText)},
              {"shape", x.shape},
              {"flat_index", first},
              {"index", IndexText(first, x.shape)},
              {"differing_elements", differing},
              {"elements", static_cast<int64_t>(x.data.size() / width)}};
    if (width == 4) {
      j["a"] = WordText(*type, x.data.data() + off);
      j["b"] = WordText(*type, y->data.data() + off);
    } else {
      j["a"] = static_cast<int>(static_cast<unsigned char>(x.data[off]));
      j["b"] = static_cast<int>(static_cast<unsigned char>(y->data[off]));
    }
    return j;
  }
  return json();
}

// The first element where the two batches of a step differ: its row in the batch, the dataset
// row it came from on each side, and both values.
json BatchDifference(const runtime::Batch& a, const runtime::Batch& b) {
  json j = {{"rows_a_first", json::array()}, {"rows_b_first", json::array()}};
  for (size_t i = 0; i < a.rows.size() && i < 8; ++i) j["rows_a_first"].push_back(a.rows[i]);
  for (size_t i = 0; i < b.rows.size() && i < 8; ++i) j["rows_b_first"].push_back(b.rows[i]);
  int64_t differing_rows = 0;
  for (size_t i = 0; i < a.rows.size() && i < b.rows.size(); ++i)
    differing_rows += a.rows[i] != b.rows[i];
  j["differing_row_ids"] = differing_rows;
  for (const auto& [name, x, y] : {std::tuple<const char*, const ir::Literal*, const ir::Literal*>{
                                       "features", &a.features, &b.features},
                                   {"labels", &a.labels, &b.labels}}) {
    if (x->bytes() == y->bytes()) continue;
    const int width = ir::ElementTypeByteSize(x->shape().type());
    if (x->shape() != y->shape() || width != 4) {
      j["first"] = {{"tensor", name}, {"problem", "the batches have other shapes or types"}};
      return j;
    }
    const std::string& bx = x->bytes();
    const std::string& by = y->bytes();
    for (size_t i = 0; i + 4 <= bx.size(); i += 4) {
      if (std::memcmp(bx.data() + i, by.data() + i, 4) == 0) continue;
      const int64_t flat = static_cast<int64_t>(i / 4);
      const std::vector<int64_t>& dims = x->shape().dims();
      const int64_t per_row = dims.empty() || dims[0] == 0 ? 1 : x->element_count() / dims[0];
      const int64_t row = flat / std::max<int64_t>(per_row, 1);
      const ir::ElementType type = x->shape().type();
      j["first"] = {{"tensor", name},
                    {"batch_row", row},
                    {"index", IndexText(flat, dims)},
                    {"data_row_a", row < static_cast<int64_t>(a.rows.size())
                                       ? json(a.rows[static_cast<size_t>(row)])
                                       : json()},
                    {"data_row_b", row < static_cast<int64_t>(b.rows.size())
                                       ? json(b.rows[static_cast<size_t>(row)])
                                       : json()},
                    {"a", WordText(type, bx.data() + i)},
                    {"b", WordText(type, by.data() + i)}};
      return j;
    }
  }
  return j;
}

}  // namespace

json TrainingSection(Side& a, Side& b, const DiffOptions& o) {
  const std::vector<StepRecord>& ra = a.steps.records;
  const std::vector<StepRecord>& rb = b.steps.records;
  const size_t n = std::min(ra.size(), rb.size());
  json j = {{"steps_a", ra.size()},
            {"steps_b", rb.size()},
            {"genesis_a", Hex(a.steps.genesis)},
            {"genesis_b", Hex(b.steps.genesis)},
            {"same_genesis", a.steps.genesis == b.steps.genesis},
            {"state_digest_a", std::string(bundle::DigestPolicyName(a.steps.policy))},
            {"state_digest_b", std::string(bundle::DigestPolicyName(b.steps.policy))}};
  if (!a.steps_problem.empty()) j["problem_a"] = a.steps_problem;
  if (!b.steps_problem.empty()) j["problem_b"] = b.steps_problem;
  int64_t first_chain = -1, first_content = -1;
  std::vector<std::string> fields, tensors;
  for (size_t t = 0; t < n; ++t) {
    if (first_chain < 0 && ra[t].hash != rb[t].hash) first_chain = static_cast<int64_t>(t);
    if (first_content < 0) {
      std::vector<std::string> names;
      std::vector<std::string> f = ContentFields(ra[t], rb[t], &names);
      if (!f.empty()) {
        first_content = static_cast<int64_t>(t);
        fields = std::move(f);
        tensors = std::move(names);
      }
    }
    if (first_chain >= 0 && first_content >= 0) break;
  }
  j["first_chain_difference"] = first_chain < 0 ? json() : json(first_chain);
  if (first_chain >= 0) {
    std::string why;
    if (first_chain == 0 && a.steps.genesis != b.steps.genesis) {
      why =
          "the chains start from different genesis hashes, which commit to the stage chain "
          "and the initial state";
    } else if (first_content == first_chain) {
      why = "the step computed something else";
    } else {
      why =
          "the same step content; the records differ in what the schedule adds (roots at a "
          "checkpoint or the end, an evaluation) or in an earlier link of the chain";
    }
    j["first_chain_reason"] = why;
  }
  j["same"] = ra.size() == rb.size() && first_chain < 0 && a.steps.genesis == b.steps.genesis &&
              a.steps_problem.empty() && b.steps_problem.empty() &&
              JsonAt(a.manifest, {"final"}) == JsonAt(b.manifest, {"final"});
  if (first_content < 0) {
    j["first_content_difference"] = json();
    if (ra.size() != rb.size()) {
      const bool a_shorter = ra.size() < rb.size();
      j["prefix"] = a_shorter ? "a" : "b";
      j["prefix_text"] = std::string(a_shorter ? "A" : "B") + "'s " + std::to_string(n) +
                         " steps are the first " + std::to_string(n) + " of " +
                         (a_shorter ? "B" : "A") + "'s " +
                         std::to_string(std::max(ra.size(), rb.size())) +
                         " (the same batches, keys, learning rates, losses and states)";
    }
  } else {
    const auto t = static_cast<size_t>(first_content);
    json at = {{"step", first_content},
               {"fields", fields},
               {"tensors", tensors},
               {"a", RecordValues(ra[t])},
               {"b", RecordValues(rb[t])}};
    at["state_before_same"] = t == 0 ? json(a.steps.genesis == b.steps.genesis)
                                     : json(ra[t - 1].state == rb[t - 1].state);
    // The first differing element of the state after the step (and of the batch).
    const bool state_differs = std::find(fields.begin(), fields.end(), "state") != fields.end() ||
                               std::find(fields.begin(), fields.end(), "tensors") != fields.end();
    const bool batch_differs = std::find(fields.begin(), fields.end(), "batch") != fields.end();
    if (state_differs || batch_differs) {
      Result<StepState> sa = StateAfter(a, first_content, o, batch_differs);
      Result<StepState> sb = StateAfter(b, first_content, o, batch_differs);
      std::string batch_problem;  // why the batches could not be compared
      if (!sa.ok() && batch_differs) {
        batch_problem = std::string(sa.status().message());
        sa = StateAfter(a, first_content, o, false);
      }
      if (!sb.ok() && batch_differs) {
        if (batch_problem.empty()) batch_problem = std::string(sb.status().message());
        sb = StateAfter(b, first_content, o, false);
      }
      if (sa.ok() && sb.ok()) {
        at["state_source_a"] = sa->source;
        at["state_source_b"] = sb->source;
        if (state_differs) {
          json e = ElementDifference(sa->tensors, sb->tensors);
          if (e.is_null()) {
            at["element_note"] = "the tensors available (" + sa->source + ", " + sb->source +
                                 ") are equal; the difference is in the others";
          } else {
            at["element"] = e;
          }
        }
        if (sa->batch && sb->batch) at["batch_element"] = BatchDifference(*sa->batch, *sb->batch);
      } else {
        at["element_note"] = "cannot find the first differing element: " +
                             Printable(std::string((sa.ok() ? sb : sa).status().message()), 4096);
      }
      if (batch_differs && !at.contains("batch_element") && !at.contains("element_note")) {
        at["batch_note"] = "the batches' rows were not compared (they need each bundle's data " +
                           std::string("and a replay)") +
                           (batch_problem.empty() ? "" : ": " + Printable(batch_problem, 4096));
      }
    }
    j["first_content_difference"] = at;
  }
  // The curves.
  for (const auto& [key, side] : {std::pair<const char*, const Side*>{"a", &a}, {"b", &b}}) {
    json loss = json::array(), eval = json::array();
    for (const StepRecord& r : side->steps.records) {
      const float v = bundle::FloatOfBits(r.loss_bits);
      loss.push_back({r.step, std::isfinite(v) ? json(static_cast<double>(v)) : json()});
      if (r.eval_loss_bits) {
        const float e = bundle::FloatOfBits(*r.eval_loss_bits);
        eval.push_back({r.step, std::isfinite(e) ? json(static_cast<double>(e)) : json()});
      }
    }
    j["loss_" + std::string(key)] = loss;
    j["eval_loss_" + std::string(key)] = eval;
  }
  return j;
}

}  // namespace detrain::diff::internal
