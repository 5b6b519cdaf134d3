// The stages of BuildCostFacts (cost_model.h), in the order it runs them:
//   1. billed time (cost_facts_billing.cc): each node's billed window, cut
//      into price slices by price and UTC day, its FOCUS charges and its
//      per-day buckets holding what the node cost;
//   2. usage attribution (cost_facts_usage.cc): each usage row charged to
//      the slices it overlaps, in a UsageAccumulator;
//   3. the scan (cost_facts_scan.cc): the usage rows streamed into up to
//      three accumulators, on this thread and a helper;
//   4. the merge (cost_facts_merge.cc): the accumulators joined node by node
//      into the buckets, and the usage not yet recorded estimated;
//   5. the lines (cost_facts.cc): each bucket's allocations and idle rest;
//   6. the reservations (reservations.cc): each one's cost, used and unused.
// Every stage gives the same sums in the same order whichever thread runs
// it, so the facts do not depend on timing. Private to src/report.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "gpuscaler/report/cost_model.h"
#include "gpuscaler/store/audit_reader.h"
#include "usage_scan.h"

namespace gpuscaler::report::internal {

// ---- 1. Billed time (cost_facts_billing.cc) ----------------------------------

// What the scan needs of a node, apart from its (much larger) NodeFact.
struct NodeWork {
  size_t slice_begin = 0, slice_end = 0;  // into BilledTime::slices
  size_t bucket_begin = 0;                // into BilledTime::buckets
  int64_t first_day = 0;                  // unix day of the first bucket
  int64_t days = 0;                       // buckets; 0: nothing billed in the range
  int32_t gpu_count = 0;
  double on_demand_usd_per_hour = 0;
};

// Every node's billed time in the range: per node (as CostFacts::nodes) its
// slices, in time order, and one bucket per UTC day from its first billed
// day, each bucket's `total` what the node cost that day (the minimum
// top-up in its launch day's).
struct BilledTime {
  std::vector<NodeWork> work;
  std::vector<Slice> slices;
  std::vector<Bucket> buckets;
};

// Lays out the billed time of facts->nodes in [facts->from, facts->to),
// running nodes billed up to facts->as_of, the last query.loss_window of an
// interrupted node without a lost-work record marked as lost, a life shorter
// than query.min_billed topped up at its launch. Sets each node's
// billed_seconds and appends its FOCUS charges to facts->charges.
BilledTime LayOutBilledTime(const ReportQuery& query, CostFacts* facts);

// ---- 2. Usage attribution (cost_facts_usage.cc) ------------------------------

// One share of the usage rows, attributed to the billed time: per bucket
// what each (class, team) held, and per node the latest recorded usage.
// A thread owns an accumulator while it scans; once Bind has run, the
// BilledTime and NodeTable it was given must not change and must outlive
// every call. Aligned apart: two threads' counters must not share a cache
// line.
struct alignas(128) UsageAccumulator {
  // (class, team) as recorded, interned by a scan of the few known pairs
  // (cheaper than hashing per row).
  std::vector<std::pair<std::string, std::string>> allocations;
  std::vector<std::vector<std::pair<int32_t, Metrics>>> by_bucket;  // (allocation, metrics) per bucket
  int64_t rows = 0;               // in the range
  int64_t rows_without_node = 0;  // of those, of instances the report has no node for
  // Per node, where its previous row's search ended: its allocation, and
  // the first of its slices that row overlapped. A node's rows come in
  // time order and mostly keep their allocation, so each is tried first.
  // Kept together: each row touches one node's state, of thousands.
  struct NodeState {
    UsageFrontier frontier;
    int32_t last_allocation = -1;
    uint32_t slice_cursor = 0;
    // The rows seen so far of the node's latest interval (busy -1: not
    // measured), charged already; see CloseInterval.
    struct HeldRow {
      int32_t allocation = 0;
      double allocated = 0;
      double busy = -1;
    };
    int64_t interval_start = 0, interval_end = 0;
    std::vector<HeldRow> interval_rows;
  };
  std::vector<NodeState> nodes;  // as BilledTime::work

  // The index of (class, team) in `allocations`, added when new; `hint`
  // (-1: none) is tried first. Usable before Bind.
  int32_t Allocation(std::string_view workload_class, std::string_view team, int32_t hint = -1);
  // Sizes the per-bucket and per-node state for `billed`, whose nodes
  // `table` finds; rows ending at or before `range_from` only note a node's
  // frontier.
  void Bind(const BilledTime& billed, const NodeTable& table, WallTime range_from);
  // Attributes one usage row (after Bind).
  void Accumulate(const UsageView& u);
  // Charges back what each node's open interval held beyond its GPUs (the
  // money rule); at the end of this accumulator's rows.
  void CloseIntervals();

 private:
  void Charge(size_t node, int32_t allocation, int64_t start, int64_t end, double gpu_seconds_allocated,
              bool busy_measured, double gpu_seconds_busy);
  void CloseInterval(size_t node);

  const BilledTime* billed_ = nullptr;
  const NodeTable* table_ = nullptr;
  WallTime range_from_{};
  std::string last_instance_;
  int32_t last_node_ = -1;
};

// ---- 3. The scan (cost_facts_scan.cc) ----------------------------------------

// The usage rows of a report, from a little before query.from (rows ending
// there tell a running node's last recorded allocation) to query.to,
// attributed into parts()[0..2] (in time order). With a second reader a
// helper thread takes the later rows from construction on, while the
// calling thread reads the nodes: its first rows wait in a compact buffer
// until NodesKnown. A fixed count, not a time, decides which rows wait, and
// where the rows split is a fixed fraction of the billed time, so the parts
// are the same on every run. Methods are called on the constructing thread,
// in order: NodesKnown once, then Finish once. Destroying the scan before
// Finish abandons the helper and joins it.
class UsageScan {
 public:
  // `second`: another reader of the same store, or nullptr (one thread).
  // `billed_until`: where running nodes' billing ends. `with_nodes`: the
  // caller does other work between NodesKnown and Finish (this thread's
  // share is then smaller).
  UsageScan(const ReportQuery& query, WallTime billed_until, AuditReader* second, bool with_nodes);
  ~UsageScan();
  UsageScan(const UsageScan&) = delete;
  UsageScan& operator=(const UsageScan&) = delete;

  // The nodes are laid out: binds every part to `billed` (which must stay
  // unchanged and outlive the scan) and lets the helper go on.
  void NodesKnown(const BilledTime& billed, const std::vector<NodeFact>& nodes);
  // Scans this thread's share on `reader` and waits for the helper. Errors:
  // `reader`'s, else the second reader's.
  Status Finish(AuditReader& reader);

  // Each part once Finish returned ok: this thread's rows, then the helper's
  // buffered rows, then its streamed rest.
  static constexpr int kParts = 3;
  std::vector<UsageAccumulator*> PartsInTimeOrder() { return {&parts_[0], &parts_[2], &parts_[1]}; }
  bool two_threads() const { return second_ != nullptr; }

 private:
  struct EarlyRow;
  void RunHelper();
  void OnHelperRow(const UsageView& u);
  bool WaitForNodes();
  void ReplayEarlyRows();
  void CarryOpenIntervals();

  const ReportQuery& query_;
  AuditReader* second_;
  WallTime scan_from_;
  WallTime mid_;         // this thread takes the rows ending up to it, the helper the rest
  bool split_ = false;   // a helper thread scans
  // 0: this thread's rows; 1: the helper's streamed rows; 2: its buffered ones.
  UsageAccumulator parts_[kParts];
  std::optional<NodeTable> table_;
  std::string early_ids_;
  std::vector<EarlyRow> early_;
  bool helper_go_ = false;  // the helper's: its buffered rows are replayed
  std::mutex mu_;
  std::condition_variable nodes_known_;
  bool ready_ = false;    // guarded by mu_
  bool abandon_ = false;  // guarded by mu_
  Status later_;          // the helper's scan; read after the join
  std::thread helper_;
};

// ---- 4. The merge (cost_facts_merge.cc) --------------------------------------

// All nodes in up to two ranges split at the node that halves the buckets:
// the earlier nodes on a second thread when two are allowed, the rest on
// this one. For work where each node's is its own, so that the result is
// the same either way.
class NodeRanges {
 public:
  NodeRanges(const BilledTime& billed, bool two_threads);
  // Runs body(range, first node, end node), range 0 the earlier nodes; on
  // return both ranges are done.
  void ForEach(const std::function<void(int range, size_t first, size_t end)>& body) const;

 private:
  size_t nodes_ = 0;
  size_t half_ = 0;
  bool two_threads_ = false;
};

// Adds the parts (in time order) into billed->buckets and facts: the
// allocations in first-seen order (facts->allocations, recorded teams
// first, query.team_map filling the gaps), the row counts, and each node's
// per-bucket metrics. Returns each node's latest recorded usage, in the
// facts' allocation indices. The parts' per-bucket state is released.
std::vector<UsageFrontier> MergeUsage(const std::vector<UsageAccumulator*>& parts, const ReportQuery& query,
                                      const NodeRanges& ranges, BilledTime* billed, CostFacts* facts);

// Attributes the stretch since each running node's last recorded usage up
// to facts->as_of at that usage's allocation (a node without any: its
// pool's), into billed->buckets, when query.estimate_unrecorded_usage; adds
// a warning saying how much was estimated.
void EstimateUnrecordedUsage(const std::vector<UsageFrontier>& frontiers, const ReportQuery& query,
                             BilledTime* billed, CostFacts* facts);

// ---- 6. Reservations (reservations.cc) ---------------------------------------

// Appends to facts->reservations what each reservation of the reader's
// selected run cost over [facts->from, facts->to), paid up to facts->as_of
// (which is an ended run's end at the latest: AuditReader::LastRecordTime),
// and the used part from the charges of the nodes launched into it. Needs
// facts->nodes and facts->charges. A node naming a reservation that is not recorded makes
// one costing what its instances cost, with a warning. Errors are the
// reader's.
Status AddReservationFacts(AuditReader& reader, CostFacts* facts);

}  // namespace gpuscaler::report::internal
