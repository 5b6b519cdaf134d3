#include "gpuscaler/store/sqlite_audit_store.h"

#include <chrono>
#include <cmath>
#include <string>
#include <utility>

#include "gpuscaler/policy/loader.h"
#include "gpuscaler/store/audit_reader.h"
#include "gpuscaler/store/decision_inputs.h"
#include "rows.h"
#include "schema.h"
#include "sqlite_db.h"

namespace gpuscaler {

using store_internal::Connection;
using store_internal::Dialect;
using store_internal::IdsToJson;
using store_internal::Query;

namespace {

// Ends the open transaction: commits it when `s` is ok, and rolls back
// whatever is still open when `s` or the commit failed. Returns the first
// failure.
Status EndTransaction(Connection& db, Status s, std::string_view commit_what,
                      std::string_view rollback_what) {
  if (s.ok()) s = db.Run("COMMIT", commit_what);
  if (!s.ok() && !db.Autocommit()) (void)db.Run("ROLLBACK", rollback_what);
  return s;
}

Status CheckMoney(double usd, std::string_view field) {
  if (!std::isfinite(usd) || usd < 0) {
    return Error::InvalidInput(std::string(field) + " must be a finite, non-negative amount, got " +
                               std::to_string(usd));
  }
  return Status::Ok();
}

Status CheckOffering(const Offering& o, std::string_view what) {
  for (auto [value, field] : {std::pair{o.usd_per_hour, "usd_per_hour"},
                              std::pair{o.on_demand_usd_per_hour, "on_demand_usd_per_hour"},
                              std::pair{o.interruptions_per_hour, "interruptions_per_hour"}}) {
    if (Status s = CheckMoney(value, field); !s.ok()) return s.error().WithContext(what);
  }
  return Status::Ok();
}

struct NodeLife {
  WallTime launch{};
  std::optional<WallTime> end;
};

// The launch and end of a recorded node; kNotFound ("<what>: no such node").
Result<NodeLife> ReadNodeLife(Connection& db, const std::string& instance_id, const std::string& what) {
  Result<Query> q = db.Prepare("SELECT launch_time, end_time FROM nodes WHERE instance_id = ?1");
  if (!q) return q.error();
  Result<bool> found = q->Bind(1, instance_id).Step("looking up the node");
  if (!found) return found.error();
  if (!*found) return Error::NotFound(what + ": no such node");
  return NodeLife{q->Time(0), q->OptionalTime(1)};
}

}  // namespace

Status SqliteAuditStore::EndWrite(Status s, std::string_view commit_what, std::string_view rollback_what) {
  if (!s.ok() || !options_.on_commit) {
    if (s.ok()) s = CheckFence(commit_what);
    return EndTransaction(*db_, s, commit_what, rollback_what);
  }
  const auto started = std::chrono::steady_clock::now();
  s = CheckFence(commit_what);
  s = EndTransaction(*db_, s, commit_what, rollback_what);
  options_.on_commit(std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(), s);
  return s;
}

SqliteAuditStore::SqliteAuditStore(std::string path, SqliteAuditStoreOptions options,
                                   std::shared_ptr<Connection> db)
    : path_(std::move(path)), options_(options), db_(std::move(db)) {}

SqliteAuditStore::~SqliteAuditStore() {
  // An open tick is discarded, as a crash would discard it. The connection may
  // live on in an in-memory reader, so roll back here rather than at close.
  if (in_tick_) {
    if (!db_->Autocommit()) (void)db_->Exec("ROLLBACK", "discarding the open tick");
  } else {
    (void)Flush();
  }
}

Status SqliteAuditStore::Flush() {
  if (in_tick_) return Error::Internal("Flush inside a tick: call CommitTick first");
  ticks_in_batch_ = 0;
  if (!batch_open_) return Status::Ok();
  batch_open_ = false;
  return EndWrite(Status::Ok(), "committing the grouped ticks", "rolling back the grouped ticks");
}

Status SqliteAuditStore::EnsureBatchOpen() {
  if (!in_tick_ || batch_open_) return Status::Ok();
  if (tick_unavailable_) return *tick_unavailable_;
  if (Status s = db_->Run("BEGIN IMMEDIATE", "opening the tick's transaction"); !s.ok()) {
    if (s.error().category() == ErrorCategory::kTransient) tick_unavailable_ = s.error();
    return s;
  }
  batch_open_ = true;
  return Status::Ok();
}

Status SqliteAuditStore::CheckTickAvailable(const char* what) const {
  // Without this, each of the tick's records would wait busy_timeout for the
  // lock in turn: a tick of tens of records would stall for minutes.
  if (in_tick_ && tick_unavailable_) {
    return Error::Transient("audit store unavailable for the rest of this tick, not recorded: " +
                            tick_unavailable_->message())
        .WithContext(what);
  }
  return Status::Ok();
}

void SqliteAuditStore::NoteFailure(const Error& error) {
  if (batch_open_ && db_->Autocommit()) {
    batch_open_ = false;
    if (!batch_lost_) {
      batch_lost_ = Error::Transient("the tick's earlier records were rolled back after: " + error.message());
    }
  }
}

template <typename Body>
Status SqliteAuditStore::Atomically(const char* what, Body&& body) {
  if (Status u = CheckTickAvailable(what); !u.ok()) return u;
  Status s;
  if (in_tick_ || batch_open_) {  // batch_open_ outside a tick: ticks grouped, not yet committed
    s = EnsureBatchOpen();
    if (!s.ok()) return s.error().WithContext(what);
    s = db_->Run("SAVEPOINT record", what);
    if (s.ok()) s = body();
    if (s.ok()) s = db_->Run("RELEASE record", what);
    if (!s.ok()) {
      NoteFailure(s.error());
      if (!db_->Autocommit()) {
        (void)db_->Run("ROLLBACK TO record", what);
        (void)db_->Run("RELEASE record", what);
      }
    }
  } else {
    s = db_->Run("BEGIN IMMEDIATE", what);
    if (s.ok()) s = body();
    s = EndWrite(s, what, what);
  }
  if (!s.ok()) return s.error().WithContext(what);
  return s;
}

// One statement is atomic on its own: inside a tick it joins the batch,
// outside it commits by itself.
template <typename Body>
Status SqliteAuditStore::Single(const char* what, Body&& body) {
  if (Status u = CheckTickAvailable(what); !u.ok()) return u;
  if (Status s = EnsureBatchOpen(); !s.ok()) return s.error().WithContext(what);
  Status s = body();
  if (!s.ok()) {
    NoteFailure(s.error());
    return s.error().WithContext(what);
  }
  return s;
}

Status SqliteAuditStore::BeginTick() {
  if (in_tick_) return Error::Internal("BeginTick: a tick is already open");
  if (batch_open_) {  // grouped with the previous ticks
    in_tick_ = true;
    return Status::Ok();
  }
  batch_lost_.reset();
  tick_unavailable_.reset();
  if (Status s = db_->Run("BEGIN IMMEDIATE", "opening the tick's transaction"); !s.ok()) {
    if (s.error().category() == ErrorCategory::kTransient) {
      in_tick_ = true;
      tick_unavailable_ = s.error();
    }
    return s;
  }
  in_tick_ = true;
  batch_open_ = true;
  return Status::Ok();
}

Status SqliteAuditStore::CommitTick() {
  if (!in_tick_) return Error::Internal("CommitTick without BeginTick");
  in_tick_ = false;
  if (std::optional<Error> unavailable = std::exchange(tick_unavailable_, std::nullopt)) {
    return Error::Transient("audit store unavailable for the rest of this tick, its later records not written: " +
                            unavailable->message());
  }
  Status s;
  if (batch_open_) {
    if (++ticks_in_batch_ < options_.group_commit_ticks && !batch_lost_) return Status::Ok();
    ticks_in_batch_ = 0;
    batch_open_ = false;
    s = EndWrite(Status::Ok(), "committing the tick", "rolling back the tick");
  }
  std::optional<Error> lost = std::exchange(batch_lost_, std::nullopt);
  if (!s.ok()) return s;
  if (lost) return *lost;
  return Status::Ok();
}

// The decision's planner input (decision_inputs.h), in the decision's
// transaction: a policy text is written the first time its hash is seen.
Status SqliteAuditStore::RecordDecisionInput(int64_t decision_id, const DecisionRecord& d) {
  if (d.planner_policy == nullptr) {
    return Error::InvalidInput("recording decision " + std::to_string(decision_id) +
                               ": a planner snapshot without the planner's policy");
  }
  // The buffer lives on between ticks: a large snapshot compresses to tens
  // of KB, and a fresh allocation each tick costs page faults.
  thread_local std::string compressed_buffer;
  const std::string& snapshot = d.planner_snapshot_json;
  Result<std::string> compressed = CompressSnapshotText(snapshot, std::move(compressed_buffer));
  if (!compressed) return compressed.error().WithContext("recording decision " + std::to_string(decision_id));
  compressed_buffer = std::move(*compressed);
  const std::string& packed = compressed_buffer;
  // Keyed by the hash of the policy the planner was given, computed here:
  // a caller may have edited a loaded policy (a simulator baseline forces
  // on-demand) without updating its content_hash.
  const std::string policy_hash = PolicyContentHash(*d.planner_policy);
  return Single("recording a decision's input", [&]() -> Status {
    Result<Query> known = db_->Prepare("SELECT 1 FROM policies WHERE hash = ?1");
    if (!known) return known.error();
    Result<bool> row = known->Bind(1, policy_hash).Step("looking up a policy");
    if (!row) return row.error();
    if (!*row) {
      Status p = db_->Run("INSERT INTO policies (hash, name, policy_json) VALUES (?1, ?2, ?3)", "inserting a policy",
                          policy_hash, d.planner_policy->name, PolicyFileJson(*d.planner_policy));
      if (!p.ok()) return p;
    }
    Result<Query> q = db_->Prepare(
        "INSERT INTO decision_inputs (decision_id, snapshot_codec, snapshot_bytes, snapshot, policy_hash, "
        "planner_plan_json) VALUES (?1, 'zstd', ?2, ?3, ?4, ?5)");
    if (!q) return q.error();
    q->Bind(1, decision_id).Bind(2, static_cast<int64_t>(snapshot.size())).BindBlob(3, packed).Bind(4, policy_hash);
    if (d.planner_plan_json.empty()) {
      q->BindNull(5);
    } else {
      q->Bind(5, d.planner_plan_json);
    }
    return q->Run("inserting a decision's input");
  });
}

Result<int64_t> SqliteAuditStore::BeginRun(const RunRecord& run) {
  const std::string what = "starting run '" + run.name + "'";
  if (run.name.empty()) return Error::InvalidInput(what + ": the run needs a name");
  if (run.source != "daemon" && run.source != "sim" && run.source != "legacy") {
    return Error::InvalidInput(what + ": source '" + run.source + "' is not daemon, sim or legacy");
  }
  int64_t id = 0;
  Status s = Single("starting a run", [&]() -> Status {
    Result<int64_t> r = store_internal::InsertReturningId(
        *db_, "INSERT INTO runs (name, source, policy_hash, started) VALUES (?1, ?2, ?3, ?4) RETURNING id", run.name,
        run.source, run.policy_hash, run.started);
    if (!r) return r.error();
    id = *r;
    return Status::Ok();
  });
  if (!s.ok()) return s.error().WithContext(what);
  run_id_ = id;
  return id;
}

Status SqliteAuditStore::EndRun(WallTime end) {
  if (!run_id_) return Status::Ok();
  return Single("ending a run", [&]() -> Status {
    return db_->Run("UPDATE runs SET ended = CASE WHEN ?2 > started THEN ?2 ELSE started END WHERE id = ?1", "updating", *run_id_, end);
  });
}

Status SqliteAuditStore::EnsureRun(WallTime t) {
  if (run_id_) return Status::Ok();
  Result<int64_t> id = BeginRun(RunRecord{.name = "unnamed", .source = "daemon", .policy_hash = "", .started = t});
  return id.status();
}

Result<int64_t> SqliteAuditStore::RecordDecision(const DecisionRecord& d) {
  for (auto [value, field] : {std::pair{d.cost_before_usd_per_hour, "cost_before_usd_per_hour"},
                              std::pair{d.cost_after_usd_per_hour, "cost_after_usd_per_hour"},
                              std::pair{d.expected_interruption_usd_per_hour,
                                        "expected_interruption_usd_per_hour"}}) {
    if (Status s = CheckMoney(value, field); !s.ok()) return s.error().WithContext("recording a decision");
  }
  if (Status r = EnsureRun(d.time); !r.ok()) return r.error().WithContext("recording a decision");
  int64_t id = 0;
  Status s = Single("recording a decision", [&]() -> Status {
    Result<Query> q = db_->Prepare("INSERT INTO decisions (" GPUSCALER_DECISION_COLUMNS
                                   ", run_id, leader_term) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, "
                                   "?13, ?14, ?" GPUSCALER_RUN_ID_PARAM ", ?16) RETURNING id");
    if (!q) return q.error();
    Result<bool> row = store_internal::BindFields(*q, 1, d, store_internal::kDecisionFields)
                           .Bind(store_internal::kRunIdParam, run_id_)
                           .Bind(16, claim_ ? claim_->term : int64_t{0})
                           .Step("inserting");
    if (!row) return row.error();
    id = q->Int(0);
    return Status::Ok();
  });
  if (s.ok() && !d.planner_snapshot_json.empty()) s = RecordDecisionInput(id, d);
  if (!s.ok()) return s.error();
  return id;
}

Result<int64_t> SqliteAuditStore::RecordActionIntent(const ActionRecord& a) {
  Result<std::vector<int64_t>> ids = RecordActionIntents({a});
  if (!ids) return ids.error();
  return ids->front();
}

Result<std::vector<int64_t>> SqliteAuditStore::RecordActionIntents(const std::vector<ActionRecord>& actions) {
  for (const ActionRecord& a : actions) {
    const std::string what = "recording action intent '" + a.idempotency_token + "'";
    if (a.idempotency_token.empty()) return Error::InvalidInput(what + ": the idempotency token is empty");
    if (a.count < 0) return Error::InvalidInput(what + ": count " + std::to_string(a.count) + " < 0");
    if (Status s = CheckOffering(a.offering, what); !s.ok()) return s.error();
  }
  if (actions.empty()) return std::vector<int64_t>{};
  if (Status u = CheckTickAvailable("recording action intents"); !u.ok()) return u.error();
  std::vector<int64_t> ids;
  if (in_tick_ && options_.intent_sync == SqliteAuditStoreOptions::IntentSync::kWithTick) {
    Status s = Atomically("recording action intents", [&] { return InsertIntents(actions, &ids); });
    if (!s.ok()) return s.error();
    return ids;
  }

  // The tick's records so far go first, so the intent never lands without
  // the decision it belongs to. The batch reopens at the tick's next write.
  if (batch_open_) {
    batch_open_ = false;
    ticks_in_batch_ = 0;
    Status s = EndWrite(Status::Ok(), "committing the tick before an action intent", "rolling back the tick");
    if (!s.ok()) {
      if (!batch_lost_) batch_lost_ = s.error();
      return s.error();
    }
  }
  // PostgreSQL syncs every commit (synchronous_commit); SQLite is told to.
  const bool fsync = options_.intent_sync == SqliteAuditStoreOptions::IntentSync::kFsync &&
                     db_->dialect() == Dialect::kSqlite;
  if (fsync) {
    if (Status s = db_->Run("PRAGMA synchronous = FULL", "syncing action intents"); !s.ok()) {
      return s.error();
    }
  }
  Status s = db_->Run("BEGIN IMMEDIATE", "recording action intents");
  if (s.ok()) s = InsertIntents(actions, &ids);
  s = EndWrite(s, "committing action intents", "rolling back action intents");
  if (fsync) {
    Status restored = db_->Run("PRAGMA synchronous = NORMAL", "restoring synchronous=NORMAL");
    if (s.ok()) s = restored;
  }
  if (!s.ok()) return s.error();
  return ids;
}

Status SqliteAuditStore::InsertIntents(const std::vector<ActionRecord>& actions, std::vector<int64_t>* ids) {
  ids->reserve(actions.size());
  Status s;
  for (size_t i = 0; s.ok() && i < actions.size(); ++i) {
    const ActionRecord& a = actions[i];
    Result<Query> q = db_->Prepare("INSERT INTO actions (" GPUSCALER_ACTION_INTENT_COLUMNS
                                   ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14) RETURNING id");
    if (!q) {
      s = q.error();
      break;
    }
    Result<bool> inserted = store_internal::BindActionIntent(*q, a).Step("inserting");
    if (inserted) {
      ids->push_back(q->Int(0));
      continue;
    }
    s = inserted.error();
    const std::string what = "recording action intent '" + a.idempotency_token + "'";
    Result<Query> dup = db_->Prepare("SELECT id FROM actions WHERE idempotency_token = ?1");
    Result<bool> dup_found = dup ? dup->Bind(1, a.idempotency_token).Step("looking up the token") : false;
    if (dup_found.ok() && *dup_found) {
      s = Error::InvalidInput(what + ": the idempotency token is already recorded (action id " +
                              std::to_string(dup->Int(0)) + "); an action is recorded once");
    } else {
      s = s.error().WithContext(what);
      if (a.decision_id != 0 && s.error().category() == ErrorCategory::kNotFound) {
        s = Error::NotFound(what + ": decision id " + std::to_string(a.decision_id) + " is not recorded");
      }
    }
  }
  if (!s.ok()) ids->clear();
  return s;
}

Status SqliteAuditStore::RecordActionOutcome(int64_t action_id, ActionOutcome outcome, const std::string& detail,
                                             const std::vector<std::string>& instance_ids) {
  const std::string what = "recording the outcome of action " + std::to_string(action_id);
  if (outcome == ActionOutcome::kPending) return Error::InvalidInput(what + ": an outcome cannot be 'pending'");
  return Single("recording an action outcome", [&]() -> Status {
    if (Status s = db_->Run(
            "UPDATE actions SET outcome = ?2, detail = ?3, result_instance_ids_json = ?4 WHERE id = ?1",
            "updating", action_id, ToString(outcome), detail, IdsToJson(instance_ids));
        !s.ok()) {
      return s;
    }
    if (db_->Changes() == 0) return Error::NotFound(what + ": no such action");
    return Status::Ok();
  });
}

Result<std::vector<ActionRow>> SqliteAuditStore::OpenIntents() {
  Result<std::vector<ActionRow>> rows = store_internal::QueryOpenIntents(*db_);
  if (!rows) NoteFailure(rows.error());
  return rows;
}

Status SqliteAuditStore::RecordNodeLaunch(const NodeLaunchRecord& n) {
  const std::string what = "recording the launch of node '" + n.instance_id + "'";
  if (n.instance_id.empty()) return Error::InvalidInput(what + ": empty instance id");
  if (n.gpu_count < 0) return Error::InvalidInput(what + ": gpu_count < 0");
  if (Status s = CheckOffering(n.offering, what); !s.ok()) return s;
  if (Status s = EnsureRun(n.launch_time); !s.ok()) return s.error().WithContext(what);
  return Atomically("recording a node launch", [&]() -> Status {
    Result<Query> q = db_->Prepare("INSERT INTO nodes (" GPUSCALER_NODE_LAUNCH_COLUMNS
                                   ", reservation_id, run_id) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, "
                                   "?12, ?13, ?14, ?15, ?" GPUSCALER_RUN_ID_PARAM ") ON CONFLICT (instance_id) DO NOTHING");
    if (!q) return q.error();
    if (Status s = store_internal::BindNodeLaunch(*q, n).Bind(store_internal::kRunIdParam, run_id_).Run("inserting");
        !s.ok()) {
      if (n.decision_id != 0 && s.error().category() == ErrorCategory::kNotFound) {
        return Error::NotFound(what + ": decision id " + std::to_string(n.decision_id) + " is not recorded");
      }
      return s;
    }
    if (db_->Changes() == 0) return Status::Ok();  // known already: the first record wins
    return db_->Run("INSERT INTO node_prices (instance_id, from_time, usd_per_hour) VALUES (?1, ?2, ?3)",
                    "pricing", n.instance_id, n.launch_time, n.offering.usd_per_hour);
  });
}

Status SqliteAuditStore::RecordNodePrice(const std::string& instance_id, WallTime at, double usd_per_hour) {
  const std::string what = "recording a price of node '" + instance_id + "'";
  if (Status s = CheckMoney(usd_per_hour, "usd_per_hour"); !s.ok()) return s.error().WithContext(what);
  return Single("recording a node price", [&]() -> Status {
    Result<NodeLife> life = ReadNodeLife(*db_, instance_id, what);
    if (!life) return life.error();
    if (at < life->launch) {
      return Error::InvalidInput(what + ": " + FormatRfc3339(at) + " is before its launch at " +
                                 FormatRfc3339(life->launch));
    }
    if (life->end && at >= *life->end) {
      return Error::InvalidInput(what + ": " + FormatRfc3339(at) + " is not before its end at " +
                                 FormatRfc3339(*life->end));
    }
    return db_->Run(
        "INSERT INTO node_prices (instance_id, from_time, usd_per_hour) VALUES (?1, ?2, ?3) "
        "ON CONFLICT (instance_id, from_time) DO UPDATE SET usd_per_hour = excluded.usd_per_hour",
        "inserting", instance_id, at, usd_per_hour);
  });
}

Status SqliteAuditStore::RecordNodeEnd(const NodeEndRecord& e) {
  const std::string what = "recording the end of node '" + e.instance_id + "'";
  return Single("recording a node end", [&]() -> Status {
    if (Status s = db_->Run("UPDATE nodes SET end_time = ?2, cause = ?3 "
                            "WHERE instance_id = ?1 AND end_time IS NULL AND launch_time <= ?2",
                            "updating", e.instance_id, e.end_time, e.cause);
        !s.ok()) {
      return s;
    }
    if (db_->Changes() == 1) return Status::Ok();
    Result<NodeLife> life = ReadNodeLife(*db_, e.instance_id, what);
    if (!life) return life.error();
    if (life->end) return Status::Ok();  // ended already: the first end wins
    return Error::InvalidInput(what + ": " + FormatRfc3339(e.end_time) + " is before its launch at " +
                               FormatRfc3339(life->launch));
  });
}

Status SqliteAuditStore::RecordPriceSamples(const std::vector<PriceSample>& samples) {
  for (const PriceSample& p : samples) {
    if (Status s = CheckOffering(p.offering, "recording a price sample of " + p.offering.Key()); !s.ok()) return s;
  }
  if (samples.empty()) return Status::Ok();
  return Atomically("recording price samples", [&]() -> Status {
    for (const PriceSample& p : samples) {
      Result<Query> q = db_->Prepare(
          "INSERT INTO price_samples (" GPUSCALER_PRICE_SAMPLE_COLUMNS
          ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) "
          "ON CONFLICT (time, instance_type, region, zone, capacity_type) DO UPDATE SET "
          "usd_per_hour = excluded.usd_per_hour, on_demand_usd_per_hour = excluded.on_demand_usd_per_hour, "
          "interruptions_per_hour = excluded.interruptions_per_hour, available = excluded.available");
      if (!q) return q.error();
      if (Status s = store_internal::BindPriceSample(*q, p).Run("inserting"); !s.ok()) return s;
    }
    return Status::Ok();
  });
}

Status SqliteAuditStore::ReplaceUsage(const std::vector<UsageRecord>& withdrawn,
                                      const std::vector<UsageRecord>& usage) {
  for (const UsageRecord& u : usage) {
    const std::string what = "recording usage of node '" + u.instance_id + "' by '" + u.workload_class + "'";
    if (u.end < u.start) return Error::InvalidInput(what + ": the interval ends before it starts");
    const double busy = u.gpu_seconds_busy.value_or(0);
    if (!std::isfinite(u.gpu_seconds_allocated) || u.gpu_seconds_allocated < 0 || !std::isfinite(busy) ||
        busy < 0 || busy > u.gpu_seconds_allocated) {
      return Error::InvalidInput(what + ": need 0 <= gpu_seconds_busy (" + std::to_string(busy) +
                                 ") <= gpu_seconds_allocated (" + std::to_string(u.gpu_seconds_allocated) + ")");
    }
  }
  if (usage.empty() && withdrawn.empty()) return Status::Ok();
  if (!usage.empty()) {
    if (Status s = EnsureRun(usage.front().start); !s.ok()) return s.error().WithContext("recording usage");
  }
  return Atomically("recording usage", [&]() -> Status {
    for (const UsageRecord& u : withdrawn) {
      Status s = db_->Run(
          "DELETE FROM usage WHERE end_time = ?1 AND instance_id = ?2 AND workload_class = ?3 AND team = ?4 "
          "AND start_time = ?5",
          "withdrawing the open usage row of node '" + u.instance_id + "'", ToUnixSeconds(u.end), u.instance_id,
          u.workload_class, u.team, ToUnixSeconds(u.start));
      if (!s.ok()) return s;
    }
    for (const UsageRecord& u : usage) {
      Status s = store_internal::InsertWithRunId(*db_,
                                                 "INSERT INTO usage (" GPUSCALER_USAGE_COLUMNS
                                                 ", run_id) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?" GPUSCALER_RUN_ID_PARAM
                                                 ")",
                                                 u, store_internal::kUsageFields, run_id_);
      if (!s.ok()) return s;
    }
    return Status::Ok();
  });
}

Status SqliteAuditStore::AtomicallyCall(const char* what, const std::function<Status()>& body) {
  return Atomically(what, body);
}

}  // namespace gpuscaler
