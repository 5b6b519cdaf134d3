#include "kube_setup.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <random>

#include "gpuscaler/kube/cluster_cache.h"
#include "gpuscaler/kube/cluster_provider.h"
#include "gpuscaler/kube/config.h"
#include "gpuscaler/kube/drain.h"
#include "gpuscaler/kube/leader.h"
#include "gpuscaler/kube/workload.h"

namespace gpuscaler::daemon {
namespace {

// How long start-up waits for the first list of pods and nodes. Past it the
// daemon runs anyway: the "kubernetes" signal is missing, which blocks
// scale-down until the cache syncs (fail static).
constexpr std::chrono::seconds kInitialSync{15};
constexpr std::chrono::seconds kDrainRetry{5};

// Everything the Kubernetes side owns; destroyed with the daemon's setup,
// after the engine (which calls into it) is gone.
struct KubeRuntime {
  SystemClock clock;
  std::unique_ptr<kube::ApiClient> client;
  std::unique_ptr<kube::ClusterCache> cache;
  std::unique_ptr<kube::LeaderElector> elector;
  std::unique_ptr<kube::Drainer> drainer;
  std::unique_ptr<kube::ClusterCloudProvider> cloud;
  // The policy's drain settings as of the last tick (read_cluster and
  // Terminate both run on the engine's worker thread).
  Seconds drain_timeout{600};
  std::vector<std::string> do_not_disrupt_keys;
  std::string skipped_signature;  // the skipped pods last logged
  // Drain waits end early at shutdown.
  std::mutex mu;
  std::condition_variable wake;
  bool stopping = false;

  ~KubeRuntime() {
    {
      std::lock_guard<std::mutex> lock(mu);
      stopping = true;
    }
    wake.notify_all();
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

// The decision's reason for terminating `instance_id`: its terminate intent
// is open in the store while the provider is called.
std::string ReasonFor(AuditStore* store, const std::string& instance_id) {
  if (store == nullptr) return "";
  Result<std::vector<ActionRow>> open = store->OpenIntents();
  if (!open) return "";
  for (auto it = open->rbegin(); it != open->rend(); ++it) {
    const ActionRecord& a = it->action;
    if (a.kind == ActionKind::kTerminate &&
        std::find(a.instance_ids.begin(), a.instance_ids.end(), instance_id) != a.instance_ids.end())
      return a.reason;
  }
  return "";
}

}  // namespace

Status SetUpKubernetes(const DaemonConfig& config, const Catalog& catalog, LiveEngineParts* parts,
                       DaemonSetup* setup) {
  const KubernetesSettings& k = config.kubernetes;
  Result<kube::ClusterConfig> cluster = ClusterConfigFor(k);
  if (!cluster) return cluster.error().WithContext("kubernetes");
  if (!k.namespace_name.empty()) cluster->namespace_name = k.namespace_name;

  auto rt = std::make_shared<KubeRuntime>();
  rt->client = std::make_unique<kube::ApiClient>(*cluster);
  rt->cache = std::make_unique<kube::ClusterCache>(*rt->client, rt->clock);
  if (k.leader_election.enabled) {
    kube::LeaderElectionOptions le;
    le.namespace_name =
        k.leader_election.namespace_name.empty() ? cluster->namespace_name : k.leader_election.namespace_name;
    le.lease_name = k.leader_election.lease_name;
    le.identity = Identity();
    if (Status s = kube::ValidateLeaderElection(le); !s.ok()) return s;
    rt->elector = std::make_unique<kube::LeaderElector>(*rt->client, rt->clock, le, [id = le.identity](bool leader) {
      if (leader) spdlog::info("leader election: {} holds the lease; acting", id);
      else spdlog::warn("leader election: {} lost the lease; actuation stopped", id);
    });
  }
  KubeRuntime* raw = rt.get();
  rt->drainer = std::make_unique<kube::Drainer>(*rt->client, rt->clock, [raw](std::chrono::milliseconds d) {
    std::unique_lock<std::mutex> lock(raw->mu);
    raw->wake.wait_for(lock, d, [raw] { return raw->stopping; });
    // Losing the Lease ends a drain at once: the new leader decides again.
    return !raw->stopping && raw->Leading();
  });
  AuditStore* store = parts->store;
  kube::ClusterCloudProvider::Parts cp;
  cp.inner = parts->cloud;
  cp.cache = rt->cache.get();
  cp.drainer = rt->drainer.get();
  if (rt->elector) cp.is_leader = [raw] { return raw->Leading(); };
  cp.drain_options = [raw, store](const std::string& instance_id) {
    kube::DrainOptions o;
    o.timeout = raw->drain_timeout;
    o.retry_interval = kDrainRetry;
    o.extra_do_not_disrupt_keys = raw->do_not_disrupt_keys;
    o.reason = ReasonFor(store, instance_id);
    return o;
  };
  rt->cloud = std::make_unique<kube::ClusterCloudProvider>(std::move(cp));
  parts->cloud = rt->cloud.get();

  parts->read_cluster = [raw, &catalog, team_label = config.kubernetes.team_label](const Policy& policy, WallTime) {
    raw->drain_timeout = policy.disruption.drain_timeout;
    raw->do_not_disrupt_keys = policy.disruption.do_not_disrupt_labels;
    const kube::ClusterView view = raw->cache->View();
    ClusterWork work;
    work.status.name = "kubernetes pods and nodes";
    work.status.source = "kubernetes";
    for (const WorkloadClassPolicy& c : policy.classes) work.status.classes.push_back(c.name);
    work.status.sampled_at = raw->cache->FreshAt();
    if (!view.synced) return work;  // missing: scale-down blocked, no pod demand yet
    kube::ClusterDemand demand = kube::DemandFromCluster(view.pods, view.nodes, policy, catalog, team_label);
    work.pending = std::move(demand.pending);
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
  if (rt->elector) setup->is_leader = [raw] { return raw->Leading(); };

  rt->cache->Start();
  if (rt->elector) rt->elector->Start();
  if (!rt->cache->WaitSynced(kInitialSync)) {
    spdlog::warn("kubernetes: no complete list of pods and nodes from {} after {}s ({}); scale-down waits for it",
                 cluster->server, kInitialSync.count(), rt->cache->pod_stats().last_error);
  } else {
    const kube::ClusterView v = rt->cache->View();
    spdlog::info("kubernetes: {} ({}), {} nodes, {} pods; leader election {}", cluster->server,
                 k.in_cluster ? "in-cluster" : k.kubeconfig, v.nodes.size(), v.pods.size(),
                 rt->elector ? "on, identity " + rt->elector->identity() : std::string("off"));
  }
  setup->keep_alive.push_back(std::move(rt));
  return Status::Ok();
}

}  // namespace gpuscaler::daemon
