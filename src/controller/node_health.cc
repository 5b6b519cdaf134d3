// ClusterState: registration timeouts, repairs and rebalance recommendations
// (see cluster_state.h).
#include <algorithm>
#include <chrono>
#include <set>

#include "gpuscaler/controller/cluster_state.h"

namespace gpuscaler {
namespace {

std::string Minutes(Seconds s) { return std::to_string(s.count() / 60) + "m"; }

}  // namespace

void ClusterState::CheckNodeHealth(const Policy& policy, WallTime now, std::vector<NodeMilestone>* reached,
                                   TickReport* report) {
  // Fail static: with the nodes unknown, nothing is given up or replaced.
  if (!nodes_->Synced()) return;
  for (size_t i = 0; i < snapshot_->nodes.size(); ++i) {
    NodeRecord& info = inventory_.record(i);
    Node& node = snapshot_->nodes[i];
    if (info.placeholder() || !info.repair.empty() || info.notice_deadline) continue;
    if (node.state != NodeState::kLaunching && node.state != NodeState::kReady) continue;
    const NodePoolPolicy* pool = policy.FindPool(node.pool);
    const NodePoolPolicy defaults;
    const Seconds registration_timeout = pool != nullptr ? pool->registration_timeout : defaults.registration_timeout;
    const Seconds repair_after = pool != nullptr ? pool->repair_after : defaults.repair_after;
    const std::optional<NodeHealth> health = nodes_->Health(node.instance_id);
    if (health && !info.node_seen) {
      info.node_seen = true;
      Milestone(i, "registered", now, reached);
    }
    // A node that was there before this process started has registered
    // once, if it serves or is older than the registration timeout: it is
    // judged by repair_after, never by the registration timeout. A younger
    // one that does not serve yet was still joining at the restart: the
    // timeout from its launch applies, as it did before.
    if (!info.registered && health && !info.launched_here && !info.joining_at_start) {
      if ((health->ready && health->gpus_allocatable) || now - node.launch_time >= registration_timeout) {
        info.registered = true;
      } else {
        info.joining_at_start = true;
      }
    }
    if (!info.registered) {
      if (health && health->ready && health->gpus_allocatable) {
        info.registered = true;
        Milestone(i, "gpus_allocatable", now, reached);
        continue;
      }
      if (now - node.launch_time < registration_timeout) continue;
      info.repair = "registration timeout: no Ready node with GPUs allocatable " + Minutes(registration_timeout) +
                    " after launch (" + (health ? (health->ready ? "node Ready, no nvidia.com/gpu allocatable"
                                                                 : "node registered, not Ready")
                                                : "no node registered") +
                    ")";
      book_.availability().RecordCapacityError(node.offering.Key(), now);
      ++report->registration_failures;
      // Its capacity never came: the planner places its work elsewhere.
      node.state = NodeState::kTerminating;
    } else {
      if (repair_after.count() <= 0 || !health || health->ready || !health->ready_changed_at) continue;
      if (now - *health->ready_changed_at < repair_after) continue;
      info.repair = "repair: node NotReady for " + Minutes(std::chrono::duration_cast<Seconds>(now - *health->ready_changed_at)) +
                    " (repair_after " + Minutes(repair_after) + "); replaced";
      // Its work is demand again (replacement first), like a noticed node's.
      node.state = NodeState::kDraining;
      inventory_.NoteReplacementDemandMoved();
    }
    report->node_notes.push_back(node.instance_id + ": " + info.repair);
    MarkChanged(true);
  }
}

void ClusterState::HoldForReplacement(const std::string& instance_id, bool held) {
  const std::optional<size_t> index = inventory_.Find(instance_id);
  if (!index) return;
  Node& node = Writable().nodes[*index];
  if (held && node.state == NodeState::kReady) node.state = NodeState::kHeldForReplacement;
  if (!held && node.state == NodeState::kHeldForReplacement) node.state = NodeState::kReady;
  MarkChanged(true);
}

void ClusterState::Protect(const std::string& instance_id, bool on) {
  const std::optional<size_t> index = inventory_.Find(instance_id);
  if (!index) {
    inventory_.SetProtected(instance_id, false);
    return;
  }
  Node& node = Writable().nodes[*index];
  if (on && !node.do_not_disrupt) {
    node.do_not_disrupt = true;
    inventory_.SetProtected(instance_id, true);
    MarkChanged(true);
  } else if (!on && inventory_.SetProtected(instance_id, false)) {
    node.do_not_disrupt = false;
    MarkChanged(true);
  }
}

bool ClusterState::CanTakeWork(const std::string& instance_id) {
  const std::optional<size_t> index = inventory_.Find(instance_id);
  if (!index || snapshot_->nodes[*index].state != NodeState::kReady) return false;
  if (nodes_ == nullptr) return true;
  const std::optional<NodeHealth> health = nodes_->Health(instance_id);
  return health && health->ready && health->gpus_allocatable;
}

void ClusterState::Milestone(size_t index, const char* stage, WallTime now,
                             std::vector<NodeMilestone>* reached) const {
  const NodeRecord& info = inventory_.record(index);
  if (!info.launched_here) return;
  reached->push_back(
      {info.family, stage, std::chrono::duration<double>(now - snapshot_->nodes[index].launch_time).count()});
}

std::vector<TerminationAction> ClusterState::Repairs() const {
  std::vector<TerminationAction> out;
  for (size_t i = 0; i < snapshot_->nodes.size(); ++i) {
    if (inventory_.record(i).repair.empty()) continue;
    const Node& n = snapshot_->nodes[i];
    TerminationAction t = TerminationOf(n, TerminationKind::kEmpty);
    t.reason = inventory_.record(i).repair;
    for (const DemandUnit& u : n.running) t.moved_unit_ids.push_back(u.id);
    out.push_back(std::move(t));
  }
  return out;
}

std::string_view ToString(DrainEnd e) {
  switch (e) {
    case DrainEnd::kDrained: return "drained";
    case DrainEnd::kTimedOut: return "timed out";
    case DrainEnd::kRefused: return "refused";
    case DrainEnd::kFailed: return "failed";
  }
  return "failed";
}

void ClusterState::OnRebalance(const std::string& instance_id, const Policy& policy, NodeActions* node_actions,
                               TickReport* report) {
  ++report->rebalance_recommendations;
  const std::optional<size_t> index = inventory_.Find(instance_id);
  if (!index || policy.spot.on_rebalance == RebalanceResponse::kIgnore) return;
  NodeRecord& info = inventory_.record(*index);
  Node& node = snapshot_->nodes[*index];
  // A node held for a replacement is cordoned too: should the replacement
  // fail, the recommendation still holds.
  if (info.notice_deadline || (node.state != NodeState::kReady && node.state != NodeState::kHeldForReplacement))
    return;
  node.state = NodeState::kCordoned;
  if (nodes_ != nullptr) node_actions->cordons.push_back(instance_id);
  if (policy.spot.on_rebalance == RebalanceResponse::kReplace) {
    info.rebalance_replace = true;
    info.rebalanced_at = snapshot_->time;
    inventory_.NoteReplacementDemandMoved();
  }
  report->node_notes.push_back(instance_id + ": rebalance recommendation: " + std::string(ToString(policy.spot.on_rebalance)));
  MarkChanged(true);
}

void ClusterState::RemoveRebalanced(WallTime now) {
  std::set<std::string> launching_pools;
  for (const Node& n : snapshot_->nodes) {
    if (n.state == NodeState::kLaunching) launching_pools.insert(n.pool);
  }
  for (size_t i = 0; i < snapshot_->nodes.size(); ++i) {
    NodeRecord& info = inventory_.record(i);
    // Not in the tick of the recommendation: its replacement is planned after this.
    if (!info.rebalance_replace || !info.repair.empty() || info.rebalanced_at >= now) continue;
    // Its replacement was planned with the recommendation; once nothing of
    // the pool is still launching, the replacement has come.
    const bool overdue = info.remove_by && now >= *info.remove_by;
    if (launching_pools.count(snapshot_->nodes[i].pool) != 0 && !overdue) continue;
    info.repair = info.retire_reason.empty() ? "rebalance recommendation: replaced, then removed"
                                             : info.retire_reason + ": replaced, then removed";
    MarkChanged(true);
  }
}

void ClusterState::RetireBlockNodes(const Policy& policy, WallTime now, NodeActions* node_actions,
                                    TickReport* report) {
  for (size_t i = 0; i < snapshot_->nodes.size(); ++i) {
    NodeRecord& info = inventory_.record(i);
    Node& node = snapshot_->nodes[i];
    if (node.offering.capacity_type != CapacityType::kReserved || info.rebalance_replace || info.notice_deadline ||
        !info.repair.empty())
      continue;
    if (node.state != NodeState::kReady && node.state != NodeState::kCordoned) continue;
    const auto res = std::find_if(snapshot_->reservations.begin(), snapshot_->reservations.end(),
                                  [&](const Reservation& r) { return r.id == node.offering.reservation_id; });
    if (res == snapshot_->reservations.end()) continue;
    const Seconds drain_timeout = policy.disruption.drain_timeout;
    const std::optional<WallTime> retire = res->RetireAt(node.offering.launch_latency, drain_timeout);
    if (!retire || now < *retire) continue;
    node.state = NodeState::kCordoned;
    if (nodes_ != nullptr) node_actions->cordons.push_back(node.instance_id);
    info.rebalance_replace = true;
    info.rebalanced_at = now;
    info.remove_by = *res->TakeBackAt() - drain_timeout;
    info.retire_reason = "capacity block " + res->id + " is taken back at " + FormatRfc3339(*res->TakeBackAt());
    inventory_.NoteReplacementDemandMoved();
    report->node_notes.push_back(node.instance_id + ": " + info.retire_reason + ": retired (cordoned, work replaced)");
    MarkChanged(true);
  }
}

}  // namespace gpuscaler
