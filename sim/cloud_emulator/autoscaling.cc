#include <algorithm>

#include "sim/cloud_emulator/emulator_impl.h"

namespace gpuscaler::sim {
namespace {

constexpr size_t kActivitiesKept = 1000;

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

CloudEmulator::Group* CloudEmulator::FindGroup(const std::string& name) {
  auto g = std::find_if(groups_.begin(), groups_.end(), [&](const Group& x) { return x.spec.name == name; });
  return g == groups_.end() ? nullptr : &*g;
}

EmulatorResponse CloudEmulator::GroupNotFound(const std::string& name) {
  return QueryError(400, "Sender", "ValidationError",
                    "AutoScalingGroup name not found - AutoScalingGroup '" + name + "' not found");
}

CloudEmulator::Group* CloudEmulator::RequiredGroup(const Params& p, EmulatorResponse* error) {
  const std::string name = p.Get("AutoScalingGroupName");
  if (name.empty()) {
    *error = QueryError(400, "Sender", "ValidationError", "AutoScalingGroupName is required");
    return nullptr;
  }
  Group* g = FindGroup(name);
  if (g == nullptr) *error = GroupNotFound(name);
  return g;
}

CloudEmulator::Instance* CloudEmulator::LaunchForGroup(const std::vector<std::string>& zones, const std::vector<std::string>& types,
                                        const std::map<std::string, std::string>& tags, WallTime now, WallTime at,
                                        std::string* why) {
  std::string code, short_type, short_zone;
  for (const std::string& zone : zones) {
    for (const std::string& type : types) {
      auto room = Room(type, zone, CapacityType::kOnDemand, now);
      if (!room || room->first > 0)
        return &Launch(type, zone, "", CapacityType::kOnDemand, tags, "", NewId("r-", 17), at);
      if (code.empty()) std::tie(code, short_type, short_zone) = std::tie(room->second, type, zone);
    }
  }
  *why = "Could not launch On-Demand Instances. " + code + " - We currently do not have sufficient " + short_type +
         " capacity in the Availability Zone you requested (" + short_zone + "). Launching EC2 instance failed.";
  return nullptr;
}

void CloudEmulator::RecordActivity(Group& g, Activity a) {
  g.activities.push_back(std::move(a));
  if (g.activities.size() > kActivitiesKept) g.activities.pop_front();
}

std::map<std::string, std::string> CloudEmulator::GroupLaunchTags(Group& g) {
  std::map<std::string, std::string> tags;
  for (const auto& [key, value] : g.spec.tags) {
    if (g.propagate[key]) tags[key] = value;
  }
  tags[cloud::kAsgGroupNameTag] = g.spec.name;
  return tags;
}

void CloudEmulator::ReconcileGroup(Group& g, WallTime now) {
  ReconcileInService(g, now);
  ReconcileWarmPool(g, now);
}

void CloudEmulator::ReconcileInService(Group& g, WallTime now) {
  std::vector<Instance*> live;
  for (Instance& i : instances_) {
    if (i.info.group == g.spec.name && IsLive(i.info) && !i.info.in_warm_pool) live.push_back(&i);
  }
  const int desired = g.spec.desired_capacity;
  const std::string size_change = " the capacity from " + std::to_string(live.size()) + " to " + std::to_string(desired) + ".";
  while (static_cast<int>(live.size()) > desired) {
    LeaveService(g, *live.back(), now);
    const bool reused = live.back()->info.in_warm_pool;
    RecordActivity(g, {Uuid(), (reused ? "Moving EC2 instance to warm pool: " : "Terminating EC2 instance: ") +
                                   live.back()->info.instance_id,
                       "At " + FormatRfc3339(now) +
                           " an instance was taken out of service in response to a difference between desired and "
                           "actual capacity, shrinking" + size_change,
                       "Successful", "", now});
    live.pop_back();
  }
  if (static_cast<int>(live.size()) >= desired || now < g.launch_at) return;

  // Launched at the end of the delay (or retry wait), even when no request
  // came in at that moment.
  const WallTime at = g.launch_at == WallTime{} ? now : g.launch_at;
  const std::string cause = "At " + FormatRfc3339(at) +
                            " an instance was started in response to a difference between desired and actual "
                            "capacity, increasing" + size_change;
  const std::vector<std::string>& zones = g.spec.zones.empty() ? scenario_.zones : g.spec.zones;
  const std::vector<std::string> types =
      g.spec.instance_types.empty() ? std::vector<std::string>{g.spec.instance_type} : g.spec.instance_types;
  const std::map<std::string, std::string> tags = GroupLaunchTags(g);
  while (static_cast<int>(live.size()) < desired) {
    // Zones with the fewest live instances of the group first (AZ balance),
    // then the types in priority order.
    std::vector<std::string> order = zones;
    auto in_zone = [&](const std::string& z) {
      return std::count_if(live.begin(), live.end(), [&](const Instance* i) { return i->info.zone == z; });
    };
    std::stable_sort(order.begin(), order.end(), [&](const auto& a, const auto& b) { return in_zone(a) < in_zone(b); });
    if (Instance* woken = TakeWarm(g, order, at)) {
      live.push_back(woken);
      RecordActivity(g, {Uuid(), "Launching a new EC2 instance from warm pool: " + woken->info.instance_id, cause,
                         "Successful", "", at});
      continue;
    }
    std::string reason;
    Instance* made = LaunchForGroup(order, types, tags, now, at, &reason);
    if (made == nullptr) {
      RecordActivity(g, {Uuid(), "Launching a new EC2 instance.  Status Reason: " + reason, cause, "Failed", reason, at});
      g.launch_at = at + kGroupRetry;
      return;
    }
    made->info.group = g.spec.name;
    live.push_back(made);
    RecordActivity(g, {Uuid(), "Launching a new EC2 instance: " + made->info.instance_id, cause, "Successful", "", at});
  }
  g.launch_at = WallTime{};
}

EmulatorResponse CloudEmulator::SetDesiredCapacity(const Params& p, WallTime now) {
  const std::string name = p.Get("AutoScalingGroupName");
  int desired = 0;
  if (name.empty() || !ParseInt(p.Get("DesiredCapacity"), &desired)) {
    return QueryError(400, "Sender", "ValidationError", "AutoScalingGroupName and DesiredCapacity are required");
  }
  Group* g = FindGroup(name);
  if (g == nullptr) {
    return GroupNotFound(name);
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
  if (desired > g->spec.desired_capacity) g->launch_at = now + scenario_.group_launch_delay;
  g->spec.desired_capacity = desired;
  ReconcileGroup(*g, now);
  return AsgEmptyAnswer("SetDesiredCapacity", Uuid());
}

EmulatorResponse CloudEmulator::CreateOrUpdateTags(const Params& p) {
  struct Tag {
    std::string key, value;
    bool propagate = false;
  };
  std::vector<std::pair<Group*, Tag>> tags;
  for (int n = 1; p.Has("Tags.member." + std::to_string(n) + ".Key"); ++n) {
    const std::string base = "Tags.member." + std::to_string(n) + ".";
    const std::string group = p.Get(base + "ResourceId");
    if (p.Get(base + "ResourceType") != "auto-scaling-group") {
      return QueryError(400, "Sender", "ValidationError", "ResourceType must be auto-scaling-group");
    }
    Group* g = FindGroup(group);
    if (g == nullptr) {
      return GroupNotFound(group);
    }
    tags.push_back({g, {p.Get(base + "Key"), p.Get(base + "Value"), p.Get(base + "PropagateAtLaunch") == "true"}});
  }
  if (tags.empty()) return QueryError(400, "Sender", "ValidationError", "Tags is required");
  for (const auto& [g, t] : tags) {
    g->spec.tags[t.key] = t.value;
    g->propagate[t.key] = t.propagate;
  }
  return AsgEmptyAnswer("CreateOrUpdateTags", Uuid());
}

std::optional<EmulatorResponse> CloudEmulator::AsgPaging(const Params& p, int fallback, size_t* offset,
                                                         size_t* max_records) {
  int max = fallback;
  if (p.Has("MaxRecords") && (!ParseInt(p.Get("MaxRecords"), &max) || max < 1 || max > 100)) {
    return QueryError(400, "Sender", "ValidationError", "MaxRecords must be between 1 and 100");
  }
  *max_records = static_cast<size_t>(max);
  *offset = 0;
  if (p.Has("NextToken") && !ParsePageToken(p.Get("NextToken"), offset)) {
    return QueryError(400, "Sender", "InvalidNextToken", "The token is invalid.");
  }
  return std::nullopt;
}

EmulatorResponse CloudEmulator::DescribeAutoScalingGroups(const Params& p) {
  const std::vector<std::string> names = p.List("AutoScalingGroupNames.member");
  size_t offset = 0, max_records = 0;
  if (auto bad = AsgPaging(p, 50, &offset, &max_records)) return *bad;
  const std::vector<cloud::Filter> filters = p.Filters("Filters.member", "Values.member");
  std::vector<const Group*> match;
  for (const Group& g : groups_) {
    if (!names.empty() && std::find(names.begin(), names.end(), g.spec.name) == names.end()) continue;
    if (std::all_of(filters.begin(), filters.end(), [&](const cloud::Filter& f) { return Matches(g.spec, f); })) {
      match.push_back(&g);
    }
  }
  const size_t last = std::min(match.size(), offset + max_records);
  std::string body = AsgPageOpen("DescribeAutoScalingGroups", "AutoScalingGroups");
  for (size_t k = offset; k < last; ++k) {
    const Group& g = *match[k];
    const std::vector<std::string>& zones = g.spec.zones.empty() ? scenario_.zones : g.spec.zones;
    body += "<member>";
    Leaf(body, "AutoScalingGroupName", g.spec.name);
    Leaf(body, "AutoScalingGroupARN", g.arn);
    std::string lt;
    Leaf(lt, "LaunchTemplateName", g.spec.launch_template);
    Leaf(lt, "Version", "$Latest");
    if (g.spec.instance_types.empty()) {
      body += "<LaunchTemplate>" + lt + "</LaunchTemplate>";
    } else {
      body += "<MixedInstancesPolicy><LaunchTemplate><LaunchTemplateSpecification>" + lt +
              "</LaunchTemplateSpecification><Overrides>";
      for (const std::string& t : g.spec.instance_types) {
        body += "<member>";
        Leaf(body, "InstanceType", t);
        body += "</member>";
      }
      body += "</Overrides></LaunchTemplate><InstancesDistribution>";
      Leaf(body, "OnDemandAllocationStrategy", "prioritized");
      Leaf(body, "OnDemandBaseCapacity", "0");
      Leaf(body, "OnDemandPercentageAboveBaseCapacity", "100");
      body += "</InstancesDistribution></MixedInstancesPolicy>";
    }
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
      if (i.info.group != g.spec.name || i.info.state == "terminated" || i.info.in_warm_pool) continue;
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
      Leaf(body, "PropagateAtLaunch", g.propagate.at(key) ? "true" : "false");
      body += "</member>";
    }
    body += "</Tags><TerminationPolicies><member>Default</member></TerminationPolicies>";
    Leaf(body, "NewInstancesProtectedFromScaleIn", "false");
    Leaf(body, "CapacityRebalance", "false");
    if (g.warm_pool) {
      body += WarmPoolConfigurationXml(*g.warm_pool);
      const auto warm = std::count_if(instances_.begin(), instances_.end(), [&](const Instance& i) {
        return i.info.group == g.spec.name && i.info.in_warm_pool && !IsGone(i.info);
      });
      Leaf(body, "WarmPoolSize", std::to_string(warm));
    }
    body += "</member>";
  }
  body += AsgPageClose("DescribeAutoScalingGroups", "AutoScalingGroups", last < match.size() ? PageToken(last) : "",
                       Uuid());
  return {200, "text/xml", {}, body};
}

EmulatorResponse CloudEmulator::DescribeScalingActivities(const Params& p) {
  const std::string name = p.Get("AutoScalingGroupName");
  const std::vector<std::string> ids = p.List("ActivityIds.member");
  size_t offset = 0, max_records = 0;
  if (auto bad = AsgPaging(p, 100, &offset, &max_records)) return *bad;
  std::vector<std::pair<const Group*, const Activity*>> match;
  for (const Group& g : groups_) {
    if (!name.empty() && g.spec.name != name) continue;
    for (auto a = g.activities.rbegin(); a != g.activities.rend(); ++a) {
      if (ids.empty() || std::find(ids.begin(), ids.end(), a->id) != ids.end()) match.push_back({&g, &*a});
    }
  }
  // Newest first; in one group, of two at the same second the later recorded.
  std::stable_sort(match.begin(), match.end(), [](const auto& a, const auto& b) { return a.second->start > b.second->start; });
  const size_t last = std::min(match.size(), offset + max_records);
  std::string body = AsgPageOpen("DescribeScalingActivities", "Activities");
  for (size_t k = offset; k < last; ++k) {
    const auto& [g, a] = match[k];
    body += "<member>";
    Leaf(body, "ActivityId", a->id);
    Leaf(body, "AutoScalingGroupName", g->spec.name);
    Leaf(body, "AutoScalingGroupARN", g->arn);
    Leaf(body, "Description", a->description);
    Leaf(body, "Cause", a->cause);
    Leaf(body, "StartTime", FormatRfc3339(a->start));
    Leaf(body, "EndTime", FormatRfc3339(a->start));
    Leaf(body, "StatusCode", a->status_code);
    if (!a->status_message.empty()) Leaf(body, "StatusMessage", a->status_message);
    Leaf(body, "Progress", "100");
    Leaf(body, "Details", "{}");
    body += "</member>";
  }
  body += AsgPageClose("DescribeScalingActivities", "Activities", last < match.size() ? PageToken(last) : "", Uuid());
  return {200, "text/xml", {}, body};
}

EmulatorResponse CloudEmulator::TerminateInstanceInAutoScalingGroup(const Params& p, WallTime now) {
  const std::string id = p.Get("InstanceId");
  const std::string decrement = p.Get("ShouldDecrementDesiredCapacity");
  if (id.empty() || (decrement != "true" && decrement != "false")) {
    return QueryError(400, "Sender", "ValidationError", "InstanceId and ShouldDecrementDesiredCapacity are required");
  }
  auto it = by_id_.find(id);
  if (it == by_id_.end() || instances_[it->second].info.group.empty() || !IsLive(instances_[it->second].info) ||
      instances_[it->second].info.in_warm_pool) {
    return QueryError(400, "Sender", "ValidationError", "Instance Id not found - No managed instance found for instance ID: " + id);
  }
  Instance& inst = instances_[it->second];
  Group& g = *FindGroup(inst.info.group);
  const int before = g.spec.desired_capacity;
  if (decrement == "true") {
    if (before - 1 < g.spec.min_size) {
      return QueryError(400, "Sender", "ValidationError",
                        "Currently, desiredSize equals minSize (" + std::to_string(g.spec.min_size) +
                            "). Terminating instance without replacement will violate group's min size constraint. "
                            "Either set shouldDecrementDesiredCapacity flag to false or lower group's min size.");
    }
    --g.spec.desired_capacity;
  }
  Terminate(inst, now);
  const Activity activity{Uuid(), "Terminating EC2 instance: " + id,
                          "At " + FormatRfc3339(now) + " instance " + id +
                              " was taken out of service in response to a user request" +
                              (decrement == "true" ? ", shrinking the capacity from " + std::to_string(before) + " to " +
                                                         std::to_string(g.spec.desired_capacity) + "."
                                                   : "."),
                          "InProgress", "", now};
  RecordActivity(g, activity);
  ReconcileGroup(g, now);
  std::string body = AsgOpen("TerminateInstanceInAutoScalingGroup") +
                     "  <TerminateInstanceInAutoScalingGroupResult>\n    <Activity>";
  Leaf(body, "ActivityId", activity.id);
  Leaf(body, "AutoScalingGroupName", g.spec.name);
  Leaf(body, "Description", activity.description);
  Leaf(body, "Cause", activity.cause);
  Leaf(body, "StartTime", FormatRfc3339(now));
  Leaf(body, "StatusCode", activity.status_code);
  Leaf(body, "Progress", "0");
  Leaf(body, "Details", "{\"Subnet ID\":\"\",\"Availability Zone\":\"" + inst.info.zone + "\"}");
  body += "</Activity>\n  </TerminateInstanceInAutoScalingGroupResult>\n  <ResponseMetadata>";
  Leaf(body, "RequestId", Uuid());
  body += "</ResponseMetadata>\n</TerminateInstanceInAutoScalingGroupResponse>\n";
  return {200, "text/xml", {}, body};
}

}  // namespace gpuscaler::sim
