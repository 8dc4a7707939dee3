// Loading CSV and .npy data: the bundled example data set, exact float parsing, and every
// malformed-input case with its message.
#include "frontend/data.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "base/npy.h"

namespace detrain::frontend {
namespace {

namespace fs = std::filesystem;

class DatasetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/detrain_data_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ + "/" + name, std::ios::binary) << text;
    return dir_ + "/" + name;
  }
  std::string Error(const std::string& text, CsvOptions opt = {}) {
    Result<Dataset> d = LoadCsv(Write("t.csv", text), opt);
    return d.ok() ? "" : d.status().message().substr(dir_.size() + 1);
  }
  std::string dir_;
};

uint32_t Bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

TEST_F(DatasetTest, BreastCancerFromDebian) {
  const std::string path = "/usr/lib/python3/dist-packages/sklearn/datasets/data/breast_cancer.csv";
  if (!fs::exists(path))
    GTEST_SKIP() << "python3-sklearn is not installed (tools/setup.sh installs it)";
  Result<Dataset> d = LoadCsv(path, {-1, 1, LabelType::kS32});
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_EQ(d->rows, 569);
  EXPECT_EQ(d->features, 30);
  EXPECT_EQ(d->x[0], 17.99f);
  EXPECT_EQ(d->x[29], 0.1189f);
  EXPECT_EQ(d->y_s32[0], 0);
  int benign = 0;
  for (int32_t y : d->y_s32) benign += y;
  EXPECT_EQ(benign, 357);  // sklearn: 212 malignant, 357 benign
}

TEST_F(DatasetTest, ParsesCorrectlyRoundedFloat32) {
  // 0.1 and 1e-45 (the smallest subnormal after rounding) parse directly to float, not via
  // double; 16777217 rounds to even (16777216).
  Result<Dataset> d =
      LoadCsv(Write("a.csv", "0.1, 1e-45 ,16777217,3\n-2.5,+7,0,1\r\n"), {-1, 0, LabelType::kS32});
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_EQ(Bits(d->x[0]), 0x3dcccccdu);
  EXPECT_EQ(Bits(d->x[1]), 0x00000001u);
  EXPECT_EQ(Bits(d->x[2]), 0x4b800000u);
  EXPECT_EQ(d->x[4], 7.0f);
  EXPECT_EQ(d->y_s32, (std::vector<int32_t>{3, 1}));
}

TEST_F(DatasetTest, LabelColumnAndFloatLabels) {
  Result<Dataset> d =
      LoadCsv(Write("b.csv", "h1,h2,h3\n1.5,2,3\n4,5,6\n"), {0, 1, LabelType::kF32});
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_EQ(d->features, 2);
  EXPECT_EQ(d->y_f32, (std::vector<float>{1.5f, 4.0f}));
  EXPECT_EQ(d->x, (std::vector<float>{2, 3, 5, 6}));
  EXPECT_EQ(d->file_sha256.size(), 1u);
}

TEST_F(DatasetTest, MalformedCsvIsReportedWithPosition) {
  EXPECT_EQ(Error("1,2,0\n3,x,1\n"), "t.csv:2:3: expected a number, found 'x'");
  EXPECT_EQ(Error("1,2,0\n3,4\n"),
            "t.csv:2: expected 3 columns (as on the first data line), found 2");
  EXPECT_EQ(Error("1,2,0.5\n"), "t.csv:1:5: expected an integer class label, found '0.5'");
  EXPECT_EQ(Error("1,2,0\n", {5, 0, LabelType::kS32}),
            "t.csv:1: label column 5 is outside the 3 columns");
  EXPECT_EQ(Error("1,,0\n"), "t.csv:1:3: expected a number, found ''");
  EXPECT_EQ(Error("1e39,2,0\n"), "t.csv:1:1: expected a number, found '1e39'");
  EXPECT_EQ(Error("header\n", {-1, 1, LabelType::kS32}), "t.csv: no data rows (after skipping 1)");
  EXPECT_EQ(Error("7\n"),
            "t.csv:1: expected a label and at least one feature column, found 1 column");
}

TEST_F(DatasetTest, MissingFile) {
  Result<Dataset> d = LoadCsv(dir_ + "/nope.csv", {});
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), StatusCode::kNotFound);
}

TEST_F(DatasetTest, NpyPair) {
  NpyArray x{NpyDtype::kF32, {2, 3}, std::string(24, '\0')};
  float xs[6] = {1, 2, 3, 4, 5, 6};
  std::memcpy(x.data.data(), xs, 24);
  NpyArray y{NpyDtype::kS64, {2}, std::string(16, '\0')};
  int64_t ys[2] = {1, 0};
  std::memcpy(y.data.data(), ys, 16);
  ASSERT_TRUE(WriteNpyFile(dir_ + "/x.npy", x).ok());
  ASSERT_TRUE(WriteNpyFile(dir_ + "/y.npy", y).ok());
  Result<Dataset> d = LoadNpyPair(dir_ + "/x.npy", dir_ + "/y.npy", LabelType::kS32);
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_EQ(d->rows, 2);
  EXPECT_EQ(d->features, 3);
  EXPECT_EQ(d->y_s32, (std::vector<int32_t>{1, 0}));
  NpyArray bad{NpyDtype::kS32, {3}, std::string(12, '\0')};
  ASSERT_TRUE(WriteNpyFile(dir_ + "/bad.npy", bad).ok());
  Result<Dataset> e = LoadNpyPair(dir_ + "/x.npy", dir_ + "/bad.npy", LabelType::kS32);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("labels must have shape [2]"), std::string::npos);
}

}  // namespace
}  // namespace detrain::frontend
