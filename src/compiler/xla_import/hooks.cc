// XlaHooks (hooks.h): what XLA's text says that the IR's parser does not read itself — the
// 16-bit float types, the op names parsed as placeholders, the attributes of sort, topk and
// compare — and the bf16/f16 widening once the module is complete.
#include "compiler/xla_import/hooks.h"

namespace detrain::xla_import {
namespace {

// Gather's and scatter's batching dimensions: read by the parser as attributes (attrs.def),
// removed by UnbatchIndexing.
bool HasBatchingDims(const Instruction& instr) {
  return instr.HasAttr(Attr::kOperandBatchingDims) ||
         instr.HasAttr(Attr::kStartIndicesBatchingDims) ||
         instr.HasAttr(Attr::kInputBatchingDims) ||
         instr.HasAttr(Attr::kScatterIndicesBatchingDims);
}

}  // namespace

std::optional<ElementType> XlaHooks::ForeignElementType(std::string_view name) const {
  if (name == "bf16" || name == "f16") return ElementType::kF32;  // held as f32 (half_types.cc)
  return std::nullopt;
}

std::vector<std::string_view> XlaHooks::ForeignElementTypeNames() const { return {"bf16", "f16"}; }

std::optional<Opcode> XlaHooks::ForeignOp(std::string_view name) const {
  // XLA's layout ops, which optimized modules hold: between row-major layouts a copy is the
  // identity and a bitcast a reshape (or, same dimensions, a bitcast-convert); they become
  // those ops once the operand is known (ExpandLayoutOp).
  if (name == "copy" || name == "bitcast") return Opcode::kReshape;
  // is-finite(x), a pred per element: x - x == 0 exactly when x is finite (an infinity or a
  // NaN gives NaN, and NaN == 0 is false), so it becomes that compare (ExpandIsFinite).
  if (name == "is-finite") return Opcode::kCompare;
  // select-and-scatter (max-pooling's gradient) is parsed as a reduce-window, whose window
  // attribute it has, and expanded once its operands are known (ExpandSelectScatter).
  if (name == "select-and-scatter") return Opcode::kReduceWindow;
  // sort (parsed as a reduce: dimensions and to_apply) and topk (k, largest) become a stable
  // sorting network of exact ops (sort.cc).
  if (name == "sort") return Opcode::kReduce;
  if (name == "topk") return Opcode::kTuple;
  return std::nullopt;
}

Result<bool> XlaHooks::ForeignAttribute(Instruction& instr, const std::string& name,
                                        SourceLoc /*loc*/, Cursor& cur) {
  if (name == "called_computations") {
    // {%name}: one computation (the TopK custom call's comparator).
    DETRAIN_RETURN_IF_ERROR(cur.Expect("{", "to open called_computations"));
    SourceLoc nloc = (cur.SkipSpace(), cur.Loc());
    std::string comp = cur.ReadName();
    if (comp.empty()) return cur.Error("expected a computation name, found " + cur.Found());
    DETRAIN_RETURN_IF_ERROR(cur.Expect("}", "after the one computation of called_computations"));
    called_[&instr] = {comp, nloc};
    return true;
  }
  if (name == "k" || name == "largest" || name == "is_stable") {
    SourceLoc vloc = (cur.SkipSpace(), cur.Loc());
    if (name == "k") {
      DETRAIN_ASSIGN_OR_RETURN(int64_t k, cur.ReadInt("k"));
      if (k < 0) return Cursor::ErrorAt(vloc, "k must not be negative");
      topk_args_[&instr].k = k;
      return true;
    }
    std::string v = cur.ReadWord();
    if (v != "true" && v != "false") {
      return Cursor::ErrorAt(vloc, name + " must be true or false, found " + Quoted(v));
    }
    // is_stable: detrain's sort is always stable, which an unstable sort may be.
    if (name == "largest") topk_args_[&instr].largest = v == "true";
    return true;
  }
  if (name == "type") {  // compare's: TOTALORDER here, the default (FLOAT...) left to the parser
    Cursor value = cur;  // a look ahead at the value
    SourceLoc vloc = (value.SkipSpace(), value.Loc());
    std::string v = value.ReadWord();
    if (v == "FLOAT" || v == "SIGNED" || v == "UNSIGNED") return false;  // the parser reads it
    cur = value;  // past the value (and any unterminated comment, which then explains the error)
    if (v != "TOTALORDER") {
      return Cursor::ErrorAt(
          vloc,
          "unsupported type=" + v + " (only FLOAT, SIGNED, UNSIGNED or TOTALORDER is supported)");
    }
    total_order_.insert(&instr);  // ExpandTotalOrderCompare
    return true;
  }
  return false;
}

Status XlaHooks::OnInstruction(Computation& /*comp*/, Instruction& instr,
                               const ir::InstructionText& text) {
  std::string op_name = text.op_name;
  const bool topk = op_name == "topk";
  if (!topk && topk_args_.count(&instr)) {
    return Cursor::ErrorAt(text.op_loc, "attributes k and largest are only for topk");
  }
  // XLA's TopK custom call (optimized modules): a topk with its own comparator.
  const bool topk_call = instr.opcode == Opcode::kCustomCall &&
                         instr.HasAttr(Attr::kCustomCallTarget) &&
                         instr.attrs.at(Attr::kCustomCallTarget).s == "TopK";
  if (called_.count(&instr) && !topk_call) {
    return Cursor::ErrorAt(text.op_loc,
                           "called_computations is only supported on the TopK custom call");
  }
  if (topk_call) op_name = "topk";
  if (!text.shape.foreign_type.empty()) {
    half_[&instr] = text.shape.foreign_type == "bf16" ? HalfFormat::kBf16 : HalfFormat::kF16;
  }
  if (text.shape.other_layout) other_layout_[&instr] = text.shape.minor_to_major;
  // A gather or scatter with batching dimensions becomes an unbatched one (UnbatchIndexing).
  // A reduce of several inputs (argmax) becomes elementwise ops in reduce's order
  // (ExpandReduceOfMany).
  const bool placeholder = ForeignOp(text.op_name).has_value();
  const bool many = (op_name == "reduce" || op_name == "reduce-window") && text.operand_count > 2;
  if (placeholder || many || HasBatchingDims(instr) || total_order_.count(&instr) || topk_call) {
    pending_.push_back({&instr, op_name, text.op_loc});
  }
  return Status::Ok();
}

Status XlaHooks::OnModule(Module& module) {
  // The computations that reduce, reduce-window, scatter and all-reduce apply (every to_apply
  // but a call's): they run in f32, their result rounded once. An expansion took its own
  // computations' references, which the parser therefore left unresolved.
  std::set<const Computation*> accumulators;
  for (const auto& comp : module.computations()) {
    for (const auto& instr : comp->instructions()) {
      auto it = instr->attrs.find(Attr::kToApply);
      if (it == instr->attrs.end() || it->second.computation == nullptr) continue;
      if (instr->opcode != Opcode::kCall) accumulators.insert(it->second.computation);
    }
  }
  return WidenHalfTypes(module, half_, accumulators);
}

}  // namespace detrain::xla_import
