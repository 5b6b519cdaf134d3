#include "gpuscaler/controller/usage_meter.h"

#include <algorithm>
#include <chrono>
#include <unordered_map>

#include "gpuscaler/model/money.h"

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

Status UsageMeter::RecordLostWork(const std::vector<LostWork>& lost) {
  if (store_ == nullptr || lost.empty()) return Status::Ok();
  std::vector<LostWorkRecord> rows;
  for (const LostWork& l : lost) {
    // Two units of one class whose own teams differ only where the class's
    // team fills in land on one row, as in the usage rows.
    std::map<ClassTeam, double> by_class_team;
    for (const auto& [key, gpu_seconds] : l.gpu_seconds) {
      by_class_team[{key.first, TeamOf(key.first, key.second)}] += gpu_seconds;
    }
    if (by_class_team.empty()) by_class_team[{"", ""}] = 0;  // measured: nothing lost
    for (const auto& [key, gpu_seconds] : by_class_team) {
      rows.push_back(LostWorkRecord{l.instance_id, l.time, key.first, key.second, gpu_seconds});
    }
  }
  return store_->RecordLostWork(rows);
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
      std::vector<GpuHolding> holdings;
      holdings.reserve(m.gpus_by_class.size());
      for (const auto& [key, held] : m.gpus_by_class) holdings.push_back({key.first, key.second, held});
      const NodePriceSplit split = SplitNodePrice(spent, gpus, holdings);
      for (size_t i = 0; i < holdings.size(); ++i) {
        if (!holdings[i].team.empty()) by_team_[std::string(holdings[i].team)] += split.usd[i];
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
    if (!held_measured_ && IntervalFull(m, now)) {
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
  // The rows of one node and interval (consecutive: the store orders them
  // by start, end and instance) are what the node's GPUs held over the
  // interval (allocated / its length): they split the node's price over the
  // part of the interval inside the month, as Accumulate split it.
  const std::vector<UsageRecord>& rows = *usage;
  std::vector<GpuHolding> holdings;
  for (size_t first = 0, last = 0; first < rows.size(); first = last) {
    const UsageRecord& u = rows[first];
    for (last = first + 1; last < rows.size() && rows[last].instance_id == u.instance_id &&
                           rows[last].start == u.start && rows[last].end == u.end;
         ++last) {
    }
    auto it = by_instance.find(u.instance_id);
    if (u.end <= u.start || it == by_instance.end()) continue;
    const NodeLifecycle& n = *it->second;
    const int gpus = GpuCount(n.offering);
    if (gpus <= 0) continue;
    const double seconds = std::chrono::duration<double>(u.end - u.start).count();
    holdings.clear();
    for (size_t k = first; k < last; ++k)
      holdings.push_back({rows[k].workload_class, rows[k].team, rows[k].gpu_seconds_allocated / seconds});
    const NodePriceSplit split =
        SplitNodePrice(n.SpendUsd(std::max(u.start, start), std::min(u.end, now)), gpus, holdings);
    for (size_t k = 0; k < holdings.size(); ++k) {
      if (!holdings[k].team.empty() && split.usd[k] > 0) by_team_[std::string(holdings[k].team)] += split.usd[k];
    }
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
    if (it == meters_.end() || !IntervalFull(it->second, now)) continue;
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

bool UsageMeter::IntervalFull(const Meter& m, WallTime now) const {
  // Intervals end on multiples of the interval since the epoch (whole UTC
  // hours for an hour), so a row never straddles a report's hour.
  const int64_t length = interval_.count();
  if (length <= 0) return true;
  const int64_t start = ToUnixSeconds(m.start);
  const int64_t boundary = (start / length + 1) * length;
  return ToUnixSeconds(now) >= boundary;
}

std::vector<UsageRecord> UsageMeter::Rows(const Node& node, const Meter& m, WallTime from, WallTime now) const {
  // [from, now) is the whole interval (from == m.start) or the stretch since
  // the last open write (from == m.open_until): what was held in it is what
  // the interval holds less what the open rows hold already.
  const bool whole = from == m.start;
  std::vector<UsageRecord> rows;
  const double seconds = std::chrono::duration<double>(now - from).count();
  if (seconds <= 0) return rows;
  const double cap = GpuCount(node.offering) * seconds;
  const double measured = m.utilization_seconds - (whole ? 0 : m.open_utilization_seconds);
  const double measured_sum = m.utilization_sum - (whole ? 0 : m.open_utilization_sum);
  // Busy time needs a measurement over the whole stretch: a partly
  // measured one would pass its unmeasured part off as idle.
  std::optional<double> utilization;
  if (measured >= seconds - 1e-6 && measured > 0) utilization = measured_sum / measured;
  for (const auto& [key, gpu_seconds] : m.gpu_seconds) {
    double held = gpu_seconds;
    if (!whole) {
      if (auto it = m.open_gpu_seconds.find(key); it != m.open_gpu_seconds.end()) held -= it->second;
    }
    if (held <= 1e-9) continue;
    const double allocated = std::min(held, cap);
    std::optional<double> busy;
    if (held_measured_) {
      busy = allocated;
    } else if (utilization) {
      busy = std::min(allocated, allocated * *utilization);
    }
    rows.push_back({node.instance_id, key.first, key.second, from, now, allocated, busy});
  }
  return rows;
}

Status UsageMeter::WriteOpenIntervals(WallTime now, const std::vector<Node>& nodes) {
  if (store_ == nullptr || open_every_ <= Seconds(0)) return Status::Ok();
  if (last_open_write_ && now - *last_open_write_ < open_every_) return Status::Ok();
  last_open_write_ = now;
  // Each write adds the stretch since the node's previous one as rows of
  // their own, so the newest rows hold the current rate (what a live report
  // prorates to its moment); the interval's final rows replace them all.
  std::vector<UsageRecord> rows;
  std::vector<std::pair<Meter*, size_t>> written;  // meter, its first row in `rows`
  for (const Node& node : nodes) {
    auto it = meters_.find(node.instance_id);
    if (it == meters_.end()) continue;
    Meter& m = it->second;
    const WallTime from = std::max(m.start, m.open_until);
    std::vector<UsageRecord> slice = Rows(node, m, from, now);
    written.emplace_back(&m, rows.size());
    rows.insert(rows.end(), slice.begin(), slice.end());
  }
  Status s = store_->ReplaceUsage({}, rows);
  if (!s.ok()) return s;
  for (size_t i = 0; i < written.size(); ++i) {
    Meter& m = *written[i].first;
    const size_t end = i + 1 < written.size() ? written[i + 1].second : rows.size();
    m.open_rows.insert(m.open_rows.end(), rows.begin() + static_cast<std::ptrdiff_t>(written[i].second),
                       rows.begin() + static_cast<std::ptrdiff_t>(end));
    m.open_until = now;
    m.open_gpu_seconds = m.gpu_seconds;
    m.open_utilization_seconds = m.utilization_seconds;
    m.open_utilization_sum = m.utilization_sum;
  }
  return Status::Ok();
}

Status UsageMeter::FlushNode(const Node& node, Meter& m, WallTime now) {
  std::vector<UsageRecord> rows = Rows(node, m, m.start, now);
  std::vector<UsageRecord> withdrawn = std::move(m.open_rows);
  Meter next;
  next.gpus_by_class = std::move(m.gpus_by_class);
  next.utilization = m.utilization;
  next.start = now;
  m = std::move(next);
  if ((rows.empty() && withdrawn.empty()) || store_ == nullptr) return Status::Ok();
  return store_->ReplaceUsage(withdrawn, rows);
}

}  // namespace gpuscaler
