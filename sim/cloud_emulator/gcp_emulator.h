// GcpEmulator: a pure request handler speaking the subset of the Compute
// Engine v1 REST API, Google's OAuth 2.0 token endpoint and the GCE metadata
// server that a GKE/MIG autoscaler uses, with Google's wire shapes (resource
// kinds, selfLinks, Operation resources, `{"error":{"code","message",
// "errors":[…]}}` bodies), so that both our GcpProvider and Google's own
// client libraries can drive it. docs/gcp-emulator.md describes it.
//
//  - Auth: POST /token takes the JWT-bearer grant (an RS256 JWT signed with a
//    service-account key the scenario names: signature, issuer, audience,
//    iat/exp checked) and answers a Bearer access token; GET
//    /computeMetadata/v1/instance/service-accounts/default/token (header
//    `Metadata-Flavor: Google`) hands out one for the scenario's default
//    account. Every /compute/v1 call needs a live token (401 otherwise).
//  - Instances: instances.get / delete / bulkInsert, aggregated/instances
//    (filter on name, status, labels.KEY, scheduling fields; maxResults and
//    pageToken).
//  - Managed instance groups (from the scenario): get, createInstances
//    (named), deleteInstances, resize, listManagedInstances (currentAction,
//    instanceStatus, lastAttempt.errors). A member that finds no capacity or
//    quota stays CREATING and is retried every `mig_retry_interval`.
//  - Standby (warm) members (gcp_standby.cc): stopInstances and
//    suspendInstances (RUNNING -> STOPPING -> TERMINATED, RUNNING ->
//    SUSPENDING -> SUSPENDED, `stop_latency`; after the group's
//    standby_initial_delay from the VM's creation unless forceStop /
//    forceSuspend), startInstances and resumeInstances (PROVISIONING ->
//    STAGING -> RUNNING in `start_latency`, the same VM); the group's
//    targetSize moves to targetStoppedSize / targetSuspendedSize and back.
//    A stopped or suspended VM holds no capacity, quota or reservation
//    slot: a start that finds none stays STARTING / RESUMING with
//    lastAttempt.errors and is retried every `mig_retry_interval`. VMs with
//    GPUs cannot be suspended (Compute Engine's limitation; `gpu_suspend`
//    lifts it).
//  - Regions: regions.get with `quotas[]` {metric, limit, usage} for the
//    scenario's quotas.
//  - Resource policies: resourcePolicies.get and insert (group placement
//    policies: groupPlacementPolicy.collocation COLLOCATED; an existing name
//    is 409 alreadyExists), answered with a regional operation
//    (regionOperations.get, wait). bulkInsert's
//    instanceProperties.resourcePolicies (names or URLs; an unknown one is
//    404) go onto its instances, which show them as `resourcePolicies`
//    URLs. bulkInsert's minCount: fewer than minCount fit, none is created
//    and the operation ends with the capacity or quota error.
//  - Reservations (from the scenario): reservations.get, list and
//    aggregatedList, with specificReservation.count and the live inUseCount.
//    An instance's reservationAffinity (bulkInsert's instanceProperties, a
//    group's template) decides what it consumes: SPECIFIC_RESERVATION takes a
//    slot of the named reservation or fails with CONDITION_NOT_MET (missing,
//    not READY, another machine type, full); ANY_RESERVATION (the default)
//    takes a free slot of a matching reservation that does not require
//    specific targeting; NO_RESERVATION none. A slot is held until the
//    instance is gone. Global instance templates: instanceTemplates.get of
//    the groups' templates (properties with reservationAffinity).
//  - Zone operations: get, wait (blocking only with EnableBlockingWait),
//    list (filter, e.g. operationType). An
//    operation is RUNNING for `operation_latency`, then DONE, with its
//    `error.errors[]` (ZONE_RESOURCE_POOL_EXHAUSTED[_WITH_DETAILS],
//    QUOTA_EXCEEDED) when it failed. `requestId` makes a mutating call
//    idempotent: the same id answers the same operation and changes nothing.
//  - Cloud Billing Catalog: GET /v1/services/6F81-5844-456A/skus (Compute
//    Engine's SKUs, Google's Sku shape, pageSize/pageToken paging, USD) from
//    the scenario's `billing_catalog`, each SKU at the price in force now;
//    or the scenario's error for every call (403 SERVICE_DISABLED, …).
//  - Scenario: capacity limits per (machine type, zone[, provisioning model]),
//    per-region GPU quotas (Google's metric names, NVIDIA_L4_GPUS, …;
//    PREEMPTIBLE_… for Spot VMs), rate limiting (429 rateLimitExceeded),
//    503s, latencies, scheduled Spot preemptions (the instance stops, then is
//    deleted or TERMINATED per its instanceTerminationAction, and a
//    `compute.instances.preempted` operation appears in its zone).
//
// Time comes only from the Clock. Thread-safe: Handle() serialises on a
// mutex.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "gpuscaler/model/clock.h"
#include "gpuscaler/status.h"
#include "sim/cloud_emulator/emulator.h"

namespace gpuscaler::sim {

// A limit on live instances of a machine type in a zone (empty fields match
// anything); creations beyond it fail with `error_code`.
struct GcpCapacityLimit {
  std::string machine_type;
  std::string zone;
  std::string provisioning_model;  // "", "STANDARD" or "SPOT"
  int limit = 0;
  std::string error_code = "ZONE_RESOURCE_POOL_EXHAUSTED";  // or …_WITH_DETAILS
  std::optional<Seconds> from;                              // active from start + from (default: always)
  std::optional<Seconds> until;                             // until start + until
};

// A regional quota on GPUs, by Google's metric name ("NVIDIA_L4_GPUS";
// "PREEMPTIBLE_NVIDIA_L4_GPUS" for Spot VMs).
struct GcpQuota {
  std::string region;
  std::string metric;
  double limit = 0;
  // In force from start + from; of a (region, metric)'s entries the one with
  // the latest `from` that has passed applies (a quota raised at 5m: two
  // entries). Before every entry's `from` the metric is unlimited.
  Seconds from{0};
};

// At `at`, the oldest `count` RUNNING Spot VMs that match are preempted:
// STOPPING at once, deleted or TERMINATED `notice` later.
struct GcpPreemption {
  Seconds at{0};
  std::string machine_type;  // empty: any
  std::string zone;          // empty: any
  int count = 1;
  Seconds notice{30};
};

// An instance's reservationAffinity: consume_type ANY_RESERVATION (what
// Compute Engine assumes when none is given), SPECIFIC_RESERVATION (with
// `values`: the reservation's name, or "projects/P/reservations/NAME") or
// NO_RESERVATION.
struct GcpReservationAffinity {
  std::string consume_type = "ANY_RESERVATION";
  std::string key;  // "compute.googleapis.com/reservation-name" when specific
  std::vector<std::string> values;
};

// A Compute Engine specific reservation of `count` VMs of one machine type
// in one zone. `in_use_elsewhere` slots are held by VMs outside the
// emulator (another team's); the emulator's own consumers are counted live.
struct GcpReservation {
  std::string name;
  std::string zone;
  std::string machine_type;
  std::vector<std::pair<std::string, int>> accelerators;  // guestAccelerators (type, count)
  int count = 0;
  int in_use_elsewhere = 0;
  bool specific_reservation_required = true;
  std::string status = "READY";  // CREATING, READY, DELETING, UPDATING
  // Set: deleted by Compute Engine at start + delete_at (deleteAtTime); the
  // instances consuming it keep running.
  std::optional<Seconds> delete_at;
};

// A managed instance group; its "instance template" is given inline.
struct GcpManagedGroup {
  std::string name;
  std::string zone;
  std::string base_instance_name;  // default: the name
  std::string instance_template;   // shown as the MIG's instanceTemplate
  std::string machine_type = "g2-standard-4";
  std::string provisioning_model = "STANDARD";  // or SPOT
  std::string termination_action;               // "", STOP or DELETE
  std::map<std::string, std::string> labels;
  GcpReservationAffinity reservation_affinity;  // the template's
  int target_size = 0;
  // standbyPolicy.initialDelaySec: a stop or suspension (without force)
  // waits until this long after the VM's creation.
  Seconds standby_initial_delay{0};
};

// A Compute Engine SKU of the Cloud Billing Catalog.
struct GcpBillingSku {
  std::string sku_id;       // empty: made from the description ("XXXX-XXXX-XXXX")
  std::string description;  // "Spot Preemptible G2 Instance Core running in Americas"
  std::string resource_family = "Compute";
  std::string resource_group;              // "CPU", "RAM", "GPU", "LocalSSD"
  std::string usage_type = "Preemptible";  // or "OnDemand", "Commit1Yr", …
  std::vector<std::string> regions;        // serviceRegions
  std::string usage_unit = "h";            // "h", "GiBy.h" or "GiBy.mo"
  // (from, USD per usage unit): each in force from start + from (negative:
  // before the start) until the next; ascending `from`. A SKU is listed
  // only once one is in force.
  std::vector<std::pair<Seconds, double>> prices;
};

// The Cloud Billing Catalog's Compute Engine service.
struct GcpBillingCatalog {
  std::vector<GcpBillingSku> skus;
  int max_page_size = 5000;  // the most SKUs one page holds (Google: 5000)
  // When error_code != 0, every catalog call answers this error instead
  // (403 PERMISSION_DENIED with reason SERVICE_DISABLED: the API is not
  // enabled in the project).
  int error_code = 0;
  std::string error_status;  // "PERMISSION_DENIED"
  std::string error_reason;  // ErrorInfo reason, "SERVICE_DISABLED"
  std::string error_message;
};

// A service account whose JWTs /token accepts.
struct GcpServiceAccount {
  std::string email;
  std::string public_key_pem;  // PEM public key (or certificate) of its key
};

struct GcpScenario {
  std::string project = "gpuscaler-test";
  std::vector<std::string> zones = {"us-central1-a", "us-central1-b", "us-central1-c"};
  // The `aud` a JWT must carry; empty: any URL ending in "/token".
  std::string token_audience;
  std::vector<GcpServiceAccount> service_accounts;
  std::string metadata_account;            // the metadata server's default account (email)
  std::vector<std::string> access_tokens;  // always-valid Bearer tokens (tests)
  Seconds token_lifetime{3600};
  Seconds operation_latency{2};  // an operation is RUNNING this long
  Seconds boot_latency{20};      // DONE insert to RUNNING
  Seconds delete_latency{5};     // delete request to gone
  Seconds stop_latency{10};      // STOPPING / SUSPENDING to TERMINATED / SUSPENDED
  Seconds start_latency{60};     // startInstances / resumeInstances to RUNNING (a warm start)
  // Compute Engine cannot suspend instances with GPUs attached
  // (suspend-resume-instance#limitations); true lets the emulator do it.
  bool gpu_suspend = false;
  Seconds mig_retry_interval{10};
  std::vector<GcpCapacityLimit> capacity;
  std::vector<GcpQuota> quotas;
  std::vector<GcpPreemption> preemptions;
  std::vector<GcpManagedGroup> groups;
  std::vector<GcpReservation> reservations;
  // GPUs per machine type, for quota ("a2-highgpu-2g" -> {NVIDIA_A100_GPUS, 2});
  // the accelerator-optimized series are known without it.
  std::map<std::string, std::pair<std::string, int>> machine_gpus;
  GcpBillingCatalog billing_catalog;
  int throttle_every = 0;
  double throttle_rate = 0;
  double server_error_rate = 0;
  uint64_t seed = 1;
};

// "aws", "gcp" or "azure": the scenario file's `provider` key ("" when it has none),
// so the CLI knows which emulator a file is for; kConfig for another value.
Result<std::string> EmulatorScenarioProvider(const std::string& text);

// A GCP scenario file (YAML or JSON; docs/gcp-emulator.md lists the keys).
// Errors name the key path and, for YAML, the line. `base_dir` resolves
// relative `public_key_file` paths.
Result<GcpScenario> ParseGcpScenario(const std::string& text, const std::string& base_dir = ".");

// The GPUs a machine type carries as (quota metric, count), from `machine_gpus`
// or the A2/A3/G2/G4 naming; {"", 0} when unknown.
std::pair<std::string, int> GcpMachineGpus(const GcpScenario& s, const std::string& machine_type);

// One instance, for tests and the CLI's state dump.
struct GcpInstanceInfo {
  std::string name;
  std::string zone;
  std::string machine_type;
  // PROVISIONING, STAGING, RUNNING, STOPPING, TERMINATED, SUSPENDING, SUSPENDED
  std::string status;
  std::string provisioning_model;
  std::string termination_action;
  std::string group;  // managed instance group, or ""
  std::map<std::string, std::string> labels;
  bool deleted = false;
};

struct GcpEmulatorStats : RequestStats {
  int tokens_issued = 0;
  int created = 0;
  int preempted = 0;
  int billing_calls = 0;  // Cloud Billing Catalog calls answered (errors too)
};

// A VM as the emulator keeps it: what the API shows, and when it changes
// state.
struct GcpInstanceRecord {
  GcpInstanceInfo info;
  uint64_t id = 0;
  WallTime created{};
  WallTime staged_at{};             // PROVISIONING -> STAGING
  WallTime running_at{};            // STAGING -> RUNNING
  std::optional<WallTime> stop_at;  // STOPPING from here
  std::optional<WallTime> end_at;   // then TERMINATED (SUSPENDED) or gone
  bool remove_at_end = false;       // gone at end_at (else TERMINATED)
  bool suspend = false;             // the stop is a suspension: SUSPENDING, then SUSPENDED
  bool preempted = false;
  std::vector<std::pair<std::string, int>> accelerators;      // guestAccelerators (type, count)
  std::vector<std::pair<std::string, int>> gpus;              // (quota metric, count)
  std::vector<std::pair<std::string, std::string>> metadata;  // metadata.items (key, value)
  std::vector<std::string> resource_policies;                 // URLs, as instances.get shows them
  GcpReservationAffinity reservation_affinity;
  // The reservation (index into the scenario's) whose slot it holds while
  // live; nullopt: none (on-demand capacity, subject to limits and quota).
  std::optional<size_t> reservation;
};

// Instances() lists every instance ever created (deleted ones included),
// oldest first.
class GcpEmulator : public EmulatorCore<GcpScenario, GcpInstanceRecord, GcpEmulatorStats> {
 public:
  GcpEmulator(GcpScenario scenario, const Clock& clock);

  EmulatorResponse Handle(const EmulatorRequest& request);

  // Makes zoneOperations.wait block, as Compute Engine's does, until the
  // operation is DONE or `cap` has passed, calling `sleep` (without the
  // lock held) between looks. Without this, wait answers at once with the
  // current state, which the API also allows (unit tests; a server with one
  // thread). The HTTP server must then run wait requests off its I/O thread.
  // `sleep` returns false to end every wait at once (shutting down).
  void EnableBlockingWait(Seconds cap, std::function<bool(std::chrono::milliseconds)> sleep);
  // Whether `request` is a zoneOperations.wait call (for the server's slow-request pool).
  static bool IsWait(const EmulatorRequest& request);

  // Preempts a RUNNING Spot VM now (kNotFound otherwise).
  Status Preempt(const std::string& zone, const std::string& name, Seconds notice = Seconds(30));

 private:
  using Instance = GcpInstanceRecord;
  struct OpError {
    std::string code;
    std::string message;
    std::string details_json;  // errorDetails, "" for none
  };
  struct Operation {
    uint64_t id = 0;
    std::string name;
    std::string zone;
    std::string region;  // a regional operation's (its zone then empty)
    std::string type;  // "insert", "compute.instanceGroupManagers.resize", …
    std::string target_link;
    uint64_t target_id = 0;
    std::string user;
    std::string request_id;
    WallTime insert_time{};
    WallTime done_at{};
    std::vector<OpError> errors;
    int http_error = 0;
    std::string status_message;
    std::string metadata_json;  // instancesBulkInsertOperationMetadata, "" for none
  };
  // A member's place in the group's standby pools.
  enum class Standby { kNone, kStopped, kSuspended };
  struct Member {
    std::string name;
    std::optional<size_t> instance;  // index into instances_
    bool deleting = false;
    bool recreating = false;
    // In the stopped or suspended pool (out of targetSize), stopping or at rest.
    Standby standby = Standby::kNone;
    // Started (kStopped) or resumed (kSuspended) and not RUNNING yet: woken
    // once its VM is at rest and capacity allows (next_try).
    Standby waking = Standby::kNone;
    WallTime next_try{};
    std::vector<OpError> last_errors;
    // createInstances' preservedState.metadata: metadata items of its VM
    // (and of a recreated one).
    std::vector<std::pair<std::string, std::string>> metadata;
  };
  struct Group {
    GcpManagedGroup spec;
    uint64_t id = 0;
    WallTime created{};
    std::vector<Member> members;
  };
  struct Token {
    std::string email;
    WallTime expires{};
  };
  struct Path;  // a parsed /compute/v1 path (gcp_impl.h)

  // State (gcp_state.cc). Everything below runs with mu_ held.
  void AdvanceLocked(WallTime now);
  void PreemptLocked(Instance& i, Seconds notice, WallTime at);
  std::string StatusOf(const Instance& i, WallTime now) const;
  bool Live(const Instance& i, WallTime now) const;
  // The GPUs (quota metric, count) an instance of this shape holds.
  std::vector<std::pair<std::string, int>> GpusOf(
      const std::string& machine_type, const std::string& model,
      const std::vector<std::pair<std::string, int>>& accelerators) const;
  // Why a new instance cannot be created now (nullopt when it can).
  std::optional<OpError> Refusal(const std::string& zone, const std::string& machine_type,
                                 const std::string& model,
                                 const std::vector<std::pair<std::string, int>>& gpus, WallTime now) const;
  // What an instance of this shape and affinity consumes in `zone`: the
  // reservation index (nullopt: none, plain capacity), or the error that
  // stops its creation (CONDITION_NOT_MET) in *error (gcp_reservations.cc).
  std::optional<size_t> PickReservation(const std::string& zone, const std::string& machine_type,
                                        const std::string& model, const GcpReservationAffinity& affinity,
                                        WallTime now, std::optional<OpError>* error) const;
  // Live instances holding a slot of reservation `r`, plus those elsewhere.
  int ReservationInUse(size_t r, WallTime now) const;
  bool ReservationExists(size_t r, WallTime now) const;
  size_t CreateInstance(const std::string& zone, const std::string& name, const std::string& machine_type,
                        const std::string& model, const std::string& action,
                        const std::map<std::string, std::string>& labels, const std::string& group,
                        std::vector<std::pair<std::string, int>> accelerators, WallTime now,
                        std::vector<std::pair<std::string, std::string>> metadata = {});
  void DeleteInstance(Instance& i, WallTime now);
  void TryCreateMember(Group& g, Member& m, WallTime now);
  Instance* FindInstance(const std::string& zone, const std::string& name);
  Group* FindGroup(const std::string& zone, const std::string& name);
  Operation& NewOperation(const std::string& zone, const std::string& type, const std::string& target_link,
                          uint64_t target_id, const std::string& request_id, WallTime now);
  uint64_t NewId();
  std::string Url(const std::string& path) const;  // "projects/p/…" -> the selfLink
  // One page of an aggregatedList of `kind` ("instance", "reservation"):
  // `items` by "zones/Z" scope, a NO_RESULTS_ON_PAGE warning for each zone
  // without any on the page, and the next page's token when the page ends
  // at `end` of `total`.
  EmulatorResponse AggregatedPage(const std::string& kind, nlohmann::json items, size_t end, size_t total) const;

  // Wire shapes (gcp_json.cc).
  std::string InstanceJson(const Instance& i, WallTime now) const;
  std::string OperationJson(const Operation& op, WallTime now) const;
  std::string GroupJson(const Group& g, WallTime now) const;
  std::string MemberJson(const Group& g, const Member& m, WallTime now) const;
  std::string StateJson() const;  // GET /_emulator/state
  std::string ReservationJson(size_t r, WallTime now) const;

  // reservations.get / list (zones/{z}/reservations[/{name}]) and
  // aggregated/reservations; instanceTemplates.get (gcp_reservations.cc).
  EmulatorResponse ZoneReservations(const EmulatorRequest& request, const Path& path,
                                    const std::string& query, WallTime now);
  EmulatorResponse AggregatedReservations(const std::string& query, WallTime now);
  EmulatorResponse InstanceTemplateGet(const std::string& name) const;

  // The Cloud Billing Catalog (gcp_billing.cc): `path` starts with /v1/.
  EmulatorResponse BillingCatalog(const EmulatorRequest& request, const std::string& path,
                                  const std::string& query, WallTime now);

  // Auth (gcp_auth.cc).
  EmulatorResponse TokenEndpoint(const EmulatorRequest& request, WallTime now);
  EmulatorResponse Metadata(const EmulatorRequest& request, const std::string& path, WallTime now);
  std::optional<EmulatorResponse> CheckBearer(const EmulatorRequest& request, WallTime now);
  std::string IssueToken(const std::string& email, WallTime now);

  // Routing and the Compute calls (gcp_emulator.cc).
  EmulatorResponse Dispatch(const EmulatorRequest& request, WallTime now);
  EmulatorResponse Compute(const EmulatorRequest& request, const Path& path, WallTime now);
  EmulatorResponse BulkInsert(const Path& path, const std::string& body, const std::string& request_id,
                              WallTime now);
  EmulatorResponse DeleteOne(const Path& path, const std::string& request_id, WallTime now);
  EmulatorResponse AggregatedList(const Path& path, const std::string& query, WallTime now);
  EmulatorResponse ListOperations(const Path& path, const std::string& query, WallTime now);
  EmulatorResponse RegionGet(const std::string& region, WallTime now);
  // projects/{project}/regions/{region}/{collection}[/{name}[/{verb}]]:
  // resourcePolicies (get, insert) and regional operations (get, wait)
  // (gcp_policies.cc).
  EmulatorResponse Regional(const EmulatorRequest& request, const std::string& region, const std::string& collection,
                            const std::string& name, const std::string& verb, const std::string& query,
                            WallTime now);
  EmulatorResponse InsertResourcePolicy(const std::string& region, const std::string& body,
                                        const std::string& request_id, WallTime now);
  // The quota limit of (region, metric) in force now, or nullopt (unlimited).
  std::optional<double> QuotaLimit(const std::string& region, const std::string& metric, WallTime now) const;
  double QuotaUsage(const std::string& region, const std::string& metric, WallTime now) const;
  // The instanceGroupManagers calls (gcp_groups.cc).
  EmulatorResponse GroupCall(const EmulatorRequest& request, const Path& path, const std::string& query,
                             const std::string& request_id, WallTime now);
  // The standby actions (gcp_standby.cc): stopInstances, suspendInstances,
  // startInstances, resumeInstances of group `g`.
  static bool IsStandbyVerb(const std::string& verb);
  EmulatorResponse StandbyCall(const EmulatorRequest& request, const Path& path, Group& g,
                               const std::string& request_id, WallTime now);
  // Why `verb` cannot take member `m` now ("" when it can).
  std::string StandbyRefusal(const Member& m, const std::string& verb, WallTime now) const;
  // Starts or resumes a waking member's VM at rest, or records why not.
  void WakeMember(Group& g, Member& m, WallTime now);
  // A waking member: woken when due, done once RUNNING (from AdvanceLocked).
  void AdvanceStandby(Group& g, Member& m, WallTime now);
  // The operation an earlier call with `request_id` made, as the answer.
  std::optional<EmulatorResponse> Replay(const std::string& request_id, WallTime now);

  std::deque<Operation> operations_;
  std::map<std::string, size_t> ops_by_name_;        // "zone/name" -> index
  std::map<std::string, size_t> ops_by_request_id_;  // requestId -> index
  struct ResourcePolicy {
    uint64_t id = 0;
    std::string region;
    std::string name;
    std::string description;
    std::string collocation;  // groupPlacementPolicy.collocation
    WallTime created{};
  };
  std::map<std::string, ResourcePolicy> resource_policies_;  // by "<region>/<name>"
  std::vector<uint64_t> reservation_ids_;                    // by scenario index
  std::vector<Group> groups_;
  std::map<std::string, Token> tokens_;
  std::vector<int> preemptions_left_;
  Seconds wait_cap_{0};
  std::function<bool(std::chrono::milliseconds)> wait_sleep_;
};

}  // namespace gpuscaler::sim
