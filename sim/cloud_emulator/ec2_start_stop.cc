// StopInstances and StartInstances: the stopped state of an EBS-backed
// instance (its volumes kept, no capacity held) and its way back; the
// persistent Spot requests whose instances can be stopped.
#include <algorithm>
#include <map>
#include <tuple>

#include "sim/cloud_emulator/emulator_impl.h"

namespace gpuscaler::sim {

void CloudEmulator::StopInstance(Instance& i, bool hibernate, bool force, WallTime at) {
  i.info.state = "stopping";
  i.info.hibernated = hibernate;
  i.stopped_at = force ? at : at + scenario_.stop_latency;
}

void CloudEmulator::StartInstance(Instance& i, WallTime at) {
  i.info.state = "pending";
  i.info.hibernated = false;
  i.stopped_at.reset();
  i.running_at = at + scenario_.start_latency;
}

std::optional<EmulatorResponse> CloudEmulator::ReadInstanceIds(const Params& p,
                                                               std::vector<std::string>* ids) {
  *ids = p.List("InstanceId");
  if (ids->empty())
    return Ec2Error(400, "MissingParameter", "The request must contain the parameter InstanceId");
  std::vector<std::string> missing;
  for (const std::string& id : *ids) {
    if (id.rfind("i-", 0) != 0)
      return Ec2Error(400, "InvalidInstanceID.Malformed", "Invalid id: \"" + id + "\"");
    if (by_id_.count(id) == 0) missing.push_back(id);
  }
  if (missing.empty()) return std::nullopt;
  std::string list;
  for (const std::string& id : missing) list += (list.empty() ? "" : ", ") + id;
  return Ec2Error(400, "InvalidInstanceID.NotFound",
                  missing.size() == 1 ? "The instance ID '" + list + "' does not exist"
                                      : "The instance IDs '" + list + "' do not exist");
}

EmulatorResponse CloudEmulator::StopInstances(const Params& p, WallTime now) {
  std::vector<std::string> ids;
  if (auto bad = ReadInstanceIds(p, &ids)) return *bad;
  const bool hibernate = p.Get("Hibernate") == "true";
  const bool force = p.Get("Force") == "true";
  // EC2 checks every instance before it stops any.
  for (const std::string& id : ids) {
    const Instance& i = instances_[by_id_[id]];
    if (i.info.state == "pending" || IsGone(i.info)) {
      return Ec2Error(400, "IncorrectInstanceState",
                      "This instance '" + id + "' is not in a state from which it can be stopped.");
    }
    if (i.info.lifecycle == CapacityType::kSpot && i.info.spot_request_type != "persistent") {
      return Ec2Error(400, "UnsupportedOperation",
                      "You can't stop the Spot Instance '" + id +
                          "' because it is associated with a one-time Spot Instance request.");
    }
  }
  std::string body = Ec2Open("StopInstances", Uuid()) + "<instancesSet>";
  for (const std::string& id : ids) {
    Instance& i = instances_[by_id_[id]];
    const std::string before = i.info.state;
    if (before == "running") StopInstance(i, hibernate, force, now);
    // Force on an instance still stopping cuts its shutdown short.
    if (before == "stopping" && force) i.stopped_at = now;
    StateChangeXml(body, id, before, i.info.state);
  }
  body += "</instancesSet>\n</StopInstancesResponse>\n";
  return {200, kXmlContentType, {}, body};
}

EmulatorResponse CloudEmulator::StartInstances(const Params& p, WallTime now) {
  std::vector<std::string> ids;
  if (auto bad = ReadInstanceIds(p, &ids)) return *bad;
  // Instances to start, by offering: each needs room under the capacity
  // limits, or none starts.
  std::map<std::tuple<std::string, std::string, CapacityType>, int> wanted;
  for (const std::string& id : ids) {
    const Instance& i = instances_[by_id_[id]];
    if (i.info.state == "stopping" || IsGone(i.info)) {
      return Ec2Error(400, "IncorrectInstanceState",
                      "The instance '" + id + "' is not in a state from which it can be started.");
    }
    if (i.info.state == "stopped" && i.info.interrupted) {
      return Ec2Error(400, "IncorrectSpotRequestState",
                      "The Spot Instance '" + id +
                          "' was stopped by an interruption: only Amazon EC2 can start it, once capacity is back.");
    }
    if (i.info.state == "stopped") ++wanted[{i.info.instance_type, i.info.zone, i.info.lifecycle}];
  }
  for (const auto& [offering, count] : wanted) {
    const auto& [type, zone, lifecycle] = offering;
    auto room = Room(type, zone, lifecycle, now);
    if (room && room->first < count) {
      return Ec2Error(room->second == "InsufficientInstanceCapacity" ? 500 : 400, room->second,
                      "We currently do not have sufficient " + type +
                          " capacity in the Availability Zone you requested (" + zone + ").");
    }
  }
  std::string body = Ec2Open("StartInstances", Uuid()) + "<instancesSet>";
  for (const std::string& id : ids) {
    Instance& i = instances_[by_id_[id]];
    const std::string before = i.info.state;
    if (before == "stopped") StartInstance(i, now);
    StateChangeXml(body, id, before, i.info.state);
  }
  body += "</instancesSet>\n</StartInstancesResponse>\n";
  return {200, kXmlContentType, {}, body};
}

EmulatorResponse CloudEmulator::CancelSpotInstanceRequests(const Params& p) {
  const std::vector<std::string> ids = p.List("SpotInstanceRequestId");
  if (ids.empty()) {
    return Ec2Error(400, "MissingParameter", "The request must contain the parameter SpotInstanceRequestId");
  }
  for (const std::string& id : ids) {
    const bool known = std::any_of(instances_.begin(), instances_.end(),
                                   [&](const Instance& i) { return i.info.spot_request_id == id; });
    if (!known) {
      return Ec2Error(400, "InvalidSpotInstanceRequestID.NotFound",
                      "The spot instance request ID '" + id + "' does not exist");
    }
  }
  std::string body = Ec2Open("CancelSpotInstanceRequests", Uuid()) + "<spotInstanceRequestSet>";
  for (const std::string& id : ids) {
    for (Instance& i : instances_) {
      if (i.info.spot_request_id == id) i.info.spot_request_cancelled = true;
    }
    body += "<item>";
    Leaf(body, "spotInstanceRequestId", id);
    Leaf(body, "state", "cancelled");
    body += "</item>";
  }
  body += "</spotInstanceRequestSet>\n</CancelSpotInstanceRequestsResponse>\n";
  return {200, kXmlContentType, {}, body};
}

void CloudEmulator::ReplacePersistentSpot(const Instance& gone, WallTime now) {
  const EmulatedInstance& g = gone.info;
  if (g.spot_request_type != "persistent" || g.spot_request_cancelled) return;
  if (auto room = Room(g.instance_type, g.zone, CapacityType::kSpot, now); room && room->first < 1) return;
  // Launch() may grow instances_: copy what the replacement keeps first.
  const EmulatedInstance spec = g;
  Instance& next = Launch(spec.instance_type, spec.zone, spec.subnet_id, CapacityType::kSpot, spec.tags,
                          spec.client_token, NewId("r-", 17), now);
  next.info.launch_template = spec.launch_template;
  next.info.launch_template_version = spec.launch_template_version;
  next.info.placement_group = spec.placement_group;
  next.info.spot_request_id = spec.spot_request_id;
  next.info.spot_request_type = spec.spot_request_type;
  next.info.interruption_behavior = spec.interruption_behavior;
}

void CloudEmulator::RestartInterruptedSpot(WallTime now) {
  for (Instance& i : instances_) {
    if (i.info.state != "stopped" || !i.info.interrupted) continue;
    if (auto room = Room(i.info.instance_type, i.info.zone, CapacityType::kSpot, now); room && room->first < 1)
      continue;
    i.info.interrupted = false;
    StartInstance(i, now);
  }
}

}  // namespace gpuscaler::sim
