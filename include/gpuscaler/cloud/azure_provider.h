// AzureProvider: the CloudProvider on Azure, with two drivers (one per
// installation, AzureProviderOptions::driver):
//   - kAks: AKS agent pools (Microsoft.ContainerService, the supported way
//     on AKS, where the node resource group MC_… is AKS's to manage). A
//     pool grows by a PUT of the agent pool with properties.count raised
//     (read, changed, written back with If-Match: its eTag); chosen nodes
//     leave by POST …/agentPools/{pool}/deleteMachines {machineNames},
//     which lowers the count; the inventory is …/agentPools/{pool}/machines.
//     An AKS machine's name is its Kubernetes node name
//     ("aks-gpu-12345678-vmss000003": the scale set's name and the instance
//     id in six base-36 digits), and is the Instance id.
//   - kVmss: VM Scale Sets (Microsoft.Compute, self-managed Kubernetes on
//     Azure, Uniform orchestration). A set grows by a PATCH of sku.capacity
//     with If-Match: its etag (412: read again and retry); chosen instances
//     leave by POST …/virtualMachineScaleSets/{name}/delete {instanceIds}
//     (forceDeletion when `force_deletion`), which lowers the capacity; the
//     inventory is …/virtualMachines?$expand=instanceView. The Instance id is
//     the VM's computer name (osProfile.computerName, the node's hostname and
//     so its Kubernetes node name). A scale set in an AKS-managed node
//     resource group (MC_…, or tagged aks-managed-*) is refused (kConfig):
//     AKS would undo the change; use the agent-pool driver.
//
// Pools: each policy pool names its agent pools / scale sets
// (AzurePoolTarget::groups). An offering goes to the first of them whose VM
// size is the offering's instance type, whose priority is Spot exactly when
// the offering is spot, and whose zones hold the offering's zone (a zone
// "eastus-2" or "2"; a group without zones takes any zone of the region).
// Spot groups are made by the operator (agent pool scaleSetPriority Spot,
// scaleSetEvictionPolicy Delete, spotMaxPrice; scale set priority Spot,
// evictionPolicy Delete, billingProfile.maxPrice -1) and only scaled here; a
// spot group with eviction policy Deallocate is refused (kConfig: its evicted
// VMs would keep counting as capacity). An agent pool with enableAutoScaling
// is refused (the cluster autoscaler owns its count).
//
// Ownership: a group is this installation's only when it carries the tag
// kAzureClusterTag = cluster_name (Azure tag names cannot hold '/', hence
// not kClusterTag); a group without it is refused (kConfig) and never listed
// or touched, so a second installation never touches the first's. A group
// tagged kAzurePoolTag must name the same policy pool.
//
// Idempotency and crash safety. Azure has no client token on a scale
// request, so a launch's token is written onto the group in the same
// request that raises its count (tags and count in one PUT/PATCH under
// If-Match, so both land or neither): the tag kAzureIntentsTag holds the
// last kAzureIntentsKept launches as "<hash>:<mark>:<count>" entries, <hash>
// the first 12 hex digits of the SHA-256 of the token, <mark> the highest
// instance ordinal the group had just before the raise and <count> how many
// nodes the raise asked for. A Launch whose token is already there raised
// the group before (a retry, or the replay after a crash): it raises
// nothing and returns the instances of that raise, those with ordinals
// above its mark (and, when a later raise followed, at most the next
// entry's mark), the first <count> of them. Instance ordinals (a scale
// set's instanceId, an AKS machine name's base-36 suffix) only grow, so a
// raise's instances are told apart by them. A raise that fails (412 after
// the retries, an error answer) changed nothing; one whose operation ends
// Failed with a capacity error keeps its intent entry (its replay raises
// nothing again) and gives back the count it did not get: a scale set's
// failed instances are deleted, an agent pool's count is set back to the
// machines that came up; the offering's error is kCapacity and the
// controller tries the next.
//
//  - Terminate: ids (node names) are looked up among this installation's
//    groups' members; unknown ids (gone, or another installation's) are
//    skipped; the rest leave group by group, the operation waited for.
//  - ListInstances: every owned group's members, sorted by id: state from
//    the VM's provisioningState and power state (Creating: kPending;
//    Deleting, deallocating or deallocated: kShuttingDown; else kRunning);
//    agent pool machines, which carry no state, are kRunning (kPending while
//    the pool is Creating, Scaling or Updating and the machine is among the newest
//    raise's). Instance::tags: kOwnerTag = the pool, kClusterTag = cluster
//    name, and kIntentTag = the token when this process launched it.
//  - PollInterruptions: for every owned Spot group, its scale set's VMs with
//    their instance view (an agent pool's scale set is found from its
//    machines' properties.resourceId, in the node resource group; reading it
//    needs Microsoft.Compute/virtualMachineScaleSets/virtualMachines/read
//    there, and without it, kAuth, there are no notices from this side:
//    docs/azure.md, Scheduled Events). A Spot VM being deleted or
//    deallocated that gpuscaler did not delete is being evicted: a notice
//    with deadline = now + `interruption_notice` (30 s, Azure's Preempt
//    notice); a Spot instance listed at the previous poll that is gone
//    without gpuscaler deleting it was evicted: a notice with deadline now.
//    Each instance once. A Spot instance listed by ListInstances that is
//    gone at its next call, not deleted by gpuscaler and not yet reported,
//    is listed that once more as kShuttingDown, so that the poll that
//    reports it finds the node still listed.
//  - SpotPrices: none (the catalog's prices stand).
// Throttles and 5xx are retried by the AzureClient. Not thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "gpuscaler/cloud/azure_client.h"
#include "gpuscaler/cloud/provider.h"

namespace gpuscaler::cloud {

inline constexpr const char* kAzureClusterTag = "gpuscaler-cluster";
inline constexpr const char* kAzurePoolTag = "gpuscaler-pool";
inline constexpr const char* kAzureIntentsTag = "gpuscaler-intents";
inline constexpr int kAzureIntentsKept = 8;

enum class AzureDriver { kAks, kVmss };

// One policy pool's agent pools (kAks) or scale sets (kVmss), by name.
struct AzurePoolTarget {
  std::vector<std::string> groups;
};

struct AzureProviderOptions {
  std::string cluster_name;  // this installation (required)
  std::string subscription_id;
  std::string resource_group;  // of the AKS cluster (kAks) or of the scale sets (kVmss)
  std::string aks_cluster;     // kAks: the managed cluster's name
  std::string location;        // the region ("eastus"), for offerings
  AzureDriver driver = AzureDriver::kAks;
  std::map<std::string, AzurePoolTarget> pools;
  bool force_deletion = false;  // kVmss: forceDeletion=true on instance deletes
  std::chrono::seconds interruption_notice{30};
};

class AzureProvider final : public CloudProvider {
 public:
  // `client` must outlive the provider.
  AzureProvider(AzureProviderOptions options, AzureClient& client);

  Result<LaunchResult> Launch(const LaunchRequest& request) override;
  Status Terminate(const std::vector<std::string>& instance_ids) override;
  Result<std::vector<Instance>> ListInstances() override;
  Result<std::vector<InterruptionNotice>> PollInterruptions() override;
  Result<std::vector<SpotPrice>> SpotPrices(WallTime since) override;

  // The first 12 hex digits of the SHA-256 of a launch token.
  static std::string IntentHash(std::string_view token);
  // The ordinal of an AKS machine name: its last six characters read as
  // base 36 ("…vmss00000a" -> 10); nullopt when they are not.
  static std::optional<int64_t> MachineOrdinal(std::string_view name);

  // A launch recorded on a group (kAzureIntentsTag).
  struct Intent {
    std::string hash;
    int64_t mark = -1;
    int count = 0;
  };
  static std::vector<Intent> ParseIntents(std::string_view tag);
  static std::string FormatIntents(const std::vector<Intent>& intents);

 private:
  // An agent pool or a scale set, as read.
  struct Group {
    std::string name;
    nlohmann::json resource;  // as read (written back, changed, by the AKS PUT)
    std::string etag;
    std::string vm_size;
    bool spot = false;
    std::string eviction_policy;
    std::vector<std::string> zones;
    int count = 0;
    std::map<std::string, std::string> tags;
    std::string provisioning_state;
    bool autoscaling = false;
    std::string resource_group;  // kVmss: the set's; kAks: resource_group
  };
  // One node of a group.
  struct Member {
    std::string id;        // node name
    std::string vm_id;     // kVmss: instanceId; kAks: the machine's VM resource id
    int64_t ordinal = -1;  // grows with creation
    std::string zone;      // "1", or ""
    InstanceState state = InstanceState::kRunning;
    bool failed = false;    // provisioningState Failed
    bool evicting = false;  // a Spot VM deleting or deallocating that we did not delete
    std::optional<WallTime> created;
  };
  struct Known {
    std::string pool;
    std::string group;
    bool spot = false;
  };

  std::string GroupPath(const std::string& name) const;
  // Every configured group that is this installation's, with its pool;
  // groups that are gone or not ours are left out.
  Result<std::vector<std::pair<std::string, Group>>> OwnedGroups();
  Result<Group> ReadGroup(const std::string& name);
  Group ParseAgentPool(const std::string& name, const nlohmann::json& r) const;
  Group ParseScaleSet(const std::string& name, const nlohmann::json& r) const;
  Result<std::vector<Member>> Members(const Group& group);
  Result<std::vector<Member>> ScaleSetVms(const std::string& resource_group, const std::string& scale_set);
  // kConfig when the group is not this installation's, not `pool`'s, or of
  // a kind gpuscaler does not scale (AKS-managed scale set, autoscaled
  // agent pool, Deallocate spot group).
  Status CheckGroup(const Group& group, const std::string& pool) const;
  bool Matches(const Group& group, const Offering& offering) const;
  // Writes count and tags (with If-Match); 412: reads the group again into
  // *group and says so (false).
  Result<AzureOutcome> WriteCount(Group* group, int count, const std::map<std::string, std::string>& tags);
  // One offering's part of a launch: the raise (or the replay) on `group`.
  Result<LaunchResult> LaunchOn(const LaunchRequest& request, const Offering& offering, const std::string& group,
                                int missing);
  // The instances of the intent with `hash` among `members`.
  std::vector<Member> IntentMembers(const std::vector<Intent>& intents, const std::string& hash,
                                    std::vector<Member> members) const;
  // After a failed raise: give back what did not come up (see the header).
  Status GiveBack(Group* group, int before, const std::vector<Member>& came);
  Status DeleteMembers(const Group& group, const std::vector<Member>& members);
  // The drivers' halves of Members, WriteCount and DeleteMembers
  // (azure_provider_aks.cc, azure_provider_vmss.cc).
  Result<std::vector<Member>> AgentPoolMachines(const Group& group);
  Result<AzureOutcome> WriteAgentPool(const Group& group, int count, const std::map<std::string, std::string>& tags);
  Status DeleteMachines(const Group& group, const std::vector<Member>& members);
  Result<AzureOutcome> WriteScaleSet(const Group& group, int count, const std::map<std::string, std::string>& tags);
  Status DeleteScaleSetVms(const Group& group, const std::vector<Member>& members);
  // A Spot group's VMs with their instance view, for evictions: the set's
  // own (kVmss) or, for an agent pool, the scale set behind its machines.
  Result<std::vector<Member>> SpotVms(const Group& group);
  Instance ToInstance(const std::string& pool, const Group& group, const Member& member) const;

  AzureProviderOptions options_;
  AzureClient& client_;
  // Node names this process launched -> the launch token; the tokens of
  // its launches by IntentHash (a raise's nodes that come up after its
  // Launch returned are tagged when listed).
  std::map<std::string, std::string> launched_;
  std::map<std::string, std::string> tokens_;
  // Node names this process deleted (not evictions).
  std::set<std::string> deleting_;
  // Spot instances at the last poll, with their group; notices already sent.
  std::map<std::string, Known> spot_seen_;
  std::set<std::string> noticed_;
  std::map<std::string, WallTime> first_seen_;
  // Spot instances at the last listing: one evicted since shows once more,
  // shutting down, until a poll has reported it.
  std::map<std::string, Instance> spot_listed_;
  // Agent pools whose scale set could not be read (no rights): not retried.
  std::set<std::string> unreadable_;
};

}  // namespace gpuscaler::cloud
