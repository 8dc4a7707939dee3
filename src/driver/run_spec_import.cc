// The run spec path of the compile driver (compile.h; frontend/run_spec.h; schemas/run-spec.md):
// an exported train step becomes a detrain program.
//
//   stage 0  program  the run spec's bytes (00.program.json)
//   stage 1  source   "// detrain.imported-step.v1\n// config C\n// spec S\n" + the HLO file in
//                     canonical form; C is the resolved configuration (as a .dt program's stage 1
//                     header), S the canonical JSON of the spec's entry list and files with the
//                     SHA-256 of each — so the chain commits to the HLO and the initial state
//   stage 2  hlo      the same canonical module (transform import-train-step)
//   init     init     the initial state: every tensor's name, role, dtype, shape and tensor digest
//                     and the file's SHA-256 (transform initial-state)
//
// Every check a user can fail names the file and the entry: the HLO's entry parameters against
// the spec's entry list, the result tuple against the state and the loss, the initial state's
// tensors against the state entries, the data's shapes against the batch and labels parameters.
#include <algorithm>
#include <map>
#include <set>
#include <string_view>

#include "attest/canonical_json.h"
#include "attest/sha256.h"
#include "attest/tensor_digest.h"
#include "base/checked.h"
#include "base/file_io.h"
#include "base/safetensors.h"
#include "base/thread_pool.h"
#include "compiler/ir/printer.h"
#include "compiler/xla_import/import.h"
#include "driver/compile_internal.h"
#include "frontend/run_spec.h"

namespace detrain::driver {
namespace {

using frontend::RunSpec;
using plan::ParamRole;

constexpr char kImportedStepHeader[] = "// detrain.imported-step.v1\n// config ";
constexpr char kInitialStateFormat[] = "detrain.initial-state.v1";

std::string Join(const std::string& dir, const std::string& rel) {
  return dir.empty() || dir == "." ? rel : dir + "/" + rel;
}

// The safetensors dtype of a state element type; state is f32 or s32 (schemas/run-spec.md).
const char* StateDType(ir::ElementType t) {
  const bool state = t == ir::ElementType::kF32 || t == ir::ElementType::kS32;
  return state ? ir::SafetensorsDType(t).data() : nullptr;
}

std::string EntryText(const RunSpec& spec, size_t i) {
  const frontend::RunSpecEntry& e = spec.entry[i];
  std::string s = "entry[" + std::to_string(i) + "] (" + std::string(plan::ParamRoleName(e.role));
  if (!e.name.empty()) s += " '" + e.name + "'";
  return s + ")";
}

// The HLO's entry parameters and result against the spec.
Status CheckStepSignature(const std::string& spec_path, const std::string& hlo_path,
                          const RunSpec& spec, const ir::Module& module) {
  auto error = [&](const std::string& what) {
    return InvalidArgument(hlo_path + ": " + what + " (run spec " + spec_path + ")");
  };
  const std::vector<ir::Instruction*> params = module.entry()->Parameters();
  if (params.size() != spec.entry.size()) {
    return error("the entry computation takes " + std::to_string(params.size()) +
                 " parameters; the run spec's entry list has " + std::to_string(spec.entry.size()));
  }
  std::vector<ir::Shape> state;
  for (size_t i = 0; i < params.size(); ++i) {
    const ir::Shape& s = params[i]->shape;
    const ParamRole role = spec.entry[i].role;
    const std::string what =
        "parameter " + std::to_string(i) + " " + s.ToString() + " is " + EntryText(spec, i) + ", ";
    if (s.is_tuple()) return error(what + "but a tuple: export the step with flat arguments");
    if (plan::IsStateRole(role)) {
      if (StateDType(s.type()) == nullptr)
        return error(what + "but state tensors must be f32 or s32");
      if (role == ParamRole::kParameter && s.type() != ir::ElementType::kF32)
        return error(what + "but a trained parameter must be f32");
      if (role == ParamRole::kStep && (s.type() != ir::ElementType::kS32 || !s.dims().empty()))
        return error(what + "but the update counter must be s32[]");
      state.push_back(s);
    } else if (role == ParamRole::kKey) {
      if (s.type() != ir::ElementType::kU32 || s.dims() != std::vector<int64_t>{2})
        return error(what + "but a step key is u32[2] (jax.random.key_data of a threefry key)");
    } else if (s.dims().empty() || s.dims()[0] != spec.train.batch) {
      return error(what + "but its first dimension must be the batch, " +
                   std::to_string(spec.train.batch));
    }
  }
  const ir::Shape& root = module.entry()->root()->shape;
  const size_t want = state.size() + 1;
  if (!root.is_tuple() || root.tuple_elements().size() != want) {
    return error("the entry computation returns " + root.ToString() + "; a train step returns a " +
                 "tuple of the " + std::to_string(state.size()) +
                 " state tensors' new values, then the loss (" + std::to_string(want) +
                 " elements)");
  }
  for (size_t i = 0; i < state.size(); ++i) {
    if (root.tuple_elements()[i] != state[i]) {
      return error("result " + std::to_string(i) + " is " + root.tuple_elements()[i].ToString() +
                   ", but state tensor " + std::to_string(i) + " is " + state[i].ToString());
    }
  }
  if (root.tuple_elements().back() != ir::Shape(ir::ElementType::kF32, {})) {
    return error("the last result is " + root.tuple_elements().back().ToString() +
                 "; the loss must be f32[]");
  }
  return Status::Ok();
}

// The initial state file against the state entries; the tensors in entry order.
Result<std::vector<StateTensor>> ReadInitialState(const std::string& path, const RunSpec& spec,
                                                  const ir::Module& module) {
  DETRAIN_ASSIGN_OR_RETURN(SafetensorsFile file, ReadSafetensorsFile(path));
  const std::vector<ir::Instruction*> params = module.entry()->Parameters();
  const std::map<std::string_view, const SafeTensor*> by_name = TensorsByName(file);
  std::vector<StateTensor> out;
  size_t state = 0;
  for (size_t i = 0; i < spec.entry.size(); ++i) {
    const frontend::RunSpecEntry& e = spec.entry[i];
    if (!plan::IsStateRole(e.role)) continue;
    ++state;
    auto it = by_name.find(e.name);
    if (it == by_name.end())
      return InvalidArgument(path + ": no tensor '" + e.name + "' for " + EntryText(spec, i));
    const SafeTensor* found = it->second;
    const ir::Shape& shape = params[i]->shape;
    const char* dtype = StateDType(shape.type());
    if (found->dtype != dtype || found->shape != shape.dims()) {
      std::string dims;
      for (int64_t d : found->shape) dims += (dims.empty() ? "" : ",") + std::to_string(d);
      return InvalidArgument(path + ": tensor '" + e.name + "' is " + found->dtype + " [" + dims +
                             "]; " + EntryText(spec, i) + " takes " + shape.ToString());
    }
    StateTensor t{e.name, e.role, ir::Literal(shape)};
    t.value.mutable_bytes() = found->data;
    out.push_back(std::move(t));
  }
  if (file.tensors.size() != state) {
    std::set<std::string_view> entry_names;
    for (const frontend::RunSpecEntry& e : spec.entry) entry_names.insert(e.name);
    for (const SafeTensor& t : file.tensors) {
      if (entry_names.count(t.name) == 0) {
        return InvalidArgument(path + ": tensor '" + t.name +
                               "' is not a state entry of the run spec");
      }
    }
  }
  return out;
}

// The data's example shapes against the batch and labels parameters.
Status CheckData(const std::string& spec_path, const RunSpec& spec, const ir::Module& module,
                 const frontend::Dataset& ds) {
  const std::vector<ir::Instruction*> params = module.entry()->Parameters();
  for (size_t i = 0; i < spec.entry.size(); ++i) {
    const ParamRole role = spec.entry[i].role;
    if (role != ParamRole::kBatch && role != ParamRole::kLabels) continue;
    const bool features = role == ParamRole::kBatch;
    std::vector<int64_t> dims = {spec.train.batch};
    for (int64_t d : features ? ds.x_dims : ds.y_dims) dims.push_back(d);
    const bool s32 = features ? !ds.x_s32.empty() : ds.label_type == frontend::LabelType::kS32;
    const ir::Shape want(s32 ? ir::ElementType::kS32 : ir::ElementType::kF32, dims);
    if (params[i]->shape != want) {
      return InvalidArgument(spec_path + ": the data source gives " +
                             (features ? "features " : "labels ") + want.ToString() +
                             " per batch, but " + EntryText(spec, i) + " of the train step is " +
                             params[i]->shape.ToString());
    }
  }
  return Status::Ok();
}

// The configuration a run spec resolves to: its data and train settings, the optimizer
// in-program, the split and the steps from the data.
Result<frontend::RunConfig> ResolveConfig(const std::string& spec_path, const RunSpec& spec,
                                          const frontend::Dataset& ds) {
  frontend::RunConfig c;
  c.data = spec.data;
  c.train = spec.train;
  c.optimizer.kind = frontend::OptimizerKind::kInProgram;
  c.optimizer.learning_rate.value = 0;
  c.batch_dim = "batch";
  frontend::ResolvedData r;
  r.rows = ds.rows;
  r.train_rows = ds.rows;
  if (r.train_rows < c.train.batch) {
    return InvalidArgument(spec_path + ": the data has " + std::to_string(r.train_rows) +
                           " rows, fewer than one batch of " + std::to_string(c.train.batch));
  }
  if (c.train.epochs.has_value()) {
    int64_t steps = 0;
    if (!CheckedMul(*c.train.epochs, r.train_rows / c.train.batch, &steps) ||
        steps > frontend::kMaxSteps) {
      return InvalidArgument(spec_path + ": train.epochs = " + std::to_string(*c.train.epochs) +
                             " is more steps than a run may take, " +
                             std::to_string(frontend::kMaxSteps));
    }
    c.train.steps = steps;
  }
  for (const auto& [file, digest] : ds.file_sha256) r.files.push_back({file, digest});
  c.resolved = std::move(r);
  return c;
}

Result<std::string> SpecHeader(const RunSpec& spec, const std::string& hlo_bytes,
                               const std::string& state_bytes) {
  nlohmann::json entry = nlohmann::json::array();
  for (const frontend::RunSpecEntry& e : spec.entry) {
    nlohmann::json j = {{"role", plan::ParamRoleName(e.role)}};
    if (!e.name.empty()) j["name"] = e.name;
    entry.push_back(std::move(j));
  }
  nlohmann::json j = {
      {"entry", entry},
      {"train_step", {{"path", spec.train_step}, {"sha256", attest::Sha256Hex(hlo_bytes)}}},
      {"initial_state",
       {{"path", spec.initial_state}, {"sha256", attest::Sha256Hex(state_bytes)}}}};
  return attest::CanonicalJson(j);
}

Result<std::string> InitialStateJson(const RunSpec& spec, const std::string& state_bytes,
                                     const std::vector<StateTensor>& state) {
  ThreadPool pool(1);
  nlohmann::json tensors = nlohmann::json::array();
  for (const StateTensor& t : state) {
    attest::TensorView v;
    v.name = t.name;
    v.dtype = ir::ElementTypeName(t.value.shape().type());
    v.shape = t.value.shape().dims();
    v.data = t.value.bytes();
    DETRAIN_ASSIGN_OR_RETURN(attest::Digest256 d, attest::TensorDigest(v, &pool));
    tensors.push_back({{"name", t.name},
                       {"role", plan::ParamRoleName(t.role)},
                       {"dtype", v.dtype},
                       {"shape", v.shape},
                       {"sha256", attest::Sha256::ToHex(d)}});
  }
  nlohmann::json j = {{"format", kInitialStateFormat},
                      {"file", spec.initial_state},
                      {"sha256", attest::Sha256Hex(state_bytes)},
                      {"tensors", tensors}};
  DETRAIN_ASSIGN_OR_RETURN(std::string text, attest::CanonicalJson(j));
  return text + "\n";
}

}  // namespace

Status CompileRunSpec(const std::string& path, const CompileOptions& options, CompileResult* out) {
  DETRAIN_ASSIGN_OR_RETURN(std::string bytes, ReadFile(path));
  DETRAIN_ASSIGN_OR_RETURN(RunSpec spec, frontend::ParseRunSpec(bytes, path));
  const std::string dir = DirOf(path);
  const std::string base = path.substr(path.rfind('/') + 1);
  if (spec.train_step == spec.initial_state || spec.train_step == base ||
      spec.initial_state == base) {
    return InvalidArgument(path +
                           ": run spec: the spec, train_step and initial_state must be "
                           "three different files");
  }

  const std::string hlo_path = Join(dir, spec.train_step);
  DETRAIN_ASSIGN_OR_RETURN(std::string hlo, ReadFile(hlo_path));
  Result<std::unique_ptr<ir::Module>> module = xla_import::ParseAndVerifyHloText(hlo);
  if (!module.ok()) {
    return Status(module.status().code(), hlo_path + ":" + module.status().message());
  }
  DETRAIN_RETURN_IF_ERROR(CheckStepSignature(path, hlo_path, spec, **module));
  const std::string state_path = Join(dir, spec.initial_state);
  DETRAIN_ASSIGN_OR_RETURN(std::string state_bytes, ReadFile(state_path));
  DETRAIN_ASSIGN_OR_RETURN(std::vector<StateTensor> state,
                           ReadInitialState(state_path, spec, **module));

  frontend::LabelType labels = frontend::LabelType::kF32;
  for (size_t i = 0; i < spec.entry.size(); ++i) {
    if (spec.entry[i].role == ParamRole::kLabels &&
        (*module)->entry()->Parameters()[i]->shape.type() == ir::ElementType::kS32) {
      labels = frontend::LabelType::kS32;
    }
  }
  DETRAIN_ASSIGN_OR_RETURN(frontend::Dataset ds,
                           LoadData(spec.data, dir, labels, options.data_files));
  DETRAIN_RETURN_IF_ERROR(CheckData(path, spec, **module, ds));
  DETRAIN_ASSIGN_OR_RETURN(frontend::RunConfig config, ResolveConfig(path, spec, ds));

  out->program_kind = ProgramKind::kRunSpec;
  StageTable& t = out->stages;
  DETRAIN_ASSIGN_OR_RETURN(std::string canonical, ir::PrintModule(**module));
  DETRAIN_ASSIGN_OR_RETURN(std::string config_text, frontend::CanonicalRunConfig(config));
  DETRAIN_ASSIGN_OR_RETURN(std::string spec_text, SpecHeader(spec, hlo, state_bytes));
  DETRAIN_ASSIGN_OR_RETURN(std::string init, InitialStateJson(spec, state_bytes, state));
  const ProgramKind kind = ProgramKind::kRunSpec;
  DETRAIN_RETURN_IF_ERROR(t.Add(kStageProgram, std::move(bytes), {}, kind));
  DETRAIN_RETURN_IF_ERROR(t.Add(
      kStageSource, kImportedStepHeader + config_text + "\n// spec " + spec_text + "\n" + canonical,
      TransformOf("import-hlo", kStageProgram), kind));
  DETRAIN_RETURN_IF_ERROR(
      t.Add(kStageHlo, std::move(canonical), TransformOf("import-train-step", kStageSource), kind));
  DETRAIN_RETURN_IF_ERROR(
      t.Add(kStageInit, std::move(init), TransformOf("initial-state", kStageSource), kind));

  for (const frontend::RunSpecEntry& e : spec.entry) out->signature.roles.push_back(e.role);
  out->signature.shards = 1;
  out->config = std::move(config);
  out->dataset = std::make_shared<const frontend::Dataset>(std::move(ds));
  out->program_files = {{spec.train_step, std::move(hlo)},
                        {spec.initial_state, std::move(state_bytes)}};
  std::sort(out->program_files.begin(), out->program_files.end());
  for (const StateTensor& t : state) out->state.push_back({t.name, t.role, t.value.shape(), -1});
  out->initial_state = std::make_shared<const std::vector<StateTensor>>(std::move(state));
  return Status::Ok();
}

}  // namespace detrain::driver
