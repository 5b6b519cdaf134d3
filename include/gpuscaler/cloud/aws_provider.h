// AwsProvider: the CloudProvider on AWS (EC2 Fleet, Auto Scaling,
// DescribeInstances, DescribeSpotPriceHistory, and an SQS queue fed by
// EventBridge).
//
// Ownership: an installation is named by `cluster_name`. What it launches
// carries gpuscaler.io/cluster=<cluster_name> (kClusterTag), and it acts only
// on what carries it: instances with the tag, and Auto Scaling groups with
// the tag (and their instances, by AWS's aws:autoscaling:groupName tag). A
// group is claimed by its operator (the tag is never written by gpuscaler),
// so two installations never share one.
//
//  - Launch, fleet pools (no `auto_scaling_group`): the request's offerings,
//    in order, are cut into runs of one capacity type; each run is one
//    CreateFleet (Type=instant, the launch template with one override per
//    offering: instance type and zone, or the zone's subnet) for the nodes
//    still missing, so a short run falls back to the next run (other zone,
//    other type, on-demand). Spot runs use `spot_allocation_strategy`
//    (price-capacity-optimized), on-demand runs
//    `on_demand_allocation_strategy` (lowest-price); the "prioritized"
//    strategies get Priority = position in the request. Each call's
//    ClientToken is ClientToken(idempotency token, run), so replaying a
//    Launch returns the first call's instances. Instances are tagged with the
//    request's tags plus gpuscaler.io/pool=<pool> and the cluster tag.
//    A gang's launch (LaunchRequest::all_or_nothing) sets MinTargetCapacity
//    = nodes still missing and SingleAvailabilityZone on each run; with
//    LaunchRequest::placement_group every override also names that cluster
//    placement group (Placement.GroupName), which the provider first finds
//    or creates (EnsurePlacementGroup); an error there launches nothing.
//  - Launch, spot warm capacity (fleet pools; the request tagged
//    gpuscaler.io/interruption-behavior=stop, the controller's
//    kWarmInterruptionTag): each spot offering is a run of its own, one
//    RunInstances (as a reserved offering's below, without the reservation)
//    with InstanceMarketOptions MarketType spot, SpotInstanceType persistent
//    and InstanceInterruptionBehavior stop: the only spot instance EC2 lets
//    its owner stop and start, and one EC2 stops (restarting it when
//    capacity is back) rather than terminates when it reclaims it. A
//    capacity error, or room for fewer than asked, is that offering's
//    kCapacity OfferingError and the launch moves on; on-demand runs are
//    CreateFleet as above.
//  - Launch, a reserved offering (capacity type reserved, its
//    reservation_id) in the request: a run of its own, one reservation per
//    call. RunInstances with the pool's launch template (as the fleet's),
//    the offering's type and zone (or the zone's subnet), MinCount 1 (a
//    gang's: all still missing) and MaxCount the nodes still missing,
//    CapacityReservationSpecification preference capacity-reservations-only
//    and target the reservation, InstanceMarketOptions.MarketType
//    capacity-block when the reservation is a Capacity Block (known from
//    ListReservations, else DescribeCapacityReservations on its id), the
//    same tags and ClientToken(idempotency token, run) as a fleet run. A
//    reservation that is full, not open or gone (a kCapacity or kNotFound
//    error), or that had room for fewer than asked, is a kCapacity
//    OfferingError and the launch moves on to the next offering; other
//    errors end the launch as a fleet run's do. Pools with
//    `auto_scaling_group`: a reserved offering is a kConfig error naming
//    the pool (a group launches as its own CapacityReservationSpecification
//    says; no raise can be aimed at one reservation).
//  - ListReservations: DescribeCapacityReservations with the state filter
//    active, pending, scheduled (EC2 has no "expiring" state; a block's
//    last half hour is Reservation::OpenAt's business), every page; kind
//    from reservationType (absent: default; a type it does not know is
//    left out), available_count from availableInstanceCount, start and end
//    from startDate and endDate, its tags; usd_per_hour 0: the API states
//    no price (the controller prices an ODCR at the on-demand rate, a
//    block's fee is not in this API). Sorted by id.
//  - Launch, fleet pools with a node template (LaunchRequest::node_template):
//    the fleet launches from the pool's own launch template
//    gpuscaler-<cluster_name>-<pool>, pinned to the version that holds the
//    pool's current template. Before the first launch of the pool, and
//    whenever its template, labels or taints (or `eks`) differ from what
//    the last launch used (a policy reload), the provider renders it
//    (node_template.h), resolving the AMI from its id, its SSM parameter or
//    the EKS-optimized NVIDIA AMI's public parameter (ssm:GetParameter) and
//    the security groups from ids and tag selectors (DescribeSecurityGroups),
//    and the pool's subnets (its fleet overrides name one per zone) from ids
//    and tag selectors (DescribeSubnets), and
//    reads the template's default version
//    (DescribeLaunchTemplateVersions $Default). Its version description
//    names the content's hash (kTemplateHashPrefix): the same hash is used
//    as is; another makes a new version (CreateLaunchTemplateVersion) that
//    becomes the default (ModifyLaunchTemplate); no template is created
//    (CreateLaunchTemplate, tagged with the cluster and pool). Create calls
//    carry a ClientToken derived from the name and hash, so a retry or a
//    second process makes no duplicate. Errors name the pool and nothing is
//    launched; kConfig when `eks` is not configured.
//  - Launch, asg pools (`auto_scaling_group` set): DescribeAutoScalingGroups;
//    the group must carry the cluster tag (else kConfig) and, if it has a
//    gpuscaler.io/pool tag, name the request's pool (else kConfig). The new
//    desired capacity is desired + count, cut to MaxSize: the cut part is an
//    OfferingError of category kCapacity, and a group already at MaxSize is
//    an Error of category kCapacity. The provider then tags the group
//    (CreateOrUpdateTags) gpuscaler.io/intent=<token> and
//    gpuscaler.io/pool=<pool> (both propagated to the instances the group
//    launches from then on), gpuscaler.io/intent-desired=<new desired> and
//    gpuscaler.io/intent-gang=yes|no (whether the launch is a gang's; both
//    on the group only), and only then calls SetDesiredCapacity.
//    Idempotency: a token this process already raised a group for raises
//    nothing again; a token the group's intent tag names (a fresh process
//    replaying a launch it may have sent before a crash) raises the group
//    only up to intent-desired, if it is below; any other token is a new
//    launch. Failed or Cancelled scaling activities that started after the
//    raise (less 5 s of clock skew) and exist when Launch returns are
//    OfferingErrors, one per offering: kCapacity when the status message
//    names a capacity error code (InsufficientInstanceCapacity, …), else
//    kConfig. The result's instances are the group's live instances tagged
//    with this launch's intent, oldest first, at most `count`. The group
//    launches asynchronously: what it has not launched yet is not in the
//    result (possibly no instance and no error); the controller sees those
//    nodes appear in ListInstances, tagged with the launch's intent, and a
//    capacity failure that comes after Launch returned is not reported (the
//    group keeps retrying, as AWS does). A gang's launch differs (below).
//  - Launch, asg pools, a gang's nodes (LaunchRequest::all_or_nothing; on a
//    replay without it, a token whose intent-gang tag is yes): a group has
//    no all-or-nothing call, so the launch is whole or given back. A group
//    whose MaxSize leaves room for fewer than `count` more nodes is an Error
//    of category kCapacity, and nothing is tagged or raised. After the raise
//    the provider looks, every `gang_poll_interval`, for the launch's live
//    instances (DescribeInstances on the group and intent tags) and then
//    for the group's failed scaling activities since the raise, until all
//    `count` are pending or running, an activity failed, or `gang_timeout`
//    passed (and at most gang_timeout / gang_poll_interval + 1 looks); a
//    look that fails with kTransient or kThrottled is tried again at the
//    next one, another failure ends the wait. All there: the result holds
//    them (oldest first). Otherwise the gang is given back: the group is
//    tagged intent-gang=giving-back and intent-desired=<floor> (its desired
//    capacity now less the nodes that never came up, at least MinSize),
//    lowered to the floor (SetDesiredCapacity) so it launches no more of
//    them, every live instance of the launch leaves through Terminate
//    (TerminateInstanceInAutoScalingGroup with
//    ShouldDecrementDesiredCapacity: the desired capacity is back where it
//    was before the raise), and the group is tagged intent-gang=given-back.
//    The result has no instance and one OfferingError, "auto scaling group
//    '<name>': a gang needs all N nodes; K came up within T s, and every one
//    of them is given back" (T: gang_timeout), then ": <the failed
//    activity's status message>"; category kCapacity, or the activity's
//    (as above); "giving the gang back also failed (…): " in front when a
//    step of the give-back failed. Replays: of a gang being given back
//    (intent-gang=giving-back) lowers the group to the tagged floor if it
//    is above it and terminates the launch's live instances, raising
//    nothing; of one given back (by this process, or intent-gang=given-back)
//    touches nothing; both return such an error. An instance the group
//    starts between the last look and the lowering is taken out by the
//    group itself, by its termination policy.
//  - Terminate: DescribeInstances on the ids first (instance-id filter, 200
//    ids a call). Ids EC2 no longer knows, and instances already shutting
//    down, are skipped (termination is idempotent). If any id is another
//    installation's (neither the cluster tag nor one of this cluster's
//    groups), the call fails with kInvalidInput and nothing is terminated.
//    Instances of this cluster's groups go through
//    TerminateInstanceInAutoScalingGroup with ShouldDecrementDesiredCapacity
//    (the group does not replace them); if that would take a group below
//    its MinSize the call fails with kConfig and nothing is terminated. The
//    others (stopped ones, and a group's warm pool instances, included):
//    TerminateInstances in chunks of 1000; before it, the Spot requests of
//    those launched to stop on interruption (below) are cancelled
//    (CancelSpotInstanceRequests), as a persistent request would otherwise
//    launch a replacement; a failed cancel terminates nothing.
//  - Stop (warm fleet pools): DescribeInstances on the ids first; an id EC2
//    does not know is kConfig, another installation's kInvalidInput (as
//    Terminate), and nothing is stopped then. Instances already stopping or
//    stopped are skipped; the others: StopInstances (Hibernate=true for
//    kHibernated) in chunks of 1000.
//  - Start: the same checks; an instance still stopping is kTransient (EC2
//    cannot start it yet) and nothing is started; pending or running ones are
//    skipped; the stopped ones: StartInstances in chunks of 1000 (EC2 starts
//    all of a call or none: InsufficientInstanceCapacity is kCapacity). A
//    spot instance EC2 stopped on interruption (stateReason
//    Server.SpotInstanceShutdown) only EC2 starts again, once capacity is
//    back: kCapacity, and nothing is started.
//  - PutWarmPool: the group must be this cluster's (kConfig otherwise);
//    PutWarmPool with MinSize = MaxGroupPreparedCapacity = size (both: the
//    pool's size is then `size` whatever the desired capacity; without
//    MaxGroupPreparedCapacity AWS would keep MaxSize - desired capacity
//    warm), PoolState Stopped or Hibernated; not sent when the group's
//    warm pool (DescribeAutoScalingGroups) already is that. A launch into a
//    group with a warm pool looks at the pool before its raise
//    (DescribeWarmPool) and counts the warm instances the raise put in
//    service (they carry their own launch's tags, not the intent tag) as
//    the launch's, each for one launch only; a restarted process finds them
//    through ListInstances.
//  - ListInstances: DescribeInstances filtered on tag:gpuscaler.io/cluster =
//    cluster_name, the gpuscaler.io/pool tag key and
//    pending|running|shutting-down|stopping|stopped (stopping and stopped:
//    kStopped), every page; plus the instances of every
//    group tagged gpuscaler.io/cluster=<cluster_name>
//    (DescribeAutoScalingGroups with that tag filter, every call: the rule
//    survives restarts) that carries a gpuscaler.io/pool tag (written by the
//    first launch naming the group, or by its operator; until then its
//    instances are not listed), with `pool` from the instance's pool tag,
//    else the group's; and the instances in the warm pool of each such
//    group that has one (DescribeWarmPool, every page), as kStopped
//    whatever their EC2 state. An instance EC2 shows in a capacity reservation
//    (capacityReservationId) is listed as a reserved offering of that
//    reservation, whatever it was launched as. Sorted by id.
//  - PollInterruptions: reads the SQS queue (JSON protocol, up to
//    max_interruption_batches receives of 10), turns "EC2 Spot Instance
//    Interruption Warning" events into notices (deadline = event time + 2
//    minutes) and rebalance recommendations into rebalance notices, each with
//    its message's receipt handle; their messages stay on the queue (hidden
//    for its visibility timeout) until AcknowledgeInterruptions deletes them.
//    Messages of other events, and bodies that are not events, are deleted
//    at once; a body whose MD5 does not match is left for redelivery. A
//    receive that fails, or whose answer cannot be parsed, ends the poll
//    with the notices read so far (an Error when there are none).
//  - AcknowledgeInterruptions: DeleteMessage for each receipt.
//  - SpotPrices: DescribeSpotPriceHistory from `since`, every page.
// Throttles and 5xx are retried by the AwsClient. Not thread-safe.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "gpuscaler/cloud/aws_client.h"
#include "gpuscaler/cloud/capacity_reservation_api.h"
#include "gpuscaler/cloud/ec2_api.h"
#include "gpuscaler/cloud/node_template.h"
#include "gpuscaler/cloud/placement_group_api.h"
#include "gpuscaler/cloud/provider.h"
#include "gpuscaler/model/clock.h"

namespace gpuscaler::cloud {

// Auto Scaling group tag holding the desired capacity the launch named by
// the group's gpuscaler.io/intent tag asked for.
inline constexpr const char* kIntentDesiredTag = "gpuscaler.io/intent-desired";
// Auto Scaling group tag saying whether the launch its gpuscaler.io/intent tag
// names is a gang's (all or nothing), and how far its give-back got.
inline constexpr const char* kIntentGangTag = "gpuscaler.io/intent-gang";
inline constexpr const char* kGangNo = "no";
inline constexpr const char* kGangYes = "yes";
inline constexpr const char* kGangGivingBack = "giving-back";
inline constexpr const char* kGangGivenBack = "given-back";

struct AwsProviderOptions {
  // This installation's name (kClusterTag's value), from the daemon
  // configuration's `cluster_name`. Required non-empty: it is what keeps two
  // installations in one account apart (an empty name would be shared by
  // every installation that left it out).
  std::string cluster_name;
  // Pools without a node template launch from this one.
  LaunchTemplateRef launch_template;
  // The cluster nodes of pools with a node template join (its `name` is
  // cluster_name); not configured: such pools cannot launch (kConfig).
  EksCluster eks;
  // Zone -> subnet. When a zone has one, overrides name the subnet (the
  // launch template then needs no network settings).
  std::map<std::string, std::string> subnet_by_zone;
  std::string spot_allocation_strategy = "price-capacity-optimized";
  std::string on_demand_allocation_strategy = "lowest-price";
  // Full SQS queue URL; empty: PollInterruptions returns nothing.
  std::string interruption_queue_url;
  // Types whose spot prices SpotPrices() fetches; empty: all.
  std::vector<std::string> price_instance_types;
  std::string product_description = "Linux/UNIX";
  Seconds interruption_notice{120};
  int max_interruption_batches = 10;  // ReceiveMessage calls per poll (10 messages each)
  // A gang's launch into an Auto Scaling group: how long it waits for all
  // its nodes after the raise before giving them back (the daemon
  // configuration's cloud.gang_timeout), and how often it looks.
  Seconds gang_timeout{60};
  std::chrono::milliseconds gang_poll_interval{2000};
};

class AwsProvider final : public CloudProvider {
 public:
  AwsProvider(AwsProviderOptions options, AwsClient& client, const Clock& clock);

  Result<LaunchResult> Launch(const LaunchRequest& request) override;
  Status Terminate(const std::vector<std::string>& instance_ids) override;
  Result<std::vector<Instance>> ListInstances() override;
  Result<std::vector<InterruptionNotice>> PollInterruptions() override;
  Status AcknowledgeInterruptions(const std::vector<InterruptionNotice>& notices) override;
  Result<std::vector<SpotPrice>> SpotPrices(WallTime since) override;
  Result<std::vector<Reservation>> ListReservations() override;
  Status Stop(const std::vector<std::string>& instance_ids, WarmState state) override;
  Status Start(const std::vector<std::string>& instance_ids) override;
  Status PutWarmPool(const std::string& auto_scaling_group, int size, WarmState state) override;

  // The CreateFleet ClientToken of run `run` of a launch with
  // `idempotency_token`: at most 64 printable ASCII characters, as EC2
  // requires. "<token>-<run>" when that fits; otherwise the token's first
  // printable ASCII characters (up to 29), '-', the first 32 hex digits
  // (128 bits) of the SHA-256 of the whole token, "-<run>". Deterministic;
  // two tokens share a ClientToken only through a 128-bit hash collision.
  static std::string ClientToken(const std::string& idempotency_token, int run);

 private:
  Result<LaunchResult> LaunchFleet(const LaunchRequest& request);
  Result<LaunchResult> LaunchInGroup(const LaunchRequest& request);
  // Run `run` of a fleet launch: the reserved offering request.offerings[index]
  // (aws_provider_reservations.cc). Launches up to *remaining nodes into its
  // reservation, adds them to `result` and lowers *remaining; a shortfall is
  // an OfferingError. An Error only when the call failed and nothing was
  // launched yet, as a fleet run's.
  Status LaunchReserved(const LaunchRequest& request, size_t index, int run,
                        const LaunchTemplateRef& launch_template,
                        const std::map<std::string, std::string>& subnet_by_zone,
                        const std::map<std::string, std::string>& tags, int* remaining, LaunchResult* result);
  // Run `run` of a fleet launch: the spot offering request.offerings[index]
  // of a launch tagged to stop on interruption (aws_provider_warm.cc). As
  // LaunchReserved, through RunInstances with a persistent Spot request
  // whose interruption behavior is stop (EC2 Fleet's instant type takes no
  // persistent request); a capacity error is this offering's OfferingError.
  Status LaunchStoppableSpot(const LaunchRequest& request, size_t index, int run,
                             const LaunchTemplateRef& launch_template,
                             const std::map<std::string, std::string>& subnet_by_zone,
                             const std::map<std::string, std::string>& tags, int* remaining, LaunchResult* result);
  // What LaunchReserved and LaunchStoppableSpot share: the RunInstances
  // request for offering request.offerings[index] (its zone's subnet, else
  // the zone; the placement group; up to `remaining` nodes, all of them for
  // a gang; the run's ClientToken and the tags), and, once it answered, its
  // instances into `result` as pending nodes of the offering, a shortfall
  // as an OfferingError saying `what` launched too few, and *remaining
  // lowered.
  RunInstancesRequest OfferingRunRequest(const LaunchRequest& request, size_t index, int run,
                                         const LaunchTemplateRef& launch_template,
                                         const std::map<std::string, std::string>& subnet_by_zone,
                                         const std::map<std::string, std::string>& tags, int remaining) const;
  void TakeOfferingRun(const std::vector<Ec2Instance>& launched, const LaunchRequest& request, size_t index,
                       const std::map<std::string, std::string>& tags, const std::string& what, int* remaining,
                       LaunchResult* result);
  // Whether reservation `id` is an ODCR or a Capacity Block: as the last
  // ListReservations saw it, else DescribeCapacityReservations on the id.
  Result<ReservationKind> ReservationKindOf(const std::string& id);
  // The pool's own launch template, created or updated to match the
  // request's node template (aws_provider_templates.cc).
  Result<LaunchTemplateRef> EnsureLaunchTemplate(const LaunchRequest& request);
  Result<std::string> ResolveImage(const NodeTemplate& node_template);
  // The cluster placement group `name` of a gang launch of `pool`: found
  // (DescribePlacementGroups) or created (CreatePlacementGroup, strategy
  // cluster, tagged with the cluster and the pool); once per name and
  // process. A create that fails on a group that exists by then (EC2's
  // InvalidPlacementGroup.Duplicate: another replica made it) is success.
  // kConfig when a group of that name has another strategy.
  Status EnsurePlacementGroup(const std::string& pool, const std::string& name);
  // The placement group `name`, or none when EC2 does not know it.
  Result<std::optional<PlacementGroupInfo>> FindPlacementGroup(const std::string& name);
  // The template's security group ids and those of the groups its
  // selectors match (DescribeSecurityGroups), sorted, without repeats.
  Result<std::vector<std::string>> ResolveSecurityGroups(const NodeTemplate& node_template);
  // Zone -> subnet of a pool whose node template names subnets: its ids and
  // the subnets its selectors match (DescribeSubnets), with their zones;
  // resolved once per pool while the template's subnets stay the same.
  // kConfig naming the pool and zone when a zone has several subnets (one
  // per zone: nothing says which to use), and naming the selector when it
  // matches none. Null when the template names no subnets.
  Result<const std::map<std::string, std::string>*> PoolSubnets(const std::string& pool,
                                                                const NodeTemplate& node_template);
  // DescribeInstances with `filters`, every page; with `ids`, only those
  // (instance-id filter, in chunks).
  Result<std::vector<Ec2Instance>> DescribeInstances(const std::vector<Filter>& filters,
                                                     const std::vector<std::string>& ids = {});
  // DescribeAutoScalingGroups: the named groups (in chunks), or with no
  // names every group tagged with this cluster; every page.
  Result<std::vector<AutoScalingGroup>> DescribeGroups(const std::vector<std::string>& names);
  bool Owns(const AutoScalingGroup& group) const;
  // Failed scaling activities of `group` that started at or after `since`.
  Result<std::vector<ScalingActivity>> FailedActivities(const std::string& group, WallTime since);
  // The live (pending or running) instances group `group` launched for the
  // launch with `token` (by its intent tag), oldest first. In a group with a
  // warm pool: those of them in service, and the warm instances the
  // launch's raise woke (WokenFor).
  Result<std::vector<Ec2Instance>> GroupLaunchInstances(const std::string& group, const std::string& token);
  // A gang's launch into group `g`, raised (or found raised) by this call:
  // waits for all its nodes, else gives them back (aws_provider_gang.cc).
  // `since`: failed activities older than this are not the launch's.
  LaunchResult AwaitGang(const LaunchRequest& request, const AutoScalingGroup& g, WallTime since);
  // Gives back the gang of a launch into `g` that did not come up whole
  // (`came_up` of its nodes did; `failed`: the activity that ended the
  // wait; `look_error`: why the last look failed), from a fresh look at
  // the group on.
  LaunchResult GiveBackGang(const LaunchRequest& request, const AutoScalingGroup& g, int came_up,
                            const std::optional<ScalingActivity>& failed, const std::optional<Error>& look_error);
  // The give-back's steps after its giving-back tag: lowers group `g` (as
  // described) to `floor` if it is above, terminates the launch's live
  // instances, tags the group given-back.
  Status FinishGiveBack(const LaunchRequest& request, const AutoScalingGroup& g, int floor);
  // A replay of a gang's launch that is given back, or was: finishes the
  // give-back when the group's tags say it is under way, touches nothing
  // otherwise; the launch's error.
  LaunchResult GivenBackGang(const LaunchRequest& request, const AutoScalingGroup& g);
  Status TerminateEc2(const std::vector<std::string>& instance_ids);
  // Warm pools (aws_provider_warm.cc). The instances in group `group`'s warm
  // pool (DescribeWarmPool, every page), Warmed:Terminating ones left out.
  Result<std::vector<AsgInstance>> WarmPoolInstances(const std::string& group);
  // `ids` described (unique, sorted), checked for Stop and Start (`verb`):
  // kConfig naming the ids EC2 does not know, kInvalidInput naming another
  // installation's.
  Result<std::vector<Ec2Instance>> DescribeOwned(const std::string& verb, std::vector<std::string> ids);
  // The warm instances group `group` put in service for the launch with
  // `token`: those of its warm pool before the raise now in the group, not
  // counted for another launch. `in_service`: the group's instances in
  // service (DescribeAutoScalingGroups).
  Result<std::vector<std::string>> WokenFor(const std::string& group, const std::string& token,
                                            std::set<std::string>* in_service);

  AwsProviderOptions options_;
  AwsClient& client_;
  const Clock& clock_;
  // Offerings of instances this process launched (price at launch).
  std::map<std::string, Offering> launched_;
  // Desired capacity each Auto Scaling launch this process sent asked for,
  // by idempotency token.
  std::map<std::string, int> raised_;
  // Gang launches this process gave back (or began to), by idempotency
  // token: the error the launch returned.
  std::map<std::string, OfferingError> given_back_;
  // By idempotency token of a launch into a group with a warm pool: the
  // pool's instances just before the raise, and those of them counted as
  // the launch's.
  std::map<std::string, std::set<std::string>> warm_before_;
  std::map<std::string, std::vector<std::string>> woken_;
  // Groups seen with a warm pool: a launch's instances there are told apart
  // from the pool's (GroupLaunchInstances).
  std::set<std::string> warm_groups_;
  // By pool: what its launch template was last made from (the rendered
  // content with the AMI's source instead of its id) and the version that
  // holds it.
  struct EnsuredTemplate {
    std::string source_key;
    LaunchTemplateRef ref;
  };
  std::map<std::string, EnsuredTemplate> templates_;
  // By pool: the subnets its template named (ids and selectors, as text)
  // and the zone -> subnet map they resolved to.
  struct ResolvedSubnets {
    std::string source_key;
    std::map<std::string, std::string> by_zone;
  };
  std::map<std::string, ResolvedSubnets> pool_subnets_;
  // Placement groups found or created by this process.
  std::set<std::string> placement_groups_;
  // The kinds of the reservations this process has seen, by id.
  std::map<std::string, ReservationKind> reservation_kinds_;
};

}  // namespace gpuscaler::cloud
