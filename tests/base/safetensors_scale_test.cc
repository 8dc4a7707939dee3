// safetensors headers with many tensors (docs/reliability.md, "Headers with many tensors"): the
// reader and the writer take linear time and memory (they used to build one JSON value of the
// whole header, through a parser whose duplicate-key callback made it quadratic: 17 s at 50,000
// empty tensors), the header limit is the only limit, errors are those of key order, and the
// writer's bytes are those of the old whole-header writer.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "base/safetensors.h"
#include "safetensors_test_util.h"

namespace detrain {
namespace scale_test {  // named: the unity build (DETRAIN_CI_BUILD) joins it with
                        // safetensors_test.cc
namespace {

using safetensors_test::RawFile;
using safetensors_test::U64Le;

std::string Name(int i) {
  std::string digits = std::to_string(i);
  return "t" + std::string(7 - digits.size(), '0') + digits;
}

// A header entry of an empty tensor, or of anything given.
std::string Entry(const std::string& name, const std::string& body = "") {
  return "\"" + name + "\":" +
         (body.empty() ? std::string(R"({"dtype":"F32","shape":[0],"data_offsets":[0,0]})") : body);
}

std::string Message(std::string_view bytes) {
  Result<SafetensorsFile> r = ParseSafetensors(bytes);
  return r.ok() ? "accepted" : std::string(r.status().message());
}

// The writer as it was, one JSON value of the whole header: its bytes are the format's
// (checkpoints and final weights in audit-bundles/ were written by it).
Result<std::string> WholeHeaderWriter(const SafetensorsFile& file) {
  using Json = nlohmann::json;
  std::map<std::string, const SafeTensor*> by_name;
  for (const SafeTensor& t : file.tensors) by_name.emplace(t.name, &t);
  Json header = Json::object();
  if (!file.metadata.empty()) header["__metadata__"] = file.metadata;
  uint64_t offset = 0;
  for (const auto& [name, t] : by_name) {
    uint64_t end = offset + t->data.size();
    header[name] = {{"dtype", t->dtype}, {"shape", t->shape}, {"data_offsets", {offset, end}}};
    offset = end;
  }
  std::string text;
  try {
    text = header.dump();
  } catch (const Json::exception& e) {
    return InvalidArgument(std::string("safetensors: ") + e.what());
  }
  text.append((8 - text.size() % 8) % 8, ' ');
  std::string out = U64Le(text.size()) + text;
  for (const auto& [name, t] : by_name) out += t->data;
  return out;
}

TEST(SafetensorsScaleTest, ManyEmptyTensorsRoundTrip) {
  constexpr int kCount = 300'000;
  SafetensorsFile f;
  f.metadata = {{"detrain.format", "x"}};
  for (int i = kCount - 1; i >= 0; --i) f.tensors.push_back({Name(i), "F32", {0}, ""});
  Result<std::string> bytes = SerializeSafetensors(f);
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  Result<SafetensorsFile> r = ParseSafetensors(*bytes);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->tensors.size(), static_cast<size_t>(kCount));
  EXPECT_EQ(r->tensors.front().name, Name(0));
  EXPECT_EQ(r->tensors.back().name, Name(kCount - 1));
  EXPECT_EQ(r->metadata, f.metadata);
  EXPECT_EQ(*SerializeSafetensors(*r), *bytes);
  EXPECT_EQ(TensorsByName(*r).at(Name(12345))->name, Name(12345));
}

// In any order, with whitespace, and errors as in key order whatever the text order.
TEST(SafetensorsScaleTest, ManyTensorsInTextOrderFromTheEnd) {
  constexpr int kCount = 100'000;
  std::string header = "{";
  for (int i = kCount - 1; i >= 0; --i) header += (i == kCount - 1 ? "" : " ,\n") + Entry(Name(i));
  Result<SafetensorsFile> r = ParseSafetensors(RawFile(header + "}", ""));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->tensors.size(), static_cast<size_t>(kCount));
  EXPECT_TRUE(
      std::is_sorted(r->tensors.begin(), r->tensors.end(),
                     [](const SafeTensor& a, const SafeTensor& b) { return a.name < b.name; }));

  // Two malformed tensors: the one first in key order is named, though it comes last.
  std::string bad =
      "{" + Entry(Name(kCount - 1), R"({"dtype":"F16","shape":[0],"data_offsets":[0,0]})");
  for (int i = kCount - 2; i >= 1; --i) bad += "," + Entry(Name(i));
  bad += "," + Entry(Name(0), R"({"dtype":"F32","shape":[0]})") + "}";
  EXPECT_NE(Message(RawFile(bad, "")).find("tensor \"t0000000\" has keys"), std::string::npos)
      << Message(RawFile(bad, ""));

  // A name given twice, at the start and at the end.
  std::string twice = "{";
  for (int i = 0; i < kCount; ++i) twice += (i ? "," : "") + Entry(Name(i));
  twice += "," + Entry(Name(0)) + "}";
  EXPECT_NE(Message(RawFile(twice, "")).find("the key \"t0000000\" twice"), std::string::npos);
  // The first repeat in the text wins, inside an entry or between entries.
  std::string inner = R"({"dtype":"F32","dtype":"F32","shape":[0],"data_offsets":[0,0]})";
  EXPECT_NE(
      Message(RawFile("{" + Entry("a") + "," + Entry("b", inner) + "," + Entry("a") + "}", ""))
          .find("the key \"dtype\" twice"),
      std::string::npos);
  EXPECT_NE(
      Message(RawFile("{" + Entry("a") + "," + Entry("a") + "," + Entry("b", inner) + "}", ""))
          .find("the key \"a\" twice"),
      std::string::npos);
  EXPECT_NE(Message(RawFile(R"({"__metadata__":{},)" + Entry("a") + R"(,"__metadata__":{}})", ""))
                .find("the key \"__metadata__\" twice"),
            std::string::npos);
  // Invalid JSON anywhere comes before every other error.
  EXPECT_NE(Message(RawFile(bad.substr(0, bad.size() - 1) + ",}", "")).find("not valid JSON"),
            std::string::npos);
}

// The header limit is the one limit (it bounds the tensor count too): at it a header is read,
// one byte past it refused (safetensors_test's RejectsLyingHeaderLength).
TEST(SafetensorsScaleTest, HeaderOfExactlyTheLimit) {
  std::string header = "{" + Entry("a") + "}";
  header.append(kMaxSafetensorsHeaderBytes - header.size(), ' ');
  Result<SafetensorsFile> r = ParseSafetensors(RawFile(header, ""));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->tensors.size(), 1u);
  header.push_back(' ');
  EXPECT_NE(Message(RawFile(header, "")).find("exceeds the limit of 100000000 bytes"),
            std::string::npos);
}

// The writer, member by member, gives the whole-header writer's bytes: names with escapes,
// control characters, UTF-8 and names that sort around "__metadata__"; metadata or none.
TEST(SafetensorsScaleTest, WriterBytesAreTheWholeHeaderWriters) {
  const std::vector<std::string> pieces = {"a",
                                           "Z",
                                           "_",
                                           "__",
                                           "__metadata",
                                           "__metadata__x",
                                           "__metadata_",
                                           "`",
                                           "\"",
                                           "\\",
                                           "/",
                                           "\n",
                                           std::string(1, '\x01'),
                                           "\x7f",
                                           "\xc3\xa9",
                                           "\xf0\x9f\x98\x80",
                                           "0",
                                           " "};
  const std::vector<std::string> dtypes = {"F32", "F64", "I32", "U32", "I64",
                                           "U64", "U8",  "I8",  "BOOL"};
  std::mt19937 rng(35);
  for (int round = 0; round < 400; ++round) {
    SafetensorsFile f;
    std::set<std::string> names;
    const int n = static_cast<int>(rng() % 12);
    for (int i = 0; i < n; ++i) {
      std::string name;
      for (int k = 1 + static_cast<int>(rng() % 3); k > 0; --k)
        name += pieces[rng() % pieces.size()];
      if (name == "__metadata__" || !names.insert(name).second) continue;
      const std::string& dtype = dtypes[rng() % dtypes.size()];
      std::vector<int64_t> shape;
      int64_t count = 1;
      for (int k = static_cast<int>(rng() % 3); k > 0; --k) {
        shape.push_back(static_cast<int64_t>(rng() % 3));
        count *= shape.back();
      }
      f.tensors.push_back({name, dtype, shape,
                           std::string(static_cast<size_t>(count * SafetensorsItemSize(dtype)),
                                       static_cast<char>(rng()))});
    }
    if (rng() % 2)
      f.metadata = {{"k\"" + pieces[rng() % pieces.size()], pieces[rng() % pieces.size()]}};
    Result<std::string> ours = SerializeSafetensors(f);
    Result<std::string> theirs = WholeHeaderWriter(f);
    ASSERT_TRUE(ours.ok()) << ours.status().ToString();
    ASSERT_TRUE(theirs.ok()) << theirs.status().ToString();
    ASSERT_EQ(*ours, *theirs) << "round " << round;
    Result<SafetensorsFile> back = ParseSafetensors(*ours);
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(*SerializeSafetensors(*back), *ours);
  }
  // Not UTF-8: the same error as the whole-header writer's, in a name or in the metadata.
  for (const SafetensorsFile& bad :
       {SafetensorsFile{{}, {{"ok", "U8", {}, "x"}, {"b\xff", "U8", {}, "x"}}},
        SafetensorsFile{{{"k", "v\xc3"}}, {{"a", "U8", {}, "x"}}}}) {
    Result<std::string> ours = SerializeSafetensors(bad);
    Result<std::string> theirs = WholeHeaderWriter(bad);
    ASSERT_FALSE(ours.ok());
    ASSERT_FALSE(theirs.ok());
    EXPECT_EQ(ours.status().message(), theirs.status().message());
  }
}

TEST(SafetensorsScaleTest, TensorsByNameKeepsTheLastOfARepeatedName) {
  SafetensorsFile f{{}, {{"b", "U8", {}, "1"}, {"a", "U8", {}, "2"}, {"b", "U8", {}, "3"}}};
  std::map<std::string_view, const SafeTensor*> m = TensorsByName(f);
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m.at("a")->data, "2");
  EXPECT_EQ(m.at("b")->data, "3");
}

}  // namespace
}  // namespace scale_test
}  // namespace detrain
