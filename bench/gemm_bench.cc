// The exact GEMM (src/runtime/cpu/gemm.h) in GFLOP/s (docs/benchmarks.md "GEMM"): 1024^3 and
// the shapes of the MLP train step (bench/mlp/train.dt: batch 256 in 8 shards of 32 rows), per
// ISA path and thread count. Arguments: m, n, k, threads, ISA (0 scalar, 1 AVX2, 2 AVX-512), B
// transposed (1: B is read as the transpose of an n x k row-major matrix). Before timing, the
// result is checked element by element against semantics::FmaChain (the contract's order).
// BM_GemmTree: the shard tree of a weight gradient (GemmTree), likewise checked.
#include <benchmark/benchmark.h>

#include <cstring>
#include <vector>

#include "base/isa.h"
#include "base/thread_pool.h"
#include "compiler/semantics/orders.h"
#include "runtime/cpu/gemm.h"

namespace detrain::runtime::cpu {
namespace {

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
  uint32_t x = 12345;
  auto next = [&] {
    x = x * 1664525u + 1013904223u;
    return static_cast<float>(static_cast<int32_t>(x >> 8) - (1 << 23)) / (1 << 23);
  };
  for (float& v : a) v = next();
  for (float& v : b) v = next();
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
      b->Args({256, 1024, 784, t, isa, 0});  // forward, whole batch
      b->Args({32, 1024, 784, t, isa, 0});   // forward, one shard
      b->Args({32, 1024, 1024, t, isa, 1});  // input gradient: dY W^T
      b->Args({784, 1024, 32, t, isa, 0});   // weight gradient of one shard (k = 32)
      b->Args({784, 1024, 256, t, isa, 0});  // weight gradient, whole batch
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
  uint32_t seed = 12345;
  auto next = [&] {
    seed = seed * 1664525u + 1013904223u;
    return static_cast<float>(static_cast<int32_t>(seed >> 8) - (1 << 23)) / (1 << 23);
  };
  for (float& v : x) v = next();
  for (float& v : dy) v = next();
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
