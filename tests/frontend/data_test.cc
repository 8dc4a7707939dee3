// Loading CSV, .npy and .npz data: the bundled example data set, exact float parsing, headers
// and column selection, and every malformed-input case with its message.
#include "frontend/data.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "base/budget.h"
#include "base/npy.h"
#include "base/testing/zip_writer.h"

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
  // With header = true and the given label and feature columns.
  std::string HeaderError(const std::string& text, ColumnRef label,
                          std::vector<ColumnRef> columns = {}) {
    return Error(text, Header(std::move(label), std::move(columns)));
  }
  // Without a header: the label column by index.
  static CsvOptions Plain(int64_t label, int64_t skip_rows, LabelType type) {
    CsvOptions opt;
    opt.label = label;
    opt.skip_rows = skip_rows;
    opt.label_type = type;
    return opt;
  }
  static CsvOptions Header(ColumnRef label, std::vector<ColumnRef> columns = {},
                           LabelType type = LabelType::kS32) {
    CsvOptions opt;
    opt.label = std::move(label);
    opt.header = true;
    opt.columns = std::move(columns);
    opt.label_type = type;
    return opt;
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
  Result<Dataset> d = LoadCsv(path, Plain(-1, 1, LabelType::kS32));
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
  Result<Dataset> d = LoadCsv(Write("a.csv", "0.1, 1e-45 ,16777217,3\n-2.5,+7,0,1\r\n"),
                              Plain(-1, 0, LabelType::kS32));
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_EQ(Bits(d->x[0]), 0x3dcccccdu);
  EXPECT_EQ(Bits(d->x[1]), 0x00000001u);
  EXPECT_EQ(Bits(d->x[2]), 0x4b800000u);
  EXPECT_EQ(d->x[4], 7.0f);
  EXPECT_EQ(d->y_s32, (std::vector<int32_t>{3, 1}));
}

TEST_F(DatasetTest, LabelColumnAndFloatLabels) {
  Result<Dataset> d =
      LoadCsv(Write("b.csv", "h1,h2,h3\n1.5,2,3\n4,5,6\n"), Plain(0, 1, LabelType::kF32));
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
  EXPECT_EQ(Error("1,2,0\n", Plain(5, 0, LabelType::kS32)),
            "t.csv:1: label column 5 is outside the 3 columns");
  EXPECT_EQ(Error("1,,0\n"), "t.csv:1:3: expected a number, found ''");
  EXPECT_EQ(Error("1e39,2,0\n"), "t.csv:1:1: expected a number, found '1e39'");
  EXPECT_EQ(Error("header\n", Plain(-1, 1, LabelType::kS32)),
            "t.csv: no data rows (after skipping 1)");
  EXPECT_EQ(Error("7\n"),
            "t.csv:1: expected a label and at least one feature column, found 1 column");
}

TEST_F(DatasetTest, HeaderNamesTheColumns) {
  // Names are trimmed; \r\n line ends, a byte-order mark and a blank last line are fine.
  Result<Dataset> d = LoadCsv(Write("h.csv", "\xEF\xBB\xBF a , b ,label\r\n1,2,0\r\n3,4,1\r\n\r\n"),
                              Header("label"));
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_EQ(d->rows, 2);
  EXPECT_EQ(d->features, 2);
  EXPECT_EQ(d->x_dims, (std::vector<int64_t>{2}));
  EXPECT_EQ(d->x, (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(d->y_s32, (std::vector<int32_t>{0, 1}));
  // By index, the header still read as names; float labels.
  d = LoadCsv(Write("h.csv", "a,y,b\n1,0.5,2\n"), Header(int64_t{1}, {}, LabelType::kF32));
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_EQ(d->x, (std::vector<float>{1, 2}));
  EXPECT_EQ(d->y_f32, (std::vector<float>{0.5f}));
  // skip_rows counts lines before the header.
  CsvOptions opt = Header("y");
  opt.skip_rows = 2;
  d = LoadCsv(Write("h.csv", "# exported\n\nx,y\n7,1\n"), opt);
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_EQ(d->x, (std::vector<float>{7}));
}

TEST_F(DatasetTest, ColumnsSelectAndOrderFeatures) {
  // Unselected columns are not parsed: they may hold text.
  const std::string text = "id,name,w,h,y\n1,ann,0.5,1.5,1\n2,bob,2.5,3.5,0\n";
  Result<Dataset> d = LoadCsv(Write("c.csv", text), Header("y", {"h", "w"}));
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_EQ(d->features, 2);
  EXPECT_EQ(d->x, (std::vector<float>{1.5f, 0.5f, 3.5f, 2.5f}));
  EXPECT_EQ(d->y_s32, (std::vector<int32_t>{1, 0}));
  // Names and indices (negative from the end) mix.
  d = LoadCsv(Write("c.csv", text), Header(int64_t{-1}, {int64_t{-2}, "w", int64_t{0}}));
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_EQ(d->x, (std::vector<float>{1.5f, 0.5f, 1, 3.5f, 2.5f, 2}));
  // Without a header, by index.
  CsvOptions opt;
  opt.label = int64_t{0};
  opt.columns = {int64_t{2}};
  d = LoadCsv(Write("c.csv", "1,x,5\n0,y,6\n"), opt);
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_EQ(d->x, (std::vector<float>{5, 6}));
  EXPECT_EQ(d->y_s32, (std::vector<int32_t>{1, 0}));
}

TEST_F(DatasetTest, HeaderAndColumnErrors) {
  EXPECT_EQ(HeaderError("a,b,a\n1,2,0\n", int64_t{-1}),
            "t.csv:1:5: column 2 is named 'a', as is column 0; names must be unique");
  EXPECT_EQ(HeaderError("a, ,y\n1,2,0\n", "y"),
            "t.csv:1:3: column 1 has no name (with header = true every column needs one)");
  EXPECT_EQ(HeaderError("a,b,label\n1,2,0\n", "lable"),
            "t.csv:1: no column named 'lable' (did you mean 'label'?); the header names a, b, "
            "label");
  EXPECT_EQ(HeaderError("age,weight,y\n1,2,0\n", "y", {"height"}),
            "t.csv:1: no column named 'height' (did you mean 'weight'?); the header names age, "
            "weight, y");
  EXPECT_EQ(HeaderError("age,weight,y\n1,2,0\n", "y", {"size"}),
            "t.csv:1: no column named 'size'; the header names age, weight, y");
  EXPECT_EQ(HeaderError("a,b,y\n1,2,0\n", "y", {int64_t{7}}),
            "t.csv:1: feature column 7 is outside the 3 columns");
  EXPECT_EQ(HeaderError("a,b,y\n1,2,0\n", "y", {"a", int64_t{-3}}),
            "t.csv:1: columns lists column 'a' twice");
  EXPECT_EQ(HeaderError("a,b,y\n1,2,0\n", "y", {"b", int64_t{2}}),
            "t.csv:1: columns lists column 'y', the label");
  EXPECT_EQ(HeaderError("a,b,y\n1,2,0\n3,4\n", "y"),
            "t.csv:3: expected 3 columns (as in the header), found 2");
  EXPECT_EQ(HeaderError("a,b,y\n1,x,0\n", "y"),
            "t.csv:2:3: expected a number, found 'x' in column 'b'");
  EXPECT_EQ(HeaderError("a,b,y\n1,2,z\n", "y"),
            "t.csv:2:5: expected an integer class label, found 'z' in column 'y'");
  EXPECT_EQ(HeaderError("a,b,y\n\n", "y"), "t.csv: no data rows after the header (line 1)");
  EXPECT_EQ(HeaderError("\n \n", "y"), "t.csv: no header line (after skipping 0)");
  EXPECT_EQ(HeaderError("y\n1\n", "y"),
            "t.csv:1: expected a label and at least one feature column, found 1 column");
  CsvOptions opt;
  opt.label = "y";
  EXPECT_EQ(Error("1,2,0\n", opt),
            "t.csv:1: label column 'y' is a name, which needs header = true");
  opt.label = int64_t{-1};
  opt.columns = {int64_t{0}, int64_t{-3}};
  EXPECT_EQ(Error("1,2,0\n", opt), "t.csv:1: columns lists column 0 twice");
  opt.columns = {int64_t{2}};
  EXPECT_EQ(Error("1,2,0\n", opt), "t.csv:1: columns lists column 2, the label");
  opt.columns = {int64_t{-4}};
  EXPECT_EQ(Error("1,2,0\n", opt), "t.csv:1: feature column -4 is outside the 3 columns");
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

NpyArray F32Array(std::vector<int64_t> shape, std::vector<float> v) {
  NpyArray a{NpyDtype::kF32, std::move(shape), std::string(v.size() * 4, '\0')};
  std::memcpy(a.data.data(), v.data(), a.data.size());
  return a;
}

NpyArray S64Array(std::vector<int64_t> v) {
  NpyArray a{NpyDtype::kS64, {static_cast<int64_t>(v.size())}, std::string(v.size() * 8, '\0')};
  std::memcpy(a.data.data(), v.data(), a.data.size());
  return a;
}

TEST_F(DatasetTest, NpzArchive) {
  for (bool compressed : {false, true}) {
    std::map<std::string, NpyArray> arrays = {{"feat", F32Array({3, 2}, {1, 2, 3, 4, 5, 6})},
                                              {"lab", S64Array({2, 0, 1})},
                                              {"x", F32Array({3}, {7, 8, 9})},
                                              {"y", F32Array({3}, {0.5f, 1.5f, 2.5f})}};
    const std::string path = Write("d.npz", testing::WriteNpz(arrays, compressed));
    Result<Dataset> d = LoadNpz(path, "feat", "lab", LabelType::kS32);
    ASSERT_TRUE(d.ok()) << d.status().message();
    EXPECT_EQ(d->rows, 3);
    EXPECT_EQ(d->features, 2);
    EXPECT_EQ(d->x, (std::vector<float>{1, 2, 3, 4, 5, 6}));
    EXPECT_EQ(d->y_s32, (std::vector<int32_t>{2, 0, 1}));
    ASSERT_EQ(d->file_sha256.size(), 1u);
    EXPECT_EQ(d->file_sha256[0].first, path);
    d = LoadNpz(path, "x", "y", LabelType::kF32);
    ASSERT_TRUE(d.ok()) << d.status().message();
    EXPECT_EQ(d->features, 1);
    EXPECT_EQ(d->y_f32, (std::vector<float>{0.5f, 1.5f, 2.5f}));
  }
}

// Archives written by Python's zipfile exactly as numpy.savez and numpy.savez_compressed call it
// (testdata/npz/make_npz.py): saturated 32-bit sizes with ZIP64 extra fields in local headers.
TEST_F(DatasetTest, NpzFromNumpysZipWriter) {
  for (const char* name : {"savez.npz", "savez_compressed.npz"}) {
    const std::string path =
        std::string(DETRAIN_SOURCE_DIR) + "/tests/frontend/testdata/npz/" + name;
    Result<Dataset> d = LoadNpz(path, "x", "y", LabelType::kS32);
    ASSERT_TRUE(d.ok()) << name << ": " << d.status().message();
    EXPECT_EQ(d->rows, 3);
    EXPECT_EQ(d->features, 2);
    EXPECT_EQ(d->x, (std::vector<float>{0.5f, 1, 2, 3, 4, 5}));
    EXPECT_EQ(d->y_s32, (std::vector<int32_t>{2, 0, 1}));
  }
}

TEST_F(DatasetTest, NpzErrorsNameFileAndArray) {
  std::map<std::string, NpyArray> arrays = {{"x", F32Array({2, 1}, {1, 2})},
                                            {"y", F32Array({2}, {0, 1})},
                                            {"big", S64Array({1, 1ll << 40})}};
  const std::string path = Write("d.npz", testing::WriteNpz(arrays, true));
  auto error = [&](const std::string& f, const std::string& l, LabelType t) {
    Result<Dataset> d = LoadNpz(path, f, l, t);
    return d.ok() ? "" : d.status().message().substr(dir_.size() + 1);
  };
  EXPECT_EQ(error("x", "labels", LabelType::kS32),
            "d.npz: no array 'labels'; the archive holds: big, x, y");
  EXPECT_EQ(error("x", "y", LabelType::kS32),
            "d.npz: array 'y': integer labels must be int32 or int64");
  EXPECT_EQ(error("y", "x", LabelType::kF32),
            "d.npz: array 'x': labels must have shape [2] to match the features");
  EXPECT_EQ(error("big", "y", LabelType::kF32),
            "d.npz: array 'big': features must be float32 with shape [rows] or [rows, F]");
  EXPECT_EQ(error("x", "big", LabelType::kS32),
            "d.npz: array 'big': label 1099511627776 does not fit s32");
  Write("bad.npz", "PK\x05\x06 is not really a zip archive at all");
  Result<Dataset> d = LoadNpz(dir_ + "/bad.npz", "x", "y", LabelType::kS32);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(d.status().message(),
            dir_ + "/bad.npz: not a zip archive: no end-of-central-directory record");
}

// An archive whose arrays inflate past --max-memory is refused before they are inflated, with
// the file, the member and the flag in the message; at the budget it loads.
TEST_F(DatasetTest, NpzBeyondTheMemoryBudgetNamesFileAndMember) {
  std::map<std::string, NpyArray> arrays = {
      {"x", F32Array({1024, 4}, std::vector<float>(4096, 0.0f))},
      {"y", S64Array(std::vector<int64_t>(1024, 1))}};
  const std::string path = Write("d.npz", testing::WriteNpz(arrays, true));
  const int64_t x = static_cast<int64_t>(SerializeNpy(arrays.at("x")).size());
  const int64_t y = static_cast<int64_t>(SerializeNpy(arrays.at("y")).size());
  SetMemoryBudget({x, x + y});
  Result<Dataset> at = LoadNpz(path, "x", "y", LabelType::kS32);
  SetMemoryBudget({x - 1, x + y});
  Result<Dataset> one = LoadNpz(path, "x", "y", LabelType::kS32);
  SetMemoryBudget({x, x + y - 1});
  Result<Dataset> both = LoadNpz(path, "x", "y", LabelType::kS32);
  SetMemoryBudget({0, 0});  // the default again
  ASSERT_TRUE(at.ok()) << at.status().message();
  EXPECT_EQ(at->rows, 1024);
  ASSERT_FALSE(one.ok());
  const std::string m = one.status().message().substr(dir_.size() + 1);
  EXPECT_EQ(m.rfind("d.npz: extracting member 'x.npy' (deflated, ", 0), 0u) << m;
  EXPECT_NE(m.find("needs 16.1 KiB, more than the one-tensor memory budget of 16.1 KiB (raise it "
                   "with --max-memory SIZE"),
            std::string::npos)
      << m;
  ASSERT_FALSE(both.ok());
  EXPECT_EQ(both.status().message().substr(dir_.size() + 1),
            "d.npz: extracting the 2 members 'x.npy', 'y.npy' together needs 24.2 KiB, more "
            "than the total memory budget of 24.2 KiB (raise it with --max-memory SIZE, e.g. "
            "--max-memory 64G)");
}

// The program's data source: paths resolved against its directory, digests recorded under the
// path as the program writes it.
TEST_F(DatasetTest, ProgramDataRecordsPathsAsWritten) {
  std::map<std::string, NpyArray> arrays = {{"x", F32Array({2, 1}, {1, 2})},
                                            {"y", S64Array({0, 1})}};
  const std::string bytes = testing::WriteNpz(arrays, false);
  Write("d.npz", bytes);
  DataConfig npz;
  npz.kind = DataSourceKind::kNpz;
  npz.path = "d.npz";
  npz.features = "x";
  npz.labels = "y";
  Result<Dataset> d = LoadProgramData(npz, dir_, LabelType::kS32);
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_EQ(d->rows, 2);
  ASSERT_EQ(d->file_sha256.size(), 1u);
  EXPECT_EQ(d->file_sha256[0].first, "d.npz");
  EXPECT_EQ(d->file_sha256[0].second.size(), 64u);

  Write("h.csv", "a,b,y\n1,2,0\n");
  DataConfig csv;
  csv.path = "h.csv";
  csv.header = true;
  csv.label = "y";
  csv.columns = {"b"};
  d = LoadProgramData(csv, dir_, LabelType::kS32);
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_EQ(d->x, (std::vector<float>{2}));
  ASSERT_EQ(d->file_sha256.size(), 1u);
  EXPECT_EQ(d->file_sha256[0].first, "h.csv");
}

}  // namespace
}  // namespace detrain::frontend
