#include <algorithm>

#include "sim/cloud_emulator/emulator_impl.h"

namespace gpuscaler::sim {
namespace {

// Whether the group passes `f`: tag:<key> (that tag has one of the values),
// tag-key or tag-value, matched exactly; other filters pass every group.
bool Matches(const ScriptedGroup& g, const cloud::Filter& f) {
  auto has = [&](const std::string& v) { return std::find(f.values.begin(), f.values.end(), v) != f.values.end(); };
  if (f.name.rfind("tag:", 0) == 0) {
    auto t = g.tags.find(f.name.substr(4));
    return t != g.tags.end() && has(t->second);
  }
  if (f.name == "tag-key") return std::any_of(g.tags.begin(), g.tags.end(), [&](const auto& kv) { return has(kv.first); });
  if (f.name == "tag-value") return std::any_of(g.tags.begin(), g.tags.end(), [&](const auto& kv) { return has(kv.second); });
  return true;
}

}  // namespace

EmulatorResponse CloudEmulator::SetDesiredCapacity(const Params& p, WallTime now) {
  const std::string name = p.Get("AutoScalingGroupName");
  int desired = 0;
  if (name.empty() || !ParseInt(p.Get("DesiredCapacity"), &desired)) {
    return QueryError(400, "Sender", "ValidationError", "AutoScalingGroupName and DesiredCapacity are required");
  }
  auto g = std::find_if(groups_.begin(), groups_.end(), [&](const Group& x) { return x.spec.name == name; });
  if (g == groups_.end()) {
    return QueryError(400, "Sender", "ValidationError", "AutoScalingGroup name not found - AutoScalingGroup '" + name + "' not found");
  }
  if (desired > g->spec.max_size) {
    return QueryError(400, "Sender", "ValidationError",
                      "New SetDesiredCapacity value " + std::to_string(desired) + " is above max value " +
                          std::to_string(g->spec.max_size) + " for the AutoScaling group.");
  }
  if (desired < g->spec.min_size) {
    return QueryError(400, "Sender", "ValidationError",
                      "New SetDesiredCapacity value " + std::to_string(desired) + " is below min value " +
                          std::to_string(g->spec.min_size) + " for the AutoScaling group.");
  }
  g->spec.desired_capacity = desired;
  ReconcileGroup(*g, now);
  std::string body = AsgOpen("SetDesiredCapacity") + "  <ResponseMetadata>";
  Leaf(body, "RequestId", Uuid());
  body += "</ResponseMetadata>\n</SetDesiredCapacityResponse>\n";
  return {200, "text/xml", {}, body};
}

EmulatorResponse CloudEmulator::DescribeAutoScalingGroups(const Params& p) {
  const std::vector<std::string> names = p.List("AutoScalingGroupNames.member");
  int max_records = 50;
  if (p.Has("MaxRecords") && (!ParseInt(p.Get("MaxRecords"), &max_records) || max_records < 1 || max_records > 100)) {
    return QueryError(400, "Sender", "ValidationError", "MaxRecords must be between 1 and 100");
  }
  size_t offset = 0;
  if (p.Has("NextToken") && !ParsePageToken(p.Get("NextToken"), &offset)) {
    return QueryError(400, "Sender", "InvalidNextToken", "The token is invalid.");
  }
  const std::vector<cloud::Filter> filters = p.Filters("Filters.member", "Values.member");
  std::vector<const Group*> match;
  for (const Group& g : groups_) {
    if (!names.empty() && std::find(names.begin(), names.end(), g.spec.name) == names.end()) continue;
    if (std::all_of(filters.begin(), filters.end(), [&](const cloud::Filter& f) { return Matches(g.spec, f); })) {
      match.push_back(&g);
    }
  }
  const size_t last = std::min(match.size(), offset + static_cast<size_t>(max_records));
  std::string body = AsgOpen("DescribeAutoScalingGroups") + "  <DescribeAutoScalingGroupsResult>\n    <AutoScalingGroups>";
  for (size_t k = offset; k < last; ++k) {
    const Group& g = *match[k];
    const std::vector<std::string>& zones = g.spec.zones.empty() ? scenario_.zones : g.spec.zones;
    body += "<member>";
    Leaf(body, "AutoScalingGroupName", g.spec.name);
    Leaf(body, "AutoScalingGroupARN", "arn:aws:autoscaling:" + scenario_.region + ":" + scenario_.account_id +
                                          ":autoScalingGroup:" + NewId("", 8) + ":autoScalingGroupName/" + g.spec.name);
    Leaf(body, "MinSize", std::to_string(g.spec.min_size));
    Leaf(body, "MaxSize", std::to_string(g.spec.max_size));
    Leaf(body, "DesiredCapacity", std::to_string(g.spec.desired_capacity));
    Leaf(body, "DefaultCooldown", "300");
    body += "<AvailabilityZones>";
    for (const std::string& z : zones) Leaf(body, "member", z);
    body += "</AvailabilityZones><LoadBalancerNames/><TargetGroupARNs/>";
    Leaf(body, "HealthCheckType", "EC2");
    Leaf(body, "HealthCheckGracePeriod", "300");
    body += "<Instances>";
    for (const Instance& i : instances_) {
      if (i.info.group != g.spec.name || i.info.state == "terminated") continue;
      body += "<member>";
      Leaf(body, "InstanceId", i.info.instance_id);
      Leaf(body, "InstanceType", i.info.instance_type);
      Leaf(body, "AvailabilityZone", i.info.zone);
      Leaf(body, "LifecycleState", i.info.state == "pending" ? "Pending" : i.info.state == "running" ? "InService" : "Terminating");
      Leaf(body, "HealthStatus", "Healthy");
      Leaf(body, "ProtectedFromScaleIn", "false");
      body += "</member>";
    }
    body += "</Instances>";
    Leaf(body, "CreatedTime", FormatRfc3339(g.created));
    body += "<SuspendedProcesses/><EnabledMetrics/><Tags>";
    for (const auto& [key, value] : g.spec.tags) {
      body += "<member>";
      Leaf(body, "ResourceId", g.spec.name);
      Leaf(body, "ResourceType", "auto-scaling-group");
      Leaf(body, "Key", key);
      Leaf(body, "Value", value);
      Leaf(body, "PropagateAtLaunch", "true");
      body += "</member>";
    }
    body += "</Tags><TerminationPolicies><member>Default</member></TerminationPolicies>";
    Leaf(body, "NewInstancesProtectedFromScaleIn", "false");
    Leaf(body, "CapacityRebalance", "false");
    body += "</member>";
  }
  body += "</AutoScalingGroups>\n";
  if (last < match.size()) Leaf(body, "NextToken", PageToken(last));
  body += "  </DescribeAutoScalingGroupsResult>\n  <ResponseMetadata>";
  Leaf(body, "RequestId", Uuid());
  body += "</ResponseMetadata>\n</DescribeAutoScalingGroupsResponse>\n";
  return {200, "text/xml", {}, body};
}

EmulatorResponse CloudEmulator::TerminateInstanceInAutoScalingGroup(const Params& p, WallTime now) {
  const std::string id = p.Get("InstanceId");
  const std::string decrement = p.Get("ShouldDecrementDesiredCapacity");
  if (id.empty() || (decrement != "true" && decrement != "false")) {
    return QueryError(400, "Sender", "ValidationError", "InstanceId and ShouldDecrementDesiredCapacity are required");
  }
  auto it = by_id_.find(id);
  if (it == by_id_.end() || instances_[it->second].info.group.empty()) {
    return QueryError(400, "Sender", "ValidationError", "Instance Id not found - No managed instance found for instance ID: " + id);
  }
  Instance& inst = instances_[it->second];
  auto g = std::find_if(groups_.begin(), groups_.end(), [&](const Group& x) { return x.spec.name == inst.info.group; });
  if (decrement == "true") {
    if (g->spec.desired_capacity - 1 < g->spec.min_size) {
      return QueryError(400, "Sender", "ValidationError",
                        "Currently, desiredSize equals minSize (" + std::to_string(g->spec.min_size) +
                            "). Terminating instance without replacement will violate group's min size constraint. "
                            "Either set shouldDecrementDesiredCapacity flag to false or lower group's min size.");
    }
    --g->spec.desired_capacity;
  }
  Terminate(inst, now);
  ReconcileGroup(*g, now);
  const std::string activity = Uuid();
  std::string body = AsgOpen("TerminateInstanceInAutoScalingGroup") +
                     "  <TerminateInstanceInAutoScalingGroupResult>\n    <Activity>";
  Leaf(body, "ActivityId", activity);
  Leaf(body, "AutoScalingGroupName", g->spec.name);
  Leaf(body, "Description", "Terminating EC2 instance: " + id);
  Leaf(body, "Cause", "At " + FormatRfc3339(now) + " instance " + id + " was taken out of service in response to a user request" +
                          (decrement == "true" ? ", shrinking the capacity from " + std::to_string(g->spec.desired_capacity + 1) +
                                                     " to " + std::to_string(g->spec.desired_capacity) + "."
                                               : "."));
  Leaf(body, "StartTime", FormatRfc3339(now));
  Leaf(body, "StatusCode", "InProgress");
  Leaf(body, "Progress", "0");
  Leaf(body, "Details", "{\"Subnet ID\":\"\",\"Availability Zone\":\"" + inst.info.zone + "\"}");
  body += "</Activity>\n  </TerminateInstanceInAutoScalingGroupResult>\n  <ResponseMetadata>";
  Leaf(body, "RequestId", Uuid());
  body += "</ResponseMetadata>\n</TerminateInstanceInAutoScalingGroupResponse>\n";
  return {200, "text/xml", {}, body};
}

}  // namespace gpuscaler::sim
