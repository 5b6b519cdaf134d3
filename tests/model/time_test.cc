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

// Found by the snapshot fuzz target: year 226 was written "226-07-21...",
// which the reader then rejected. Every time the reader accepts is written
// back with four year digits and reads back to itself; an offset that
// leaves years 0000-9999 is rejected, as it could not be written.
TEST(Time, EveryAcceptedTimeIsWrittenBackAsItself) {
  for (const char* text : {"0226-07-21T08:00:00Z", "0000-01-01T00:00:00Z", "0001-02-03T04:05:06Z",
                           "1969-12-31T23:59:59Z", "9999-12-31T23:59:59Z", "0999-12-31T23:00:00-00:30"}) {
    SCOPED_TRACE(text);
    WallTime t;
    ASSERT_TRUE(ParseRfc3339(text, &t));
    const std::string written = FormatRfc3339(t);
    EXPECT_EQ(written.size(), 20u) << written;
    WallTime back;
    ASSERT_TRUE(ParseRfc3339(written, &back)) << written;
    EXPECT_EQ(back, t);
  }
  WallTime t;
  EXPECT_EQ((ParseRfc3339("0226-07-21T08:00:00Z", &t), FormatRfc3339(t)), "0226-07-21T08:00:00Z");
  EXPECT_FALSE(ParseRfc3339("0000-01-01T00:00:00+01:00", &t));  // year -1
  EXPECT_FALSE(ParseRfc3339("9999-12-31T23:59:59-01:00", &t));  // year 10000
}

}  // namespace
}  // namespace gpuscaler
