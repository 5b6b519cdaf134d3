#include <algorithm>
#include <climits>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <functional>
#include <iterator>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "gpuscaler/model/money.h"
#include "gpuscaler/report/cost_model.h"
#include "gpuscaler/store/audit_reader.h"
#include "node_facts.h"
#include "usage_scan.h"
#include "utc_days.h"

namespace gpuscaler::report {

using internal::Bucket;
using internal::HeldRate;
using internal::Slice;
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
  const int64_t from = ToUnixSeconds(query.from);
  const int64_t to = ToUnixSeconds(query.to);
  const int64_t as_of = ToUnixSeconds(f.as_of);

  // Phase 1 (below) computes every node's billed slices (by price and UTC
  // day) and per-day buckets before usage is attributed; phase 2 attributes
  // usage rows as they stream past (6M+ rows a year for 500 nodes: they are
  // never all held in memory). With a second reader, a helper thread takes
  // the later half of the rows and starts at once, while this thread reads
  // the nodes: its first kEarlyRows rows wait in a compact buffer until the
  // nodes are known. A fixed count, not a time, decides which rows wait, and
  // the partial sums are merged in a fixed order, so the result is the same
  // on every run.
  // What the scan needs of a node, apart from its (much larger) NodeFact.
  struct NodeWork {
    size_t slice_begin = 0, slice_end = 0;  // into `slices`
    size_t bucket_begin = 0;                // into `buckets`
    int64_t first_day = 0;
    int64_t days = 0;  // 0: nothing billed in the range
    int32_t gpu_count = 0;
    double on_demand_usd_per_hour = 0;
  };
  std::vector<NodeWork> work;
  std::vector<Slice> slices;
  std::vector<Bucket> buckets;
  std::optional<internal::NodeTable> node_table;
  // Aligned apart: the two threads' counters must not share a cache line.
  struct alignas(128) Accumulator {
    // (class, team) as recorded, interned by a scan of the few known pairs
    // (cheaper than hashing per row).
    std::vector<std::pair<std::string, std::string>> allocations;
    std::vector<std::vector<std::pair<int32_t, Metrics>>> by_bucket;
    int64_t rows = 0;
    int64_t rows_without_node = 0;
    std::string last_instance;
    int32_t last_node = -1;
    // Per node, where its previous row's search ended: its allocation, and
    // the first of its slices that row overlapped. A node's rows come in
    // time order and mostly keep their allocation, so each is tried first.
    // Kept together: each row touches one node's state, of thousands.
    struct NodeState {
      UsageFrontier frontier;
      int32_t last_allocation = -1;
      uint32_t slice_cursor = 0;
      // The rows seen so far of the node's latest interval (busy -1: not
      // measured), charged already; see close_interval.
      struct HeldRow {
        int32_t allocation = 0;
        double allocated = 0;
        double busy = -1;
      };
      int64_t interval_start = 0, interval_end = 0;
      std::vector<HeldRow> interval_rows;
    };
    std::vector<NodeState> nodes;

    // The index of (class, team) in `allocations`, added when new; `hint`
    // (-1: none) is tried first.
    int32_t Allocation(std::string_view workload_class, std::string_view team, int32_t hint = -1) {
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
  };
  // Usage is scanned from a little before the range: rows ending there
  // carry no cost in it, but tell a running node's last recorded allocation
  // (the unrecorded stretch, below).
  constexpr int64_t kFrontierLookback = 3 * 3600;
  const WallTime scan_from = query.from - Seconds(kFrontierLookback);
  // Charges what `allocation` held on `node` over [start, end) (allocated
  // GPU-seconds, busy ones if measured) to the node's slices it overlaps, at
  // each slice's price per GPU-second.
  auto charge = [&](Accumulator& acc, size_t node, int32_t allocation, int64_t start, int64_t end,
                    double gpu_seconds_allocated, bool busy_measured, double gpu_seconds_busy) {
    const NodeWork& w = work[node];
    Accumulator::NodeState& state = acc.nodes[node];
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
      std::vector<std::pair<int32_t, Metrics>>& cell = acc.by_bucket[it->bucket];
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
  };
  // A node's rows of one interval (the meter writes them together) are what
  // its GPUs held then. Holding more GPU-seconds than the node had, they pay
  // for it by the money rule (PaidGpuShare: each its proportion, nothing
  // idle) rather than each for all it held: the rows, charged whole as they
  // came, get the difference charged back once the interval is complete (a
  // row of another interval of the node, or the end of the scan).
  auto close_interval = [&](Accumulator& acc, size_t node) {
    Accumulator::NodeState& state = acc.nodes[node];
    const int64_t start = state.interval_start, end = state.interval_end;
    double held = 0;
    for (const auto& row : state.interval_rows) held += row.allocated;
    const double paid = PaidGpuShare(static_cast<double>(work[node].gpu_count) * static_cast<double>(end - start), held);
    if (paid < 1) {
      for (const auto& row : state.interval_rows) {
        charge(acc, node, row.allocation, start, end, row.allocated * paid - row.allocated, row.busy >= 0,
               row.busy * paid - row.busy);
      }
    }
    state.interval_rows.clear();
  };
  auto accumulate = [&](Accumulator& acc, const UsageView& u) {
    const bool before_range = u.end <= query.from;
    if (before_range) {
      const int32_t node = node_table->Find(u.instance_id);
      if (node >= 0 && u.end > u.start && u.gpu_seconds_allocated > 0) {
        acc.nodes[static_cast<size_t>(node)].frontier.Note(ToUnixSeconds(u.start), ToUnixSeconds(u.end),
                                                      acc.Allocation(u.workload_class, u.team),
                                                      u.gpu_seconds_allocated, u.gpu_seconds_busy);
      }
      return;
    }
    ++acc.rows;
    if (acc.last_node < 0 || u.instance_id != acc.last_instance) {
      const int32_t node = node_table->Find(u.instance_id);
      if (node < 0) {
        ++acc.rows_without_node;
        acc.last_node = -1;
        return;
      }
      acc.last_node = node;
      acc.last_instance.assign(u.instance_id);
    }
    const NodeWork& w = work[static_cast<size_t>(acc.last_node)];
    const int64_t start = ToUnixSeconds(u.start), end = ToUnixSeconds(u.end);
    if (w.days == 0 || end <= start || u.gpu_seconds_allocated <= 0) return;
    if (w.gpu_count <= 0) return;
    const size_t node = static_cast<size_t>(acc.last_node);
    Accumulator::NodeState& state = acc.nodes[node];
    const int32_t allocation = acc.Allocation(u.workload_class, u.team, state.last_allocation);
    state.last_allocation = allocation;
    state.frontier.Note(start, end, allocation, u.gpu_seconds_allocated, u.gpu_seconds_busy);
    if (!state.interval_rows.empty() && (state.interval_start != start || state.interval_end != end)) {
      close_interval(acc, node);
    }
    state.interval_start = start;
    state.interval_end = end;
    state.interval_rows.push_back({allocation, u.gpu_seconds_allocated, u.gpu_seconds_busy.value_or(-1)});
    charge(acc, node, allocation, start, end, u.gpu_seconds_allocated, u.gpu_seconds_busy.has_value(),
           u.gpu_seconds_busy.value_or(0));
  };
  auto close_intervals = [&](Accumulator& acc) {
    for (size_t node = 0; node < acc.nodes.size(); ++node) {
      if (!acc.nodes[node].interval_rows.empty()) close_interval(acc, node);
    }
  };
  // 0: this thread's half; 1: the helper's streamed rows; 2: its buffered ones.
  Accumulator parts[3];
  constexpr size_t kEarlyRows = size_t{1} << 20;
  struct EarlyRow {
    uint32_t id_offset = 0;
    uint32_t id_size = 0;
    int32_t allocation = 0;  // into parts[2].allocations
    int64_t start = 0;
    int64_t end = 0;
    double allocated = 0;
    double busy = -1;  // -1: not measured
  };
  std::string early_ids;
  std::vector<EarlyRow> early;
  std::mutex mu;
  std::condition_variable nodes_known;
  bool ready = false;
  bool abandon = false;
  Status later;
  const WallTime billed_until = std::min(query.to, std::max(f.as_of, query.from));
  const bool split = second != nullptr && billed_until > query.from;
  // Usage ends spread about evenly over the billed time, and this thread
  // reads the nodes (and runs `with_nodes`) before its share of the rows
  // while the helper starts at once (and replays its buffered rows): this
  // thread takes the earlier 47.5 % (45 % with `with_nodes`). Constants, so
  // the split (and the order of the sums) never depends on timing.
  const auto billed = billed_until - query.from;
  const WallTime mid = query.from + (with_nodes ? billed * 9 / 20 : billed * 19 / 40);
  // The buffered rows, once the nodes are known: interned into parts[2] in
  // the same order, so their allocation indices stand. On the helper thread,
  // so that this thread's share of the work ends when its scan does.
  auto accumulate_early = [&] {
    for (const EarlyRow& r : early) {
      UsageView u;
      u.instance_id = std::string_view(early_ids).substr(r.id_offset, r.id_size);
      u.workload_class = parts[2].allocations[static_cast<size_t>(r.allocation)].first;
      u.team = parts[2].allocations[static_cast<size_t>(r.allocation)].second;
      u.start = FromUnixSeconds(r.start);
      u.end = FromUnixSeconds(r.end);
      u.gpu_seconds_allocated = r.allocated;
      u.gpu_seconds_busy = r.busy < 0 ? std::nullopt : std::optional<double>(r.busy);
      accumulate(parts[2], u);
    }
    early.clear();
    early.shrink_to_fit();
    early_ids.clear();
    early_ids.shrink_to_fit();
  };
  std::thread helper;
  if (split) {
    // Reserved, not touched: only the rows that wait fault pages in, and
    // none is copied by a regrowth.
    early.reserve(kEarlyRows);
    early_ids.reserve(kEarlyRows * 20);
    helper = std::thread([&] {
      AuditReader::ConsistentRead snapshot2(*second);
      bool go = false;
      // false: abandoned (the caller is returning an error).
      auto wait_for_nodes = [&] {
        std::unique_lock<std::mutex> lock(mu);
        nodes_known.wait(lock, [&] { return ready || abandon; });
        return !abandon;
      };
      later = second->ForEachUsage(
          scan_from, query.to,
          [&](const UsageView& u) {
            if (!go) {
              if (early.size() < kEarlyRows && early_ids.size() + u.instance_id.size() < UINT32_MAX) {
                const int32_t allocation = parts[2].Allocation(u.workload_class, u.team);
                early.push_back(EarlyRow{static_cast<uint32_t>(early_ids.size()),
                                         static_cast<uint32_t>(u.instance_id.size()), allocation,
                                         ToUnixSeconds(u.start), ToUnixSeconds(u.end), u.gpu_seconds_allocated,
                                         u.gpu_seconds_busy.value_or(-1)});
                early_ids.append(u.instance_id);
                return;
              }
              if (!wait_for_nodes()) return;
              go = true;
              accumulate_early();
              // A node interval's rows may straddle the buffered ones and the
              // rest: its open interval goes on in the streamed part.
              for (size_t node = 0; node < parts[2].nodes.size(); ++node) {
                auto& from = parts[2].nodes[node];
                auto& to = parts[1].nodes[node];
                to.interval_start = from.interval_start;
                to.interval_end = from.interval_end;
                for (auto row : from.interval_rows) {
                  const auto& [workload_class, team] = parts[2].allocations[static_cast<size_t>(row.allocation)];
                  row.allocation = parts[1].Allocation(workload_class, team);
                  to.interval_rows.push_back(row);
                }
                from.interval_rows.clear();
              }
            }
            accumulate(parts[1], u);
          },
          mid, std::nullopt);
      if (!go && wait_for_nodes()) {
        accumulate_early();
        go = true;
      }
      if (go) {
        close_intervals(parts[2]);
        close_intervals(parts[1]);
      }
    });
  }
  // Every way out of here ends the helper first (it reads this frame).
  struct JoinHelper {
    std::thread& t;
    std::mutex& mu;
    std::condition_variable& cv;
    bool& abandon;
    ~JoinHelper() {
      if (!t.joinable()) return;
      {
        std::lock_guard<std::mutex> lock(mu);
        abandon = true;
      }
      cv.notify_all();
      t.join();
    }
  } join_helper{helper, mu, nodes_known, abandon};

  Result<internal::ReportNodes> report_nodes = internal::ReadReportNodes(reader, query);
  if (!report_nodes) return report_nodes.error();
  f.nodes = std::move(report_nodes->nodes);

  // Phase 1.
  const int64_t min_billed = query.min_billed.count();
  const int64_t loss_window = query.loss_window.count();
  work.resize(f.nodes.size());
  // A node's billed life up to the data's end (`as_of`), and its part in
  // the range, [w0, w1) (empty when w1 <= w0); nullopt: launched after the
  // data the report stands on.
  struct BilledWindow {
    int64_t launch, bill_end, w0, w1;
  };
  auto billed_window = [&](const NodeFact& n) -> std::optional<BilledWindow> {
    const int64_t launch = ToUnixSeconds(n.launch);
    if (launch > as_of) return std::nullopt;
    const int64_t bill_end = std::max(launch, n.end ? std::min(ToUnixSeconds(*n.end), as_of) : as_of);
    return BilledWindow{launch, bill_end, std::max(launch, from), std::min(bill_end, to)};
  };
  {
    // Room for every node's slices, buckets and charges at once: grown by
    // doubling, these arrays (hundreds of MB for a year of a large fleet)
    // were copied and their fresh pages faulted in about twice over. A
    // node's slices are at most one per UTC day it spans, one per price
    // change and one for the loss window; its buckets one per day.
    size_t most_slices = 0, most_days = 0;
    for (const NodeFact& n : f.nodes) {
      const std::optional<BilledWindow> b = billed_window(n);
      if (!b) continue;
      const int64_t w1 = std::max(b->w0, b->w1);
      const size_t days = static_cast<size_t>(FloorDiv(w1, kSecondsPerDay) - FloorDiv(b->w0, kSecondsPerDay)) + 1;
      most_days += days;
      most_slices += days + n.prices.size() + 1;
    }
    slices.reserve(most_slices);
    buckets.reserve(most_days);
    f.charges.reserve(most_slices + f.nodes.size());
  }
  for (size_t i = 0; i < f.nodes.size(); ++i) {
    NodeFact& n = f.nodes[i];
    NodeWork& w = work[i];
    w.gpu_count = n.gpu_count;
    w.on_demand_usd_per_hour = n.on_demand_usd_per_hour;
    w.slice_begin = w.slice_end = slices.size();
    const std::optional<BilledWindow> window = billed_window(n);
    if (!window) continue;
    const int64_t launch = window->launch, bill_end = window->bill_end, w0 = window->w0, w1 = window->w1;
    // The minimum charge tops up a short life; it is due at the launch.
    const int64_t top_up = launch >= from && launch < to ? std::max<int64_t>(0, min_billed - (bill_end - launch)) : 0;
    if (w1 <= w0 && top_up == 0) continue;

    // A recorded loss replaces the window (AddRecordedLostWork, below).
    const bool interrupted = n.cause == "interrupted" && n.end.has_value() && !n.lost_work_recorded;
    const int64_t loss_start = interrupted ? ToUnixSeconds(*n.end) - loss_window : INT64_MAX;
    const std::vector<PriceInterval>& p = n.prices;
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
    w.slice_end = slices.size();
    const double last_price = p.empty() ? n.launch_usd_per_hour : p.back().usd_per_hour;

    // FOCUS charges: slices merged back where only the loss window split them.
    const size_t first_charge = f.charges.size();
    for (size_t k = w.slice_begin; k < w.slice_end; ++k) {
      const Slice& s = slices[k];
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

    w.first_day = FloorDiv(w1 > w0 ? w0 : launch, kSecondsPerDay);
    const int64_t last_day = w1 > w0 ? FloorDiv(w1 - 1, kSecondsPerDay) : w.first_day;
    w.days = last_day - w.first_day + 1;
    w.bucket_begin = buckets.size();
    buckets.resize(buckets.size() + static_cast<size_t>(w.days));
    const double gpus = n.gpu_count;
    const double od_per_hour = n.on_demand_usd_per_hour;
    for (size_t k = w.slice_begin; k < w.slice_end; ++k) {
      Slice& s = slices[k];
      const double seconds = static_cast<double>(s.t1 - s.t0);
      s.bucket = w.bucket_begin + static_cast<size_t>(FloorDiv(s.t0, kSecondsPerDay) - w.first_day);
      Metrics& m = buckets[s.bucket].total;
      m.cost_usd += s.usd_per_hour * seconds / 3600.0;
      m.on_demand_usd += od_per_hour * seconds / 3600.0;
      m.gpu_seconds_paid += gpus * seconds;
      n.billed_seconds += s.t1 - s.t0;
    }
    if (top_up > 0) {
      Metrics& m = buckets[w.bucket_begin + static_cast<size_t>(FloorDiv(launch, kSecondsPerDay) - w.first_day)].total;
      m.cost_usd += last_price * static_cast<double>(top_up) / 3600.0;
      m.on_demand_usd += od_per_hour * static_cast<double>(top_up) / 3600.0;
      m.gpu_seconds_paid += gpus * static_cast<double>(top_up);
      n.billed_seconds += top_up;
    }
  }

  // Work over all nodes after the scan (merging, lines) is split at the node
  // that halves the buckets: the earlier nodes on a second thread when the
  // caller allows two (`second`), the rest here. Each node's work is its own,
  // so the result is the same either way.
  size_t half_nodes = 0;
  for (size_t seen = 0; half_nodes < work.size() && seen * 2 < buckets.size(); ++half_nodes) {
    seen += static_cast<size_t>(work[half_nodes].days);
  }
  // `body(range, first node, end node)`, range 0 the earlier nodes.
  auto for_node_ranges = [&](const auto& body) {
    if (second == nullptr) {
      body(0, size_t{0}, work.size());
      return;
    }
    std::thread earlier([&] { body(0, size_t{0}, half_nodes); });
    body(1, half_nodes, work.size());
    earlier.join();
  };

  // Phase 2.
  node_table.emplace(f.nodes);
  for (Accumulator& acc : parts) {
    acc.by_bucket.resize(buckets.size());
    acc.nodes.resize(f.nodes.size());
  }
  if (split) {
    {
      std::lock_guard<std::mutex> lock(mu);
      ready = true;
    }
    nodes_known.notify_all();
  }
  if (with_nodes) {
    if (Status s = with_nodes(f); !s.ok()) return s.error();
  }
  Status read = split ? reader.ForEachUsage(
                            scan_from, query.to, [&](const UsageView& u) { accumulate(parts[0], u); },
                            std::nullopt, mid)
                      : reader.ForEachUsage(scan_from, query.to,
                                            [&](const UsageView& u) { accumulate(parts[0], u); });
  close_intervals(parts[0]);
  if (split) helper.join();
  if (!read.ok()) return read.error();
  if (!later.ok()) return later.error();
  // Merge: allocations in first-seen order (earlier half first), then the
  // GPU-seconds into the buckets. Recorded teams win; the query's class ->
  // team map fills the gaps.
  std::vector<std::pair<std::string, std::string>> raw_allocations;
  std::vector<UsageFrontier> frontiers(f.nodes.size());
  constexpr int kPartsInTimeOrder[] = {0, 2, 1};  // this half, the buffered rows, the streamed rest
  std::vector<int32_t> global[3];  // per part: its allocation index -> f.allocations
  for (int k : kPartsInTimeOrder) {
    Accumulator& acc = parts[k];
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
  // Each node's buckets and frontier take the parts in time order: the same
  // sums in the same order whichever thread does them.
  auto merge_nodes = [&](int /*range*/, size_t n0, size_t n1) {
    for (size_t i = n0; i < n1; ++i) {
      const NodeWork& w = work[i];
      for (int k : kPartsInTimeOrder) {
        Accumulator& acc = parts[k];
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
  };
  for_node_ranges(merge_nodes);
  // Usage is recorded per node and clock interval (a UTC hour), when the
  // interval ends or the node does, and a live daemon also writes each
  // node's open interval every few minutes: a node still running at as_of
  // has an unrecorded stretch since its last rows. Counting that stretch as
  // idle would make a live report's current hour look idle; it is
  // attributed instead at the allocation of the node's last recorded rows,
  // prorated to as_of. The finished interval's rows, once written, replace
  // the estimate.
  //
  // Every running node's rows are written in the same tick, so the latest
  // row end among the running nodes is when usage was last recorded. A node
  // whose rows end earlier held no GPUs since (the meter writes no row for
  // nothing held): its stretch stays idle. A stretch longer than an interval
  // and a half is not estimated either: the writer has stopped.
  //
  // A node launched since usage was last recorded has no rows yet: it takes
  // the share of its GPUs that each (class, team) held, at their last
  // recorded rows, on the running nodes of its pool that have rows (nodes
  // of one pool serve the same classes; a node launched for pending work is
  // usually filled at once).
  std::map<std::string, UsageFrontier> pool_share;  // held GPUs per GPU of the pool
  if (query.estimate_unrecorded_usage) {
    std::map<std::string, double> pool_gpus;
    for (size_t i = 0; i < f.nodes.size(); ++i) {
      const NodeFact& n = f.nodes[i];
      if (frontiers[i].held.empty() || n.gpu_count <= 0 || (n.end && ToUnixSeconds(*n.end) <= as_of)) continue;
      pool_gpus[n.pool] += n.gpu_count;
    }
    for (size_t i = 0; i < f.nodes.size(); ++i) {
      const NodeFact& n = f.nodes[i];
      auto gpus = pool_gpus.find(n.pool);
      if (frontiers[i].held.empty() || gpus == pool_gpus.end() || (n.end && ToUnixSeconds(*n.end) <= as_of)) {
        continue;
      }
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
  }
  constexpr int64_t kLongestEstimate = 5400;  // an hour's interval and a half
  int64_t recorded_until = INT64_MIN;
  for (size_t i = 0; i < f.nodes.size(); ++i) {
    const NodeFact& n = f.nodes[i];
    if (!frontiers[i].held.empty() && (!n.end || ToUnixSeconds(*n.end) > as_of)) {
      recorded_until = std::max(recorded_until, frontiers[i].end);
    }
  }
  int64_t estimated_nodes = 0;
  double estimated_gpu_seconds = 0;
  for (size_t i = 0; i < f.nodes.size(); ++i) {
    const NodeFact& n = f.nodes[i];
    const NodeWork& w = work[i];
    UsageFrontier frontier = frontiers[i];
    const bool running_at_as_of = !n.end || ToUnixSeconds(*n.end) > as_of;
    if (!query.estimate_unrecorded_usage || !running_at_as_of || w.days == 0 || n.gpu_count <= 0) continue;
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
    double held_gpus = 0;
    for (const HeldRate& h : frontier.held) held_gpus += h.gpus;
    // Never more GPUs than the node has: the money rule, as for recorded rows.
    const double scale = PaidGpuShare(n.gpu_count, held_gpus);
    const double per_gpu_second = 1.0 / (static_cast<double>(n.gpu_count) * 3600.0);
    bool estimated = false;
    for (size_t k = w.slice_begin; k < w.slice_end; ++k) {
      const Slice& sl = slices[k];
      const int64_t overlap = std::min(tail_end, sl.t1) - std::max(tail_start, sl.t0);
      if (overlap <= 0) continue;
      for (const HeldRate& h : frontier.held) {
        const double allocated = h.gpus * scale * static_cast<double>(overlap);
        if (allocated <= 0) continue;
        Metrics& m = buckets[sl.bucket].For(h.allocation);
        m.cost_usd += allocated * sl.usd_per_hour * per_gpu_second;
        m.on_demand_usd += allocated * n.on_demand_usd_per_hour * per_gpu_second;
        m.gpu_seconds_paid += allocated;
        m.gpu_seconds_allocated += allocated;
        if (h.busy_gpus >= 0) {
          m.gpu_seconds_busy += std::min(h.busy_gpus, h.gpus) * scale * static_cast<double>(overlap);
          m.gpu_seconds_busy_measured += allocated;
        }
        estimated_gpu_seconds += allocated;
        estimated = true;
      }
    }
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
  if (f.usage_rows_without_node > 0) {
    f.warnings.push_back(std::to_string(f.usage_rows_without_node) +
                         " usage records name nodes the store has no launch record of; they carry no cost");
  }

  // Phase 3: lines: each allocation, then the node's idle rest of the day.
  // Each range of nodes writes its own lines; they are joined in node order.
  // Each bucket makes a line per allocation and at most one idle line:
  // reserved up front, so that no thread's lines are copied as they grow.
  auto most_lines = [&](size_t n0, size_t n1) {
    size_t lines = 0;
    for (size_t i = n0; i < n1; ++i) {
      for (int64_t b = 0; b < work[i].days; ++b) lines += buckets[work[i].bucket_begin + static_cast<size_t>(b)].by_allocation.size() + 1;
    }
    return lines;
  };
  std::vector<CostLine> later_lines;
  f.lines.reserve(most_lines(0, work.size()));
  auto lines_of_nodes = [&](int range, size_t n0, size_t n1) {
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
  };
  for_node_ranges(lines_of_nodes);
  f.lines.insert(f.lines.end(), later_lines.begin(), later_lines.end());
  internal::AddRecordedLostWork(report_nodes->lost, query, f.as_of, &f);
  for (const NodeFact& n : f.nodes) f.total.Add(n.m);
  const Metrics& t = f.total;
  if (t.gpu_seconds_allocated > 0 && t.gpu_seconds_busy_measured <= 0) {
    f.warnings.push_back(
        "busy time not measured: no GPU utilisation was recorded for this usage (gpu_hours_busy is empty, not "
        "equal to allocated)");
  } else if (t.gpu_seconds_busy_measured + 1e-6 < t.gpu_seconds_allocated) {
    char pct[32];
    std::snprintf(pct, sizeof pct, "%.1f", 100.0 * t.gpu_seconds_busy_measured / t.gpu_seconds_allocated);
    f.warnings.push_back(std::string("busy time measured for ") + pct +
                         " % of the allocated GPU-hours only; the rest is not measured (counted neither busy nor "
                         "allocated-idle)");
  }
  return f;
}

}  // namespace gpuscaler::report
