// Scaling schedules: pool limits that change with the time of day and the day
// of the week, in the time zone the operator names ("keep 4 nodes warm on
// weekdays 8-18 Berlin time", "no new nodes at night").
//
// A schedule is in force either during every minute its cron expression
// matches (no duration: "* 8-17 * * 1-5" is weekdays 08:00-17:59), or for
// `duration` after each minute it matches ("0 8 * * 1-5" with 10h). Minutes
// are local minutes of the schedule's time zone, so a schedule follows
// daylight saving time: a local time the clocks skip never matches, one they
// repeat matches twice.
//
// Cron syntax is the five-field crontab(5) form: minute (0-59), hour (0-23),
// day of month (1-31), month (1-12 or JAN-DEC), day of week (0-7, 0 and 7
// are Sunday, or SUN-SAT); each field a comma list of `*`, `N`, `N-M`, with an
// optional `/STEP`; when both day fields are restricted a day matching either
// matches. The shorthands @yearly, @annually, @monthly, @weekly, @daily,
// @midnight and @hourly are accepted.
#pragma once

#include <bitset>
#include <optional>
#include <string>
#include <vector>

#include "gpuscaler/model/time.h"
#include "gpuscaler/policy/policy.h"
#include "gpuscaler/status.h"

namespace gpuscaler {

class CronExpression {
 public:
  // The parsed expression, or an error naming the field and the problem.
  static Result<CronExpression> Parse(const std::string& text);

  // Whether the expression matches this local minute. `weekday` is 0-6 with
  // 0 = Sunday, `month` 1-12, `day` 1-31.
  bool Matches(int minute, int hour, int day, int month, int weekday) const;

 private:
  std::bitset<60> minutes_;
  std::bitset<24> hours_;
  std::bitset<32> days_;
  std::bitset<13> months_;
  std::bitset<7> weekdays_;
  bool any_day_ = true;      // day-of-month field was `*`
  bool any_weekday_ = true;  // day-of-week field was `*`
};

// The longest `duration` a schedule may have: finding the window in force
// walks back over it minute by minute.
inline constexpr Seconds kMaxScheduleDuration{7 * 24 * 3600};

// Whether `name` is a time zone of the system's time zone database.
bool IsKnownTimeZone(const std::string& name);

struct ScheduleInForce {
  const ScalingSchedule* schedule = nullptr;
  WallTime since{};  // the matching minute that started it
  WallTime until{};  // when it ends unless a later minute matches again
};

// The schedules in force at `now`, in policy order. Schedules whose cron
// expression or time zone is invalid are never in force (the loader rejects
// them, so only a hand-built Policy can hold one).
std::vector<ScheduleInForce> SchedulesInForce(const std::vector<ScalingSchedule>& schedules, WallTime now);

// A pool's node limits at a moment: its own, or those of the schedules in
// force for it (the largest min_nodes and the smallest max_nodes among them;
// a min_nodes above the max_nodes is lowered to it).
struct PoolLimits {
  int min_nodes = 0;
  int max_nodes = 0;
  std::vector<std::string> schedules;  // names of the schedules that set them
};
PoolLimits PoolLimitsAt(const NodePoolPolicy& pool, const std::vector<ScheduleInForce>& in_force);

}  // namespace gpuscaler
