// XLA's variadic reduce (argmax and argmin: a value and an index reduced together) and variadic
// reduce-window (XLA's optimizer writes select-and-scatter as one: the max and its position per
// window), expanded by the importer into elementwise ops, slices and reshapes that every backend
// runs exactly (expansions.h ExpandVariadicReduce; docs/ir.md, docs/jax.md).
//
// reduce(x_0 .. x_{k-1}, init_0 .. init_{k-1}), dimensions=D, to_apply=f, where f takes k
// accumulators then k elements (scalars) and returns a tuple of k scalars. The expansion keeps
// the canonical order of `reduce` (kPairwise64, docs/ir.md): per output element, the reduced
// elements in row-major order over D form a sequence, cut into leaves of 64; each leaf is
// combined left to right from the init values; the leaves are then combined pairwise, level by
// level, an odd last one carried up. Every output element goes through the same steps, so each
// step is f's body applied elementwise to whole arrays:
//
//   x_i'     = reshape(transpose(x_i, kept dims then D), [kept..., N])
//   leaves   = acc_i := broadcast(init_i); for t in 0..63: acc := f(acc, x'[..., leaf, t])
//              (the full leaves as [kept..., N/64, 64], the short last leaf on its own)
//   tree     = while L > 1: f(leaves[0::2], leaves[1::2]), the odd last concatenated
//
// f's body is cloned once per step with its scalars widened to the step's shape (its constants
// broadcast), so the result is f's own arithmetic in reduce's order: exact whatever f is.
// reduce-window's sequence is a window's taps in row-major order (its canonical order, the same
// kPairwise64): x' is the taps' strided slices concatenated, [windows..., taps].
#include <string>
#include <vector>

#include "compiler/ir/module.h"
#include "compiler/xla_import/emitter.h"

namespace detrain::xla_import {
namespace {

// Bounds that keep a hostile module from growing the graph without limit: f's body is cloned
// at most 64 + 63 + 64 times (leaf steps, short-leaf steps, tree levels).
constexpr size_t kMaxCombinerInstructions = 256;
constexpr int64_t kLeaf = 64;
constexpr int64_t kMaxTaps = 4096;  // a reduce-window's window

class Expander {
 public:
  Expander(Computation& comp, Instruction& instr, const Computation& f)
      : instr_(instr),
        f_(f),
        window_(instr.opcode == Opcode::kReduceWindow),
        e_(comp, instr, ".vr") {}

  Status Run() {
    const size_t n = instr_.operands.size();
    if (n < 2 || n % 2 != 0) {
      return InvalidArgument("takes inputs and as many init values, got " + std::to_string(n) +
                             " operands");
    }
    k_ = n / 2;
    DETRAIN_RETURN_IF_ERROR(CheckOperands());
    DETRAIN_RETURN_IF_ERROR(CheckCombiner());
    std::vector<Instruction*> result;
    if (n_ == 0) {
      for (size_t i = 0; i < k_; ++i) result.push_back(e_.Broadcast(Init(i), kept_dims_));
    } else {
      std::vector<Instruction*> seq;
      for (size_t i = 0; i < k_; ++i) seq.push_back(Sequence(*instr_.operands[i]));
      std::vector<Instruction*> leaves;
      DETRAIN_ASSIGN_OR_RETURN(leaves, Leaves(seq));
      DETRAIN_ASSIGN_OR_RETURN(leaves, Tree(leaves));
      for (Instruction* l : leaves)
        result.push_back(e_.Add(Opcode::kReshape, Of(*l, kept_dims_), {l}));
    }
    if (!instr_.shape.is_tuple()) {
      // One input and a scalar combiner printed with a plain shape: the instruction is the value.
      instr_.opcode = Opcode::kReshape;
      instr_.operands = {result[0]};
    } else {
      instr_.opcode = Opcode::kTuple;
      instr_.operands = result;
    }
    instr_.attrs.clear();
    return Status::Ok();
  }

 private:
  Instruction* Init(size_t i) const { return instr_.operands[k_ + i]; }

  Status CheckOperands() {
    const Shape& x0 = instr_.operands[0]->shape;
    for (size_t i = 0; i < 2 * k_; ++i) {
      if (instr_.operands[i]->shape.is_tuple()) return InvalidArgument("an operand is a tuple");
    }
    for (size_t i = 0; i < k_; ++i) {
      const Shape& x = instr_.operands[i]->shape;
      if (x.dims() != x0.dims()) {
        return InvalidArgument("its inputs must have one shape; input " + std::to_string(i) +
                               " is " + x.ToString() + ", input 0 " + x0.ToString());
      }
      if (Init(i)->shape != Shape(x.type(), {})) {
        return InvalidArgument("init value " + std::to_string(i) + " must be a " +
                               Shape(x.type(), {}).ToString() + ", found " +
                               Init(i)->shape.ToString());
      }
    }
    DETRAIN_RETURN_IF_ERROR(window_ ? CheckWindow(x0) : CheckDimensions(x0));
    std::vector<Shape> want;
    for (size_t i = 0; i < k_; ++i) {
      want.emplace_back(instr_.operands[i]->shape.type(), kept_dims_);
    }
    const Shape expected = k_ == 1 && !instr_.shape.is_tuple() ? want[0] : Shape::Tuple(want);
    if (instr_.shape != expected) {
      return InvalidArgument("gives " + expected.ToString() + ", but is declared " +
                             instr_.shape.ToString());
    }
    return Status::Ok();
  }

  // reduce-window: every window position is an output element, whose taps in row-major window
  // order are its sequence; windows without padding or dilation (max-pooling's).
  Status CheckWindow(const Shape& x0) {
    auto w = instr_.attrs.find(Attr::kWindow);
    const int64_t rank = x0.rank();
    if (w == instr_.attrs.end() || static_cast<int64_t>(w->second.window.size()) != rank) {
      return InvalidArgument("needs a window of one dimension per input dimension");
    }
    window_dims_ = w->second.window;
    n_ = 1;
    for (int64_t d = 0; d < rank; ++d) {
      const WindowDim& wd = window_dims_[static_cast<size_t>(d)];
      const int64_t in = x0.dims()[static_cast<size_t>(d)];
      if (wd.pad_lo != 0 || wd.pad_hi != 0 || wd.lhs_dilate != 1 || wd.rhs_dilate != 1) {
        return InvalidArgument("a window with padding or dilation is not supported");
      }
      if (wd.size < 1 || wd.stride < 1 || wd.size > in) {
        return InvalidArgument("window dimension " + std::to_string(d) + " (size " +
                               std::to_string(wd.size) + ", stride " + std::to_string(wd.stride) +
                               ") does not fit the input's " + std::to_string(in));
      }
      if (wd.size > kMaxTaps / n_) {
        return InvalidArgument("a window of more than " + std::to_string(kMaxTaps) + " taps");
      }
      n_ *= wd.size;
      kept_dims_.push_back((in - wd.size) / wd.stride + 1);
    }
    return Status::Ok();
  }

  Status CheckDimensions(const Shape& x0) {
    auto d = instr_.attrs.find(Attr::kDimensions);
    if (d == instr_.attrs.end()) return InvalidArgument("needs dimensions={...}");
    const int64_t rank = x0.rank();
    std::vector<bool> reduced(static_cast<size_t>(rank), false);
    for (int64_t dim : d->second.ints) {
      if (dim < 0 || dim >= rank || reduced[static_cast<size_t>(dim)]) {
        return InvalidArgument("dimensions must be distinct dimensions of the input (rank " +
                               std::to_string(rank) + "), found " + std::to_string(dim));
      }
      reduced[static_cast<size_t>(dim)] = true;
    }
    n_ = 1;
    for (int64_t dim = 0; dim < rank; ++dim) {
      const int64_t size = x0.dims()[static_cast<size_t>(dim)];
      if (reduced[static_cast<size_t>(dim)]) {
        reduced_.push_back(dim);
        n_ *= size;  // cannot overflow: x0's element count was checked when it was parsed
      } else {
        kept_.push_back(dim);
        kept_dims_.push_back(size);
      }
    }
    return Status::Ok();
  }

  Status CheckCombiner() {
    const std::vector<Instruction*> params = f_.Parameters();
    const std::string what = "its to_apply computation '" + f_.name() + "' ";
    if (params.size() != 2 * k_) {
      return InvalidArgument(what + "must take " + std::to_string(2 * k_) + " parameters, takes " +
                             std::to_string(params.size()));
    }
    for (size_t i = 0; i < 2 * k_; ++i) {
      const Shape want(instr_.operands[i % k_]->shape.type(), {});
      if (params[i]->shape != want) {
        return InvalidArgument(what + "parameter " + std::to_string(i) + " must be " +
                               want.ToString() + ", is " + params[i]->shape.ToString());
      }
    }
    DETRAIN_RETURN_IF_ERROR(body_.Init(f_, kMaxCombinerInstructions, what));
    const std::vector<const Instruction*>& outs = body_.outputs();
    if (outs.size() != k_) {
      return InvalidArgument(what + "must return a tuple of " + std::to_string(k_) + " scalars");
    }
    for (size_t i = 0; i < k_; ++i) {
      const Shape want(instr_.operands[i]->shape.type(), {});
      if (outs[i]->shape != want) {
        return InvalidArgument(what + "result " + std::to_string(i) + " must be " +
                               want.ToString() + ", is " + outs[i]->shape.ToString());
      }
    }
    return Status::Ok();
  }

  static Shape Of(const Instruction& like, const std::vector<int64_t>& dims) {
    return Shape(like.shape.type(), dims);
  }

  // For reduce-window, x as [windows..., taps]: tap k of every window is a strided slice of x,
  // concatenated in row-major tap order.
  Instruction* WindowSequence(Instruction& x) {
    std::vector<int64_t> one = kept_dims_;
    one.push_back(1);
    std::vector<Instruction*> taps;
    for (int64_t k = 0; k < n_; ++k) {
      taps.push_back(e_.Reshape(e_.WindowTap(&x, window_dims_, kept_dims_, k), one));
    }
    if (taps.size() == 1) return taps[0];
    std::vector<int64_t> all = kept_dims_;
    all.push_back(n_);
    Instruction* c = e_.Add(Opcode::kConcatenate, Of(x, all), taps);
    c->attrs[Attr::kDimensions].ints = {static_cast<int64_t>(window_dims_.size())};
    return c;
  }

  // x as [kept..., N]: the reduced elements of each output element in row-major order.
  Instruction* Sequence(Instruction& x) {
    if (window_) return WindowSequence(x);
    Instruction* t = &x;
    std::vector<int64_t> perm = kept_;
    perm.insert(perm.end(), reduced_.begin(), reduced_.end());
    bool identity = true;
    for (size_t d = 0; d < perm.size(); ++d)
      identity = identity && perm[d] == static_cast<int64_t>(d);
    if (!identity) {
      std::vector<int64_t> dims;
      for (int64_t d : perm) dims.push_back(x.shape.dims()[static_cast<size_t>(d)]);
      t = e_.Add(Opcode::kTranspose, Of(x, dims), {&x});
      t->attrs[Attr::kDimensions].ints = perm;
    }
    std::vector<int64_t> dims = kept_dims_;
    dims.push_back(n_);
    return t->shape.dims() == dims ? t : e_.Add(Opcode::kReshape, Of(x, dims), {t});
  }

  // f's body applied elementwise to k accumulators and k elements of one shape.
  std::vector<Instruction*> Apply(const std::vector<Instruction*>& acc,
                                  const std::vector<Instruction*>& elem) {
    std::vector<Instruction*> args = acc;
    args.insert(args.end(), elem.begin(), elem.end());
    return body_.Apply(e_.comp(), e_.like(), args, ".vr", e_.serial());
  }

  // The leaf step on [kept..., leaves, width]: acc from the init values, then each of the
  // width elements in turn. Gives [kept..., leaves].
  std::vector<Instruction*> Leaf(const std::vector<Instruction*>& block, int64_t leaves,
                                 int64_t width) {
    std::vector<int64_t> dims = kept_dims_;
    dims.push_back(leaves);
    const int64_t last = static_cast<int64_t>(kept_dims_.size()) + 1;
    std::vector<Instruction*> acc;
    for (size_t i = 0; i < k_; ++i) acc.push_back(e_.Broadcast(Init(i), dims));
    for (int64_t t = 0; t < width; ++t) {
      std::vector<Instruction*> elem;
      for (Instruction* b : block) {
        elem.push_back(e_.Add(Opcode::kReshape, Of(*b, dims), {e_.Slice(b, last, t, t + 1, 1)}));
      }
      acc = Apply(acc, elem);
    }
    return acc;
  }

  Result<std::vector<Instruction*>> Leaves(const std::vector<Instruction*>& seq) {
    const int64_t full = n_ / kLeaf, tail = n_ % kLeaf;
    const int64_t seq_dim = static_cast<int64_t>(kept_dims_.size());
    std::vector<std::vector<Instruction*>> parts;
    auto blocks = [&](int64_t start, int64_t leaves, int64_t width) {
      std::vector<Instruction*> block;
      for (Instruction* s : seq) {
        Instruction* part = start == 0 && leaves * width == n_
                                ? s
                                : e_.Slice(s, seq_dim, start, start + leaves * width, 1);
        std::vector<int64_t> dims = kept_dims_;
        dims.push_back(leaves);
        dims.push_back(width);
        block.push_back(e_.Add(Opcode::kReshape, Of(*s, dims), {part}));
      }
      return block;
    };
    if (full > 0) parts.push_back(Leaf(blocks(0, full, kLeaf), full, kLeaf));
    if (tail > 0) parts.push_back(Leaf(blocks(full * kLeaf, 1, tail), 1, tail));
    if (parts.size() == 1) return parts[0];
    std::vector<Instruction*> joined;
    for (size_t i = 0; i < k_; ++i) {
      std::vector<int64_t> dims = kept_dims_;
      dims.push_back(full + 1);
      Instruction* c =
          e_.Add(Opcode::kConcatenate, Of(*parts[0][i], dims), {parts[0][i], parts[1][i]});
      c->attrs[Attr::kDimensions].ints = {seq_dim};
      joined.push_back(c);
    }
    return joined;
  }

  Result<std::vector<Instruction*>> Tree(std::vector<Instruction*> leaves) {
    const int64_t dim = static_cast<int64_t>(kept_dims_.size());
    int64_t count = leaves[0]->shape.dims()[static_cast<size_t>(dim)];
    while (count > 1) {
      const int64_t pairs = count / 2;
      std::vector<Instruction*> lo, hi;
      for (Instruction* l : leaves) {
        lo.push_back(e_.Slice(l, dim, 0, 2 * pairs - 1, 2));
        hi.push_back(e_.Slice(l, dim, 1, 2 * pairs, 2));
      }
      std::vector<Instruction*> next = Apply(lo, hi);
      if (count % 2 == 1) {
        for (size_t i = 0; i < k_; ++i) {
          std::vector<int64_t> dims = next[i]->shape.dims();
          dims[static_cast<size_t>(dim)] += 1;
          Instruction* c = e_.Add(Opcode::kConcatenate, Of(*next[i], dims),
                                  {next[i], e_.Slice(leaves[i], dim, count - 1, count, 1)});
          c->attrs[Attr::kDimensions].ints = {dim};
          next[i] = c;
        }
      }
      leaves = std::move(next);
      count = (count + 1) / 2;
    }
    return leaves;
  }

  Instruction& instr_;
  const Computation& f_;
  const bool window_;  // reduce-window rather than reduce
  std::vector<WindowDim> window_dims_;
  size_t k_ = 0;
  int64_t n_ = 0;                 // reduced elements per output element
  std::vector<int64_t> kept_;     // the kept dimensions, ascending
  std::vector<int64_t> reduced_;  // the reduced dimensions, ascending
  std::vector<int64_t> kept_dims_;
  ScalarBody body_;  // f
  Emitter e_;
};

}  // namespace

Status ExpandVariadicReduce(Computation& comp, Instruction& instr, const Computation& combiner) {
  return Expander(comp, instr, combiner).Run();
}

}  // namespace detrain::xla_import
