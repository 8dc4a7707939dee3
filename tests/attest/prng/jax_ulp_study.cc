// prng_jax_ulp_study DIR: the long check behind docs/prng.md's ulp table. DIR holds 10^6-sample
// float32 arrays from real JAX written by `tools/jax_prng_vectors.py --ulp-dir DIR`; for each one
// this recomputes the same sampler with detrain and prints the largest difference in ulps, the
// share of bit-identical values and the largest absolute difference. Exit status 0 when all
// files were compared, 2 on a missing or malformed input. Not part of the default test run.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "attest/prng/initializers.h"
#include "attest/prng/jax_random.h"
#include "base/file_io.h"

namespace {

using detrain::prng::Key;
using Json = nlohmann::json;

int64_t Ordered(float f) {
  const int32_t i = std::bit_cast<int32_t>(f);
  return i < 0 ? int64_t{INT32_MIN} - i : int64_t{i};
}

detrain::Status Compute(const Json& sample, Key key, size_t n, std::vector<float>* out) {
  namespace p = detrain::prng;
  p::Options o;
  auto mode = p::ParseMode(sample["mode"].get<std::string>());
  if (!mode.ok()) return mode.status();
  o.mode = *mode;
  out->assign(n, 0.0f);
  const std::string sampler = sample["sampler"];
  const Json& params = sample["params"];
  if (sampler == "uniform") {
    return p::Uniform(key, params["min"].get<float>(), params["max"].get<float>(), *out, o);
  }
  if (sampler == "normal") return p::Normal(key, *out, o);
  if (sampler == "truncated_normal") {
    return p::TruncatedNormal(key, params["lower"].get<float>(), params["upper"].get<float>(), *out,
                              o);
  }
  const std::string name = params["name"];
  const auto shape = params["shape"].get<std::vector<int64_t>>();
  if (name.rfind("normal_", 0) == 0) return p::NormalInit(key, std::stod(name.substr(7)), *out, o);
  return p::InitializeNamed(name, key, shape, *out, o);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr,
                 "usage: prng_jax_ulp_study DIR (from tools/jax_prng_vectors.py --ulp-dir)\n");
    return 2;
  }
  const std::string dir = argv[1];
  auto manifest_text = detrain::ReadFile(dir + "/manifest.json");
  if (!manifest_text.ok()) {
    std::fprintf(stderr, "%s\n", manifest_text.status().message().c_str());
    return 2;
  }
  const Json manifest = Json::parse(*manifest_text);
  const Key key{manifest["key"][0].get<uint32_t>(), manifest["key"][1].get<uint32_t>()};
  const size_t n = manifest["n"].get<size_t>();
  std::printf("jax %s, key [%u,%u], %zu samples each\n",
              manifest["jax_version"].get<std::string>().c_str(), key.hi, key.lo, n);
  std::printf("%-14s %-17s %-46s %8s %10s %12s\n", "mode", "sampler", "params", "max_ulp",
              "identical", "max_abs");
  for (const Json& sample : manifest["samples"]) {
    auto bytes = detrain::ReadFile(dir + "/" + sample["file"].get<std::string>());
    if (!bytes.ok() || bytes->size() != n * 4) {
      std::fprintf(stderr, "cannot read %s\n", sample["file"].get<std::string>().c_str());
      return 2;
    }
    std::vector<float> ours;
    if (auto s = Compute(sample, key, n, &ours); !s.ok()) {
      std::fprintf(stderr, "%s\n", s.message().c_str());
      return 2;
    }
    int64_t max_ulp = 0;
    size_t identical = 0;
    double max_abs = 0;
    for (size_t i = 0; i < n; ++i) {
      uint32_t bits;
      std::memcpy(&bits, bytes->data() + 4 * i, 4);  // little-endian file on a little-endian host
      const float theirs = std::bit_cast<float>(bits);
      max_ulp = std::max<int64_t>(max_ulp, std::llabs(Ordered(ours[i]) - Ordered(theirs)));
      identical += std::bit_cast<uint32_t>(ours[i]) == bits;
      max_abs = std::max(max_abs, std::fabs(double{ours[i]} - double{theirs}));
    }
    std::printf("%-14s %-17s %-46s %8lld %9.4f%% %12.3g\n",
                sample["mode"].get<std::string>().c_str(),
                sample["sampler"].get<std::string>().c_str(), sample["params"].dump().c_str(),
                static_cast<long long>(max_ulp),
                100.0 * static_cast<double>(identical) / static_cast<double>(n), max_abs);
  }
  return 0;
}
