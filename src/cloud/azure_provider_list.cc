// AzureProvider: listing, termination and Spot evictions.
#include <algorithm>

#include "azure_provider_impl.h"

namespace gpuscaler::cloud {

Result<std::vector<std::pair<std::string, AzureProvider::Group>>> AzureProvider::OwnedGroups() {
  std::vector<std::pair<std::string, Group>> out;
  for (const auto& [pool, target] : options_.pools) {
    for (const std::string& name : target.groups) {
      Result<Group> g = ReadGroup(name);
      if (!g) {
        if (g.error().category() == ErrorCategory::kNotFound) continue;
        return g.error().WithContext(name);
      }
      if (!CheckGroup(*g, pool).ok()) continue;  // not ours to list or touch
      out.emplace_back(pool, std::move(g).value());
    }
  }
  return out;
}

Result<std::vector<Instance>> AzureProvider::ListInstances() {
  Result<std::vector<std::pair<std::string, Group>>> groups = OwnedGroups();
  if (!groups) return groups.error();
  const WallTime now = client_.clock().WallNow();
  std::vector<Instance> out;
  for (const auto& [pool, group] : *groups) {
    Result<std::vector<Member>> members = Members(group);
    if (!members) return members.error().WithContext(group.name);
    const auto tag = group.tags.find(kAzureIntentsTag);
    const std::vector<Intent> intents = ParseIntents(tag == group.tags.end() ? "" : tag->second);
    for (const Intent& intent : intents) {
      auto token = tokens_.find(intent.hash);
      if (token == tokens_.end()) continue;
      for (const Member& m : IntentMembers(intents, intent.hash, *members)) launched_.emplace(m.id, token->second);
    }
    for (const Member& m : *members) {
      first_seen_.emplace(m.id, now);
      out.push_back(ToInstance(pool, group, m));
    }
  }
  // ARM shows an eviction only once the VM is going, so a Spot VM can
  // vanish between the controller's poll for notices and this listing:
  // listed once more, shutting down, the next poll's notice finds its node
  // known (interrupted, drained) rather than gone (vanished).
  std::map<std::string, Instance> spot_now;
  for (const Instance& i : out) {
    if (i.offering.capacity_type == CapacityType::kSpot) spot_now.emplace(i.instance_id, i);
  }
  for (const auto& [id, before] : spot_listed_) {
    if (spot_now.count(id) != 0 || deleting_.count(id) != 0 || noticed_.count(id) != 0) continue;
    Instance going = before;
    going.state = InstanceState::kShuttingDown;
    out.push_back(std::move(going));
  }
  spot_listed_ = std::move(spot_now);
  std::sort(out.begin(), out.end(),
            [](const Instance& a, const Instance& b) { return a.instance_id < b.instance_id; });
  return out;
}

Status AzureProvider::Terminate(const std::vector<std::string>& instance_ids) {
  std::set<std::string> wanted(instance_ids.begin(), instance_ids.end());
  if (wanted.empty()) return Status::Ok();
  Result<std::vector<std::pair<std::string, Group>>> groups = OwnedGroups();
  if (!groups) return groups.error();
  for (const auto& [pool, group] : *groups) {
    Result<std::vector<Member>> members = Members(group);
    if (!members) return members.error().WithContext(group.name);
    std::vector<Member> leaving;
    for (const Member& m : *members) {
      // Gone, or already on its way out: nothing to do.
      if (wanted.count(m.id) == 0 || m.state == InstanceState::kShuttingDown) continue;
      leaving.push_back(m);
    }
    if (Status s = DeleteMembers(group, leaving); !s.ok()) return s;
  }
  // Ids in none of this installation's groups (gone, or another's) are skipped.
  return Status::Ok();
}

Result<std::vector<InterruptionNotice>> AzureProvider::PollInterruptions() {
  Result<std::vector<std::pair<std::string, Group>>> groups = OwnedGroups();
  if (!groups) return groups.error();
  const WallTime now = client_.clock().WallNow();
  std::vector<InterruptionNotice> out;
  auto notice = [&](const std::string& id, WallTime deadline) {
    if (!noticed_.insert(id).second) return;
    out.push_back({id, now, deadline});
  };
  std::optional<Error> failed;
  for (const auto& [pool, group] : *groups) {
    if (!group.spot || unreadable_.count(group.name) != 0) continue;
    Result<std::vector<Member>> vms = SpotVms(group);
    if (!vms) {
      // No rights on AKS's node resource group: notices come from the node
      // side only (docs/azure.md); do not ask again.
      if (options_.driver == AzureDriver::kAks && vms.error().category() == ErrorCategory::kAuth) {
        unreadable_.insert(group.name);
        continue;
      }
      if (!failed) failed = vms.error().WithContext(group.name);
      continue;
    }
    std::set<std::string> present;
    for (const Member& m : *vms) {
      present.insert(m.id);
      if (m.evicting && deleting_.count(m.id) == 0) notice(m.id, now + options_.interruption_notice);
    }
    // Listed before, gone now, and not deleted by us: evicted.
    for (auto it = spot_seen_.begin(); it != spot_seen_.end();) {
      if (it->second.group != group.name || present.count(it->first) != 0) {
        ++it;
        continue;
      }
      if (deleting_.count(it->first) == 0) notice(it->first, now);
      it = spot_seen_.erase(it);
    }
    for (const std::string& id : present) spot_seen_[id] = {pool, group.name, true};
  }
  if (out.empty() && failed) return *failed;
  return out;
}

}  // namespace gpuscaler::cloud
