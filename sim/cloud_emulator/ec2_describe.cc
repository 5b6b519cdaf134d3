#include <algorithm>
#include <cstdio>
#include <map>
#include <tuple>

#include "sim/cloud_emulator/emulator_impl.h"

namespace gpuscaler::sim {
namespace {

// The DescribeInstances filters on one string field of the instance; Matches
// handles tag:<key>, tag-key and instance-lifecycle.
struct FieldFilter {
  std::string_view name;
  std::string EmulatedInstance::*field;
};
constexpr FieldFilter kFieldFilters[] = {
    {"instance-state-name", &EmulatedInstance::state},
    {"instance-type", &EmulatedInstance::instance_type},
    {"availability-zone", &EmulatedInstance::zone},
    {"client-token", &EmulatedInstance::client_token},
    {"instance-id", &EmulatedInstance::instance_id},
    {"subnet-id", &EmulatedInstance::subnet_id},
};

bool IsTagFilter(const std::string& name) { return name.rfind("tag:", 0) == 0; }

bool IsInstanceFilter(const std::string& name) {
  return IsTagFilter(name) || name == "tag-key" || name == "instance-lifecycle" ||
         std::any_of(std::begin(kFieldFilters), std::end(kFieldFilters), [&](const FieldFilter& f) { return f.name == name; });
}

// Whether `i` passes `f`, one of the IsInstanceFilter names.
bool Matches(const EmulatedInstance& i, const cloud::Filter& f) {
  if (std::optional<bool> tagged = MatchesTagFilter(f, i.tags)) return *tagged;
  if (f.name == "instance-lifecycle") return i.lifecycle == CapacityType::kSpot && AnyGlob(f.values, "spot");
  for (const FieldFilter& field : kFieldFilters) {
    if (f.name == field.name) return AnyGlob(f.values, i.*field.field);
  }
  return true;
}

}  // namespace

void InstanceItemXml(std::string& body, const EmulatedInstance& i) {
  body += "<item>";
  Leaf(body, "instanceId", i.instance_id);
  Leaf(body, "imageId", "ami-0abcdef1234567890");
  body += "<instanceState>";
  Leaf(body, "code", std::to_string(StateCode(i.state)));
  Leaf(body, "name", i.state);
  body += "</instanceState>";
  Leaf(body, "privateDnsName", "");
  Leaf(body, "dnsName", "");
  const bool stopped = i.state == "stopping" || i.state == "stopped";
  Leaf(body, "reason", i.state == "shutting-down" || i.state == "terminated" || stopped ? "User initiated" : "");
  Leaf(body, "amiLaunchIndex", "0");
  body += "<productCodes/>";
  Leaf(body, "instanceType", i.instance_type);
  Leaf(body, "launchTime", Ec2Time(i.launch_time));
  body += "<placement>";
  Leaf(body, "availabilityZone", i.zone);
  Leaf(body, "groupName", i.placement_group);
  Leaf(body, "tenancy", "default");
  body += "</placement><monitoring><state>disabled</state></monitoring>";
  if (!i.subnet_id.empty()) Leaf(body, "subnetId", i.subnet_id);
  Leaf(body, "architecture", "x86_64");
  Leaf(body, "rootDeviceType", "ebs");
  Leaf(body, "rootDeviceName", "/dev/xvda");
  body += "<blockDeviceMapping/>";
  if (i.lifecycle == CapacityType::kSpot) Leaf(body, "instanceLifecycle", "spot");
  if (!i.spot_request_id.empty()) Leaf(body, "spotInstanceRequestId", i.spot_request_id);
  if (i.capacity_block) Leaf(body, "instanceLifecycle", "capacity-block");
  if (stopped && i.interrupted) {
    body += "<stateReason>";
    Leaf(body, "code", "Server.SpotInstanceShutdown");
    Leaf(body, "message", "Server.SpotInstanceShutdown: Spot instance interrupted");
    body += "</stateReason>";
  } else if (stopped) {
    const std::string code = i.hibernated ? "Client.UserInitiatedHibernate" : "Client.UserInitiatedShutdown";
    body += "<stateReason>";
    Leaf(body, "code", code);
    Leaf(body, "message", code + (i.hibernated ? ": User initiated hibernate" : ": User initiated shutdown"));
    body += "</stateReason>";
  }
  Leaf(body, "virtualizationType", "hvm");
  Leaf(body, "clientToken", i.client_token);
  TagSet(body, i.tags);
  Leaf(body, "hypervisor", "xen");
  if (!i.capacity_reservation_id.empty()) Leaf(body, "capacityReservationId", i.capacity_reservation_id);
  // EC2 shows the preference, and the target when the launch named one.
  body += "<capacityReservationSpecification>";
  Leaf(body, "capacityReservationPreference", i.capacity_reservation_preference);
  if (i.capacity_reservation_preference == "capacity-reservations-only" &&
      !i.capacity_reservation_id.empty()) {
    body += "<capacityReservationTarget>";
    Leaf(body, "capacityReservationId", i.capacity_reservation_id);
    body += "</capacityReservationTarget>";
  }
  body += "</capacityReservationSpecification>";
  body += "</item>";
}

EmulatorResponse CloudEmulator::DescribeInstances(const Params& p) {
  const WallTime now = clock_.WallNow();
  const std::vector<std::string> ids = p.List("InstanceId");
  for (const std::string& id : ids) {
    if (by_id_.count(id) == 0) return Ec2Error(400, "InvalidInstanceID.NotFound", "The instance ID '" + id + "' does not exist");
  }
  const std::vector<cloud::Filter> filters = p.Filters("Filter", "Value");
  for (const cloud::Filter& f : filters) {
    if (!IsInstanceFilter(f.name)) return Ec2Error(400, "InvalidParameterValue", "The filter '" + f.name + "' is invalid");
  }
  int max_results = 0;
  if (p.Has("MaxResults")) {
    if (!ids.empty()) {
      return Ec2Error(400, "InvalidParameterCombination", "The parameter instancesSet cannot be used with the parameter maxResults");
    }
    if (!ParseInt(p.Get("MaxResults"), &max_results) || max_results < 5 || max_results > 1000) {
      return Ec2Error(400, "InvalidParameterValue", "Value for parameter maxResults is invalid. Expecting a value between 5 and 1000.");
    }
  }
  size_t offset = 0;
  if (p.Has("NextToken") && !ParsePageToken(p.Get("NextToken"), &offset)) {
    return Ec2Error(400, "InvalidParameterValue", "The token is invalid.");
  }
  std::vector<const Instance*> match;
  for (const Instance& i : instances_) {
    if (i.terminated_at && now >= *i.terminated_at + scenario_.terminated_visible) continue;
    if (!ids.empty() && std::find(ids.begin(), ids.end(), i.info.instance_id) == ids.end()) continue;
    if (std::all_of(filters.begin(), filters.end(), [&](const cloud::Filter& f) { return Matches(i.info, f); })) {
      match.push_back(&i);
    }
  }
  const size_t end = max_results > 0 ? std::min(match.size(), offset + static_cast<size_t>(max_results)) : match.size();
  std::string body = Ec2Open("DescribeInstances", Uuid());
  body += "<reservationSet>";
  for (size_t k = offset; k < end;) {
    const std::string& res = match[k]->reservation_id;
    body += "<item>";
    Leaf(body, "reservationId", res);
    Leaf(body, "ownerId", scenario_.account_id);
    body += "<groupSet/><instancesSet>";
    for (; k < end && match[k]->reservation_id == res; ++k) {
      InstanceItemXml(body, match[k]->info);
    }
    body += "</instancesSet></item>";
  }
  body += "</reservationSet>\n";
  if (end < match.size()) {
    Leaf(body, "nextToken", PageToken(end));
    body += '\n';
  }
  body += "</DescribeInstancesResponse>\n";
  return {200, kXmlContentType, {}, body};
}

EmulatorResponse CloudEmulator::DescribeSpotPriceHistory(const Params& p) {
  const WallTime now = clock_.WallNow();
  std::vector<std::string> types = p.List("InstanceType");
  std::string zone = p.Get("AvailabilityZone");
  for (const cloud::Filter& f : p.Filters("Filter", "Value")) {
    if (f.name == "instance-type") types.insert(types.end(), f.values.begin(), f.values.end());
    if (f.name == "availability-zone" && !f.values.empty()) zone = f.values[0];
  }
  WallTime start{}, end = now;
  if (p.Has("StartTime") && !cloud::ParseAwsTime(p.Get("StartTime"), &start)) {
    return Ec2Error(400, "InvalidParameterValue", "Invalid value for StartTime");
  }
  if (p.Has("EndTime") && !cloud::ParseAwsTime(p.Get("EndTime"), &end)) {
    return Ec2Error(400, "InvalidParameterValue", "Invalid value for EndTime");
  }
  end = std::min(end, now);  // a scripted future is not history yet
  int max_results = 1000;
  if (p.Has("MaxResults") && (!ParseInt(p.Get("MaxResults"), &max_results) || max_results < 1 || max_results > 1000)) {
    return Ec2Error(400, "InvalidParameterValue", "MaxResults must be between 1 and 1000");
  }
  size_t offset = 0;
  if (p.Has("NextToken") && !p.Get("NextToken").empty() && !ParsePageToken(p.Get("NextToken"), &offset)) {
    return Ec2Error(400, "InvalidNextToken", "The specified token is invalid.");
  }
  std::vector<const ScriptedPrice*> in;
  std::map<std::pair<std::string, std::string>, const ScriptedPrice*> before;  // in force at start
  for (const ScriptedPrice& sp : scenario_.spot_prices) {
    if (!types.empty() && std::find(types.begin(), types.end(), sp.instance_type) == types.end()) continue;
    if (!zone.empty() && sp.zone != zone) continue;
    if (sp.time > end) continue;
    if (sp.time >= start) {
      in.push_back(&sp);
    } else {
      auto& b = before[{sp.instance_type, sp.zone}];
      if (b == nullptr || sp.time > b->time) b = &sp;
    }
  }
  for (const auto& [key, sp] : before) in.push_back(sp);
  std::stable_sort(in.begin(), in.end(), [](const ScriptedPrice* a, const ScriptedPrice* b) {
    if (a->time != b->time) return a->time > b->time;
    return std::tie(a->instance_type, a->zone) < std::tie(b->instance_type, b->zone);
  });
  const size_t last = std::min(in.size(), offset + static_cast<size_t>(max_results));
  std::string body = Ec2Open("DescribeSpotPriceHistory", Uuid());
  body += "<spotPriceHistorySet>";
  for (size_t k = offset; k < last; ++k) {
    char price[32];
    std::snprintf(price, sizeof price, "%.6f", in[k]->usd_per_hour);
    body += "<item>";
    Leaf(body, "instanceType", in[k]->instance_type);
    Leaf(body, "productDescription", "Linux/UNIX");
    Leaf(body, "spotPrice", price);
    Leaf(body, "timestamp", Ec2Time(in[k]->time));
    Leaf(body, "availabilityZone", in[k]->zone);
    body += "</item>";
  }
  body += "</spotPriceHistorySet>\n";
  Leaf(body, "nextToken", last < in.size() ? PageToken(last) : "");
  body += "\n</DescribeSpotPriceHistoryResponse>\n";
  return {200, kXmlContentType, {}, body};
}

}  // namespace gpuscaler::sim
