// bf16 and f16 in HLO text (expansions.h WidenHalfTypes; docs/ir.md "bf16 and f16"):
// detrain's IR has no 16-bit float type. A bf16 or f16 value is held as the f32 of the same
// value, and every instruction that can produce a value outside the format is followed by
// round-to-bf16 or round-to-f16 (IEEE round to nearest even, semantics/scalar.h): each op in f32,
// its result rounded to the format, as the HLO states, with every rounding written in the
// program.
#include <map>
#include <set>
#include <string>
#include <vector>

#include "compiler/xla_import/expansions.h"

namespace detrain::xla_import {
namespace {

const char* FormatName(HalfFormat f) {
  return f == HalfFormat::kBf16 ? "bf16" : f == HalfFormat::kF16 ? "f16" : "f32";
}

// Ops whose result is one of their operands' elements (or a constant zero of pad's value): on
// values already in the format, the result is too.
bool MovesElements(Opcode op) {
  switch (op) {
    case Opcode::kBroadcast:
    case Opcode::kReshape:
    case Opcode::kTranspose:
    case Opcode::kSlice:
    case Opcode::kConcatenate:
    case Opcode::kPad:
    case Opcode::kReverse:
    case Opcode::kDynamicSlice:
    case Opcode::kDynamicUpdateSlice:
    case Opcode::kGather:
    case Opcode::kSelect:
    case Opcode::kClamp:
    case Opcode::kMaximum:
    case Opcode::kMinimum:
    case Opcode::kAbs:
    case Opcode::kNegate:
      return true;
    default:
      return false;
  }
}

class Widener {
 public:
  explicit Widener(const std::map<const Instruction*, HalfFormat>& half) : half_(half) {}

  HalfFormat FormatOf(const Instruction* i) const {
    auto it = half_.find(i);
    return it == half_.end() ? HalfFormat::kNone : it->second;
  }

  // The value operands of `instr` that are f32 arrays: the ones whose format matters.
  static std::vector<const Instruction*> FloatOperands(const Instruction& instr) {
    std::vector<const Instruction*> out;
    for (size_t k = 0; k < instr.operands.size(); ++k) {
      const Instruction* o = instr.operands[k];
      if (o->shape.is_tuple() || o->shape.type() != ElementType::kF32) continue;
      if (instr.opcode == Opcode::kSelect && k == 0) continue;  // the predicate
      out.push_back(o);
    }
    return out;
  }

  // Elementwise ops and movements take operands of their result's type in HLO; with bf16 and
  // f16 held as f32 the verifier no longer sees a mismatch, so it is checked here.
  Status CheckOperandFormats(const Instruction& instr, HalfFormat f) const {
    const OpCategory c = OpcodeCategory(instr.opcode);
    const bool same_type =
        c == OpCategory::kUnary || c == OpCategory::kBinary || MovesElements(instr.opcode);
    const bool compare = instr.opcode == Opcode::kCompare;
    if (!same_type && !compare) return Status::Ok();
    std::vector<const Instruction*> ops = FloatOperands(instr);
    if (compare && !ops.empty()) f = FormatOf(ops[0]);
    for (const Instruction* o : ops) {
      if (FormatOf(o) == f) continue;
      return Cursor::ErrorAt(instr.loc, std::string(OpcodeName(instr.opcode)) + " " +
                                            Quoted(instr.name) + ": operand " + Quoted(o->name) +
                                            " is " + FormatName(FormatOf(o)) + ", expected " +
                                            FormatName(f));
    }
    return Status::Ok();
  }

  Status Widen(Computation& comp, bool accumulator) {
    std::map<Instruction*, Instruction*> rounded;  // instruction -> its rounding
    std::vector<Instruction*> instrs;
    for (const auto& i : comp.instructions()) instrs.push_back(i.get());
    for (Instruction* instr : instrs) {
      const HalfFormat f = FormatOf(instr);
      DETRAIN_RETURN_IF_ERROR(CheckOperandFormats(*instr, f));
      // To bf16/f16: the bits are not held. (From them, a bf16 value's f32 bits order as its
      // own: the total-order compare of sort reads them so.)
      if (instr->opcode == Opcode::kBitcastConvert && f != HalfFormat::kNone) {
        return Cursor::ErrorAt(instr->loc,
                               "bitcast-convert " + Quoted(instr->name) +
                                   " to bf16/f16 is not supported (detrain holds bf16 and f16 "
                                   "values as f32)");
      }
      if (f == HalfFormat::kNone || accumulator || instr->shape.is_tuple()) continue;
      if (MovesElements(instr->opcode)) continue;  // operands checked to be in the format
      const Opcode round = f == HalfFormat::kBf16 ? Opcode::kRoundToBf16 : Opcode::kRoundToF16;
      rounded[instr] = AddBeside(comp, *instr, round, instr->shape, {instr},
                                 f == HalfFormat::kBf16 ? ".bf16" : ".f16");
    }
    if (rounded.empty()) return Status::Ok();
    for (Instruction* i : instrs) {  // the instructions before the roundings were added
      for (Instruction*& o : i->operands) {
        auto it = rounded.find(o);
        if (it != rounded.end()) o = it->second;
      }
    }
    auto root = rounded.find(comp.root());
    if (root != rounded.end()) comp.set_root(root->second);
    return Status::Ok();
  }

 private:
  const std::map<const Instruction*, HalfFormat>& half_;
};

}  // namespace

Status WidenHalfTypes(Module& module, const std::map<const Instruction*, HalfFormat>& half,
                      const std::set<const Computation*>& accumulators) {
  if (half.empty()) return Status::Ok();
  Widener w(half);
  for (const auto& comp : module.computations()) {
    DETRAIN_RETURN_IF_ERROR(w.Widen(*comp, accumulators.count(comp.get()) != 0));
  }
  return Status::Ok();
}

}  // namespace detrain::xla_import
