// The managed instance group's standby actions of the GcpEmulator:
// stopInstances, suspendInstances, startInstances and resumeInstances, and
// the wake of a member that was started or resumed.
//
// As Compute Engine documents them, the calls only flag members: the
// operation is DONE once the request is accepted, and the members' VMs move
// on their own (listManagedInstances shows currentAction STOPPING,
// SUSPENDING, STARTING or RESUMING meanwhile). Stopping or suspending moves
// a member from the group's targetSize to targetStoppedSize /
// targetSuspendedSize; starting or resuming moves it back.
#include <algorithm>
#include <nlohmann/json.hpp>

#include "sim/cloud_emulator/gcp_impl.h"

namespace gpuscaler::sim {

using nlohmann::json;

namespace {

constexpr size_t kMaxInstancesPerCall = 1000;

bool AtRest(const std::string& status) { return status == "TERMINATED" || status == "SUSPENDED"; }

}  // namespace

bool GcpEmulator::IsStandbyVerb(const std::string& verb) {
  return verb == "stopInstances" || verb == "suspendInstances" || verb == "startInstances" ||
         verb == "resumeInstances";
}

EmulatorResponse GcpEmulator::StandbyCall(const EmulatorRequest& request, const Path& p, Group& g,
                                          const std::string& request_id, WallTime now) {
  const bool stopping = p.verb == "stopInstances" || p.verb == "suspendInstances";
  const bool suspend = p.verb == "suspendInstances" || p.verb == "resumeInstances";
  const Standby pool = suspend ? Standby::kSuspended : Standby::kStopped;
  const json in = json::parse(request.body, nullptr, false);
  if (!in.is_object() || !in.contains("instances") || !in["instances"].is_array() ||
      in["instances"].empty()) {
    return gcp::Invalid("resource.instances", request.body, "A non-empty list of instance URLs is required.");
  }
  if (in["instances"].size() > kMaxInstancesPerCall) {
    return gcp::Invalid("resource.instances", std::to_string(in["instances"].size()),
                        "At most 1000 instances per request.");
  }
  // forceStop / forceSuspend: act now, without the standby policy's initial delay.
  const char* force_key = p.verb == "stopInstances" ? "forceStop" : "forceSuspend";
  const bool force = stopping && in.contains(force_key) && in[force_key].get<bool>();
  const std::string zone_instances = "projects/" + scenario_.project + "/zones/" + p.zone + "/instances/";
  std::vector<Member*> members;
  std::string strangers, refused;
  for (const json& url : in["instances"]) {
    const std::string name = url.is_string() ? gcp::LastSegment(url.get<std::string>()) : "";
    Member* m = nullptr;
    for (Member& candidate : g.members) {
      if (candidate.name == name && !candidate.deleting) m = &candidate;
    }
    if (m == nullptr) {
      strangers += (strangers.empty() ? "" : ", ") + zone_instances + name;
      continue;
    }
    if (std::find(members.begin(), members.end(), m) != members.end()) continue;  // named twice
    const std::string why = StandbyRefusal(*m, p.verb, now);
    if (!why.empty()) {
      refused += (refused.empty() ? "" : "; ") + std::string("'") + zone_instances + name + "' " + why;
      continue;
    }
    members.push_back(m);
  }
  if (!strangers.empty()) {
    return gcp::ErrorResponse(
        400, "invalid", "The request contains instances that are not members of the group: " + strangers);
  }
  if (!refused.empty()) {
    // Compute Engine's code for an action the instance's state or
    // configuration does not allow (UNSUPPORTED_OPERATION).
    return gcp::ErrorResponse(400, "unsupportedOperation", "Cannot " + p.verb + ": " + refused);
  }
  for (Member* m : members) {
    Instance& i = instances_[*m->instance];
    if (stopping) {
      if (m->standby == pool) continue;  // already stopped or suspended
      // A member started but not woken yet (or refused for capacity) goes
      // straight back; a running one stops after the standby policy's
      // initial delay (counted from its creation) unless forced.
      const bool was_waking = m->waking != Standby::kNone;
      m->standby = pool;
      m->waking = Standby::kNone;
      m->last_errors.clear();
      if (was_waking && AtRest(StatusOf(i, now))) continue;
      const WallTime begin = force ? now : std::max(now, i.created + g.spec.standby_initial_delay);
      i.stop_at = begin;
      i.end_at = begin + scenario_.stop_latency;
      i.suspend = suspend;
      i.remove_at_end = false;
      continue;
    }
    if (m->standby == Standby::kNone) continue;  // already started or running
    m->standby = Standby::kNone;
    if (i.stop_at && *i.stop_at > now) {
      // The stop had not begun (initial delay): it is called off.
      i.stop_at.reset();
      i.end_at.reset();
      i.suspend = false;
      continue;
    }
    m->waking = pool;
    m->next_try = now;
    if (AtRest(StatusOf(i, now))) WakeMember(g, *m, now);
    // Otherwise still stopping or suspending: woken once it is at rest.
  }
  Operation& op =
      NewOperation(p.zone, "compute.instanceGroupManagers." + p.verb,
                   Url("zones/" + p.zone + "/instanceGroupManagers/" + g.spec.name), g.id, request_id, now);
  return gcp::Json(OperationJson(op, now));
}

std::string GcpEmulator::StandbyRefusal(const Member& m, const std::string& verb, WallTime now) const {
  if (!m.instance) return "is being created";
  const Instance& i = instances_[*m.instance];
  const std::string status = StatusOf(i, now);
  const bool suspend = verb == "suspendInstances" || verb == "resumeInstances";
  const Standby pool = suspend ? Standby::kSuspended : Standby::kStopped;
  const Standby other = suspend ? Standby::kStopped : Standby::kSuspended;
  if (verb == "stopInstances" || verb == "suspendInstances") {
    if (m.standby == pool || m.waking == pool) return "";
    if (m.standby == other || m.waking == other)
      return std::string("is ") + (suspend ? "stopped" : "suspended") + " (status " + status + ")";
    if (status != "RUNNING") return "is not running (status " + status + ")";
    if (suspend && !scenario_.gpu_suspend && !i.gpus.empty()) {
      // Compute Engine cannot suspend instances with GPUs attached
      // (suspend-resume-instance#limitations).
      return "has GPUs attached: instances with GPUs cannot be suspended";
    }
    return "";
  }
  if (m.standby == other || m.waking == other)
    return std::string("is ") + (suspend ? "stopped: use startInstances" : "suspended: use resumeInstances");
  return "";
}

void GcpEmulator::WakeMember(Group& g, Member& m, WallTime now) {
  Instance& i = instances_[*m.instance];
  const GcpManagedGroup& s = g.spec;
  // A stopped or suspended VM holds no host, no GPU quota and no
  // reservation slot: it needs them again to run.
  std::optional<OpError> refused;
  const std::optional<size_t> reservation = PickReservation(
      s.zone, i.info.machine_type, i.info.provisioning_model, i.reservation_affinity, now, &refused);
  if (!refused && !reservation)
    refused = Refusal(s.zone, i.info.machine_type, i.info.provisioning_model, i.gpus, now);
  if (refused) {
    m.last_errors = {*refused};
    m.next_try = now + scenario_.mig_retry_interval;
    return;
  }
  m.last_errors.clear();
  i.reservation = reservation;
  i.stop_at.reset();
  i.end_at.reset();
  i.suspend = false;
  i.staged_at = now + std::min(scenario_.operation_latency, scenario_.start_latency);
  i.running_at = now + scenario_.start_latency;
  i.info.status = StatusOf(i, now);
}

void GcpEmulator::AdvanceStandby(Group& g, Member& m, WallTime now) {
  if (m.waking == Standby::kNone || !m.instance) return;
  const std::string status = StatusOf(instances_[*m.instance], now);
  if (status == "RUNNING") {
    m.waking = Standby::kNone;
  } else if (AtRest(status) && now >= m.next_try) {
    WakeMember(g, m, now);
  }
}

}  // namespace gpuscaler::sim
