#include "gpuscaler/policy/policy.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>

#include "gpuscaler/model/compatibility.h"
#include "gpuscaler/model/find_by_name.h"

namespace gpuscaler {

Seconds DeadlineRule::Allowed(Seconds runtime) const {
  if (runtime_multiple > 0)
    return Seconds(static_cast<int64_t>(std::ceil(runtime_multiple * static_cast<double>(std::max<int64_t>(0, runtime.count())))));
  return after_submission;
}

std::string DeadlineRule::ToString() const {
  if (runtime_multiple <= 0) return FormatDuration(after_submission);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%gx", runtime_multiple);
  return buf;
}

std::optional<DeadlineRule> ParseDeadlineRule(const std::string& text, std::string* error) {
  DeadlineRule rule;
  if (!text.empty() && (text.back() == 'x' || text.back() == 'X')) {
    // from_chars, not strtod: the process's locale must not change what
    // "1.5x" means.
    const std::string_view number(text.data(), text.size() - 1);
    double m = 0;
    const auto [stop, ec] = std::from_chars(number.data(), number.data() + number.size(), m);
    if (number.empty() || ec != std::errc() || stop != number.data() + number.size() || !std::isfinite(m) || m < 1) {
      *error = "expected a multiple of the runtime of at least 1 such as \"1.5x\", got '" + text + "'";
      return std::nullopt;
    }
    rule.runtime_multiple = m;
    return rule;
  }
  if (!ParseDuration(text, &rule.after_submission) || rule.after_submission.count() <= 0) {
    *error = "expected a duration longer than 0s such as \"24h\" or a multiple of the runtime such as \"1.5x\", got '" +
             text + "'";
    return std::nullopt;
  }
  return rule;
}

bool NodePoolPolicy::AllowsType(const InstanceType& type, const GpuModel* gpu) const {
  if (instance_types.empty() && families.empty()) {
    if (type.gpu_count <= 0) return false;
  } else if (!Contains(instance_types, type.name) && !Contains(families, type.family)) {
    return false;
  }
  return GpuModelListed(gpu_models, type.gpu_model, gpu);
}

bool NodePoolPolicy::AllowsLocation(const Offering& offering) const {
  return (regions.empty() || Contains(regions, offering.region)) && (zones.empty() || Contains(zones, offering.zone));
}

bool ReservationSelector::Matches(const Reservation& reservation) const {
  if (!id.empty()) return reservation.id == id;
  if (tags.empty()) return false;
  for (const auto& [key, value] : tags) {
    const auto it = reservation.tags.find(key);
    if (it == reservation.tags.end() || it->second != value) return false;
  }
  return true;
}

bool NodePoolPolicy::SelectsReservation(const Reservation& reservation) const {
  for (const ReservationSelector& term : reservations)
    if (term.Matches(reservation)) return true;
  return false;
}

std::string_view ToString(Actuation actuation) {
  switch (actuation) {
    case Actuation::kFleet: return "fleet";
    case Actuation::kAsg: return "asg";
  }
  return "?";
}

std::string_view ToString(WarmState state) {
  switch (state) {
    case WarmState::kStopped: return "stopped";
    case WarmState::kHibernated: return "hibernated";
  }
  return "?";
}

std::string_view ToString(WarmCapacityType type) {
  switch (type) {
    case WarmCapacityType::kOnDemand: return "on-demand";
    case WarmCapacityType::kSpot: return "spot";
    case WarmCapacityType::kAuto: return "auto";
  }
  return "?";
}

std::string_view ToString(RebalanceResponse response) {
  switch (response) {
    case RebalanceResponse::kIgnore: return "ignore";
    case RebalanceResponse::kCordon: return "cordon";
    case RebalanceResponse::kReplace: return "replace";
  }
  return "?";
}

std::string_view ToString(SignalSource source) {
  switch (source) {
    case SignalSource::kPrometheus: return "prometheus";
    case SignalSource::kRabbitMq: return "rabbitmq";
    case SignalSource::kDcgm: return "dcgm";
  }
  return "?";
}

const std::string& TeamOf(const DemandUnit& unit, const Policy& policy) {
  if (!unit.team.empty()) return unit.team;
  static const std::string kNoTeam;
  const WorkloadClassPolicy* c = policy.FindClass(unit.workload_class);
  return c == nullptr ? kNoTeam : c->team;
}

DemandUnit WorkloadClassPolicy::Unit() const {
  DemandUnit u;
  u.workload_class = name;
  if (!mig_profile.empty()) {
    u.mig_profile = mig_profile;
  } else {
    u.gpus = std::max(0, gpus_per_job);
  }
  u.gpu_models = gpu_models;
  u.min_gpu_memory_mib = min_gpu_memory_mib;
  u.cpu_milli = cpu_milli_per_job;
  u.memory_mib = memory_mib_per_job;
  u.priority = priority;
  u.interruptible = interruptible;
  u.expected_runtime = expected_runtime;
  u.checkpoint_interval = checkpoint_interval;
  u.checkpoint_on_notice = checkpoint_on_notice;
  u.restart_cost = restart_cost;
  if (pools.size() == 1) u.pool = pools.front();
  return u;
}

double HourlyAllowanceUsd(const BudgetCap& cap, double month_to_date_usd, double hours_left_in_month) {
  double allowance = std::numeric_limits<double>::infinity();
  if (cap.hourly_usd) allowance = std::min(allowance, *cap.hourly_usd);
  if (cap.monthly_usd && hours_left_in_month > 0) {
    const double left = std::max(0.0, *cap.monthly_usd - month_to_date_usd);
    allowance = std::min(allowance, left / hours_left_in_month);
  }
  return allowance;
}

const NodePoolPolicy* Policy::FindPool(const std::string& pool_name) const {
  return FindByName(pools, pool_name);
}

const WorkloadClassPolicy* Policy::FindClass(const std::string& class_name) const {
  return FindByName(classes, class_name);
}

}  // namespace gpuscaler
