// The Compute Engine resources as the v1 API prints them: Instance,
// Operation, InstanceGroupManager and ManagedInstance; and the state dump
// (/_emulator/state) tests read.
#include <nlohmann/json.hpp>

#include "sim/cloud_emulator/gcp_impl.h"

namespace gpuscaler::sim {

using nlohmann::json;

std::string GcpEmulator::InstanceJson(const Instance& i, WallTime now) const {
  const std::string zone_path = "zones/" + i.info.zone;
  std::string status = StatusOf(i, now);
  if (status == "DELETED") status = "TERMINATED";
  json j = {
      {"kind", "compute#instance"},
      {"id", std::to_string(i.id)},
      {"creationTimestamp", gcp::Timestamp(i.created)},
      {"name", i.info.name},
      {"machineType", Url(zone_path + "/machineTypes/" + i.info.machine_type)},
      {"status", status},
      {"zone", Url(zone_path)},
      {"selfLink", Url(zone_path + "/instances/" + i.info.name)},
      {"labels", i.info.labels},
      {"scheduling",
       {{"provisioningModel", i.info.provisioning_model},
        {"preemptible", i.info.provisioning_model == "SPOT"},
        {"automaticRestart", i.info.provisioning_model != "SPOT"},
        {"onHostMaintenance", "TERMINATE"}}},
      {"cpuPlatform", "Unknown CPU Platform"},
      {"deletionProtection", false},
  };
  if (!i.info.termination_action.empty())
    j["scheduling"]["instanceTerminationAction"] = i.info.termination_action;
  if (now >= i.running_at) j["lastStartTimestamp"] = gcp::Timestamp(i.running_at);
  if (i.stop_at && now >= *i.stop_at)
    j[i.suspend ? "lastSuspendedTimestamp" : "lastStopTimestamp"] = gcp::Timestamp(*i.stop_at);
  if (!i.accelerators.empty()) {
    json acc = json::array();
    for (const auto& [type, count] : i.accelerators) {
      acc.push_back(
          {{"acceleratorType", Url(zone_path + "/acceleratorTypes/" + type)}, {"acceleratorCount", count}});
    }
    j["guestAccelerators"] = acc;
  }
  json items = json::array();
  for (const auto& [key, value] : i.metadata) items.push_back({{"key", key}, {"value", value}});
  if (!i.info.group.empty()) {
    // What a MIG sets on its members.
    items.push_back({{"key", "created-by"},
                     {"value", "projects/" + scenario_.project + "/" + zone_path + "/instanceGroupManagers/" +
                                   i.info.group}});
  }
  if (!items.empty()) j["metadata"] = {{"kind", "compute#metadata"}, {"items", items}};
  if (!i.resource_policies.empty()) j["resourcePolicies"] = i.resource_policies;
  j["reservationAffinity"] = gcp::ReservationAffinityJson(i.reservation_affinity);
  return j.dump();
}

std::string GcpEmulator::OperationJson(const Operation& op, WallTime now) const {
  const bool done = now >= op.done_at;
  json j = {
      {"kind", "compute#operation"},
      {"id", std::to_string(op.id)},
      {"name", op.name},
      {"operationType", op.type},
      {"targetLink", op.target_link},
      {"targetId", std::to_string(op.target_id)},
      {"status", done ? "DONE" : "RUNNING"},
      {"user", op.user.empty() ? "emulated-user@" + scenario_.project + ".iam.gserviceaccount.com" : op.user},
      {"progress", done ? 100 : 0},
      {"insertTime", gcp::Timestamp(op.insert_time)},
      {"startTime", gcp::Timestamp(op.insert_time)},
  };
  // A zonal operation names its zone, a regional one its region.
  const std::string scope = op.region.empty() ? "zones/" + op.zone : "regions/" + op.region;
  j[op.region.empty() ? "zone" : "region"] = Url(scope);
  j["selfLink"] = Url(scope + "/operations/" + op.name);
  if (!op.request_id.empty()) j["clientOperationId"] = op.request_id;
  if (!op.status_message.empty()) j["statusMessage"] = op.status_message;
  if (!op.metadata_json.empty()) j["instancesBulkInsertOperationMetadata"] = json::parse(op.metadata_json);
  if (done) {
    j["endTime"] = gcp::Timestamp(op.done_at);
    if (!op.errors.empty()) {
      json errors = json::array();
      for (const OpError& e : op.errors) {
        json one = {{"code", e.code}, {"message", e.message}};
        if (!e.details_json.empty()) one["errorDetails"] = json::parse(e.details_json);
        errors.push_back(one);
      }
      j["error"] = {{"errors", errors}};
      if (op.http_error != 0) {
        j["httpErrorStatusCode"] = op.http_error;
        j["httpErrorMessage"] = op.http_error == 403 ? "FORBIDDEN" : "SERVICE UNAVAILABLE";
      }
    }
  }
  return j.dump();
}

std::string GcpEmulator::GroupJson(const Group& g, WallTime now) const {
  const std::string zone_path = "zones/" + g.spec.zone;
  std::map<std::string, int> actions;  // currentAction -> members
  int target = 0, stopped = 0, suspended = 0;
  for (const Member& m : g.members) {
    ++actions[json::parse(MemberJson(g, m, now))["currentAction"].get<std::string>()];
    if (m.deleting) continue;
    // Stopped and suspended members are counted apart from targetSize.
    (m.standby == Standby::kStopped ? stopped : m.standby == Standby::kSuspended ? suspended : target) += 1;
  }
  auto count = [&](const char* action) { return actions.count(action) ? actions[action] : 0; };
  json j = {
      {"kind", "compute#instanceGroupManager"},
      {"id", std::to_string(g.id)},
      {"creationTimestamp", gcp::Timestamp(g.created)},
      {"name", g.spec.name},
      {"zone", Url(zone_path)},
      {"instanceTemplate", Url("global/instanceTemplates/" + g.spec.instance_template)},
      {"instanceGroup", Url(zone_path + "/instanceGroups/" + g.spec.name)},
      {"baseInstanceName", g.spec.base_instance_name},
      {"targetSize", target},
      {"targetStoppedSize", stopped},
      {"targetSuspendedSize", suspended},
      {"standbyPolicy",
       {{"initialDelaySec", static_cast<int>(g.spec.standby_initial_delay.count())}, {"mode", "MANUAL"}}},
      {"currentActions",
       {{"abandoning", 0},
        {"creating", count("CREATING")},
        {"creatingWithoutRetries", 0},
        {"deleting", count("DELETING")},
        {"none", count("NONE")},
        {"recreating", count("RECREATING")},
        {"refreshing", 0},
        {"restarting", 0},
        {"resuming", count("RESUMING")},
        {"starting", count("STARTING")},
        {"stopping", count("STOPPING")},
        {"suspending", count("SUSPENDING")},
        {"verifying", 0}}},
      {"status", {{"isStable", count("NONE") == static_cast<int>(g.members.size())}}},
      {"selfLink", Url(zone_path + "/instanceGroupManagers/" + g.spec.name)},
  };
  return j.dump();
}

std::string GcpEmulator::MemberJson(const Group& g, const Member& m, WallTime now) const {
  const std::string zone_path = "zones/" + g.spec.zone;
  json j = {{"instance", Url(zone_path + "/instances/" + m.name)}, {"name", m.name}};
  std::string action = "NONE";
  if (m.deleting) {
    action = "DELETING";
  } else if (!m.instance) {
    action = m.recreating ? "RECREATING" : "CREATING";
  } else {
    const Instance& i = instances_[*m.instance];
    const std::string status = StatusOf(i, now);
    const bool at_rest = status == "TERMINATED" || status == "SUSPENDED";
    if (m.standby != Standby::kNone) {
      // Until at rest (a running VM waits out the standby policy's delay).
      if (!at_rest) action = m.standby == Standby::kStopped ? "STOPPING" : "SUSPENDING";
    } else if (m.waking != Standby::kNone) {
      if (status != "RUNNING") action = m.waking == Standby::kStopped ? "STARTING" : "RESUMING";
    } else if (status == "PROVISIONING" || status == "STAGING") {
      action = m.recreating ? "RECREATING" : "CREATING";
    }
  }
  j["currentAction"] = action;
  if (m.instance) {
    const Instance& i = instances_[*m.instance];
    std::string status = StatusOf(i, now);
    if (status == "DELETED") status = "TERMINATED";
    j["id"] = std::to_string(i.id);
    j["instanceStatus"] = status;
  }
  if (!m.last_errors.empty()) {
    json errors = json::array();
    for (const OpError& e : m.last_errors) errors.push_back({{"code", e.code}, {"message", e.message}});
    j["lastAttempt"] = {{"errors", {{"errors", errors}}}};
  }
  return j.dump();
}

std::string GcpEmulator::StateJson() const {
  json out = {{"instances", json::array()}};
  for (const Instance& i : instances_) {
    out["instances"].push_back(
        {{"name", i.info.name},
         {"zone", i.info.zone},
         {"machineType", i.info.machine_type},
         {"status", i.info.status},
         {"deleted", i.info.deleted},
         {"group", i.info.group},
         {"provisioningModel", i.info.provisioning_model},
         {"reservation", i.reservation ? scenario_.reservations[*i.reservation].name : ""},
         {"labels", i.info.labels}});
  }
  out["stats"] = {{"requests", stats_.requests},           {"throttled", stats_.throttled},
                  {"server_errors", stats_.server_errors}, {"auth_failures", stats_.auth_failures},
                  {"tokens_issued", stats_.tokens_issued}, {"created", stats_.created},
                  {"preempted", stats_.preempted},         {"billing_calls", stats_.billing_calls}};
  return out.dump();
}

}  // namespace gpuscaler::sim
