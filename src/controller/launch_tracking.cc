// ClusterState: launches accepted but not listed yet (see cluster_state.h).
#include <algorithm>
#include <map>

#include "gpuscaler/controller/cluster_state.h"

namespace gpuscaler {
namespace {

constexpr Seconds kClaimSkew{300};

}  // namespace

void ClusterState::AddAwaited(const InFlightLaunch& launch, const Policy& policy) {
  const NodePoolPolicy* pool = policy.FindPool(launch.pool);
  const Seconds timeout = pool != nullptr ? pool->registration_timeout : NodePoolPolicy{}.registration_timeout;
  for (int k = 0; k < launch.count; ++k) {
    Node node;
    node.id = "awaiting/" + launch.token + "/" + std::to_string(k);
    node.pool = launch.pool;
    node.offering = launch.offering;
    node.launch_time = launch.accepted_at;
    node.state = NodeState::kLaunching;
    NodeRecord info;
    info.awaited_token = launch.token;
    info.give_up_at = launch.accepted_at + timeout;
    info.decision_id = launch.decision_id;
    info.reason = launch.reason;
    if (const int o = book_.Find(launch.offering.Key()); o >= 0) {
      info.offering = o;
      node.offering.usd_per_hour = book_.offerings()[static_cast<size_t>(o)].usd_per_hour;
    }
    inventory_.Add(snapshot_->nodes, std::move(node), std::move(info));
  }
}

void ClusterState::RestoreAwaited(const Policy& policy, WallTime now, TickReport* report) {
  if (store_ == nullptr || !options_.restore_from_store) return;
  const NodePoolPolicy defaults;
  Seconds longest = policy.pools.empty() ? defaults.registration_timeout : Seconds(0);
  for (const NodePoolPolicy& p : policy.pools) longest = std::max(longest, p.registration_timeout);
  Result<std::vector<AcceptedLaunch>> accepted = store_->AcceptedLaunchesSince(now - longest);
  if (!accepted) {
    // Degraded: the work of those launches may be planned again.
    report->errors.push_back(accepted.error().WithContext("reading launches awaited before the restart"));
    return;
  }
  if (accepted->empty()) return;
  Result<std::vector<NodeLifecycle>> running = store_->NodeLifecycles(now, now);
  if (!running) {
    report->errors.push_back(running.error().WithContext("reading launches awaited before the restart"));
    return;
  }
  for (const NodeLifecycle& n : *running) {
    if (!n.end_time) inventory_.NoteRecordedBeforeStart(n.instance_id);
  }
  // The instances that came are shared by the decision's launches into the
  // pool: each launch, in order, takes off what it can.
  std::map<std::pair<int64_t, std::string>, size_t> arrived;
  for (const AcceptedLaunch& a : *accepted) {
    arrived.emplace(std::make_pair(a.row.action.decision_id, a.row.action.pool), a.arrived_instance_ids.size());
  }
  for (const AcceptedLaunch& a : *accepted) {
    const ActionRecord& action = a.row.action;
    size_t& came = arrived[{action.decision_id, action.pool}];
    int awaited = action.count - static_cast<int>(a.row.result_instance_ids.size());
    const int taken = std::min(awaited, static_cast<int>(came));
    awaited -= taken;
    came -= static_cast<size_t>(taken);
    if (awaited <= 0 || !a.row.decision_time) continue;
    // Past its pool's registration_timeout: given up already (before the
    // restart, or its work is planned anew now).
    const NodePoolPolicy* pool = policy.FindPool(action.pool);
    const Seconds timeout = pool != nullptr ? pool->registration_timeout : defaults.registration_timeout;
    if (*a.row.decision_time + timeout <= now) continue;
    // Accepted at its decision's time: given up at that time plus the
    // pool's registration_timeout, as it would have been without a restart.
    AddAwaited({action.idempotency_token, action.pool, action.offering, awaited, action.decision_id, action.reason,
                *a.row.decision_time},
               policy);
    MarkChanged(true);
  }
}

bool ClusterState::ClaimAwaited(const Instance& instance, const Policy& policy, WallTime now, TickReport* report) {
  // Its own launch's placeholder first. Else the oldest of its pool: an Auto
  // Scaling group tags every new instance with the token of the latest raise,
  // so an earlier launch's instances may carry a later token.
  auto tag = instance.tags.find(kIntentTag);
  const std::string token = tag == instance.tags.end() ? "" : tag->second;
  const size_t none = snapshot_->nodes.size();
  size_t i = none;
  for (size_t j = 0; j < snapshot_->nodes.size(); ++j) {
    const NodeRecord& candidate = inventory_.record(j);
    if (!candidate.placeholder() || snapshot_->nodes[j].pool != instance.pool) continue;
    if (candidate.awaited_token == token) {
      i = j;
      break;
    }
    // An instance launched well before the launch was accepted is not one
    // of its instances (the margin covers clock skew between this host and
    // the cloud).
    if (instance.launch_time + kClaimSkew < snapshot_->nodes[j].launch_time) continue;
    if (i == none || candidate.give_up_at < inventory_.record(i).give_up_at) i = j;
  }
  if (i == none) return false;
  const NodeRecord awaited = inventory_.record(i);
  NodeRecord info;
  Node node = NodeFor(instance, NodeStateOf(instance.state), policy, &info);
  info.launched_here = true;
  inventory_.Claim(snapshot_->nodes, i, std::move(node), std::move(info));
  usage_.AddNode(instance.instance_id, now);
  MarkChanged(false);  // coming capacity became a listed node: the planner already counted it
  if (store_ != nullptr) {
    NodeLaunchRecord rec{instance.instance_id, instance.instance_id, instance.pool, instance.offering, 0,
                         instance.launch_time, awaited.decision_id, awaited.reason};
    if (const InstanceType* t = book_.catalog().FindInstanceType(instance.offering.instance_type))
      rec.gpu_count = t->gpu_count;
    report->Record(store_->RecordNodeLaunch(rec));
  }
  return true;
}

void ClusterState::ExpireAwaited(WallTime now, TickReport* report) {
  for (size_t i = snapshot_->nodes.size(); i-- > 0;) {
    const NodeRecord& info = inventory_.record(i);
    if (!info.placeholder() || info.give_up_at > now) continue;
    // The cloud accepted the launch but no instance came: treat the
    // offering like one that ran out of capacity, and plan the work again.
    book_.availability().RecordCapacityError(snapshot_->nodes[i].offering.Key(), now);
    ++report->registration_failures;
    report->errors.push_back(Error::Capacity("launch " + info.awaited_token + " (pool " + snapshot_->nodes[i].pool +
                                             "): accepted, but no instance was listed within the pool's "
                                             "registration_timeout; given up"));
    RemoveNode(i, now, "never listed", report);
    MarkChanged(true);
  }
}

const std::vector<Node>& ClusterState::BilledNodes() { return inventory_.Billed(snapshot_->nodes); }

}  // namespace gpuscaler
