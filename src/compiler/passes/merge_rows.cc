// merge-rows — the S per-shard copies of a row-wise computation become one computation over the
// concatenated rows.
//
// What it does: in the entry computation, finds groups of instructions that compute the same
// row-wise function of consecutive row blocks of one array — the S shards' copies of a train
// step's forward and backward, each reading its own rows of the batch or of a merged dot — and
// replaces each group by one instruction over the whole array, every member by a slice of it:
//   a_s = slice(A, rows [o_s, o_s + m_s))  (or a_s a member of a merged group)
//   x_s = f(a_s, ...)                     for s = 1..n, the blocks tiling A's rows exactly
// becomes
//   X   = f(A, ...)          x_s = slice(X, rows [o_s, o_s + m_s))
// so later groups read X itself, and a concatenation of consecutive member rows is X (or one
// slice of it). f is row-wise — output row r reads only input row r, in the same order as
// before — for: elementwise ops (compare, select, clamp and converts included), broadcasts
// that keep dimension 0, transposes that keep dimension 0, reshapes whose blocks start on an
// output row, reduces and reduce-windows that leave dimension 0 alone (the window's extent 1
// there), dots that do not contract the rows (with a right operand shared by the members) or
// whose first batch dimension is the rows on both sides, and gathers whose first output
// dimension is the indices' first. Every output element is therefore computed from the same
// values by the same chain as before (an elementwise op, or the canonical order of a reduce or
// a dot over the same elements: compiler/semantics/orders.h), so no bit changes. An operand
// that is not rows of a merged array is, at the merged size: the same broadcast, iota (not along
// dimension 0) or elementwise op of those, rebuilt (it does not depend on the row); a scalar,
// kept; and, for elementwise members only, anything else (each shard's dropout mask, say) as
// the concatenation of the members' operands in row order — a copy, which lets what follows
// merge too.
//
// Why: a program of S shards runs each shard's row-wise work as S kernels over m rows; merged
// it is one kernel over S·m rows — the same elements, without the S - 1 kernels' fixed cost
// (issue 37: charlm ran 674 elementwise kernels a step, ~7 µs each at ≤ 2,048 elements). What
// stays per shard is what must: reductions over a shard's rows (its part of the shard tree).
//
// How: one sweep in canonical order gives each candidate a key (its op, attributes, shapes past
// dimension 0, and for each operand: the merged array it reads rows of, or the shared operand,
// or "concatenated") and puts it in the group of that key. A group is merged when it has two or
// more members, its members' rows tile the arrays they read exactly, the groups those arrays
// come from are merged, and merging creates no cycle: the graph with each group collapsed to
// one node must still be acyclic (a topological sort decides; groups on a cycle are dropped and
// the sort repeated). Linear in the module, times the rare repeats.
// What it does not do: merge reductions over the rows (each shard's sum stays its own chain),
// scatters, convolutions (merge-dots merges batch-major ones), tuple-valued ops, ops in called
// computations (run `inline` first).
// Pre: a verified module. Post: a verified module; results unchanged bit for bit.
#include <algorithm>
#include <deque>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "compiler/passes/passes.h"
#include "compiler/passes/rewrite.h"

namespace detrain::passes {
namespace merge_rows {  // named: a unity build puts this file beside merge_dots.cc and fuse.cc
namespace {

using ir::Attr;
using ir::Instruction;
using ir::Opcode;

constexpr int kMaxRebuildDepth = 8;

bool IsElementwise(const Instruction& x) {
  const ir::OpCategory c = ir::OpcodeCategory(x.opcode);
  return c == ir::OpCategory::kUnary || c == ir::OpCategory::kBinary ||
         c == ir::OpCategory::kElementwise;
}

bool Contains(const std::vector<int64_t>& v, int64_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// How a member reads one operand.
enum class Kind : char {
  kRows = 'R',     // rows of a merged array, at the member's offset
  kShared = 'S',   // a row-independent operand of the same structure, rebuilt at the merged size
  kAsIs = 'A',     // the same operand for every member, used as it is (a scalar, a weight)
  kStacked = 'C',  // each member's own operand: the merged operand concatenates them
};

// The row-wise forms a member can take (the header comment).
enum class Form { kNone, kElementwise, kBroadcast, kReshape, kTranspose, kReduce, kDot, kGather };

Form FormOf(const Instruction& x) {
  if (x.shape.is_tuple() || x.shape.rank() == 0 || x.operands.empty()) return Form::kNone;
  if (IsElementwise(x)) return Form::kElementwise;
  switch (x.opcode) {
    case Opcode::kBroadcast: {
      const auto& dims = x.IntsAttr(Attr::kDimensions);
      return !dims.empty() && dims[0] == 0 ? Form::kBroadcast : Form::kNone;
    }
    case Opcode::kReshape:
      return x.operands[0]->shape.rank() >= 1 ? Form::kReshape : Form::kNone;
    case Opcode::kTranspose: {
      const auto& perm = x.IntsAttr(Attr::kDimensions);
      return !perm.empty() && perm[0] == 0 ? Form::kTranspose : Form::kNone;
    }
    case Opcode::kReduce:
      return x.operands.size() == 2 && !Contains(x.IntsAttr(Attr::kDimensions), 0) ? Form::kReduce
                                                                                   : Form::kNone;
    case Opcode::kReduceWindow: {
      const ir::AttrValue* w = x.FindAttr(Attr::kWindow);
      if (x.operands.size() != 2 || w == nullptr || w->window.empty()) return Form::kNone;
      const ir::WindowDim& d = w->window[0];
      return d == ir::WindowDim{} ? Form::kReduce : Form::kNone;
    }
    case Opcode::kDot: {
      if (x.operands.size() != 2) return Form::kNone;
      const auto& lb = x.IntsAttr(Attr::kLhsBatchDims);
      const auto& rb = x.IntsAttr(Attr::kRhsBatchDims);
      if (lb.empty() && rb.empty())
        return Contains(x.IntsAttr(Attr::kLhsContractingDims), 0) ? Form::kNone : Form::kDot;
      return !lb.empty() && !rb.empty() && lb[0] == 0 && rb[0] == 0 ? Form::kDot : Form::kNone;
    }
    case Opcode::kGather: {
      if (x.operands.size() != 2 || x.IntAttr(Attr::kIndexVectorDim) == 0 ||
          Contains(x.IntsAttr(Attr::kOffsetDims), 0) ||
          !x.IntsAttr(Attr::kOperandBatchingDims).empty() ||
          !x.IntsAttr(Attr::kStartIndicesBatchingDims).empty())
        return Form::kNone;
      return Form::kGather;
    }
    default:
      return Form::kNone;
  }
}

// An array whose row blocks members read: an instruction of the input (sliced by the members'
// operands) or the merged value of a group.
struct Rows {
  Instruction* real = nullptr;
  int64_t group = -1;
  int64_t rows = 0;
};

// `instr` is rows [offset, offset + its dimension 0) of rows_[array].
struct RowRef {
  int64_t array = -1;
  int64_t offset = 0;
};

struct Member {
  Instruction* instr;
  int64_t in_offset, in_rows, out_offset, out_rows;
};

struct Group {
  std::vector<Member> members;
  std::vector<Kind> kinds;      // per operand, as the first member reads them
  std::vector<int64_t> arrays;  // per operand: the rows it reads, for kRows (else -1)
  int64_t in_rows = 0;          // the rows of every array a member reads rows of
  int64_t out = -1;             // the merged value's array
  bool valid = false;
  Instruction* merged = nullptr;
};

std::string DimsPast0(const ir::Shape& s) {
  std::string t = std::string(ir::ElementTypeName(s.type())) + "[";
  for (int d = 1; d < s.rank(); ++d) t += std::to_string(s.dim(d)) + ",";
  return t + "]";
}

std::string AttrText(const Instruction& x) {
  std::string t;
  for (const auto& [attr, value] : x.attrs) {
    t += "|" + ir::FormatAttrValue(attr, value, [](const ir::Computation* c) {
           return c == nullptr ? std::string() : c->name();
         });
  }
  return t;
}

ir::Shape WithRows(const ir::Shape& s, int64_t rows) {
  std::vector<int64_t> dims = s.dims();
  dims[0] = rows;
  return ir::Shape(s.type(), dims);
}

ir::Instruction* RowSlice(ir::Computation& c, Instruction* source, int64_t start, int64_t rows) {
  std::vector<ir::SliceDim> range;
  for (int d = 0; d < source->shape.rank(); ++d)
    range.push_back(d == 0 ? ir::SliceDim{start, start + rows, 1}
                           : ir::SliceDim{0, source->shape.dim(d), 1});
  ir::AttrMap attrs;
  attrs[Attr::kSlice].slice = range;
  return AddInstruction(c, Opcode::kSlice, WithRows(source->shape, rows), {source}, attrs);
}

class RowMerger {
 public:
  explicit RowMerger(ir::Computation& entry) : entry_(entry) {}

  Status Run() {
    DETRAIN_ASSIGN_OR_RETURN(order_, MutablePostOrder(entry_));
    const size_t n = entry_.instructions().size();
    ref_.assign(n, RowRef{});
    group_of_.assign(n, -1);
    for (Instruction* x : order_) Visit(x);
    Validate();
    while (DropCycles()) Validate();
    bool any = false;
    for (const Group& g : groups_) any = any || g.valid;
    if (!any) return Status::Ok();
    Rewrite();
    return Status::Ok();
  }

 private:
  int64_t RowsOfReal(Instruction* a) {
    auto [it, added] = real_rows_.emplace(a->id, static_cast<int64_t>(rows_.size()));
    if (added) rows_.push_back({a, -1, a->shape.dim(0)});
    return it->second;
  }

  // If `x` (an operand of the member's shape) does not depend on the row and can be rebuilt at
  // any number of rows — a broadcast not along dimension 0, an iota not along it, or an
  // elementwise op of those and scalars — its structure (what it computes, whatever its rows);
  // otherwise empty. Members whose operands have the same structure read the same values, row
  // for row, though the operands be different instructions (one per shard's block size).
  std::string RebuildKey(const Instruction& x, int depth) const {
    if (x.shape.is_tuple() || x.shape.rank() == 0 || depth > kMaxRebuildDepth) return "";
    const std::string head =
        std::string(ir::OpcodeName(x.opcode)) + AttrText(x) + DimsPast0(x.shape);
    if (x.opcode == Opcode::kBroadcast) {
      return Contains(x.IntsAttr(Attr::kDimensions), 0)
                 ? ""
                 : head + "(" + std::to_string(x.operands[0]->id) + ")";
    }
    if (x.opcode == Opcode::kIota) return x.IntAttr(Attr::kIotaDimension) != 0 ? head : "";
    if (!IsElementwise(x)) return "";
    std::string key = head + "(";
    for (const Instruction* op : x.operands) {
      if (op->shape.rank() == 0) {
        key += "s" + std::to_string(op->id) + ",";
        continue;
      }
      if (op->shape.dims() != x.shape.dims()) return "";
      const std::string k = RebuildKey(*op, depth + 1);
      if (k.empty()) return "";
      key += k + ",";
    }
    return key + ")";
  }

  Instruction* Rebuild(Instruction* x, int64_t rows) {
    const std::pair<int64_t, int64_t> key{x->id, rows};
    auto it = rebuilt_.find(key);
    if (it != rebuilt_.end()) return it->second;
    std::vector<Instruction*> ops;
    if (x->opcode != Opcode::kBroadcast && x->opcode != Opcode::kIota) {
      for (Instruction* op : x->operands)
        ops.push_back(op->shape.rank() == 0 ? op : Rebuild(op, rows));
    } else {
      ops = x->operands;
    }
    Instruction* y = AddInstruction(entry_, x->opcode, WithRows(x->shape, rows), ops, x->attrs);
    rebuilt_[key] = y;
    return y;
  }

  // Records the row blocks `x` is, if any: a slice taking whole rows of an array, or a member.
  void Visit(Instruction* x) {
    const size_t id = static_cast<size_t>(x->id);
    if (x->opcode == Opcode::kSlice && !x->shape.is_tuple() && x->shape.rank() >= 1) {
      Instruction* a = x->operands[0];
      const auto& s = x->FindAttr(Attr::kSlice)->slice;
      bool whole = true;
      for (size_t d = 0; d < s.size(); ++d) {
        whole = whole && s[d].stride == 1 &&
                (d == 0 || (s[d].start == 0 && s[d].limit == a->shape.dim(static_cast<int>(d))));
      }
      if (whole && s[0].limit > s[0].start) ref_[id] = {RowsOfReal(a), s[0].start};
      return;
    }
    const Form form = FormOf(*x);
    if (form == Form::kNone) return;
    std::vector<Kind> kinds(x->operands.size());
    std::vector<int64_t> arrays(x->operands.size(), -1);
    std::string key = std::to_string(static_cast<int>(form)) +
                      std::string(ir::OpcodeName(x->opcode)) + AttrText(*x) + DimsPast0(x->shape);
    int64_t offset = -1, rows = -1;
    for (size_t p = 0; p < x->operands.size(); ++p) {
      Instruction* op = x->operands[p];
      const RowRef r = op->shape.is_tuple() || op->shape.rank() == 0
                           ? RowRef{}
                           : ref_[static_cast<size_t>(op->id)];
      if (!OperandKind(form, p, *x, *op, r, &kinds[p])) return;
      key += static_cast<char>(kinds[p]);
      switch (kinds[p]) {
        case Kind::kRows:
          if (offset >= 0 && (offset != r.offset || rows != op->shape.dim(0))) return;
          offset = r.offset;
          rows = op->shape.dim(0);
          arrays[p] = r.array;
          key += std::to_string(r.array) + DimsPast0(op->shape);
          break;
        case Kind::kShared:
          key += RebuildKey(*op, 0);
          break;
        case Kind::kAsIs:
          key += std::to_string(op->id);
          break;
        case Kind::kStacked:
          key += DimsPast0(op->shape);
          break;
      }
    }
    if (offset < 0) return;  // no rows read: nothing says where x's rows are
    const int64_t in_total = rows_[static_cast<size_t>(arrays[FirstRows(kinds)])].rows;
    int64_t out_offset = offset, out_rows = rows;
    if (form == Form::kReshape) {
      if (!ReshapedRows(*x, offset, rows, &out_offset, &out_rows)) return;
    } else if (x->shape.dim(0) != rows) {
      return;
    }
    // Two members at the same offset (what cse left) go to different groups.
    key += "@" + std::to_string(seen_[key + "@" + std::to_string(offset)]++);
    auto [it, added] = group_by_key_.emplace(key, static_cast<int64_t>(groups_.size()));
    if (added) {
      Group g;
      g.kinds = kinds;
      g.arrays = arrays;
      g.in_rows = in_total;
      g.out = static_cast<int64_t>(rows_.size());
      int64_t out_total = in_total;
      if (form == Form::kReshape) {
        int64_t unused = 0;
        if (!ReshapedRows(*x, 0, in_total, &unused, &out_total)) out_total = -1;
      }
      rows_.push_back({nullptr, static_cast<int64_t>(groups_.size()), out_total});
      groups_.push_back(std::move(g));
    }
    Group& g = groups_[static_cast<size_t>(it->second)];
    g.members.push_back({x, offset, rows, out_offset, out_rows});
    group_of_[id] = it->second;
    ref_[id] = {g.out, out_offset};
  }

  static size_t FirstRows(const std::vector<Kind>& kinds) {
    for (size_t p = 0; p < kinds.size(); ++p) {
      if (kinds[p] == Kind::kRows) return p;
    }
    return 0;
  }

  // How operand p of a member of `form` may be read; false if x cannot be a member.
  bool OperandKind(Form form, size_t p, const Instruction& x, const Instruction& op, RowRef r,
                   Kind* kind) const {
    const bool rows = r.array >= 0;
    switch (form) {
      case Form::kElementwise:
        if (op.shape.rank() == 0) {
          *kind = Kind::kAsIs;
          return true;
        }
        if (op.shape.dims() != x.shape.dims()) return false;
        *kind = rows ? Kind::kRows : !RebuildKey(op, 0).empty() ? Kind::kShared : Kind::kStacked;
        return true;
      case Form::kBroadcast:
      case Form::kReshape:
      case Form::kTranspose:
        *kind = Kind::kRows;
        return rows;
      case Form::kReduce:  // (array, init)
        *kind = p == 0 ? Kind::kRows : Kind::kAsIs;
        return p == 0 ? rows : op.shape.rank() == 0;
      case Form::kDot:
        if (p == 0 || !x.IntsAttr(Attr::kLhsBatchDims).empty()) {
          *kind = Kind::kRows;
          return rows;
        }
        *kind = Kind::kAsIs;  // the weight: the same instruction for every member
        return true;
      case Form::kGather:  // (operand, indices)
        *kind = p == 1 ? Kind::kRows : Kind::kAsIs;
        return p == 1 ? rows : true;
      case Form::kNone:
        return false;
    }
    return false;
  }

  // A reshape of rows [offset, offset + rows) of an array with a rows: where its rows are in the
  // reshaped array, if its blocks start and end on whole output rows.
  static bool ReshapedRows(const Instruction& x, int64_t offset, int64_t rows, int64_t* out_offset,
                           int64_t* out_rows) {
    const ir::Shape& in = x.operands[0]->shape;
    int64_t a = 1, b = 1;
    for (int d = 1; d < in.rank(); ++d) a *= in.dim(d);
    for (int d = 1; d < x.shape.rank(); ++d) b *= x.shape.dim(d);
    if (a <= 0 || b <= 0) return false;
    __int128 start = static_cast<__int128>(offset) * a, count = static_cast<__int128>(rows) * a;
    if (start % b != 0 || count % b != 0) return false;
    *out_offset = static_cast<int64_t>(start / b);
    *out_rows = static_cast<int64_t>(count / b);
    return true;
  }

  bool ArrayValid(int64_t array) const {
    const Rows& r = rows_[static_cast<size_t>(array)];
    return r.group < 0 || groups_[static_cast<size_t>(r.group)].valid;
  }

  // Marks each group valid or not, in creation order (a group's arrays come from earlier ones).
  void Validate() {
    for (Group& g : groups_) {
      if (dropped_.count(&g - groups_.data()) != 0 || g.members.size() < 2) {
        g.valid = false;
        continue;
      }
      bool ok = rows_[static_cast<size_t>(g.out)].rows > 0;
      for (int64_t a : g.arrays) {
        if (a < 0) continue;
        ok = ok && ArrayValid(a) && rows_[static_cast<size_t>(a)].rows == g.in_rows;
      }
      std::vector<std::pair<int64_t, int64_t>> blocks;
      for (const Member& m : g.members) blocks.push_back({m.in_offset, m.in_rows});
      std::sort(blocks.begin(), blocks.end());
      int64_t next = 0;
      for (const auto& [offset, rows] : blocks) {
        ok = ok && offset == next && rows > 0;
        next = offset + rows;
      }
      g.valid = ok && next == g.in_rows;
    }
  }

  // Sorts the graph with each valid group as one node; drops the groups left on a cycle.
  // Returns whether any was dropped.
  bool DropCycles() {
    const size_t n = entry_.instructions().size();
    auto node = [&](const Instruction* x) {
      const size_t id = static_cast<size_t>(x->id);
      const int64_t g = id < group_of_.size() ? group_of_[id] : -1;
      return g >= 0 && groups_[static_cast<size_t>(g)].valid ? n + static_cast<size_t>(g) : id;
    };
    std::vector<std::vector<size_t>> next(n + groups_.size());
    std::vector<int64_t> pending(n + groups_.size(), 0);
    for (const Instruction* x : order_) {
      const size_t to = node(x);
      for (const Instruction* op : x->operands) {
        const size_t from = node(op);
        if (from == to) continue;
        next[from].push_back(to);
        ++pending[to];
      }
    }
    std::deque<size_t> ready;
    for (size_t v = 0; v < next.size(); ++v) {
      if (pending[v] == 0) ready.push_back(v);
    }
    while (!ready.empty()) {
      const size_t v = ready.front();
      ready.pop_front();
      for (size_t w : next[v]) {
        if (--pending[w] == 0) ready.push_back(w);
      }
    }
    bool dropped = false;
    for (size_t g = 0; g < groups_.size(); ++g) {
      if (groups_[g].valid && pending[n + g] > 0) {
        dropped_.insert(static_cast<int64_t>(g));
        dropped = true;
      }
    }
    return dropped;
  }

  Instruction* ArrayInstruction(int64_t array) const {
    const Rows& r = rows_[static_cast<size_t>(array)];
    return r.real != nullptr ? r.real : groups_[static_cast<size_t>(r.group)].merged;
  }

  void Rewrite() {
    std::vector<Instruction*> replacement(entry_.instructions().size(), nullptr);
    for (Group& g : groups_) {
      if (!g.valid) continue;
      std::vector<Member> sorted = g.members;
      std::sort(sorted.begin(), sorted.end(),
                [](const Member& a, const Member& b) { return a.in_offset < b.in_offset; });
      const Instruction& first = *g.members.front().instr;
      std::vector<Instruction*> operands;
      for (size_t p = 0; p < g.kinds.size(); ++p) {
        switch (g.kinds[p]) {
          case Kind::kRows:
            operands.push_back(ArrayInstruction(g.arrays[p]));
            break;
          case Kind::kShared:
            operands.push_back(Rebuild(first.operands[p], g.in_rows));
            break;
          case Kind::kAsIs:
            operands.push_back(first.operands[p]);
            break;
          case Kind::kStacked: {
            std::vector<Instruction*> parts;
            for (const Member& m : sorted) parts.push_back(m.instr->operands[p]);
            ir::AttrMap attrs;
            attrs[Attr::kDimensions].ints = {0};
            operands.push_back(AddInstruction(entry_, Opcode::kConcatenate,
                                              WithRows(first.operands[p]->shape, g.in_rows), parts,
                                              attrs));
            break;
          }
        }
      }
      g.merged = AddInstruction(entry_, first.opcode,
                                WithRows(first.shape, rows_[static_cast<size_t>(g.out)].rows),
                                operands, first.attrs);
      for (const Member& m : g.members) {
        replacement[static_cast<size_t>(m.instr->id)] =
            RowSlice(entry_, g.merged, m.out_offset, m.out_rows);
      }
    }
    // A concatenation along dimension 0 of consecutive rows of one merged array is that array,
    // or one slice of it.
    for (Instruction* x : order_) {
      if (x->opcode != Opcode::kConcatenate ||
          x->IntsAttr(Attr::kDimensions) != std::vector<int64_t>{0})
        continue;
      int64_t array = -1, start = 0, next = 0;
      bool ok = true;
      for (const Instruction* op : x->operands) {
        const RowRef r = ref_[static_cast<size_t>(op->id)];
        const int64_t g = group_of_[static_cast<size_t>(op->id)];
        ok = ok && g >= 0 && groups_[static_cast<size_t>(g)].valid && r.array >= 0 &&
             (array < 0 || (r.array == array && r.offset == next));
        if (!ok) break;
        if (array < 0) start = r.offset;
        array = r.array;
        next = r.offset + op->shape.dim(0);
      }
      if (!ok || array < 0) continue;
      Instruction* whole = ArrayInstruction(array);
      replacement[static_cast<size_t>(x->id)] = start == 0 && next == whole->shape.dim(0)
                                                    ? whole
                                                    : RowSlice(entry_, whole, start, next - start);
    }
    auto resolve = [&](Instruction* x) {
      while (static_cast<size_t>(x->id) < replacement.size() &&
             replacement[static_cast<size_t>(x->id)] != nullptr) {
        x = replacement[static_cast<size_t>(x->id)];
      }
      return x;
    };
    for (const auto& instr : entry_.instructions()) {
      for (Instruction*& op : instr->operands) op = resolve(op);
    }
    entry_.set_root(resolve(entry_.root()));
  }

  ir::Computation& entry_;
  std::vector<Instruction*> order_;
  std::vector<RowRef> ref_;        // by id
  std::vector<int64_t> group_of_;  // by id; -1: in no group
  std::vector<Rows> rows_;
  std::vector<Group> groups_;
  std::map<int64_t, int64_t> real_rows_;  // instruction id -> its rows_ entry
  std::map<std::string, int64_t> group_by_key_, seen_;
  std::map<std::pair<int64_t, int64_t>, Instruction*> rebuilt_;
  std::set<int64_t> dropped_;
};

}  // namespace
}  // namespace merge_rows

Status MergeRowsInPlace(ir::Module& module) {
  merge_rows::RowMerger merger(*module.entry());
  DETRAIN_RETURN_IF_ERROR(merger.Run());
  return Compact(module);
}

PassOutput MergeRows(const ir::Module& module) { return OnCopy(module, MergeRowsInPlace); }

}  // namespace detrain::passes
