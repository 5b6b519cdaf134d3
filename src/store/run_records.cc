// What a run records for reports besides its decisions, nodes and usage:
// where it buys (RunCloud) and the work its interruptions lost
// (LostWorkRecord). The writer's side; the reader's is AuditReader::Runs and
// AuditReader::LostWork.
#include <cmath>
#include <string>

#include "gpuscaler/store/sqlite_audit_store.h"
#include "rows.h"
#include "sqlite_db.h"

namespace gpuscaler {

using store_internal::Query;

Status SqliteAuditStore::RecordRunCloud(const RunCloud& cloud) {
  if (!run_id_) return Status::Ok();
  return AtomicallyCall("recording the run's cloud", [&]() -> Status {
    return db_->Run(
        "UPDATE runs SET cloud = nullif(?2, ''), instance_tags_json = nullif(?3, ''), pool_tags_json = nullif(?4, '') "
        "WHERE id = ?1",
        "updating", *run_id_, cloud.name, store_internal::TagsToJson(cloud.instance_tags),
        store_internal::PoolTagsToJson(cloud.pool_tags));
  });
}

Status SqliteAuditStore::RecordLostWork(const std::vector<LostWorkRecord>& lost) {
  for (const LostWorkRecord& l : lost) {
    if (!std::isfinite(l.gpu_seconds) || l.gpu_seconds < 0) {
      return Error::InvalidInput("recording work lost on node '" + l.instance_id + "' by '" + l.workload_class +
                                 "': gpu_seconds must be finite and >= 0, got " + std::to_string(l.gpu_seconds));
    }
  }
  if (lost.empty()) return Status::Ok();
  if (Status s = EnsureRun(lost.front().time); !s.ok()) return s.error().WithContext("recording lost work");
  return AtomicallyCall("recording lost work", [&]() -> Status {
    for (const LostWorkRecord& l : lost) {
      Status s = store_internal::InsertWithRunId(*db_,
                                                 "INSERT INTO lost_work (" GPUSCALER_LOST_WORK_COLUMNS
                                                 ", run_id) VALUES (?1, ?2, ?3, ?4, ?5, ?" GPUSCALER_RUN_ID_PARAM ")",
                                                 l, store_internal::kLostWorkFields, run_id_);
      if (!s.ok()) return s;
    }
    return Status::Ok();
  });
}

}  // namespace gpuscaler
