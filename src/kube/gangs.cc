#include "gpuscaler/kube/gangs.h"

#include <charconv>

#include "gpuscaler/kube/workload.h"
#include "json_objects.h"

namespace gpuscaler::kube {
namespace {

using nlohmann::json;

std::string GangObjectKey(const json& object) {
  const json& meta = ObjectAt(object, "metadata");
  const std::string name = StringAt(meta, "name");
  return name.empty() ? "" : StringAt(meta, "namespace") + "/" + name;
}

// spec.minMember of a PodGroup (both kinds spell it so); 0 when absent.
void AddPodGroups(const std::vector<json>& groups, std::map<std::string, int>* out) {
  for (const json& g : groups) {
    const std::string key = GangObjectKey(g);
    const int64_t min_member = IntAt(ObjectAt(g, "spec"), "minMember", 0);
    if (!key.empty() && min_member > 0 && min_member <= 1'000'000) (*out)[key] = static_cast<int>(min_member);
  }
}

std::string GangPodKey(const PodInfo& pod) { return pod.namespace_name + "/" + pod.name; }

// The gang of the gpuscaler.io annotations; nullopt: none.
Result<std::optional<GangMembership>> AnnotatedGang(const PodInfo& pod) {
  auto name = pod.annotations.find(kAnnotationGang);
  if (name == pod.annotations.end()) return std::optional<GangMembership>();
  const std::string where = "pod " + GangPodKey(pod) + ": annotation ";
  if (name->second.empty()) return Error::InvalidInput(where + kAnnotationGang + ": empty gang name");
  auto size = pod.annotations.find(kAnnotationGangSize);
  if (size == pod.annotations.end()) {
    return Error::InvalidInput(where + kAnnotationGangSize + ": required with " + kAnnotationGang);
  }
  int members = 0;
  const auto [end, ec] =
      std::from_chars(size->second.data(), size->second.data() + size->second.size(), members);
  if (ec != std::errc() || end != size->second.data() + size->second.size() || members < 2) {
    return Error::InvalidInput(where + kAnnotationGangSize + ": expected a whole number >= 2, got '" +
                               size->second + "'");
  }
  GangMembership gang{pod.namespace_name + "/" + name->second, members, /*same_zone=*/true, false};
  auto same_type = pod.annotations.find(kAnnotationGangSameInstanceType);
  gang.same_instance_type = same_type != pod.annotations.end() && same_type->second == "true";
  return std::optional<GangMembership>(gang);
}

// A gang of `members` named by its source; nullopt below two members.
std::optional<GangMembership> SourcedGang(const std::string& source, const std::string& key, int members) {
  if (members < 2) return std::nullopt;
  return GangMembership{source + ":" + key, members, /*same_zone=*/true, /*same_instance_type=*/false};
}

}  // namespace

GangDirectory GangDirectory::From(const std::vector<ProvisioningRequestInfo>& provisioning_requests,
                                  const std::vector<json>& pod_groups,
                                  const std::vector<json>& volcano_pod_groups) {
  GangDirectory d;
  for (const ProvisioningRequestInfo& r : provisioning_requests)
    d.provisioning_requests[r.Key()] = r.Members();
  AddPodGroups(pod_groups, &d.pod_groups);
  AddPodGroups(volcano_pod_groups, &d.volcano_pod_groups);
  return d;
}

Result<std::optional<GangMembership>> GangOfPod(const PodInfo& pod, const GangDirectory* directory) {
  using Gang = std::optional<GangMembership>;
  if (directory != nullptr) {
    const auto named = [&](const std::map<std::string, std::string>& m, const char* key) -> std::string {
      auto it = m.find(key);
      return it == m.end() || it->second.empty() ? "" : pod.namespace_name + "/" + it->second;
    };
    if (const std::string req = named(pod.annotations, kAnnotationConsumeProvisioningRequest); !req.empty()) {
      if (auto it = directory->provisioning_requests.find(req); it != directory->provisioning_requests.end())
        return Gang(SourcedGang("provisioningrequest", req, it->second));
    }
    const auto group = [&](const std::string& key, const std::map<std::string, int>& groups,
                           const char* source, const char* kind) -> Result<Gang> {
      auto it = groups.find(key);
      if (it == groups.end())
        return Error::NotFound("pod " + GangPodKey(pod) + " waits for its " + kind + " " + key +
                               ", which does not exist");
      return SourcedGang(source, key, it->second);
    };
    if (const std::string key = named(pod.labels, kLabelCoschedulingPodGroup); !key.empty())
      return group(key, directory->pod_groups, "podgroup", "PodGroup (scheduling.x-k8s.io)");
    if (const std::string key = named(pod.annotations, kAnnotationVolcanoGroupName); !key.empty())
      return group(key, directory->volcano_pod_groups, "volcano", "PodGroup (scheduling.volcano.sh)");
  }
  return AnnotatedGang(pod);
}

}  // namespace gpuscaler::kube
