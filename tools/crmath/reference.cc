// Reference values: glibc binary64 with an MPFR fallback near rounding boundaries (reference.h).
#include "tools/crmath/reference.h"

#include <mpfr.h>

#include <cfloat>
#include <cmath>
#include <cstring>

#include "base/math/crmath.h"

namespace detrain::crmath_verify {
namespace {

// glibc's binary64 functions are documented within 1-2 ulp (2^-51 relative) for these functions;
// compositions (logistic, rsqrt) add 3 roundings. 2^-40 leaves a factor > 2^9 of margin.
constexpr double kNearRel = 0x1p-40;
constexpr mpfr_prec_t kPrec = 200;

double DoubleRef(Fn fn, double x, double y) {
  switch (fn) {
    case Fn::kExp:
      return std::exp(x);
    case Fn::kExpm1:
      return std::expm1(x);
    case Fn::kExp2:
      return std::exp2(x);
    case Fn::kLog:
      return std::log(x);
    case Fn::kLog1p:
      return std::log1p(x);
    case Fn::kLog2:
      return std::log2(x);
    case Fn::kTanh:
      return std::tanh(x);
    case Fn::kLogistic:
      return 1.0 / (1.0 + std::exp(-x));
    case Fn::kErf:
      return std::erf(x);
    case Fn::kRsqrt:
      return 1.0 / std::sqrt(x);
    case Fn::kPow:
      return std::pow(x, y);
    case Fn::kSin:
      return std::sin(x);
    case Fn::kCos:
      return std::cos(x);
  }
  return 0;
}

struct MpfrVars {
  mpfr_t v, a, b, mid;
  MpfrVars() { mpfr_inits2(kPrec, v, a, b, mid, static_cast<mpfr_ptr>(nullptr)); }
  ~MpfrVars() {
    mpfr_clears(v, a, b, mid, static_cast<mpfr_ptr>(nullptr));
    mpfr_free_cache2(MPFR_FREE_LOCAL_CACHE);  // this thread's constant caches (LeakSanitizer)
  }
};

// v = fn(x[, y]) at 200 bits (default exponent range: no overflow before the float rounding).
void MpfrEval(Fn fn, float x, float y, MpfrVars& m) {
  mpfr_set_flt(m.a, x, MPFR_RNDN);
  mpfr_set_flt(m.b, y, MPFR_RNDN);
  switch (fn) {
    case Fn::kExp:
      mpfr_exp(m.v, m.a, MPFR_RNDN);
      break;
    case Fn::kExpm1:
      mpfr_expm1(m.v, m.a, MPFR_RNDN);
      break;
    case Fn::kExp2:
      mpfr_exp2(m.v, m.a, MPFR_RNDN);
      break;
    case Fn::kLog:
      mpfr_log(m.v, m.a, MPFR_RNDN);
      break;
    case Fn::kLog1p:
      mpfr_log1p(m.v, m.a, MPFR_RNDN);
      break;
    case Fn::kLog2:
      mpfr_log2(m.v, m.a, MPFR_RNDN);
      break;
    case Fn::kTanh:
      mpfr_tanh(m.v, m.a, MPFR_RNDN);
      break;
    case Fn::kLogistic:
      mpfr_neg(m.a, m.a, MPFR_RNDN);
      mpfr_exp(m.v, m.a, MPFR_RNDN);
      mpfr_add_ui(m.v, m.v, 1, MPFR_RNDN);
      mpfr_ui_div(m.v, 1, m.v, MPFR_RNDN);
      break;
    case Fn::kErf:
      mpfr_erf(m.v, m.a, MPFR_RNDN);
      break;
    case Fn::kRsqrt:
      mpfr_rec_sqrt(m.v, m.a, MPFR_RNDN);
      break;
    case Fn::kPow:
      mpfr_pow(m.v, m.a, m.b, MPFR_RNDN);
      break;
    case Fn::kSin:
      mpfr_sin(m.v, m.a, MPFR_RNDN);
      break;
    case Fn::kCos:
      mpfr_cos(m.v, m.a, MPFR_RNDN);
      break;
  }
}

float NextUp(float f) { return std::nextafter(f, INFINITY); }
float NextDown(float f) { return std::nextafter(f, -INFINITY); }

// Rounds the 200-bit value v to the nearest float (ties to even), exactly: start from the float
// nearest to its double approximation and step while |v| lies beyond a neighbouring midpoint.
float RoundToFloat(MpfrVars& m) {
  if (mpfr_nan_p(m.v)) return NAN;
  bool neg = mpfr_signbit(m.v) != 0;
  mpfr_abs(m.a, m.v, MPFR_RNDN);
  float f = static_cast<float>(mpfr_get_d(m.a, MPFR_RNDN));
  if (std::isinf(f)) f = FLT_MAX;
  for (int step = 0; step < 4 && !std::isinf(f); ++step) {
    bool odd = (Bits(f) & 1u) != 0;
    float up = NextUp(f);
    double up_mid = std::isinf(up) ? 0x1.ffffffp127 : 0.5 * (double(f) + double(up));
    mpfr_set_d(m.mid, up_mid, MPFR_RNDN);
    int c = mpfr_cmp(m.a, m.mid);
    if (c > 0 || (c == 0 && odd)) {
      f = up;
      continue;
    }
    if (f > 0.0f) {
      float dn = NextDown(f);
      mpfr_set_d(m.mid, 0.5 * (double(f) + double(dn)), MPFR_RNDN);
      c = mpfr_cmp(m.a, m.mid);
      if (c < 0 || (c == 0 && odd)) {
        f = dn;
        continue;
      }
    }
    break;
  }
  return neg ? -f : f;
}

}  // namespace

uint32_t Bits(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  return u;
}
float FromBits(uint32_t u) {
  float x;
  std::memcpy(&x, &u, 4);
  return x;
}
bool SameFloat(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return Bits(a) == Bits(b);
}

const std::vector<FnInfo>& AllFunctions() {
  namespace cr = detrain::crmath;
  static const std::vector<FnInfo> fns = {
      {Fn::kExp, "exp", cr::Exp, cr::internal::ExpSlow, cr::ExpArrayIsa},
      {Fn::kExpm1, "expm1", cr::Expm1, cr::internal::Expm1Slow, cr::Expm1ArrayIsa},
      {Fn::kExp2, "exp2", cr::Exp2, cr::internal::Exp2Slow, cr::Exp2ArrayIsa},
      {Fn::kLog, "log", cr::Log, cr::internal::LogSlow, cr::LogArrayIsa},
      {Fn::kLog1p, "log1p", cr::Log1p, cr::internal::Log1pSlow, cr::Log1pArrayIsa},
      {Fn::kLog2, "log2", cr::Log2, cr::internal::Log2Slow, cr::Log2ArrayIsa},
      {Fn::kTanh, "tanh", cr::Tanh, cr::internal::TanhSlow, cr::TanhArrayIsa},
      {Fn::kLogistic, "logistic", cr::Logistic, cr::internal::LogisticSlow, cr::LogisticArrayIsa},
      {Fn::kErf, "erf", cr::Erf, cr::internal::ErfSlow, cr::ErfArrayIsa},
      {Fn::kRsqrt, "rsqrt", cr::Rsqrt, cr::internal::RsqrtSlow, cr::RsqrtArrayIsa},
      {Fn::kPow, "pow", nullptr, nullptr, nullptr},
      {Fn::kSin, "sin", cr::Sin, cr::internal::SinSlow, nullptr},
      {Fn::kCos, "cos", cr::Cos, cr::internal::CosSlow, nullptr}};
  return fns;
}

float Reference(Fn fn, float x, float y, bool* used_mpfr) {
  *used_mpfr = false;
  double r = DoubleRef(fn, x, y);
  if (std::isnan(r)) return NAN;
  if (fn == Fn::kRsqrt && x == 0.0f) return std::signbit(x) ? -INFINITY : INFINITY;
  // 0 and inf in binary64 are exact special results or lie far outside the float range.
  if (std::isinf(r) || r == 0.0) return static_cast<float>(r);
  float a = static_cast<float>(r - std::fabs(r) * kNearRel);
  float b = static_cast<float>(r + std::fabs(r) * kNearRel);
  if (Bits(a) == Bits(b)) return a;
  *used_mpfr = true;
  thread_local MpfrVars vars;
  MpfrEval(fn, x, y, vars);
  return RoundToFloat(vars);
}

}  // namespace detrain::crmath_verify
