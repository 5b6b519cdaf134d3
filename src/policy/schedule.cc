#include "gpuscaler/policy/schedule.h"

#include <date/date.h>
#include <date/tz.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <sstream>
#include <string_view>

namespace gpuscaler {
namespace {

struct CronField {
  const char* name;
  int low;
  int high;
  const char* const* names;  // names for low, low+1, ... (null: numbers only)
};

constexpr std::array<const char*, 12> kMonthNames = {"JAN", "FEB", "MAR", "APR", "MAY", "JUN",
                                                     "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"};
constexpr std::array<const char*, 7> kDayNames = {"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"};

constexpr std::array<CronField, 5> kFields = {{{"minute", 0, 59, nullptr},
                                               {"hour", 0, 23, nullptr},
                                               {"day of month", 1, 31, nullptr},
                                               {"month", 1, 12, kMonthNames.data()},
                                               {"day of week", 0, 7, kDayNames.data()}}};

std::string FieldError(const CronField& f, std::string_view item, const std::string& problem) {
  return std::string(f.name) + " field '" + std::string(item) + "': " + problem;
}

// A number or (where the field has names) a three-letter name.
std::optional<int> ParseValue(const CronField& f, std::string_view text) {
  if (text.empty()) return std::nullopt;
  if (std::isalpha(static_cast<unsigned char>(text[0])) && f.names != nullptr && text.size() == 3) {
    const int count = f.high == 7 ? 7 : f.high - f.low + 1;
    for (int i = 0; i < count; ++i) {
      bool same = true;
      for (int k = 0; k < 3; ++k) same &= std::toupper(static_cast<unsigned char>(text[k])) == f.names[i][k];
      if (same) return f.low + i;
    }
    return std::nullopt;
  }
  int value = 0;
  const auto r = std::from_chars(text.data(), text.data() + text.size(), value);
  if (r.ec != std::errc() || r.ptr != text.data() + text.size()) return std::nullopt;
  return value;
}

// Sets the field's matching values in `bits` (index = value); an error names
// the item and what is wrong with it.
Result<bool> ParseField(const CronField& f, std::string_view text, std::vector<bool>* bits) {
  bits->assign(static_cast<size_t>(f.high + 1), false);
  const bool any = text == "*";
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = text.find(',', start);
    const std::string_view item = text.substr(start, comma == std::string_view::npos ? text.npos : comma - start);
    start = comma == std::string_view::npos ? text.size() + 1 : comma + 1;
    if (item.empty()) return Error::InvalidInput(FieldError(f, text, "empty list item"));
    std::string_view range = item;
    int step = 1;
    if (const size_t slash = item.find('/'); slash != std::string_view::npos) {
      range = item.substr(0, slash);
      const std::optional<int> s = ParseValue({f.name, 1, 1 << 20, nullptr}, item.substr(slash + 1));
      if (!s || *s < 1) return Error::InvalidInput(FieldError(f, item, "the step must be a number >= 1"));
      step = *s;
    }
    int low = f.low;
    int high = f.high == 7 ? 6 : f.high;  // `*` in day of week is 0-6
    if (range != "*") {
      const size_t dash = range.find('-');
      const std::optional<int> a = ParseValue(f, range.substr(0, dash));
      if (!a) return Error::InvalidInput(FieldError(f, item, "not a value"));
      low = *a;
      if (dash != std::string_view::npos) {
        const std::optional<int> b = ParseValue(f, range.substr(dash + 1));
        if (!b) return Error::InvalidInput(FieldError(f, item, "not a value"));
        high = *b;
      } else {
        high = item.find('/') != std::string_view::npos ? (f.high == 7 ? 6 : f.high) : low;
      }
      if (low < f.low || high > f.high || low > f.high) {
        return Error::InvalidInput(FieldError(
            f, item, "out of range " + std::to_string(f.low) + "-" + std::to_string(f.high)));
      }
      if (low > high) return Error::InvalidInput(FieldError(f, item, "the range runs backwards"));
    }
    for (int v = low; v <= high; v += step) (*bits)[static_cast<size_t>(v)] = true;
  }
  return any;
}

std::string Expand(const std::string& text) {
  static const std::array<std::pair<const char*, const char*>, 7> kShorthands = {{{"@yearly", "0 0 1 1 *"},
                                                                                   {"@annually", "0 0 1 1 *"},
                                                                                   {"@monthly", "0 0 1 * *"},
                                                                                   {"@weekly", "0 0 * * 0"},
                                                                                   {"@daily", "0 0 * * *"},
                                                                                   {"@midnight", "0 0 * * *"},
                                                                                   {"@hourly", "0 * * * *"}}};
  for (const auto& [name, expansion] : kShorthands) {
    if (text == name) return expansion;
  }
  return text;
}

const date::time_zone* FindZone(const std::string& name) {
  try {
    return date::locate_zone(name);
  } catch (const std::exception&) {
    return nullptr;
  }
}

// Local broken-down minutes of a time zone, for consecutive minutes walked
// backwards: the zone's offset is looked up again only when the walk leaves
// the span the last lookup was valid for.
class LocalMinutes {
 public:
  explicit LocalMinutes(const date::time_zone* zone) : zone_(zone) {}

  bool Matches(const CronExpression& cron, date::sys_seconds t) {
    if (t < begin_ || t >= end_) {
      const date::sys_info info = zone_->get_info(t);
      begin_ = info.begin;
      end_ = info.end;
      offset_ = info.offset;
    }
    const auto local = t + offset_;
    const auto day = date::floor<date::days>(local);
    const date::year_month_day ymd(day);
    const auto in_day = std::chrono::duration_cast<std::chrono::minutes>(local - day).count();
    return cron.Matches(static_cast<int>(in_day % 60), static_cast<int>(in_day / 60),
                        static_cast<int>(static_cast<unsigned>(ymd.day())),
                        static_cast<int>(static_cast<unsigned>(ymd.month())),
                        static_cast<int>(date::weekday(day).c_encoding()));
  }

 private:
  const date::time_zone* zone_;
  date::sys_seconds begin_ = date::sys_seconds::max();
  date::sys_seconds end_ = date::sys_seconds::min();
  std::chrono::seconds offset_{0};
};

}  // namespace

Result<CronExpression> CronExpression::Parse(const std::string& text) {
  const std::string expanded = Expand(text);
  std::istringstream in(expanded);
  std::vector<std::string> parts;
  for (std::string part; in >> part;) parts.push_back(part);
  if (parts.size() != kFields.size()) {
    return Error::InvalidInput("a cron expression has 5 fields (minute hour day-of-month month day-of-week) or is "
                               "one of @hourly, @daily, @weekly, @monthly, @yearly; got " +
                               std::to_string(parts.size()) + " field(s) in '" + text + "'");
  }
  CronExpression c;
  std::vector<bool> bits;
  for (size_t i = 0; i < parts.size(); ++i) {
    Result<bool> any = ParseField(kFields[i], parts[i], &bits);
    if (!any) return any.error();
    for (size_t v = 0; v < bits.size(); ++v) {
      if (!bits[v]) continue;
      switch (i) {
        case 0: c.minutes_.set(v); break;
        case 1: c.hours_.set(v); break;
        case 2: c.days_.set(v); break;
        case 3: c.months_.set(v); break;
        default: c.weekdays_.set(v % 7); break;  // 7 is Sunday too
      }
    }
    if (i == 2) c.any_day_ = *any;
    if (i == 4) c.any_weekday_ = *any;
  }
  return c;
}

bool CronExpression::Matches(int minute, int hour, int day, int month, int weekday) const {
  if (!minutes_.test(static_cast<size_t>(minute)) || !hours_.test(static_cast<size_t>(hour)) ||
      !months_.test(static_cast<size_t>(month))) {
    return false;
  }
  const bool day_ok = days_.test(static_cast<size_t>(day));
  const bool weekday_ok = weekdays_.test(static_cast<size_t>(weekday));
  // crontab(5): with both day fields restricted, either one matching is enough.
  if (!any_day_ && !any_weekday_) return day_ok || weekday_ok;
  return day_ok && weekday_ok;
}

bool IsKnownTimeZone(const std::string& name) { return FindZone(name) != nullptr; }

std::vector<ScheduleInForce> SchedulesInForce(const std::vector<ScalingSchedule>& schedules, WallTime now) {
  std::vector<ScheduleInForce> out;
  const auto minute = date::floor<std::chrono::minutes>(date::sys_seconds(now.time_since_epoch()));
  for (const ScalingSchedule& s : schedules) {
    Result<CronExpression> cron = CronExpression::Parse(s.cron);
    const date::time_zone* zone = FindZone(s.timezone);
    if (!cron || zone == nullptr) continue;
    LocalMinutes local(zone);
    const auto to_wall = [](date::sys_seconds t) { return WallTime(t.time_since_epoch()); };
    if (s.duration.count() <= 0) {
      if (local.Matches(*cron, minute)) out.push_back({&s, to_wall(minute), to_wall(minute + std::chrono::minutes(1))});
      continue;
    }
    // The latest matching minute within `duration` before now starts the
    // window that ends last.
    const date::sys_seconds earliest = date::sys_seconds(now.time_since_epoch()) - s.duration;
    for (date::sys_seconds m = minute; m > earliest; m -= std::chrono::minutes(1)) {
      if (local.Matches(*cron, m)) {
        out.push_back({&s, to_wall(m), to_wall(m + s.duration)});
        break;
      }
    }
  }
  return out;
}

PoolLimits PoolLimitsAt(const NodePoolPolicy& pool, const std::vector<ScheduleInForce>& in_force) {
  PoolLimits limits{pool.min_nodes, pool.max_nodes, {}};
  std::optional<int> min_nodes;
  std::optional<int> max_nodes;
  for (const ScheduleInForce& f : in_force) {
    const ScalingSchedule& s = *f.schedule;
    if (!s.pools.empty() && std::find(s.pools.begin(), s.pools.end(), pool.name) == s.pools.end()) continue;
    if (!s.min_nodes && !s.max_nodes) continue;
    if (s.min_nodes) min_nodes = std::max(min_nodes.value_or(0), *s.min_nodes);
    if (s.max_nodes) max_nodes = std::min(max_nodes.value_or(*s.max_nodes), *s.max_nodes);
    limits.schedules.push_back(s.name);
  }
  if (min_nodes) limits.min_nodes = *min_nodes;
  if (max_nodes) limits.max_nodes = *max_nodes;
  limits.min_nodes = std::min(limits.min_nodes, limits.max_nodes);
  return limits;
}

}  // namespace gpuscaler
