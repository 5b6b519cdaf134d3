// Uniform Progress (solver/deadline_hold.h): where each deadline unit stands
// against its line, what that says of pending units, and which running
// nodes move between spot and on-demand.
#include <algorithm>
#include <map>
#include <utility>

#include "deadline_plan.h"
#include "gpuscaler/solver/cost_model.h"
#include "gpuscaler/solver/deadline_hold.h"

namespace gpuscaler {
namespace {

using solver_detail::FindType;
using solver_detail::MayWaitForSpot;
using solver_detail::RestartAllowances;
using solver_detail::SignedDuration;
using solver_detail::TypesByName;

double Hours(Seconds s) { return static_cast<double>(s.count()) / 3600.0; }

// The cheapest available spot offering of `node`'s pool zones and instance
// type family with at least its GPUs, or nullptr.
const Offering* CheapestSpotFor(const Snapshot& snapshot, const TypesByName& types, const Policy& policy,
                                const Node& node, const InstanceType& type) {
  const NodePoolPolicy* pool = policy.FindPool(node.pool);
  const Offering* best = nullptr;
  for (const Offering& o : snapshot.offerings) {
    if (o.capacity_type != CapacityType::kSpot || !o.available || o.usd_per_hour <= 0) continue;
    const InstanceType* t = FindType(types, o.instance_type);
    if (t == nullptr || t->gpu_count < type.gpu_count || t->gpu_model != type.gpu_model) continue;
    if (pool != nullptr) {
      if (!pool->AllowsLocation(o)) continue;
      if (!pool->capacity_types.empty() && std::find(pool->capacity_types.begin(), pool->capacity_types.end(),
                                                     CapacityType::kSpot) == pool->capacity_types.end())
        continue;
      if (!pool->AllowsType(*t, nullptr)) continue;
    }
    if (best == nullptr || o.usd_per_hour < best->usd_per_hour) best = &o;
  }
  return best;
}

// Whether another spot node has free GPUs for the largest of `units` (of
// `node`): the scheduler may put the moved work there, back on spot, so a
// move to on-demand would only cost a restart.
bool SpotRoomTakes(const Snapshot& snapshot, const TypesByName& types, size_t node_index, const Node& node,
                   const std::vector<size_t>& units) {
  int needed = 0;
  for (size_t k : units) needed = std::max(needed, WholeGpusTaken(node.running[k]));
  for (size_t i = 0; i < snapshot.nodes.size(); ++i) {
    const Node& other = snapshot.nodes[i];
    if (i == node_index || other.offering.capacity_type != CapacityType::kSpot || !other.AcceptsWork())
      continue;
    const InstanceType* type = FindType(types, other.offering.instance_type);
    if (type == nullptr) continue;
    int free = type->gpu_count;
    for (const DemandUnit& u : other.running) free -= WholeGpusTaken(u);
    if (free >= needed) return true;
  }
  return false;
}

}  // namespace

DeadlineStanding StandingOf(const Snapshot& snapshot, const Policy& policy, const DemandUnit& unit,
                            Seconds restart_allowance) {
  DeadlineStanding s;
  s.restart = restart_allowance;
  s.loss = SpotLossAllowance(unit);
  s.margin = restart_allowance + std::max(Seconds(0), policy.scaling.tick_interval);
  const Seconds left = WorkLeft(unit, snapshot.time);
  s.left = left;
  if (!unit.deadline) return s;
  s.slack = std::chrono::duration_cast<Seconds>(*unit.deadline - snapshot.time) - left - restart_allowance;
  if (!unit.submitted || *unit.deadline <= *unit.submitted || unit.total_work.count() <= 0) return s;
  const Seconds total = unit.total_work;
  const double span = std::chrono::duration<double>(*unit.deadline - *unit.submitted).count();
  const double since = std::chrono::duration<double>(snapshot.time - *unit.submitted).count();
  const double line = static_cast<double>(total.count()) * std::clamp(since / span, 0.0, 1.0);
  const double done = static_cast<double>(std::max(Seconds(0), total - left).count());
  s.lead = Seconds(static_cast<int64_t>(done - line));
  s.has_line = true;
  return s;
}

PendingDeadlineCalls FindPendingDeadlineCalls(const Snapshot& snapshot, const Policy& policy) {
  PendingDeadlineCalls calls;
  RestartAllowances allowances(snapshot);
  for (size_t i = 0; i < snapshot.pending.size(); ++i) {
    const DemandUnit& u = snapshot.pending[i];
    if (!u.deadline || !MayWaitForSpot(u, policy)) continue;
    const DeadlineStanding s = StandingOf(snapshot, policy, u, allowances.Of(u));
    // Lost already, even if it started this moment with no launch to wait
    // for: reported, and run as any other work (on-demand would only make it
    // less late, at on-demand's price). Short of that it is committed.
    if ((s.slack + s.restart).count() < 0) {
      calls.late.push_back(i);
      continue;
    }
    if (s.Committed()) {
      calls.on_demand.push_back(i);
      continue;
    }
    // Without a line, the slack alone holds it (until Committed).
    if (s.has_line && s.lead < -s.margin) {
      calls.on_demand.push_back(i);
      continue;
    }
    // On-demand from when it falls behind by the margin or its slack runs
    // down to the floor, whichever comes first: the line moves at
    // total / span while the unit waits, the slack at one second a second.
    Seconds until = s.slack - s.margin - s.loss;
    if (s.has_line) {
      const Seconds total = u.total_work;
      const double span = std::chrono::duration<double>(*u.deadline - *u.submitted).count();
      const double rate = span > 0 ? static_cast<double>(total.count()) / span : 0;
      if (rate > 0)
        until = std::min(
            until, Seconds(static_cast<int64_t>(static_cast<double>((s.lead + s.margin).count()) / rate)));
    }
    calls.held.push_back({i, s.slack, snapshot.time + std::max(Seconds(0), until)});
  }
  // The scheduler hands new room out in queue order (the pending list's):
  // on-demand room launched for a unit behind its line goes first to the
  // held units of its class queued before it that fit in it (no more GPUs).
  // They cannot be held there, so they are planned as any other work, and
  // room is launched for all. One pass from the back of the queue, keeping
  // per class the largest unit sent to on-demand behind the current one.
  std::vector<int> on_demand_gpus(snapshot.pending.size(), -1);
  for (size_t i : calls.on_demand) on_demand_gpus[i] = WholeGpusTaken(snapshot.pending[i]);
  std::vector<char> is_held(snapshot.pending.size(), 0);
  for (const HeldUnit& h : calls.held) is_held[h.pending_index] = 1;
  std::map<std::string, int> largest_behind;
  std::vector<char> released(snapshot.pending.size(), 0);
  for (size_t i = snapshot.pending.size(); i-- > 0;) {
    const DemandUnit& u = snapshot.pending[i];
    if (is_held[i]) {
      const auto it = largest_behind.find(u.workload_class);
      released[i] = it != largest_behind.end() && WholeGpusTaken(u) <= it->second;
    } else if (on_demand_gpus[i] >= 0) {
      int& largest = largest_behind.try_emplace(u.workload_class, 0).first->second;
      largest = std::max(largest, on_demand_gpus[i]);
    }
  }
  std::erase_if(calls.held, [&](const HeldUnit& h) {
    if (!released[h.pending_index]) return false;
    calls.released.push_back(h.pending_index);
    return true;
  });
  return calls;
}

std::vector<DeadlineMove> FindDeadlineMoves(const Snapshot& snapshot, const Policy& policy) {
  std::vector<DeadlineMove> moves;
  RestartAllowances allowances(snapshot);
  const TypesByName types = solver_detail::IndexTypes(snapshot);
  std::map<std::string, int> to_spot_left;  // per pool: the disruption allowance
  for (size_t n = 0; n < snapshot.nodes.size(); ++n) {
    const Node& node = snapshot.nodes[n];
    if (node.state != NodeState::kReady || node.instance_id.empty() || node.do_not_disrupt ||
        node.running.empty())
      continue;
    const CapacityType on = node.offering.capacity_type;
    if (on != CapacityType::kSpot && on != CapacityType::kOnDemand) continue;
    if (std::any_of(node.running.begin(), node.running.end(),
                    [](const DemandUnit& u) { return u.gang.has_value(); }))
      continue;
    DeadlineMove move;
    move.node_index = n;
    bool all_ahead = true;
    Seconds least_lead = Seconds::max(), most_left{0}, most_restart{0};
    for (size_t k = 0; k < node.running.size(); ++k) {
      const DemandUnit& u = node.running[k];
      if (!u.deadline || !MayWaitForSpot(u, policy)) {
        all_ahead = false;
        continue;
      }
      const DeadlineStanding s = StandingOf(snapshot, policy, u, allowances.Of(u));
      const bool behind = s.has_line && s.lead < -s.margin;
      // Without a line the work left is a class's guess: no move on it.
      if (on == CapacityType::kSpot && s.has_line && s.slack.count() >= 0 && (behind || s.Committed())) {
        move.must_move.push_back(k);
        if (move.reason.empty())
          move.reason = "unit " + u.id +
                        (s.Committed() ? " has " + SignedDuration(s.slack) + " of slack left"
                                       : " is " + SignedDuration(-s.lead) + " behind its deadline's line");
      }
      if (!MayMoveToSpot(s)) all_ahead = false;
      least_lead = std::min(least_lead, s.lead);
      most_left = std::max(most_left, s.left);
      most_restart = std::max(most_restart, s.restart);
    }
    if (on == CapacityType::kSpot) {
      if (move.must_move.empty() || SpotRoomTakes(snapshot, types, n, node, move.must_move)) continue;
      move.to = CapacityType::kOnDemand;
      move.reason = "deadline: " + move.reason + ": its work moves to on-demand";
      moves.push_back(std::move(move));
      continue;
    }
    if (!all_ahead) continue;
    const InstanceType* type = FindType(types, node.offering.instance_type);
    if (type == nullptr) continue;
    const Offering* spot = CheapestSpotFor(snapshot, types, policy, node, *type);
    if (spot == nullptr) continue;
    // The move pays when the price gap over the work left, less the spot
    // risk of that work, covers both nodes paid while the new one warms up.
    const InstanceType* spot_type = FindType(types, spot->instance_type);
    double risk = 0;
    for (const DemandUnit& u : node.running) risk += ExpectedInterruptionUsdPerHour(u, *spot, *spot_type);
    const double gain = (node.offering.usd_per_hour - spot->usd_per_hour - risk) * Hours(most_left);
    const double cost = (node.offering.usd_per_hour + spot->usd_per_hour) * Hours(most_restart);
    if (gain <= cost) continue;
    auto [left, fresh] = to_spot_left.try_emplace(node.pool, 0);
    if (fresh) {
      const auto recent = snapshot.recently_disrupted.find(node.pool);
      left->second = policy.disruption.max_disrupted_per_interval -
                     (recent == snapshot.recently_disrupted.end() ? 0 : recent->second);
    }
    if (left->second <= 0) continue;
    --left->second;
    move.to = CapacityType::kSpot;
    for (size_t k = 0; k < node.running.size(); ++k) move.must_move.push_back(k);
    move.reason = "deadline: its work is ahead of its deadlines' lines (the least by " +
                  SignedDuration(least_lead) + ") and spot is up: moves to spot (" + spot->Key() + ")";
    moves.push_back(std::move(move));
  }
  return moves;
}

void solver_detail::PinRunningDeadlineWork(const Snapshot& snapshot, const Policy& policy, Snapshot* pinned) {
  RestartAllowances allowances(snapshot);
  for (Node& node : pinned->nodes) {
    const bool on_demand = node.offering.capacity_type == CapacityType::kOnDemand;
    for (DemandUnit& u : node.running) {
      if (!u.deadline) continue;
      const DeadlineStanding s = StandingOf(snapshot, policy, u, allowances.Of(u));
      // A move costs a restart: work that is not ahead of its line by the
      // margin, or whose slack cannot pay a restart and keep its floor,
      // stays where it runs (consolidation leaves the node).
      if (s.slack.count() >= 0 &&
          (s.slack <= s.margin + s.loss + s.restart || (s.has_line && s.lead <= s.margin)))
        node.do_not_disrupt = true;
      if (on_demand && s.has_line && MayWaitForSpot(u, policy) && !MayMoveToSpot(s))
        u.capacity_type = CapacityType::kOnDemand;
    }
  }
}

}  // namespace gpuscaler
