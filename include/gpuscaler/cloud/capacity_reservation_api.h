// EC2 capacity reservations (API 2016-11-15): On-Demand Capacity
// Reservations and Capacity Blocks for ML as DescribeCapacityReservations
// describes them, and RunInstances, the call that launches into one
// reservation. Request builders write botocore's wire names; parsers read
// the EC2 XML answers (namespace and version agnostic).
//
// Why RunInstances and not CreateFleet for a reservation: a fleet's
// launch template overrides have no CapacityReservationSpecification (the
// target lives only in the launch template's data), so a fleet aimed at
// one reservation needs a launch template per reservation. RunInstances
// takes the target (and InstanceMarketOptions.MarketType=capacity-block for
// a block) as request parameters on top of the same launch template.
//
// Pure functions over values; thread-safe. Parsers return kInvalidInput for
// bodies that are not the expected document, and the AWS error for an
// error document.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpuscaler/cloud/aws_query.h"
#include "gpuscaler/cloud/ec2_api.h"
#include "gpuscaler/model/time.h"
#include "gpuscaler/status.h"

namespace gpuscaler::cloud {

// CapacityReservationPreference values (CapacityReservationSpecification).
inline constexpr const char* kReservationsOnly = "capacity-reservations-only";
// InstanceMarketOptions.MarketType of a launch into a Capacity Block.
inline constexpr const char* kCapacityBlockMarket = "capacity-block";

struct DescribeCapacityReservationsRequest {
  std::vector<std::string> ids;  // CapacityReservationId.N
  // "state", "instance-type", "availability-zone", "tag:<key>", …
  std::vector<Filter> filters;
  std::optional<int> max_results;  // 1..1000
  std::string next_token;
};
QueryParams DescribeCapacityReservationsQuery(const DescribeCapacityReservationsRequest& request);

// One capacityReservationSet item.
struct CapacityReservationInfo {
  std::string id;  // "cr-…"
  std::string instance_type;
  std::string availability_zone;
  int total_instance_count = 0;
  int available_instance_count = 0;
  // "active", "scheduled", "pending", "expired", "cancelled", "failed",
  // "payment-pending", … (EC2's CapacityReservationState).
  std::string state;
  WallTime start_date{};
  std::optional<WallTime> end_date;     // absent with endDateType unlimited
  std::string reservation_type;         // "default" | "capacity-block" ("" from old answers: default)
  std::string instance_match_criteria;  // "open" | "targeted"
  std::map<std::string, std::string> tags;
};
struct CapacityReservationsPage {
  std::vector<CapacityReservationInfo> reservations;
  std::string next_token;  // empty: last page
};
// kInvalidInput also for an item without an id or with an unreadable
// startDate or endDate.
Result<CapacityReservationsPage> ParseDescribeCapacityReservations(std::string_view xml);

// RunInstances from a launch template, the instance type and zone (or
// subnet) overriding the template's, into one reservation.
struct RunInstancesRequest {
  LaunchTemplateRef launch_template;
  std::string instance_type;
  std::string availability_zone;  // Placement.AvailabilityZone; or
  std::string subnet_id;          // SubnetId (then the zone is the subnet's)
  std::string placement_group;    // Placement.GroupName; empty: none
  int min_count = 1;              // launch at least this many or none
  int max_count = 1;              // and at most this many
  std::string client_token;       // ≤ 64 ASCII characters; same token, same instances
  // Tags for the launched instances (TagSpecification ResourceType=instance).
  std::map<std::string, std::string> instance_tags;
  // CapacityReservationSpecification: the preference ("" not sent) and the
  // reservation to launch into ("" not sent). EC2 takes both together only
  // with the preference capacity-reservations-only.
  std::string capacity_reservation_preference;
  std::string capacity_reservation_id;
  // InstanceMarketOptions.MarketType: "capacity-block" for a Capacity
  // Block, "spot", or "" not sent (on-demand).
  std::string market_type;
  // InstanceMarketOptions.SpotOptions (market "spot"; "" not sent):
  // SpotInstanceType "one-time" or "persistent", and
  // InstanceInterruptionBehavior "terminate", "stop" or "hibernate" (EC2
  // takes stop and hibernate only on a persistent request).
  std::string spot_instance_type;
  std::string interruption_behavior;
};
QueryParams RunInstancesQuery(const RunInstancesRequest& request);
// The launched instances (RunInstancesResponse's instancesSet).
Result<std::vector<Ec2Instance>> ParseRunInstances(std::string_view xml);

}  // namespace gpuscaler::cloud
