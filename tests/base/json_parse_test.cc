// base/json_parse.h: ParseJsonText gives nlohmann::json::parse's value and exceptions, finds the
// first repeated key in text order, and takes linear time on objects and arrays of many objects
// (nlohmann's callback parser, which it replaced, took quadratic time); StreamJsonObject hands
// over members in text order with their positions.
#include "base/json_parse.h"

#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace detrain {
namespace {

using Json = nlohmann::json;

std::optional<std::string> DuplicateOf(const std::string& text) {
  std::optional<std::string> d;
  ParseJsonText(text, &d);
  return d;
}

TEST(JsonParseTest, SameValueAsNlohmann) {
  const char* docs[] = {
      "0",
      "-1",
      "18446744073709551615",
      "-9223372036854775808",
      "1.5e-300",
      "1E+2",
      "true",
      "false",
      "null",
      R"("")",
      R"("a\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00")",
      "[]",
      "{}",
      " \t\n[ 1 , [ ] , { } , [[2]] ] \r\n",
      R"({"b":1,"a":[{"c":null},{"d":[true,false]}],"":{}})",
      R"([{"a":1},{"a":2},{"a":3}])",
      R"({"x":{"y":{"z":[1,2,{"w":"v"}]}}})",
      "\"\xc3\xa9\xf0\x9f\x98\x80\"",
  };
  for (const char* d : docs) {
    SCOPED_TRACE(d);
    std::optional<std::string> dup;
    Json ours = ParseJsonText(d, &dup);
    Json theirs = Json::parse(d);
    EXPECT_EQ(ours, theirs);
    EXPECT_EQ(ours.dump(), theirs.dump());
    EXPECT_FALSE(dup.has_value());
  }
}

// Every malformed text throws what nlohmann::json::parse throws: the same type, id, byte and
// message.
TEST(JsonParseTest, SameExceptionsAsNlohmann) {
  const std::string docs[] = {
      "",      " ",           "{",           "[1,]",     R"({"a" 1})",   "1 2",
      "1e400", "-1e400",      R"("\ud800")", "tru",      R"({"a":tru})", "\xff",
      "[1,2",  R"({"a":1,})", "01",          "\"a\nb\"", "[1]x",         std::string(1, '\0'),
  };
  for (const std::string& d : docs) {
    SCOPED_TRACE(d);
    std::string want, got;
    size_t want_byte = 0, got_byte = 0;
    try {
      (void)Json::parse(d);
      ADD_FAILURE() << "nlohmann accepted it";
    } catch (const Json::parse_error& e) {
      want = e.what();
      want_byte = e.byte;
    } catch (const Json::exception& e) {
      want = e.what();
    }
    try {
      std::optional<std::string> dup;
      (void)ParseJsonText(d, &dup);
      ADD_FAILURE() << "accepted";
    } catch (const Json::parse_error& e) {
      got = e.what();
      got_byte = e.byte;
    } catch (const Json::exception& e) {
      got = e.what();
    }
    EXPECT_EQ(got, want);
    EXPECT_EQ(got_byte, want_byte);
  }
}

TEST(JsonParseTest, FirstRepeatedKeyInTextOrder) {
  EXPECT_EQ(DuplicateOf(R"({"a":1,"b":{"a":2},"a":3})"), "a");
  EXPECT_EQ(DuplicateOf(R"({"b":{"x":1,"x":2},"a":1,"a":2})"), "x");
  EXPECT_EQ(DuplicateOf(R"({"a":1,"a":2,"b":{"x":1,"x":2}})"), "a");
  EXPECT_EQ(DuplicateOf(R"([{"k":1},{"k":2,"k":3}])"), "k");
  EXPECT_EQ(DuplicateOf(R"({"":1,"":2})"), "");  // an empty key repeated is a repeat too
  EXPECT_EQ(DuplicateOf(R"({"a":{"a":{"a":1}}})"), std::nullopt);
  // The value is the last one, as nlohmann's.
  std::optional<std::string> dup;
  EXPECT_EQ(ParseJsonText(R"({"a":1,"a":[2]})", &dup), Json::parse(R"({"a":1,"a":[2]})"));
}

TEST(JsonParseTest, StreamsMembersInTextOrder) {
  std::vector<std::tuple<std::string, size_t, Json>> seen;
  auto member = [&](std::string k, size_t position, Json v) {
    seen.emplace_back(std::move(k), position, std::move(v));
  };
  std::optional<JsonRepeatedKey> inside;
  ASSERT_TRUE(
      StreamJsonObject(R"({"z":{"p":1,"q":[2]},"a":3,"z":"again","m":[]})", member, &inside));
  ASSERT_EQ(seen.size(), 4u);
  EXPECT_EQ(seen[0],
            std::make_tuple(std::string("z"), size_t{0}, Json::parse(R"({"p":1,"q":[2]})")));
  EXPECT_EQ(seen[1], std::make_tuple(std::string("a"), size_t{3}, Json(3)));
  EXPECT_EQ(seen[2], std::make_tuple(std::string("z"), size_t{4}, Json("again")));
  EXPECT_EQ(seen[3], std::make_tuple(std::string("m"), size_t{5}, Json::array()));
  EXPECT_FALSE(inside.has_value());  // a repeat at the top level is the caller's to find

  seen.clear();
  ASSERT_TRUE(StreamJsonObject(R"({"a":1,"b":{"c":1,"d":{"c":2,"c":3}}})", member, &inside));
  ASSERT_TRUE(inside.has_value());
  EXPECT_EQ(inside->key, "c");
  EXPECT_EQ(inside->position, 5u);

  // Not an object: parsed to the end (a repeat inside is still found), no member handed over.
  for (const char* d : {"[]", "7", R"("s")", "null", R"([{"k":1,"k":2}])"}) {
    SCOPED_TRACE(d);
    seen.clear();
    inside.reset();
    EXPECT_FALSE(StreamJsonObject(d, member, &inside));
    EXPECT_TRUE(seen.empty());
    EXPECT_EQ(inside.has_value(), std::string(d).find("\"k\"") != std::string::npos);
  }
  EXPECT_TRUE(StreamJsonObject("{}", member, &inside));
  EXPECT_THROW(StreamJsonObject(R"({"a":1,)", member, &inside), Json::parse_error);
  EXPECT_THROW(StreamJsonObject(R"({"a":1} x)", member, &inside), Json::parse_error);
}

// Objects and arrays of many objects: nlohmann's callback parser scanned the enclosing container
// at the end of each inner object (quadratic: minutes at this size); this is linear.
TEST(JsonParseTest, ManyInnerObjectsInLinearTime) {
  constexpr int kCount = 300'000;
  std::string object = "{", array = "[";
  for (int i = 0; i < kCount; ++i) {
    object += (i ? ",\"k" : "\"k") + std::to_string(i) + "\":{\"v\":[" + std::to_string(i) + "]}";
    array += (i ? ",{\"v\":" : "{\"v\":") + std::to_string(i) + "}";
  }
  object += "}";
  array += "]";
  std::optional<std::string> dup;
  Json o = ParseJsonText(object, &dup);
  EXPECT_EQ(o.size(), static_cast<size_t>(kCount));
  EXPECT_EQ(o["k299999"]["v"][0], kCount - 1);
  Json a = ParseJsonText(array, &dup);
  EXPECT_EQ(a.size(), static_cast<size_t>(kCount));
  EXPECT_FALSE(dup.has_value());
  size_t members = 0;
  std::optional<JsonRepeatedKey> inside;
  EXPECT_TRUE(StreamJsonObject(
      object, [&](std::string, size_t, Json) { ++members; }, &inside));
  EXPECT_EQ(members, static_cast<size_t>(kCount));
}

}  // namespace
}  // namespace detrain
