#include "gpuscaler/controller/usage_meter.h"

#include <algorithm>
#include <chrono>

namespace gpuscaler {

UsageMeter::UsageMeter(AuditStore* store, const Catalog& catalog, Seconds interval)
    : store_(store), catalog_(catalog), interval_(interval) {}

void UsageMeter::AddNode(const std::string& instance_id, WallTime now) {
  Meter& m = meters_[instance_id];
  m = Meter{};
  m.start = now;
}

void UsageMeter::SetRunning(const std::string& instance_id, const std::vector<DemandUnit>& running) {
  Meter& m = meters_[instance_id];
  m.gpus_by_class.clear();
  for (const DemandUnit& u : running) m.gpus_by_class[u.workload_class] += GpuShare(u);
}

Status UsageMeter::Accumulate(WallTime now, const std::vector<Node>& nodes) {
  const WallTime month = MonthStart(now);
  if (month != month_) {
    month_ = month;
    month_to_date_usd_ = 0;
    by_pool_.clear();
  }
  if (!last_) {
    last_ = now;
    return Status::Ok();
  }
  const double dt = std::chrono::duration<double>(now - *last_).count();
  last_ = now;
  if (dt <= 0) return Status::Ok();
  Status first_error = Status::Ok();
  for (const Node& node : nodes) {
    const double spent = node.offering.usd_per_hour * dt / 3600.0;
    month_to_date_usd_ += spent;
    by_pool_[node.pool] += spent;
    if (store_ == nullptr) continue;
    Meter& m = meters_[node.instance_id];
    for (const auto& [cls, gpus] : m.gpus_by_class) m.gpu_seconds[cls] += gpus * dt;
    if (now - m.start >= interval_) {
      Status s = FlushNode(node, m, now);
      if (!s.ok() && first_error.ok()) first_error = std::move(s);
    }
  }
  return first_error;
}

WallTime UsageMeter::MonthStart(WallTime t) {
  const std::chrono::year_month_day ymd{std::chrono::floor<std::chrono::days>(t)};
  return std::chrono::time_point_cast<Seconds>(std::chrono::sys_days(ymd.year() / ymd.month() / 1));
}

WallTime UsageMeter::NextMonthStart(WallTime t) {
  const std::chrono::year_month_day ymd{std::chrono::floor<std::chrono::days>(t)};
  return std::chrono::time_point_cast<Seconds>(
      std::chrono::sys_days((ymd.year() / ymd.month() / 1) + std::chrono::months(1)));
}

void UsageMeter::RestoreMonth(const std::vector<NodeLifecycle>& history, WallTime now) {
  month_ = MonthStart(now);
  month_to_date_usd_ = 0;
  by_pool_.clear();
  const WallTime start = MonthStart(now);
  for (const NodeLifecycle& n : history) {
    const double usd = n.SpendUsd(start, now);
    if (usd <= 0) continue;
    month_to_date_usd_ += usd;
    by_pool_[n.pool] += usd;
  }
}

Status UsageMeter::EndNode(const Node& node, WallTime end) {
  auto it = meters_.find(node.instance_id);
  if (it == meters_.end()) return Status::Ok();
  Status s = store_ != nullptr ? FlushNode(node, it->second, std::max(end, it->second.start)) : Status::Ok();
  meters_.erase(it);
  return s;
}

Status UsageMeter::Flush(WallTime now, const std::vector<Node>& nodes) {
  for (const Node& node : nodes) {
    Status s = FlushNode(node, meters_[node.instance_id], now);
    if (!s.ok()) return s;
  }
  return Status::Ok();
}

Status UsageMeter::FlushNode(const Node& node, Meter& m, WallTime now) {
  std::vector<UsageRecord> rows;
  int gpu_count = 0;
  if (const InstanceType* t = catalog_.FindInstanceType(node.offering.instance_type))
    gpu_count = t->gpu_count;
  const double cap = gpu_count * std::chrono::duration<double>(now - m.start).count();
  for (const auto& [cls, seconds] : m.gpu_seconds) {
    if (seconds <= 0 || now <= m.start) continue;
    const double allocated = std::min(seconds, cap);
    rows.push_back({node.instance_id, cls, "", m.start, now, allocated, std::nullopt});
  }
  m.gpu_seconds.clear();
  m.start = now;
  if (rows.empty() || store_ == nullptr) return Status::Ok();
  return store_->RecordUsage(rows);
}

}  // namespace gpuscaler
