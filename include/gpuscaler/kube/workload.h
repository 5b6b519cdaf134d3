// From Kubernetes objects to the model: pending GPU pods become DemandUnits,
// nodes become Nodes (offering from well-known labels, instance id from
// providerID, the pods bound to them as running work). Pure functions of
// their arguments; thread-safe.
//
// Which pods count (docs/kubernetes.md, "What gpuscaler reads"): a pod
// that asks for GPUs (nvidia.com/gpu, or a MIG device nvidia.com/mig-<profile>)
// and that the scheduler gave up on: phase Pending, no node, condition
// PodScheduled=False with reason Unschedulable, not being deleted. A pod
// that waits for anything else (an image, a volume, a scheduling cycle) is
// not demand for new nodes.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "gpuscaler/kube/deadline_terms.h"
#include "gpuscaler/kube/objects.h"
#include "gpuscaler/model/catalog.h"
#include "gpuscaler/model/demand.h"
#include "gpuscaler/model/node.h"
#include "gpuscaler/policy/policy.h"
#include "gpuscaler/status.h"

namespace gpuscaler::kube {

struct GangDirectory;  // kube/gangs.h

// Well-known labels read from nodes and from pods' node selectors/affinity.
inline constexpr const char* kLabelInstanceType = "node.kubernetes.io/instance-type";
inline constexpr const char* kLabelInstanceTypeBeta = "beta.kubernetes.io/instance-type";
inline constexpr const char* kLabelZone = "topology.kubernetes.io/zone";
inline constexpr const char* kLabelZoneBeta = "failure-domain.beta.kubernetes.io/zone";
inline constexpr const char* kLabelRegion = "topology.kubernetes.io/region";
inline constexpr const char* kLabelKarpenterCapacityType = "karpenter.sh/capacity-type";  // spot | on-demand
inline constexpr const char* kLabelEksCapacityType = "eks.amazonaws.com/capacityType";    // SPOT | ON_DEMAND
inline constexpr const char* kLabelGpuProduct = "nvidia.com/gpu.product";
inline constexpr const char* kResourceGpu = "nvidia.com/gpu";
inline constexpr const char* kResourceMigPrefix = "nvidia.com/mig-";
// Do-not-disrupt markers (annotation or label, value "true") on a pod or node.
inline constexpr const char* kDoNotDisrupt = "gpuscaler.io/do-not-disrupt";
inline constexpr const char* kKarpenterDoNotDisrupt = "karpenter.sh/do-not-disrupt";
// Pool label/tag of the nodes gpuscaler launched (cloud/provider.h kOwnerTag).
inline constexpr const char* kLabelPool = "gpuscaler.io/pool";
// The pod annotations of its deadline, runtime and progress
// (kAnnotationDeadline, …) are in kube/deadline_terms.h.
// Pod annotations: the pod is one member of a gang (DemandUnit::gang) named
// by kAnnotationGang within its namespace, of kAnnotationGangSize members
// (required with it, >= 2), in one zone; "true" in
// kAnnotationGangSameInstanceType puts every member on one instance type.
inline constexpr const char* kAnnotationGang = "gpuscaler.io/gang";
inline constexpr const char* kAnnotationGangSize = "gpuscaler.io/gang-size";
inline constexpr const char* kAnnotationGangSameInstanceType = "gpuscaler.io/gang-same-instance-type";

// Asks for a GPU or a MIG device.
bool WantsGpu(const PodInfo& pod);
// Unschedulable GPU pod (see above): demand for new capacity.
bool IsPendingGpuPod(const PodInfo& pod);
// Bound to a node and holding its resources (not finished).
bool HoldsResources(const PodInfo& pod);

// The policy class of a pod: the first class (policy order) with a match on
// the pod's namespace (match.namespaces) or on all of match.labels; failing
// that, the first class with no match conditions at all (a catch-all).
// nullptr: the pod is no class's work.
const WorkloadClassPolicy* ClassForPod(const Policy& policy, const PodInfo& pod);

// Whether `tolerations` tolerate `taint` (the scheduler's rules: Exists with
// no key tolerates all; an empty effect matches every effect).
bool Tolerates(const std::vector<Toleration>& tolerations, const Taint& taint);
// Whether the scheduler may put a pod with `tolerations` on a node with
// `taints` as far as taints go: every NoSchedule and NoExecute taint is
// tolerated (PreferNoSchedule only asks it to avoid the node).
bool ToleratesHardTaints(const std::vector<Toleration>& tolerations, const std::vector<Taint>& taints);

// The DemandUnit of one pod: GPUs (or a MIG profile, nvidia.com/mig-1g.10gb
// -> "1g.10gb"), CPU and memory requests, priority; the class's
// interruption traits; placement from nodeSelector and required node
// affinity on GPU product, zone, instance type and capacity type (In and
// NotIn; several terms: the union); the work and deadline terms of
// ApplyWorkTerms (kube/deadline_terms.h, as pending). Pools: those of the class whose
// NoSchedule/NoExecute taints the pod tolerates; one left pins the unit to
// it. Errors: kNotFound when the pod matches no class, kInvalidInput when it
// tolerates no pool's taints or asks for several MIG profiles at once, and
// ApplyWorkTerms's errors (a bad deadline, runtime or progress annotation).
// The gang by GangOfPod (kube/gangs.h) with `gangs`; kNotFound as well when
// the pod waits for a PodGroup that does not exist.
Result<DemandUnit> PodDemand(const PodInfo& pod, const Policy& policy, const Catalog& catalog,
                             const GangDirectory* gangs = nullptr);

// Running work of a pod bound to a node, for WorkSource::RunningOn: same
// shape; pods with no class are kept (class "") because they hold room. The
// work terms of ApplyWorkTerms as running (progressing_since from the pod's
// start or checkpoint), a bad annotation reading as absent.
DemandUnit RunningPodUnit(const PodInfo& pod, const Policy& policy, const Catalog& catalog,
                          const GangDirectory* gangs = nullptr);

// The offering a node's labels describe: instance type, zone, region (label,
// or the zone without its letter), capacity type (Karpenter's or EKS's label;
// on-demand when neither says spot).
Offering OfferingFromLabels(const std::map<std::string, std::string>& labels);

// A node as the model sees it. `bound` are the pods on it (HoldsResources).
// Pool from the gpuscaler.io/pool label; state cordoned when unschedulable;
// do_not_disrupt from either marker on the node.
Node ModelNode(const NodeInfo& node, const std::vector<const PodInfo*>& bound, const Policy& policy,
               const Catalog& catalog);

// What the scheduler could still place on a node: allocatable minus the
// requests of the pods bound to it, per resource, in thousandths.
std::map<std::string, int64_t> FreeResources(const NodeInfo& node, const std::vector<const PodInfo*>& bound);

// What the cluster asks for and holds, for the daemon's WorkSource.
struct ClusterDemand {
  // Unschedulable GPU pods as units: higher priority first, then older,
  // then by name (the scheduling order the planner sees).
  std::vector<DemandUnit> pending;
  // Pods bound to each node (HoldsResources), by the node's instance id
  // (from providerID; the node name when there is none).
  std::map<std::string, std::vector<DemandUnit>> running;
  // Pending GPU pods that are not demand, "namespace/name: why" (no class,
  // no pool they tolerate, several MIG devices).
  std::vector<std::string> skipped;
};

// The pod label naming the team that pays for a pod's GPUs (DemandUnit::team),
// unless the daemon configures another (kubernetes.team_label).
inline constexpr std::string_view kDefaultTeamLabel = "gpuscaler.io/team";

// Units of pods carrying `team_label` get its value as their team.
ClusterDemand DemandFromCluster(const std::vector<PodInfo>& pods, const std::vector<NodeInfo>& nodes,
                                const Policy& policy, const Catalog& catalog,
                                std::string_view team_label = kDefaultTeamLabel,
                                const GangDirectory* gangs = nullptr);

// The marker value: true when either do-not-disrupt key is "true" in the map.
bool SaysDoNotDisrupt(const std::map<std::string, std::string>& labels_or_annotations);

}  // namespace gpuscaler::kube
