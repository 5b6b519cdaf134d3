#include "gpuscaler/solver/deadline_hold.h"

#include <algorithm>
#include <map>
#include <utility>

#include "deadline_plan.h"
#include "gpuscaler/solver/cost_model.h"

namespace gpuscaler {

bool solver_detail::MayWaitForSpot(const DemandUnit& unit, const Policy& policy) {
  if (!unit.interruptible || unit.capacity_type.has_value()) return false;
  const WorkloadClassPolicy* cls = policy.FindClass(unit.workload_class);
  return cls != nullptr && cls->max_spot_share > 0;
}

std::string solver_detail::SignedDuration(Seconds d) {
  std::string text = FormatDuration(d.count() < 0 ? -d : d);
  if (d.count() < 0) text.insert(text.begin(), '-');
  return text;
}

using solver_detail::FindType;
using solver_detail::MayWaitForSpot;
using solver_detail::SignedDuration;

Seconds SpotLossAllowance(const DemandUnit& unit) {
  const Seconds remaining = std::max(Seconds(0), unit.expected_runtime);
  if (unit.checkpoint_on_notice) return std::min(remaining, kSpotNoticeWindow);
  if (unit.checkpoint_interval.count() <= 0) return remaining;
  return std::min(remaining, unit.checkpoint_interval);
}

Seconds WorkLeft(const DemandUnit& unit, WallTime now) {
  Seconds left = std::max(Seconds(0), unit.expected_runtime);
  if (unit.progressing_since && now > *unit.progressing_since)
    left -= std::chrono::duration_cast<Seconds>(now - *unit.progressing_since);
  return std::max(Seconds(0), left);
}

Seconds RestartAllowance(const Snapshot& snapshot, const DemandUnit& unit) {
  const solver_detail::TypesByName types = solver_detail::IndexTypes(snapshot);
  Seconds fitting{0}, any{0};
  bool fits_one = false;
  for (const Offering& o : snapshot.offerings) {
    if (o.capacity_type != CapacityType::kOnDemand) continue;
    const InstanceType* type = FindType(types, o.instance_type);
    if (type == nullptr) continue;
    const Seconds lead = LeadTimeOf(snapshot, o, *type);
    any = std::max(any, lead);
    if (type->gpu_count >= std::max(1, unit.gpus)) {
      fits_one = true;
      fitting = std::max(fitting, lead);
    }
  }
  return (fits_one ? fitting : any) + std::max(Seconds(0), unit.restart_cost);
}

std::vector<HeldUnit> FindDeadlineHolds(const Snapshot& snapshot, const Policy& policy) {
  std::vector<HeldUnit> held;
  solver_detail::RestartAllowances allowances(snapshot);
  for (size_t i = 0; i < snapshot.pending.size(); ++i) {
    const DemandUnit& u = snapshot.pending[i];
    if (!u.deadline || !MayWaitForSpot(u, policy)) continue;
    const Seconds allowance = allowances.Of(u);
    const Seconds remaining = std::max(Seconds(0), u.expected_runtime);
    const WallTime on_demand_from =
        *u.deadline - remaining - allowance - kDeadlineSafetyMargin - SpotLossAllowance(u);
    if (snapshot.time >= on_demand_from) continue;
    held.push_back({i,
                    std::chrono::duration_cast<Seconds>(*u.deadline - snapshot.time - remaining - allowance),
                    on_demand_from});
  }
  return held;
}

Seconds solver_detail::RestartAllowances::Of(const DemandUnit& u) {
  auto [it, fresh] = cache_.try_emplace({u.gpus, u.restart_cost.count()});
  if (fresh) it->second = RestartAllowance(snapshot_, u);
  return it->second;
}

void RecordDeadlineHolds(const Snapshot& snapshot, const std::vector<HeldUnit>& held, Plan* plan) {
  std::map<std::string, const HeldUnit*> by_id;
  for (const HeldUnit& h : held) by_id[snapshot.pending[h.pending_index].id] = &h;
  struct ClassHolds {
    int waiting = 0;
    const HeldUnit* first = nullptr;  // the earliest to switch to on-demand
  };
  std::map<std::string, ClassHolds> classes;
  for (UnplacedUnit& u : plan->unplaced) {
    auto it = by_id.find(u.unit_id);
    if (it == by_id.end()) continue;
    // What kept it off spot stays in the detail: the unit waits for that.
    u.detail = "deferrable, held for spot while its deadline's slack lasts (spot: " +
               std::string(ToString(u.reason)) + (u.detail.empty() ? "" : ", " + u.detail) + ")";
    u.reason = UnplacedReason::kDeadlineHold;
    ClassHolds& c = classes[u.workload_class];
    ++c.waiting;
    if (c.first == nullptr || it->second->on_demand_from < c.first->on_demand_from) c.first = it->second;
  }
  for (const auto& [name, c] : classes) {
    const DemandUnit& u = snapshot.pending[c.first->pending_index];
    plan->notes.push_back("class " + name + ": " + std::to_string(c.waiting) +
                          (c.waiting == 1 ? " unit" : " units") + " held for spot by deadline; the first (" +
                          u.id + ", deadline " + FormatRfc3339(*u.deadline) + ", slack " +
                          SignedDuration(c.first->slack) + ") may go to on-demand from " +
                          FormatRfc3339(c.first->on_demand_from));
    if (!plan->replan_by || c.first->on_demand_from < *plan->replan_by)
      plan->replan_by = c.first->on_demand_from;
  }
}

}  // namespace gpuscaler
