// See program.h.
#include "runtime/cpu/program.h"

#include <cstring>

#include "compiler/codegen/common/kernel_spec.h"
#include "compiler/semantics/semantics.h"

namespace detrain::runtime::cpu {
namespace {

namespace pb = plan::v2;
using ir::ElementType;

Result<ir::Direction> ParseDirection(const std::string& s) {
  static const char* kNames[] = {"EQ", "NE", "LT", "LE", "GT", "GE"};
  for (int i = 0; i < 6; ++i) {
    if (s == kNames[i]) return static_cast<ir::Direction>(i);
  }
  return InvalidArgument("plan: unknown comparison direction '" + s + "'");
}

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

Result<DecodedProgram> DecodeProgram(const pb::ScalarProgram& program,
                                     const std::vector<ElementType>& input_types,
                                     bool allow_reduced, ElementType reduced_type) {
  DecodedProgram out;
  const int n = program.ops_size();
  if (n == 0) return InvalidArgument("plan: an empty scalar program");
  for (int i = 0; i < n; ++i) {
    const pb::ScalarOp& op = program.ops(i);
    DecodedOp d;
    d.kind = op.kind();
    DETRAIN_ASSIGN_OR_RETURN(d.type, codegen::FromPlanType(op.type()));
    int want_args = 0;
    switch (op.kind()) {
      case pb::ScalarOp::INPUT:
        if (op.input() < 0 || op.input() >= static_cast<int>(input_types.size())) {
          return InvalidArgument("plan: scalar program input " + std::to_string(op.input()) +
                                 " out of range");
        }
        if (input_types[static_cast<size_t>(op.input())] != d.type)
          return InvalidArgument("plan: scalar program input type mismatch");
        d.input = op.input();
        out.num_inputs = std::max(out.num_inputs, d.input + 1);
        break;
      case pb::ScalarOp::CONSTANT:
        if (static_cast<int>(op.constant().size()) != ir::ElementTypeByteSize(d.type)) {
          return InvalidArgument("plan: constant of the wrong size");
        }
        std::memcpy(&d.constant, op.constant().data(), op.constant().size());
        break;
      case pb::ScalarOp::REDUCED:
        if (!allow_reduced || d.type != reduced_type)
          return InvalidArgument("plan: misplaced REDUCED op");
        break;
      case pb::ScalarOp::UNARY:
      case pb::ScalarOp::BINARY: {
        auto opcode = ir::OpcodeFromName(op.op());
        want_args = op.kind() == pb::ScalarOp::UNARY ? 1 : 2;
        if (!opcode) return InvalidArgument("plan: unknown op '" + op.op() + "'");
        if (want_args == 1) {
          auto u = ir::AsUnaryOp(*opcode);
          if (!u) return InvalidArgument("plan: '" + op.op() + "' is not unary");
          d.unary = *u;
        } else {
          auto b = ir::AsBinaryOp(*opcode);
          if (!b) return InvalidArgument("plan: '" + op.op() + "' is not binary");
          d.binary = *b;
        }
        break;
      }
      case pb::ScalarOp::COMPARE: {
        want_args = 2;
        DETRAIN_ASSIGN_OR_RETURN(d.direction, ParseDirection(op.direction()));
        break;
      }
      case pb::ScalarOp::SELECT:
      case pb::ScalarOp::CLAMP:
        want_args = 3;
        break;
      case pb::ScalarOp::CONVERT:
      case pb::ScalarOp::BITCAST:
        want_args = 1;
        break;
      default:
        return InvalidArgument("plan: unknown scalar op kind " + std::to_string(op.kind()));
    }
    if (op.args_size() != want_args)
      return InvalidArgument("plan: scalar op " + std::to_string(i) + " has the wrong arity");
    for (int a = 0; a < want_args; ++a) {
      if (op.args(a) < 0 || op.args(a) >= i)
        return InvalidArgument("plan: scalar op argument out of order");
      d.args[a] = op.args(a);
    }
    if (want_args > 0)
      d.arg_type = out.ops[static_cast<size_t>(d.args[want_args == 3 ? 1 : 0])].type;
    // Type rules: the result type each kind must have, given its arguments.
    auto arg_type = [&](int a) { return out.ops[static_cast<size_t>(d.args[a])].type; };
    bool ok = true;
    switch (op.kind()) {
      case pb::ScalarOp::UNARY:
        ok = arg_type(0) == d.type;
        break;
      case pb::ScalarOp::BINARY:
        ok = arg_type(0) == d.type && arg_type(1) == d.type;
        break;
      case pb::ScalarOp::COMPARE:
        ok = d.type == ElementType::kPred && arg_type(0) == arg_type(1);
        break;
      case pb::ScalarOp::SELECT:
        ok = arg_type(0) == ElementType::kPred && arg_type(1) == d.type && arg_type(2) == d.type;
        break;
      case pb::ScalarOp::CLAMP:
        ok = arg_type(0) == d.type && arg_type(1) == d.type && arg_type(2) == d.type;
        break;
      case pb::ScalarOp::BITCAST:
        ok = ir::ElementTypeByteSize(arg_type(0)) == ir::ElementTypeByteSize(d.type);
        break;
      default:
        break;
    }
    if (!ok)
      return InvalidArgument("plan: scalar op " + std::to_string(i) +
                             " has inconsistent element types");
    out.ops.push_back(d);
  }
  if (program.result() < 0 || program.result() >= n)
    return InvalidArgument("plan: scalar program result out of range");
  out.result = program.result();
  if (n == 3 && out.result == 2 && out.ops[2].kind == pb::ScalarOp::BINARY &&
      out.ops[0].kind == pb::ScalarOp::INPUT && out.ops[1].kind == pb::ScalarOp::INPUT) {
    int a = out.ops[static_cast<size_t>(out.ops[2].args[0])].input;
    int b = out.ops[static_cast<size_t>(out.ops[2].args[1])].input;
    if ((a == 0 && b == 1) || (a == 1 && b == 0)) {
      out.direct = true;
      out.swapped = a == 1;
      out.direct_op = out.ops[2].binary;
    }
  }
  return out;
}

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

std::vector<uint8_t> UniformOps(const DecodedProgram& program,
                                const std::vector<int64_t>& input_elements) {
  std::vector<uint8_t> uniform(program.ops.size(), 0);
  for (size_t i = 0; i < program.ops.size(); ++i) {
    const DecodedOp& d = program.ops[i];
    switch (d.kind) {
      case pb::ScalarOp::INPUT:
        uniform[i] = input_elements[static_cast<size_t>(d.input)] == 1;
        break;
      case pb::ScalarOp::CONSTANT:
        uniform[i] = 1;
        break;
      case pb::ScalarOp::REDUCED:
        break;
      default: {
        const int arity = d.kind == pb::ScalarOp::UNARY || d.kind == pb::ScalarOp::CONVERT ||
                                  d.kind == pb::ScalarOp::BITCAST
                              ? 1
                          : d.kind == pb::ScalarOp::SELECT || d.kind == pb::ScalarOp::CLAMP ? 3
                                                                                            : 2;
        uniform[i] = 1;
        for (int a = 0; a < arity; ++a) uniform[i] &= uniform[static_cast<size_t>(d.args[a])];
      }
    }
  }
  return uniform;
}

void EvalUniform(const DecodedProgram& program, const std::vector<uint8_t>& uniform,
                 const uint64_t* inputs, uint64_t* values) {
  for (size_t i = 0; i < program.ops.size(); ++i) {
    if (uniform[i]) values[i] = EvalOp(program.ops[i], values, inputs);
  }
}

}  // namespace detrain::runtime::cpu
