// Scalar semantics of the elementwise unary and binary ops (docs/ir.md "Elementwise ops"), for
// every element type. Floats follow IEEE 754 binary32 with round-to-nearest-even; transcendental
// functions are detrain::crmath (correctly rounded); integers wrap modulo 2^n; integer division
// by zero gives -1 (all bits set) and remainder by zero gives the dividend, as in XLA.
#include <bit>
#include <cmath>
#include <limits>
#include <type_traits>

#include "base/math/crmath.h"
#include "compiler/interp/interp_internal.h"

namespace detrain::interp::internal {
namespace {

using ir::BinaryOp;
using ir::UnaryOp;

template <typename T>
constexpr bool kIsFloat = std::is_same_v<T, float>;
template <typename T>
constexpr bool kIsPred = std::is_same_v<T, uint8_t>;

float FlipSign(float x) { return std::bit_cast<float>(std::bit_cast<uint32_t>(x) ^ 0x80000000u); }
float ClearSign(float x) { return std::bit_cast<float>(std::bit_cast<uint32_t>(x) & 0x7fffffffu); }

// Round half to even without consulting the dynamic rounding mode.
float RoundNearestEven(float x) {
  if (!(std::fabs(x) < 8388608.0f)) return x;  // NaN, inf, or already an integer (>= 2^23)
  float t = std::trunc(x);
  float diff = std::fabs(x - t);  // exact
  if (diff > 0.5f || (diff == 0.5f && std::fmod(t, 2.0f) != 0.0f)) t += x < 0 ? -1.0f : 1.0f;
  return t == 0.0f ? std::copysign(0.0f, x) : t;
}

template <typename T>
T WrapAdd(T a, T b) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
}
template <typename T>
T WrapSub(T a, T b) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(a) - static_cast<U>(b));
}
template <typename T>
T WrapMul(T a, T b) {
  using U = std::make_unsigned_t<T>;
  if constexpr (sizeof(T) < sizeof(unsigned)) {
    return static_cast<T>(static_cast<unsigned>(a) * static_cast<unsigned>(b));
  } else {
    return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
  }
}

template <typename T>
T IntDivide(T a, T b) {
  if (b == 0) return static_cast<T>(-1);
  if constexpr (std::is_signed_v<T>) {
    if (a == std::numeric_limits<T>::min() && b == -1) return a;
  }
  return static_cast<T>(a / b);
}

template <typename T>
T IntRemainder(T a, T b) {
  if (b == 0) return a;
  if constexpr (std::is_signed_v<T>) {
    if (a == std::numeric_limits<T>::min() && b == -1) return 0;
  }
  return static_cast<T>(a % b);
}

template <typename T>
T IntPower(T base, T exp) {
  if constexpr (std::is_signed_v<T>) {
    if (exp < 0) return base == 1 ? 1 : base == -1 ? ((exp & 1) ? -1 : 1) : 0;
  }
  T result = 1;
  while (exp != 0) {
    if (exp & 1) result = WrapMul(result, base);
    base = WrapMul(base, base);
    exp = static_cast<T>(static_cast<std::make_unsigned_t<T>>(exp) >> 1);
  }
  return result;
}

// maximum/minimum: NaN if either operand is NaN (the first NaN operand); -0 < +0.
float FloatMax(float a, float b, bool is_max) {
  if (std::isnan(a)) return a;
  if (std::isnan(b)) return b;
  if (a == b) {  // only ±0 vs ±0 can differ in bits
    bool a_neg = std::signbit(a);
    return (is_max ? !a_neg : a_neg) ? a : b;
  }
  return (is_max ? a > b : a < b) ? a : b;
}

template <typename T>
T Shift(BinaryOp op, T a, T b) {
  using U = std::make_unsigned_t<T>;
  using S = std::make_signed_t<T>;
  constexpr U kBits = sizeof(T) * 8;
  U amount = static_cast<U>(b);
  if (op == BinaryOp::kShiftLeft) return amount >= kBits ? T(0) : static_cast<T>(static_cast<U>(a) << amount);
  if (op == BinaryOp::kShiftRightLogical) return amount >= kBits ? T(0) : static_cast<T>(static_cast<U>(a) >> amount);
  // Arithmetic: the sign bit of the operand's bit pattern fills in (unsigned types too).
  S s = static_cast<S>(a);
  if (amount >= kBits) return static_cast<T>(s < 0 ? S(-1) : S(0));
  return static_cast<T>(static_cast<S>(s >> amount));
}

}  // namespace

template <typename T>
T ApplyUnary(UnaryOp op, T x) {
  if constexpr (kIsFloat<T>) {
    switch (op) {
      case UnaryOp::kAbs: return ClearSign(x);
      case UnaryOp::kNegate: return FlipSign(x);
      case UnaryOp::kSign: return std::isnan(x) || x == 0.0f ? x : (x > 0 ? 1.0f : -1.0f);
      case UnaryOp::kFloor: return std::floor(x);
      case UnaryOp::kCeil: return std::ceil(x);
      case UnaryOp::kRoundNearestEven: return RoundNearestEven(x);
      case UnaryOp::kExp: return crmath::Exp(x);
      case UnaryOp::kExpm1: return crmath::Expm1(x);
      case UnaryOp::kLog: return crmath::Log(x);
      case UnaryOp::kLog1p: return crmath::Log1p(x);
      case UnaryOp::kTanh: return crmath::Tanh(x);
      case UnaryOp::kLogistic: return crmath::Logistic(x);
      case UnaryOp::kSqrt: return std::sqrt(x);  // IEEE: correctly rounded
      case UnaryOp::kRsqrt: return crmath::Rsqrt(x);
      case UnaryOp::kErf: return crmath::Erf(x);
      case UnaryOp::kNot: return x;  // rejected by the verifier
    }
    return x;
  } else if constexpr (kIsPred<T>) {
    return op == UnaryOp::kNot ? static_cast<T>(!x) : x;
  } else {
    switch (op) {
      case UnaryOp::kAbs:
        if constexpr (std::is_signed_v<T>) return x < 0 ? WrapSub<T>(0, x) : x;
        return x;
      case UnaryOp::kNegate: return WrapSub<T>(0, x);
      case UnaryOp::kSign:
        if constexpr (std::is_signed_v<T>) return static_cast<T>(x > 0 ? 1 : x < 0 ? -1 : 0);
        return static_cast<T>(x > 0 ? 1 : 0);
      case UnaryOp::kNot: return static_cast<T>(~x);
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
      case UnaryOp::kErf: return x;  // float-only ops; rejected by the verifier
    }
    return x;
  }
}

template <typename T>
T ApplyBinary(BinaryOp op, T a, T b) {
  if constexpr (kIsFloat<T>) {
    switch (op) {
      case BinaryOp::kAdd: return a + b;
      case BinaryOp::kSubtract: return a - b;
      case BinaryOp::kMultiply: return a * b;
      case BinaryOp::kDivide: return a / b;
      case BinaryOp::kRemainder: return std::fmod(a, b);  // exact
      case BinaryOp::kMaximum: return FloatMax(a, b, true);
      case BinaryOp::kMinimum: return FloatMax(a, b, false);
      case BinaryOp::kPower: return crmath::Pow(a, b);
      case BinaryOp::kAnd:
      case BinaryOp::kOr:
      case BinaryOp::kXor:
      case BinaryOp::kShiftLeft:
      case BinaryOp::kShiftRightLogical:
      case BinaryOp::kShiftRightArithmetic: return a;  // rejected by the verifier
    }
    return a;
  } else if constexpr (kIsPred<T>) {
    switch (op) {
      case BinaryOp::kAnd:
      case BinaryOp::kMinimum: return static_cast<T>(a & b);
      case BinaryOp::kOr:
      case BinaryOp::kMaximum: return static_cast<T>(a | b);
      case BinaryOp::kXor: return static_cast<T>(a ^ b);
      case BinaryOp::kAdd:
      case BinaryOp::kSubtract:
      case BinaryOp::kMultiply:
      case BinaryOp::kDivide:
      case BinaryOp::kRemainder:
      case BinaryOp::kPower:
      case BinaryOp::kShiftLeft:
      case BinaryOp::kShiftRightLogical:
      case BinaryOp::kShiftRightArithmetic: return a;  // rejected by the verifier
    }
    return a;
  } else {
    switch (op) {
      case BinaryOp::kAdd: return WrapAdd(a, b);
      case BinaryOp::kSubtract: return WrapSub(a, b);
      case BinaryOp::kMultiply: return WrapMul(a, b);
      case BinaryOp::kDivide: return IntDivide(a, b);
      case BinaryOp::kRemainder: return IntRemainder(a, b);
      case BinaryOp::kMaximum: return a > b ? a : b;
      case BinaryOp::kMinimum: return a < b ? a : b;
      case BinaryOp::kPower: return IntPower(a, b);
      case BinaryOp::kAnd: return static_cast<T>(a & b);
      case BinaryOp::kOr: return static_cast<T>(a | b);
      case BinaryOp::kXor: return static_cast<T>(a ^ b);
      case BinaryOp::kShiftLeft:
      case BinaryOp::kShiftRightLogical:
      case BinaryOp::kShiftRightArithmetic: return Shift(op, a, b);
    }
    return a;
  }
}

#define DETRAIN_X(e, s, T, k)                          \
  template T ApplyUnary<T>(UnaryOp op, T x);           \
  template T ApplyBinary<T>(BinaryOp op, T a, T b);
DETRAIN_ELEMENT_TYPES(DETRAIN_X)
#undef DETRAIN_X

}  // namespace detrain::interp::internal
