// The scalar meaning of every elementwise op (docs/ir.md "Elementwise ops"), for every element
// type: the ONLY place it is written. The interpreter, the CPU kernels and CUDA code all call
// these functions (or, for vector code, are tested bit for bit against them).
//
//   floats     IEEE 754 binary32, round to nearest even, no FTZ/DAZ; +, -, *, /, sqrt and
//              remainder (fmod, exact) are IEEE; transcendental functions are detrain::crmath
//              (correctly rounded); abs/negate only touch the sign bit (NaN payloads kept)
//   NaN results   an operand's NaN quieted (the first NaN operand of two), an invalid operation
//              (inf - inf, 0 x inf, sqrt(-1), fmod(inf, y)) the default NaN 0xFFC00000; written
//              with the bits, never left to the hardware (a GPU returns 0x7FFFFFFF for all)
//   max/min    a NaN operand gives NaN (the first NaN operand's bits); -0 < +0
//   round-nearest-even   ties to even, independent of the dynamic rounding mode; sign kept (-0)
//   integers   wrap modulo 2^bits; x / 0 = -1 (all bits set), x % 0 = x; INT_MIN / -1 = INT_MIN,
//              INT_MIN % -1 = 0 (as XLA)
//   shifts     the amount read as unsigned; >= bit width: shift-left and shift-right-logical give
//              0, shift-right-arithmetic gives the sign fill (0 or -1, of the operand's bits)
//   power      f32: crmath::Pow; integers: exact wrapping square-and-multiply; a negative
//              exponent gives 1 for base 1, ±1 for base -1, 0 otherwise
//   compare    IEEE: every comparison with a NaN is false except NE; -0 == +0
//   pred       and/or/xor bitwise; maximum = or, minimum = and; not = logical not
// Ops a type does not admit (e.g. exp on s32, shifts on f32) are rejected by the verifier
// (ops.def operand-type column); here they return their first operand.
//
// Header-only, host and CUDA device (nvcc and NVRTC; compile device code with --fmad=false); no
// allocation, no exceptions. Thread safety: pure functions. Determinism: each result is a
// function of the operand bits alone.
#ifndef DETRAIN_COMPILER_SEMANTICS_SCALAR_H_
#define DETRAIN_COMPILER_SEMANTICS_SCALAR_H_

#include "base/host_device.h"
#include "base/math/crmath.h"
#include "compiler/ir/op_enums.h"
#include "compiler/semantics/convert.h"
#include "compiler/semantics/element_traits.h"

namespace detrain::semantics {

using ir::BinaryOp;
using ir::Direction;
using ir::UnaryOp;

namespace internal {

DETRAIN_HD inline float FlipSign(float x) { return BitsFloat(FloatBits(x) ^ 0x80000000u); }
DETRAIN_HD inline float ClearSign(float x) { return BitsFloat(FloatBits(x) & 0x7fffffffu); }
DETRAIN_HD inline bool SignBit(float x) { return (FloatBits(x) >> 31) != 0; }

// Round half to even without consulting the dynamic rounding mode.
DETRAIN_HD inline float RoundNearestEven(float x) {
  if (!(ClearSign(x) < 8388608.0f)) return x;  // NaN, inf, or already an integer (>= 2^23)
  float t = ::truncf(x);
  float diff = ClearSign(x - t);  // exact
  if (diff > 0.5f || (diff == 0.5f && ::fmodf(t, 2.0f) != 0.0f)) t += x < 0 ? -1.0f : 1.0f;
  return t == 0.0f ? BitsFloat(FloatBits(x) & 0x80000000u) : t;  // keeps the sign of zero
}

// x rounded to the nearest bfloat16 (8 exponent bits, 7 fraction bits: the top half of an f32),
// ties to even, returned as the f32 of the same value: what `convert` to bf16 and back gives.
// Subnormals round like normals (the exponent field is f32's); past the largest bf16 is inf; a
// NaN keeps its sign and top 7 payload bits, quieted (the NaN rule, docs/ir.md). Integer ops only.
DETRAIN_HD inline float RoundToBf16(float x) {
  uint32_t b = FloatBits(x);
  if ((b & 0x7fffffffu) > 0x7f800000u) return BitsFloat((b | 0x00400000u) & 0xffff0000u);
  b += 0x7fffu + ((b >> 16) & 1u);  // a carry into the exponent is the correct rounding up
  return BitsFloat(b & 0xffff0000u);
}

// x rounded to the nearest IEEE binary16 (5 exponent bits, 10 fraction bits), ties to even, with
// gradual underflow (multiples of 2^-24 below 2^-14) and overflow to inf from 65520 (the tie
// between 65504 and 2^16 goes to even, 2^16, which is inf); a NaN keeps its sign and top 10
// payload bits, quieted. Returned as the f32 of the same value. Integer ops and exact float
// scaling only.
DETRAIN_HD inline float RoundToF16(float x) {
  uint32_t b = FloatBits(x);
  uint32_t sign = b & 0x80000000u, a = b ^ sign;
  if (a > 0x7f800000u) return BitsFloat((b | 0x00400000u) & 0xffffe000u);
  if (a >= 0x477ff000u) return BitsFloat(sign | 0x7f800000u);  // |x| >= 65520
  if (a >= 0x38800000u) {                                      // |x| >= 2^-14: a normal f16
    a += 0xfffu + ((a >> 13) & 1u);
    return BitsFloat(sign | (a & 0xffffe000u));
  }
  if (a <= 0x33000000u) return BitsFloat(sign);  // |x| <= 2^-25: the tie at 2^-25 goes to 0
  // 2^-25 < |x| < 2^-14 (a normal f32): |x| = m 2^(e-150), in units of 2^-24 m >> (126 - e).
  uint32_t e = a >> 23, m = (a & 0x007fffffu) | 0x00800000u;
  uint32_t s = 126u - e;  // 14 <= s <= 24
  uint32_t q = m >> s, rem = m & ((1u << s) - 1u), half = 1u << (s - 1u);
  if (rem > half || (rem == half && (q & 1u) != 0)) ++q;
  float r = static_cast<float>(q) * 0x1p-24f;  // q <= 1024: exact
  return BitsFloat(FloatBits(r) | sign);
}

template <typename T>
DETRAIN_HD T WrapAdd(T a, T b) {
  using U = typename ElementTraits<T>::Unsigned;
  return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
}
template <typename T>
DETRAIN_HD T WrapSub(T a, T b) {
  using U = typename ElementTraits<T>::Unsigned;
  return static_cast<T>(static_cast<U>(a) - static_cast<U>(b));
}
template <typename T>
DETRAIN_HD T WrapMul(T a, T b) {
  using U = typename ElementTraits<T>::Unsigned;
  if constexpr (sizeof(T) < sizeof(uint32_t)) {  // no promotion to (signed) int
    return static_cast<T>(static_cast<uint32_t>(a) * static_cast<uint32_t>(b));
  } else {
    return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
  }
}

template <typename T>
DETRAIN_HD T IntDivide(T a, T b) {
  if (b == 0) return static_cast<T>(-1);
  if constexpr (kIsSigned<T>) {
    if (a == ElementTraits<T>::kMin && b == -1) return a;
  }
  return static_cast<T>(a / b);
}

template <typename T>
DETRAIN_HD T IntRemainder(T a, T b) {
  if (b == 0) return a;
  if constexpr (kIsSigned<T>) {
    if (a == ElementTraits<T>::kMin && b == -1) return 0;
  }
  return static_cast<T>(a % b);
}

template <typename T>
DETRAIN_HD T IntPower(T base, T exp) {
  if constexpr (kIsSigned<T>) {
    if (exp < 0) return base == 1 ? T(1) : base == -1 ? ((exp & 1) ? T(-1) : T(1)) : T(0);
  }
  using U = typename ElementTraits<T>::Unsigned;
  T result = 1;
  while (exp != 0) {
    if (exp & 1) result = WrapMul(result, base);
    base = WrapMul(base, base);
    exp = static_cast<T>(static_cast<U>(exp) >> 1);
  }
  return result;
}

// maximum/minimum of floats: NaN if either operand is NaN (the first NaN operand); -0 < +0.
DETRAIN_HD inline float FloatMaxMin(float a, float b, bool is_max) {
  if (IsNan(a)) return a;
  if (IsNan(b)) return b;
  if (a == b) {  // only ±0 vs ±0 can differ in bits
    bool a_neg = SignBit(a);
    return (is_max ? !a_neg : a_neg) ? a : b;
  }
  return (is_max ? a > b : a < b) ? a : b;
}

template <typename T>
DETRAIN_HD T Shift(BinaryOp op, T a, T b) {
  using U = typename ElementTraits<T>::Unsigned;
  using S = typename ElementTraits<T>::Signed;
  constexpr U kBits = sizeof(T) * 8;
  U amount = static_cast<U>(b);
  if (op == BinaryOp::kShiftLeft) {
    return amount >= kBits ? T(0) : static_cast<T>(static_cast<U>(a) << amount);
  }
  if (op == BinaryOp::kShiftRightLogical) {
    return amount >= kBits ? T(0) : static_cast<T>(static_cast<U>(a) >> amount);
  }
  // Arithmetic: the sign bit of the operand's bit pattern fills in (unsigned types too).
  S s = static_cast<S>(a);
  if (amount >= kBits) return static_cast<T>(s < 0 ? S(-1) : S(0));
  return static_cast<T>(static_cast<S>(s >> amount));
}

// The NaN an IEEE arithmetic op returns. IEEE 754 leaves the payload to the implementation, and
// x86 returns the NaN of the instruction's first source — but `a + b` does not fix which source
// that is: compilers swap the operands of commutative ops freely. detrain fixes it: the first
// NaN among (a, b), quieted; if neither is NaN (an invalid operation such as inf - inf or 0 x inf)
// the default NaN 0xFFC00000, which x86 arithmetic returns too.
DETRAIN_HD inline float ArithmeticNan(float a, float b) {
  if (IsNan(a)) return BitsFloat(FloatBits(a) | 0x00400000u);
  if (IsNan(b)) return BitsFloat(FloatBits(b) | 0x00400000u);
  return BitsFloat(0xFFC00000u);
}

// sqrt with the NaN rule: a NaN operand quieted, a negative one (invalid) the default NaN; the
// hardware's square root (correctly rounded by IEEE) otherwise. x86's sqrtss does the same; a
// GPU's sqrt.rn returns 0x7FFFFFFF for both.
DETRAIN_HD inline float Sqrt(float x) {
  if (IsNan(x) || x < 0.0f) return ArithmeticNan(x, x);
  return ::sqrtf(x);
}

// fmod with the NaN rule: a NaN operand gives ArithmeticNan(a, b), an invalid one (a infinite or
// b zero) the default NaN; fmod is exact otherwise. The libraries differ in the NaN they return
// (glibc's depends on its version's code path; CUDA's is 0x7FFFFFFF), so the rule is written here.
DETRAIN_HD inline float Remainder(float a, float b) {
  if (IsNan(a) || IsNan(b) || ClearSign(a) == BitsFloat(0x7F800000u) || b == 0.0f) {
    return ArithmeticNan(a, b);
  }
  return ::fmodf(a, b);
}

DETRAIN_HD inline float WithCanonicalNan(float r, float a, float b) {
  return IsNan(r) ? ArithmeticNan(a, b) : r;
}

DETRAIN_HD inline float FloatUnary(UnaryOp op, float x) {
  switch (op) {
    case UnaryOp::kAbs:
      return ClearSign(x);
    case UnaryOp::kNegate:
      return FlipSign(x);
    case UnaryOp::kSign:
      return IsNan(x) || x == 0.0f ? x : (x > 0 ? 1.0f : -1.0f);
    // A NaN passes through unchanged, signalling ones too, as in RoundNearestEven (roundss and
    // vroundps quiet a signalling NaN, glibc's portable floorf does not: the rule cannot be
    // left to the library).
    case UnaryOp::kFloor:
      return IsNan(x) ? x : ::floorf(x);
    case UnaryOp::kCeil:
      return IsNan(x) ? x : ::ceilf(x);
    case UnaryOp::kRoundNearestEven:
      return RoundNearestEven(x);
    case UnaryOp::kExp:
      return crmath::Exp(x);
    case UnaryOp::kExpm1:
      return crmath::Expm1(x);
    case UnaryOp::kLog:
      return crmath::Log(x);
    case UnaryOp::kLog1p:
      return crmath::Log1p(x);
    case UnaryOp::kTanh:
      return crmath::Tanh(x);
    case UnaryOp::kLogistic:
      return crmath::Logistic(x);
    case UnaryOp::kSqrt:
      return Sqrt(x);
    case UnaryOp::kRsqrt:
      return crmath::Rsqrt(x);
    case UnaryOp::kErf:
      return crmath::Erf(x);
    case UnaryOp::kSin:
      return crmath::Sin(x);
    case UnaryOp::kCos:
      return crmath::Cos(x);
    case UnaryOp::kRoundToBf16:
      return RoundToBf16(x);
    case UnaryOp::kRoundToF16:
      return RoundToF16(x);
    case UnaryOp::kNot:
      return x;  // rejected by the verifier
  }
  return x;
}

template <typename T>
DETRAIN_HD T IntUnary(UnaryOp op, T x) {
  switch (op) {
    case UnaryOp::kAbs:
      if constexpr (kIsSigned<T>) return x < 0 ? WrapSub<T>(0, x) : x;
      return x;
    case UnaryOp::kNegate:
      return WrapSub<T>(0, x);
    case UnaryOp::kSign:
      if constexpr (kIsSigned<T>) return static_cast<T>(x > 0 ? 1 : x < 0 ? -1 : 0);
      return static_cast<T>(x > 0 ? 1 : 0);
    case UnaryOp::kNot:
      return static_cast<T>(~x);
    case UnaryOp::kFloor:
    case UnaryOp::kCeil:
    case UnaryOp::kRoundNearestEven:
    case UnaryOp::kExp:
    case UnaryOp::kExpm1:
    case UnaryOp::kLog:
    case UnaryOp::kLog1p:
    case UnaryOp::kTanh:
    case UnaryOp::kLogistic:
    case UnaryOp::kSqrt:
    case UnaryOp::kRsqrt:
    case UnaryOp::kErf:
    case UnaryOp::kSin:
    case UnaryOp::kCos:
    case UnaryOp::kRoundToBf16:
    case UnaryOp::kRoundToF16:
      return x;  // float-only ops; rejected by the verifier
  }
  return x;
}

DETRAIN_HD inline float FloatBinary(BinaryOp op, float a, float b) {
  switch (op) {
    case BinaryOp::kAdd:
      return WithCanonicalNan(a + b, a, b);
    case BinaryOp::kSubtract:
      return WithCanonicalNan(a - b, a, b);
    case BinaryOp::kMultiply:
      return WithCanonicalNan(a * b, a, b);
    case BinaryOp::kDivide:
      return WithCanonicalNan(a / b, a, b);
    case BinaryOp::kRemainder:
      return Remainder(a, b);
    case BinaryOp::kMaximum:
      return FloatMaxMin(a, b, true);
    case BinaryOp::kMinimum:
      return FloatMaxMin(a, b, false);
    case BinaryOp::kPower:
      return crmath::Pow(a, b);
    case BinaryOp::kAnd:
    case BinaryOp::kOr:
    case BinaryOp::kXor:
    case BinaryOp::kShiftLeft:
    case BinaryOp::kShiftRightLogical:
    case BinaryOp::kShiftRightArithmetic:
      return a;  // rejected by the verifier
  }
  return a;
}

DETRAIN_HD inline uint8_t PredBinary(BinaryOp op, uint8_t a, uint8_t b) {
  switch (op) {
    case BinaryOp::kAnd:
    case BinaryOp::kMinimum:
      return static_cast<uint8_t>(a & b);
    case BinaryOp::kOr:
    case BinaryOp::kMaximum:
      return static_cast<uint8_t>(a | b);
    case BinaryOp::kXor:
      return static_cast<uint8_t>(a ^ b);
    case BinaryOp::kAdd:
    case BinaryOp::kSubtract:
    case BinaryOp::kMultiply:
    case BinaryOp::kDivide:
    case BinaryOp::kRemainder:
    case BinaryOp::kPower:
    case BinaryOp::kShiftLeft:
    case BinaryOp::kShiftRightLogical:
    case BinaryOp::kShiftRightArithmetic:
      return a;  // rejected by the verifier
  }
  return a;
}

template <typename T>
DETRAIN_HD T IntBinary(BinaryOp op, T a, T b) {
  switch (op) {
    case BinaryOp::kAdd:
      return WrapAdd(a, b);
    case BinaryOp::kSubtract:
      return WrapSub(a, b);
    case BinaryOp::kMultiply:
      return WrapMul(a, b);
    case BinaryOp::kDivide:
      return IntDivide(a, b);
    case BinaryOp::kRemainder:
      return IntRemainder(a, b);
    case BinaryOp::kMaximum:
      return a > b ? a : b;
    case BinaryOp::kMinimum:
      return a < b ? a : b;
    case BinaryOp::kPower:
      return IntPower(a, b);
    case BinaryOp::kAnd:
      return static_cast<T>(a & b);
    case BinaryOp::kOr:
      return static_cast<T>(a | b);
    case BinaryOp::kXor:
      return static_cast<T>(a ^ b);
    case BinaryOp::kShiftLeft:
    case BinaryOp::kShiftRightLogical:
    case BinaryOp::kShiftRightArithmetic:
      return Shift(op, a, b);
  }
  return a;
}

}  // namespace internal

// The elementwise unary op `op` applied to x.
template <typename T>
DETRAIN_HD T ApplyUnary(UnaryOp op, T x) {
  if constexpr (kIsFloat<T>) {
    return internal::FloatUnary(op, x);
  } else if constexpr (kIsPred<T>) {
    return op == UnaryOp::kNot ? static_cast<T>(!x) : x;
  } else {
    return internal::IntUnary(op, x);
  }
}

// The elementwise binary op `op` applied to (a, b).
template <typename T>
DETRAIN_HD T ApplyBinary(BinaryOp op, T a, T b) {
  if constexpr (kIsFloat<T>) {
    return internal::FloatBinary(op, a, b);
  } else if constexpr (kIsPred<T>) {
    return internal::PredBinary(op, a, b);
  } else {
    return internal::IntBinary(op, a, b);
  }
}

// compare(a, b) with `direction`; IEEE for floats.
template <typename T>
DETRAIN_HD bool Compare(Direction d, T a, T b) {
  switch (d) {
    case Direction::kEq:
      return a == b;
    case Direction::kNe:
      return a != b;
    case Direction::kLt:
      return a < b;
    case Direction::kLe:
      return a <= b;
    case Direction::kGt:
      return a > b;
    case Direction::kGe:
      return a >= b;
  }
  return false;
}

// select(pred, on_true, on_false): any nonzero pred byte selects on_true.
template <typename T>
DETRAIN_HD T Select(uint8_t pred, T on_true, T on_false) {
  return pred != 0 ? on_true : on_false;
}

// clamp(lo, x, hi) = minimum(maximum(x, lo), hi), with maximum/minimum as above (so a NaN x
// stays NaN, and lo > hi gives hi).
template <typename T>
DETRAIN_HD T Clamp(T lo, T x, T hi) {
  return ApplyBinary<T>(BinaryOp::kMinimum, ApplyBinary<T>(BinaryOp::kMaximum, x, lo), hi);
}

// One step of a dot chain: fmaf(a, b, acc) for f32 (one rounding); acc + a * b with wrap-around
// for integers (the order does not matter for them); pred dots are rejected by the verifier.
// The NaN a fused multiply-add returns: IEEE 754 leaves the payload to the implementation, and
// x86 (which of vfmadd132/213/231 runs), glibc's software fmaf and CUDA disagree. detrain fixes
// it: the first NaN among (a, b, c), quieted; if none (0 x inf, or inf - inf), the default NaN
// 0xFFC00000 that x86 arithmetic also returns for invalid operations.
DETRAIN_HD inline float FmaNan(float a, float b, float c) {
  if (IsNan(a) || IsNan(b)) return internal::ArithmeticNan(a, b);
  return internal::ArithmeticNan(c, c);
}

// fmaf with the canonical NaN: a * b + c rounded once. Vector code may compute fmaf at full speed
// and replace a NaN result by FmaNan afterwards (for a chain: recompute the chain with Fma).
DETRAIN_HD inline float Fma(float a, float b, float c) {
  float r = ::fmaf(a, b, c);
  return IsNan(r) ? FmaNan(a, b, c) : r;
}

template <typename T>
DETRAIN_HD T MultiplyAccumulate(T a, T b, T acc) {
  if constexpr (kIsFloat<T>) {
    return Fma(a, b, acc);
  } else {
    return ApplyBinary<T>(BinaryOp::kAdd, acc, ApplyBinary<T>(BinaryOp::kMultiply, a, b));
  }
}

}  // namespace detrain::semantics

#endif  // DETRAIN_COMPILER_SEMANTICS_SCALAR_H_
