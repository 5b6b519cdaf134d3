// The CloudProvider seam: buying, listing and giving back GPU nodes.
//
// Synchronous by contract: the daemon calls it off the control strand (each
// call may take seconds); the simulator calls it inline on its virtual clock.
// Implementations: AwsProvider (src/cloud/), sim::SimCloud (sim/),
// FakeCloudProvider (tests/fakes/).
//
// Errors carry a category (status.h) and callers branch on it only:
// kTransient (retry later), kCapacity (try another offering), kThrottled
// (back off), kConfig / kAuth (stop and alert). Not thread-safe unless an
// implementation says so.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "gpuscaler/model/instance.h"
#include "gpuscaler/model/reservation.h"
#include "gpuscaler/model/time.h"
#include "gpuscaler/policy/policy.h"
#include "gpuscaler/status.h"

namespace gpuscaler {

// Tag every instance gpuscaler launches carries (value: the pool), and by
// which ListInstances finds them.
inline constexpr const char* kOwnerTag = "gpuscaler.io/pool";
// Tag naming the installation (cluster) that owns an instance or an Auto
// Scaling group: a provider lists and terminates only what carries its own
// cluster name, so two installations in one account never touch each
// other's nodes.
inline constexpr const char* kClusterTag = "gpuscaler.io/cluster";
// Tag with the idempotency token of the launch that made the instance, so an
// instance can be traced to its intent (and decision) in the audit store.
inline constexpr const char* kIntentTag = "gpuscaler.io/intent";
// Tag (value "refill") on an instance launched to refill a pool's warm
// capacity (LaunchAction::into_warm): its node is cordoned when it
// registers and the instance stopped once it is Ready; it takes no work
// before. A taint of this key on a woken node is removed with its cordon.
inline constexpr const char* kWarmTag = "gpuscaler.io/warm";

struct LaunchRequest {
  std::string pool;
  // Acceptable offerings, most preferred first. The provider fills `count`
  // from the first offering that has capacity, then the next, and so on.
  std::vector<Offering> offerings;
  int count = 0;
  std::map<std::string, std::string> tags;
  // The same token on a retry returns the first call's instances instead of
  // launching again (EC2 ClientToken semantics).
  std::string idempotency_token;
  // Pools with `actuation: asg`: the Auto Scaling group that buys the nodes
  // (its desired capacity is raised by `count`); empty: the provider launches
  // the instances itself (EC2 Fleet).
  std::string auto_scaling_group;
  // Fleet pools with a node template (policy pools[].node_template): the
  // nodes boot from the pool's own launch template, which the provider
  // builds from the template and the pool's labels and taints (AwsProvider
  // creates or updates it first). Unset: the provider's configured launch
  // template; `node_labels` and `node_taints` are then unused.
  std::optional<NodeTemplate> node_template;
  std::map<std::string, std::string> node_labels;
  std::vector<Taint> node_taints;
  // A gang's nodes (LaunchAction::all_or_nothing): all `count` in one zone,
  // or none and a capacity error. EC2: CreateFleet with MinTargetCapacity =
  // count and SingleAvailabilityZone. An Auto Scaling group, which has no
  // such call: all `count` in the group's zones, or none, those that came up
  // being given back (AwsProvider).
  bool all_or_nothing = false;
  // Set only with `all_or_nothing` (policy pools[].placement_group): the
  // nodes go into the cluster placement group of this name (EC2) or the
  // compact placement resource policy of this name (Compute Engine), which
  // the provider creates first when it does not exist.
  std::string placement_group;
};

// kStopped: stopping, stopped or hibernated (a warm node, pools[].warm): no
// compute is billed, its volumes are; Start brings it back through kPending
// with the same id.
enum class InstanceState { kPending, kRunning, kShuttingDown, kStopped };

struct Instance {
  std::string instance_id;
  std::string pool;
  Offering offering;  // what it is; usd_per_hour is the price at launch
  WallTime launch_time{};
  InstanceState state = InstanceState::kPending;
  std::map<std::string, std::string> tags;
  std::string placement_group;  // the EC2 placement group it runs in; "" none
};

// Why one offering of a launch gave fewer nodes than asked for.
struct OfferingError {
  std::string offering_key;  // Offering::Key()
  Error error;
};

struct LaunchResult {
  // What was launched: possibly fewer than asked (partial fulfilment), and
  // from several of the offerings.
  std::vector<Instance> instances;
  // One entry per offering that was tried and fell short, in the order tried.
  std::vector<OfferingError> errors;
};

// A spot interruption warning: the instance goes away at `deadline`
// (two minutes after the notice on AWS).
struct InterruptionNotice {
  std::string instance_id;
  WallTime notice_time{};
  WallTime deadline{};
  // A rebalance recommendation instead: the instance is at raised risk of
  // interruption, no deadline yet (`deadline` unset).
  bool rebalance = false;
  // The provider's handle for acknowledging the notice
  // (AcknowledgeInterruptions); empty when there is nothing to acknowledge.
  std::string receipt{};
};

// A spot (or on-demand) price in force from `time` on. `zone` may name a
// region when the source has only regional prices.
struct SpotPrice {
  std::string instance_type;
  std::string zone;
  CapacityType capacity_type = CapacityType::kSpot;
  double usd_per_hour = 0;
  WallTime time{};
};

class CloudProvider {
 public:
  virtual ~CloudProvider() = default;

  // Launches up to `request.count` nodes. An Error means nothing was launched
  // and the whole call failed (kAuth, kConfig, kThrottled, kTransient); a
  // capacity shortage is not an Error but a short LaunchResult with
  // kCapacity entries in `errors`.
  virtual Result<LaunchResult> Launch(const LaunchRequest& request) = 0;
  // Terminates the instances. Unknown or already-gone ids are not an error
  // (termination is idempotent).
  virtual Status Terminate(const std::vector<std::string>& instance_ids) = 0;
  // Every live instance gpuscaler owns (by kOwnerTag), in a stable order,
  // stopped (warm) ones included; an Auto Scaling group's warm pool
  // instances are listed as kStopped with the group's pool.
  virtual Result<std::vector<Instance>> ListInstances() = 0;
  // Interruption notices (and rebalance recommendations) issued since the
  // previous call. A notice taken from a queue stays on it, hidden for a
  // while, until AcknowledgeInterruptions: one never acknowledged (a crash)
  // comes again, so the caller must take a repeated notice as the same one.
  // An Error means nothing was read; notices read before a later page failed
  // are returned (the failed page's come again).
  virtual Result<std::vector<InterruptionNotice>> PollInterruptions() = 0;
  // Takes `notices` (from PollInterruptions) off the queue for good, once
  // the caller has recorded what they did. Notices without a receipt are
  // skipped. An Error leaves them to come again.
  virtual Status AcknowledgeInterruptions(const std::vector<InterruptionNotice>& notices) {
    (void)notices;
    return Status::Ok();
  }
  // Warm capacity (pools[].warm) for pools that gpuscaler fills itself
  // (EC2 fleet pools, Compute Engine groups): stops running instances,
  // keeping their volumes (and, with kHibernated, their memory). EC2:
  // StopInstances (Hibernate=true for kHibernated); Compute Engine: the
  // group's stopInstances (suspendInstances for kHibernated). An instance
  // already stopping or stopped is not an error; an unknown id is (kConfig).
  // The caller cordons the node first: a stopped node takes no work.
  virtual Status Stop(const std::vector<std::string>& instance_ids, WarmState state) {
    (void)instance_ids;
    (void)state;
    return Error::Config("this cloud provider cannot stop instances (remove pools[].warm)");
  }
  // Starts stopped instances: they come back with the same ids, kPending
  // then kRunning, and their nodes register again. An instance already
  // pending or running is not an error. When the cloud has no capacity for
  // them the call fails with kCapacity and none started (EC2 fails a whole
  // StartInstances call): a caller that needs each outcome starts one id per
  // call.
  virtual Status Start(const std::vector<std::string>& instance_ids) {
    (void)instance_ids;
    return Error::Config("this cloud provider cannot start stopped instances (remove pools[].warm)");
  }
  // Pools with `actuation: asg`: the Auto Scaling group's warm pool, which
  // the group fills and drains itself (PutWarmPool with MinSize = `size`,
  // PoolState from `state`; size 0 keeps the pool empty). A Launch on the
  // group (raised desired capacity) starts its warm instances first.
  virtual Status PutWarmPool(const std::string& auto_scaling_group, int size, WarmState state) {
    (void)auto_scaling_group;
    (void)size;
    (void)state;
    return Error::Config("this cloud provider has no warm pools for Auto Scaling groups (remove pools[].warm)");
  }
  // For every offering the source prices: the price in force at `since`
  // (its `time` may be earlier than `since`, when it last changed), then
  // every change after `since`; ascending time. An empty answer means no
  // offering has a price from this source (catalog prices stand). An Error
  // means nothing was read (the caller keeps the prices it has).
  virtual Result<std::vector<SpotPrice>> SpotPrices(WallTime since) = 0;
  // The reservations (ODCRs, Capacity Blocks, specific reservations) that
  // take launches now or will, with their free slots as the cloud counts
  // them; sorted by id. Called only when a pool selects reservations
  // (pools[].reservations). A provider without reservations says so with a
  // kConfig error.
  virtual Result<std::vector<Reservation>> ListReservations() {
    return Error::Config("this cloud provider has no reserved capacity (remove pools[].reservations)");
  }
};

}  // namespace gpuscaler
