// See train_state.h.
#include "runtime/train/train_state.h"

#include <map>
#include <string_view>

#include "attest/state_digest.h"

namespace detrain::runtime {
namespace {

enum class Part { kAll, kParams, kOptimizer };

std::vector<attest::TensorView> Views(const TrainState& state, Part part) {
  std::vector<attest::TensorView> out;
  for (const StateTensor& s : state) {
    const bool param = s.role == plan::ParamRole::kParameter;
    if ((part == Part::kParams && !param) || (part == Part::kOptimizer && param)) continue;
    attest::TensorView v;
    v.name = s.name;
    v.dtype = ir::ElementTypeName(s.value.shape().type());
    v.shape = s.value.shape().dims();
    v.data = s.value.bytes();
    out.push_back(v);
  }
  return out;
}

}  // namespace

TrainState StateLayout(const std::vector<driver::StateSpec>& specs) {
  TrainState state;
  state.reserve(specs.size());
  for (const driver::StateSpec& s : specs) state.push_back({s.name, s.role, ir::Literal(s.shape)});
  return state;
}

bool IsStale(const TrainState& state) {
  for (const StateTensor& s : state) {
    if (s.stale) return true;
  }
  return false;
}

std::vector<attest::TensorView> StateViews(const TrainState& s) { return Views(s, Part::kAll); }
std::vector<attest::TensorView> ParamViews(const TrainState& s) { return Views(s, Part::kParams); }
std::vector<attest::TensorView> OptimizerViews(const TrainState& s) {
  return Views(s, Part::kOptimizer);
}

Result<std::pair<attest::Digest256, attest::Digest256>> StateRoots(const TrainState& state,
                                                                   ThreadPool* pool) {
  DETRAIN_ASSIGN_OR_RETURN(attest::Digest256 p, attest::StateSha256Root(ParamViews(state), pool));
  DETRAIN_ASSIGN_OR_RETURN(attest::Digest256 o,
                           attest::StateSha256Root(OptimizerViews(state), pool));
  return std::make_pair(p, o);
}

std::vector<SafeTensorRef> StateRefs(const TrainState& state, bool params_only) {
  std::vector<SafeTensorRef> refs;
  for (const StateTensor& s : state) {
    if (params_only && s.role != plan::ParamRole::kParameter) continue;
    const auto& dims = s.value.shape().dims();
    refs.push_back({s.name, ir::SafetensorsDType(s.value.shape().type()), dims, s.value.bytes()});
  }
  return refs;
}

SafetensorsFile StateFile(const TrainState& state, std::map<std::string, std::string> metadata,
                          bool params_only) {
  SafetensorsFile f;
  f.metadata = std::move(metadata);
  for (const SafeTensorRef& r : StateRefs(state, params_only)) {
    f.tensors.push_back({std::string(r.name),
                         std::string(r.dtype),
                         {r.shape.begin(), r.shape.end()},
                         std::string(r.data)});
  }
  return f;
}

Status LoadState(const SafetensorsFile& file, TrainState* layout) {
  if (file.tensors.size() != layout->size()) {
    return DataLoss("the file holds " + std::to_string(file.tensors.size()) +
                    " tensors; the state has " + std::to_string(layout->size()));
  }
  const std::map<std::string_view, const SafeTensor*> by_name = TensorsByName(file);
  for (StateTensor& s : *layout) {
    auto it = by_name.find(s.name);
    if (it == by_name.end()) return DataLoss("no tensor '" + s.name + "'");
    const SafeTensor* found = it->second;
    if (found->dtype != ir::SafetensorsDType(s.value.shape().type()) ||
        found->shape != s.value.shape().dims() || found->data.size() != s.value.bytes().size()) {
      return DataLoss("tensor '" + s.name + "' has the wrong dtype or shape");
    }
    s.value.mutable_bytes() = found->data;
    s.resident = 0;
  }
  return Status::Ok();
}

}  // namespace detrain::runtime
