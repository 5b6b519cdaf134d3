#include "kube/fake_api_server.h"

#include <chrono>

namespace gpuscaler::testing {
namespace {
using nlohmann::json;
// History entries whose object is a string sent as is (SendRawWatchLine).
constexpr const char* kRawLine = "RAW";

std::map<std::string, std::string> Query(const std::string& target) {
  std::map<std::string, std::string> out;
  const size_t q = target.find('?');
  if (q == std::string::npos) return out;
  const std::string query = target.substr(q + 1);
  size_t pos = 0;
  while (pos <= query.size()) {
    size_t amp = query.find('&', pos);
    if (amp == std::string::npos) amp = query.size();
    const std::string kv = query.substr(pos, amp - pos);
    const size_t eq = kv.find('=');
    std::string value = eq == std::string::npos ? "" : kv.substr(eq + 1);
    std::string decoded;
    for (size_t i = 0; i < value.size(); ++i) {
      if (value[i] == '%' && i + 2 < value.size()) {
        decoded.push_back(static_cast<char>(std::stoi(value.substr(i + 1, 2), nullptr, 16)));
        i += 2;
      } else {
        decoded.push_back(value[i] == '+' ? ' ' : value[i]);
      }
    }
    if (!kv.empty()) out[kv.substr(0, eq)] = decoded;
    pos = amp + 1;
  }
  return out;
}

std::vector<std::string> Split(const std::string& path) {
  std::vector<std::string> parts;
  size_t pos = 1;
  while (pos <= path.size()) {
    size_t slash = path.find('/', pos);
    if (slash == std::string::npos) slash = path.size();
    if (slash > pos) parts.push_back(path.substr(pos, slash - pos));
    pos = slash + 1;
  }
  return parts;
}

std::string KeyOf(const json& obj) {
  const json& meta = obj.at("metadata");
  const std::string ns = meta.value("namespace", "");
  return ns.empty() ? meta.value("name", "") : ns + "/" + meta.value("name", "");
}

}  // namespace

void MergePatch(json& target, const json& patch) {
  if (!patch.is_object()) {
    target = patch;
    return;
  }
  if (!target.is_object()) target = json::object();
  for (auto it = patch.begin(); it != patch.end(); ++it) {
    if (it->is_null()) target.erase(it.key());
    else MergePatch(target[it.key()], *it);
  }
}

FixtureResponse JsonResponse(int status, const json& body) {
  FixtureResponse r;
  r.status = status;
  r.content_type = "application/json";
  r.body = body.dump();
  return r;
}

json StatusObject(int code, const std::string& reason, const std::string& message) {
  return {{"kind", "Status"}, {"apiVersion", "v1"},  {"metadata", json::object()}, {"status", "Failure"},
          {"message", message}, {"reason", reason}, {"code", code}};
}

FakeApiServer::FakeApiServer() {
  http_ = std::make_unique<FixtureHttpServer>([this](const FixtureRequest& req) { return Handle(req); });
}

FakeApiServer::~FakeApiServer() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  changed_.notify_all();
  http_->Stop();
}

int64_t FakeApiServer::PutLocked(const std::string& resource, json object) {
  const std::string key = KeyOf(object);
  object["metadata"]["resourceVersion"] = std::to_string(++rv_);
  auto& kind = objects_[resource];
  const bool existed = kind.count(key) > 0;
  kind[key] = object;
  history_.push_back({rv_, resource, existed ? "MODIFIED" : "ADDED", object});
  changed_.notify_all();
  return rv_;
}

int64_t FakeApiServer::Put(const std::string& resource, json object) {
  std::lock_guard<std::mutex> lock(mu_);
  return PutLocked(resource, std::move(object));
}

bool FakeApiServer::Delete(const std::string& resource, const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& kind = objects_[resource];
  auto it = kind.find(key);
  if (it == kind.end()) return false;
  json obj = it->second;
  kind.erase(it);
  obj["metadata"]["resourceVersion"] = std::to_string(++rv_);
  history_.push_back({rv_, resource, "DELETED", obj});
  changed_.notify_all();
  return true;
}

std::optional<json> FakeApiServer::Get(const std::string& resource, const std::string& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto r = objects_.find(resource);
  if (r == objects_.end()) return std::nullopt;
  auto it = r->second.find(key);
  if (it == r->second.end()) return std::nullopt;
  return it->second;
}

void FakeApiServer::CompactHistory() {
  std::lock_guard<std::mutex> lock(mu_);
  compacted_rv_ = ++rv_;
  history_.clear();
  changed_.notify_all();
}

void FakeApiServer::SendRawWatchLine(const std::string& resource, std::string line) {
  std::lock_guard<std::mutex> lock(mu_);
  history_.push_back({++rv_, resource, kRawLine, json(std::move(line))});
  changed_.notify_all();
}

void FakeApiServer::Bookmark() {
  std::lock_guard<std::mutex> lock(mu_);
  // Other kinds changed meanwhile: the version moved with nothing to show.
  ++rv_;
  ++bookmark_epoch_;
  changed_.notify_all();
}

void FakeApiServer::EndWatches() {
  std::lock_guard<std::mutex> lock(mu_);
  ++watch_epoch_;
  changed_.notify_all();
}

int64_t FakeApiServer::resource_version() const {
  std::lock_guard<std::mutex> lock(mu_);
  return rv_;
}

void FakeApiServer::SetBudget(const std::string& key, int refusals) {
  std::lock_guard<std::mutex> lock(mu_);
  budgets_[key] = refusals;
}

void FakeApiServer::RequireToken(std::string token) {
  std::lock_guard<std::mutex> lock(mu_);
  token_ = std::move(token);
}

void FakeApiServer::SetLeaseOutage(bool down) {
  std::lock_guard<std::mutex> lock(mu_);
  lease_outage_ = down;
}

std::vector<FakeApiServer::Call> FakeApiServer::calls() const {
  std::lock_guard<std::mutex> lock(mu_);
  return calls_;
}

int FakeApiServer::Count(const std::string& method, const std::string& path_prefix) const {
  std::lock_guard<std::mutex> lock(mu_);
  int n = 0;
  for (const Call& c : calls_) n += (c.method == method && c.target.rfind(path_prefix, 0) == 0) ? 1 : 0;
  return n;
}

std::vector<json> FakeApiServer::events() const {
  std::lock_guard<std::mutex> lock(mu_);
  return events_;
}

std::optional<json> FakeApiServer::WaitForObject(const std::string& resource, const std::string& key,
                                                std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  changed_.wait_for(lock, timeout, [&] { return objects_[resource].count(key) > 0; });
  auto it = objects_[resource].find(key);
  if (it == objects_[resource].end()) return std::nullopt;
  return it->second;
}

bool FakeApiServer::WaitForWatches(int n, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  return changed_.wait_for(lock, timeout, [&] { return open_watches_ >= n; });
}

int FakeApiServer::open_watches() const {
  std::lock_guard<std::mutex> lock(mu_);
  return open_watches_;
}

FixtureResponse FakeApiServer::Handle(const FixtureRequest& req) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    calls_.push_back({req.method, req.target, req.body, req.Header("Authorization")});
    if (!token_.empty() && req.Header("Authorization") != "Bearer " + token_)
      return JsonResponse(401, StatusObject(401, "Unauthorized", "Unauthorized"));
  }
  const std::string path = req.Path();
  const std::map<std::string, std::string> q = Query(req.target);
  const std::vector<std::string> p = Split(path);
  try {
    // /api/v1/pods, /api/v1/nodes[/<name>]
    if (p.size() >= 3 && p[0] == "api" && p[1] == "v1" && (p[2] == "pods" || p[2] == "nodes")) {
      const std::string resource = p[2];
      if (p.size() == 3 && req.method == "GET") {
        return q.count("watch") && q.at("watch") != "0" && q.at("watch") != "false" ? Watch(resource, q)
                                                                                      : List(resource, q);
      }
      if (p.size() == 5 && resource == "nodes" && p[4] == "status" && req.method == "PATCH")
        return PatchNodeStatus(req, p[3]);
      if (p.size() == 4 && resource == "nodes") {
        std::lock_guard<std::mutex> lock(mu_);
        auto& nodes = objects_["nodes"];
        auto it = nodes.find(p[3]);
        if (it == nodes.end())
          return JsonResponse(404, StatusObject(404, "NotFound", "nodes \"" + p[3] + "\" not found"));
        if (req.method == "GET") return JsonResponse(200, it->second);
        if (req.method == "PATCH") {
          if (req.Header("Content-Type") != "application/merge-patch+json")
            return JsonResponse(415, StatusObject(415, "UnsupportedMediaType", "expected a merge patch"));
          json obj = it->second;
          const json patch = json::parse(req.body);
          // A resourceVersion in the patch is a precondition, as the API server makes it.
          if (patch.contains("metadata") && patch["metadata"].contains("resourceVersion") &&
              patch["metadata"]["resourceVersion"] != obj["metadata"].value("resourceVersion", ""))
            return JsonResponse(409, StatusObject(409, "Conflict",
                                                "Operation cannot be fulfilled on nodes \"" + p[3] +
                                                    "\": the object has been modified"));
          MergePatch(obj, patch);
          PutLocked("nodes", obj);
          return JsonResponse(200, objects_["nodes"][p[3]]);
        }
      }
    }
    // /api/v1/namespaces/<ns>/pods/<name>/eviction, /api/v1/namespaces/<ns>/events
    if (p.size() == 7 && p[0] == "api" && p[2] == "namespaces" && p[4] == "pods" && p[6] == "eviction") {
      if (req.method != "POST") return JsonResponse(405, StatusObject(405, "MethodNotAllowed", "eviction is POST"));
      const json body = json::parse(req.body);
      if (body.value("kind", "") != "Eviction" || body.value("apiVersion", "") != "policy/v1")
        return JsonResponse(400, StatusObject(400, "BadRequest", "expected a policy/v1 Eviction"));
      return Evict(p[3], p[5]);
    }
    if (p.size() == 5 && p[0] == "api" && p[2] == "namespaces" && p[4] == "events" && req.method == "POST") {
      std::lock_guard<std::mutex> lock(mu_);
      events_.push_back(json::parse(req.body));
      return JsonResponse(201, events_.back());
    }
    if (std::optional<FixtureResponse> r = Resources(req, p, q)) return *r;
    // /apis/coordination.k8s.io/v1/namespaces/<ns>/leases[/<name>]
    if (p.size() >= 6 && p[0] == "apis" && p[1] == "coordination.k8s.io" && p[2] == "v1" && p[3] == "namespaces" &&
        p[5] == "leases") {
      return Lease(req, p[4], p.size() > 6 ? p[6] : "");
    }
  } catch (const json::exception& e) {
    return JsonResponse(400, StatusObject(400, "BadRequest", e.what()));
  }
  return JsonResponse(404, StatusObject(404, "NotFound", "the server could not find the requested resource"));
}

FixtureResponse FakeApiServer::List(const std::string& resource, const std::map<std::string, std::string>& q,
                                    const std::string& ns) {
  std::lock_guard<std::mutex> lock(mu_);
  std::string node_filter;
  if (auto f = q.find("fieldSelector"); f != q.end() && f->second.rfind("spec.nodeName=", 0) == 0)
    node_filter = f->second.substr(std::string("spec.nodeName=").size());
  // A continue token is "<rv>:<offset>"; the list keeps the rv of its first page.
  size_t offset = 0;
  int64_t list_rv = rv_;
  if (auto c = q.find("continue"); c != q.end() && !c->second.empty()) {
    const size_t colon = c->second.find(':');
    list_rv = std::stoll(c->second.substr(0, colon));
    offset = std::stoul(c->second.substr(colon + 1));
    if (list_rv < compacted_rv_)
      return JsonResponse(410, StatusObject(410, "Expired", "The provided continue parameter is too old"));
  }
  const size_t limit = q.count("limit") ? std::stoul(q.at("limit")) : 0;
  json items = json::array();
  size_t index = 0;
  bool more = false;
  for (const auto& [key, obj] : objects_[resource]) {
    if (!node_filter.empty() && obj["spec"].value("nodeName", "") != node_filter) continue;
    if (!ns.empty() && key.rfind(ns + "/", 0) != 0) continue;
    if (index++ < offset) continue;
    if (limit > 0 && items.size() >= limit) {
      more = true;
      break;
    }
    items.push_back(obj);
  }
  json list = {{"kind", KindOf(resource) + "List"},
               {"apiVersion", "v1"},
               {"metadata", {{"resourceVersion", std::to_string(list_rv)}}},
               {"items", items}};
  if (more) list["metadata"]["continue"] = std::to_string(list_rv) + ":" + std::to_string(offset + items.size());
  return JsonResponse(200, list);
}

FixtureResponse FakeApiServer::Watch(const std::string& resource, const std::map<std::string, std::string>& q) {
  int64_t from = q.count("resourceVersion") && !q.at("resourceVersion").empty()
                     ? std::stoll(q.at("resourceVersion")) : 0;
  const bool bookmarks = q.count("allowWatchBookmarks") && q.at("allowWatchBookmarks") == "true";
  const int timeout_s = q.count("timeoutSeconds") ? std::stoi(q.at("timeoutSeconds")) : 1800;
  std::unique_lock<std::mutex> lock(mu_);
  if (from != 0 && from < compacted_rv_ && gone_as_http_status) {
    return JsonResponse(410, StatusObject(410, "Expired", "too old resource version: " + std::to_string(from) + " (" +
                                                            std::to_string(rv_) + ")"));
  }
  if (from == 0) from = rv_;  // "any": start from now
  FixtureResponse r;
  r.content_type = "application/json";
  struct State {
    int64_t last;
    int64_t epoch;
    int64_t bookmark_epoch;
    bool done = false;
    bool counted = false;
    std::chrono::steady_clock::time_point end;
  };
  auto st = std::make_shared<State>(State{from, watch_epoch_, bookmark_epoch_, false, false,
                                          std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s)});
  r.stream = [this, st, resource, bookmarks](std::string* piece) {
    std::unique_lock<std::mutex> lock(mu_);
    if (!st->counted) {
      st->counted = true;
      ++open_watches_;
      changed_.notify_all();
    }
    const auto finish = [&] {
      st->done = true;
      --open_watches_;
      return false;
    };
    if (st->done) return false;
    if (st->last < compacted_rv_) {
      *piece = json{{"type", "ERROR"},
                    {"object", StatusObject(410, "Expired", "too old resource version: " + std::to_string(st->last) +
                                                                " (" + std::to_string(rv_) + ")")}}
                   .dump() +
               "\n";
      return finish();
    }
    for (const Change& c : history_) {
      if (c.rv <= st->last) continue;
      st->last = c.rv;
      if (c.resource != resource) continue;
      if (c.type == kRawLine) {
        *piece += c.object.get<std::string>() + "\n";
        continue;
      }
      *piece += json{{"type", c.type}, {"object", c.object}}.dump() + "\n";
    }
    if (bookmarks && st->bookmark_epoch != bookmark_epoch_) {
      st->bookmark_epoch = bookmark_epoch_;
      st->last = rv_;
      json obj = {{"kind", KindOf(resource)},
                  {"apiVersion", "v1"},
                  {"metadata", {{"resourceVersion", std::to_string(rv_)}}}};
      *piece += json{{"type", "BOOKMARK"}, {"object", obj}}.dump() + "\n";
    }
    if (!piece->empty()) return true;
    if (stopping_ || st->epoch != watch_epoch_ || std::chrono::steady_clock::now() >= st->end) return finish();
    // Nothing to send: wait a little for a change (the fixture calls again).
    changed_.wait_for(lock, std::chrono::milliseconds(50));
    return true;
  };
  return r;
}

// A Node status patch as node-problem-detector sends it: a strategic merge
// patch, whose status.conditions merge by type (the API's patchMergeKey);
// only .status changes.
FixtureResponse FakeApiServer::PatchNodeStatus(const FixtureRequest& req, const std::string& name) {
  if (req.Header("Content-Type") != "application/strategic-merge-patch+json" &&
      req.Header("Content-Type") != "application/merge-patch+json")
    return JsonResponse(415, StatusObject(415, "UnsupportedMediaType", "expected a merge patch"));
  const json patch = json::parse(req.body);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = objects_["nodes"].find(name);
  if (it == objects_["nodes"].end())
    return JsonResponse(404, StatusObject(404, "NotFound", "nodes \"" + name + "\" not found"));
  json obj = it->second;
  json status = patch.value("status", json::object());
  if (req.Header("Content-Type") == "application/strategic-merge-patch+json" && status.contains("conditions")) {
    json conditions = obj["status"].value("conditions", json::array());
    for (const json& c : status["conditions"]) {
      bool merged = false;
      for (json& have : conditions) {
        if (have.value("type", "") != c.value("type", "")) continue;
        MergePatch(have, c);
        merged = true;
      }
      if (!merged) conditions.push_back(c);
    }
    status.erase("conditions");
    obj["status"]["conditions"] = conditions;
  }
  MergePatch(obj["status"], status);
  PutLocked("nodes", obj);
  return JsonResponse(200, objects_["nodes"][name]);
}

FixtureResponse FakeApiServer::Evict(const std::string& ns, const std::string& name) {
  const std::string key = ns + "/" + name;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (objects_["pods"].count(key) == 0)
      return JsonResponse(404, StatusObject(404, "NotFound", "pods \"" + name + "\" not found"));
    auto b = budgets_.find(key);
    if (b != budgets_.end() && b->second != 0) {
      if (b->second > 0) --b->second;
      json s = StatusObject(429, "TooManyRequests", "Cannot evict pod as it would violate the pod's disruption budget.");
      s["details"] = {{"causes", {{{"reason", "DisruptionBudget"}, {"message", "The disruption budget needs 1 healthy pods"}}}}};
      return JsonResponse(429, s);
    }
  }
  Delete("pods", key);
  return JsonResponse(201, {{"kind", "Status"}, {"apiVersion", "v1"}, {"status", "Success"}, {"code", 201}});
}

FixtureResponse FakeApiServer::Lease(const FixtureRequest& req, const std::string& ns, const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  if (lease_outage_) return JsonResponse(503, StatusObject(503, "ServiceUnavailable", "etcd is unavailable"));
  auto& leases = objects_["leases"];
  const std::string key = ns + "/" + name;
  if (req.method == "GET" && !name.empty()) {
    auto it = leases.find(key);
    if (it == leases.end())
      return JsonResponse(404, StatusObject(404, "NotFound", "leases.coordination.k8s.io \"" + name + "\" not found"));
    return JsonResponse(200, it->second);
  }
  json body = json::parse(req.body);
  if (body.value("kind", "") != "Lease") return JsonResponse(400, StatusObject(400, "BadRequest", "expected a Lease"));
  const std::string body_name = body["metadata"].value("name", "");
  if (req.method == "POST" && name.empty()) {
    const std::string new_key = ns + "/" + body_name;
    if (leases.count(new_key))
      return JsonResponse(409, StatusObject(409, "AlreadyExists", "leases.coordination.k8s.io \"" + body_name + "\" already exists"));
    body["metadata"]["namespace"] = ns;
    body["metadata"]["resourceVersion"] = std::to_string(++rv_);
    leases[new_key] = body;
    changed_.notify_all();
    return JsonResponse(201, body);
  }
  if (req.method == "PUT" && !name.empty()) {
    auto it = leases.find(key);
    if (it == leases.end())
      return JsonResponse(404, StatusObject(404, "NotFound", "leases.coordination.k8s.io \"" + name + "\" not found"));
    // Optimistic concurrency: the writer must have seen the current version.
    if (body["metadata"].value("resourceVersion", "") != it->second["metadata"].value("resourceVersion", ""))
      return JsonResponse(409, StatusObject(409, "Conflict",
                                          "Operation cannot be fulfilled on leases.coordination.k8s.io \"" + name +
                                              "\": the object has been modified; please apply your changes to the "
                                              "latest version and try again"));
    body["metadata"]["namespace"] = ns;
    body["metadata"]["resourceVersion"] = std::to_string(++rv_);
    it->second = body;
    changed_.notify_all();
    return JsonResponse(200, body);
  }
  return JsonResponse(405, StatusObject(405, "MethodNotAllowed", req.method + " on leases"));
}

}  // namespace gpuscaler::testing
