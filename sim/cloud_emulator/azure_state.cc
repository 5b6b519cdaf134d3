// The AzureEmulator's state: scale sets (plain, or backing AKS pools), their
// VMs, capacity limits, Spot evictions and their scheduled events.
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "sim/cloud_emulator/azure_impl.h"

namespace gpuscaler::sim {

using nlohmann::json;

namespace {

// Azure's Uniform computer names: the prefix and the instance id in
// base 36, six digits.
std::string AzBase36(int n) {
  static const char kDigits[] = "0123456789abcdefghijklmnopqrstuvwxyz";
  std::string out(6, '0');
  for (int i = 5; i >= 0 && n > 0; --i, n /= 36) out[static_cast<size_t>(i)] = kDigits[n % 36];
  return out;
}

}  // namespace

std::string AzureEmulator::NewUuid() {
  const uint64_t a = NextIdBits();
  const uint64_t b = NextIdBits();
  char buf[40];
  std::snprintf(buf, sizeof buf, "%08" PRIx32 "-%04" PRIx32 "-4%03" PRIx32 "-%04" PRIx32 "-%012" PRIx64,
                static_cast<uint32_t>(a >> 32), static_cast<uint32_t>((a >> 16) & 0xffff),
                static_cast<uint32_t>(a & 0xfff), static_cast<uint32_t>(0x8000 | ((b >> 48) & 0x3fff)),
                static_cast<uint64_t>(b & 0xffffffffffffULL));
  return buf;
}

std::string AzureEmulator::NodeResourceGroup(size_t cluster) const {
  const AzureClusterSpec& c = scenario_.clusters[cluster];
  if (!c.node_resource_group.empty()) return c.node_resource_group;
  return "MC_" + c.resource_group + "_" + c.name + "_" + scenario_.location;
}

std::string AzureEmulator::ResourceId(const std::string& rg, const std::string& provider_path) const {
  return "/subscriptions/" + scenario_.subscription + "/resourceGroups/" + rg + "/providers/" + provider_path;
}

size_t AzureEmulator::AddScaleSet(AzureScaleSetSpec spec, std::optional<size_t> cluster,
                                  const AzureAgentPoolSpec* pool, WallTime now) {
  ScaleSet s;
  if (cluster && pool != nullptr) {
    const AzureClusterSpec& c = scenario_.clusters[*cluster];
    // AKS names a pool's scale set aks-{pool}-{8 digits}-vmss, the digits
    // a hash of the cluster.
    char digits[16];
    std::snprintf(digits, sizeof digits, "%08" PRIu64,
                  static_cast<uint64_t>(SplitMix(std::hash<std::string>{}(c.resource_group + "/" + c.name)) % 100000000ULL));
    s.cluster = cluster;
    s.pool = *pool;
    s.node_prefix = "aks-" + pool->name + "-" + digits + "-vmss";
    spec.resource_group = NodeResourceGroup(*cluster);
    spec.name = s.node_prefix;
    spec.vm_size = pool->vm_size;
    spec.priority = pool->priority;
    spec.eviction_policy = pool->eviction_policy;
    spec.max_price = pool->spot_max_price;
    spec.zones = pool->zones;
    spec.capacity = pool->count;
    spec.tags = {{"aks-managed-poolName", pool->name},
                 {"aks-managed-orchestrator", "Kubernetes:" + c.kubernetes_version},
                 {"aks-managed-resourceNameSuffix", digits},
                 {"aks-managed-createOperationID", NewUuid()},
                 {"aks-managed-creationSource", "vmssclient-" + s.node_prefix}};
  }
  if (spec.priority == "Spot" && spec.eviction_policy.empty()) spec.eviction_policy = "Delete";
  s.spec = std::move(spec);
  s.unique_id = NewUuid();
  s.created = now;
  scale_sets_.push_back(std::move(s));
  ScaleSet& added = scale_sets_.back();
  // The scenario's VMs are there from the start, whatever the limits say.
  const std::vector<std::string> zones = added.spec.zones.empty() ? std::vector<std::string>{""} : added.spec.zones;
  for (int k = 0; k < added.spec.capacity; ++k) AddVm(added, zones[static_cast<size_t>(k) % zones.size()], now, now);
  return scale_sets_.size() - 1;
}

void AzureEmulator::AddVm(ScaleSet& s, const std::string& zone, WallTime ready_at, WallTime now) {
  Vm vm;
  const int id = s.next_instance++;
  vm.info.resource_group = s.spec.resource_group;
  vm.info.scale_set = s.spec.name;
  vm.info.instance_id = std::to_string(id);
  vm.info.name = s.spec.name + "_" + vm.info.instance_id;
  vm.info.computer_name = (s.cluster ? s.node_prefix : s.spec.name) + AzBase36(id);
  vm.info.zone = zone;
  vm.info.vm_size = s.spec.vm_size;
  vm.info.priority = s.spec.priority;
  vm.vm_id = NewUuid();
  vm.created = now;
  vm.ready_at = ready_at;
  vm.ip = static_cast<int>(instances_.size()) + 4;
  vm.group_tags = s.cluster ? s.pool.tags : s.spec.tags;
  s.vms.push_back(instances_.size());
  instances_.push_back(std::move(vm));
  ++stats_.created;
}

bool AzureEmulator::Exists(const Vm& vm, WallTime now) const { return !vm.gone_at || now < *vm.gone_at; }

bool AzureEmulator::Live(const Vm& vm, WallTime /*now*/) const { return !vm.gone_at; }

int AzureEmulator::LiveCount(const ScaleSet& s, WallTime now) const {
  int n = 0;
  for (size_t v : s.vms) n += Live(instances_[v], now) ? 1 : 0;
  return n;
}

const AzureCapacityLimit* AzureEmulator::Refusal(const std::string& vm_size, const std::string& zone,
                                                 const std::string& priority, WallTime now) const {
  for (const AzureCapacityLimit& l : scenario_.capacity) {
    if (!l.vm_size.empty() && !azure::EqualsNoCase(l.vm_size, vm_size)) continue;
    if (!l.zone.empty() && l.zone != zone) continue;
    if (!l.priority.empty() && l.priority != priority) continue;
    if (l.from && now < start_ + *l.from) continue;
    if (l.until && now >= start_ + *l.until) continue;
    int held = 0;
    for (const Vm& vm : instances_) {
      // A deallocated VM holds no capacity.
      if (!Live(vm, now) || vm.deallocated_at) continue;
      if (!l.vm_size.empty() && !azure::EqualsNoCase(vm.info.vm_size, l.vm_size)) continue;
      if (!l.zone.empty() && vm.info.zone != l.zone) continue;
      if (!l.priority.empty() && vm.info.priority != l.priority) continue;
      ++held;
    }
    if (held + 1 > l.limit) return &l;
  }
  return nullptr;
}

const AzureCapacityLimit* AzureEmulator::ScaleTo(ScaleSet& s, int target, const Operation& op, WallTime now) {
  const std::vector<std::string> zones = s.spec.zones.empty() ? std::vector<std::string>{""} : s.spec.zones;
  int live = LiveCount(s, now);
  while (live < target) {
    // The allowed zone with the fewest members (zone balance), first first.
    const AzureCapacityLimit* refused = nullptr;
    std::string best;
    int best_count = -1;
    for (const std::string& z : zones) {
      if (const AzureCapacityLimit* r = Refusal(s.spec.vm_size, z, s.spec.priority, now)) {
        if (refused == nullptr) refused = r;
        continue;
      }
      int members = 0;
      for (size_t v : s.vms) members += Live(instances_[v], now) && instances_[v].info.zone == z ? 1 : 0;
      if (best_count < 0 || members < best_count) best = z, best_count = members;
    }
    if (best_count < 0) return refused;
    AddVm(s, best, op.done_at, now);
    ++live;
  }
  for (size_t k = s.vms.size(); k-- > 0 && live > target;) {
    if (!Live(instances_[s.vms[k]], now)) continue;
    DeleteVm(s, s.vms[k], op, false, now);
    --live;
  }
  return nullptr;
}

void AzureEmulator::DeleteVm(ScaleSet& /*s*/, size_t vm, const Operation& op, bool force, WallTime now) {
  Vm& v = instances_[vm];
  v.delete_from = now;
  v.gone_at = force ? now : op.done_at;
  v.info.deleted = true;
}

void AzureEmulator::MarkBusy(ScaleSet& s, const std::string& state, const Operation& op) {
  s.busy_state = state;
  s.busy_until = op.done_at;
  s.final_state = op.error_code.empty() ? "Succeeded" : "Failed";
  s.error_code = op.error_code;
  s.error_message = op.error_message;
  ++s.etag;
}

std::string AzureEmulator::ProvisioningState(const ScaleSet& s, WallTime now) const {
  if (s.deleted_at) return "Deleting";
  if (!s.busy_state.empty() && now < s.busy_until) return s.busy_state;
  return s.final_state;
}

AzureEmulator::ScaleSet* AzureEmulator::FindScaleSet(const std::string& rg, const std::string& name, WallTime now) {
  for (ScaleSet& s : scale_sets_) {
    if (s.deleted_at && now >= *s.deleted_at) continue;
    if (azure::EqualsNoCase(s.spec.resource_group, rg) && azure::EqualsNoCase(s.spec.name, name)) return &s;
  }
  return nullptr;
}

AzureEmulator::ScaleSet* AzureEmulator::FindPool(size_t cluster, const std::string& pool, WallTime now) {
  for (ScaleSet& s : scale_sets_) {
    if (s.deleted_at && now >= *s.deleted_at) continue;
    if (s.cluster == cluster && azure::EqualsNoCase(s.pool.name, pool)) return &s;
  }
  return nullptr;
}

std::optional<size_t> AzureEmulator::FindCluster(const std::string& rg, const std::string& name) const {
  for (size_t c = 0; c < scenario_.clusters.size(); ++c) {
    const AzureClusterSpec& spec = scenario_.clusters[c];
    if (azure::EqualsNoCase(spec.resource_group, rg) && azure::EqualsNoCase(spec.name, name)) return c;
  }
  return std::nullopt;
}

std::optional<size_t> AzureEmulator::EvictionTarget(const AzureEviction& e, WallTime now) {
  ScaleSet* s = nullptr;
  if (!e.scale_set.empty()) {
    for (ScaleSet& candidate : scale_sets_) {
      if (azure::EqualsNoCase(candidate.spec.name, e.scale_set) && !candidate.deleted_at) s = &candidate;
    }
  } else {
    for (size_t k = 0; k < scenario_.clusters.size(); ++k) {
      if (azure::EqualsNoCase(scenario_.clusters[k].name, e.cluster)) s = FindPool(k, e.pool, now);
    }
  }
  if (s == nullptr || s->spec.priority != "Spot") return std::nullopt;
  for (size_t v : s->vms) {
    const Vm& vm = instances_[v];
    if (!Live(vm, now) || vm.deallocated_at || now < vm.ready_at) continue;
    if (!e.instance_id.empty() && vm.info.instance_id != e.instance_id) continue;
    return v;
  }
  return std::nullopt;
}

void AzureEmulator::Evict(Vm& vm, ScaleSet& s, WallTime at) {
  ++stats_.evicted;
  vm.info.evicted = true;
  ++s.etag;
  if (s.spec.eviction_policy == "Deallocate") {
    vm.deallocated_at = at;
    return;
  }
  // Delete: the VM goes and the scale set's capacity (the pool's count)
  // with it.
  vm.delete_from = at;
  vm.gone_at = at;
  vm.info.deleted = true;
  s.spec.capacity = std::max(0, s.spec.capacity - 1);
  if (s.cluster) s.pool.count = s.spec.capacity;
}

void AzureEmulator::AdvanceLocked(WallTime now) {
  for (size_t i = 0; i < scenario_.evictions.size(); ++i) {
    const AzureEviction& e = scenario_.evictions[i];
    const WallTime at = start_ + e.at;
    const WallTime notice_at = at - e.notice;
    if (!evictions_noticed_[i] && !evictions_done_[i] && now >= notice_at) {
      if (auto target = EvictionTarget(e, now)) {
        events_.push_back(ScheduledEvent{NewUuid(), i, *target, notice_at, at});
        evictions_noticed_[i] = true;
      }
    }
    if (evictions_done_[i] || now < at) continue;
    evictions_done_[i] = true;
    for (const ScheduledEvent& ev : events_) {
      if (ev.eviction != i) continue;
      Vm& vm = instances_[ev.vm];
      if (!Live(vm, now) || vm.deallocated_at) break;
      for (ScaleSet& s : scale_sets_) {
        if (std::find(s.vms.begin(), s.vms.end(), ev.vm) != s.vms.end()) Evict(vm, s, at);
      }
      break;
    }
  }
}

std::string AzureEmulator::ErrorMessage(const AzureCapacityLimit& limit, const std::string& vm_size,
                                        const std::string& location) {
  if (limit.error_code == "OverconstrainedAllocationRequest") {
    return "Allocation failed. VM(s) with the following constraints cannot be allocated, because the condition is "
           "too restrictive. Please remove some constraints and try again. Constraints applied are: - Availability "
           "Zone - VM Size: " + vm_size + " - Priority";
  }
  if (limit.error_code == "SkuNotAvailable") {
    return "The requested VM size for resource 'Following SKUs have failed for Capacity Restrictions: " + vm_size +
           "' is currently not available in location '" + location +
           "'. Please try another size or deploy to a different location or different zone. See "
           "https://aka.ms/azureskunotavailable for details.";
  }
  if (limit.error_code == "QuotaExceeded") {
    return "Operation could not be completed as it results in exceeding approved " + vm_size +
           " Family Cores quota. Location: " + location + ", Current Limit: " + std::to_string(limit.limit) +
           " VMs. Submit a request for Quota increase at https://aka.ms/ProdportalCRP";
  }
  return "Allocation failed. We do not have sufficient capacity for the requested VM size " + vm_size +
         " in this region. Read more about improving likelihood of allocation success at "
         "http://aka.ms/allocation-guidance";
}

EmulatorResponse AzureEmulator::ResourceGroupGet(const std::string& rg, WallTime /*now*/) const {
  json out;
  for (const ScaleSet& s : scale_sets_) {
    if (azure::EqualsNoCase(s.spec.resource_group, rg)) out = {{"name", s.spec.resource_group}};
  }
  for (size_t c = 0; c < scenario_.clusters.size(); ++c) {
    const AzureClusterSpec& spec = scenario_.clusters[c];
    if (azure::EqualsNoCase(spec.resource_group, rg)) out = {{"name", spec.resource_group}};
    if (azure::EqualsNoCase(NodeResourceGroup(c), rg)) {
      out = {{"name", NodeResourceGroup(c)},
             {"managedBy", ResourceId(spec.resource_group, "Microsoft.ContainerService/managedClusters/" + spec.name)},
             {"tags", {{"aks-managed-cluster-name", spec.name}, {"aks-managed-cluster-rg", spec.resource_group}}}};
    }
  }
  if (out.is_null()) {
    return azure::ArmError(404, "ResourceGroupNotFound", "Resource group '" + rg + "' could not be found.");
  }
  const std::string name = out["name"];
  out["id"] = "/subscriptions/" + scenario_.subscription + "/resourceGroups/" + name;
  out["type"] = "Microsoft.Resources/resourceGroups";
  out["location"] = scenario_.location;
  out["properties"] = {{"provisioningState", "Succeeded"}};
  return azure::Json(out.dump());
}

}  // namespace gpuscaler::sim
