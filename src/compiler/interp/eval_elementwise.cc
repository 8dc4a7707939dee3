// Elementwise ops: unary, binary, compare, select, clamp, convert, bitcast-convert, iota and
// the threefry2x32 custom call. Each output element depends on the same-index input elements.
#include "attest/prng/threefry_block.h"
#include "compiler/interp/interp_internal.h"

namespace detrain::interp::internal {

using ir::Direction;
using ir::ElementType;

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
      for (int64_t i = 0; i < n; ++i)
        out.Set<T>(i, ApplyBinary<T>(*b, a.Get<T>(i), ops[1]->Get<T>(i)));
    } else if (instr.opcode == ir::Opcode::kCompare) {
      Direction d = instr.FindAttr(ir::Attr::kDirection)->direction;
      for (int64_t i = 0; i < n; ++i) {
        out.Set<uint8_t>(i, semantics::Compare<T>(d, a.Get<T>(i), ops[1]->Get<T>(i)));
      }
    } else if (instr.opcode == ir::Opcode::kClamp) {  // clamp(lo, x, hi); lo, hi may be scalars
      for (int64_t i = 0; i < n; ++i) {
        T lo = a.Get<T>(scalar_or(a, i)), hi = ops[2]->Get<T>(scalar_or(*ops[2], i));
        out.Set<T>(i, semantics::Clamp<T>(lo, ops[1]->Get<T>(i), hi));
      }
    }
  });
  if (instr.opcode == ir::Opcode::kSelect) {
    DispatchElementType(instr.shape.type(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      for (int64_t i = 0; i < n; ++i) {
        out.Set<T>(
            i, semantics::Select<T>(ops[0]->Get<uint8_t>(i), ops[1]->Get<T>(i), ops[2]->Get<T>(i)));
      }
    });
  }
  return out;
}

Result<Literal> EvalConvert(const Instruction& instr, const Operands& ops) {
  Literal out(instr.shape);
  int64_t n = out.element_count();
  bool bitcast = instr.opcode == ir::Opcode::kBitcastConvert;
  DispatchElementType(ops[0]->shape().type(), [&](auto src_tag) {
    using S = typename decltype(src_tag)::type;
    DispatchElementType(instr.shape.type(), [&](auto dst_tag) {
      using D = typename decltype(dst_tag)::type;
      const Literal& in = *ops[0];
      if (!bitcast) {
        for (int64_t i = 0; i < n; ++i) out.Set<D>(i, semantics::ConvertElement<D>(in.Get<S>(i)));
      } else if constexpr (sizeof(D) == sizeof(S)) {  // other sizes: rejected by the verifier
        for (int64_t i = 0; i < n; ++i) out.Set<D>(i, semantics::BitcastElement<D>(in.Get<S>(i)));
      }
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
  for (int64_t i = 0; i < y0.element_count(); ++i) {  // the key may differ per element
    auto schedule = prng::ThreefryKeySchedule(ops[0]->Get<uint32_t>(i), ops[1]->Get<uint32_t>(i));
    uint32_t x0 = ops[2]->Get<uint32_t>(i), x1 = ops[3]->Get<uint32_t>(i);
    prng::ThreefryBlock(schedule, x0, x1);
    y0.Set<uint32_t>(i, x0);
    y1.Set<uint32_t>(i, x1);
  }
  std::vector<Literal> elements;
  elements.push_back(std::move(y0));
  elements.push_back(std::move(y1));
  return Literal::Tuple(std::move(elements));
}

}  // namespace detrain::interp::internal
