// bench_math: single-thread time per call of detrain's correctly rounded float32 functions
// (src/base/math/crmath.h) against glibc's expf, expm1f, logf, log1pf, tanhf and powf on the same
// inputs, (a) as a scalar call per element and (b) as an array loop (our *Array variants, which
// dispatch to the best implementation for the CPU, vs a plain loop over the glibc function);
// `*_crmath_array_{portable,avx2,avx512}` force one implementation (skipped if unsupported). Inputs
// are fixed pseudo-random values in typical ML ranges, so runs are comparable. Results:
// docs/benchmarks.md ("math").
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "base/math/crmath.h"

namespace {

namespace cr = detrain::crmath;
constexpr size_t kN = 4096;

std::vector<float> Inputs(float lo, float hi, uint64_t seed) {
  std::vector<float> v(kN);
  uint64_t s = seed;
  for (float& x : v) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    double u = static_cast<double>(s >> 11) * 0x1p-53;
    x = static_cast<float>(lo + (hi - lo) * u);
  }
  return v;
}

struct Range {
  float lo, hi;
};
// Input ranges: exp-like functions over [-20, 20] (activations, softmax), logs over (0, 100].
constexpr Range kExpRange{-20.0f, 20.0f};
constexpr Range kLogRange{1e-3f, 100.0f};
constexpr Range kLog1pRange{-0.9f, 100.0f};
constexpr Range kTanhRange{-6.0f, 6.0f};

template <float (*F)(float)>
void Scalar(benchmark::State& state, Range r) {
  std::vector<float> in = Inputs(r.lo, r.hi, 1), out(kN);
  for (auto _ : state) {
    for (size_t i = 0; i < kN; ++i) out[i] = F(in[i]);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * kN);
}

template <void (*F)(const float*, float*, size_t)>
void Array(benchmark::State& state, Range r) {
  std::vector<float> in = Inputs(r.lo, r.hi, 1), out(kN);
  for (auto _ : state) {
    F(in.data(), out.data(), kN);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * kN);
}

// Our array variant forced onto one implementation.
template <void (*F)(detrain::Isa, const float*, float*, size_t), detrain::Isa I>
void ArrayIsa(benchmark::State& state, Range r) {
  if (!detrain::IsaSupported(I)) {
    state.SkipWithError("this CPU lacks the instruction set");
    return;
  }
  std::vector<float> in = Inputs(r.lo, r.hi, 1), out(kN);
  for (auto _ : state) {
    F(I, in.data(), out.data(), kN);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * kN);
}

// glibc's "array" form: the loop a caller would write (vectorized only if the compiler can).
template <float (*F)(float)>
void GlibcLoop(const float* in, float* out, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = F(in[i]);
}

float GlibcExp(float x) { return expf(x); }
float GlibcExpm1(float x) { return expm1f(x); }
float GlibcLog(float x) { return logf(x); }
float GlibcLog1p(float x) { return log1pf(x); }
float GlibcTanh(float x) { return tanhf(x); }

void PowScalar(benchmark::State& state, bool ours) {
  std::vector<float> x = Inputs(0.01f, 10.0f, 1), y = Inputs(-8.0f, 8.0f, 2), out(kN);
  for (auto _ : state) {
    if (ours) {
      for (size_t i = 0; i < kN; ++i) out[i] = cr::Pow(x[i], y[i]);
    } else {
      for (size_t i = 0; i < kN; ++i) out[i] = powf(x[i], y[i]);
    }
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * kN);
}
// PowArray dispatched (isa = nullptr) or forced onto one implementation.
void PowArray(benchmark::State& state, const detrain::Isa* isa) {
  if (isa != nullptr && !detrain::IsaSupported(*isa)) {
    state.SkipWithError("this CPU lacks the instruction set");
    return;
  }
  std::vector<float> x = Inputs(0.01f, 10.0f, 1), y = Inputs(-8.0f, 8.0f, 2), out(kN);
  for (auto _ : state) {
    if (isa == nullptr) {
      cr::PowArray(x.data(), y.data(), out.data(), kN);
    } else {
      cr::PowArrayIsa(*isa, x.data(), y.data(), out.data(), kN);
    }
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * kN);
}
constexpr detrain::Isa kPortable = detrain::Isa::kScalar, kAvx2 = detrain::Isa::kAvx2,
                       kAvx512 = detrain::Isa::kAvx512;

// Our array variant: dispatched, then each implementation.
#define DETRAIN_BENCH_ARRAYS(name, ours, range)                                       \
  void name##_crmath_array(benchmark::State& s) { Array<cr::ours##Array>(s, range); } \
  void name##_crmath_array_portable(benchmark::State& s) {                            \
    ArrayIsa<cr::ours##ArrayIsa, detrain::Isa::kScalar>(s, range);                    \
  }                                                                                   \
  void name##_crmath_array_avx2(benchmark::State& s) {                                \
    ArrayIsa<cr::ours##ArrayIsa, detrain::Isa::kAvx2>(s, range);                      \
  }                                                                                   \
  void name##_crmath_array_avx512(benchmark::State& s) {                              \
    ArrayIsa<cr::ours##ArrayIsa, detrain::Isa::kAvx512>(s, range);                    \
  }                                                                                   \
  BENCHMARK(name##_crmath_array);                                                     \
  BENCHMARK(name##_crmath_array_portable);                                            \
  BENCHMARK(name##_crmath_array_avx2);                                                \
  BENCHMARK(name##_crmath_array_avx512);

#define DETRAIN_BENCH_FN(name, ours, glibc, range)                                   \
  void name##_crmath(benchmark::State& s) { Scalar<cr::ours>(s, range); }            \
  void name##_glibc(benchmark::State& s) { Scalar<glibc>(s, range); }                \
  void name##_glibc_loop(benchmark::State& s) { Array<GlibcLoop<glibc>>(s, range); } \
  BENCHMARK(name##_crmath);                                                          \
  BENCHMARK(name##_glibc);                                                           \
  DETRAIN_BENCH_ARRAYS(name, ours, range)                                            \
  BENCHMARK(name##_glibc_loop);

DETRAIN_BENCH_FN(exp, Exp, GlibcExp, kExpRange)
DETRAIN_BENCH_FN(expm1, Expm1, GlibcExpm1, kExpRange)
DETRAIN_BENCH_FN(log, Log, GlibcLog, kLogRange)
DETRAIN_BENCH_FN(log1p, Log1p, GlibcLog1p, kLog1pRange)
DETRAIN_BENCH_FN(tanh, Tanh, GlibcTanh, kTanhRange)
void pow_crmath(benchmark::State& s) { PowScalar(s, true); }
// pow_glibc is also the glibc loop for the array comparison: the same loop over powf.
void pow_glibc(benchmark::State& s) { PowScalar(s, false); }
void pow_crmath_array(benchmark::State& s) { PowArray(s, nullptr); }
void pow_crmath_array_portable(benchmark::State& s) { PowArray(s, &kPortable); }
void pow_crmath_array_avx2(benchmark::State& s) { PowArray(s, &kAvx2); }
void pow_crmath_array_avx512(benchmark::State& s) { PowArray(s, &kAvx512); }
BENCHMARK(pow_crmath);
BENCHMARK(pow_glibc);
BENCHMARK(pow_crmath_array);
BENCHMARK(pow_crmath_array_portable);
BENCHMARK(pow_crmath_array_avx2);
BENCHMARK(pow_crmath_array_avx512);

// Functions without a glibc float counterpart in the goal list, for reference.
#define DETRAIN_BENCH_OURS(name, ours, range)                             \
  void name##_crmath(benchmark::State& s) { Scalar<cr::ours>(s, range); } \
  BENCHMARK(name##_crmath);
#define DETRAIN_BENCH_OURS_ARRAYS(name, ours, range) \
  DETRAIN_BENCH_OURS(name, ours, range)              \
  DETRAIN_BENCH_ARRAYS(name, ours, range)
DETRAIN_BENCH_OURS_ARRAYS(exp2, Exp2, kExpRange)
DETRAIN_BENCH_OURS_ARRAYS(log2, Log2, kLogRange)
DETRAIN_BENCH_OURS_ARRAYS(logistic, Logistic, kExpRange)
DETRAIN_BENCH_OURS_ARRAYS(erf, Erf, kTanhRange)
DETRAIN_BENCH_OURS_ARRAYS(rsqrt, Rsqrt, kLogRange)
DETRAIN_BENCH_OURS(erfinv, Erfinv, (Range{-0.999f, 0.999f}))

// sin and cos (scalar only: no array variants) against glibc's sinf and cosf, over [-10, 10]
// (positional encodings, rotary embeddings) and over [-1e6, 1e6] (the Cody-Waite reduction at
// larger k).
float GlibcSin(float x) { return sinf(x); }
float GlibcCos(float x) { return cosf(x); }
constexpr Range kTrigRange{-10.0f, 10.0f};
constexpr Range kTrigWideRange{-1e6f, 1e6f};
#define DETRAIN_BENCH_SCALAR_PAIR(name, ours, glibc, range)               \
  void name##_crmath(benchmark::State& s) { Scalar<cr::ours>(s, range); } \
  void name##_glibc(benchmark::State& s) { Scalar<glibc>(s, range); }     \
  BENCHMARK(name##_crmath);                                               \
  BENCHMARK(name##_glibc);
DETRAIN_BENCH_SCALAR_PAIR(sin, Sin, GlibcSin, kTrigRange)
DETRAIN_BENCH_SCALAR_PAIR(cos, Cos, GlibcCos, kTrigRange)
DETRAIN_BENCH_SCALAR_PAIR(sin_wide, Sin, GlibcSin, kTrigWideRange)

}  // namespace

BENCHMARK_MAIN();
