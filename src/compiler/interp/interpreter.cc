// See interpreter.h. The driver: evaluates computations in canonical post-order on all
// replicas in lockstep, and dispatches each op (one exhaustive switch over the op table).
#include "compiler/interp/interpreter.h"

#include <unordered_map>

#include "compiler/interp/interp_internal.h"

namespace detrain::interp {
namespace {

using namespace internal;
using ir::Computation;
using ir::Opcode;

class Evaluator {
 public:
  // args[r][i]: argument i of replica r. Returns the root value of each replica.
  Result<std::vector<Literal>> Run(const Computation& c,
                                   const std::vector<std::vector<Literal>>& args) {
    size_t replicas = args.size();
    DETRAIN_ASSIGN_OR_RETURN(auto order, c.PostOrder());
    // Looked up by pointer only; never iterated, so its order cannot leak into results.
    std::unordered_map<const Instruction*, std::vector<Literal>> values;
    for (const Instruction* instr : order) {
      std::vector<Literal> results;
      if (instr->opcode == Opcode::kParameter) {
        for (size_t r = 0; r < replicas; ++r)
          results.push_back(args[r].at(static_cast<size_t>(instr->parameter_number)));
      } else if (instr->opcode == Opcode::kAllReduce) {
        std::vector<const Literal*> per_replica;
        for (size_t r = 0; r < replicas; ++r)
          per_replica.push_back(&values.at(instr->operands[0])[r]);
        DETRAIN_ASSIGN_OR_RETURN(results,
                                 EvalAllReduce(*instr, per_replica, ComputationCallback()));
      } else if (instr->opcode == Opcode::kWhile) {
        // Each replica's loop on its own: a loop body holds no collective (the verifier treats
        // it as a combiner), so the replicas need not step together.
        for (size_t r = 0; r < replicas; ++r) {
          DETRAIN_ASSIGN_OR_RETURN(Literal state,
                                   RunWhile(*instr, values.at(instr->operands[0])[r]));
          results.push_back(std::move(state));
        }
      } else if (instr->opcode == Opcode::kCall || instr->opcode == Opcode::kFusion) {
        std::vector<std::vector<Literal>> call_args(replicas);
        for (size_t r = 0; r < replicas; ++r) {
          for (const Instruction* op : instr->operands) call_args[r].push_back(values.at(op)[r]);
        }
        ir::Attr callee = instr->opcode == Opcode::kCall ? ir::Attr::kToApply : ir::Attr::kCalls;
        DETRAIN_ASSIGN_OR_RETURN(results, Run(*instr->ComputationAttr(callee), call_args));
      } else {
        for (size_t r = 0; r < replicas; ++r) {
          Operands ops;
          for (const Instruction* op : instr->operands) ops.push_back(&values.at(op)[r]);
          DETRAIN_ASSIGN_OR_RETURN(Literal value, EvalOne(*instr, ops));
          results.push_back(std::move(value));
        }
      }
      values[instr] = std::move(results);
    }
    return values.at(c.root());
  }

 private:
  Result<Literal> RunWhile(const Instruction& w, Literal state) {
    const Computation& cond = *w.ComputationAttr(ir::Attr::kCondition);
    const Computation& body = *w.ComputationAttr(ir::Attr::kBody);
    // One budget for a loop and the loops nested in it (the backends' while kernel keeps the
    // same count).
    if (loop_depth_ == 0) while_iterations_ = 0;
    ++loop_depth_;
    struct Leave {
      int* depth;
      ~Leave() { --*depth; }
    } leave{&loop_depth_};
    for (;;) {
      DETRAIN_ASSIGN_OR_RETURN(auto go, Run(cond, {{state}}));
      if (go[0].Get<uint8_t>(0) == 0) return state;
      if (++while_iterations_ > kMaxWhileIterations) {
        return InvalidArgument("while '" + w.name + "': the loops run more than " +
                               std::to_string(kMaxWhileIterations) + " iterations");
      }
      DETRAIN_ASSIGN_OR_RETURN(auto next, Run(body, {{std::move(state)}}));
      state = std::move(next[0]);
    }
  }

  int64_t while_iterations_ = 0;  // the outermost running loop's, nested loops included
  int loop_depth_ = 0;            // loops running now

  ComputationFn ComputationCallback() {
    return [this](const Computation& c, std::vector<Literal> args) -> Result<Literal> {
      DETRAIN_ASSIGN_OR_RETURN(auto results, Run(c, {std::move(args)}));
      return std::move(results[0]);
    };
  }

  Result<Literal> EvalOne(const Instruction& instr, const Operands& ops) {
    switch (instr.opcode) {
      case Opcode::kParameter:
      case Opcode::kCall:
      case Opcode::kFusion:
      case Opcode::kWhile:
      case Opcode::kAllReduce:
        return Internal("evaluated by the driver");
      case Opcode::kConstant:
        return instr.literal;
      case Opcode::kIota:
        return EvalIota(instr);
#define OP(e, s, n, c, o, x, a, t)
#define UNARY(e, s, x, t) case Opcode::e:
#define BINARY(e, s, x, t) case Opcode::e:
#include "compiler/ir/ops.def"
#undef OP
      case Opcode::kCompare:
      case Opcode::kSelect:
      case Opcode::kClamp:
        return EvalElementwise(instr, ops);
      case Opcode::kConvert:
      case Opcode::kBitcastConvert:
        return EvalConvert(instr, ops);
      case Opcode::kBroadcast:
        return EvalBroadcast(instr, ops);
      case Opcode::kReshape:
        return EvalReshape(instr, ops);
      case Opcode::kTranspose:
        return EvalTranspose(instr, ops);
      case Opcode::kSlice:
        return EvalSlice(instr, ops);
      case Opcode::kConcatenate:
        return EvalConcatenate(instr, ops);
      case Opcode::kPad:
        return EvalPad(instr, ops);
      case Opcode::kReverse:
        return EvalReverse(instr, ops);
      case Opcode::kDynamicSlice:
        return EvalDynamicSlice(instr, ops);
      case Opcode::kDynamicUpdateSlice:
        return EvalDynamicUpdateSlice(instr, ops);
      case Opcode::kGather:
        return EvalGather(instr, ops);
      case Opcode::kScatter:
        return EvalScatter(instr, ops, ComputationCallback());
      case Opcode::kReduce:
        return EvalReduce(instr, ops, ComputationCallback());
      case Opcode::kReduceWindow:
        return EvalReduceWindow(instr, ops, ComputationCallback());
      case Opcode::kDot:
        return EvalDot(instr, ops);
      case Opcode::kConvolution:
        return EvalConvolution(instr, ops);
      case Opcode::kTuple: {
        std::vector<Literal> elements;
        for (const Literal* op : ops) elements.push_back(*op);
        return Literal::Tuple(std::move(elements));
      }
      case Opcode::kGetTupleElement:
        return ops[0]->tuple_elements().at(static_cast<size_t>(instr.IntAttr(ir::Attr::kIndex)));
      case Opcode::kCustomCall:
        return EvalThreefry(instr, ops);  // the only target the verifier admits
    }
    return Internal("unknown opcode");
  }
};

Status CheckArguments(const ir::Module& module, const std::vector<Literal>& args) {
  auto params = module.entry()->Parameters();
  if (args.size() != params.size()) {
    return InvalidArgument("the entry computation takes " + std::to_string(params.size()) +
                           " argument(s), got " + std::to_string(args.size()));
  }
  for (size_t i = 0; i < params.size(); ++i) {
    if (!(args[i].shape() == params[i]->shape)) {
      std::string name = params[i]->name.empty() ? "p" + std::to_string(i) : params[i]->name;
      return InvalidArgument("parameter " + std::to_string(i) + " ('" + name + "') expects " +
                             params[i]->shape.ToString() + ", got " + args[i].shape().ToString());
    }
  }
  return Status::Ok();
}

}  // namespace

Result<ir::Literal> Evaluate(const ir::Module& module, const std::vector<ir::Literal>& args) {
  DETRAIN_ASSIGN_OR_RETURN(auto results, EvaluateReplicated(module, {args}));
  return std::move(results[0]);
}

Result<std::vector<ir::Literal>> EvaluateReplicated(
    const ir::Module& module, const std::vector<std::vector<ir::Literal>>& args) {
  if (module.entry() == nullptr) return InvalidArgument("the module has no entry computation");
  if (args.empty()) return InvalidArgument("at least one replica is needed");
  for (const auto& replica_args : args)
    DETRAIN_RETURN_IF_ERROR(CheckArguments(module, replica_args));
  return Evaluator().Run(*module.entry(), args);
}

}  // namespace detrain::interp
