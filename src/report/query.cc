#include <cmath>
#include <cstdlib>
#include <set>

#include "gpuscaler/report/report.h"

namespace gpuscaler::report {
namespace {

constexpr Dimension kDimensions[] = {Dimension::kPool,         Dimension::kRegion,       Dimension::kZone,
                                     Dimension::kInstanceType, Dimension::kCapacityType, Dimension::kClass,
                                     Dimension::kTeam};
constexpr Period kPeriods[] = {Period::kDay, Period::kWeek, Period::kMonth};
constexpr Format kFormats[] = {Format::kCsv, Format::kJson, Format::kFocus, Format::kHtml};
constexpr View kViews[] = {View::kCosts, View::kAllocation, View::kSavings, View::kBudget, View::kDecisions, View::kNodes};

template <typename E, size_t N>
std::optional<E> ParseName(std::string_view text, const E (&all)[N]) {
  for (E e : all) {
    if (ToString(e) == text) return e;
  }
  return std::nullopt;
}

template <typename E, size_t N>
std::string Names(const E (&all)[N]) {
  std::string out;
  for (E e : all) {
    if (!out.empty()) out += ", ";
    out += ToString(e);
  }
  return out;
}

std::vector<std::string> SplitList(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    std::string item = text.substr(start, comma - start);
    while (!item.empty() && item.front() == ' ') item.erase(item.begin());
    while (!item.empty() && item.back() == ' ') item.pop_back();
    out.push_back(item);
    start = comma + 1;
  }
  return out;
}

Result<WallTime> ParseTime(const std::string& name, const std::string& text) {
  WallTime t;
  if (!ParseRfc3339(text, &t)) {
    return Error::InvalidInput(name + ": '" + text + "' is not a date (YYYY-MM-DD) or an RFC 3339 time");
  }
  return t;
}

Result<double> ParseNumber(const std::string& name, const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(v) || v < 0) {
    return Error::InvalidInput(name + ": '" + text + "' is not a non-negative number");
  }
  return v;
}

Result<int64_t> ParseInteger(const std::string& name, const std::string& text, int64_t min, int64_t max) {
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || end != text.c_str() + text.size() || v < min || v > max) {
    return Error::InvalidInput(name + ": '" + text + "' is not an integer in [" + std::to_string(min) + ", " +
                               std::to_string(max) + "]");
  }
  return static_cast<int64_t>(v);
}

}  // namespace

std::string_view ToString(Dimension d) {
  switch (d) {
    case Dimension::kPool: return "pool";
    case Dimension::kRegion: return "region";
    case Dimension::kZone: return "zone";
    case Dimension::kInstanceType: return "instance_type";
    case Dimension::kCapacityType: return "capacity_type";
    case Dimension::kClass: return "class";
    case Dimension::kTeam: return "team";
  }
  return "?";
}

std::string_view ToString(Period p) {
  switch (p) {
    case Period::kDay: return "day";
    case Period::kWeek: return "week";
    case Period::kMonth: return "month";
  }
  return "?";
}

std::string_view ToString(Format f) {
  switch (f) {
    case Format::kCsv: return "csv";
    case Format::kJson: return "json";
    case Format::kFocus: return "focus";
    case Format::kHtml: return "html";
  }
  return "?";
}

std::string_view ToString(View v) {
  switch (v) {
    case View::kCosts: return "costs";
    case View::kAllocation: return "allocation";
    case View::kSavings: return "savings";
    case View::kBudget: return "budget";
    case View::kDecisions: return "decisions";
    case View::kNodes: return "nodes";
  }
  return "?";
}

Result<ReportQuery> ParseReportQuery(const std::map<std::string, std::string>& params) {
  static const std::set<std::string> kKnown = {
      "from",       "to",  "group_by",           "period",        "format",       "view",
      "team_map",   "budget_monthly_usd",        "as_of",         "min_billed_seconds",
      "loss_window_seconds", "top",              "billing_account_id", "provider_name", "service_name"};
  ReportQuery q;
  for (const auto& [name, value] : params) {
    if (kKnown.count(name) == 0) {
      std::string known;
      for (const std::string& k : kKnown) {
        if (!known.empty()) known += ", ";
        known += k;
      }
      return Error::InvalidInput("unknown parameter '" + name + "' (known: " + known + ")");
    }
  }
  auto get = [&](const char* name) -> const std::string* {
    auto it = params.find(name);
    return it == params.end() ? nullptr : &it->second;
  };

  const std::string* from = get("from");
  const std::string* to = get("to");
  if (from == nullptr || to == nullptr) return Error::InvalidInput("from and to are required (YYYY-MM-DD)");
  Result<WallTime> f = ParseTime("from", *from);
  if (!f) return f.error();
  Result<WallTime> t = ParseTime("to", *to);
  if (!t) return t.error();
  if (*f >= *t) {
    return Error::InvalidInput("the range is empty or inverted: from " + FormatRfc3339(*f) + " is not before to " +
                               FormatRfc3339(*t) + " (to is exclusive)");
  }
  q.from = *f;
  q.to = *t;

  if (const std::string* g = get("group_by"); g != nullptr && !g->empty()) {
    for (const std::string& name : SplitList(*g)) {
      std::optional<Dimension> d = ParseName(name, kDimensions);
      if (!d) {
        return Error::InvalidInput("group_by: unknown column '" + name + "' (known: " + Names(kDimensions) + ")");
      }
      for (Dimension seen : q.group_by) {
        if (seen == *d) return Error::InvalidInput("group_by: column '" + name + "' given twice");
      }
      q.group_by.push_back(*d);
    }
  }
  if (const std::string* p = get("period")) {
    std::optional<Period> v = ParseName(*p, kPeriods);
    if (!v) return Error::InvalidInput("period: unknown '" + *p + "' (known: " + Names(kPeriods) + ")");
    q.period = *v;
  }
  if (const std::string* p = get("format")) {
    std::optional<Format> v = ParseName(*p, kFormats);
    if (!v) return Error::InvalidInput("format: unknown '" + *p + "' (known: " + Names(kFormats) + ")");
    q.format = *v;
  }
  if (const std::string* p = get("view")) {
    std::optional<View> v = ParseName(*p, kViews);
    if (!v) return Error::InvalidInput("view: unknown '" + *p + "' (known: " + Names(kViews) + ")");
    q.view = *v;
  }
  if (const std::string* p = get("team_map"); p != nullptr && !p->empty()) {
    for (const std::string& pair : SplitList(*p)) {
      const size_t eq = pair.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == pair.size()) {
        return Error::InvalidInput("team_map: '" + pair + "' is not class=team");
      }
      const std::string cls = pair.substr(0, eq);
      if (!q.team_map.emplace(cls, pair.substr(eq + 1)).second) {
        return Error::InvalidInput("team_map: class '" + cls + "' mapped twice");
      }
    }
  }
  if (const std::string* p = get("budget_monthly_usd")) {
    Result<double> v = ParseNumber("budget_monthly_usd", *p);
    if (!v) return v.error();
    q.budget_monthly_usd = *v;
  }
  if (const std::string* p = get("as_of")) {
    Result<WallTime> v = ParseTime("as_of", *p);
    if (!v) return v.error();
    q.as_of = *v;
  }
  if (const std::string* p = get("min_billed_seconds")) {
    Result<int64_t> v = ParseInteger("min_billed_seconds", *p, 0, 86400);
    if (!v) return v.error();
    q.min_billed = Seconds(*v);
  }
  if (const std::string* p = get("loss_window_seconds")) {
    Result<int64_t> v = ParseInteger("loss_window_seconds", *p, 0, 7 * 86400);
    if (!v) return v.error();
    q.loss_window = Seconds(*v);
  }
  if (const std::string* p = get("top")) {
    Result<int64_t> v = ParseInteger("top", *p, 1, 10000);
    if (!v) return v.error();
    q.top = static_cast<int>(*v);
  }
  for (const char* name : {"billing_account_id", "provider_name", "service_name"}) {
    const std::string* p = get(name);
    if (p == nullptr) continue;
    if (p->empty()) return Error::InvalidInput(std::string(name) + ": must not be empty");
    std::string& field = std::string_view(name) == "billing_account_id" ? q.billing_account_id
                         : std::string_view(name) == "provider_name"    ? q.provider_name
                                                                        : q.service_name;
    field = *p;
  }
  return q;
}

}  // namespace gpuscaler::report
