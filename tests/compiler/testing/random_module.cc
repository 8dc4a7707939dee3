// See random_module.h. This file: the step loop, operand choice, raw-bit literals, the
// elementwise and movement families, and RandomArguments; random_module_ops.cc has the rest.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <set>

#include "random_module_internal.h"

namespace detrain::testing {
namespace random_internal {
namespace {

// The edge values of f32 as bits; NaNs get a random payload and sign in FillRandom.
constexpr uint32_t kF32Edges[] = {
    0x00000000u, 0x80000000u,  // +0, -0
    0x7f800000u, 0xff800000u,  // +inf, -inf
    0x00800000u, 0x80800000u,  // +-FLT_MIN
    0x7f7fffffu, 0xff7fffffu,  // +-FLT_MAX
    0x3f800000u, 0xbf800000u,  // +-1
    0x40000000u, 0xc0400000u,  // 2, -3
};

uint64_t EdgeBits(ElementType t, std::mt19937_64& rng) {
  int bytes = ir::ElementTypeByteSize(t);
  if (t == ElementType::kF32) {
    uint64_t sign = (rng() & 1) << 31;
    switch (rng() % 4) {
      case 0:
        return 0x7fc00000u | (rng() & 0x3fffffu) | sign;  // quiet NaN
      case 1:
        return 0x7f800000u | (1 + rng() % 0x3fffffu) | sign;  // signalling NaN
      case 2:
        return (1 + rng() % 0x7fffffu) | sign;  // subnormal
      default:
        return kF32Edges[rng() % std::size(kF32Edges)];
    }
  }
  uint64_t all = bytes == 8 ? ~0ull : (1ull << (8 * bytes)) - 1;
  uint64_t min = 1ull << (8 * bytes - 1);
  switch (rng() % 6) {
    case 0:
      return 0;
    case 1:
      return 1;
    case 2:
      return all;  // -1 or the unsigned maximum
    case 3:
      return min;  // the signed minimum
    case 4:
      return min - 1;
    default:
      return rng() % 70;  // indices and shift amounts around the bit widths
  }
}

}  // namespace

void FillRandom(ir::Literal& lit, std::mt19937_64& rng) {
  ElementType t = lit.shape().type();
  int bytes = ir::ElementTypeByteSize(t);
  std::string& out = lit.mutable_bytes();
  for (int64_t k = 0; k < lit.element_count(); ++k) {
    uint64_t bits = t == ElementType::kPred ? rng() & 1 : (rng() & 1 ? rng() : EdgeBits(t, rng));
    std::memcpy(&out[static_cast<size_t>(k * bytes)], &bits, static_cast<size_t>(bytes));  // LE
  }
}

bool Generator::Has(ElementType t) const {
  for (ElementType u : options_.types) {
    if (u == t) return true;
  }
  return false;
}

ElementType Generator::AnyType() {
  // f32 half the time: most ops (and every pass's interesting cases) are about floats.
  if (Chance(2) && Has(ElementType::kF32)) return ElementType::kF32;
  return options_.types[Pick(options_.types.size())];
}

Shape Generator::RandomShape(ElementType t) {
  std::vector<int64_t> dims;
  for (uint64_t r = Pick(static_cast<uint64_t>(options_.max_rank) + 1); r > 0; --r) {
    dims.push_back(1 + static_cast<int64_t>(Pick(static_cast<uint64_t>(options_.max_dim))));
  }
  return Shape(t, dims);
}

std::vector<int64_t> Generator::Permutation(int rank) {
  std::vector<int64_t> p(static_cast<size_t>(rank));
  for (int i = 0; i < rank; ++i) p[static_cast<size_t>(i)] = i;
  for (size_t i = p.size(); i > 1; --i) std::swap(p[i - 1], p[Pick(i)]);  // Fisher-Yates
  return p;
}

bool Generator::Fits(const std::vector<int64_t>& dims) const {
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 1) return false;
    n *= d;
  }
  return n <= kMaxElements && static_cast<int>(dims.size()) <= options_.max_rank + 1;
}

Instruction* Generator::RandomConstant(const Shape& shape) {
  ir::Literal lit(shape);
  FillRandom(lit, rng_);
  return b_->Constant(std::move(lit));
}

Instruction* Generator::Operand(ElementType t) {
  std::vector<Instruction*> of_type;
  for (Instruction* v : values_) {
    if (!v->shape.is_tuple() && v->shape.type() == t) of_type.push_back(v);
  }
  if (of_type.empty() || Chance(6)) return RandomConstant(RandomShape(t));
  return of_type[Pick(of_type.size())];
}

Instruction* Generator::SameShape(const Shape& shape) {
  std::vector<Instruction*> same;
  for (Instruction* v : values_) {
    if (v->shape == shape) same.push_back(v);
  }
  if (same.empty() || Chance(4)) return RandomConstant(shape);
  return same[Pick(same.size())];
}

Instruction* Generator::Splat(const Shape& s, float f, int64_t i) {
  ir::Literal scalar(Shape::Scalar(s.type()));
  if (s.type() == ElementType::kF32) {
    scalar.Set<float>(0, f);
  } else {
    scalar.Set<int32_t>(0, static_cast<int32_t>(i));
  }
  if (Chance(2) || s.rank() == 0) {
    ir::Literal lit(s);
    for (int64_t k = 0; k < lit.element_count(); ++k) {
      std::memcpy(&lit.mutable_bytes()[static_cast<size_t>(4 * k)], scalar.bytes().data(), 4);
    }
    return b_->Constant(std::move(lit));
  }
  return b_->Broadcast(b_->Constant(std::move(scalar)), s, {});
}

Instruction* Generator::IndexScalar() {
  std::vector<Instruction*> ints;
  for (Instruction* v : values_) {
    if (!v->shape.is_tuple() && v->shape.type() == ElementType::kS32) ints.push_back(v);
  }
  if (ints.empty() || Chance(3)) {
    return b_->Constant(
        ir::Literal::Scalar<int32_t>(ElementType::kS32, static_cast<int32_t>(Pick(8)) - 2));
  }
  Instruction* v = ints[Pick(ints.size())];
  if (v->shape.rank() == 0) return v;
  std::vector<ir::SliceDim> first(static_cast<size_t>(v->shape.rank()), ir::SliceDim{0, 1, 1});
  return b_->Reshape(b_->Slice(v, first), {});
}

// --- elementwise -------------------------------------------------------------------------

namespace {

std::vector<Opcode> UnaryOps(ElementType t) {
  if (t == ElementType::kPred) return {Opcode::kNot};
  if (t != ElementType::kF32) return {Opcode::kAbs, Opcode::kNegate, Opcode::kSign, Opcode::kNot};
  return {Opcode::kAbs,       Opcode::kNegate, Opcode::kSign,
          Opcode::kFloor,     Opcode::kCeil,   Opcode::kRoundNearestEven,
          Opcode::kExp,       Opcode::kExpm1,  Opcode::kLog,
          Opcode::kLog1p,     Opcode::kTanh,   Opcode::kLogistic,
          Opcode::kSqrt,      Opcode::kRsqrt,  Opcode::kErf,
          Opcode::kSin,       Opcode::kCos,    Opcode::kRoundToBf16,
          Opcode::kRoundToF16};
}

std::vector<Opcode> BinaryOps(ElementType t) {
  std::vector<Opcode> ops = {Opcode::kMaximum, Opcode::kMinimum};
  if (t != ElementType::kPred) {
    ops.insert(ops.end(), {Opcode::kAdd, Opcode::kSubtract, Opcode::kMultiply, Opcode::kDivide,
                           Opcode::kRemainder, Opcode::kPower});
  }
  if (t != ElementType::kF32) ops.insert(ops.end(), {Opcode::kAnd, Opcode::kOr, Opcode::kXor});
  if (ir::IsInteger(t)) {
    ops.insert(ops.end(),
               {Opcode::kShiftLeft, Opcode::kShiftRightLogical, Opcode::kShiftRightArithmetic});
  }
  return ops;
}

}  // namespace

Instruction* Generator::Elementwise() {
  ElementType t = AnyType();
  Instruction* x = Operand(t);
  const Shape s = x->shape;
  switch (Pick(9)) {
    case 0:
    case 1: {
      std::vector<Opcode> ops = UnaryOps(t);
      return b_->Unary(ops[Pick(ops.size())], x);
    }
    case 2:
    case 3: {
      std::vector<Opcode> ops = BinaryOps(t);
      // Shifts (3 of 13 integer ops) get a third of the integer binaries: their saturation
      // rules are the subtle ones.
      Opcode op =
          ir::IsInteger(t) && Chance(3) ? ops[ops.size() - 1 - Pick(3)] : ops[Pick(ops.size())];
      return b_->Binary(op, x, Chance(3) ? x : SameShape(s));
    }
    // Each draw is its own statement, in a fixed order (the order GCC happened to evaluate the
    // arguments in, right to left, which the tests were tuned on): C++ leaves the order of a
    // call's arguments unspecified, and clang's differs (random_module_test.cc pins the modules).
    case 4: {
      const auto direction = static_cast<ir::Direction>(Pick(6));
      Instruction* y = SameShape(s);
      return b_->Compare(x, y, direction);
    }
    case 5: {
      const auto direction = static_cast<ir::Direction>(Pick(6));
      Instruction* y = SameShape(s);
      Instruction* p = b_->Compare(x, y, direction);
      Instruction* on_false = SameShape(s);
      Instruction* pred = Chance(2) ? p : SameShape(p->shape);
      return b_->Select(pred, x, on_false);
    }
    case 6: {
      Instruction* lo = Chance(2) ? RandomConstant(Shape::Scalar(t)) : SameShape(s);
      Instruction* hi = Chance(2) ? RandomConstant(Shape::Scalar(t)) : SameShape(s);
      return b_->Clamp(lo, x, hi);
    }
    case 7: {
      // bitcast-convert between types of one width, else convert to any type.
      std::vector<ElementType> same_width;
      for (ElementType u : options_.types) {
        if (u != t && u != ElementType::kPred &&
            ir::ElementTypeByteSize(u) == ir::ElementTypeByteSize(t)) {
          same_width.push_back(u);
        }
      }
      if (!same_width.empty() && Chance(3)) {
        return b_->BitcastConvert(x, same_width[Pick(same_width.size())]);
      }
      return b_->Convert(x, AnyType());
    }
    case 8: {
      if (t == ElementType::kPred) return nullptr;
      Shape shape = RandomShape(t);
      if (shape.rank() == 0) return nullptr;
      return b_->Iota(shape, static_cast<int64_t>(Pick(static_cast<uint64_t>(shape.rank()))));
    }
  }
  return nullptr;
}

// --- data movement -----------------------------------------------------------------------

Instruction* Generator::Movement() {
  Instruction* x = Operand(AnyType());
  const Shape s = x->shape;
  const int rank = s.rank();
  switch (Pick(10)) {
    case 0: {  // insert a new dimension anywhere
      size_t at = Pick(static_cast<uint64_t>(rank) + 1);
      std::vector<int64_t> dims = s.dims(), map;
      dims.insert(dims.begin() + static_cast<std::ptrdiff_t>(at),
                  1 + static_cast<int64_t>(Pick(3)));
      for (int i = 0; i < rank; ++i) map.push_back(i < static_cast<int>(at) ? i : i + 1);
      if (!Fits(dims)) return nullptr;
      return b_->Broadcast(x, Shape(s.type(), dims), map);
    }
    case 1: {  // flatten, or split the element count into random factors
      int64_t n = s.ElementCount();
      std::vector<int64_t> dims;
      while (n > 1 && dims.size() < 2 && Chance(2)) {
        int64_t f = 1 + static_cast<int64_t>(Pick(static_cast<uint64_t>(n)));
        if (n % f != 0) continue;
        dims.push_back(f);
        n /= f;
      }
      dims.push_back(n);
      return b_->Reshape(x, dims);
    }
    case 2:
      return b_->Transpose(x, Permutation(rank));
    case 3: {
      std::vector<ir::SliceDim> slice;
      for (int64_t d : s.dims()) {
        int64_t start = static_cast<int64_t>(Pick(static_cast<uint64_t>(d)));
        int64_t limit = start + 1 + static_cast<int64_t>(Pick(static_cast<uint64_t>(d - start)));
        slice.push_back({start, limit, 1 + static_cast<int64_t>(Pick(2))});
      }
      return b_->Slice(x, slice);
    }
    case 4: {
      if (rank == 0) return nullptr;
      int64_t dim = static_cast<int64_t>(Pick(static_cast<uint64_t>(rank)));
      std::vector<Instruction*> parts = {x};
      std::vector<int64_t> dims = s.dims();
      for (uint64_t k = 1 + Pick(2); k > 0; --k) {
        std::vector<int64_t> part = s.dims();
        part[static_cast<size_t>(dim)] = 1 + static_cast<int64_t>(Pick(3));
        dims[static_cast<size_t>(dim)] += part[static_cast<size_t>(dim)];
        parts.push_back(SameShape(Shape(s.type(), part)));
      }
      if (!Fits(dims)) return nullptr;
      for (size_t i = parts.size(); i > 1; --i) std::swap(parts[i - 1], parts[Pick(i)]);
      return b_->Concatenate(parts, dim);
    }
    case 5: {
      std::vector<ir::PadDim> pad;
      std::vector<int64_t> dims;
      for (int64_t d : s.dims()) {
        ir::PadDim p{static_cast<int64_t>(Pick(4)) - 1, static_cast<int64_t>(Pick(4)) - 1,
                     static_cast<int64_t>(Pick(2))};
        int64_t size = d + (d - 1) * p.interior + p.lo + p.hi;
        if (size < 1) p = ir::PadDim{0, 0, 0}, size = d;
        pad.push_back(p);
        dims.push_back(size);
      }
      if (!Fits(dims)) return nullptr;
      return b_->Pad(x, RandomConstant(Shape::Scalar(s.type())), pad);
    }
    case 6: {
      std::vector<int64_t> dims;
      for (int i = 0; i < rank; ++i) {
        if (Chance(2)) dims.push_back(i);
      }
      return b_->Reverse(x, dims);
    }
    case 7:
    case 8:
      return DynamicSlicing(x);
    case 9: {  // a scalar broadcast to a random shape
      Instruction* scalar = Operand(s.type());
      if (scalar->shape.rank() != 0) return nullptr;
      return b_->Broadcast(scalar, RandomShape(s.type()), {});
    }
  }
  return nullptr;
}

Instruction* Generator::DynamicSlicing(Instruction* x) {
  const Shape s = x->shape;
  std::vector<int64_t> sizes;
  std::vector<Instruction*> starts;
  for (int64_t d : s.dims()) {
    sizes.push_back(1 + static_cast<int64_t>(Pick(static_cast<uint64_t>(d))));
    starts.push_back(IndexScalar());
  }
  if (Chance(2)) return b_->DynamicSlice(x, starts, sizes);
  return b_->DynamicUpdateSlice(x, SameShape(Shape(s.type(), sizes)), starts);
}

// --- the step loop -------------------------------------------------------------------------

void Generator::Step() {
  struct Family {
    uint32_t bit;
    Instruction* (Generator::*make)();
  };
  static constexpr Family kFamilies[] = {
      {op_family::kElementwise, &Generator::Elementwise},
      {op_family::kMovement, &Generator::Movement},
      {op_family::kReduction, &Generator::Reduction},
      {op_family::kDotConv, &Generator::DotConv},
      {op_family::kGatherScatter, &Generator::GatherScatter},
      {op_family::kCall, &Generator::CallOrTuple},
      {op_family::kAllReduce, &Generator::AllReduce},
      {op_family::kThreefry, &Generator::Threefry},
      {op_family::kPassPatterns, &Generator::PassPattern},
      {op_family::kLoop, &Generator::Loop},
  };
  std::vector<const Family*> enabled;
  for (const Family& f : kFamilies) {
    if ((options_.families & f.bit) == 0) continue;
    // Elementwise has by far the most ops: it is picked three times as often as the others.
    int weight = f.bit == op_family::kPassPatterns  ? options_.pass_pattern_weight
                 : f.bit == op_family::kElementwise ? 3
                                                    : 1;
    for (int w = 0; w < weight; ++w) enabled.push_back(&f);
  }
  if (enabled.empty()) return;
  const size_t first = entry_->instructions().size(), values = values_.size();
  Instruction* y = (this->*(enabled[Pick(enabled.size())]->make))();
  if (!options_.exclude_ops.empty() && UsesExcludedOps(first)) {
    values_.resize(values);  // a family may have added values of its own (all-reduce pairs)
    return;
  }
  if (y != nullptr) values_.push_back(y);
}

bool Generator::UsesExcludedOps(size_t first) const {
  auto excluded = [&](Opcode op) {
    return std::find(options_.exclude_ops.begin(), options_.exclude_ops.end(), op) !=
           options_.exclude_ops.end();
  };
  const auto& list = entry_->instructions();
  for (size_t i = first; i < list.size(); ++i) {
    if (excluded(list[i]->opcode)) return true;
    for (const auto& [attr, value] : list[i]->attrs) {
      if (value.computation == nullptr) continue;
      for (const auto& called : value.computation->instructions()) {
        if (excluded(called->opcode)) return true;
      }
    }
  }
  return false;
}

std::unique_ptr<ir::Module> Generator::Build() {
  auto module = std::make_unique<ir::Module>("random_" + std::to_string(Pick(1000)));
  module_ = module.get();
  Builder b(module_, "main");
  b_ = &b;
  entry_ = module_->computations().back().get();
  int params = 1 + static_cast<int>(Pick(static_cast<uint64_t>(options_.max_params)));
  for (int i = 0; i < params; ++i) {
    std::string name = Chance(2) ? "in" + std::to_string(i) : "";  // drawn first (case 4)
    values_.push_back(b.Parameter(i, RandomShape(AnyType()), name));
  }
  int steps =
      options_.min_steps +
      static_cast<int>(Pick(static_cast<uint64_t>(options_.max_steps - options_.min_steps + 1)));
  for (int i = 0; i < steps; ++i) Step();
  // Outputs: up to six values nothing else uses (so most of the code is live), newest first;
  // the rest stays behind as dead code on purpose.
  std::set<const Instruction*> used, seen;
  std::vector<const Instruction*> stack(values_.begin(), values_.end());
  while (!stack.empty()) {
    const Instruction* v = stack.back();
    stack.pop_back();
    if (!seen.insert(v).second) continue;
    for (const Instruction* op : v->operands) used.insert(op), stack.push_back(op);
  }
  std::vector<Instruction*> outs;
  const size_t max_outs = 1 + Pick(6);
  for (size_t i = values_.size(); i > 0 && outs.size() < max_outs; --i) {
    if (!used.count(values_[i - 1]) && !Chance(4)) outs.push_back(values_[i - 1]);
  }
  if (outs.empty()) outs.push_back(values_.back());
  auto built = b.Build(outs.size() == 1 ? outs[0] : b.Tuple(outs));
  b_ = nullptr;
  if (!built.ok()) {
    std::fprintf(stderr, "RandomModule: %s\n", built.status().message().c_str());
    return nullptr;
  }
  module_->set_entry(*built);
  return module;
}

}  // namespace random_internal

RandomModuleOptions RandomModuleOptions::Replicated() {
  RandomModuleOptions o;
  o.families = op_family::kAll;
  return o;
}

RandomModuleOptions RandomModuleOptions::WithLoops() {
  RandomModuleOptions o = PassTargeted(false);
  o.families |= op_family::kLoop;
  return o;
}

RandomModuleOptions RandomModuleOptions::ShardedRows() {
  RandomModuleOptions o = PassTargeted(false);
  o.sharded_rows = true;
  return o;
}

RandomModuleOptions RandomModuleOptions::PassTargeted(bool all_reduce) {
  RandomModuleOptions o;
  o.families = op_family::kPassPatterns | op_family::kElementwise | op_family::kMovement |
               op_family::kReduction | op_family::kCall | (all_reduce ? op_family::kAllReduce : 0u);
  o.pass_pattern_weight = 16;
  o.types = {ir::ElementType::kF32, ir::ElementType::kS32};
  o.min_steps = 8;
  o.max_steps = 27;
  return o;
}

std::unique_ptr<ir::Module> RandomModule(uint64_t seed, const RandomModuleOptions& options) {
  return random_internal::Generator(seed, options).Build();
}

std::unique_ptr<ir::Module> PassTargetedModule(uint64_t seed, bool all_reduce) {
  return RandomModule(seed, RandomModuleOptions::PassTargeted(all_reduce));
}

ir::Literal RandomLiteral(const ir::Shape& shape, uint64_t seed) {
  std::mt19937_64 rng(seed);
  ir::Literal lit(shape);
  random_internal::FillRandom(lit, rng);
  return lit;
}

std::vector<ir::Literal> RandomArguments(const ir::Module& module, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<ir::Literal> args;
  for (const ir::Instruction* p : module.entry()->Parameters()) {
    ir::Literal lit(p->shape);
    random_internal::FillRandom(lit, rng);
    args.push_back(std::move(lit));
  }
  return args;
}

}  // namespace detrain::testing
