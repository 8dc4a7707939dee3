// fold-constants — evaluates instructions whose operands are all constants.
//
// What it does: an instruction whose operands are all `constant`s (or broadcasts of scalar
// constants) is evaluated by the reference interpreter — the same code that defines the op's
// bits, so folding cannot change a result — and replaced by its value. A value whose elements
// are all equal becomes `broadcast(constant(scalar))`; otherwise a `constant`. An elementwise op
// whose operands are all splats is evaluated once on the scalars (every element of an
// elementwise result is the same function of the same scalars) and stays a broadcast, so no
// large constant is ever materialized for it.
// What it does not do: fold `parameter`, `iota` or `broadcast` (they only expand data; folding
// them would make the text bigger, not the program faster), `all-reduce` (its value depends on
// the replicas), tuple-shaped results, or non-splat results of more than kMaxFoldedElements
// elements (kept as computations to keep the module text small).
// Pre: a verified module. Post: a verified module; interpreter results unchanged bit for bit.
#include "compiler/interp/interpreter.h"
#include "compiler/passes/passes.h"
#include "compiler/passes/rewrite.h"

namespace detrain::passes {
namespace {

using ir::Instruction;
using ir::Opcode;

constexpr int64_t kMaxFoldedElements = 1024;

bool IsElementwise(Opcode op) {
  ir::OpCategory c = ir::OpcodeCategory(op);
  return c == ir::OpCategory::kUnary || c == ir::OpCategory::kBinary ||
         c == ir::OpCategory::kElementwise;
}

bool Foldable(const Instruction& instr) {
  switch (instr.opcode) {
    case Opcode::kParameter:
    case Opcode::kConstant:
    case Opcode::kIota:
    case Opcode::kBroadcast:
    case Opcode::kAllReduce:
    case Opcode::kTuple:
    case Opcode::kCall:
      return false;
    default:
      break;
  }
  if (instr.shape.is_tuple() || instr.operands.empty()) return false;
  for (const Instruction* op : instr.operands) {
    if (op->shape.is_tuple()) return false;
    if (op->opcode != Opcode::kConstant && !SplatBits(*op)) return false;
  }
  return true;
}

// A scalar constant holding `bits` of `type`.
std::unique_ptr<Instruction> ScalarConstant(ir::ElementType type, const std::string& bits) {
  auto c = std::make_unique<Instruction>();
  c->opcode = Opcode::kConstant;
  c->shape = ir::Shape::Scalar(type);
  c->literal = ir::Literal(c->shape);
  c->literal.mutable_bytes() = bits;
  return c;
}

// Evaluates `instr` on `operands` (constants) in a scratch module. Called computations are
// referenced, not copied: the interpreter only follows the pointers.
Result<ir::Literal> Evaluate(const Instruction& instr,
                             std::vector<std::unique_ptr<Instruction>> operands,
                             const ir::Shape& shape) {
  ir::Module scratch("fold");
  ir::Computation* entry = scratch.AddComputation(std::make_unique<ir::Computation>("fold"));
  auto copy = std::make_unique<Instruction>(instr);
  copy->shape = shape;
  for (size_t i = 0; i < operands.size(); ++i)
    copy->operands[i] = entry->AddInstruction(std::move(operands[i]));
  entry->set_root(entry->AddInstruction(std::move(copy)));
  scratch.set_entry(entry);
  return interp::Evaluate(scratch, {});
}

// `broadcast(constant(bits))` of `shape`, an instruction of `c`.
Instruction* BroadcastScalar(ir::Computation& c, const ir::Shape& shape, const std::string& bits) {
  Instruction* scalar = c.AddInstruction(ScalarConstant(shape.type(), bits));
  ir::AttrMap attrs;
  attrs[ir::Attr::kDimensions].ints = {};
  return AddInstruction(c, Opcode::kBroadcast, shape, {scalar}, std::move(attrs));
}

// The value as an instruction of `c`: a broadcast scalar when all elements are equal.
Instruction* Materialize(ir::Computation& c, const ir::Literal& value) {
  auto constant = std::make_unique<Instruction>();
  constant->opcode = Opcode::kConstant;
  constant->shape = value.shape();
  constant->literal = value;
  std::optional<std::string> splat = SplatBits(*constant);
  if (!splat || value.element_count() <= 1) return c.AddInstruction(std::move(constant));
  return BroadcastScalar(c, value.shape(), *splat);
}

Result<Instruction*> FoldOne(ir::Computation& c, Instruction* instr) {
  if (!Foldable(*instr)) return nullptr;
  bool all_splat = IsElementwise(instr->opcode);
  for (const Instruction* op : instr->operands) all_splat = all_splat && SplatBits(*op).has_value();
  std::vector<std::unique_ptr<Instruction>> operands;
  if (all_splat) {  // evaluate once on scalars, then broadcast
    for (const Instruction* op : instr->operands) {
      operands.push_back(ScalarConstant(op->shape.type(), *SplatBits(*op)));
    }
    DETRAIN_ASSIGN_OR_RETURN(ir::Literal scalar, Evaluate(*instr, std::move(operands),
                                                          ir::Shape::Scalar(instr->shape.type())));
    // What Materialize makes of the splat value, without the value: a result of the program's
    // declared size (a gradient of zeros the size of a parameter) is never held in memory.
    if (instr->shape.ElementCount() > 1) return BroadcastScalar(c, instr->shape, scalar.bytes());
    ir::Literal value(instr->shape);  // no element, or one
    if (value.element_count() == 1) value.mutable_bytes() = scalar.bytes();
    return Materialize(c, value);
  }
  if (instr->shape.ElementCount() > kMaxFoldedElements) return nullptr;
  for (const Instruction* op : instr->operands) {
    if (op->opcode == Opcode::kConstant) {
      operands.push_back(std::make_unique<Instruction>(*op));
    } else {  // a broadcast of a scalar constant: evaluate it too
      std::vector<std::unique_ptr<Instruction>> scalar;
      scalar.push_back(std::make_unique<Instruction>(*op->operands[0]));
      DETRAIN_ASSIGN_OR_RETURN(ir::Literal v, Evaluate(*op, std::move(scalar), op->shape));
      auto k = std::make_unique<Instruction>(*op->operands[0]);
      k->shape = v.shape();
      k->literal = std::move(v);
      operands.push_back(std::move(k));
    }
  }
  DETRAIN_ASSIGN_OR_RETURN(ir::Literal value, Evaluate(*instr, std::move(operands), instr->shape));
  return Materialize(c, value);
}

}  // namespace

Status FoldConstantsInPlace(ir::Module& module) {
  DETRAIN_ASSIGN_OR_RETURN(MutableOrder order, MutableCanonicalOrder(module));
  for (size_t i = 0; i < order.computations.size(); ++i) {
    ir::Computation* c = order.computations[i];
    DETRAIN_RETURN_IF_ERROR(RewriteComputation(
        *c, [&](Instruction* instr) { return FoldOne(*c, instr); }, order.instructions[i]));
  }
  return Compact(module);
}

PassOutput FoldConstants(const ir::Module& module) { return OnCopy(module, FoldConstantsInPlace); }

}  // namespace detrain::passes
