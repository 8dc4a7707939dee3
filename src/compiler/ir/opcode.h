// Opcodes and their static properties, all generated from ops.def (the one op table).
//
// `switch` statements over Opcode, UnaryOp and BinaryOp have no `default:` label, so an op
// added to ops.def that some consumer does not handle is a compile-time warning (-Wswitch,
// part of -Wall) rather than a silent fallthrough.
//
// Thread safety: constants and pure functions only.
#ifndef DETRAIN_COMPILER_IR_OPCODE_H_
#define DETRAIN_COMPILER_IR_OPCODE_H_

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "compiler/ir/element_type.h"
#include "compiler/ir/op_enums.h"  // UnaryOp, BinaryOp, Direction

namespace detrain::ir {

enum class Opcode : uint8_t {
#define OP(e, s, n, c, o, x, a, t) e,
#include "compiler/ir/ops.def"
#undef OP
};

enum class OpCategory : uint8_t {
  kLeaf,
  kUnary,
  kBinary,
  kElementwise,
  kDataMovement,
  kReduction,
  kStructural
};
enum class ReductionOrder : uint8_t { kNone, kFmaChain, kPairwise64, kUpdateOrder, kShardTree };
enum class Exactness : uint8_t { kExact, kRounded, kOrdered };

enum class Attr : uint8_t {
#define ATTR(e, s, k) e,
#include "compiler/ir/attrs.def"
#undef ATTR
};
enum class AttrKind : uint8_t {
  kInt,
  kInts,
  kIntLists,
  kString,
  kDirection,
  kComputation,
  kSlice,
  kPadding,
  kWindow,
  kDimLabels,
  kFusionKind  // an identifier accepted by IsFusionKind (attributes.h)
};

constexpr int kVariadic = -1;

std::string_view OpcodeName(Opcode op);
std::optional<Opcode> OpcodeFromName(std::string_view name);
int OpcodeArity(Opcode op);  // kVariadic for variadic ops
OpCategory OpcodeCategory(Opcode op);
ReductionOrder OpcodeReductionOrder(Opcode op);
Exactness OpcodeExactness(Opcode op);
// The types column of ops.def: the element kinds ('b', 's', 'u', 'f') the op's value operands
// (leaf ops: its result) may have; and whether `type` is one of them.
std::string_view OpcodeOperandTypes(Opcode op);
bool OpcodeAcceptsType(Opcode op, ElementType type);
std::optional<UnaryOp> AsUnaryOp(Opcode op);
std::optional<BinaryOp> AsBinaryOp(Opcode op);
std::vector<Opcode> AllOpcodes();

// The attributes an op accepts, and which of them may be absent (then they take the default:
// an empty list, an empty replica group list).
struct AttrSpec {
  Attr attr;
  bool optional;
};
const std::vector<AttrSpec>& OpcodeAttrs(Opcode op);
// The attribute column of ops.def as written (for the table's own consistency test).
std::string_view OpcodeAttrList(Opcode op);

std::string_view AttrName(Attr attr);
std::optional<Attr> AttrFromName(std::string_view name);
AttrKind AttrKindOf(Attr attr);
std::vector<Attr> AllAttrs();

}  // namespace detrain::ir

#endif  // DETRAIN_COMPILER_IR_OPCODE_H_
