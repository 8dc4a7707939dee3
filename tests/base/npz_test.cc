// .npz archives as numpy.savez and numpy.savez_compressed write them: arrays by name, numpy's
// lookup rule, and errors that name the array.
#include "base/npz.h"

#include <gtest/gtest.h>

#include <cstring>

#include "base/testing/zip_writer.h"

namespace detrain {
namespace {

NpyArray F32(std::vector<int64_t> shape, std::vector<float> v) {
  NpyArray a{NpyDtype::kF32, std::move(shape), std::string(v.size() * 4, '\0')};
  std::memcpy(a.data.data(), v.data(), a.data.size());
  return a;
}

NpyArray S64(std::vector<int64_t> v) {
  NpyArray a{NpyDtype::kS64, {static_cast<int64_t>(v.size())}, std::string(v.size() * 8, '\0')};
  std::memcpy(a.data.data(), v.data(), a.data.size());
  return a;
}

std::map<std::string, NpyArray> Arrays() {
  return {{"x", F32({2, 3}, {1, 2, 3, 4, 5, 6})}, {"y", S64({1, 0})}};
}

void ExpectSame(const NpyArray& a, const NpyArray& b) {
  EXPECT_EQ(a.dtype, b.dtype);
  EXPECT_EQ(a.shape, b.shape);
  EXPECT_EQ(a.data, b.data);
}

TEST(NpzTest, SavezAndSavezCompressed) {
  for (bool compressed : {false, true}) {
    const std::string npz = testing::WriteNpz(Arrays(), compressed);
    auto all = ParseNpz(npz);
    ASSERT_TRUE(all.ok()) << all.status().message();
    ASSERT_EQ(all->size(), 2u);
    ExpectSame(all->at("x"), Arrays().at("x"));
    ExpectSame(all->at("y"), Arrays().at("y"));
    auto some = ParseNpz(npz, {"y"});
    ASSERT_TRUE(some.ok()) << some.status().message();
    ASSERT_EQ(some->size(), 1u);
    ExpectSame(some->at("y"), Arrays().at("y"));
  }
}

TEST(NpzTest, LooksUpLikeNumpy) {
  // The exact member name first, then "<name>.npy".
  const std::string npz = testing::WriteZip(
      {{"x.npy", SerializeNpy(Arrays().at("x"))}, {"y", SerializeNpy(Arrays().at("y"))}});
  auto r = ParseNpz(npz, {"x.npy", "x", "y"});
  ASSERT_TRUE(r.ok()) << r.status().message();
  ExpectSame(r->at("x.npy"), Arrays().at("x"));
  ExpectSame(r->at("x"), Arrays().at("x"));
  ExpectSame(r->at("y"), Arrays().at("y"));
}

TEST(NpzTest, ErrorsNameTheArray) {
  const std::string npz = testing::WriteNpz(Arrays(), false);
  auto r = ParseNpz(npz, {"xx"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(r.status().message(), "no array 'xx' (did you mean 'x'?); the archive holds: x, y");
  r = ParseNpz(testing::WriteZip({}), {"x"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "no array 'x'; the archive is empty");
  r = ParseNpz(testing::WriteZip({{"x.npy", "not an array"}}), {"x"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "array 'x' (x.npy): not an .npy file (bad magic)");
  testing::ZipLayout l;
  std::string bad = testing::WriteZip({{"x.npy", SerializeNpy(Arrays().at("x"))}}, {}, &l);
  bad[l.data[0] + 70] ^= 1;
  r = ParseNpz(bad, {"x"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(r.status().message().substr(0, 41), "array 'x': member 'x.npy': its bytes have");
  r = ParseNpz(testing::WriteZip({{"x", "a"}, {"x.npy", "b"}}));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "members 'x' and 'x.npy' both name array 'x'");
  r = ParseNpz("garbage");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDataLoss);
}

}  // namespace
}  // namespace detrain
