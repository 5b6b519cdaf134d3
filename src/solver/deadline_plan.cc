#include "deadline_plan.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "gpuscaler/model/json.h"
#include "gpuscaler/solver/cost_model.h"

namespace gpuscaler::solver_detail {
namespace {

Plan PlanHoldingPending(const Snapshot& snapshot, const Policy& policy, const PlannerOptions& options) {
  const std::vector<HeldUnit> held = FindDeadlineHolds(snapshot, policy);
  if (held.empty()) return PlanWithForecasts(snapshot, policy, options);
  // Held units are planned pinned to spot (in a copy of the snapshot): what
  // spot can take now runs now, the rest waits with its reason.
  Snapshot pinned = snapshot;
  for (const HeldUnit& h : held) pinned.pending[h.pending_index].capacity_type = CapacityType::kSpot;
  Plan plan = PlanWithForecasts(pinned, policy, options);
  RecordDeadlineHolds(snapshot, held, &plan);
  plan.summary = SummarizePlan(plan, snapshot.pending.size());
  return plan;
}

// `snapshot` with the pending calls pinned and the moved nodes' work pending
// again (appended after the real pending work), the nodes cordoned.
Snapshot Pinned(const Snapshot& snapshot, const Policy& policy, const PendingDeadlineCalls& calls,
                const std::vector<DeadlineMove>& moves) {
  Snapshot pinned = snapshot;
  PinRunningDeadlineWork(snapshot, policy, &pinned);
  for (const HeldUnit& h : calls.held) pinned.pending[h.pending_index].capacity_type = CapacityType::kSpot;
  for (size_t i : calls.on_demand) pinned.pending[i].capacity_type = CapacityType::kOnDemand;
  for (const DeadlineMove& m : moves) {
    Node& node = pinned.nodes[m.node_index];
    for (size_t k = 0; k < node.running.size(); ++k) {
      DemandUnit u = node.running[k];
      // What is left of it now: the plan prices the move's remaining work.
      u.expected_runtime = WorkLeft(u, snapshot.time);
      u.progressing_since.reset();
      if (std::find(m.must_move.begin(), m.must_move.end(), k) != m.must_move.end()) u.capacity_type = m.to;
      pinned.pending.push_back(std::move(u));
    }
    node.running.clear();
    node.state = NodeState::kCordoned;
  }
  return pinned;
}

// Per move, whether the plan placed all of its units; `on_launch` whether
// any went to a new node.
bool PlacedWhole(const Plan& plan, const Node& node, bool* on_launch) {
  *on_launch = false;
  for (const DemandUnit& u : node.running) {
    const auto p = std::find_if(plan.placements.begin(), plan.placements.end(),
                                [&](const Placement& pl) { return pl.unit_id == u.id; });
    if (p == plan.placements.end()) return false;
    *on_launch = *on_launch || p->launch_index >= 0;
  }
  return true;
}

// One note per class: how many of its units cannot meet their deadlines,
// and the first of them in full.
void NoteLate(const Snapshot& snapshot, const Policy& policy, const std::vector<size_t>& late, Plan* plan) {
  std::map<std::string, std::vector<size_t>> by_class;
  for (size_t i : late) by_class[snapshot.pending[i].workload_class].push_back(i);
  for (const auto& [cls, units] : by_class) {
    const DemandUnit& u = snapshot.pending[units.front()];
    const DeadlineStanding s = StandingOf(snapshot, policy, u, RestartAllowance(snapshot, u));
    const std::string count =
        units.size() == 1
            ? "unit " + u.id + " cannot meet its deadline"
            : std::to_string(units.size()) + " units cannot meet their deadlines, the first (" + u.id + ")";
    plan->notes.push_back("class " + cls + ": " + count + " " + FormatRfc3339(*u.deadline) +
                          " even on on-demand (" + FormatDuration(s.left) + " of work and " +
                          FormatDuration(s.restart) + " to restart it, " +
                          FormatDuration(std::max(Seconds(0), s.slack + s.left + s.restart)) +
                          " left): planned as any other work");
  }
}

Plan PlanByUniformProgress(const Snapshot& snapshot, const Policy& policy, const PlannerOptions& options) {
  const PendingDeadlineCalls calls = FindPendingDeadlineCalls(snapshot, policy);
  std::vector<DeadlineMove> moves = FindDeadlineMoves(snapshot, policy);
  const bool any_running = std::any_of(snapshot.nodes.begin(), snapshot.nodes.end(), [](const Node& n) {
    return std::any_of(n.running.begin(), n.running.end(),
                       [](const DemandUnit& u) { return u.deadline.has_value(); });
  });
  if (calls.held.empty() && calls.on_demand.empty() && calls.late.empty() && moves.empty() && !any_running)
    return PlanWithForecasts(snapshot, policy, options);
  Plan plan;
  for (int attempt = 0; attempt < 3; ++attempt) {
    if (attempt == 2) moves.clear();
    plan = PlanWithForecasts(Pinned(snapshot, policy, calls, moves), policy, options);
    const size_t before = moves.size();
    std::erase_if(moves, [&](const DeadlineMove& m) {
      bool on_launch = false;
      return !PlacedWhole(plan, snapshot.nodes[m.node_index], &on_launch);
    });
    if (moves.size() == before) break;
  }
  // Moves go first: the scaling rules let removals through in plan order,
  // and a move to on-demand is what keeps a deadline.
  std::vector<TerminationAction> move_terms;
  for (const DeadlineMove& m : moves) {
    const Node& node = snapshot.nodes[m.node_index];
    bool on_launch = false;
    PlacedWhole(plan, node, &on_launch);
    TerminationAction t =
        TerminationOf(node, on_launch ? TerminationKind::kReplace : TerminationKind::kConsolidate);
    for (const DemandUnit& u : node.running) t.moved_unit_ids.push_back(u.id);
    t.reason = m.reason;
    plan.cost_after_usd_per_hour =
        std::max(0.0, plan.cost_after_usd_per_hour - MarginalUsdPerHour(node.offering));
    move_terms.push_back(std::move(t));
  }
  plan.terminations.insert(plan.terminations.begin(), std::make_move_iterator(move_terms.begin()),
                           std::make_move_iterator(move_terms.end()));
  if (!moves.empty()) {
    const auto to_spot = std::count_if(moves.begin(), moves.end(),
                                       [](const DeadlineMove& m) { return m.to == CapacityType::kSpot; });
    plan.notes.push_back("deadlines: " + std::to_string(moves.size() - size_t(to_spot)) +
                         " node(s) move their work to on-demand, " + std::to_string(to_spot) + " to spot");
  }
  NoteLate(snapshot, policy, calls.late, &plan);
  RecordDeadlineHolds(snapshot, calls.held, &plan);
  plan.summary = SummarizePlan(plan, snapshot.pending.size());
  return plan;
}

}  // namespace

Plan PlanWithDeadlines(const Snapshot& snapshot, const Policy& policy, const PlannerOptions& options,
                       DeadlineStrategy strategy) {
  if (strategy == DeadlineStrategy::kHoldPending) return PlanHoldingPending(snapshot, policy, options);
  return PlanByUniformProgress(snapshot, policy, options);
}

}  // namespace gpuscaler::solver_detail
