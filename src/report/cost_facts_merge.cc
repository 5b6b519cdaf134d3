// Stage 4 of BuildCostFacts (cost_facts_impl.h): the scan's parts joined
// node by node, and the usage a live daemon has not recorded yet estimated.
#include <algorithm>
#include <climits>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cost_facts_impl.h"
#include "gpuscaler/model/money.h"

namespace gpuscaler::report::internal {

NodeRanges::NodeRanges(const BilledTime& billed, bool two_threads)
    : nodes_(billed.work.size()), two_threads_(two_threads) {
  for (size_t seen = 0; half_ < nodes_ && seen * 2 < billed.buckets.size(); ++half_) {
    seen += static_cast<size_t>(billed.work[half_].days);
  }
}

void NodeRanges::ForEach(const std::function<void(int range, size_t first, size_t end)>& body) const {
  if (!two_threads_) {
    body(0, size_t{0}, nodes_);
    return;
  }
  std::thread earlier([&] { body(0, size_t{0}, half_); });
  body(1, half_, nodes_);
  earlier.join();
}

namespace {

// Maps each part's allocations (in time order, first seen first) to
// facts->allocations, adding the new ones: recorded teams win, the query's
// class -> team map fills the gaps. Returns per part its allocation index
// -> the facts'. Adds the parts' row counts.
std::vector<std::vector<int32_t>> MergeAllocations(const std::vector<UsageAccumulator*>& parts,
                                                   const ReportQuery& query, CostFacts* facts) {
  CostFacts& f = *facts;
  std::vector<std::pair<std::string, std::string>> raw_allocations;
  std::vector<std::vector<int32_t>> global(parts.size());
  for (size_t k = 0; k < parts.size(); ++k) {
    const UsageAccumulator& acc = *parts[k];
    f.usage_rows += acc.rows;
    f.usage_rows_without_node += acc.rows_without_node;
    global[k].resize(acc.allocations.size());
    for (size_t a = 0; a < acc.allocations.size(); ++a) {
      auto it = std::find(raw_allocations.begin(), raw_allocations.end(), acc.allocations[a]);
      if (it == raw_allocations.end()) {
        raw_allocations.push_back(acc.allocations[a]);
        Allocation alloc{acc.allocations[a].first, acc.allocations[a].second};
        if (alloc.team.empty()) {
          auto mapped = query.team_map.find(alloc.workload_class);
          alloc.team = mapped != query.team_map.end() ? mapped->second : std::string(kUnallocated);
        }
        f.allocations.push_back(std::move(alloc));
        it = raw_allocations.end() - 1;
      }
      global[k][a] = static_cast<int32_t>(it - raw_allocations.begin());
    }
  }
  return global;
}

}  // namespace

std::vector<UsageFrontier> MergeUsage(const std::vector<UsageAccumulator*>& parts, const ReportQuery& query,
                                      const NodeRanges& ranges, BilledTime* billed, CostFacts* facts) {
  const std::vector<std::vector<int32_t>> global = MergeAllocations(parts, query, facts);
  std::vector<UsageFrontier> frontiers(facts->nodes.size());
  std::vector<Bucket>& buckets = billed->buckets;
  // Each node's buckets and frontier take the parts in time order: the same
  // sums in the same order whichever thread does them.
  ranges.ForEach([&](int /*range*/, size_t n0, size_t n1) {
    for (size_t i = n0; i < n1; ++i) {
      const NodeWork& w = billed->work[i];
      for (size_t k = 0; k < parts.size(); ++k) {
        UsageAccumulator& acc = *parts[k];
        const std::vector<int32_t>& to_global = global[k];
        for (size_t b = w.bucket_begin; b < w.bucket_begin + static_cast<size_t>(w.days); ++b) {
          for (const auto& [local, m] : acc.by_bucket[b]) buckets[b].For(to_global[static_cast<size_t>(local)]).Add(m);
          std::vector<std::pair<int32_t, Metrics>>().swap(acc.by_bucket[b]);
        }
        const UsageFrontier& part = acc.nodes[i].frontier;
        for (const HeldRate& h : part.held) {
          const double seconds = static_cast<double>(part.duration);
          frontiers[i].Note(part.end - part.duration, part.end, to_global[static_cast<size_t>(h.allocation)],
                            h.gpus * seconds, h.busy_gpus < 0 ? std::nullopt : std::optional<double>(h.busy_gpus * seconds));
        }
      }
    }
  });
  return frontiers;
}

// Usage is recorded per node and clock interval (a UTC hour), when the
// interval ends or the node does, and a live daemon also writes each node's
// open interval every few minutes: a node still running at as_of has an
// unrecorded stretch since its last rows. Counting that stretch as idle
// would make a live report's current hour look idle; it is attributed
// instead at the allocation of the node's last recorded rows, prorated to
// as_of. The finished interval's rows, once written, replace the estimate.
//
// Every running node's rows are written in the same tick, so the latest row
// end among the running nodes is when usage was last recorded. A node whose
// rows end earlier held no GPUs since (the meter writes no row for nothing
// held): its stretch stays idle. A stretch longer than an interval and a
// half is not estimated either: the writer has stopped.
//
// A node launched since usage was last recorded has no rows yet: it takes
// the share of its GPUs that each (class, team) held, at their last
// recorded rows, on the running nodes of its pool that have rows (nodes of
// one pool serve the same classes; a node launched for pending work is
// usually filled at once).
namespace {

constexpr int64_t kLongestEstimate = 5400;  // an hour's interval and a half

bool RunningAt(const NodeFact& n, int64_t as_of) { return !n.end || ToUnixSeconds(*n.end) > as_of; }

// Per pool, what each (class, team) held per GPU of the pool at the last
// recorded rows of its running nodes.
std::map<std::string, UsageFrontier> PoolShares(const std::vector<UsageFrontier>& frontiers, const CostFacts& f,
                                                int64_t as_of) {
  std::map<std::string, UsageFrontier> pool_share;
  std::map<std::string, double> pool_gpus;
  for (size_t i = 0; i < f.nodes.size(); ++i) {
    const NodeFact& n = f.nodes[i];
    if (frontiers[i].held.empty() || n.gpu_count <= 0 || !RunningAt(n, as_of)) continue;
    pool_gpus[n.pool] += n.gpu_count;
  }
  for (size_t i = 0; i < f.nodes.size(); ++i) {
    const NodeFact& n = f.nodes[i];
    auto gpus = pool_gpus.find(n.pool);
    if (frontiers[i].held.empty() || gpus == pool_gpus.end() || !RunningAt(n, as_of)) continue;
    UsageFrontier& share = pool_share[n.pool];
    share.end = std::max(share.end, frontiers[i].end);
    share.duration = std::max(share.duration, frontiers[i].duration);
    double held = 0;
    for (const HeldRate& h : frontiers[i].held) held += h.gpus;
    const double scale = PaidGpuShare(n.gpu_count, held);
    for (const HeldRate& h : frontiers[i].held) {
      auto it = std::find_if(share.held.begin(), share.held.end(),
                             [&](const HeldRate& x) { return x.allocation == h.allocation; });
      if (it == share.held.end()) it = share.held.insert(share.held.end(), HeldRate{h.allocation, 0, 0});
      it->gpus += h.gpus * scale / gpus->second;
      // Busy time: measured on every contributing row, else not at all.
      it->busy_gpus = it->busy_gpus < 0 || h.busy_gpus < 0 ? -1 : it->busy_gpus + h.busy_gpus * scale / gpus->second;
    }
  }
  return pool_share;
}

// Charges node `n`'s slices over [tail_start, tail_end) at what `frontier`
// held (never more GPUs than the node has: the money rule, as for recorded
// rows). Adds the allocated GPU-seconds charged to *gpu_seconds; false:
// nothing was charged.
bool ChargeUnrecorded(const NodeFact& n, const NodeWork& w, const UsageFrontier& frontier, int64_t tail_start,
                      int64_t tail_end, BilledTime* billed, double* gpu_seconds) {
  double held_gpus = 0;
  for (const HeldRate& h : frontier.held) held_gpus += h.gpus;
  const double scale = PaidGpuShare(n.gpu_count, held_gpus);
  const double per_gpu_second = 1.0 / (static_cast<double>(n.gpu_count) * 3600.0);
  bool estimated = false;
  for (size_t k = w.slice_begin; k < w.slice_end; ++k) {
    const Slice& sl = billed->slices[k];
    const int64_t overlap = std::min(tail_end, sl.t1) - std::max(tail_start, sl.t0);
    if (overlap <= 0) continue;
    for (const HeldRate& h : frontier.held) {
      const double allocated = h.gpus * scale * static_cast<double>(overlap);
      if (allocated <= 0) continue;
      Metrics& m = billed->buckets[sl.bucket].For(h.allocation);
      m.cost_usd += allocated * sl.usd_per_hour * per_gpu_second;
      m.on_demand_usd += allocated * n.on_demand_usd_per_hour * per_gpu_second;
      m.gpu_seconds_paid += allocated;
      m.gpu_seconds_allocated += allocated;
      if (h.busy_gpus >= 0) {
        m.gpu_seconds_busy += std::min(h.busy_gpus, h.gpus) * scale * static_cast<double>(overlap);
        m.gpu_seconds_busy_measured += allocated;
      }
      *gpu_seconds += allocated;
      estimated = true;
    }
  }
  return estimated;
}

}  // namespace

void EstimateUnrecordedUsage(const std::vector<UsageFrontier>& frontiers, const ReportQuery& query,
                             BilledTime* billed, CostFacts* facts) {
  CostFacts& f = *facts;
  const int64_t from = ToUnixSeconds(query.from);
  const int64_t to = ToUnixSeconds(query.to);
  const int64_t as_of = ToUnixSeconds(f.as_of);
  std::map<std::string, UsageFrontier> pool_share;  // held GPUs per GPU of the pool
  if (query.estimate_unrecorded_usage) pool_share = PoolShares(frontiers, f, as_of);
  int64_t recorded_until = INT64_MIN;
  for (size_t i = 0; i < f.nodes.size(); ++i) {
    if (!frontiers[i].held.empty() && RunningAt(f.nodes[i], as_of)) {
      recorded_until = std::max(recorded_until, frontiers[i].end);
    }
  }
  int64_t estimated_nodes = 0;
  double estimated_gpu_seconds = 0;
  for (size_t i = 0; i < f.nodes.size(); ++i) {
    const NodeFact& n = f.nodes[i];
    const NodeWork& w = billed->work[i];
    UsageFrontier frontier = frontiers[i];
    if (!query.estimate_unrecorded_usage || !RunningAt(n, as_of) || w.days == 0 || n.gpu_count <= 0) continue;
    if (frontier.held.empty()) {
      auto share = pool_share.find(n.pool);
      if (share == pool_share.end() || ToUnixSeconds(n.launch) < recorded_until) continue;
      frontier.end = ToUnixSeconds(n.launch);
      frontier.duration = share->second.duration;
      frontier.held = share->second.held;
      for (HeldRate& h : frontier.held) {
        h.gpus *= n.gpu_count;
        if (h.busy_gpus >= 0) h.busy_gpus *= n.gpu_count;
      }
    }
    const int64_t tail_end = std::min(as_of, to);
    const int64_t tail_start = std::max(frontier.end, from);
    if (!frontiers[i].held.empty() && frontier.end < recorded_until) continue;
    if (tail_end <= tail_start || tail_end - frontier.end > kLongestEstimate) continue;
    const bool estimated = ChargeUnrecorded(n, w, frontier, tail_start, tail_end, billed, &estimated_gpu_seconds);
    estimated_nodes += estimated ? 1 : 0;
  }
  if (estimated_nodes > 0) {
    char hours[32];
    std::snprintf(hours, sizeof hours, "%.3f", estimated_gpu_seconds / 3600.0);
    f.warnings.push_back(std::to_string(estimated_nodes) + " nodes running at " + FormatRfc3339(f.as_of) +
                         " have usage not yet recorded since their last interval: " + hours +
                         " allocated GPU-hours estimated at each node's last recorded allocation (a node "
                         "without one yet: its pool's)");
  }
}

}  // namespace gpuscaler::report::internal
