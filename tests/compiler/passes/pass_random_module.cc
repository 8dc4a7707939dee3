// See pass_random_module.h.
#include "pass_random_module.h"

#include <cstdio>
#include <random>

#include "compiler/ir/builder.h"

namespace detrain::testing {
namespace {

using ir::Builder;
using ir::ElementType;
using ir::Instruction;
using ir::Opcode;
using ir::Shape;

class PassGenerator {
 public:
  PassGenerator(uint64_t seed, bool all_reduce) : rng_(seed), all_reduce_(all_reduce) {}

  std::unique_ptr<ir::Module> Build() {
    auto module = std::make_unique<ir::Module>("random_passes");
    module_ = module.get();
    add_ = Builder::ScalarCombiner(module_, "add", Opcode::kAdd, ElementType::kF32);
    add2_ = Builder::ScalarCombiner(module_, "add2", Opcode::kAdd, ElementType::kF32);
    callee_ = MakeCallee();
    Builder b(module_, "main");
    int params = 1 + Pick(3);
    for (int i = 0; i < params; ++i) {
      values_.push_back(b.Parameter(i, RandomShape(Pick(4) ? ElementType::kF32 : ElementType::kS32)));
    }
    int steps = 8 + Pick(20);
    for (int i = 0; i < steps; ++i) Step(b);
    std::vector<Instruction*> outs;
    for (size_t i = values_.size() - std::min<size_t>(values_.size(), 4); i < values_.size(); ++i) outs.push_back(values_[i]);
    auto built = b.Build(outs.size() == 1 ? outs[0] : b.Tuple(outs));
    if (!built.ok()) {
      fprintf(stderr, "RandomPassModule: %s\n", built.status().message().c_str());
      return nullptr;
    }
    module_->set_entry(*built);
    return module;
  }

 private:
  int Pick(int n) { return static_cast<int>(rng_() % static_cast<uint64_t>(n)); }

  Shape RandomShape(ElementType type) {
    std::vector<int64_t> dims;
    int rank = Pick(4);
    for (int i = 0; i < rank; ++i) dims.push_back(1 + Pick(4));
    return Shape(type, dims);
  }

  Instruction* AnyOf(ElementType type) {
    std::vector<Instruction*> of_type;
    for (Instruction* v : values_) {
      if (!v->shape.is_tuple() && v->shape.type() == type) of_type.push_back(v);
    }
    return of_type.empty() ? nullptr : of_type[static_cast<size_t>(Pick(static_cast<int>(of_type.size())))];
  }

  // (p0, p1) -> p0 * p1 + p0 over f32[]; called on scalars.
  const ir::Computation* MakeCallee() {
    Builder b(module_, "callee");
    Instruction* p0 = b.Parameter(0, Shape::Scalar(ElementType::kF32));
    Instruction* p1 = b.Parameter(1, Shape::Scalar(ElementType::kF32));
    Instruction* unused = b.Parameter(2, Shape::Scalar(ElementType::kF32));
    (void)unused;
    return *b.Build(b.Add(b.Multiply(p0, p1), p0));
  }

  // A splat of `bits` as either a constant array or a broadcast of a scalar constant.
  Instruction* Splat(Builder& b, const Shape& s, float f, int32_t i) {
    ir::Literal lit(s);
    for (int64_t k = 0; k < lit.element_count(); ++k) {
      if (s.type() == ElementType::kF32) lit.Set<float>(k, f); else lit.Set<int32_t>(k, i);
    }
    if (Pick(2) || s.rank() == 0) return b.Constant(lit);
    ir::Literal scalar(Shape::Scalar(s.type()));
    scalar.mutable_bytes() = lit.bytes().substr(0, 4);
    return b.Broadcast(b.Constant(scalar), s, {});
  }

  std::vector<int64_t> RandomPermutation(int rank) {
    std::vector<int64_t> p(static_cast<size_t>(rank));
    for (int i = 0; i < rank; ++i) p[static_cast<size_t>(i)] = i;
    std::shuffle(p.begin(), p.end(), rng_);
    return p;
  }

  void Step(Builder& b) {
    ElementType type = Pick(4) ? ElementType::kF32 : ElementType::kS32;
    Instruction* x = AnyOf(type);
    if (x == nullptr) return;
    const Shape s = x->shape;
    bool f32 = type == ElementType::kF32;
    Instruction* y = nullptr;
    switch (Pick(18)) {
      case 0: y = Pick(2) ? b.Multiply(x, Splat(b, s, 1.0f, 1)) : b.Multiply(Splat(b, s, 1.0f, 1), x); break;
      case 1: y = b.Add(x, Splat(b, s, Pick(2) ? -0.0f : 0.0f, 0)); break;
      case 2: y = b.Binary(Pick(2) ? Opcode::kSubtract : Opcode::kDivide, x, Splat(b, s, Pick(2) ? 0.0f : 1.0f, 1)); break;
      case 3: y = b.Transpose(b.Transpose(x, RandomPermutation(s.rank())), RandomPermutation(s.rank())); break;
      case 4: y = b.Reshape(b.Reshape(x, {s.ElementCount()}), s.dims()); break;
      case 5: y = b.Add(b.Unary(f32 ? Opcode::kExp : Opcode::kNegate, x), b.Unary(f32 ? Opcode::kExp : Opcode::kNegate, x)); break;
      case 6: y = b.Multiply(x, b.Add(Splat(b, s, 1.5f, 3), Splat(b, s, 0.25f, 4))); break;
      case 7: {
        if (!f32) return;
        Instruction* a = s.ElementCount() == 1 ? b.Reshape(x, {})
                                               : b.Reduce(x, b.ConstantF32(-0.0f), AllDims(s), add_);
        y = b.Call(callee_, {a, a, a});
        break;
      }
      case 8: y = f32 ? b.Add(b.Multiply(b.Unary(Opcode::kTanh, x), x), x) : b.Multiply(b.Add(x, x), x); break;
      case 9: {
        if (!f32 || s.rank() == 0) return;
        y = b.Reduce(b.Unary(Opcode::kExp, b.Add(x, x)), b.ConstantF32(-0.0f), {0}, Pick(2) ? add_ : add2_);
        break;
      }
      case 10: {
        if (!all_reduce_ || !f32) return;
        const ir::Computation* combiner = Pick(4) ? add_ : add2_;
        values_.push_back(b.AllReduce(AnyOf(ElementType::kF32), combiner));  // gradient-like pairs
        y = b.AllReduce(Pick(2) ? x : b.Add(x, x), combiner);
        break;
      }
      case 11: {
        Instruction* p = b.Broadcast(b.Constant(ir::Literal::Scalar<uint8_t>(ElementType::kPred, Pick(2))),
                                     Shape(ElementType::kPred, s.dims()), {});
        y = b.Select(p, x, b.Unary(Opcode::kNegate, x));
        break;
      }
      case 12: y = Pick(2) ? b.Convert(x, type) : b.Unary(Opcode::kNegate, b.Unary(Opcode::kNegate, x)); break;
      case 13: {
        std::vector<int64_t> d1 = s.dims(), map1, d2, map2;
        for (int i = 0; i < s.rank(); ++i) map1.push_back(i + 1);
        d1.insert(d1.begin(), 2);
        d2 = d1;
        d2.push_back(3);
        for (int i = 0; i <= s.rank(); ++i) map2.push_back(i);
        y = b.Broadcast(b.Broadcast(x, Shape(type, d1), map1), Shape(type, d2), map2);
        break;
      }
      case 14: {
        std::vector<ir::SliceDim> full;
        for (int64_t d : s.dims()) full.push_back({0, d, 1});
        std::vector<ir::PadDim> none(static_cast<size_t>(s.rank()));
        y = s.rank() ? b.Concatenate({b.Pad(b.Slice(x, full), Splat(b, Shape(type, {}), 0, 0), none)}, 0) : b.Unary(Opcode::kNegate, x);
        break;
      }
      case 15: {
        Instruction* t = b.Tuple({x, b.Unary(Opcode::kNegate, x)});
        y = b.GetTupleElement(t, Pick(2));
        break;
      }
      case 16: y = b.Binary(f32 ? Opcode::kMaximum : Opcode::kMinimum, x, b.Constant(RandomLiteral(s))); break;
      case 17: y = b.Unary(f32 ? Opcode::kLog : Opcode::kAbs, b.Binary(Opcode::kSubtract, x, x)); break;
    }
    values_.push_back(y);
  }

  static std::vector<int64_t> AllDims(const Shape& s) {
    std::vector<int64_t> d;
    for (int i = 0; i < s.rank(); ++i) d.push_back(i);
    return d;
  }

  ir::Literal RandomLiteral(const Shape& shape) {
    ir::Literal lit(shape);
    for (char& c : lit.mutable_bytes()) c = static_cast<char>(Pick(256));
    return lit;
  }

  std::mt19937_64 rng_;
  bool all_reduce_;
  ir::Module* module_ = nullptr;
  std::vector<Instruction*> values_;
  const ir::Computation* add_ = nullptr;
  const ir::Computation* add2_ = nullptr;
  const ir::Computation* callee_ = nullptr;
};

}  // namespace

std::unique_ptr<ir::Module> RandomPassModule(uint64_t seed, bool all_reduce) {
  return PassGenerator(seed, all_reduce).Build();
}

}  // namespace detrain::testing
