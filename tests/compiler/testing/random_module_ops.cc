// See random_module.h. This file: the families that need called computations or operand shapes
// built to fit each other — reductions, dot/convolution, gather/scatter, calls, all-reduce,
// threefry — and the pass-targeted patterns.
#include <cmath>
#include <string>

#include "compiler/ir/opcode.h"
#include "random_module_internal.h"

namespace detrain::testing::random_internal {

const ir::Computation* Generator::Combiner(Opcode op, ElementType t, int copy) {
  // `copy` > 0 builds a second, structurally equal computation (cse merges them and
  // combine-all-reduce must treat them alike).
  auto key = std::make_pair(static_cast<int>(op) * 4 + copy, static_cast<int>(t));
  auto it = combiners_.find(key);
  if (it != combiners_.end()) return it->second;
  std::string name = std::string(ir::OpcodeName(op)) + "_" + std::string(ir::ElementTypeName(t)) +
                     (copy ? "_" + std::to_string(copy) : "");
  return combiners_[key] = Builder::ScalarCombiner(module_, name, op, t);
}

const ir::Computation* Generator::AnyCombiner(ElementType t) {
  std::vector<Opcode> ops = {Opcode::kMaximum, Opcode::kMinimum};
  if (t != ElementType::kPred)
    ops.insert(ops.end(), {Opcode::kAdd, Opcode::kAdd, Opcode::kMultiply});
  if (t != ElementType::kF32) ops.insert(ops.end(), {Opcode::kAnd, Opcode::kOr, Opcode::kXor});
  return Combiner(ops[Pick(ops.size())], t);
}

namespace {

// The extent of one windowed dimension, or 0 if the window does not fit.
int64_t WindowExtent(int64_t d, const ir::WindowDim& w) {
  int64_t in = (d - 1) * w.lhs_dilate + 1 + w.pad_lo + w.pad_hi;
  int64_t span = (w.size - 1) * w.rhs_dilate + 1;
  return in < span ? 0 : (in - span) / w.stride + 1;
}

}  // namespace

ir::WindowDim Generator::RandomWindow(int64_t d, int64_t max_size) {
  ir::WindowDim w;
  w.size = 1 + static_cast<int64_t>(Pick(static_cast<uint64_t>(max_size)));
  w.stride = 1 + static_cast<int64_t>(Pick(2));
  w.pad_lo = Chance(3) ? 1 : 0;
  w.pad_hi = Chance(3) ? 1 : 0;
  w.lhs_dilate = Chance(5) ? 2 : 1;
  w.rhs_dilate = Chance(5) ? 2 : 1;
  if (WindowExtent(d, w) == 0) w.size = 1, w.rhs_dilate = 1;  // a 1-wide window always fits
  return w;
}

Instruction* Generator::Reduction() {
  ElementType t = AnyType();
  Instruction* x = Operand(t);
  const Shape s = x->shape;
  if (s.rank() == 0) return nullptr;
  Instruction* init = RandomConstant(Shape::Scalar(t));
  if (Chance(3)) {
    std::vector<ir::WindowDim> window;
    std::vector<int64_t> dims;
    for (int64_t d : s.dims()) {
      window.push_back(RandomWindow(d, d));
      dims.push_back(WindowExtent(d, window.back()));
    }
    if (!Fits(dims)) return nullptr;
    return b_->ReduceWindow(x, init, window, AnyCombiner(t));
  }
  std::vector<int64_t> dims;
  for (int i = 0; i < s.rank(); ++i) {
    if (Chance(2)) dims.push_back(i);
  }
  if (dims.empty()) dims.push_back(static_cast<int64_t>(Pick(static_cast<uint64_t>(s.rank()))));
  return b_->Reduce(x, init, dims, AnyCombiner(t));
}

Instruction* Generator::DotConv() {
  if (Chance(3) && Has(ElementType::kF32)) return Convolution(Operand(ElementType::kF32));
  ElementType t = AnyType();
  if (t == ElementType::kPred) return nullptr;
  Instruction* x = Operand(t);
  const Shape s = x->shape;
  const int rank = s.rank();
  if (rank == 0) return nullptr;
  std::vector<int64_t> perm = Permutation(rank);
  size_t batch = rank > 1 && Chance(3) ? 1 : 0;
  size_t contract = std::min<size_t>(static_cast<size_t>(rank) - batch, 1 + Pick(2));
  ir::DotDims dims;
  dims.lhs_batch.assign(perm.begin(), perm.begin() + static_cast<std::ptrdiff_t>(batch));
  dims.lhs_contracting.assign(perm.begin() + static_cast<std::ptrdiff_t>(batch),
                              perm.begin() + static_cast<std::ptrdiff_t>(batch + contract));
  if (Chance(3)) {  // x . x
    dims.rhs_batch = dims.lhs_batch;
    dims.rhs_contracting = dims.lhs_contracting;
    return b_->Dot(x, x, dims);
  }
  // rhs: the batch and contracting sizes plus 0..2 free dimensions, in a random order.
  std::vector<int64_t> sizes;
  for (int64_t d : dims.lhs_batch) sizes.push_back(s.dim(static_cast<int>(d)));
  for (int64_t d : dims.lhs_contracting) sizes.push_back(s.dim(static_cast<int>(d)));
  for (uint64_t k = Pick(3); k > 0; --k) sizes.push_back(1 + static_cast<int64_t>(Pick(4)));
  std::vector<int64_t> where = Permutation(static_cast<int>(sizes.size()));
  std::vector<int64_t> rhs_dims(sizes.size());
  for (size_t i = 0; i < sizes.size(); ++i) rhs_dims[static_cast<size_t>(where[i])] = sizes[i];
  for (size_t i = 0; i < batch; ++i) dims.rhs_batch.push_back(where[i]);
  for (size_t i = batch; i < batch + contract; ++i) dims.rhs_contracting.push_back(where[i]);
  int64_t out = 1;
  for (int64_t d : s.dims()) out *= d;
  for (int64_t d : rhs_dims) out *= d;
  if (out > kMaxElements * 16) return nullptr;  // bounds the output (contracted sizes divide it)
  return b_->Dot(x, SameShape(Shape(t, rhs_dims)), dims);
}

Instruction* Generator::Convolution(Instruction* x) {
  // x reshaped to (batch, spatial..., features) in one of two layouts; 1 or 2 spatial dims.
  const int64_t n = x->shape.ElementCount();
  const int spatial = x->shape.rank() >= 2 && Chance(2) ? 2 : 1;
  const bool features_last = Chance(2);
  int64_t features = n % 2 == 0 && Chance(2) ? 2 : 1;
  int64_t s0 = spatial == 2 ? x->shape.dim(0) : n / features;
  int64_t s1 = spatial == 2 ? n / (features * s0) : 1;
  if (spatial == 2 && n % (features * s0) != 0) features = 1, s1 = n / s0;
  std::vector<int64_t> space =
      spatial == 2 ? std::vector<int64_t>{s0, s1} : std::vector<int64_t>{s0};
  std::vector<ir::WindowDim> window;
  std::vector<int64_t> out_space, kernel_space;
  for (int64_t d : space) {
    window.push_back(RandomWindow(d, 3));
    out_space.push_back(WindowExtent(d, window.back()));
    kernel_space.push_back(window.back().size);
  }
  const int64_t out_features = 1 + static_cast<int64_t>(Pick(3));
  auto layout = [&](int64_t b, const std::vector<int64_t>& sp, int64_t f) {
    std::vector<int64_t> dims = {b};
    if (!features_last) dims.push_back(f);
    dims.insert(dims.end(), sp.begin(), sp.end());
    if (features_last) dims.push_back(f);
    return dims;
  };
  std::vector<int64_t> kernel =
      features_last ? kernel_space : std::vector<int64_t>{out_features, features};
  if (features_last) kernel.insert(kernel.end(), {features, out_features});
  if (!features_last) kernel.insert(kernel.end(), kernel_space.begin(), kernel_space.end());
  if (!Fits(layout(1, out_space, out_features)) || !Fits(kernel)) return nullptr;
  std::string sp = spatial == 2 ? "01" : "0";
  std::string labels = features_last ? "b" + sp + "f_" + sp + "io->b" + sp + "f"
                                     : "bf" + sp + "_oi" + sp + "->bf" + sp;
  Instruction* input = b_->Reshape(x, layout(1, space, features));
  return b_->Convolution(input, SameShape(Shape(ElementType::kF32, kernel)), labels, window);
}

Instruction* Generator::GatherScatter() {
  ElementType t = AnyType();
  Instruction* x = Operand(t);
  const Shape s = x->shape;
  if (s.rank() == 0) return nullptr;
  const int kind = static_cast<int>(Pick(3));  // 0: gather rows, 1: gather windows, 2: scatter
  // s64 indices only for gather: the interpreter's scatter bounds check overflows on indices
  // near INT64_MAX (eval_indexing.cc, `dst[d] + window_sizes[d]` wraps, so the write lands out
  // of bounds; reported for the interpreter's owner). Allow s64 here once that is fixed.
  bool s64 = kind != 2 && Has(ElementType::kS64) && Chance(3);
  Instruction* idx = Operand(s64 ? ElementType::kS64 : ElementType::kS32);
  if (idx->shape.rank() > 2) idx = b_->Reshape(idx, {idx->shape.ElementCount()});
  const int64_t r = idx->shape.rank();
  std::vector<int64_t> out = idx->shape.dims();
  ir::GatherDims g;
  g.index_vector_dim = r;
  g.start_index_map = {0};
  g.slice_sizes = s.dims();
  if (kind == 1) {
    g.slice_sizes[0] = 1 + static_cast<int64_t>(Pick(static_cast<uint64_t>(s.dim(0))));
    out.push_back(g.slice_sizes[0]);
  } else {
    g.slice_sizes[0] = 1;
    g.collapsed_slice_dims = {0};
  }
  for (int i = 1; i < s.rank(); ++i) out.push_back(s.dim(i));
  for (int64_t d = r; d < static_cast<int64_t>(out.size()); ++d) g.offset_dims.push_back(d);
  if (!Fits(out)) return nullptr;
  if (kind != 2) return b_->Gather(x, idx, g);
  ir::ScatterDims sd;
  sd.update_window_dims = g.offset_dims;
  sd.inserted_window_dims = {0};
  sd.scatter_dims_to_operand_dims = {0};
  sd.index_vector_dim = r;
  Instruction* updates = Chance(2) ? b_->Gather(x, idx, g) : SameShape(Shape(t, out));
  const ir::Computation* combiner = AnyCombiner(t);
  if (Chance(3)) {  // overwrite: (old, new) -> new
    Builder c(module_, "overwrite_" + std::to_string(next_computation_++));
    c.Parameter(0, Shape::Scalar(t));
    combiner = *c.Build(c.Parameter(1, Shape::Scalar(t)));
  }
  return b_->Scatter(x, idx, updates, sd, combiner);
}

Instruction* Generator::CallOrTuple() {
  ElementType t = AnyType();
  Instruction* x = Operand(t);
  const Shape s = x->shape;
  if (Chance(3)) {
    std::vector<Instruction*> parts = {x, SameShape(s)};
    if (Chance(2)) parts.push_back(Operand(AnyType()));
    return b_->GetTupleElement(b_->Tuple(parts), static_cast<int64_t>(Pick(parts.size())));
  }
  // (p0, p1, unused p2) -> op2(op1(p0, p1), p0) over x's shape.
  Opcode op1 = t == ElementType::kPred ? Opcode::kAnd : Opcode::kMultiply;
  Opcode op2 = t == ElementType::kPred ? Opcode::kXor : Opcode::kAdd;
  Builder c(module_, "callee_" + std::to_string(next_computation_++));
  Instruction* p0 = c.Parameter(0, s);
  Instruction* p1 = c.Parameter(1, s);
  c.Parameter(2, s);
  auto callee = c.Build(c.Binary(op2, c.Binary(op1, p0, p1), p0));
  if (!callee.ok()) return nullptr;
  return b_->Call(*callee, {x, SameShape(s), SameShape(s)});
}

Instruction* Generator::Loop() {
  if (!Has(ElementType::kS32)) return nullptr;
  ElementType t = AnyType();
  Instruction* x = Operand(t);
  const Shape s = x->shape;
  Opcode op1 = t == ElementType::kPred ? Opcode::kAnd : Opcode::kMultiply;
  Opcode op2 = t == ElementType::kPred ? Opcode::kXor : Opcode::kAdd;
  // A fori loop of 0..3 trips: the state (i, v), v -> op2(op1(v, v), v), i -> i + 1 while
  // i < n (what unroll-while unrolls).
  const Shape state = Shape::Tuple({Shape::Scalar(ElementType::kS32), s});
  auto s32 = [](Builder& b, int32_t v) {
    return b.Constant(ir::Literal::Scalar<int32_t>(ElementType::kS32, v));
  };
  Builder body(module_, "loop_body_" + std::to_string(next_computation_++));
  Instruction* bs = body.Parameter(0, state);
  Instruction* v = body.GetTupleElement(bs, 1);
  Instruction* next = body.Add(body.GetTupleElement(bs, 0), s32(body, 1));
  auto body_c = body.Build(body.Tuple({next, body.Binary(op2, body.Binary(op1, v, v), v)}));
  Builder cond(module_, "loop_cond_" + std::to_string(next_computation_++));
  Instruction* cs = cond.Parameter(0, state);
  auto cond_c = cond.Build(cond.Compare(
      cond.GetTupleElement(cs, 0), s32(cond, static_cast<int32_t>(Pick(4))), ir::Direction::kLt));
  if (!body_c.ok() || !cond_c.ok()) return nullptr;
  Instruction* init = b_->Tuple({s32(*b_, 0), x});
  return b_->GetTupleElement(b_->While(init, *cond_c, *body_c), 1);
}

Instruction* Generator::AllReduce() {
  ElementType t = Chance(4) || !Has(ElementType::kS32) ? ElementType::kF32 : ElementType::kS32;
  Opcode op = t == ElementType::kF32 || Chance(2) ? Opcode::kAdd : Opcode::kMaximum;
  // Often pairs with the same (or an equal) combiner: what combine-all-reduce combines.
  const ir::Computation* combiner = Combiner(op, t, Chance(4) ? 1 : 0);
  Instruction* x = Operand(t);
  if (Chance(2)) values_.push_back(b_->AllReduce(Operand(t), combiner));
  return b_->AllReduce(Chance(2) ? x : b_->Add(x, x), combiner);
}

Instruction* Generator::Threefry() {
  if (!Has(ElementType::kU32)) return nullptr;
  Instruction* x0 = Operand(ElementType::kU32);
  const Shape s = x0->shape;
  // The draws in a fixed order, last argument first (random_module.cc, Elementwise case 4).
  Instruction* x1 = SameShape(s);
  Instruction* k1 = SameShape(s);
  Instruction* k0 = SameShape(s);
  Instruction* t = b_->Threefry2x32(k0, k1, x0, x1);
  return b_->GetTupleElement(t, static_cast<int64_t>(Pick(2)));
}

Instruction* Generator::PassPattern() {
  ElementType t = Chance(4) && Has(ElementType::kS32) ? ElementType::kS32 : ElementType::kF32;
  return PassPatternOf(t, Operand(t));
}

Instruction* Generator::PassPatternOf(ElementType t, Instruction* x) {
  const Shape s = x->shape;
  const bool f32 = t == ElementType::kF32;
  const Opcode unary = f32 ? Opcode::kExp : Opcode::kNegate;
  switch (options_.sharded_rows && Chance(2) ? 19 : Pick(19)) {
    case 0:
      return Chance(2) ? b_->Multiply(x, Splat(s, 1.0f, 1)) : b_->Multiply(Splat(s, 1.0f, 1), x);
    case 1:
      return b_->Add(x, Splat(s, Chance(2) ? -0.0f : 0.0f, 0));
    case 2: {
      Opcode op = Chance(2) ? Opcode::kSubtract : Opcode::kDivide;
      return b_->Binary(op, x, Splat(s, Chance(2) ? 0.0f : 1.0f, 1));
    }
    case 3: {  // the draws in a fixed order (random_module.cc, Elementwise case 4)
      const std::vector<int64_t> outer = Permutation(s.rank());
      return b_->Transpose(b_->Transpose(x, Permutation(s.rank())), outer);
    }
    case 4:
      return b_->Reshape(b_->Reshape(x, {s.ElementCount()}), s.dims());
    case 5:
      return b_->Add(b_->Unary(unary, x), b_->Unary(unary, x));  // a repeated subexpression
    case 6: {  // constants; the draws in a fixed order
      Instruction* b = Splat(s, 0.25f, 4);
      Instruction* a = Splat(s, 1.5f, 3);
      return b_->Multiply(x, b_->Add(a, b));
    }
    case 7: {
      if (!f32) return nullptr;
      if (scalar_callee_ == nullptr) {
        Builder c(module_, "scalar_callee");
        Instruction* p0 = c.Parameter(0, Shape::Scalar(t));
        Instruction* p1 = c.Parameter(1, Shape::Scalar(t));
        c.Parameter(2, Shape::Scalar(t));
        scalar_callee_ = *c.Build(c.Add(c.Multiply(p0, p1), p0));
      }
      std::vector<int64_t> all;
      for (int i = 0; i < s.rank(); ++i) all.push_back(i);
      Instruction* a = s.ElementCount() == 1
                           ? b_->Reshape(x, {})
                           : b_->Reduce(x, b_->ConstantF32(-0.0f), all, Combiner(Opcode::kAdd, t));
      return b_->Call(scalar_callee_, {a, a, a});
    }
    case 8: {  // an elementwise chain
      if (f32) return b_->Add(b_->Multiply(b_->Unary(Opcode::kTanh, x), x), x);
      return b_->Multiply(b_->Add(x, x), x);
    }
    case 9: {  // a reduction of an elementwise producer
      if (!f32 || s.rank() == 0) return nullptr;
      return b_->Reduce(b_->Unary(Opcode::kExp, b_->Add(x, x)), b_->ConstantF32(-0.0f), {0},
                        Combiner(Opcode::kAdd, t, Chance(2) ? 1 : 0));
    }
    case 10:
      return (options_.families & op_family::kAllReduce) ? AllReduce() : nullptr;
    case 11: {
      Instruction* p = b_->Broadcast(b_->Constant(ir::Literal::Scalar<uint8_t>(
                                         ElementType::kPred, static_cast<uint8_t>(Pick(2)))),
                                     Shape(ElementType::kPred, s.dims()), {});
      return b_->Select(p, x, b_->Unary(Opcode::kNegate, x));
    }
    case 12: {
      if (Chance(2)) return b_->Convert(x, t);
      return b_->Unary(Opcode::kNegate, b_->Unary(Opcode::kNegate, x));
    }
    case 13: {  // broadcast of a broadcast
      std::vector<int64_t> d1 = s.dims(), map1, map2;
      for (int i = 0; i < s.rank(); ++i) map1.push_back(i + 1);
      d1.insert(d1.begin(), 2);
      std::vector<int64_t> d2 = d1;
      d2.push_back(3);
      for (int i = 0; i <= s.rank(); ++i) map2.push_back(i);
      if (!Fits(d2)) return nullptr;
      return b_->Broadcast(b_->Broadcast(x, Shape(t, d1), map1), Shape(t, d2), map2);
    }
    case 14: {  // a full slice, a zero pad and a one-operand concatenate
      if (s.rank() == 0) return b_->Unary(Opcode::kNegate, x);
      std::vector<ir::SliceDim> full;
      for (int64_t d : s.dims()) full.push_back({0, d, 1});
      std::vector<ir::PadDim> none(static_cast<size_t>(s.rank()));
      return b_->Concatenate({b_->Pad(b_->Slice(x, full), Splat(Shape(t, {}), 0, 0), none)}, 0);
    }
    case 15: {
      Instruction* tuple = b_->Tuple({x, b_->Unary(Opcode::kNegate, x)});
      return b_->GetTupleElement(tuple, static_cast<int64_t>(Pick(2)));
    }
    case 16:
      return b_->Binary(f32 ? Opcode::kMaximum : Opcode::kMinimum, x, RandomConstant(s));
    case 17:
      return b_->Unary(f32 ? Opcode::kLog : Opcode::kAbs, b_->Binary(Opcode::kSubtract, x, x));
    case 18: {  // per-shard dots sharing one weight (merge-dots): row slices or other rows
      if (s.rank() == 0 || s.dim(0) < 2) return nullptr;
      const int64_t rows = s.dim(0), cols = s.ElementCount() / rows;
      const int64_t n = 1 + static_cast<int64_t>(Pick(3));
      if (!Fits({rows, n}) || !Fits({cols, n})) return nullptr;
      Instruction* x2 = s.rank() == 2 ? x : b_->Reshape(x, {rows, cols});
      const bool transposed = Chance(2);
      Instruction* w = SameShape(
          Shape(t, transposed ? std::vector<int64_t>{n, cols} : std::vector<int64_t>{cols, n}));
      ir::DotDims dims;
      dims.lhs_contracting = {1};
      dims.rhs_contracting = {transposed ? 1 : 0};
      const int64_t split = 1 + static_cast<int64_t>(Pick(static_cast<uint64_t>(rows - 1)));
      std::vector<Instruction*> parts;
      for (const auto& [lo, hi] : {std::pair{int64_t{0}, split}, std::pair{split, rows}}) {
        Instruction* lhs = b_->Slice(x2, {{lo, hi, 1}, {0, cols, 1}});
        if (Chance(3)) lhs = b_->Unary(Opcode::kNegate, lhs);  // not a slice: concatenated
        parts.push_back(b_->Dot(lhs, w, dims));
      }
      if (Chance(2)) std::swap(parts[0], parts[1]);
      return b_->Concatenate(parts, 0);
    }
    case 19:
      return ShardedRows(t, x);
  }
  return nullptr;
}

Instruction* Generator::ShardedRows(ElementType t, Instruction* x) {
  const Shape s = x->shape;
  const int rank = s.rank();
  if (rank == 0 || s.dim(0) < 2) return nullptr;
  const int64_t rows = s.dim(0);
  std::vector<int64_t> cuts = {0};
  if (Chance(2)) {  // S equal blocks, as a program's shards
    const int64_t n = rows % 3 == 0 && Chance(2) ? 3 : rows % 2 == 0 ? 2 : rows;
    for (int64_t c = rows / n; c < rows; c += rows / n) cuts.push_back(c);
  } else {
    cuts.push_back(1 + static_cast<int64_t>(Pick(static_cast<uint64_t>(rows - 1))));
    if (rows >= 3 && Chance(2)) {  // three blocks: a second cut past the first
      const int64_t c = cuts[1] + 1 + static_cast<int64_t>(Pick(static_cast<uint64_t>(rows - 1)));
      if (c < rows) cuts.push_back(c);
    }
  }
  cuts.push_back(rows);
  // The chain, drawn once for every block.
  const Opcode unary = t == ElementType::kF32 ? Opcode::kExp : Opcode::kNegate;
  const Opcode shared_op = Chance(2) ? Opcode::kAdd : Opcode::kMultiply;
  const std::vector<int64_t> inner(s.dims().begin() + 1, s.dims().end());
  std::vector<int64_t> inner_map, row_map;
  for (int d = 1; d < rank; ++d) inner_map.push_back(d);
  for (int d = 0; d + 1 < rank; ++d) row_map.push_back(d);
  Instruction* shared = inner.empty() || Chance(3) ? nullptr : SameShape(Shape(t, inner));
  const bool own = Chance(2);
  const ir::Computation* combiner = rank >= 2 && Chance(2) ? AnyCombiner(t) : nullptr;
  Instruction* init = combiner != nullptr ? Splat(Shape(t, {}), 0.0f, 0) : nullptr;
  const uint64_t shape_op = Pick(3);  // 1: a transpose keeping dimension 0; 2: a reshape
  std::vector<int64_t> perm = {0};
  for (int64_t d : Permutation(rank - 1)) perm.push_back(d + 1);
  // The blocks built last row first one time in two: a group's members then come in another
  // order than their rows.
  const size_t blocks = cuts.size() - 1;
  const bool reversed = Chance(2);
  std::vector<Instruction*> parts(blocks);
  for (size_t i = 0; i < blocks; ++i) {
    const size_t b = reversed ? blocks - 1 - i : i;
    std::vector<ir::SliceDim> range = {{cuts[b], cuts[b + 1], 1}};
    for (int64_t d : inner) range.push_back({0, d, 1});
    Instruction* y = b_->Unary(unary, b_->Slice(x, range));
    const Shape bs = y->shape;
    if (shared != nullptr) y = b_->Binary(shared_op, y, b_->Broadcast(shared, bs, inner_map));
    if (own) y = b_->Binary(Opcode::kSubtract, y, SameShape(bs));  // each block's own operand
    if (combiner != nullptr) {  // a statistic of each row, broadcast back over it
      Instruction* r = b_->Reduce(y, init, {rank - 1}, combiner);
      y = b_->Binary(Opcode::kSubtract, y, b_->Broadcast(r, bs, row_map));
    }
    if (shape_op == 1 && rank >= 3) y = b_->Transpose(y, perm);
    if (shape_op == 2 && rank >= 2) {
      std::vector<int64_t> dims = {bs.dim(0) * bs.dim(1)};
      for (int d = 2; d < rank; ++d) dims.push_back(bs.dim(d));
      y = b_->Reshape(y, dims);
    }
    parts[b] = y;
  }
  if (Chance(3)) std::swap(parts.front(), parts.back());  // not in row order: no longer a slice
  return b_->Concatenate(parts, 0);
}

}  // namespace detrain::testing::random_internal
