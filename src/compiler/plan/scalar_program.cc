// See scalar_program.h.
#include "compiler/plan/scalar_program.h"

#include <algorithm>
#include <cstring>

#include "compiler/plan/schema.h"

namespace detrain::plan {
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

}  // namespace

int OpArity(pb::ScalarOp::Kind kind) {
  switch (kind) {
    case pb::ScalarOp::UNARY:
    case pb::ScalarOp::CONVERT:
    case pb::ScalarOp::BITCAST:
      return 1;
    case pb::ScalarOp::BINARY:
    case pb::ScalarOp::COMPARE:
      return 2;
    case pb::ScalarOp::SELECT:
    case pb::ScalarOp::CLAMP:
      return 3;
    default:
      return 0;
  }
}

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
    DETRAIN_ASSIGN_OR_RETURN(d.type, plan::FromPlanType(op.type()));
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
        const int arity = OpArity(d.kind);
        uniform[i] = 1;
        for (int a = 0; a < arity; ++a) uniform[i] &= uniform[static_cast<size_t>(d.args[a])];
      }
    }
  }
  return uniform;
}

}  // namespace detrain::plan
