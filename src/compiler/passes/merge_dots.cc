// merge-dots — dots (and convolutions) that share their right operand become one over the
// concatenated rows (batch).
//
// What it does: in the entry computation, groups the dots that have the same rhs instruction,
// the same attributes and element type, no batch dimensions, an lhs whose dimension 0 is not
// contracted, and lhs shapes equal past dimension 0 — the S per-shard dots of a train step
// that multiply their own rows by one weight (x_s @ w, dy_s @ w^T). A group of two or more
// becomes
//   x = concatenate(lhs_1, ..., lhs_n), dimensions={0}
//       (or the array they slice, or one slice of it, when the lhs are consecutive row
//        slices of one array)
//   d = dot(x, rhs)                                       (same attributes)
//   y_i = slice(d, [off_i : off_i + m_i] on dimension 0, whole on the others)
// A dot's output element is the fma chain of one lhs row with one rhs column in ascending k
// (kFmaChain, compiler/semantics/orders.h), and neither the row nor the column nor the order
// changes, so every element keeps its bits; the backend gets one large GEMM, which packs the
// shared weight once instead of once per shard (docs/passes.md). Convolutions whose lhs and
// result are batch-major (dim_labels "b...->b...") merge the same way along the batch: an
// output element reads one batch element of the lhs, in the same window order.
// Grouping follows canonical order; a dot joins its group only if its lhs does not depend on
// a member, and groups are merged one at a time on the rewritten graph, so no merge creates a
// cycle. Groups are capped at kMaxGroup members.
// What it does not do: merge dots whose shared operand is on the left, or whose lhs differ
// (e.g. per-shard weight gradients, which the shard tree then adds); look inside called
// computations (run `inline` first).
// Pre: a verified module. Post: a verified module; results unchanged bit for bit.
#include <string>
#include <unordered_set>

#include "compiler/passes/passes.h"
#include "compiler/passes/rewrite.h"

namespace detrain::passes {
namespace {

using ir::Attr;
using ir::Instruction;
using ir::Opcode;

constexpr size_t kMaxGroup = 64;

// A convolution whose lhs and result both have the batch as dimension 0 (dim_labels
// "b..._...->b...").
bool BatchMajorConvolution(const Instruction& conv) {
  const ir::AttrValue* labels = conv.FindAttr(Attr::kDimLabels);
  if (labels == nullptr) return false;
  const std::string& l = labels->s;
  const size_t arrow = l.find("->");
  return !l.empty() && l[0] == 'b' && arrow != std::string::npos && arrow + 2 < l.size() &&
         l[arrow + 2] == 'b';
}

bool Mergeable(const Instruction& dot) {
  if (dot.opcode == Opcode::kConvolution) {
    return dot.operands.size() == 2 && dot.operands[0]->shape.rank() >= 1 &&
           BatchMajorConvolution(dot);
  }
  if (dot.opcode != Opcode::kDot || dot.operands.size() != 2) return false;
  if (!dot.IntsAttr(Attr::kLhsBatchDims).empty() || !dot.IntsAttr(Attr::kRhsBatchDims).empty())
    return false;
  const Instruction& lhs = *dot.operands[0];
  if (lhs.shape.rank() < 1) return false;
  for (int64_t d : dot.IntsAttr(Attr::kLhsContractingDims)) {
    if (d == 0) return false;
  }
  return true;
}

// Dots with equal keys may share a group.
std::string GroupKey(const Instruction& dot) {
  std::string key = std::to_string(reinterpret_cast<uintptr_t>(dot.operands[1]));
  key += std::string(ir::OpcodeName(dot.opcode));
  key += ir::ElementTypeName(dot.shape.type());
  for (const auto& [attr, value] : dot.attrs) {
    key += "|" + ir::FormatAttrValue(attr, value, [](const ir::Computation*) { return ""; });
  }
  const auto& dims = dot.operands[0]->shape.dims();
  for (size_t i = 1; i < dims.size(); ++i) key += "," + std::to_string(dims[i]);
  return key;  // compared for equality only
}

struct Group {
  std::string key;
  std::vector<Instruction*> members;
  std::unordered_set<const Instruction*> set;
};

// The lhs of the merged dot: the source array (or one slice of it) when the members' lhs are
// consecutive unit-stride row slices of one array that keep its other dimensions whole;
// otherwise their concatenation.
Instruction* MergedLhs(ir::Computation& c, const std::vector<Instruction*>& members, int64_t rows) {
  const Instruction* first = members.front()->operands[0];
  Instruction* source = first->opcode == Opcode::kSlice ? first->operands[0] : nullptr;
  int64_t start = 0, next = 0;
  for (size_t i = 0; source != nullptr && i < members.size(); ++i) {
    const Instruction* lhs = members[i]->operands[0];
    if (lhs->opcode != Opcode::kSlice || lhs->operands[0] != source) {
      source = nullptr;
      break;
    }
    const auto& slice = lhs->FindAttr(Attr::kSlice)->slice;
    for (size_t d = 0; d < slice.size(); ++d) {
      const bool whole = d == 0 || (slice[d].start == 0 &&
                                    slice[d].limit == source->shape.dim(static_cast<int>(d)));
      if (slice[d].stride != 1 || !whole) source = nullptr;
    }
    if (source == nullptr) break;
    if (i == 0) start = next = slice[0].start;
    if (slice[0].start != next) source = nullptr;
    next = slice[0].limit;
  }
  if (source != nullptr) {
    if (start == 0 && next == source->shape.dim(0)) return source;
    std::vector<ir::SliceDim> range;
    for (int d = 0; d < source->shape.rank(); ++d)
      range.push_back(d == 0 ? ir::SliceDim{start, next, 1}
                             : ir::SliceDim{0, source->shape.dim(d), 1});
    ir::AttrMap attrs;
    attrs[Attr::kSlice].slice = range;
    std::vector<int64_t> dims = source->shape.dims();
    dims[0] = rows;
    return AddInstruction(c, Opcode::kSlice, ir::Shape(source->shape.type(), dims), {source},
                          attrs);
  }
  std::vector<Instruction*> parts;
  for (Instruction* m : members) parts.push_back(m->operands[0]);
  std::vector<int64_t> dims = first->shape.dims();
  dims[0] = rows;
  ir::AttrMap attrs;
  attrs[Attr::kDimensions].ints = {0};
  return AddInstruction(c, Opcode::kConcatenate, ir::Shape(first->shape.type(), dims), parts,
                        attrs);
}

// Merges `group` in `c`; returns each member's replacement (a slice of the merged dot).
std::vector<Instruction*> Merge(ir::Computation& c, const std::vector<Instruction*>& members) {
  int64_t rows = 0;
  for (const Instruction* m : members) rows += m->operands[0]->shape.dim(0);
  Instruction* lhs = MergedLhs(c, members, rows);
  const Instruction& first = *members.front();
  std::vector<int64_t> dims = first.shape.dims();
  dims[0] = rows;
  Instruction* dot = AddInstruction(c, first.opcode, ir::Shape(first.shape.type(), dims),
                                    {lhs, first.operands[1]}, first.attrs);
  std::vector<Instruction*> parts;
  int64_t offset = 0;
  for (const Instruction* m : members) {
    const int64_t n = m->shape.dim(0);
    std::vector<ir::SliceDim> range;
    for (int d = 0; d < m->shape.rank(); ++d)
      range.push_back(d == 0 ? ir::SliceDim{offset, offset + n, 1}
                             : ir::SliceDim{0, m->shape.dim(d), 1});
    ir::AttrMap attrs;
    attrs[Attr::kSlice].slice = range;
    parts.push_back(AddInstruction(c, Opcode::kSlice, m->shape, {dot}, attrs));
    offset += n;
  }
  return parts;
}

void Redirect(ir::Computation& c, const std::vector<Instruction*>& from,
              const std::vector<Instruction*>& to) {
  std::unordered_set<const Instruction*> replaced(from.begin(), from.end());
  const std::unordered_set<const Instruction*> fresh(to.begin(), to.end());
  for (const auto& instr : c.instructions()) {
    if (fresh.count(instr.get())) continue;
    for (Instruction*& op : instr->operands) {
      if (!replaced.count(op)) continue;
      for (size_t i = 0; i < from.size(); ++i) {
        if (op == from[i]) op = to[i];
      }
    }
  }
  for (size_t i = 0; i < from.size(); ++i) {
    if (c.root() == from[i]) c.set_root(to[i]);
  }
}

}  // namespace

PassOutput MergeDots(const ir::Module& module) {
  DETRAIN_ASSIGN_OR_RETURN(auto out, CloneModule(module));
  ir::Computation& entry = *out->entry();
  DETRAIN_ASSIGN_OR_RETURN(auto order, MutablePostOrder(entry));
  std::vector<Group> groups;  // in order of their first member
  for (Instruction* instr : order) {
    if (!Mergeable(*instr)) continue;
    std::string key = GroupKey(*instr);
    Group* group = nullptr;
    for (Group& g : groups) {
      if (g.key == key && g.members.size() < kMaxGroup) group = &g;
    }
    if (group == nullptr || DependsOn(instr->operands[0], group->set)) {
      groups.push_back(Group{key, {}, {}});
      group = &groups.back();
    }
    group->members.push_back(instr);
    group->set.insert(instr);
  }
  bool changed = false;
  for (Group& g : groups) {
    if (g.members.size() < 2) continue;
    // Earlier merges rewired the graph: keep the members whose lhs depends on no other kept
    // member (in either direction), in canonical order.
    std::vector<Instruction*> kept;
    std::unordered_set<const Instruction*> kept_set;
    for (Instruction* m : g.members) {
      bool ok = !DependsOn(m->operands[0], kept_set);
      for (size_t i = 0; ok && i < kept.size(); ++i) {
        ok = !DependsOn(kept[i]->operands[0], {m});
      }
      if (!ok) continue;
      kept.push_back(m);
      kept_set.insert(m);
    }
    if (kept.size() < 2) continue;
    Redirect(entry, kept, Merge(entry, kept));
    changed = true;
  }
  if (!changed) return out;
  return CloneModule(*out);
}

}  // namespace detrain::passes
