// The exact GEMM (src/runtime/cpu/gemm.h) in GFLOP/s (docs/benchmarks.md "GEMM"): 1024^3 and
// the shapes of the MLP train step (bench/mlp/train.dt: batch 256 in 8 shards of 32 rows), per
// ISA path and thread count. Arguments: m, n, k, threads, ISA (0 scalar, 1 AVX2, 2 AVX-512), B
// transposed (1: B is read as the transpose of an n x k row-major matrix). Before timing, the
// result is checked element by element against semantics::FmaChain (the contract's order).
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

}  // namespace
}  // namespace detrain::runtime::cpu

BENCHMARK_MAIN();
