// The exact GEMM (src/runtime/cpu/gemm.h) in GFLOP/s (docs/benchmarks.md "GEMM"): 1024^3 and
// the shapes of the MLP train step (bench/mlp/train.dt: batch 256 in 8 shards of 32 rows), per
// ISA path and thread count. Arguments: m, n, k, threads, ISA (0 scalar, 1 AVX2, 2 AVX-512), B
// transposed (1: B is read as the transpose of an n x k row-major matrix). Before timing, the
// result is checked element by element against semantics::FmaChain (the contract's order).
// BM_GemmTree: the shard tree of a weight gradient (GemmTree), likewise checked. BM_FmaPeak: the
// core's fp32 FMA peak, the yardstick for the GEMM's fraction of peak.
#include <benchmark/benchmark.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <cstring>
#include <initializer_list>
#include <vector>

#include "base/isa.h"
#include "base/thread_pool.h"
#include "compiler/semantics/orders.h"
#include "runtime/cpu/gemm.h"

namespace detrain::runtime::cpu {
namespace {

// Fills the vectors in order from one linear congruential sequence: values in [-1, 1).
void FillRandom(std::initializer_list<std::vector<float>*> vectors) {
  uint32_t x = 12345;
  for (std::vector<float>* v : vectors) {
    for (float& e : *v) {
      x = x * 1664525u + 1013904223u;
      e = static_cast<float>(static_cast<int32_t>(x >> 8) - (1 << 23)) / (1 << 23);
    }
  }
}

#if defined(__x86_64__) && !defined(__clang__)
// The machine's fp32 FMA peak on one core (the yardstick of docs/benchmarks.md): 24 independent
// accumulators of 16 lanes, each step one vfmadd per accumulator, operands in registers, so
// nothing but the FMA units limits it. 2 x 16 x 24 flops per iteration.
__attribute__((target("avx512f,fma"))) float FmaPeakLoop(int64_t iterations) {
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
  __m512 c0, c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11, c12, c13, c14, c15, c16, c17, c18, c19,
      c20, c21, c22, c23;
  c0 = _mm512_set1_ps(1.000f);
  c1 = _mm512_set1_ps(1.001f);
  c2 = _mm512_set1_ps(1.002f);
  c3 = _mm512_set1_ps(1.003f);
  c4 = _mm512_set1_ps(1.004f);
  c5 = _mm512_set1_ps(1.005f);
  c6 = _mm512_set1_ps(1.006f);
  c7 = _mm512_set1_ps(1.007f);
  c8 = _mm512_set1_ps(1.008f);
  c9 = _mm512_set1_ps(1.009f);
  c10 = _mm512_set1_ps(1.010f);
  c11 = _mm512_set1_ps(1.011f);
  c12 = _mm512_set1_ps(1.012f);
  c13 = _mm512_set1_ps(1.013f);
  c14 = _mm512_set1_ps(1.014f);
  c15 = _mm512_set1_ps(1.015f);
  c16 = _mm512_set1_ps(1.016f);
  c17 = _mm512_set1_ps(1.017f);
  c18 = _mm512_set1_ps(1.018f);
  c19 = _mm512_set1_ps(1.019f);
  c20 = _mm512_set1_ps(1.020f);
  c21 = _mm512_set1_ps(1.021f);
  c22 = _mm512_set1_ps(1.022f);
  c23 = _mm512_set1_ps(1.023f);
  for (int64_t it = 0; it < iterations; ++it) {
    c0 = _mm512_fmadd_ps(c0, a, b);
    c1 = _mm512_fmadd_ps(c1, a, b);
    c2 = _mm512_fmadd_ps(c2, a, b);
    c3 = _mm512_fmadd_ps(c3, a, b);
    c4 = _mm512_fmadd_ps(c4, a, b);
    c5 = _mm512_fmadd_ps(c5, a, b);
    c6 = _mm512_fmadd_ps(c6, a, b);
    c7 = _mm512_fmadd_ps(c7, a, b);
    c8 = _mm512_fmadd_ps(c8, a, b);
    c9 = _mm512_fmadd_ps(c9, a, b);
    c10 = _mm512_fmadd_ps(c10, a, b);
    c11 = _mm512_fmadd_ps(c11, a, b);
    c12 = _mm512_fmadd_ps(c12, a, b);
    c13 = _mm512_fmadd_ps(c13, a, b);
    c14 = _mm512_fmadd_ps(c14, a, b);
    c15 = _mm512_fmadd_ps(c15, a, b);
    c16 = _mm512_fmadd_ps(c16, a, b);
    c17 = _mm512_fmadd_ps(c17, a, b);
    c18 = _mm512_fmadd_ps(c18, a, b);
    c19 = _mm512_fmadd_ps(c19, a, b);
    c20 = _mm512_fmadd_ps(c20, a, b);
    c21 = _mm512_fmadd_ps(c21, a, b);
    c22 = _mm512_fmadd_ps(c22, a, b);
    c23 = _mm512_fmadd_ps(c23, a, b);
    // Opaque to the optimizer, so every fma stays in the loop, in registers.
    asm volatile("" : "+v"(c0), "+v"(c1), "+v"(c2), "+v"(c3), "+v"(c4), "+v"(c5));
    asm volatile("" : "+v"(c6), "+v"(c7), "+v"(c8), "+v"(c9), "+v"(c10), "+v"(c11));
    asm volatile("" : "+v"(c12), "+v"(c13), "+v"(c14), "+v"(c15), "+v"(c16), "+v"(c17));
    asm volatile("" : "+v"(c18), "+v"(c19), "+v"(c20), "+v"(c21), "+v"(c22), "+v"(c23));
  }
  const __m512 all[24] = {c0,  c1,  c2,  c3,  c4,  c5,  c6,  c7,  c8,  c9,  c10, c11,
                          c12, c13, c14, c15, c16, c17, c18, c19, c20, c21, c22, c23};
  __m512 sum = all[0];
  for (int i = 1; i < 24; ++i) sum = _mm512_add_ps(sum, all[i]);
  float out[16];
  _mm512_storeu_ps(out, sum);
  return out[0];
}

void BM_FmaPeak(benchmark::State& state) {
  if (ClampIsa(Isa::kAvx512) != Isa::kAvx512) {
    state.SkipWithError("no AVX-512 here");
    return;
  }
  constexpr int64_t kIterations = 1 << 20;
  for (auto _ : state) benchmark::DoNotOptimize(FmaPeakLoop(kIterations));
  state.counters["GFLOPs"] = benchmark::Counter(static_cast<double>(kIterations) * 2 * 16 * 24,
                                                benchmark::Counter::kIsIterationInvariantRate,
                                                benchmark::Counter::kIs1000);
}
BENCHMARK(BM_FmaPeak)->UseRealTime();
#endif

void BM_Gemm(benchmark::State& state) {
  const int64_t m = state.range(0), n = state.range(1), k = state.range(2);
  const int threads = static_cast<int>(state.range(3));
  const Isa isa = static_cast<Isa>(state.range(4));
  const bool bt = state.range(5) != 0;
  if (ClampIsa(isa) != isa) {
    state.SkipWithError("ISA not supported here");
    return;
  }
  std::vector<float> a(static_cast<size_t>(m * k)), b(static_cast<size_t>(k * n)),
      c(static_cast<size_t>(m * n));
  FillRandom({&a, &b});
  ThreadPool pool(static_cast<size_t>(threads));
  ExecContext ctx{&pool, isa};
  MatrixView va{a.data(), k, 1, 0};
  MatrixView vb = bt ? MatrixView{b.data(), 1, k, 0} : MatrixView{b.data(), n, 1, 0};
  BatchedGemm(va, vb, c.data(), 1, m, n, k, ctx);
  for (int64_t i = 0; i < m; i += 7) {
    for (int64_t j = 0; j < n; ++j) {
      const float want =
          semantics::FmaChain(a.data() + i * k, 1, b.data() + (bt ? j * k : j), bt ? 1 : n, k);
      if (std::memcmp(&want, &c[static_cast<size_t>(i * n + j)], 4) != 0) {
        state.SkipWithError("GEMM result differs from the fma chain");
        return;
      }
    }
  }
  for (auto _ : state) {
    BatchedGemm(va, vb, c.data(), 1, m, n, k, ctx);
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  state.counters["GFLOPs"] = benchmark::Counter(static_cast<double>(2 * m * n * k),
                                                benchmark::Counter::kIsIterationInvariantRate,
                                                benchmark::Counter::kIs1000);
}

// {m, n, k, threads, isa, transposed B}
void Shapes(benchmark::internal::Benchmark* b) {
  for (int isa : {2, 1}) {
    for (int t : {1, 2}) {
      b->Args({1024, 1024, 1024, t, isa, 0});
      b->Args({256, 1024, 784, t, isa, 0});   // forward, whole batch
      b->Args({32, 1024, 784, t, isa, 0});    // forward, one shard
      b->Args({32, 1024, 1024, t, isa, 1});   // input gradient: dY W^T
      b->Args({256, 1024, 1024, t, isa, 1});  // input gradient, whole batch
      b->Args({784, 1024, 32, t, isa, 0});    // weight gradient of one shard (k = 32)
      b->Args({784, 1024, 256, t, isa, 0});   // weight gradient, whole batch
      // The 25M MLP of issue 37 (bench/memory/gen.py, batch 128): w2's forward and input
      // gradient, a 4096 x 4096 weight streamed from memory.
      b->Args({128, 4096, 4096, t, isa, 0});
      b->Args({128, 4096, 4096, t, isa, 1});
      // Products of at most 16 columns (the narrow tile on AVX-512): the digits CNN's first
      // convolution's input gradient (1024 positions, 16 features, 3 x 3 x 32 taps) and the
      // MLP's classifier (10 classes).
      b->Args({1024, 16, 288, t, isa, 0});
      b->Args({256, 10, 1024, t, isa, 0});
      // charlm's merged products (32 x 32 rows, width 64, MLP 256): the up projection (k = 64)
      // and its input gradient dY W_up^T (k = 256), the down projection (k = 256) and its input
      // gradient (k = 64).
      b->Args({1024, 256, 64, t, isa, 0});
      b->Args({1024, 64, 256, t, isa, 1});
      b->Args({1024, 64, 256, t, isa, 0});
      b->Args({1024, 256, 64, t, isa, 1});
    }
  }
}

BENCHMARK(BM_Gemm)->Apply(Shapes)->ArgNames({"m", "n", "k", "t", "isa", "bt"})->UseRealTime();

// The shard tree of a weight gradient as the train step computes it (GemmTree): S leaves
// x_s^T dy_s of k rows each (x_s: k x m, dy_s: k x n, row-major), added pairwise by shard. Checked
// first against the leaves' chains added by the same tree. Arguments: m, n, k per shard, shards,
// threads, ISA.
void BM_GemmTree(benchmark::State& state) {
  const int64_t m = state.range(0), n = state.range(1), k = state.range(2), shards = state.range(3);
  const int threads = static_cast<int>(state.range(4));
  const Isa isa = static_cast<Isa>(state.range(5));
  if (ClampIsa(isa) != isa) {
    state.SkipWithError("ISA not supported here");
    return;
  }
  std::vector<float> x(static_cast<size_t>(shards * k * m)),
      dy(static_cast<size_t>(shards * k * n)), c(static_cast<size_t>(m * n));
  FillRandom({&x, &dy});
  std::vector<GemmLeaf> leaves;
  for (int64_t s = 0; s < shards; ++s) {
    leaves.push_back({MatrixView{x.data() + s * k * m, 1, m, 0},
                      MatrixView{dy.data() + s * k * n, n, 1, 0}, k, false});
  }
  std::vector<TreeStep> steps;  // pairwise by shard, level by level
  for (int64_t width = 1; width < shards; width *= 2) {
    for (int64_t s = 0; s + width < shards; s += 2 * width) {
      TreeStep step;
      step.dst = static_cast<int32_t>(s);
      step.src = static_cast<int32_t>(s + width);
      steps.push_back(step);
    }
  }
  ThreadPool pool(static_cast<size_t>(threads));
  ExecContext ctx{&pool, isa};
  GemmTree(leaves.data(), shards, steps.data(), static_cast<int64_t>(steps.size()), 0, c.data(), m,
           n, ctx);
  std::vector<float> values(static_cast<size_t>(shards));
  for (int64_t i = 0; i < m; i += 7) {
    for (int64_t j = 0; j < n; ++j) {
      for (int64_t s = 0; s < shards; ++s) {
        values[static_cast<size_t>(s)] =
            semantics::FmaChain(x.data() + s * k * m + i, m, dy.data() + s * k * n + j, n, k);
      }
      for (const TreeStep& step : steps) values[step.dst] = values[step.dst] + values[step.src];
      if (std::memcmp(&values[0], &c[static_cast<size_t>(i * n + j)], 4) != 0) {
        state.SkipWithError("GemmTree result differs from the chains added by the tree");
        return;
      }
    }
  }
  for (auto _ : state) {
    GemmTree(leaves.data(), shards, steps.data(), static_cast<int64_t>(steps.size()), 0, c.data(),
             m, n, ctx);
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  state.counters["GFLOPs"] = benchmark::Counter(static_cast<double>(2 * m * n * k * shards),
                                                benchmark::Counter::kIsIterationInvariantRate,
                                                benchmark::Counter::kIs1000);
}

void TreeShapes(benchmark::internal::Benchmark* b) {
  for (int isa : {2, 1}) {
    for (int t : {1, 2}) {
      b->Args({784, 1024, 32, 8, t, isa});   // the MLP's w1 gradient
      b->Args({1024, 1024, 32, 8, t, isa});  // w2
      b->Args({64, 256, 128, 8, t, isa});    // charlm's w_up (8 shards of 4 x 32 positions)
      b->Args({256, 64, 128, 8, t, isa});    // w_down
    }
  }
}

BENCHMARK(BM_GemmTree)
    ->Apply(TreeShapes)
    ->ArgNames({"m", "n", "k", "shards", "t", "isa"})
    ->UseRealTime();

}  // namespace
}  // namespace detrain::runtime::cpu

BENCHMARK_MAIN();
