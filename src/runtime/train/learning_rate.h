// Learning-rate schedules (optax's formulas; docs/optimizers.md). The schedule is data — the
// frontend's ScheduleConfig, typed in the compile result's configuration —, and the runtime
// evaluates it on the host once per step and passes the value to the train step as an f32 input,
// which is recorded in the step log.
//
// Determinism: the value is computed in binary64 with a fixed sequence of IEEE operations —
// including a cosine of our own (CosPi below, a fixed polynomial evaluation, no libm) — and
// rounded to f32 once, so it is the same on every machine. It is not bit-identical to optax's
// f32 evaluation (XLA's cos and operation order); tests/frontend/optimizer_test.cc measures the
// difference.
//
// Thread safety: pure functions.
#ifndef DETRAIN_RUNTIME_TRAIN_LEARNING_RATE_H_
#define DETRAIN_RUNTIME_TRAIN_LEARNING_RATE_H_

#include <cstdint>

#include "base/status.h"
#include "frontend/run_config.h"

namespace detrain::runtime {

// cos(pi * x) for x in [0, 1], to within a few units of 2^-53.
double CosPi(double x);

// The learning rate for update number `step` (0 for the first update), from the optimizer's
// schedule in the run configuration.
float LearningRateAt(const frontend::ScheduleConfig& schedule, int64_t step);

}  // namespace detrain::runtime

#endif  // DETRAIN_RUNTIME_TRAIN_LEARNING_RATE_H_
