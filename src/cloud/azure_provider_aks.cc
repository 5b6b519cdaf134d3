// AzureProvider, the AKS agent-pool driver: the agent pool and machine
// shapes (Microsoft.ContainerService agentPools, machines,
// deleteMachines).
#include "azure_provider_impl.h"
#include "gpuscaler/model/json_fields.h"
#include "gpuscaler/model/text.h"

namespace gpuscaler::cloud {

using nlohmann::json;

AzureProvider::Group AzureProvider::ParseAgentPool(const std::string& name, const json& r) const {
  const json& p = ObjectAt(r, "properties");
  Group g;
  g.name = name;
  g.resource = r;
  g.etag = StringAt(p, "eTag");
  g.vm_size = StringAt(p, "vmSize");
  g.spot = EqualsIgnoreCase(StringAt(p, "scaleSetPriority"), "Spot");
  g.eviction_policy = StringAt(p, "scaleSetEvictionPolicy");
  for (const json& z : ArrayAt(p, "availabilityZones")) {
    if (z.is_string()) g.zones.push_back(z.get<std::string>());
  }
  g.count = static_cast<int>(IntAt(p, "count", 0));
  g.tags = AzureStringMap(ObjectAt(p, "tags"));
  g.provisioning_state = StringAt(p, "provisioningState");
  auto autoscale = p.is_object() ? p.find("enableAutoScaling") : p.end();
  g.autoscaling = p.is_object() && autoscale != p.end() && autoscale->is_boolean() && autoscale->get<bool>();
  g.resource_group = options_.resource_group;
  return g;
}

Result<std::vector<AzureProvider::Member>> AzureProvider::AgentPoolMachines(const Group& group) {
  Result<std::vector<json>> machines = client_.List(GroupPath(group.name) + "/machines", kContainerServiceApiVersion);
  if (!machines) return machines.error();
  // Machines carry no state of their own: while the pool is growing, those
  // of its newest raise are still coming up.
  const std::vector<Intent> intents = ParseIntents(group.tags.count(kAzureIntentsTag) != 0
                                                       ? group.tags.at(kAzureIntentsTag)
                                                       : std::string());
  const bool growing = EqualsIgnoreCase(group.provisioning_state, "Creating") ||
                       EqualsIgnoreCase(group.provisioning_state, "Scaling") ||
                       EqualsIgnoreCase(group.provisioning_state, "Updating");
  std::vector<Member> out;
  for (const json& m : *machines) {
    Member member;
    member.id = StringAt(m, "name");
    if (member.id.empty()) continue;
    member.vm_id = StringAt(ObjectAt(m, "properties"), "resourceId");
    member.ordinal = MachineOrdinal(member.id).value_or(-1);
    const json& zones = ArrayAt(m, "zones");
    if (!zones.empty() && zones.front().is_string()) member.zone = zones.front().get<std::string>();
    member.state = growing && !intents.empty() && member.ordinal > intents.back().mark ? InstanceState::kPending
                                                                                       : InstanceState::kRunning;
    if (deleting_.count(member.id) != 0) member.state = InstanceState::kShuttingDown;
    out.push_back(std::move(member));
  }
  return out;
}

Result<AzureOutcome> AzureProvider::WriteAgentPool(const Group& group, int count,
                                                   const std::map<std::string, std::string>& tags) {
  // An agent pool has no PATCH: the whole pool as read goes back, with the
  // count and tags changed, under its eTag. Read-only fields are left out.
  json properties = ObjectAt(group.resource, "properties");
  if (!properties.is_object()) properties = json::object();
  for (const char* field : {"provisioningState", "eTag", "currentOrchestratorVersion", "status"})
    properties.erase(field);
  properties["count"] = count;
  properties["tags"] = tags;
  HeaderList headers;
  if (!group.etag.empty()) headers.push_back({"If-Match", group.etag});
  return client_.Mutate("PUT", GroupPath(group.name), kContainerServiceApiVersion, json{{"properties", properties}},
                        headers);
}

Status AzureProvider::DeleteMachines(const Group& group, const std::vector<Member>& members) {
  json names = json::array();
  for (const Member& m : members) names.push_back(m.id);
  Result<AzureOutcome> done = client_.Mutate("POST", GroupPath(group.name) + "/deleteMachines",
                                             kContainerServiceApiVersion, json{{"machineNames", names}});
  if (!done) return done.error().WithContext("agent pool " + group.name);
  return Status::Ok();
}

Result<std::vector<AzureProvider::Member>> AzureProvider::SpotVms(const Group& group) {
  if (options_.driver == AzureDriver::kVmss) return ScaleSetVms(group.resource_group, group.name);
  Result<std::vector<Member>> machines = AgentPoolMachines(group);
  if (!machines) return machines.error();
  // The pool's scale set, in the node resource group, from a machine's VM id:
  // /subscriptions/…/resourceGroups/MC_…/providers/Microsoft.Compute/
  // virtualMachineScaleSets/aks-gpu-12345678-vmss/virtualMachines/3.
  for (const Member& m : *machines) {
    const std::string rg = AzureIdPart(m.vm_id, "resourceGroups");
    const std::string set = AzureIdPart(m.vm_id, "virtualMachineScaleSets");
    if (rg.empty() || set.empty()) continue;
    Result<std::vector<Member>> vms = ScaleSetVms(rg, set);
    if (!vms) return vms.error();
    // AKS names a VM's computer as its machine (and node).
    return vms;
  }
  return std::vector<Member>{};
}

}  // namespace gpuscaler::cloud
