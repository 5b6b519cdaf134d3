// Stage 2 of BuildCostFacts (cost_facts_impl.h): usage rows charged to the
// billed slices they overlap. The hot path: millions of rows a year.
#include <algorithm>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "cost_facts_impl.h"
#include "gpuscaler/model/money.h"

namespace gpuscaler::report::internal {

int32_t UsageAccumulator::Allocation(std::string_view workload_class, std::string_view team, int32_t hint) {
  if (hint >= 0) {
    const auto& [known_class, known_team] = allocations[static_cast<size_t>(hint)];
    if (known_class == workload_class && known_team == team) return hint;
  }
  for (size_t a = 0; a < allocations.size(); ++a) {
    const auto& [known_class, known_team] = allocations[a];
    if (known_class == workload_class && known_team == team) return static_cast<int32_t>(a);
  }
  allocations.emplace_back(std::string(workload_class), std::string(team));
  return static_cast<int32_t>(allocations.size() - 1);
}

void UsageAccumulator::Bind(const BilledTime& billed, const NodeTable& table, WallTime range_from) {
  billed_ = &billed;
  table_ = &table;
  range_from_ = range_from;
  by_bucket.resize(billed.buckets.size());
  nodes.resize(billed.work.size());
}

// Charges what `allocation` held on `node` over [start, end) (allocated
// GPU-seconds, busy ones if measured) to the node's slices it overlaps, at
// each slice's price per GPU-second.
void UsageAccumulator::Charge(size_t node, int32_t allocation, int64_t start, int64_t end,
                              double gpu_seconds_allocated, bool busy_measured, double gpu_seconds_busy) {
  const NodeWork& w = billed_->work[node];
  const std::vector<Slice>& slices = billed_->slices;
  NodeState& state = nodes[node];
  const double duration = static_cast<double>(end - start);
  const double per_gpu_second = 1.0 / (static_cast<double>(w.gpu_count) * 3600.0);
  const auto first = slices.cbegin() + static_cast<std::ptrdiff_t>(w.slice_begin);
  const auto last = slices.cbegin() + static_cast<std::ptrdiff_t>(w.slice_end);
  // The first slice ending after `start`: the node's previous row's or the
  // next one (slices are in time order), else by binary search.
  auto first_after_start = [&](std::vector<Slice>::const_iterator i) {
    return (i == first || std::prev(i)->t1 <= start) && (i == last || i->t1 > start);
  };
  std::vector<Slice>::const_iterator it = first + state.slice_cursor;
  if (!first_after_start(it)) {
    if (it != last && first_after_start(std::next(it))) {
      ++it;
    } else {
      it = std::upper_bound(first, last, start, [](int64_t t, const Slice& s) { return t < s.t1; });
    }
  }
  state.slice_cursor = static_cast<uint32_t>(it - first);
  for (; it != last && it->t0 < end; ++it) {
    const int64_t overlap = std::min(end, it->t1) - std::max(start, it->t0);
    if (overlap <= 0) continue;
    const double share = static_cast<double>(overlap) / duration;
    const double allocated = gpu_seconds_allocated * share;
    const double cost = allocated * it->usd_per_hour * per_gpu_second;
    std::vector<std::pair<int32_t, Metrics>>& cell = by_bucket[it->bucket];
    Metrics* m = nullptr;
    for (auto& [a, metrics] : cell) {
      if (a == allocation) m = &metrics;
    }
    if (m == nullptr) m = &cell.emplace_back(allocation, Metrics{}).second;
    m->cost_usd += cost;
    m->on_demand_usd += allocated * w.on_demand_usd_per_hour * per_gpu_second;
    m->gpu_seconds_paid += allocated;
    m->gpu_seconds_allocated += allocated;
    if (busy_measured) {
      m->gpu_seconds_busy += gpu_seconds_busy * share;
      m->gpu_seconds_busy_measured += allocated;
    }
    if (it->in_loss_window) {
      m->gpu_seconds_lost += allocated;
      m->lost_usd += cost;
    }
  }
}

// A node's rows of one interval (the meter writes them together) are what
// its GPUs held then. Holding more GPU-seconds than the node had, they pay
// for it by the money rule (PaidGpuShare: each its proportion, nothing
// idle) rather than each for all it held: the rows, charged whole as they
// came, get the difference charged back once the interval is complete (a
// row of another interval of the node, or the end of the scan).
void UsageAccumulator::CloseInterval(size_t node) {
  NodeState& state = nodes[node];
  const int64_t start = state.interval_start, end = state.interval_end;
  double held = 0;
  for (const auto& row : state.interval_rows) held += row.allocated;
  const double node_gpu_seconds = static_cast<double>(billed_->work[node].gpu_count) * static_cast<double>(end - start);
  const double paid = PaidGpuShare(node_gpu_seconds, held);
  if (paid < 1) {
    for (const auto& row : state.interval_rows) {
      Charge(node, row.allocation, start, end, row.allocated * paid - row.allocated, row.busy >= 0,
             row.busy * paid - row.busy);
    }
  }
  state.interval_rows.clear();
}

void UsageAccumulator::Accumulate(const UsageView& u) {
  const bool before_range = u.end <= range_from_;
  if (before_range) {
    const int32_t node = table_->Find(u.instance_id);
    if (node >= 0 && u.end > u.start && u.gpu_seconds_allocated > 0) {
      nodes[static_cast<size_t>(node)].frontier.Note(ToUnixSeconds(u.start), ToUnixSeconds(u.end),
                                                     Allocation(u.workload_class, u.team), u.gpu_seconds_allocated,
                                                     u.gpu_seconds_busy);
    }
    return;
  }
  ++rows;
  if (last_node_ < 0 || u.instance_id != last_instance_) {
    const int32_t node = table_->Find(u.instance_id);
    if (node < 0) {
      ++rows_without_node;
      last_node_ = -1;
      return;
    }
    last_node_ = node;
    last_instance_.assign(u.instance_id);
  }
  const NodeWork& w = billed_->work[static_cast<size_t>(last_node_)];
  const int64_t start = ToUnixSeconds(u.start), end = ToUnixSeconds(u.end);
  if (w.days == 0 || end <= start || u.gpu_seconds_allocated <= 0) return;
  if (w.gpu_count <= 0) return;
  const size_t node = static_cast<size_t>(last_node_);
  NodeState& state = nodes[node];
  const int32_t allocation = Allocation(u.workload_class, u.team, state.last_allocation);
  state.last_allocation = allocation;
  state.frontier.Note(start, end, allocation, u.gpu_seconds_allocated, u.gpu_seconds_busy);
  if (!state.interval_rows.empty() && (state.interval_start != start || state.interval_end != end)) {
    CloseInterval(node);
  }
  state.interval_start = start;
  state.interval_end = end;
  state.interval_rows.push_back({allocation, u.gpu_seconds_allocated, u.gpu_seconds_busy.value_or(-1)});
  Charge(node, allocation, start, end, u.gpu_seconds_allocated, u.gpu_seconds_busy.has_value(),
         u.gpu_seconds_busy.value_or(0));
}

void UsageAccumulator::CloseIntervals() {
  for (size_t node = 0; node < nodes.size(); ++node) {
    if (!nodes[node].interval_rows.empty()) CloseInterval(node);
  }
}

}  // namespace gpuscaler::report::internal
