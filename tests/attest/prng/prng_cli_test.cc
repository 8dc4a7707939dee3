// `detrain prng`, run as an auditor runs it: the built binary, checked against the JAX values
// of reference/jax-random.md and the library, and with every kind of bad argument (exit 2).
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "attest/prng/jax_random.h"
#include "cli/cli_runner.h"

namespace detrain::testing {
namespace {

using Json = nlohmann::json;

Json RunOk(const std::vector<std::string>& args) {
  std::vector<std::string> full = {"prng"};
  full.insert(full.end(), args.begin(), args.end());
  CliResult r = RunDetrain(full);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.err.empty()) << r.err;
  EXPECT_EQ(r.out.back(), '\n');
  EXPECT_EQ(r.out.find('\n'), r.out.size() - 1) << "one JSON line expected: " << r.out;
  return Json::parse(r.out, nullptr, false);
}

TEST(PrngCli, KeyFromSeeds) {
  EXPECT_EQ(RunOk({"key", "0"}), Json::parse(R"({"key":[0,0]})"));
  EXPECT_EQ(RunOk({"key", "-1"}), Json::parse(R"({"key":[4294967295,4294967295]})"));
  EXPECT_EQ(RunOk({"key", "-3"}), Json::parse(R"({"key":[4294967295,4294967293]})"));
  EXPECT_EQ(RunOk({"key", "0x123456789ABCDEF0"}), Json::parse(R"({"key":[305419896,2596069104]})"));
  EXPECT_EQ(RunOk({"key", "18446744073709551615"}),
            Json::parse(R"({"key":[4294967295,4294967295]})"));
  EXPECT_EQ(RunOk({"key", "-9223372036854775808"}), Json::parse(R"({"key":[2147483648,0]})"));
}

TEST(PrngCli, SplitAndFoldInMatchJax) {
  EXPECT_EQ(RunOk({"--mode", "original", "split", "0:0", "4"}),
            Json::parse(R"({"keys":[[2285895361,1501764800],[1518642379,4090693311],
                                    [433833334,4221794875],[839183663,3740430601]]})"));
  EXPECT_EQ(RunOk({"fold-in", "0:0", "4"}), Json::parse(R"({"key":[2285895361,433833334]})"));
  // Partitionable split(key, n)[i] == fold_in(key, i); hex words are accepted.
  Json keys = RunOk({"split", "0x0:0x2a", "3"});
  ASSERT_EQ(keys["keys"].size(), 3u);
  EXPECT_EQ(keys["keys"][2], RunOk({"fold-in", "0:42", "2"})["key"]);
  EXPECT_EQ(RunOk({"split", "0:42", "0"}), Json::parse(R"({"keys":[]})"));
  // --mode may also follow the subcommand.
  EXPECT_EQ(RunOk({"split", "0:0", "4", "--mode", "original"})["keys"][0],
            Json::parse("[2285895361,1501764800]"));
}

TEST(PrngCli, BitsOfEveryWidthMatchTheLibrary) {
  prng::Options o;
  o.mode = prng::Mode::kOriginal;
  std::vector<uint8_t> u8(3);
  std::vector<uint64_t> u64(6);
  ASSERT_TRUE(prng::Bits8(prng::KeyFromSeed(1701), u8, o).ok());
  ASSERT_TRUE(prng::Bits64(prng::Key{0, 42}, u64, prng::Options()).ok());
  EXPECT_EQ(RunOk({"--mode", "original", "bits", "0:1701", "--shape", "3", "--width", "8"}),
            Json::parse(R"({"bits":[216,115,43]})"));
  EXPECT_EQ(RunOk({"--mode", "original", "bits", "0:1701", "--shape", "3"}),
            Json::parse(R"({"bits":[56197195,4200222568,961309823]})"));
  EXPECT_EQ(RunOk({"bits", "0:42", "--shape", "2,3", "--width", "64"})["bits"]
                .get<std::vector<uint64_t>>(),
            u64);
  EXPECT_EQ(RunOk({"bits", "0:42", "--shape", "4,0", "--width", "16"}),
            Json::parse(R"({"bits":[]})"));
  EXPECT_EQ(RunOk({"bits", "0:42", "--shape", "", "--width", "16"})["bits"].size(), 1u);
}

TEST(PrngCli, FloatsRoundTripAndHexIsTheirBits) {
  std::vector<float> expect(6);
  ASSERT_TRUE(prng::Uniform(prng::Key{1, 2}, -3.5f, 2.25f, expect, prng::Options()).ok());
  Json j = RunOk({"uniform", "1:2", "--shape", "2,3", "--min", "-3.5", "--max", "2.25"});
  ASSERT_EQ(j["values"].size(), 6u);
  for (size_t i = 0; i < 6; ++i) {
    const float printed = std::strtof(j["values"][i].dump().c_str(), nullptr);
    EXPECT_EQ(std::bit_cast<uint32_t>(printed), std::bit_cast<uint32_t>(expect[i])) << i;
    EXPECT_EQ(
        j["hex"][i].get<std::string>(), "0x" + [&] {
          char b[16];
          std::snprintf(b, sizeof b, "%08x", std::bit_cast<uint32_t>(expect[i]));
          return std::string(b);
        }());
  }
  Json z = RunOk({"--mode", "original", "normal", "0:0", "--shape", "10"});
  EXPECT_NEAR(z["values"][0].get<double>(), -0.3721109, 1e-6);  // old JAX quickstart output
  Json u = RunOk({"--mode", "original", "uniform", "0:0", "--shape", ""});
  EXPECT_EQ(u, Json::parse(R"({"values":[0.41845703],"hex":["0x3ed64000"]})"));
}

TEST(PrngCli, BernoulliPermutationRandint) {
  EXPECT_EQ(
      RunOk({"--mode", "original", "bernoulli", "0:1612777541", "--p", "0.5", "--shape", "5"}),
      Json::parse(R"({"values":[false,true,true,true,false]})"));
  EXPECT_EQ(RunOk({"--mode", "original", "permutation", "0:0", "10"}),
            Json::parse(R"({"values":[2,7,9,6,0,8,1,3,4,5]})"));  // real JAX 0.10.2
  EXPECT_EQ(
      RunOk({"--mode", "original", "randint", "0:0", "--shape", "3,3", "--min", "0", "--max", "8"}),
      Json::parse(R"({"values":[2,1,3,6,1,5,6,3,4]})"));
  EXPECT_EQ(RunOk({"--mode", "original", "randint", "0:0", "--shape", "3,3", "--min", "0", "--max",
                   "8", "--dtype", "int64"}),
            Json::parse(R"({"values":[7,2,6,2,1,0,6,7,7]})"));
}

void ExpectUsageError(const std::vector<std::string>& args, const std::string& message) {
  std::vector<std::string> full = {"prng"};
  full.insert(full.end(), args.begin(), args.end());
  CliResult r = RunDetrain(full);
  std::string joined;
  for (const auto& a : args) joined += a + " ";
  EXPECT_EQ(r.exit_code, 2) << joined << "\n" << r.out << r.err;
  EXPECT_TRUE(r.out.empty()) << joined << ": " << r.out;
  EXPECT_NE(r.err.find(message), std::string::npos) << joined << ": " << r.err;
}

TEST(PrngCli, BadKeysAreUsageErrors) {
  ExpectUsageError({"split", "42", "2"}, "expected HI:LO");
  ExpectUsageError({"split", "0:", "2"}, "bad key word LO ''");
  ExpectUsageError({"split", "x:1", "2"}, "bad key word HI 'x'");
  ExpectUsageError({"split", "4294967296:0", "2"}, "[0, 4294967295]");
  ExpectUsageError({"split", "-1:0", "2"}, "bad key word HI '-1'");
  ExpectUsageError({"fold-in", "0:0:0", "1"}, "bad key word LO '0:0'");
  ExpectUsageError({"fold-in", "0x:0", "1"}, "bad key word HI");
  ExpectUsageError({"normal", "0:0x1g", "--shape", "2"}, "bad key word LO");
}

TEST(PrngCli, BadShapesAndArgumentsAreUsageErrors) {
  ExpectUsageError({"bits", "0:0", "--shape", "5,"}, "bad shape dimension ''");
  ExpectUsageError({"bits", "0:0", "--shape", "a"}, "bad shape dimension 'a'");
  ExpectUsageError({"bits", "0:0", "--shape", "-1"}, "bad shape dimension");
  ExpectUsageError({"uniform", "0:0", "--shape", "100000,100000"}, "too many to print");
  ExpectUsageError({"bits", "0:0", "--shape", "3", "--width", "12"}, "--width");
  ExpectUsageError({"bits", "0:0"}, "--shape");
  ExpectUsageError({"key", "18446744073709551616"}, "bad seed");
  ExpectUsageError({"key", "-9223372036854775809"}, "bad seed");
  ExpectUsageError({"key", "1.5"}, "bad seed");
  ExpectUsageError({"split", "0:0", "two"}, "bad N 'two'");
  ExpectUsageError({"fold-in", "0:0", "4294967296"}, "bad DATA");
  ExpectUsageError({"uniform", "0:0", "--shape", "2", "--min", "abc"}, "bad --min 'abc'");
  ExpectUsageError({"uniform", "0:0", "--shape", "2", "--max", "inf"}, "expected a finite number");
  ExpectUsageError({"bernoulli", "0:0", "--p", "1.5", "--shape", "2"}, "probability in [0, 1]");
  ExpectUsageError({"bernoulli", "0:0", "--p", "nan", "--shape", "2"}, "bad --p");
  ExpectUsageError({"bernoulli", "0:0", "--shape", "2"}, "--p");
  ExpectUsageError({"randint", "0:0", "--shape", "2", "--min", "0"}, "--max");
  ExpectUsageError({"randint", "0:0", "--shape", "2", "--min", "0", "--max", "1e3"},
                   "bad --max '1e3'");
  ExpectUsageError(
      {"randint", "0:0", "--shape", "2", "--min", "0", "--max", "9", "--dtype", "int8"}, "--dtype");
  ExpectUsageError({"--mode", "fast", "key", "1"}, "--mode");
  ExpectUsageError({"permutation", "0:0", "99999999999"}, "bad N");
  ExpectUsageError({"shuffle", "0:0"}, "A subcommand is required");
  ExpectUsageError({}, "prng");
}

}  // namespace
}  // namespace detrain::testing
