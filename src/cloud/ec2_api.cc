#include "gpuscaler/cloud/ec2_api.h"

#include <cstdio>
#include <cstdlib>

#include "query_params.h"
#include "warm_pool_xml.h"
#include "xml_util.h"

namespace gpuscaler::cloud {
namespace {

CapacityType Lifecycle(std::string_view s) { return s == "spot" ? CapacityType::kSpot : CapacityType::kOnDemand; }

FleetOutcomeKey Where(pugi::xml_node item) {
  FleetOutcomeKey k;
  pugi::xml_node o = item.child("launchTemplateAndOverrides").child("overrides");
  k.instance_type = o.child_value("instanceType");
  if (k.instance_type.empty()) k.instance_type = item.child_value("instanceType");
  k.availability_zone = o.child_value("availabilityZone");
  k.subnet_id = o.child_value("subnetId");
  k.lifecycle = Lifecycle(item.child_value("lifecycle"));
  return k;
}

Ec2Instance ParseInstance(pugi::xml_node item) {
  Ec2Instance i;
  i.instance_id = item.child_value("instanceId");
  i.instance_type = item.child_value("instanceType");
  i.availability_zone = item.child("placement").child_value("availabilityZone");
  i.placement_group = item.child("placement").child_value("groupName");
  i.subnet_id = item.child_value("subnetId");
  i.lifecycle = Lifecycle(item.child_value("instanceLifecycle"));
  i.state = item.child("instanceState").child_value("name");
  i.state_code = xml::Int(item.child("instanceState"), "code");
  ParseAwsTime(item.child_value("launchTime"), &i.launch_time);
  i.client_token = item.child_value("clientToken");
  for (pugi::xml_node t : item.child("tagSet").children("item")) i.tags[t.child_value("key")] = t.child_value("value");
  i.capacity_reservation_id = item.child_value("capacityReservationId");
  i.capacity_reservation_preference =
      item.child("capacityReservationSpecification").child_value("capacityReservationPreference");
  i.capacity_block = std::string_view(item.child_value("instanceLifecycle")) == "capacity-block";
  i.spot_instance_request_id = item.child_value("spotInstanceRequestId");
  i.state_reason_code = item.child("stateReason").child_value("code");
  return i;
}

}  // namespace

QueryParams CreateFleetQuery(const CreateFleetRequest& r) {
  QueryParams q = {{"Action", "CreateFleet"}, {"Version", kEc2ApiVersion}};
  AddIfSet(q, "SpotOptions.AllocationStrategy", r.spot_allocation_strategy);
  AddIfSet(q, "OnDemandOptions.AllocationStrategy", r.on_demand_allocation_strategy);
  const std::string lt = "LaunchTemplateConfigs.1.";
  if (!r.launch_template.id.empty()) {
    q.emplace_back(lt + "LaunchTemplateSpecification.LaunchTemplateId", r.launch_template.id);
  } else {
    q.emplace_back(lt + "LaunchTemplateSpecification.LaunchTemplateName", r.launch_template.name);
  }
  q.emplace_back(lt + "LaunchTemplateSpecification.Version", r.launch_template.version);
  for (size_t i = 0; i < r.overrides.size(); ++i) {
    const FleetOverride& o = r.overrides[i];
    const std::string base = lt + "Overrides." + std::to_string(i + 1) + ".";
    q.emplace_back(base + "InstanceType", o.instance_type);
    AddIfSet(q, base + "SubnetId", o.subnet_id);
    AddIfSet(q, base + "AvailabilityZone", o.availability_zone);
    AddIfSet(q, base + "Priority", o.priority);
    AddIfSet(q, base + "Placement.GroupName", o.placement_group);
  }
  const std::string tc = "TargetCapacitySpecification.";
  q.emplace_back(tc + "TotalTargetCapacity", std::to_string(r.total_target_capacity));
  AddIfSet(q, tc + "OnDemandTargetCapacity", r.on_demand_target_capacity);
  AddIfSet(q, tc + "SpotTargetCapacity", r.spot_target_capacity);
  q.emplace_back(tc + "DefaultTargetCapacityType", std::string(ToString(r.default_capacity_type)));
  if (r.min_target_capacity) {
    const std::string options = r.default_capacity_type == CapacityType::kSpot ? "SpotOptions." : "OnDemandOptions.";
    q.emplace_back(options + "MinTargetCapacity", std::to_string(*r.min_target_capacity));
    q.emplace_back(options + "SingleAvailabilityZone", "true");
  }
  q.emplace_back("Type", r.type);
  AddIfSet(q, "ClientToken", r.client_token);
  if (!r.instance_tags.empty()) {
    q.emplace_back("TagSpecification.1.ResourceType", "instance");
    int n = 1;
    for (const auto& [k, v] : r.instance_tags) {
      q.emplace_back("TagSpecification.1.Tag." + std::to_string(n) + ".Key", k);
      q.emplace_back("TagSpecification.1.Tag." + std::to_string(n) + ".Value", v);
      ++n;
    }
  }
  return q;
}

Result<CreateFleetResponse> ParseCreateFleet(std::string_view body) {
  pugi::xml_document doc;
  if (Status s = xml::Load(doc, body, "CreateFleetResponse"); !s.ok()) return s.error();
  pugi::xml_node root = doc.document_element();
  CreateFleetResponse r;
  r.fleet_id = root.child_value("fleetId");
  for (pugi::xml_node item : root.child("fleetInstanceSet").children("item")) {
    FleetInstances fi{Where(item), {}};
    for (pugi::xml_node id : item.child("instanceIds").children("item")) fi.instance_ids.push_back(id.text().get());
    r.instances.push_back(std::move(fi));
  }
  for (pugi::xml_node item : root.child("errorSet").children("item")) {
    FleetError e;
    e.where = Where(item);
    e.code = item.child_value("errorCode");
    e.message = item.child_value("errorMessage");
    e.category = ClassifyAwsError(e.code, 0);
    r.errors.push_back(std::move(e));
  }
  return r;
}

QueryParams TerminateInstancesQuery(const std::vector<std::string>& ids) {
  QueryParams q = {{"Action", "TerminateInstances"}, {"Version", kEc2ApiVersion}};
  AddList(q, "InstanceId", ids);
  return q;
}

Result<std::vector<InstanceStateChange>> ParseTerminateInstances(std::string_view body) {
  return xml::ParseItems(body, "TerminateInstances", "instancesSet", [](pugi::xml_node item) {
    return InstanceStateChange{item.child_value("instanceId"), item.child("previousState").child_value("name"),
                               item.child("currentState").child_value("name")};
  });
}

QueryParams CancelSpotInstanceRequestsQuery(const std::vector<std::string>& request_ids) {
  QueryParams q = {{"Action", "CancelSpotInstanceRequests"}, {"Version", kEc2ApiVersion}};
  AddList(q, "SpotInstanceRequestId", request_ids);
  return q;
}

QueryParams DescribeInstancesQuery(const DescribeInstancesRequest& r) {
  QueryParams q = {{"Action", "DescribeInstances"}, {"Version", kEc2ApiVersion}};
  AddList(q, "InstanceId", r.instance_ids);
  AddFilters(q, r.filters, /*query_protocol=*/false);
  AddIfSet(q, "MaxResults", r.max_results);
  AddIfSet(q, "NextToken", r.next_token);
  return q;
}

Result<DescribeInstancesPage> ParseDescribeInstances(std::string_view body) {
  auto read = [](pugi::xml_node reservation, DescribeInstancesPage& page) {
    for (pugi::xml_node item : reservation.child("instancesSet").children("item")) {
      page.instances.push_back(ParseInstance(item));
    }
    return Status::Ok();
  };
  return xml::ParsePage<DescribeInstancesPage>(body, xml::Protocol::kEc2, "DescribeInstances", "reservationSet", read);
}

Result<std::vector<Ec2Instance>> ParseInstancesSet(std::string_view body) {
  pugi::xml_document doc;
  pugi::xml_parse_result r = doc.load_buffer(body.data(), body.size());
  if (!r) return Error::InvalidInput(std::string("instancesSet: not XML: ") + r.description());
  std::vector<Ec2Instance> out;
  for (pugi::xml_node item : doc.document_element().child("instancesSet").children("item")) {
    out.push_back(ParseInstance(item));
  }
  return out;
}

QueryParams DescribeSpotPriceHistoryQuery(const DescribeSpotPriceHistoryRequest& r) {
  QueryParams q = {{"Action", "DescribeSpotPriceHistory"}, {"Version", kEc2ApiVersion}};
  AddList(q, "InstanceType", r.instance_types);
  AddList(q, "ProductDescription", r.product_descriptions);
  AddIfSet(q, "AvailabilityZone", r.availability_zone);
  AddIfSet(q, "StartTime", r.start_time);
  AddIfSet(q, "EndTime", r.end_time);
  AddIfSet(q, "MaxResults", r.max_results);
  AddFilters(q, r.filters, /*query_protocol=*/false);
  AddIfSet(q, "NextToken", r.next_token);
  return q;
}

Result<SpotPriceHistoryPage> ParseDescribeSpotPriceHistory(std::string_view body) {
  auto read = [](pugi::xml_node item, SpotPriceHistoryPage& page) -> Status {
    SpotPricePoint p;
    p.instance_type = item.child_value("instanceType");
    p.availability_zone = item.child_value("availabilityZone");
    p.product_description = item.child_value("productDescription");
    char* end = nullptr;
    const char* price = item.child_value("spotPrice");
    p.usd_per_hour = std::strtod(price, &end);
    if (end == price || !ParseAwsTime(item.child_value("timestamp"), &p.time)) {
      return Error::InvalidInput("DescribeSpotPriceHistory: bad spotPrice or timestamp for " + p.instance_type);
    }
    page.prices.push_back(std::move(p));
    return Status::Ok();
  };
  return xml::ParsePage<SpotPriceHistoryPage>(body, xml::Protocol::kEc2, "DescribeSpotPriceHistory", "spotPriceHistorySet",
                                         read);
}

QueryParams SetDesiredCapacityQuery(const std::string& group, int desired, std::optional<bool> honor_cooldown) {
  QueryParams q = {{"Action", "SetDesiredCapacity"},
                   {"Version", kAutoScalingApiVersion},
                   {"AutoScalingGroupName", group},
                   {"DesiredCapacity", std::to_string(desired)}};
  AddIfSet(q, "HonorCooldown", honor_cooldown);
  return q;
}

QueryParams DescribeAutoScalingGroupsQuery(const DescribeAutoScalingGroupsRequest& r) {
  QueryParams q = {{"Action", "DescribeAutoScalingGroups"}, {"Version", kAutoScalingApiVersion}};
  AddList(q, "AutoScalingGroupNames.member", r.names);
  AddIfSet(q, "MaxRecords", r.max_records);
  AddIfSet(q, "NextToken", r.next_token);
  AddFilters(q, r.filters, /*query_protocol=*/true);
  return q;
}

Result<AutoScalingGroupsPage> ParseDescribeAutoScalingGroups(std::string_view body) {
  auto read = [](pugi::xml_node m, AutoScalingGroupsPage& page) {
    AutoScalingGroup g;
    g.name = m.child_value("AutoScalingGroupName");
    g.min_size = xml::Int(m, "MinSize");
    g.max_size = xml::Int(m, "MaxSize");
    g.desired_capacity = xml::Int(m, "DesiredCapacity");
    for (pugi::xml_node z : m.child("AvailabilityZones").children("member")) g.availability_zones.push_back(z.text().get());
    for (pugi::xml_node i : m.child("Instances").children("member")) {
      g.instances.push_back({i.child_value("InstanceId"), i.child_value("InstanceType"), i.child_value("AvailabilityZone"),
                             i.child_value("LifecycleState"), i.child_value("HealthStatus"),
                             std::string_view(i.child_value("ProtectedFromScaleIn")) == "true"});
    }
    for (pugi::xml_node t : m.child("Tags").children("member")) g.tags[t.child_value("Key")] = t.child_value("Value");
    pugi::xml_node mixed = m.child("MixedInstancesPolicy").child("LaunchTemplate");
    pugi::xml_node lt = mixed ? mixed.child("LaunchTemplateSpecification") : m.child("LaunchTemplate");
    g.launch_template = lt.child_value("LaunchTemplateName");
    if (g.launch_template.empty()) g.launch_template = lt.child_value("LaunchTemplateId");
    for (pugi::xml_node o : mixed.child("Overrides").children("member")) {
      if (*o.child_value("InstanceType") != '\0') g.instance_types.push_back(o.child_value("InstanceType"));
    }
    g.warm_pool = ParseWarmPoolConfiguration(m.child("WarmPoolConfiguration"));
    g.warm_pool_size = xml::Int(m, "WarmPoolSize");
    page.groups.push_back(std::move(g));
    return Status::Ok();
  };
  return xml::ParsePage<AutoScalingGroupsPage>(body, xml::Protocol::kAutoScaling, "DescribeAutoScalingGroups",
                                          "AutoScalingGroups", read);
}

QueryParams TerminateInstanceInAutoScalingGroupQuery(const std::string& instance_id, bool decrement_desired) {
  return {{"Action", "TerminateInstanceInAutoScalingGroup"},
          {"Version", kAutoScalingApiVersion},
          {"InstanceId", instance_id},
          {"ShouldDecrementDesiredCapacity", decrement_desired ? "true" : "false"}};
}

Result<std::string> ParseTerminateInstanceInAutoScalingGroup(std::string_view body) {
  pugi::xml_document doc;
  Result<pugi::xml_node> result = xml::QueryResult(doc, body, "TerminateInstanceInAutoScalingGroup");
  if (!result.ok()) return result.error();
  return std::string(result->child("Activity").child_value("ActivityId"));
}

QueryParams CreateOrUpdateTagsQuery(const std::string& group, const std::vector<AsgTag>& tags) {
  QueryParams q = {{"Action", "CreateOrUpdateTags"}, {"Version", kAutoScalingApiVersion}};
  for (size_t i = 0; i < tags.size(); ++i) {
    const std::string base = "Tags.member." + std::to_string(i + 1) + ".";
    q.emplace_back(base + "ResourceId", group);
    q.emplace_back(base + "ResourceType", "auto-scaling-group");
    q.emplace_back(base + "Key", tags[i].key);
    q.emplace_back(base + "Value", tags[i].value);
    q.emplace_back(base + "PropagateAtLaunch", QueryText(tags[i].propagate_at_launch));
  }
  return q;
}

QueryParams DescribeScalingActivitiesQuery(const DescribeScalingActivitiesRequest& r) {
  QueryParams q = {{"Action", "DescribeScalingActivities"}, {"Version", kAutoScalingApiVersion}};
  AddIfSet(q, "AutoScalingGroupName", r.group);
  AddIfSet(q, "MaxRecords", r.max_records);
  AddIfSet(q, "NextToken", r.next_token);
  return q;
}

Result<ScalingActivitiesPage> ParseDescribeScalingActivities(std::string_view body) {
  static constexpr std::pair<std::string ScalingActivity::*, const char*> kText[] = {
      {&ScalingActivity::activity_id, "ActivityId"}, {&ScalingActivity::group, "AutoScalingGroupName"},
      {&ScalingActivity::description, "Description"}, {&ScalingActivity::cause, "Cause"},
      {&ScalingActivity::status_code, "StatusCode"}, {&ScalingActivity::status_message, "StatusMessage"}};
  auto read = [](pugi::xml_node m, ScalingActivitiesPage& page) -> Status {
    ScalingActivity a;
    for (const auto& [field, element] : kText) a.*field = m.child_value(element);
    if (!ParseAwsTime(m.child_value("StartTime"), &a.start_time)) {
      return Error::InvalidInput("DescribeScalingActivities: bad StartTime for activity " + a.activity_id);
    }
    if (WallTime end; ParseAwsTime(m.child_value("EndTime"), &end)) a.end_time = end;
    page.activities.push_back(std::move(a));
    return Status::Ok();
  };
  return xml::ParsePage<ScalingActivitiesPage>(body, xml::Protocol::kAutoScaling, "DescribeScalingActivities", "Activities",
                                          read);
}

Status ParseEmptyResponse(std::string_view body, std::string_view action) {
  pugi::xml_document doc;
  return xml::Load(doc, body, std::string(action) + "Response");
}

}  // namespace gpuscaler::cloud
