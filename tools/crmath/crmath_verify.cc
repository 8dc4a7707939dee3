// crmath_verify: checks detrain's float32 math library (src/base/math/crmath.h) against a
// correctly rounded reference (reference.h) and prints the number of misrounded inputs per
// function. Modes (docs/math.md §5):
//   --sampled     special values and their neighbourhoods, 2^22 inputs per one-argument function
//                 spread over all exponents, 2^22 weighted pow pairs (the CI test);
//   --exhaustive  all 2^32 inputs of every one-argument function, 2^32 weighted pow pairs.
//   --arrays      with either: instead of the reference, compare the array variants FArray on
//                 every implementation the CPU supports (portable, AVX2, AVX-512) with the
//                 scalar F, bit for bit (NaN payloads included), on the same inputs (pow: the
//                 same pairs, PowArray against Pow).
// Options: --functions=exp,log,...  --pow-pairs=N  --threads=N (default: all cores)
//          --slow-only (check the accurate dd path alone, bypassing the fast path).
// Exit code 0 when nothing is misrounded (with --arrays: nothing differs), 1 otherwise, 2 on bad
// usage. Work is split into chunks whose results are combined in chunk order, so the report is
// independent of threads.
#include <mpfr.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "base/math/crmath.h"
#include "base/thread_pool.h"
#include "tools/crmath/pow_pairs.h"
#include "tools/crmath/reference.h"

namespace detrain::crmath_verify {
namespace {

struct Failure {
  float x, y, got, want;
};

struct Tally {
  uint64_t checked = 0;
  uint64_t misrounded = 0;
  uint64_t mpfr = 0;
  std::vector<Failure> first;  // up to kKeep

  void Add(const Tally& o) {
    checked += o.checked;
    misrounded += o.misrounded;
    mpfr += o.mpfr;
    for (const Failure& f : o.first) {
      if (first.size() < kKeep) first.push_back(f);
    }
  }
  static constexpr size_t kKeep = 8;
};

bool g_slow_only = false;  // --slow-only: check the accurate path alone (set before threads run)

void CheckOne(const FnInfo& fn, float x, float y, Tally& t) {
  float got = g_slow_only ? (fn.slow ? fn.slow(x) : crmath::internal::PowSlow(x, y, false))
                          : (fn.ours ? fn.ours(x) : crmath::Pow(x, y));
  bool used_mpfr = false;
  float want = Reference(fn.fn, x, y, &used_mpfr);
  ++t.checked;
  t.mpfr += used_mpfr;
  if (!SameFloat(got, want)) {
    ++t.misrounded;
    if (t.first.size() < Tally::kKeep) t.first.push_back({x, y, got, want});
  }
}

// Special inputs: zeros, infinities, NaNs, subnormal and normal extremes, +-1, the overflow,
// underflow and saturation thresholds of the functions and the path thresholds of sin and cos;
// each with 512 ulps on both sides.
std::vector<uint32_t> SpecialInputs() {
  const float centres[] = {
      0.0f, 1.0f, 0x1p-149f, 0x1p-126f, 0x1.fffffep127f, 2.0f, 0.5f, 88.72284f, 89.0f, -103.9721f,
      -87.33655f, 104.0f, 9.0109f, 17.3287f, 18.0f, 3.9192f, 4.0f, 128.0f, -150.0f, -149.0f,
      -126.0f, 0x1p-7f, 0x1p-25f, 0x1p24f, 0.6931472f, 1.4142135f, 0.7071068f, 10.0f, 1e-30f, 1e30f,
      // sin and cos: pi/4, pi/2, pi, the 2^-13 and 2^20 path thresholds, a large input.
      0.7853982f, 1.5707964f, 3.1415927f, 0x1p-13f, 0x1p20f, 0x1.2d97c8p+123f};
  std::vector<uint32_t> out = {0x7f800000u, 0xff800000u, 0x7fc00000u,
                               0xffc00000u, 0x7f800001u, 0x7fffffffu};
  for (float c : centres) {
    for (float s : {c, -c}) {
      uint32_t b = Bits(s);
      for (int d = -512; d <= 512; ++d) {
        uint32_t u = b + static_cast<uint32_t>(d);
        if ((u & 0x7fffffffu) <= 0x7f800000u && ((u ^ b) >> 31) == 0) out.push_back(u);
      }
    }
  }
  return out;
}

double Seconds(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void PrintFailures(const Tally& t) {
  for (const Failure& f : t.first) {
    std::printf("    x=%a (0x%08x) y=%a  got %a (0x%08x)  want %a (0x%08x)\n", f.x, Bits(f.x), f.y,
                f.got, Bits(f.got), f.want, Bits(f.want));
  }
  std::fflush(stdout);
}

void Report(const char* name, const Tally& t, double secs, const char* what) {
  std::printf("%-9s %12llu %s  misrounded %llu  (mpfr decided %llu)  %.1f s\n", name,
              static_cast<unsigned long long>(t.checked), what,
              static_cast<unsigned long long>(t.misrounded),
              static_cast<unsigned long long>(t.mpfr), secs);
  PrintFailures(t);
}

// Runs check_range over [0, n) in chunks on the pool; combines chunk tallies (T: Tally or
// IsaTallies) in order.
template <typename T = Tally, typename F>
T RunChunks(ThreadPool& pool, uint64_t n, F check_range) {
  const uint64_t kChunk = 1ull << 18;
  uint64_t chunks = (n + kChunk - 1) / kChunk;
  std::vector<T> parts(chunks);
  pool.ParallelFor(chunks, [&](size_t c) {
    uint64_t lo = c * kChunk, hi = lo + kChunk < n ? lo + kChunk : n;
    check_range(lo, hi, parts[c]);
  });
  T total;
  for (const T& p : parts) total.Add(p);
  return total;
}

// The sampled inputs: one random input in each 1024-wide stride of the bit space, then the
// special inputs.
constexpr uint64_t kSamples = 1ull << 22;
uint32_t SampledInput(uint64_t i, const std::vector<uint32_t>& special) {
  return i < kSamples ? static_cast<uint32_t>((i << 10) | (Mix64(i) & 1023))
                      : special[i - kSamples];
}

Tally CheckUnary(ThreadPool& pool, const FnInfo& fn, bool exhaustive) {
  if (exhaustive) {
    return RunChunks(pool, 1ull << 32, [&](uint64_t lo, uint64_t hi, Tally& t) {
      for (uint64_t u = lo; u < hi; ++u) CheckOne(fn, FromBits(static_cast<uint32_t>(u)), 0, t);
    });
  }
  std::vector<uint32_t> special = SpecialInputs();
  return RunChunks(pool, kSamples + special.size(), [&](uint64_t lo, uint64_t hi, Tally& t) {
    for (uint64_t i = lo; i < hi; ++i) CheckOne(fn, FromBits(SampledInput(i, special)), 0, t);
  });
}

// ---- --arrays: FArray on each implementation against the scalar F ---------------------------
constexpr Isa kIsas[] = {Isa::kScalar, Isa::kAvx2, Isa::kAvx512};
constexpr size_t kIsaCount = sizeof(kIsas) / sizeof(kIsas[0]);

struct IsaTallies {
  Tally isa[kIsaCount];
  void Add(const IsaTallies& o) {
    for (size_t k = 0; k < kIsaCount; ++k) isa[k].Add(o.isa[k]);
  }
};

// Counts where got differs from want (bit for bit) into t; y is nullptr for one-argument functions.
void CompareBits(const float* x, const float* y, const float* got, const float* want, size_t len,
                 Tally& t) {
  t.checked += len;
  for (size_t i = 0; i < len; ++i) {
    if (Bits(got[i]) == Bits(want[i])) continue;
    ++t.misrounded;
    if (t.first.size() < Tally::kKeep) t.first.push_back({x[i], y ? y[i] : 0, got[i], want[i]});
  }
}

IsaTallies CheckArrays(ThreadPool& pool, const FnInfo& fn, bool exhaustive) {
  std::vector<uint32_t> special = exhaustive ? std::vector<uint32_t>() : SpecialInputs();
  uint64_t n = exhaustive ? (1ull << 32) : kSamples + special.size();
  return RunChunks<IsaTallies>(pool, n, [&](uint64_t lo, uint64_t hi, IsaTallies& t) {
    size_t len = hi - lo;
    std::vector<float> in(len), want(len), got(len);
    for (size_t i = 0; i < len; ++i) {
      uint64_t j = lo + i;
      in[i] = FromBits(exhaustive ? static_cast<uint32_t>(j) : SampledInput(j, special));
      want[i] = fn.ours(in[i]);
    }
    for (size_t k = 0; k < kIsaCount; ++k) {
      if (!IsaSupported(kIsas[k])) continue;
      fn.array(kIsas[k], in.data(), got.data(), len);
      CompareBits(in.data(), nullptr, got.data(), want.data(), len, t.isa[k]);
    }
  });
}

// The pow verifier's pairs: special x against special y (a grid of the special inputs' centres)
// first, then `pairs` generated pairs (PowPair). At(i) is a pure function of i.
class PowPairs {
 public:
  explicit PowPairs(uint64_t pairs) : pairs_(pairs) {
    std::vector<uint32_t> special = SpecialInputs();
    for (size_t i = 0; i < special.size(); i += 128) grid_.push_back(special[i]);
  }
  uint64_t size() const { return grid_.size() * grid_.size() + pairs_; }
  PowInput At(uint64_t i) const {
    uint64_t grid_n = grid_.size() * grid_.size();
    if (i >= grid_n) return PowPair(i - grid_n);
    return {FromBits(grid_[i / grid_.size()]), FromBits(grid_[i % grid_.size()])};
  }

 private:
  std::vector<uint32_t> grid_;
  uint64_t pairs_;
};

// The same for PowArray against Pow, on the pow verifier's pairs.
IsaTallies CheckPowArrays(ThreadPool& pool, uint64_t pairs) {
  PowPairs source(pairs);
  return RunChunks<IsaTallies>(pool, source.size(), [&](uint64_t lo, uint64_t hi, IsaTallies& t) {
    size_t len = hi - lo;
    std::vector<float> x(len), y(len), want(len), got(len);
    for (size_t i = 0; i < len; ++i) {
      PowInput p = source.At(lo + i);
      x[i] = p.x;
      y[i] = p.y;
      want[i] = crmath::Pow(x[i], y[i]);
    }
    for (size_t k = 0; k < kIsaCount; ++k) {
      if (!IsaSupported(kIsas[k])) continue;
      crmath::PowArrayIsa(kIsas[k], x.data(), y.data(), got.data(), len);
      CompareBits(x.data(), y.data(), got.data(), want.data(), len, t.isa[k]);
    }
  });
}

// Prints one line per implementation; returns the number of mismatches.
uint64_t ReportArrays(const FnInfo& fn, const IsaTallies& t, double secs) {
  uint64_t bad = 0;
  for (size_t k = 0; k < kIsaCount; ++k) {
    std::string name = std::string(fn.name) + "/" + std::string(IsaName(kIsas[k]));
    if (!IsaSupported(kIsas[k])) {
      std::printf("%-18s skipped: this CPU (or build) lacks it\n", name.c_str());
      continue;
    }
    std::printf("%-18s %12llu %s  mismatches %llu  %.1f s (all implementations)\n", name.c_str(),
                static_cast<unsigned long long>(t.isa[k].checked), fn.array ? "inputs" : "pairs ",
                static_cast<unsigned long long>(t.isa[k].misrounded), secs);
    PrintFailures(t.isa[k]);
    bad += t.isa[k].misrounded;
  }
  return bad;
}

Tally CheckPow(ThreadPool& pool, const FnInfo& fn, uint64_t pairs) {
  PowPairs source(pairs);
  return RunChunks(pool, source.size(), [&](uint64_t lo, uint64_t hi, Tally& t) {
    for (uint64_t i = lo; i < hi; ++i) {
      PowInput p = source.At(i);
      CheckOne(fn, p.x, p.y, t);
    }
  });
}

int Main(int argc, char** argv) {
  bool exhaustive = false;
  bool arrays = false;
  std::string only;
  uint64_t pow_pairs = 0;
  size_t threads = 0;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--sampled")
      exhaustive = false;
    else if (a == "--exhaustive")
      exhaustive = true;
    else if (a == "--slow-only")
      g_slow_only = true;
    else if (a == "--arrays")
      arrays = true;
    else if (a.rfind("--functions=", 0) == 0)
      only = "," + a.substr(12) + ",";
    else if (a.rfind("--pow-pairs=", 0) == 0)
      pow_pairs = std::strtoull(a.c_str() + 12, nullptr, 0);
    else if (a.rfind("--threads=", 0) == 0)
      threads = std::strtoull(a.c_str() + 10, nullptr, 0);
    else {
      std::fprintf(stderr,
                   "crmath_verify: unknown argument '%s'\nusage: crmath_verify "
                   "[--sampled|--exhaustive] [--arrays] [--functions=exp,log,...] "
                   "[--pow-pairs=N] [--threads=N] [--slow-only]\n",
                   argv[i]);
      return 2;
    }
  }
  if (pow_pairs == 0) pow_pairs = exhaustive ? (1ull << 32) : (1ull << 22);
  ThreadPool pool(threads);
  std::printf("crmath_verify: %s mode%s, %zu threads\n", exhaustive ? "exhaustive" : "sampled",
              arrays        ? " (arrays against scalar)"
              : g_slow_only ? " (slow path only)"
                            : "",
              pool.size());
  auto start_all = std::chrono::steady_clock::now();
  uint64_t bad = 0;
  for (const FnInfo& fn : AllFunctions()) {
    if (!only.empty() && only.find("," + std::string(fn.name) + ",") == std::string::npos) continue;
    auto start = std::chrono::steady_clock::now();
    if (arrays) {
      if (!fn.array && fn.ours) {
        std::printf("%-18s no array variant\n", fn.name);
        continue;
      }
      IsaTallies t = fn.array ? CheckArrays(pool, fn, exhaustive) : CheckPowArrays(pool, pow_pairs);
      bad += ReportArrays(fn, t, Seconds(start));
      continue;
    }
    Tally t = fn.ours ? CheckUnary(pool, fn, exhaustive) : CheckPow(pool, fn, pow_pairs);
    Report(fn.name, t, Seconds(start), fn.ours ? "inputs" : "pairs ");
    bad += t.misrounded;
  }
  std::printf("total %s: %llu  (%.1f s)\n", arrays ? "mismatches" : "misrounded",
              static_cast<unsigned long long>(bad), Seconds(start_all));
  return bad == 0 ? 0 : 1;
}

}  // namespace
}  // namespace detrain::crmath_verify

int main(int argc, char** argv) {
  int rc = detrain::crmath_verify::Main(argc, argv);
  mpfr_free_cache2(MPFR_FREE_GLOBAL_CACHE);
  return rc;
}
