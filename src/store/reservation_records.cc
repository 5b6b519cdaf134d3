// The writer's side of the reservations table: each run's listing of
// reservations, one row per version (AuditStore::RecordReservations). The
// reader's side is AuditReader::Reservations.
#include <cmath>
#include <map>
#include <string>
#include <utility>

#include "gpuscaler/store/sqlite_audit_store.h"
#include "rows.h"
#include "sqlite_db.h"

namespace gpuscaler {

using store_internal::Query;

namespace {

Status CheckReservation(const Reservation& r) {
  const std::string what = "recording reservation '" + r.id + "'";
  if (r.id.empty()) return Error::InvalidInput("recording a reservation: empty id");
  if (r.total_count < 0) return Error::InvalidInput(what + ": total_count < 0");
  for (auto [value, field] :
       {std::pair{r.usd_per_hour, "usd_per_hour"}, std::pair{r.upfront_usd, "upfront_usd"}}) {
    if (!std::isfinite(value) || value < 0) {
      return Error::InvalidInput(what + ": " + field + " must be a finite, non-negative amount");
    }
  }
  if (r.end && *r.end < r.start) return Error::InvalidInput(what + ": it ends before it starts");
  return Status::Ok();
}

// What is compared and stored of a listed reservation: all but its free
// slots.
ReservationRecord Recorded(ReservationRecord r) {
  r.reservation.available_count = 0;
  return r;
}

}  // namespace

Status SqliteAuditStore::RecordReservations(const std::vector<ReservationRecord>& listed, WallTime at) {
  std::map<std::string, ReservationRecord> now;
  for (const ReservationRecord& r : listed) {
    if (Status s = CheckReservation(r.reservation); !s.ok()) return s;
    if (!now.emplace(r.reservation.id, Recorded(r)).second) {
      return Error::InvalidInput("recording reservations: '" + r.reservation.id + "' is listed twice");
    }
  }
  if (!run_id_ && listed.empty()) return Status::Ok();
  if (Status s = EnsureRun(at); !s.ok()) return s.error().WithContext("recording reservations");
  return AtomicallyCall("recording reservations", [&]() -> Status {
    Result<std::vector<ReservationRow>> open = store_internal::Select<ReservationRow>(
        *db_,
        "SELECT " GPUSCALER_RESERVATION_COLUMNS " FROM reservations WHERE run_id = ?1 AND last_seen IS NULL",
        "reading the listed reservations", store_internal::ReadReservationRow, *run_id_);
    if (!open) return open.error();
    for (const ReservationRow& row : *open) {
      auto it = now.find(row.record.reservation.id);
      if (it != now.end() && it->second == row.record) {
        now.erase(it);  // unchanged
        continue;
      }
      // Changed or gone: this version ends here (a new one starts below).
      Status s = db_->Run(
          "UPDATE reservations SET last_seen = CASE WHEN ?4 > first_seen THEN ?4 ELSE first_seen END "
          "WHERE run_id = ?1 AND id = ?2 AND first_seen = ?3",
          "ending a reservation's record", *run_id_, row.record.reservation.id, row.first_seen, at);
      if (!s.ok()) return s;
    }
    for (const auto& [id, record] : now) {
      Result<Query> q =
          db_->Prepare("INSERT INTO reservations (" GPUSCALER_RESERVATION_COLUMNS
                       ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15) "
                       "ON CONFLICT (run_id, id, first_seen) DO UPDATE SET last_seen = NULL, instance_type = "
                       "excluded.instance_type, "
                       "region = excluded.region, zone = excluded.zone, kind = excluded.kind, total_count = "
                       "excluded.total_count, "
                       "start_time = excluded.start_time, end_time = excluded.end_time, usd_per_hour = "
                       "excluded.usd_per_hour, "
                       "upfront_usd = excluded.upfront_usd, tags_json = excluded.tags_json, pools_json = "
                       "excluded.pools_json");
      if (!q) return q.error();
      if (Status s = store_internal::BindReservation(*q, *run_id_, record, at).Run("inserting a reservation");
          !s.ok()) {
        return s.error().WithContext("recording reservation '" + id + "'");
      }
    }
    return Status::Ok();
  });
}

}  // namespace gpuscaler
