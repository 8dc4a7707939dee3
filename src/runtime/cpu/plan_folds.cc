// See plan_folds.h. FoldDotTranspose makes a dot write its transpose's layout; FoldDotTree
// reads an elementwise kernel as an add tree (ReadAddTree), finds the dots its inputs are
// (FindLeaves), and places their operands: in place when nothing that still runs writes them
// before the tree does, else copied into the tree's stash where the dot would have run.
#include "runtime/cpu/plan_folds.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>
#include <utility>

#include "runtime/cpu/dot_kernel.h"
#include "runtime/cpu/gemm.h"
#include "runtime/cpu/isa_kernels.h"

namespace detrain::runtime::cpu {
namespace {

// The sum of per-shard dots by their tree, one output tile at a time (GemmTree): made by
// FoldDotTree from an elementwise kernel that is an add tree over dot results. An operand that
// the schedule would overwrite before the tree runs is copied, where its dot would have run, into
// the tree's own stash (StashKernel).
struct DotTreeStash {
  std::vector<float> data;  // sized once when the plan is loaded
};

class DotTreeKernel : public CpuKernel {
 public:
  struct Operand {
    int64_t offset = 0;  // bytes: into the arena, or into the stash
    bool stashed = false;
    int64_t rows = 0, cols = 0;  // strides in elements
  };
  struct Leaf {
    Operand a, b;
    int64_t k = 0;
    bool swapped = false;
  };

  Status Run(uint8_t* arena, const ExecContext& ctx) const override {
    auto* stash = reinterpret_cast<uint8_t*>(stash_->data.data());
    auto view = [&](const Operand& o) {
      return MatrixView{reinterpret_cast<const float*>((o.stashed ? stash : arena) + o.offset),
                        o.rows, o.cols, 0};
    };
    for (size_t s = 0; s < leaves_.size(); ++s) {
      GemmLeaf& g = gemm_[s];
      g.a = view(leaves_[s].a);
      g.b = view(leaves_[s].b);
      g.k = leaves_[s].k;
      g.swapped = leaves_[s].swapped;
    }
    GemmTree(gemm_.data(), static_cast<int64_t>(gemm_.size()), steps_.data(),
             static_cast<int64_t>(steps_.size()), result_,
             reinterpret_cast<float*>(arena + out_.offset), m_, n_, ctx);
    return Status::Ok();
  }

  std::vector<Leaf> leaves_;
  mutable std::vector<GemmLeaf> gemm_;  // leaves_ with addresses (Run is one at a time)
  std::vector<TreeStep> steps_;
  int32_t result_ = 0;
  ArrayRef out_;
  int64_t m_ = 0, n_ = 0;
  std::shared_ptr<DotTreeStash> stash_;
};

// A tree whose sum is not the kernel's result (the sum is divided, scaled by the learning rate
// and added to the parameter in one fusion): the tree writes the sum into the first leaf's
// buffer, which no kernel writes any more, and the rest of the fusion's program (`epilogue`, the
// sum an input of it) runs over it as the elementwise kernel it was.
class TreeThenEpilogueKernel : public CpuKernel {
 public:
  Status Run(uint8_t* arena, const ExecContext& ctx) const override {
    DETRAIN_RETURN_IF_ERROR(tree_->Run(arena, ctx));
    return epilogue_->Run(arena, ctx);
  }
  int64_t ScratchBytes() const override {
    return std::max(tree_->ScratchBytes(), epilogue_->ScratchBytes());
  }
  // The epilogue's inputs are the fusion's operands (then the sum): the same numbers.
  bool ReadInputAsScalar(size_t input, bool apply, const uint8_t* at) override {
    return epilogue_->ReadInputAsScalar(input, apply, at);
  }
  std::unique_ptr<CpuKernel> tree_, epilogue_;
};

// Runs where a folded dot would have: copies the dot's operands the tree cannot read in place.
class StashKernel : public CpuKernel {
 public:
  struct Copy {
    int64_t from = 0, to = 0, bytes = 0;  // arena offset, stash offset
  };
  Status Run(uint8_t* arena, const ExecContext&) const override {
    auto* stash = reinterpret_cast<uint8_t*>(stash_->data.data());
    for (const Copy& c : copies_)
      std::memcpy(stash + c.to, arena + c.from, static_cast<size_t>(c.bytes));
    return Status::Ok();
  }
  std::vector<Copy> copies_;
  std::shared_ptr<DotTreeStash> stash_;
};

bool Overlap(const ArrayRef& x, const ArrayRef& y) {
  return x.bytes > 0 && y.bytes > 0 && x.offset < y.offset + y.bytes &&
         y.offset < x.offset + x.bytes;
}

// A tree whose stash would exceed this runs as its dots instead (memory over speed).
constexpr int64_t kMaxTreeStashBytes = int64_t{256} << 20;

struct Range {
  int64_t lo = 0, hi = 0;
  bool Meets(const ArrayRef& a) const {
    return a.bytes > 0 && hi > lo && lo < a.offset + a.bytes && a.offset < hi;
  }
};

// Whether buffer b is no result of the plan and is read exactly once, as an operand of kernel k.
bool ReadOnceBy(const plan::v2::Plan& plan, int32_t b, int32_t k) {
  for (int32_t o : plan.outputs()) {
    if (o == b) return false;
  }
  int reads = 0;
  for (const plan::v2::Kernel& kernel : plan.kernels()) {
    for (const auto& op : kernel.operands()) {
      for (int32_t x : op.buffers()) {
        if (x != b) continue;
        if (kernel.id() != k) return false;
        ++reads;
      }
    }
  }
  return reads == 1;
}

// What kernel i writes when it runs: its result buffers and, for a dot with a folded transpose,
// the transpose's buffer.
bool Writes(const plan::v2::Plan& plan, const std::vector<ArrayRef>& buffers,
            const std::vector<std::unique_ptr<CpuKernel>>& kernels, int32_t i, const Range& r) {
  for (int32_t x : plan.kernels(i).outputs()) {
    if (r.Meets(buffers[static_cast<size_t>(x)])) return true;
  }
  auto* dot = dynamic_cast<const DotKernel*>(kernels[static_cast<size_t>(i)].get());
  return dot != nullptr && dot->transposed_out_ && r.Meets(*dot->transposed_out_);
}

// The bytes an operand of a dot is read from: its own buffer, or, when a slice kernel made it
// from a contiguous run of rows of an f32 array, that run in the array (read in place).
// `read_at` is where those bytes were last read in the schedule.
struct Source {
  int64_t offset = 0;
  Range range;
  int32_t read_at = 0;
};

Source SourceOf(const plan::v2::Plan& plan, const std::vector<ArrayRef>& buffers,
                const ArrayRef& operand, int32_t dot) {
  Source src{operand.offset, {operand.offset, operand.offset + operand.bytes}, dot};
  const int32_t d = plan.buffers(operand.id).defined_by();
  if (d < 0 || d >= dot) return src;
  const plan::v2::Kernel& k = plan.kernels(d);
  if (!k.has_slice() || k.operands_size() != 1 || k.operands(0).buffers_size() != 1) return src;
  const ArrayRef& x = buffers[static_cast<size_t>(k.operands(0).buffers(0))];
  const plan::v2::SliceSpec& sl = k.slice();
  const size_t rank = x.dims.size();
  if (x.type != ir::ElementType::kF32 || rank == 0 || operand.dims.size() != rank ||
      sl.starts_size() != static_cast<int>(rank) || sl.strides_size() != static_cast<int>(rank))
    return src;
  int64_t row = 1;
  for (size_t i = 0; i < rank; ++i) {
    if (sl.strides(static_cast<int>(i)) != 1) return src;
    if (i > 0) {
      if (sl.starts(static_cast<int>(i)) != 0 || operand.dims[i] != x.dims[i]) return src;
      row *= x.dims[i];
    }
  }
  const int64_t start = sl.starts(0);
  if (start < 0 || start + operand.dims[0] > x.dims[0]) return src;
  const int64_t offset = x.offset + start * row * 4;
  return {offset, {offset, offset + operand.bytes}, d};
}

// An elementwise program read as the tree GemmTree runs: its steps over the inputs' slots, and
// the slot that holds the result. The program must be an add tree over its inputs, each input
// and each value used once, with f32 constants as the second operand of arithmetic anywhere
// (e.g. the sum divided by S).
struct AddTree {
  std::vector<TreeStep> steps;
  int32_t result = 0;
};

bool ReadAddTree(const plan::v2::ScalarProgram& prog, int64_t count, AddTree* tree) {
  using Op = plan::v2::ScalarOp;
  const int n_ops = prog.ops_size();
  if (prog.result() < 0 || prog.result() >= n_ops) return false;
  std::vector<int32_t> slot(static_cast<size_t>(n_ops), -1);  // -1: a constant
  std::vector<float> constant(static_cast<size_t>(n_ops), 0.0f);
  std::vector<int> uses(static_cast<size_t>(n_ops), 0);
  std::vector<char> input_seen(static_cast<size_t>(count), 0);
  for (int i = 0; i < n_ops; ++i) {
    const Op& op = prog.ops(i);
    if (op.type() != plan::v2::F32) return false;
    if (op.kind() == Op::INPUT) {
      if (op.input() < 0 || op.input() >= count || input_seen[static_cast<size_t>(op.input())])
        return false;
      input_seen[static_cast<size_t>(op.input())] = 1;
      slot[static_cast<size_t>(i)] = op.input();
      continue;
    }
    if (op.kind() == Op::CONSTANT) {
      if (op.constant().size() != 4) return false;
      std::memcpy(&constant[static_cast<size_t>(i)], op.constant().data(), 4);
      continue;
    }
    static const std::pair<const char*, int> kKinds[] = {{"add", kTileAdd},
                                                         {"subtract", kTileSubtract},
                                                         {"multiply", kTileMultiply},
                                                         {"divide", kTileDivide}};
    int kind = -1;
    for (const auto& [name, k] : kKinds) {
      if (op.op() == name) kind = k;
    }
    if (op.kind() != Op::BINARY || kind < 0 || op.args_size() != 2) return false;
    const int32_t l = op.args(0), r = op.args(1);
    if (l < 0 || l >= i || r < 0 || r >= i) return false;
    const int32_t ls = slot[static_cast<size_t>(l)], rs = slot[static_cast<size_t>(r)];
    TreeStep step;
    step.kind = kind;
    if (ls >= 0 && rs >= 0) {  // a sum of two values
      if (kind != kTileAdd || l == r) return false;
      step.dst = ls;
      step.src = rs;
      ++uses[static_cast<size_t>(l)];
      ++uses[static_cast<size_t>(r)];
    } else if (ls >= 0 || rs >= 0) {  // a value and a constant
      step.constant_first = ls < 0;
      step.dst = ls >= 0 ? ls : rs;
      step.constant = constant[static_cast<size_t>(ls >= 0 ? r : l)];
      ++uses[static_cast<size_t>(ls >= 0 ? l : r)];
    } else {
      return false;
    }
    slot[static_cast<size_t>(i)] = step.dst;
    tree->steps.push_back(step);
  }
  for (int i = 0; i < n_ops; ++i) {
    if (slot[static_cast<size_t>(i)] < 0) continue;
    if (uses[static_cast<size_t>(i)] != (i == prog.result() ? 0 : 1)) return false;
  }
  if (slot[static_cast<size_t>(prog.result())] < 0) return false;
  for (char seen : input_seen) {
    if (!seen) return false;
  }
  tree->result = slot[static_cast<size_t>(prog.result())];
  return true;
}

// An elementwise program as an add tree over some of its inputs and what follows the tree
// (FoldDotTree): `tree` is the subprogram whose result is the tree's root, over its own inputs
// 0..L-1, which are the program's inputs `leaves`; `epilogue`, when the root is not the
// program's result, is the program with the root read as input `count` (the sum's buffer) and
// the tree's ops gone. The tree's inputs and values are used by the tree alone (the leaves'
// buffers will not be written); constants may be shared.
struct SplitTree {
  std::vector<int64_t> leaves;
  plan::v2::ScalarProgram tree;
  std::optional<plan::v2::ScalarProgram> epilogue;
};

// Per op of `prog`: the number of inputs of the tree it roots (0: not a tree node). A leaf is an
// f32 input read once that a dot made (`from_dot`); a node adds two nodes, or combines one node
// with a constant (ReadAddTree's steps); a node's value is used once.
std::vector<int> TreeLeafCounts(const plan::v2::ScalarProgram& prog,
                                const std::vector<char>& from_dot, const std::vector<int>& uses,
                                const std::vector<int>& input_reads) {
  using Op = plan::v2::ScalarOp;
  const int n = prog.ops_size();
  std::vector<int> leaves(static_cast<size_t>(n), 0);
  for (int i = 0; i < n; ++i) {
    const Op& op = prog.ops(i);
    if (op.type() != plan::v2::F32) continue;
    if (op.kind() == Op::INPUT) {
      const auto in = static_cast<size_t>(op.input());
      leaves[static_cast<size_t>(i)] = input_reads[in] == 1 && from_dot[in] ? 1 : 0;
      continue;
    }
    if (op.kind() != Op::BINARY || op.args_size() != 2) continue;
    const int32_t l = op.args(0), r = op.args(1);
    auto node = [&](int32_t a) {  // a tree node used by this op alone
      return leaves[static_cast<size_t>(a)] > 0 && uses[static_cast<size_t>(a)] == 1;
    };
    auto constant = [&](int32_t a) { return prog.ops(a).kind() == Op::CONSTANT; };
    if (op.op() == "add" && node(l) && node(r) && l != r) {
      leaves[static_cast<size_t>(i)] =
          leaves[static_cast<size_t>(l)] + leaves[static_cast<size_t>(r)];
    } else if ((op.op() == "add" || op.op() == "subtract" || op.op() == "multiply" ||
                op.op() == "divide") &&
               ((node(l) && constant(r)) || (constant(l) && node(r)))) {
      leaves[static_cast<size_t>(i)] = leaves[static_cast<size_t>(node(l) ? l : r)];
    }
  }
  return leaves;
}

bool SplitProgram(const plan::v2::ScalarProgram& prog, const std::vector<char>& from_dot,
                  SplitTree* split) {
  const int64_t count = static_cast<int64_t>(from_dot.size());
  using Op = plan::v2::ScalarOp;
  const int n = prog.ops_size();
  if (prog.result() < 0 || prog.result() >= n) return false;
  std::vector<int> uses(static_cast<size_t>(n), 0), input_reads(static_cast<size_t>(count), 0);
  for (int i = 0; i < n; ++i) {
    const Op& op = prog.ops(i);
    for (int32_t a : op.args()) {
      if (a < 0 || a >= i) return false;
      ++uses[static_cast<size_t>(a)];
    }
    if (op.kind() == Op::INPUT) {
      if (op.input() < 0 || op.input() >= count) return false;
      ++input_reads[static_cast<size_t>(op.input())];
    }
  }
  const std::vector<int> leaves = TreeLeafCounts(prog, from_dot, uses, input_reads);
  // The root: the node of most inputs, at least two — the last of them, so that the steps with a
  // constant on top of the sum (its division by the shard count: a node of as many inputs) run
  // in the tree, tile by tile, not as an epilogue's pass over the whole sum.
  int root = -1;
  for (int i = 0; i < n; ++i) {
    if (leaves[static_cast<size_t>(i)] >= 2 &&
        (root < 0 || leaves[static_cast<size_t>(i)] >= leaves[static_cast<size_t>(root)]))
      root = i;
  }
  if (root < 0) return false;
  // The root's subtree (constants apart): its ops, in program order.
  std::vector<char> in_tree(static_cast<size_t>(n), 0);
  in_tree[static_cast<size_t>(root)] = 1;
  for (int i = root; i >= 0; --i) {
    if (!in_tree[static_cast<size_t>(i)]) continue;
    for (int32_t a : prog.ops(i).args()) {
      if (prog.ops(a).kind() != Op::CONSTANT) in_tree[static_cast<size_t>(a)] = 1;
    }
  }
  // The tree: its ops and the constants they read, inputs renumbered in order of appearance.
  std::vector<int32_t> tree_index(static_cast<size_t>(n), -1);
  split->leaves.clear();
  split->tree.Clear();
  for (int i = 0; i <= root; ++i) {
    const Op& op = prog.ops(i);
    bool needed = in_tree[static_cast<size_t>(i)];
    if (op.kind() == Op::CONSTANT) {
      for (int j = i + 1; j <= root && !needed; ++j) {
        if (!in_tree[static_cast<size_t>(j)]) continue;
        for (int32_t a : prog.ops(j).args()) needed |= a == i;
      }
    }
    if (!needed) continue;
    tree_index[static_cast<size_t>(i)] = split->tree.ops_size();
    Op* copy = split->tree.add_ops();
    *copy = op;
    for (int k = 0; k < copy->args_size(); ++k)
      copy->set_args(k, tree_index[static_cast<size_t>(op.args(k))]);
    if (op.kind() == Op::INPUT) {
      copy->set_input(static_cast<int32_t>(split->leaves.size()));
      split->leaves.push_back(op.input());
    }
  }
  split->tree.set_result(tree_index[static_cast<size_t>(root)]);
  if (root == prog.result()) {
    split->epilogue.reset();
    return true;
  }
  // The epilogue: every op outside the tree, the root read as input `count`.
  plan::v2::ScalarProgram epilogue;
  std::vector<int32_t> index(static_cast<size_t>(n), -1);
  for (int i = 0; i < n; ++i) {
    if (in_tree[static_cast<size_t>(i)] && i != root) continue;
    const Op& op = prog.ops(i);
    index[static_cast<size_t>(i)] = epilogue.ops_size();
    Op* copy = epilogue.add_ops();
    if (i == root) {
      copy->set_kind(Op::INPUT);
      copy->set_type(plan::v2::F32);
      copy->set_input(static_cast<int32_t>(count));
      continue;
    }
    *copy = op;
    for (int k = 0; k < copy->args_size(); ++k) {
      const int32_t a = index[static_cast<size_t>(op.args(k))];
      if (a < 0) return false;  // reads a value inside the tree: not a tree after all
      copy->set_args(k, a);
    }
  }
  epilogue.set_result(index[static_cast<size_t>(prog.result())]);
  split->epilogue = std::move(epilogue);
  return true;
}

// Per operand of kernel `k`: whether a dot made it, directly or through a transpose (a candidate
// leaf of a tree; FindLeaves checks the rest).
std::vector<char> FromDot(const plan::v2::Plan& plan, const plan::v2::Kernel& k) {
  std::vector<char> from_dot(static_cast<size_t>(k.operands_size()), 0);
  for (int s = 0; s < k.operands_size(); ++s) {
    if (k.operands(s).buffers_size() != 1) continue;
    int32_t d = plan.buffers(k.operands(s).buffers(0)).defined_by();
    const plan::v2::Kernel& dk = plan.kernels(d);
    if (dk.has_transpose() && dk.operands_size() == 1 && dk.operands(0).buffers_size() == 1)
      d = plan.buffers(dk.operands(0).buffers(0)).defined_by();
    from_dot[static_cast<size_t>(s)] = plan.kernels(d).has_dot();
  }
  return from_dot;
}

// The elementwise kernel of `epilogue`: kernel `checked`'s program after its tree, the tree's
// sum (in `sum`) its input after the kernel's own; null if the program does not decode.
std::unique_ptr<CpuKernel> EpilogueKernel(const plan::CheckedKernel& checked,
                                          const plan::v2::ScalarProgram& epilogue,
                                          const ArrayRef& sum) {
  plan::CheckedKernel k;
  k.spec = checked.spec;
  k.in = checked.in;
  k.in.push_back(sum);
  k.out = checked.out;
  std::vector<ir::ElementType> types;
  for (const ArrayRef& a : k.in) types.push_back(a.type);
  Result<plan::DecodedProgram> program = plan::DecodeProgram(epilogue, types);
  if (!program.ok()) return nullptr;
  k.program = std::move(*program);
  KernelResult made = MakeElementwise(k);
  return made.ok() ? std::move(*made) : nullptr;
}

// The dots an add tree's inputs are (FoldDotTree): each input an f32 dot's result (or its
// folded transpose's) that only the tree, kernel t, reads. Those dots (and transposes) will not
// run.
struct TreeLeaves {
  std::vector<const DotKernel*> dots;         // per input
  std::vector<int32_t> dot_at, transpose_at;  // per input: kernel ids (-1: no transpose)
  std::vector<char> swapped;                  // per input: the leaf is a transpose of its dot
  std::vector<char> folded;                   // per kernel before t: it runs no more
  int64_t total_k = 0;
};

bool FindLeaves(const plan::v2::Plan& plan, const std::vector<std::unique_ptr<CpuKernel>>& kernels,
                int32_t t, const ArrayRef& out, const std::vector<int64_t>& inputs,
                TreeLeaves* leaves) {
  const plan::v2::Kernel& ek = plan.kernels(t);
  const int64_t count = static_cast<int64_t>(inputs.size());
  auto& dots = leaves->dots;
  auto& dot_at = leaves->dot_at;
  auto& transpose_at = leaves->transpose_at;
  auto& swapped = leaves->swapped;
  auto& folded = leaves->folded;
  dots.assign(static_cast<size_t>(count), nullptr);
  dot_at.assign(static_cast<size_t>(count), -1);
  transpose_at.assign(static_cast<size_t>(count), -1);
  swapped.assign(static_cast<size_t>(count), 0);
  folded.assign(static_cast<size_t>(t), 0);
  for (int64_t s = 0; s < count; ++s) {
    const auto& operand = ek.operands(static_cast<int>(inputs[static_cast<size_t>(s)]));
    if (operand.buffers_size() != 1) return false;
    const int32_t b = operand.buffers(0);
    if (!ReadOnceBy(plan, b, t)) return false;
    int32_t d = plan.buffers(b).defined_by();
    if (d < 0 || d >= t) return false;
    const plan::v2::Kernel& dk = plan.kernels(d);
    const DotKernel* dot = nullptr;
    if (dk.has_transpose()) {  // a transpose of a dot: the leaf is the swapped product
      const std::vector<int64_t> perm(dk.transpose().permutation().begin(),
                                      dk.transpose().permutation().end());
      if (perm != std::vector<int64_t>{1, 0} || dk.operands_size() != 1 ||
          dk.operands(0).buffers_size() != 1)
        return false;
      const int32_t inner_buffer = dk.operands(0).buffers(0);
      const int32_t inner = plan.buffers(inner_buffer).defined_by();
      if (inner < 0 || inner >= d) return false;
      dot = dynamic_cast<const DotKernel*>(kernels[static_cast<size_t>(inner)].get());
      if (dot == nullptr) return false;
      if (kernels[static_cast<size_t>(d)] == nullptr) {  // already computed by the dot
        if (!dot->transposed_out_ || dot->transposed_out_->id != b) return false;
      } else if (dot->transposed_out_ || !ReadOnceBy(plan, inner_buffer, d)) {
        return false;
      }
      swapped[static_cast<size_t>(s)] = 1;
      folded[static_cast<size_t>(d)] = 1;
      transpose_at[static_cast<size_t>(s)] = d;
      d = inner;
    } else {
      dot = dynamic_cast<const DotKernel*>(kernels[static_cast<size_t>(d)].get());
      if (dot == nullptr || dot->transposed_out_) return false;
    }
    if (dot->out_.type != ir::ElementType::kF32 || dot->batch_ != 1 || !dot->lhs_view_ ||
        !dot->rhs_view_)
      return false;
    const int64_t m = swapped[static_cast<size_t>(s)] ? dot->n_ : dot->m_;
    const int64_t n = swapped[static_cast<size_t>(s)] ? dot->m_ : dot->n_;
    if (m != out.dims[0] || n != out.dims[1]) return false;
    dots[static_cast<size_t>(s)] = dot;
    dot_at[static_cast<size_t>(s)] = d;
    folded[static_cast<size_t>(d)] = 1;
    leaves->total_k += dot->k_;
  }
  return true;
}

// The leaves' dots (and transposes) of a folded tree run no more: each dot's kernel becomes the
// copy of the operands the tree could not read in place, or nothing.
void RetireLeaves(const TreeLeaves& leaves, const std::shared_ptr<DotTreeStash>& stash,
                  std::vector<std::unique_ptr<StashKernel>>& stashes,
                  std::vector<std::unique_ptr<CpuKernel>>& kernels) {
  for (size_t s = 0; s < leaves.dot_at.size(); ++s) {
    const auto d = static_cast<size_t>(leaves.dot_at[s]);
    if (stashes[s]) {
      stashes[s]->stash_ = stash;
      kernels[d] = std::move(stashes[s]);
    } else {
      kernels[d].reset();
    }
    if (leaves.transpose_at[s] >= 0) kernels[static_cast<size_t>(leaves.transpose_at[s])].reset();
  }
}

}  // namespace

bool FoldDotTranspose(const plan::ValidatedPlan& validated,
                      const std::vector<std::unique_ptr<CpuKernel>>& kernels, int32_t t) {
  const plan::v2::Plan& plan = validated.proto();
  const std::vector<ArrayRef>& buffers = validated.buffers();
  const plan::v2::Kernel& tk = plan.kernels(t);
  if (!tk.has_transpose() || tk.operands_size() != 1 || tk.operands(0).buffers_size() != 1 ||
      tk.outputs_size() != 1)
    return false;
  const std::vector<int64_t> perm(tk.transpose().permutation().begin(),
                                  tk.transpose().permutation().end());
  if (perm != std::vector<int64_t>{1, 0}) return false;
  const int32_t b = tk.operands(0).buffers(0);
  const int32_t d = plan.buffers(b).defined_by();
  if (d < 0 || d >= t) return false;
  const plan::v2::Kernel& dk = plan.kernels(d);
  auto* dot = dynamic_cast<DotKernel*>(kernels[static_cast<size_t>(d)].get());
  if (dot == nullptr || dot->out_.type != ir::ElementType::kF32 || dot->batch_ != 1 ||
      !dot->lhs_view_ || !dot->rhs_view_ || dot->transposed_out_ || dot->out_.dims.size() != 2 ||
      dk.shard_lo() != tk.shard_lo() || dk.shard_hi() != tk.shard_hi())
    return false;
  // The dot's result must be read by the transpose alone and be no result of the plan.
  for (int32_t o : plan.outputs()) {
    if (o == b) return false;
  }
  for (const plan::v2::Kernel& k : plan.kernels()) {
    if (k.id() == t) continue;
    for (const auto& op : k.operands()) {
      for (int32_t x : op.buffers()) {
        if (x == b) return false;
      }
    }
  }
  // Writing the transpose's buffer at the dot's time must not disturb the dot's operands or any
  // buffer a kernel between the two reads or writes (buffer assignment may share memory between
  // values whose lifetimes do not meet).
  const ArrayRef& out = buffers[static_cast<size_t>(tk.outputs(0))];
  if (Overlap(out, dot->lhs_) || Overlap(out, dot->rhs_)) return false;
  for (int32_t i = d + 1; i < t; ++i) {
    const plan::v2::Kernel& k = plan.kernels(i);
    for (const auto& op : k.operands()) {
      for (int32_t x : op.buffers()) {
        if (Overlap(out, buffers[static_cast<size_t>(x)])) return false;
      }
    }
    for (int32_t x : k.outputs()) {
      if (Overlap(out, buffers[static_cast<size_t>(x)])) return false;
    }
  }
  dot->transposed_out_ = out;
  return true;
}

bool FoldDotTree(const plan::ValidatedPlan& validated,
                 std::vector<std::unique_ptr<CpuKernel>>& kernels, int32_t t) {
  const plan::v2::Plan& plan = validated.proto();
  const std::vector<ArrayRef>& buffers = validated.buffers();
  const plan::v2::Kernel& ek = plan.kernels(t);
  if (!ek.has_elementwise() || ek.elementwise().has_reduce() || ek.outputs_size() != 1 ||
      kernels[static_cast<size_t>(t)] == nullptr)
    return false;
  const ArrayRef& out = buffers[static_cast<size_t>(ek.outputs(0))];
  if (out.type != ir::ElementType::kF32 || out.dims.size() != 2 || ek.operands_size() < 2)
    return false;
  SplitTree split;
  if (!SplitProgram(ek.elementwise().program(), FromDot(plan, ek), &split)) return false;
  const int64_t count = static_cast<int64_t>(split.leaves.size());
  if (count > kMaxGemmTreeLeaves) return false;
  AddTree tree;
  if (!ReadAddTree(split.tree, count, &tree)) return false;
  TreeLeaves leaves;
  if (!FindLeaves(plan, kernels, t, out, split.leaves, &leaves)) return false;
  // Where the tree's sum goes: the result, or, before an epilogue, the first leaf's buffer (the
  // result's type and dimensions, live until t and written by no kernel once the dots are gone).
  const ArrayRef& sum =
      split.epilogue
          ? buffers[static_cast<size_t>(ek.operands(static_cast<int>(split.leaves[0])).buffers(0))]
          : out;
  const auto& dots = leaves.dots;
  const auto& dot_at = leaves.dot_at;
  const auto& swapped = leaves.swapped;
  const auto& folded = leaves.folded;
  const int64_t total_k = leaves.total_k;
  auto node = std::make_unique<DotTreeKernel>();
  node->steps_ = std::move(tree.steps);
  // Scratch bounds: GemmTree packs every leaf's B for its block.
  if (total_k > 4096 || total_k * out.dims[1] > (int64_t{1} << 22)) return false;
  // The tree reads the dots' operands at t: nothing that still runs may write those bytes in
  // between, and the result may not overlap them. A slice's source is read in place when it
  // qualifies, else the slice's own copy.
  auto usable = [&](const Source& r) {
    if (r.range.Meets(out) || r.range.Meets(sum)) return false;
    for (int32_t i = r.read_at + 1; i < t; ++i) {
      if (!folded[static_cast<size_t>(i)] && Writes(plan, buffers, kernels, i, r.range))
        return false;
    }
    return true;
  };
  // Else the operand is copied into the stash where its dot would have read it.
  std::vector<std::unique_ptr<StashKernel>> stashes(static_cast<size_t>(count));
  auto stash = std::make_shared<DotTreeStash>();
  int64_t stash_bytes = 0;
  auto pick = [&](const ArrayRef& operand, int64_t s, int64_t rows,
                  int64_t cols) -> DotTreeKernel::Operand {
    const int32_t d = dot_at[static_cast<size_t>(s)];
    const Source in_place = SourceOf(plan, buffers, operand, d);
    if (usable(in_place)) return {in_place.offset, false, rows, cols};
    if (usable(Source{operand.offset, {operand.offset, operand.offset + operand.bytes}, d}))
      return {operand.offset, false, rows, cols};
    auto& k = stashes[static_cast<size_t>(s)];
    if (!k) k = std::make_unique<StashKernel>();
    k->copies_.push_back({operand.offset, stash_bytes, operand.bytes});
    const int64_t at = stash_bytes;
    stash_bytes += (operand.bytes + 63) / 64 * 64;
    return {at, true, rows, cols};
  };
  for (int64_t s = 0; s < count; ++s) {
    const DotKernel* dot = dots[static_cast<size_t>(s)];
    const auto& lv = *dot->lhs_view_;
    const auto& rv = *dot->rhs_view_;
    DotTreeKernel::Leaf leaf;
    leaf.k = dot->k_;
    if (swapped[static_cast<size_t>(s)]) {  // the transpose of A B is B^T A^T
      leaf.a = pick(dot->rhs_, s, rv[2], rv[1]);
      leaf.b = pick(dot->lhs_, s, lv[2], lv[1]);
      leaf.swapped = true;
    } else {
      leaf.a = pick(dot->lhs_, s, lv[1], lv[2]);
      leaf.b = pick(dot->rhs_, s, rv[1], rv[2]);
    }
    node->leaves_.push_back(leaf);
  }
  if (stash_bytes > kMaxTreeStashBytes) return false;
  stash->data.resize(static_cast<size_t>(stash_bytes / 4 + 16));
  node->stash_ = stash;
  node->gemm_.resize(node->leaves_.size());
  node->result_ = tree.result;
  node->out_ = sum;
  node->m_ = out.dims[0];
  node->n_ = out.dims[1];
  std::unique_ptr<CpuKernel> run = std::move(node);
  if (split.epilogue) {
    auto both = std::make_unique<TreeThenEpilogueKernel>();
    both->tree_ = std::move(run);
    both->epilogue_ = EpilogueKernel(validated.kernel(t), *split.epilogue, sum);
    if (both->epilogue_ == nullptr) return false;
    run = std::move(both);
  }
  RetireLeaves(leaves, stash, stashes, kernels);
  kernels[static_cast<size_t>(t)] = std::move(run);
  return true;
}

}  // namespace detrain::runtime::cpu
