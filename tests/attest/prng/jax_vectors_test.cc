// Compares detrain's PRNG with the committed vectors from real JAX (testdata/jax_vectors.json,
// written by tools/jax_prng_vectors.py), for both modes. Keys, bits of every width, bernoulli,
// permutation, randint and uniform must match bit for bit. normal, truncated_normal and the
// initializers (erf/erfinv differ from XLA's in the last bits) must be within a few ulps; the
// largest difference seen is printed and documented in docs/prng.md.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "attest/prng/initializers.h"
#include "attest/prng/jax_random.h"
#include "base/file_io.h"

namespace detrain::prng {
namespace {

using Json = nlohmann::json;

// Largest float32 ulp distances accepted for the erf/erfinv-based samplers: the maxima measured
// over 10^6 samples per sampler and mode with prng_jax_ulp_study (docs/prng.md).
constexpr int64_t kMaxUlpNormal = 3;
constexpr int64_t kMaxUlpTruncatedNormal = 5;
constexpr int64_t kMaxUlpInitializers = 4;

const Json& Vectors() {
  static const Json* const vectors = [] {
    auto text =
        ReadFile(std::string(DETRAIN_SOURCE_DIR) + "/tests/attest/prng/testdata/jax_vectors.json");
    if (!text.ok()) {
      ADD_FAILURE() << text.status().message();
      return new Json(Json::object());
    }
    return new Json(Json::parse(*text));
  }();
  return *vectors;
}

Key KeyOf(const Json& j) { return Key{j[0].get<uint32_t>(), j[1].get<uint32_t>()}; }

size_t SizeOf(const Json& shape) {
  size_t n = 1;
  for (const auto& d : shape) n *= d.get<size_t>();
  return n;
}

float F32(const Json& bits) { return std::bit_cast<float>(bits.get<uint32_t>()); }

// Distance in ulps between two finite floats of any sign (ordered-integer mapping).
int64_t UlpDistance(float a, float b) {
  auto ordered = [](float f) {
    const int32_t i = std::bit_cast<int32_t>(f);
    return i < 0 ? int64_t{INT32_MIN} - i : int64_t{i};
  };
  return std::llabs(ordered(a) - ordered(b));
}

class JaxVectorsTest : public ::testing::TestWithParam<Mode> {
 protected:
  const Json& Cases(const char* function) const {
    return Vectors()["modes"][std::string(ModeName(GetParam()))][function];
  }
  Options Opts() const {
    Options o;
    o.mode = GetParam();
    return o;
  }
};

TEST_P(JaxVectorsTest, RecordsJaxVersion) {
  EXPECT_FALSE(Vectors().value("jax_version", "").empty());
  EXPECT_GT(Cases("key").size(), 0u);
}

TEST_P(JaxVectorsTest, KeysFromSeeds) {
  for (const auto& c : Cases("key")) {
    EXPECT_EQ(KeyFromSeed(c["seed"].get<int64_t>()), KeyOf(c["key"])) << c.dump();
  }
}

TEST_P(JaxVectorsTest, Split) {
  for (const auto& c : Cases("split")) {
    auto keys = Split(KeyOf(c["key"]), SizeOf(c["shape"]), GetParam());
    ASSERT_TRUE(keys.ok());
    ASSERT_EQ(keys->size(), c["keys"].size());
    for (size_t i = 0; i < keys->size(); ++i)
      EXPECT_EQ((*keys)[i], KeyOf(c["keys"][i])) << c.dump();
  }
}

TEST_P(JaxVectorsTest, FoldIn) {
  for (const auto& c : Cases("fold_in")) {
    EXPECT_EQ(FoldIn(KeyOf(c["key"]), c["data"].get<uint32_t>()), KeyOf(c["out"])) << c.dump();
  }
}

template <typename T, typename Fn>
void CheckBits(const Json& c, const Options& o, Fn fn) {
  std::vector<T> out(SizeOf(c["shape"]));
  ASSERT_TRUE(fn(KeyOf(c["key"]), std::span<T>(out), o).ok());
  ASSERT_EQ(out.size(), c["values"].size());
  for (size_t i = 0; i < out.size(); ++i) {
    ASSERT_EQ(uint64_t{out[i]}, c["values"][i].get<uint64_t>()) << "index " << i << " " << c.dump();
  }
}

TEST_P(JaxVectorsTest, BitsOfEveryWidth) {
  int checked = 0;
  for (const auto& c : Cases("bits")) {
    switch (c["width"].get<int>()) {
      case 8:
        CheckBits<uint8_t>(c, Opts(), Bits8);
        break;
      case 16:
        CheckBits<uint16_t>(c, Opts(), Bits16);
        break;
      case 32:
        CheckBits<uint32_t>(c, Opts(), Bits32);
        break;
      case 64:
        CheckBits<uint64_t>(c, Opts(), Bits64);
        break;
      default:
        FAIL() << "bad width in " << c.dump();
    }
    ++checked;
  }
  EXPECT_EQ(checked, 96);
}

// uniform must match bit for bit on [0, 1) (the requirement) and, as measured, on the
// other ranges of the file too: XLA computes f * (max - min) + min without contraction on CPU.
TEST_P(JaxVectorsTest, UniformBitForBit) {
  for (const auto& c : Cases("uniform")) {
    std::vector<float> out(SizeOf(c["shape"]));
    ASSERT_TRUE(Uniform(KeyOf(c["key"]), F32(c["min_bits"]), F32(c["max_bits"]), out, Opts()).ok());
    for (size_t i = 0; i < out.size(); ++i) {
      ASSERT_EQ(std::bit_cast<uint32_t>(out[i]), c["bits"][i].get<uint32_t>())
          << "index " << i << " " << c.dump();
    }
  }
}

TEST_P(JaxVectorsTest, Bernoulli) {
  for (const auto& c : Cases("bernoulli")) {
    std::vector<uint8_t> out(SizeOf(c["shape"]));
    ASSERT_TRUE(Bernoulli(KeyOf(c["key"]), F32(c["p_bits"]), out, Opts()).ok());
    for (size_t i = 0; i < out.size(); ++i) {
      ASSERT_EQ(int{out[i]}, c["values"][i].get<int>()) << "index " << i << " " << c.dump();
    }
  }
}

TEST_P(JaxVectorsTest, Permutation) {
  for (const auto& c : Cases("permutation")) {
    auto values = Permutation(KeyOf(c["key"]), c["n"].get<int64_t>(), Opts());
    ASSERT_TRUE(values.ok());
    EXPECT_EQ(*values, c["values"].get<std::vector<int64_t>>()) << c.dump();
  }
}

TEST_P(JaxVectorsTest, RandInt) {
  for (const auto& c : Cases("randint")) {
    const size_t n = SizeOf(c["shape"]);
    const int64_t lo = c["min"].get<int64_t>(), hi = c["max"].get<int64_t>();
    std::vector<int64_t> got(n);
    if (c["dtype"] == "int32") {
      std::vector<int32_t> out(n);
      ASSERT_TRUE(RandInt32(KeyOf(c["key"]), lo, hi, out, Opts()).ok());
      std::copy(out.begin(), out.end(), got.begin());
    } else {
      ASSERT_TRUE(RandInt64(KeyOf(c["key"]), lo, hi, got, Opts()).ok());
    }
    EXPECT_EQ(got, c["values"].get<std::vector<int64_t>>()) << c.dump();
  }
}

// Compares float outputs within max_ulp and returns the largest distance seen.
int64_t CompareFloats(const std::vector<float>& out, const Json& c, int64_t max_ulp) {
  int64_t worst = 0;
  EXPECT_EQ(out.size(), c["bits"].size());
  for (size_t i = 0; i < out.size() && i < c["bits"].size(); ++i) {
    const int64_t d = UlpDistance(out[i], F32(c["bits"][i]));
    worst = std::max(worst, d);
    EXPECT_LE(d, max_ulp) << "index " << i << " ours " << out[i] << " jax " << F32(c["bits"][i])
                          << " " << c.dump();
  }
  return worst;
}

TEST_P(JaxVectorsTest, NormalWithinUlps) {
  int64_t worst = 0;
  for (const auto& c : Cases("normal")) {
    std::vector<float> out(SizeOf(c["shape"]));
    ASSERT_TRUE(Normal(KeyOf(c["key"]), out, Opts()).ok());
    worst = std::max(worst, CompareFloats(out, c, kMaxUlpNormal));
  }
  std::printf("normal: max ulp difference vs JAX %lld\n", static_cast<long long>(worst));
}

TEST_P(JaxVectorsTest, TruncatedNormalWithinUlps) {
  int64_t worst = 0;
  for (const auto& c : Cases("truncated_normal")) {
    std::vector<float> out(SizeOf(c["shape"]));
    ASSERT_TRUE(
        TruncatedNormal(KeyOf(c["key"]), F32(c["lower_bits"]), F32(c["upper_bits"]), out, Opts())
            .ok());
    worst = std::max(worst, CompareFloats(out, c, kMaxUlpTruncatedNormal));
  }
  std::printf("truncated_normal: max ulp difference vs JAX %lld\n", static_cast<long long>(worst));
}

TEST_P(JaxVectorsTest, InitializersWithinUlps) {
  int64_t worst = 0;
  int checked = 0;
  for (const auto& c : Cases("initializers")) {
    const auto shape = c["shape"].get<std::vector<int64_t>>();
    std::vector<float> out(SizeOf(c["shape"]));
    const std::string name = c["name"];
    if (name == "normal") {
      ASSERT_TRUE(NormalInit(KeyOf(c["key"]), F32(c["stddev_bits"]), out, Opts()).ok());
    } else {
      ASSERT_TRUE(InitializeNamed(name, KeyOf(c["key"]), shape, out, Opts()).ok()) << name;
    }
    worst = std::max(worst, CompareFloats(out, c, kMaxUlpInitializers));
    ++checked;
  }
  EXPECT_EQ(checked, 72);
  std::printf("initializers: max ulp difference vs JAX %lld\n", static_cast<long long>(worst));
}

INSTANTIATE_TEST_SUITE_P(BothModes, JaxVectorsTest,
                         ::testing::Values(Mode::kPartitionable, Mode::kOriginal),
                         [](const auto& info) { return std::string(ModeName(info.param)); });

}  // namespace
}  // namespace detrain::prng
