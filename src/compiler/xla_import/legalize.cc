// XlaHooks::OnComputation (hooks.h): the instructions of one computation that XLA's text wrote
// as constructs the IR does not have, expanded once the computation's operands are resolved —
// each by its expansion (expansions.h), its errors positioned at its op name.
#include "compiler/xla_import/hooks.h"

namespace detrain::xla_import {

Status XlaHooks::OnComputation(Computation& comp, ir::ComputationRefs& refs) {
  std::vector<Pending> pending = std::move(pending_);
  pending_.clear();
  for (const Pending& op : pending) DETRAIN_RETURN_IF_ERROR(Legalize(comp, op, refs));
  return Status::Ok();
}

Status XlaHooks::Legalize(Computation& comp, const Pending& op, ir::ComputationRefs& refs) {
  Instruction& instr = *op.instr;
  if (op.name == "select-and-scatter" || op.name == "reduce" || op.name == "reduce-window" ||
      op.name == "sort" || op.name == "topk" || op.name == "compare") {
    const size_t before = comp.instructions().size();
    DETRAIN_RETURN_IF_ERROR(ExpandMany(comp, op, refs));
    expanded_ += comp.instructions().size() - before;
    if (expanded_ > kMaxExpandedInstructions) {
      return Cursor::ErrorAt(op.loc,
                             "select-and-scatter, sort, topk and reduces of several "
                             "inputs expand to more than " +
                                 std::to_string(kMaxExpandedInstructions) +
                                 " instructions in this module");
    }
    return Status::Ok();
  }
  if (op.name != "copy" && op.name != "bitcast" && op.name != "is-finite") {
    return UnbatchIndexing(comp, instr, op.loc);
  }
  if (instr.operands.size() != 1) {
    return Cursor::ErrorAt(
        op.loc, op.name + " takes 1 operand, got " + std::to_string(instr.operands.size()));
  }
  if (op.name == "is-finite") return ExpandIsFinite(comp, instr, op.loc);
  return ExpandLayoutOp(comp, op);
}

// copy and bitcast: a copy changes only the layout, the identity; a bitcast reads its operand's
// memory in its own layout (layouts.cc).
Status XlaHooks::ExpandLayoutOp(Computation& comp, const Pending& op) {
  Instruction& instr = *op.instr;
  const Instruction& operand = *instr.operands[0];
  if (instr.shape.is_tuple() || operand.shape.is_tuple()) {
    return Cursor::ErrorAt(op.loc, op.name + " of a tuple is not supported");
  }
  if (instr.shape.type() != operand.shape.type()) {
    if (op.name == "copy" || instr.shape.dims() != operand.shape.dims() ||
        LayoutOf(instr) != LayoutOf(operand)) {
      return Cursor::ErrorAt(op.loc, op.name + " " + Quoted(instr.name) +
                                         " changes the element type" +
                                         (op.name == "copy" ? "" : " and the dimensions"));
    }
    instr.opcode = Opcode::kBitcastConvert;
    return Status::Ok();
  }
  if (op.name == "copy") {
    // A copy changes the layout, never the value: the identity whatever the layouts.
    if (instr.shape.dims() != operand.shape.dims()) {
      return Cursor::ErrorAt(op.loc, "copy " + Quoted(instr.name) + " changes the dimensions");
    }
    return Status::Ok();
  }
  Status st = ExpandBitcast(comp, instr, LayoutOf(operand), LayoutOf(instr));
  if (!st.ok()) return Cursor::ErrorAt(op.loc, "bitcast " + Quoted(instr.name) + st.message());
  return Status::Ok();
}

// An instruction's layout, minor to major: row-major unless its text said otherwise; empty
// for a layout that is not a plain permutation.
std::vector<int64_t> XlaHooks::LayoutOf(const Instruction& instr) const {
  auto it = other_layout_.find(&instr);
  if (it != other_layout_.end()) return it->second;
  std::vector<int64_t> m2m;
  for (int64_t d = instr.shape.rank() - 1; d >= 0; --d) m2m.push_back(d);
  return m2m;
}

// The expansions that may add many instructions (the budget of Legalize). Their computations
// come before them, as XLA prints them.
Status XlaHooks::ExpandMany(Computation& comp, const Pending& op, ir::ComputationRefs& refs) {
  Instruction& instr = *op.instr;
  if (op.name == "select-and-scatter") return ExpandSelectScatter(comp, op, refs);
  if (op.name == "reduce" || op.name == "reduce-window") return ExpandReduceOfMany(comp, op, refs);
  if (op.name == "topk") return ExpandTopKOp(comp, op, refs);
  Status st = Status::Ok();
  if (op.name == "compare") {
    st = ExpandTotalOrderCompare(comp, instr);
  } else {
    auto ref = refs.Take(instr, Attr::kToApply);
    if (!ref) return Cursor::ErrorAt(op.loc, "sort needs to_apply=");
    const Computation* comparator = refs.Find(ref->name);
    if (comparator == nullptr) {
      return Cursor::ErrorAt(ref->loc, "unknown computation " + Quoted(ref->name) +
                                           " (a sort needs its comparator before it)");
    }
    st = ExpandSort(comp, instr, *comparator);
  }
  if (!st.ok()) {
    return Cursor::ErrorAt(op.loc, op.name + " " + Quoted(instr.name) + ": " + st.message());
  }
  return Status::Ok();
}

// topk: k= and largest=, or XLA's TopK custom call with its comparator (largest first, k the
// last dimension of its values).
Status XlaHooks::ExpandTopKOp(Computation& comp, const Pending& op, ir::ComputationRefs& refs) {
  Instruction& instr = *op.instr;
  Status st = Status::Ok();
  if (called_.count(&instr)) {
    const auto& [name, loc] = called_.at(&instr);
    const Computation* comparator = refs.Find(name);
    if (comparator == nullptr) {
      return Cursor::ErrorAt(
          loc, "unknown computation " + Quoted(name) + " (a TopK's comparator comes before it)");
    }
    const Shape& r = instr.shape;
    const int64_t k = r.is_tuple() && !r.tuple_elements().empty() &&
                              !r.tuple_elements()[0].is_tuple() && r.tuple_elements()[0].rank() > 0
                          ? r.tuple_elements()[0].dims().back()
                          : -1;
    if (k < 0) return Cursor::ErrorAt(op.loc, "TopK must give (values, indices)");
    st = ExpandTopK(comp, instr, k, true, comparator);
  } else {
    auto args = topk_args_.find(&instr);
    if (args == topk_args_.end() || args->second.k < 0) {
      return Cursor::ErrorAt(op.loc, "topk needs k=");
    }
    st = ExpandTopK(comp, instr, args->second.k, args->second.largest);
  }
  if (!st.ok()) {
    return Cursor::ErrorAt(op.loc, op.name + " " + Quoted(instr.name) + ": " + st.message());
  }
  return Status::Ok();
}

// select-and-scatter: its select and scatter computations, then select_and_scatter.cc.
Status XlaHooks::ExpandSelectScatter(Computation& comp, const Pending& op,
                                     ir::ComputationRefs& refs) {
  Instruction& instr = *op.instr;
  const Computation* parts[2] = {nullptr, nullptr};
  const Attr attrs[2] = {Attr::kSelect, Attr::kScatter};
  for (int i = 0; i < 2; ++i) {
    auto ref = refs.Take(instr, attrs[i]);
    if (!ref) {
      return Cursor::ErrorAt(
          op.loc, "select-and-scatter needs " + std::string(i == 0 ? "select" : "scatter") + "=");
    }
    parts[i] = refs.Find(ref->name);
    if (parts[i] == nullptr) {
      return Cursor::ErrorAt(ref->loc, "unknown computation " + Quoted(ref->name) +
                                           " (a select-and-scatter's computations come "
                                           "before it)");
    }
  }
  for (const auto& [a, value] : instr.attrs) {
    if (a != Attr::kWindow && a != Attr::kSelect && a != Attr::kScatter) {
      return Cursor::ErrorAt(
          op.loc, "select-and-scatter takes no attribute " + Quoted(std::string(ir::AttrName(a))));
    }
  }
  Status st = ExpandSelectAndScatter(comp, instr, *parts[0], *parts[1]);
  if (!st.ok()) {
    return Cursor::ErrorAt(op.loc,
                           "select-and-scatter " + Quoted(instr.name) + ": " + st.message());
  }
  return Status::Ok();
}

// A reduce of several inputs: its to_apply, then variadic_reduce.cc.
Status XlaHooks::ExpandReduceOfMany(Computation& comp, const Pending& op,
                                    ir::ComputationRefs& refs) {
  Instruction& instr = *op.instr;
  auto ref = refs.Take(instr, Attr::kToApply);
  if (!ref) return Cursor::ErrorAt(op.loc, op.name + " needs to_apply=");
  const Computation* combiner = refs.Find(ref->name);
  if (combiner == nullptr) {
    return Cursor::ErrorAt(ref->loc, "unknown computation " + Quoted(ref->name) +
                                         " (a reduce of several inputs needs its to_apply "
                                         "before it)");
  }
  Status st = ExpandVariadicReduce(comp, instr, *combiner);
  if (!st.ok()) {
    return Cursor::ErrorAt(op.loc, op.name + " " + Quoted(instr.name) + " of " +
                                       std::to_string(instr.operands.size() / 2) +
                                       " inputs: " + st.message());
  }
  return Status::Ok();
}

// is-finite(x) as compare(subtract(x, x), broadcast(0), direction=EQ): finite x gives +0,
// an infinity or NaN gives NaN, which compares unequal.
Status ExpandIsFinite(Computation& comp, Instruction& instr, SourceLoc loc) {
  Instruction* x = instr.operands[0];
  const Shape& shape = x->shape;
  if (shape.is_tuple() || shape.type() != ElementType::kF32) {
    return Cursor::ErrorAt(loc, "is-finite takes an f32 array");
  }
  if (instr.shape.is_tuple() || instr.shape.type() != ElementType::kPred ||
      instr.shape.dims() != shape.dims()) {
    return Cursor::ErrorAt(loc, "is-finite gives a pred array of its operand's dimensions");
  }
  auto add = [&](Opcode opcode, Shape result, std::vector<Instruction*> operands,
                 const std::string& suffix) {
    return AddBeside(comp, instr, opcode, std::move(result), std::move(operands), suffix);
  };
  Instruction* difference = add(Opcode::kSubtract, shape, {x, x}, ".x-x");
  Instruction* zero = add(Opcode::kConstant, Shape(ElementType::kF32, {}), {}, ".zero");
  zero->literal = Literal::Scalar<float>(ElementType::kF32, 0.0f);
  Instruction* zeros = add(Opcode::kBroadcast, shape, {zero}, ".zeros");
  zeros->attrs[Attr::kDimensions].ints = {};
  instr.operands = {difference, zeros};
  instr.attrs[Attr::kDirection].direction = Direction::kEq;
  return Status::Ok();
}

}  // namespace detrain::xla_import
