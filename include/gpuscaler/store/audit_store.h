// The audit store: every decision, every action (intent, then outcome), the
// life and price of every node, and price samples. The daemon and the
// simulator write the same schema; reports read only this store.
//
// Seam: SqliteAuditStore (src/store/, a file in WAL mode, or ":memory:") is
// the real one. Writers call BeginTick/CommitTick around a tick's records so
// they land in one transaction; RecordActionIntent is the exception: it is
// durable when it returns (it commits on its own, even inside a tick), because
// the cloud is called right after it and a crash must not lose the intent.
// Not thread-safe: one writer (the control strand); readers open their own
// connection (see the store's reader API).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpuscaler/model/instance.h"
#include "gpuscaler/model/reservation.h"
#include "gpuscaler/model/time.h"
#include "gpuscaler/policy/policy.h"
#include "gpuscaler/status.h"

namespace gpuscaler {

struct DecisionRecord {
  WallTime time{};
  std::string source = "daemon";   // "daemon" | "dry-run" | "sim:<policy or baseline>"
  std::string policy_name;
  std::string policy_hash;
  int pending_units = 0;
  int nodes = 0;
  std::string signals_json = "{}";   // signal values, ages, stale flags
  std::string snapshot_summary_json = "{}";
  std::string plan_json = "{}";      // the Plan (model/json.h)
  std::string summary;               // Plan::summary
  double cost_before_usd_per_hour = 0;
  double cost_after_usd_per_hour = 0;
  double expected_interruption_usd_per_hour = 0;
  bool scale_down_blocked = false;   // fail-static held back removals this tick
  // The planner's input, for replay (`gpuscaler explain --db --decision`,
  // store/decision_inputs.h): written to their own tables, never read back
  // with the decision. Empty planner_snapshot_json: no input recorded.
  std::string planner_snapshot_json;           // FormatSnapshotJsonLine of exactly what the planner was given
  const Policy* planner_policy = nullptr;      // the policy of policy_hash; not owned, used during the call
  std::string planner_plan_json;  // the planner's plan before the governor; empty: equal to plan_json
};

enum class ActionKind { kLaunch, kTerminate };
enum class ActionOutcome { kPending, kSucceeded, kPartial, kFailed };
std::string_view ToString(ActionKind k);
std::string_view ToString(ActionOutcome o);
// Inverse of ToString ("launch", "terminate"; "pending", "succeeded",
// "partial", "failed"); nullopt for anything else.
std::optional<ActionKind> ParseActionKind(std::string_view text);
std::optional<ActionOutcome> ParseActionOutcome(std::string_view text);

struct ActionRecord {
  int64_t decision_id = 0;
  ActionKind kind = ActionKind::kLaunch;
  std::string idempotency_token;   // derived from the decision and the action
  std::string pool;
  Offering offering;               // launch: chosen offering; terminate: the node's
  int count = 0;
  std::vector<std::string> instance_ids;  // terminate: targets
  std::string reason;
};

struct ActionRow {
  int64_t id = 0;
  ActionRecord action;
  ActionOutcome outcome = ActionOutcome::kPending;
  std::string detail;
  std::vector<std::string> result_instance_ids;
  // Time of the decision the action belongs to (set by OpenIntents; unset
  // when the action has no decision).
  std::optional<WallTime> decision_time;
};

// A launch the cloud accepted whose instances were not all listed when its
// outcome was recorded (outcome succeeded, fewer result instances than it
// asked for: the rest was on its way, as an Auto Scaling group lists its
// new instances later).
struct AcceptedLaunch {
  ActionRow row;  // row.decision_time: when the launch was accepted
  // Instances recorded since as launched by the same decision into the same
  // pool, besides the result instances of that decision's launches: the
  // awaited instances that came. Shared by every accepted launch of the
  // decision into the pool.
  std::vector<std::string> arrived_instance_ids;
};

struct NodeLaunchRecord {
  std::string instance_id;
  std::string node_id;
  std::string pool;
  // Type, region, zone, capacity type, price at launch; a reserved one's
  // reservation_id is recorded with it (nodes.reservation_id; the table's
  // capacity_type says on-demand, the purchase option) and read back as
  // capacity type reserved.
  Offering offering;
  int gpu_count = 0;
  WallTime launch_time{};
  int64_t decision_id = 0;  // the decision that launched it (0: found, not launched by us)
  std::string reason;
};

struct NodeEndRecord {
  std::string instance_id;
  WallTime end_time{};
  std::string cause;  // "terminated" | "interrupted" | "consolidated" | "vanished"
};

// One node's life as the store knows it: what a controller reads after a
// restart to rebuild what it had learned (e.g. spot interruption rates).
// The price in force on a node from `from` until `to` (the next interval's
// start, or the node's end; nullopt while the node runs and no later price
// exists).
struct PriceInterval {
  WallTime from{};
  std::optional<WallTime> to;
  double usd_per_hour = 0;
};

struct NodeLifecycle {
  std::string instance_id;
  Offering offering;  // as recorded at launch
  WallTime launch_time{};
  std::optional<WallTime> end_time;  // nullopt: still running
  std::string cause;                 // NodeEndRecord::cause; empty while running
  std::string pool;
  std::vector<PriceInterval> prices;  // by `from`; the first starts at launch

  // What the node cost over [from, to): its prices × the time it ran in that
  // window, per second. Header-only: the control loop uses the store only
  // through this seam.
  double SpendUsd(WallTime from, WallTime to) const {
    const WallTime end = std::min(to, end_time.value_or(to));
    double usd = 0;
    for (size_t i = 0; i < prices.size(); ++i) {
      const WallTime a = std::max(from, prices[i].from);
      WallTime b = end;
      if (prices[i].to) b = std::min(b, *prices[i].to);
      if (i + 1 < prices.size()) b = std::min(b, prices[i + 1].from);
      if (b > a) usd += prices[i].usd_per_hour * std::chrono::duration<double>(b - a).count() / 3600.0;
    }
    if (prices.empty() && end > std::max(from, launch_time)) {
      usd = offering.usd_per_hour * std::chrono::duration<double>(end - std::max(from, launch_time)).count() / 3600.0;
    }
    return usd;
  }
};

struct PriceSample {
  WallTime time{};
  Offering offering;  // key fields and usd_per_hour
};

// GPU-seconds a workload class used on a node over an interval: the basis of
// cost attribution (reports). busy <= allocated <= node GPUs × seconds.
struct UsageRecord {
  std::string instance_id;
  std::string workload_class;
  std::string team;  // empty: unattributed
  WallTime start{};
  WallTime end{};
  double gpu_seconds_allocated = 0;
  // Allocated time × the node's measured GPU utilisation, or, from the
  // simulator, the GPU time its jobs held (UsageMeter::AddHeld); nullopt
  // when neither was measured for the node (never a copy of allocated).
  std::optional<double> gpu_seconds_busy;
};

// Work lost to one interruption of a node: the GPU-seconds its units had
// done since their last checkpoint (or since the notice, for units that
// checkpoint on notice), per workload class and team as usage rows
// attribute them. An interrupted node that lost nothing is recorded too, as
// one row with empty class and team and 0 GPU-seconds: measured, not absent.
struct LostWorkRecord {
  std::string instance_id;
  WallTime time{};  // when the node was reclaimed (its end)
  std::string workload_class;
  std::string team;  // as the usage rows name it (the unit's, else its class's)
  double gpu_seconds = 0;
};

// A run: one daemon lifetime or one simulated replay (one policy or
// baseline). Decisions, nodes and usage recorded between BeginRun and the
// next BeginRun belong to it.
struct RunRecord {
  std::string name;                // "gpuscaler", a baseline name, the daemon's cluster name
  std::string source = "daemon";   // "daemon" | "sim" ("legacy": rows older than runs)
  std::string policy_hash;
  WallTime started{};
};

// Where a run buys its nodes, for reports (FOCUS ProviderName and Tags).
struct RunCloud {
  // The cloud, as the catalogs name it ("aws", "gcp"); a simulated cloud:
  // the cloud of the catalog it simulates. Empty: not recorded (runs of
  // stores before schema version 6, or never said).
  std::string name;
  // The tags (GCP: labels) gpuscaler puts on every instance of the run, as
  // the cloud shows them (on AWS the daemon's cloud.tags and its cluster
  // tag), and per pool the ones only that pool's instances carry. Per-launch
  // idempotency tags are not listed.
  std::map<std::string, std::string> instance_tags;
  std::map<std::string, std::map<std::string, std::string>> pool_tags;
};

struct RunRow {
  int64_t id = 0;
  RunRecord run;
  std::optional<WallTime> ended;  // nullopt: still running, or it stopped without saying so
  RunCloud cloud;
};

// A reservation as the cloud listed it, and the policy's pools that select
// it (NodePool::SelectsReservation), for reports: its idle slots are those
// pools' waste.
struct ReservationRecord {
  Reservation reservation;  // available_count is not recorded (it changes with every launch)
  std::vector<std::string> pools;
  bool operator==(const ReservationRecord&) const = default;
};

// One month of one run's cost, by class, team, pool and capacity type: what
// reports need of a month once retention has pruned its detail rows. Class
// and team "__idle__" hold the idle cost. Money in USD, times in GPU-seconds
// (as report::Metrics).
struct MonthlyUsageRow {
  int64_t run_id = 0;
  WallTime month_start{};
  std::string workload_class;
  std::string team;
  std::string pool;
  std::string capacity_type;
  double cost_usd = 0;
  double idle_usd = 0;
  double on_demand_usd = 0;
  double gpu_seconds_paid = 0;
  double gpu_seconds_allocated = 0;
  double gpu_seconds_busy = 0;
  double gpu_seconds_busy_measured = 0;
};

class AuditStore {
 public:
  virtual ~AuditStore() = default;

  virtual Status BeginTick() = 0;
  virtual Status CommitTick() = 0;

  // Starts a run: what is recorded from now on belongs to it. Returns its id
  // (the default, a store that keeps no runs: 0). kInvalidInput for an empty
  // name or an unknown source.
  virtual Result<int64_t> BeginRun(const RunRecord& run) {
    (void)run;
    return int64_t{0};
  }
  // Records where the current run buys its nodes (call after BeginRun; no
  // run: no-op). A store that keeps no runs ignores it (the default).
  virtual Status RecordRunCloud(const RunCloud& cloud) {
    (void)cloud;
    return Status::Ok();
  }
  // Records the end of the current run (no run: no-op).
  virtual Status EndRun(WallTime end) {
    (void)end;
    return Status::Ok();
  }

  // Returns the decision id.
  virtual Result<int64_t> RecordDecision(const DecisionRecord& d) = 0;
  // Durable on return. Returns the action id.
  virtual Result<int64_t> RecordActionIntent(const ActionRecord& a) = 0;
  // Several intents made durable together (one commit, one disk sync): all
  // or none are recorded. Returns their ids in order. The default records
  // them one by one.
  virtual Result<std::vector<int64_t>> RecordActionIntents(const std::vector<ActionRecord>& actions) {
    std::vector<int64_t> ids;
    ids.reserve(actions.size());
    for (const ActionRecord& a : actions) {
      Result<int64_t> id = RecordActionIntent(a);
      if (!id) return id.error();
      ids.push_back(*id);
    }
    return ids;
  }
  virtual Status RecordActionOutcome(int64_t action_id, ActionOutcome outcome, const std::string& detail,
                                     const std::vector<std::string>& instance_ids) = 0;
  // Actions still kPending (a crash came between intent and outcome).
  virtual Result<std::vector<ActionRow>> OpenIntents() = 0;

  virtual Status RecordNodeLaunch(const NodeLaunchRecord& n) = 0;
  // The node's price changed (spot price moves); billed piecewise from `at`.
  virtual Status RecordNodePrice(const std::string& instance_id, WallTime at, double usd_per_hour) = 0;
  virtual Status RecordNodeEnd(const NodeEndRecord& e) = 0;
  virtual Status RecordPriceSamples(const std::vector<PriceSample>& samples) = 0;
  virtual Status RecordUsage(const std::vector<UsageRecord>& usage) { return ReplaceUsage({}, usage); }
  // Records what interruptions lost (LostWorkRecord). A store that keeps no
  // history ignores it (the default).
  virtual Status RecordLostWork(const std::vector<LostWorkRecord>& lost) {
    (void)lost;
    return Status::Ok();
  }
  // Records the reservations the cloud lists at `at`, all of them (the
  // current run's; available_count ignored): one listed for the first time
  // is recorded as seen from `at`; one whose other fields or pools changed
  // ends its previous record at `at` and starts a new one; one recorded
  // before and not listed now is marked gone at `at`. An unchanged listing
  // writes nothing. A store that keeps no history ignores it (the default).
  virtual Status RecordReservations(const std::vector<ReservationRecord>& listed, WallTime at) {
    (void)listed;
    (void)at;
    return Status::Ok();
  }
  // What a controller has learned that no history in the store rebuilds, as
  // one JSON document per owner (the daemon's cluster name):
  // SaveLearnedState replaces the owner's document, in the tick's
  // transaction when inside one (so a fenced leader saves nothing);
  // LearnedState reads the last one committed (nullopt: none). A store that
  // keeps no history keeps none (the defaults).
  virtual Status SaveLearnedState(const std::string& owner, WallTime at, const std::string& state_json) {
    (void)owner;
    (void)at;
    (void)state_json;
    return Status::Ok();
  }
  virtual Result<std::optional<std::string>> LearnedState(const std::string& owner) {
    (void)owner;
    return std::optional<std::string>();
  }
  // Removes the rows `withdrawn` (matched by their key: end, instance,
  // class, team, start; a row not there is no error) and records `usage`,
  // in one transaction: how an open interval's row, written as it grows,
  // is replaced by its longer successor so that no GPU-second is counted
  // twice and none is lost if the writer stops between the two.
  virtual Status ReplaceUsage(const std::vector<UsageRecord>& withdrawn, const std::vector<UsageRecord>& usage) = 0;

  // Nodes launched before `until` and not ended before `since`, in launch
  // order. The default (a store that keeps no history) returns none; a
  // controller then starts from its priors.
  virtual Result<std::vector<NodeLifecycle>> NodeLifecycles(WallTime since, WallTime until) {
    (void)since;
    (void)until;
    return std::vector<NodeLifecycle>{};
  }

  // Accepted launches (see AcceptedLaunch) decided at or after `since`, in
  // action order: what a restarted controller still awaits. The default (a
  // store that keeps no history) returns none.
  virtual Result<std::vector<AcceptedLaunch>> AcceptedLaunchesSince(WallTime since) {
    (void)since;
    return std::vector<AcceptedLaunch>{};
  }

  // Usage rows overlapping [from, to) (start < to and end > from), of every
  // run, ordered by start, end, instance id, class and team (the rows of one
  // node and interval next to each other). The default (a store that keeps
  // no history) returns none.
  virtual Result<std::vector<UsageRecord>> UsageOverlapping(WallTime from, WallTime to) {
    (void)from;
    (void)to;
    return std::vector<UsageRecord>{};
  }

  // Retention: deletes what lies wholly before `cut` (the rule is the store's;
  // SqliteAuditStore documents it in docs/audit-schema.md). The default keeps
  // everything.
  virtual Status PruneBefore(WallTime cut) {
    (void)cut;
    return Status::Ok();
  }
};

}  // namespace gpuscaler
