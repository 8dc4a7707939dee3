// Key lineage: deterministic ids, JSON Lines round trip, replay that catches a single altered
// key word and names the node, and rejection of malformed lineage files.
#include "attest/prng/lineage.h"

#include <gtest/gtest.h>

#include <string>

namespace detrain::prng {
namespace {

// A small training-like lineage: a root, a split for init / dropout / shuffle, per-step fold_ins.
KeyLineage MakeLineage(Mode mode) {
  KeyLineage lineage(mode);
  const uint64_t root = lineage.Seed(42);
  auto parts = lineage.Split(root, 3);
  EXPECT_TRUE(parts.ok());
  EXPECT_TRUE(lineage.Use((*parts)[0], "init w1").ok());
  for (uint32_t step = 0; step < 3; ++step) {
    auto k = lineage.FoldIn((*parts)[1], step);
    EXPECT_TRUE(k.ok());
    EXPECT_TRUE(lineage.Use(*k, "dropout layer 2 step " + std::to_string(step) + " shard 0").ok());
  }
  auto shuffle = lineage.FoldIn((*parts)[2], 4);
  EXPECT_TRUE(lineage.Use(*shuffle, "shuffle epoch 4").ok());
  const uint64_t second_root = lineage.Seed(-7);
  EXPECT_TRUE(lineage.Use(second_root, "data order").ok());
  return lineage;
}

TEST(KeyLineage, IdsAreSequentialAndKeysMatchTheFunctions) {
  KeyLineage lineage = MakeLineage(Mode::kPartitionable);
  ASSERT_EQ(lineage.nodes().size(), 9u);
  for (uint64_t i = 0; i < lineage.nodes().size(); ++i) EXPECT_EQ(lineage.nodes()[i].id, i);
  auto split = Split(KeyFromSeed(42), 3, Mode::kPartitionable);
  EXPECT_EQ(*lineage.KeyOf(2), (*split)[1]);
  EXPECT_EQ(*lineage.KeyOf(5), FoldIn((*split)[1], 1));  // step 1
  EXPECT_EQ(lineage.uses().size(), 6u);
  EXPECT_FALSE(lineage.Split(99, 2).ok());
  EXPECT_FALSE(lineage.Use(0, "").ok());
}

TEST(KeyLineage, JsonlRoundTripIsByteIdentical) {
  for (Mode mode : {Mode::kPartitionable, Mode::kOriginal}) {
    KeyLineage lineage = MakeLineage(mode);
    const std::string text = lineage.ToJsonl();
    auto parsed = KeyLineage::FromJsonl(text);
    ASSERT_TRUE(parsed.ok()) << parsed.status().message();
    EXPECT_EQ(parsed->ToJsonl(), text);
    EXPECT_EQ(parsed->mode(), mode);
    EXPECT_EQ(MakeLineage(mode).ToJsonl(), text);  // same program, same bytes
    EXPECT_TRUE(ReplayLineage(*parsed).ok());
  }
}

TEST(KeyLineage, JsonlLinesAreSortedCompactObjects) {
  const std::string text = MakeLineage(Mode::kPartitionable).ToJsonl();
  const std::string first = text.substr(0, text.find('\n'));
  EXPECT_EQ(first, R"({"format":"detrain-key-lineage","mode":"partitionable","version":1})");
  const KeyLineage lineage = MakeLineage(Mode::kPartitionable);
  const Key k = lineage.nodes()[1].key;
  const std::string split_line = R"({"argument":0,"count":3,"id":1,"key":[)" +
                                 std::to_string(k.hi) + "," + std::to_string(k.lo) +
                                 R"(],"op":"split","parent":0,"type":"node"})";
  EXPECT_NE(text.find(split_line + "\n"), std::string::npos) << text;
  // A use follows the nodes that existed when it was recorded (all three split keys).
  EXPECT_NE(text.find(R"("id":3,)"), std::string::npos);
  EXPECT_LT(text.find(R"("id":3,)"), text.find(R"({"key":1,"purpose":"init w1","type":"use"})"));
}

// Replaces the first occurrence of `from` after position `at` in `text`.
std::string ReplaceAfter(std::string text, size_t at, const std::string& from,
                         const std::string& to) {
  const size_t pos = text.find(from, at);
  EXPECT_NE(pos, std::string::npos);
  return text.replace(pos, from.size(), to);
}

TEST(KeyLineage, ReplayNamesTheNodeWithOneAlteredKeyWord) {
  for (Mode mode : {Mode::kPartitionable, Mode::kOriginal}) {
    const KeyLineage lineage = MakeLineage(mode);
    const std::string text = lineage.ToJsonl();
    for (uint64_t id = 0; id < lineage.nodes().size(); ++id) {
      for (int word = 0; word < 2; ++word) {
        const Key k = lineage.nodes()[id].key;
        const uint32_t w = word == 0 ? k.hi : k.lo;
        const std::string key_text = "[" + std::to_string(k.hi) + "," + std::to_string(k.lo) + "]";
        const std::string altered_text =
            word == 0 ? "[" + std::to_string(w ^ 1u) + "," + std::to_string(k.lo) + "]"
                      : "[" + std::to_string(k.hi) + "," + std::to_string(w ^ 1u) + "]";
        const size_t line_at = text.find("\"id\":" + std::to_string(id) + ",");
        auto tampered = KeyLineage::FromJsonl(ReplaceAfter(text, line_at, key_text, altered_text));
        ASSERT_TRUE(tampered.ok()) << tampered.status().message();
        const Status s = ReplayLineage(*tampered);
        ASSERT_EQ(s.code(), StatusCode::kVerificationFailed) << "node " << id;
        EXPECT_NE(s.message().find("node " + std::to_string(id) + " ("), std::string::npos)
            << s.message();
        EXPECT_NE(s.message().find("recomputed key " + key_text), std::string::npos) << s.message();
        EXPECT_NE(s.message().find("records " + altered_text), std::string::npos) << s.message();
      }
    }
  }
}

TEST(KeyLineage, ReplayCatchesAlteredArguments) {
  const std::string text = MakeLineage(Mode::kPartitionable).ToJsonl();
  // Node 5 is fold_in(node 2, 1); its data changed to 5, the recorded key no longer follows.
  // The argument precedes the id on the line, so replace from the start of that line.
  const size_t line5 = text.rfind('\n', text.find("\"id\":5,")) + 1;
  auto tampered =
      KeyLineage::FromJsonl(ReplaceAfter(text, line5, "{\"argument\":1,", "{\"argument\":5,"));
  ASSERT_TRUE(tampered.ok());
  const Status s = ReplayLineage(*tampered);
  EXPECT_EQ(s.code(), StatusCode::kVerificationFailed);
  EXPECT_NE(s.message().find("node 5 (fold_in of node 2, data 5)"), std::string::npos)
      << s.message();
}

TEST(KeyLineage, MalformedFilesAreRejectedWithTheLine) {
  const std::string text = MakeLineage(Mode::kOriginal).ToJsonl();
  const std::string header = text.substr(0, text.find('\n') + 1);
  const std::string body = text.substr(header.size());
  struct Case {
    std::string name, text, expect;
  };
  const Case cases[] = {
      {"empty", "", "empty"},
      {"no header", body, "line 1"},
      {"truncated", text.substr(0, text.size() - 3), "not terminated"},
      {"bad json", header + "{\"type\":\n", "line 2: not valid JSON"},
      {"unknown mode",
       R"({"format":"detrain-key-lineage","mode":"fast","version":1})"
       "\n",
       "unknown PRNG mode"},
      {"wrong version",
       R"({"format":"detrain-key-lineage","mode":"original","version":2})"
       "\n",
       "line 1"},
      {"skipped id",
       header + R"({"argument":1,"id":1,"key":[0,1],"op":"seed","parent":null,"type":"node"})"
                "\n",
       "not the next id 0"},
      {"forward parent",
       header + R"({"argument":1,"id":0,"key":[0,1],"op":"fold_in","parent":0,"type":"node"})"
                "\n",
       "not an earlier node"},
      {"split index",
       header +
           R"({"argument":0,"id":0,"key":[0,1],"op":"seed","parent":null,"type":"node"})"
           "\n"
           R"({"argument":3,"count":3,"id":1,"key":[0,1],"op":"split","parent":0,"type":"node"})"
           "\n",
       "line 3: split index"},
      {"key word",
       header +
           R"({"argument":0,"id":0,"key":[0,4294967296],"op":"seed","parent":null,"type":"node"})"
           "\n",
       "key words"},
      {"extra field",
       header + R"({"argument":0,"id":0,"key":[0,0],"op":"seed","parent":null,"type":"node","x":1})"
                "\n",
       "unexpected or missing"},
      {"use before node",
       header + R"({"key":0,"purpose":"init","type":"use"})"
                "\n",
       "not an earlier node"},
      {"unknown type",
       header + R"({"type":"edge"})"
                "\n",
       "unknown record type"},
  };
  for (const Case& c : cases) {
    auto parsed = KeyLineage::FromJsonl(c.text);
    ASSERT_FALSE(parsed.ok()) << c.name;
    EXPECT_EQ(parsed.status().code(), StatusCode::kDataLoss) << c.name;
    EXPECT_NE(parsed.status().message().find(c.expect), std::string::npos)
        << c.name << ": " << parsed.status().message();
  }
}

}  // namespace
}  // namespace detrain::prng
