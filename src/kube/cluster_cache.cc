#include "gpuscaler/kube/cluster_cache.h"

#include <nlohmann/json.hpp>

#include "gpuscaler/net/url.h"
#include "json_objects.h"

namespace gpuscaler::kube {

using nlohmann::json;

// One kind's list/watch loop. Its state is guarded by the cache's mutex;
// every change notifies the cache's condition variable.
class ClusterCache::Loop {
 public:
  Loop(ClusterCache& cache, bool pods) : cache_(cache), pods_(pods), base_(pods ? "/api/v1/pods" : "/api/v1/nodes") {}
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
  WatchStats stats;

 private:
  void Run() {
    std::chrono::milliseconds backoff = cache_.options_.initial_backoff;
    bool need_list = true;
    while (!Stopping()) {
      bool failed = false;
      if (need_list) {
        failed = !List();
        need_list = failed;
      } else {
        switch (Watch()) {
          case WatchEnd::kClean: break;
          case WatchEnd::kGone: need_list = true; break;
          case WatchEnd::kFailed: failed = true; break;
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

  // A full list, page by page, replacing the cache. False on failure.
  bool List() {
    std::map<std::string, PodInfo> new_pods;
    std::map<std::string, NodeInfo> new_nodes;
    std::string rv, cont;
    do {
      std::string path = base_ + "?limit=" + std::to_string(cache_.options_.list_page_size);
      if (!cont.empty()) path += "&continue=" + net::PercentEncode(cont);
      Result<ApiResponse> r = cache_.client_.Get(path);
      if (!r) {
        Fail(r.error().message());
        return false;
      }
      if (r->status == 410 && !cont.empty()) {
        // The continue token expired mid-list: start over.
        new_pods.clear();
        new_nodes.clear();
        cont.clear();
        continue;
      }
      if (!r->ok()) {
        Fail(ApiError(*r, "list " + base_).message());
        return false;
      }
      try {
        const json list = json::parse(r->body);
        const json& meta = ObjectAt(list, "metadata");
        if (rv.empty()) rv = StringAt(meta, "resourceVersion");
        cont = StringAt(meta, "continue");
        for (const json& item : ArrayAt(list, "items")) {
          if (pods_) {
            Result<PodInfo> p = PodFromJson(item);
            if (p) new_pods[p->namespace_name + "/" + p->name] = std::move(p).value();
          } else {
            Result<NodeInfo> n = NodeFromJson(item);
            if (n) new_nodes[n->name] = std::move(n).value();
          }
        }
      } catch (const json::exception& e) {
        Fail("list " + base_ + ": " + e.what());
        return false;
      }
    } while (!cont.empty() && !Stopping());
    {
      std::lock_guard<std::mutex> lock(cache_.mu_);
      pods = std::move(new_pods);
      nodes = std::move(new_nodes);
      stats.resource_version = rv;
      ++stats.lists;
      synced = true;
      fresh_at = cache_.clock_.WallNow();
      ++cache_.version_;
    }
    cache_.changed_.notify_all();
    return true;
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
    const std::string path = base_ + "?watch=1&allowWatchBookmarks=true&resourceVersion=" + net::PercentEncode(rv) +
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
    Result<WatchEvent> parsed = ParseWatchEvent(line, pods_ ? WatchResource::kPods : WatchResource::kNodes);
    if (!parsed) {
      *error = "watch " + base_ + ": " + parsed.error().message();
      return false;
    }
    WatchEvent& event = *parsed;
    if (event.type == "ERROR") {
      if (event.error_code == 410) {
        *gone = true;
      } else {
        *error = "watch " + base_ + ": " + (event.error_message.empty() ? std::string("error event") : event.error_message);
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
        pods_ ? (void)pods.erase(event.key) : (void)nodes.erase(event.key);
      } else if (event.type == "ADDED" || event.type == "MODIFIED") {
        if (event.pod) pods[event.key] = std::move(*event.pod);
        if (event.node) nodes[event.key] = std::move(*event.node);
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
  const bool pods_;
  const std::string base_;
  bool stop_ = false;  // under cache_.mu_
  std::thread thread_;
};

ClusterCache::ClusterCache(ApiClient& client, const Clock& clock, ClusterCacheOptions options)
    : client_(client), clock_(clock), options_(options) {
  pods_ = std::make_unique<Loop>(*this, true);
  nodes_ = std::make_unique<Loop>(*this, false);
}

ClusterCache::~ClusterCache() { Stop(); }

void ClusterCache::Start() {
  pods_->Start();
  nodes_->Start();
}

void ClusterCache::Stop() {
  pods_->Stop();
  nodes_->Stop();
}

ClusterView ClusterCache::View() const {
  std::lock_guard<std::mutex> lock(mu_);
  return ViewLocked();
}

ClusterView ClusterCache::ViewLocked() const {
  ClusterView v;
  v.synced = pods_->synced && nodes_->synced;
  v.pods.reserve(pods_->pods.size());
  for (const auto& [k, p] : pods_->pods) v.pods.push_back(p);
  v.nodes.reserve(nodes_->nodes.size());
  for (const auto& [k, n] : nodes_->nodes) v.nodes.push_back(n);
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
  if (!pods_->synced || !nodes_->synced) return std::nullopt;
  const WallTime now = clock_.WallNow();
  const WallTime pods = pods_->watching ? now : pods_->fresh_at.value_or(WallTime{});
  const WallTime nodes = nodes_->watching ? now : nodes_->fresh_at.value_or(WallTime{});
  return std::min(pods, nodes);
}

WatchStats ClusterCache::pod_stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return pods_->stats;
}

WatchStats ClusterCache::node_stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return nodes_->stats;
}

}  // namespace gpuscaler::kube
