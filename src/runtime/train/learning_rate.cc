// See learning_rate.h.
#include "runtime/train/learning_rate.h"

#include <algorithm>
#include <cmath>

namespace detrain::runtime {

using frontend::ScheduleConfig;
using frontend::ScheduleKind;
namespace {

constexpr double kPi = 3.141592653589793;  // the binary64 nearest to pi

// Taylor polynomials on |z| <= pi/4, evaluated by Horner in a fixed order. Truncation error is
// below z^22/22! (cos) and z^21/21! (sin), i.e. < 2^-70 there. The coefficients are constant
// expressions, rounded correctly by the compiler.
double CosTaylor(double z) {
  static constexpr double kC[] = {1.0 / 6402373705728000.0,
                                  1.0 / 20922789888000.0,
                                  1.0 / 87178291200.0,
                                  1.0 / 479001600.0,
                                  1.0 / 3628800.0,
                                  1.0 / 40320.0,
                                  1.0 / 720.0,
                                  1.0 / 24.0,
                                  1.0 / 2.0,
                                  1.0};  // 1/18!, 1/16!, ..., 1/0!
  double z2 = z * z;
  double p = 1.0 / 2432902008176640000.0;  // 1/20!
  for (double c : kC) p = c - z2 * p;
  return p;
}

double SinTaylor(double z) {
  static constexpr double kS[] = {1.0 / 355687428096000.0,
                                  1.0 / 1307674368000.0,
                                  1.0 / 6227020800.0,
                                  1.0 / 39916800.0,
                                  1.0 / 362880.0,
                                  1.0 / 5040.0,
                                  1.0 / 120.0,
                                  1.0 / 6.0,
                                  1.0};  // 1/17!, 1/15!, ..., 1/1!
  double z2 = z * z;
  double p = 1.0 / 121645100408832000.0;  // 1/19!
  for (double c : kS) p = c - z2 * p;
  return z * p;
}

// optax.polynomial_schedule with power 1 (linear_schedule).
double Linear(double init, double end, int64_t steps, int64_t step) {
  if (steps <= 0) return init;
  double count = static_cast<double>(std::clamp<int64_t>(step, 0, steps));
  double frac = 1.0 - count / static_cast<double>(steps);
  return (init - end) * frac + end;
}

// optax.cosine_decay_schedule with exponent 1.
double Cosine(double init, int64_t decay_steps, double alpha, int64_t step) {
  double count = static_cast<double>(std::min(step, decay_steps));
  double cosine = 0.5 * (1.0 + CosPi(count / static_cast<double>(decay_steps)));
  return init * ((1.0 - alpha) * cosine + alpha);
}

}  // namespace

double CosPi(double x) {
  // cos(pi x) = -cos(pi (1 - x)); 1 - x is exact for x in [0.5, 1] (Sterbenz).
  double sign = 1.0;
  if (x > 0.5) {
    x = 1.0 - x;
    sign = -1.0;
  }
  // Now x in [0, 0.5]; for x > 0.25 use cos(pi x) = sin(pi (0.5 - x)), 0.5 - x exact.
  double r = x <= 0.25 ? CosTaylor(kPi * x) : SinTaylor(kPi * (0.5 - x));
  return sign * r;
}

float LearningRateAt(const ScheduleConfig& s, int64_t step) {
  double v = 0;
  switch (s.kind) {
    case ScheduleKind::kConstant:
      v = s.value;
      break;
    case ScheduleKind::kLinear:
      v = Linear(s.init, s.end, s.steps, step);
      break;
    case ScheduleKind::kCosineDecay:
      v = Cosine(s.init, s.decay_steps, s.alpha, step);
      break;
    case ScheduleKind::kWarmupCosineDecay:
      // optax.warmup_cosine_decay_schedule: join(linear(init, peak, warmup),
      // cosine_decay(peak, decay_steps - warmup, alpha = end / peak)) at boundary warmup.
      if (step < s.warmup_steps) {
        v = Linear(s.init, s.peak, s.warmup_steps, step);
      } else {
        double alpha = s.peak == 0 ? 0.0 : s.end / s.peak;
        v = Cosine(s.peak, s.decay_steps - s.warmup_steps, alpha, step - s.warmup_steps);
      }
      break;
  }
  return static_cast<float>(v);
}

}  // namespace detrain::runtime
