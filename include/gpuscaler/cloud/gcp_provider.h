// GcpProvider: the CloudProvider on Google Cloud (Compute Engine v1 REST:
// managed instance groups, instances.bulkInsert, instances.aggregatedList,
// zoneOperations; Spot prices from the Cloud Billing Catalog API).
//
// Ownership: an installation is named by `cluster_name`. Instances carry the
// label gpuscaler-cluster=<ClusterLabel> and gpuscaler-pool=<LabelValue(pool)>;
// the provider lists (and so deletes) only instances whose cluster label is
// its own. GCP label values are at most 63 characters of [a-z0-9_-], so names
// map to labels by LabelValue (below). Instances gpuscaler creates itself
// also carry the label gpuscaler-intent (the hash in their names) and the
// metadata items gpuscaler-cluster, gpuscaler-pool and gpuscaler-intent (the
// names and the idempotency token verbatim), from which ListInstances fills
// Instance::tags (kClusterTag, kOwnerTag, kIntentTag). A managed instance
// group's instances take their labels from the group's instance template
// (on GKE: the node pool's --labels): it must set both labels, or its
// instances are never listed.
//
// Instance ids are instance names (unique in the project: they embed a hash
// of the launch's idempotency token), as the last segment of a GKE node's
// providerID gce://<project>/<zone>/<name>.
//
//  - Launch: pools with managed instance groups (GcpPoolTarget::migs or
//    mig_pattern: one group per zone, as GKE node pools have) grow through
//    instanceGroupManagers.createInstances with named instances; other
//    pools through instances.bulkInsert (named instances, minCount 1; a
//    gang's launch, LaunchRequest::all_or_nothing: minCount = count, so a
//    zone creates all of them or none) from
//    the pool's instance template, with the machine type of the offering,
//    scheduling.provisioningModel SPOT (instanceTerminationAction DELETE)
//    or STANDARD, onHostMaintenance TERMINATE, and the labels and metadata
//    above; with LaunchRequest::placement_group, also
//    instanceProperties.resourcePolicies = [that name], a compact placement
//    policy of the offering's region that the provider first reads or
//    creates (EnsureResourcePolicy). A placement group on a pool with
//    groups is kConfig (a group's template decides its placement). A managed group's template decides its machine type and
//    provisioning model: the policy must give such a pool only offerings
//    that match it. The request's `count` names slots 0..count-1, slot i
//    being the instance InstanceName(cluster, token, i). First the instances
//    of earlier calls with the same token are found (the pool's groups'
//    listManagedInstances, or aggregatedList on the intent label) and
//    returned as launched; then the missing slots are created offering by
//    offering, in order, each call with a requestId derived from the token,
//    the offering and the names (RequestId), so neither a retry nor a
//    restarted process creates anything twice. Each operation is waited for
//    (zoneOperations.wait, then get, at most `operation_timeout`); a managed
//    group's new instances are then followed in listManagedInstances (every
//    `poll_interval`, up to `operation_timeout`): an instance with
//    lastAttempt.errors is taken out of the group again (deleteInstances: the
//    group would retry it forever) and its errors become the offering's
//    OfferingError; one still being created at the deadline is returned as
//    pending. A gang's launch (LaunchRequest::all_or_nothing) into a managed
//    group, which has no all-or-nothing call, is whole or given back: when
//    any member failed or is not created by the deadline, every member is
//    deleted again and the offering's error says how many came up. Errors map by ClassifyGcpError: ZONE_RESOURCE_POOL_EXHAUSTED*
//    -> kCapacity for that offering (the controller falls back to the next).
//    QUOTA_EXCEEDED -> kCapacity too, and the quota blocks every offering of
//    its region, capacity type and machine family (a2-highgpu, g2-standard):
//    later launches skip them without a create call (kCapacity "blocked")
//    until the region's quota for the metric changes (regions.get: another
//    limit, or less usage than when it was blocked) or `quota_recheck`
//    passes. A call that fails with another category before anything was
//    launched fails the Launch (kAuth, kConfig, kThrottled, kTransient).
//  - Terminate: the instances are looked up among this cluster's
//    (aggregatedList); unknown ids (gone, or another installation's) are
//    skipped, as are instances already stopping. A managed group's
//    instances (metadata created-by, else the pool's group in that zone)
//    leave through deleteInstances (which lowers the group's target size, so
//    the group does not replace them); others through instances.delete.
//    Instances this process launched into a group that are not created yet
//    are deleted from their group too (the creation is cancelled). Stopped
//    and suspended members are deleted like running ones.
//  - ListInstances: aggregatedList filtered on labels.gpuscaler-cluster,
//    every page; instances without a pool label are not gpuscaler's. Sorted
//    by name. A group member whose status is STOPPING, TERMINATED,
//    SUSPENDING or SUSPENDED is looked up in its group (listManagedInstances,
//    one call per such group): currentAction STOPPING or SUSPENDING, or NONE
//    with instanceStatus TERMINATED or SUSPENDED, is kStopped (warm);
//    STARTING or RESUMING is kPending; anything else (DELETING, a
//    preemption, gone from the group) kShuttingDown. Bare instances in those
//    statuses are kShuttingDown.
//  - Stop / Start (warm pools, docs/gcp.md "Warm pools"): only members of
//    managed instance groups (metadata created-by); a bare instance, or an id
//    that is not one of this cluster's instances, is kConfig and nothing is
//    done. Stop: the group's stopInstances (kStopped) or suspendInstances
//    (kHibernated), force false (the group's standbyPolicy.initialDelaySec
//    applies), one call per group with a requestId of its own (the same node
//    stops and starts again and again; the client's retries of a call reuse
//    it); the operation is waited for.
//    Instances already STOPPING, TERMINATED, SUSPENDING or SUSPENDED are
//    skipped; ones not RUNNING yet make the call fail as kTransient after
//    the others are stopped. Compute Engine cannot suspend VMs with GPUs:
//    its 400 is kConfig. Start: startInstances for stopped members,
//    resumeInstances for suspended ones, skipping ones already pending or
//    running; the started
//    members are then followed in listManagedInstances (every
//    `poll_interval`, up to `operation_timeout`) until each is PROVISIONING
//    or later or shows lastAttempt.errors. When any failed (capacity, quota,
//    a full reservation), every instance of the call goes back to its pool
//    (stopInstances / suspendInstances) and Start fails with the error's
//    category (kCapacity for those).
//  - ListReservations: reservations.aggregatedList (every page), the
//    specific reservations gpuscaler can target: status READY,
//    specificReservationRequired true, a specificReservation (not an
//    aggregate one), in `zones` (empty: in `region`). Each as a Reservation
//    of kind kDefault: id = name, instance_type =
//    specificReservation.instanceProperties.machineType, total_count =
//    count, available_count = count - inUseCount, start =
//    creationTimestamp, end = deleteAtTime (or creation +
//    deleteAfterDuration) when Compute Engine is to delete it, no tags
//    (Compute Engine reservations carry no labels: pools select them by
//    name). Reservations consumed automatically (specificReservationRequired
//    false) are left out: an instance cannot name them, so launches could
//    not be counted against them; gpuscaler's STANDARD instances, which keep
//    the default affinity ANY_RESERVATION, may still fill them. A
//    reservation that is not valid JSON of that shape fails the call.
//  - Launch of a reserved offering (capacity type kReserved,
//    Offering::reservation_id the reservation's name): a bare pool's
//    bulkInsert carries instanceProperties.reservationAffinity
//    {SPECIFIC_RESERVATION, key kGcpReservationNameKey, values [name]} and
//    provisioningModel STANDARD (Spot VMs cannot consume reservations),
//    merged over the pool's template by bulkInsert as any other override; a
//    pool with groups launches into the group GcpPoolTarget::reservation_migs
//    names for that reservation, whose template must target it (checked
//    once per group and process: instanceGroupManagers.get, then
//    instanceTemplates.get of its template; otherwise kConfig for that
//    offering). A full reservation fails with CONDITION_NOT_MET "Specified
//    reservation 'NAME' does not have available resources for the request."
//    (the operation's error, or the group member's lastAttempt), which is
//    kCapacity: the launch moves on to the next offering.
//    ListInstances reports an instance whose reservationAffinity is
//    SPECIFIC_RESERVATION (its own, or its template's) as a reserved offering
//    with that reservation_id, so the controller counts its slot as used.
//  - PollInterruptions: zoneOperations.list with operationType
//    compute.instances.preempted in `zones` and the zones of this cluster's
//    instances; each operation once, for instances of this cluster (an
//    operation whose instance is not listed yet is looked at again at the
//    next poll: after a restart the inventory comes first), as a
//    notice with deadline = insertTime + `interruption_notice` (30 s on GCP).
//  - SpotPrices: with `billing_catalog.enabled` and a billing client, the
//    Spot price of every machine type of `billing_catalog.machine_types` that
//    can be priced fully, composed from the Cloud Billing Catalog's Compute
//    Engine SKUs (gcp_billing_catalog.h: services.skus.list, every page,
//    currencyCode USD) for `region`, one SpotPrice per (machine type, zone of
//    `billing_catalog.zones`, else of `zones`; the region itself when both
//    are empty), `time` = the latest effectiveTime of its components, sorted
//    by time then type and zone. The catalog publishes only the prices in
//    force, so each is the price in force at `since` (its time earlier) or a
//    change after it. The catalog is read at most every
//    `billing_catalog.refresh`; other calls answer the prices of the last
//    read. A read that fails (transport, 403 permission or API not enabled,
//    a malformed page) returns its error, categorised as GcpClient does, and
//    the next read is tried `billing_catalog.retry` later (until then the
//    calls answer the last good prices, or none). Machine types that lack a
//    component are left out and named by unpriced_machine_types(). Without
//    a billing client (disabled): none; the catalog's prices stand.
// Throttles and 5xx are retried by the GcpClient. Not thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "gpuscaler/cloud/gcp_client.h"
#include "gpuscaler/cloud/provider.h"

namespace gpuscaler::cloud {

inline constexpr const char* kGcpClusterLabel = "gpuscaler-cluster";
inline constexpr const char* kGcpPoolLabel = "gpuscaler-pool";
inline constexpr const char* kGcpIntentLabel = "gpuscaler-intent";
// The reservationAffinity key that targets a specific reservation by name.
inline constexpr const char* kGcpReservationNameKey = "compute.googleapis.com/reservation-name";

// How one policy pool buys its nodes.
struct GcpPoolTarget {
  // Zone -> managed instance group (zonal) in that zone.
  std::map<std::string, std::string> migs;
  // Or a name pattern for every zone: "{pool}" is LabelValue(pool), "{zone}"
  // the zone ("gke-ml-{pool}-{zone}"). `migs` wins for the zones it names.
  std::string mig_pattern;
  // Pools without groups: the instance template bulkInsert starts from
  // ("global/instanceTemplates/gpu-node" or a full URL); empty: the
  // provider's default.
  std::string instance_template;
  // Pools with groups: reservation name -> the zonal group (in the
  // reservation's zone) whose instance template consumes that reservation
  // (a GKE node pool made with --reservation-affinity=specific). A reserved
  // offering of a reservation not named here is kConfig for that offering.
  std::map<std::string, std::string> reservation_migs;

  bool uses_migs() const { return !migs.empty() || !mig_pattern.empty(); }
};

// Spot prices from the Cloud Billing Catalog (SpotPrices above).
struct GcpBillingCatalogOptions {
  bool enabled = false;
  std::chrono::seconds refresh{3600};  // the catalog is read at most this often
  std::chrono::seconds retry{300};     // after a failed read (at most `refresh`)
  // The shapes to price (the daemon's catalog's instance types).
  std::vector<InstanceType> machine_types;
  // The zones prices are given for (empty: GcpProviderOptions::zones).
  std::vector<std::string> zones;
};

struct GcpProviderOptions {
  // This installation's name (required non-empty; see the header comment).
  std::string cluster_name;
  std::string project;
  std::string region;
  // Zones watched for preemptions (besides those of listed instances) and
  // where mig_pattern pools have groups.
  std::vector<std::string> zones;
  // By policy pool name; pools not named here are bare pools with
  // `instance_template`.
  std::map<std::string, GcpPoolTarget> pools;
  std::string instance_template;
  std::chrono::seconds operation_timeout{60};
  std::chrono::milliseconds poll_interval{2000};
  std::chrono::seconds interruption_notice{30};
  std::chrono::seconds quota_recheck{900};
  GcpBillingCatalogOptions billing_catalog;
};

class GcpProvider final : public CloudProvider {
 public:
  // `billing`: the Cloud Billing client SpotPrices reads the catalog with
  // (its endpoint kCloudBillingEndpoint or an emulator's); nullptr, or
  // `billing_catalog.enabled` false: no prices. Both clients must outlive
  // the provider.
  GcpProvider(GcpProviderOptions options, GcpClient& client, GcpClient* billing = nullptr);

  Result<LaunchResult> Launch(const LaunchRequest& request) override;
  Status Terminate(const std::vector<std::string>& instance_ids) override;
  Result<std::vector<Instance>> ListInstances() override;
  Result<std::vector<InterruptionNotice>> PollInterruptions() override;
  Result<std::vector<SpotPrice>> SpotPrices(WallTime since) override;
  Result<std::vector<Reservation>> ListReservations() override;
  Status Stop(const std::vector<std::string>& instance_ids, WarmState state) override;
  Status Start(const std::vector<std::string>& instance_ids) override;

  // One Reservation resource as ListReservations maps it: nullopt when it is
  // not one gpuscaler targets (not READY, not specificReservationRequired,
  // an aggregate reservation); kInvalidInput when a field it needs is
  // missing or malformed.
  static Result<std::optional<Reservation>> ParseReservation(const nlohmann::json& resource);

  // A name as a GCP label value: lowercased, every character outside
  // [a-z0-9_-] replaced by '-'. When that changed nothing and the result has
  // at most 63 characters it is the label; otherwise its first 54 characters,
  // '-', and the first 8 hex digits of the SHA-256 of the original name, so
  // two names never share a label (short of a 32-bit hash collision).
  // Deterministic.
  static std::string LabelValue(std::string_view name);
  // The name of slot `slot` of the launch with `token`: "gs-<cluster>-<hash>-<slot>",
  // <cluster> the cluster's label with '_' as '-' (at most 20 characters),
  // <hash> IntentHash(token). RFC 1035, at most 63 characters.
  static std::string InstanceName(std::string_view cluster_name, std::string_view token, int slot);
  // The first 12 hex digits of the SHA-256 of the token (the intent label).
  static std::string IntentHash(std::string_view token);
  // A version-5-style UUID from the SHA-256 of `seed` (Compute Engine's
  // requestId must be a UUID).
  static std::string RequestId(std::string_view seed);
  // "a2-highgpu-1g" -> "a2-highgpu": what a GPU quota is per.
  static std::string MachineFamily(std::string_view machine_type);

  int quota_blocked_offerings() const { return quota_skips_; }
  // Catalog reads that succeeded, and the machine types the last one could
  // not price fully ("a3-highgpu-8g: no Spot Local SSD SKU for us-central1").
  int billing_catalog_reads() const { return billing_reads_; }
  const std::vector<std::string>& unpriced_machine_types() const { return unpriced_; }

 private:
  struct Created {
    std::vector<Instance> instances;
    std::vector<Error> errors;
    std::vector<GcpErrorItem> quota_errors;
  };
  // What this process knows of an instance it launched.
  struct Launched {
    std::string zone;
    std::string mig;  // empty: bare
    Offering offering;
    std::string pool;
    std::string token;  // the launch's idempotency token
  };
  struct Owned {
    std::string zone;
    std::string pool;
    std::string status;
    std::string created_by_mig;
  };
  // A group member Stop or Start acts on.
  struct WarmMember {
    std::string zone;
    std::string mig;  // from its metadata created-by
    std::string status;
  };
  struct QuotaBlock {
    std::string region;
    std::string metric;
    double limit = -1;
    double usage = -1;
    SteadyTime since{};
    std::string first_error;
  };

  GcpPoolTarget TargetFor(const std::string& pool) const;
  std::string MigFor(const GcpPoolTarget& target, const std::string& pool, const std::string& zone) const;
  std::vector<std::string> MigZones(const GcpPoolTarget& target) const;
  // The group a launch of `offering` goes into: a reserved offering's
  // reservation group, else MigFor its zone ("" when there is none).
  std::string GroupFor(const GcpPoolTarget& target, const std::string& pool, const Offering& offering) const;
  // kConfig unless group `mig`'s instance template targets `reservation`
  // (SPECIFIC_RESERVATION); remembered once it does.
  Status CheckReservationGroup(const std::string& pool, const std::string& zone, const std::string& mig,
                               const std::string& reservation);
  std::string ZonePath(const std::string& zone) const;

  Result<std::vector<Instance>> ExistingInMigs(const LaunchRequest& request, const GcpPoolTarget& target);
  Result<std::vector<Instance>> ExistingBare(const LaunchRequest& request);
  Result<Created> CreateInMig(const LaunchRequest& request, const GcpPoolTarget& target,
                              const Offering& offering, const std::vector<int>& slots);
  Result<Created> CreateBare(const LaunchRequest& request, const GcpPoolTarget& target,
                             const Offering& offering, const std::vector<int>& slots);
  Status DeleteFromMig(const std::string& zone, const std::string& mig,
                       const std::vector<std::string>& names);
  // Deletes `names` from the group again and records `error` (with what
  // `doing` met if the deletion failed too) and the quota errors among
  // `items` in `out`.
  void TakeBack(const std::string& zone, const std::string& mig, const std::vector<std::string>& names, Error error,
                const std::vector<GcpErrorItem>& items, const std::string& doing, Created* out);
  // Deletes every member of a gang that did not come up whole; its error.
  Created GiveBackPartialGang(const std::string& zone, const std::string& mig, const std::vector<std::string>& names,
                              size_t came_up, const std::map<std::string, std::vector<GcpErrorItem>>& failed,
                              const std::string& what);
  // The compact placement resource policy `name` in `region` of a gang
  // launch of `pool`: read (resourcePolicies.get), or created when it is
  // not there (resourcePolicies.insert with groupPlacementPolicy.collocation
  // COLLOCATED and a requestId from the region and name, waited for); once
  // per region and name and process. An insert that fails on a policy that
  // exists by then (another replica made it) is success. kConfig when a
  // policy of that name is not a collocated group placement policy.
  Status EnsureResourcePolicy(const std::string& pool, const std::string& region, const std::string& name);

  // Waits for the operation (zoneOperations.wait, then get) up to
  // operation_timeout; the operation as last seen (possibly not DONE).
  Result<GcpOperation> Wait(const nlohmann::json& operation);
  Result<nlohmann::json> ListManaged(const std::string& zone, const std::string& mig);
  // aggregatedList with `filter`, every page, as raw instance resources.
  Result<std::vector<nlohmann::json>> AggregatedInstances(const std::string& filter);
  Instance ToInstance(const nlohmann::json& resource) const;
  std::string PoolFromLabel(const std::string& label) const;

  // Warm pools (gcp_provider_warm.cc). The group members named by `ids`;
  // kConfig for an id that is not this cluster's or not a group member.
  Result<std::map<std::string, WarmMember>> WarmMembers(const std::vector<std::string>& ids, bool starting);
  // POSTs the group's `verb` (stopInstances, …) for `names` with a
  // requestId of its own, and waits for its operation.
  Status StandbyCall(const std::string& zone, const std::string& mig, const std::string& verb,
                     const std::vector<std::string>& names);
  // Follows started members until each is up or failed; the failed ones' errors.
  std::map<std::string, std::vector<GcpErrorItem>> FollowWake(const std::string& zone, const std::string& mig,
                                                              const std::vector<std::string>& names);
  // The state of each group member among `resources` whose status is
  // STOPPING, TERMINATED, SUSPENDING or SUSPENDED, as its group sees it.
  Result<std::map<std::string, InstanceState>> StandbyStates(const std::vector<nlohmann::json>& resources);

  std::string QuotaKey(const Offering& offering) const;
  // kCapacity when the offering's quota is blocked and has not changed.
  std::optional<Error> QuotaBlocked(const Offering& offering);
  void BlockQuota(const Offering& offering, const GcpErrorItem& error);
  // The region's {limit, usage} of `metric`, or nullopt.
  std::optional<std::pair<double, double>> RegionQuota(const std::string& region, const std::string& metric);
  // Reads the catalog (every page) into spot_prices_ and unpriced_.
  Status ReadBillingCatalog();

  GcpProviderOptions options_;
  GcpClient& client_;
  std::string cluster_label_;
  std::map<std::string, Launched> launched_;
  std::map<std::string, QuotaBlock> quota_blocks_;
  // "<region>/<name>" of the resource policies found or created.
  std::set<std::string> resource_policies_;
  // "<zone>/<group>" -> the reservation its template was seen to target.
  std::map<std::string, std::string> reservation_groups_;
  int quota_skips_ = 0;
  // Names of this cluster's instances at the last listing, with their zones.
  std::map<std::string, std::string> known_;
  // Preemption operations already reported, by name, with when they were seen.
  std::map<std::string, SteadyTime> seen_operations_;
  std::optional<WallTime> first_poll_;
  GcpClient* billing_ = nullptr;
  std::vector<SpotPrice> spot_prices_;  // of the last good catalog read, sorted
  std::vector<std::string> unpriced_;
  std::optional<SteadyTime> next_catalog_read_;
  int billing_reads_ = 0;
  uint64_t standby_calls_ = 0;  // stop/start calls made, for their requestIds
};

}  // namespace gpuscaler::cloud
