// The managed instance group calls of the GcpEmulator: get,
// listManagedInstances, createInstances, deleteInstances and resize (the
// standby actions are in gcp_standby.cc).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "sim/cloud_emulator/gcp_impl.h"

namespace gpuscaler::sim {

using nlohmann::json;

EmulatorResponse GcpEmulator::GroupCall(const EmulatorRequest& request, const Path& p,
                                        const std::string& query, const std::string& request_id,
                                        WallTime now) {
  Group* g = FindGroup(p.zone, p.name);
  if (g == nullptr) return gcp::NotFound(p.resource());
  const std::string group_link = Url("zones/" + p.zone + "/instanceGroupManagers/" + p.name);
  const std::string zone_instances = "projects/" + scenario_.project + "/zones/" + p.zone + "/instances/";
  if (p.verb.empty()) {
    if (request.method != "GET") return gcp::ErrorResponse(405, "badRequest", "Method not allowed");
    return gcp::Json(GroupJson(*g, now));
  }
  if (request.method != "POST") return gcp::ErrorResponse(405, "badRequest", "Method not allowed");
  const auto params = gcp::ParseQuery(query);
  auto member_named = [&](const std::string& name) -> Member* {
    for (Member& m : g->members) {
      if (m.name == name && !m.deleting) return &m;
    }
    return nullptr;
  };
  if (IsStandbyVerb(p.verb)) return StandbyCall(request, p, *g, request_id, now);
  if (p.verb == "listManagedInstances") {
    gcp::ListQuery list;
    if (auto bad = gcp::ParseListQuery(params, &list)) return *bad;
    std::vector<json> matched;
    for (const Member& m : g->members) {
      json j = json::parse(MemberJson(*g, m, now));
      if (list.filter && !list.filter->Matches([&](const std::string& field) -> std::optional<std::string> {
            if (field == "name" || field == "currentAction" || field == "instanceStatus") {
              if (j.contains(field)) return j[field].get<std::string>();
            }
            return std::nullopt;
          })) {
        continue;
      }
      matched.push_back(std::move(j));
    }
    json out = json::object();
    const size_t end = list.PageEnd(matched.size());
    if (list.offset < end)
      out["managedInstances"] = json(std::vector<json>(matched.begin() + list.offset, matched.begin() + end));
    if (end < matched.size()) out["nextPageToken"] = gcp::PageToken(end);
    return gcp::Json(out.dump());
  }
  std::string op_type = "compute.instanceGroupManagers." + p.verb;
  if (p.verb == "createInstances") {
    const json in = json::parse(request.body, nullptr, false);
    if (!in.is_object() || !in.contains("instances") || !in["instances"].is_array() ||
        in["instances"].empty()) {
      return gcp::Invalid("resource.instances", request.body, "A non-empty list of instances is required.");
    }
    std::vector<std::string> names;
    std::vector<std::vector<std::pair<std::string, std::string>>> metadata;
    for (const json& i : in["instances"]) {
      const std::string name = i.is_object() ? i.value("name", "") : "";
      metadata.emplace_back();
      if (i.is_object() && i.contains("preservedState")) {
        const json preserved = i["preservedState"].value("metadata", json::object());
        for (const auto& [key, value] : preserved.items())
          metadata.back().emplace_back(key, value.get<std::string>());
      }
      if (!gcp::ValidName(name)) {
        return gcp::Invalid("resource.instances.name", name,
                       "Must be a match of regex '(?:[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?)'");
      }
      if (member_named(name) != nullptr || FindInstance(p.zone, name) != nullptr ||
          std::find(names.begin(), names.end(), name) != names.end()) {
        return gcp::ErrorResponse(409, "alreadyExists",
                                  "The resource '" + zone_instances + name + "' already exists");
      }
      names.push_back(name);
    }
    for (size_t k = 0; k < names.size(); ++k) {
      Member m;
      m.name = names[k];
      m.metadata = metadata[k];
      m.next_try = now;
      g->members.push_back(std::move(m));
      TryCreateMember(*g, g->members.back(), now);
    }
  } else if (p.verb == "deleteInstances") {
    const json in = json::parse(request.body, nullptr, false);
    if (!in.is_object() || !in.contains("instances") || !in["instances"].is_array()) {
      return gcp::Invalid("resource.instances", request.body, "A list of instance URLs is required.");
    }
    const bool skip = in.value("skipInstancesOnValidationError", false);
    std::vector<std::string> names, strangers;
    for (const json& i : in["instances"]) {
      const std::string name = i.is_string() ? gcp::LastSegment(i.get<std::string>()) : "";
      (member_named(name) != nullptr ? names : strangers).push_back(name);
    }
    if (!strangers.empty() && !skip) {
      std::string list;
      for (const std::string& s : strangers) list += (list.empty() ? "" : ", ") + zone_instances + s;
      return gcp::ErrorResponse(400, "invalid",
                                "The request contains instances that are not members of the group: " + list);
    }
    for (const std::string& name : names) {
      Member* m = member_named(name);
      if (m == nullptr) continue;  // named twice
      m->deleting = true;
      if (m->instance && !instances_[*m->instance].info.deleted) {
        DeleteInstance(instances_[*m->instance], now);
      }
    }
    g->members.erase(std::remove_if(g->members.begin(), g->members.end(),
                                    [](const Member& m) { return m.deleting && !m.instance; }),
                     g->members.end());
  } else if (p.verb == "resize") {
    auto s = params.find("size");
    char* end = nullptr;
    const long size = s == params.end() ? -1 : std::strtol(s->second.c_str(), &end, 10);
    if (s == params.end() || s->second.empty() || *end != '\0' || size < 0 || size > 1000) {
      return gcp::Invalid("size", s == params.end() ? "" : s->second, "Must be an integer in [0, 1000].");
    }
    // targetSize: stopped and suspended members are neither counted nor removed.
    long current = 0;
    for (const Member& m : g->members) current += m.deleting || m.standby != Standby::kNone ? 0 : 1;
    for (; current < size; ++current) {
      Member m;
      do {
        char suffix[8];
        std::snprintf(suffix, sizeof suffix, "%04x", static_cast<unsigned>(rng_() & 0xffff));
        m.name = g->spec.base_instance_name + "-" + suffix;
      } while (member_named(m.name) != nullptr || FindInstance(p.zone, m.name) != nullptr);
      m.next_try = now;
      g->members.push_back(std::move(m));
      TryCreateMember(*g, g->members.back(), now);
    }
    // Shrinking removes members that have no VM yet first, then the newest.
    for (int pass = 0; pass < 2 && current > size; ++pass) {
      for (auto it = g->members.rbegin(); it != g->members.rend() && current > size; ++it) {
        if (it->deleting || it->standby != Standby::kNone || (pass == 0 && it->instance)) continue;
        it->deleting = true;
        if (it->instance) DeleteInstance(instances_[*it->instance], now);
        --current;
      }
    }
    g->members.erase(std::remove_if(g->members.begin(), g->members.end(),
                                    [](const Member& m) { return m.deleting && !m.instance; }),
                     g->members.end());
  } else {
    return gcp::ErrorResponse(404, "notFound", "Unknown method " + p.verb + " of instanceGroupManagers.");
  }
  Operation& op = NewOperation(p.zone, op_type, group_link, g->id, request_id, now);
  return gcp::Json(OperationJson(op, now));
}

}  // namespace gpuscaler::sim
