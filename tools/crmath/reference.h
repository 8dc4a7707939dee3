// Correctly rounded float32 reference values for the verifier (docs/math.md §5). A reference is
// first computed from glibc's binary64 function (error < 4 ulp of binary64 = 2^-50 relative, per
// glibc's documented ulps); when that value lies within kNearRel = 2^-40 relative of a float
// rounding boundary, the result is decided by MPFR instead (200-bit evaluation, then an exact
// comparison against the float midpoints). Thread-safe: MPFR variables are thread_local.
#ifndef DETRAIN_TOOLS_CRMATH_REFERENCE_H_
#define DETRAIN_TOOLS_CRMATH_REFERENCE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/isa.h"

namespace detrain::crmath_verify {

enum class Fn {
  kExp,
  kExpm1,
  kExp2,
  kLog,
  kLog1p,
  kLog2,
  kTanh,
  kLogistic,
  kErf,
  kRsqrt,
  kPow,
  kSin,
  kCos
};

struct FnInfo {
  Fn fn;
  const char* name;
  float (*ours)(float);  // nullptr for pow
  float (*slow)(float);  // the accurate path alone (internal::FSlow); nullptr for pow
  // FArrayIsa: the array variant on a chosen implementation; nullptr for pow (PowArrayIsa) and
  // for sin and cos, which have none (the CPU backend maps the scalar function).
  void (*array)(Isa isa, const float* in, float* out, size_t n);
};

// The thirteen functions in a fixed order.
const std::vector<FnInfo>& AllFunctions();

// The correctly rounded float of fn(x) (fn(x, y) for pow). *used_mpfr tells which path decided.
float Reference(Fn fn, float x, float y, bool* used_mpfr);

// Same result bits, treating every NaN as equal to every other NaN.
bool SameFloat(float a, float b);

uint32_t Bits(float x);
float FromBits(uint32_t u);

}  // namespace detrain::crmath_verify

#endif  // DETRAIN_TOOLS_CRMATH_REFERENCE_H_
