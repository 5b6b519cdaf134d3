// Stage 1 of BuildCostFacts (cost_facts_impl.h): what each node was billed
// for in the range, cut into price slices, FOCUS charges and per-day buckets.
#include <algorithm>
#include <climits>
#include <optional>
#include <vector>

#include "cost_facts_impl.h"
#include "utc_days.h"

namespace gpuscaler::report::internal {
namespace {

// A node's billed life up to the data's end (`as_of`), and its part in the
// range, [w0, w1) (empty when w1 <= w0).
struct BilledWindow {
  int64_t launch, bill_end, w0, w1;
};

// nullopt: launched after the data the report stands on.
std::optional<BilledWindow> BilledWindowOf(const NodeFact& n, int64_t from, int64_t to, int64_t as_of) {
  const int64_t launch = ToUnixSeconds(n.launch);
  if (launch > as_of) return std::nullopt;
  const int64_t bill_end = std::max(launch, n.end ? std::min(ToUnixSeconds(*n.end), as_of) : as_of);
  return BilledWindow{launch, bill_end, std::max(launch, from), std::min(bill_end, to)};
}

// Room for every node's slices, buckets and charges at once: grown by
// doubling, these arrays (hundreds of MB for a year of a large fleet) were
// copied and their fresh pages faulted in about twice over. A node's slices
// are at most one per UTC day it spans, one per price change and one for
// the loss window; its buckets one per day.
void ReserveRoom(const CostFacts& f, int64_t from, int64_t to, int64_t as_of, BilledTime* billed,
                 std::vector<Charge>* charges) {
  size_t most_slices = 0, most_days = 0;
  for (const NodeFact& n : f.nodes) {
    const std::optional<BilledWindow> b = BilledWindowOf(n, from, to, as_of);
    if (!b) continue;
    const int64_t w1 = std::max(b->w0, b->w1);
    const size_t days = static_cast<size_t>(FloorDiv(w1, kSecondsPerDay) - FloorDiv(b->w0, kSecondsPerDay)) + 1;
    most_days += days;
    most_slices += days + n.prices.size() + 1;
  }
  billed->slices.reserve(most_slices);
  billed->buckets.reserve(most_days);
  charges->reserve(most_slices + f.nodes.size());
}

// Appends the slices of `n`'s window: one per price in force and UTC day,
// cut again where its loss window starts (INT64_MAX: none).
void AddPriceSlices(const NodeFact& n, const BilledWindow& window, int64_t loss_start, std::vector<Slice>* slices) {
  const int64_t w0 = window.w0, w1 = window.w1;
  auto add_segment = [&](int64_t s, int64_t e, double price) {
    s = std::max(s, w0);
    e = std::min(e, w1);
    while (s < e) {
      int64_t cut = std::min(e, (FloorDiv(s, kSecondsPerDay) + 1) * kSecondsPerDay);
      if (s < loss_start && loss_start < cut) cut = loss_start;
      slices->push_back(Slice{s, cut, price, s >= loss_start});
      s = cut;
    }
  };
  const std::vector<PriceInterval>& p = n.prices;
  if (p.empty()) {
    add_segment(window.launch, window.bill_end, n.launch_usd_per_hour);
    return;
  }
  for (size_t k = 0; k < p.size(); ++k) {
    const int64_t s = std::max(ToUnixSeconds(p[k].from), window.launch);
    const int64_t e = k + 1 < p.size() ? ToUnixSeconds(p[k + 1].from) : window.bill_end;
    add_segment(s, e, p[k].usd_per_hour);
  }
}

// Appends node `node`'s FOCUS charges: its slices merged back where only
// the loss window split them, and the minimum top-up (`top_up` seconds at
// `last_price`) folded into the last one when its price is the same.
void AddCharges(int32_t node, const NodeWork& w, const std::vector<Slice>& slices, const BilledWindow& window,
                int64_t top_up, double last_price, int64_t from, int64_t to, std::vector<Charge>* charges) {
  const size_t first_charge = charges->size();
  for (size_t k = w.slice_begin; k < w.slice_end; ++k) {
    const Slice& s = slices[k];
    if (charges->size() > first_charge) {
      Charge& last = charges->back();
      if (ToUnixSeconds(last.end) == s.t0 && last.usd_per_hour == s.usd_per_hour &&
          FloorDiv(s.t0, kSecondsPerDay) == FloorDiv(ToUnixSeconds(last.start), kSecondsPerDay)) {
        last.end = FromUnixSeconds(s.t1);
        last.billed_seconds += s.t1 - s.t0;
        continue;
      }
    }
    charges->push_back(Charge{node, FromUnixSeconds(s.t0), FromUnixSeconds(s.t1), s.usd_per_hour, s.t1 - s.t0});
  }
  if (top_up > 0) {
    if (charges->size() > first_charge && charges->back().usd_per_hour == last_price) {
      charges->back().billed_seconds += top_up;
    } else {
      const WallTime at = FromUnixSeconds(std::clamp(window.bill_end, from, to));
      charges->push_back(Charge{node, at, at + Seconds(top_up), last_price, top_up});
    }
  }
}

// Gives `n` its buckets, one per UTC day from its first billed day (its
// launch day when only the top-up is billed), points its slices at them
// and adds to each what the node cost that day; adds its billed seconds.
void AddBuckets(NodeFact& n, NodeWork& w, const BilledWindow& window, int64_t top_up, double last_price,
                BilledTime* billed) {
  const int64_t launch = window.launch, w0 = window.w0, w1 = window.w1;
  w.first_day = FloorDiv(w1 > w0 ? w0 : launch, kSecondsPerDay);
  const int64_t last_day = w1 > w0 ? FloorDiv(w1 - 1, kSecondsPerDay) : w.first_day;
  w.days = last_day - w.first_day + 1;
  w.bucket_begin = billed->buckets.size();
  billed->buckets.resize(billed->buckets.size() + static_cast<size_t>(w.days));
  const double gpus = n.gpu_count;
  const double od_per_hour = n.on_demand_usd_per_hour;
  for (size_t k = w.slice_begin; k < w.slice_end; ++k) {
    Slice& s = billed->slices[k];
    const double seconds = static_cast<double>(s.t1 - s.t0);
    s.bucket = w.bucket_begin + static_cast<size_t>(FloorDiv(s.t0, kSecondsPerDay) - w.first_day);
    Metrics& m = billed->buckets[s.bucket].total;
    m.cost_usd += s.usd_per_hour * seconds / 3600.0;
    m.on_demand_usd += od_per_hour * seconds / 3600.0;
    m.gpu_seconds_paid += gpus * seconds;
    n.billed_seconds += s.t1 - s.t0;
  }
  if (top_up > 0) {
    const size_t launch_bucket = w.bucket_begin + static_cast<size_t>(FloorDiv(launch, kSecondsPerDay) - w.first_day);
    Metrics& m = billed->buckets[launch_bucket].total;
    m.cost_usd += last_price * static_cast<double>(top_up) / 3600.0;
    m.on_demand_usd += od_per_hour * static_cast<double>(top_up) / 3600.0;
    m.gpu_seconds_paid += gpus * static_cast<double>(top_up);
    n.billed_seconds += top_up;
  }
}

}  // namespace

BilledTime LayOutBilledTime(const ReportQuery& query, CostFacts* facts) {
  CostFacts& f = *facts;
  const int64_t from = ToUnixSeconds(f.from);
  const int64_t to = ToUnixSeconds(f.to);
  const int64_t as_of = ToUnixSeconds(f.as_of);
  const int64_t min_billed = query.min_billed.count();
  const int64_t loss_window = query.loss_window.count();
  BilledTime billed;
  billed.work.resize(f.nodes.size());
  ReserveRoom(f, from, to, as_of, &billed, &f.charges);
  for (size_t i = 0; i < f.nodes.size(); ++i) {
    NodeFact& n = f.nodes[i];
    NodeWork& w = billed.work[i];
    w.gpu_count = n.gpu_count;
    w.on_demand_usd_per_hour = n.on_demand_usd_per_hour;
    w.slice_begin = w.slice_end = billed.slices.size();
    const std::optional<BilledWindow> window = BilledWindowOf(n, from, to, as_of);
    if (!window) continue;
    const int64_t launch = window->launch, bill_end = window->bill_end;
    // The minimum charge tops up a short life; it is due at the launch.
    const bool topped_up = launch >= from && launch < to && n.capacity_type != CapacityType::kReserved;
    const int64_t top_up = topped_up ? std::max<int64_t>(0, min_billed - (bill_end - launch)) : 0;
    if (window->w1 <= window->w0 && top_up == 0) continue;
    // A recorded loss replaces the window (AddRecordedLostWork).
    const bool interrupted = n.cause == "interrupted" && n.end.has_value() && !n.lost_work_recorded;
    const int64_t loss_start = interrupted ? ToUnixSeconds(*n.end) - loss_window : INT64_MAX;
    AddPriceSlices(n, *window, loss_start, &billed.slices);
    w.slice_end = billed.slices.size();
    const double last_price = n.prices.empty() ? n.launch_usd_per_hour : n.prices.back().usd_per_hour;
    AddCharges(static_cast<int32_t>(i), w, billed.slices, *window, top_up, last_price, from, to, &f.charges);
    AddBuckets(n, w, *window, top_up, last_price, &billed);
  }
  return billed;
}

}  // namespace gpuscaler::report::internal
