#include "gpuscaler/policy/schedule.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gpuscaler/policy/loader.h"

namespace gpuscaler {
namespace {

WallTime At(const std::string& rfc3339) {
  WallTime t{};
  EXPECT_TRUE(ParseRfc3339(rfc3339, &t)) << rfc3339;
  return t;
}

std::vector<std::string> InForce(const std::vector<ScalingSchedule>& schedules, const std::string& when) {
  std::vector<std::string> names;
  for (const ScheduleInForce& f : SchedulesInForce(schedules, At(when))) names.push_back(f.schedule->name);
  return names;
}

ScalingSchedule Schedule(std::string name, std::string cron, std::string zone, Seconds duration = Seconds(0)) {
  ScalingSchedule s;
  s.name = std::move(name);
  s.cron = std::move(cron);
  s.timezone = std::move(zone);
  s.duration = duration;
  s.min_nodes = 4;
  return s;
}

using Names = std::vector<std::string>;

TEST(CronExpression, MatchesListsRangesStepsAndNames) {
  Result<CronExpression> c = CronExpression::Parse("*/15 8-17 * jan,Mar-MAY mon-fri");
  ASSERT_TRUE(c.ok()) << c.error().message();
  EXPECT_TRUE(c->Matches(0, 8, 10, 1, 1));
  EXPECT_TRUE(c->Matches(45, 17, 10, 4, 5));
  EXPECT_FALSE(c->Matches(44, 17, 10, 4, 5));  // not a multiple of 15
  EXPECT_FALSE(c->Matches(0, 18, 10, 4, 5));   // after 17h
  EXPECT_FALSE(c->Matches(0, 9, 10, 2, 1));    // February
  EXPECT_FALSE(c->Matches(0, 9, 10, 3, 0));    // Sunday
  EXPECT_FALSE(c->Matches(0, 9, 10, 3, 6));    // Saturday
}

TEST(CronExpression, SevenIsSundayAndEitherRestrictedDayFieldMatches) {
  Result<CronExpression> sunday = CronExpression::Parse("0 0 * * 7");
  ASSERT_TRUE(sunday.ok());
  EXPECT_TRUE(sunday->Matches(0, 0, 3, 5, 0));
  // crontab(5): "the 1st and every Monday", not "Mondays that are the 1st".
  Result<CronExpression> either = CronExpression::Parse("0 0 1 * 1");
  ASSERT_TRUE(either.ok());
  EXPECT_TRUE(either->Matches(0, 0, 1, 5, 4));
  EXPECT_TRUE(either->Matches(0, 0, 9, 5, 1));
  EXPECT_FALSE(either->Matches(0, 0, 9, 5, 2));
  // With one day field `*`, the other alone decides.
  Result<CronExpression> first = CronExpression::Parse("0 0 1 * *");
  ASSERT_TRUE(first.ok());
  EXPECT_FALSE(first->Matches(0, 0, 9, 5, 1));
  Result<CronExpression> daily = CronExpression::Parse("@daily");
  ASSERT_TRUE(daily.ok());
  EXPECT_TRUE(daily->Matches(0, 0, 17, 8, 3));
  EXPECT_FALSE(daily->Matches(1, 0, 17, 8, 3));
}

TEST(CronExpression, ErrorsNameTheFieldAndTheProblem) {
  const auto error = [](const std::string& text) {
    Result<CronExpression> c = CronExpression::Parse(text);
    return c.ok() ? std::string("parsed") : c.error().message();
  };
  EXPECT_EQ(error("0 8 * *"), "a cron expression has 5 fields (minute hour day-of-month month day-of-week) or is one "
                              "of @hourly, @daily, @weekly, @monthly, @yearly; got 4 field(s) in '0 8 * *'");
  EXPECT_EQ(error("0 24 * * *"), "hour field '24': out of range 0-23");
  EXPECT_EQ(error("0 8 * * mon-fry"), "day of week field 'mon-fry': not a value");
  EXPECT_EQ(error("0 17-8 * * *"), "hour field '17-8': the range runs backwards");
  EXPECT_EQ(error("*/0 * * * *"), "minute field '*/0': the step must be a number >= 1");
  EXPECT_EQ(error("0 8 0 * *"), "day of month field '0': out of range 1-31");
  EXPECT_EQ(error("0,,5 8 * * *"), "minute field '0,,5': empty list item");
}

// Europe/Berlin leaves CET (UTC+1) for CEST (UTC+2) on Sunday 2026-03-29 at
// 02:00 local and returns on Sunday 2026-10-25 at 03:00 local.
TEST(ScheduleInForce, AWindowFollowsItsTimeZoneAcrossTheSpringDaylightChange) {
  const std::vector<ScalingSchedule> s = {Schedule("office", "0 8 * * 1-5", "Europe/Berlin", Seconds(10 * 3600))};
  // Friday before the change: 08:00-18:00 CET is 07:00-17:00 UTC.
  EXPECT_EQ(InForce(s, "2026-03-27T06:59:59Z"), Names{});
  EXPECT_EQ(InForce(s, "2026-03-27T07:00:00Z"), Names{"office"});
  EXPECT_EQ(InForce(s, "2026-03-27T16:59:59Z"), Names{"office"});
  EXPECT_EQ(InForce(s, "2026-03-27T17:00:00Z"), Names{});
  // Not on the weekend.
  EXPECT_EQ(InForce(s, "2026-03-28T07:30:00Z"), Names{});
  // Monday after it: 08:00-18:00 CEST is 06:00-16:00 UTC.
  EXPECT_EQ(InForce(s, "2026-03-30T05:59:59Z"), Names{});
  EXPECT_EQ(InForce(s, "2026-03-30T06:00:00Z"), Names{"office"});
  EXPECT_EQ(InForce(s, "2026-03-30T15:59:59Z"), Names{"office"});
  EXPECT_EQ(InForce(s, "2026-03-30T16:00:00Z"), Names{});
  const std::vector<ScheduleInForce> f = SchedulesInForce(s, At("2026-03-30T12:00:00Z"));
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].since, At("2026-03-30T06:00:00Z"));
  EXPECT_EQ(f[0].until, At("2026-03-30T16:00:00Z"));
}

TEST(ScheduleInForce, MatchingMinutesFollowTheAutumnChangeToo) {
  const std::vector<ScalingSchedule> s = {Schedule("office", "* 8-17 * * mon-fri", "Europe/Berlin")};
  // Friday 2026-10-23, CEST: 08:00-17:59 local is 06:00-15:59 UTC.
  EXPECT_EQ(InForce(s, "2026-10-23T05:59:00Z"), Names{});
  EXPECT_EQ(InForce(s, "2026-10-23T06:00:00Z"), Names{"office"});
  EXPECT_EQ(InForce(s, "2026-10-23T15:59:59Z"), Names{"office"});
  EXPECT_EQ(InForce(s, "2026-10-23T16:00:00Z"), Names{});
  // Monday 2026-10-26, CET: 07:00-16:59 UTC.
  EXPECT_EQ(InForce(s, "2026-10-26T06:59:59Z"), Names{});
  EXPECT_EQ(InForce(s, "2026-10-26T07:00:00Z"), Names{"office"});
  EXPECT_EQ(InForce(s, "2026-10-26T16:59:59Z"), Names{"office"});
  EXPECT_EQ(InForce(s, "2026-10-26T17:00:00Z"), Names{});
}

TEST(ScheduleInForce, ALocalTimeTheClocksSkipNeverMatchesAndARepeatedOneMatchesTwice) {
  const std::vector<ScalingSchedule> skipped = {Schedule("x", "30 2 * * *", "Europe/Berlin")};
  // 2026-03-29: local 02:00-02:59 does not exist (01:00 UTC is 03:00 CEST).
  for (const char* t : {"2026-03-29T00:30:00Z", "2026-03-29T01:30:00Z", "2026-03-29T02:30:00Z"}) {
    EXPECT_EQ(InForce(skipped, t), Names{}) << t;
  }
  EXPECT_EQ(InForce(skipped, "2026-03-30T00:30:00Z"), Names{"x"});  // 02:30 CEST the next day
  // 2026-10-25: local 02:30 happens at 00:30 UTC (CEST) and at 01:30 UTC (CET).
  EXPECT_EQ(InForce(skipped, "2026-10-25T00:30:00Z"), Names{"x"});
  EXPECT_EQ(InForce(skipped, "2026-10-25T01:30:00Z"), Names{"x"});
}

TEST(ScheduleInForce, TheLatestMatchStartsTheWindowAndOtherZonesKeepTheirOwnHours) {
  const std::vector<ScalingSchedule> s = {
      Schedule("every-2h", "0 */2 * * *", "UTC", Seconds(3 * 3600)),
      Schedule("new-york", "0 9 * * *", "America/New_York", Seconds(3600)),
  };
  const std::vector<ScheduleInForce> f = SchedulesInForce(s, At("2026-07-01T13:30:00Z"));
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].since, At("2026-07-01T12:00:00Z"));
  EXPECT_EQ(f[0].until, At("2026-07-01T15:00:00Z"));
  EXPECT_EQ(f[1].since, At("2026-07-01T13:00:00Z"));  // 09:00 EDT
  EXPECT_EQ(InForce(s, "2026-01-15T13:30:00Z"), Names{"every-2h"});  // 08:30 EST
  EXPECT_EQ(InForce(s, "2026-01-15T14:30:00Z"), (Names{"every-2h", "new-york"}));
}

TEST(ScheduleInForce, AnEveningWindowInAZoneBehindUtcIsInForceOnTheNextUtcDay) {
  const std::vector<ScalingSchedule> s = {Schedule("evening", "0 21 * * *", "America/New_York", Seconds(3600))};
  EXPECT_EQ(InForce(s, "2026-07-06T00:59:59Z"), Names{});
  EXPECT_EQ(InForce(s, "2026-07-06T01:00:00Z"), Names{"evening"});
  EXPECT_EQ(InForce(s, "2026-07-06T01:59:59Z"), Names{"evening"});
  EXPECT_EQ(InForce(s, "2026-07-06T02:00:00Z"), Names{});
}

TEST(PoolLimitsAt, LargestFloorSmallestCapAndTheCapWins) {
  NodePoolPolicy pool;
  pool.name = "gpu";
  pool.min_nodes = 1;
  pool.max_nodes = 50;
  ScalingSchedule warm = Schedule("warm", "* * * * *", "UTC");
  warm.min_nodes = 4;
  ScalingSchedule warmer = Schedule("warmer", "* * * * *", "UTC");
  warmer.min_nodes = 6;
  ScalingSchedule cap = Schedule("cap", "* * * * *", "UTC");
  cap.min_nodes.reset();
  cap.max_nodes = 5;
  ScalingSchedule elsewhere = Schedule("elsewhere", "* * * * *", "UTC");
  elsewhere.pools = {"cpu"};
  elsewhere.min_nodes = 9;
  const std::vector<ScalingSchedule> all = {warm, warmer, cap, elsewhere};
  const std::vector<ScheduleInForce> in_force = SchedulesInForce(all, At("2026-07-01T00:00:00Z"));
  ASSERT_EQ(in_force.size(), 4u);

  PoolLimits none = PoolLimitsAt(pool, {});
  EXPECT_EQ(none.min_nodes, 1);
  EXPECT_EQ(none.max_nodes, 50);
  EXPECT_TRUE(none.schedules.empty());

  PoolLimits floors = PoolLimitsAt(pool, {in_force[0], in_force[1]});
  EXPECT_EQ(floors.min_nodes, 6);
  EXPECT_EQ(floors.max_nodes, 50);
  EXPECT_EQ(floors.schedules, (Names{"warm", "warmer"}));

  PoolLimits capped = PoolLimitsAt(pool, in_force);
  EXPECT_EQ(capped.min_nodes, 5);  // 6 lowered to the cap
  EXPECT_EQ(capped.max_nodes, 5);
  EXPECT_EQ(capped.schedules, (Names{"warm", "warmer", "cap"}));
}

constexpr const char* kPolicyHead = R"(apiVersion: gpuscaler/v1
kind: Policy
pools:
  - name: gpu
classes:
  - name: default
scaling:
  schedules:
)";

std::string Problems(const std::string& schedules) {
  const PolicyLoadResult r = ParsePolicy(std::string(kPolicyHead) + schedules, "p.yaml");
  std::string out;
  for (const auto& p : r.problems) out += p.ToString() + "\n";
  return out;
}

TEST(ScheduleLoader, ReadsASchedule) {
  const PolicyLoadResult r = ParsePolicy(std::string(kPolicyHead) +
                                             "    - name: office-hours\n"
                                             "      cron: \"0 8 * * mon-fri\"\n"
                                             "      timezone: Europe/Berlin\n"
                                             "      duration: 10h\n"
                                             "      pools: [gpu]\n"
                                             "      min_nodes: 4\n",
                                         "p.yaml");
  ASSERT_TRUE(r.ok()) << r.status().error().message();
  ASSERT_EQ(r.policy.scaling.schedules.size(), 1u);
  const ScalingSchedule& s = r.policy.scaling.schedules[0];
  EXPECT_EQ(s.name, "office-hours");
  EXPECT_EQ(s.cron, "0 8 * * mon-fri");
  EXPECT_EQ(s.timezone, "Europe/Berlin");
  EXPECT_EQ(s.duration, Seconds(36000));
  EXPECT_EQ(s.pools, Names{"gpu"});
  EXPECT_EQ(s.min_nodes, 4);
  EXPECT_FALSE(s.max_nodes.has_value());
}

TEST(ScheduleLoader, EveryMistakeIsReportedAtItsLine) {
  EXPECT_EQ(Problems("    - name: a\n      cron: \"0 25 * * *\"\n      min_nodes: 1\n"),
            "p.yaml:10:13: scaling.schedules[0].cron: hour field '25': out of range 0-23\n");
  EXPECT_EQ(Problems("    - name: a\n      cron: \"@daily\"\n      timezone: Europe/Berln\n      min_nodes: 1\n"),
            "p.yaml:11:17: scaling.schedules[0].timezone: unknown time zone 'Europe/Berln' (an IANA name such as "
            "'UTC', 'Europe/Berlin' or 'America/New_York')\n");
  EXPECT_EQ(Problems("    - name: a\n      cron: \"@daily\"\n"),
            "p.yaml:9:7: scaling.schedules[0]: a schedule sets min_nodes, max_nodes or both\n");
  EXPECT_EQ(Problems("    - name: a\n      cron: \"@daily\"\n      min_nodes: 5\n      max_nodes: 2\n"),
            "p.yaml:12:18: scaling.schedules[0].max_nodes: max_nodes (2) must be >= min_nodes (5)\n");
  EXPECT_EQ(Problems("    - name: a\n      cron: \"@daily\"\n      duration: 30s\n      min_nodes: 1\n"),
            "p.yaml:11:17: scaling.schedules[0].duration: must be between 1m and 7d (leave it out to mean the "
            "minutes the cron expression matches)\n");
  EXPECT_EQ(Problems("    - name: a\n      cron: \"@daily\"\n      pools: [gpus]\n      min_nodes: 1\n"
                     "    - name: a\n      cron: \"@daily\"\n      max_nodes: 1\n"),
            "p.yaml:11:15: scaling.schedules[0].pools[0]: unknown pool 'gpus' (did you mean 'gpu'?)\n"
            "p.yaml:13:13: scaling.schedules[1].name: duplicate schedule name 'a'\n");
}

}  // namespace
}  // namespace gpuscaler
