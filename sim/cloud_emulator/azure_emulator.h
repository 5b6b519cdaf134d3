// AzureEmulator: a pure request handler speaking the subset of Azure
// Resource Manager (AKS agent pools and machines, Compute virtual machine
// scale sets and their VMs), Microsoft Entra ID's token endpoint and the
// Instance Metadata Service that an AKS/VMSS autoscaler uses, with ARM's
// wire shapes (resource ids, `{"error":{"code","message"}}` bodies, ETags,
// long-running operations), so that both our Azure provider and Azure's
// own SDKs can drive it. docs/azure-emulator.md describes it.
//
//  - Auth: POST /{tenant}/oauth2/v2.0/token (client_credentials with a
//    client_secret, or a client_assertion: a JWT signed with the client's
//    certificate, or a federated token from the issuer and subject the
//    scenario names; audience and expiry checked) and the IMDS managed
//    identity token, GET /metadata/identity/oauth2/token (header
//    `Metadata: true`). Every ARM call needs a live token (401 otherwise).
//  - AKS (api-version 2026-06-01 and any other): managedClusters GET (tags);
//    agentPools list / get / create-or-update (PUT) / delete, with
//    properties.eTag and If-Match, one operation per pool at a time (409);
//    agentPools/{p}/deleteMachines; agentPools/{p}/machines list / get. A
//    pool is backed by a scale set `aks-{pool}-{8 digits}-vmss` in the
//    cluster's node resource group (MC_…, with the aks-managed tags), which
//    the Compute calls also show.
//  - Compute (api-version 2026-04-01 and any other): virtualMachineScaleSets
//    get / create-or-update (PUT) / update (PATCH) / delete, with ETags and
//    If-Match (412 PreconditionFailed); …/virtualMachines list (and
//    $expand=instanceView), get, instanceView; POST …/delete {instanceIds}
//    (forceDeletion).
//  - Long-running operations: a mutating call answers 200/201 with
//    Azure-AsyncOperation (PUT, PATCH) or 202 with Azure-AsyncOperation and
//    Location (DELETE, POST), and Retry-After; the operation is InProgress
//    for `operation_latency`, then Succeeded or Failed with its error; the
//    resource shows provisioningState Creating / Updating / Deleting until
//    then.
//  - Scenario: capacity limits per (VM size, zone, priority) failing with
//    AllocationFailed, OverconstrainedAllocationRequest (in the operation's
//    final status), SkuNotAvailable or QuotaExceeded (synchronous 409 for a
//    scale set; in the operation for an agent pool); throttling (429 with
//    Retry-After); Spot evictions, announced in IMDS scheduled events
//    (GET /metadata/scheduledevents) `notice` ahead.
//  - The emulator's own GET /_emulator/state and POST /_emulator/evictions
//    (azure_control.cc), for process tests.
//
// Time comes only from the Clock. Thread-safe: Handle() serialises on a
// mutex.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "gpuscaler/model/clock.h"
#include "gpuscaler/status.h"
#include "sim/cloud_emulator/emulator.h"
#include "sim/cloud_emulator/emulator_core.h"

namespace gpuscaler::sim {

// A limit on live VMs of a size in a zone (empty fields match anything);
// VMs beyond it are refused with `error_code`: AllocationFailed,
// OverconstrainedAllocationRequest, SkuNotAvailable or QuotaExceeded.
struct AzureCapacityLimit {
  std::string vm_size;
  std::string zone;      // "1", "2", "3"
  std::string priority;  // "", "Regular" or "Spot"
  int limit = 0;
  std::string error_code = "AllocationFailed";
  std::optional<Seconds> from;  // active from start + from (default: always)
  std::optional<Seconds> until;
};

// At `at`, a Spot VM of a scale set (by name) or of an AKS pool
// (cluster/pool) is evicted: the named instance, else the oldest live Spot
// VM. Its Preempt event shows in IMDS scheduled events from at - notice.
struct AzureEviction {
  Seconds at{0};
  std::string scale_set;
  std::string cluster;
  std::string pool;
  std::string instance_id;  // "" : the oldest live Spot VM
  Seconds notice{30};
};

// An application (service principal) the token endpoint knows.
struct AzureClient {
  std::string client_id;
  std::string client_secret;    // "" : no secret accepted
  std::string certificate_pem;  // verifies client assertions it signs ("" : none)
  // A federated credential: a client_assertion from this issuer for this
  // subject and audience is accepted (signature checked with
  // federated_key_pem when given).
  std::string federated_issuer;
  std::string federated_subject;
  std::string federated_audience = "api://AzureADTokenExchange";
  std::string federated_key_pem;
};

// A virtual machine scale set (Uniform orchestration).
struct AzureScaleSetSpec {
  std::string resource_group;
  std::string name;
  std::string vm_size = "Standard_NC4as_T4_v3";
  std::string priority = "Regular";  // or Spot
  std::string eviction_policy;       // Spot: Delete (default) or Deallocate
  double max_price = -1;             // billingProfile.maxPrice; -1: up to on-demand
  std::vector<std::string> zones;
  std::map<std::string, std::string> tags;
  int capacity = 0;
};

// An AKS agent pool (of a cluster).
struct AzureAgentPoolSpec {
  std::string name;
  std::string vm_size = "Standard_NC4as_T4_v3";
  int count = 0;
  std::string mode = "User";         // or System
  std::string priority = "Regular";  // scaleSetPriority: Regular or Spot
  std::string eviction_policy;       // scaleSetEvictionPolicy: Delete or Deallocate
  double spot_max_price = -1;
  std::vector<std::string> zones;                // availabilityZones
  std::map<std::string, std::string> node_labels;
  std::vector<std::string> node_taints;          // "key=value:NoSchedule"
  std::map<std::string, std::string> tags;
};

struct AzureClusterSpec {
  std::string resource_group;
  std::string name;
  std::string node_resource_group;  // default MC_{rg}_{name}_{location}
  std::string kubernetes_version = "1.33.2";
  std::map<std::string, std::string> tags;
  std::vector<AzureAgentPoolSpec> pools;
};

struct AzureScenario {
  std::string subscription = "00000000-0000-0000-0000-000000000001";
  std::string tenant = "00000000-0000-0000-0000-0000000000aa";
  std::string location = "eastus";
  std::vector<AzureClient> clients;
  // The client_id of the IMDS managed identity ("" : IMDS has none).
  std::string managed_identity_client_id;
  std::vector<std::string> access_tokens;  // always-valid Bearer tokens (tests)
  Seconds token_lifetime{3600};
  Seconds operation_latency{2};  // an operation is InProgress this long
  Seconds retry_after{1};        // Retry-After on accepted operations
  std::vector<AzureClusterSpec> clusters;
  std::vector<AzureScaleSetSpec> scale_sets;
  std::vector<AzureCapacityLimit> capacity;
  std::vector<AzureEviction> evictions;
  int throttle_every = 0;
  double throttle_rate = 0;
  Seconds throttle_retry_after{5};
  double server_error_rate = 0;
  uint64_t seed = 1;
};

// An Azure scenario file (YAML or JSON; docs/azure-emulator.md lists the
// keys). Errors name the key path and, for YAML, the line. `base_dir`
// resolves relative *_file paths.
Result<AzureScenario> ParseAzureScenario(const std::string& text, const std::string& base_dir = ".");

// One VM, for tests and the CLI's state dump.
struct AzureVmInfo {
  std::string resource_group;
  std::string scale_set;
  std::string instance_id;
  std::string name;           // "{scale set}_{instance id}", as ARM names it
  std::string computer_name;  // the node name for an AKS pool
  std::string zone;
  std::string vm_size;
  std::string priority;
  bool evicted = false;
  bool deleted = false;
};

struct AzureEmulatorStats : RequestStats {
  int tokens_issued = 0;
  int created = 0;
  int evicted = 0;
  int precondition_failures = 0;
};

struct AzureVmRecord {
  AzureVmInfo info;
  std::string vm_id;  // properties.vmId
  WallTime created{};
  WallTime ready_at{};              // Creating -> Succeeded, running
  std::optional<WallTime> gone_at;  // Deleting from delete_from, gone here
  WallTime delete_from{};
  std::optional<WallTime> deallocated_at;  // evicted with Deallocate
  int ip = 0;                              // the last octets of its private address
  // Its group's tags (an agent pool's own) when the write that made it
  // landed: process tests tell from them which write made which VM.
  std::map<std::string, std::string> group_tags;
};

class AzureEmulator : public EmulatorCore<AzureScenario, AzureVmRecord, AzureEmulatorStats> {
 public:
  AzureEmulator(AzureScenario scenario, const Clock& clock);

  EmulatorResponse Handle(const EmulatorRequest& request);

  // Schedules a Spot eviction as a scenario `evictions` entry would, at
  // now + e.notice (e.at is ignored): announced at once in scheduled
  // events. kNotFound when the scale set or pool has no live Spot VM that
  // matches.
  Status ScheduleEviction(AzureEviction e);

  // The scheme of the URLs the emulator hands out (Azure-AsyncOperation,
  // Location): "https" (the default) or "http". The host is the request's
  // Host header.
  void SetScheme(std::string scheme);

 private:
  using Vm = AzureVmRecord;
  struct Operation {
    std::string id;
    std::string provider;  // "Microsoft.Compute" or "Microsoft.ContainerService"
    WallTime start{};
    WallTime done_at{};
    std::string error_code;  // "" : Succeeded
    std::string error_message;
  };
  struct ScaleSet {
    AzureScaleSetSpec spec;
    std::string unique_id;
    WallTime created{};
    int etag = 1;
    int next_instance = 0;
    std::vector<size_t> vms;  // indexes into instances_, oldest first
    // provisioningState: busy_state until busy_until, then final_state.
    std::string busy_state;
    WallTime busy_until{};
    std::string final_state = "Succeeded";
    std::string error_code;  // of the last operation, when it failed
    std::string error_message;
    std::optional<WallTime> deleted_at;  // gone from here
    // Set when the scale set backs an AKS pool.
    std::optional<size_t> cluster;
    AzureAgentPoolSpec pool;
    std::string node_prefix;  // "aks-{pool}-{digits}-vmss"
  };
  struct Token {
    std::string client_id;
    WallTime expires{};
  };
  // A Preempt event of IMDS scheduled events.
  struct ScheduledEvent {
    std::string event_id;
    size_t eviction = 0;  // the scenario's
    size_t vm = 0;
    WallTime noticed{};
    WallTime not_before{};
  };
  // A parsed ARM path: /subscriptions/{sub}/resourceGroups/{rg}/providers/
  // {namespace}/{type}/{name}[/{rest}…] (lower-cased type and rest words).
  struct ArmPath {
    std::string resource_group;
    std::string ns;    // "microsoft.compute"
    std::string type;  // "virtualmachinescalesets", "managedclusters"
    std::string name;
    std::vector<std::string> rest;  // as sent
  };

  // Routing, throttling, operations (azure_emulator.cc).
  EmulatorResponse Dispatch(const EmulatorRequest& request, WallTime now);
  EmulatorResponse OperationStatus(const std::string& provider, const std::string& kind, const std::string& id,
                                   const EmulatorRequest& request, WallTime now);
  // A new operation ending at now + operation_latency (or `done_at`),
  // failed with `error_code` when that is set.
  Operation& NewOperation(const std::string& provider, WallTime now, const std::string& error_code = "",
                          const std::string& error_message = "");
  // The Azure-AsyncOperation (and for 202s Location) and Retry-After
  // headers of `op`, added to `response`.
  void AddLroHeaders(const EmulatorRequest& request, const Operation& op, bool location,
                     EmulatorResponse* response) const;
  std::string BaseUrl(const EmulatorRequest& request) const;
  // GET of a collection of `type` ("microsoft.compute/virtualmachinescalesets",
  // "microsoft.containerservice/managedclusters") in resource group `rg`
  // ("" : the subscription's).
  EmulatorResponse ListResources(const std::string& rg, const std::string& type, WallTime now);

  // The emulator's own endpoints, not Azure's (azure_control.cc): GET
  // /_emulator/state (every VM and scale set, and the counters) and POST
  // /_emulator/evictions (ScheduleEviction from a JSON body). No token.
  EmulatorResponse Control(const EmulatorRequest& request, const std::string& path, WallTime now);
  std::string StateJson(WallTime now) const;
  Status ScheduleEvictionLocked(AzureEviction e, WallTime now);

  // Auth and IMDS (azure_auth.cc).
  EmulatorResponse TokenEndpoint(const EmulatorRequest& request, const std::string& tenant, WallTime now);
  EmulatorResponse ClientAssertion(const AzureClient& client, const std::string& assertion,
                                   const std::string& tenant, WallTime now);
  EmulatorResponse ImdsToken(const EmulatorRequest& request, WallTime now);
  EmulatorResponse ScheduledEvents(const EmulatorRequest& request, WallTime now);
  std::optional<EmulatorResponse> CheckBearer(const EmulatorRequest& request, WallTime now);
  std::string IssueToken(const std::string& client_id, WallTime now);

  // State (azure_state.cc). Everything below runs with mu_ held.
  void AdvanceLocked(WallTime now);
  void Evict(Vm& vm, ScaleSet& s, WallTime at);
  std::optional<size_t> EvictionTarget(const AzureEviction& e, WallTime now);
  bool Live(const Vm& vm, WallTime now) const;  // exists and not being deleted
  bool Exists(const Vm& vm, WallTime now) const;
  int LiveCount(const ScaleSet& s, WallTime now) const;
  // The first limit a new VM of this shape in `zone` would break (nullptr
  // when none).
  const AzureCapacityLimit* Refusal(const std::string& vm_size, const std::string& zone, const std::string& priority,
                                    WallTime now) const;
  // Moves the live VMs of `s` to `target`: creates (in the least-used
  // allowed zone; ready when `op` ends) or deletes the newest. VMs that find
  // no capacity are not made: their limit comes back (nullptr when all fit).
  const AzureCapacityLimit* ScaleTo(ScaleSet& s, int target, const Operation& op, WallTime now);
  // Deletes VM `vm` of `s` (gone when `op` ends, or at once when `force`).
  void DeleteVm(ScaleSet& s, size_t vm, const Operation& op, bool force, WallTime now);
  // Marks `s` busy with `state` until `op` ends, Failed after when it fails.
  void MarkBusy(ScaleSet& s, const std::string& state, const Operation& op);
  std::string ProvisioningState(const ScaleSet& s, WallTime now) const;
  ScaleSet* FindScaleSet(const std::string& rg, const std::string& name, WallTime now);
  ScaleSet* FindPool(size_t cluster, const std::string& pool, WallTime now);
  std::optional<size_t> FindCluster(const std::string& rg, const std::string& name) const;
  size_t AddScaleSet(AzureScaleSetSpec spec, std::optional<size_t> cluster, const AzureAgentPoolSpec* pool,
                     WallTime now);
  // A new VM of `s` in `zone`, Succeeded and running from `ready_at`.
  void AddVm(ScaleSet& s, const std::string& zone, WallTime ready_at, WallTime now);
  // GET /subscriptions/{s}/resourceGroups/{rg}: the groups of the scale
  // sets and clusters (a node resource group with its aks-managed tags).
  EmulatorResponse ResourceGroupGet(const std::string& rg, WallTime now) const;
  std::string NewUuid();
  std::string NodeResourceGroup(size_t cluster) const;
  // The ARM id of a resource group's resource ("/subscriptions/…").
  std::string ResourceId(const std::string& rg, const std::string& provider_path) const;
  static std::string ErrorMessage(const AzureCapacityLimit& limit, const std::string& vm_size,
                                  const std::string& location);

  // Compute (azure_vmss.cc).
  EmulatorResponse ScaleSetCall(const EmulatorRequest& request, const ArmPath& path,
                                const std::map<std::string, std::string>& query, WallTime now);
  EmulatorResponse PutScaleSet(const EmulatorRequest& request, const ArmPath& path, ScaleSet* existing,
                               WallTime now);
  // Scales scale set `index` to `target` under a new operation (the
  // resource shows `state` until it ends) and answers `status` with the
  // scale set; a synchronous capacity error (SkuNotAvailable,
  // QuotaExceeded) drops the VMs made since instances_ had `vms_before`
  // and answers 409.
  EmulatorResponse ApplyScale(const EmulatorRequest& request, size_t index, int target, const std::string& state,
                              int status, size_t vms_before, WallTime now);
  EmulatorResponse PatchScaleSet(const EmulatorRequest& request, ScaleSet& s, WallTime now);
  EmulatorResponse DeleteInstances(const EmulatorRequest& request, ScaleSet& s, bool force, WallTime now);
  EmulatorResponse VmCall(const EmulatorRequest& request, const ArmPath& path, ScaleSet& s,
                          const std::map<std::string, std::string>& query, WallTime now);
  std::string ScaleSetJson(const ScaleSet& s, WallTime now) const;
  std::string VmJson(const ScaleSet& s, const Vm& vm, bool instance_view, WallTime now) const;
  std::string InstanceViewJson(const Vm& vm, WallTime now) const;

  // AKS (azure_aks.cc).
  EmulatorResponse ClusterCall(const EmulatorRequest& request, const ArmPath& path, WallTime now);
  EmulatorResponse PutAgentPool(const EmulatorRequest& request, size_t cluster, const std::string& name,
                                WallTime now);
  EmulatorResponse DeleteMachines(const EmulatorRequest& request, ScaleSet& s, WallTime now);
  EmulatorResponse MachineCall(const ArmPath& path, ScaleSet& s, WallTime now);
  std::string AgentPoolJson(const ScaleSet& s, WallTime now) const;
  std::string MachineJson(const ScaleSet& s, const Vm& vm) const;
  std::string ClusterJson(size_t cluster, WallTime now) const;

  std::string scheme_ = "https";
  std::vector<ScaleSet> scale_sets_;
  std::vector<Operation> operations_;
  std::map<std::string, size_t> ops_by_id_;
  std::map<std::string, Token> tokens_;
  std::vector<ScheduledEvent> events_;
  std::vector<bool> evictions_noticed_;  // by scenario index
  std::vector<bool> evictions_done_;
};

}  // namespace gpuscaler::sim
