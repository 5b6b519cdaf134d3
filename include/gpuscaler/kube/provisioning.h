// ProvisioningRequests (autoscaling.x-k8s.io/v1, the API Kueue's
// provisioning admission check creates): a set of pods, described by
// PodTemplates and counts, that a workload needs before it is admitted.
// gpuscaler serves the two classes the Cluster Autoscaler defines, with its
// conditions (docs/kubernetes.md, "ProvisioningRequests"):
//  - best-effort-atomic-scale-up.autoscaling.x-k8s.io: the members are
//    demand, planned as one gang (all launched in one call, in one zone, or
//    none). Provisioned=True (CapacityIsFound, or CapacityIsProvisioned after
//    a launch) once every member has room on a node the cloud has accepted;
//    Provisioned=False (CapacityIsNotFound, with the planner's reason) while
//    they cannot be placed; Failed=True (Expired) when the parameter
//    ValidUntilSeconds, counted from creation, passes first.
//  - check-capacity.autoscaling.x-k8s.io: nothing is launched. Provisioned=True
//    (CapacityIsFound) when every member fits the free room of ready,
//    schedulable nodes now; else Provisioned=False (CapacityIsNotFound), or
//    Failed=True with the parameter noRetry "true".
// Either class: Accepted=True when first seen; Failed=True (Expired) when not
// provisioned within seven days. Provisioned capacity is booked for ten
// minutes: its members stay demand, so the nodes are not taken away, until
// pods consuming the request exist (then the pods are the demand) or the
// booking ends (BookingExpired=True, CapacityReservationTimeExpired). Booked
// capacity that is lost before it is used gets CapacityRevoked=True. A
// request with Failed, BookingExpired or CapacityRevoked True is finished.
// Requests of other classes are left to whoever serves them.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "gpuscaler/kube/objects.h"
#include "gpuscaler/model/catalog.h"
#include "gpuscaler/model/demand.h"
#include "gpuscaler/model/time.h"
#include "gpuscaler/policy/policy.h"
#include "gpuscaler/status.h"

namespace gpuscaler::kube {

inline constexpr const char* kClassBestEffortAtomicScaleUp =
    "best-effort-atomic-scale-up.autoscaling.x-k8s.io";
inline constexpr const char* kClassCheckCapacity = "check-capacity.autoscaling.x-k8s.io";
inline constexpr Seconds kBookingPeriod{600};
inline constexpr Seconds kRequestExpiry{7 * 24 * 3600};
// Demand unit ids of request members start with this.
inline constexpr std::string_view kRequestMemberPrefix = "provisioningrequest:";

// A metav1.Condition.
struct RequestCondition {
  std::string type;
  std::string status;  // "True" | "False" | "Unknown"
  std::string reason;
  std::string message;
  WallTime last_transition{};
  int64_t observed_generation = 0;

  bool operator==(const RequestCondition&) const = default;
};

struct ProvisioningRequestInfo {
  std::string namespace_name;
  std::string name;
  std::string resource_version;
  int64_t generation = 0;
  WallTime created{};
  std::string class_name;
  struct PodSet {
    std::string template_name;
    int count = 0;
  };
  std::vector<PodSet> pod_sets;
  std::map<std::string, std::string> parameters;
  std::vector<RequestCondition> conditions;

  std::string Key() const { return namespace_name + "/" + name; }
  int Members() const;  // pods in all its pod sets
  const RequestCondition* Condition(std::string_view type) const;
  bool IsTrue(std::string_view type) const;
  bool Supported() const {
    return class_name == kClassBestEffortAtomicScaleUp || class_name == kClassCheckCapacity;
  }
  // Failed, BookingExpired or CapacityRevoked is True.
  bool Finished() const;
};

// kInvalidInput when it is not a request (no name, no podSets).
Result<ProvisioningRequestInfo> ProvisioningRequestFromJson(const nlohmann::json& object);

// What the requests need from the cluster, read once per tick.
struct ProvisioningInputs {
  // Every readable request, by creation (those of other classes too: a pod
  // consuming one is still its gang's member, kube/gangs.h).
  std::vector<ProvisioningRequestInfo> requests;
  std::map<std::string, PodInfo> templates;  // "namespace/name" -> the template as a pending pod
  std::set<std::string> consumed;            // requests some pod consumes ("namespace/name")
  std::vector<std::string> unreadable;       // objects left out, "what: why"
};
ProvisioningInputs ReadProvisioningInputs(const std::vector<nlohmann::json>& requests,
                                          const std::vector<nlohmann::json>& pod_templates,
                                          const std::vector<PodInfo>& pods);

// The members of a request as demand units, one per pod of each pod set
// (ids kRequestMemberPrefix + "namespace/name/<set>/<n>"), of one gang when
// two or more; the pod template decides class, shape and placement as a
// pending pod's spec would. kNotFound when a template is missing.
Result<std::vector<DemandUnit>> RequestMembers(const ProvisioningRequestInfo& request,
                                               const ProvisioningInputs& in, const Policy& policy,
                                               const Catalog& catalog);

// Where the planner put a member this tick.
struct MemberPlacement {
  enum class Where { kOnNode, kNewLaunch, kUnplaced } where = Where::kUnplaced;
  std::string why;  // kUnplaced: the planner's reason
};

struct RequestStatusUpdate {
  std::string namespace_name;
  std::string name;
  std::string resource_version;              // of the request the update was computed from
  std::vector<RequestCondition> conditions;  // the whole new list
  std::string summary;                       // for the log: what changed and why
};

// The requests' demand and conditions, tick by tick. Not thread-safe: the
// engine's thread calls it.
class ProvisioningReconciler {
 public:
  // Members the planner must hold room for now: atomic requests not yet
  // provisioned, and booked requests of either class. Problems (a missing
  // template, a member no class takes) go to `skipped`.
  std::vector<DemandUnit> Demand(const ProvisioningInputs& in, const Policy& policy, const Catalog& catalog,
                                 WallTime now, std::vector<std::string>* skipped);

  // The condition changes after a tick. `placements`: by member id, from
  // this tick's plan (nullopt when the tick reused the previous plan: atomic
  // requests wait). `nodes` and `pods` are for check-capacity's fit: first
  // fit, in creation order, on the free room (allocatable less bound pods'
  // requests) of ready, schedulable nodes that the template's node selector
  // and required node affinity allow; booked check-capacity requests take
  // their room first. Taints are not checked.
  std::vector<RequestStatusUpdate> Reconcile(
      const ProvisioningInputs& in, const std::optional<std::map<std::string, MemberPlacement>>& placements,
      const std::vector<NodeInfo>& nodes, const std::vector<PodInfo>& pods, WallTime now);

 private:
  std::set<std::string> launched_;  // atomic requests a launch was planned for
};

// The status subresource's merge patch for `update`.
nlohmann::json ConditionsPatch(const RequestStatusUpdate& update);
std::string StatusPath(const RequestStatusUpdate& update);

}  // namespace gpuscaler::kube
