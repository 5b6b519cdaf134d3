// Microsoft.Compute virtualMachineScaleSets and their VMs (Uniform
// orchestration): get, create-or-update, update, delete, delete instances,
// VM list / get / instanceView, with ETags and If-Match.
#include <nlohmann/json.hpp>

#include "sim/cloud_emulator/azure_impl.h"

namespace gpuscaler::sim {

using nlohmann::json;

namespace {

constexpr const char* kVmssType = "Microsoft.Compute/virtualMachineScaleSets";

std::string AzEtag(int n) { return "\"" + std::to_string(n) + "\""; }

// The capacity errors Compute answers at once (the request changes
// nothing); the others end the operation Failed.
bool AzSynchronousError(const std::string& code) { return code == "SkuNotAvailable" || code == "QuotaExceeded"; }

}  // namespace

std::string AzureEmulator::InstanceViewJson(const Vm& vm, WallTime now) const {
  std::string prov = "ProvisioningState/succeeded";
  std::string prov_display = "Provisioning succeeded";
  std::string power = "PowerState/running";
  std::string power_display = "VM running";
  if (now < vm.ready_at) {
    prov = "ProvisioningState/creating", prov_display = "Creating";
    power = "PowerState/starting", power_display = "VM starting";
  } else if (vm.gone_at) {
    prov = "ProvisioningState/deleting", prov_display = "Deleting";
    power = "PowerState/stopping", power_display = "VM stopping";
  } else if (vm.deallocated_at && now >= *vm.deallocated_at) {
    power = "PowerState/deallocated", power_display = "VM deallocated";
  }
  json statuses = json::array();
  statuses.push_back({{"code", prov},
                      {"level", "Info"},
                      {"displayStatus", prov_display},
                      {"time", azure::IsoTime(now < vm.ready_at ? vm.created : vm.ready_at)}});
  statuses.push_back({{"code", power}, {"level", "Info"}, {"displayStatus", power_display}});
  json out = {{"platformUpdateDomain", 0},
              {"platformFaultDomain", 0},
              {"computerName", vm.info.computer_name},
              {"osName", "ubuntu"},
              {"statuses", statuses}};
  return out.dump();
}

std::string AzureEmulator::VmJson(const ScaleSet& s, const Vm& vm, bool instance_view, WallTime now) const {
  std::string state = "Succeeded";
  if (now < vm.ready_at) state = "Creating";
  if (vm.gone_at) state = "Deleting";
  json props = {{"latestModelApplied", true},
                {"vmId", vm.vm_id},
                {"hardwareProfile", {{"vmSize", vm.info.vm_size}}},
                {"osProfile", {{"computerName", vm.info.computer_name}}},
                {"provisioningState", state},
                {"timeCreated", azure::IsoTime(vm.created)}};
  if (s.spec.priority == "Spot") {
    props["priority"] = "Spot";
    props["evictionPolicy"] = s.spec.eviction_policy;
    props["billingProfile"] = {{"maxPrice", s.spec.max_price}};
  }
  if (instance_view) props["instanceView"] = json::parse(InstanceViewJson(vm, now));
  json out = {{"name", vm.info.name},
              {"id", ResourceId(s.spec.resource_group, std::string(kVmssType) + "/" + s.spec.name +
                                                           "/virtualMachines/" + vm.info.instance_id)},
              {"type", "Microsoft.Compute/virtualMachineScaleSets/virtualMachines"},
              {"location", scenario_.location},
              {"instanceId", vm.info.instance_id},
              {"sku", {{"name", vm.info.vm_size}, {"tier", "Standard"}}},
              {"tags", s.spec.tags},
              {"properties", props}};
  if (!vm.info.zone.empty()) out["zones"] = {vm.info.zone};
  return out.dump();
}

std::string AzureEmulator::ScaleSetJson(const ScaleSet& s, WallTime now) const {
  json profile = {{"osProfile", {{"computerNamePrefix", s.cluster ? s.node_prefix : s.spec.name}}},
                  {"priority", s.spec.priority}};
  if (s.spec.priority == "Spot") {
    profile["evictionPolicy"] = s.spec.eviction_policy;
    profile["billingProfile"] = {{"maxPrice", s.spec.max_price}};
  }
  json out = {{"name", s.spec.name},
              {"id", ResourceId(s.spec.resource_group, std::string(kVmssType) + "/" + s.spec.name)},
              {"type", kVmssType},
              {"location", scenario_.location},
              {"tags", s.spec.tags},
              {"etag", AzEtag(s.etag)},
              {"sku", {{"name", s.spec.vm_size}, {"tier", "Standard"}, {"capacity", s.spec.capacity}}},
              {"properties",
               {{"singlePlacementGroup", false},
                {"orchestrationMode", "Uniform"},
                {"upgradePolicy", {{"mode", "Manual"}}},
                {"overprovision", false},
                {"virtualMachineProfile", profile},
                {"provisioningState", ProvisioningState(s, now)},
                {"uniqueId", s.unique_id},
                {"timeCreated", azure::IsoTime(s.created)}}}};
  if (!s.spec.zones.empty()) out["zones"] = s.spec.zones;
  return out.dump();
}

EmulatorResponse AzureEmulator::ApplyScale(const EmulatorRequest& request, size_t index, int target,
                                           const std::string& state, int status, size_t vms_before, WallTime now) {
  ScaleSet& s = scale_sets_[index];
  const size_t members_before = s.vms.size();
  Operation& op = NewOperation("Microsoft.Compute", now);
  if (const AzureCapacityLimit* refused = ScaleTo(s, target, op, now)) {
    if (AzSynchronousError(refused->error_code)) {
      // Nothing changes: the VMs this call made are dropped again.
      stats_.created -= static_cast<int>(instances_.size() - vms_before);
      while (instances_.size() > vms_before) instances_.pop_back();
      s.vms.resize(members_before);
      return azure::ArmError(409, refused->error_code, ErrorMessage(*refused, s.spec.vm_size, scenario_.location));
    }
    op.error_code = refused->error_code;
    op.error_message = ErrorMessage(*refused, s.spec.vm_size, scenario_.location);
    target = LiveCount(s, now);
  }
  s.spec.capacity = target;
  MarkBusy(s, state, op);
  EmulatorResponse r = azure::Json(ScaleSetJson(s, now), status);
  r.headers.emplace_back("ETag", AzEtag(s.etag));
  AddLroHeaders(request, op, false, &r);
  return r;
}

EmulatorResponse AzureEmulator::PutScaleSet(const EmulatorRequest& request, const ArmPath& p, ScaleSet* existing,
                                            WallTime now) {
  const json in = json::parse(request.body, nullptr, false);
  if (!in.is_object()) return azure::ArmError(400, "InvalidRequestContent", "The request content was invalid.");
  const std::string location = azure::Lower(in.value("location", ""));
  std::string want = azure::Lower(scenario_.location);
  if (!location.empty() && location != want) {
    return azure::ArmError(400, "LocationNotAvailableForResourceType",
                           "The provided location '" + location + "' is not available for resource type '" +
                               kVmssType + "'. This emulator serves '" + scenario_.location + "'.");
  }
  const json sku = in.value("sku", json::object());
  const json vmp = in.value("properties", json::object()).value("virtualMachineProfile", json::object());
  AzureScaleSetSpec spec = existing != nullptr ? existing->spec : AzureScaleSetSpec{};
  spec.resource_group = p.resource_group;
  spec.name = p.name;
  if (existing == nullptr) {
    spec.vm_size = sku.value("name", "");
    if (spec.vm_size.empty()) return azure::ArmError(400, "InvalidParameter", "Required parameter 'sku.name' is missing.");
    spec.priority = vmp.value("priority", "Regular");
    spec.eviction_policy = vmp.value("evictionPolicy", "");
    spec.zones = in.value("zones", std::vector<std::string>{});
    if (spec.priority != "Regular" && spec.priority != "Spot" && spec.priority != "Low") {
      return azure::ArmError(400, "InvalidParameter", "The value '" + spec.priority + "' of priority is not valid.");
    }
    if (spec.priority != "Spot" && !spec.eviction_policy.empty()) {
      return azure::ArmError(400, "InvalidParameter",
                             "Eviction policy can be set only on Azure Spot Virtual Machines / scale sets.");
    }
  }
  if (vmp.contains("billingProfile")) spec.max_price = vmp["billingProfile"].value("maxPrice", -1.0);
  if (in.contains("tags")) spec.tags = azure::StringMap(in, "tags");
  const int target = sku.value("capacity", existing != nullptr ? existing->spec.capacity : 0);
  if (target < 0 || target > 1000) {
    return azure::ArmError(400, "InvalidParameter", "The value of parameter sku.capacity must be in [0, 1000].");
  }
  const size_t vms_before = instances_.size();
  size_t index = 0;
  if (existing == nullptr) {
    spec.capacity = 0;
    index = AddScaleSet(spec, std::nullopt, nullptr, now);
  } else {
    index = static_cast<size_t>(existing - scale_sets_.data());
    const std::string priority = existing->spec.priority;
    existing->spec = spec;
    existing->spec.priority = priority;
  }
  EmulatorResponse r =
      ApplyScale(request, index, target, existing == nullptr ? "Creating" : "Updating", existing ? 200 : 201,
                 vms_before, now);
  if (r.status == 409 && existing == nullptr) scale_sets_.pop_back();
  return r;
}

EmulatorResponse AzureEmulator::PatchScaleSet(const EmulatorRequest& request, ScaleSet& s, WallTime now) {
  const json in = json::parse(request.body, nullptr, false);
  if (!in.is_object()) return azure::ArmError(400, "InvalidRequestContent", "The request content was invalid.");
  if (in.contains("tags")) s.spec.tags = azure::StringMap(in, "tags");
  const json vmp = in.value("properties", json::object()).value("virtualMachineProfile", json::object());
  if (vmp.contains("billingProfile")) s.spec.max_price = vmp["billingProfile"].value("maxPrice", -1.0);
  const int target = in.value("sku", json::object()).value("capacity", s.spec.capacity);
  if (target < 0 || target > 1000) {
    return azure::ArmError(400, "InvalidParameter", "The value of parameter sku.capacity must be in [0, 1000].");
  }
  return ApplyScale(request, static_cast<size_t>(&s - scale_sets_.data()), target, "Updating", 200,
                    instances_.size(), now);
}

EmulatorResponse AzureEmulator::DeleteInstances(const EmulatorRequest& request, ScaleSet& s, bool force,
                                                WallTime now) {
  const json in = json::parse(request.body, nullptr, false);
  if (!in.is_object() || !in.contains("instanceIds") || !in["instanceIds"].is_array()) {
    return azure::ArmError(400, "InvalidParameter", "Required parameter 'instanceIds' is missing (null).");
  }
  std::vector<size_t> doomed;
  for (const json& id : in["instanceIds"]) {
    const std::string want = id.get<std::string>();
    std::optional<size_t> found;
    for (size_t v : s.vms) {
      if (instances_[v].info.instance_id == want && Live(instances_[v], now)) found = v;
    }
    if (!found) {
      return azure::ArmError(400, "InvalidParameter",
                             "The provided instanceId " + want + " is not an active Virtual Machine Scale Set VM "
                             "instanceId.");
    }
    doomed.push_back(*found);
  }
  Operation& op = NewOperation("Microsoft.Compute", now);
  if (force) op.done_at = now;
  for (size_t v : doomed) DeleteVm(s, v, op, force, now);
  s.spec.capacity = std::max(0, s.spec.capacity - static_cast<int>(doomed.size()));
  if (s.cluster) s.pool.count = s.spec.capacity;
  MarkBusy(s, "Updating", op);
  EmulatorResponse r{202, "", {}, ""};
  AddLroHeaders(request, op, true, &r);
  return r;
}

EmulatorResponse AzureEmulator::VmCall(const EmulatorRequest& request, const ArmPath& p, ScaleSet& s,
                                       const std::map<std::string, std::string>& query, WallTime now) {
  auto expand = query.find("$expand");
  const bool view = expand != query.end() && azure::EqualsNoCase(expand->second, "instanceView");
  if (p.rest.size() == 1) {
    if (request.method != "GET") return azure::ArmError(405, "MethodNotAllowed", "Method not allowed.");
    json value = json::array();
    for (size_t v : s.vms) {
      if (Exists(instances_[v], now)) value.push_back(json::parse(VmJson(s, instances_[v], view, now)));
    }
    return azure::Json(json{{"value", value}}.dump());
  }
  const Vm* vm = nullptr;
  size_t vm_index = 0;
  for (size_t v : s.vms) {
    if (instances_[v].info.instance_id == p.rest[1] && Exists(instances_[v], now)) vm = &instances_[v], vm_index = v;
  }
  if (vm == nullptr) {
    return azure::ResourceNotFound(std::string(kVmssType) + "/" + s.spec.name + "/virtualMachines", p.rest[1],
                                   p.resource_group);
  }
  if (p.rest.size() == 2 && request.method == "GET") return azure::Json(VmJson(s, *vm, view, now));
  if (p.rest.size() == 2 && request.method == "DELETE") {
    if (vm->gone_at) return {204, "", {}, ""};  // already being deleted
    auto force = query.find("forceDeletion");
    const bool forced = force != query.end() && force->second == "true";
    Operation& op = NewOperation("Microsoft.Compute", now);
    if (forced) op.done_at = now;
    DeleteVm(s, vm_index, op, forced, now);
    s.spec.capacity = std::max(0, s.spec.capacity - 1);
    if (s.cluster) s.pool.count = s.spec.capacity;
    MarkBusy(s, "Updating", op);
    EmulatorResponse r{202, "", {}, ""};
    AddLroHeaders(request, op, true, &r);
    return r;
  }
  if (p.rest.size() == 3 && azure::EqualsNoCase(p.rest[2], "instanceView") && request.method == "GET") {
    return azure::Json(InstanceViewJson(*vm, now));
  }
  return azure::ArmError(405, "MethodNotAllowed", "Method not allowed.");
}

EmulatorResponse AzureEmulator::ScaleSetCall(const EmulatorRequest& request, const ArmPath& p,
                                             const std::map<std::string, std::string>& query, WallTime now) {
  ScaleSet* s = FindScaleSet(p.resource_group, p.name, now);
  const std::string& m = request.method;
  if (p.rest.empty()) {
    const std::string if_match = azure::Header(request, "If-Match");
    const std::string if_none = azure::Header(request, "If-None-Match");
    if ((!if_match.empty() && (s == nullptr || (if_match != "*" && if_match != AzEtag(s->etag)))) ||
        (if_none == "*" && s != nullptr)) {
      ++stats_.precondition_failures;
      return azure::ArmError(412, "PreconditionFailed",
                             "The condition specified using HTTP conditional header(s) is not met.");
    }
    if (m == "PUT") return PutScaleSet(request, p, s, now);
    if (s == nullptr) {
      if (m == "DELETE") return {204, "", {}, ""};
      return azure::ResourceNotFound(kVmssType, p.name, p.resource_group);
    }
    if (m == "GET") {
      EmulatorResponse r = azure::Json(ScaleSetJson(*s, now));
      r.headers.emplace_back("ETag", AzEtag(s->etag));
      return r;
    }
    if (m == "PATCH") return PatchScaleSet(request, *s, now);
    if (m == "DELETE") {
      Operation& op = NewOperation("Microsoft.Compute", now);
      auto force = query.find("forceDeletion");
      if (force != query.end() && force->second == "true") op.done_at = now;
      for (size_t v : s->vms) {
        if (Live(instances_[v], now)) DeleteVm(*s, v, op, false, now);
      }
      s->deleted_at = op.done_at;
      EmulatorResponse r{202, "", {}, ""};
      AddLroHeaders(request, op, true, &r);
      return r;
    }
    return azure::ArmError(405, "MethodNotAllowed", "Method not allowed.");
  }
  if (s == nullptr) return azure::ResourceNotFound(kVmssType, p.name, p.resource_group);
  if (p.rest.size() == 1 && azure::EqualsNoCase(p.rest[0], "delete") && m == "POST") {
    auto force = query.find("forceDeletion");
    return DeleteInstances(request, *s, force != query.end() && force->second == "true", now);
  }
  if (azure::EqualsNoCase(p.rest[0], "virtualMachines") && p.rest.size() <= 3) return VmCall(request, p, *s, query, now);
  return azure::ArmError(404, "NotFound", "The requested path is not served by this emulator.");
}

}  // namespace gpuscaler::sim
