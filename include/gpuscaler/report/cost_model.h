// The cost facts behind every report format: each node's bill over the
// query range, split by day and by who used its GPUs, and the views built
// from them. Renderers (report.h) only format these values.
//
// Billing: per second, from launch to end (running nodes: to the query's
// as_of), at the price in force each second (node_prices, piecewise), with a
// minimum billed time per node (its top-up is charged at the launch, at the
// last known price, and is idle) but a reserved one (its slot is paid
// anyway). On-demand equivalent: the same seconds at
// the node's on-demand list price.
//
// Attribution (OpenCost): a usage record's allocated GPU-seconds, spread
// evenly over its interval, are charged at the node's per-GPU rate at that
// moment (price / GPUs); whatever a node's bill leaves unallocated is the
// node's idle cost, its own line with class and team "__idle__". So per node
// and day, attributed + idle == cost exactly (in doubles; the renderers round
// to cents preserving totals).
//
// Thread-safety: values; BuildCostReport uses the reader it is given.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "gpuscaler/model/instance.h"
#include "gpuscaler/model/time.h"
#include "gpuscaler/report/prediction.h"
#include "gpuscaler/report/report.h"
#include "gpuscaler/status.h"
#include "gpuscaler/store/audit_store.h"

namespace gpuscaler {
class AuditReader;
}

namespace gpuscaler::report {

// Sums over a set of lines. GPU-seconds "paid" of a workload line are its
// allocated GPU-seconds; of an idle line, the unallocated ones.
struct Metrics {
  double cost_usd = 0;
  double idle_usd = 0;       // the part of cost_usd that is idle
  double on_demand_usd = 0;  // on-demand equivalent of the same GPU-seconds
  double gpu_seconds_paid = 0;
  double gpu_seconds_allocated = 0;
  double gpu_seconds_busy = 0;  // measured busy time (usage rows with a utilisation)
  // Allocated GPU-seconds whose busy time was measured: 0 means busy time is
  // not measured at all; less than gpu_seconds_allocated, measured in part.
  double gpu_seconds_busy_measured = 0;
  // Work lost to interruptions: as the store recorded it per interruption,
  // else (a store or run without a figure) the GPU-seconds allocated on the
  // node in the query's loss_window before it was reclaimed.
  double gpu_seconds_lost = 0;
  double lost_usd = 0;  // those GPU-seconds at the node's per-GPU rate then

  void Add(const Metrics& o);
  double savings_usd() const { return on_demand_usd - cost_usd; }
};

struct NodeFact {
  std::string instance_id;
  std::string node_id;
  std::string pool;
  std::string region;
  std::string zone;
  std::string instance_type;
  CapacityType capacity_type = CapacityType::kOnDemand;
  std::string reservation_id;  // kReserved: the reservation it was launched into
  int gpu_count = 0;
  double launch_usd_per_hour = 0;
  double on_demand_usd_per_hour = 0;
  WallTime launch{};
  std::optional<WallTime> end;  // nullopt: running at as_of
  std::string cause;            // "interrupted", "terminated", ...; empty while running
  int64_t decision_id = 0;      // 0: not launched by a recorded decision
  std::string reason;
  int64_t run_id = 0;           // the run that recorded it (0: none)
  // The store recorded what its interruption lost (LostWorkRecord): no loss
  // window is assumed for it.
  bool lost_work_recorded = false;
  int price_changes = 0;        // price intervals after the first
  std::vector<PriceInterval> prices;  // as recorded, by `from`; empty: the launch price throughout
  int64_t billed_seconds = 0;   // in the range, with the minimum top-up
  Metrics m;                    // in the range
};

// (class, team) of usage; index -1 in a CostLine is idle.
struct Allocation {
  std::string workload_class;
  std::string team;
};

// The finest grain: one node, one UTC day, one allocation (or idle).
struct CostLine {
  int64_t day = 0;  // unix day number (unix seconds / 86400)
  int32_t node = 0;
  int32_t allocation = -1;
  Metrics m;
};

// One node's billed time at one price within one UTC day: a FOCUS row.
// billed_seconds includes the minimum top-up (folded into the node's last
// charge), so cost = usd_per_hour x billed_seconds / 3600 exactly.
struct Charge {
  int32_t node = 0;
  WallTime start{};
  WallTime end{};
  double usd_per_hour = 0;
  int64_t billed_seconds = 0;
};

// What a reservation cost over the report's range (docs/reports.md,
// "Reserved capacity"): every slot is paid for the time it is held, used or
// not. `cost_usd` is its slots × the paid time in the range × the slot's
// hourly cost; `used_usd` what the instances launched into it cost in the
// range (their bills, at the slot's cost); `unused_usd` the rest, never
// below 0 (a warning when the instances cost more).
struct ReservationFact {
  ReservationRecord record;  // as last recorded in the range (its latest version)
  WallTime paid_from{};      // the paid time within the range (paid_from == paid_to: none)
  WallTime paid_to{};
  double slot_seconds = 0;   // slots × paid seconds, summed over versions
  double used_seconds = 0;   // the instances' billed seconds in the range
  double cost_usd = 0;
  double used_usd = 0;
  double unused_usd = 0;
  // A Capacity Block whose start lies in the range: its fee is a purchase
  // in the range (FOCUS ChargeCategory "Purchase").
  bool purchased_in_range = false;
  // Per pool: the used part by the pool of each instance; the unused part
  // under the pools that select the reservation, joined by "," ("" when
  // none does).
  std::map<std::string, double> used_usd_by_pool;
  std::map<std::string, double> used_seconds_by_pool;
  std::string unused_pool;
  // Per UTC day (unix day number): the paid slot-seconds and their cost, the
  // used cost; the day's unused = cost - used (at least 0).
  struct Day {
    double slot_seconds = 0;
    double cost_usd = 0;
    double used_usd = 0;
  };
  std::map<int64_t, Day> days;
};

struct CostFacts {
  std::string scope;  // ReportScope::description (empty when built directly)
  WallTime from{};
  WallTime to{};
  WallTime as_of{};  // running nodes billed up to min(as_of, to)
  std::vector<NodeFact> nodes;
  std::vector<Allocation> allocations;
  std::vector<CostLine> lines;
  std::vector<Charge> charges;  // by node, then time
  // The reservations of the selected runs with paid time in the range, by
  // id. The unused part is not in `lines` or `total` (no node holds it): the
  // reservations view, JSON, HTML and FOCUS show it beside them.
  std::vector<ReservationFact> reservations;
  Metrics total;
  int64_t usage_rows = 0;
  int64_t usage_rows_without_node = 0;  // usage of nodes not in the store
  std::vector<std::string> warnings;
};

// Reads the store and computes the facts (one read snapshot). Errors are the
// reader's; a query with from >= to: kInvalidInput. With `second` (another
// reader of the same file), the usage scan is split between two threads; the
// result differs from one thread's only in the order of floating-point sums
// (deterministic either way). Each reader holds its own snapshot: rows a
// writer commits between the two are seen by the later half only.
//
// `with_nodes`, if given, runs once on the calling thread, inside the
// reader's snapshot, as soon as the facts' range and nodes are known and
// before this thread's share of the usage scan: work that needs the nodes
// but not the usage (predictions) overlaps the second thread's scan there.
// This thread's share is then smaller, a fixed fraction either way. An error
// it returns ends the build with that error.
Result<CostFacts> BuildCostFacts(AuditReader& reader, const ReportQuery& query, AuditReader* second = nullptr,
                                 const std::function<Status(const CostFacts&)>& with_nodes = {});

// ---- Views -----------------------------------------------------------------

struct GroupedRow {
  WallTime period_start{};
  WallTime period_end{};  // exclusive, clipped to the query range
  std::vector<std::string> keys;  // one per group_by dimension
  Metrics m;
};

struct BudgetDay {
  WallTime day{};
  double cost_usd = 0;
  double cumulative_usd = 0;
  std::optional<double> remaining_usd;  // cap - cumulative
};

struct BudgetMonth {
  WallTime month_start{};
  WallTime month_end{};
  std::optional<double> cap_usd;
  double actual_usd = 0;      // in the range, up to as_of
  double forecast_usd = 0;    // actual + the month's run rate over the rest of the month
  bool complete = false;      // as_of is at or past the month's end
  std::vector<BudgetDay> days;
};

struct DecisionCost {
  int64_t decision_id = 0;  // 0: nodes found running, not launched by a recorded decision
  std::optional<WallTime> time;
  std::string source;
  std::string policy_name;
  std::string summary;
  std::string reason;  // of its first node
  std::vector<std::string> instance_ids;
  Metrics m;
};

// "Should we buy a block?" (docs/reports.md): a Capacity Block of `count`
// instances of `instance_type` held over the whole range for `upfront_usd`,
// against the on-demand and spot instances of that type the store recorded
// in the range. A what-if on recorded usage: at each moment the block would
// have held up to `count` of the instances then running, the dearest first
// (their cost avoided); the rest would still have been bought. Reserved
// instances of the type are left out (they are paid already).
struct BlockWhatIf {
  std::string instance_type;
  int count = 0;
  double upfront_usd = 0;
  double range_hours = 0;         // the query range
  double slot_hours = 0;          // count × range_hours
  double node_hours = 0;          // recorded instances of the type, billed
  double gpu_hours = 0;
  double on_demand_usd = 0;       // what the on-demand ones cost
  double spot_usd = 0;            // what the spot ones cost
  double covered_node_hours = 0;  // what the block would have held
  double covered_gpu_hours = 0;
  double covered_usd = 0;         // their cost, avoided with the block
  int peak_nodes = 0;             // most instances of the type running at once
};

struct ReportViews {
  std::vector<Dimension> group_by;
  Period period = Period::kDay;
  std::vector<GroupedRow> costs;       // period x group_by, in key order
  std::vector<GroupedRow> allocation;  // class x team over the whole range; idle last
  std::vector<GroupedRow> savings;     // period x capacity_type
  std::vector<GroupedRow> daily_by_capacity;  // day x capacity_type (charts)
  std::vector<GroupedRow> by_team;     // team over the whole range (charts)
  std::vector<BudgetMonth> budget;
  std::vector<DecisionCost> decisions;  // by cost, at most query.top
  std::vector<size_t> top_nodes;        // node indices by cost, at most query.top
  std::vector<size_t> nodes_by_cost;    // every node with a cost in the range
  std::vector<DecisionPrediction> predictions;  // per decision, prediction.h
  PredictionSummary prediction_summary;         // of `predictions`, the query.top worst
  std::optional<BlockWhatIf> buy_block;         // when the query names a block
};

// The what-if of query.block_type, block_count and block_upfront_usd over
// the facts' range (the facts' charges of that type's on-demand and spot
// nodes).
BlockWhatIf BuildBlockWhatIf(const CostFacts& facts, const ReportQuery& query);

// Groups the lines. Decisions need the reader (their summaries), and so do
// the predictions unless given (BuildPredictions of the same facts).
Result<ReportViews> BuildViews(AuditReader& reader, const CostFacts& facts, const ReportQuery& query,
                               std::optional<std::vector<DecisionPrediction>> predictions = std::nullopt);
std::vector<GroupedRow> GroupLines(const CostFacts& facts, const std::vector<Dimension>& dims,
                                   std::optional<Period> period);

// Start of the period holding `t`, and of the next one (UTC).
WallTime PeriodStart(WallTime t, Period p);
WallTime NextPeriodStart(WallTime t, Period p);

// Rounds each amount to whole cents so that the rounded amounts sum to
// `total_cents`, by default the rounded sum (largest remainder). Finance
// reports must add up. An amount that is a whole number of cents (zero
// included) keeps it unless the total cannot be reached otherwise.
std::vector<int64_t> CentsPreservingTotal(const std::vector<double>& usd,
                                          std::optional<int64_t> total_cents = std::nullopt);

}  // namespace gpuscaler::report
