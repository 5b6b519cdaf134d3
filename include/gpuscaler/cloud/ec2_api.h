// The subset of the EC2 (API 2016-11-15) and Auto Scaling (2011-01-01) Query
// APIs gpuscaler uses: request builders (form parameters in botocore's
// order and wire names) and response parsers (XML, pugixml, namespace and
// version agnostic). Shapes: ../shared/reference/aws/README.md.
//
// Pure functions over values; thread-safe. Parsers return kInvalidInput for
// bodies that are not the expected document.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "gpuscaler/cloud/aws_query.h"
#include "gpuscaler/model/instance.h"
#include "gpuscaler/model/time.h"
#include "gpuscaler/status.h"

namespace gpuscaler::cloud {

inline constexpr const char* kEc2ApiVersion = "2016-11-15";
inline constexpr const char* kAutoScalingApiVersion = "2011-01-01";

// ---- EC2 ------------------------------------------------------------------

struct LaunchTemplateRef {
  std::string id;    // lt-…; or
  std::string name;  // used when id is empty
  std::string version = "$Latest";
};

// One override of a fleet's launch template: where and what to launch.
struct FleetOverride {
  std::string instance_type;
  std::string availability_zone;  // or
  std::string subnet_id;          // (both may be set)
  std::optional<double> priority;  // lower = preferred (capacity-optimized-prioritized, prioritized)
  // The placement group the instances go into (Placement.GroupName); empty: none.
  std::string placement_group;
};

struct CreateFleetRequest {
  LaunchTemplateRef launch_template;
  std::vector<FleetOverride> overrides;
  int total_target_capacity = 0;
  std::optional<int> on_demand_target_capacity;
  std::optional<int> spot_target_capacity;
  CapacityType default_capacity_type = CapacityType::kOnDemand;
  // "price-capacity-optimized", "capacity-optimized", …; empty: not sent.
  std::string spot_allocation_strategy;
  // "lowest-price" or "prioritized"; empty: not sent.
  std::string on_demand_allocation_strategy;
  std::string type = "instant";
  // Set: an instant fleet that launches at least this many instances or none
  // (SpotOptions/OnDemandOptions.MinTargetCapacity, for the default capacity
  // type), all in one Availability Zone (SingleAvailabilityZone).
  std::optional<int> min_target_capacity;
  std::string client_token;  // ≤ 64 ASCII characters
  // Tags for the launched instances (TagSpecification ResourceType=instance).
  std::map<std::string, std::string> instance_tags;
};
QueryParams CreateFleetQuery(const CreateFleetRequest& request);

// What one override gave, or why it gave nothing.
struct FleetOutcomeKey {
  std::string instance_type;
  std::string availability_zone;
  std::string subnet_id;
  CapacityType lifecycle = CapacityType::kOnDemand;
};
struct FleetInstances {
  FleetOutcomeKey where;
  std::vector<std::string> instance_ids;
};
struct FleetError {
  FleetOutcomeKey where;
  std::string code;  // "InsufficientInstanceCapacity"
  std::string message;
  ErrorCategory category = ErrorCategory::kCapacity;  // ClassifyAwsError(code, 0)
};
// An instant fleet's answer (HTTP 200 even when nothing launched): partial
// fulfilment is instances and errors together.
struct CreateFleetResponse {
  std::string fleet_id;
  std::vector<FleetInstances> instances;
  std::vector<FleetError> errors;
};
Result<CreateFleetResponse> ParseCreateFleet(std::string_view xml);

QueryParams TerminateInstancesQuery(const std::vector<std::string>& instance_ids);
struct InstanceStateChange {
  std::string instance_id;
  std::string previous_state;  // "running"
  std::string current_state;   // "shutting-down"
};
Result<std::vector<InstanceStateChange>> ParseTerminateInstances(std::string_view xml);

// Stops running EBS-backed instances, keeping their volumes (and, with
// `hibernate`, their memory: Hibernate=true). Starts stopped ones again,
// with the same ids.
QueryParams StopInstancesQuery(const std::vector<std::string>& instance_ids, bool hibernate);
QueryParams StartInstancesQuery(const std::vector<std::string>& instance_ids);
// The instancesSet of a StopInstances or StartInstances answer (`action`).
Result<std::vector<InstanceStateChange>> ParseInstanceStateChanges(std::string_view xml, const std::string& action);

// Cancels Spot Instance requests (SpotInstanceRequestId.N), leaving their
// instances as they are: what keeps a persistent request from launching a
// replacement once its instance is terminated.
QueryParams CancelSpotInstanceRequestsQuery(const std::vector<std::string>& request_ids);

struct Filter {
  std::string name;  // "tag:gpuscaler.io/pool", "tag-key", "instance-state-name"
  std::vector<std::string> values;
};

struct DescribeInstancesRequest {
  std::vector<std::string> instance_ids;
  std::vector<Filter> filters;
  std::optional<int> max_results;  // 5..1000; not with instance_ids
  std::string next_token;
};
QueryParams DescribeInstancesQuery(const DescribeInstancesRequest& request);

// EC2 instance state codes: 0 pending, 16 running, 32 shutting-down,
// 48 terminated, 64 stopping, 80 stopped.
struct Ec2Instance {
  std::string instance_id;
  std::string instance_type;
  std::string availability_zone;
  std::string subnet_id;
  CapacityType lifecycle = CapacityType::kOnDemand;  // instanceLifecycle=spot
  std::string state;  // "pending", "running", …
  int state_code = 0;
  std::string placement_group;  // placement.groupName; empty: none
  WallTime launch_time{};
  std::string client_token;
  std::map<std::string, std::string> tags;
  // The capacity reservation (ODCR or Capacity Block) the instance runs in
  // (capacityReservationId); empty: none.
  std::string capacity_reservation_id;
  // capacityReservationSpecification.capacityReservationPreference
  // ("open", "none", "capacity-reservations-only"); empty when not shown.
  std::string capacity_reservation_preference;
  bool capacity_block = false;  // instanceLifecycle=capacity-block
  // The Spot Instance request that launched it (spotInstanceRequestId);
  // empty: none shown.
  std::string spot_instance_request_id;
  // stateReason.code ("Client.UserInitiatedShutdown",
  // "Server.SpotInstanceShutdown": stopped by a Spot interruption); empty:
  // none shown.
  std::string state_reason_code;
};
struct DescribeInstancesPage {
  std::vector<Ec2Instance> instances;  // across reservations, in document order
  std::string next_token;              // empty: last page
};
Result<DescribeInstancesPage> ParseDescribeInstances(std::string_view xml);
// Instances of an instancesSet (RunInstances/DescribeInstances item shape).
Result<std::vector<Ec2Instance>> ParseInstancesSet(std::string_view xml);

struct DescribeSpotPriceHistoryRequest {
  std::vector<std::string> instance_types;
  std::vector<std::string> product_descriptions;  // "Linux/UNIX"
  std::string availability_zone;
  std::optional<WallTime> start_time;
  std::optional<WallTime> end_time;
  std::optional<int> max_results;
  std::vector<Filter> filters;
  std::string next_token;
};
QueryParams DescribeSpotPriceHistoryQuery(const DescribeSpotPriceHistoryRequest& request);

struct SpotPricePoint {
  std::string instance_type;
  std::string availability_zone;
  std::string product_description;
  double usd_per_hour = 0;
  WallTime time{};
};
struct SpotPriceHistoryPage {
  std::vector<SpotPricePoint> prices;  // as sent (newest first)
  std::string next_token;              // empty: last page
};
Result<SpotPriceHistoryPage> ParseDescribeSpotPriceHistory(std::string_view xml);

// ---- Auto Scaling ---------------------------------------------------------

// The tag AWS puts on every instance an Auto Scaling group launches (value:
// the group's name).
inline constexpr const char* kAsgGroupNameTag = "aws:autoscaling:groupName";

QueryParams SetDesiredCapacityQuery(const std::string& group, int desired, std::optional<bool> honor_cooldown);

struct DescribeAutoScalingGroupsRequest {
  std::vector<std::string> names;
  std::vector<Filter> filters;  // "tag:<key>", "tag-key", "tag-value"
  std::optional<int> max_records;
  std::string next_token;
};
QueryParams DescribeAutoScalingGroupsQuery(const DescribeAutoScalingGroupsRequest& request);

struct AsgInstance {
  std::string instance_id;
  std::string instance_type;
  std::string availability_zone;
  std::string lifecycle_state;  // "Pending", "InService", "Terminating", …
  std::string health_status;    // "Healthy" | "Unhealthy"
  bool protected_from_scale_in = false;
};
// A group's warm pool (PutWarmPool, DescribeWarmPool): instances launched
// ahead, kept stopped (or hibernated, or running) beside the group, put in
// service first when its desired capacity rises. The group keeps
// max(min_size, max_group_prepared_capacity - desired capacity) of them
// (unset: MaxSize - desired capacity).
struct WarmPoolConfig {
  int min_size = 0;
  std::optional<int> max_group_prepared_capacity;  // -1 on the wire: unset
  std::string pool_state = "Stopped";              // Stopped | Hibernated | Running
  bool reuse_on_scale_in = false;                  // scale-in stops into the pool
  std::string status;                              // "PendingDelete", or ""
};

struct AutoScalingGroup {
  std::string name;
  int min_size = 0;
  int max_size = 0;
  int desired_capacity = 0;
  std::vector<std::string> availability_zones;
  std::vector<AsgInstance> instances;
  std::map<std::string, std::string> tags;
  // The launch template (name, else id) the group launches from: its own, or
  // its mixed-instances policy's; "" with a launch configuration.
  std::string launch_template;
  // The mixed-instances policy's instance type overrides, in priority order;
  // empty without a policy (the launch template's type).
  std::vector<std::string> instance_types;
  // The group's warm pool, if it has one, and how many instances are in it
  // (WarmPoolSize). Its instances are not in `instances`.
  std::optional<WarmPoolConfig> warm_pool;
  int warm_pool_size = 0;
};
struct AutoScalingGroupsPage {
  std::vector<AutoScalingGroup> groups;
  std::string next_token;
};
Result<AutoScalingGroupsPage> ParseDescribeAutoScalingGroups(std::string_view xml);

QueryParams TerminateInstanceInAutoScalingGroupQuery(const std::string& instance_id, bool decrement_desired);
// The scaling activity's id.
Result<std::string> ParseTerminateInstanceInAutoScalingGroup(std::string_view xml);

// A tag of an Auto Scaling group; PropagateAtLaunch copies it onto the
// instances the group launches from then on.
struct AsgTag {
  std::string key;
  std::string value;
  bool propagate_at_launch = false;
};
// Creates or overwrites tags of one group (an empty-result answer).
QueryParams CreateOrUpdateTagsQuery(const std::string& group, const std::vector<AsgTag>& tags);

struct DescribeScalingActivitiesRequest {
  std::string group;
  std::optional<int> max_records;  // 1..100
  std::string next_token;
};
QueryParams DescribeScalingActivitiesQuery(const DescribeScalingActivitiesRequest& request);

// One launch or termination the group attempted (newest first in a page).
struct ScalingActivity {
  std::string activity_id;
  std::string group;
  std::string description;     // "Launching a new EC2 instance: i-…"
  std::string cause;
  std::string status_code;     // "Successful", "Failed", "Cancelled", "InProgress", …
  std::string status_message;  // why it failed: names the EC2 error code
  WallTime start_time{};
  std::optional<WallTime> end_time;
};
struct ScalingActivitiesPage {
  std::vector<ScalingActivity> activities;
  std::string next_token;
};
Result<ScalingActivitiesPage> ParseDescribeScalingActivities(std::string_view xml);

// Creates or replaces a group's warm pool (an empty-result answer).
struct PutWarmPoolRequest {
  std::string group;
  std::optional<int> min_size;
  std::optional<int> max_group_prepared_capacity;
  std::string pool_state;  // empty: not sent (AWS: Stopped)
  std::optional<bool> reuse_on_scale_in;
};
QueryParams PutWarmPoolQuery(const PutWarmPoolRequest& request);

struct DescribeWarmPoolRequest {
  std::string group;
  std::optional<int> max_records;  // 1..50
  std::string next_token;
};
QueryParams DescribeWarmPoolQuery(const DescribeWarmPoolRequest& request);
// One page of a group's warm pool: its configuration (none when the group
// has no warm pool) and instances, whose lifecycle_state is
// "Warmed:Pending", "Warmed:Stopped", "Warmed:Hibernated", "Warmed:Running",
// "Warmed:Terminating", ….
struct WarmPoolPage {
  std::optional<WarmPoolConfig> config;
  std::vector<AsgInstance> instances;
  std::string next_token;
};
Result<WarmPoolPage> ParseDescribeWarmPool(std::string_view xml);

// Deletes a group's warm pool (an empty-result answer); `force_delete`:
// without waiting for its instances to terminate.
QueryParams DeleteWarmPoolQuery(const std::string& group, bool force_delete);

// An empty-result answer (SetDesiredCapacity, CreateOrUpdateTags): checks it is the operation's
// response document.
Status ParseEmptyResponse(std::string_view xml, std::string_view action);

}  // namespace gpuscaler::cloud
