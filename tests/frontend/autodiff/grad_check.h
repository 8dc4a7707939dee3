// Gradient-check harness for the autodiff tests: builds a scalar test function
// f(params) = sum(W * body(params)) with fixed pseudo-random weights W (so every output
// element gets a different cotangent), differentiates it with ValueAndGrad, and compares the
// IR gradient (run on the reference interpreter) with central finite differences of f (also
// run on the interpreter).
//
// Tolerance: |ad - fd| <= kAtol + kRtol * |fd|, with h = 1e-2 by default. Inputs are smooth and
// O(1), kept more than h away from kinks and ties. Truncation error of the central difference
// is h^2/6 * |f'''| <~ 2e-4 for these bodies; the rounding error of f32 evaluation (f is an
// f32 sum of <= 100 terms of size <= ~5, so |err f| <~ 100 * 5 * 6e-8 = 3e-5) divided by 2h
// adds <~ 1.5e-3 in the worst case and ~1e-5 typically. So kAtol = 2e-3 and kRtol = 1e-2. A
// self-test shows the check rejects a gradient that is off by 5%.
//
// Thread safety: test-only, single thread. Deterministic: fixed seeds.
#ifndef DETRAIN_TESTS_FRONTEND_AUTODIFF_GRAD_CHECK_H_
#define DETRAIN_TESTS_FRONTEND_AUTODIFF_GRAD_CHECK_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <vector>

#include "compiler/ir/builder.h"
#include "frontend/emit.h"

namespace detrain::testing {

constexpr double kAtol = 2e-3;
constexpr double kRtol = 1e-2;

struct GradCase {
  std::unique_ptr<ir::Module> module;
  ir::Computation* f = nullptr;
  std::vector<ir::Literal> args;
};

using BodyFn =
    std::function<ir::Instruction*(frontend::Emitter& e, const std::vector<ir::Instruction*>& p)>;

// f(args) = sum(W * body(params)); parameters get the args' shapes.
GradCase MakeCase(std::vector<ir::Literal> args, const BodyFn& body, uint32_t seed = 7);

// Pseudo-random f32 literals (std::mt19937 is specified bit for bit by the standard).
ir::Literal Uniform(std::vector<int64_t> dims, double lo, double hi, uint32_t seed);
// Magnitudes in [lo, hi] with random signs: values stay at least lo away from 0.
ir::Literal SignedAwayFromZero(std::vector<int64_t> dims, double lo, double hi, uint32_t seed);
ir::Literal F32(std::vector<int64_t> dims, const std::vector<float>& values);
ir::Literal S32(std::vector<int64_t> dims, const std::vector<int32_t>& values);

// Evaluates computation `c` of `m` on the interpreter (temporarily making it the entry).
ir::Literal Eval(ir::Module& m, ir::Computation* c, const std::vector<ir::Literal>& args);

struct GradResult {
  ir::Literal value;               // element 0 of ValueAndGrad's tuple
  std::vector<ir::Literal> grads;  // elements 1..
};
// Runs ValueAndGrad (expecting success and a module that verifies) and evaluates it.
GradResult ValueAndGradOf(GradCase& c, const std::vector<int64_t>& wrt);

struct CheckOptions {
  std::vector<int64_t> wrt;  // empty: every f32 parameter
  double h = 1e-2;
  double scale = 1.0;       // multiplies the AD gradient (1 except in the checker's self-test)
  bool quiet = false;       // do not report mismatches as gtest failures
  int64_t max_checked = 0;  // > 0: about that many evenly strided elements per parameter
  double atol = kAtol;
};

// The full check: value bitwise equal to interp(f); every checked gradient element within
// atol + kRtol * |fd| of the central difference. Returns the number of mismatches.
int CheckGradients(GradCase& c, const CheckOptions& options = {});

}  // namespace detrain::testing

#endif  // DETRAIN_TESTS_FRONTEND_AUTODIFF_GRAD_CHECK_H_
