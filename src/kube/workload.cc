#include "gpuscaler/kube/workload.h"

#include "gpuscaler/kube/gangs.h"

#include <algorithm>
#include <set>

namespace gpuscaler::kube {
namespace {

constexpr int64_t kMiB = 1024 * 1024;

int64_t Request(const PodInfo& pod, const std::string& resource) {
  auto it = pod.requests_milli.find(resource);
  return it == pod.requests_milli.end() ? 0 : it->second;
}

int64_t CeilDiv(int64_t a, int64_t b) { return a <= 0 ? 0 : (a + b - 1) / b; }

// The values a placement key may take: any (minus `not_in`), or `in`.
struct Allowed {
  bool any = true;
  std::set<std::string> in;
  std::set<std::string> not_in;

  void Restrict(const std::set<std::string>& values) {
    if (any) {
      any = false;
      in = values;
    } else {
      std::set<std::string> both;
      std::set_intersection(in.begin(), in.end(), values.begin(), values.end(), std::inserter(both, both.end()));
      in = std::move(both);
    }
    for (const std::string& v : not_in) in.erase(v);
  }
  void Exclude(const std::set<std::string>& values) {
    not_in.insert(values.begin(), values.end());
    for (const std::string& v : values) in.erase(v);
  }
};

// Where a pod may go on one key (and its aliases), from nodeSelector and the
// required affinity terms; `normalize` maps label values to one spelling.
template <typename Normalize>
Allowed AllowedValues(const PodInfo& pod, const std::vector<std::string>& keys, Normalize normalize) {
  const auto norm_all = [&](const std::vector<std::string>& values) {
    std::set<std::string> out;
    for (const std::string& v : values) out.insert(normalize(v));
    return out;
  };
  Allowed result;
  if (!pod.affinity_terms.empty()) {
    // Terms are ORed: the union of what each allows.
    std::vector<Allowed> terms;
    for (const auto& term : pod.affinity_terms) {
      Allowed t;
      for (const NodeSelectorRequirement& r : term) {
        if (std::find(keys.begin(), keys.end(), r.key) == keys.end()) continue;
        if (r.op == "In") t.Restrict(norm_all(r.values));
        else if (r.op == "NotIn") t.Exclude(norm_all(r.values));
        else if (r.op == "DoesNotExist") t.Restrict({});
      }
      terms.push_back(std::move(t));
    }
    bool any = false;
    std::set<std::string> in, not_in;
    bool first_any = true;
    for (const Allowed& t : terms) {
      if (t.any) {
        any = true;
        if (first_any) not_in = t.not_in;
        else {
          std::set<std::string> both;
          std::set_intersection(not_in.begin(), not_in.end(), t.not_in.begin(), t.not_in.end(),
                                std::inserter(both, both.end()));
          not_in = std::move(both);
        }
        first_any = false;
      } else {
        in.insert(t.in.begin(), t.in.end());
      }
    }
    if (any) {
      for (const std::string& v : in) not_in.erase(v);
      result.not_in = std::move(not_in);
    } else {
      result.any = false;
      result.in = std::move(in);
    }
  }
  for (const std::string& k : keys) {
    if (auto it = pod.node_selector.find(k); it != pod.node_selector.end()) result.Restrict({normalize(it->second)});
  }
  return result;
}

std::string Same(const std::string& v) { return v; }

// Karpenter says spot / on-demand (/ reserved); EKS SPOT / ON_DEMAND (/ CAPACITY_BLOCK).
std::string CapacityTypeValue(const std::string& v) {
  if (v == "spot" || v == "SPOT") return "spot";
  if (v == "on-demand" || v == "ON_DEMAND") return "on-demand";
  return v;
}

// GFD's product label: newer versions prefix "NVIDIA-", and the MIG
// "single" strategy appends "-MIG-<profile>" to the GPU's name.
std::string GpuProductValue(const std::string& v) {
  std::string s = v;
  if (s.rfind("NVIDIA-", 0) == 0) s = s.substr(7);
  if (size_t mig = s.find("-MIG-"); mig != std::string::npos) s = s.substr(0, mig);
  return s;
}

bool IsTrue(const std::map<std::string, std::string>& m, const char* key) {
  auto it = m.find(key);
  return it != m.end() && it->second == "true";
}

std::string PodKey(const PodInfo& pod) { return pod.namespace_name + "/" + pod.name; }

// The unit's shape, without class or placement.
Result<DemandUnit> Shape(const PodInfo& pod) {
  DemandUnit u;
  u.id = pod.uid.empty() ? PodKey(pod) : pod.uid;
  u.gpus = static_cast<int>(CeilDiv(Request(pod, kResourceGpu), 1000));
  for (const auto& [resource, milli] : pod.requests_milli) {
    if (resource.rfind(kResourceMigPrefix, 0) != 0 || milli <= 0) continue;
    const std::string profile = resource.substr(std::string_view(kResourceMigPrefix).size());
    if (!u.mig_profile.empty() || milli > 1000 || u.gpus > 0)
      return Error::InvalidInput("pod " + PodKey(pod) +
                                 " asks for more than one GPU device of mixed kinds (MIG and GPUs, or several MIG "
                                 "devices): not representable as one unit");
    u.mig_profile = profile;
  }
  u.cpu_milli = Request(pod, "cpu");
  u.memory_mib = CeilDiv(Request(pod, "memory"), 1000 * kMiB);
  u.priority = pod.priority;
  u.labels["pod"] = PodKey(pod);
  return u;
}

void ApplyClass(const WorkloadClassPolicy* cls, DemandUnit* u) {
  if (cls == nullptr) return;
  u->workload_class = cls->name;
  u->interruptible = cls->interruptible;
  u->checkpoint_interval = cls->checkpoint_interval;
  u->checkpoint_on_notice = cls->checkpoint_on_notice;
  u->restart_cost = cls->restart_cost;
  u->expected_runtime = cls->expected_runtime;
  if (u->priority == 0) u->priority = cls->priority;
}

}  // namespace

bool WantsGpu(const PodInfo& pod) {
  for (const auto& [resource, milli] : pod.requests_milli) {
    if (milli > 0 && (resource == kResourceGpu || resource.rfind(kResourceMigPrefix, 0) == 0)) return true;
  }
  return false;
}

bool IsPendingGpuPod(const PodInfo& pod) {
  return pod.phase == "Pending" && pod.node_name.empty() && pod.unschedulable && !pod.deleting && WantsGpu(pod);
}

bool HoldsResources(const PodInfo& pod) { return !pod.node_name.empty() && !pod.Finished(); }

const WorkloadClassPolicy* ClassForPod(const Policy& policy, const PodInfo& pod) {
  const WorkloadClassPolicy* catch_all = nullptr;
  for (const WorkloadClassPolicy& c : policy.classes) {
    if (std::find(c.match_namespaces.begin(), c.match_namespaces.end(), pod.namespace_name) !=
        c.match_namespaces.end())
      return &c;
    if (!c.match_labels.empty() &&
        std::all_of(c.match_labels.begin(), c.match_labels.end(), [&](const auto& kv) {
          auto it = pod.labels.find(kv.first);
          return it != pod.labels.end() && it->second == kv.second;
        }))
      return &c;
    if (catch_all == nullptr && c.match_namespaces.empty() && c.match_labels.empty())
      catch_all = &c;
  }
  return catch_all;
}

bool Tolerates(const std::vector<Toleration>& tolerations, const Taint& taint) {
  for (const Toleration& t : tolerations) {
    if (!t.effect.empty() && t.effect != taint.effect) continue;
    if (t.op == "Exists") {
      if (t.key.empty() || t.key == taint.key) return true;
    } else if (t.key == taint.key && t.value == taint.value) {
      return true;
    }
  }
  return false;
}

bool ToleratesHardTaints(const std::vector<Toleration>& tolerations, const std::vector<Taint>& taints) {
  return std::all_of(taints.begin(), taints.end(), [&](const Taint& t) {
    return (t.effect != "NoSchedule" && t.effect != "NoExecute") || Tolerates(tolerations, t);
  });
}

Result<DemandUnit> PodDemand(const PodInfo& pod, const Policy& policy, const Catalog& catalog,
                             const GangDirectory* gangs) {
  const WorkloadClassPolicy* cls = ClassForPod(policy, pod);
  if (cls == nullptr) return Error::NotFound("pod " + PodKey(pod) + " matches no workload class");
  Result<DemandUnit> shaped = Shape(pod);
  if (!shaped) return shaped.error();
  DemandUnit u = std::move(shaped).value();
  ApplyClass(cls, &u);
  if (Status terms = ApplyWorkTerms(pod, cls, PodRun::kPending, &u); !terms) return terms.error();
  Result<std::optional<GangMembership>> gang = GangOfPod(pod, gangs);
  if (!gang) return gang.error();
  u.gang = *gang;

  const Allowed products = AllowedValues(pod, {kLabelGpuProduct}, GpuProductValue);
  if (!products.any) {
    for (const std::string& p : products.in) {
      // The catalog's canonical name when it knows the product.
      const GpuModel* m = catalog.FindGpuModel(p);
      u.gpu_models.push_back(m != nullptr ? m->name : p);
    }
    if (u.gpu_models.empty()) return Error::InvalidInput("pod " + PodKey(pod) + ": its GPU product constraints exclude every product");
  } else {
    u.gpu_models = cls->gpu_models;
  }
  if (u.min_gpu_memory_mib == 0) u.min_gpu_memory_mib = cls->min_gpu_memory_mib;
  const Allowed zones = AllowedValues(pod, {kLabelZone, kLabelZoneBeta}, Same);
  if (!zones.any) u.zones.assign(zones.in.begin(), zones.in.end());
  const Allowed types = AllowedValues(pod, {kLabelInstanceType, kLabelInstanceTypeBeta}, Same);
  if (!types.any) u.instance_types.assign(types.in.begin(), types.in.end());
  Allowed capacity = AllowedValues(pod, {kLabelKarpenterCapacityType, kLabelEksCapacityType}, CapacityTypeValue);
  if (capacity.any) capacity.Restrict({"spot", "on-demand"});  // NotIn over a known set
  if (capacity.in.empty()) return Error::InvalidInput("pod " + PodKey(pod) + ": its capacity-type constraints exclude spot and on-demand");
  if (capacity.in.size() == 1) u.capacity_type = ParseCapacityType(*capacity.in.begin());
  if (u.capacity_type == CapacityType::kOnDemand) u.interruptible = false;

  // Pools: the class's (or all), narrowed by a gpuscaler.io/pool selector
  // and by the taints the pod tolerates.
  std::vector<const NodePoolPolicy*> candidates;
  for (const NodePoolPolicy& p : policy.pools) {
    if (!cls->pools.empty() && std::find(cls->pools.begin(), cls->pools.end(), p.name) == cls->pools.end()) continue;
    candidates.push_back(&p);
  }
  const Allowed pinned = AllowedValues(pod, {kLabelPool}, Same);
  std::vector<const NodePoolPolicy*> usable;
  for (const NodePoolPolicy* p : candidates) {
    if (!pinned.any && pinned.in.count(p->name) == 0) continue;
    if (pinned.not_in.count(p->name) > 0) continue;
    if (ToleratesHardTaints(pod.tolerations, p->taints)) usable.push_back(p);
  }
  if (!candidates.empty() && usable.empty())
    return Error::InvalidInput("pod " + PodKey(pod) + " tolerates the taints of none of class " + cls->name +
                               "'s node pools (or selects none of them)");
  // A unit pins one pool at most: when only some pools fit, the first of
  // them (policy order) is the one it is planned for.
  if (usable.size() < candidates.size() || (usable.size() == 1 && cls->pools.size() != 1)) u.pool = usable.front()->name;
  else if (cls->pools.size() == 1) u.pool = cls->pools.front();
  return u;
}

DemandUnit RunningPodUnit(const PodInfo& pod, const Policy& policy, const Catalog& catalog,
                          const GangDirectory* gangs) {
  (void)catalog;
  Result<DemandUnit> shaped = Shape(pod);
  DemandUnit u;
  if (shaped) {
    u = std::move(shaped).value();
  } else {
    // Several MIG devices: still holds room; count one whole GPU per device.
    u.id = pod.uid.empty() ? PodKey(pod) : pod.uid;
    for (const auto& [resource, milli] : pod.requests_milli) {
      if (resource == kResourceGpu || resource.rfind(kResourceMigPrefix, 0) == 0)
        u.gpus += static_cast<int>(CeilDiv(milli, 1000));
    }
    u.cpu_milli = Request(pod, "cpu");
    u.memory_mib = CeilDiv(Request(pod, "memory"), 1000 * kMiB);
    u.priority = pod.priority;
  }
  const WorkloadClassPolicy* cls = ClassForPod(policy, pod);
  ApplyClass(cls, &u);
  // A running pod's bad annotation was reported while it was pending.
  (void)ApplyWorkTerms(pod, cls, PodRun::kRunning, &u);
  if (Result<std::optional<GangMembership>> gang = GangOfPod(pod, gangs)) u.gang = *gang;
  return u;
}

Offering OfferingFromLabels(const std::map<std::string, std::string>& labels) {
  const auto get = [&](std::initializer_list<const char*> keys) {
    for (const char* k : keys) {
      if (auto it = labels.find(k); it != labels.end()) return it->second;
    }
    return std::string();
  };
  Offering o;
  o.instance_type = get({kLabelInstanceType, kLabelInstanceTypeBeta});
  o.zone = get({kLabelZone, kLabelZoneBeta});
  o.region = get({kLabelRegion});
  if (o.region.empty() && !o.zone.empty()) {
    // AWS zones are the region plus a letter ("us-west-2a").
    std::string r = o.zone;
    while (!r.empty() && std::isalpha(static_cast<unsigned char>(r.back()))) r.pop_back();
    o.region = r;
  }
  const std::string capacity = CapacityTypeValue(get({kLabelKarpenterCapacityType, kLabelEksCapacityType}));
  o.capacity_type = capacity == "spot" ? CapacityType::kSpot : CapacityType::kOnDemand;
  return o;
}

bool SaysDoNotDisrupt(const std::map<std::string, std::string>& m) {
  return IsTrue(m, kDoNotDisrupt) || IsTrue(m, kKarpenterDoNotDisrupt);
}

Node ModelNode(const NodeInfo& node, const std::vector<const PodInfo*>& bound, const Policy& policy,
               const Catalog& catalog) {
  Node n;
  n.id = node.name;
  n.instance_id = node.instance_id;
  if (auto it = node.labels.find(kLabelPool); it != node.labels.end()) n.pool = it->second;
  n.offering = OfferingFromLabels(node.labels);
  n.launch_time = node.created;
  n.state = node.unschedulable ? NodeState::kCordoned : node.ready ? NodeState::kReady : NodeState::kLaunching;
  n.labels = node.labels;
  n.do_not_disrupt = SaysDoNotDisrupt(node.labels) || SaysDoNotDisrupt(node.annotations);
  for (const std::string& label : policy.disruption.do_not_disrupt_labels) {
    if (IsTrue(node.labels, label.c_str()) || IsTrue(node.annotations, label.c_str())) n.do_not_disrupt = true;
  }
  for (const PodInfo* p : bound) {
    if (HoldsResources(*p)) n.running.push_back(RunningPodUnit(*p, policy, catalog));
  }
  return n;
}

std::map<std::string, int64_t> FreeResources(const NodeInfo& node, const std::vector<const PodInfo*>& bound) {
  std::map<std::string, int64_t> free = node.allocatable_milli;
  for (const PodInfo* p : bound) {
    if (!HoldsResources(*p) || p->node_name != node.name) continue;
    for (const auto& [resource, milli] : p->requests_milli) {
      if (auto it = free.find(resource); it != free.end()) it->second -= milli;
    }
  }
  return free;
}

ClusterDemand DemandFromCluster(const std::vector<PodInfo>& pods, const std::vector<NodeInfo>& nodes,
                                const Policy& policy, const Catalog& catalog, std::string_view team_label,
                                const GangDirectory* gangs) {
  ClusterDemand out;
  // A unit is never planned onto a node whose taints its pod does not
  // tolerate: the scheduler would not bind it there. Both the node's name
  // and its instance id name it (nodes are keyed either way).
  std::vector<const NodeInfo*> tainted;
  for (const NodeInfo& n : nodes) {
    if (!ToleratesHardTaints({}, n.taints)) tainted.push_back(&n);
  }
  // What only the pod's labels and the nodes add: its team, the nodes it avoids.
  auto complete_unit = [&](const PodInfo& pod, DemandUnit u) {
    if (auto it = pod.labels.find(std::string(team_label)); it != pod.labels.end()) u.team = it->second;
    for (const NodeInfo* n : tainted) {
      if (ToleratesHardTaints(pod.tolerations, n->taints)) continue;
      u.avoid_nodes.push_back(n->name);
      if (!n->instance_id.empty() && n->instance_id != n->name) u.avoid_nodes.push_back(n->instance_id);
    }
    return u;
  };
  std::map<std::string, std::string> key_of_node;
  for (const NodeInfo& n : nodes) key_of_node[n.name] = n.instance_id.empty() ? n.name : n.instance_id;
  std::vector<const PodInfo*> pending;
  for (const PodInfo& p : pods) {
    if (IsPendingGpuPod(p)) {
      pending.push_back(&p);
    } else if (HoldsResources(p)) {
      auto k = key_of_node.find(p.node_name);
      out.running[k == key_of_node.end() ? p.node_name : k->second].push_back(
          complete_unit(p, RunningPodUnit(p, policy, catalog, gangs)));
    }
  }
  std::stable_sort(pending.begin(), pending.end(), [](const PodInfo* a, const PodInfo* b) {
    if (a->priority != b->priority) return a->priority > b->priority;
    if (a->created != b->created) return a->created < b->created;
    return PodKey(*a) < PodKey(*b);
  });
  for (const PodInfo* p : pending) {
    Result<DemandUnit> u = PodDemand(*p, policy, catalog, gangs);
    if (u) out.pending.push_back(complete_unit(*p, std::move(u).value()));
    else out.skipped.push_back(PodKey(*p) + ": " + u.error().message());
  }
  return out;
}

}  // namespace gpuscaler::kube
