// Microsoft.ContainerService managedClusters: the cluster (its tags), its
// agent pools (list, get, create-or-update, delete, deleteMachines) and
// their machines. Each pool is a scale set of the node resource group.
#include <cstdio>
#include <nlohmann/json.hpp>

#include "sim/cloud_emulator/azure_impl.h"

namespace gpuscaler::sim {

using nlohmann::json;

namespace {

constexpr const char* kAksProvider = "Microsoft.ContainerService";

std::string AksPoolState(const std::string& scale_set_state) {
  return scale_set_state;  // Creating, Updating, Deleting, Succeeded, Failed: AKS's words too
}

// AKS runs one operation on a pool at a time: another while one is in
// progress is refused.
EmulatorResponse AksOperationInProgress(const std::string& state) {
  return azure::ArmError(409, "OperationNotAllowed",
                         "Operation is not allowed because there's an in progress agentpool operation (" + state +
                             "). Please wait for it to finish before starting a new operation. See "
                             "https://aka.ms/aks-pending-operation for more details.");
}

// An agent pool's properties.eTag: its scale set's id and change count.
std::string AksEtag(const std::string& unique_id, int etag) {
  char counter[16];
  std::snprintf(counter, sizeof counter, "%012d", etag);
  return unique_id.substr(0, 24) + counter;
}

// If-Match (the pool's eTag, or *) and If-None-Match: * of a PUT or
// DELETE of a pool (`etag` empty: there is none).
std::optional<EmulatorResponse> AksPrecondition(const EmulatorRequest& request, const std::string& etag) {
  std::string if_match = azure::Header(request, "If-Match");
  if (if_match.size() >= 2 && if_match.front() == '"' && if_match.back() == '"')
    if_match = if_match.substr(1, if_match.size() - 2);
  const std::string if_none = azure::Header(request, "If-None-Match");
  if ((!if_match.empty() && (etag.empty() || (if_match != "*" && if_match != etag))) ||
      (if_none == "*" && !etag.empty())) {
    return azure::ArmError(412, "PreconditionFailed",
                           "The eTag provided in the If-Match or If-None-Match header does not match the agent "
                           "pool's eTag.");
  }
  return std::nullopt;
}

bool AksBusy(const std::string& state) {
  return state == "Creating" || state == "Updating" || state == "Scaling" || state == "Deleting";
}

}  // namespace

std::string AzureEmulator::AgentPoolJson(const ScaleSet& s, WallTime now) const {
  const AzureClusterSpec& c = scenario_.clusters[*s.cluster];
  json props = {{"count", s.spec.capacity},
                {"vmSize", s.spec.vm_size},
                {"osType", "Linux"},
                {"osSKU", "Ubuntu"},
                {"mode", s.pool.mode},
                {"type", "VirtualMachineScaleSets"},
                {"orchestratorVersion", c.kubernetes_version},
                {"currentOrchestratorVersion", c.kubernetes_version},
                {"provisioningState", AksPoolState(ProvisioningState(s, now))},
                {"powerState", {{"code", "Running"}}},
                {"scaleSetPriority", s.spec.priority},
                {"nodeLabels", s.pool.node_labels},
                {"nodeTaints", s.pool.node_taints},
                {"tags", s.pool.tags},
                {"enableAutoScaling", false},
                {"eTag", AksEtag(s.unique_id, s.etag)}};
  if (!s.error_code.empty() && ProvisioningState(s, now) == "Failed") {
    props["status"] = {{"provisioningError", {{"code", s.error_code}, {"message", s.error_message}}}};
  }
  if (s.spec.priority == "Spot") {
    props["scaleSetEvictionPolicy"] = s.spec.eviction_policy;
    props["spotMaxPrice"] = s.spec.max_price;
  }
  if (!s.spec.zones.empty()) props["availabilityZones"] = s.spec.zones;
  json out = {{"id", ResourceId(c.resource_group, std::string(kAksProvider) + "/managedClusters/" + c.name +
                                                      "/agentPools/" + s.pool.name)},
              {"name", s.pool.name},
              {"type", "Microsoft.ContainerService/managedClusters/agentPools"},
              {"properties", props}};
  return out.dump();
}

std::string AzureEmulator::MachineJson(const ScaleSet& s, const Vm& vm) const {
  const AzureClusterSpec& c = scenario_.clusters[*s.cluster];
  const std::string ip = "10.224." + std::to_string(vm.ip / 256) + "." + std::to_string(vm.ip % 256);
  json out = {{"id", ResourceId(c.resource_group, std::string(kAksProvider) + "/managedClusters/" + c.name +
                                                      "/agentPools/" + s.pool.name + "/machines/" +
                                                      vm.info.computer_name)},
              {"name", vm.info.computer_name},
              {"type", "Microsoft.ContainerService/managedClusters/agentPools/machines"},
              {"properties",
               {{"resourceId", ResourceId(s.spec.resource_group, "Microsoft.Compute/virtualMachineScaleSets/" +
                                                                     s.spec.name + "/virtualMachines/" +
                                                                     vm.info.instance_id)},
                {"network", {{"ipAddresses", {{{"family", "IPv4"}, {"ip", ip}}}}}}}}};
  if (!vm.info.zone.empty()) out["zones"] = {vm.info.zone};
  return out.dump();
}

std::string AzureEmulator::ClusterJson(size_t cluster, WallTime now) const {
  const AzureClusterSpec& c = scenario_.clusters[cluster];
  json profiles = json::array();
  for (const ScaleSet& s : scale_sets_) {
    if (s.cluster != cluster || (s.deleted_at && now >= *s.deleted_at)) continue;
    json pool = json::parse(AgentPoolJson(s, now))["properties"];
    pool["name"] = s.pool.name;
    profiles.push_back(pool);
  }
  json out = {{"id", ResourceId(c.resource_group, std::string(kAksProvider) + "/managedClusters/" + c.name)},
              {"name", c.name},
              {"type", "Microsoft.ContainerService/ManagedClusters"},
              {"location", scenario_.location},
              {"tags", c.tags},
              {"properties",
               {{"provisioningState", "Succeeded"},
                {"powerState", {{"code", "Running"}}},
                {"kubernetesVersion", c.kubernetes_version},
                {"currentKubernetesVersion", c.kubernetes_version},
                {"dnsPrefix", c.name + "-dns"},
                {"nodeResourceGroup", NodeResourceGroup(cluster)},
                {"agentPoolProfiles", profiles}}}};
  return out.dump();
}

EmulatorResponse AzureEmulator::PutAgentPool(const EmulatorRequest& request, size_t cluster, const std::string& name,
                                             WallTime now) {
  const json in = json::parse(request.body, nullptr, false);
  if (!in.is_object()) return azure::ArmError(400, "InvalidRequestContent", "The request content was invalid.");
  const json props = in.value("properties", json::object());
  ScaleSet* existing = FindPool(cluster, name, now);
  if (existing != nullptr && AksBusy(ProvisioningState(*existing, now))) {
    return AksOperationInProgress(ProvisioningState(*existing, now));
  }
  AzureAgentPoolSpec pool = existing != nullptr ? existing->pool : AzureAgentPoolSpec{};
  pool.name = name;
  if (existing == nullptr) {
    pool.vm_size = props.value("vmSize", "");
    if (pool.vm_size.empty()) return azure::ArmError(400, "InvalidParameter", "The value of parameter vmSize is required.");
    pool.mode = props.value("mode", "User");
    pool.priority = props.value("scaleSetPriority", "Regular");
    pool.eviction_policy = props.value("scaleSetEvictionPolicy", pool.priority == "Spot" ? "Delete" : "");
    pool.zones = props.value("availabilityZones", std::vector<std::string>{});
    if (pool.priority != "Regular" && pool.priority != "Spot") {
      return azure::ArmError(400, "InvalidParameter",
                             "The value '" + pool.priority + "' of scaleSetPriority is not valid: Regular or Spot.");
    }
    if (pool.priority != "Spot" && props.contains("scaleSetEvictionPolicy")) {
      return azure::ArmError(400, "InvalidParameter", "scaleSetEvictionPolicy can only be set on Spot agent pools.");
    }
  } else if (props.contains("vmSize") && !azure::EqualsNoCase(props["vmSize"].get<std::string>(), pool.vm_size)) {
    return azure::ArmError(400, "PropertyChangeNotAllowed", "Changing property 'vmSize' is not allowed.");
  }
  if (props.contains("spotMaxPrice")) pool.spot_max_price = props["spotMaxPrice"].get<double>();
  if (props.contains("nodeLabels")) pool.node_labels = azure::StringMap(props, "nodeLabels");
  if (props.contains("nodeTaints")) pool.node_taints = props["nodeTaints"].get<std::vector<std::string>>();
  if (props.contains("tags")) pool.tags = azure::StringMap(props, "tags");
  const int target = props.value("count", existing != nullptr ? existing->spec.capacity : 1);
  if (target < 0 || target > 1000) {
    return azure::ArmError(400, "InvalidParameter", "The value of parameter count must be in [0, 1000].");
  }
  const int count_before = existing != nullptr ? existing->spec.capacity : 0;
  size_t index = 0;
  if (existing == nullptr) {
    AzureScaleSetSpec spec;
    pool.count = 0;
    index = AddScaleSet(spec, cluster, &pool, now);
  } else {
    index = static_cast<size_t>(existing - scale_sets_.data());
    existing->pool = pool;
    existing->spec.max_price = pool.spot_max_price;
  }
  ScaleSet& s = scale_sets_[index];
  Operation& op = NewOperation(kAksProvider, now);
  // AKS checks capacity and quota while the operation runs: every refusal
  // ends it Failed, and the pool keeps the nodes it got.
  int count = target;
  if (const AzureCapacityLimit* refused = ScaleTo(s, target, op, now)) {
    op.error_code = refused->error_code;
    op.error_message = ErrorMessage(*refused, s.spec.vm_size, scenario_.location);
    count = LiveCount(s, now);
  }
  s.spec.capacity = count;
  s.pool.count = count;
  // AKS says Scaling while a count change runs, Updating for other changes.
  MarkBusy(s, existing == nullptr ? "Creating" : target != count_before ? "Scaling" : "Updating", op);
  EmulatorResponse r = azure::Json(AgentPoolJson(s, now), existing == nullptr ? 201 : 200);
  AddLroHeaders(request, op, false, &r);
  return r;
}

EmulatorResponse AzureEmulator::DeleteMachines(const EmulatorRequest& request, ScaleSet& s, WallTime now) {
  const json in = json::parse(request.body, nullptr, false);
  if (!in.is_object() || !in.contains("machineNames") || !in["machineNames"].is_array() ||
      in["machineNames"].empty()) {
    return azure::ArmError(400, "InvalidParameter", "The value of parameter machineNames is required.");
  }
  std::vector<size_t> doomed;
  for (const json& n : in["machineNames"]) {
    const std::string want = n.get<std::string>();
    std::optional<size_t> found;
    for (size_t v : s.vms) {
      if (azure::EqualsNoCase(instances_[v].info.computer_name, want) && Live(instances_[v], now)) found = v;
    }
    if (!found) {
      return azure::ArmError(400, "InvalidParameter",
                             "Machine '" + want + "' is not found in agent pool '" + s.pool.name + "'.");
    }
    doomed.push_back(*found);
  }
  Operation& op = NewOperation(kAksProvider, now);
  for (size_t v : doomed) DeleteVm(s, v, op, false, now);
  s.spec.capacity = std::max(0, s.spec.capacity - static_cast<int>(doomed.size()));
  s.pool.count = s.spec.capacity;
  MarkBusy(s, "Updating", op);
  EmulatorResponse r{202, "", {}, ""};
  AddLroHeaders(request, op, true, &r);
  return r;
}

EmulatorResponse AzureEmulator::MachineCall(const ArmPath& p, ScaleSet& s, WallTime now) {
  if (p.rest.size() == 3) {
    json value = json::array();
    for (size_t v : s.vms) {
      if (Exists(instances_[v], now)) value.push_back(json::parse(MachineJson(s, instances_[v])));
    }
    return azure::Json(json{{"value", value}}.dump());
  }
  for (size_t v : s.vms) {
    if (azure::EqualsNoCase(instances_[v].info.computer_name, p.rest[3]) && Exists(instances_[v], now)) {
      return azure::Json(MachineJson(s, instances_[v]));
    }
  }
  return azure::ArmError(404, "NotFound", "Machine '" + p.rest[3] + "' was not found in agent pool '" +
                                              s.pool.name + "'.");
}

EmulatorResponse AzureEmulator::ClusterCall(const EmulatorRequest& request, const ArmPath& p, WallTime now) {
  const std::optional<size_t> cluster = FindCluster(p.resource_group, p.name);
  if (!cluster) return azure::ResourceNotFound("Microsoft.ContainerService/managedClusters", p.name, p.resource_group);
  const std::string& m = request.method;
  if (p.rest.empty()) {
    if (m != "GET") return azure::ArmError(405, "MethodNotAllowed", "Only GET of a managed cluster is served.");
    return azure::Json(ClusterJson(*cluster, now));
  }
  if (!azure::EqualsNoCase(p.rest[0], "agentPools") || p.rest.size() > 4) {
    return azure::ArmError(404, "NotFound", "The requested path is not served by this emulator.");
  }
  if (p.rest.size() == 1) {
    if (m != "GET") return azure::ArmError(405, "MethodNotAllowed", "Method not allowed.");
    json value = json::array();
    for (const ScaleSet& s : scale_sets_) {
      if (s.cluster == *cluster && (!s.deleted_at || now < *s.deleted_at))
        value.push_back(json::parse(AgentPoolJson(s, now)));
    }
    return azure::Json(json{{"value", value}}.dump());
  }
  const std::string& pool = p.rest[1];
  ScaleSet* s = FindPool(*cluster, pool, now);
  if (p.rest.size() == 2 && (m == "PUT" || m == "DELETE")) {
    if (auto failed = AksPrecondition(request, s != nullptr ? AksEtag(s->unique_id, s->etag) : "")) {
      ++stats_.precondition_failures;
      return *failed;
    }
  }
  if (p.rest.size() == 2 && m == "PUT") return PutAgentPool(request, *cluster, pool, now);
  if (s == nullptr) {
    if (m == "DELETE" && p.rest.size() == 2) return {204, "", {}, ""};
    return azure::ArmError(404, "NotFound", "Agent pool '" + pool + "' was not found in managed cluster '" +
                                                p.name + "'.");
  }
  if (p.rest.size() == 2 && m == "GET") return azure::Json(AgentPoolJson(*s, now));
  const bool mutating = (p.rest.size() == 2 && m == "DELETE") || (p.rest.size() == 3 && m == "POST");
  if (mutating && AksBusy(ProvisioningState(*s, now))) return AksOperationInProgress(ProvisioningState(*s, now));
  if (p.rest.size() == 2 && m == "DELETE") {
    Operation& op = NewOperation(kAksProvider, now);
    for (size_t v : s->vms) {
      if (Live(instances_[v], now)) DeleteVm(*s, v, op, false, now);
    }
    s->deleted_at = op.done_at;
    EmulatorResponse r{202, "", {}, ""};
    AddLroHeaders(request, op, true, &r);
    return r;
  }
  if (p.rest.size() == 3 && azure::EqualsNoCase(p.rest[2], "deleteMachines") && m == "POST") {
    return DeleteMachines(request, *s, now);
  }
  if (p.rest.size() >= 3 && azure::EqualsNoCase(p.rest[2], "machines") && m == "GET") return MachineCall(p, *s, now);
  return azure::ArmError(405, "MethodNotAllowed", "Method not allowed.");
}

}  // namespace gpuscaler::sim
