#include "gpuscaler/controller/usage_meter.h"

#include <algorithm>
#include <chrono>
#include <unordered_map>

namespace gpuscaler {

UsageMeter::UsageMeter(AuditStore* store, const Catalog& catalog, Seconds interval)
    : store_(store), catalog_(catalog), interval_(interval) {}

void UsageMeter::SetClassTeams(const Policy& policy) {
  class_teams_.clear();
  for (const WorkloadClassPolicy& c : policy.classes) {
    if (!c.team.empty()) class_teams_[c.name] = c.team;
  }
}

void UsageMeter::AddNode(const std::string& instance_id, WallTime now) {
  Meter& m = meters_[instance_id];
  m = Meter{};
  m.start = now;
}

void UsageMeter::SetRunning(const std::string& instance_id, const std::vector<DemandUnit>& running) {
  Meter& m = meters_[instance_id];
  m.gpus_by_class.clear();
  for (const DemandUnit& u : running) m.gpus_by_class[{u.workload_class, TeamOf(u.workload_class, u.team)}] += GpuShare(u);
}

std::string UsageMeter::TeamOf(const std::string& workload_class, const std::string& unit_team) const {
  if (!unit_team.empty()) return unit_team;
  auto it = class_teams_.find(workload_class);
  return it != class_teams_.end() ? it->second : std::string();
}

Status UsageMeter::AddHeld(const HeldGpuSeconds& held) {
  held_measured_ = true;
  if (store_ == nullptr) return Status::Ok();
  std::string unmetered;
  for (const auto& [instance_id, by_unit] : held) {
    auto it = meters_.find(instance_id);
    if (it == meters_.end()) {
      unmetered += unmetered.empty() ? instance_id : ", " + instance_id;
      continue;
    }
    for (const auto& [key, gpu_seconds] : by_unit) {
      it->second.gpu_seconds[{key.first, TeamOf(key.first, key.second)}] += gpu_seconds;
    }
  }
  if (!unmetered.empty()) {
    return Error::Internal("usage: GPU time held on instances the usage meter does not meter: " + unmetered);
  }
  return Status::Ok();
}

void UsageMeter::SetUtilization(const std::string& instance_id, std::optional<double> utilization) {
  if (utilization) utilization = std::clamp(*utilization, 0.0, 1.0);
  meters_[instance_id].utilization = utilization;
}

int UsageMeter::GpuCount(const Offering& offering) const {
  const InstanceType* t = catalog_.FindInstanceType(offering.instance_type);
  return t != nullptr ? t->gpu_count : 0;
}

Status UsageMeter::Accumulate(WallTime now, const std::vector<Node>& nodes) {
  const WallTime month = MonthStart(now);
  if (month != month_) {
    month_ = month;
    month_to_date_usd_ = 0;
    by_pool_.clear();
    by_team_.clear();
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
    Meter& m = meters_[node.instance_id];
    if (const int gpus = GpuCount(node.offering); gpus > 0) {
      double held = 0;
      for (const auto& [key, share] : m.gpus_by_class) held += share;
      // More held than the node has cannot be billed twice: scale down.
      const double denominator = std::max(static_cast<double>(gpus), held);
      for (const auto& [key, share] : m.gpus_by_class) {
        if (!key.second.empty()) by_team_[key.second] += spent * share / denominator;
      }
    }
    if (store_ == nullptr) continue;
    if (!held_measured_) {
      for (const auto& [key, gpus] : m.gpus_by_class) m.gpu_seconds[key] += gpus * dt;
    }
    if (m.utilization) {
      m.utilization_seconds += dt;
      m.utilization_sum += *m.utilization * dt;
    }
    if (!held_measured_ && now - m.start >= interval_) {
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

Status UsageMeter::RestoreMonth(const std::vector<NodeLifecycle>& history, WallTime now) {
  month_ = MonthStart(now);
  month_to_date_usd_ = 0;
  by_pool_.clear();
  by_team_.clear();
  const WallTime start = MonthStart(now);
  std::unordered_map<std::string, const NodeLifecycle*> by_instance;
  for (const NodeLifecycle& n : history) {
    by_instance.emplace(n.instance_id, &n);
    const double usd = n.SpendUsd(start, now);
    if (usd <= 0) continue;
    month_to_date_usd_ += usd;
    by_pool_[n.pool] += usd;
  }
  if (store_ == nullptr || now <= start) return Status::Ok();
  Result<std::vector<UsageRecord>> usage = store_->UsageOverlapping(start, now);
  if (!usage) return usage.error().WithContext("restoring this month's spend by team");
  // A row's GPUs held (allocated / its length) pay that share of the node's
  // price over the part of the row inside the month.
  for (const UsageRecord& u : *usage) {
    if (u.team.empty() || u.end <= u.start) continue;
    auto it = by_instance.find(u.instance_id);
    if (it == by_instance.end()) continue;
    const NodeLifecycle& n = *it->second;
    const int gpus = GpuCount(n.offering);
    if (gpus <= 0) continue;
    const double held = u.gpu_seconds_allocated / std::chrono::duration<double>(u.end - u.start).count();
    const double usd = n.SpendUsd(std::max(u.start, start), std::min(u.end, now)) * held / gpus;
    if (usd > 0) by_team_[u.team] += usd;
  }
  return Status::Ok();
}

Status UsageMeter::EndNode(const Node& node, WallTime end) {
  auto it = meters_.find(node.instance_id);
  if (it == meters_.end()) return Status::Ok();
  Status s = store_ != nullptr ? FlushNode(node, it->second, std::max(end, it->second.start)) : Status::Ok();
  meters_.erase(it);
  return s;
}

Status UsageMeter::FlushFullIntervals(WallTime now, const std::vector<Node>& nodes) {
  if (!held_measured_ || store_ == nullptr) return Status::Ok();
  Status first_error = Status::Ok();
  for (const Node& node : nodes) {
    auto it = meters_.find(node.instance_id);
    if (it == meters_.end() || now - it->second.start < interval_) continue;
    Status s = FlushNode(node, it->second, now);
    if (!s.ok() && first_error.ok()) first_error = std::move(s);
  }
  return first_error;
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
  const double seconds = std::chrono::duration<double>(now - m.start).count();
  const double cap = GpuCount(node.offering) * seconds;
  // Busy time needs a measurement over the whole interval: a partly
  // measured interval would pass its unmeasured part off as idle.
  std::optional<double> utilization;
  if (seconds > 0 && m.utilization_seconds >= seconds - 1e-6) utilization = m.utilization_sum / m.utilization_seconds;
  for (const auto& [key, gpu_seconds] : m.gpu_seconds) {
    if (gpu_seconds <= 0 || now <= m.start) continue;
    const double allocated = std::min(gpu_seconds, cap);
    std::optional<double> busy;
    if (held_measured_) {
      busy = allocated;
    } else if (utilization) {
      busy = std::min(allocated, allocated * *utilization);
    }
    rows.push_back({node.instance_id, key.first, key.second, m.start, now, allocated, busy});
  }
  m.gpu_seconds.clear();
  m.utilization_seconds = 0;
  m.utilization_sum = 0;
  m.start = now;
  if (rows.empty() || store_ == nullptr) return Status::Ok();
  return store_->RecordUsage(rows);
}

}  // namespace gpuscaler
