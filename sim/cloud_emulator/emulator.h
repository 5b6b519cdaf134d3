// CloudEmulator: a pure request handler speaking the subset of the EC2
// (2016-11-15), Auto Scaling (2011-01-01) and SQS (JSON protocol) APIs that
// gpuscaler uses, with the real wire shapes (namespaces, requestId, error
// documents), so that both our AwsProvider and the real aws CLI can drive it.
//
//  - SigV4: every request must carry an AWS4-HMAC-SHA256 Authorization whose
//    scope names the emulator's region and the right service; when the
//    scenario knows the access key's secret, the signature is fully checked.
//  - EC2: CreateFleet (instant; ClientToken idempotency: same token, same
//    answer and instances), TerminateInstances, DescribeInstances (filters,
//    MaxResults/NextToken), DescribeSpotPriceHistory (window + the change in
//    force at StartTime, newest first, paging).
//  - Stop and start (ec2_start_stop.cc): StopInstances (Hibernate, Force)
//    takes running instances to stopping, then stopped `stop_latency` later
//    (Force: at once); StartInstances takes stopped ones to pending, running
//    `start_latency` later, with the same ids. Already stopping or stopped
//    (stop), pending or running (start) is no change. A pending, shutting-down
//    or terminated instance (and, for a start, a stopping one) fails the
//    whole call with IncorrectInstanceState; a spot instance cannot be
//    stopped (UnsupportedOperation) unless RunInstances launched it with a
//    persistent Spot request; a start that the scenario's capacity
//    limits cannot hold fails whole with their error code (HTTP 500 for
//    InsufficientInstanceCapacity, as RunInstances). A stopped instance holds
//    no capacity.
//  - Auto Scaling: SetDesiredCapacity (the group launches or terminates
//    instances to match, launches `group_launch_delay` later, within the
//    capacity limits, zone-balanced; a launch that finds no capacity is a
//    Failed scaling activity, retried every 10 s), DescribeAutoScalingGroups,
//    TerminateInstanceInAutoScalingGroup, DescribeScalingActivities (newest
//    first), CreateOrUpdateTags (PropagateAtLaunch tags go onto instances
//    launched from then on).
//  - Warm pools (warm_pools.cc): PutWarmPool (MinSize,
//    MaxGroupPreparedCapacity, PoolState Stopped|Hibernated|Running,
//    InstanceReusePolicy.ReuseOnScaleIn), DescribeWarmPool (configuration and
//    instances, MaxRecords/NextToken; a group without one: an empty answer),
//    DeleteWarmPool (ForceDelete; otherwise Status PendingDelete until its
//    instances are terminated). The group keeps max(MinSize,
//    MaxGroupPreparedCapacity - desired) instances in it (unset
//    MaxGroupPreparedCapacity: MaxSize - desired, as AWS does), launched
//    Warmed:Pending, then stopped (Warmed:Stopped / Warmed:Hibernated; Running
//    stays Warmed:Running); a raised desired capacity takes ready warm
//    instances first (started: InService `start_latency` later), then
//    launches cold, and the pool is refilled. Scale-in returns instances to
//    the pool with ReuseOnScaleIn, terminates them otherwise. Warm instances
//    are not in the group's Instances; DescribeAutoScalingGroups shows
//    WarmPoolConfiguration and WarmPoolSize.
//  - Launch templates: CreateLaunchTemplate, CreateLaunchTemplateVersion
//    (ClientToken idempotency; the same token with other parameters is
//    IdempotentParameterMismatch), ModifyLaunchTemplate (SetDefaultVersion),
//    DescribeLaunchTemplates, DescribeLaunchTemplateVersions ($Latest,
//    $Default, numbers; none: every version). CreateFleet checks that a
//    template it knows has the version asked for (a name it does not know
//    stands for one made outside it and is accepted) and records the
//    template and version on each instance.
//  - Placement groups: CreatePlacementGroup (an existing name is
//    InvalidPlacementGroup.Duplicate), DescribePlacementGroups (GroupName.N,
//    GroupId.N, filters group-name, strategy, state, tag:<key>; an unknown
//    name is InvalidPlacementGroup.Unknown). CreateFleet overrides may name
//    one (Placement.GroupName; an unknown one refuses the whole fleet with
//    InvalidPlacementGroup.Unknown; a group whose instances are in another
//    zone fails the override with InvalidPlacementGroup.InUse, as EC2 keeps a
//    cluster placement group in one zone), and DescribeInstances shows it
//    (placement.groupName).
//  - Capacity reservations (the scenario's `capacity_reservations`: ODCRs
//    and Capacity Blocks): DescribeCapacityReservations
//    (CapacityReservationId.N, an unknown id is
//    InvalidCapacityReservationId.NotFound; filters tag:<key>, tag-key,
//    instance-type, availability-zone, state, instance-match-criteria,
//    reservation-type, end-date-type; MaxResults/NextToken); state
//    scheduled before the start, active, expired from the end. A slot is
//    held by a pending, running or shutting-down instance and given back
//    when it is terminated. RunInstances (MinCount/MaxCount, a launch
//    template or ImageId, InstanceType, Placement.AvailabilityZone or
//    SubnetId, Placement.GroupName, TagSpecification, ClientToken replays
//    the first answer) and CreateFleet (the template's data) take
//    CapacityReservationSpecification (preference; target
//    CapacityReservationId, with the preference only if it is
//    capacity-reservations-only, else InvalidParameterCombination) and
//    InstanceMarketOptions.MarketType=capacity-block (needed for a block,
//    refused for an ODCR), or a fleet's DefaultTargetCapacityType
//    capacity-block (its templates must target a block). A launch into a
//    reservation that is full, or whose type or zone differ, fails with
//    ReservationCapacityExceeded (a block: InsufficientInstanceCapacity,
//    as EC2 Fleet answers one); into one not active (a block before its
//    start or in its last 30 minutes, an expired one) with
//    InsufficientInstanceCapacity. On-demand launches that do not opt out
//    (preference none) land in an active open ODCR of their type and zone
//    with a free slot. From 30 minutes before a block's end its instances
//    are terminated. DescribeInstances and RunInstances show
//    capacityReservationId, capacityReservationSpecification and
//    instanceLifecycle capacity-block.
//  - Spot requests of RunInstances (MarketType spot; SpotOptions
//    SpotInstanceType one-time|persistent, InstanceInterruptionBehavior
//    terminate|stop, stop only with persistent, else
//    InvalidParameterCombination): DescribeInstances shows
//    spotInstanceRequestId. A persistent one's instance can be stopped and
//    started; an interruption stops (or hibernates) it as its behavior says
//    (the warning's instance-action) and EC2 starts it again once the
//    capacity limits leave room (a
//    StartInstances on it is IncorrectSpotRequestState until then);
//    terminated while its request is not cancelled
//    (CancelSpotInstanceRequests), it is replaced by a new instance.
//  - SSM: GetParameter (JSON protocol) over the scenario's `ssm_parameters`;
//    DescribeSecurityGroups over its `security_groups`; DescribeSubnets over
//    its `subnets` (and `subnet_tags`), by SubnetId.N (an unknown id is
//    InvalidSubnetID.NotFound) and filters (tag:<key>, tag-key, subnet-id,
//    availability-zone / availabilityZone, state).
//  - SQS: GetQueueUrl, ReceiveMessage (visibility timeout), DeleteMessage,
//    SendMessage; one queue fed with EventBridge "EC2 Spot Instance
//    Interruption Warning" events when the scenario interrupts an instance.
//  - Scenario: per-offering capacity limits and error codes (optionally in a
//    time window), throttling (every Nth call and/or a seeded rate), 5xx
//    rate, launch/terminate latency, scheduled spot interruptions, spot price
//    series, on-demand prices, Auto Scaling groups.
//
// Time comes only from the Clock. Thread-safe: Handle() serialises on a
// mutex (the HTTP server may call it from several threads).
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpuscaler/cloud/aws_query.h"
#include "gpuscaler/cloud/transport.h"
#include "gpuscaler/model/clock.h"
#include "gpuscaler/model/instance.h"
#include "gpuscaler/status.h"
#include "sim/cloud_emulator/emulator_core.h"

namespace gpuscaler::sim {

struct EmulatorRequest {
  std::string method;  // "POST"
  std::string target;  // "/" or "/?Action=…" (path and query)
  cloud::HeaderList headers;
  std::string body;
};

struct EmulatorResponse {
  int status = 200;
  std::string content_type;
  cloud::HeaderList headers;  // besides Content-Type
  std::string body;
};

// A limit on live (pending or running) instances of matching offerings.
// Empty fields match anything.
struct CapacityLimit {
  std::string instance_type;
  std::string zone;
  std::optional<CapacityType> capacity_type;
  int limit = 0;
  std::string error_code = "InsufficientInstanceCapacity";
  std::optional<Seconds> from;   // active from start + from (default: always)
  std::optional<Seconds> until;  // until start + until
};

// From `at` on, the oldest `count` live spot instances that match (including
// ones launched later) get an interruption warning, then terminate after
// `notice`.
struct ScriptedInterruption {
  Seconds at{0};  // after the emulator's start
  std::string instance_type;  // empty: any spot instance
  std::string zone;
  int count = 1;
  Seconds notice{120};        // warning to termination
};

struct ScriptedPrice {
  std::string instance_type;
  std::string zone;
  double usd_per_hour = 0;
  WallTime time{};
};

struct ScriptedGroup {
  std::string name;
  int min_size = 0;
  int max_size = 10;
  int desired_capacity = 0;
  std::string instance_type = "g5.xlarge";
  std::vector<std::string> zones;
  std::map<std::string, std::string> tags;
  std::string launch_template = "gpu-nodes";
  // Non-empty: a mixed-instances policy with these types, in priority order
  // (the group launches the first one with capacity); `instance_type` is
  // then unused.
  std::vector<std::string> instance_types{};
  bool propagate_at_launch = true;  // for `tags`
};

// A security group DescribeSecurityGroups lists (filters: tag:<key>,
// tag-key, group-id, group-name).
struct ScriptedSecurityGroup {
  std::string id;  // "sg-…"
  std::string name;
  std::map<std::string, std::string> tags;
};

// A capacity reservation the account holds: an On-Demand Capacity
// Reservation (type "default") or a Capacity Block for ML (type
// "capacity-block", always targeted and with an end). Its state follows the
// clock: scheduled before `start`, active until `end`, then expired.
struct ScriptedCapacityReservation {
  std::string id;  // "cr-…"
  std::string instance_type;
  std::string zone;
  int count = 1;
  std::string type = "default";
  // "open": matching on-demand launches that do not opt out land in it;
  // "targeted": only launches that name it. EC2's default for an ODCR is
  // open.
  std::string match = "open";
  WallTime start{};             // the scenario's start when not given
  std::optional<WallTime> end;  // none: unlimited (ODCRs only)
  std::map<std::string, std::string> tags;
};

struct EmulatorScenario {
  std::string region = "us-east-1";
  std::string account_id = "123456789012";
  std::vector<std::string> zones = {"us-east-1a", "us-east-1b", "us-east-1c"};
  std::map<std::string, std::string> subnets;  // subnet id -> zone
  std::map<std::string, std::map<std::string, std::string>> subnet_tags;  // subnet id -> its tags
  // SSM parameters by name ("/aws/service/eks/optimized-ami/…/image_id" -> "ami-…").
  std::map<std::string, std::string> ssm_parameters;
  std::vector<ScriptedSecurityGroup> security_groups;
  Seconds launch_latency{30};     // pending -> running
  // A started (woken) instance's pending -> running: shorter than a launch,
  // the image is on its volume and the node registered before.
  Seconds start_latency{60};
  Seconds stop_latency{15};       // stopping -> stopped
  Seconds terminate_latency{10};  // shutting-down -> terminated
  Seconds terminated_visible{3600};  // terminated instances stay listed this long
  Seconds group_launch_delay{0};     // a raised desired capacity to the group's first launch
  std::vector<CapacityLimit> capacity;
  int throttle_every = 0;       // every Nth EC2/Auto Scaling call is throttled (0: never)
  double throttle_rate = 0;     // and/or with this probability (seeded)
  double server_error_rate = 0;  // 503 Unavailable with this probability
  uint64_t seed = 1;
  std::vector<ScriptedInterruption> interruptions;
  std::vector<ScriptedPrice> spot_prices;
  std::map<std::string, double> on_demand_prices;  // by instance type
  std::vector<ScriptedGroup> groups;
  std::vector<ScriptedCapacityReservation> capacity_reservations;
  std::string queue_name = "gpuscaler-interruptions";
  Seconds visibility_timeout{30};
  // Secrets by access key id: requests signed with these keys are fully
  // verified. Others only need a well-formed Authorization for our region.
  std::map<std::string, std::string> credentials = {
      {"AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"}};
};

// A scenario file (YAML or JSON); see docs/aws.md for the keys. Times in
// `spot_prices` are RFC 3339 or a duration after `start`.
Result<EmulatorScenario> ParseEmulatorScenario(const std::string& text, WallTime start);

// One emulated instance, for tests and the CLI's state dump.
struct EmulatedInstance {
  std::string instance_id;
  std::string instance_type;
  std::string zone;
  std::string subnet_id;
  CapacityType lifecycle = CapacityType::kOnDemand;
  std::string state;  // pending, running, stopping, stopped, shutting-down, terminated
  bool hibernated = false;  // stopped (or stopping) with Hibernate
  // In its Auto Scaling group's warm pool (not in service).
  bool in_warm_pool = false;
  WallTime launch_time{};
  std::map<std::string, std::string> tags;
  std::string client_token;
  std::string group;  // Auto Scaling group, or ""
  // CreateFleet's launch template (name, else id) and the version number it
  // resolved to ("" for a template the emulator does not know).
  std::string launch_template;
  std::string launch_template_version;
  std::string placement_group;  // CreateFleet's Placement.GroupName, or ""
  // The capacity reservation it holds a slot of, or "" (DescribeInstances'
  // capacityReservationId), and the preference it was launched with.
  std::string capacity_reservation_id;
  std::string capacity_reservation_preference = "open";
  bool capacity_block = false;  // launched with MarketType capacity-block
  // RunInstances' Spot request (MarketType spot): its id ("sir-…",
  // DescribeInstances' spotInstanceRequestId), SpotInstanceType ("one-time"
  // or "persistent") and InstanceInterruptionBehavior ("terminate", "stop").
  std::string spot_request_id;
  std::string spot_request_type;
  std::string interruption_behavior;
  bool spot_request_cancelled = false;  // CancelSpotInstanceRequests
  bool interrupted = false;  // stopped by a Spot interruption: only EC2 starts it again
};

// One request as the emulator answered it (Requests()).
struct EmulatorRequestRecord {
  SteadyTime steady{};  // for spacing (retries, backoff): whole seconds are too coarse
  WallTime time{};
  std::string service;       // "ec2", "autoscaling", "sqs"
  std::string action;        // "CreateFleet", "ReceiveMessage", …
  std::string client_token;  // CreateFleet's or RunInstances' ClientToken, or ""
  int status = 0;
  std::string error_code;    // "RequestLimitExceeded", … ("" on success)
};

struct EmulatorStats : RequestStats {
  int create_fleet_calls = 0;
  int launched = 0;
};

// An instance as the emulator keeps it: what DescribeInstances shows, and
// when it changes state.
struct Ec2InstanceRecord {
  EmulatedInstance info;
  WallTime running_at{};
  std::optional<WallTime> shutting_down_at;
  std::optional<WallTime> stopped_at;  // stopping: when it is stopped
  std::optional<WallTime> terminated_at;
  std::string reservation_id;
};

// Instances() lists every instance ever launched (terminated ones included),
// in launch order.
class CloudEmulator : public EmulatorCore<EmulatorScenario, Ec2InstanceRecord, EmulatorStats> {
 public:
  CloudEmulator(EmulatorScenario scenario, const Clock& clock);

  EmulatorResponse Handle(const EmulatorRequest& request);

  // Sends an interruption warning for `instance_id` now; it terminates after
  // `notice`. kNotFound for an unknown or non-running instance.
  Status Interrupt(const std::string& instance_id, Seconds notice = Seconds(120));
  // Every API request answered so far (oldest first; the newest 100000),
  // also served as JSON at GET /_emulator/requests (no signature needed):
  // how a process test sees retries and their spacing from outside.
  std::vector<EmulatorRequestRecord> Requests() const;

 private:
  using Instance = Ec2InstanceRecord;
  struct Message {
    std::string id;
    std::string body;
    std::string receipt_handle;
    WallTime visible_at{};
  };
  struct Activity {
    std::string id;
    std::string description;
    std::string cause;
    std::string status_code;  // Successful, Failed
    std::string status_message;
    WallTime start{};
  };
  struct WarmPool {
    int min_size = 0;
    std::optional<int> max_prepared;   // MaxGroupPreparedCapacity; unset: MaxSize
    std::string pool_state = "Stopped";  // Stopped, Hibernated, Running
    bool reuse_on_scale_in = false;
    bool pending_delete = false;
  };
  struct Group {
    ScriptedGroup spec;
    std::optional<WarmPool> warm_pool;
    WallTime warm_launch_at{};  // no warm pool launch before (a retry after a failure)
    WallTime created{};
    std::string arn;
    std::map<std::string, bool> propagate;  // PropagateAtLaunch by tag key
    WallTime launch_at{};  // no launch before (the delay after a raise, a retry after a failure)
    std::deque<Activity> activities;  // oldest first, the newest 1000
  };
  struct TemplateVersion {
    int64_t number = 0;
    std::string description;
    cloud::QueryParams data;  // LaunchTemplateData.* as sent, prefix removed
    WallTime created{};
  };
  struct LaunchTemplate {
    std::string id;
    std::string name;
    WallTime created{};
    int64_t default_version = 1;
    std::vector<TemplateVersion> versions;  // number i+1 at index i
    std::map<std::string, std::string> tags;
  };
  struct Params;  // decoded form parameters (emulator_impl.h)

  // State (emulator.cc). The *Locked functions and everything below run with
  // mu_ held.
  void AdvanceLocked(WallTime now);
  Status InterruptLocked(const std::string& instance_id, Seconds notice, WallTime now);
  std::string Uuid();
  std::string NewId(std::string_view prefix, int hex_digits);
  int LiveCount(const std::string& type, const std::string& zone, CapacityType lifecycle) const;
  // Free capacity and the error code when short (nullopt: unlimited).
  std::optional<std::pair<int, std::string>> Room(const std::string& type, const std::string& zone,
                                                  CapacityType lifecycle, WallTime now) const;
  Instance& Launch(const std::string& type, const std::string& zone, const std::string& subnet,
                   CapacityType lifecycle, const std::map<std::string, std::string>& tags,
                   const std::string& client_token, const std::string& reservation, WallTime now);
  // Pending, running, stopping or stopped -> shutting-down.
  void Terminate(Instance& i, WallTime now);
  // Running -> stopping, stopped `stop_latency` after `at` (`force`: at `at`).
  void StopInstance(Instance& i, bool hibernate, bool force, WallTime at);
  // Stopped -> pending, running `start_latency` after `at`.
  void StartInstance(Instance& i, WallTime at);
  void Enqueue(std::string body, WallTime now);
  // Brings the group's in-service instances to its desired capacity, then
  // its warm pool to its size.
  void ReconcileGroup(Group& g, WallTime now);
  void ReconcileInService(Group& g, WallTime now);
  void ReconcileWarmPool(Group& g, WallTime now);
  // The warm instance of `g` to put in service, by `zones` in order (ready
  // ones first, none that is still stopping, a stopped one only where the
  // capacity limits leave room): started and out of the pool; nullptr when
  // none.
  Instance* TakeWarm(Group& g, const std::vector<std::string>& zones, WallTime at);
  // What a scaled-in instance becomes: back in the warm pool (stopped) with
  // ReuseOnScaleIn, else terminated.
  void LeaveService(Group& g, Instance& i, WallTime now);
  // An on-demand instance for a group: the first of `types` with room (at
  // `now`) in the first of `zones` that has some, launched at `at` with
  // `tags`; nullptr when none has room, and `why` as Auto Scaling words it.
  Instance* LaunchForGroup(const std::vector<std::string>& zones, const std::vector<std::string>& types,
                           const std::map<std::string, std::string>& tags, WallTime now, WallTime at,
                           std::string* why);
  // The tags an instance the group launches gets.
  std::map<std::string, std::string> GroupLaunchTags(Group& g);
  // Warm pool size target of `g` (0 without a warm pool).
  int WarmTarget(const Group& g) const;
  void RecordActivity(Group& g, Activity a);
  Group* FindGroup(const std::string& name);
  // Auto Scaling's answer for a group name it does not know.
  EmulatorResponse GroupNotFound(const std::string& name);
  // The group `AutoScalingGroupName` names (required), or nullptr and the
  // error to answer in `error`.
  Group* RequiredGroup(const Params& p, EmulatorResponse* error);

  // Authentication, error bodies and routing (dispatch.cc).
  EmulatorResponse Dispatch(const EmulatorRequest& request, EmulatorRequestRecord* record);
  EmulatorResponse Ec2Error(int status, const std::string& code, const std::string& message);
  EmulatorResponse QueryError(int status, const std::string& type, const std::string& code, const std::string& message);
  EmulatorResponse SqsError(int status, const std::string& code, const std::string& query_code,
                            const std::string& message);
  std::optional<EmulatorResponse> CheckAuth(const EmulatorRequest& request, std::string_view service);

  // EC2 (ec2_fleet.cc, ec2_describe.cc).
  EmulatorResponse CreateFleet(const Params& p, WallTime now);
  struct FleetOverride;  // one launch template override of a CreateFleet
  // The request's overrides, in order, into `out`; the error answer when
  // one is malformed or names what does not exist (a subnet, a template
  // version, a placement group).
  std::optional<EmulatorResponse> ReadFleetOverrides(const Params& p, std::vector<FleetOverride>* out);
  // Placement groups (placement_groups.cc).
  EmulatorResponse CreatePlacementGroup(const Params& p, WallTime now);
  EmulatorResponse DescribePlacementGroups(const Params& p);
  // The zone of the instances in cluster placement group `name` that are not
  // terminated, "" when it has none: EC2 keeps such a group in one zone.
  std::string PlacementGroupZone(const std::string& name) const;
  // Capacity reservations and RunInstances (capacity_reservations.cc,
  // run_instances.cc).
  EmulatorResponse DescribeCapacityReservations(const Params& p);
  EmulatorResponse RunInstances(const Params& p, WallTime now);
  // What one launch asks of reservations.
  struct SlotRequest {
    std::string type, zone;
    std::string preference;       // "", "open", "none", "capacity-reservations-only"
    std::string target;           // a reservation id, or ""
    bool capacity_block = false;  // MarketType capacity-block
  };
  // How many instances of a SlotRequest may launch now: into `reservation`
  // (null: plain on-demand capacity, `room` unused), or why none (`code`
  // and `message`; `status` non-zero when the request itself is refused).
  struct SlotRoom {
    const ScriptedCapacityReservation* reservation = nullptr;
    int room = 0;
    int status = 0;
    std::string code, message;
  };
  SlotRoom ReservationRoom(const SlotRequest& r, WallTime now) const;
  // Slot bookkeeping on instance `i` just launched for `r`: the targeted
  // reservation, else (preference open) an open active reservation of its
  // type and zone with a free slot, else none.
  void TakeSlot(Instance& i, const SlotRequest& r, WallTime now);
  const ScriptedCapacityReservation* FindReservation(const std::string& id) const;
  // scheduled, active or expired at `now`.
  std::string ReservationState(const ScriptedCapacityReservation& r, WallTime now) const;
  // Instances holding a slot of reservation `id`: pending, running, and
  // shutting-down (EC2 frees the slot once the instance is terminated).
  int ReservationInUse(const std::string& id) const;
  // EC2 takes a Capacity Block's instances back from 30 minutes before its
  // end: they are terminated then.
  void ReclaimCapacityBlocks(WallTime now);
  // A fleet override's room: its reservation's (the template targets one,
  // or `block_fleet`: DefaultTargetCapacityType capacity-block), else Room().
  std::optional<std::pair<int, std::string>> FleetRoom(const FleetOverride& o, CapacityType lifecycle,
                                                       bool block_fleet, WallTime now) const;
  EmulatorResponse TerminateInstances(const Params& p, WallTime now);
  // Stop and start (ec2_start_stop.cc). The ids of the request, or the
  // error answer when there are none, one is malformed or unknown.
  std::optional<EmulatorResponse> ReadInstanceIds(const Params& p, std::vector<std::string>* ids);
  EmulatorResponse StopInstances(const Params& p, WallTime now);
  EmulatorResponse StartInstances(const Params& p, WallTime now);
  EmulatorResponse CancelSpotInstanceRequests(const Params& p);
  // A persistent Spot request whose instance was terminated while it was
  // not cancelled: EC2 launches its replacement, where capacity allows.
  void ReplacePersistentSpot(const Instance& gone, WallTime now);
  // Instances stopped by an interruption are started again once the
  // capacity limits leave spot room for them.
  void RestartInterruptedSpot(WallTime now);
  EmulatorResponse DescribeInstances(const Params& p);
  EmulatorResponse DescribeSpotPriceHistory(const Params& p);
  // Auto Scaling (autoscaling.cc).
  EmulatorResponse SetDesiredCapacity(const Params& p, WallTime now);
  EmulatorResponse DescribeAutoScalingGroups(const Params& p);
  EmulatorResponse TerminateInstanceInAutoScalingGroup(const Params& p, WallTime now);
  EmulatorResponse DescribeScalingActivities(const Params& p);
  // MaxRecords (1..100, default `fallback`) and NextToken of a paged Auto
  // Scaling request; the error answer when either is malformed.
  std::optional<EmulatorResponse> AsgPaging(const Params& p, int fallback, size_t* offset, size_t* max_records);
  EmulatorResponse CreateOrUpdateTags(const Params& p);
  // Warm pools (warm_pools.cc).
  EmulatorResponse PutWarmPool(const Params& p, WallTime now);
  EmulatorResponse DescribeWarmPool(const Params& p);
  EmulatorResponse DeleteWarmPool(const Params& p, WallTime now);
  // <WarmPoolConfiguration>…</WarmPoolConfiguration> of `w`.
  static std::string WarmPoolConfigurationXml(const WarmPool& w);
  // Launch templates (launch_templates.cc).
  EmulatorResponse CreateLaunchTemplate(const Params& p, WallTime now);
  EmulatorResponse CreateLaunchTemplateVersion(const Params& p, WallTime now);
  EmulatorResponse ModifyLaunchTemplate(const Params& p);
  EmulatorResponse DescribeLaunchTemplates(const Params& p);
  EmulatorResponse DescribeLaunchTemplateVersions(const Params& p);
  EmulatorResponse DescribeSecurityGroups(const Params& p);
  EmulatorResponse DescribeSubnets(const Params& p);
  // The template a request names (LaunchTemplateId, else LaunchTemplateName
  // under `prefix`), or nullptr.
  LaunchTemplate* FindTemplate(const Params& p, const std::string& prefix = "");
  // A version spec ("$Latest", "$Default", "3") of `t`, or nullptr.
  const TemplateVersion* FindVersion(const LaunchTemplate& t, const std::string& spec) const;
  // The answer of an earlier call with this ClientToken, or an error if its
  // parameters differed; nullopt for a new token.
  std::optional<EmulatorResponse> Replay(const std::string& action, const Params& p);
  void Remember(const std::string& action, const Params& p, const EmulatorResponse& answer);
  // SSM, JSON protocol (launch_templates.cc).
  EmulatorResponse Ssm(const EmulatorRequest& request, std::string_view op);
  // SQS, JSON protocol (sqs.cc).
  EmulatorResponse Sqs(const EmulatorRequest& request, std::string_view op, WallTime now);

  std::map<std::string, size_t> by_id_;
  std::map<std::string, std::string> fleet_answers_;  // ClientToken -> CreateFleet body
  std::map<std::string, std::string> run_answers_;    // ClientToken -> RunInstances body
  std::vector<Group> groups_;
  std::map<std::string, LaunchTemplate> templates_;  // by name
  struct PlacementGroup {
    std::string id;  // "pg-…"
    std::string name;
    std::string strategy;
    std::map<std::string, std::string> tags;
  };
  std::map<std::string, PlacementGroup> placement_groups_;  // by name
  // "<action> <ClientToken>" -> (the request's other parameters, the answer).
  std::map<std::string, std::pair<std::string, EmulatorResponse>> template_answers_;
  std::deque<Message> queue_;
  std::vector<int> interruptions_left_;  // per scripted interruption
  struct PendingInterruption {
    std::string instance_id;
    WallTime terminate_at;
  };
  std::vector<PendingInterruption> pending_interruptions_;
  std::deque<EmulatorRequestRecord> requests_;
};

// A Transport that hands requests to an emulator in process (no sockets):
// the URL's path and query become the target; the host becomes Host unless
// the request carries one.
class EmulatorTransport final : public cloud::Transport {
 public:
  explicit EmulatorTransport(CloudEmulator& emulator) : emulator_(emulator) {}
  Result<cloud::TransportResponse> Send(const cloud::TransportRequest& request) override;

 private:
  CloudEmulator& emulator_;
};

}  // namespace gpuscaler::sim
