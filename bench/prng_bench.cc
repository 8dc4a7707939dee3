// Throughput of detrain's threefry PRNG: the raw block function per Isa, and float32 `uniform`
// generation (the sampler under dropout masks and uniform initializers) per Isa, mode and thread
// count, in bytes of output per second. Before timing, each configuration's output is compared
// with the scalar single-thread output and the benchmark fails if a single bit differs.
//
//   bench_prng [--benchmark_filter=Uniform]
//
// Goal (issue 4): >= 1 GB/s of float32 output per core. Results: docs/benchmarks.md ("prng").
#include <benchmark/benchmark.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "attest/prng/jax_random.h"
#include "base/thread_pool.h"

namespace {

using detrain::Isa;
using detrain::prng::Key;
using detrain::prng::Mode;

constexpr size_t kFloats = size_t{1} << 22;  // 16 MiB of output per call
const Key kKey{0x01234567, 0x89abcdef};

detrain::ThreadPool* Pool(int threads) {
  static auto* two = new detrain::ThreadPool(2);
  return threads == 2 ? two : nullptr;
}

detrain::prng::Options MakeOptions(int64_t isa, int64_t mode, int64_t threads) {
  detrain::prng::Options o;
  o.isa = static_cast<Isa>(isa);
  o.mode = static_cast<Mode>(mode);
  o.pool = Pool(static_cast<int>(threads));
  return o;
}

void BM_Threefry(benchmark::State& state) {
  const Isa isa = static_cast<Isa>(state.range(0));
  if (!detrain::IsaSupported(isa)) return state.SkipWithError("Isa not supported here");
  const size_t n = 4096;
  std::vector<uint32_t> x0(n), x1(n), y0(n), y1(n);
  for (uint32_t i = 0; i < n; ++i) x1[i] = i;
  for (auto _ : state) {
    detrain::prng::Threefry2x32ArrayIsa(isa, kKey.hi, kKey.lo, x0.data(), x1.data(), y0.data(),
                                        y1.data(), n);
    benchmark::DoNotOptimize(y0.data());
    benchmark::DoNotOptimize(y1.data());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * n));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * n * 8));
  state.SetLabel(std::string(detrain::IsaName(isa)) + ", bytes = 2 output words per block");
}

void BM_Uniform(benchmark::State& state) {
  const auto o = MakeOptions(state.range(0), state.range(1), state.range(2));
  if (!detrain::IsaSupported(o.isa)) return state.SkipWithError("Isa not supported here");
  std::vector<float> out(kFloats), reference(kFloats);
  auto scalar = MakeOptions(0, state.range(1), 1);
  if (!detrain::prng::Uniform(kKey, 0.0f, 1.0f, reference, scalar).ok() ||
      !detrain::prng::Uniform(kKey, 0.0f, 1.0f, out, o).ok() || out != reference) {
    return state.SkipWithError("output differs from the scalar single-thread output");
  }
  for (auto _ : state) {
    if (!detrain::prng::Uniform(kKey, 0.0f, 1.0f, out, o).ok()) state.SkipWithError("failed");
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kFloats * sizeof(float)));
  state.SetLabel(std::string(detrain::IsaName(o.isa)) + " " +
                 std::string(detrain::prng::ModeName(o.mode)) +
                 " threads=" + std::to_string(state.range(2)));
}

}  // namespace

BENCHMARK(BM_Threefry)->ArgNames({"isa"})->DenseRange(0, 2);
// Args: isa (0 scalar, 1 avx2, 2 avx512), mode (0 partitionable, 1 original), threads.
BENCHMARK(BM_Uniform)
    ->ArgNames({"isa", "mode", "threads"})
    ->ArgsProduct({{0, 1, 2}, {0, 1}, {1, 2}})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
