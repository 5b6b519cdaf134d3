// FakeApiServer's namespaced objects of kinds other than pods: PodTemplates
// and the custom resources a test declares (ProvisioningRequests, PodGroups).
#include <chrono>
#include <ctime>

#include "kube/fake_api_server.h"

namespace gpuscaler::testing {
namespace {

using nlohmann::json;

std::string NowRfc3339() {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace

void FakeApiServer::ServeCustomResource(const std::string& group, const std::string& version,
                                        const std::string& plural, const std::string& kind) {
  std::lock_guard<std::mutex> lock(mu_);
  custom_resources_.insert(group + "/" + version + "/" + plural);
  custom_kinds_[plural] = kind;
}

void FakeApiServer::RefuseLists(const std::string& path_prefix, int status) {
  std::lock_guard<std::mutex> lock(mu_);
  refused_lists_[path_prefix] = status;
}

std::string FakeApiServer::KindOf(const std::string& resource) const {
  static const std::map<std::string, std::string> kCore = {
      {"pods", "Pod"}, {"nodes", "Node"}, {"podtemplates", "PodTemplate"}};
  if (auto it = kCore.find(resource); it != kCore.end()) return it->second;
  auto it = custom_kinds_.find(resource);
  return it == custom_kinds_.end() ? "Object" : it->second;
}

std::optional<FixtureResponse> FakeApiServer::Resources(const FixtureRequest& req,
                                                        const std::vector<std::string>& p,
                                                        const std::map<std::string, std::string>& q) {
  // /api/v1[/namespaces/<ns>]/podtemplates[/<name>] or
  // /apis/<group>/<version>[/namespaces/<ns>]/<plural>[/<name>[/status]]
  size_t at = 0;
  if (p.size() >= 3 && p[0] == "api" && p[1] == "v1") {
    at = 2;
  } else if (p.size() >= 4 && p[0] == "apis") {
    at = 3;
  } else {
    return std::nullopt;
  }
  std::string ns;
  if (p.size() > at + 1 && p[at] == "namespaces") {
    ns = p[at + 1];
    at += 2;
  }
  if (p.size() <= at) return std::nullopt;
  const std::string resource = p[at];
  const std::string name = p.size() > at + 1 ? p[at + 1] : "";
  const bool status = p.size() > at + 2 && p[at + 2] == "status";
  if (p.size() > at + 3 || (p.size() == at + 3 && !status)) return std::nullopt;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (p[0] == "api") {
      if (resource != "podtemplates") return std::nullopt;
    } else if (custom_resources_.count(p[1] + "/" + p[2] + "/" + resource) == 0) {
      return std::nullopt;  // not served: the caller answers 404
    }
    for (const auto& [prefix, code] : refused_lists_) {
      if (req.method == "GET" && name.empty() && req.Path().rfind(prefix, 0) == 0)
        return JsonResponse(code,
                            StatusObject(code, code == 403 ? "Forbidden" : "Error", "refused by the test"));
    }
  }
  if (name.empty()) {
    if (req.method == "GET") {
      const bool watch = q.count("watch") && q.at("watch") != "0" && q.at("watch") != "false";
      if (watch && !ns.empty())
        return JsonResponse(400, StatusObject(400, "BadRequest", "watch one namespace: not served"));
      return watch ? Watch(resource, q) : List(resource, q, ns);
    }
    if (req.method == "POST" && !ns.empty()) return Write(req, resource, ns, "", false);
    return JsonResponse(405, StatusObject(405, "MethodNotAllowed", req.method + " on a collection"));
  }
  if (ns.empty()) return JsonResponse(404, StatusObject(404, "NotFound", resource + " are namespaced"));
  if (req.method == "GET") {
    std::lock_guard<std::mutex> lock(mu_);
    auto& objects = objects_[resource];
    auto it = objects.find(ns + "/" + name);
    if (it == objects.end())
      return JsonResponse(404, StatusObject(404, "NotFound", resource + " \"" + name + "\" not found"));
    return JsonResponse(200, it->second);
  }
  if (req.method == "DELETE") {
    if (!Delete(resource, ns + "/" + name))
      return JsonResponse(404, StatusObject(404, "NotFound", resource + " \"" + name + "\" not found"));
    return JsonResponse(200, {{"kind", "Status"}, {"apiVersion", "v1"}, {"status", "Success"}});
  }
  return Write(req, resource, ns, name, status);
}

// POST (create), PUT (replace) and PATCH (merge patch) of one object or its status.
FixtureResponse FakeApiServer::Write(const FixtureRequest& req, const std::string& resource,
                                     const std::string& ns, const std::string& name, bool status) {
  const json body = json::parse(req.body);
  std::lock_guard<std::mutex> lock(mu_);
  auto& objects = objects_[resource];
  if (req.method == "POST") {
    json obj = body;
    const std::string new_name = obj["metadata"].value("name", "");
    if (new_name.empty())
      return JsonResponse(422, StatusObject(422, "Invalid", "metadata.name: Required value"));
    if (objects.count(ns + "/" + new_name))
      return JsonResponse(
          409, StatusObject(409, "AlreadyExists", resource + " \"" + new_name + "\" already exists"));
    obj["metadata"]["namespace"] = ns;
    obj["metadata"]["uid"] = "uid-" + std::to_string(next_uid_++);
    obj["metadata"]["creationTimestamp"] = NowRfc3339();
    obj["metadata"]["generation"] = 1;
    PutLocked(resource, obj);
    return JsonResponse(201, objects[ns + "/" + new_name]);
  }
  auto it = objects.find(ns + "/" + name);
  if (it == objects.end())
    return JsonResponse(404, StatusObject(404, "NotFound", resource + " \"" + name + "\" not found"));
  json obj = it->second;
  if (req.method == "PUT") {
    const std::string rv = body.contains("metadata") ? body["metadata"].value("resourceVersion", "") : "";
    if (!rv.empty() && rv != obj["metadata"].value("resourceVersion", ""))
      return JsonResponse(409, StatusObject(409, "Conflict",
                                            "the object has been modified; please apply your changes to the "
                                            "latest version and try again"));
    if (status) {
      obj["status"] = body.value("status", json::object());
    } else {
      json kept = obj;
      obj = body;
      obj["metadata"] = kept["metadata"];
      if (kept.contains("status")) obj["status"] = kept["status"];
    }
  } else if (req.method == "PATCH") {
    if (req.Header("Content-Type") != "application/merge-patch+json")
      return JsonResponse(415,
                          StatusObject(415, "UnsupportedMediaType", "this server takes merge patches only"));
    json patch = body;
    if (status) {
      json only = json::object();
      if (patch.contains("status")) only["status"] = patch["status"];
      patch = only;
    } else {
      patch.erase("status");
      patch.erase("metadata");
    }
    MergePatch(obj, patch);
  } else {
    return JsonResponse(405, StatusObject(405, "MethodNotAllowed", req.method + " on " + resource));
  }
  if (!status && obj.value("spec", json()) != it->second.value("spec", json()))
    obj["metadata"]["generation"] = it->second["metadata"].value("generation", 1) + 1;
  PutLocked(resource, obj);
  return JsonResponse(200, objects[ns + "/" + name]);
}

}  // namespace gpuscaler::testing
