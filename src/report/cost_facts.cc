#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "gpuscaler/report/cost_model.h"
#include "gpuscaler/store/audit_reader.h"

namespace gpuscaler::report {
namespace {

constexpr int64_t kSecondsPerDay = 86400;

int64_t FloorDiv(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using StringIndex = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;

// A stretch of a node's billed time inside one UTC day at one price.
struct Slice {
  int64_t t0 = 0;
  int64_t t1 = 0;
  double usd_per_hour = 0;
  bool in_loss_window = false;
};

struct UsageItem {
  int64_t start = 0;
  int64_t end = 0;
  double allocated = 0;
  double busy = 0;
  int32_t allocation = 0;
};

struct Bucket {
  Metrics total;
  std::vector<std::pair<int32_t, Metrics>> by_allocation;

  Metrics& For(int32_t allocation) {
    for (auto& [a, m] : by_allocation) {
      if (a == allocation) return m;
    }
    by_allocation.emplace_back(allocation, Metrics{});
    return by_allocation.back().second;
  }
};

}  // namespace

void Metrics::Add(const Metrics& o) {
  cost_usd += o.cost_usd;
  idle_usd += o.idle_usd;
  on_demand_usd += o.on_demand_usd;
  gpu_seconds_paid += o.gpu_seconds_paid;
  gpu_seconds_allocated += o.gpu_seconds_allocated;
  gpu_seconds_busy += o.gpu_seconds_busy;
  gpu_seconds_lost += o.gpu_seconds_lost;
  lost_usd += o.lost_usd;
}

Result<CostFacts> BuildCostFacts(AuditReader& reader, const ReportQuery& query) {
  if (query.from >= query.to) {
    return Error::InvalidInput("the range is empty or inverted: from " + FormatRfc3339(query.from) +
                               " is not before to " + FormatRfc3339(query.to));
  }
  // One snapshot for nodes, prices and usage: a live daemon may commit a
  // tick between the reads.
  AuditReader::ConsistentRead snapshot(reader);
  if (!snapshot.status().ok()) return snapshot.status().error().WithContext("starting the report's read");

  CostFacts f;
  f.from = query.from;
  f.to = query.to;
  if (query.as_of) {
    f.as_of = *query.as_of;
  } else {
    Result<std::optional<WallTime>> last = reader.LastRecordTime();
    if (!last) return last.error();
    f.as_of = last->value_or(query.from);
  }
  const int64_t from = ToUnixSeconds(query.from);
  const int64_t to = ToUnixSeconds(query.to);
  const int64_t as_of = ToUnixSeconds(f.as_of);

  Result<std::vector<NodeRow>> rows = reader.NodesOverlapping(query.from, query.to);
  if (!rows) return rows.error();
  std::vector<std::vector<PriceInterval>> prices;
  prices.reserve(rows->size());
  f.nodes.reserve(rows->size());
  StringIndex node_index;
  for (NodeRow& row : *rows) {
    NodeFact n;
    n.instance_id = std::move(row.launch.instance_id);
    n.node_id = std::move(row.launch.node_id);
    n.pool = std::move(row.launch.pool);
    n.region = row.launch.offering.region;
    n.zone = row.launch.offering.zone;
    n.instance_type = row.launch.offering.instance_type;
    n.capacity_type = row.launch.offering.capacity_type;
    n.gpu_count = row.launch.gpu_count;
    n.launch_usd_per_hour = row.launch.offering.usd_per_hour;
    n.on_demand_usd_per_hour = row.launch.offering.on_demand_usd_per_hour;
    n.launch = row.launch.launch_time;
    n.end = row.end_time;
    n.cause = std::move(row.cause);
    n.decision_id = row.launch.decision_id;
    n.reason = std::move(row.launch.reason);
    n.price_changes = row.prices.empty() ? 0 : static_cast<int>(row.prices.size()) - 1;
    node_index.emplace(n.instance_id, static_cast<int32_t>(f.nodes.size()));
    f.nodes.push_back(std::move(n));
    prices.push_back(std::move(row.prices));
  }

  // Usage, bucketed by node; (class, team) interned. Recorded teams win;
  // the query's class -> team map fills the gaps.
  std::vector<std::vector<UsageItem>> usage(f.nodes.size());
  StringIndex allocation_index;
  std::string key;
  Status read = reader.ForEachUsage(query.from, query.to, [&](const UsageView& u) {
    ++f.usage_rows;
    auto node = node_index.find(u.instance_id);
    if (node == node_index.end()) {
      ++f.usage_rows_without_node;
      return;
    }
    key.assign(u.workload_class);
    key.push_back('\x1f');
    key.append(u.team);
    auto a = allocation_index.find(key);
    if (a == allocation_index.end()) {
      Allocation alloc{std::string(u.workload_class), std::string(u.team)};
      if (alloc.team.empty()) {
        auto mapped = query.team_map.find(alloc.workload_class);
        alloc.team = mapped != query.team_map.end() ? mapped->second : std::string(kUnallocated);
      }
      a = allocation_index.emplace(key, static_cast<int32_t>(f.allocations.size())).first;
      f.allocations.push_back(std::move(alloc));
    }
    usage[static_cast<size_t>(node->second)].push_back(UsageItem{ToUnixSeconds(u.start), ToUnixSeconds(u.end),
                                                                  u.gpu_seconds_allocated, u.gpu_seconds_busy,
                                                                  a->second});
  });
  if (!read.ok()) return read.error();
  if (f.usage_rows_without_node > 0) {
    f.warnings.push_back(std::to_string(f.usage_rows_without_node) +
                         " usage records name nodes the store has no launch record of; they carry no cost");
  }

  const int64_t min_billed = query.min_billed.count();
  const int64_t loss_window = query.loss_window.count();
  std::vector<Slice> slices;
  std::vector<Bucket> buckets;
  for (size_t i = 0; i < f.nodes.size(); ++i) {
    NodeFact& n = f.nodes[i];
    const int64_t launch = ToUnixSeconds(n.launch);
    if (launch > as_of) continue;  // after the data the report stands on
    int64_t bill_end = n.end ? std::min(ToUnixSeconds(*n.end), as_of) : as_of;
    bill_end = std::max(bill_end, launch);
    const int64_t w0 = std::max(launch, from);
    const int64_t w1 = std::min(bill_end, to);
    // The minimum charge tops up a short life; it is due at the launch.
    const int64_t top_up = launch >= from && launch < to ? std::max<int64_t>(0, min_billed - (bill_end - launch)) : 0;
    if (w1 <= w0 && top_up == 0) continue;

    const bool interrupted = n.cause == "interrupted" && n.end.has_value();
    const int64_t loss_start = interrupted ? ToUnixSeconds(*n.end) - loss_window : INT64_MAX;
    const std::vector<PriceInterval>& p = prices[i];
    slices.clear();
    auto add_segment = [&](int64_t s, int64_t e, double price) {
      s = std::max(s, w0);
      e = std::min(e, w1);
      while (s < e) {
        int64_t cut = std::min(e, (FloorDiv(s, kSecondsPerDay) + 1) * kSecondsPerDay);
        if (s < loss_start && loss_start < cut) cut = loss_start;
        slices.push_back(Slice{s, cut, price, s >= loss_start});
        s = cut;
      }
    };
    if (p.empty()) {
      add_segment(launch, bill_end, n.launch_usd_per_hour);
    } else {
      for (size_t k = 0; k < p.size(); ++k) {
        const int64_t s = std::max(ToUnixSeconds(p[k].from), launch);
        const int64_t e = k + 1 < p.size() ? ToUnixSeconds(p[k + 1].from) : bill_end;
        add_segment(s, e, p[k].usd_per_hour);
      }
    }
    const double last_price = p.empty() ? n.launch_usd_per_hour : p.back().usd_per_hour;
    // FOCUS charges: slices merged back where only the loss window split them.
    const size_t first_charge = f.charges.size();
    for (const Slice& s : slices) {
      if (f.charges.size() > first_charge) {
        Charge& last = f.charges.back();
        if (ToUnixSeconds(last.end) == s.t0 && last.usd_per_hour == s.usd_per_hour &&
            FloorDiv(s.t0, kSecondsPerDay) == FloorDiv(ToUnixSeconds(last.start), kSecondsPerDay)) {
          last.end = FromUnixSeconds(s.t1);
          last.billed_seconds += s.t1 - s.t0;
          continue;
        }
      }
      f.charges.push_back(Charge{static_cast<int32_t>(i), FromUnixSeconds(s.t0), FromUnixSeconds(s.t1),
                                 s.usd_per_hour, s.t1 - s.t0});
    }
    if (top_up > 0) {
      if (f.charges.size() > first_charge && f.charges.back().usd_per_hour == last_price) {
        f.charges.back().billed_seconds += top_up;
      } else {
        const WallTime at = FromUnixSeconds(std::clamp(bill_end, from, to));
        f.charges.push_back(Charge{static_cast<int32_t>(i), at, at + Seconds(top_up), last_price, top_up});
      }
    }

    const int64_t first_day = FloorDiv(w1 > w0 ? w0 : launch, kSecondsPerDay);
    const int64_t last_day = w1 > w0 ? FloorDiv(w1 - 1, kSecondsPerDay) : first_day;
    buckets.assign(static_cast<size_t>(last_day - first_day + 1), Bucket{});
    const double gpus = n.gpu_count;
    const double od_per_hour = n.on_demand_usd_per_hour;
    for (const Slice& s : slices) {
      const double seconds = static_cast<double>(s.t1 - s.t0);
      Metrics& m = buckets[static_cast<size_t>(FloorDiv(s.t0, kSecondsPerDay) - first_day)].total;
      m.cost_usd += s.usd_per_hour * seconds / 3600.0;
      m.on_demand_usd += od_per_hour * seconds / 3600.0;
      m.gpu_seconds_paid += gpus * seconds;
      n.billed_seconds += s.t1 - s.t0;
    }
    if (top_up > 0) {
      Metrics& m = buckets[static_cast<size_t>(FloorDiv(launch, kSecondsPerDay) - first_day)].total;
      m.cost_usd += last_price * static_cast<double>(top_up) / 3600.0;
      m.on_demand_usd += od_per_hour * static_cast<double>(top_up) / 3600.0;
      m.gpu_seconds_paid += gpus * static_cast<double>(top_up);
      n.billed_seconds += top_up;
    }
    // Each usage record's GPU-seconds, spread evenly over its interval, at
    // the per-GPU rate of every slice it overlaps.
    if (n.gpu_count > 0) {
      for (const UsageItem& u : usage[i]) {
        if (u.end <= u.start || u.allocated <= 0) continue;
        const double duration = static_cast<double>(u.end - u.start);
        auto it = std::upper_bound(slices.begin(), slices.end(), u.start,
                                   [](int64_t t, const Slice& s) { return t < s.t1; });
        for (; it != slices.end() && it->t0 < u.end; ++it) {
          const int64_t overlap = std::min(u.end, it->t1) - std::max(u.start, it->t0);
          if (overlap <= 0) continue;
          const double share = static_cast<double>(overlap) / duration;
          const double allocated = u.allocated * share;
          const double cost = allocated * it->usd_per_hour / gpus / 3600.0;
          Metrics& m = buckets[static_cast<size_t>(FloorDiv(it->t0, kSecondsPerDay) - first_day)].For(u.allocation);
          m.cost_usd += cost;
          m.on_demand_usd += allocated * od_per_hour / gpus / 3600.0;
          m.gpu_seconds_paid += allocated;
          m.gpu_seconds_allocated += allocated;
          m.gpu_seconds_busy += u.busy * share;
          if (it->in_loss_window) {
            m.gpu_seconds_lost += allocated;
            m.lost_usd += cost;
          }
        }
      }
    }
    // Lines: each allocation, then the node's idle rest of the day.
    for (size_t b = 0; b < buckets.size(); ++b) {
      Bucket& bucket = buckets[b];
      const int64_t day = first_day + static_cast<int64_t>(b);
      Metrics idle = bucket.total;
      std::sort(bucket.by_allocation.begin(), bucket.by_allocation.end(),
                [](const auto& a, const auto& c) { return a.first < c.first; });
      for (const auto& [allocation, m] : bucket.by_allocation) {
        idle.cost_usd -= m.cost_usd;
        idle.on_demand_usd -= m.on_demand_usd;
        idle.gpu_seconds_paid -= m.gpu_seconds_paid;
        f.lines.push_back(CostLine{day, static_cast<int32_t>(i), allocation, m});
        n.m.Add(m);
      }
      // A fully allocated day leaves a rounding residue (~1e-14), not idle.
      if (std::fabs(idle.cost_usd) < 1e-9 && std::fabs(idle.gpu_seconds_paid) < 1e-6) continue;
      idle.idle_usd = idle.cost_usd;
      f.lines.push_back(CostLine{day, static_cast<int32_t>(i), -1, idle});
      n.m.Add(idle);
    }
    f.total.Add(n.m);
  }
  return f;
}

}  // namespace gpuscaler::report
