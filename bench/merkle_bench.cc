// Merkle SHA-256 throughput over 1 GiB in memory, at 1 and 2 threads, next to a flat SHA-256 of
// the same bytes (one core, the rate `openssl speed -evp sha256` measures). Run side by side with
// OpenSSL through bench/merkle_vs_openssl.sh; figures go to docs/benchmarks.md.
#include <benchmark/benchmark.h>

#include <cstring>
#include <string>

#include "attest/merkle.h"

namespace {

const std::string& Data() {
  static const std::string data = [] {
    std::string s(size_t{1} << 30, '\0');
    uint64_t x = 88172645463325252ull;
    for (size_t i = 0; i + 8 <= s.size(); i += 8) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      std::memcpy(&s[i], &x, 8);
    }
    return s;
  }();
  return data;
}

void BM_MerkleRoot(benchmark::State& state) {
  const std::string& data = Data();
  detrain::ThreadPool pool(static_cast<size_t>(state.range(0)));
  for (auto _ : state) {
    benchmark::DoNotOptimize(detrain::attest::MerkleRoot(data, &pool));
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(data.size()));
}
BENCHMARK(BM_MerkleRoot)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_FlatSha256(benchmark::State& state) {
  const std::string& data = Data();
  for (auto _ : state) {
    benchmark::DoNotOptimize(detrain::attest::Sha256Of(data));
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(data.size()));
}
BENCHMARK(BM_FlatSha256)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
