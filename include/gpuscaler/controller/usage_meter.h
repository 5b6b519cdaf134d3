// The usage meter: what the fleet costs and who used its GPUs, since the
// last flush.
//
// Per node it accumulates the GPU-seconds each (workload class, team) holds
// (GpuShare of the units running there; a unit's team, else its class's
// classes[].team) and writes them as usage rows once a node's interval is
// full (intervals end on whole multiples of their length since the epoch:
// at each whole UTC hour for an hour), when the node ends, and on Flush. A row's busy GPU time is its
// allocated time × the node's mean measured GPU utilisation over the
// interval (SetUtilization), capped at allocated; with no utilisation
// measured for the node in the interval, busy is not measured (nullopt).
// When the work source measures when each unit held its GPUs (AddHeld: the
// simulator), the meter writes those GPU-seconds instead of sampling the
// running work at each Accumulate, as allocated time and as busy time (a
// simulated job runs its GPUs at full occupancy from placement to end), and
// the work its interruptions lost (RecordLostWork).
// It also keeps the month-to-date spend of the fleet (node prices × time,
// restarting at every calendar month, UTC), which the planner's monthly
// budgets read, by pool and by team.
//
// With no store the meter keeps only the month-to-date spend. Not
// thread-safe: the control loop's thread only.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "gpuscaler/controller/work_source.h"
#include "gpuscaler/model/catalog.h"
#include "gpuscaler/model/demand.h"
#include "gpuscaler/model/node.h"
#include "gpuscaler/model/time.h"
#include "gpuscaler/policy/policy.h"
#include "gpuscaler/status.h"
#include "gpuscaler/store/audit_store.h"

namespace gpuscaler {

class UsageMeter {
 public:
  // `store` may be null; `catalog` gives each node's GPU count (the cap on a
  // row's allocated GPU time). Both must outlive the meter.
  UsageMeter(AuditStore* store, const Catalog& catalog, Seconds interval);

  // The team of each class (classes[].team); units with no team of their
  // own are attributed to it. Takes effect at the next SetRunning.
  void SetClassTeams(const Policy& policy);
  // Starts metering a node at `now` (nothing held yet).
  void AddNode(const std::string& instance_id, WallTime now);
  // The work on the node from now on.
  void SetRunning(const std::string& instance_id, const std::vector<DemandUnit>& running);
  // The node's measured mean GPU utilisation (0..1, clamped) from now on;
  // nullopt: not measured (a missing or stale sample).
  void SetUtilization(const std::string& instance_id, std::optional<double> utilization);
  // GPU-seconds held on nodes since the previous call, measured by the work
  // source (WorkSource::TakeHeldGpuSeconds); call before Accumulate. From
  // the first call on, allocated and busy time come only from these, and
  // SetRunning feeds the month-to-date spend by team only. A node the meter
  // does not meter (never added, or already ended): kInternal naming it
  // (the GPU-seconds of the other nodes are still added).
  Status AddHeld(const HeldGpuSeconds& held);
  // Writes the work the interruptions lost (WorkSource::TakeLostWork) as
  // lost-work rows, each unit's team as its usage is attributed (its own,
  // else its class's); a node that lost nothing gets one row of 0
  // GPU-seconds. The store's error, if any, is returned.
  Status RecordLostWork(const std::vector<LostWork>& lost);
  // Moves to `now`: adds the spend of `nodes` since the previous call to the
  // month-to-date total and their GPU time to each class; writes the rows of
  // every node whose interval is full (with held time: FlushFullIntervals
  // does). Errors are returned (the rows of the other nodes are still
  // written).
  Status Accumulate(WallTime now, const std::vector<Node>& nodes);
  // With held time (AddHeld), writes the rows of every node whose interval
  // is full; call once the tick has ended the nodes that are gone
  // (EndNode), so a node that ended since the last tick has its last row end
  // at its end, not at `now` (reports bill usage only within a node's life).
  // Without held time: nothing (Accumulate wrote them). Errors as Accumulate.
  Status FlushFullIntervals(WallTime now, const std::vector<Node>& nodes);
  // Every `every` (zero, the default: never), writes each metered node's
  // open interval as rows ending at the call's `now` (WriteOpenIntervals),
  // each replacing the node's previous open rows; the interval's final
  // rows replace the last of them. A report taken while the controller runs
  // then has each node's usage up to at most `every` ago instead of up to
  // its last full interval.
  void SetOpenIntervalCadence(Seconds every) { open_every_ = every; }
  // Writes the open intervals when `every` has passed since the last time
  // (see SetOpenIntervalCadence); call after Accumulate (and, with held
  // time, after FlushFullIntervals). Errors as Accumulate.
  Status WriteOpenIntervals(WallTime now, const std::vector<Node>& nodes);
  // Writes the node's rows up to `end` and stops metering it.
  Status EndNode(const Node& node, WallTime end);
  // Writes the rows of every node up to `now` (before shutdown, at the end
  // of a simulation). The first error stops it.
  Status Flush(WallTime now, const std::vector<Node>& nodes);

  // Sets the month-to-date spend from the store's node lifecycles (those
  // overlapping this month up to `now`) and, by team, from this month's
  // usage rows in the store (same attribution as below); call once, before
  // nodes are added. A failure to read the usage rows is returned (the
  // fleet and pool totals are restored regardless).
  Status RestoreMonth(const std::vector<NodeLifecycle>& history, WallTime now);

  double month_to_date_usd() const { return month_to_date_usd_; }
  const std::map<std::string, double>& month_to_date_usd_by_pool() const { return by_pool_; }
  // This calendar month's spend (UTC) by team, for budget.teams caps: each
  // node's price × time split by GPU share (SplitNodePrice, model/money.h:
  // a team pays price × its units' GpuShare / max(the node's GPU count, all
  // GPUs held there)), the attribution of the usage rows. Idle GPUs and
  // units of no team are no team's, so the teams add up to at most
  // month_to_date_usd(). Survives a restart through RestoreMonth.
  const std::map<std::string, double>& month_to_date_usd_by_team() const { return by_team_; }
  // The first instant of `t`'s calendar month, and of the next one (UTC).
  static WallTime MonthStart(WallTime t);
  static WallTime NextMonthStart(WallTime t);

 private:
  using ClassTeam = std::pair<std::string, std::string>;
  // The team a unit's usage is charged to: its own, else its class's.
  std::string TeamOf(const std::string& workload_class, const std::string& unit_team) const;
  struct Meter {
    std::map<ClassTeam, double> gpus_by_class;  // of the running work
    std::map<ClassTeam, double> gpu_seconds;    // since `start`
    std::optional<double> utilization;          // now
    double utilization_seconds = 0;              // seconds measured since `start`
    double utilization_sum = 0;                  // utilisation × seconds since `start`
    WallTime start{};
    // The open interval's rows written so far (WriteOpenIntervals), each
    // covering the stretch since the write before: what the interval's final
    // rows replace. The totals below are those the open rows hold, up to
    // `open_until`.
    std::vector<UsageRecord> open_rows;
    WallTime open_until{};
    std::map<ClassTeam, double> open_gpu_seconds;
    double open_utilization_seconds = 0;
    double open_utilization_sum = 0;
  };
  // The node's rows for [from, now): the whole interval (from = start) or
  // the stretch since the last open write (from = open_until).
  std::vector<UsageRecord> Rows(const Node& node, const Meter& meter, WallTime from, WallTime now) const;
  // The meter's interval has reached the next multiple of the interval
  // length since the epoch.
  bool IntervalFull(const Meter& meter, WallTime now) const;
  Status FlushNode(const Node& node, Meter& meter, WallTime now);
  int GpuCount(const Offering& offering) const;

  AuditStore* store_;
  const Catalog& catalog_;
  Seconds interval_;
  std::unordered_map<std::string, Meter> meters_;  // by instance id
  std::optional<WallTime> last_;
  WallTime month_{};  // MonthStart of the month being counted
  double month_to_date_usd_ = 0;
  std::map<std::string, double> by_pool_;
  std::map<std::string, double> by_team_;
  std::map<std::string, std::string> class_teams_;
  bool held_measured_ = false;  // AddHeld was called: no sampling of the running work
  Seconds open_every_{0};
  std::optional<WallTime> last_open_write_;
};

}  // namespace gpuscaler
