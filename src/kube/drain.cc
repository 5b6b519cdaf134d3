#include "gpuscaler/kube/drain.h"

#include <nlohmann/json.hpp>

#include "gpuscaler/cloud/provider.h"
#include "gpuscaler/kube/workload.h"
#include "gpuscaler/net/url.h"
#include "json_objects.h"

namespace gpuscaler::kube {
namespace {
using nlohmann::json;

std::string Key(const PodInfo& p) { return p.namespace_name + "/" + p.name; }

bool Marked(const std::map<std::string, std::string>& m, const std::vector<std::string>& extra) {
  if (SaysDoNotDisrupt(m)) return true;
  for (const std::string& k : extra) {
    auto it = m.find(k);
    if (it != m.end() && it->second == "true") return true;
  }
  return false;
}

std::string Join(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

std::string Why(const DrainOptions& options) { return options.reason.empty() ? "" : ": " + options.reason; }

}  // namespace

Drainer::Drainer(ApiClient& client, const Clock& clock, Wait wait, std::string component)
    : client_(client), clock_(clock), wait_(std::move(wait)), component_(std::move(component)) {}

Status Drainer::Cordon(const std::string& node_name, bool unschedulable) {
  json patch = {{"spec", {{"unschedulable", unschedulable}}}};
  if (!unschedulable) patch["metadata"]["annotations"][kDrainDeadlineAnnotation] = nullptr;
  Result<ApiResponse> r =
      client_.Call("PATCH", "/api/v1/nodes/" + node_name, patch.dump(), "application/merge-patch+json");
  if (!r) return r.error();
  if (!r->ok()) return ApiError(*r, (unschedulable ? "cordon " : "uncordon ") + node_name);
  return Status::Ok();
}

Status Drainer::SetWarm(const std::string& node_name, bool warm) {
  if (warm) return Cordon(node_name, true);
  const std::string path = "/api/v1/nodes/" + node_name;
  for (int attempt = 0; attempt < 3; ++attempt) {
    Result<ApiResponse> got = client_.Call("GET", path, "");
    if (!got) return got.error();
    if (!got->ok()) return ApiError(*got, "reading node " + node_name);
    const json node = json::parse(got->body, nullptr, false);
    if (node.is_discarded()) return Error::Transient("node " + node_name + ": the API answered no JSON");
    json taints = json::array();
    const json* spec = node.contains("spec") ? &node["spec"] : nullptr;
    if (spec != nullptr && spec->contains("taints") && (*spec)["taints"].is_array()) {
      for (const json& t : (*spec)["taints"])
        if (t.value("key", "") != kWarmTag) taints.push_back(t);
    }
    json patch = {{"spec", {{"unschedulable", false}, {"taints", taints}}}};
    patch["metadata"]["resourceVersion"] = node["metadata"].value("resourceVersion", "");
    Result<ApiResponse> r = client_.Call("PATCH", path, patch.dump(), "application/merge-patch+json");
    if (!r) return r.error();
    if (r->status == 409) continue;  // changed since read: read again
    if (!r->ok()) return ApiError(*r, "returning woken node " + node_name);
    return Status::Ok();
  }
  return Error::Transient("node " + node_name + " kept changing while its warm taint was removed");
}

Status Drainer::RecordNodeEvent(const std::string& node_name, const std::string& node_uid, const std::string& reason,
                                const std::string& message, const std::string& type) {
  const std::string now = FormatRfc3339(clock_.WallNow());
  // Node events live in "default", as the kubelet's and kubectl's do.
  const std::string name = node_name + "." + component_ + "." + std::to_string(ToUnixSeconds(clock_.WallNow())) + "." +
                           std::to_string(++events_);
  json involved = {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", node_name}};
  if (!node_uid.empty()) involved["uid"] = node_uid;
  const json event = {{"apiVersion", "v1"},
                      {"kind", "Event"},
                      {"metadata", {{"name", name}, {"namespace", "default"}}},
                      {"involvedObject", involved},
                      {"reason", reason},
                      {"message", message.substr(0, 1024)},
                      {"type", type},
                      {"source", {{"component", component_}}},
                      {"firstTimestamp", now},
                      {"lastTimestamp", now},
                      {"count", 1}};
  Result<ApiResponse> r = client_.Call("POST", "/api/v1/namespaces/default/events", event.dump());
  if (!r) return r.error();
  if (!r->ok()) return ApiError(*r, "event on node " + node_name);
  return Status::Ok();
}

Result<std::vector<PodInfo>> Drainer::PodsToEvict(const std::string& node_name, DrainResult* result) {
  Result<ApiResponse> r = client_.Get("/api/v1/pods?fieldSelector=" + net::PercentEncode("spec.nodeName=" + node_name));
  if (!r) return r.error();
  if (!r->ok()) return ApiError(*r, "pods on node " + node_name);
  Result<ObjectList<PodInfo>> list = ParsePodList(r->body);
  if (!list) return list.error();
  std::vector<PodInfo> out;
  result->skipped = 0;
  for (PodInfo& p : list->items) {
    if (p.node_name != node_name || p.Finished()) continue;
    if (p.IsDaemonSet() || p.IsMirror()) {
      ++result->skipped;
      continue;
    }
    out.push_back(std::move(p));
  }
  return out;
}

Result<Drainer::Started> Drainer::Start(const std::string& node_name, const DrainOptions& options, WallTime deadline) {
  Result<ApiResponse> got = client_.Get("/api/v1/nodes/" + node_name);
  if (!got) return got.error();
  if (!got->ok()) return ApiError(*got, "node " + node_name);
  Result<NodeInfo> node = ParseNode(got->body);
  if (!node) return node.error();
  Started started{node->uid, deadline, false};
  if (auto it = node->annotations.find(kDrainDeadlineAnnotation);
      node->unschedulable && it != node->annotations.end() && ParseRfc3339(it->second, &started.deadline)) {
    started.resumed = true;
    return started;
  }
  const std::string why = Why(options);
  if (Marked(node->labels, options.extra_do_not_disrupt_keys) ||
      Marked(node->annotations, options.extra_do_not_disrupt_keys)) {
    (void)RecordNodeEvent(node_name, node->uid, "DrainRefused",
                          "gpuscaler will not drain the node: it is marked do-not-disrupt" + why, "Warning");
    return Error::InvalidInput("node " + node_name + " is marked do-not-disrupt");
  }
  DrainResult scratch;
  Result<std::vector<PodInfo>> pods = PodsToEvict(node_name, &scratch);
  if (!pods) return pods.error();
  for (const PodInfo& p : *pods) {
    if (Marked(p.labels, options.extra_do_not_disrupt_keys) || Marked(p.annotations, options.extra_do_not_disrupt_keys)) {
      (void)RecordNodeEvent(node_name, node->uid, "DrainRefused",
                            "gpuscaler will not drain the node: pod " + Key(p) + " is marked do-not-disrupt" + why,
                            "Warning");
      return Error::InvalidInput("node " + node_name + ": pod " + Key(p) + " is marked do-not-disrupt");
    }
  }
  const json patch = {{"spec", {{"unschedulable", true}}},
                      {"metadata", {{"annotations", {{kDrainDeadlineAnnotation, FormatRfc3339(deadline)}}}}}};
  Result<ApiResponse> cordoned =
      client_.Call("PATCH", "/api/v1/nodes/" + node_name, patch.dump(), "application/merge-patch+json");
  if (!cordoned) return cordoned.error();
  if (!cordoned->ok()) return ApiError(*cordoned, "cordon " + node_name);
  (void)RecordNodeEvent(node_name, node->uid, "Draining",
                        "gpuscaler cordoned the node and is evicting its pods before removing it" + why);
  return started;
}

Result<bool> Drainer::EvictRound(const std::string& node_name, DrainResult* result) {
  Result<std::vector<PodInfo>> pods = PodsToEvict(node_name, result);
  if (!pods) return pods.error();
  if (pods->empty()) return true;
  for (const PodInfo& p : *pods) {
    if (p.deleting) continue;  // already evicted: wait for it to go
    const json eviction = {{"apiVersion", "policy/v1"},
                           {"kind", "Eviction"},
                           {"metadata", {{"name", p.name}, {"namespace", p.namespace_name}}}};
    Result<ApiResponse> r = client_.Call(
        "POST", "/api/v1/namespaces/" + p.namespace_name + "/pods/" + p.name + "/eviction", eviction.dump());
    if (!r) continue;  // transport trouble: the next round tries again
    if (r->ok()) ++result->evicted;
    else if (r->status == 429) ++result->budget_refusals;  // a PDB says not now: wait, never force
    // 404: gone already. Others (500: several PDBs match) are retried
    // until the timeout, like kubectl drain does.
  }
  Result<std::vector<PodInfo>> left = PodsToEvict(node_name, result);
  if (!left) return false;  // not known to be empty: another round
  result->remaining.clear();
  for (const PodInfo& p : *left) result->remaining.push_back(Key(p));
  return left->empty();
}

void Drainer::Succeeded(const std::string& node_name, const Started& started, const DrainOptions& options,
                        const DrainResult& result) {
  (void)RecordNodeEvent(node_name, started.node_uid, "Drained",
                        "gpuscaler evicted every pod (" + std::to_string(result.evicted) +
                            "); the instance is terminated next" + Why(options));
}

Error Drainer::GiveUp(const std::string& node_name, const Started& started, const DrainOptions& options,
                      DrainResult* result, bool interrupted) {
  const std::string what = interrupted ? "drain interrupted" : "drain timed out";
  // The node is kept: it goes back into service rather than sitting
  // cordoned and paid for.
  if (!interrupted) (void)Cordon(node_name, false);
  (void)RecordNodeEvent(node_name, started.node_uid, interrupted ? "DrainInterrupted" : "DrainTimeout",
                        "gpuscaler " + what + "; pods left: " + Join(result->remaining) +
                            (interrupted ? "" : "; the node is uncordoned and kept") + Why(options),
                        "Warning");
  return Error::Transient("node " + node_name + ": " + what + " (" + std::to_string(result->budget_refusals) +
                          " evictions refused by a PodDisruptionBudget); pods left: " + Join(result->remaining));
}

Result<DrainResult> Drainer::Drain(const std::string& node_name, const DrainOptions& options) {
  Result<Started> started =
      Start(node_name, options, clock_.WallNow() + std::chrono::duration_cast<Seconds>(options.timeout));
  if (!started) return started.error();
  DrainResult result;
  while (true) {
    Result<bool> done = EvictRound(node_name, &result);
    if (done && *done) {
      Succeeded(node_name, *started, options, result);
      return result;
    }
    if (clock_.WallNow() >= started->deadline) return GiveUp(node_name, *started, options, &result, false);
    if (!wait_(options.retry_interval)) return GiveUp(node_name, *started, options, &result, true);
  }
}

}  // namespace gpuscaler::kube
