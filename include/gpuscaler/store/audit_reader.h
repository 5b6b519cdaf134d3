// AuditReader: the read API over an audit database, for reports, the HTTP
// server and `gpuscaler explain`. It opens its own read-only connection, so
// it sees committed data only and never blocks the writer (WAL: readers and
// the writer do not wait for each other). Each call reads one consistent
// snapshot.
//
// Ranges are half-open [from, to) in unix seconds; from > to is kInvalidInput.
// Rows come in time order, then id (or key) order.
//
// Not thread-safe: one reader per thread (they are cheap to open).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gpuscaler/model/time.h"
#include "gpuscaler/status.h"
#include "gpuscaler/store/audit_store.h"

namespace gpuscaler {

namespace store_internal {
class Connection;
}

struct DecisionRow {
  int64_t id = 0;
  DecisionRecord decision;
};

struct NodeRow {
  // decision_id 0: not launched by a recorded decision.
  NodeLaunchRecord launch;
  std::optional<WallTime> end_time;  // nullopt: still running
  std::string cause;                 // empty while running
  std::vector<PriceInterval> prices;  // by `from`; the first starts at launch
  int64_t run_id = 0;                 // the run that first recorded it (0: none)
};

// One recorded version of a reservation (AuditStore::RecordReservations):
// listed from `first_seen`, until `last_seen` (the recording that found it
// changed or no longer listed; nullopt: still listed at the run's last
// recording).
struct ReservationRow {
  int64_t run_id = 0;
  ReservationRecord record;
  WallTime first_seen{};
  std::optional<WallTime> last_seen;
};

// One usage record; (end, instance, class, team, start) is its key.
struct UsageRow {
  UsageRecord usage;
};

// A usage record seen in place (ForEachUsage): the views are valid only
// during the callback.
struct UsageView {
  std::string_view instance_id;
  std::string_view workload_class;
  std::string_view team;
  WallTime start{};
  WallTime end{};
  double gpu_seconds_allocated = 0;
  std::optional<double> gpu_seconds_busy;  // nullopt: not measured
};

struct AuditReaderOptions {
  std::chrono::milliseconds busy_timeout{2000};
  // Read the file through a memory map (up to 4 GiB) instead of one read
  // call per page: for reports that scan millions of rows.
  bool memory_mapped = false;
  // PostgreSQL: the login password (nullopt: libpq's own sources: the URL,
  // PGPASSWORD, PGPASSFILE). Ignored for SQLite.
  std::optional<std::string> password = std::nullopt;
};

class AuditReader {
 public:
  // Opens `path` read-only, or a postgresql:// URL (database_url.h) in a
  // read-only session. Missing file: kNotFound; not an audit database, or a
  // schema older or newer than this binary's: kConfig (an older file is
  // migrated by opening it once with SqliteAuditStore).
  static Result<std::unique_ptr<AuditReader>> Open(const std::string& path,
                                                   const AuditReaderOptions& options = {});
  // Whether the SQLite file at `path` holds an audit database with at least
  // one migration applied (of any schema version): false for another
  // application's database or an empty one; an error when it cannot be read.
  static Result<bool> IsAuditDatabase(const std::string& path, const AuditReaderOptions& options = {});
  // Used by SqliteAuditStore::OpenReader for ":memory:".
  explicit AuditReader(std::shared_ptr<store_internal::Connection> db);
  ~AuditReader();
  AuditReader(const AuditReader&) = delete;
  AuditReader& operator=(const AuditReader&) = delete;

  int SchemaVersion() const;

  // Every run, by id. A file older than schema version 6 has no cloud or
  // tags recorded: they read as empty.
  Result<std::vector<RunRow>> Runs();
  // Restricts what follows to one run's rows: decisions (DecisionsSince,
  // DecisionsAfterId), nodes (NodesOverlapping), usage (UsageOverlapping,
  // ForEachUsage), monthly rollups and LastRecordTime. nullopt (the
  // default): every run. Decision(id) and actions are not filtered.
  void SelectRun(std::optional<int64_t> run_id) { run_id_ = run_id; }
  std::optional<int64_t> selected_run() const { return run_id_; }

  // Decisions with time >= since, oldest first, at most `limit` (> 0, else
  // kInvalidInput).
  Result<std::vector<DecisionRow>> DecisionsSince(WallTime since, int limit);
  // Decisions with id > after_id, oldest first, at most `limit`: the cursor
  // for paging (`since` alone repeats rows that share a second).
  Result<std::vector<DecisionRow>> DecisionsAfterId(int64_t after_id, int limit);
  // (id, leader_term) of up to `limit` decisions after `after_id`, in id
  // order: the leadership term each was made under (0 without leader
  // election, and in a store older than schema version 8).
  Result<std::vector<std::pair<int64_t, int64_t>>> DecisionTerms(int64_t after_id, int limit);
  // kNotFound if absent (never recorded, or pruned).
  Result<DecisionRow> Decision(int64_t id);
  // A decision's time and plan_json only (its signals and snapshot can be
  // many kilobytes): what cost predictions read for each launch decision.
  // kNotFound if absent.
  struct DecisionPlanRow {
    WallTime time{};
    std::string plan_json;
  };
  Result<DecisionPlanRow> DecisionPlan(int64_t id);
  Result<std::vector<ActionRow>> ActionsForDecision(int64_t decision_id);
  Result<std::vector<ActionRow>> OpenIntents();
  // Nodes alive at some point of [from, to): launched before `to` and not
  // ended by `from`; with all their price intervals (the first may start
  // before `from`).
  Result<std::vector<NodeRow>> NodesOverlapping(WallTime from, WallTime to);
  // Usage intervals that overlap [from, to) (start < to and end > from); the
  // caller prorates partial overlaps.
  Result<std::vector<UsageRow>> UsageOverlapping(WallTime from, WallTime to);
  // Months before this are kept as monthly_usage rollups (retention may
  // have pruned their detail); nullopt: nothing rolled up.
  Result<std::optional<WallTime>> RolledUpBefore();
  // Rollup rows with from <= month_start < to, of the selected run (all
  // runs when none is selected).
  Result<std::vector<MonthlyUsageRow>> MonthlyUsage(WallTime from, WallTime to);
  // Samples with from <= time < to.
  Result<std::vector<PriceSample>> PriceSamples(WallTime from, WallTime to);
  // Lost work recorded with from <= time < to, of the selected run, by time
  // then instance, class and team. None in a file older than schema version
  // 6 (its interruptions have no recorded figure: LostWorkRecorded is false).
  Result<std::vector<LostWorkRecord>> LostWork(WallTime from, WallTime to);
  bool LostWorkRecorded() const;
  // Every recorded version of every reservation of the selected run (all
  // runs when none is selected), by id, then first_seen, then run. None in a
  // file older than schema version 7 (ReservationsRecorded is false; its
  // nodes read with no reservation).
  Result<std::vector<ReservationRow>> Reservations();
  bool ReservationsRecorded() const;

  // The same rows as UsageOverlapping, streamed in key order (end time
  // first) without copying: for reports over millions of rows. `fn` must not
  // call back into this reader. With `end_after`/`end_until`, only rows with
  // end_after < end <= end_until: a caller may split one scan among readers.
  Status ForEachUsage(WallTime from, WallTime to, const std::function<void(const UsageView&)>& fn,
                      std::optional<WallTime> end_after = std::nullopt, std::optional<WallTime> end_until = std::nullopt);
  // The latest time any record speaks of (decision time, node launch or end,
  // usage end, a run's end); nullopt for an empty database. Reports bill
  // running nodes up to it: the database knows nothing later, and a node
  // still live when its run ended ran until then.
  Result<std::optional<WallTime>> LastRecordTime();

  // Holds one read snapshot over several calls while it lives, so a report
  // sees nodes, usage and decisions as of one commit. Without it each call
  // reads its own snapshot. Inside a transaction already open on the
  // connection (an in-memory reader shares the writer's, which may be inside
  // its tick) it adds nothing. `reader` must outlive it.
  class ConsistentRead {
   public:
    explicit ConsistentRead(AuditReader& reader);
    ~ConsistentRead();
    ConsistentRead(const ConsistentRead&) = delete;
    ConsistentRead& operator=(const ConsistentRead&) = delete;
    // Not ok: the snapshot could not be taken (calls still work, each in
    // its own snapshot).
    const Status& status() const { return status_; }

   private:
    store_internal::Connection& db_;
    bool began_ = false;
    Status status_;
  };

 private:
  // Decision inputs (decision_inputs.h) are read on this reader's connection.
  friend class DecisionInputReader;

  std::shared_ptr<store_internal::Connection> db_;
  int schema_version_ = 0;
  std::optional<int64_t> run_id_;
};

}  // namespace gpuscaler
