// The GcpEmulator's regional calls: resource policies and regional
// operations.
#include <nlohmann/json.hpp>

#include "sim/cloud_emulator/gcp_impl.h"

namespace gpuscaler::sim {

using nlohmann::json;

EmulatorResponse GcpEmulator::Regional(const EmulatorRequest& request, const std::string& region,
                                       const std::string& collection, const std::string& name,
                                       const std::string& verb, const std::string& query, WallTime now) {
  const std::string region_path = "projects/" + scenario_.project + "/regions/" + region;
  bool known_region = false;
  for (const std::string& z : scenario_.zones) known_region = known_region || gcp::RegionOf(z) == region;
  if (!known_region) return gcp::NotFound(region_path);
  const std::string& m = request.method;
  if (collection == "operations" && !name.empty()) {
    auto it = ops_by_name_.find(region + "/" + name);
    if (it == ops_by_name_.end() || operations_[it->second].region != region) {
      return gcp::NotFound(region_path + "/operations/" + name);
    }
    // Handle() blocks on a wait when EnableBlockingWait was called.
    if ((verb.empty() && m == "GET") || (verb == "wait" && m == "POST")) {
      return gcp::Json(OperationJson(operations_[it->second], now));
    }
    return gcp::ErrorResponse(405, "badRequest", "Method not allowed");
  }
  if (collection != "resourcePolicies" || !verb.empty()) {
    return gcp::ErrorResponse(404, "notFound", "The requested URL was not found on this server.");
  }
  if (name.empty() && m == "POST") {
    std::string request_id;
    const auto params = gcp::ParseQuery(query);
    if (auto r = params.find("requestId"); r != params.end()) {
      request_id = r->second;
      if (!gcp::ValidUuid(request_id)) {
        return gcp::Invalid("requestId", request_id, "Must be a UUID other than the zero UUID.");
      }
      if (auto replay = Replay(request_id, now)) return *replay;
    }
    return InsertResourcePolicy(region, request.body, request_id, now);
  }
  if (name.empty() || m != "GET") return gcp::ErrorResponse(405, "badRequest", "Method not allowed");
  auto it = resource_policies_.find(region + "/" + name);
  if (it == resource_policies_.end()) return gcp::NotFound(region_path + "/resourcePolicies/" + name);
  const ResourcePolicy& rp = it->second;
  json out = {{"kind", "compute#resourcePolicy"},
              {"id", std::to_string(rp.id)},
              {"creationTimestamp", gcp::Timestamp(rp.created)},
              {"selfLink", Url("regions/" + region + "/resourcePolicies/" + rp.name)},
              {"region", Url("regions/" + region)},
              {"name", rp.name},
              {"groupPlacementPolicy", {{"collocation", rp.collocation}}},
              {"status", "READY"}};
  if (!rp.description.empty()) out["description"] = rp.description;
  return gcp::Json(out.dump());
}

EmulatorResponse GcpEmulator::InsertResourcePolicy(const std::string& region, const std::string& body,
                                                   const std::string& request_id, WallTime now) {
  const json in = json::parse(body, nullptr, false);
  if (!in.is_object()) return gcp::ErrorResponse(400, "parseError", "Invalid JSON payload received.");
  const std::string name = in.value("name", "");
  if (!gcp::ValidName(name)) {
    return gcp::Invalid("resource.name", name, "Must be a match of regex '(?:[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?)'");
  }
  const json placement = in.value("groupPlacementPolicy", json());
  if (!placement.is_object()) {
    return gcp::Invalid("resource.groupPlacementPolicy", "",
                        "This emulator supports only group placement policies.");
  }
  const std::string collocation = placement.value("collocation", "UNSPECIFIED_COLLOCATION");
  if (collocation != "COLLOCATED" && collocation != "UNSPECIFIED_COLLOCATION") {
    return gcp::Invalid("resource.groupPlacementPolicy.collocation", collocation,
                        "Must be COLLOCATED or UNSPECIFIED_COLLOCATION.");
  }
  const std::string path = "regions/" + region + "/resourcePolicies/" + name;
  const std::string key = region + "/" + name;
  if (resource_policies_.count(key) != 0) {
    return gcp::ErrorResponse(409, "alreadyExists",
                              "The resource 'projects/" + scenario_.project + "/" + path + "' already exists");
  }
  ResourcePolicy rp;
  rp.id = NewId();
  rp.region = region;
  rp.name = name;
  rp.description = in.value("description", "");
  rp.collocation = collocation;
  rp.created = now;
  resource_policies_[key] = rp;
  Operation& op = NewOperation(region, "insert", Url(path), rp.id, request_id, now);
  op.zone.clear();
  op.region = region;
  return gcp::Json(OperationJson(op, now));
}

}  // namespace gpuscaler::sim
