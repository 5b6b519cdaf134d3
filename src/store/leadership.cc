// Leadership fencing for replicas sharing one store
// (SqliteAuditStore::ClaimLeadership).
#include <string>

#include "db.h"
#include "gpuscaler/store/sqlite_audit_store.h"

namespace gpuscaler {

using store_internal::Dialect;
using store_internal::Query;

namespace {

struct TermRow {
  int64_t term = 0;
  std::string holder;
  WallTime since{};
};

// The cluster's leadership row, locked until the transaction ends: a claim
// by a later leader waits for the transaction that holds it, and a
// transaction that comes after the claim reads the new term. (SQLite: the
// write lock every write transaction takes at BEGIN IMMEDIATE does this.)
Result<std::optional<TermRow>> ReadTerm(store_internal::Connection& db, const std::string& cluster,
                                        std::string_view what) {
  const bool postgres = db.dialect() == Dialect::kPostgres;
  if (postgres) {
    // Held while this process is stopped between the read and its commit,
    // the row lock would keep a successor from claiming the store for as
    // long: the server ends such a session after five idle seconds (its
    // commit then fails), so a takeover waits at most that.
    if (Status s = db.Exec("SET LOCAL idle_in_transaction_session_timeout = '5s'", what); !s.ok()) return s.error();
  }
  Result<Query> q = db.Prepare(postgres ? "SELECT term, holder, since FROM leadership WHERE cluster = ?1 FOR UPDATE"
                                        : "SELECT term, holder, since FROM leadership WHERE cluster = ?1");
  if (!q) return q.error();
  Result<bool> row = q->Bind(1, cluster).Step(what);
  if (!row) return row.error();
  if (!*row) return std::optional<TermRow>();
  return std::optional<TermRow>(TermRow{q->Int(0), q->Text(1), q->Time(2)});
}

Error Fenced(const LeadershipClaim& mine, const TermRow& current) {
  return Error::Auth("fenced: leadership term " + std::to_string(mine.term) + " (" + mine.holder +
                     ") of cluster '" + mine.cluster + "' has ended; term " + std::to_string(current.term) + " (" +
                     current.holder + ") holds the audit store since " + FormatRfc3339(current.since));
}

bool Supersedes(const TermRow& current, const LeadershipClaim& mine) {
  return current.term > mine.term || (current.term == mine.term && current.holder != mine.holder);
}

// PostgreSQL: a predecessor stopped in the middle of a tick holds the row
// locks of what that tick wrote so far, for as long as it is stopped, and
// every write of the new leader to those rows would wait. Each holder's
// store connection carries its identity as application_name; the new
// holder ends the sessions of every other holder of this cluster's
// leadership (the server rolls their transactions back and frees their
// locks; such a process finds its connection gone, and is fenced when it
// reconnects). Sessions of the same database role may be ended without
// further privileges.
Status EndPredecessorsSessions(store_internal::Connection& db, const LeadershipClaim& claim,
                               const std::string& what) {
  const std::string name = "gpuscaler:" + claim.cluster + ":" + claim.holder;
  Result<Query> set = db.Prepare("SELECT set_config('application_name', ?1, false)");
  if (!set) return set.error().WithContext(what);
  if (Result<bool> r = set->Bind(1, name).Step(what); !r) return r.error().WithContext(what);
  Result<Query> end = db.Prepare(
      "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = current_database() "
      "AND left(application_name, length(?1)) = ?1 AND application_name <> ?2 AND pid <> pg_backend_pid()");
  if (!end) return end.error().WithContext(what);
  Result<bool> ended = end->Bind(1, "gpuscaler:" + claim.cluster + ":").Bind(2, name).Step(what);
  if (!ended) return ended.error().WithContext(what);
  return Status::Ok();
}

}  // namespace

Status SqliteAuditStore::CheckFence(std::string_view what) {
  if (!claim_) return Status::Ok();
  Result<std::optional<TermRow>> current = ReadTerm(*db_, claim_->cluster, what);
  if (!current) return current.error();
  if (*current && Supersedes(**current, *claim_)) return Fenced(*claim_, **current);
  return Status::Ok();
}

Status SqliteAuditStore::ClaimLeadership(const LeadershipClaim& claim) {
  const std::string what = "claiming leadership term " + std::to_string(claim.term) + " of '" + claim.cluster + "'";
  if (in_tick_) return Error::Internal(what + " inside a tick");
  if (claim.cluster.empty() || claim.term <= 0 || claim.holder.empty()) {
    return Error::InvalidInput(what + ": needs a cluster, a term > 0 and a holder");
  }
  if (Status f = Flush(); !f.ok()) return f.error().WithContext(what);
  Status s = db_->Run("BEGIN IMMEDIATE", what);
  if (s.ok()) {
    Result<std::optional<TermRow>> current = ReadTerm(*db_, claim.cluster, what);
    if (!current) {
      s = current.error();
    } else if (*current && Supersedes(**current, claim)) {
      s = Fenced(claim, **current);
    } else {
      s = db_->Run(
          "INSERT INTO leadership (cluster, term, holder, since) VALUES (?1, ?2, ?3, ?4) "
          "ON CONFLICT (cluster) DO UPDATE SET term = excluded.term, holder = excluded.holder, since = excluded.since",
          what, claim.cluster, claim.term, claim.holder, claim.at);
    }
  }
  if (s.ok()) s = db_->Run("COMMIT", what);
  if (!s.ok()) {
    if (!db_->Autocommit()) (void)db_->Run("ROLLBACK", what);
    return s.error().WithContext(what);
  }
  claim_ = claim;
  if (db_->dialect() == Dialect::kPostgres) return EndPredecessorsSessions(*db_, claim, what);
  return Status::Ok();
}

}  // namespace gpuscaler
