#include <cmath>
#include <cstdlib>
#include <iterator>
#include <optional>
#include <set>
#include <utility>

#include "gpuscaler/report/report.h"

namespace gpuscaler::report {
namespace {

// Each enum's names, in its declaration order (report.h).
constexpr std::string_view kDimensionNames[] = {"pool",          "region", "zone", "instance_type",
                                                "capacity_type", "class",  "team", "cluster"};
constexpr std::string_view kPeriodNames[] = {"day", "week", "month"};
constexpr std::string_view kFormatNames[] = {"csv", "json", "focus", "html"};
constexpr std::string_view kViewNames[] = {"costs",        "allocation", "savings",     "budget",
                                           "decisions",    "nodes",      "predictions", "prediction_summary",
                                           "reservations", "buy_block"};
static_assert(std::size(kDimensionNames) == static_cast<size_t>(Dimension::kCluster) + 1);
static_assert(std::size(kPeriodNames) == static_cast<size_t>(Period::kMonth) + 1);
static_assert(std::size(kFormatNames) == static_cast<size_t>(Format::kHtml) + 1);
static_assert(std::size(kViewNames) == static_cast<size_t>(View::kBuyBlock) + 1);

template <typename E, size_t N>
std::string_view NameOf(E e, const std::string_view (&names)[N]) {
  const auto i = static_cast<size_t>(e);
  return i < N ? names[i] : "?";
}

template <size_t N>
std::string Names(const std::string_view (&names)[N]) {
  std::string out;
  for (std::string_view name : names) {
    if (!out.empty()) out += ", ";
    out += name;
  }
  return out;
}

template <typename E, size_t N>
std::optional<E> ParseName(std::string_view text, const std::string_view (&names)[N]) {
  for (size_t i = 0; i < N; ++i) {
    if (names[i] == text) return static_cast<E>(i);
  }
  return std::nullopt;
}

// A parser of one of `names` into E, naming the known ones when it fails.
template <typename E, size_t N>
auto OneOf(const std::string_view (&names)[N]) {
  return [&names](const std::string& param, const std::string& text) -> Result<E> {
    if (std::optional<E> e = ParseName<E>(text, names)) return *e;
    return Error::InvalidInput(param + ": unknown '" + text + "' (known: " + Names(names) + ")");
  };
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

// A parser of an integer in [min, max].
auto Integer(int64_t min, int64_t max) {
  return [min, max](const std::string& param, const std::string& text) -> Result<int64_t> {
    char* end = nullptr;
    const long long v = std::strtoll(text.c_str(), &end, 10);
    if (text.empty() || end != text.c_str() + text.size() || v < min || v > max) {
      return Error::InvalidInput(param + ": '" + text + "' is not an integer in [" + std::to_string(min) +
                                 ", " + std::to_string(max) + "]");
    }
    return static_cast<int64_t>(v);
  };
}

// An optional parameter: absent leaves *out as it is; present, parse(name,
// text) must accept it.
template <typename T, typename Parse>
Status ReadParam(const std::map<std::string, std::string>& params, const std::string& name, Parse&& parse,
                 T* out) {
  auto it = params.find(name);
  if (it == params.end()) return Status::Ok();
  auto value = parse(name, it->second);
  if (!value) return value.error();
  *out = T(*value);
  return Status::Ok();
}

// block_type, block_count and block_upfront_usd: all three or none; the
// buy_block view needs them.
Status ReadBlock(const std::map<std::string, std::string>& params, ReportQuery* q) {
  const int given = static_cast<int>(params.count("block_type") + params.count("block_count") +
                                     params.count("block_upfront_usd"));
  if (given == 0) {
    if (q->view == View::kBuyBlock) {
      return Error::InvalidInput("view buy_block: give block_type, block_count and block_upfront_usd");
    }
    return Status::Ok();
  }
  if (given != 3) return Error::InvalidInput("block_type, block_count and block_upfront_usd go together");
  q->block_type = params.at("block_type");
  if (q->block_type.empty()) return Error::InvalidInput("block_type: give an instance type");
  Status s = ReadParam(params, "block_count", Integer(1, 1000), &q->block_count);
  if (s.ok()) s = ReadParam(params, "block_upfront_usd", ParseNumber, &q->block_upfront_usd);
  return s;
}

}  // namespace

std::string_view ToString(Dimension d) { return NameOf(d, kDimensionNames); }
std::string_view ToString(Period p) { return NameOf(p, kPeriodNames); }
std::string_view ToString(Format f) { return NameOf(f, kFormatNames); }
std::string_view ToString(View v) { return NameOf(v, kViewNames); }

Result<ReportQuery> ParseReportQuery(const std::map<std::string, std::string>& params) {
  static const std::set<std::string> kKnown = {
      "from",       "to",  "group_by",           "period",        "format",       "view",
      "team_map",   "budget_monthly_usd",        "as_of",         "min_billed_seconds",
      "loss_window_seconds", "top",              "billing_account_id", "billing_account_name", "provider_name",
      "service_name", "run",  "all_runs",        "block_type", "block_count",        "block_upfront_usd"};
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

  q.from_given = get("from") != nullptr;
  q.to_given = get("to") != nullptr;
  Status s = ReadParam(params, "from", ParseTime, &q.from);
  if (s.ok()) s = ReadParam(params, "to", ParseTime, &q.to);
  if (!s.ok()) return s.error();
  if (q.from_given && q.to_given && q.from >= q.to) {
    return Error::InvalidInput("the range is empty or inverted: from " + FormatRfc3339(q.from) +
                               " is not before to " + FormatRfc3339(q.to) + " (to is exclusive)");
  }
  if (const std::string* run = get("run")) {
    if (run->empty()) return Error::InvalidInput("run: give a run's name or id");
    q.run = *run;
  }
  if (const std::string* all = get("all_runs")) {
    if (*all != "true" && *all != "false") return Error::InvalidInput("all_runs: '" + *all + "' is not true or false");
    q.all_runs = *all == "true";
  }
  if (q.all_runs && !q.run.empty()) return Error::InvalidInput("run and all_runs exclude each other");

  if (const std::string* g = get("group_by"); g != nullptr && !g->empty()) {
    for (const std::string& name : SplitList(*g)) {
      std::optional<Dimension> d = ParseName<Dimension>(name, kDimensionNames);
      if (!d) {
        return Error::InvalidInput("group_by: unknown column '" + name +
                                   "' (known: " + Names(kDimensionNames) + ")");
      }
      for (Dimension seen : q.group_by) {
        if (seen == *d) return Error::InvalidInput("group_by: column '" + name + "' given twice");
      }
      q.group_by.push_back(*d);
    }
  }
  s = ReadParam(params, "period", OneOf<Period>(kPeriodNames), &q.period);
  if (s.ok()) s = ReadParam(params, "format", OneOf<Format>(kFormatNames), &q.format);
  if (s.ok()) s = ReadParam(params, "view", OneOf<View>(kViewNames), &q.view);
  if (!s.ok()) return s.error();
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
  s = ReadParam(params, "budget_monthly_usd", ParseNumber, &q.budget_monthly_usd);
  if (s.ok()) s = ReadParam(params, "as_of", ParseTime, &q.as_of);
  if (s.ok()) s = ReadParam(params, "min_billed_seconds", Integer(0, 86400), &q.min_billed);
  if (s.ok()) s = ReadParam(params, "loss_window_seconds", Integer(0, 7 * 86400), &q.loss_window);
  if (s.ok()) s = ReadParam(params, "top", Integer(1, 10000), &q.top);
  if (s.ok()) s = ReadBlock(params, &q);
  if (!s.ok()) return s.error();
  for (auto [name, field] :
       {std::pair{"billing_account_id", &q.billing_account_id},
        std::pair{"billing_account_name", &q.billing_account_name}, std::pair{"provider_name", &q.provider_name},
        std::pair{"service_name", &q.service_name}}) {
    const std::string* p = get(name);
    if (p == nullptr) continue;
    if (p->empty()) return Error::InvalidInput(std::string(name) + ": must not be empty");
    *field = *p;
  }
  return q;
}

}  // namespace gpuscaler::report
