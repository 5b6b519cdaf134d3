// Where a pod's gang comes from (docs/kubernetes.md, "Gangs"). A pod is a
// member of at most one gang; the first source that names one wins:
//  1. a ProvisioningRequest it consumes (the pod annotation
//     autoscaling.x-k8s.io/consume-provisioning-request names a request of
//     its namespace): the gang is the request, of as many members as its
//     podSets count in all;
//  2. a coscheduling PodGroup (pod label scheduling.x-k8s.io/pod-group):
//     the group's spec.minMember;
//  3. a Volcano PodGroup (pod annotation scheduling.k8s.io/group-name):
//     the group's spec.minMember;
//  4. the gpuscaler.io/gang and gpuscaler.io/gang-size annotations.
// A request or group the cluster does not have is skipped and the next
// source is tried, except that a pending pod naming a PodGroup that does not
// exist is not demand: its scheduler holds it until the group exists. A
// group of fewer than two members is no gang. Gangs from the first three
// sources keep their members in one zone; only the annotation can also ask
// for one instance type. Gang names carry their source, so two sources never
// share a gang.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "gpuscaler/kube/objects.h"
#include "gpuscaler/kube/provisioning.h"
#include "gpuscaler/model/demand.h"
#include "gpuscaler/status.h"

namespace gpuscaler::kube {

inline constexpr const char* kAnnotationConsumeProvisioningRequest =
    "autoscaling.x-k8s.io/consume-provisioning-request";
inline constexpr const char* kLabelCoschedulingPodGroup = "scheduling.x-k8s.io/pod-group";
inline constexpr const char* kAnnotationVolcanoGroupName = "scheduling.k8s.io/group-name";

// The gangs the cluster's objects define: members by "namespace/name".
struct GangDirectory {
  std::map<std::string, int> provisioning_requests;  // sum of podSets[].count
  std::map<std::string, int> pod_groups;             // coscheduling minMember
  std::map<std::string, int> volcano_pod_groups;     // Volcano minMember

  // From the requests as read (ProvisioningInputs::requests) and the
  // PodGroups as the API server has them; groups without a name or a usable
  // size are left out.
  static GangDirectory From(const std::vector<ProvisioningRequestInfo>& provisioning_requests,
                            const std::vector<nlohmann::json>& pod_groups,
                            const std::vector<nlohmann::json>& volcano_pod_groups);
};

// The pod's gang by the rules above; nullopt: none. kInvalidInput for bad
// gpuscaler.io annotations; kNotFound when the pod names a PodGroup the
// directory does not have (`directory` null: only the annotations count).
Result<std::optional<GangMembership>> GangOfPod(const PodInfo& pod, const GangDirectory* directory);

}  // namespace gpuscaler::kube
