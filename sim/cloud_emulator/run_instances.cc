// RunInstances: one instance type in one zone, from a launch template (or
// an ImageId), optionally into a capacity reservation or a Capacity Block,
// or spot (a one-time or persistent Spot request).
#include <algorithm>

#include "sim/cloud_emulator/emulator_impl.h"

namespace gpuscaler::sim {
namespace {

// The instance tags of TagSpecification items with ResourceType=instance.
std::map<std::string, std::string> RunTags(const cloud::QueryParams& q) {
  std::map<std::string, std::string> tags;
  auto value = [&](const std::string& key) { return cloud::FormValue(q, key); };
  for (int n = 1; value("TagSpecification." + std::to_string(n) + ".ResourceType"); ++n) {
    const std::string ts = "TagSpecification." + std::to_string(n) + ".";
    if (*value(ts + "ResourceType") != "instance") continue;
    for (int m = 1; value(ts + "Tag." + std::to_string(m) + ".Key"); ++m) {
      tags[*value(ts + "Tag." + std::to_string(m) + ".Key")] =
          value(ts + "Tag." + std::to_string(m) + ".Value").value_or("");
    }
  }
  return tags;
}

}  // namespace

EmulatorResponse CloudEmulator::RunInstances(const Params& p, WallTime now) {
  const std::string token = p.Get("ClientToken");
  if (token.size() > 64) {
    return Ec2Error(400, "InvalidParameterValue",
                    "Value for parameter ClientToken is invalid. Length exceeds maximum of 64 characters.");
  }
  if (auto it = run_answers_.find(token); !token.empty() && it != run_answers_.end()) {
    return {200, kXmlContentType, {}, it->second};
  }
  int min_count = 0, max_count = 0;
  if (!ParseInt(p.Get("MinCount"), &min_count) || !ParseInt(p.Get("MaxCount"), &max_count)) {
    return Ec2Error(400, "MissingParameter", "The request must contain the parameters MinCount and MaxCount");
  }
  if (min_count < 1 || max_count < min_count) {
    return Ec2Error(400, "InvalidParameterValue", "MinCount must be at least 1 and no more than MaxCount.");
  }
  // A template the emulator does not know stands for one made outside it,
  // as in CreateFleet: accepted, with no data of its own.
  const TemplateVersion* version = nullptr;
  const LaunchTemplate* known = nullptr;
  if (p.HasPrefix("LaunchTemplate.")) {
    known = FindTemplate(p, "LaunchTemplate.");
    if (known != nullptr && (version = FindVersion(*known, p.Get("LaunchTemplate.Version"))) == nullptr) {
      return Ec2Error(400, "InvalidLaunchTemplateId.VersionNotFound",
                      "Could not find launch template version " + p.Get("LaunchTemplate.Version") + " of " +
                          known->name + ".");
    }
  } else if (!p.Has("ImageId")) {
    return Ec2Error(400, "MissingParameter", "The request must contain the parameter ImageId");
  }
  // A request parameter overrides the template's.
  auto param = [&](const std::string& key) {
    if (p.Has(key)) return p.Get(key);
    return version != nullptr ? cloud::FormValue(version->data, key).value_or("") : std::string();
  };
  const std::string type = param("InstanceType");
  if (type.empty())
    return Ec2Error(400, "MissingParameter", "The request must contain the parameter InstanceType");
  const std::string subnet = p.Get("SubnetId");
  std::string zone = p.Get("Placement.AvailabilityZone");
  if (!subnet.empty()) {
    auto s = scenario_.subnets.find(subnet);
    if (s == scenario_.subnets.end()) {
      return Ec2Error(400, "InvalidSubnetID.NotFound", "The subnet ID '" + subnet + "' does not exist");
    }
    if (!zone.empty() && zone != s->second) {
      return Ec2Error(400, "InvalidParameterValue", "Subnet " + subnet + " is not in " + zone + ".");
    }
    zone = s->second;
  }
  if (zone.empty()) zone = scenario_.zones.empty() ? scenario_.region + "a" : scenario_.zones[0];
  if (std::find(scenario_.zones.begin(), scenario_.zones.end(), zone) == scenario_.zones.end()) {
    return Ec2Error(400, "InvalidParameterValue", "Invalid availability zone: [" + zone + "]");
  }
  const std::string group = p.Get("Placement.GroupName");
  if (!group.empty() && placement_groups_.count(group) == 0) {
    return Ec2Error(400, "InvalidPlacementGroup.Unknown", "The Placement Group '" + group + "' is unknown.");
  }
  const std::string market = param("InstanceMarketOptions.MarketType");
  const CapacityType lifecycle = market == "spot" ? CapacityType::kSpot : CapacityType::kOnDemand;
  std::string spot_type = param("InstanceMarketOptions.SpotOptions.SpotInstanceType");
  std::string behavior = param("InstanceMarketOptions.SpotOptions.InstanceInterruptionBehavior");
  if (market == "spot") {
    if (spot_type.empty()) spot_type = "one-time";
    if (behavior.empty()) behavior = "terminate";
    if (spot_type != "one-time" && spot_type != "persistent") {
      return Ec2Error(400, "InvalidParameterValue",
                      "Value (" + spot_type + ") for parameter SpotInstanceType is invalid.");
    }
    if (behavior != "terminate" && behavior != "stop" && behavior != "hibernate") {
      return Ec2Error(400, "InvalidParameterValue",
                      "Value (" + behavior + ") for parameter InstanceInterruptionBehavior is invalid.");
    }
    if (behavior != "terminate" && spot_type != "persistent") {
      return Ec2Error(400, "InvalidParameterCombination",
                      "The interruption behavior " + behavior + " requires a persistent Spot request.");
    }
  }
  const SlotRequest slots{
      type, zone, param("CapacityReservationSpecification.CapacityReservationPreference"),
      param("CapacityReservationSpecification.CapacityReservationTarget.CapacityReservationId"),
      market == "capacity-block"};
  const SlotRoom room = ReservationRoom(slots, now);
  if (room.status != 0) return Ec2Error(room.status, room.code, room.message);
  int can = max_count;
  std::string code = room.code, message = room.message;
  if (room.reservation != nullptr) {
    can = room.room;
    if (code.empty()) {
      code = "ReservationCapacityExceeded";
      message =
          "The requested reservation does not have sufficient compatible and available capacity for this "
          "request.";
    }
  } else if (auto limit = Room(type, zone, lifecycle, now)) {
    can = limit->first;
    code = limit->second;
    message = "We currently do not have sufficient " + type +
              " capacity in the Availability Zone you requested (" + zone + ").";
  }
  if (can < min_count) {
    // EC2 counts running out of its own capacity as a server error.
    return Ec2Error(code == "InsufficientInstanceCapacity" ? 500 : 400, code, message);
  }
  const std::string reservation = NewId("r-", 17);
  const std::map<std::string, std::string> tags = RunTags(p.q);
  std::string items;
  for (int n = 0; n < std::min(can, max_count); ++n) {
    Instance& launched = Launch(type, zone, subnet, lifecycle, tags, token, reservation, now);
    if (known != nullptr) {
      launched.info.launch_template = known->name;
      launched.info.launch_template_version = std::to_string(version->number);
      launched.info.tags["aws:ec2launchtemplate:id"] = known->id;
      launched.info.tags["aws:ec2launchtemplate:version"] = launched.info.launch_template_version;
    }
    launched.info.placement_group = group;
    if (market == "spot") {
      launched.info.spot_request_id = NewId("sir-", 8);
      launched.info.spot_request_type = spot_type;
      launched.info.interruption_behavior = behavior;
    }
    TakeSlot(launched, slots, now);
    InstanceItemXml(items, launched.info);
  }
  std::string body = Ec2Open("RunInstances", Uuid());
  Leaf(body, "reservationId", reservation);
  Leaf(body, "ownerId", scenario_.account_id);
  body += "<groupSet/><instancesSet>" + items + "</instancesSet>\n</RunInstancesResponse>\n";
  if (!token.empty()) run_answers_[token] = body;
  return {200, kXmlContentType, {}, body};
}

}  // namespace gpuscaler::sim
