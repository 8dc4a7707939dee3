// safetensors: deterministic bytes, round trips, every rejection of a malformed file, a byte-flip
// fuzz loop, and a check by an independent reader (numpy, when it is installed).
#include "base/safetensors.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>

#include "base/file_io.h"
#include "safetensors_test_util.h"

namespace detrain {
namespace {

template <typename T>
std::string Bytes(std::vector<T> v) {
  std::string s(v.size() * sizeof(T), '\0');
  if (!v.empty()) std::memcpy(s.data(), v.data(), s.size());
  return s;
}

using safetensors_test::RawFile;
using safetensors_test::U64Le;

SafetensorsFile Sample() {
  SafetensorsFile f;
  f.metadata = {{"format", "pt"}, {"step", "12"}};
  f.tensors = {
      {"w", "F32", {2, 3}, Bytes<float>({1.5f, -2.0f, 0.25f, 1e30f, -0.0f, 3.0f})},
      {"bias", "F64", {2}, Bytes<double>({0.1, -7.0})},
      {"step", "I32", {}, Bytes<int32_t>({-42})},
      {"empty", "U32", {0, 5}, ""},
      {"i64", "I64", {1}, Bytes<int64_t>({std::numeric_limits<int64_t>::min()})},
      {"u64", "U64", {3}, Bytes<uint64_t>({0, 1, ~uint64_t{0}})},
      {"u8", "U8", {4}, Bytes<uint8_t>({0, 1, 200, 255})},
      {"i8", "I8", {2, 1, 1}, Bytes<int8_t>({-128, 127})},
      {"mask", "BOOL", {3}, Bytes<uint8_t>({1, 0, 1})},
  };
  return f;
}

void ExpectSame(const SafetensorsFile& a, const SafetensorsFile& b) {
  EXPECT_EQ(a.metadata, b.metadata);
  ASSERT_EQ(a.tensors.size(), b.tensors.size());
  for (size_t i = 0; i < a.tensors.size(); ++i) {
    EXPECT_EQ(a.tensors[i].name, b.tensors[i].name);
    EXPECT_EQ(a.tensors[i].dtype, b.tensors[i].dtype) << a.tensors[i].name;
    EXPECT_EQ(a.tensors[i].shape, b.tensors[i].shape) << a.tensors[i].name;
    EXPECT_EQ(a.tensors[i].data, b.tensors[i].data) << a.tensors[i].name;
  }
}

SafetensorsFile SortedByName(SafetensorsFile f) {
  std::sort(f.tensors.begin(), f.tensors.end(),
            [](const SafeTensor& x, const SafeTensor& y) { return x.name < y.name; });
  return f;
}

TEST(SafetensorsTest, ItemSizes) {
  EXPECT_EQ(SafetensorsItemSize("F32"), 4);
  EXPECT_EQ(SafetensorsItemSize("F64"), 8);
  EXPECT_EQ(SafetensorsItemSize("I32"), 4);
  EXPECT_EQ(SafetensorsItemSize("U32"), 4);
  EXPECT_EQ(SafetensorsItemSize("I64"), 8);
  EXPECT_EQ(SafetensorsItemSize("U64"), 8);
  EXPECT_EQ(SafetensorsItemSize("U8"), 1);
  EXPECT_EQ(SafetensorsItemSize("I8"), 1);
  EXPECT_EQ(SafetensorsItemSize("BOOL"), 1);
  EXPECT_EQ(SafetensorsItemSize("F16"), 0);
  EXPECT_EQ(SafetensorsItemSize("f32"), 0);
  EXPECT_EQ(SafetensorsItemSize(""), 0);
}

TEST(SafetensorsTest, RoundTripsEveryDtypeAndShape) {
  SafetensorsFile in = Sample();
  Result<std::string> bytes = SerializeSafetensors(in);
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  uint64_t n = 0;
  std::memcpy(&n, bytes->data(), 8);
  EXPECT_EQ((8 + n) % 8, 0u);
  Result<SafetensorsFile> out = ParseSafetensors(*bytes);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ExpectSame(*out, SortedByName(in));
  EXPECT_EQ(*SerializeSafetensors(*out), *bytes);
}

TEST(SafetensorsTest, ExactBytesOfATinyFile) {
  SafetensorsFile f;
  f.metadata = {{"k", "v"}};
  f.tensors = {{"b", "F32", {2}, Bytes<float>({1.0f, -2.0f})}, {"a", "U8", {}, "\x07"}};
  // 130 bytes of JSON + 6 spaces: 8 + 136 = 144, a multiple of 8.
  std::string expected = std::string("\x88\0\0\0\0\0\0\0", 8) +
                         R"({"__metadata__":{"k":"v"},)"
                         R"("a":{"data_offsets":[0,1],"dtype":"U8","shape":[]},)"
                         R"("b":{"data_offsets":[1,9],"dtype":"F32","shape":[2]}})"
                         "      " +
                         std::string("\x07\x00\x00\x80\x3f\x00\x00\x00\xc0", 9);
  EXPECT_EQ(*SerializeSafetensors(f), expected);
}

TEST(SafetensorsTest, NoMetadataObjectWhenEmpty) {
  SafetensorsFile f;
  f.tensors = {{"x", "I8", {1}, "\x01"}};
  std::string expected = U64Le(56) + R"({"x":{"data_offsets":[0,1],"dtype":"I8","shape":[1]}})" +
                         std::string(3, ' ') + "\x01";
  EXPECT_EQ(*SerializeSafetensors(f), expected);
  EXPECT_EQ(*SerializeSafetensors(SafetensorsFile{}), U64Le(8) + "{}      ");
}

TEST(SafetensorsTest, BytesDoNotDependOnInputOrder) {
  SafetensorsFile f = Sample();
  std::string first = *SerializeSafetensors(f);
  std::sort(f.tensors.begin(), f.tensors.end(),
            [](const SafeTensor& x, const SafeTensor& y) { return x.name < y.name; });
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(*SerializeSafetensors(f), first) << "permutation " << i;
    std::next_permutation(f.tensors.begin(), f.tensors.end(),
                          [](const SafeTensor& x, const SafeTensor& y) { return x.name < y.name; });
  }
  std::reverse(f.tensors.begin(), f.tensors.end());
  EXPECT_EQ(*SerializeSafetensors(f), first);
}

TEST(SafetensorsTest, SerializeRejectsBadTensors) {
  auto Fails = [](std::vector<SafeTensor> tensors, std::string_view what) {
    SafetensorsFile f;
    f.tensors = std::move(tensors);
    Result<std::string> r = SerializeSafetensors(f);
    ASSERT_FALSE(r.ok()) << what;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find(what), std::string::npos) << r.status().message();
  };
  Fails({{"", "U8", {}, "x"}}, "empty name");
  Fails({{"a", "U8", {}, "x"}, {"a", "U8", {}, "y"}}, "two tensors are named \"a\"");
  Fails({{"__metadata__", "U8", {}, "x"}}, "reserved");
  Fails({{"a", "F16", {}, "xx"}}, "unsupported dtype \"F16\"");
  Fails({{"a", "F32", {2}, "xxxx"}}, "has 4 data bytes");
  Fails({{"a", "U8", {-1}, ""}}, "shape [-1]");
  Fails({{"a", "U8", {int64_t{1} << 62, int64_t{1} << 62}, ""}}, "shape [");
  Fails({{"bad\xff", "U8", {}, "x"}}, "UTF-8");
}

Status ParseError(std::string_view bytes) {
  Result<SafetensorsFile> r = ParseSafetensors(bytes);
  return r.ok() ? Status::Ok() : r.status();
}

void ExpectDataLoss(std::string_view bytes, std::string_view what) {
  Status st = ParseError(bytes);
  ASSERT_FALSE(st.ok()) << "accepted; expected: " << what;
  EXPECT_EQ(st.code(), StatusCode::kDataLoss) << st.ToString();
  EXPECT_EQ(st.message().rfind("safetensors: ", 0), 0u) << st.message();
  EXPECT_NE(st.message().find(what), std::string::npos) << st.message();
}

TEST(SafetensorsTest, RejectsEveryTruncation) {
  std::string bytes = *SerializeSafetensors(Sample());
  for (size_t len = 0; len < bytes.size(); ++len) {
    Status st = ParseError(std::string_view(bytes).substr(0, len));
    EXPECT_EQ(st.code(), StatusCode::kDataLoss) << "prefix of " << len << " bytes";
  }
  ExpectDataLoss(bytes.substr(0, 7), "file is 7 bytes, shorter than the 8-byte header length");
  ExpectDataLoss(bytes.substr(0, bytes.size() - 1), "data bytes");
}

TEST(SafetensorsTest, RejectsLyingHeaderLength) {
  std::string header = R"({"a":{"dtype":"U8","shape":[],"data_offsets":[0,1]}})";
  std::string body = header + "x";
  ASSERT_TRUE(ParseError(RawFile(header, "x")).ok());
  ExpectDataLoss(U64Le(~uint64_t{0}) + body,
                 "header length 18446744073709551615 exceeds the file's " +
                     std::to_string(body.size()) + " bytes after the length field");
  ExpectDataLoss(U64Le(uint64_t{1} << 63) + body, "header length 9223372036854775808 exceeds");
  ExpectDataLoss(U64Le(body.size() + 1) + body, "exceeds the file's");
  ExpectDataLoss(U64Le(header.size() - 1) + body, "not valid JSON");
  ExpectDataLoss(U64Le(header.size() + 1) + body, "not valid JSON");  // "x" read as JSON
  ExpectDataLoss(U64Le(0) + body, "not valid JSON");
  // Over the 100 MB limit, although the file is long enough.
  std::string big = U64Le(100'000'001) + std::string(100'000'001, ' ');
  ExpectDataLoss(big, "header length 100000001 exceeds the limit of 100000000 bytes");
}

TEST(SafetensorsTest, RejectsNestingBombWithoutRecursing) {
  ExpectDataLoss(RawFile(std::string(1'000'000, '['), ""), "nests deeper than 3 levels");
  ExpectDataLoss(RawFile(std::string(1'000'000, '{'), ""), "nests deeper than 3 levels");
  ExpectDataLoss(RawFile(R"({"a":{"dtype":"U8","shape":[[1]],"data_offsets":[0,1]}})", "x"),
                 "nests deeper than 3 levels at byte 28");
  ExpectDataLoss(RawFile("{}]" + std::string(1'000, '['), ""), "closes a bracket at byte 2");
  // Brackets and escaped quotes inside strings are not nesting.
  std::string header = R"({"__metadata__":{"k\"[[[[":"\\\"[[[[{{{{\\"},"a":{"dtype":"U8",)"
                       R"("shape":[1],"data_offsets":[0,1]}})";
  Result<SafetensorsFile> r = ParseSafetensors(RawFile(header, "x"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->metadata.at("k\"[[[["), "\\\"[[[[{{{{\\");
}

struct BadHeader {
  std::string header;
  std::string data;
  std::string what;  // a part of the expected message
};

TEST(SafetensorsTest, RejectsMalformedHeaders) {
  const std::string t = R"("dtype":"F32","shape":[1],"data_offsets":)";  // a 4-byte tensor
  const BadHeader cases[] = {
      {R"({"a":)", "", "not valid JSON"},
      {"{\"a\xff\":1}", "", "not valid JSON"},
      {R"({"a":{"dtype":"U8","shape":[1e400],"data_offsets":[0,1]}})", "x", "not valid JSON"},
      {R"([])", "", "not a JSON object"},
      {R"(7)", "", "not a JSON object"},
      {R"({"a":7})", "", R"(tensor "a" is a number)"},
      {R"({"a":{"dtype":"F16","shape":[1],"data_offsets":[0,2]}})", "xx", "dtype \"F16\""},
      {R"({"a":{"dtype":4,"shape":[1],"data_offsets":[0,4]}})", "xxxx", "dtype 4;"},
      {R"({"a":{"shape":[1],"data_offsets":[0,4]}})", "xxxx", "has keys"},
      {R"({"a":{)" + t + R"([0,4],"extra":1}})", "xxxx", "expected exactly"},
      {R"({"a":{"dtype":"F32","shape":1,"data_offsets":[0,4]}})", "xxxx", "not an array"},
      {R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", "xxxx",
       "shape entry 0 is -1, not a non-negative integer"},
      {R"({"a":{"dtype":"F32","shape":[1.0],"data_offsets":[0,4]}})", "xxxx", "shape entry 0"},
      {R"({"a":{"dtype":"F32","shape":["1"],"data_offsets":[0,4]}})", "xxxx", "shape entry 0"},
      {R"({"a":{"dtype":"U8","shape":[9223372036854775808],"data_offsets":[0,0]}})", "",
       "larger than 2^63-1"},
      {R"({"a":{"dtype":"F32","shape":[4611686018427387904,4611686018427387904],)"
       R"("data_offsets":[0,0]}})",
       "", "more than 2^64 bytes"},
      {R"({"a":{"dtype":"U8","shape":[4294967296,4294967296],"data_offsets":[0,0]}})", "",
       "more than 2^64 bytes"},
      {R"({"a":{)" + t + R"("0,4"}})", "xxxx", "not [begin, end]"},
      {R"({"a":{)" + t + R"([0,4,4]}})", "xxxx", "not [begin, end]"},
      {R"({"a":{)" + t + R"([-1,3]}})", "xxxx", "data_offsets begin is -1"},
      {R"({"a":{)" + t + R"([4,0]}})", "xxxx", "begin > end"},
      {R"({"a":{)" + t + R"([0,8]}})", "xxxx", "[0,8] past the end of the 4 data bytes"},
      {R"({"a":{)" + t + R"([0,3]}})", "xxxx", "(3 bytes) but shape [1] and dtype F32 need 4"},
      {R"({"a":{)" + t + R"([18446744073709551612,18446744073709551616]}})", "xxxx",
       "data_offsets end"},
      {R"({"a":{)" + t + R"([0,4]},"b":{)" + t + R"([8,12]}})", std::string(12, 'x'),
       R"(tensor "b" starts at data byte 8 but the previous tensor ends at 4 (gap))"},
      {R"({"a":{)" + t + R"([0,4]},"b":{)" + t + R"([2,6]}})", std::string(6, 'x'),
       R"(tensor "b" starts at data byte 2 but the previous tensor ends at 4 (overlap))"},
      {R"({"a":{)" + t + R"([0,4]},"b":{)" + t + R"([0,4]}})", std::string(4, 'x'), "(overlap)"},
      {R"({"a":{)" + t + R"([4,8]}})", std::string(8, 'x'), "starts at data byte 4"},
      {R"({"a":{)" + t + R"([0,4]}})", std::string(5, 'x'),
       "tensors cover 4 data bytes but the file has 5 after the header"},
      {R"({})", "x", "tensors cover 0 data bytes but the file has 1"},
      {R"({"a":{)" + t + R"([0,4]},"a":{)" + t + R"([4,8]}})", std::string(8, 'x'),
       R"(the key "a" twice)"},
      {R"({"a":{"dtype":"U8","dtype":"U8","shape":[1],"data_offsets":[0,1]}})", "x",
       R"(the key "dtype" twice)"},
      {R"({"":{)" + t + R"([0,4]}})", "xxxx", "empty name"},
      {R"({"__metadata__":{"k":1}})", "", R"("__metadata__" entry "k" is a number)"},
      {R"({"__metadata__":{"k":["v"]}})", "", "is an array, not a string"},
      {R"({"__metadata__":"v"})", "", R"("__metadata__" is a string)"},
      {R"({"__metadata__":{"k":"v","k":"w"}})", "", R"(the key "k" twice)"},
  };
  for (const BadHeader& c : cases) {
    SCOPED_TRACE(c.header);
    ExpectDataLoss(RawFile(c.header, c.data), c.what);
  }
}

TEST(SafetensorsTest, AcceptsZeroSizeTensorsAnywhere) {
  // Hand-written: unsorted keys, whitespace, no padding, zero-size tensors between the others.
  std::string header =
      R"( { "z" : {"dtype":"U8","shape":[2],"data_offsets":[0,2]}, "e":{"shape":[0,3],)"
      R"("dtype":"F64","data_offsets":[2,2]}, "a":{"dtype":"U8","shape":[1],)"
      R"("data_offsets":[2,3]}, "__metadata__":{} } )";
  Result<SafetensorsFile> r = ParseSafetensors(RawFile(header, "xyw"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->tensors.size(), 3u);
  EXPECT_EQ(r->tensors[0].name, "a");
  EXPECT_EQ(r->tensors[0].data, "w");
  EXPECT_EQ(r->tensors[1].name, "e");
  EXPECT_EQ(r->tensors[1].shape, (std::vector<int64_t>{0, 3}));
  EXPECT_EQ(r->tensors[1].data, "");
  EXPECT_EQ(r->tensors[2].data, "xy");
  EXPECT_TRUE(r->metadata.empty());
}

// Every byte flipped in a few ways: never a crash, and either an error or a file that holds
// together (sizes agree with shapes, names sorted and unique, and it serializes again).
TEST(SafetensorsTest, ByteFlipFuzz) {
  const std::string valid = *SerializeSafetensors(Sample());
  int accepted = 0;
  int rejected = 0;
  for (size_t pos = 0; pos < valid.size(); ++pos) {
    for (unsigned char x : {0x01, 0x20, 0x80, 0xff}) {
      std::string bytes = valid;
      bytes[pos] = static_cast<char>(bytes[pos] ^ x);
      Result<SafetensorsFile> r = ParseSafetensors(bytes);
      if (!r.ok()) {
        EXPECT_EQ(r.status().code(), StatusCode::kDataLoss);
        ++rejected;
        continue;
      }
      ++accepted;
      for (size_t i = 0; i < r->tensors.size(); ++i) {
        const SafeTensor& t = r->tensors[i];
        if (i > 0) {
          EXPECT_LT(r->tensors[i - 1].name, t.name);
        }
        int64_t n = SafetensorsItemSize(t.dtype);
        for (int64_t d : t.shape) n *= d;
        EXPECT_EQ(static_cast<int64_t>(t.data.size()), n) << t.name;
      }
      EXPECT_TRUE(SerializeSafetensors(*r).ok()) << "flip at " << pos;
    }
  }
  // Flips in the data are accepted; flips in the length or structure are not.
  EXPECT_GT(accepted, 0);
  EXPECT_GT(rejected, 0);
}

class SafetensorsFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/detrain_st_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

TEST_F(SafetensorsFileTest, WriteThenRead) {
  std::string path = dir_ + "/w.safetensors";
  ASSERT_TRUE(WriteSafetensorsFile(path, Sample()).ok());
  EXPECT_EQ(*ReadFile(path), *SerializeSafetensors(Sample()));
  Result<SafetensorsFile> r = ReadSafetensorsFile(path);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ExpectSame(*r, SortedByName(Sample()));

  ASSERT_TRUE(WriteFileAtomic(path, "short").ok());
  r = ReadSafetensorsFile(path);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(r.status().message().rfind(path + ": safetensors: file is 5 bytes", 0), 0u)
      << r.status().message();
  EXPECT_EQ(ReadSafetensorsFile(dir_ + "/missing").status().code(), StatusCode::kNotFound);
  EXPECT_FALSE(ReadSafetensorsFile("/dev/zero").ok());
  EXPECT_FALSE(WriteSafetensorsFile(path, {{}, {{"", "U8", {}, "x"}}}).ok());
}

// The first of `python3` and `/usr/bin/python3` that can import numpy, or "".
std::string PythonWithNumpy() {
  for (const char* py : {"python3", "/usr/bin/python3"}) {
    std::string cmd = std::string(py) + " -c 'import numpy' > /dev/null 2>&1";
    if (std::system(cmd.c_str()) == 0) return py;
  }
  return "";
}

int ExitCode(const std::string& cmd) {
  int rc = std::system(cmd.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

// numpy reads what detrain writes: the header with `json`, each tensor with np.frombuffer.
TEST_F(SafetensorsFileTest, NumpyReadsTheFile) {
  std::string py = PythonWithNumpy();
  if (py.empty()) GTEST_SKIP() << "no python3 with numpy";
  std::string path = dir_ + "/w.safetensors";
  ASSERT_TRUE(WriteSafetensorsFile(path, Sample()).ok());
  std::string check = py + " " DETRAIN_SOURCE_DIR "/tests/base/safetensors_numpy_check.py " + path;
  std::string expect =
      " --tensors 9 --metadata format=pt --metadata step=12"
      " --expect w=F32:2x3:1.5,-2,0.25,1e30,-0.0,3"
      " --expect bias=F64:2:0.1,-7 --expect step=I32::-42 --expect empty=U32:0x5:"
      " --expect i64=I64:1:-9223372036854775808 --expect u64=U64:3:0,1,18446744073709551615"
      " --expect u8=U8:4:0,1,200,255 --expect i8=I8:2x1x1:-128,127"
      " --expect mask=BOOL:3:1,0,1";
  EXPECT_EQ(ExitCode(check + expect), 0);
  // The script really compares: a wrong value, dtype, shape, or a missing tensor fails.
  EXPECT_NE(ExitCode(check + " --expect w=F32:2x3:1.5,-2,0.25,1e30,0.0,3 2> /dev/null"), 0);
  EXPECT_NE(ExitCode(check + " --expect step=I64::-42 2> /dev/null"), 0);
  EXPECT_NE(ExitCode(check + " --expect u8=U8:2x2:0,1,200,255 2> /dev/null"), 0);
  EXPECT_NE(ExitCode(check + " --expect nope=U8:1:0 2> /dev/null"), 0);
  EXPECT_NE(ExitCode(check + " --tensors 8 2> /dev/null"), 0);
  EXPECT_NE(ExitCode(check + " --metadata format=jax --metadata step=12 2> /dev/null"), 0);
}

}  // namespace
}  // namespace detrain
