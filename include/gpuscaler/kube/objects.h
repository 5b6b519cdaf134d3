// The parts of Kubernetes Pods and Nodes that gpuscaler reads, parsed from
// the API's JSON (fields as in core/v1; unknown fields are ignored, missing
// ones take the API's defaults). Values only; thread-safe to read.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpuscaler/kube/spot_notice.h"
#include "gpuscaler/model/time.h"
#include "gpuscaler/policy/policy.h"
#include "gpuscaler/status.h"

namespace gpuscaler::kube {

// A resource.Quantity ("100m", "16Gi", "1.5", "2e3", "8") in thousandths of
// its unit (milli-CPU, milli-bytes, milli-GPUs); nullopt when malformed or
// out of range.
std::optional<int64_t> ParseQuantityMilli(std::string_view text);

struct NodeSelectorRequirement {
  std::string key;
  std::string op;  // In | NotIn | Exists | DoesNotExist | Gt | Lt
  std::vector<std::string> values;
};

struct Toleration {
  std::string key;       // empty with Exists: tolerates every taint
  std::string op = "Equal";  // Equal | Exists
  std::string value;
  std::string effect;    // empty: every effect
};

struct PodInfo {
  std::string uid;
  std::string name;
  std::string namespace_name;
  std::string resource_version;
  std::string node_name;  // spec.nodeName; empty while unscheduled
  std::string phase;      // Pending | Running | Succeeded | Failed | Unknown
  WallTime created{};
  // status.startTime: when the kubelet took the pod on (before it pulled
  // images and started containers); unset until then.
  std::optional<WallTime> started;
  bool deleting = false;  // metadata.deletionTimestamp is set
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
  std::string owner_kind;  // the controlling ownerReference's kind ("DaemonSet", "Job", …)
  std::map<std::string, std::string> node_selector;
  // Required node affinity: any one term must hold; within a term, all.
  std::vector<std::vector<NodeSelectorRequirement>> affinity_terms;
  std::vector<Toleration> tolerations;
  int priority = 0;
  // What the scheduler reserves for the pod, in thousandths: per resource,
  // the larger of the containers' sum and the largest init container, plus
  // spec.overhead; a container's limits stand in for requests it omits.
  std::map<std::string, int64_t> requests_milli;
  // Condition PodScheduled=False with reason Unschedulable.
  bool unschedulable = false;
  std::string unschedulable_message;

  bool IsMirror() const { return annotations.count("kubernetes.io/config.mirror") > 0; }
  bool IsDaemonSet() const { return owner_kind == "DaemonSet"; }
  // Done: its resources are free again.
  bool Finished() const { return phase == "Succeeded" || phase == "Failed"; }
};

struct NodeInfo {
  std::string name;
  std::string uid;
  std::string resource_version;
  std::string provider_id;  // "aws:///us-west-2a/i-0abc…"
  // from provider_id: its last path segment; empty if none. Azure nodes
  // (azure://…): the node's name.
  std::string instance_id;
  WallTime created{};
  bool unschedulable = false;  // spec.unschedulable (cordoned)
  std::vector<Taint> taints;   // spec.taints
  bool ready = false;          // condition Ready=True
  std::optional<WallTime> ready_changed_at;  // the Ready condition's lastTransitionTime
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
  std::map<std::string, int64_t> allocatable_milli;
  // The condition kSpotPreemptedCondition with status True and a readable
  // message (spot_notice.h): the cloud is about to take the node back.
  std::optional<NodeSpotNotice> spot_notice;
};

// The instance id of a providerID: "aws:///us-west-2a/i-0abc" -> "i-0abc";
// "" when there is no path ("kind://…" style ids keep their last segment).
std::string InstanceIdFromProviderId(std::string_view provider_id);

// Parse one object (JSON text). kInvalidInput when it is not a Pod / Node.
Result<PodInfo> ParsePod(std::string_view json);
Result<NodeInfo> ParseNode(std::string_view json);

// A list answer: its items and metadata.resourceVersion / continue.
template <typename T>
struct ObjectList {
  std::vector<T> items;
  std::string resource_version;
  std::string continue_token;
};
Result<ObjectList<PodInfo>> ParsePodList(std::string_view json);
Result<ObjectList<NodeInfo>> ParseNodeList(std::string_view json);

// One line of a watch stream ({"type": ..., "object": ...}). kObjects:
// namespaced objects of any other kind, kept as their JSON.
enum class WatchResource { kPods, kNodes, kObjects };
struct WatchEvent {
  // ADDED, MODIFIED, DELETED, BOOKMARK, ERROR, or a type a newer server
  // sends (to be ignored); "" when the line has no string type.
  std::string type;
  std::string resource_version;  // the object's metadata.resourceVersion
  std::string key;               // "namespace/name" (pods) or "name" (nodes)
  // ERROR: the Status object's code (410: the version is too old) and message.
  int64_t error_code = 0;
  std::string error_message;
  // ADDED / MODIFIED: the object, when it parses as the watched kind.
  std::optional<PodInfo> pod;
  std::optional<NodeInfo> node;
  std::optional<nlohmann::json> object;  // kObjects
};
// kInvalidInput only when the line is not JSON; any JSON shape otherwise
// reads as an event with what could be found (never throws).
Result<WatchEvent> ParseWatchEvent(std::string_view line, WatchResource resource);

}  // namespace gpuscaler::kube
