// Retention of the audit store with the reports' numbers kept: before the
// detail rows of a month are pruned, the month's cost facts (report rules:
// billing, attribution, idle) are rolled up per run by class, team, pool and
// capacity type into monthly_usage; reports read those months from the
// rollup (AddRolledUpMonths).
//
// Not thread-safe: RetentionPruner runs on the store's writer thread (the
// daemon's loop, after a tick).
#pragma once

#include <chrono>
#include <vector>

#include "gpuscaler/model/time.h"
#include "gpuscaler/report/cost_model.h"
#include "gpuscaler/status.h"
#include "gpuscaler/store/audit_store.h"

namespace gpuscaler {
class AuditReader;
class SqliteAuditStore;
}  // namespace gpuscaler

namespace gpuscaler::report {

// The rollup of the month starting at `month_start`, for every run of
// `reader` (its run selection is reset to all runs).
Result<std::vector<MonthlyUsageRow>> RollUpMonth(AuditReader& reader, WallTime month_start);

// Adds the rolled-up months in [from, to) of the reader's selected run(s)
// to `facts` as lines of synthetic nodes "rolled-up:<pool>/<capacity type>"
// dated to each month's first day, with a warning naming them.
Status AddRolledUpMonths(AuditReader& reader, WallTime from, WallTime to, CostFacts* facts);

class RetentionPruner {
 public:
  // Keeps `retention` of detail (whole months: the cut is the start of the
  // month holding now - retention); prunes at most `batch_rows` per step.
  RetentionPruner(SqliteAuditStore& store, Seconds retention, int batch_rows = 500)
      : store_(store), retention_(retention), batch_rows_(batch_rows) {}

  // One bounded step, between ticks: rolls up one month before the cut if
  // one is missing, else prunes one batch. Returns the rows pruned (0 when
  // the step rolled up a month or had nothing to do). Once idle it does
  // nothing (not even a read) until the cut moves to the next month.
  Result<int64_t> Step(WallTime now);
  // True once the last step found nothing to roll up or prune.
  bool idle() const { return idle_; }

 private:
  SqliteAuditStore& store_;
  Seconds retention_;
  int batch_rows_;
  bool idle_ = false;
  WallTime idle_cut_{};  // the cut at which it went idle
};

}  // namespace gpuscaler::report
