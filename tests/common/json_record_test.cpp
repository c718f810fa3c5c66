#include "common/json_record.hpp"

#include <gtest/gtest.h>

#include <string>

namespace jr = layerbench::json_record;
using Kind = jr::Value::Kind;

TEST(JsonRecord, TopLevelMembersAndTheirKinds) {
  jr::Record r;
  ASSERT_TRUE(r.parse(R"({"a":1,"b":-2,"c":2.5,"d":"x","e":true,"f":null,"g":[1,{"h":2}],"i":{"j":{"k":1}}})"));
  EXPECT_TRUE(r.is_object());
  EXPECT_EQ(r.find("a")->kind, Kind::unsigned_integer);
  EXPECT_EQ(r.find("a")->unsigned_integer, 1u);
  EXPECT_EQ(r.find("b")->kind, Kind::integer);
  EXPECT_DOUBLE_EQ(r.find("b")->number(), -2.0);
  EXPECT_EQ(r.find("c")->kind, Kind::floating);
  EXPECT_DOUBLE_EQ(r.find("c")->number(), 2.5);
  EXPECT_EQ(r.find("d")->string, "x");
  EXPECT_TRUE(r.find("e")->boolean);
  EXPECT_TRUE(r.find("f")->is_null());
  EXPECT_EQ(r.find("g")->kind, Kind::array);
  EXPECT_EQ(r.find("h"), nullptr);  // inside an array: not a member of the record
  EXPECT_EQ(r.find("i")->kind, Kind::object);
  EXPECT_EQ(r.find("i", "j")->kind, Kind::object);  // kept with its kind; its members are not
  EXPECT_EQ(r.find("k"), nullptr);
  EXPECT_EQ(r.find("g", "h"), nullptr);  // not an object
  EXPECT_EQ(r.find("zz"), nullptr);
}

TEST(JsonRecord, MembersOfATopLevelObject) {
  jr::Record r;
  ASSERT_TRUE(r.parse(R"({"metrics":{"wall":1.5,"n":3,"s":"no"},"wall":9})"));
  EXPECT_DOUBLE_EQ(r.find("metrics", "wall")->number(), 1.5);
  EXPECT_DOUBLE_EQ(r.find("wall")->number(), 9.0);  // the top-level one
  EXPECT_EQ(r.size("metrics"), 3u);
  std::vector<std::pair<std::string_view, const jr::Value*>> members;
  r.members("metrics", members);
  ASSERT_EQ(members.size(), 3u);
  EXPECT_EQ(members[0].first, "wall");
  EXPECT_EQ(members[2].first, "s");
  EXPECT_EQ(r.size("wall"), 0u);
}

TEST(JsonRecord, RepeatedKeysKeepTheLastAsNlohmannJsonDoes) {
  jr::Record r;
  ASSERT_TRUE(r.parse(R"({"a":1,"a":"two","m":{"x":1},"m":{"y":2,"y":3}})"));
  EXPECT_EQ(r.find("a")->string, "two");
  EXPECT_EQ(r.find("m", "x"), nullptr);  // the earlier object is replaced
  EXPECT_DOUBLE_EQ(r.find("m", "y")->number(), 3.0);
  EXPECT_EQ(r.size("m"), 1u);
}

TEST(JsonRecord, InvalidTextAndOtherValues) {
  jr::Record r;
  EXPECT_FALSE(r.parse(R"({"a":1)"));          // torn
  EXPECT_FALSE(r.parse(R"({"a":1} x)"));       // trailing text
  EXPECT_FALSE(r.parse(R"({"a":1e999})"));     // number overflow, as nlohmann::json::parse
  EXPECT_FALSE(r.parse(""));
  ASSERT_TRUE(r.parse("[1,2]"));
  EXPECT_FALSE(r.is_object());
  ASSERT_TRUE(r.parse("42"));
  EXPECT_FALSE(r.is_object());
  EXPECT_EQ(r.find("a"), nullptr);
}

TEST(JsonRecord, StorageIsReusedWithoutLeakingMembers) {
  jr::Record r;
  ASSERT_TRUE(r.parse(R"({"a":1,"b":{"c":2},"long_key_beyond_the_small_string":"v"})"));
  ASSERT_TRUE(r.parse(R"({"b":3})"));
  EXPECT_EQ(r.find("a"), nullptr);
  EXPECT_EQ(r.find("b", "c"), nullptr);
  EXPECT_EQ(r.find("long_key_beyond_the_small_string"), nullptr);
  EXPECT_DOUBLE_EQ(r.find("b")->number(), 3.0);
}
