#include "gpuscaler/kube/cluster_cache.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "gpuscaler/net/url.h"
#include "json_objects.h"

namespace gpuscaler::kube {

using nlohmann::json;

namespace cache_detail {

struct KindSpec {
  const char* path;
  WatchResource resource;
  bool optional;  // a custom resource the cluster may not serve
};

KindSpec SpecOf(CachedKind kind) {
  switch (kind) {
    case CachedKind::kPods:
      return {"/api/v1/pods", WatchResource::kPods, false};
    case CachedKind::kNodes:
      return {"/api/v1/nodes", WatchResource::kNodes, false};
    case CachedKind::kPodTemplates:
      return {"/api/v1/podtemplates", WatchResource::kObjects, false};
    case CachedKind::kProvisioningRequests:
      return {"/apis/autoscaling.x-k8s.io/v1/provisioningrequests", WatchResource::kObjects, true};
    case CachedKind::kPodGroups:
      return {"/apis/scheduling.x-k8s.io/v1alpha1/podgroups", WatchResource::kObjects, true};
    case CachedKind::kVolcanoPodGroups:
      return {"/apis/scheduling.volcano.sh/v1beta1/podgroups", WatchResource::kObjects, true};
  }
  return {"", WatchResource::kObjects, true};
}

}  // namespace cache_detail

namespace {

using cache_detail::KindSpec;
using cache_detail::SpecOf;

constexpr CachedKind kAllKinds[] = {CachedKind::kPods,         CachedKind::kNodes,
                                    CachedKind::kPodTemplates, CachedKind::kProvisioningRequests,
                                    CachedKind::kPodGroups,    CachedKind::kVolcanoPodGroups};

std::string ObjectKey(const json& object) {
  const json& meta = ObjectAt(object, "metadata");
  const std::string ns = StringAt(meta, "namespace");
  return ns.empty() ? StringAt(meta, "name") : ns + "/" + StringAt(meta, "name");
}

}  // namespace

const char* ListPath(CachedKind kind) { return cache_detail::SpecOf(kind).path; }

// One kind's list/watch loop. Its state is guarded by the cache's mutex;
// every change notifies the cache's condition variable.
class ClusterCache::Loop {
 public:
  Loop(ClusterCache& cache, CachedKind kind) : cache_(cache), spec_(SpecOf(kind)), base_(spec_.path) {}
  ~Loop() { Stop(); }

  void Start() {
    stop_ = false;
    thread_ = std::thread([this] { Run(); });
  }
  void Stop() {
    {
      std::lock_guard<std::mutex> lock(cache_.mu_);
      stop_ = true;
    }
    cache_.changed_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

  // Under cache_.mu_.
  bool synced = false;
  bool watching = false;
  std::optional<WallTime> fresh_at;  // last time this kind was known current
  std::map<std::string, PodInfo> pods;
  std::map<std::string, NodeInfo> nodes;
  std::map<std::string, json> objects;  // WatchResource::kObjects
  WatchStats stats;

 private:
  void Run() {
    std::chrono::milliseconds backoff = cache_.options_.initial_backoff;
    bool need_list = true;
    while (!Stopping()) {
      bool failed = false;
      if (need_list) {
        const ListEnd end = List();
        failed = end == ListEnd::kFailed;
        need_list = end != ListEnd::kListed;
        if (end == ListEnd::kAbsent) {
          std::unique_lock<std::mutex> lock(cache_.mu_);
          cache_.changed_.wait_for(lock, cache_.options_.absent_kind_recheck, [this] { return stop_; });
          continue;
        }
      } else {
        switch (Watch()) {
          case WatchEnd::kClean:
            break;
          case WatchEnd::kGone:
            need_list = true;
            break;
          case WatchEnd::kFailed:
            failed = true;
            break;
        }
      }
      if (!failed) {
        backoff = cache_.options_.initial_backoff;
        continue;
      }
      std::unique_lock<std::mutex> lock(cache_.mu_);
      cache_.changed_.wait_for(lock, backoff, [this] { return stop_; });
      backoff = std::min(backoff * 2, cache_.options_.max_backoff);
    }
  }

  bool Stopping() {
    std::lock_guard<std::mutex> lock(cache_.mu_);
    return stop_;
  }

  void Fail(const std::string& what) {
    {
      std::lock_guard<std::mutex> lock(cache_.mu_);
      ++stats.failures;
      stats.last_error = what;
      ++cache_.version_;
    }
    cache_.changed_.notify_all();
  }

  enum class ListEnd { kListed, kFailed, kAbsent };

  // A full list, page by page, replacing the cache.
  ListEnd List() {
    std::map<std::string, PodInfo> new_pods;
    std::map<std::string, NodeInfo> new_nodes;
    std::map<std::string, json> new_objects;
    std::string rv, cont;
    do {
      std::string path = base_ + "?limit=" + std::to_string(cache_.options_.list_page_size);
      if (!cont.empty()) path += "&continue=" + net::PercentEncode(cont);
      Result<ApiResponse> r = cache_.client_.Get(path);
      if (!r) {
        Fail(r.error().message());
        return ListEnd::kFailed;
      }
      if (r->status == 410 && !cont.empty()) {
        // The continue token expired mid-list: start over.
        new_pods.clear();
        new_nodes.clear();
        new_objects.clear();
        cont.clear();
        continue;
      }
      if (spec_.optional && (r->status == 404 || r->status == 403)) {
        MarkAbsent(ApiError(*r, "list " + base_).message());
        return ListEnd::kAbsent;
      }
      if (!r->ok()) {
        Fail(ApiError(*r, "list " + base_).message());
        return ListEnd::kFailed;
      }
      try {
        const json list = json::parse(r->body);
        const json& meta = ObjectAt(list, "metadata");
        if (rv.empty()) rv = StringAt(meta, "resourceVersion");
        cont = StringAt(meta, "continue");
        for (const json& item : ArrayAt(list, "items")) {
          if (spec_.resource == WatchResource::kPods) {
            Result<PodInfo> p = PodFromJson(item);
            if (p) new_pods[p->namespace_name + "/" + p->name] = std::move(p).value();
          } else if (spec_.resource == WatchResource::kNodes) {
            Result<NodeInfo> n = NodeFromJson(item);
            if (n) new_nodes[n->name] = std::move(n).value();
          } else if (item.is_object()) {
            new_objects[ObjectKey(item)] = item;
          }
        }
      } catch (const json::exception& e) {
        Fail("list " + base_ + ": " + e.what());
        return ListEnd::kFailed;
      }
    } while (!cont.empty() && !Stopping());
    std::lock_guard<std::mutex> lock(cache_.mu_);
    pods = std::move(new_pods);
    nodes = std::move(new_nodes);
    objects = std::move(new_objects);
    stats.resource_version = rv;
    Listed(/*served=*/true);
    return ListEnd::kListed;
  }

  // The server does not serve the kind (or does not let us list it): it is
  // empty, and as current as a listed kind, until it is listed again.
  void MarkAbsent(const std::string& why) {
    std::lock_guard<std::mutex> lock(cache_.mu_);
    objects.clear();
    stats.last_error = why;
    Listed(/*served=*/false);
  }

  // Under cache_.mu_: a list ended with the kind's content in place.
  void Listed(bool served) {
    stats.served = served;
    ++stats.lists;
    synced = true;
    fresh_at = cache_.clock_.WallNow();
    ++cache_.version_;
    cache_.changed_.notify_all();
  }

  enum class WatchEnd { kClean, kGone, kFailed };

  WatchEnd Watch() {
    std::string rv;
    {
      std::lock_guard<std::mutex> lock(cache_.mu_);
      rv = stats.resource_version;
      ++stats.watches;
      watching = true;
      fresh_at = cache_.clock_.WallNow();
      ++cache_.version_;
    }
    cache_.changed_.notify_all();
    const std::string path = base_ +
                             "?watch=1&allowWatchBookmarks=true&resourceVersion=" + net::PercentEncode(rv) +
                             "&timeoutSeconds=" + std::to_string(cache_.options_.watch_timeout_seconds);
    bool gone = false;
    std::string event_error;
    const auto on_line = [&](std::string_view line) { return Apply(line, &gone, &event_error); };
    Result<ApiResponse> r = cache_.client_.Watch(
        path, on_line, [this] { return Stopping(); }, cache_.options_.watch_idle_timeout);
    {
      std::lock_guard<std::mutex> lock(cache_.mu_);
      watching = false;
    }
    if (!r) {
      Fail(r.error().message());
      return WatchEnd::kFailed;
    }
    if (r->status == 410 || gone) {
      std::lock_guard<std::mutex> lock(cache_.mu_);
      ++stats.relists_after_gone;
      return WatchEnd::kGone;
    }
    if (!r->ok()) {
      Fail(ApiError(*r, "watch " + base_).message());
      return WatchEnd::kFailed;
    }
    if (!event_error.empty()) {
      Fail(event_error);
      return WatchEnd::kFailed;
    }
    std::lock_guard<std::mutex> lock(cache_.mu_);
    fresh_at = cache_.clock_.WallNow();
    return WatchEnd::kClean;
  }

  // One event line; false ends the watch.
  bool Apply(std::string_view line, bool* gone, std::string* error) {
    Result<WatchEvent> parsed = ParseWatchEvent(line, spec_.resource);
    if (!parsed) {
      *error = "watch " + base_ + ": " + parsed.error().message();
      return false;
    }
    WatchEvent& event = *parsed;
    if (event.type == "ERROR") {
      if (event.error_code == 410) {
        *gone = true;
      } else {
        *error = "watch " + base_ + ": " +
                 (event.error_message.empty() ? std::string("error event") : event.error_message);
      }
      return false;
    }
    {
      std::lock_guard<std::mutex> lock(cache_.mu_);
      if (!event.resource_version.empty()) stats.resource_version = event.resource_version;
      fresh_at = cache_.clock_.WallNow();
      if (event.type == "BOOKMARK") {
        ++stats.bookmarks;
        ++cache_.version_;
        cache_.changed_.notify_all();
        return true;
      }
      if (event.type == "DELETED") {
        pods.erase(event.key);
        nodes.erase(event.key);
        objects.erase(event.key);
      } else if (event.type == "ADDED" || event.type == "MODIFIED") {
        if (event.pod) pods[event.key] = std::move(*event.pod);
        if (event.node) nodes[event.key] = std::move(*event.node);
        if (event.object) objects[event.key] = std::move(*event.object);
      } else {
        return true;  // a type this version does not know: ignored
      }
      ++stats.events;
      ++cache_.version_;
    }
    cache_.changed_.notify_all();
    return true;
  }

  ClusterCache& cache_;
  const KindSpec spec_;
  const std::string base_;
  bool stop_ = false;  // under cache_.mu_
  std::thread thread_;
};

ClusterCache::ClusterCache(ApiClient& client, const Clock& clock, ClusterCacheOptions options)
    : client_(client), clock_(clock), options_(options) {
  for (CachedKind kind : kAllKinds) loops_.push_back(std::make_unique<Loop>(*this, kind));
}

ClusterCache::~ClusterCache() { Stop(); }

void ClusterCache::Start() {
  for (auto& loop : loops_) loop->Start();
}

void ClusterCache::Stop() {
  for (auto& loop : loops_) loop->Stop();
}

ClusterView ClusterCache::View() const {
  std::lock_guard<std::mutex> lock(mu_);
  return ViewLocked();
}

ClusterView ClusterCache::ViewLocked() const {
  ClusterView v;
  const Loop& pods = *loops_[static_cast<size_t>(CachedKind::kPods)];
  const Loop& nodes = *loops_[static_cast<size_t>(CachedKind::kNodes)];
  v.synced = pods.synced && nodes.synced;
  v.gang_sources_synced =
      std::all_of(loops_.begin() + 2, loops_.end(), [](const auto& loop) { return loop->synced; });
  v.pods.reserve(pods.pods.size());
  for (const auto& [k, p] : pods.pods) v.pods.push_back(p);
  v.nodes.reserve(nodes.nodes.size());
  for (const auto& [k, n] : nodes.nodes) v.nodes.push_back(n);
  const auto objects = [&](CachedKind kind, std::vector<json>* out) {
    for (const auto& [k, o] : loops_[static_cast<size_t>(kind)]->objects) out->push_back(o);
  };
  objects(CachedKind::kPodTemplates, &v.pod_templates);
  objects(CachedKind::kProvisioningRequests, &v.provisioning_requests);
  objects(CachedKind::kPodGroups, &v.pod_groups);
  objects(CachedKind::kVolcanoPodGroups, &v.volcano_pod_groups);
  return v;
}

bool ClusterCache::WaitUntil(const std::function<bool(const ClusterView&)>& done,
                             std::chrono::milliseconds timeout) const {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    uint64_t seen = 0;
    ClusterView view;
    {
      std::lock_guard<std::mutex> lock(mu_);
      seen = version_;
      view = ViewLocked();
    }
    if (done(view)) return true;
    std::unique_lock<std::mutex> lock(mu_);
    if (!changed_.wait_until(lock, deadline, [&] { return version_ != seen; })) return false;
  }
}

std::optional<WallTime> ClusterCache::FreshAt() const {
  std::lock_guard<std::mutex> lock(mu_);
  const Loop& pods = *loops_[static_cast<size_t>(CachedKind::kPods)];
  const Loop& nodes = *loops_[static_cast<size_t>(CachedKind::kNodes)];
  if (!pods.synced || !nodes.synced) return std::nullopt;
  const WallTime now = clock_.WallNow();
  const WallTime pods_at = pods.watching ? now : pods.fresh_at.value_or(WallTime{});
  const WallTime nodes_at = nodes.watching ? now : nodes.fresh_at.value_or(WallTime{});
  return std::min(pods_at, nodes_at);
}

WatchStats ClusterCache::Stats(CachedKind kind) const {
  std::lock_guard<std::mutex> lock(mu_);
  return loops_[static_cast<size_t>(kind)]->stats;
}

}  // namespace gpuscaler::kube
