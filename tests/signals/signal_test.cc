#include "gpuscaler/signals/signal.h"

#include <gtest/gtest.h>

#include <cmath>

namespace gpuscaler::signals {
namespace {

const WallTime kNow = FromUnixSeconds(1'800'000'000);

TEST(SignalReading, JudgesFreshnessAgainstThePolicy) {
  SignalsPolicy policy;  // prometheus 120s, prices 3600s
  struct Case {
    const char* source;
    int age_s;
    SignalState want;
  } cases[] = {
      {"prometheus", 0, SignalState::kOk},       {"prometheus", 120, SignalState::kOk},
      {"prometheus", 121, SignalState::kStale},  {"prices", 3000, SignalState::kOk},
      {"prices", 3601, SignalState::kStale},     {"unknown-source", 120, SignalState::kOk},
      {"unknown-source", 121, SignalState::kStale}, {"prometheus", -60, SignalState::kOk},
      {"prometheus", -121, SignalState::kStale},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.source) + " age " + std::to_string(c.age_s));
    SignalReading r = MakeReading(c.source, "q", 7.0, kNow - Seconds(c.age_s));
    SignalReading judged = JudgeFreshness(r, policy, kNow);
    EXPECT_EQ(judged.state, c.want);
    EXPECT_EQ(judged.value, 7.0);  // kept for the audit row either way
    if (c.want == SignalState::kOk) {
      EXPECT_EQ(judged.UsableValue(), 7.0);
      EXPECT_TRUE(judged.error.empty());
    } else {
      EXPECT_FALSE(judged.UsableValue().has_value());
      EXPECT_FALSE(judged.error.empty());
    }
  }
}

TEST(SignalReading, StaleMessageNamesAgeAndLimit) {
  SignalsPolicy policy;
  policy.max_staleness["rabbitmq"] = Seconds(60);
  SignalReading judged = JudgeFreshness(MakeReading("rabbitmq", "/celery", 3, kNow - Seconds(180)), policy, kNow);
  EXPECT_EQ(judged.state, SignalState::kStale);
  EXPECT_EQ(judged.error, "age 3m > max 1m");
  EXPECT_EQ(Age(judged, kNow), Seconds(180));
}

TEST(SignalReading, MissingAndNanNeverReadAsZero) {
  SignalsPolicy policy;
  SignalReading missing = JudgeFreshness(MakeMissingReading("prometheus", "q", "timeout"), policy, kNow);
  EXPECT_EQ(missing.state, SignalState::kMissing);
  EXPECT_EQ(missing.error, "timeout");
  EXPECT_FALSE(missing.UsableValue().has_value());
  EXPECT_FALSE(Age(missing, kNow).has_value());

  SignalReading nan = MakeReading("dcgm", "n1", std::nan(""), kNow);
  EXPECT_EQ(nan.state, SignalState::kMissing);
  EXPECT_FALSE(JudgeFreshness(nan, policy, kNow).UsableValue().has_value());

  SignalReading no_time;
  no_time.source = "prometheus";
  no_time.value = 4;
  no_time.state = SignalState::kOk;
  SignalReading judged = JudgeFreshness(no_time, policy, kNow);
  EXPECT_EQ(judged.state, SignalState::kMissing);
  EXPECT_EQ(judged.error, "no observation time");

  SignalReading zero = JudgeFreshness(MakeReading("prometheus", "q", 0.0, kNow), policy, kNow);
  EXPECT_EQ(zero.UsableValue(), 0.0);  // a real zero stays a zero
}

TEST(SignalReading, AStaleReadingBecomesFreshAgainWhenRead) {
  SignalsPolicy policy;
  SignalReading r = JudgeFreshness(MakeReading("prometheus", "q", 1, kNow - Seconds(500)), policy, kNow);
  ASSERT_EQ(r.state, SignalState::kStale);
  r.observed_at = kNow;
  r = JudgeFreshness(r, policy, kNow);
  EXPECT_EQ(r.state, SignalState::kOk);
  EXPECT_TRUE(r.error.empty());
}

TEST(SignalReading, NamesStates) {
  EXPECT_EQ(ToString(SignalState::kOk), "ok");
  EXPECT_EQ(ToString(SignalState::kStale), "stale");
  EXPECT_EQ(ToString(SignalState::kMissing), "missing");
}

TEST(SignalReading, MapsHttpStatusesToCategories) {
  struct Case {
    int status;
    ErrorCategory want;
  } cases[] = {
      {401, ErrorCategory::kAuth},         {403, ErrorCategory::kAuth},      {404, ErrorCategory::kNotFound},
      {429, ErrorCategory::kThrottled},    {400, ErrorCategory::kInvalidInput}, {500, ErrorCategory::kTransient},
      {502, ErrorCategory::kTransient},    {503, ErrorCategory::kTransient},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.status);
    EXPECT_EQ(HttpStatusError("rabbitmq", c.status, "body").category(), c.want);
  }
  Error e = HttpStatusError("rabbitmq", 502, std::string(500, 'x'));
  EXPECT_EQ(e.message().rfind("rabbitmq: HTTP 502: xxx", 0), 0u);
  EXPECT_LT(e.message().size(), 240u);
}

}  // namespace
}  // namespace gpuscaler::signals
