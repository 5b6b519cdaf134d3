#include "kube_setup.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <random>

#include "gpuscaler/controller/cluster_nodes.h"
#include "gpuscaler/kube/async_drain.h"
#include "gpuscaler/kube/cluster_cache.h"
#include "gpuscaler/kube/cluster_provider.h"
#include "gpuscaler/kube/config.h"
#include "gpuscaler/kube/gangs.h"
#include "gpuscaler/kube/leader.h"
#include "gpuscaler/kube/provisioning.h"
#include "gpuscaler/kube/workload.h"

namespace gpuscaler::daemon {
namespace {

// How long start-up waits for the first list of pods and nodes. Past it the
// daemon runs anyway: the "kubernetes" signal is missing, which blocks
// scale-down until the cache syncs (fail static).
constexpr std::chrono::seconds kInitialSync{15};
constexpr std::chrono::seconds kDrainRetry{5};

// The ClusterNodes seam over the cache (node health) and the drainer
// (drains on its own thread). Called from the engine's thread.
class KubeClusterNodes final : public ClusterNodes {
 public:
  KubeClusterNodes(const kube::ClusterCache& cache, kube::AsyncDrainer& drainer) : cache_(cache), drainer_(drainer) {}

  bool Synced() override {
    view_ = cache_.View();
    return view_.synced;
  }
  std::optional<NodeHealth> Health(const std::string& instance_id) override {
    const kube::NodeInfo* node = Find(instance_id);
    if (node == nullptr) return std::nullopt;
    // Whole GPUs, or MIG slices under the device plugin's "mixed" strategy.
    bool gpus = false;
    for (const auto& [resource, milli] : node->allocatable_milli) {
      gpus |= milli > 0 && (resource == "nvidia.com/gpu" || resource.rfind("nvidia.com/mig-", 0) == 0);
    }
    return NodeHealth{node->ready, gpus, node->ready_changed_at};
  }
  Status BeginDrain(const DrainRequest& request) override {
    if (!Synced()) return Error::Transient("kubernetes nodes not listed yet: drain of " + request.instance_id + " waits");
    const kube::NodeInfo* node = Find(request.instance_id);
    if (node == nullptr) return Error::NotFound("no node for instance " + request.instance_id);
    kube::DrainOptions o;
    o.timeout = request.timeout;
    o.retry_interval = kDrainRetry;
    o.reason = request.reason;
    o.extra_do_not_disrupt_keys = request.do_not_disrupt_keys;
    requests_[request.instance_id] = request;
    drainer_.Begin(request.instance_id, node->name, std::move(o));
    return Status::Ok();
  }
  std::vector<DrainOutcome> TakeEndedDrains() override {
    std::vector<DrainOutcome> out;
    for (kube::AsyncDrainer::Outcome& e : drainer_.TakeEnded()) {
      DrainOutcome d;
      auto it = requests_.find(e.key);
      if (it != requests_.end()) {
        d.request = it->second;
        requests_.erase(it);
      }
      d.request.instance_id = e.key;
      d.end = EndOf(e.end);
      d.detail = e.detail;
      d.started = e.started;
      d.ended = e.ended;
      d.evicted = e.result.evicted;
      if (d.end == DrainEnd::kDrained) {
        spdlog::info("drain of node {} ({}) done: {} pod(s) evicted", e.node_name, e.key, e.result.evicted);
      } else {
        spdlog::warn("drain of node {} ({}) {}: {}", e.node_name, e.key, ToString(d.end), e.detail);
      }
      out.push_back(std::move(d));
    }
    return out;
  }
  Status Cordon(const std::string& instance_id, bool unschedulable) override {
    (void)Synced();
    const kube::NodeInfo* node = Find(instance_id);
    if (node == nullptr) return Error::NotFound("no node for instance " + instance_id);
    return cordon_(node->name, unschedulable);
  }

  Status SetWarm(const std::string& instance_id, bool warm) override {
    (void)Synced();
    const kube::NodeInfo* node = Find(instance_id);
    if (node == nullptr) return Error::NotFound("no node for instance " + instance_id);
    return set_warm_(node->name, warm);
  }

  std::function<Status(const std::string& node_name, bool unschedulable)> cordon_;
  std::function<Status(const std::string& node_name, bool warm)> set_warm_;

 private:
  static DrainEnd EndOf(kube::AsyncDrainer::End e) {
    switch (e) {
      case kube::AsyncDrainer::End::kDrained: return DrainEnd::kDrained;
      case kube::AsyncDrainer::End::kTimedOut: return DrainEnd::kTimedOut;
      case kube::AsyncDrainer::End::kRefused: return DrainEnd::kRefused;
      case kube::AsyncDrainer::End::kFailed: return DrainEnd::kFailed;
    }
    return DrainEnd::kFailed;
  }
  const kube::NodeInfo* Find(const std::string& instance_id) const {
    for (const kube::NodeInfo& n : view_.nodes) {
      if (!instance_id.empty() && n.instance_id == instance_id) return &n;
    }
    return nullptr;
  }

  const kube::ClusterCache& cache_;
  kube::AsyncDrainer& drainer_;
  kube::ClusterView view_;
  std::map<std::string, DrainRequest> requests_;  // open drains, by instance id
};

// Everything the Kubernetes side owns; destroyed with the daemon's setup,
// after the engine (which calls into it) is gone.
struct KubeRuntime {
  SystemClock system_clock;   // leader election's
  std::shared_ptr<const Clock> daemon_clock;  // under --speed; else null
  const Clock* clock = nullptr;  // drains and freshness: the daemon's time
  std::unique_ptr<kube::ApiClient> client;
  std::unique_ptr<kube::ClusterCache> cache;
  std::unique_ptr<kube::LeaderElector> elector;
  // Drains run on their own thread with their own client, so a slow
  // eviction never shares a connection with the loop's calls.
  std::unique_ptr<kube::ApiClient> drain_client;
  std::unique_ptr<kube::AsyncDrainer> drainer;
  std::unique_ptr<kube::Drainer> cordoner;  // single cordon calls (rebalance), on the engine's thread
  std::unique_ptr<KubeClusterNodes> nodes;
  std::unique_ptr<kube::ClusterCloudProvider> cloud;
  std::string skipped_signature;  // the skipped pods last logged
  // ProvisioningRequests: read with the demand, reconciled after the tick
  // (both on the engine's thread).
  kube::ProvisioningReconciler provisioning;
  kube::ProvisioningInputs provisioning_inputs;
  kube::ClusterView provisioning_view;
  // Status writes by request, with the resourceVersion they were computed
  // from: not written again until the cache shows a newer version.
  std::map<std::string, std::string> status_written;

  ~KubeRuntime() {
    // Open drains stay cordoned, their deadline on the node: the next
    // leader resumes them.
    if (drainer) drainer->Stop();
    // Hand the Lease over at once rather than after its duration.
    if (elector) elector->Stop(/*release=*/true);
    if (cache) cache->Stop();
  }

  bool Leading() const { return !elector || elector->IsLeader(); }
};

std::string Identity() {
  std::string base;
  if (const char* pod = std::getenv("POD_NAME"); pod != nullptr && *pod != '\0') base = pod;
  if (base.empty()) {
    char host[256] = {};
    if (::gethostname(host, sizeof host - 1) == 0) base = host;
  }
  if (base.empty()) base = "gpuscaler";
  // A suffix per process: a restarted pod with the same name is a new
  // candidate, not the old holder.
  std::random_device rd;
  char suffix[17];
  std::snprintf(suffix, sizeof suffix, "%08x%08x", rd(), rd());
  return base + "_" + suffix;
}

Result<kube::ClusterConfig> ClusterConfigFor(const KubernetesSettings& k) {
  if (!k.in_cluster) return kube::KubeconfigConfig(k.kubeconfig, k.context);
  return kube::InClusterConfig([](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  });
}

// Where this tick's plan put each member of a ProvisioningRequest.
std::map<std::string, kube::MemberPlacement> MemberPlacements(const Plan& plan) {
  using Where = kube::MemberPlacement::Where;
  std::map<std::string, kube::MemberPlacement> out;
  const auto member = [](const std::string& id) { return id.rfind(kube::kRequestMemberPrefix, 0) == 0; };
  for (const Placement& p : plan.placements) {
    if (member(p.unit_id)) out[p.unit_id] = {p.node_id.empty() ? Where::kNewLaunch : Where::kOnNode, ""};
  }
  for (const LaunchAction& l : plan.launches) {
    for (const std::string& id : l.unit_ids) {
      if (member(id)) out[id] = {Where::kNewLaunch, ""};
    }
  }
  for (const UnplacedUnit& u : plan.unplaced) {
    if (member(u.unit_id))
      out[u.unit_id] = {Where::kUnplaced, std::string(ToString(u.reason)) + (u.detail.empty() ? "" : ": " + u.detail)};
  }
  return out;
}

// The leader writes the conditions this tick's plan decided, each request
// once per version of it.
void ReconcileProvisioning(KubeRuntime* rt, const TickReport& report) {
  if (!rt->Leading() || !rt->provisioning_view.synced || !rt->provisioning_view.gang_sources_synced) return;
  std::optional<std::map<std::string, kube::MemberPlacement>> placements;
  if (report.planned) placements = MemberPlacements(report.plan);
  const std::vector<kube::RequestStatusUpdate> updates =
      rt->provisioning.Reconcile(rt->provisioning_inputs, placements, rt->provisioning_view.nodes,
                                 rt->provisioning_view.pods, report.time);
  for (const kube::RequestStatusUpdate& u : updates) {
    const std::string key = u.namespace_name + "/" + u.name;
    if (auto it = rt->status_written.find(key); it != rt->status_written.end() && it->second == u.resource_version)
      continue;  // written; the cache has not caught up yet
    Result<kube::ApiResponse> r =
        rt->client->Call("PATCH", kube::StatusPath(u), kube::ConditionsPatch(u).dump(), "application/merge-patch+json");
    if (r && r->ok()) {
      rt->status_written[key] = u.resource_version;
      spdlog::info("ProvisioningRequest {}: {}", key, u.summary);
    } else {
      spdlog::warn("ProvisioningRequest {}: status not written ({}); tried again next tick", key,
                   r ? kube::ApiError(*r, "PATCH status").message() : r.error().message());
    }
  }
}

}  // namespace

Status SetUpKubernetes(const DaemonConfig& config, const Catalog& catalog, LiveEngineParts* parts,
                       DaemonSetup* setup, std::shared_ptr<const Clock> clock) {
  const KubernetesSettings& k = config.kubernetes;
  Result<kube::ClusterConfig> cluster = ClusterConfigFor(k);
  if (!cluster) return cluster.error().WithContext("kubernetes");
  if (!k.namespace_name.empty()) cluster->namespace_name = k.namespace_name;

  auto rt = std::make_shared<KubeRuntime>();
  rt->daemon_clock = std::move(clock);
  rt->clock = rt->daemon_clock ? rt->daemon_clock.get() : &rt->system_clock;
  rt->client = std::make_unique<kube::ApiClient>(*cluster);
  rt->cache = std::make_unique<kube::ClusterCache>(*rt->client, *rt->clock);
  if (k.leader_election.enabled) {
    kube::LeaderElectionOptions le;
    le.namespace_name =
        k.leader_election.namespace_name.empty() ? cluster->namespace_name : k.leader_election.namespace_name;
    le.lease_name = k.leader_election.lease_name;
    le.lease_duration = k.leader_election.lease_duration;
    le.renew_deadline = k.leader_election.renew_deadline;
    le.retry_period = k.leader_election.retry_period;
    le.identity = Identity();
    if (Status s = kube::ValidateLeaderElection(le); !s.ok()) return s;
    rt->elector = std::make_unique<kube::LeaderElector>(*rt->client, rt->system_clock, le, [id = le.identity](bool leader) {
      if (leader) spdlog::info("leader election: {} holds the lease; acting", id);
      else spdlog::warn("leader election: {} lost the lease; actuation stopped", id);
    });
  }
  KubeRuntime* raw = rt.get();
  rt->drain_client = std::make_unique<kube::ApiClient>(*cluster);
  rt->drainer = std::make_unique<kube::AsyncDrainer>(*rt->drain_client, *rt->clock, [raw] { return raw->Leading(); });
  rt->cordoner = std::make_unique<kube::Drainer>(*rt->client, *rt->clock, [](std::chrono::milliseconds) { return false; });
  rt->nodes = std::make_unique<KubeClusterNodes>(*rt->cache, *rt->drainer);
  rt->nodes->cordon_ = [raw](const std::string& node_name, bool unschedulable) {
    return raw->cordoner->Cordon(node_name, unschedulable);
  };
  rt->nodes->set_warm_ = [raw](const std::string& node_name, bool warm) {
    return raw->cordoner->SetWarm(node_name, warm);
  };
  parts->cluster_nodes = rt->nodes.get();
  kube::ClusterCloudProvider::Parts cp;
  cp.inner = parts->cloud;
  if (rt->elector) cp.is_leader = [raw] { return raw->Leading(); };
  // Spot notices nodes report about themselves (gpuscaler node-agent).
  cp.node_notices = [raw] {
    const kube::ClusterView view = raw->cache->View();
    return kube::SpotNoticesFromNodes(view.nodes, raw->clock->WallNow());
  };
  rt->cloud = std::make_unique<kube::ClusterCloudProvider>(std::move(cp));
  parts->cloud = rt->cloud.get();

  parts->read_cluster = [raw, &catalog, team_label = config.kubernetes.team_label](const Policy& policy,
                                                                                   WallTime now) {
    kube::ClusterView view = raw->cache->View();
    ClusterWork work;
    work.status.name = "kubernetes pods and nodes";
    work.status.source = "kubernetes";
    for (const WorkloadClassPolicy& c : policy.classes) work.status.classes.push_back(c.name);
    work.status.sampled_at = raw->cache->FreshAt();
    if (!view.synced) return work;  // missing: scale-down blocked, no pod demand yet
    // Until the gang sources are listed there are no requests to serve (and
    // none is answered: ReconcileProvisioning waits too).
    raw->provisioning_inputs = view.gang_sources_synced ? kube::ReadProvisioningInputs(view.provisioning_requests,
                                                                                       view.pod_templates, view.pods)
                                                        : kube::ProvisioningInputs{};
    const kube::GangDirectory gangs =
        kube::GangDirectory::From(raw->provisioning_inputs.requests, view.pod_groups, view.volcano_pod_groups);
    kube::ClusterDemand demand = kube::DemandFromCluster(view.pods, view.nodes, policy, catalog, team_label, &gangs);
    work.pending = std::move(demand.pending);
    for (DemandUnit& u : raw->provisioning.Demand(raw->provisioning_inputs, policy, catalog, now, &demand.skipped)) {
      work.pending.push_back(std::move(u));
    }
    for (const std::string& s : raw->provisioning_inputs.unreadable) demand.skipped.push_back(s);
    raw->provisioning_view = std::move(view);
    work.running = std::move(demand.running);
    work.status.value = static_cast<double>(work.pending.size());
    std::string signature;
    for (const std::string& s : demand.skipped) signature += s + "\n";
    if (signature != raw->skipped_signature) {
      raw->skipped_signature = signature;
      for (const std::string& s : demand.skipped) spdlog::warn("kubernetes: pending GPU pod not counted: {}", s);
    }
    return work;
  };
  parts->observe_tick = [raw](const TickReport& report) { ReconcileProvisioning(raw, report); };
  if (rt->elector) {
    setup->is_leader = [raw] { return raw->Leading(); };
    setup->lease_view = [raw] {
      return LeaseView{std::chrono::duration<double>(raw->elector->LeaderlessFor()).count(),
                       raw->elector->transitions_seen(), raw->elector->identity()};
    };
  }

  rt->cache->Start();
  if (rt->elector) rt->elector->Start();
  rt->drainer->Start();
  if (!rt->cache->WaitSynced(kInitialSync)) {
    spdlog::warn("kubernetes: no complete list of pods and nodes from {} after {}s ({}); scale-down waits for it",
                 cluster->server, kInitialSync.count(), rt->cache->pod_stats().last_error);
  } else {
    // The gang sources are usually listed with the pods; a broken one is
    // waited for no longer than the pods were, and then only logged.
    if (!rt->cache->WaitUntil([](const kube::ClusterView& v) { return v.gang_sources_synced; }, kInitialSync)) {
      spdlog::warn("kubernetes: ProvisioningRequests, PodTemplates or PodGroups not listed after {}s ({}); "
                   "gangs from them wait for it",
                   kInitialSync.count(), rt->cache->Stats(kube::CachedKind::kProvisioningRequests).last_error);
    }
    const kube::ClusterView v = rt->cache->View();
    spdlog::info("kubernetes: {} ({}), {} nodes, {} pods, {} ProvisioningRequests; leader election {}",
                 cluster->server, k.in_cluster ? "in-cluster" : k.kubeconfig, v.nodes.size(), v.pods.size(),
                 v.provisioning_requests.size(),
                 rt->elector ? "on, identity " + rt->elector->identity() : std::string("off"));
  }
  setup->keep_alive.push_back(std::move(rt));
  return Status::Ok();
}

}  // namespace gpuscaler::daemon
