#include "gpuscaler/controller/warm_capacity.h"

#include <algorithm>

#include "gpuscaler/solver/warm_pool.h"

namespace gpuscaler {

void WarmCapacity::AddFilling(const Instance& instance, WallTime now) {
  Entry& e = entries_[instance.instance_id];
  e.instance = instance;
  e.since = now;
}

void WarmCapacity::MarkStopping(const std::string& instance_id, WallTime now) {
  auto it = entries_.find(instance_id);
  if (it == entries_.end()) return;
  it->second.stop_sent = true;
  it->second.stopped = true;
  it->second.since = now;
}

void WarmCapacity::Woken(const std::string& instance_id) {
  entries_.erase(instance_id);
  returning_.insert(instance_id);
}

bool WarmCapacity::Listed(const std::vector<Instance>& listed, const Policy& policy, WallTime now) {
  bool changed = false;
  std::set<std::string> seen;
  for (const Instance& inst : listed) {
    seen.insert(inst.instance_id);
    auto it = entries_.find(inst.instance_id);
    if (inst.state == InstanceState::kStopped) {
      const NodePoolPolicy* pool = policy.FindPool(inst.pool);
      if (it == entries_.end()) {
        // Adopted only for a pool that keeps warm capacity: a stopped
        // instance of another pool is left alone (listed, never woken).
        if (pool == nullptr || !pool->warm) continue;
        Entry& e = entries_[inst.instance_id];
        e.instance = inst;
        e.stopped = true;
        e.stop_sent = true;
        e.since = now;
        changed = true;
        continue;
      }
      if (!it->second.stopped) {
        it->second.stopped = true;
        it->second.since = now;
        changed = true;
      }
      it->second.instance.state = inst.state;
      continue;
    }
    if (it != entries_.end()) it->second.instance.state = inst.state;
  }
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (seen.count(it->first) == 0) {
      it = entries_.erase(it);
      changed = true;
    } else {
      ++it;
    }
  }
  std::erase_if(returning_, [&](const std::string& id) { return seen.count(id) == 0; });
  return changed;
}

void WarmCapacity::NodeActionsDue(const Snapshot& snapshot, const Policy& policy, ClusterNodes* nodes,
                                  NodeActions* actions) {
  const bool synced = nodes != nullptr && nodes->Synced();
  for (auto& [id, e] : entries_) {
    if (e.stop_sent || e.instance.state != InstanceState::kRunning) continue;
    if (nodes != nullptr) {
      if (!synced) continue;
      const std::optional<NodeHealth> health = nodes->Health(id);
      if (!health) continue;
      // Cordoned once registered: its GPUs are not allocatable yet, so no
      // GPU pod can have landed on it.
      if (!e.cordoned) {
        actions->cordons.push_back(id);
        e.cordoned = true;
      }
      if (!health->ready) continue;
    }
    const NodePoolPolicy* pool = policy.FindPool(e.instance.pool);
    NodeActions::WarmStop stop{id, pool != nullptr && pool->warm ? pool->warm->state : WarmState::kStopped, 0};
    if (pool != nullptr) stop.waiting_usd_per_hour = WarmWaitingUsdPerHour(snapshot, *pool, e.instance.offering.instance_type);
    actions->warm_stops.push_back(std::move(stop));
  }
  if (nodes == nullptr) {
    returning_.clear();
    return;
  }
  if (!synced) return;
  for (auto it = returning_.begin(); it != returning_.end();) {
    const std::optional<NodeHealth> health = nodes->Health(*it);
    if (health && health->ready) {
      actions->warm_returns.push_back(*it);
      it = returning_.erase(it);
    } else {
      ++it;
    }
  }
}

std::vector<WarmNode> WarmCapacity::Publish(const Snapshot& snapshot, const Policy& policy) const {
  std::vector<WarmNode> out;
  out.reserve(entries_.size());
  for (const auto& [id, e] : entries_) {
    WarmNode w;
    w.instance_id = id;
    w.pool = e.instance.pool;
    w.offering = e.instance.offering;
    w.stopped = e.stopped;
    w.since = e.since;
    if (const NodePoolPolicy* pool = policy.FindPool(w.pool))
      w.waiting_usd_per_hour = WarmWaitingUsdPerHour(snapshot, *pool, w.offering.instance_type);
    // The price it would run at once woken: the snapshot's for its offering.
    for (const Offering& o : snapshot.offerings) {
      if (o.instance_type == w.offering.instance_type && o.zone == w.offering.zone &&
          o.capacity_type == w.offering.capacity_type && o.reservation_id.empty()) {
        w.offering = o;
        break;
      }
    }
    out.push_back(std::move(w));
  }
  std::stable_sort(out.begin(), out.end(), [](const WarmNode& a, const WarmNode& b) { return a.pool < b.pool; });
  return out;
}

}  // namespace gpuscaler
