// Routing and the Compute Engine calls of the GcpEmulator.
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <set>

#include "sim/cloud_emulator/gcp_impl.h"

namespace gpuscaler::sim {

using nlohmann::json;

namespace {

std::vector<std::string> Split(const std::string& path) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at <= path.size()) {
    const size_t slash = path.find('/', at);
    const size_t end = slash == std::string::npos ? path.size() : slash;
    if (end > at) out.push_back(path.substr(at, end - at));
    if (slash == std::string::npos) break;
    at = slash + 1;
  }
  return out;
}

// An integer field; Google's JSON carries int64 fields as strings ("2") and
// clients send either form. nullopt when present but not an integer.
std::optional<int64_t> IntField(const json& j, const char* key, int64_t fallback) {
  if (!j.contains(key)) return fallback;
  const json& v = j[key];
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    char* end = nullptr;
    errno = 0;
    const long long n = std::strtoll(s.c_str(), &end, 10);
    if (!s.empty() && *end == '\0' && errno == 0) return n;
  }
  return std::nullopt;
}

}  // namespace

void GcpEmulator::EnableBlockingWait(Seconds cap, std::function<bool(std::chrono::milliseconds)> sleep) {
  std::lock_guard lock(mu_);
  wait_cap_ = cap;
  wait_sleep_ = std::move(sleep);
}

bool GcpEmulator::IsWait(const EmulatorRequest& request) {
  const std::string path = request.target.substr(0, request.target.find('?'));
  return request.method == "POST" && path.rfind("/compute/v1/", 0) == 0 && path.size() > 5 &&
         path.compare(path.size() - 5, 5, "/wait") == 0;
}

EmulatorResponse GcpEmulator::Handle(const EmulatorRequest& request) {
  EmulatorResponse response;
  std::function<bool(std::chrono::milliseconds)> sleep;
  Seconds cap{0};
  {
    std::lock_guard lock(mu_);
    const WallTime now = clock_.WallNow();
    AdvanceLocked(now);
    ++stats_.requests;
    try {
      response = Dispatch(request, now);
    } catch (const json::exception& e) {
      // A body field of the wrong JSON type, as Google answers it.
      return gcp::ErrorResponse(400, "parseError", std::string("Invalid JSON payload received. ") + e.what());
    }
    sleep = wait_sleep_;
    cap = wait_cap_;
  }
  if (!sleep || response.status != 200 || !IsWait(request)) return response;
  // Blocks until DONE or the cap, looking again every 100 ms (or sooner
  // when the operation is due) without holding the lock.
  const json first = json::parse(response.body, nullptr, false);
  if (!first.is_object() || first.value("status", "") == "DONE") return response;
  // A zonal operation names its zone, a regional one its region.
  const std::string scope_url = first.value("zone", first.value("region", ""));
  const std::string key = scope_url.substr(scope_url.rfind('/') + 1) + "/" + first.value("name", "");
  const WallTime until = clock_.WallNow() + cap;
  bool stop = false;
  while (true) {
    std::chrono::milliseconds pause{100};
    {
      std::lock_guard lock(mu_);
      const WallTime now = clock_.WallNow();
      AdvanceLocked(now);
      auto it = ops_by_name_.find(key);
      if (it == ops_by_name_.end()) return response;
      const Operation& op = operations_[it->second];
      if (now >= op.done_at || now >= until || stop) return gcp::Json(OperationJson(op, now));
      const auto due =
          std::chrono::duration_cast<std::chrono::milliseconds>(std::min(op.done_at, until) - now);
      pause = std::clamp(due, std::chrono::milliseconds(1), std::chrono::milliseconds(100));
    }
    stop = !sleep(pause);
  }
}

EmulatorResponse GcpEmulator::Dispatch(const EmulatorRequest& request, WallTime now) {
  const size_t q = request.target.find('?');
  const std::string path = request.target.substr(0, q);
  const std::string query = q == std::string::npos ? "" : request.target.substr(q + 1);
  if (path == "/token") return TokenEndpoint(request, now);
  if (path.rfind("/computeMetadata/v1/", 0) == 0) {
    if (request.method != "GET") return {405, "text/plain", {}, "Method Not Allowed\n"};
    return Metadata(request, path.substr(20), now);
  }
  if (path == "/_emulator/state" && request.method == "GET") return gcp::Json(StateJson());
  if (path.rfind("/v1/", 0) == 0) return BillingCatalog(request, path, query, now);
  const std::vector<std::string> seg = Split(path);
  if (seg.size() < 4 || seg[0] != "compute" || seg[1] != "v1" || seg[2] != "projects") {
    return gcp::ErrorResponse(404, "notFound",
                              "The requested URL " + path + " was not found on this server.");
  }
  if (auto denied = CheckBearer(request, now)) return *denied;
  ++api_calls_;
  if ((scenario_.throttle_every > 0 && api_calls_ % scenario_.throttle_every == 0) ||
      (scenario_.throttle_rate > 0 &&
       std::uniform_real_distribution<double>(0, 1)(rng_) < scenario_.throttle_rate)) {
    ++stats_.throttled;
    return gcp::ErrorResponse(429, "rateLimitExceeded", "Rate Limit Exceeded", "usageLimits");
  }
  if (scenario_.server_error_rate > 0 &&
      std::uniform_real_distribution<double>(0, 1)(rng_) < scenario_.server_error_rate) {
    ++stats_.server_errors;
    return gcp::ErrorResponse(503, "backendError", "The service is currently unavailable.");
  }
  Path p;
  p.project = seg[3];
  if (p.project != scenario_.project) return gcp::NotFound("projects/" + p.project);
  if (seg.size() == 6 && seg[4] == "regions") {
    if (request.method != "GET") return gcp::ErrorResponse(405, "badRequest", "Method not allowed");
    return RegionGet(seg[5], now);
  }
  if (seg.size() >= 7 && seg.size() <= 9 && seg[4] == "regions") {
    return Regional(request, seg[5], seg[6], seg.size() >= 8 ? seg[7] : "", seg.size() == 9 ? seg[8] : "", query,
                    now);
  }
  if (seg.size() == 7 && seg[4] == "global" && seg[5] == "instanceTemplates") {
    if (request.method != "GET") return gcp::ErrorResponse(405, "badRequest", "Method not allowed");
    return InstanceTemplateGet(seg[6]);
  }
  if (seg.size() == 6 && seg[4] == "aggregated") {
    p.aggregated = true;
    p.collection = seg[5];
  } else if (seg.size() >= 7 && seg.size() <= 9 && seg[4] == "zones") {
    p.zone = seg[5];
    p.collection = seg[6];
    if (seg.size() >= 8) p.name = seg[7];
    if (seg.size() == 9) p.verb = seg[8];
    if (std::find(scenario_.zones.begin(), scenario_.zones.end(), p.zone) == scenario_.zones.end()) {
      return gcp::Invalid("zone", p.zone, "Unknown zone.");
    }
  } else {
    return gcp::ErrorResponse(404, "notFound",
                              "The requested URL " + path + " was not found on this server.");
  }
  return Compute(request, p, now);
}

std::optional<EmulatorResponse> GcpEmulator::Replay(const std::string& request_id, WallTime now) {
  if (request_id.empty()) return std::nullopt;
  auto it = ops_by_request_id_.find(request_id);
  if (it == ops_by_request_id_.end()) return std::nullopt;
  return gcp::Json(OperationJson(operations_[it->second], now));
}

EmulatorResponse GcpEmulator::Compute(const EmulatorRequest& request, const Path& p, WallTime now) {
  const size_t q = request.target.find('?');
  const std::string query = q == std::string::npos ? "" : request.target.substr(q + 1);
  const auto params = gcp::ParseQuery(query);
  std::string request_id;
  if (auto r = params.find("requestId"); r != params.end()) {
    request_id = r->second;
    if (!gcp::ValidUuid(request_id))
      return gcp::Invalid("requestId", request_id, "Must be a UUID other than the zero UUID.");
  }
  const std::string& m = request.method;
  if (p.aggregated && p.collection == "reservations" && m == "GET") return AggregatedReservations(query, now);
  if (p.collection == "reservations" && !p.aggregated) return ZoneReservations(request, p, query, now);
  if (p.aggregated) {
    if (p.collection != "instances" || m != "GET")
      return gcp::ErrorResponse(405, "badRequest", "Method not allowed");
    return AggregatedList(p, query, now);
  }
  if (p.collection == "operations") {
    if (p.name.empty()) {
      if (m != "GET") return gcp::ErrorResponse(405, "badRequest", "Method not allowed");
      return ListOperations(p, query, now);
    }
    auto it = ops_by_name_.find(p.zone + "/" + p.name);
    if (it == ops_by_name_.end()) return gcp::NotFound(p.resource());
    if ((p.verb.empty() && m == "GET") || (p.verb == "wait" && m == "POST")) {
      // Handle() blocks on a wait when EnableBlockingWait was called.
      return gcp::Json(OperationJson(operations_[it->second], now));
    }
    return gcp::ErrorResponse(405, "badRequest", "Method not allowed");
  }
  if (p.collection == "instances") {
    if (p.name == "bulkInsert" && p.verb.empty() && m == "POST") {
      if (auto replay = Replay(request_id, now)) return *replay;
      return BulkInsert(p, request.body, request_id, now);
    }
    if (!p.name.empty() && p.verb.empty()) {
      if (m == "GET") {
        Instance* i = FindInstance(p.zone, p.name);
        if (i == nullptr) return gcp::NotFound(p.resource());
        return gcp::Json(InstanceJson(*i, now));
      }
      if (m == "DELETE") {
        if (auto replay = Replay(request_id, now)) return *replay;
        return DeleteOne(p, request_id, now);
      }
    }
    return gcp::ErrorResponse(405, "badRequest", "Method not allowed");
  }
  if (p.collection == "instanceGroupManagers" && !p.name.empty()) {
    if (m == "POST") {
      if (auto replay = Replay(request_id, now)) return *replay;
    }
    return GroupCall(request, p, query, request_id, now);
  }
  return gcp::ErrorResponse(404, "notFound", "The requested URL was not found on this server.");
}

EmulatorResponse GcpEmulator::BulkInsert(const Path& p, const std::string& body,
                                         const std::string& request_id, WallTime now) {
  const json in = json::parse(body, nullptr, false);
  if (!in.is_object()) return gcp::ErrorResponse(400, "parseError", "Invalid JSON payload received.");
  const json props = in.value("instanceProperties", json::object());
  if (!props.is_object()) return gcp::Invalid("resource.instanceProperties", props.dump(), "Must be an object.");
  const std::string machine_type = gcp::LastSegment(props.value("machineType", ""));
  if (machine_type.empty()) {
    return gcp::Invalid("resource.instanceProperties.machineType", "", "Machine type must be specified.");
  }
  const json sched = props.value("scheduling", json::object());
  const std::string model = sched.value("provisioningModel", "STANDARD");
  if (model != "STANDARD" && model != "SPOT") {
    return gcp::Invalid("resource.instanceProperties.scheduling.provisioningModel", model,
                   "Must be STANDARD or SPOT.");
  }
  const std::string action = sched.value("instanceTerminationAction", "");
  if (!action.empty() && action != "STOP" && action != "DELETE") {
    return gcp::Invalid("resource.instanceProperties.scheduling.instanceTerminationAction", action,
                   "Must be STOP or DELETE.");
  }
  std::map<std::string, std::string> labels;
  if (props.contains("labels")) {
    if (!props["labels"].is_object())
      return gcp::Invalid("resource.instanceProperties.labels", props["labels"].dump(), "Must be a map.");
    for (const auto& [k, v] : props["labels"].items()) {
      if (!v.is_string())
        return gcp::Invalid("resource.instanceProperties.labels." + k, v.dump(), "Must be a string.");
      labels[k] = v.get<std::string>();
    }
  }
  std::vector<std::pair<std::string, int>> accelerators;
  for (const json& a : props.value("guestAccelerators", json::array())) {
    const std::optional<int64_t> n = IntField(a, "acceleratorCount", 0);
    if (!n || *n < 0 || *n > 16) {
      return gcp::Invalid("resource.instanceProperties.guestAccelerators.acceleratorCount", a.dump(),
                     "Must be in [0, 16].");
    }
    accelerators.emplace_back(gcp::LastSegment(a.value("acceleratorType", "")), static_cast<int>(*n));
  }
  std::vector<std::pair<std::string, std::string>> metadata;
  if (props.contains("metadata")) {
    for (const json& item : props["metadata"].value("items", json::array())) {
      metadata.emplace_back(item.at("key").get<std::string>(), item.value("value", ""));
    }
  }
  GcpReservationAffinity affinity;
  if (auto bad = gcp::BulkInsertAffinity(props, p.zone, scenario_, &affinity)) return *bad;
  std::vector<std::string> policies;
  for (const json& policy : props.value("resourcePolicies", json::array())) {
    // Names (what InstanceProperties takes) or URLs of the zone's region.
    const std::string name = gcp::LastSegment(policy.get<std::string>());
    const std::string path = "regions/" + gcp::RegionOf(p.zone) + "/resourcePolicies/" + name;
    if (resource_policies_.count(gcp::RegionOf(p.zone) + "/" + name) == 0) {
      return gcp::NotFound("projects/" + scenario_.project + "/" + path);
    }
    policies.push_back(Url(path));
  }
  std::vector<std::string> names;
  if (in.contains("perInstanceProperties")) {
    for (const auto& [name, v] : in["perInstanceProperties"].items()) names.push_back(name);
  }
  const std::optional<int64_t> count64 = IntField(in, "count", static_cast<int64_t>(names.size()));
  if (!count64 || *count64 < 1 || *count64 < static_cast<int64_t>(names.size()) || *count64 > 1000) {
    return gcp::Invalid("resource.count", in.value("count", json()).dump(),
                   "Must be in [1, 1000] and at least the number of named instances.");
  }
  const int count = static_cast<int>(*count64);
  const std::optional<int64_t> min64 = IntField(in, "minCount", count);
  if (!min64 || *min64 < 1 || *min64 > count) {
    return gcp::Invalid("resource.minCount", in.value("minCount", json()).dump(), "Must be in [1, count].");
  }
  const int min_count = static_cast<int>(*min64);
  const std::string pattern = in.value("namePattern", "");
  if (static_cast<int>(names.size()) < count) {
    const size_t hash = pattern.find('#');
    if (hash == std::string::npos) {
      return gcp::Invalid("resource.namePattern", pattern,
                     "Must contain # characters when count exceeds the named instances.");
    }
    size_t width = 0;
    while (hash + width < pattern.size() && pattern[hash + width] == '#') ++width;
    for (int n = 1; static_cast<int>(names.size()) < count && n < 1000000; ++n) {
      char digits[16];
      std::snprintf(digits, sizeof digits, "%0*d", static_cast<int>(width), n);
      const std::string name = pattern.substr(0, hash) + digits + pattern.substr(hash + width);
      if (FindInstance(p.zone, name) == nullptr &&
          std::find(names.begin(), names.end(), name) == names.end()) {
        names.push_back(name);
      }
    }
  }
  for (const std::string& n : names) {
    if (!gcp::ValidName(n)) {
      return gcp::Invalid("resource.name", n, "Must be a match of regex '(?:[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?)'");
    }
    if (FindInstance(p.zone, n) != nullptr) {
      return gcp::ErrorResponse(409, "alreadyExists",
                                "The resource 'projects/" + scenario_.project + "/zones/" + p.zone +
                                    "/instances/" + n + "' already exists");
    }
  }
  const auto gpus = GpusOf(machine_type, model, accelerators);
  std::optional<OpError> refused;
  size_t created = 0;
  for (const std::string& n : names) {
    const std::optional<size_t> reservation =
        PickReservation(p.zone, machine_type, model, affinity, now, &refused);
    if (refused || (!reservation && (refused = Refusal(p.zone, machine_type, model, gpus, now)))) break;
    const size_t made = CreateInstance(p.zone, n, machine_type, model, action, labels, "", accelerators, now, metadata);
    instances_[made].resource_policies = policies;
    instances_[made].reservation_affinity = affinity;
    instances_[made].reservation = reservation;
    ++created;
  }
  const bool failed = static_cast<int>(created) < min_count;
  if (failed) {
    // minCount not reached: nothing is kept.
    for (size_t k = 0; k < created; ++k) instances_.pop_back();
    stats_.created -= static_cast<int>(created);
    created = 0;
  }
  Operation& op =
      NewOperation(p.zone, "bulkInsert", Url("zones/" + p.zone + "/instances"), 0, request_id, now);
  if (failed && refused) op.errors.push_back(*refused);
  json meta = {{"perLocationStatus",
                {{"zones/" + p.zone,
                  {{"status", failed ? "FAILED" : "FULFILLED"},
                   {"targetVmCount", count},
                   {"createdVmCount", created},
                   {"failedToCreateVmCount", failed ? count : count - static_cast<int>(created)},
                   {"deletedVmCount", 0}}}}}};
  op.metadata_json = meta.dump();
  return gcp::Json(OperationJson(op, now));
}

EmulatorResponse GcpEmulator::DeleteOne(const Path& p, const std::string& request_id, WallTime now) {
  Instance* i = FindInstance(p.zone, p.name);
  if (i == nullptr) return gcp::NotFound(p.resource());
  DeleteInstance(*i, now);
  Operation& op =
      NewOperation(p.zone, "delete", Url("zones/" + p.zone + "/instances/" + p.name), i->id, request_id, now);
  op.done_at = std::max(op.done_at, *i->end_at);
  return gcp::Json(OperationJson(op, now));
}

EmulatorResponse GcpEmulator::AggregatedList(const Path& /*p*/, const std::string& query, WallTime now) {
  const auto params = gcp::ParseQuery(query);
  gcp::ListQuery list;
  if (auto bad = gcp::ParseListQuery(params, &list)) return *bad;
  std::vector<const Instance*> matched;
  for (const std::string& zone : scenario_.zones) {
    for (const Instance& i : instances_) {
      if (i.info.zone != zone || i.info.deleted) continue;
      if (list.filter && !list.filter->Matches([&](const std::string& field) -> std::optional<std::string> {
            if (field == "name") return i.info.name;
            if (field == "status") return i.info.status;
            if (field == "zone") return i.info.zone;
            if (field == "machineType") return i.info.machine_type;
            if (field == "id") return std::to_string(i.id);
            if (field == "scheduling.provisioningModel") return i.info.provisioning_model;
            if (field == "scheduling.instanceTerminationAction") return i.info.termination_action;
            if (field.rfind("labels.", 0) == 0) {
              auto l = i.info.labels.find(field.substr(7));
              if (l != i.info.labels.end()) return l->second;
            }
            return std::nullopt;
          })) {
        continue;
      }
      matched.push_back(&i);
    }
  }
  json items = json::object();
  const size_t end = list.PageEnd(matched.size());
  for (size_t k = list.offset; k < end; ++k) {
    items["zones/" + matched[k]->info.zone]["instances"].push_back(
        json::parse(InstanceJson(*matched[k], now)));
  }
  return AggregatedPage("instance", std::move(items), end, matched.size());
}

EmulatorResponse GcpEmulator::AggregatedPage(const std::string& kind, json items, size_t end, size_t total) const {
  for (const std::string& zone : scenario_.zones) {
    const std::string scope = "zones/" + zone;
    if (items.contains(scope)) continue;
    items[scope] = {{"warning",
                     {{"code", "NO_RESULTS_ON_PAGE"},
                      {"message", "There are no results for scope '" + scope + "' on this page."},
                      {"data", {{{"key", "scope"}, {"value", scope}}}}}}};
  }
  const std::string collection = "aggregated/" + kind + "s";
  json out = {{"kind", "compute#" + kind + "AggregatedList"},
              {"id", "projects/" + scenario_.project + "/" + collection},
              {"items", std::move(items)},
              {"selfLink", Url(collection)}};
  if (end < total) out["nextPageToken"] = gcp::PageToken(end);
  return gcp::Json(out.dump());
}

EmulatorResponse GcpEmulator::ListOperations(const Path& p, const std::string& query, WallTime now) {
  const auto params = gcp::ParseQuery(query);
  gcp::ListQuery list;
  if (auto bad = gcp::ParseListQuery(params, &list)) return *bad;
  std::vector<const Operation*> matched;
  for (const Operation& op : operations_) {
    if (op.zone != p.zone || now < op.insert_time) continue;
    if (list.filter && !list.filter->Matches([&](const std::string& field) -> std::optional<std::string> {
          if (field == "operationType") return op.type;
          if (field == "status") return std::string(now >= op.done_at ? "DONE" : "RUNNING");
          if (field == "name") return op.name;
          if (field == "targetLink") return op.target_link;
          if (field == "targetId") return std::to_string(op.target_id);
          if (field == "user") return op.user;
          if (field == "clientOperationId" && !op.request_id.empty()) return op.request_id;
          return std::nullopt;
        })) {
      continue;
    }
    matched.push_back(&op);
  }
  json out = {{"kind", "compute#operationList"},
              {"id", "projects/" + scenario_.project + "/zones/" + p.zone + "/operations"},
              {"selfLink", Url("zones/" + p.zone + "/operations")}};
  const size_t end = list.PageEnd(matched.size());
  if (list.offset < end) {
    out["items"] = json::array();
    for (size_t k = list.offset; k < end; ++k)
      out["items"].push_back(json::parse(OperationJson(*matched[k], now)));
  }
  if (end < matched.size()) out["nextPageToken"] = gcp::PageToken(end);
  return gcp::Json(out.dump());
}

EmulatorResponse GcpEmulator::RegionGet(const std::string& region, WallTime now) {
  json zones = json::array();
  for (const std::string& z : scenario_.zones) {
    if (gcp::RegionOf(z) == region) zones.push_back(Url("zones/" + z));
  }
  if (zones.empty()) return gcp::NotFound("projects/" + scenario_.project + "/regions/" + region);
  json quotas = json::array();
  std::set<std::string> metrics;
  for (const GcpQuota& q : scenario_.quotas) {
    if (q.region == region) metrics.insert(q.metric);
  }
  for (const std::string& m : metrics) {
    if (auto limit = QuotaLimit(region, m, now)) {
      quotas.push_back({{"metric", m}, {"limit", *limit}, {"usage", QuotaUsage(region, m, now)}});
    }
  }
  json out = {{"kind", "compute#region"},
              {"id", std::to_string(std::hash<std::string>{}(region) % 9000000000000000ULL + 1000)},
              {"name", region},
              {"status", "UP"},
              {"zones", zones},
              {"quotas", quotas},
              {"selfLink", Url("regions/" + region)}};
  return gcp::Json(out.dump());
}

}  // namespace gpuscaler::sim
