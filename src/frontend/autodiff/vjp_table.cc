// The VJP table (STYLE.md point 4): every opcode of ops.def is classified here exactly once —
// it has a rule, carries no gradient, or is unsupported. The switch has no `default:`, so an
// op added to ops.def without an entry here is a compile error (-Werror=switch in spirit;
// -Wswitch warns) and the classification test fails.
//
// Thread safety: pure function.
#include "frontend/autodiff/vjp.h"

namespace detrain::frontend::autodiff {
namespace {

constexpr VjpEntry Rule(VjpFn fn) { return {VjpKind::kRule, fn, ""}; }
constexpr VjpEntry NoGradient(const char* why) { return {VjpKind::kNoGradient, nullptr, why}; }
constexpr VjpEntry Unsupported(const char* why) { return {VjpKind::kUnsupported, nullptr, why}; }

constexpr const char* kPiecewiseConstant = "piecewise constant: zero derivative (as JAX)";
constexpr const char* kIntegerOnly = "integer/pred op: no gradient";

}  // namespace

VjpEntry LookupVjp(ir::Opcode op) {
  using ir::Opcode;
  // One rule per line, its algebra in the trailing comment.
  // clang-format off
  switch (op) {
    case Opcode::kParameter: return NoGradient("leaf: its cotangent is the result");
    case Opcode::kConstant: return NoGradient("leaf: constant");
    case Opcode::kIota: return NoGradient("leaf: constant");
    case Opcode::kAbs: return Rule(VjpAbs);                   // select(x >= 0, g, -g)
    case Opcode::kNegate: return Rule(VjpNegate);             // -g
    case Opcode::kSign: return NoGradient(kPiecewiseConstant);
    case Opcode::kFloor: return NoGradient(kPiecewiseConstant);
    case Opcode::kCeil: return NoGradient(kPiecewiseConstant);
    case Opcode::kRoundNearestEven: return NoGradient(kPiecewiseConstant);
    case Opcode::kExp: return Rule(VjpExp);                   // g * y
    case Opcode::kExpm1: return Rule(VjpExpm1);               // g * (y + 1)
    case Opcode::kLog: return Rule(VjpLog);                   // g / x
    case Opcode::kLog1p: return Rule(VjpLog1p);               // g / (x + 1)
    case Opcode::kTanh: return Rule(VjpTanh);                 // t + t*y, t = g * (1 - y)
    case Opcode::kLogistic: return Rule(VjpLogistic);         // g * (y * (1 - y))
    case Opcode::kSqrt: return Rule(VjpSqrt);                 // g * (0.5 / y)
    case Opcode::kRsqrt: return Rule(VjpRsqrt);               // g * (-0.5 * (y / x))
    case Opcode::kErf: return Rule(VjpErf);                   // 2/sqrt(pi) * (g * exp(-x*x))
    case Opcode::kSin: return Rule(VjpSin);                   // g * cos(x)
    case Opcode::kCos: return Rule(VjpCos);                   // -g * sin(x)
    case Opcode::kRoundToBf16: return Rule(VjpConvert);       // g, as convert_element_type
    case Opcode::kRoundToF16: return Rule(VjpConvert);        // g, as convert_element_type
    case Opcode::kNot: return NoGradient(kIntegerOnly);
    case Opcode::kAdd: return Rule(VjpAdd);                   // g, g
    case Opcode::kSubtract: return Rule(VjpSubtract);         // g, -g
    case Opcode::kMultiply: return Rule(VjpMultiply);         // g * b, a * g
    case Opcode::kDivide: return Rule(VjpDivide);             // g / b, (-g * a) * (1 / (b*b))
    case Opcode::kRemainder: return Rule(VjpRemainder);       // g, -g * trunc(a / b)
    case Opcode::kMaximum: return Rule(VjpMaximum);           // ties split 0.5 / 0.5
    case Opcode::kMinimum: return Rule(VjpMinimum);           // ties split 0.5 / 0.5
    case Opcode::kPower: return Rule(VjpPower);               // g*(b*a^(b-1)), g*(log(a)*y)
    case Opcode::kAnd: return NoGradient(kIntegerOnly);
    case Opcode::kOr: return NoGradient(kIntegerOnly);
    case Opcode::kXor: return NoGradient(kIntegerOnly);
    case Opcode::kShiftLeft: return NoGradient(kIntegerOnly);
    case Opcode::kShiftRightLogical: return NoGradient(kIntegerOnly);
    case Opcode::kShiftRightArithmetic: return NoGradient(kIntegerOnly);
    case Opcode::kCompare: return NoGradient("pred-valued");
    case Opcode::kSelect: return Rule(VjpSelect);             // select(p, g, 0), select(p, 0, g)
    case Opcode::kClamp: return Rule(VjpClamp);               // g where lo < x < hi
    case Opcode::kConvert: return Rule(VjpConvert);           // f32 -> f32: g
    case Opcode::kBitcastConvert: return NoGradient("reinterprets bits (JAX: no derivative)");
    case Opcode::kBroadcast: return Rule(VjpBroadcast);       // reduce-sum over new dims
    case Opcode::kReshape: return Rule(VjpReshape);           // reshape back
    case Opcode::kTranspose: return Rule(VjpTranspose);       // inverse permutation
    case Opcode::kSlice: return Rule(VjpSlice);               // pad with 0 (interior: stride)
    case Opcode::kConcatenate: return Rule(VjpConcatenate);   // slices of g
    case Opcode::kPad: return Rule(VjpPad);                   // slice back; value: sum of rest
    case Opcode::kReverse: return Rule(VjpReverse);           // reverse(g)
    case Opcode::kDynamicSlice: return Rule(VjpDynamicSlice); // dus(0, g, starts)
    case Opcode::kDynamicUpdateSlice: return Rule(VjpDynamicUpdateSlice);
    case Opcode::kGather: return Rule(VjpGather);             // scatter-add into zeros
    case Opcode::kScatter: return Unsupported("scatter: not supported (out-of-bounds windows)");
    case Opcode::kReduce: return Rule(VjpReduce);             // add: broadcast; max/min: ties
    case Opcode::kReduceWindow: return Rule(VjpReduceWindow); // add: transpose; max/min: ties
    case Opcode::kDot: return Rule(VjpDot);                   // dot_general transpose
    case Opcode::kConvolution: return Rule(VjpConvolution);   // conv transpose lhs / rhs
    case Opcode::kAllReduce: return Unsupported("all-reduce: autodiff runs per shard, before it");
    case Opcode::kTuple: return Rule(VjpTuple);               // element i gets ct[i]
    case Opcode::kGetTupleElement: return Rule(VjpGetTupleElement);
    case Opcode::kCall: return Unsupported("call: inline the callee before differentiating");
    case Opcode::kWhile: return Unsupported("while: unroll the loop before differentiating");
    case Opcode::kCustomCall: return NoGradient("detrain.threefry2x32: random bits (u32)");
    case Opcode::kFusion: return Unsupported("fusion: differentiate before the fuse pass");
  }
  // clang-format on
  return {VjpKind::kUnsupported, nullptr, nullptr};  // not classified (only if -Wswitch fired)
}

}  // namespace detrain::frontend::autodiff
