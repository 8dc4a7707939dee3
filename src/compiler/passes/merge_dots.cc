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
// Cost: linear in the module times the group count / 64 (GroupReach's bit rows), with no graph
// search unless an earlier merge made one group's members reachable from each other (then the
// exact search of the rewritten graph decides, as before).
// What it does not do: merge dots whose shared operand is on the left, or whose lhs differ
// (e.g. per-shard weight gradients, which the shard tree then adds); look inside called
// computations (run `inline` first).
// Pre: a verified module. Post: a verified module; results unchanged bit for bit.
#include <algorithm>
#include <map>
#include <string>
#include <vector>

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

// Dots with equal keys may share a group. The rhs is named by its id (the key is compared for
// equality only, within one computation).
std::string GroupKey(const Instruction& dot) {
  std::string key = std::to_string(dot.operands[1]->id);
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
  std::vector<Instruction*> members;
  std::vector<const Instruction*> lhs;  // each member's lhs in the input graph
};

// Which groups each instruction depends on (through operands, itself included): a row of bits
// over group numbers per instruction, filled in canonical order (operands first), so "does x
// depend on a member of group g" is one bit test. A row covers the groups that existed when
// its instruction was visited; a later group's members all come later, so x cannot depend on
// them. Rows live in one array.
class GroupReach {
 public:
  // Rows for `instructions` instructions, of at most `max_words` words in all.
  GroupReach(size_t instructions, uint64_t max_words)
      : start_(instructions, 0), words_(instructions, 0), max_words_(max_words) {}

  // Whether the rows outgrew `max_words` (then they are incomplete and must not be read).
  bool overflowed() const { return overflowed_; }

  // Fills x's row (its operands' rows must be filled) for `groups` groups.
  void Visit(const Instruction& x, size_t groups) {
    const size_t id = static_cast<size_t>(x.id);
    const size_t n = (groups + 63) / 64;
    if (overflowed_ || bits_.size() + n > max_words_) {
      overflowed_ = true;
      return;
    }
    start_[id] = bits_.size();
    words_[id] = n;
    bits_.resize(bits_.size() + n, 0);
    for (const Instruction* op : x.operands) {
      const size_t o = static_cast<size_t>(op->id);
      for (size_t w = 0; w < words_[o]; ++w) bits_[start_[id] + w] |= bits_[start_[o] + w];
    }
  }
  void Set(const Instruction& x, size_t group) {
    if (overflowed_) return;
    const size_t id = static_cast<size_t>(x.id);
    bits_[start_[id] + group / 64] |= uint64_t{1} << (group % 64);
  }
  bool Has(const Instruction& x, size_t group) const {
    const size_t id = static_cast<size_t>(x.id);
    return group / 64 < words_[id] && (bits_[start_[id] + group / 64] >> (group % 64) & 1) != 0;
  }
  // ORs x's row into `row`.
  void OrInto(const Instruction& x, std::vector<uint64_t>* row) const {
    const size_t id = static_cast<size_t>(x.id);
    if (row->size() < words_[id]) row->resize(words_[id], 0);
    for (size_t w = 0; w < words_[id]; ++w) (*row)[w] |= bits_[start_[id] + w];
  }

 private:
  std::vector<size_t> start_, words_;  // by id
  std::vector<uint64_t> bits_;
  uint64_t max_words_;
  bool overflowed_ = false;
};

// The groups, in order of their first member: a dot joins the newest group of its key that is
// not full, unless its lhs depends on a member of that group (then it starts a new one).
// Keys seen once are left out (a group of one is never merged). With `search`, the dependence
// is decided by searching the graph instead of by `reach` (which is then left empty).
std::vector<Group> MakeGroups(const std::vector<Instruction*>& order, size_t instructions,
                              GroupReach* reach, DependenceScratch* search) {
  std::map<std::string, size_t> seen;
  std::vector<std::string> keys(instructions);  // by id; empty: not a candidate
  for (Instruction* instr : order) {
    if (!Mergeable(*instr)) continue;
    std::string& key = keys[static_cast<size_t>(instr->id)];
    key = GroupKey(*instr);
    ++seen[key];
  }
  std::vector<Group> groups;
  std::map<std::string, std::vector<size_t>> open;  // key -> its groups that are not full
  for (Instruction* instr : order) {
    const std::string& key = keys[static_cast<size_t>(instr->id)];
    if (key.empty() || seen.at(key) < 2) {
      if (search == nullptr) reach->Visit(*instr, groups.size());
      if (search == nullptr && reach->overflowed()) return groups;
      continue;
    }
    std::vector<size_t>& candidates = open[key];
    const Instruction* lhs = instr->operands[0];
    const bool depends = !candidates.empty() &&
                         (search != nullptr ? DependsOn(lhs,
                                                        {groups[candidates.back()].members.begin(),
                                                         groups[candidates.back()].members.end()},
                                                        search)
                                            : reach->Has(*lhs, candidates.back()));
    if (candidates.empty() || depends) {
      candidates.push_back(groups.size());
      groups.emplace_back();
    }
    const size_t g = candidates.back();
    groups[g].members.push_back(instr);
    groups[g].lhs.push_back(lhs);
    if (groups[g].members.size() == kMaxGroup) candidates.pop_back();
    if (search == nullptr) {
      reach->Visit(*instr, groups.size());
      reach->Set(*instr, g);
      if (reach->overflowed()) return groups;  // the caller decides again by search
    }
  }
  return groups;
}

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

// The users of every instruction, kept current as merges add instructions and redirect uses.
class Users {
 public:
  Users() = default;
  explicit Users(const ir::Computation& c) : users_(c.instructions().size()) {
    for (const auto& instr : c.instructions()) Add(instr.get());
  }
  // Records the uses of `instr` (added after construction, or already there).
  void Add(Instruction* instr) {
    for (const Instruction* op : instr->operands) {
      const size_t id = static_cast<size_t>(op->id);
      if (id >= users_.size()) users_.resize(id + 1);
      users_[id].push_back(instr);
    }
  }
  // Makes every use of from[i] a use of to[i] (the slices that replace a group's members use
  // only the merged dot, never a member).
  void Redirect(ir::Computation& c, const std::vector<Instruction*>& from,
                const std::vector<Instruction*>& to) {
    for (size_t i = 0; i < from.size(); ++i) {
      const size_t id = static_cast<size_t>(from[i]->id);
      if (id >= users_.size()) continue;
      for (Instruction* user : users_[id]) {
        for (Instruction*& op : user->operands) {
          if (op == from[i]) op = to[i];
        }
        Track(to[i], user);
      }
      users_[id].clear();
      if (c.root() == from[i]) c.set_root(to[i]);
    }
  }

 private:
  void Track(const Instruction* x, Instruction* user) {
    const size_t id = static_cast<size_t>(x->id);
    if (id >= users_.size()) users_.resize(id + 1);
    users_[id].push_back(user);
  }
  std::vector<std::vector<Instruction*>> users_;  // by id; may repeat a user
};

// The reference's redirect: every instruction but the new slices is scanned.
void ScanRedirect(ir::Computation& c, const std::vector<Instruction*>& from,
                  const std::vector<Instruction*>& to) {
  for (const auto& instr : c.instructions()) {
    if (std::find(to.begin(), to.end(), instr.get()) != to.end()) continue;
    for (Instruction*& op : instr->operands) {
      for (size_t i = 0; i < from.size(); ++i) {
        if (op == from[i]) op = to[i];
      }
    }
  }
  for (size_t i = 0; i < from.size(); ++i) {
    if (c.root() == from[i]) c.set_root(to[i]);
  }
}

// Whether group members could reach one another through earlier merges. A merge makes each
// kept member's users depend on every kept member's lhs; a path between two members of a
// later group g that did not exist before must therefore go from a member of g to the lhs of
// a kept member of an earlier merged group. `entered` holds, over group numbers, the groups
// on which some kept lhs of a merged group depends (in the input graph); if g is not among
// them, no merge so far joined g's members, and phase 1's check still holds.
// (A path into a merged dot through its shared rhs, or through the array whose slices are
// the lhs, adds nothing: the rhs and that array were already operands of every member.)
bool MayBeJoined(const std::vector<uint64_t>& entered, size_t g) {
  return g / 64 < entered.size() && (entered[g / 64] >> (g % 64) & 1) != 0;
}

// The bit rows may take at most this many words (128 MiB); past it (a module of very many
// groups), the groups are decided by search — the same decisions, in time quadratic in the
// module, as before the rows.
constexpr uint64_t kMaxReachWords = uint64_t{1} << 24;

// MergeDots with rows of at most `max_reach_words`, or with `reference` MergeDotsBySearch:
// every decision by a graph search of the current graph, every redirect by a scan of all
// instructions.
Status Run(ir::Module& module, bool reference, uint64_t max_reach_words) {
  ir::Computation& entry = *module.entry();
  DETRAIN_ASSIGN_OR_RETURN(auto order, MutablePostOrder(entry));
  bool search = reference;
  DependenceScratch scratch;
  GroupReach reach(entry.instructions().size(), search ? 0 : max_reach_words);
  std::vector<Group> groups =
      MakeGroups(order, entry.instructions().size(), &reach, search ? &scratch : nullptr);
  if (!search && reach.overflowed()) {
    search = true;
    groups = MakeGroups(order, entry.instructions().size(), &reach, &scratch);
  }
  Users users;
  if (!reference) users = Users(entry);
  std::vector<uint64_t> entered;
  bool changed = false;
  for (size_t g = 0; g < groups.size(); ++g) {
    const Group& group = groups[g];
    if (group.members.size() < 2) continue;
    // Earlier merges rewired the graph: keep the members whose lhs depends on no other kept
    // member (in either direction), in canonical order. Unless an earlier merge may have
    // joined them (MayBeJoined), they all are kept.
    std::vector<Instruction*> kept;
    std::vector<const Instruction*> kept_lhs;
    if (!search && !MayBeJoined(entered, g)) {
      kept = group.members;
      kept_lhs = group.lhs;
    } else {
      std::vector<const Instruction*> kept_set;
      for (size_t i = 0; i < group.members.size(); ++i) {
        Instruction* m = group.members[i];
        bool ok = !DependsOn(m->operands[0], kept_set, &scratch);
        for (size_t k = 0; ok && k < kept.size(); ++k) {
          ok = !DependsOn(kept[k]->operands[0], {m}, &scratch);
        }
        if (!ok) continue;
        kept.push_back(m);
        kept_set.push_back(m);
        kept_lhs.push_back(group.lhs[i]);
      }
    }
    if (kept.size() < 2) continue;
    const size_t first_new = entry.instructions().size();
    std::vector<Instruction*> parts = Merge(entry, kept);
    if (reference) {
      ScanRedirect(entry, kept, parts);
    } else {
      if (!search) {
        for (const Instruction* lhs : kept_lhs) reach.OrInto(*lhs, &entered);
      }
      for (size_t i = first_new; i < entry.instructions().size(); ++i) {
        users.Add(entry.instructions()[i].get());
      }
      users.Redirect(entry, kept, parts);
    }
    changed = true;
  }
  if (!changed) return Status::Ok();
  return Compact(module);
}

Status BySearch(ir::Module& module) { return Run(module, /*reference=*/true, 0); }

}  // namespace

Status MergeDotsInPlace(ir::Module& module) {
  return Run(module, /*reference=*/false, kMaxReachWords);
}

PassOutput MergeDots(const ir::Module& module) { return OnCopy(module, MergeDotsInPlace); }

PassOutput MergeDotsBySearch(const ir::Module& module) { return OnCopy(module, BySearch); }

PassOutput MergeDotsWithRowLimit(const ir::Module& module, uint64_t max_reach_words) {
  DETRAIN_ASSIGN_OR_RETURN(auto copy, CloneModule(module));
  DETRAIN_RETURN_IF_ERROR(Run(*copy, /*reference=*/false, max_reach_words));
  return copy;
}

}  // namespace detrain::passes
