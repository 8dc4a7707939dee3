// See random_module.h. Each step picks an op family and a fitting operand from the values
// built so far; shapes stay small (rank <= 3, dimensions <= 4).
#include "random_module.h"

#include <cmath>
#include <random>

#include "compiler/ir/builder.h"

namespace detrain::testing {
namespace {

using ir::Builder;
using ir::ElementType;
using ir::Instruction;
using ir::Opcode;
using ir::Shape;

class Generator {
 public:
  explicit Generator(uint64_t seed) : rng_(seed) {}

  std::unique_ptr<ir::Module> Build() {
    auto module = std::make_unique<ir::Module>("random_" + std::to_string(Pick(1000)));
    add_ = Builder::ScalarCombiner(module.get(), "add", Opcode::kAdd, ElementType::kF32);
    max_ = Builder::ScalarCombiner(module.get(), "max", Opcode::kMaximum, ElementType::kF32);
    Builder b(module.get(), "main");
    int params = 1 + static_cast<int>(Pick(3));
    for (int i = 0; i < params; ++i) {
      values_.push_back(b.Parameter(i, RandomShape(Pick(2) ? ElementType::kF32 : ElementType::kS32),
                                    Pick(2) ? "in" + std::to_string(i) : ""));
    }
    int steps = 5 + static_cast<int>(Pick(25));
    for (int i = 0; i < steps; ++i) Step(b);
    std::vector<Instruction*> outs;
    for (int i = 0; i < 1 + static_cast<int>(Pick(3)); ++i) outs.push_back(values_[values_.size() - 1 - Pick(std::min<size_t>(values_.size(), 4))]);
    auto built = b.Build(outs.size() == 1 ? outs[0] : b.Tuple(outs));
    if (!built.ok()) return nullptr;
    module->set_entry(*built);
    return module;
  }

 private:
  uint64_t Pick(uint64_t n) { return n == 0 ? 0 : rng_() % n; }

  Shape RandomShape(ElementType t) {
    std::vector<int64_t> dims;
    for (uint64_t r = Pick(4); r > 0; --r) dims.push_back(1 + static_cast<int64_t>(Pick(4)));
    return Shape(t, dims);
  }

  Instruction* Any() { return values_[Pick(values_.size())]; }
  Instruction* AnyOf(ElementType t) {
    for (int tries = 0; tries < 8; ++tries) {
      Instruction* v = Any();
      if (!v->shape.is_tuple() && v->shape.type() == t) return v;
    }
    return nullptr;
  }

  ir::Literal RandomLiteral(const Shape& shape) {
    ir::Literal lit(shape);
    for (char& c : lit.mutable_bytes()) c = static_cast<char>(Pick(256));
    if (shape.type() == ElementType::kPred) {
      for (char& c : lit.mutable_bytes()) c &= 1;
    }
    return lit;
  }

  void Step(Builder& b) {
    static constexpr Opcode kFloatUnary[] = {Opcode::kAbs, Opcode::kNegate, Opcode::kExp, Opcode::kLog,
                                             Opcode::kTanh, Opcode::kSqrt, Opcode::kFloor, Opcode::kLogistic};
    static constexpr Opcode kBinary[] = {Opcode::kAdd, Opcode::kSubtract, Opcode::kMultiply, Opcode::kDivide,
                                         Opcode::kMaximum, Opcode::kMinimum, Opcode::kRemainder};
    Instruction* x = AnyOf(Pick(3) ? ElementType::kF32 : ElementType::kS32);
    if (x == nullptr) x = values_[0];
    const Shape& s = x->shape;
    Instruction* y = nullptr;
    switch (Pick(12)) {
      case 0: y = b.Constant(RandomLiteral(RandomShape(Pick(2) ? ElementType::kF32 : ElementType::kS32))); break;
      case 1: y = s.type() == ElementType::kF32 ? b.Unary(kFloatUnary[Pick(8)], x) : b.Unary(Opcode::kNegate, x); break;
      case 2: y = b.Binary(kBinary[Pick(7)], x, Pick(2) ? x : b.Constant(RandomLiteral(s))); break;
      case 3: {
        std::vector<int64_t> dims = s.dims(), map;
        for (int i = 0; i < s.rank(); ++i) map.push_back(i + 1);
        dims.insert(dims.begin(), 2);
        y = b.Broadcast(x, Shape(s.type(), dims), map);
        break;
      }
      case 4: y = b.Reshape(x, {s.ElementCount()}); break;
      case 5: {
        std::vector<int64_t> perm;
        for (int i = s.rank() - 1; i >= 0; --i) perm.push_back(i);
        y = b.Transpose(x, perm);
        break;
      }
      case 6: {
        if (s.rank() == 0 || s.type() != ElementType::kF32) return;
        y = b.Reduce(x, b.ConstantF32(Pick(2) ? 0.0f : -INFINITY), {0}, Pick(2) ? add_ : max_);
        break;
      }
      case 7: {
        if (s.rank() != 2 || s.type() != ElementType::kF32) return;
        y = b.Dot(x, x, {{}, {}, {1}, {1}});
        break;
      }
      case 8: y = b.Select(b.Compare(x, x, ir::Direction::kLt), x, x); break;
      case 9: y = b.Convert(x, s.type() == ElementType::kF32 ? ElementType::kS32 : ElementType::kF32); break;
      case 10: {
        if (s.rank() == 0) return;
        std::vector<ir::SliceDim> slice;
        for (int64_t d : s.dims()) slice.push_back({0, (d + 1) / 2, 1});
        y = b.Concatenate({b.Slice(x, slice), b.Slice(x, slice)}, 0);
        break;
      }
      case 11: {
        if (s.rank() == 0) return;
        std::vector<ir::PadDim> pad(static_cast<size_t>(s.rank()), ir::PadDim{1, 0, 1});
        y = b.Reverse(b.Pad(x, b.Constant(RandomLiteral(Shape::Scalar(s.type()))), pad), {0});
        break;
      }
    }
    values_.push_back(y);
  }

  std::mt19937_64 rng_;
  std::vector<Instruction*> values_;
  const ir::Computation* add_ = nullptr;
  const ir::Computation* max_ = nullptr;
};

}  // namespace

std::unique_ptr<ir::Module> RandomModule(uint64_t seed) { return Generator(seed).Build(); }

std::vector<ir::Literal> RandomArguments(const ir::Module& module, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<ir::Literal> args;
  for (const Instruction* p : module.entry()->Parameters()) {
    ir::Literal lit(p->shape);
    for (char& c : lit.mutable_bytes()) c = static_cast<char>(rng());
    args.push_back(std::move(lit));
  }
  return args;
}

}  // namespace detrain::testing
