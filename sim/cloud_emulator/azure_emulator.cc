// Routing, throttling and long-running operations of the AzureEmulator.
#include <cinttypes>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "sim/cloud_emulator/azure_impl.h"
#include "sim/cloud_emulator/gcp_impl.h"

namespace gpuscaler::sim {

using nlohmann::json;

namespace {

std::vector<std::string> AzSplitPath(const std::string& path) {
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

}  // namespace

AzureEmulator::AzureEmulator(AzureScenario scenario, const Clock& clock) : EmulatorCore(std::move(scenario), clock) {
  const WallTime now = start_;
  for (const AzureScaleSetSpec& spec : scenario_.scale_sets) AddScaleSet(spec, std::nullopt, nullptr, now);
  for (size_t c = 0; c < scenario_.clusters.size(); ++c) {
    for (const AzureAgentPoolSpec& pool : scenario_.clusters[c].pools) {
      AzureScaleSetSpec spec;
      spec.capacity = pool.count;
      AddScaleSet(spec, c, &pool, now);
    }
  }
  evictions_noticed_.assign(scenario_.evictions.size(), false);
  evictions_done_.assign(scenario_.evictions.size(), false);
  for (const std::string& t : scenario_.access_tokens) tokens_[t] = Token{"", WallTime::max()};
}

void AzureEmulator::SetScheme(std::string scheme) {
  std::lock_guard lock(mu_);
  scheme_ = std::move(scheme);
}

EmulatorResponse AzureEmulator::Handle(const EmulatorRequest& request) {
  std::lock_guard lock(mu_);
  const WallTime now = clock_.WallNow();
  AdvanceLocked(now);
  ++stats_.requests;
  try {
    return Dispatch(request, now);
  } catch (const json::exception& e) {
    // A body field of the wrong JSON type.
    return azure::ArmError(400, "InvalidRequestContent",
                           std::string("The request content was invalid and could not be deserialized: ") + e.what());
  }
}

std::string AzureEmulator::BaseUrl(const EmulatorRequest& request) const {
  std::string host = azure::Header(request, "Host");
  if (host.empty()) host = "127.0.0.1";
  return scheme_ + "://" + host;
}

AzureEmulator::Operation& AzureEmulator::NewOperation(const std::string& provider, WallTime now,
                                                      const std::string& error_code,
                                                      const std::string& error_message) {
  Operation op;
  op.id = NewUuid();
  op.provider = provider;
  op.start = now;
  op.done_at = now + scenario_.operation_latency;
  op.error_code = error_code;
  op.error_message = error_message;
  ops_by_id_[azure::Lower(op.id)] = operations_.size();
  operations_.push_back(std::move(op));
  return operations_.back();
}

void AzureEmulator::AddLroHeaders(const EmulatorRequest& request, const Operation& op, bool location,
                                  EmulatorResponse* response) const {
  const auto query = gcp::ParseQuery(request.target.find('?') == std::string::npos
                                         ? std::string()
                                         : request.target.substr(request.target.find('?') + 1));
  auto v = query.find("api-version");
  const std::string api = v == query.end() ? "" : v->second;
  const std::string base = BaseUrl(request) + "/subscriptions/" + scenario_.subscription + "/providers/" +
                           op.provider + "/locations/" + scenario_.location;
  response->headers.emplace_back("Azure-AsyncOperation", base + "/operations/" + op.id + "?api-version=" + api);
  if (location) response->headers.emplace_back("Location", base + "/operationresults/" + op.id + "?api-version=" + api);
  response->headers.emplace_back("Retry-After", std::to_string(scenario_.retry_after.count()));
}

EmulatorResponse AzureEmulator::OperationStatus(const std::string& provider, const std::string& kind,
                                                const std::string& id, const EmulatorRequest& request, WallTime now) {
  auto it = ops_by_id_.find(azure::Lower(id));
  if (it == ops_by_id_.end() || !azure::EqualsNoCase(operations_[it->second].provider, provider)) {
    return azure::ArmError(404, "NotFound", "The operation '" + id + "' was not found.");
  }
  const Operation& op = operations_[it->second];
  const bool done = now >= op.done_at;
  const std::string retry = std::to_string(scenario_.retry_after.count());
  if (kind == "operationresults") {
    if (!done) {
      EmulatorResponse r{202, "", {}, ""};
      r.headers.emplace_back("Location", BaseUrl(request) + request.target);
      r.headers.emplace_back("Retry-After", retry);
      return r;
    }
    if (!op.error_code.empty()) return azure::ArmError(409, op.error_code, op.error_message);
    return {200, "", {}, ""};
  }
  json out = {{"name", op.id}, {"startTime", azure::IsoTime(op.start)}};
  out["status"] = !done ? "InProgress" : op.error_code.empty() ? "Succeeded" : "Failed";
  if (done) out["endTime"] = azure::IsoTime(op.done_at);
  if (done && !op.error_code.empty()) out["error"] = {{"code", op.error_code}, {"message", op.error_message}};
  EmulatorResponse r = azure::Json(out.dump());
  if (!done) r.headers.emplace_back("Retry-After", retry);
  return r;
}

EmulatorResponse AzureEmulator::Dispatch(const EmulatorRequest& request, WallTime now) {
  const size_t q = request.target.find('?');
  const std::string path = request.target.substr(0, q);
  const auto query = gcp::ParseQuery(q == std::string::npos ? "" : request.target.substr(q + 1));
  const std::vector<std::string> seg = AzSplitPath(path);
  if (seg.size() == 4 && seg[1] == "oauth2" && seg[2] == "v2.0" && seg[3] == "token") {
    return TokenEndpoint(request, seg[0], now);
  }
  if (path == "/metadata/identity/oauth2/token") return ImdsToken(request, now);
  if (path == "/metadata/scheduledevents") return ScheduledEvents(request, now);
  if (path.rfind("/_emulator/", 0) == 0) return Control(request, path, now);
  if (seg.size() < 2 || !azure::EqualsNoCase(seg[0], "subscriptions")) {
    return azure::ArmError(404, "NotFound", "The requested path '" + path + "' is not served here.");
  }
  if (auto denied = CheckBearer(request, now)) return *denied;
  if (query.count("api-version") == 0) {
    return azure::ArmError(400, "MissingApiVersionParameter",
                           "The api-version query parameter (?api-version=) is required for all requests.");
  }
  ++api_calls_;
  if ((scenario_.throttle_every > 0 && api_calls_ % scenario_.throttle_every == 0) ||
      (scenario_.throttle_rate > 0 && std::uniform_real_distribution<double>(0, 1)(rng_) < scenario_.throttle_rate)) {
    ++stats_.throttled;
    EmulatorResponse r = azure::ArmError(
        429, "TooManyRequests",
        "The request is being throttled as the limit has been reached for operation type - " + request.method +
            ". For more information, see - https://aka.ms/VMScaleSetsThrottling");
    r.headers.emplace_back("Retry-After", std::to_string(scenario_.throttle_retry_after.count()));
    return r;
  }
  if (scenario_.server_error_rate > 0 &&
      std::uniform_real_distribution<double>(0, 1)(rng_) < scenario_.server_error_rate) {
    ++stats_.server_errors;
    return azure::ArmError(503, "ServiceUnavailable", "The service is temporarily unavailable. Please retry.");
  }
  if (!azure::EqualsNoCase(seg[1], scenario_.subscription)) {
    return azure::ArmError(404, "SubscriptionNotFound", "The subscription '" + seg[1] + "' could not be found.");
  }
  // /subscriptions/{s}/providers/{ns}/locations/{l}/operations|operationresults/{id}
  if (seg.size() == 8 && azure::EqualsNoCase(seg[2], "providers") && azure::EqualsNoCase(seg[4], "locations")) {
    const std::string kind = azure::Lower(seg[6]);
    if (request.method != "GET" || (kind != "operations" && kind != "operationresults")) {
      return azure::ArmError(404, "NotFound", "The requested path '" + path + "' is not served here.");
    }
    return OperationStatus(seg[3], kind, seg[7], request, now);
  }
  if (seg.size() == 4 && azure::EqualsNoCase(seg[2], "resourceGroups") && request.method == "GET") {
    return ResourceGroupGet(seg[3], now);
  }
  // Lists: /subscriptions/{s}/providers/{ns}/{type} (subscription-wide) and
  // /subscriptions/{s}/resourceGroups/{rg}/providers/{ns}/{type}.
  if (request.method == "GET" && seg.size() == 5 && azure::EqualsNoCase(seg[2], "providers")) {
    return ListResources("", azure::Lower(seg[3]) + "/" + azure::Lower(seg[4]), now);
  }
  if (request.method == "GET" && seg.size() == 7 && azure::EqualsNoCase(seg[2], "resourceGroups") &&
      azure::EqualsNoCase(seg[4], "providers")) {
    return ListResources(seg[3], azure::Lower(seg[5]) + "/" + azure::Lower(seg[6]), now);
  }
  if (seg.size() < 8 || !azure::EqualsNoCase(seg[2], "resourceGroups") ||
      !azure::EqualsNoCase(seg[4], "providers")) {
    return azure::ArmError(404, "NotFound", "The requested path '" + path + "' is not served here.");
  }
  ArmPath p;
  p.resource_group = seg[3];
  p.ns = azure::Lower(seg[5]);
  p.type = azure::Lower(seg[6]);
  p.name = seg[7];
  p.rest.assign(seg.begin() + 8, seg.end());
  if (p.ns == "microsoft.compute" && p.type == "virtualmachinescalesets") return ScaleSetCall(request, p, query, now);
  if (p.ns == "microsoft.containerservice" && p.type == "managedclusters") return ClusterCall(request, p, now);
  return azure::ArmError(400, "InvalidResourceType",
                         "The resource type '" + seg[6] + "' could not be found in the namespace '" + seg[5] + "'.");
}

EmulatorResponse AzureEmulator::ListResources(const std::string& rg, const std::string& type, WallTime now) {
  json value = json::array();
  if (type == "microsoft.compute/virtualmachinescalesets") {
    for (const ScaleSet& s : scale_sets_) {
      if (s.deleted_at && now >= *s.deleted_at) continue;
      if (rg.empty() || azure::EqualsNoCase(rg, s.spec.resource_group)) value.push_back(json::parse(ScaleSetJson(s, now)));
    }
  } else if (type == "microsoft.containerservice/managedclusters") {
    for (size_t c = 0; c < scenario_.clusters.size(); ++c) {
      if (rg.empty() || azure::EqualsNoCase(rg, scenario_.clusters[c].resource_group))
        value.push_back(json::parse(ClusterJson(c, now)));
    }
  } else {
    return azure::ArmError(400, "InvalidResourceType", "The resource type '" + type + "' is not served here.");
  }
  // Every list fits one page: no nextLink.
  return azure::Json(json{{"value", value}}.dump());
}

}  // namespace gpuscaler::sim
