#include "gpuscaler/kube/provisioning.h"

#include <algorithm>

#include "gpuscaler/kube/gangs.h"
#include "gpuscaler/kube/workload.h"
#include "json_objects.h"

namespace gpuscaler::kube {
namespace {

using nlohmann::json;

constexpr const char* kAccepted = "Accepted";
constexpr const char* kProvisioned = "Provisioned";
constexpr const char* kFailed = "Failed";
constexpr const char* kBookingExpired = "BookingExpired";
constexpr const char* kCapacityRevoked = "CapacityRevoked";
constexpr Seconds kTemplateGrace{30};

// A pod template as the pending pod it describes, in `ns`.
Result<PodInfo> TemplatePod(const json& pod_template) {
  const json& meta = ObjectAt(pod_template, "metadata");
  const json& tmpl = ObjectAt(pod_template, "template");
  json pod = {{"kind", "Pod"},
              {"metadata", ObjectAt(tmpl, "metadata")},
              {"spec", ObjectAt(tmpl, "spec")},
              {"status", {{"phase", "Pending"}}}};
  if (!pod["metadata"].is_object()) pod["metadata"] = json::object();
  pod["metadata"]["name"] = StringAt(meta, "name");
  pod["metadata"]["namespace"] = StringAt(meta, "namespace");
  pod["metadata"]["uid"] = StringAt(meta, "uid");
  pod["metadata"]["creationTimestamp"] = StringAt(meta, "creationTimestamp");
  Result<PodInfo> p = PodFromJson(pod);
  if (p) p->unschedulable = true;
  return p;
}

// Sets `type` in `conds` (metav1 rules: the transition time moves only when
// the status does). True when anything changed.
bool SetCondition(std::vector<RequestCondition>* conds, const ProvisioningRequestInfo& r,
                  const std::string& type, const std::string& status, const std::string& reason,
                  const std::string& message, WallTime now) {
  for (RequestCondition& c : *conds) {
    if (c.type != type) continue;
    if (c.status == status && c.reason == reason && c.message == message) return false;
    if (c.status != status) c.last_transition = now;
    c.status = status;
    c.reason = reason;
    c.message = message;
    c.observed_generation = r.generation;
    return true;
  }
  conds->push_back({type, status, reason, message, now, r.generation});
  return true;
}

// Free room per node (thousandths per resource) of ready, schedulable nodes.
struct Room {
  const NodeInfo* node;
  std::map<std::string, int64_t> free;
};

bool Satisfies(const NodeSelectorRequirement& r, const std::map<std::string, std::string>& labels) {
  auto it = labels.find(r.key);
  const bool in =
      it != labels.end() && std::find(r.values.begin(), r.values.end(), it->second) != r.values.end();
  if (r.op == "In") return in;
  if (r.op == "NotIn") return !in;
  if (r.op == "Exists") return it != labels.end();
  if (r.op == "DoesNotExist") return it == labels.end();
  return true;  // Gt / Lt: numeric labels gpuscaler does not model
}

// Whether the scheduler may put `pod` on `node`: its node selector, its
// required node affinity, and the node's NoSchedule and NoExecute taints.
bool Allows(const PodInfo& pod, const NodeInfo& node) {
  if (!ToleratesHardTaints(pod.tolerations, node.taints)) return false;
  for (const auto& [k, v] : pod.node_selector) {
    auto it = node.labels.find(k);
    if (it == node.labels.end() || it->second != v) return false;
  }
  if (pod.affinity_terms.empty()) return true;
  return std::any_of(pod.affinity_terms.begin(), pod.affinity_terms.end(), [&](const auto& term) {
    return std::all_of(term.begin(), term.end(),
                       [&](const NodeSelectorRequirement& r) { return Satisfies(r, node.labels); });
  });
}

bool TakeRoom(const PodInfo& pod, std::vector<Room>* rooms) {
  for (Room& room : *rooms) {
    if (!Allows(pod, *room.node)) continue;
    const bool fits = std::all_of(pod.requests_milli.begin(), pod.requests_milli.end(), [&](const auto& kv) {
      if (kv.second <= 0) return true;
      auto it = room.free.find(kv.first);
      return it != room.free.end() && it->second >= kv.second;
    });
    if (!fits) continue;
    for (const auto& [resource, milli] : pod.requests_milli) room.free[resource] -= milli;
    return true;
  }
  return false;
}

std::vector<Room> FreeRooms(const std::vector<NodeInfo>& nodes, const std::vector<PodInfo>& pods) {
  std::map<std::string, std::vector<const PodInfo*>> bound;
  for (const PodInfo& p : pods) {
    if (HoldsResources(p)) bound[p.node_name].push_back(&p);
  }
  std::vector<Room> rooms;
  for (const NodeInfo& n : nodes) {
    if (!n.ready || n.unschedulable) continue;
    rooms.push_back({&n, FreeResources(n, bound[n.name])});
  }
  return rooms;
}

// The template of pod set `set` of `r`; null when it is missing.
const PodInfo* TemplateOf(const ProvisioningRequestInfo& r, const ProvisioningRequestInfo::PodSet& set,
                          const ProvisioningInputs& in) {
  auto it = in.templates.find(r.namespace_name + "/" + set.template_name);
  return it == in.templates.end() ? nullptr : &it->second;
}

// Each template of `r` as many times as its pod set counts; null for a missing one.
std::vector<const PodInfo*> MemberPods(const ProvisioningRequestInfo& r, const ProvisioningInputs& in) {
  std::vector<const PodInfo*> out;
  for (const auto& set : r.pod_sets)
    out.insert(out.end(), static_cast<size_t>(set.count), TemplateOf(r, set, in));
  return out;
}

std::string MemberId(const ProvisioningRequestInfo& r, size_t set, int n) {
  return std::string(kRequestMemberPrefix) + r.Key() + "/" + std::to_string(set) + "/" + std::to_string(n);
}

// Whether the plan put every member of `r` on a node.
bool AllOnNodes(const ProvisioningRequestInfo& r, const std::map<std::string, MemberPlacement>& placements) {
  for (size_t s = 0; s < r.pod_sets.size(); ++s) {
    for (int i = 0; i < r.pod_sets[s].count; ++i) {
      auto it = placements.find(MemberId(r, s, i));
      if (it == placements.end() || it->second.where != MemberPlacement::Where::kOnNode) return false;
    }
  }
  return true;
}

// Booked capacity is held this long after Provisioned turned true.
bool BookingEnded(const ProvisioningRequestInfo& r, WallTime now) {
  const RequestCondition* provisioned = r.Condition(kProvisioned);
  return provisioned != nullptr && now >= provisioned->last_transition + kBookingPeriod;
}

}  // namespace

const RequestCondition* ProvisioningRequestInfo::Condition(std::string_view type) const {
  for (const RequestCondition& c : conditions) {
    if (c.type == type) return &c;
  }
  return nullptr;
}

int ProvisioningRequestInfo::Members() const {
  int members = 0;
  for (const PodSet& set : pod_sets) members += set.count;
  return members;
}

bool ProvisioningRequestInfo::IsTrue(std::string_view type) const {
  const RequestCondition* c = Condition(type);
  return c != nullptr && c->status == "True";
}

bool ProvisioningRequestInfo::Finished() const {
  return IsTrue(kFailed) || IsTrue(kBookingExpired) || IsTrue(kCapacityRevoked);
}

Result<ProvisioningRequestInfo> ProvisioningRequestFromJson(const json& object) {
  if (!object.is_object()) return Error::InvalidInput("ProvisioningRequest: not an object");
  ProvisioningRequestInfo r;
  const json& meta = ObjectAt(object, "metadata");
  r.namespace_name = StringAt(meta, "namespace");
  r.name = StringAt(meta, "name");
  r.resource_version = StringAt(meta, "resourceVersion");
  r.generation = IntAt(meta, "generation", 0);
  r.created = TimeAt(meta, "creationTimestamp");
  const json& spec = ObjectAt(object, "spec");
  r.class_name = StringAt(spec, "provisioningClassName");
  if (r.name.empty()) return Error::InvalidInput("ProvisioningRequest without metadata.name");
  const std::string where = "ProvisioningRequest " + r.Key();
  for (const json& set : ArrayAt(spec, "podSets")) {
    ProvisioningRequestInfo::PodSet ps;
    ps.template_name = StringAt(ObjectAt(set, "podTemplateRef"), "name");
    const int64_t count = IntAt(set, "count", 0);
    if (ps.template_name.empty() || count < 1 || count > 10'000)
      return Error::InvalidInput(where + ": spec.podSets[" + std::to_string(r.pod_sets.size()) +
                                 "]: expected podTemplateRef.name and a count from 1 to 10000");
    ps.count = static_cast<int>(count);
    r.pod_sets.push_back(std::move(ps));
  }
  if (r.pod_sets.empty()) return Error::InvalidInput(where + ": spec.podSets is empty");
  for (const auto& [k, v] : ObjectAt(spec, "parameters").items()) {
    if (v.is_string()) r.parameters[k] = v.get<std::string>();
  }
  for (const json& c : ArrayAt(ObjectAt(object, "status"), "conditions")) {
    r.conditions.push_back({StringAt(c, "type"), StringAt(c, "status"), StringAt(c, "reason"),
                            StringAt(c, "message"), TimeAt(c, "lastTransitionTime"),
                            IntAt(c, "observedGeneration", 0)});
  }
  return r;
}

ProvisioningInputs ReadProvisioningInputs(const std::vector<json>& requests,
                                          const std::vector<json>& pod_templates,
                                          const std::vector<PodInfo>& pods) {
  ProvisioningInputs in;
  for (const json& object : requests) {
    Result<ProvisioningRequestInfo> r = ProvisioningRequestFromJson(object);
    if (!r) {
      in.unreadable.push_back(r.error().message());
    } else {
      in.requests.push_back(std::move(r).value());
    }
  }
  std::stable_sort(in.requests.begin(), in.requests.end(),
                   [](const auto& a, const auto& b) { return a.created < b.created; });
  for (const json& t : pod_templates) {
    const json& meta = ObjectAt(t, "metadata");
    const std::string key = StringAt(meta, "namespace") + "/" + StringAt(meta, "name");
    Result<PodInfo> pod = TemplatePod(t);
    if (pod)
      in.templates[key] = std::move(pod).value();
    else
      in.unreadable.push_back("PodTemplate " + key + ": " + pod.error().message());
  }
  for (const PodInfo& p : pods) {
    if (auto it = p.annotations.find(kAnnotationConsumeProvisioningRequest); it != p.annotations.end())
      in.consumed.insert(p.namespace_name + "/" + it->second);
  }
  return in;
}

Result<std::vector<DemandUnit>> RequestMembers(const ProvisioningRequestInfo& request,
                                               const ProvisioningInputs& in, const Policy& policy,
                                               const Catalog& catalog) {
  const int total = request.Members();
  std::vector<DemandUnit> out;
  for (size_t s = 0; s < request.pod_sets.size(); ++s) {
    const auto& set = request.pod_sets[s];
    const PodInfo* pod_template = TemplateOf(request, set, in);
    if (pod_template == nullptr)
      return Error::NotFound("ProvisioningRequest " + request.Key() + ": PodTemplate " + set.template_name +
                             " not found");
    Result<DemandUnit> unit = PodDemand(*pod_template, policy, catalog);
    if (!unit) return unit.error().WithContext("ProvisioningRequest " + request.Key());
    unit->gang.reset();
    if (total >= 2) unit->gang = GangMembership{"provisioningrequest:" + request.Key(), total, true, false};
    for (int i = 0; i < set.count; ++i) {
      DemandUnit member = *unit;
      member.id = MemberId(request, s, i);
      member.labels.erase("pod");  // no pod yet: the template is not one
      member.labels["provisioning-request"] = request.Key();
      out.push_back(std::move(member));
    }
  }
  return out;
}

std::vector<DemandUnit> ProvisioningReconciler::Demand(const ProvisioningInputs& in, const Policy& policy,
                                                       const Catalog& catalog, WallTime now,
                                                       std::vector<std::string>* skipped) {
  std::vector<DemandUnit> out;
  for (const ProvisioningRequestInfo& r : in.requests) {
    if (!r.Supported() || r.Finished() || in.consumed.count(r.Key()) > 0) continue;
    const bool booked = r.IsTrue(kProvisioned);
    if (booked && BookingEnded(r, now)) continue;
    if (!booked && r.class_name != kClassBestEffortAtomicScaleUp) continue;
    Result<std::vector<DemandUnit>> members = RequestMembers(r, in, policy, catalog);
    if (!members) {
      if (skipped != nullptr) skipped->push_back(members.error().message());
      continue;
    }
    out.insert(out.end(), members->begin(), members->end());
  }
  return out;
}

std::vector<RequestStatusUpdate> ProvisioningReconciler::Reconcile(
    const ProvisioningInputs& in, const std::optional<std::map<std::string, MemberPlacement>>& placements,
    const std::vector<NodeInfo>& nodes, const std::vector<PodInfo>& pods, WallTime now) {
  std::vector<RequestStatusUpdate> out;
  std::vector<Room> rooms = FreeRooms(nodes, pods);
  // Booked requests first: their room is taken before new ones are checked.
  std::vector<const ProvisioningRequestInfo*> order;
  for (const bool booked : {true, false}) {
    for (const ProvisioningRequestInfo& r : in.requests) {
      if (r.Supported() && !r.Finished() && r.IsTrue(kProvisioned) == booked) order.push_back(&r);
    }
  }
  for (const ProvisioningRequestInfo* request : order) {
    const ProvisioningRequestInfo& r = *request;
    RequestStatusUpdate u{r.namespace_name, r.name, r.resource_version, r.conditions, ""};
    const auto set = [&](const char* type, const char* status, const std::string& reason,
                         const std::string& message) {
      if (SetCondition(&u.conditions, r, type, status, reason, message, now)) {
        u.summary += std::string(u.summary.empty() ? "" : "; ") + type + "=" + status + " (" + reason +
                     "): " + message;
      }
    };
    set(kAccepted, "True", "Accepted", "ProvisioningRequest is accepted by gpuscaler");
    const std::vector<const PodInfo*> member_pods = MemberPods(r, in);
    const bool consumed = in.consumed.count(r.Key()) > 0;
    const bool missing_template = std::count(member_pods.begin(), member_pods.end(), nullptr) > 0;
    if (r.IsTrue(kProvisioned)) {
      // Booked: hold the room until consumed or the booking ends.
      bool held = true;
      if (!consumed && r.class_name == kClassCheckCapacity && !missing_template) {
        held = std::all_of(member_pods.begin(), member_pods.end(),
                           [&](const PodInfo* p) { return TakeRoom(*p, &rooms); });
      } else if (!consumed && placements) {
        held = AllOnNodes(r, *placements);
      }
      if (consumed) {
        // The consuming pods are the demand now; nothing to hold.
      } else if (BookingEnded(r, now)) {
        set(kBookingExpired, "True", "CapacityReservationTimeExpired",
            "Capacity reservation time is expired");
      } else if (!held) {
        set(kCapacityRevoked, "True", "CapacityIsNotFound",
            "the booked capacity is gone before pods consumed it (a node was removed or never registered)");
      }
      if (!u.summary.empty()) out.push_back(std::move(u));
      continue;
    }
    Seconds valid_for = kRequestExpiry;
    if (auto it = r.parameters.find("ValidUntilSeconds"); it != r.parameters.end()) {
      try {
        valid_for = Seconds(std::stoll(it->second));
      } catch (const std::exception&) {
        // Unreadable: the default stands.
      }
    }
    if (now >= r.created + valid_for) {
      set(kFailed, "True", "Expired",
          "ProvisioningRequest is expired: not provisioned within " + FormatDuration(valid_for));
    } else if (missing_template) {
      if (now >= r.created + kTemplateGrace)
        set(kFailed, "True", "FailedToCreatePods",
            "a pod set's PodTemplate does not exist in " + r.namespace_name);
    } else if (r.class_name == kClassCheckCapacity) {
      std::vector<Room> trial = rooms;
      int fitted = 0;
      for (const PodInfo* p : member_pods) fitted += TakeRoom(*p, &trial) ? 1 : 0;
      const int total = static_cast<int>(member_pods.size());
      if (fitted == total) {
        rooms = std::move(trial);
        set(kProvisioned, "True", "CapacityIsFound", "Capacity is found in the cluster");
      } else {
        const std::string why =
            std::to_string(fitted) + " of " + std::to_string(total) +
            " pods fit the free room of ready nodes; nothing is launched for check-capacity";
        auto no_retry = r.parameters.find("noRetry");
        if (no_retry != r.parameters.end() && no_retry->second == "true")
          set(kFailed, "True", "CapacityIsNotFound", why);
        else
          set(kProvisioned, "False", "CapacityIsNotFound", why);
      }
    } else if (placements) {
      std::string unplaced;
      for (size_t set = 0; set < r.pod_sets.size(); ++set) {
        for (int i = 0; i < r.pod_sets[set].count; ++i) {
          auto it = placements->find(MemberId(r, set, i));
          if (it == placements->end()) continue;
          if (it->second.where == MemberPlacement::Where::kNewLaunch) launched_.insert(r.Key());
          if (it->second.where == MemberPlacement::Where::kUnplaced && unplaced.empty())
            unplaced = it->second.why;
        }
      }
      if (AllOnNodes(r, *placements)) {
        const bool launched = launched_.count(r.Key()) > 0;
        set(kProvisioned, "True", launched ? "CapacityIsProvisioned" : "CapacityIsFound",
            launched ? "Capacity is provisioned: every pod has room on nodes launched for it"
                     : "Capacity is found in the cluster");
      } else if (!unplaced.empty()) {
        set(kProvisioned, "False", "CapacityIsNotFound",
            "Capacity is not found, gpuscaler will try again: " + unplaced);
      }
    }
    if (!u.summary.empty()) out.push_back(std::move(u));
  }
  return out;
}

json ConditionsPatch(const RequestStatusUpdate& update) {
  json conditions = json::array();
  for (const RequestCondition& c : update.conditions) {
    conditions.push_back({{"type", c.type},
                          {"status", c.status},
                          {"reason", c.reason},
                          {"message", c.message},
                          {"lastTransitionTime", FormatRfc3339(c.last_transition)},
                          {"observedGeneration", c.observed_generation}});
  }
  return {{"status", {{"conditions", conditions}}}};
}

std::string StatusPath(const RequestStatusUpdate& update) {
  return "/apis/autoscaling.x-k8s.io/v1/namespaces/" + update.namespace_name + "/provisioningrequests/" +
         update.name + "/status";
}

}  // namespace gpuscaler::kube
