#include "gpuscaler/controller/fleet_learners.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <set>
#include <utility>

#include <nlohmann/json.hpp>

#include "gpuscaler/solver/cost_model.h"

namespace gpuscaler {
WarmUpLearner::WarmUpLearner(const Catalog& catalog)
    : prior_(catalog.launch_latency), default_prior_(catalog.default_launch_latency) {}

void WarmUpLearner::Observe(std::span<const NodeMilestone> milestones) {
  constexpr double kWeight = 1.0 / 3.0;
  for (const NodeMilestone& m : milestones) {
    if (m.stage != "gpus_allocatable") continue;
    auto prior = prior_.find(m.family);
    const Seconds start = prior != prior_.end() ? prior->second : default_prior_;
    auto [it, fresh] = learned_s_.emplace(m.family, static_cast<double>(start.count()));
    it->second += kWeight * (m.seconds - it->second);
  }
}

bool WarmUpLearner::Publish(Snapshot& snapshot) const {
  bool changed = false;
  for (const auto& [family, seconds] : learned_s_) {
    const int learned = static_cast<int>(std::lround(seconds));
    int& published = snapshot.warmup_seconds_by_family[family];
    if (published != learned) {
      published = learned;
      changed = true;
    }
  }
  return changed;
}

void DisruptionWindow::Restore(std::vector<std::pair<WallTime, std::string>> removals) {
  for (auto& r : removals) removals_.push_back(std::move(r));
  std::sort(removals_.begin(), removals_.end());
}

bool DisruptionWindow::Publish(const Policy& policy, WallTime now, Snapshot& snapshot) {
  // Removals older than a day (or the interval, if longer) can no longer
  // count; the window itself follows the policy, which may be reloaded.
  const Seconds interval = policy.disruption.disruption_interval;
  const WallTime keep_since = now - std::max(interval, Seconds(24 * 3600));
  while (!removals_.empty() && removals_.front().first < keep_since) removals_.pop_front();
  std::map<std::string, int> recent;
  for (const auto& [time, pool] : removals_) {
    if (time > now - interval) ++recent[pool];
  }
  bool changed = false;
  if (recent != snapshot.recently_disrupted) {
    snapshot.recently_disrupted = std::move(recent);
    changed = true;
  }
  std::vector<std::string> paused;
  for (auto it = spot_paused_until_.begin(); it != spot_paused_until_.end();) {
    if (it->second <= now) {
      it = spot_paused_until_.erase(it);
    } else {
      paused.push_back(it->first);
      ++it;
    }
  }
  if (paused != snapshot.spot_paused_classes) {
    snapshot.spot_paused_classes = std::move(paused);
    changed = true;
  }
  return changed;
}

void LostWorkAccount::Accrue(WallTime now, std::span<const Node> nodes) {
  if (!as_of_) {
    as_of_ = now;
    return;
  }
  const double dt_h = std::chrono::duration<double>(now - *as_of_).count() / 3600.0;
  if (dt_h <= 0) return;
  as_of_ = now;
  const double half_life_h = std::chrono::duration<double>(half_life_).count() / 3600.0;
  const double keep = half_life_h > 0 ? std::exp2(-dt_h / half_life_h) : 1.0;
  for (auto& [cls, sums] : by_class_) {
    sums.lost_gpu_hours *= keep;
    sums.gpu_hours *= keep;
  }
  if (std::exchange(resumed_, false)) return;
  for (const Node& n : nodes) {
    if (n.instance_id.empty()) continue;
    for (const DemandUnit& u : n.running) by_class_[u.workload_class].gpu_hours += GpuShare(u) * dt_h;
  }
}

void LostWorkAccount::ChargeInterruption(std::span<const DemandUnit> running) {
  for (const DemandUnit& u : running)
    by_class_[u.workload_class].lost_gpu_hours += GpuShare(u) * LostWorkHoursPerInterruption(u) * InterruptionReach(u);
}

bool LostWorkAccount::Publish(const Policy& policy, Snapshot& snapshot) const {
  std::vector<std::string> spent;
  for (const WorkloadClassPolicy& c : policy.classes) {
    if (c.max_lost_work_share >= 1.0) continue;
    auto it = by_class_.find(c.name);
    if (it == by_class_.end() || it->second.lost_gpu_hours <= 0) continue;
    if (it->second.lost_gpu_hours > c.max_lost_work_share * it->second.gpu_hours) spent.push_back(c.name);
  }
  std::sort(spent.begin(), spent.end());
  if (spent == snapshot.spot_budget_spent_classes) return false;
  snapshot.spot_budget_spent_classes = std::move(spent);
  return true;
}

void SpotFloorAccount::Observe(const Policy& policy, WallTime now, std::span<const Node> nodes) {
  const double dt_h = as_of_ ? std::chrono::duration<double>(now - *as_of_).count() / 3600.0 : 0;
  if (as_of_ && dt_h < 0) return;
  as_of_ = now;
  // After a restore the gap decays the sums but covers no hours.
  const bool resumed = std::exchange(resumed_, false);
  std::map<std::string, Sums> kept;
  for (const WorkloadClassPolicy& c : policy.classes) {
    if (c.spot_share_window.count() <= 0 || !(c.max_spot_share > 0 && c.max_spot_share < 1)) continue;
    Sums a = by_class_[c.name];
    const double keep = std::exp2(-dt_h * 3600.0 / static_cast<double>(c.spot_share_window.count()));
    a.on_demand_gpu_hours *= keep;
    a.gpu_hours *= keep;
    a.weight_hours = a.weight_hours * keep + (resumed ? 0.0 : dt_h);
    kept.emplace(c.name, a);
  }
  // The work seen now ran for the whole interval since the last call (a tick
  // is short against any sensible window).
  if (dt_h > 0 && !resumed && !kept.empty()) {
    for (const Node& n : nodes) {
      if (n.instance_id.empty()) continue;
      const bool on_demand = n.offering.capacity_type == CapacityType::kOnDemand;
      for (const DemandUnit& u : n.running) {
        auto it = kept.find(u.workload_class);
        if (it == kept.end()) continue;
        const double h = GpuShare(u) * dt_h;
        it->second.gpu_hours += h;
        if (on_demand) it->second.on_demand_gpu_hours += h;
      }
    }
  }
  by_class_ = std::move(kept);
}

void SpotFloorAccount::Publish(const Policy& policy, Snapshot& snapshot) const {
  std::map<std::string, double> credit;
  for (const WorkloadClassPolicy& c : policy.classes) {
    auto it = by_class_.find(c.name);
    if (it == by_class_.end() || it->second.weight_hours <= 0) continue;
    const double floor = 1.0 - c.max_spot_share;
    const Sums& a = it->second;
    credit[c.name] = (a.on_demand_gpu_hours - floor * a.gpu_hours) / a.weight_hours;
  }
  snapshot.spot_floor_credit_gpus = std::move(credit);
}

void SignalFreshness::Observe(std::vector<SignalStatus> signals, const Policy& policy, WallTime now) {
  signals_ = std::move(signals);
  std::set<std::string> blocked;
  for (const SignalStatus& s : signals_) {
    auto it = policy.signals.max_staleness.find(s.source);
    const Seconds max_age = it == policy.signals.max_staleness.end() ? Seconds(120) : it->second;
    if (!s.sampled_at || now - *s.sampled_at > max_age) blocked.insert(s.classes.begin(), s.classes.end());
  }
  blocked_.assign(blocked.begin(), blocked.end());
}

bool SignalFreshness::Publish(Snapshot& snapshot) const {
  if (blocked_ == snapshot.scale_down_blocked_classes) return false;
  snapshot.scale_down_blocked_classes = blocked_;
  return true;
}

std::string SignalFreshness::Json(WallTime now) const {
  nlohmann::ordered_json arr = nlohmann::ordered_json::array();
  for (const SignalStatus& s : signals_) {
    nlohmann::ordered_json j;
    j["name"] = s.name;
    j["source"] = s.source;
    j["classes"] = s.classes;
    if (s.sampled_at) {
      j["value"] = s.value;
      j["age_s"] = (now - *s.sampled_at).count();
    } else {
      j["value"] = nullptr;
      j["age_s"] = nullptr;
    }
    arr.push_back(std::move(j));
  }
  nlohmann::ordered_json out;
  out["signals"] = std::move(arr);
  out["blocked_classes"] = blocked_;
  return out.dump();
}

LearnedChanges FleetLearners::Publish(const Policy& policy, WallTime now, Snapshot& snapshot) {
  LearnedChanges changes;
  const auto note = [&changes](bool changed, bool structural) {
    changes.any = changes.any || changed;
    changes.structural = changes.structural || (changed && structural);
  };
  note(warm_up.Publish(snapshot), false);
  note(disruption.Publish(policy, now, snapshot), true);
  note(lost_work.Publish(policy, snapshot), true);
  spot_floor.Publish(policy, snapshot);
  note(signals.Publish(snapshot), true);
  return changes;
}

}  // namespace gpuscaler
