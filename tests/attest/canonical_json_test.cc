// Canonical JSON: number formatting against ECMAScript (values printed by node's String(x),
// including RFC 8785 Appendix B), key order, escaping, round trips and rejected inputs.
#include "attest/canonical_json.h"

#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <optional>
#include <string>

namespace detrain::attest {
namespace {

struct NumberCase {
  uint64_t bits;
  const char* text;
};

// Generated with node v20: `String(Buffer.from(hex,'hex').readDoubleBE(0))`.
constexpr NumberCase kNumbers[] = {
    {0x0000000000000000ull, "0"},
    {0x8000000000000000ull, "0"},
    {0x0000000000000001ull, "5e-324"},
    {0x8000000000000001ull, "-5e-324"},
    {0x7fefffffffffffffull, "1.7976931348623157e+308"},
    {0xffefffffffffffffull, "-1.7976931348623157e+308"},
    {0x4340000000000000ull, "9007199254740992"},
    {0xc340000000000000ull, "-9007199254740992"},
    {0x4430000000000000ull, "295147905179352830000"},
    {0x44b52d02c7e14af5ull, "9.999999999999997e+22"},
    {0x44b52d02c7e14af6ull, "1e+23"},
    {0x44b52d02c7e14af7ull, "1.0000000000000001e+23"},
    {0x444b1ae4d6e2ef4eull, "999999999999999700000"},
    {0x444b1ae4d6e2ef4full, "999999999999999900000"},
    {0x444b1ae4d6e2ef50ull, "1e+21"},
    {0x3eb0c6f7a0b5ed8cull, "9.999999999999997e-7"},
    {0x3eb0c6f7a0b5ed8dull, "0.000001"},
    {0x41b3de4355555553ull, "333333333.3333332"},
    {0x41b3de4355555554ull, "333333333.33333325"},
    {0x41b3de4355555555ull, "333333333.3333333"},
    {0x41b3de4355555556ull, "333333333.3333334"},
    {0x41b3de4355555557ull, "333333333.33333343"},
    {0xbecbf647612f3696ull, "-0.0000033333333333333333"},
    {0x43143ff3c1cb0959ull, "1424953923781206.2"},
    {0x3ff0000000000001ull, "1.0000000000000002"},
    {0x3f50624dd2f1a9fcull, "0.001"},
    {0x3fb999999999999aull, "0.1"},
};

TEST(CanonicalJsonTest, NumbersFormatLikeEcmaScript) {
  for (const auto& c : kNumbers) {
    EXPECT_EQ(FormatJsonNumber(std::bit_cast<double>(c.bits)), c.text) << std::hex << c.bits;
  }
}

TEST(CanonicalJsonTest, SortsKeysAndDropsWhitespace) {
  Result<nlohmann::json> j =
      ParseJson(R"( { "b" : [1, 2.5, true, null], "a" : {"z":1,"y":"x"} } )");
  ASSERT_TRUE(j.ok());
  Result<std::string> c = CanonicalJson(*j);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(*c, R"({"a":{"y":"x","z":1},"b":[1,2.5,true,null]})");
}

TEST(CanonicalJsonTest, KeysSortByUtf8Bytes) {
  nlohmann::json j = {{"\xc3\xa9", 1}, {"z", 2}, {"A", 3}, {"a", 4}};
  EXPECT_EQ(*CanonicalJson(j), "{\"A\":3,\"a\":4,\"z\":2,\"\xc3\xa9\":1}");
}

TEST(CanonicalJsonTest, MinimalEscaping) {
  nlohmann::json j = std::string("q\"b\\s/\b\f\n\r\t\x01\x1f\x7f\xe2\x82\xac");
  EXPECT_EQ(*CanonicalJson(j), "\"q\\\"b\\\\s/\\b\\f\\n\\r\\t\\u0001\\u001f\x7f\xe2\x82\xac\"");
}

TEST(CanonicalJsonTest, IntegersStayExact) {
  nlohmann::json j = {{"seed", uint64_t{18446744073709551615ull}},
                      {"neg", int64_t{-9007199254740993}}};
  EXPECT_EQ(*CanonicalJson(j), R"({"neg":-9007199254740993,"seed":18446744073709551615})");
}

TEST(CanonicalJsonTest, RoundTripIsAFixedPoint) {
  const char* inputs[] = {
      R"({"lr":1e-3,"betas":[0.9,0.999],"name":"adam","nested":{"k":[{"b":1,"a":2}]}})",
      R"([1e21, 1e-7, -0.0, 123456789012345678, "\u00e9\ud83d\ude00"])",
      R"({})",
      R"("")",
  };
  for (const char* in : inputs) {
    Result<nlohmann::json> j = ParseJson(in);
    ASSERT_TRUE(j.ok()) << in;
    std::string once = *CanonicalJson(*j);
    Result<nlohmann::json> again = ParseJson(once);
    ASSERT_TRUE(again.ok()) << once;
    EXPECT_EQ(*again, *j) << once;
    EXPECT_EQ(*CanonicalJson(*again), once);
  }
}

TEST(CanonicalJsonTest, RejectsNonFiniteAndBadUtf8) {
  EXPECT_FALSE(CanonicalJson(nlohmann::json(std::numeric_limits<double>::quiet_NaN())).ok());
  EXPECT_FALSE(CanonicalJson(nlohmann::json(std::numeric_limits<double>::infinity())).ok());
  EXPECT_FALSE(CanonicalJson(nlohmann::json(std::string("\xc3\x28"))).ok());
  nlohmann::json bad_key;
  bad_key[std::string("\xff")] = 1;
  EXPECT_FALSE(CanonicalJson(bad_key).ok());
}

TEST(CanonicalJsonTest, ParseErrorsSayWhere) {
  Result<nlohmann::json> j = ParseJson("{\"a\": 1,,}");
  ASSERT_FALSE(j.ok());
  EXPECT_NE(j.status().message().find("at byte 9"), std::string::npos) << j.status().message();
  Result<nlohmann::json> dup = ParseJson(R"({"a":1,"b":{"a":2},"a":3})");
  ASSERT_FALSE(dup.ok());
  EXPECT_NE(dup.status().message().find("duplicate object key \"a\""), std::string::npos);
  EXPECT_TRUE(ParseJson(R"({"a":{"a":1}})").ok());  // same key in different objects is fine
}

TEST(CanonicalJsonTest, HostileInputIsAnErrorNotACrash) {
  // Nesting: the limit is accepted, one more level is refused (a string's brackets don't count).
  std::string ok = std::string(kMaxJsonDepth, '[') + std::string(kMaxJsonDepth, ']');
  EXPECT_TRUE(ParseJson(ok).ok());
  EXPECT_TRUE(ParseJson("[\"" + std::string(1000, '[') + "\"]").ok());
  Result<nlohmann::json> deep = ParseJson(std::string(100000, '[') + std::string(100000, ']'));
  ASSERT_FALSE(deep.ok());
  EXPECT_NE(deep.status().message().find("at byte 256: arrays and objects nested more than 256"),
            std::string::npos)
      << deep.status().message();
  EXPECT_FALSE(ParseJson(std::string(100000, '{')).ok());
  // A number beyond a double's range throws out_of_range inside nlohmann, not parse_error.
  Result<nlohmann::json> big = ParseJson(R"({"a": 1e400})");
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.status().message().find("number overflow"), std::string::npos)
      << big.status().message();
}

// ParseJsonMember: ParseJson's errors, and the member ParseJson's value holds.
TEST(CanonicalJsonTest, ParseJsonMemberAgreesWithParseJson) {
  const std::string docs[] = {R"({"a":{"k":"v"},"b":[1,2]})",
                              R"({"b":1})",
                              R"({"a":null})",
                              R"({})",
                              R"([{"a":1}])",
                              "7",
                              R"({"a":1,"a":2})",
                              R"({"b":{"x":1,"x":2},"a":1,"a":2})",
                              R"({"a":1,"a":2,"b":{"x":1,"x":2}})",
                              R"({"":1,"":2})",
                              R"({"a":1,)",
                              R"({"a":1e400})",
                              R"({"a":1} x)",
                              "",
                              std::string(300, '[') + std::string(300, ']'),
                              "{\"a\":\"\xff\"}"};
  for (const std::string& d : docs) {
    SCOPED_TRACE(d);
    Result<nlohmann::json> whole = ParseJson(d);
    bool is_object = false;
    Result<std::optional<nlohmann::json>> member = ParseJsonMember(d, "a", &is_object);
    ASSERT_EQ(member.ok(), whole.ok());
    if (!whole.ok()) {
      EXPECT_EQ(member.status().message(), whole.status().message());
      continue;
    }
    EXPECT_EQ(is_object, whole->is_object());
    const bool has = whole->is_object() && whole->contains("a");
    ASSERT_EQ(member->has_value(), has);
    if (has) EXPECT_EQ(**member, (*whole)["a"]);
  }
  // A repeated empty key is a repeat (ParseJson once let it through: its check used "" for none).
  EXPECT_FALSE(ParseJson(R"({"":1,"":2})").ok());
}

// An object of many objects: the parser that checked for repeated keys through nlohmann's
// callback took quadratic time on it (minutes); now linear, whole or member by member.
TEST(CanonicalJsonTest, ManyObjectsInLinearTime) {
  std::string text = "{";
  for (int i = 0; i < 200'000; ++i) {
    text += (i ? ",\"t" : "\"t") + std::to_string(i) + "\":{\"shape\":[0],\"dtype\":\"F32\"}";
  }
  text += ",\"__metadata__\":{\"k\":\"v\"}}";
  Result<nlohmann::json> whole = ParseJson(text);
  ASSERT_TRUE(whole.ok()) << whole.status().ToString();
  EXPECT_EQ(whole->size(), 200'001u);
  bool is_object = false;
  Result<std::optional<nlohmann::json>> m = ParseJsonMember(text, "__metadata__", &is_object);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  ASSERT_TRUE(m->has_value());
  EXPECT_EQ(**m, nlohmann::json({{"k", "v"}}));
  Result<nlohmann::json> repeated = ParseJson(text.substr(0, text.size() - 1) + ",\"t7\":{}}");
  ASSERT_FALSE(repeated.ok());
  EXPECT_NE(repeated.status().message().find("duplicate object key \"t7\""), std::string::npos);
}

TEST(CanonicalJsonTest, Utf8Validation) {
  EXPECT_TRUE(IsValidUtf8("plain ascii"));
  EXPECT_TRUE(IsValidUtf8("\xf0\x9f\x98\x80"));   // U+1F600
  EXPECT_FALSE(IsValidUtf8("\xc0\xaf"));          // overlong '/'
  EXPECT_FALSE(IsValidUtf8("\xed\xa0\x80"));      // surrogate U+D800
  EXPECT_FALSE(IsValidUtf8("\xf4\x90\x80\x80"));  // above U+10FFFF
  EXPECT_FALSE(IsValidUtf8("\xe2\x82"));          // truncated
}

}  // namespace
}  // namespace detrain::attest
