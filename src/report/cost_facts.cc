// BuildCostFacts (cost_model.h): its stages, in order (cost_facts_impl.h),
// and the last, the lines.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cost_facts_impl.h"
#include "gpuscaler/report/cost_model.h"
#include "gpuscaler/store/audit_reader.h"
#include "node_facts.h"
#include "usage_scan.h"

namespace gpuscaler::report {

using internal::Bucket;
using internal::UsageFrontier;

void Metrics::Add(const Metrics& o) {
  cost_usd += o.cost_usd;
  idle_usd += o.idle_usd;
  on_demand_usd += o.on_demand_usd;
  gpu_seconds_paid += o.gpu_seconds_paid;
  gpu_seconds_allocated += o.gpu_seconds_allocated;
  gpu_seconds_busy += o.gpu_seconds_busy;
  gpu_seconds_busy_measured += o.gpu_seconds_busy_measured;
  gpu_seconds_lost += o.gpu_seconds_lost;
  lost_usd += o.lost_usd;
}

namespace {

using internal::BilledTime;
using internal::NodeRanges;
using internal::NodeWork;

// Stage 5: each bucket's lines, each allocation's and then the node's idle
// rest of the day; each node's metrics. Each range of nodes writes its own
// lines; they are joined in node order. Each bucket makes a line per
// allocation and at most one idle line: reserved up front, so that no
// thread's lines are copied as they grow.
void WriteLines(const NodeRanges& ranges, BilledTime* billed, CostFacts* facts) {
  CostFacts& f = *facts;
  const std::vector<NodeWork>& work = billed->work;
  std::vector<Bucket>& buckets = billed->buckets;
  auto most_lines = [&](size_t n0, size_t n1) {
    size_t lines = 0;
    for (size_t i = n0; i < n1; ++i) {
      for (int64_t b = 0; b < work[i].days; ++b) lines += buckets[work[i].bucket_begin + static_cast<size_t>(b)].by_allocation.size() + 1;
    }
    return lines;
  };
  std::vector<CostLine> later_lines;
  f.lines.reserve(most_lines(0, work.size()));
  ranges.ForEach([&](int range, size_t n0, size_t n1) {
    std::vector<CostLine>& lines = range == 0 ? f.lines : later_lines;
    if (range != 0) lines.reserve(most_lines(n0, n1));
    for (size_t i = n0; i < n1; ++i) {
      NodeFact& n = f.nodes[i];
      const NodeWork& w = work[i];
      for (int64_t b = 0; b < w.days; ++b) {
        Bucket& bucket = buckets[w.bucket_begin + static_cast<size_t>(b)];
        const int64_t day = w.first_day + b;
        Metrics idle = bucket.total;
        std::sort(bucket.by_allocation.begin(), bucket.by_allocation.end(),
                  [](const auto& a, const auto& c) { return a.first < c.first; });
        for (const auto& [allocation, m] : bucket.by_allocation) {
          idle.cost_usd -= m.cost_usd;
          idle.on_demand_usd -= m.on_demand_usd;
          idle.gpu_seconds_paid -= m.gpu_seconds_paid;
          lines.push_back(CostLine{day, static_cast<int32_t>(i), allocation, m});
          n.m.Add(m);
        }
        std::vector<std::pair<int32_t, Metrics>>().swap(bucket.by_allocation);
        // A fully allocated day leaves a rounding residue (~1e-14), not idle.
        if (std::fabs(idle.cost_usd) < 1e-9 && std::fabs(idle.gpu_seconds_paid) < 1e-6) continue;
        idle.idle_usd = idle.cost_usd;
        lines.push_back(CostLine{day, static_cast<int32_t>(i), -1, idle});
        n.m.Add(idle);
      }
    }
  });
  f.lines.insert(f.lines.end(), later_lines.begin(), later_lines.end());
}

// A warning when busy time was measured for less than all the allocated
// GPU-seconds of the total.
void WarnOfUnmeasuredBusyTime(CostFacts* facts) {
  const Metrics& t = facts->total;
  if (t.gpu_seconds_allocated > 0 && t.gpu_seconds_busy_measured <= 0) {
    facts->warnings.push_back(
        "busy time not measured: no GPU utilisation was recorded for this usage (gpu_hours_busy is empty, not "
        "equal to allocated)");
  } else if (t.gpu_seconds_busy_measured + 1e-6 < t.gpu_seconds_allocated) {
    char pct[32];
    std::snprintf(pct, sizeof pct, "%.1f", 100.0 * t.gpu_seconds_busy_measured / t.gpu_seconds_allocated);
    facts->warnings.push_back(std::string("busy time measured for ") + pct +
                              " % of the allocated GPU-hours only; the rest is not measured (counted neither busy "
                              "nor allocated-idle)");
  }
}

}  // namespace

// The stages are in cost_facts_impl.h. Billed time (every node's slices and
// per-day buckets) is laid out before usage is attributed; the usage rows
// are attributed as they stream past, on this thread and, with a second
// reader, a helper that starts at once while this thread reads the nodes.
Result<CostFacts> BuildCostFacts(AuditReader& reader, const ReportQuery& query, AuditReader* second,
                                 const std::function<Status(const CostFacts&)>& with_nodes) {
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
  // Declared before the scan: its helper thread reads it until joined.
  BilledTime billed;
  const WallTime billed_until = std::min(query.to, std::max(f.as_of, query.from));
  internal::UsageScan scan(query, billed_until, second, static_cast<bool>(with_nodes));

  Result<internal::ReportNodes> report_nodes = internal::ReadReportNodes(reader, query);
  if (!report_nodes) return report_nodes.error();
  f.nodes = std::move(report_nodes->nodes);
  billed = internal::LayOutBilledTime(query, &f);
  scan.NodesKnown(billed, f.nodes);
  if (with_nodes) {
    if (Status s = with_nodes(f); !s.ok()) return s.error();
  }
  if (Status s = scan.Finish(reader); !s.ok()) return s.error();

  const NodeRanges ranges(billed, scan.two_threads());
  const std::vector<UsageFrontier> frontiers =
      internal::MergeUsage(scan.PartsInTimeOrder(), query, ranges, &billed, &f);
  internal::EstimateUnrecordedUsage(frontiers, query, &billed, &f);
  if (f.usage_rows_without_node > 0) {
    f.warnings.push_back(std::to_string(f.usage_rows_without_node) +
                         " usage records name nodes the store has no launch record of; they carry no cost");
  }
  WriteLines(ranges, &billed, &f);
  internal::AddRecordedLostWork(report_nodes->lost, query, f.as_of, &f);
  if (Status s = internal::AddReservationFacts(reader, &f); !s.ok()) return s.error();
  for (const NodeFact& n : f.nodes) f.total.Add(n.m);
  WarnOfUnmeasuredBusyTime(&f);
  return f;
}

}  // namespace gpuscaler::report
