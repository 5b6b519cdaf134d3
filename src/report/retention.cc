#include "gpuscaler/report/retention.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "gpuscaler/store/audit_reader.h"
#include "gpuscaler/store/sqlite_audit_store.h"

namespace gpuscaler::report {
namespace {

WallTime MonthStart(WallTime t) { return PeriodStart(t, Period::kMonth); }
WallTime NextMonth(WallTime t) { return NextPeriodStart(t, Period::kMonth); }

void AddTo(MonthlyUsageRow& row, const Metrics& m) {
  row.cost_usd += m.cost_usd;
  row.idle_usd += m.idle_usd;
  row.on_demand_usd += m.on_demand_usd;
  row.gpu_seconds_paid += m.gpu_seconds_paid;
  row.gpu_seconds_allocated += m.gpu_seconds_allocated;
  row.gpu_seconds_busy += m.gpu_seconds_busy;
  row.gpu_seconds_busy_measured += m.gpu_seconds_busy_measured;
}

Metrics MetricsOf(const MonthlyUsageRow& row) {
  Metrics m;
  m.cost_usd = row.cost_usd;
  m.idle_usd = row.idle_usd;
  m.on_demand_usd = row.on_demand_usd;
  m.gpu_seconds_paid = row.gpu_seconds_paid;
  m.gpu_seconds_allocated = row.gpu_seconds_allocated;
  m.gpu_seconds_busy = row.gpu_seconds_busy;
  m.gpu_seconds_busy_measured = row.gpu_seconds_busy_measured;
  return m;
}

}  // namespace

Result<std::vector<MonthlyUsageRow>> RollUpMonth(AuditReader& reader, WallTime month_start) {
  Result<std::vector<RunRow>> runs = reader.Runs();
  if (!runs) return runs.error();
  std::vector<MonthlyUsageRow> out;
  const WallTime month_end = NextMonth(month_start);
  for (const RunRow& run : *runs) {
    reader.SelectRun(run.id);
    ReportQuery query;
    query.from = month_start;
    query.to = month_end;
    Result<CostFacts> facts = BuildCostFacts(reader, query);
    if (!facts) {
      reader.SelectRun(std::nullopt);
      return facts.error().WithContext("rolling up " + FormatRfc3339(month_start) + " of run " +
                                       std::to_string(run.id));
    }
    std::map<std::tuple<std::string, std::string, std::string, std::string>, MonthlyUsageRow> rows;
    for (const CostLine& line : facts->lines) {
      const NodeFact& node = facts->nodes[static_cast<size_t>(line.node)];
      const bool idle = line.allocation < 0;
      const Allocation* a = idle ? nullptr : &facts->allocations[static_cast<size_t>(line.allocation)];
      const std::string cls = idle ? std::string(kIdle) : a->workload_class;
      const std::string team = idle ? std::string(kIdle) : a->team;
      const std::string capacity(ToString(node.capacity_type));
      MonthlyUsageRow& row = rows[{cls, team, node.pool, capacity}];
      row.run_id = run.id;
      row.month_start = month_start;
      row.workload_class = cls;
      row.team = team;
      row.pool = node.pool;
      row.capacity_type = capacity;
      AddTo(row, line.m);
    }
    for (auto& [key, row] : rows) out.push_back(std::move(row));
  }
  reader.SelectRun(std::nullopt);
  return out;
}

Status AddRolledUpMonths(AuditReader& reader, WallTime from, WallTime to, CostFacts* facts) {
  Result<std::vector<MonthlyUsageRow>> rows = reader.MonthlyUsage(MonthStart(from), to);
  if (!rows) return rows.error();
  if (rows->empty()) return Status::Ok();
  std::map<std::pair<std::string, std::string>, int32_t> node_of;
  std::map<std::pair<std::string, std::string>, int32_t> allocation_of;
  for (size_t i = 0; i < facts->allocations.size(); ++i) {
    allocation_of[{facts->allocations[i].workload_class, facts->allocations[i].team}] = static_cast<int32_t>(i);
  }
  for (const MonthlyUsageRow& row : *rows) {
    auto [n, new_node] = node_of.try_emplace({row.pool, row.capacity_type}, static_cast<int32_t>(facts->nodes.size()));
    if (new_node) {
      NodeFact node;
      node.instance_id = "rolled-up:" + row.pool + "/" + row.capacity_type;
      node.pool = row.pool;
      node.capacity_type = ParseCapacityType(row.capacity_type).value_or(CapacityType::kOnDemand);
      node.reason = "monthly rollup (retention pruned the detail)";
      facts->nodes.push_back(std::move(node));
    }
    int32_t allocation = -1;
    if (row.workload_class != kIdle) {
      auto [a, new_allocation] =
          allocation_of.try_emplace({row.workload_class, row.team}, static_cast<int32_t>(facts->allocations.size()));
      if (new_allocation) facts->allocations.push_back({row.workload_class, row.team});
      allocation = a->second;
    }
    const Metrics m = MetricsOf(row);
    facts->lines.push_back(CostLine{ToUnixSeconds(row.month_start) / 86400, n->second, allocation, m});
    facts->nodes[static_cast<size_t>(n->second)].m.Add(m);
    facts->total.Add(m);
  }
  facts->warnings.push_back("months before " + FormatRfc3339(to) +
                            " come from monthly rollups (retention pruned their detail): whole months, dated to "
                            "their first day, with no per-node or FOCUS rows");
  return Status::Ok();
}

Result<int64_t> RetentionPruner::Step(WallTime now) {
  const WallTime cut = MonthStart(now - retention_);
  if (idle_ && cut == idle_cut_) return int64_t{0};
  Result<std::unique_ptr<AuditReader>> reader = store_.OpenReader();
  if (!reader) return reader.error();
  Result<std::optional<WallTime>> mark = (*reader)->RolledUpBefore();
  if (!mark) return mark.error();
  if (!*mark || **mark < cut) {
    // The first month to roll up: after the mark, else the first run's.
    WallTime month = *mark ? **mark : cut;
    if (!*mark) {
      Result<std::vector<RunRow>> runs = (*reader)->Runs();
      if (!runs) return runs.error();
      for (const RunRow& r : *runs) month = std::min(month, MonthStart(r.run.started));
    }
    std::vector<MonthlyUsageRow> rows;
    if (month < cut) {
      Result<std::vector<MonthlyUsageRow>> rolled = RollUpMonth(**reader, month);
      if (!rolled) return rolled.error();
      rows = std::move(rolled).value();
    }
    reader->reset();
    idle_ = false;
    Status s = store_.RecordMonthlyUsage(rows, month < cut ? NextMonth(month) : cut);
    if (!s.ok()) return s.error();
    return int64_t{0};
  }
  reader->reset();
  Result<int64_t> pruned = store_.PruneBatch(cut, batch_rows_);
  if (pruned) {
    idle_ = *pruned == 0;
    idle_cut_ = cut;
  }
  return pruned;
}

}  // namespace gpuscaler::report
