// SqliteAuditStore: the real AuditStore, a SQLite database file in WAL mode
// (or ":memory:" for the simulator and tests), or a PostgreSQL database
// (Open with a postgresql:// URL, database_url.h): one implementation, the
// same SQL, rows and transactions on both. Schema, units, durability and
// retention rules: docs/audit-schema.md.
//
// PostgreSQL differs where the server does: a commit is durable when it
// returns (synchronous_commit; IntentSync and group commit work as for a
// file, less the disk sync, which is the server's), two writers do not
// exclude each other (no kTransient "another writer"), max_size_mib does not
// apply, a lost connection is kTransient and re-established at the next
// write outside a tick, and text must be valid UTF-8 without NUL bytes
// (kInvalidInput otherwise).
//
// Opening applies the schema migrations the file lacks, in order, each in its
// own transaction. A file whose schema is newer than this binary knows is
// refused (kConfig), never downgraded.
//
// Durability:
//  - Records between BeginTick() and CommitTick() land in one transaction
//    committed with synchronous=NORMAL: durable against a process crash once
//    CommitTick returns; a power loss may lose the last ticks, never corrupt
//    the file. Destroying the store with a tick open discards that tick's
//    uncommitted records, exactly as a crash would. (Group commit, an option
//    for the simulator, holds several ticks in one transaction.)
//  - RecordActionIntent(s) is durable on return. Inside a tick it first
//    commits the records the tick has made so far (so the intent's decision is
//    always on disk with it), then commits the intent on its own, synced to
//    disk (IntentSync::kFsync), then the tick goes on in a fresh transaction.
//    Records made after the intent are lost by a crash before CommitTick.
//    (IntentSync::kWithTick, for the simulator, opts out of this.)
//  - A write that fails without undoing the tick (bad input, a constraint)
//    leaves the tick's other records in place; a multi-row call is all or
//    nothing. If SQLite had to roll the whole tick back (disk full, I/O
//    error), the failing call says so and CommitTick returns kTransient.
//
// Errors: SQLITE_BUSY/LOCKED (another writer), disk full and I/O errors are
// kTransient; bad input and constraint violations kInvalidInput (a duplicate
// idempotency token among them); unknown decision, action or node kNotFound;
// a path that cannot be opened, a read-only file or a file that is not a
// gpuscaler audit database kConfig; corruption kInternal.
//
// All SQL is prepared once and cached; values are always bound, never
// formatted into SQL.
//
// Not thread-safe: one writer (the control strand). Readers use AuditReader
// (audit_reader.h), each with its own read-only connection.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gpuscaler/status.h"
#include "gpuscaler/store/audit_store.h"

namespace gpuscaler {

class AuditReader;

namespace store_internal {
class Connection;
}

struct SqliteAuditStoreOptions {
  // How long a statement waits for a lock held by another connection before
  // it fails with kTransient (PostgreSQL: its lock_timeout).
  std::chrono::milliseconds busy_timeout{5000};
  enum class IntentSync {
    kFsync,     // committed alone and synced: survives power loss (the daemon)
    kNoFsync,   // committed alone, not synced: survives a process crash only
    // Inside a tick, the intent joins the tick's batch like any record: not
    // durable before CommitTick. For the simulator and benchmarks, where
    // nothing real is launched and no crash needs reconciling.
    kWithTick,
  };
  IntentSync intent_sync = IntentSync::kFsync;
  // Cap on the database size (0: none). A write past it fails like a full
  // disk: kTransient, nothing half-written; PruneBefore makes room.
  int64_t max_size_mib = 0;
  // Group commit: CommitTick commits every Nth tick (and an intent, Flush or
  // the destructor commits what is pending). Until then the ticks are neither
  // durable nor visible to readers. 1 for the daemon; the simulator, which
  // writes a month of ticks in seconds, may use e.g. 64.
  int group_commit_ticks = 1;
  // PostgreSQL: the login password, read from the daemon's db_password_file
  // (nullopt: libpq's own sources: the URL, PGPASSWORD, PGPASSFILE). Never
  // logged. Ignored for SQLite.
  std::optional<std::string> password = std::nullopt;
  // Called after every transaction of records the store commits, or fails
  // to commit (fenced, lost connection, full disk): how long the commit
  // took (the fence check and COMMIT), and its result. For the daemon's
  // store write metrics; may be empty. Called on the writer's thread.
  std::function<void(double seconds, const Status& result)> on_commit = {};
};

// A replica's leadership term over one cluster's rows (the Lease's
// leaseTransitions: every new leader's is higher).
struct LeadershipClaim {
  std::string cluster;
  int64_t term = 0;    // > 0
  std::string holder;  // the replica (the Lease's holderIdentity)
  WallTime at{};
};

class SqliteAuditStore final : public AuditStore {
 public:
  // The schema version this binary writes (the last migration).
  static int CurrentSchemaVersion();

  // Opens or creates `path` (":memory:" for a private in-memory database), or
  // connects to the PostgreSQL database of a postgresql:// URL and creates
  // or migrates the schema in it (the database itself must exist).
  static Result<std::unique_ptr<SqliteAuditStore>> Open(const std::string& path,
                                                        const SqliteAuditStoreOptions& options = {});
  ~SqliteAuditStore() override;
  SqliteAuditStore(const SqliteAuditStore&) = delete;
  SqliteAuditStore& operator=(const SqliteAuditStore&) = delete;

  // Opens a tick's batch (kInternal if one is open already; kTransient if
  // another connection holds the write lock past busy_timeout). When it
  // fails with kTransient the tick is still open but records nothing: every
  // write until CommitTick (intents included, so the caller acts on nothing)
  // fails at once, kTransient, instead of waiting busy_timeout again, and
  // CommitTick fails too. The same holds for the rest of a tick whose batch
  // cannot be reopened after an intent. Reads (OpenIntents) still run.
  Status BeginTick() override;
  // Commits the batch. kInternal without BeginTick; kTransient when the batch
  // could not be committed or was rolled back earlier in the tick (the tick
  // is over either way).
  Status CommitTick() override;
  // Commits ticks held back by group_commit_ticks (no-op when none).
  // kInternal inside a tick.
  Status Flush();

  // Records the run and makes it current. A writer that records a decision,
  // node or usage row before any BeginRun gets a run named "unnamed"
  // (source daemon) begun for it, so every such row belongs to a run.
  Result<int64_t> BeginRun(const RunRecord& run) override;
  Status EndRun(WallTime end) override;
  // Replaces what the current run recorded of its cloud before.
  Status RecordRunCloud(const RunCloud& cloud) override;
  // The current run's id (nullopt before the first BeginRun or record).
  std::optional<int64_t> run_id() const { return run_id_; }

  Result<int64_t> RecordDecision(const DecisionRecord& d) override;
  // Durable on return (see above). kInvalidInput for an empty or already
  // recorded idempotency token, kNotFound for an unknown decision id (0 means
  // "no decision": stored as NULL).
  Result<int64_t> RecordActionIntent(const ActionRecord& a) override;
  Result<std::vector<int64_t>> RecordActionIntents(const std::vector<ActionRecord>& actions) override;
  // `outcome` must not be kPending (kInvalidInput); unknown id: kNotFound.
  // Part of the tick's batch: a crash before CommitTick leaves the action
  // pending, for OpenIntents to find.
  Status RecordActionOutcome(int64_t action_id, ActionOutcome outcome, const std::string& detail,
                             const std::vector<std::string>& instance_ids) override;
  // Pending actions in id order, including those of this tick's batch.
  Result<std::vector<ActionRow>> OpenIntents() override;

  // Records the node and its first price interval (offering.usd_per_hour from
  // launch_time). Recording an instance id again is a no-op: the daemon
  // re-discovers its nodes after a restart, and the first record wins.
  Status RecordNodeLaunch(const NodeLaunchRecord& n) override;
  // A new price interval from `at` (replacing one that starts at the same
  // second). Unknown instance: kNotFound; `at` before launch: kInvalidInput.
  Status RecordNodePrice(const std::string& instance_id, WallTime at, double usd_per_hour) override;
  // Unknown instance: kNotFound; end before launch: kInvalidInput. A node that
  // has ended already keeps its first end (no-op).
  Status RecordNodeEnd(const NodeEndRecord& e) override;
  // A second sample of the same offering (type, region, zone, capacity type)
  // at the same second replaces the first.
  Status RecordPriceSamples(const std::vector<PriceSample>& samples) override;
  // end >= start and 0 <= busy <= allocated, else kInvalidInput. A record
  // with the same instance, class, team, start and end as one already stored
  // is kInvalidInput (it would count the same GPU-seconds twice).
  Status ReplaceUsage(const std::vector<UsageRecord>& withdrawn, const std::vector<UsageRecord>& usage) override;
  // gpu_seconds finite and >= 0, else kInvalidInput (nothing recorded). A
  // second record with the same instance, time, class and team is
  // kInvalidInput (it would count the same loss twice).
  Status RecordLostWork(const std::vector<LostWorkRecord>& lost) override;
  // See AuditStore. A reservation with an empty id, a negative count or
  // price, or an end before its start: kInvalidInput, nothing recorded.
  Status RecordReservations(const std::vector<ReservationRecord>& listed, WallTime at) override;
  // See AuditStore. An empty owner, or a document that is not a JSON object:
  // kInvalidInput, nothing saved. LearnedState reads on the writer's
  // connection (a tick's unsaved document included).
  Status SaveLearnedState(const std::string& owner, WallTime at, const std::string& state_json) override;
  Result<std::optional<std::string>> LearnedState(const std::string& owner) override;
  // Through a reader (OpenReader): committed nodes only for a file; since >=
  // until: kInvalidInput.
  Result<std::vector<NodeLifecycle>> NodeLifecycles(WallTime since, WallTime until) override;
  Result<std::vector<AcceptedLaunch>> AcceptedLaunchesSince(WallTime since) override;
  // Through a reader, as NodeLifecycles; from > to: kInvalidInput.
  Result<std::vector<UsageRecord>> UsageOverlapping(WallTime from, WallTime to) override;

  // Retention (docs/audit-schema.md): deletes price samples older than `cut`;
  // nodes that ended before `cut`, with their price intervals, usage and
  // lost work; decisions older than `cut` with their actions, except decisions that
  // launched a node still kept or have an action still pending.
  Status PruneBefore(WallTime cut) override;

  // Retention in small steps, for a daemon between ticks (kInternal inside a
  // tick or with grouped ticks uncommitted).
  //
  // RecordMonthlyUsage stores the months' rollups and moves the rollup mark
  // to `rolled_up_before` (a month start, never backwards: kInvalidInput),
  // in one transaction. PruneBatch deletes, in its own short transaction, at
  // most `max_rows` rows (> 0) of one table that lie wholly before
  // min(cut, rollup mark) under the rules of PruneBefore: price samples,
  // then usage, then lost work, then nodes (their price intervals go with
  // them), then
  // decisions (with their actions). Returns how many rows it deleted; 0
  // means nothing is left to prune. Without a rollup mark nothing is pruned:
  // detail is never deleted before its month is rolled up.
  Status RecordMonthlyUsage(const std::vector<MonthlyUsageRow>& rows, WallTime rolled_up_before);
  Result<int64_t> PruneBatch(WallTime cut, int max_rows);

  // A reader on this database: its own read-only connection for a file (it
  // sees committed data only and never blocks this writer); for ":memory:"
  // it shares this connection (same thread only, and it sees the open tick).
  // The reader may outlive the store.
  Result<std::unique_ptr<AuditReader>> OpenReader() const;

  // "ok", or SQLite's list of problems (PRAGMA integrity_check). PostgreSQL
  // checks its own pages: "ok".
  Result<std::string> IntegrityCheck();
  // The database's random installation id (12 hex digits), made with it.
  Result<std::string> InstallationId();

  // The file path or URL it was opened with (RedactDatabaseUrl before logging).
  const std::string& path() const { return path_; }

  // Fencing for replicas that share one store (docs/audit-schema.md,
  // "Leadership"): records `claim` as the cluster's current term, unless a
  // later term (or another holder of the same term) has claimed it (kAuth,
  // "fenced"). From then on every transaction this store commits first
  // checks, holding the cluster's leadership row, that the term is still
  // the current one, and rolls back with kAuth "fenced" when a later leader
  // has claimed the store meanwhile: a replica that lost the Lease (a
  // partition, a long pause) writes nothing after its successor claimed
  // the store. Decisions record the term they were made under. Without a
  // claim, nothing is checked (one replica). Outside a tick.
  Status ClaimLeadership(const LeadershipClaim& claim);

 private:
  static Result<std::unique_ptr<SqliteAuditStore>> OpenPostgres(const std::string& url,
                                                                const SqliteAuditStoreOptions& options);
  SqliteAuditStore(std::string path, SqliteAuditStoreOptions options,
                   std::shared_ptr<store_internal::Connection> db);

  // Runs `body` atomically: a savepoint inside the tick's batch, else its own
  // transaction.
  template <typename Body>
  Status Atomically(const char* what, Body&& body);
  // Runs a one-statement `body`: in the tick's batch, or committed by itself.
  template <typename Body>
  Status Single(const char* what, Body&& body);
  // Atomically, for the store's code in other files.
  Status AtomicallyCall(const char* what, const std::function<Status()>& body);
  Status EnsureBatchOpen();
  // After a failed statement: notes a tick batch SQLite rolled back.
  void NoteFailure(const Error& error);
  // kTransient while the tick could not take the write lock (BeginTick).
  Status CheckTickAvailable(const char* what) const;
  Status RecordDecisionInput(int64_t decision_id, const DecisionRecord& d);
  // Inserts the intents in the open transaction; appends their ids.
  Status InsertIntents(const std::vector<ActionRecord>& actions, std::vector<int64_t>* ids);
  // The instances of `decision_id`'s nodes in `pool` that none of its launch
  // actions listed as a result (AcceptedLaunch::arrived_instance_ids).
  Result<std::vector<std::string>> ArrivedInstances(int64_t decision_id, const std::string& pool);
  // Begins the "unnamed" run at `t` if no run is current.
  Status EnsureRun(WallTime t);
  // In the open transaction: kAuth "fenced" when a later term than the
  // claimed one holds the cluster's leadership row (leadership.cc).
  Status CheckFence(std::string_view what);
  // Commits the open transaction when `s` is ok and the fence holds, else
  // rolls it back; the first failure.
  Status EndWrite(Status s, std::string_view commit_what, std::string_view rollback_what);

  std::string path_;
  SqliteAuditStoreOptions options_;
  std::shared_ptr<store_internal::Connection> db_;
  bool in_tick_ = false;
  bool batch_open_ = false;
  int ticks_in_batch_ = 0;  // committed by CommitTick, held back by group commit
  std::optional<Error> batch_lost_;
  std::optional<Error> tick_unavailable_;  // see BeginTick
  std::optional<int64_t> run_id_;          // the current run
  std::optional<LeadershipClaim> claim_;   // ClaimLeadership
};

}  // namespace gpuscaler
