// Escaping for markup and CSV (model/escape.h).
#include "gpuscaler/model/escape.h"

#include <gtest/gtest.h>

namespace gpuscaler {
namespace {

TEST(Escape, MarkupCharactersBecomeReferencesAndTheApostropheDependsOnTheLanguage) {
  EXPECT_EQ(XmlEscape(R"(a<b>&"c'd)"), "a&lt;b&gt;&amp;&quot;c&apos;d");
  EXPECT_EQ(HtmlEscape(R"(a<b>&"c'd)"), "a&lt;b&gt;&amp;&quot;c&#39;d");
  EXPECT_EQ(HtmlEscape("plain text"), "plain text");
}

TEST(Escape, CsvFieldsAreQuotedOnlyWhenTheyMustBe) {
  EXPECT_EQ(CsvField("g5.xlarge"), "g5.xlarge");
  EXPECT_EQ(CsvField(""), "");
  EXPECT_EQ(CsvField("a,b"), "\"a,b\"");
  EXPECT_EQ(CsvField(R"(say "hi")"), R"("say ""hi""")");
  EXPECT_EQ(CsvField("two\nlines"), "\"two\nlines\"");
  EXPECT_EQ(CsvField("cr\r"), "\"cr\r\"");
  EXPECT_EQ(CsvField(R"({"spot.max_pool_share":0.5})"), R"("{""spot.max_pool_share"":0.5}")");
}

}  // namespace
}  // namespace gpuscaler
