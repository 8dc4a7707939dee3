// See train_step.h.
#include "frontend/train_step.h"

#include "compiler/semantics/orders.h"
#include "frontend/autodiff/autodiff.h"
#include "frontend/emit.h"
#include "frontend/optimizer.h"

namespace detrain::frontend {

using ir::ElementType;
using ir::Instruction;
using ir::Opcode;
using ir::Shape;

ProgramShape ShapeOf(const CheckedProgram& p) {
  ProgramShape s;
  s.batch = p.config.train.batch;
  s.shards = p.config.train.shards;
  s.prng = p.config.train.prng;
  return s;
}

plan::EntrySignature TrainStepSignature(const CheckedProgram& p) {
  using plan::ParamRole;
  plan::EntrySignature sig;
  sig.shards = p.config.train.shards;
  const size_t n = p.params.size();
  const size_t slots = static_cast<size_t>(OptimizerSlots(p.config.optimizer.kind));
  sig.roles.assign(n, ParamRole::kParameter);
  sig.roles.insert(sig.roles.end(), n * slots, ParamRole::kOptimizerState);
  sig.roles.push_back(ParamRole::kStep);
  sig.roles.push_back(ParamRole::kLearningRate);
  std::vector<const FuncArg*> inputs = BatchInputs(*p.loss);
  for (size_t i = 0; i < inputs.size(); ++i) {
    sig.roles.push_back(i + 1 == inputs.size() ? ParamRole::kLabels : ParamRole::kBatch);
  }
  sig.roles.push_back(ParamRole::kKey);  // always present, used or not
  return sig;
}

std::vector<const FuncArg*> BatchInputs(const FuncDecl& loss) {
  std::vector<const FuncArg*> in;
  for (const FuncArg& a : loss.args) {
    if (!a.type.is_key) in.push_back(&a);
  }
  return in;
}

namespace {

const std::string& BatchSymbol(const CheckedProgram& p) { return p.config.batch_dim; }

LowerOptions OptionsFor(const CheckedProgram& p, int64_t batch_value) {
  LowerOptions o;
  o.dims[BatchSymbol(p)] = batch_value;
  o.prng = ShapeOf(p).prng;
  return o;
}

bool HasKey(const FuncDecl& f) { return !f.args.empty() && f.args.back().type.is_key; }

// Sums `values[i]` (each a list of same-shaped tensors) by the shard tree over i
// (semantics::PairwiseTreeInPlace, the order the all-reduce continues): tensor k of a pair is
// added as add(left[k], right[k]), pairs in index order, level by level.
std::vector<Instruction*> ShardTreeSum(ir::Builder& b,
                                       std::vector<std::vector<Instruction*>> values) {
  using List = std::vector<Instruction*>;
  auto add_lists = [&b](const List& left, const List& right) {
    List sum;
    for (size_t k = 0; k < left.size(); ++k) sum.push_back(b.Add(left[k], right[k]));
    return sum;
  };
  int64_t n = static_cast<int64_t>(values.size());
  return semantics::PairwiseTreeInPlace(values.data(), n, add_lists);
}

}  // namespace

Result<std::unique_ptr<ir::Module>> LowerSourceGraph(const CheckedProgram& p) {
  ProgramShape shape = ShapeOf(p);
  auto m = std::make_unique<ir::Module>("source_graph");
  DETRAIN_RETURN_IF_ERROR(
      LowerFunction(p, *p.loss, OptionsFor(p, shape.batch / shape.shards), m.get(), "loss")
          .status());
  return m;
}

Result<std::unique_ptr<ir::Module>> LowerTrainStep(const CheckedProgram& p) {
  ProgramShape shape = ShapeOf(p);
  const int64_t per_shard = shape.batch / shape.shards;
  const int64_t n = static_cast<int64_t>(p.params.size());
  auto m = std::make_unique<ir::Module>("train_step");
  DETRAIN_ASSIGN_OR_RETURN(ir::Computation * loss,
                           LowerFunction(p, *p.loss, OptionsFor(p, per_shard), m.get(), "loss"));
  std::vector<int64_t> wrt;
  for (int64_t i = 0; i < n; ++i) wrt.push_back(i);
  DETRAIN_ASSIGN_OR_RETURN(ir::Computation * vg,
                           ValueAndGrad(m.get(), *loss, wrt, "loss_and_grad"));

  ir::Builder b(m.get(), "train_step");
  Emitter e(m.get(), &b);
  int64_t num = 0;
  OptimizerIo io;
  for (const auto& [name, type] : p.params) {
    DETRAIN_ASSIGN_OR_RETURN(Shape s, ToShape(type, {}));
    io.params.push_back(b.Parameter(num++, s, name));
  }
  const OptimizerConfig& opt = p.config.optimizer;
  int slots = OptimizerSlots(opt.kind);
  io.state.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    for (int k = 0; k < slots; ++k) {
      io.state[static_cast<size_t>(i)].push_back(
          b.Parameter(num++, io.params[static_cast<size_t>(i)]->shape,
                      p.params[static_cast<size_t>(i)].first + "_s" + std::to_string(k)));
    }
  }
  io.count = b.Parameter(num++, Shape::Scalar(ElementType::kS32), "count");
  io.learning_rate = b.Parameter(num++, Shape::Scalar(ElementType::kF32), "learning_rate");
  std::vector<Instruction*> inputs;
  LowerOptions global = OptionsFor(p, shape.batch);
  for (const FuncArg* a : BatchInputs(*p.loss)) {
    DETRAIN_ASSIGN_OR_RETURN(Shape s, ArgShape(*a, global.dims));
    inputs.push_back(b.Parameter(num++, s, a->name));
  }
  Instruction* key = b.Parameter(num++, Shape(ElementType::kU32, {2}), "key");

  // Per shard s: the rows [s*b, (s+1)*b) of every input and the key fold_in(key, s).
  std::vector<std::vector<Instruction*>> per_shard_results;
  for (int64_t s = 0; s < shape.shards; ++s) {
    std::vector<Instruction*> args = io.params;
    for (Instruction* x : inputs) {
      std::vector<ir::SliceDim> slice;
      for (int64_t d = 0; d < x->shape.rank(); ++d) {
        slice.push_back(d == 0 ? ir::SliceDim{s * per_shard, (s + 1) * per_shard, 1}
                               : ir::SliceDim{0, x->shape.dim(static_cast<int>(d)), 1});
      }
      args.push_back(b.Slice(x, slice));
    }
    if (HasKey(*p.loss)) args.push_back(e.FoldIn(key, e.ScalarU32(static_cast<uint32_t>(s))));
    Instruction* r = b.Call(vg, args);
    std::vector<Instruction*> parts;
    for (int64_t k = 0; k <= n; ++k) parts.push_back(b.GetTupleElement(r, k));
    per_shard_results.push_back(std::move(parts));
  }
  std::vector<Instruction*> total = ShardTreeSum(b, std::move(per_shard_results));
  // The global mean: every shard is the mean over an equal number of examples.
  std::vector<Instruction*> mean;
  for (Instruction* t : total)
    mean.push_back(
        b.Binary(Opcode::kDivide, t, e.Full(t->shape, static_cast<double>(shape.shards))));
  io.grads.assign(mean.begin() + 1, mean.end());
  DETRAIN_ASSIGN_OR_RETURN(OptimizerIo next, EmitOptimizerUpdate(e, opt, io));
  std::vector<Instruction*> outs = next.params;
  for (const auto& st : next.state) outs.insert(outs.end(), st.begin(), st.end());
  outs.push_back(next.count);
  outs.push_back(mean[0]);
  DETRAIN_ASSIGN_OR_RETURN(ir::Computation * step, b.Build(b.Tuple(outs)));
  m->set_entry(step);
  return m;
}

Result<std::unique_ptr<ir::Module>> LowerEval(const CheckedProgram& p, int64_t rows) {
  auto m = std::make_unique<ir::Module>("eval");
  ir::Builder b(m.get(), "eval");
  Emitter e(m.get(), &b);
  LowerOptions o = OptionsFor(p, rows);
  o.deterministic = true;
  int64_t num = 0;
  std::vector<Instruction*> params;
  for (const auto& [name, type] : p.params) {
    DETRAIN_ASSIGN_OR_RETURN(Shape s, ToShape(type, {}));
    params.push_back(b.Parameter(num++, s, name));
  }
  std::vector<Instruction*> inputs;
  for (const FuncArg* a : BatchInputs(*p.loss)) {
    DETRAIN_ASSIGN_OR_RETURN(Shape s, ArgShape(*a, o.dims));
    inputs.push_back(b.Parameter(num++, s, a->name));
  }
  std::vector<Instruction*> loss_args = inputs;
  if (HasKey(*p.loss))
    loss_args.push_back(e.Full(Shape(ElementType::kU32, {2}), 0));  // unused: dropout is off
  DETRAIN_ASSIGN_OR_RETURN(Instruction * loss, LowerInline(p, *p.loss, o, e, params, loss_args));
  std::vector<Instruction*> outs = {loss};
  if (p.predict != nullptr) {
    std::vector<Instruction*> features(inputs.begin(), inputs.end() - 1);  // all but the labels
    DETRAIN_ASSIGN_OR_RETURN(Instruction * logits,
                             LowerInline(p, *p.predict, o, e, params, features));
    outs.push_back(e.Accuracy(logits, inputs.back()));
  }
  DETRAIN_ASSIGN_OR_RETURN(ir::Computation * c, b.Build(b.Tuple(outs)));
  m->set_entry(c);
  return m;
}

}  // namespace detrain::frontend
