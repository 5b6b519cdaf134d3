// The emulator's scenario file (YAML or JSON), read as scenario_yaml.h says.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <set>

#include "sim/cloud_emulator/emulator.h"
#include "sim/cloud_emulator/scenario_yaml.h"

namespace gpuscaler::sim {
namespace {

using scenario_yaml::ForEachItem;
using scenario_yaml::KeyPath;
using scenario_yaml::Problem;

void Keys(const YAML::Node& n, const std::string& where, std::set<std::string> known) {
  if (!n.IsMap()) throw Problem{where + ": expected a mapping"};
  for (const auto& kv : n) {
    const std::string k = kv.first.as<std::string>();
    if (known.count(k) == 0) throw Problem{where + ": unknown key '" + k + "'"};
  }
}

Seconds Duration(const YAML::Node& n, const std::string& where) {
  std::string text = n.as<std::string>();
  bool negative = !text.empty() && text[0] == '-';
  if (negative) text.erase(0, 1);
  Seconds d;
  if (!ParseDuration(text, &d)) throw Problem{where + ": bad duration '" + n.as<std::string>() + "'"};
  return negative ? -d : d;
}

CapacityType Capacity(const YAML::Node& n, const std::string& where) {
  auto c = ParseCapacityType(n.as<std::string>());
  if (!c) throw Problem{where + ": capacity_type must be spot or on-demand"};
  return *c;
}

// Field readers: each sets `*out` only when `n` has the key.
template <typename T>
void Read(const YAML::Node& n, const char* key, T* out) {
  if (n[key]) *out = n[key].as<T>();
}

// `out` is Seconds or std::optional<Seconds>; `where` names the mapping ("" at the root).
template <typename D>
void ReadDuration(const YAML::Node& n, const char* key, const std::string& where, D* out) {
  if (n[key]) *out = Duration(n[key], KeyPath(where, key));
}

CapacityLimit ReadCapacityLimit(const YAML::Node& c, const std::string& where) {
  Keys(c, where, {"instance_type", "zone", "capacity_type", "limit", "error", "from", "until"});
  CapacityLimit l;
  Read(c, "instance_type", &l.instance_type);
  Read(c, "zone", &l.zone);
  if (c["capacity_type"]) l.capacity_type = Capacity(c["capacity_type"], where);
  if (!c["limit"]) throw Problem{where + ": limit is required"};
  Read(c, "limit", &l.limit);
  Read(c, "error", &l.error_code);
  ReadDuration(c, "from", where, &l.from);
  ReadDuration(c, "until", where, &l.until);
  return l;
}

ScriptedInterruption ReadInterruption(const YAML::Node& n, const std::string& where) {
  Keys(n, where, {"at", "instance_type", "zone", "count", "notice"});
  ScriptedInterruption x;
  if (!n["at"]) throw Problem{where + ": at is required"};
  ReadDuration(n, "at", where, &x.at);
  Read(n, "instance_type", &x.instance_type);
  Read(n, "zone", &x.zone);
  Read(n, "count", &x.count);
  ReadDuration(n, "notice", where, &x.notice);
  return x;
}

// `at` is RFC 3339 or a duration after `start` (default: `start`).
ScriptedPrice ReadSpotPrice(const YAML::Node& n, const std::string& where, WallTime start) {
  Keys(n, where, {"instance_type", "zone", "price", "at"});
  ScriptedPrice p;
  if (!n["instance_type"] || !n["zone"] || !n["price"]) {
    throw Problem{where + ": instance_type, zone and price are required"};
  }
  Read(n, "instance_type", &p.instance_type);
  Read(n, "zone", &p.zone);
  Read(n, "price", &p.usd_per_hour);
  p.time = start;
  if (n["at"] && !ParseRfc3339(n["at"].as<std::string>(), &p.time)) p.time = start + Duration(n["at"], where + ".at");
  return p;
}

// RFC 3339, or a duration after `start`.
WallTime ReadTime(const YAML::Node& n, const std::string& where, WallTime start) {
  WallTime t;
  if (ParseRfc3339(n.as<std::string>(), &t)) return t;
  return start + Duration(n, where);
}

ScriptedCapacityReservation ReadCapacityReservation(const YAML::Node& n, const std::string& where,
                                                    WallTime start, const std::vector<std::string>& zones) {
  Keys(n, where,
       {"id", "instance_type", "zone", "count", "type", "instance_match_criteria", "start", "end", "tags"});
  ScriptedCapacityReservation r;
  if (!n["id"] || !n["instance_type"] || !n["zone"])
    throw Problem{where + ": id, instance_type and zone are required"};
  Read(n, "id", &r.id);
  if (r.id.rfind("cr-", 0) != 0) throw Problem{where + ".id: a capacity reservation id (cr-…) is required"};
  Read(n, "instance_type", &r.instance_type);
  Read(n, "zone", &r.zone);
  if (std::find(zones.begin(), zones.end(), r.zone) == zones.end()) {
    throw Problem{where + ".zone: '" + r.zone + "' is not one of the scenario's zones"};
  }
  Read(n, "count", &r.count);
  if (r.count < 1) throw Problem{where + ".count: must be at least 1"};
  Read(n, "type", &r.type);
  const bool block = r.type == "capacity-block";
  if (!block && r.type != "default") throw Problem{where + ".type: must be default or capacity-block"};
  r.match = block ? "targeted" : "open";
  Read(n, "instance_match_criteria", &r.match);
  if (r.match != "open" && r.match != "targeted")
    throw Problem{where + ".instance_match_criteria: must be open or targeted"};
  if (block && r.match != "targeted") throw Problem{where + ": a Capacity Block is always targeted"};
  r.start = n["start"] ? ReadTime(n["start"], where + ".start", start) : start;
  if (n["end"]) r.end = ReadTime(n["end"], where + ".end", start);
  if (block && !r.end) throw Problem{where + ": a Capacity Block needs an end"};
  if (r.end && *r.end <= r.start) throw Problem{where + ".end: must be after start"};
  Read(n, "tags", &r.tags);
  return r;
}

ScriptedGroup ReadGroup(const YAML::Node& n, const std::string& where) {
  Keys(n, where, {"name", "min", "max", "desired", "instance_type", "instance_types", "zones", "tags", "launch_template",
                  "propagate_at_launch"});
  ScriptedGroup g;
  if (!n["name"]) throw Problem{where + ": name is required"};
  Read(n, "name", &g.name);
  Read(n, "min", &g.min_size);
  Read(n, "max", &g.max_size);
  Read(n, "desired", &g.desired_capacity);
  Read(n, "instance_type", &g.instance_type);
  Read(n, "zones", &g.zones);
  Read(n, "tags", &g.tags);
  Read(n, "instance_types", &g.instance_types);
  Read(n, "launch_template", &g.launch_template);
  Read(n, "propagate_at_launch", &g.propagate_at_launch);
  if (g.min_size > g.desired_capacity || g.desired_capacity > g.max_size) {
    throw Problem{where + ": needs min <= desired <= max"};
  }
  return g;
}

}  // namespace

Result<EmulatorScenario> ParseEmulatorScenario(const std::string& text, WallTime start) {
  auto read = [&](const YAML::Node& root, EmulatorScenario& s) {
    Keys(root, "scenario",
         {"provider",
          "region",
          "account_id",
          "zones",
          "subnets",
          "launch_latency",
          "terminate_latency",
          "start_latency",
          "stop_latency",
          "terminated_visible",
          "group_launch_delay",
          "capacity",
          "throttle",
          "server_error_rate",
          "seed",
          "interruptions",
          "spot_prices",
          "on_demand_prices",
          "auto_scaling_groups",
          "queue",
          "visibility_timeout",
          "credentials",
          "ssm_parameters",
          "security_groups",
          "subnet_tags",
          "capacity_reservations"});
    Read(root, "region", &s.region);
    Read(root, "account_id", &s.account_id);
    s.zones = {s.region + "a", s.region + "b", s.region + "c"};
    Read(root, "zones", &s.zones);
    Read(root, "subnets", &s.subnets);
    Read(root, "subnet_tags", &s.subnet_tags);
    for (const auto& [id, tags] : s.subnet_tags) {
      if (s.subnets.count(id) == 0) throw Problem{"scenario.subnet_tags." + id + ": not one of `subnets`"};
    }
    Read(root, "ssm_parameters", &s.ssm_parameters);
    ForEachItem(root, "security_groups", [&](const YAML::Node& n, const std::string& where) {
      Keys(n, where, {"id", "name", "tags"});
      ScriptedSecurityGroup g;
      Read(n, "id", &g.id);
      Read(n, "name", &g.name);
      Read(n, "tags", &g.tags);
      if (g.id.rfind("sg-", 0) != 0) throw Problem{where + ".id: a security group id (sg-…) is required"};
      s.security_groups.push_back(std::move(g));
    });
    ReadDuration(root, "launch_latency", "", &s.launch_latency);
    ReadDuration(root, "terminate_latency", "", &s.terminate_latency);
    ReadDuration(root, "start_latency", "", &s.start_latency);
    ReadDuration(root, "stop_latency", "", &s.stop_latency);
    ReadDuration(root, "terminated_visible", "", &s.terminated_visible);
    ReadDuration(root, "group_launch_delay", "", &s.group_launch_delay);
    Read(root, "seed", &s.seed);
    Read(root, "server_error_rate", &s.server_error_rate);
    if (const YAML::Node t = root["throttle"]) {
      Keys(t, "throttle", {"every", "rate"});
      Read(t, "every", &s.throttle_every);
      Read(t, "rate", &s.throttle_rate);
    }
    ForEachItem(root, "capacity", [&](const YAML::Node& n, const std::string& where) {
      s.capacity.push_back(ReadCapacityLimit(n, where));
    });
    ForEachItem(root, "interruptions", [&](const YAML::Node& n, const std::string& where) {
      s.interruptions.push_back(ReadInterruption(n, where));
    });
    ForEachItem(root, "spot_prices", [&](const YAML::Node& n, const std::string& where) {
      s.spot_prices.push_back(ReadSpotPrice(n, where, start));
    });
    Read(root, "on_demand_prices", &s.on_demand_prices);
    ForEachItem(root, "auto_scaling_groups", [&](const YAML::Node& n, const std::string& where) {
      s.groups.push_back(ReadGroup(n, where));
    });
    ForEachItem(root, "capacity_reservations", [&](const YAML::Node& n, const std::string& where) {
      ScriptedCapacityReservation r = ReadCapacityReservation(n, where, start, s.zones);
      for (const ScriptedCapacityReservation& other : s.capacity_reservations) {
        if (other.id == r.id) throw Problem{where + ".id: '" + r.id + "' is used twice"};
      }
      s.capacity_reservations.push_back(std::move(r));
    });
    Read(root, "queue", &s.queue_name);
    ReadDuration(root, "visibility_timeout", "", &s.visibility_timeout);
    Read(root, "credentials", &s.credentials);
  };
  return scenario_yaml::ParseScenario<EmulatorScenario>(text, read);
}

}  // namespace gpuscaler::sim
