// XLA's sort, topk and compare type=TOTALORDER, expanded by the importer into exact ops of the IR
// (expansions.h; docs/ir.md, docs/jax.md).
//
// compare(a, b), type=TOTALORDER on f32 compares integer keys: bits = bitcast-convert(x) as s32,
// key = bits xor ((bits >>arith 31) and 0x7fffffff), which orders -NaN < -inf < ... < -0 < +0 <
// ... < +inf < +NaN, as XLA's total order does. On integers it is the plain compare.
//
// sort(x_0 .. x_{k-1}), dimensions={d}, to_apply=less: every operand is permuted along d by the
// stable sort of the comparator `less` (its parameters: x_0's left and right, x_1's, ...). The
// expansion is a bitonic sorting network over d (padded to a power of two) whose comparator is
//   less'(a, b) = a valid and b padding, or both valid and (less(a, b) or (not less(b, a) and
//                 index(a) < index(b))), or both padding and index(a) < index(b)
// — a strict total order, so the network's result is unique: the stable sort (for a comparator
// that is a strict weak order, as XLA requires). Each of its log2(n)(log2(n)+1)/2 stages is
// elementwise over whole arrays: the pairs (i, i + j) of the stage as two halves of a reshape,
// `less` applied to them, selects. Exact: only compares and data movement.
//
// topk(x), k=K, largest=true: the stable sort of (x, iota) along the last dimension by the total
// order, descending (ascending for largest=false), then the first K of both.
#include <functional>
#include <string>
#include <vector>

#include "compiler/ir/module.h"
#include "compiler/xla_import/emitter.h"

namespace detrain::xla_import {
namespace {

constexpr size_t kMaxComparatorInstructions = 256;
constexpr int64_t kMaxSortLength = int64_t{1} << 24;  // 24 * 25 / 2 = 300 stages at most

// The total-order key of f32 x as s32 (see the file comment); integers are their own key.
Instruction* TotalOrderKey(Emitter& e, Instruction* x) {
  if (x->shape.type() != ElementType::kF32) return x;
  const std::vector<int64_t>& dims = x->shape.dims();
  Instruction* bits = e.Add(Opcode::kBitcastConvert, Shape(ElementType::kS32, dims), {x});
  Instruction* sign =
      e.Binary(Opcode::kShiftRightArithmetic, bits, e.Splat(ElementType::kS32, 31, dims));
  Instruction* mask = e.Binary(Opcode::kAnd, sign, e.Splat(ElementType::kS32, 0x7fffffff, dims));
  return e.Binary(Opcode::kXor, bits, mask);
}

// less(a, b) on arrays of one shape: a pred array.
using Less = std::function<Instruction*(const std::vector<Instruction*>& a,
                                        const std::vector<Instruction*>& b)>;

// Sorts `arrays` (each [rest..., n], n >= 1) along their last dimension by `less`, stably.
std::vector<Instruction*> Network(Emitter& e, std::vector<Instruction*> arrays, const Less& less) {
  const std::vector<int64_t> dims = arrays[0]->shape.dims();
  const size_t last = dims.size() - 1;
  const int64_t n = dims[last];
  int64_t p2 = 1;
  while (p2 < n) p2 *= 2;
  std::vector<int64_t> padded = dims;
  padded[last] = p2;
  if (p2 > n) {
    for (Instruction*& a : arrays) {
      Instruction* pad =
          e.Add(Opcode::kPad, Shape(a->shape.type(), padded), {a, e.Zero(a->shape.type())});
      std::vector<PadDim>& pd = pad->attrs[Attr::kPadding].padding;
      for (size_t d = 0; d < dims.size(); ++d) pd.push_back({0, d == last ? p2 - n : 0, 0});
      a = pad;
    }
  }
  Instruction* index = e.Add(Opcode::kIota, Shape(ElementType::kS32, padded), {});
  index->attrs[Attr::kIotaDimension].i = static_cast<int64_t>(last);
  arrays.push_back(index);
  const size_t idx = arrays.size() - 1;

  // less' of the file comment, on the two halves of a stage.
  auto total_less = [&](const std::vector<Instruction*>& a, const std::vector<Instruction*>& b) {
    std::vector<Instruction*> av(a.begin(), a.end() - 1), bv(b.begin(), b.end() - 1);
    Instruction* ia = a[idx];
    Instruction* ib = b[idx];
    const std::vector<int64_t>& hd = ia->shape.dims();
    Instruction* limit = e.Splat(ElementType::kS32, static_cast<int32_t>(n), hd);
    Instruction* va = e.Compare(ia, limit, Direction::kLt);
    Instruction* vb = e.Compare(ib, limit, Direction::kLt);
    Instruction* by_index = e.Compare(ia, ib, Direction::kLt);
    Instruction* ab = less(av, bv);
    Instruction* ba = less(bv, av);
    Instruction* not_ba = e.Add(Opcode::kNot, ba->shape, {ba});
    Instruction* tie = e.Binary(Opcode::kAnd, not_ba, by_index);
    Instruction* valid_less = e.Binary(Opcode::kOr, ab, tie);
    // va ? (vb ? valid_less : true) : (vb ? false : by_index)
    Instruction* t = e.Splat(ElementType::kPred, 1, hd);
    Instruction* f = e.Splat(ElementType::kPred, 0, hd);
    return e.Select(va, e.Select(vb, valid_less, t), e.Select(vb, f, by_index));
  };

  for (int64_t k = 2; k <= p2; k *= 2) {
    for (int64_t j = k / 2; j >= 1; j /= 2) {
      const int64_t blocks = p2 / (2 * j);
      std::vector<int64_t> split(dims.begin(), dims.end() - 1), half;
      split.push_back(blocks);
      half = split;
      half.push_back(j);
      split.push_back(2);
      split.push_back(j);
      std::vector<Instruction*> lo, hi;
      for (Instruction* a : arrays) {
        Instruction* r = e.Reshape(a, split);
        lo.push_back(e.Reshape(e.Slice(r, last + 1, 0, 1), half));
        hi.push_back(e.Reshape(e.Slice(r, last + 1, 1, 2), half));
      }
      // Block b sorts ascending when bit k of its first position b * 2j is clear.
      Instruction* block = e.Add(Opcode::kIota, Shape(ElementType::kS32, half), {});
      block->attrs[Attr::kIotaDimension].i = static_cast<int64_t>(last);
      Instruction* bit = e.Binary(
          Opcode::kAnd, block, e.Splat(ElementType::kS32, static_cast<int32_t>(k / (2 * j)), half));
      Instruction* asc = e.Compare(bit, e.Splat(ElementType::kS32, 0, half), Direction::kEq);
      // Ascending: swap when less'(hi, lo); descending: when less'(lo, hi).
      std::vector<Instruction*> first, second;
      for (size_t i = 0; i < arrays.size(); ++i) {
        first.push_back(e.Select(asc, hi[i], lo[i]));
        second.push_back(e.Select(asc, lo[i], hi[i]));
      }
      Instruction* swap = total_less(first, second);
      std::vector<int64_t> one = split;
      one[last + 1] = 1;
      for (size_t i = 0; i < arrays.size(); ++i) {
        Instruction* new_lo = e.Reshape(e.Select(swap, hi[i], lo[i]), one);
        Instruction* new_hi = e.Reshape(e.Select(swap, lo[i], hi[i]), one);
        Instruction* c =
            e.Add(Opcode::kConcatenate, Shape(arrays[i]->shape.type(), split), {new_lo, new_hi});
        c->attrs[Attr::kDimensions].ints = {static_cast<int64_t>(last + 1)};
        arrays[i] = e.Reshape(c, padded);
      }
    }
  }
  arrays.pop_back();  // the index
  for (Instruction*& a : arrays) {
    if (p2 > n) a = e.Slice(a, last, 0, n);
  }
  return arrays;
}

Status CheckLength(int64_t n) {
  if (n > kMaxSortLength) {
    return InvalidArgument("sorts " + std::to_string(n) +
                           " elements along its dimension, more "
                           "than " +
                           std::to_string(kMaxSortLength));
  }
  return Status::Ok();
}

}  // namespace

Status ExpandTotalOrderCompare(Computation& comp, Instruction& instr) {
  if (instr.opcode != Opcode::kCompare || instr.operands.size() != 2 ||
      instr.operands[0]->shape.is_tuple() || instr.operands[1]->shape != instr.operands[0]->shape) {
    return InvalidArgument("type=TOTALORDER needs a compare of two operands of one shape");
  }
  const ElementType t = instr.operands[0]->shape.type();
  if (t != ElementType::kF32) return Status::Ok();  // integers and pred: the plain order
  Emitter e(comp, instr, ".total");
  instr.operands = {TotalOrderKey(e, instr.operands[0]), TotalOrderKey(e, instr.operands[1])};
  return Status::Ok();
}

Status ExpandSort(Computation& comp, Instruction& instr, const Computation& comparator) {
  const size_t k = instr.operands.size();
  if (k == 0) return InvalidArgument("sorts at least one operand");
  const Shape& x0 = instr.operands[0]->shape;
  std::vector<Shape> results;
  for (const Instruction* o : instr.operands) {
    if (o->shape.is_tuple() || o->shape.dims() != x0.dims()) {
      return InvalidArgument("its operands must be arrays of one shape");
    }
    results.push_back(o->shape);
  }
  const Shape expected = k == 1 ? results[0] : Shape::Tuple(results);
  if (instr.shape != expected) {
    return InvalidArgument("gives " + expected.ToString() + ", but is declared " +
                           instr.shape.ToString());
  }
  auto d = instr.attrs.find(Attr::kDimensions);
  if (d == instr.attrs.end() || d->second.ints.size() != 1 || d->second.ints[0] < 0 ||
      d->second.ints[0] >= x0.rank()) {
    return InvalidArgument("needs dimensions={d}, one dimension of its operands");
  }
  const int64_t dim = d->second.ints[0];
  ScalarBody less;
  const std::string what = "its comparator '" + comparator.name() + "' ";
  DETRAIN_RETURN_IF_ERROR(less.Init(comparator, kMaxComparatorInstructions, what));
  if (less.params().size() != 2 * k) {
    return InvalidArgument(what + "must take " + std::to_string(2 * k) + " parameters");
  }
  for (size_t i = 0; i < 2 * k; ++i) {
    if (less.params()[i]->shape != Shape(results[i / 2].type(), {})) {
      return InvalidArgument(what + "parameter " + std::to_string(i) + " must be " +
                             Shape(results[i / 2].type(), {}).ToString());
    }
  }
  if (less.outputs().size() != 1 || less.outputs()[0]->shape != Shape(ElementType::kPred, {})) {
    return InvalidArgument(what + "must return one pred[]");
  }
  const int64_t n = x0.dims()[static_cast<size_t>(dim)];
  DETRAIN_RETURN_IF_ERROR(CheckLength(n));

  Emitter e(comp, instr, ".sort");
  std::vector<int64_t> perm, inverse(static_cast<size_t>(x0.rank()));
  for (int64_t i = 0; i < x0.rank(); ++i) {
    if (i != dim) perm.push_back(i);
  }
  perm.push_back(dim);
  for (size_t i = 0; i < perm.size(); ++i) inverse[static_cast<size_t>(perm[i])] = int64_t(i);
  std::vector<Instruction*> sorted;
  if (n <= 1 || x0.ElementCount() == 0) {
    sorted.assign(instr.operands.begin(), instr.operands.end());
  } else {
    std::vector<Instruction*> arrays;
    for (Instruction* o : instr.operands) arrays.push_back(e.Transpose(o, perm));
    Less apply = [&](const std::vector<Instruction*>& a, const std::vector<Instruction*>& b) {
      std::vector<Instruction*> args;
      for (size_t i = 0; i < a.size(); ++i) {
        args.push_back(a[i]);
        args.push_back(b[i]);
      }
      return less.Apply(e.comp(), e.like(), args, ".less", e.serial())[0];
    };
    for (Instruction* a : Network(e, arrays, apply)) sorted.push_back(e.Transpose(a, inverse));
  }
  if (k == 1) {
    instr.opcode = Opcode::kReshape;  // the identity onto the sorted array
    instr.operands = {sorted[0]};
  } else {
    instr.opcode = Opcode::kTuple;
    instr.operands = sorted;
  }
  instr.attrs.clear();
  return Status::Ok();
}

Status ExpandTopK(Computation& comp, Instruction& instr, int64_t k, bool largest,
                  const Computation* comparator) {
  if (instr.operands.size() != 1 || instr.operands[0]->shape.is_tuple() ||
      instr.operands[0]->shape.rank() == 0) {
    return InvalidArgument("takes one operand of rank 1 or more");
  }
  Instruction* x = instr.operands[0];
  const ElementType t = x->shape.type();
  if (t != ElementType::kF32 && t != ElementType::kS32 && t != ElementType::kU32) {
    return InvalidArgument("of element type " + std::string(ElementTypeName(t)) +
                           " is not supported");
  }
  const std::vector<int64_t>& dims = x->shape.dims();
  const int64_t n = dims.back();
  if (k < 0 || k > n) {
    return InvalidArgument("k=" + std::to_string(k) + " is not in [0, " + std::to_string(n) + "]");
  }
  DETRAIN_RETURN_IF_ERROR(CheckLength(n));
  std::vector<int64_t> out = dims;
  out.back() = k;
  const Shape expected = Shape::Tuple({Shape(t, out), Shape(ElementType::kS32, out)});
  if (instr.shape != expected) {
    return InvalidArgument("gives " + expected.ToString() + ", but is declared " +
                           instr.shape.ToString());
  }
  Emitter e(comp, instr, ".topk");
  Instruction* iota = e.Add(Opcode::kIota, Shape(ElementType::kS32, dims), {});
  iota->attrs[Attr::kIotaDimension].i = static_cast<int64_t>(dims.size() - 1);
  std::vector<Instruction*> sorted = {x, iota};
  ScalarBody less;
  if (comparator != nullptr) {
    // XLA's TopK custom call: the comparator of (value, index) pairs it was given.
    const std::string what = "its comparator '" + comparator->name() + "' ";
    DETRAIN_RETURN_IF_ERROR(less.Init(*comparator, kMaxComparatorInstructions, what));
    const std::vector<Instruction*>& p = less.params();
    if (p.size() != 4 || p[0]->shape != Shape(t, {}) || p[1]->shape != Shape(t, {}) ||
        p[2]->shape != Shape(ElementType::kS32, {}) ||
        p[3]->shape != Shape(ElementType::kS32, {}) || less.outputs().size() != 1 ||
        less.outputs()[0]->shape != Shape(ElementType::kPred, {})) {
      return InvalidArgument(what + "must take (" + Shape(t, {}).ToString() + ", " +
                             Shape(t, {}).ToString() + ", s32[], s32[]) and return pred[]");
    }
  }
  if (n > 1) {
    const Direction d = largest ? Direction::kGt : Direction::kLt;
    Less by_value = [&](const std::vector<Instruction*>& a, const std::vector<Instruction*>& b) {
      if (comparator != nullptr) {
        return less.Apply(e.comp(), e.like(), {a[0], b[0], a[1], b[1]}, ".less", e.serial())[0];
      }
      return e.Compare(TotalOrderKey(e, a[0]), TotalOrderKey(e, b[0]), d);
    };
    sorted = Network(e, sorted, by_value);
  }
  const size_t last = dims.size() - 1;
  instr.opcode = Opcode::kTuple;
  instr.operands = {e.Slice(sorted[0], last, 0, k), e.Slice(sorted[1], last, 0, k)};
  instr.attrs.clear();
  return Status::Ok();
}

}  // namespace detrain::xla_import
