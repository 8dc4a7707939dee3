// Elementwise ops: unary, binary, compare, select, clamp, convert, bitcast-convert, iota and
// the threefry2x32 custom call. Each output element depends on the same-index input elements.
#include <cmath>
#include <limits>

#include "attest/prng/threefry.h"
#include "compiler/interp/interp_internal.h"

namespace detrain::interp::internal {
namespace {

using ir::Direction;
using ir::ElementType;

template <typename T>
bool CompareValues(Direction d, T a, T b) {
  switch (d) {  // IEEE for floats: every comparison with NaN is false except NE
    case Direction::kEq: return a == b;
    case Direction::kNe: return a != b;
    case Direction::kLt: return a < b;
    case Direction::kLe: return a <= b;
    case Direction::kGt: return a > b;
    case Direction::kGe: return a >= b;
  }
  return false;
}

// float -> integer: NaN -> 0, otherwise round toward zero and saturate at the type's range.
template <typename D>
D FloatToInt(float x) {
  if (std::isnan(x)) return 0;
  constexpr double kMin = static_cast<double>(std::numeric_limits<D>::min());
  constexpr double kMax = static_cast<double>(std::numeric_limits<D>::max());
  double t = std::trunc(static_cast<double>(x));
  if (t <= kMin) return std::numeric_limits<D>::min();
  if (t >= kMax) return std::numeric_limits<D>::max();
  return static_cast<D>(t);
}

template <typename D, typename S>
D ConvertValue(S x) {
  if constexpr (std::is_same_v<D, uint8_t>) {
    return x != S(0) ? 1 : 0;  // to pred: nonzero (NaN included) is true
  } else if constexpr (std::is_same_v<S, float> && !std::is_same_v<D, float>) {
    return FloatToInt<D>(x);
  } else {
    return static_cast<D>(x);  // int->int wraps (C++20); int->float rounds to nearest even
  }
}

}  // namespace

Result<Literal> EvalElementwise(const Instruction& instr, const Operands& ops) {
  Literal out(instr.shape);
  int64_t n = out.element_count();
  ElementType type = ops[0]->shape().type();
  auto scalar_or = [](const Literal& l, int64_t i) { return l.element_count() == 1 ? 0 : i; };
  DispatchElementType(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const Literal& a = *ops[0];
    if (auto u = AsUnaryOp(instr.opcode)) {
      for (int64_t i = 0; i < n; ++i) out.Set<T>(i, ApplyUnary<T>(*u, a.Get<T>(i)));
    } else if (auto b = AsBinaryOp(instr.opcode)) {
      for (int64_t i = 0; i < n; ++i) out.Set<T>(i, ApplyBinary<T>(*b, a.Get<T>(i), ops[1]->Get<T>(i)));
    } else if (instr.opcode == ir::Opcode::kCompare) {
      Direction d = instr.FindAttr(ir::Attr::kDirection)->direction;
      for (int64_t i = 0; i < n; ++i) out.Set<uint8_t>(i, CompareValues<T>(d, a.Get<T>(i), ops[1]->Get<T>(i)));
    } else if (instr.opcode == ir::Opcode::kClamp) {  // clamp(lo, x, hi) = min(max(x, lo), hi)
      for (int64_t i = 0; i < n; ++i) {
        T lo = a.Get<T>(scalar_or(a, i)), hi = ops[2]->Get<T>(scalar_or(*ops[2], i));
        T x = ApplyBinary<T>(ir::BinaryOp::kMaximum, ops[1]->Get<T>(i), lo);
        out.Set<T>(i, ApplyBinary<T>(ir::BinaryOp::kMinimum, x, hi));
      }
    }
  });
  if (instr.opcode == ir::Opcode::kSelect) {
    for (int64_t i = 0; i < n; ++i) CopyElement(*ops[ops[0]->Get<uint8_t>(i) ? 1 : 2], i, out, i);
  }
  return out;
}

Result<Literal> EvalConvert(const Instruction& instr, const Operands& ops) {
  Literal out(instr.shape);
  if (instr.opcode == ir::Opcode::kBitcastConvert) {
    out.mutable_bytes() = ops[0]->bytes();
    return out;
  }
  int64_t n = out.element_count();
  DispatchElementType(ops[0]->shape().type(), [&](auto src_tag) {
    using S = typename decltype(src_tag)::type;
    DispatchElementType(instr.shape.type(), [&](auto dst_tag) {
      using D = typename decltype(dst_tag)::type;
      for (int64_t i = 0; i < n; ++i) out.Set<D>(i, ConvertValue<D, S>(ops[0]->Get<S>(i)));
    });
  });
  return out;
}

Result<Literal> EvalIota(const Instruction& instr) {
  Literal out(instr.shape);
  const auto& dims = instr.shape.dims();
  int64_t d = instr.IntAttr(ir::Attr::kIotaDimension);
  DispatchElementType(instr.shape.type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (int64_t i = 0; i < out.element_count(); ++i) {
      out.Set<T>(i, static_cast<T>(Unravel(i, dims)[static_cast<size_t>(d)]));
    }
  });
  return out;
}

Result<Literal> EvalThreefry(const Instruction& instr, const Operands& ops) {
  Shape shape = instr.shape.tuple_elements()[0];
  Literal y0(shape), y1(shape);
  for (int64_t i = 0; i < y0.element_count(); ++i) {
    auto y = prng::Threefry2x32(ops[0]->Get<uint32_t>(i), ops[1]->Get<uint32_t>(i),
                                ops[2]->Get<uint32_t>(i), ops[3]->Get<uint32_t>(i));
    y0.Set<uint32_t>(i, y[0]);
    y1.Set<uint32_t>(i, y[1]);
  }
  std::vector<Literal> elements;
  elements.push_back(std::move(y0));
  elements.push_back(std::move(y1));
  return Literal::Tuple(std::move(elements));
}

}  // namespace detrain::interp::internal
