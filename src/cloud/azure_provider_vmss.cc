// AzureProvider, the VM Scale Set driver: the scale set and VM shapes
// (Microsoft.Compute virtualMachineScaleSets, virtualMachines, delete), and
// the dispatch between the two drivers.
#include "azure_provider_impl.h"
#include "gpuscaler/model/json_fields.h"
#include "gpuscaler/model/text.h"

namespace gpuscaler::cloud {

using nlohmann::json;

AzureProvider::Group AzureProvider::ParseScaleSet(const std::string& name, const json& r) const {
  const json& p = ObjectAt(r, "properties");
  const json& profile = ObjectAt(p, "virtualMachineProfile");
  Group g;
  g.name = name;
  g.resource = r;
  g.etag = StringAt(r, "etag");
  g.vm_size = StringAt(ObjectAt(r, "sku"), "name");
  g.count = static_cast<int>(IntAt(ObjectAt(r, "sku"), "capacity", 0));
  g.spot = EqualsIgnoreCase(StringAt(profile, "priority"), "Spot");
  g.eviction_policy = StringAt(profile, "evictionPolicy");
  for (const json& z : ArrayAt(r, "zones")) {
    if (z.is_string()) g.zones.push_back(z.get<std::string>());
  }
  g.tags = AzureStringMap(ObjectAt(r, "tags"));
  g.provisioning_state = StringAt(p, "provisioningState");
  g.resource_group = AzureIdPart(StringAt(r, "id"), "resourceGroups");
  if (g.resource_group.empty()) g.resource_group = options_.resource_group;
  return g;
}

Result<std::vector<AzureProvider::Member>> AzureProvider::ScaleSetVms(const std::string& resource_group,
                                                                      const std::string& scale_set) {
  const std::string path = "subscriptions/" + options_.subscription_id + "/resourceGroups/" + resource_group +
                           "/providers/Microsoft.Compute/virtualMachineScaleSets/" + scale_set + "/virtualMachines";
  Result<std::vector<json>> vms = client_.List(path, kComputeApiVersion, "$expand=instanceView&");
  if (!vms) return vms.error();
  std::vector<Member> out;
  for (const json& vm : *vms) {
    const json& p = ObjectAt(vm, "properties");
    Member m;
    m.vm_id = StringAt(vm, "instanceId");
    m.id = StringAt(ObjectAt(p, "osProfile"), "computerName");
    if (m.id.empty()) m.id = StringAt(vm, "name");
    if (m.id.empty()) continue;
    int64_t ordinal = -1;
    if (!m.vm_id.empty() && m.vm_id.find_first_not_of("0123456789") == std::string::npos && m.vm_id.size() < 18)
      ordinal = std::stoll(m.vm_id);
    m.ordinal = ordinal;
    const json& zones = ArrayAt(vm, "zones");
    if (!zones.empty() && zones.front().is_string()) m.zone = zones.front().get<std::string>();
    if (WallTime t{}; ParseRfc3339(StringAt(p, "timeCreated"), &t)) m.created = t;
    const std::string provisioning = StringAt(p, "provisioningState");
    std::string power;
    for (const json& s : ArrayAt(ObjectAt(p, "instanceView"), "statuses")) {
      const std::string code = StringAt(s, "code");
      if (code.rfind("PowerState/", 0) == 0) power = code.substr(11);
    }
    const bool leaving = EqualsIgnoreCase(provisioning, "Deleting") || power == "deallocating" ||
                         power == "deallocated" || power == "stopping" || power == "stopped";
    if (EqualsIgnoreCase(provisioning, "Creating") || power == "starting") m.state = InstanceState::kPending;
    if (EqualsIgnoreCase(provisioning, "Failed")) {
      m.failed = true;
      m.state = InstanceState::kPending;
    }
    if (leaving) {
      m.state = InstanceState::kShuttingDown;
      m.evicting = deleting_.count(m.id) == 0;
    }
    out.push_back(std::move(m));
  }
  return out;
}

Result<AzureOutcome> AzureProvider::WriteScaleSet(const Group& group, int count,
                                                  const std::map<std::string, std::string>& tags) {
  // PATCH replaces the tags whole: `tags` is the full set.
  json sku = ObjectAt(group.resource, "sku");
  if (!sku.is_object()) sku = json::object();
  sku["capacity"] = count;
  HeaderList headers;
  if (!group.etag.empty()) headers.push_back({"If-Match", group.etag});
  return client_.Mutate("PATCH", GroupPath(group.name), kComputeApiVersion, json{{"sku", sku}, {"tags", tags}},
                        headers);
}

Status AzureProvider::DeleteScaleSetVms(const Group& group, const std::vector<Member>& members) {
  json ids = json::array();
  for (const Member& m : members) ids.push_back(m.vm_id);
  Result<AzureOutcome> done =
      client_.Mutate("POST", GroupPath(group.name) + "/delete", kComputeApiVersion, json{{"instanceIds", ids}}, {},
                     options_.force_deletion ? "forceDeletion=true&" : "");
  if (!done) return done.error().WithContext("scale set " + group.name);
  return Status::Ok();
}

Result<std::vector<AzureProvider::Member>> AzureProvider::Members(const Group& group) {
  if (options_.driver == AzureDriver::kAks) return AgentPoolMachines(group);
  return ScaleSetVms(group.resource_group, group.name);
}

Result<AzureOutcome> AzureProvider::WriteCount(Group* group, int count,
                                               const std::map<std::string, std::string>& tags) {
  Result<AzureOutcome> wrote = options_.driver == AzureDriver::kAks ? WriteAgentPool(*group, count, tags)
                                                                    : WriteScaleSet(*group, count, tags);
  if (wrote && wrote->precondition_failed) {
    // Another writer came between our read and write: the caller reads again.
    Result<Group> again = ReadGroup(group->name);
    if (!again) return again.error();
    *group = std::move(again).value();
  }
  return wrote;
}

Status AzureProvider::DeleteMembers(const Group& group, const std::vector<Member>& members) {
  if (members.empty()) return Status::Ok();
  for (const Member& m : members) deleting_.insert(m.id);
  return options_.driver == AzureDriver::kAks ? DeleteMachines(group, members) : DeleteScaleSetVms(group, members);
}

}  // namespace gpuscaler::cloud
