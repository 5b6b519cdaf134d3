// The emulator's scenario file (YAML or JSON), read with yaml-cpp; every
// yaml-cpp exception is caught here and becomes a kConfig error.
#include <yaml-cpp/yaml.h>

#include <set>

#include "sim/cloud_emulator/emulator.h"

namespace gpuscaler::sim {
namespace {

struct Bad {
  std::string message;
};

void Keys(const YAML::Node& n, const std::string& where, std::set<std::string> known) {
  if (!n.IsMap()) throw Bad{where + ": expected a mapping"};
  for (const auto& kv : n) {
    const std::string k = kv.first.as<std::string>();
    if (known.count(k) == 0) throw Bad{where + ": unknown key '" + k + "'"};
  }
}

Seconds Duration(const YAML::Node& n, const std::string& where) {
  std::string text = n.as<std::string>();
  bool negative = !text.empty() && text[0] == '-';
  if (negative) text.erase(0, 1);
  Seconds d;
  if (!ParseDuration(text, &d)) throw Bad{where + ": bad duration '" + n.as<std::string>() + "'"};
  return negative ? -d : d;
}

CapacityType Capacity(const YAML::Node& n, const std::string& where) {
  auto c = ParseCapacityType(n.as<std::string>());
  if (!c) throw Bad{where + ": capacity_type must be spot or on-demand"};
  return *c;
}

}  // namespace

Result<EmulatorScenario> ParseEmulatorScenario(const std::string& text, WallTime start) {
  EmulatorScenario s;
  try {
    YAML::Node root = YAML::Load(text);
    if (!root || root.IsNull()) return s;
    Keys(root, "scenario",
         {"region", "account_id", "zones", "subnets", "launch_latency", "terminate_latency", "terminated_visible",
          "capacity", "throttle", "server_error_rate", "seed", "interruptions", "spot_prices", "on_demand_prices",
          "auto_scaling_groups", "queue", "visibility_timeout", "credentials"});
    if (root["region"]) s.region = root["region"].as<std::string>();
    if (root["account_id"]) s.account_id = root["account_id"].as<std::string>();
    if (root["zones"]) s.zones = root["zones"].as<std::vector<std::string>>();
    else s.zones = {s.region + "a", s.region + "b", s.region + "c"};
    if (root["subnets"]) s.subnets = root["subnets"].as<std::map<std::string, std::string>>();
    if (root["launch_latency"]) s.launch_latency = Duration(root["launch_latency"], "launch_latency");
    if (root["terminate_latency"]) s.terminate_latency = Duration(root["terminate_latency"], "terminate_latency");
    if (root["terminated_visible"]) s.terminated_visible = Duration(root["terminated_visible"], "terminated_visible");
    if (root["seed"]) s.seed = root["seed"].as<uint64_t>();
    if (root["server_error_rate"]) s.server_error_rate = root["server_error_rate"].as<double>();
    if (const YAML::Node t = root["throttle"]) {
      Keys(t, "throttle", {"every", "rate"});
      if (t["every"]) s.throttle_every = t["every"].as<int>();
      if (t["rate"]) s.throttle_rate = t["rate"].as<double>();
    }
    if (const YAML::Node caps = root["capacity"]) {
      for (size_t i = 0; i < caps.size(); ++i) {
        const std::string where = "capacity[" + std::to_string(i) + "]";
        const YAML::Node c = caps[i];
        Keys(c, where, {"instance_type", "zone", "capacity_type", "limit", "error", "from", "until"});
        CapacityLimit l;
        if (c["instance_type"]) l.instance_type = c["instance_type"].as<std::string>();
        if (c["zone"]) l.zone = c["zone"].as<std::string>();
        if (c["capacity_type"]) l.capacity_type = Capacity(c["capacity_type"], where);
        if (!c["limit"]) throw Bad{where + ": limit is required"};
        l.limit = c["limit"].as<int>();
        if (c["error"]) l.error_code = c["error"].as<std::string>();
        if (c["from"]) l.from = Duration(c["from"], where + ".from");
        if (c["until"]) l.until = Duration(c["until"], where + ".until");
        s.capacity.push_back(l);
      }
    }
    if (const YAML::Node ints = root["interruptions"]) {
      for (size_t i = 0; i < ints.size(); ++i) {
        const std::string where = "interruptions[" + std::to_string(i) + "]";
        const YAML::Node n = ints[i];
        Keys(n, where, {"at", "instance_type", "zone", "count", "notice"});
        ScriptedInterruption x;
        if (!n["at"]) throw Bad{where + ": at is required"};
        x.at = Duration(n["at"], where + ".at");
        if (n["instance_type"]) x.instance_type = n["instance_type"].as<std::string>();
        if (n["zone"]) x.zone = n["zone"].as<std::string>();
        if (n["count"]) x.count = n["count"].as<int>();
        if (n["notice"]) x.notice = Duration(n["notice"], where + ".notice");
        s.interruptions.push_back(x);
      }
    }
    if (const YAML::Node prices = root["spot_prices"]) {
      for (size_t i = 0; i < prices.size(); ++i) {
        const std::string where = "spot_prices[" + std::to_string(i) + "]";
        const YAML::Node n = prices[i];
        Keys(n, where, {"instance_type", "zone", "price", "at"});
        ScriptedPrice p;
        if (!n["instance_type"] || !n["zone"] || !n["price"]) throw Bad{where + ": instance_type, zone and price are required"};
        p.instance_type = n["instance_type"].as<std::string>();
        p.zone = n["zone"].as<std::string>();
        p.usd_per_hour = n["price"].as<double>();
        p.time = start;
        if (n["at"]) {
          const std::string at = n["at"].as<std::string>();
          if (!ParseRfc3339(at, &p.time)) p.time = start + Duration(n["at"], where + ".at");
        }
        s.spot_prices.push_back(p);
      }
    }
    if (root["on_demand_prices"]) s.on_demand_prices = root["on_demand_prices"].as<std::map<std::string, double>>();
    if (const YAML::Node groups = root["auto_scaling_groups"]) {
      for (size_t i = 0; i < groups.size(); ++i) {
        const std::string where = "auto_scaling_groups[" + std::to_string(i) + "]";
        const YAML::Node n = groups[i];
        Keys(n, where, {"name", "min", "max", "desired", "instance_type", "zones", "tags"});
        ScriptedGroup g;
        if (!n["name"]) throw Bad{where + ": name is required"};
        g.name = n["name"].as<std::string>();
        if (n["min"]) g.min_size = n["min"].as<int>();
        if (n["max"]) g.max_size = n["max"].as<int>();
        if (n["desired"]) g.desired_capacity = n["desired"].as<int>();
        if (n["instance_type"]) g.instance_type = n["instance_type"].as<std::string>();
        if (n["zones"]) g.zones = n["zones"].as<std::vector<std::string>>();
        if (n["tags"]) g.tags = n["tags"].as<std::map<std::string, std::string>>();
        if (g.min_size > g.desired_capacity || g.desired_capacity > g.max_size) {
          throw Bad{where + ": needs min <= desired <= max"};
        }
        s.groups.push_back(g);
      }
    }
    if (root["queue"]) s.queue_name = root["queue"].as<std::string>();
    if (root["visibility_timeout"]) s.visibility_timeout = Duration(root["visibility_timeout"], "visibility_timeout");
    if (root["credentials"]) s.credentials = root["credentials"].as<std::map<std::string, std::string>>();
  } catch (const Bad& b) {
    return Error::Config("emulator scenario: " + b.message);
  } catch (const YAML::Exception& e) {
    return Error::Config(std::string("emulator scenario: ") + e.what());
  }
  return s;
}

}  // namespace gpuscaler::sim
