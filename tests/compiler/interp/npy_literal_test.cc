// .npy reading and writing (base/npy.h) and the conversion to IR literals: files written by
// numpy parse, our files round-trip, and malformed files are rejected with a reason.
#include <gtest/gtest.h>

#include "../ir/test_util.h"
#include "base/npy.h"
#include "compiler/ir/literal_npy.h"

namespace detrain {
namespace {

TEST(Npy, ReadsNumpyFilesAndWritesThemBackIdentically) {
  for (const char* rel :
       {"mlp_forward/in/p0.npy", "data_movement/in/p1.npy", "data_movement/in/p2.npy",
        "data_movement/out6.npy", "mlp_grad/out1.npy"}) {
    std::string bytes = testing::ReadTextFile(testing::JaxTestdata() / rel);
    auto array = ParseNpy(bytes);
    ASSERT_TRUE(array.ok()) << rel << ": " << array.status().message();
    EXPECT_EQ(SerializeNpy(*array), bytes) << rel;  // numpy's own v1.0 layout, byte for byte
  }
}

TEST(Npy, EveryDtypeRoundTripsThroughLiterals) {
  for (NpyDtype d : {NpyDtype::kBool, NpyDtype::kF32, NpyDtype::kS32, NpyDtype::kU32,
                     NpyDtype::kS64, NpyDtype::kU64}) {
    NpyArray a;
    a.dtype = d;
    a.shape = {2, 1, 3};
    a.data.assign(static_cast<size_t>(6 * NpyItemSize(d)), '\x01');
    auto parsed = ParseNpy(SerializeNpy(a));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(parsed->shape, a.shape);
    auto lit = ir::LiteralFromNpy(*parsed);
    ASSERT_TRUE(lit.ok());
    EXPECT_EQ(ir::LiteralToNpy(*lit).data, a.data);
    EXPECT_EQ(SerializeNpy(ir::LiteralToNpy(*lit)).size() % 64,
              static_cast<size_t>(6 * NpyItemSize(d)) % 64);
  }
  NpyArray scalar;
  scalar.data = std::string(4, '\0');
  EXPECT_EQ(ParseNpy(SerializeNpy(scalar))->shape.size(), 0u);
}

TEST(Npy, RejectsWhatItCannotReadExactly) {
  NpyArray a;
  a.shape = {2};
  a.data = std::string(8, '\0');
  std::string good = SerializeNpy(a);
  auto replace = [&](const std::string& from, const std::string& to) {
    std::string s = good;
    s.replace(s.find(from), from.size(), to);
    return s;
  };
  EXPECT_NE(ParseNpy(replace("<f4", ">f4")).status().message().find("unsupported .npy dtype '>f4'"),
            std::string::npos);
  EXPECT_NE(ParseNpy(replace("<f4", "<f8")).status().message().find("unsupported"),
            std::string::npos);
  EXPECT_NE(ParseNpy(replace("False", "True ")).status().message().find("Fortran"),
            std::string::npos);
  EXPECT_FALSE(ParseNpy(good.substr(0, good.size() - 1)).ok());
  EXPECT_FALSE(ParseNpy("\x93NUMPX" + good.substr(6)).ok());
  EXPECT_FALSE(ParseNpy(good.substr(0, 9)).ok());
  NpyArray b;
  b.dtype = NpyDtype::kBool;
  b.shape = {1};
  b.data = "\x02";
  auto bad_bool = ir::LiteralFromNpy(*ParseNpy(SerializeNpy(b)));
  EXPECT_FALSE(bad_bool.ok());
}

}  // namespace
}  // namespace detrain
