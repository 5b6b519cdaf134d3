// The AzureEmulator's own endpoints: the state dump that process tests read
// as the truth about the fleet, and evictions scheduled on demand.
#include <nlohmann/json.hpp>

#include "sim/cloud_emulator/azure_impl.h"

namespace gpuscaler::sim {

using nlohmann::json;

Status AzureEmulator::ScheduleEviction(AzureEviction e) {
  std::lock_guard lock(mu_);
  const WallTime now = clock_.WallNow();
  AdvanceLocked(now);
  return ScheduleEvictionLocked(std::move(e), now);
}

Status AzureEmulator::ScheduleEvictionLocked(AzureEviction e, WallTime now) {
  e.at = std::chrono::duration_cast<Seconds>(now - start_) + e.notice;
  if (!EvictionTarget(e, now)) {
    return Error::NotFound("no live Spot VM to evict in " +
                           (e.scale_set.empty() ? "pool " + e.cluster + "/" + e.pool : "scale set " + e.scale_set) +
                           (e.instance_id.empty() ? "" : " (instance " + e.instance_id + ")"));
  }
  scenario_.evictions.push_back(std::move(e));
  evictions_noticed_.push_back(false);
  evictions_done_.push_back(false);
  AdvanceLocked(now);
  return Status::Ok();
}

std::string AzureEmulator::StateJson(WallTime now) const {
  json sets = json::array();
  json vms = json::array();
  for (const ScaleSet& s : scale_sets_) {
    json set = {{"resource_group", s.spec.resource_group},
                {"name", s.spec.name},
                {"vm_size", s.spec.vm_size},
                {"priority", s.spec.priority},
                {"capacity", s.spec.capacity},
                {"provisioning_state", ProvisioningState(s, now)},
                {"deleted", s.deleted_at && now >= *s.deleted_at},
                {"tags", s.spec.tags}};
    if (s.cluster) {
      set["cluster"] = scenario_.clusters[*s.cluster].name;
      set["pool"] = s.pool.name;
      set["pool_tags"] = s.pool.tags;  // the agent pool's own tags, not the scale set's
    }
    sets.push_back(set);
    for (size_t v : s.vms) {
      const Vm& vm = instances_[v];
      std::string state = "Running";
      if (!Exists(vm, now)) {
        state = "Deleted";
      } else if (vm.gone_at) {
        state = "Deleting";
      } else if (now < vm.ready_at) {
        state = "Creating";
      } else if (vm.deallocated_at) {
        state = "Deallocated";
      }
      vms.push_back({{"resource_group", vm.info.resource_group},
                     {"scale_set", vm.info.scale_set},
                     {"instance_id", vm.info.instance_id},
                     {"name", vm.info.name},
                     {"computer_name", vm.info.computer_name},
                     {"zone", vm.info.zone},
                     {"vm_size", vm.info.vm_size},
                     {"priority", vm.info.priority},
                     {"state", state},
                     {"evicted", vm.info.evicted},
                     {"group_tags", vm.group_tags},
                     {"created", azure::IsoTime(vm.created)}});
    }
  }
  json out = {{"scale_sets", sets},
              {"vms", vms},
              {"stats",
               {{"requests", stats_.requests},
                {"throttled", stats_.throttled},
                {"server_errors", stats_.server_errors},
                {"auth_failures", stats_.auth_failures},
                {"tokens_issued", stats_.tokens_issued},
                {"created", stats_.created},
                {"evicted", stats_.evicted},
                {"precondition_failures", stats_.precondition_failures}}}};
  return out.dump();
}

EmulatorResponse AzureEmulator::Control(const EmulatorRequest& request, const std::string& path, WallTime now) {
  if (path == "/_emulator/state" && request.method == "GET") return azure::Json(StateJson(now));
  if (path == "/_emulator/evictions" && request.method == "POST") {
    const json in = json::parse(request.body, nullptr, false);
    if (!in.is_object()) return azure::ArmError(400, "InvalidRequestContent", "Expected a JSON object.");
    AzureEviction e;
    e.scale_set = in.value("scale_set", "");
    e.cluster = in.value("cluster", "");
    e.pool = in.value("pool", "");
    e.instance_id = in.value("instance_id", "");
    e.notice = Seconds(in.value("notice_seconds", 30));
    if (e.scale_set.empty() == (e.cluster.empty() || e.pool.empty()) || e.notice < Seconds(0)) {
      return azure::ArmError(400, "InvalidParameter", "Give scale_set, or cluster and pool; notice_seconds >= 0.");
    }
    if (Status s = ScheduleEvictionLocked(e, now); !s.ok()) return azure::ArmError(404, "NotFound", s.error().message());
    return azure::Json(json{{"at", azure::IsoTime(start_ + scenario_.evictions.back().at)}}.dump(), 201);
  }
  return azure::ArmError(404, "NotFound", "Unknown emulator endpoint " + path + ".");
}

}  // namespace gpuscaler::sim
