// FakeApiServer: a Kubernetes API server in memory for tests, on
// FixtureHttpServer (127.0.0.1, a free port). It holds Pods, Nodes, Leases
// and Events as JSON (tests load the recorded shapes of
// ../shared/reference/kubernetes into it) and answers the calls gpuscaler
// makes, with the API's semantics where they matter to us:
//  - every write bumps one resourceVersion counter and is kept in a history;
//    LIST answers carry the current resourceVersion and page with
//    limit/continue; WATCH (watch=1&resourceVersion=N) streams the history
//    after N, then new changes, as JSON lines over chunked encoding, with a
//    BOOKMARK when allowWatchBookmarks is set and it is told to;
//  - CompactHistory() forgets the history: a watch from an older version
//    then gets "410 Gone", as an ERROR event (the usual form) or as the HTTP
//    status (gone_as_http_status), and open watches end with it;
//  - evictions (POST …/pods/<name>/eviction) delete the pod, except pods
//    covered by a budget (SetBudget), which get 429 until the budget allows;
//  - Lease UPDATEs must carry the current metadata.resourceVersion (else 409
//    Conflict); a CREATE of an existing Lease is 409 AlreadyExists;
//  - PATCH of a node applies a JSON merge patch; PATCH of its status
//    subresource changes only .status, a strategic merge patch merging
//    status.conditions by type;
//  - namespaced objects of other kinds (fake_api_resources.cc): PodTemplates
//    always, and custom resources once ServeCustomResource() declares them
//    (until then their paths are 404, as for a CRD not installed): create,
//    get, list and watch (all namespaces or one), replace (409 on a stale
//    resourceVersion), merge patch, delete, and the status subresource
//    (writes there change only .status; writes to the object keep it).
// Thread-safe; every request is recorded for assertions.
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "support/fixture_http_server.h"

namespace gpuscaler::testing {

class FakeApiServer {
 public:
  FakeApiServer();
  ~FakeApiServer();

  std::string url() const { return http_->url(); }

  // Adds or replaces an object ("pods" or "nodes"); the server assigns its
  // resourceVersion and records an ADDED or MODIFIED event. Returns it.
  int64_t Put(const std::string& resource, nlohmann::json object);
  // Deletes it (DELETED event); false when there was none.
  bool Delete(const std::string& resource, const std::string& key);
  std::optional<nlohmann::json> Get(const std::string& resource, const std::string& key) const;
  // Forgets every change up to now: watches from before get 410.
  void CompactHistory();
  // Sends a BOOKMARK with the current version on every open watch that asked for them.
  void Bookmark();
  // Sends `line` as it is (plus "\n") on every open watch of `resource`,
  // in order with the other changes: hostile or broken event frames.
  void SendRawWatchLine(const std::string& resource, std::string line);
  // Ends every open watch (a dropped connection, from the client's side).
  void EndWatches();
  int64_t resource_version() const;

  // Pod `key` ("ns/name") may be evicted only after `refusals` evictions of
  // it were refused with 429 (-1: never).
  void SetBudget(const std::string& key, int refusals);
  bool gone_as_http_status = false;  // set before watches start
  // Requests must carry "Authorization: Bearer <token>" when set.
  void RequireToken(std::string token);
  // While set, every Lease request fails with 503 (an API outage for one replica's view is simulated per server).
  void SetLeaseOutage(bool down);
  // Serves a namespaced custom resource from now on: /apis/<group>/<version>/<plural>.
  void ServeCustomResource(const std::string& group, const std::string& version, const std::string& plural,
                           const std::string& kind);
  // Every list request of `path_prefix` ("/apis/scheduling.x-k8s.io/") is answered `status` (403: RBAC denies).
  void RefuseLists(const std::string& path_prefix, int status);

  struct Call {
    std::string method;
    std::string target;
    std::string body;
    std::string authorization;
  };
  std::vector<Call> calls() const;
  int Count(const std::string& method, const std::string& path_prefix) const;
  std::vector<nlohmann::json> events() const;  // core/v1 Events posted
  int open_watches() const;
  // Waits until the object exists; nullopt on timeout.
  std::optional<nlohmann::json> WaitForObject(const std::string& resource, const std::string& key,
                                              std::chrono::milliseconds timeout);
  // Waits until at least `n` watches are open (streaming); false on timeout.
  bool WaitForWatches(int n, std::chrono::milliseconds timeout);

 private:
  struct Change {
    int64_t rv;
    std::string resource;
    std::string type;
    nlohmann::json object;
  };
  FixtureResponse Handle(const FixtureRequest& req);
  // `ns` non-empty: that namespace's objects only.
  FixtureResponse List(const std::string& resource, const std::map<std::string, std::string>& q,
                       const std::string& ns = "");
  FixtureResponse Watch(const std::string& resource, const std::map<std::string, std::string>& q);
  FixtureResponse Evict(const std::string& ns, const std::string& name);
  FixtureResponse PatchNodeStatus(const FixtureRequest& req, const std::string& name);
  FixtureResponse Lease(const FixtureRequest& req, const std::string& ns, const std::string& name);
  // Namespaced objects of kinds other than pods (fake_api_resources.cc);
  // nullopt: the path is none of theirs.
  std::optional<FixtureResponse> Resources(const FixtureRequest& req, const std::vector<std::string>& path,
                                           const std::map<std::string, std::string>& q);
  FixtureResponse Write(const FixtureRequest& req, const std::string& resource, const std::string& ns,
                        const std::string& name, bool status);
  std::string KindOf(const std::string& resource) const;
  int64_t PutLocked(const std::string& resource, nlohmann::json object);

  mutable std::mutex mu_;
  std::condition_variable changed_;
  int64_t rv_ = 1000;
  int64_t compacted_rv_ = 0;  // watches from below this get 410
  int64_t watch_epoch_ = 0;   // EndWatches() bumps it
  int64_t bookmark_epoch_ = 0;
  int open_watches_ = 0;
  std::map<std::string, std::map<std::string, nlohmann::json>> objects_;  // resource -> key -> object
  std::vector<Change> history_;
  std::map<std::string, int> budgets_;  // pod key -> refusals left (-1 forever)
  std::vector<nlohmann::json> events_;
  std::vector<Call> calls_;
  std::string token_;
  bool lease_outage_ = false;
  std::set<std::string> custom_resources_;           // served: "<group>/<version>/<plural>"
  std::map<std::string, std::string> custom_kinds_;  // plural -> kind
  std::map<std::string, int> refused_lists_;         // path prefix -> status
  int64_t next_uid_ = 1;
  bool stopping_ = false;
  std::unique_ptr<FixtureHttpServer> http_;
};

// JSON merge patch (RFC 7386) of `patch` into `target`.
void MergePatch(nlohmann::json& target, const nlohmann::json& patch);
// An answer with a JSON body.
FixtureResponse JsonResponse(int status, const nlohmann::json& body);

// Status objects as the API server writes them.
nlohmann::json StatusObject(int code, const std::string& reason, const std::string& message);

}  // namespace gpuscaler::testing
