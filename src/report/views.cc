#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <future>
#include <map>
#include <numeric>
#include <unordered_map>

#include "gpuscaler/report/cost_model.h"
#include "gpuscaler/store/audit_reader.h"
#include "utc_days.h"

namespace gpuscaler::report {
namespace {

constexpr size_t kMaxKeys = 8;  // period + 7 dimensions

using Key = std::array<int64_t, kMaxKeys>;
struct KeyHash {
  size_t operator()(const Key& k) const {
    uint64_t h = 1469598103934665603ull;
    for (int64_t v : k) h = (h ^ static_cast<uint64_t>(v)) * 1099511628211ull;
    return static_cast<size_t>(h);
  }
};

// Interns the text of one dimension.
struct DimensionNames {
  std::vector<std::string> text;
  std::unordered_map<std::string, int64_t> ids;
  int64_t Id(const std::string& s) {
    auto [it, added] = ids.emplace(s, static_cast<int64_t>(text.size()));
    if (added) text.push_back(s);
    return it->second;
  }
};

const std::string& NodeValue(const NodeFact& n, Dimension d, std::string* scratch) {
  switch (d) {
    case Dimension::kPool: return n.pool;
    case Dimension::kRegion: return n.region;
    case Dimension::kZone: return n.zone;
    case Dimension::kInstanceType: return n.instance_type;
    case Dimension::kCapacityType: *scratch = std::string(ToString(n.capacity_type)); return *scratch;
    default: return *scratch;
  }
}

}  // namespace

WallTime PeriodStart(WallTime t, Period p) {
  const int64_t day = FloorDiv(ToUnixSeconds(t), kSecondsPerDay);
  switch (p) {
    case Period::kDay:
      return FromUnixSeconds(day * kSecondsPerDay);
    case Period::kWeek: {
      const int64_t weekday = ((day + 3) % 7 + 7) % 7;  // 1970-01-01 was a Thursday; Monday = 0
      return FromUnixSeconds((day - weekday) * kSecondsPerDay);
    }
    case Period::kMonth: {
      const std::chrono::year_month_day ymd{std::chrono::sys_days{std::chrono::days{day}}};
      return WallTime(std::chrono::sys_days{ymd.year() / ymd.month() / 1});
    }
  }
  return t;
}

WallTime NextPeriodStart(WallTime t, Period p) {
  const WallTime start = PeriodStart(t, p);
  switch (p) {
    case Period::kDay: return start + Seconds(kSecondsPerDay);
    case Period::kWeek: return start + Seconds(7 * kSecondsPerDay);
    case Period::kMonth: {
      const std::chrono::year_month_day ymd{std::chrono::floor<std::chrono::days>(start)};
      const std::chrono::year_month next = ymd.year() / ymd.month() + std::chrono::months{1};
      return WallTime(std::chrono::sys_days{next / 1});
    }
  }
  return t;
}

std::vector<int64_t> CentsPreservingTotal(const std::vector<double>& usd, std::optional<int64_t> total_cents) {
  // Within this much of a whole cent an amount is that cent: 0.07 * 100 is
  // 7.000000000000001 in doubles, and an amount that is exactly zero in
  // meaning (savings of an on-demand node, attribution of the idle line)
  // may carry such noise; neither may win a remainder cent.
  constexpr double kWholeCent = 1e-6;
  std::vector<int64_t> cents(usd.size());
  std::vector<std::pair<double, size_t>> remainders;
  remainders.reserve(usd.size());
  double sum = 0;
  int64_t floor_sum = 0;
  for (size_t i = 0; i < usd.size(); ++i) {
    sum += usd[i];
    const double c = usd[i] * 100.0;
    const double nearest = std::round(c);
    const double fl = std::abs(c - nearest) < kWholeCent ? nearest : std::floor(c);
    cents[i] = static_cast<int64_t>(fl);
    floor_sum += cents[i];
    remainders.emplace_back(c - fl, i);
  }
  int64_t missing = total_cents.value_or(std::llround(sum * 100.0)) - floor_sum;
  // Largest remainders first; ties by position so output is stable. Only
  // amounts with a fractional cent receive one.
  std::stable_sort(remainders.begin(), remainders.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  for (size_t k = 0; missing > 0 && k < remainders.size() && remainders[k].first >= kWholeCent; ++k, --missing) {
    cents[remainders[k].second] += 1;
  }
  if (missing != 0) {
    // A given total a cent off the floors' reach (it was rounded elsewhere):
    // the largest amounts absorb it, so a zero stays zero.
    std::vector<size_t> by_size(usd.size());
    for (size_t i = 0; i < by_size.size(); ++i) by_size[i] = i;
    std::stable_sort(by_size.begin(), by_size.end(),
                     [&](size_t a, size_t b) { return std::abs(usd[a]) > std::abs(usd[b]); });
    for (size_t k = 0; missing != 0 && !by_size.empty(); k = (k + 1) % by_size.size()) {
      const int64_t step = missing > 0 ? 1 : -1;
      cents[by_size[k]] += step;
      missing -= step;
    }
  }
  return cents;
}

std::vector<GroupedRow> GroupLines(const CostFacts& facts, const std::vector<Dimension>& dims,
                                   std::optional<Period> period) {
  std::vector<DimensionNames> names(dims.size());
  // Per node and per allocation, the id of each dimension's value.
  std::vector<std::vector<int64_t>> node_ids(facts.nodes.size(), std::vector<int64_t>(dims.size(), -1));
  std::vector<std::vector<int64_t>> alloc_ids(facts.allocations.size() + 1, std::vector<int64_t>(dims.size(), -1));
  std::string scratch;
  for (size_t d = 0; d < dims.size(); ++d) {
    if (dims[d] == Dimension::kClass || dims[d] == Dimension::kTeam) {
      const std::string idle(kIdle);
      alloc_ids[0][d] = names[d].Id(idle);
      for (size_t a = 0; a < facts.allocations.size(); ++a) {
        const Allocation& alloc = facts.allocations[a];
        alloc_ids[a + 1][d] = names[d].Id(dims[d] == Dimension::kClass ? alloc.workload_class : alloc.team);
      }
    } else {
      for (size_t n = 0; n < facts.nodes.size(); ++n) node_ids[n][d] = names[d].Id(NodeValue(facts.nodes[n], dims[d], &scratch));
    }
  }
  // Period ordinal of every day of the range (lines never leave it).
  const int64_t first_day = FloorDiv(ToUnixSeconds(facts.from), kSecondsPerDay);
  const int64_t last_day = FloorDiv(ToUnixSeconds(facts.to) - 1, kSecondsPerDay);
  std::vector<int64_t> period_starts;  // by ordinal
  std::vector<int32_t> ordinal_of_day(static_cast<size_t>(std::max<int64_t>(0, last_day - first_day + 1)), 0);
  for (int64_t day = first_day; day <= last_day; ++day) {
    const int64_t start =
        period ? ToUnixSeconds(PeriodStart(FromUnixSeconds(day * kSecondsPerDay), *period)) : 0;
    if (period_starts.empty() || period_starts.back() != start) period_starts.push_back(start);
    ordinal_of_day[static_cast<size_t>(day - first_day)] = static_cast<int32_t>(period_starts.size() - 1);
  }
  if (period_starts.empty()) period_starts.push_back(0);
  // Small key spaces (the usual case) are summed in a dense array; large
  // ones in a hash map.
  size_t cells = period_starts.size();
  for (const DimensionNames& n : names)
    cells = cells > (size_t{1} << 40) ? cells : cells * std::max<size_t>(1, n.text.size());
  constexpr size_t kMaxDenseCells = size_t{1} << 17;
  auto key_of = [&](const CostLine& line) {
    Key key{};
    key[0] = ordinal_of_day[static_cast<size_t>(line.day - first_day)];
    for (size_t d = 0; d < dims.size(); ++d) {
      const int64_t id = node_ids[static_cast<size_t>(line.node)][d];
      key[d + 1] = id >= 0 ? id : alloc_ids[static_cast<size_t>(line.allocation + 1)][d];
    }
    return key;
  };
  std::unordered_map<Key, Metrics, KeyHash> groups;
  if (cells <= kMaxDenseCells) {
    std::vector<Metrics> dense(cells);
    std::vector<char> touched(cells, 0);
    for (const CostLine& line : facts.lines) {
      const Key key = key_of(line);
      size_t cell = static_cast<size_t>(key[0]);
      for (size_t d = 0; d < dims.size(); ++d) cell = cell * names[d].text.size() + static_cast<size_t>(key[d + 1]);
      dense[cell].Add(line.m);
      touched[cell] = 1;
    }
    for (size_t cell = 0; cell < cells; ++cell) {
      if (!touched[cell]) continue;
      Key key{};
      size_t rest = cell;
      for (size_t d = dims.size(); d-- > 0;) {
        key[d + 1] = static_cast<int64_t>(rest % names[d].text.size());
        rest /= names[d].text.size();
      }
      key[0] = static_cast<int64_t>(rest);
      groups.emplace(key, dense[cell]);
    }
  } else {
    for (const CostLine& line : facts.lines) groups[key_of(line)].Add(line.m);
  }
  std::vector<GroupedRow> rows;
  rows.reserve(groups.size());
  for (const auto& [key, m] : groups) {
    GroupedRow row;
    if (period) {
      const WallTime start = FromUnixSeconds(period_starts[static_cast<size_t>(key[0])]);
      row.period_start = std::max(start, facts.from);
      row.period_end = std::min(NextPeriodStart(start, *period), facts.to);
    } else {
      row.period_start = facts.from;
      row.period_end = facts.to;
    }
    for (size_t d = 0; d < dims.size(); ++d) row.keys.push_back(names[d].text[static_cast<size_t>(key[d + 1])]);
    row.m = m;
    rows.push_back(std::move(row));
  }
  // Periods in time order; within one, keys alphabetically with idle last.
  std::sort(rows.begin(), rows.end(), [](const GroupedRow& a, const GroupedRow& b) {
    if (a.period_start != b.period_start) return a.period_start < b.period_start;
    for (size_t d = 0; d < a.keys.size(); ++d) {
      const bool ai = a.keys[d] == kIdle, bi = b.keys[d] == kIdle;
      if (ai != bi) return bi;
      if (a.keys[d] != b.keys[d]) return a.keys[d] < b.keys[d];
    }
    return false;
  });
  return rows;
}

Result<ReportViews> BuildViews(AuditReader& reader, const CostFacts& facts, const ReportQuery& query,
                               std::optional<std::vector<DecisionPrediction>> predictions) {
  ReportViews v;
  v.group_by = query.group_by;
  v.period = query.period;
  // Each grouping reads every line: half of them on a second thread.
  std::vector<GroupedRow> daily_total;
  std::future<void> other_half = std::async(std::launch::async, [&] {
    v.daily_by_capacity = GroupLines(facts, {Dimension::kCapacityType}, Period::kDay);
    v.by_team = GroupLines(facts, {Dimension::kTeam}, std::nullopt);
    daily_total = GroupLines(facts, {}, Period::kDay);
  });
  v.costs = GroupLines(facts, query.group_by, query.period);
  v.allocation = GroupLines(facts, {Dimension::kClass, Dimension::kTeam}, std::nullopt);
  v.savings = GroupLines(facts, {Dimension::kCapacityType}, query.period);
  other_half.get();
  if (predictions) {
    v.predictions = std::move(*predictions);
  } else {
    Result<std::vector<DecisionPrediction>> built = BuildPredictions(reader, facts);
    if (!built) return built.error();
    v.predictions = std::move(*built);
  }
  v.prediction_summary = SummarizePredictions(v.predictions, static_cast<size_t>(query.top));
  if (!query.block_type.empty()) v.buy_block = BuildBlockWhatIf(facts, query);
  std::sort(v.by_team.begin(), v.by_team.end(),
            [](const GroupedRow& a, const GroupedRow& b) { return a.m.cost_usd > b.m.cost_usd; });

  // Budget: every month the range touches, with its daily burn.
  std::map<int64_t, double> daily;
  for (const GroupedRow& row : daily_total) daily[ToUnixSeconds(row.period_start)] += row.m.cost_usd;
  const WallTime observed_end = std::min(facts.to, std::max(facts.as_of, facts.from));
  for (WallTime month = PeriodStart(facts.from, Period::kMonth); month < facts.to;
       month = NextPeriodStart(month, Period::kMonth)) {
    BudgetMonth b;
    b.month_start = month;
    b.month_end = NextPeriodStart(month, Period::kMonth);
    b.cap_usd = query.budget_monthly_usd;
    const WallTime first = std::max(month, facts.from);
    const WallTime last = std::min(b.month_end, observed_end);
    for (WallTime day = PeriodStart(first, Period::kDay); day < last; day += Seconds(kSecondsPerDay)) {
      BudgetDay d;
      d.day = day;
      auto it = daily.find(ToUnixSeconds(day));
      d.cost_usd = it == daily.end() ? 0 : it->second;
      b.actual_usd += d.cost_usd;
      d.cumulative_usd = b.actual_usd;
      if (b.cap_usd) d.remaining_usd = *b.cap_usd - d.cumulative_usd;
      b.days.push_back(d);
    }
    b.complete = observed_end >= b.month_end;
    b.forecast_usd = b.actual_usd;
    const double elapsed = static_cast<double>((last - first).count());
    if (!b.complete && elapsed > 0) {
      const double rest = static_cast<double>((b.month_end - std::max(last, month)).count());
      b.forecast_usd += b.actual_usd / elapsed * rest;
    }
    v.budget.push_back(std::move(b));
  }

  // Nodes by cost, and the decisions that launched them.
  for (size_t i = 0; i < facts.nodes.size(); ++i) {
    if (facts.nodes[i].m.cost_usd != 0 || facts.nodes[i].billed_seconds > 0) v.nodes_by_cost.push_back(i);
  }
  std::stable_sort(v.nodes_by_cost.begin(), v.nodes_by_cost.end(), [&](size_t a, size_t b) {
    return facts.nodes[a].m.cost_usd > facts.nodes[b].m.cost_usd;
  });
  v.top_nodes.assign(v.nodes_by_cost.begin(),
                     v.nodes_by_cost.begin() + static_cast<std::ptrdiff_t>(
                                                   std::min<size_t>(v.nodes_by_cost.size(), static_cast<size_t>(query.top))));
  // The costliest decisions: each decision's nodes summed (in nodes_by_cost
  // order), ranked by cost, ties by id; only the top ones get their node
  // list and text.
  struct DecisionTally {
    int64_t decision_id = 0;
    Metrics m;
  };
  std::vector<DecisionTally> tallies;
  {
    std::unordered_map<int64_t, size_t> slot;
    for (size_t i : v.nodes_by_cost) {
      const NodeFact& n = facts.nodes[i];
      auto [it, added] = slot.try_emplace(n.decision_id, tallies.size());
      if (added) tallies.push_back(DecisionTally{n.decision_id, {}});
      tallies[it->second].m.Add(n.m);
    }
  }
  const size_t top_decisions = std::min(tallies.size(), static_cast<size_t>(std::max(0, query.top)));
  std::partial_sort(tallies.begin(), tallies.begin() + static_cast<std::ptrdiff_t>(top_decisions), tallies.end(),
                    [](const DecisionTally& a, const DecisionTally& b) {
                      if (a.m.cost_usd != b.m.cost_usd) return a.m.cost_usd > b.m.cost_usd;
                      return a.decision_id < b.decision_id;
                    });
  std::unordered_map<int64_t, size_t> top_slot;
  for (size_t k = 0; k < top_decisions; ++k) {
    DecisionCost d;
    d.decision_id = tallies[k].decision_id;
    d.m = tallies[k].m;
    top_slot.emplace(d.decision_id, k);
    v.decisions.push_back(std::move(d));
  }
  for (size_t i : v.nodes_by_cost) {
    const NodeFact& n = facts.nodes[i];
    auto it = top_slot.find(n.decision_id);
    if (it == top_slot.end()) continue;
    DecisionCost& d = v.decisions[it->second];
    if (d.instance_ids.empty()) d.reason = n.reason;
    d.instance_ids.push_back(n.instance_id);
  }
  for (DecisionCost& d : v.decisions) {
    if (d.decision_id == 0) {
      d.summary = "nodes found running, not launched by a recorded decision";
      continue;
    }
    Result<DecisionRow> row = reader.Decision(d.decision_id);
    if (!row) {
      if (row.error().category() != ErrorCategory::kNotFound) return row.error();
      d.summary = "(decision pruned from the store)";
      continue;
    }
    d.time = row->decision.time;
    d.source = row->decision.source;
    d.policy_name = row->decision.policy_name;
    d.summary = row->decision.summary;
  }
  return v;
}

}  // namespace gpuscaler::report
