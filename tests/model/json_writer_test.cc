#include "gpuscaler/model/json_writer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

namespace gpuscaler {
namespace {

using Json = nlohmann::ordered_json;

TEST(JsonWriter, NestsContainersWithCommasInTheRightPlaces) {
  JsonWriter w;
  w.BeginObject();
  w.Key("a").Int(1);
  w.Key("b").BeginArray().EndArray();
  w.Key("c").BeginArray().BeginObject().EndObject().BeginObject().Key("x").Null().EndObject().EndArray();
  w.Key("d").StringArray({"p", "q"});
  w.Key("e").Bool(false);
  w.EndObject();
  EXPECT_EQ(w.text(), R"({"a":1,"b":[],"c":[{},{"x":null}],"d":["p","q"],"e":false})");
  EXPECT_TRUE(Json::accept(w.text()));
}

// Same text as nlohmann's dump() for the values the plan carries, so the
// audit rows read the same whichever wrote them.
TEST(JsonWriter, WritesNumbersAndStringsAsNlohmannDumpDoes) {
  const std::vector<double> doubles = {0.0, 1.0, -3.0, 0.1, 2.3822, 16.1406, 1e-5, 123456.789, 1e20, 5e-324,
                                       std::numeric_limits<double>::max(), -0.5, 7.1466};
  for (double d : doubles) {
    JsonWriter w;
    w.Double(d);
    EXPECT_EQ(Json::parse(w.text()).get<double>(), d) << w.text();
    EXPECT_TRUE(Json::parse(w.text()).is_number_float()) << w.text();
    if (std::abs(d) < 1e15 && std::abs(d) > 1e-4) {
      EXPECT_EQ(w.text(), Json(d).dump()) << d;
    }
  }
  for (int64_t i : {int64_t{0}, int64_t{-1}, int64_t{42}, std::numeric_limits<int64_t>::min(),
                    std::numeric_limits<int64_t>::max()}) {
    JsonWriter w;
    w.Int(i);
    EXPECT_EQ(w.text(), Json(i).dump());
  }
  const std::vector<std::string> strings = {"", "plain", "quote\"back\\slash", "tab\tnl\ncr\rbs\bff\f",
                                            std::string("nul\0x", 5), "\x01\x1f", "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"};
  for (const std::string& s : strings) {
    JsonWriter w;
    w.String(s);
    EXPECT_EQ(w.text(), Json(s).dump()) << s;
    EXPECT_EQ(Json::parse(w.text()).get<std::string>(), s);
  }
}

TEST(JsonWriter, NonFiniteDoublesAreNull) {
  JsonWriter w;
  w.BeginArray().Double(std::nan("")).Double(std::numeric_limits<double>::infinity()).EndArray();
  EXPECT_EQ(w.text(), "[null,null]");
}

// nlohmann's dump() throws on invalid UTF-8; the writer replaces each bad
// byte with U+FFFD so a unit id from a broken trace cannot lose a decision.
TEST(JsonWriter, InvalidUtf8BecomesReplacementCharacters) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"a\xFF" "b", "a\xEF\xBF\xBD" "b"},               // never valid
      {"\xC0\xAF", "\xEF\xBF\xBD\xEF\xBF\xBD"},         // overlong '/'
      {"\xED\xA0\x80", "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"},  // a surrogate
      {"\xF4\x90\x80\x80", "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"},  // above U+10FFFF
      {"cut \xE2\x82", "cut \xEF\xBF\xBD\xEF\xBF\xBD"},  // truncated sequence
  };
  for (const auto& [in, want] : cases) {
    JsonWriter w;
    w.String(in);
    ASSERT_TRUE(Json::accept(w.text())) << w.text();
    EXPECT_EQ(Json::parse(w.text()).get<std::string>(), want);
  }
}

}  // namespace
}  // namespace gpuscaler
