// The policy: everything an operator tunes about how gpuscaler scales.
//
// One schema, written as YAML or JSON (apiVersion: gpuscaler/v1); the
// reference is docs/policy.md. Every optional field has the default written
// here. A Policy is an immutable value once loaded: the daemon swaps whole
// policies on hot reload, so readers never see a half-applied file.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpuscaler/model/demand.h"
#include "gpuscaler/model/gpu.h"
#include "gpuscaler/model/instance.h"
#include "gpuscaler/model/reservation.h"
#include "gpuscaler/model/time.h"

namespace gpuscaler {

inline constexpr const char* kPolicyApiVersion = "gpuscaler/v1";

struct Taint {
  std::string key;
  std::string value;
  std::string effect;  // NoSchedule | PreferNoSchedule | NoExecute
};

// One EBS volume of a node template (EC2 BlockDeviceMapping).
struct BlockDevice {
  std::string device_name;  // "/dev/xvda"
  int volume_size_gib = 0;
  std::string volume_type = "gp3";  // gp2 | gp3 | io1 | io2 | st1 | sc1 | standard
  std::optional<int> iops;          // gp3, io1, io2 only
  std::optional<int> throughput_mibps;  // gp3 only
  bool encrypted = true;
};

// How gpuscaler builds the EC2 launch template of a pool (AWS, fleet pools):
// the machine image, the node's IAM instance profile and security groups, its
// volumes, and user data that joins the node to the EKS cluster with the
// pool's labels and taints. The cluster's endpoint, CA and service CIDR come
// from the daemon configuration (cloud.eks). Reference: docs/kubernetes.md.
struct NodeTemplate {
  // The AMI: an id, or an SSM parameter holding one; neither: the
  // EKS-optimized NVIDIA AMI of `ami_family` for the cluster's Kubernetes
  // version (its public SSM parameter).
  std::string ami_id;             // "ami-…"
  std::string ami_ssm_parameter;  // "/aws/service/eks/…"
  std::string ami_family = "al2023";  // al2023 | bottlerocket: how user data is written
  std::string instance_profile;  // name, or "arn:aws:iam::…:instance-profile/…"
  // Security groups: ids ("sg-…"), and selectors (every tag must match)
  // resolved to the groups carrying those tags (DescribeSecurityGroups);
  // at least one of either.
  std::vector<std::string> security_groups;
  std::vector<std::map<std::string, std::string>> security_group_selectors;
  // Subnets the pool's nodes go in, one per zone it launches into: ids
  // ("subnet-…") and selectors (every tag must match) resolved to subnets
  // with their zones (DescribeSubnets). Both empty: the daemon's
  // cloud.subnets, else EC2 picks a subnet in the zone.
  std::vector<std::string> subnets;
  std::vector<std::map<std::string, std::string>> subnet_selectors;
  std::vector<BlockDevice> block_devices;    // empty: the AMI's own
  // NVIDIA GPU Operator MIG layout: nodes get nvidia.com/mig.config=<name>.
  std::string mig_config;
};

// Settings with a fixed set of values are enums from the loader on, so the
// control loop never compares spellings; ToString gives the policy file's
// spelling back (canonical form, audit records, messages).
//
// How a pool's nodes are bought: "fleet" (EC2 CreateFleet) or "asg" (an
// Auto Scaling group).
enum class Actuation { kFleet, kAsg };
// What a rebalance recommendation does to the node: "ignore", "cordon" or
// "replace".
enum class RebalanceResponse { kIgnore, kCordon, kReplace };
// Where a signal query is answered: "prometheus", "rabbitmq" or "dcgm".
enum class SignalSource { kPrometheus, kRabbitMq, kDcgm };
// How a warm node waits (pools[].warm.state): "stopped" (EC2 StopInstances,
// Compute Engine stop: the node boots again on waking) or "hibernated" (EC2
// hibernation, Compute Engine suspend: memory kept on disk, a faster wake on
// the types that support it).
enum class WarmState { kStopped, kHibernated };
// What a warm node runs as once woken (pools[].warm.capacity_type):
// on-demand; spot (a spot node that can be stopped: EC2 a persistent Spot
// request with interruption behaviour stop, Compute Engine a Spot VM with
// termination action STOP), which the cloud stops instead of ending when it
// reclaims it; or auto: the share of the size the classes it serves may
// hold on spot is spot, the rest on-demand.
enum class WarmCapacityType { kOnDemand, kSpot, kAuto };
std::string_view ToString(Actuation actuation);
std::string_view ToString(WarmState state);
std::string_view ToString(WarmCapacityType type);
std::string_view ToString(RebalanceResponse response);
std::string_view ToString(SignalSource source);

// One term of pools[].reservations: a reservation by its id (EC2 "cr-…", or
// a Compute Engine reservation's name), or every reservation whose tags
// include all of `tags` (as Karpenter's capacityReservationSelectorTerms).
struct ReservationSelector {
  std::string id;
  std::map<std::string, std::string> tags;
  bool Matches(const Reservation& reservation) const;
};

// pools[].warm: stopped nodes of the pool, launched once (image pulled, GPU
// driver loaded, registered) and stopped, so that a wake makes a node in
// about a minute where a launch takes several. A stopped node costs its
// volumes only (Catalog::volume_usd_per_gib_hour); a woken node's place is
// refilled in the background. Reference: docs/policy.md ("Warm pools").
struct WarmPoolPolicy {
  // How many stopped nodes the pool keeps, spread over its zones; unset:
  // auto, sized from the forecasts (classes[].forecast) of the classes the
  // pool serves: the rise in demand they put at their upper quantile within
  // one cold launch.
  std::optional<int> size;
  WarmState state = WarmState::kStopped;
  WarmCapacityType capacity_type = WarmCapacityType::kOnDemand;
  // The most the stopped nodes may cost (volumes, USD per hour): caps an
  // auto size, and a fixed size that would pass it is cut to it.
  double max_usd_per_hour = 1.0;
};

struct NodePoolPolicy {
  std::string name;
  // Allowed instance types and/or families; both empty: every GPU type.
  std::vector<std::string> instance_types;
  std::vector<std::string> families;
  std::vector<std::string> gpu_models;   // GpuModel names or short names; empty: any
  std::vector<std::string> regions;      // empty: any in the catalog
  std::vector<std::string> zones;        // empty: any in the allowed regions
  std::vector<CapacityType> capacity_types{CapacityType::kOnDemand, CapacityType::kSpot};
  int min_nodes = 0;
  int max_nodes = 100;
  // The taints the pool's nodes carry: a pod that does not tolerate a
  // NoSchedule or NoExecute one is not placed in the pool. With a
  // node_template, the nodes register with exactly these taints; without
  // one, the configured launch template must set them.
  std::vector<Taint> taints;
  // Labels the pool's nodes register with (besides gpuscaler.io/pool and
  // gpuscaler.io/cluster); they reach nodes through the node_template, so
  // they need one.
  std::map<std::string, std::string> labels;
  // Set: gpuscaler creates and keeps the pool's launch template
  // (gpuscaler-<cluster>-<pool>); unset: the daemon's cloud.launch_template.
  std::optional<NodeTemplate> node_template;
  Actuation actuation = Actuation::kFleet;
  std::string auto_scaling_group;  // required when actuation is asg
  // Non-empty: the pool's gang launches (LaunchAction::all_or_nothing) go
  // into the cluster placement group of this name (AWS) or the compact
  // placement resource policy of this name (GCP), which the provider creates
  // when it is missing; its other launches do not. 1-63 of a-z 0-9 '-',
  // starting with a letter and not ending with '-' (a name both clouds
  // take). Fleet pools only.
  std::string placement_group;
  // The reservations (ODCRs, Capacity Blocks, GCP specific reservations)
  // the pool launches into, any term matching. Their free slots of a type
  // the pool allows, in its zones, are filled before anything is bought on
  // on-demand or spot: they are paid whether used or not. Empty: none.
  std::vector<ReservationSelector> reservations;
  // Unset: no warm capacity; the pool's nodes are launched cold.
  std::optional<WarmPoolPolicy> warm;
  bool SelectsReservation(const Reservation& reservation) const;
  // A launched instance that is not a Ready Kubernetes node with GPUs
  // allocatable this long after its launch was accepted (or, for an accepted
  // launch, whose instance is not listed by then) is given up: terminated,
  // its offering marked unavailable, its work planned elsewhere.
  Seconds registration_timeout{900};
  // A Ready node that turns NotReady for this long is replaced (the
  // replacement is requested first, then the node is removed). 0: off, the
  // default (a partition that heals must not cost a node).
  Seconds repair_after{0};

  // Whether the pool may buy `type` at all, by its instance types, families
  // (neither listed: GPU types only) and GPU models; `gpu` is the type's GPU
  // model when known (see GpuModelListed). Regions, zones and capacity types
  // are the offering's, not the type's.
  bool AllowsType(const InstanceType& type, const GpuModel* gpu) const;
  // Whether the pool may buy in `offering`'s region and zone (an empty
  // list: any).
  bool AllowsLocation(const Offering& offering) const;
};

// Where a class's queue depth or GPU utilization comes from.
struct SignalQuery {
  SignalSource source = SignalSource::kPrometheus;
  std::string query;   // PromQL (prometheus)
  std::string vhost = "/";  // rabbitmq
  std::string queue;        // rabbitmq
};

// Launch capacity ahead of forecast demand (classes[].forecast; see
// controller/forecast.h for the forecaster, solver/forecast_demand.h for the
// launch rule).
inline constexpr Seconds kMaxForecastHorizon{24 * 3600};

struct ForecastPolicy {
  // The demand forecast at this quantile (in (0, 1)) is what capacity is
  // launched ahead for, at most.
  double quantile = 0.9;
  // How far ahead the forecast looks; unset ("auto"): the lead time (launch
  // to GPUs allocatable) of the class's cheapest suitable instance family.
  std::optional<Seconds> horizon;
  // Cap on the hourly price of capacity launched ahead for the class; unset:
  // no cap beyond the cost rule.
  std::optional<double> max_idle_usd_per_hour;
};

// When deferrable work must have finished, counted from its submission:
// a fixed time ("24h") or a multiple of the work's expected runtime ("1.5x":
// a 10-hour job has 15 hours, so 5 hours of slack).
struct DeadlineRule {
  Seconds after_submission{0};  // > 0: the fixed form
  double runtime_multiple = 0;  // >= 1: the multiple form
  // The time from submission to the deadline of work whose whole expected
  // runtime is `runtime`.
  Seconds Allowed(Seconds runtime) const;
  // As written: "24h", "1.5x".
  std::string ToString() const;
  bool operator==(const DeadlineRule&) const = default;
};

// Parses "24h" (any duration ParseDuration reads, > 0) or "1.5x" (a multiple
// of at least 1). nullopt with `*error` saying what was expected otherwise.
std::optional<DeadlineRule> ParseDeadlineRule(const std::string& text, std::string* error);

struct WorkloadClassPolicy {
  std::string name;
  // Who pays for the class: usage rows carry it, and budget.teams caps the
  // spend of the nodes launched for the team's classes. Empty: no team.
  std::string team;
  // How to recognise the class's pods: either one that matches is enough.
  std::vector<std::string> match_namespaces;
  std::map<std::string, std::string> match_labels;  // all must match
  std::vector<std::string> pools;  // pools that may serve it; empty: any pool that fits
  bool interruptible = true;
  double max_spot_share = 1.0;     // of the class's GPUs, in [0, 1]
  // How long max_spot_share is held over. 0: at every placement, in whole
  // units (a class of one 1-GPU unit with a 0.7 share is all on-demand). A
  // duration: on average over the recent past (GPU-hours decayed with this
  // half-life). Placement then holds the moment's floor lower while the class
  // held more than its floor on average, higher while it held less, by
  // one unit (Snapshot::spot_floor_credit_gpus).
  Seconds spot_share_window{0};
  // Lost-work budget: the share of the class's GPU-hours it accepts to lose
  // to spot interruptions (work since the last checkpoint), in [0, 1]. The
  // controller estimates both over the recent past (decayed with the learned
  // risk's half-life); while the estimate is above this share the class gets
  // no new spot work (Snapshot::spot_budget_spent_classes). 1: no budget.
  double max_lost_work_share = 1.0;
  Seconds checkpoint_interval{1800};
  // The class's pods write a checkpoint when they are told to stop (SIGTERM
  // on eviction, which a spot notice starts at once): an interruption loses
  // at most the notice window, not the work since the last periodic one.
  bool checkpoint_on_notice = false;
  Seconds restart_cost{300};       // boot + image pull + model load
  int priority = 0;
  // Targets: how much capacity the class needs for its queue.
  std::optional<Seconds> max_queue_wait;
  std::optional<double> jobs_per_gpu_per_minute;
  // Zone spread: no zone holds more than this share of the class's GPUs, and
  // the class spans at least min_zones zones (when it has that many nodes).
  double max_zone_share = 1.0;
  int min_zones = 1;
  // Shape of one unit of queue-derived demand.
  int gpus_per_job = 1;
  std::string mig_profile;
  std::vector<std::string> gpu_models;
  int64_t min_gpu_memory_mib = 0;
  int64_t cpu_milli_per_job = 4000;
  int64_t memory_mib_per_job = 16384;
  Seconds expected_runtime{3600};
  std::optional<SignalQuery> queue_depth;
  std::optional<SignalQuery> gpu_utilization;
  double scale_in_utilization_below = 0.2;  // mean GPU util in [0,1] marking idle nodes
  // What one unit of the class waiting for capacity costs per hour; unset:
  // the unit's on-demand value (its share of the node's on-demand price).
  std::optional<double> wait_cost_usd_per_hour;
  // Set: capacity is launched ahead of the class's demand forecast.
  std::optional<ForecastPolicy> forecast;
  // Set: the class's work is deferrable and must finish within the rule's
  // time of its submission; the planner runs it by Uniform Progress
  // (solver/deadline_hold.h). Unset: work runs at once.
  std::optional<DeadlineRule> deadline;

  // One unit of the class's shape, without an id: its GPUs (a MIG instance
  // instead of gpus_per_job when mig_profile is set), GPU models and memory,
  // vCPU, memory, priority, interruptibility and timings, pinned to the
  // class's pool when it lists exactly one.
  DemandUnit Unit() const;
};

struct BudgetCap {
  std::optional<double> hourly_usd;
  std::optional<double> monthly_usd;
  bool hard = true;  // hard: never planned past; soft: planned past, with a warning
};

struct BudgetPolicy {
  BudgetCap global;
  std::map<std::string, BudgetCap> per_pool;
  // Team name (a classes[].team) -> cap on the spend of the nodes launched
  // for that team's classes.
  std::map<std::string, BudgetCap> per_team;
};

// What `cap` allows to be spent per hour from now on, in USD: the lower of
// its hourly_usd and what is left of its monthly_usd (the cap less
// `month_to_date_usd`, never below 0) spread evenly over the
// `hours_left_in_month`. The monthly part applies only while
// hours_left_in_month > 0 (0 means unknown). Neither set: infinity. The
// planner and the actuator both budget by this rule; the global cap is
// charged with the whole fleet's spend, a pool's cap with that pool's only.
double HourlyAllowanceUsd(const BudgetCap& cap, double month_to_date_usd, double hours_left_in_month);

struct SpotPolicy {
  // Never pay more than this share of the on-demand price for spot.
  double max_price_fraction_of_on_demand = 1.0;
  // Offerings whose expected interruptions per node-hour exceed this are not used.
  double max_interruptions_per_hour = 1.0;
  // Spot capacity is reclaimed per pool (instance type x zone), all nodes of
  // a pool together: new placement puts no more than this share of a class's
  // GPUs (running and pending) on spot in any one pool. Nodes already over
  // it are kept. In (0, 1]; 1: no cap.
  double max_pool_share = 1.0;
  bool fallback_to_on_demand = true;  // on spot capacity errors
  Seconds fallback_duration{1800};     // how long the fallback lasts
  // A failure domain marked reclaimed by a wave of interruption notices gets
  // no new spot work for `reclaim_cooldown` after its first wave, doubling
  // with each further wave up to `reclaim_cooldown_max`
  // (controller/availability.h). 0s: waves mark nothing.
  Seconds reclaim_cooldown{1800};
  Seconds reclaim_cooldown_max{8 * 3600};
  // What a rebalance recommendation (elevated interruption risk, before any
  // notice) does to the node: ignore; cordon (no new pods); replace (cordon
  // and pre-provision a replacement for its work, then drain it).
  RebalanceResponse on_rebalance = RebalanceResponse::kIgnore;
};

// Pool limits by time of day (policy/schedule.h says when one is in force).
struct ScalingSchedule {
  std::string name;
  std::string cron;                 // five-field cron expression or @daily-style shorthand
  std::string timezone = "UTC";     // IANA name ("Europe/Berlin")
  Seconds duration{0};              // in force this long after each match; 0: during matching minutes
  std::vector<std::string> pools;   // empty: every pool
  std::optional<int> min_nodes;     // while in force, replaces the pool's min_nodes
  std::optional<int> max_nodes;     // while in force, replaces the pool's max_nodes
};

struct ScalingPolicy {
  Seconds tick_interval{30};
  Seconds scale_up_stabilization{0};
  Seconds scale_down_stabilization{300};
  Seconds scale_up_cooldown{0};
  Seconds scale_down_cooldown{300};
  int max_nodes_added_per_tick = 50;
  int max_nodes_removed_per_tick = 5;
  std::vector<ScalingSchedule> schedules;
};

struct DisruptionPolicy {
  bool consolidation = true;
  Seconds min_node_age{600};
  int max_disrupted_per_interval = 2;
  Seconds disruption_interval{600};
  std::vector<std::string> do_not_disrupt_labels{"gpuscaler.io/do-not-disrupt"};
  // A move must save at least this much per hour after disruption cost.
  double min_savings_usd_per_hour = 0.5;
  double min_savings_fraction = 0.1;
  // Kubernetes: how long a node's pods may take to leave (evictions refused
  // by PodDisruptionBudgets are retried meanwhile) before the scale-down is
  // abandoned and the node uncordoned.
  Seconds drain_timeout{600};
  // "Replace with cheaper" launches the new node before the old one goes:
  // both are paid while the new one warms up. Such a move is made only when
  // its saving over this horizon covers that overlap.
  Seconds replacement_horizon{24 * 3600};
};

struct SignalsPolicy {
  // Source name -> max age before the signal counts as stale.
  std::map<std::string, Seconds> max_staleness{
      {"prometheus", Seconds(120)}, {"rabbitmq", Seconds(120)},
      {"dcgm", Seconds(120)},       {"kubernetes", Seconds(120)},
      {"prices", Seconds(3600)}};
};

struct Policy {
  std::string api_version = kPolicyApiVersion;
  std::string name = "default";
  std::vector<NodePoolPolicy> pools;
  std::vector<WorkloadClassPolicy> classes;
  BudgetPolicy budget;
  SpotPolicy spot;
  ScalingPolicy scaling;
  DisruptionPolicy disruption;
  SignalsPolicy signals;
  // Filled by the loader: where it came from and a hash of its canonical form
  // (the audit store records which policy made each decision). Code that
  // edits a loaded policy sets content_hash = PolicyContentHash(policy) again.
  std::string source_file;
  std::string content_hash;

  const NodePoolPolicy* FindPool(const std::string& name) const;
  const WorkloadClassPolicy* FindClass(const std::string& name) const;
};

// The team that pays for `unit`: its own team when set, else its class's
// (empty when neither names one).
const std::string& TeamOf(const DemandUnit& unit, const Policy& policy);

}  // namespace gpuscaler
