// See opcode.h. Tables generated from ops.def and attrs.def.
#include "compiler/ir/opcode.h"

#include <array>
#include <string>

namespace detrain::ir {
namespace {

struct OpInfo {
  Opcode op;
  std::string_view name;
  int arity;
  OpCategory category;
  ReductionOrder order;
  Exactness exactness;
  std::string_view attrs;
  std::string_view types;
};

constexpr OpInfo kOps[] = {
#define OP(e, s, n, c, o, x, a, t) \
  {Opcode::e, s, n, OpCategory::c, ReductionOrder::o, Exactness::x, a, t},
#include "compiler/ir/ops.def"
#undef OP
};
constexpr size_t kNumOps = sizeof(kOps) / sizeof(kOps[0]);

struct AttrInfo {
  Attr attr;
  std::string_view name;
  AttrKind kind;
};
constexpr AttrInfo kAttrs[] = {
#define ATTR(e, s, k) {Attr::e, s, AttrKind::k},
#include "compiler/ir/attrs.def"
#undef ATTR
};

const OpInfo& Info(Opcode op) { return kOps[static_cast<size_t>(op)]; }

std::vector<AttrSpec> ParseAttrList(std::string_view list) {
  std::vector<AttrSpec> specs;
  size_t pos = 0;
  while (pos < list.size()) {
    size_t end = list.find(' ', pos);
    if (end == std::string_view::npos) end = list.size();
    std::string_view word = list.substr(pos, end - pos);
    pos = end + 1;
    if (word.empty()) continue;
    bool optional = word.front() == '?';
    if (optional) word.remove_prefix(1);
    // ops.def and attrs.def are checked against each other by ops_table_test.
    if (auto attr = AttrFromName(word)) specs.push_back({*attr, optional});
  }
  return specs;
}

}  // namespace

std::string_view OpcodeName(Opcode op) { return Info(op).name; }

std::optional<Opcode> OpcodeFromName(std::string_view name) {
  for (const OpInfo& info : kOps) {
    if (info.name == name) return info.op;
  }
  return std::nullopt;
}

int OpcodeArity(Opcode op) { return Info(op).arity; }
OpCategory OpcodeCategory(Opcode op) { return Info(op).category; }
ReductionOrder OpcodeReductionOrder(Opcode op) { return Info(op).order; }
Exactness OpcodeExactness(Opcode op) { return Info(op).exactness; }
std::string_view OpcodeOperandTypes(Opcode op) { return Info(op).types; }

bool OpcodeAcceptsType(Opcode op, ElementType type) {
  return Info(op).types.find(ElementTypeKind(type)) != std::string_view::npos;
}

std::optional<UnaryOp> AsUnaryOp(Opcode op) {
  switch (op) {
#define OP(e, s, n, c, o, x, a, t) \
  case Opcode::e:                  \
    return std::nullopt;
#define UNARY(e, s, x, t) \
  case Opcode::e:         \
    return UnaryOp::e;
#include "compiler/ir/ops.def"
#undef OP
  }
  return std::nullopt;
}

std::optional<BinaryOp> AsBinaryOp(Opcode op) {
  switch (op) {
#define OP(e, s, n, c, o, x, a, t) \
  case Opcode::e:                  \
    return std::nullopt;
#define BINARY(e, s, x, t) \
  case Opcode::e:          \
    return BinaryOp::e;
#include "compiler/ir/ops.def"
#undef OP
  }
  return std::nullopt;
}

std::vector<Opcode> AllOpcodes() {
  std::vector<Opcode> all;
  for (const OpInfo& info : kOps) all.push_back(info.op);
  return all;
}

const std::vector<AttrSpec>& OpcodeAttrs(Opcode op) {
  static const std::array<std::vector<AttrSpec>, kNumOps> kSpecs = [] {
    std::array<std::vector<AttrSpec>, kNumOps> specs;
    for (size_t i = 0; i < kNumOps; ++i) specs[i] = ParseAttrList(kOps[i].attrs);
    return specs;
  }();
  return kSpecs[static_cast<size_t>(op)];
}

std::string_view OpcodeAttrList(Opcode op) { return Info(op).attrs; }

std::string_view AttrName(Attr attr) { return kAttrs[static_cast<size_t>(attr)].name; }

std::optional<Attr> AttrFromName(std::string_view name) {
  for (const AttrInfo& info : kAttrs) {
    if (info.name == name) return info.attr;
  }
  return std::nullopt;
}

AttrKind AttrKindOf(Attr attr) { return kAttrs[static_cast<size_t>(attr)].kind; }

std::vector<Attr> AllAttrs() {
  std::vector<Attr> all;
  for (const AttrInfo& info : kAttrs) all.push_back(info.attr);
  return all;
}

}  // namespace detrain::ir
