// ClusterCache: every pod and node of the cluster, kept current by list and
// watch (the informer pattern of client-go's Reflector):
//  - LIST in pages (limit/continue) gives the objects and a resourceVersion;
//  - WATCH from it with allowWatchBookmarks; ADDED/MODIFIED/DELETED change the
//    cache, BOOKMARK only moves the resourceVersion;
//  - a watch that ends (the server's timeoutSeconds, a dropped connection)
//    is started again from the last resourceVersion seen, after a backoff
//    when it failed (doubling from initial_backoff up to max_backoff);
//  - "410 Gone" (as the HTTP status or as an ERROR event: the version is
//    older than the server's history) drops the cache and lists again.
// One thread per kind between Start() and Stop(). Thread-safe: View() and
// the accessors may be called from any thread.
//
// Besides pods and nodes it keeps the objects gangs are read from (see
// kube/gangs.h): PodTemplates, ProvisioningRequests and the PodGroups of the
// coscheduling plugin and of Volcano. The last three are custom resources
// that a cluster may not have: a list answered 404 (not served) or 403 (not
// allowed) leaves that kind empty and counts as listed, and it is listed
// again after absent_kind_recheck. Only pods and nodes decide whether the
// cluster is known (synced, FreshAt): a gang source that cannot be read
// keeps its last list (or none) and never holds back pod demand.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "gpuscaler/model/clock.h"
#include "gpuscaler/kube/client.h"
#include "gpuscaler/kube/objects.h"

namespace gpuscaler::kube {

struct ClusterCacheOptions {
  std::chrono::milliseconds initial_backoff{500};
  std::chrono::milliseconds max_backoff{30000};
  // Asked of the server per watch: it ends the watch quietly after this, and
  // the cache starts a new one (so a silently dead connection is noticed).
  int watch_timeout_seconds = 60;
  // No byte for this long on a watch: the connection is given up.
  std::chrono::milliseconds watch_idle_timeout{90000};
  int list_page_size = 500;
  // How often a kind the server does not serve (or lets us list) is tried again.
  std::chrono::milliseconds absent_kind_recheck{300000};
};

// The kinds the cache keeps, in the order of ClusterCache::Stats.
enum class CachedKind { kPods, kNodes, kPodTemplates, kProvisioningRequests, kPodGroups, kVolcanoPodGroups };
// The list path of a kind ("/api/v1/pods", "/apis/autoscaling.x-k8s.io/v1/provisioningrequests").
const char* ListPath(CachedKind kind);

struct ClusterView {
  std::vector<PodInfo> pods;    // by namespace/name
  std::vector<NodeInfo> nodes;  // by name
  // As the API server has them, by namespace/name (empty where not served).
  std::vector<nlohmann::json> pod_templates;
  std::vector<nlohmann::json> provisioning_requests;
  std::vector<nlohmann::json> pod_groups;          // scheduling.x-k8s.io (coscheduling)
  std::vector<nlohmann::json> volcano_pod_groups;  // scheduling.volcano.sh
  bool synced = false;                // pods and nodes listed at least once
  bool gang_sources_synced = false;   // the other four listed at least once (or found absent)
};

// Counters of one kind's list/watch loop (for tests, logs and metrics).
struct WatchStats {
  int64_t lists = 0;
  int64_t relists_after_gone = 0;  // lists because of 410
  int64_t watches = 0;             // watch requests started
  int64_t events = 0;              // ADDED / MODIFIED / DELETED applied
  int64_t bookmarks = 0;
  int64_t failures = 0;            // failed lists and watches
  std::string resource_version;    // where the next watch starts
  std::string last_error;
  bool served = true;              // false: the last list was answered 404 or 403
};

class ClusterCache {
 public:
  // `client` and `clock` must outlive the cache.
  ClusterCache(ApiClient& client, const Clock& clock, ClusterCacheOptions options = {});
  ~ClusterCache();
  ClusterCache(const ClusterCache&) = delete;
  ClusterCache& operator=(const ClusterCache&) = delete;

  void Start();
  // Ends both loops (an open watch within ~100 ms) and joins them. Idempotent.
  void Stop();

  ClusterView View() const;
  // Waits (condition variable, no polling) until `done(View())` holds; false
  // when `timeout` passes first.
  bool WaitUntil(const std::function<bool(const ClusterView&)>& done, std::chrono::milliseconds timeout) const;
  bool WaitSynced(std::chrono::milliseconds timeout) const {
    return WaitUntil([](const ClusterView& v) { return v.synced; }, timeout);
  }
  // When the cache was last known to match the cluster: now while the pod
  // and node watches run, else the last moment both did; nullopt before the
  // first sync.
  std::optional<WallTime> FreshAt() const;
  WatchStats Stats(CachedKind kind) const;
  WatchStats pod_stats() const { return Stats(CachedKind::kPods); }
  WatchStats node_stats() const { return Stats(CachedKind::kNodes); }

 private:
  class Loop;
  ApiClient& client_;
  const Clock& clock_;
  ClusterCacheOptions options_;
  mutable std::mutex mu_;
  mutable std::condition_variable changed_;
  uint64_t version_ = 0;  // under mu_: bumped with every change, so a waiter misses none
  ClusterView ViewLocked() const;
  std::vector<std::unique_ptr<Loop>> loops_;  // by CachedKind
};

}  // namespace gpuscaler::kube
