// The Compute Engine emulator's scenario file (YAML or JSON), read as
// scenario_yaml.h says; its errors name the key path and line.
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <set>

#include "gpuscaler/model/text_file.h"
#include "sim/cloud_emulator/gcp_emulator.h"
#include "sim/cloud_emulator/gcp_impl.h"
#include "sim/cloud_emulator/scenario_yaml.h"

namespace gpuscaler::sim {
namespace {

using scenario_yaml::KeyPath;
using scenario_yaml::Problem;

std::string At(const YAML::Node& n, const std::string& where) {
  const YAML::Mark m = n.Mark();
  return m.line >= 0 ? where + " (line " + std::to_string(m.line + 1) + ")" : where;
}

void Keys(const YAML::Node& n, const std::string& where, const std::set<std::string>& known) {
  if (!n.IsMap()) throw Problem{At(n, where) + ": expected a mapping"};
  for (const auto& kv : n) {
    const std::string k = kv.first.as<std::string>();
    if (known.count(k) == 0) throw Problem{At(kv.first, where) + ": unknown key '" + k + "'"};
  }
}

template <typename T>
void Read(const YAML::Node& n, const char* key, const std::string& where, T* out) {
  if (!n[key]) return;
  try {
    *out = n[key].as<T>();
  } catch (const YAML::Exception&) {
    throw Problem{At(n[key], KeyPath(where, key)) + ": wrong type"};
  }
}

Seconds Duration(const YAML::Node& n, const std::string& where) {
  Seconds d;
  if (!n.IsScalar() || !ParseDuration(n.as<std::string>(), &d) || d < Seconds(0)) {
    throw Problem{At(n, where) + ": expected a duration like 30s or 5m"};
  }
  return d;
}

template <typename D>
void ReadDuration(const YAML::Node& n, const char* key, const std::string& where, D* out) {
  if (n[key]) *out = Duration(n[key], KeyPath(where, key));
}

// scenario_yaml::ForEachItem, but a value under `key` that is not a list is
// a Problem.
template <typename F>
void ForEachItem(const YAML::Node& root, const char* key, F&& read) {
  if (const YAML::Node list = root[key]; list && !list.IsSequence()) {
    throw Problem{At(list, key) + ": expected a list"};
  }
  scenario_yaml::ForEachItem(root, key, std::forward<F>(read));
}

GcpServiceAccount ReadServiceAccount(const YAML::Node& n, const std::string& where,
                                     const std::string& base_dir) {
  Keys(n, where, {"email", "public_key", "public_key_file"});
  GcpServiceAccount a;
  Read(n, "email", where, &a.email);
  Read(n, "public_key", where, &a.public_key_pem);
  std::string file;
  Read(n, "public_key_file", where, &file);
  if (a.email.empty()) throw Problem{At(n, where) + ": email is required"};
  if (a.public_key_pem.empty() == file.empty())
    throw Problem{At(n, where) + ": give one of public_key, public_key_file"};
  if (!file.empty()) {
    const std::filesystem::path path = std::filesystem::path(file).is_absolute()
                                           ? std::filesystem::path(file)
                                           : std::filesystem::path(base_dir) / file;
    auto pem = ReadConfigFile(path.string());
    if (!pem.ok())
      throw Problem{At(n["public_key_file"], where + ".public_key_file") + ": " + pem.error().message()};
    a.public_key_pem = *pem;
  }
  if (a.public_key_pem.find("-----BEGIN") == std::string::npos) {
    throw Problem{At(n, where) + ": the public key is not PEM (-----BEGIN PUBLIC KEY----- or a certificate)"};
  }
  return a;
}

std::map<std::string, std::pair<std::string, int>> ReadMachineGpus(const YAML::Node& m) {
  if (!m.IsMap()) throw Problem{At(m, "machine_gpus") + ": expected a mapping"};
  std::map<std::string, std::pair<std::string, int>> out;
  for (const auto& kv : m) {
    const std::string type = kv.first.as<std::string>();
    const std::string where = "machine_gpus." + type;
    Keys(kv.second, where, {"metric", "count"});
    std::pair<std::string, int> v;
    Read(kv.second, "metric", where, &v.first);
    Read(kv.second, "count", where, &v.second);
    if (v.first.empty() || v.second <= 0)
      throw Problem{At(kv.second, where) + ": metric and a count > 0 are required"};
    out[type] = v;
  }
  return out;
}

// A duration that may be negative ("-2h": before the start).
Seconds SignedDuration(const YAML::Node& n, const std::string& where) {
  std::string text = n.IsScalar() ? n.as<std::string>() : "";
  const bool negative = !text.empty() && text[0] == '-';
  if (negative) text.erase(0, 1);
  Seconds d;
  if (!ParseDuration(text, &d)) throw Problem{At(n, where) + ": expected a duration like 30s, 5m or -2h"};
  return negative ? -d : d;
}

// billing_catalog: {max_page_size, error: {code, status, reason, message},
// skus: [{sku_id, description, resource_family, resource_group, usage_type,
// regions, unit, usd, from | prices: [{usd, from}]}]}.
GcpBillingCatalog ReadBillingCatalog(const YAML::Node& n) {
  GcpBillingCatalog c;
  Keys(n, "billing_catalog", {"max_page_size", "error", "skus"});
  Read(n, "max_page_size", "billing_catalog", &c.max_page_size);
  if (c.max_page_size < 1)
    throw Problem{At(n["max_page_size"], "billing_catalog.max_page_size") + ": must be >= 1"};
  if (const YAML::Node e = n["error"]) {
    Keys(e, "billing_catalog.error", {"code", "status", "reason", "message"});
    Read(e, "code", "billing_catalog.error", &c.error_code);
    Read(e, "status", "billing_catalog.error", &c.error_status);
    Read(e, "reason", "billing_catalog.error", &c.error_reason);
    Read(e, "message", "billing_catalog.error", &c.error_message);
    if (c.error_code < 400 || c.error_code > 599 || c.error_status.empty())
      throw Problem{At(e, "billing_catalog.error") + ": code (400..599) and status are required"};
  }
  ForEachItem(n, "skus", [&](const YAML::Node& s, const std::string& item) {
    const std::string where = "billing_catalog." + item;
    Keys(s, where,
         {"sku_id", "description", "resource_family", "resource_group", "usage_type", "regions", "unit",
          "usd", "from", "prices"});
    GcpBillingSku sku;
    Read(s, "sku_id", where, &sku.sku_id);
    Read(s, "description", where, &sku.description);
    Read(s, "resource_family", where, &sku.resource_family);
    Read(s, "resource_group", where, &sku.resource_group);
    Read(s, "usage_type", where, &sku.usage_type);
    Read(s, "regions", where, &sku.regions);
    Read(s, "unit", where, &sku.usage_unit);
    if (sku.description.empty() || sku.regions.empty())
      throw Problem{At(s, where) + ": description and regions are required"};
    if (sku.usage_unit != "h" && sku.usage_unit != "GiBy.h" && sku.usage_unit != "GiBy.mo")
      throw Problem{At(s, where) + ": unit must be h, GiBy.h or GiBy.mo"};
    auto read_price = [&](const YAML::Node& p, const std::string& at) {
      if (!p["usd"]) throw Problem{At(p, at) + ": usd is required"};
      double usd = 0;
      Read(p, "usd", at, &usd);
      if (usd < 0) throw Problem{At(p["usd"], at + ".usd") + ": must be >= 0"};
      const Seconds from = p["from"] ? SignedDuration(p["from"], at + ".from") : Seconds(0);
      if (!sku.prices.empty() && from <= sku.prices.back().first)
        throw Problem{At(p, at) + ": prices must be in ascending `from`"};
      sku.prices.push_back({from, usd});
    };
    if (s["prices"]) {
      if (s["usd"] || s["from"]) throw Problem{At(s, where) + ": give usd and from, or prices, not both"};
      ForEachItem(s, "prices",
                  [&](const YAML::Node& p, const std::string& at) { read_price(p, where + "." + at); });
    } else {
      read_price(s, where);
    }
    c.skus.push_back(std::move(sku));
  });
  return c;
}

GcpReservationAffinity ReadAffinity(const YAML::Node& n, const std::string& where) {
  Keys(n, where, {"type", "reservation"});
  GcpReservationAffinity a;
  Read(n, "type", where, &a.consume_type);
  std::string name;
  Read(n, "reservation", where, &name);
  if (a.consume_type != "ANY_RESERVATION" && a.consume_type != "SPECIFIC_RESERVATION" &&
      a.consume_type != "NO_RESERVATION") {
    throw Problem{At(n, where) + ": type must be ANY_RESERVATION, SPECIFIC_RESERVATION or NO_RESERVATION"};
  }
  if ((a.consume_type == "SPECIFIC_RESERVATION") == name.empty())
    throw Problem{At(n, where) +
                  ": a reservation name goes with type SPECIFIC_RESERVATION, and only with it"};
  if (!name.empty()) {
    a.key = gcp::kReservationNameKey;
    a.values = {name};
  }
  return a;
}

// reservations: [{name, zone, machine_type, count, in_use_elsewhere,
// specific_reservation_required, status, delete_at, accelerators: [{type, count}]}].
GcpReservation ReadReservation(const YAML::Node& n, const std::string& where) {
  Keys(n, where,
       {"name", "zone", "machine_type", "count", "in_use_elsewhere", "specific_reservation_required",
        "status", "delete_at", "accelerators"});
  GcpReservation r;
  Read(n, "name", where, &r.name);
  Read(n, "zone", where, &r.zone);
  Read(n, "machine_type", where, &r.machine_type);
  if (r.name.empty() || r.zone.empty() || r.machine_type.empty() || !n["count"])
    throw Problem{At(n, where) + ": name, zone, machine_type and count are required"};
  Read(n, "count", where, &r.count);
  Read(n, "in_use_elsewhere", where, &r.in_use_elsewhere);
  if (r.count < 0 || r.in_use_elsewhere < 0 || r.in_use_elsewhere > r.count)
    throw Problem{At(n, where) + ": count >= 0 and 0 <= in_use_elsewhere <= count are required"};
  Read(n, "specific_reservation_required", where, &r.specific_reservation_required);
  Read(n, "status", where, &r.status);
  if (r.status != "CREATING" && r.status != "READY" && r.status != "DELETING" && r.status != "UPDATING")
    throw Problem{At(n, where) + ": status must be CREATING, READY, DELETING or UPDATING"};
  ReadDuration(n, "delete_at", where, &r.delete_at);
  ForEachItem(n, "accelerators", [&](const YAML::Node& a, const std::string& item) {
    const std::string at = where + "." + item;
    Keys(a, at, {"type", "count"});
    std::pair<std::string, int> acc;
    Read(a, "type", at, &acc.first);
    Read(a, "count", at, &acc.second);
    if (acc.first.empty() || acc.second <= 0)
      throw Problem{At(a, at) + ": type and a count > 0 are required"};
    r.accelerators.push_back(acc);
  });
  return r;
}

void CheckModel(const YAML::Node& n, const std::string& where, const std::string& model, bool allow_empty) {
  if ((allow_empty && model.empty()) || model == "STANDARD" || model == "SPOT") return;
  throw Problem{At(n, where) + ": provisioning_model must be STANDARD or SPOT, got '" + model + "'"};
}

}  // namespace

Result<std::string> EmulatorScenarioProvider(const std::string& text) {
  return scenario_yaml::ParseScenario<std::string>(text, [](const YAML::Node& root, std::string& provider) {
    if (!root.IsMap() || !root["provider"]) return;
    provider = root["provider"].as<std::string>();
    if (provider != "aws" && provider != "gcp" && provider != "azure") {
      throw Problem{At(root["provider"], "provider") + ": must be aws, gcp or azure, got '" + provider + "'"};
    }
  });
}

Result<GcpScenario> ParseGcpScenario(const std::string& text, const std::string& base_dir) {
  return scenario_yaml::ParseScenario<GcpScenario>(text, [&](const YAML::Node& root, GcpScenario& s) {
    Keys(root, "scenario",
         {"provider",
          "project",
          "zones",
          "token_audience",
          "service_accounts",
          "metadata_account",
          "access_tokens",
          "token_lifetime",
          "operation_latency",
          "boot_latency",
          "delete_latency",
          "stop_latency",
          "start_latency",
          "gpu_suspend",
          "mig_retry_interval",
          "capacity",
          "quotas",
          "preemptions",
          "managed_instance_groups",
          "machine_gpus",
          "billing_catalog",
          "reservations",
          "throttle",
          "server_error_rate",
          "seed"});
    Read(root, "project", "", &s.project);
    Read(root, "zones", "", &s.zones);
    if (s.zones.empty()) throw Problem{At(root["zones"], "zones") + ": at least one zone is required"};
    Read(root, "token_audience", "", &s.token_audience);
    Read(root, "metadata_account", "", &s.metadata_account);
    Read(root, "access_tokens", "", &s.access_tokens);
    ReadDuration(root, "token_lifetime", "", &s.token_lifetime);
    ReadDuration(root, "operation_latency", "", &s.operation_latency);
    ReadDuration(root, "boot_latency", "", &s.boot_latency);
    ReadDuration(root, "delete_latency", "", &s.delete_latency);
    ReadDuration(root, "stop_latency", "", &s.stop_latency);
    ReadDuration(root, "start_latency", "", &s.start_latency);
    Read(root, "gpu_suspend", "", &s.gpu_suspend);
    ReadDuration(root, "mig_retry_interval", "", &s.mig_retry_interval);
    if (s.token_lifetime <= Seconds(0))
      throw Problem{At(root["token_lifetime"], "token_lifetime") + ": must be > 0"};
    Read(root, "seed", "", &s.seed);
    Read(root, "server_error_rate", "", &s.server_error_rate);
    if (const YAML::Node t = root["throttle"]) {
      Keys(t, "throttle", {"every", "rate"});
      Read(t, "every", "throttle", &s.throttle_every);
      Read(t, "rate", "throttle", &s.throttle_rate);
    }
    auto in_zones = [&](const YAML::Node& n, const std::string& where, const std::string& zone) {
      if (!zone.empty() && std::find(s.zones.begin(), s.zones.end(), zone) == s.zones.end()) {
        throw Problem{At(n, where) + ": zone '" + zone + "' is not one of `zones`"};
      }
    };
    ForEachItem(root, "service_accounts", [&](const YAML::Node& n, const std::string& where) {
      s.service_accounts.push_back(ReadServiceAccount(n, where, base_dir));
    });
    ForEachItem(root, "capacity", [&](const YAML::Node& n, const std::string& where) {
      Keys(n, where, {"machine_type", "zone", "provisioning_model", "limit", "error", "from", "until"});
      GcpCapacityLimit l;
      Read(n, "machine_type", where, &l.machine_type);
      Read(n, "zone", where, &l.zone);
      in_zones(n, where, l.zone);
      Read(n, "provisioning_model", where, &l.provisioning_model);
      CheckModel(n, where, l.provisioning_model, true);
      if (!n["limit"]) throw Problem{At(n, where) + ": limit is required"};
      Read(n, "limit", where, &l.limit);
      Read(n, "error", where, &l.error_code);
      if (l.error_code != "ZONE_RESOURCE_POOL_EXHAUSTED" &&
          l.error_code != "ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS") {
        throw Problem{At(n["error"], where + ".error") +
                  ": must be ZONE_RESOURCE_POOL_EXHAUSTED or ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS"};
      }
      ReadDuration(n, "from", where, &l.from);
      ReadDuration(n, "until", where, &l.until);
      s.capacity.push_back(std::move(l));
    });
    ForEachItem(root, "quotas", [&](const YAML::Node& n, const std::string& where) {
      Keys(n, where, {"region", "metric", "limit", "from"});
      GcpQuota q;
      ReadDuration(n, "from", where, &q.from);
      Read(n, "region", where, &q.region);
      Read(n, "metric", where, &q.metric);
      if (q.region.empty() || q.metric.empty() || !n["limit"])
        throw Problem{At(n, where) + ": region, metric and limit are required"};
      Read(n, "limit", where, &q.limit);
      s.quotas.push_back(std::move(q));
    });
    ForEachItem(root, "preemptions", [&](const YAML::Node& n, const std::string& where) {
      Keys(n, where, {"at", "machine_type", "zone", "count", "notice"});
      GcpPreemption x;
      if (!n["at"]) throw Problem{At(n, where) + ": at is required"};
      ReadDuration(n, "at", where, &x.at);
      Read(n, "machine_type", where, &x.machine_type);
      Read(n, "zone", where, &x.zone);
      in_zones(n, where, x.zone);
      Read(n, "count", where, &x.count);
      ReadDuration(n, "notice", where, &x.notice);
      s.preemptions.push_back(std::move(x));
    });
    ForEachItem(root, "managed_instance_groups", [&](const YAML::Node& n, const std::string& where) {
      Keys(n, where,
           {"name", "zone", "base_instance_name", "instance_template", "machine_type", "provisioning_model",
            "termination_action", "labels", "target_size", "reservation_affinity", "standby_initial_delay"});
      GcpManagedGroup g;
      Read(n, "name", where, &g.name);
      Read(n, "zone", where, &g.zone);
      if (g.name.empty() || g.zone.empty()) throw Problem{At(n, where) + ": name and zone are required"};
      in_zones(n, where, g.zone);
      Read(n, "base_instance_name", where, &g.base_instance_name);
      Read(n, "instance_template", where, &g.instance_template);
      Read(n, "machine_type", where, &g.machine_type);
      Read(n, "provisioning_model", where, &g.provisioning_model);
      CheckModel(n, where, g.provisioning_model, false);
      Read(n, "termination_action", where, &g.termination_action);
      if (!g.termination_action.empty() && g.termination_action != "STOP" &&
          g.termination_action != "DELETE") {
        throw Problem{At(n, where) + ": termination_action must be STOP or DELETE"};
      }
      Read(n, "labels", where, &g.labels);
      if (n["reservation_affinity"])
        g.reservation_affinity = ReadAffinity(n["reservation_affinity"], where + ".reservation_affinity");
      Read(n, "target_size", where, &g.target_size);
      ReadDuration(n, "standby_initial_delay", where, &g.standby_initial_delay);
      if (g.target_size < 0) throw Problem{At(n, where) + ": target_size must be >= 0"};
      for (const GcpManagedGroup& other : s.groups) {
        if (other.name == g.name && other.zone == g.zone)
          throw Problem{At(n, where) + ": duplicate group " + g.zone + "/" + g.name};
      }
      s.groups.push_back(std::move(g));
    });
    ForEachItem(root, "reservations", [&](const YAML::Node& n, const std::string& where) {
      GcpReservation r = ReadReservation(n, where);
      in_zones(n, where, r.zone);
      for (const GcpReservation& other : s.reservations) {
        if (other.name == r.name && other.zone == r.zone)
          throw Problem{At(n, where) + ": duplicate reservation " + r.zone + "/" + r.name};
      }
      s.reservations.push_back(std::move(r));
    });
    if (const YAML::Node m = root["machine_gpus"]) s.machine_gpus = ReadMachineGpus(m);
    if (const YAML::Node b = root["billing_catalog"]) s.billing_catalog = ReadBillingCatalog(b);
  });
}

}  // namespace gpuscaler::sim
