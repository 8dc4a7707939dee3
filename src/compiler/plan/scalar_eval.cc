// See scalar_eval.h.
#include "compiler/plan/scalar_eval.h"

#include <cstring>

#include "compiler/semantics/semantics.h"

namespace detrain::plan {
namespace {

namespace pb = v2;
using ir::ElementType;

template <typename T>
T FromBits(uint64_t bits) {
  T v;
  std::memcpy(&v, &bits, sizeof(T));
  return v;
}

template <typename T>
uint64_t ToBits(T v) {
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof(T));
  return bits;
}

uint64_t Convert(ElementType to, ElementType from, uint64_t bits) {
  return ir::DispatchElementType(from, [&](auto f) {
    using F = typename decltype(f)::type;
    return ir::DispatchElementType(to, [&](auto t) {
      using T = typename decltype(t)::type;
      return ToBits<T>(semantics::ConvertElement<T, F>(FromBits<F>(bits)));
    });
  });
}

}  // namespace

namespace {

// Op `d`'s bits, given the bits v of the ops before it.
uint64_t EvalOp(const DecodedOp& d, const uint64_t* v, const uint64_t* inputs) {
  auto arg = [&](int a) { return v[d.args[a]]; };
  switch (d.kind) {
    case pb::ScalarOp::INPUT:
      return inputs[d.input];
    case pb::ScalarOp::CONSTANT:
      return d.constant;
    case pb::ScalarOp::UNARY:
      return ir::DispatchElementType(d.type, [&](auto t) {
        using T = typename decltype(t)::type;
        return ToBits<T>(semantics::ApplyUnary<T>(d.unary, FromBits<T>(arg(0))));
      });
    case pb::ScalarOp::BINARY:
      return ir::DispatchElementType(d.type, [&](auto t) {
        using T = typename decltype(t)::type;
        return ToBits<T>(
            semantics::ApplyBinary<T>(d.binary, FromBits<T>(arg(0)), FromBits<T>(arg(1))));
      });
    case pb::ScalarOp::COMPARE:
      return ir::DispatchElementType(d.arg_type, [&](auto t) {
        using T = typename decltype(t)::type;
        return static_cast<uint64_t>(
            semantics::Compare<T>(d.direction, FromBits<T>(arg(0)), FromBits<T>(arg(1))));
      });
    case pb::ScalarOp::SELECT:
      return (arg(0) & 0xff) != 0 ? arg(1) : arg(2);
    case pb::ScalarOp::CLAMP:
      return ir::DispatchElementType(d.type, [&](auto t) {
        using T = typename decltype(t)::type;
        return ToBits<T>(
            semantics::Clamp<T>(FromBits<T>(arg(0)), FromBits<T>(arg(1)), FromBits<T>(arg(2))));
      });
    case pb::ScalarOp::CONVERT:
      return Convert(d.type, d.arg_type, arg(0));
    case pb::ScalarOp::BITCAST:
      return arg(0);
    default:
      return 0;  // REDUCED never reaches a scalar evaluation
  }
}

}  // namespace

uint64_t EvalScalar(const DecodedProgram& program, const uint64_t* inputs) {
  // Combiners and inits are a few ops: a stack array avoids an allocation per call.
  constexpr size_t kSmall = 32;
  uint64_t small[kSmall] = {};
  std::vector<uint64_t> large;
  uint64_t* v = small;
  if (program.ops.size() > kSmall) {
    large.resize(program.ops.size());
    v = large.data();
  }
  for (size_t i = 0; i < program.ops.size(); ++i) v[i] = EvalOp(program.ops[i], v, inputs);
  return v[static_cast<size_t>(program.result)];
}

void EvalUniform(const DecodedProgram& program, const std::vector<uint8_t>& uniform,
                 const uint64_t* inputs, uint64_t* values) {
  for (size_t i = 0; i < program.ops.size(); ++i) {
    if (uniform[i]) values[i] = EvalOp(program.ops[i], values, inputs);
  }
}

}  // namespace detrain::plan
