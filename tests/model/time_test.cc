#include "gpuscaler/model/time.h"

#include <gtest/gtest.h>

namespace gpuscaler {
namespace {

TEST(Time, ParsesDurationsOperatorsWrite) {
  struct Case {
    std::string text;
    bool ok;
    long long want_s;
  } cases[] = {
      {"90s", true, 90},   {"5m", true, 300},     {"1h30m", true, 5400}, {"2d", true, 172800},
      {"1500ms", true, 1}, {"42", true, 42},      {"0s", true, 0},       {"", false, 0},
      {"5x", false, 0},    {"1h30", false, 0},    {"-5s", false, 0},     {"m", false, 0},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.text);
    Seconds got{-1};
    EXPECT_EQ(ParseDuration(c.text, &got), c.ok);
    if (c.ok) {
      EXPECT_EQ(got.count(), c.want_s);
    }
  }
}

TEST(Time, FormatsDurationsCompactly) {
  EXPECT_EQ(FormatDuration(Seconds(5400)), "1h30m");
  EXPECT_EQ(FormatDuration(Seconds(45)), "45s");
  EXPECT_EQ(FormatDuration(Seconds(0)), "0s");
}

TEST(Time, ParsesAndFormatsRfc3339) {
  WallTime t;
  ASSERT_TRUE(ParseRfc3339("2026-12-02T13:04:05Z", &t));
  EXPECT_EQ(ToUnixSeconds(t), 1796216645);
  EXPECT_EQ(FormatRfc3339(t), "2026-12-02T13:04:05Z");
  ASSERT_TRUE(ParseRfc3339("2026-12-02T14:04:05+01:00", &t));
  EXPECT_EQ(FormatRfc3339(t), "2026-12-02T13:04:05Z");
  ASSERT_TRUE(ParseRfc3339("2026-12-02", &t));
  EXPECT_EQ(FormatRfc3339(t), "2026-12-02T00:00:00Z");
  EXPECT_FALSE(ParseRfc3339("2026-13-02", &t));
  EXPECT_FALSE(ParseRfc3339("2026-02-30", &t));
  EXPECT_FALSE(ParseRfc3339("yesterday", &t));
}

}  // namespace
}  // namespace gpuscaler
