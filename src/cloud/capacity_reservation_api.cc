#include "gpuscaler/cloud/capacity_reservation_api.h"

#include "query_params.h"
#include "xml_util.h"

namespace gpuscaler::cloud {

QueryParams DescribeCapacityReservationsQuery(const DescribeCapacityReservationsRequest& r) {
  QueryParams q = {{"Action", "DescribeCapacityReservations"}, {"Version", kEc2ApiVersion}};
  AddList(q, "CapacityReservationId", r.ids);
  AddIfSet(q, "NextToken", r.next_token);
  AddIfSet(q, "MaxResults", r.max_results);
  AddFilters(q, r.filters, /*query_protocol=*/false);
  return q;
}

Result<CapacityReservationsPage> ParseDescribeCapacityReservations(std::string_view body) {
  auto read = [](pugi::xml_node item, CapacityReservationsPage& page) -> Status {
    CapacityReservationInfo c;
    c.id = item.child_value("capacityReservationId");
    c.instance_type = item.child_value("instanceType");
    c.availability_zone = item.child_value("availabilityZone");
    c.total_instance_count = xml::Int(item, "totalInstanceCount");
    c.available_instance_count = xml::Int(item, "availableInstanceCount");
    c.state = item.child_value("state");
    c.reservation_type = item.child_value("reservationType");
    c.instance_match_criteria = item.child_value("instanceMatchCriteria");
    if (c.id.empty())
      return Error::InvalidInput("DescribeCapacityReservations: an item has no capacityReservationId");
    if (!ParseAwsTime(item.child_value("startDate"), &c.start_date)) {
      return Error::InvalidInput("DescribeCapacityReservations: bad startDate for " + c.id);
    }
    if (const std::string_view end = item.child_value("endDate"); !end.empty()) {
      WallTime t;
      if (!ParseAwsTime(end, &t))
        return Error::InvalidInput("DescribeCapacityReservations: bad endDate for " + c.id);
      c.end_date = t;
    }
    for (pugi::xml_node t : item.child("tagSet").children("item"))
      c.tags[t.child_value("key")] = t.child_value("value");
    page.reservations.push_back(std::move(c));
    return Status::Ok();
  };
  return xml::ParsePage<CapacityReservationsPage>(body, xml::Protocol::kEc2, "DescribeCapacityReservations",
                                                  "capacityReservationSet", read);
}

QueryParams RunInstancesQuery(const RunInstancesRequest& r) {
  QueryParams q = {{"Action", "RunInstances"}, {"Version", kEc2ApiVersion}};
  AddIfSet(q, "InstanceType", r.instance_type);
  q.emplace_back("MaxCount", std::to_string(r.max_count));
  q.emplace_back("MinCount", std::to_string(r.min_count));
  AddIfSet(q, "Placement.AvailabilityZone", r.availability_zone);
  AddIfSet(q, "Placement.GroupName", r.placement_group);
  AddIfSet(q, "SubnetId", r.subnet_id);
  if (!r.instance_tags.empty()) {
    q.emplace_back("TagSpecification.1.ResourceType", "instance");
    int n = 1;
    for (const auto& [k, v] : r.instance_tags) {
      q.emplace_back("TagSpecification.1.Tag." + std::to_string(n) + ".Key", k);
      q.emplace_back("TagSpecification.1.Tag." + std::to_string(n) + ".Value", v);
      ++n;
    }
  }
  if (!r.launch_template.id.empty()) {
    q.emplace_back("LaunchTemplate.LaunchTemplateId", r.launch_template.id);
  } else {
    AddIfSet(q, "LaunchTemplate.LaunchTemplateName", r.launch_template.name);
  }
  AddIfSet(q, "LaunchTemplate.Version", r.launch_template.version);
  AddIfSet(q, "InstanceMarketOptions.MarketType", r.market_type);
  AddIfSet(q, "InstanceMarketOptions.SpotOptions.SpotInstanceType", r.spot_instance_type);
  AddIfSet(q, "InstanceMarketOptions.SpotOptions.InstanceInterruptionBehavior", r.interruption_behavior);
  AddIfSet(q, "CapacityReservationSpecification.CapacityReservationPreference",
           r.capacity_reservation_preference);
  AddIfSet(q, "CapacityReservationSpecification.CapacityReservationTarget.CapacityReservationId",
           r.capacity_reservation_id);
  AddIfSet(q, "ClientToken", r.client_token);
  return q;
}

Result<std::vector<Ec2Instance>> ParseRunInstances(std::string_view body) {
  pugi::xml_document doc;
  if (Status s = xml::Load(doc, body, "RunInstancesResponse"); !s.ok()) return s.error();
  return ParseInstancesSet(body);
}

}  // namespace gpuscaler::cloud
