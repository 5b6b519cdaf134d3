#include "gpuscaler/kube/objects.h"

#include <cmath>

#include "json_objects.h"

namespace gpuscaler::kube {

using nlohmann::json;

namespace {
std::map<std::string, std::string> StringMap(const json& j) {
  std::map<std::string, std::string> out;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it->is_string()) out[it.key()] = it->get<std::string>();
  }
  return out;
}

// Resource maps ("cpu": "500m"); values that do not parse are left out.
std::map<std::string, int64_t> Quantities(const json& j) {
  std::map<std::string, int64_t> out;
  for (auto it = j.begin(); it != j.end(); ++it) {
    std::optional<int64_t> q;
    if (it->is_string()) q = ParseQuantityMilli(it->get<std::string>());
    else if (it->is_number()) q = ParseQuantityMilli(it->dump());
    if (q) out[it.key()] = *q;
  }
  return out;
}

// One container's requests, its limits standing in for those it omits (the
// API server defaults requests to limits).
std::map<std::string, int64_t> ContainerRequests(const json& c) {
  const json& res = ObjectAt(c, "resources");
  std::map<std::string, int64_t> out = Quantities(ObjectAt(res, "limits"));
  for (const auto& [k, v] : Quantities(ObjectAt(res, "requests"))) out[k] = v;
  return out;
}

std::vector<NodeSelectorRequirement> Requirements(const json& term) {
  std::vector<NodeSelectorRequirement> out;
  for (const json& e : ArrayAt(term, "matchExpressions")) {
    NodeSelectorRequirement r;
    r.key = StringAt(e, "key");
    r.op = StringAt(e, "operator");
    for (const json& v : ArrayAt(e, "values"))
      if (v.is_string()) r.values.push_back(v.get<std::string>());
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace

std::optional<int64_t> ParseQuantityMilli(std::string_view text) {
  // <number><suffix>: decimal SI (n u m "" k M G T P E), binary (Ki … Ei),
  // or a decimal exponent (e3, E-2).
  size_t i = 0;
  if (i < text.size() && (text[i] == '+' || text[i] == '-')) ++i;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) ++i;
  const std::string number(text.substr(0, i));
  const std::string_view suffix = text.substr(i);
  if (number.empty() || number == "." || number == "+" || number == "-") return std::nullopt;
  long double value = 0;
  try {
    size_t used = 0;
    value = std::stold(number, &used);
    if (used != number.size()) return std::nullopt;
  } catch (const std::exception&) {
    return std::nullopt;
  }
  long double scale = 1;
  static const std::pair<std::string_view, long double> kSuffixes[] = {
      {"n", 1e-9L}, {"u", 1e-6L}, {"m", 1e-3L}, {"", 1}, {"k", 1e3L}, {"M", 1e6L}, {"G", 1e9L}, {"T", 1e12L},
      {"P", 1e15L}, {"E", 1e18L}, {"Ki", 1024.0L}, {"Mi", 1048576.0L}, {"Gi", 1073741824.0L},
      {"Ti", 1099511627776.0L}, {"Pi", 1125899906842624.0L}, {"Ei", 1152921504606846976.0L}};
  bool known = false;
  for (const auto& [s, f] : kSuffixes) {
    if (suffix == s) {
      scale = f;
      known = true;
      break;
    }
  }
  if (!known) {
    if (suffix.size() < 2 || (suffix[0] != 'e' && suffix[0] != 'E')) return std::nullopt;
    int exponent = 0;
    try {
      size_t used = 0;
      const std::string e(suffix.substr(1));
      exponent = std::stoi(e, &used);
      if (used != e.size() || exponent > 30 || exponent < -30) return std::nullopt;
    } catch (const std::exception&) {
      return std::nullopt;
    }
    scale = std::pow(10.0L, exponent);
  }
  // Kubernetes rounds fractions of the smallest unit up.
  const long double milli = std::ceil(value * scale * 1000.0L - 1e-9L);
  if (!(milli < 9.2e18L) || !(milli > -9.2e18L)) return std::nullopt;
  return static_cast<int64_t>(milli);
}

std::string InstanceIdFromProviderId(std::string_view provider_id) {
  const size_t scheme = provider_id.find("://");
  if (scheme == std::string_view::npos) return "";
  std::string_view rest = provider_id.substr(scheme + 3);
  while (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
  const size_t slash = rest.rfind('/');
  return std::string(slash == std::string_view::npos ? rest : rest.substr(slash + 1));
}

std::string ResourceVersionOf(const json& j) { return StringAt(ObjectAt(j, "metadata"), "resourceVersion"); }

// The metadata fields Pods and Nodes both keep, and the kind check both
// make (a list item may omit `kind`).
template <typename Object>
const json* ReadMetadata(const json& j, const char* kind, Object* out) {
  if (!j.is_object() || (j.contains("kind") && StringAt(j, "kind") != kind)) return nullptr;
  const json& meta = ObjectAt(j, "metadata");
  out->uid = StringAt(meta, "uid");
  out->name = StringAt(meta, "name");
  out->resource_version = StringAt(meta, "resourceVersion");
  out->created = TimeAt(meta, "creationTimestamp");
  out->labels = StringMap(ObjectAt(meta, "labels"));
  out->annotations = StringMap(ObjectAt(meta, "annotations"));
  return &meta;
}

Result<PodInfo> PodFromJson(const json& j) {
  PodInfo p;
  const json* meta_ptr = ReadMetadata(j, "Pod", &p);
  if (meta_ptr == nullptr) return Error::InvalidInput("not a Pod object");
  const json& meta = *meta_ptr;
  const json& spec = ObjectAt(j, "spec");
  const json& status = ObjectAt(j, "status");
  p.namespace_name = StringAt(meta, "namespace");
  p.deleting = !StringAt(meta, "deletionTimestamp").empty();
  for (const json& o : ArrayAt(meta, "ownerReferences")) {
    // Not o.value("controller", false): it throws when the field is not a bool.
    const auto controller = o.is_object() ? o.find("controller") : o.end();
    if (controller != o.end() && controller->is_boolean() && controller->get<bool>()) p.owner_kind = StringAt(o, "kind");
  }
  p.node_name = StringAt(spec, "nodeName");
  p.phase = StringAt(status, "phase");
  if (const WallTime t = TimeAt(status, "startTime"); t != WallTime{}) p.started = t;
  p.node_selector = StringMap(ObjectAt(spec, "nodeSelector"));
  const json& required =
      ObjectAt(ObjectAt(ObjectAt(spec, "affinity"), "nodeAffinity"), "requiredDuringSchedulingIgnoredDuringExecution");
  for (const json& term : ArrayAt(required, "nodeSelectorTerms")) p.affinity_terms.push_back(Requirements(term));
  for (const json& t : ArrayAt(spec, "tolerations")) {
    Toleration tol;
    tol.key = StringAt(t, "key");
    if (std::string op = StringAt(t, "operator"); !op.empty()) tol.op = op;
    tol.value = StringAt(t, "value");
    tol.effect = StringAt(t, "effect");
    p.tolerations.push_back(std::move(tol));
  }
  if (auto it = spec.find("priority"); it != spec.end() && it->is_number_integer()) p.priority = it->get<int>();

  std::map<std::string, int64_t> sum;
  for (const json& c : ArrayAt(spec, "containers")) {
    for (const auto& [k, v] : ContainerRequests(c)) sum[k] += v;
  }
  for (const json& c : ArrayAt(spec, "initContainers")) {
    // A sidecar (restartPolicy Always) runs alongside the containers.
    if (StringAt(c, "restartPolicy") == "Always") {
      for (const auto& [k, v] : ContainerRequests(c)) sum[k] += v;
      continue;
    }
    for (const auto& [k, v] : ContainerRequests(c)) sum[k] = std::max(sum[k], v);
  }
  for (const auto& [k, v] : Quantities(ObjectAt(spec, "overhead"))) sum[k] += v;
  p.requests_milli = std::move(sum);

  for (const json& c : ArrayAt(status, "conditions")) {
    if (StringAt(c, "type") == "PodScheduled" && StringAt(c, "status") == "False" && StringAt(c, "reason") == "Unschedulable") {
      p.unschedulable = true;
      p.unschedulable_message = StringAt(c, "message");
    }
  }
  return p;
}

Result<NodeInfo> NodeFromJson(const json& j) {
  NodeInfo n;
  if (ReadMetadata(j, "Node", &n) == nullptr) return Error::InvalidInput("not a Node object");
  const json& spec = ObjectAt(j, "spec");
  const json& status = ObjectAt(j, "status");
  n.provider_id = StringAt(spec, "providerID");
  // Azure's providerID ends in a scale set VM's instanceId, unique only
  // within its scale set; the Azure provider names an instance by its node
  // name (an AKS machine's name, a scale set VM's computer name).
  n.instance_id = n.provider_id.rfind("azure://", 0) == 0 ? n.name : InstanceIdFromProviderId(n.provider_id);
  if (auto it = spec.find("unschedulable"); it != spec.end() && it->is_boolean()) n.unschedulable = it->get<bool>();
  for (const json& t : ArrayAt(spec, "taints"))
    n.taints.push_back({StringAt(t, "key"), StringAt(t, "value"), StringAt(t, "effect")});
  n.allocatable_milli = Quantities(ObjectAt(status, "allocatable"));
  for (const json& c : ArrayAt(status, "conditions")) {
    if (StringAt(c, "type") == kSpotPreemptedCondition && StringAt(c, "status") == "True")
      n.spot_notice = ParseSpotNoticeMessage(StringAt(c, "reason"), StringAt(c, "message"));
    if (StringAt(c, "type") != "Ready") continue;
    n.ready = StringAt(c, "status") == "True";
    if (const WallTime t = TimeAt(c, "lastTransitionTime"); t != WallTime{}) n.ready_changed_at = t;
  }
  return n;
}

namespace {

template <typename T, typename F>
Result<ObjectList<T>> ParseList(std::string_view text, F from_json, const char* what) {
  try {
    const json j = json::parse(text);
    if (!j.is_object()) return Error::InvalidInput(std::string(what) + " list: not an object");
    ObjectList<T> out;
    out.resource_version = StringAt(ObjectAt(j, "metadata"), "resourceVersion");
    out.continue_token = StringAt(ObjectAt(j, "metadata"), "continue");
    for (const json& item : ArrayAt(j, "items")) {
      Result<T> t = from_json(item);
      if (!t) return t.error().WithContext(std::string(what) + " list");
      out.items.push_back(std::move(t).value());
    }
    return out;
  } catch (const json::exception& e) {
    return Error::InvalidInput(std::string(what) + " list: " + e.what());
  }
}

template <typename T, typename F>
Result<T> ParseOne(std::string_view text, F from_json) {
  try {
    return from_json(json::parse(text));
  } catch (const json::exception& e) {
    return Error::InvalidInput(e.what());
  }
}

}  // namespace

WallTime TimeAt(const json& object, const char* key) {
  WallTime t{};
  if (std::string s = StringAt(object, key); !s.empty()) {
    // MicroTime ("…:48.065888Z"): drop the fraction, the model keeps seconds.
    if (size_t dot = s.find('.'); dot != std::string::npos) {
      size_t end = dot + 1;
      while (end < s.size() && std::isdigit(static_cast<unsigned char>(s[end]))) ++end;
      s.erase(dot, end - dot);
    }
    ParseRfc3339(s, &t);
  }
  return t;
}

Result<WatchEvent> ParseWatchEvent(std::string_view line, WatchResource resource) {
  json event;
  try {
    event = json::parse(line);
  } catch (const json::exception& e) {
    return Error::InvalidInput(std::string("bad event: ") + e.what());
  }
  WatchEvent out;
  out.type = StringAt(event, "type");
  const json& obj = ObjectAt(event, "object");
  if (out.type == "ERROR") {
    out.error_code = IntAt(obj, "code", 0);
    out.error_message = StringAt(obj, "message");
    return out;
  }
  out.resource_version = ResourceVersionOf(obj);
  const json& meta = ObjectAt(obj, "metadata");
  // Nodes are cluster-scoped: their key is the name, whatever a namespace
  // field says (the cache keys its nodes by NodeInfo::name).
  const std::string ns = resource != WatchResource::kNodes ? StringAt(meta, "namespace") : "";
  out.key = ns.empty() ? StringAt(meta, "name") : ns + "/" + StringAt(meta, "name");
  if (out.type == "ADDED" || out.type == "MODIFIED") {
    if (resource == WatchResource::kObjects) {
      if (obj.is_object()) out.object = obj;
    } else if (resource == WatchResource::kPods) {
      if (Result<PodInfo> p = PodFromJson(obj)) out.pod = std::move(p).value();
    } else if (Result<NodeInfo> n = NodeFromJson(obj)) {
      out.node = std::move(n).value();
    }
  }
  return out;
}

Result<PodInfo> ParsePod(std::string_view text) { return ParseOne<PodInfo>(text, PodFromJson); }
Result<NodeInfo> ParseNode(std::string_view text) { return ParseOne<NodeInfo>(text, NodeFromJson); }
Result<ObjectList<PodInfo>> ParsePodList(std::string_view text) {
  return ParseList<PodInfo>(text, PodFromJson, "pod");
}
Result<ObjectList<NodeInfo>> ParseNodeList(std::string_view text) {
  return ParseList<NodeInfo>(text, NodeFromJson, "node");
}

}  // namespace gpuscaler::kube
