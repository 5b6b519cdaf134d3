#include "gpuscaler/model/text.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace gpuscaler {
namespace {

TEST(Trim, RemovesTheSixAsciiWhiteSpacesAtBothEndsOnly) {
  struct Case {
    std::string name, in, want;
  };
  const std::vector<Case> cases = {
      {"empty", "", ""},
      {"only blanks", " \t\r\n\v\f", ""},
      {"nothing to trim", "a b", "a b"},
      {"both ends", "\t a b \r\n", "a b"},
      {"inner blanks kept", "  key = value  ", "key = value"},
      {"NUL is not white space", std::string("\0a\0", 3), std::string("\0a\0", 3)},
      {"non-ASCII bytes are kept", "\xa0x\xa0", "\xa0x\xa0"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(Trim(c.in), c.want);
  }
}

TEST(Trim, ViewsItsArgument) {
  const std::string text = "  abc ";
  const std::string_view trimmed = Trim(text);
  EXPECT_EQ(trimmed.data(), text.data() + 2);
  EXPECT_EQ(trimmed.size(), 3u);
}

TEST(EqualsIgnoreCase, FoldsAsciiLettersOnly) {
  EXPECT_TRUE(EqualsIgnoreCase("Content-Length", "content-LENGTH"));
  EXPECT_TRUE(EqualsIgnoreCase("", ""));
  EXPECT_FALSE(EqualsIgnoreCase("abc", "abcd"));
  EXPECT_FALSE(EqualsIgnoreCase("a-b", "a_b"));
  EXPECT_FALSE(EqualsIgnoreCase("@", "`"));     // 0x40 and 0x60 differ by the case bit, but are not letters
  EXPECT_FALSE(EqualsIgnoreCase("\xc9", "\xe9"));  // nor are bytes >= 0x80
}

TEST(Split, GivesOneMorePieceThanSeparatorsEmptyOnesIncluded) {
  struct Case {
    std::string name, in;
    std::vector<std::string> want;
  };
  const std::vector<Case> cases = {
      {"empty text", "", {""}},
      {"no separator", "abc", {"abc"}},
      {"two pieces", "a,b", {"a", "b"}},
      {"empty middle", "a,,b", {"a", "", "b"}},
      {"separator at both ends", ",a,", {"", "a", ""}},
      {"only separators", ",,", {"", "", ""}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::vector<std::string_view> got = Split(c.in, ',');
    EXPECT_EQ(std::vector<std::string>(got.begin(), got.end()), c.want);
  }
}

TEST(HexLower, WritesTwoLowercaseDigitsPerByte) {
  EXPECT_EQ(HexLower(""), "");
  EXPECT_EQ(HexLower(std::string("\x00\x01\x0f\x10\xab\xff", 6)), "00010f10abff");
  EXPECT_EQ(HexLower("gpu"), "677075");
}

enum class Color { kRed, kGreen, kBlue };
constexpr EnumName<Color> kColorNames[] = {{Color::kRed, "red"}, {Color::kGreen, "green"}, {Color::kGreen, "lime"}};

TEST(EnumName, OneTableNamesValuesAndParsesNames) {
  EXPECT_EQ(NameOf(Color::kRed, kColorNames), "red");
  EXPECT_EQ(NameOf(Color::kGreen, kColorNames), "green");  // the first of its names
  EXPECT_EQ(NameOf(Color::kBlue, kColorNames, "unknown"), "unknown");
  EXPECT_EQ(ValueNamed("lime", kColorNames), Color::kGreen);
  EXPECT_EQ(ValueNamed("red", kColorNames), Color::kRed);
  EXPECT_EQ(ValueNamed("Red", kColorNames), std::nullopt);
  static_assert(NameOf(Color::kRed, kColorNames) == "red");
}

}  // namespace
}  // namespace gpuscaler
