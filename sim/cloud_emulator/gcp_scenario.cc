// The Compute Engine emulator's scenario file (YAML or JSON), read with
// yaml-cpp within the caps of model/config_limits.h (LoadBoundedYaml); every
// yaml-cpp exception is caught here and becomes a kConfig error naming the
// key path and line.
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <set>

#include "gpuscaler/model/bounded_yaml.h"
#include "gpuscaler/model/text_file.h"
#include "sim/cloud_emulator/gcp_emulator.h"

namespace gpuscaler::sim {
namespace {

struct Bad {
  std::string message;
};

std::string At(const YAML::Node& n, const std::string& where) {
  const YAML::Mark m = n.Mark();
  return m.line >= 0 ? where + " (line " + std::to_string(m.line + 1) + ")" : where;
}

void Keys(const YAML::Node& n, const std::string& where, const std::set<std::string>& known) {
  if (!n.IsMap()) throw Bad{At(n, where) + ": expected a mapping"};
  for (const auto& kv : n) {
    const std::string k = kv.first.as<std::string>();
    if (known.count(k) == 0) throw Bad{At(kv.first, where) + ": unknown key '" + k + "'"};
  }
}

template <typename T>
void Read(const YAML::Node& n, const char* key, const std::string& where, T* out) {
  if (!n[key]) return;
  try {
    *out = n[key].as<T>();
  } catch (const YAML::Exception&) {
    throw Bad{At(n[key], (where.empty() ? std::string() : where + ".") + key) + ": wrong type"};
  }
}

Seconds Duration(const YAML::Node& n, const std::string& where) {
  Seconds d;
  if (!n.IsScalar() || !ParseDuration(n.as<std::string>(), &d) || d < Seconds(0)) {
    throw Bad{At(n, where) + ": expected a duration like 30s or 5m"};
  }
  return d;
}

template <typename D>
void ReadDuration(const YAML::Node& n, const char* key, const std::string& where, D* out) {
  if (n[key]) *out = Duration(n[key], where.empty() ? key : where + "." + key);
}

template <typename F>
void ForEachItem(const YAML::Node& root, const char* key, F&& read) {
  const YAML::Node list = root[key];
  if (!list) return;
  if (!list.IsSequence()) throw Bad{At(list, key) + ": expected a list"};
  for (size_t i = 0; i < list.size(); ++i) read(list[i], std::string(key) + "[" + std::to_string(i) + "]");
}

GcpServiceAccount ReadServiceAccount(const YAML::Node& n, const std::string& where,
                                     const std::string& base_dir) {
  Keys(n, where, {"email", "public_key", "public_key_file"});
  GcpServiceAccount a;
  Read(n, "email", where, &a.email);
  Read(n, "public_key", where, &a.public_key_pem);
  std::string file;
  Read(n, "public_key_file", where, &file);
  if (a.email.empty()) throw Bad{At(n, where) + ": email is required"};
  if (a.public_key_pem.empty() == file.empty())
    throw Bad{At(n, where) + ": give one of public_key, public_key_file"};
  if (!file.empty()) {
    const std::filesystem::path path = std::filesystem::path(file).is_absolute()
                                           ? std::filesystem::path(file)
                                           : std::filesystem::path(base_dir) / file;
    auto pem = ReadConfigFile(path.string());
    if (!pem.ok())
      throw Bad{At(n["public_key_file"], where + ".public_key_file") + ": " + pem.error().message()};
    a.public_key_pem = *pem;
  }
  if (a.public_key_pem.find("-----BEGIN") == std::string::npos) {
    throw Bad{At(n, where) + ": the public key is not PEM (-----BEGIN PUBLIC KEY----- or a certificate)"};
  }
  return a;
}

std::map<std::string, std::pair<std::string, int>> ReadMachineGpus(const YAML::Node& m) {
  if (!m.IsMap()) throw Bad{At(m, "machine_gpus") + ": expected a mapping"};
  std::map<std::string, std::pair<std::string, int>> out;
  for (const auto& kv : m) {
    const std::string type = kv.first.as<std::string>();
    const std::string where = "machine_gpus." + type;
    Keys(kv.second, where, {"metric", "count"});
    std::pair<std::string, int> v;
    Read(kv.second, "metric", where, &v.first);
    Read(kv.second, "count", where, &v.second);
    if (v.first.empty() || v.second <= 0)
      throw Bad{At(kv.second, where) + ": metric and a count > 0 are required"};
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
  if (!ParseDuration(text, &d)) throw Bad{At(n, where) + ": expected a duration like 30s, 5m or -2h"};
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
    throw Bad{At(n["max_page_size"], "billing_catalog.max_page_size") + ": must be >= 1"};
  if (const YAML::Node e = n["error"]) {
    Keys(e, "billing_catalog.error", {"code", "status", "reason", "message"});
    Read(e, "code", "billing_catalog.error", &c.error_code);
    Read(e, "status", "billing_catalog.error", &c.error_status);
    Read(e, "reason", "billing_catalog.error", &c.error_reason);
    Read(e, "message", "billing_catalog.error", &c.error_message);
    if (c.error_code < 400 || c.error_code > 599 || c.error_status.empty())
      throw Bad{At(e, "billing_catalog.error") + ": code (400..599) and status are required"};
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
      throw Bad{At(s, where) + ": description and regions are required"};
    if (sku.usage_unit != "h" && sku.usage_unit != "GiBy.h" && sku.usage_unit != "GiBy.mo")
      throw Bad{At(s, where) + ": unit must be h, GiBy.h or GiBy.mo"};
    auto read_price = [&](const YAML::Node& p, const std::string& at) {
      if (!p["usd"]) throw Bad{At(p, at) + ": usd is required"};
      double usd = 0;
      Read(p, "usd", at, &usd);
      if (usd < 0) throw Bad{At(p["usd"], at + ".usd") + ": must be >= 0"};
      const Seconds from = p["from"] ? SignedDuration(p["from"], at + ".from") : Seconds(0);
      if (!sku.prices.empty() && from <= sku.prices.back().first)
        throw Bad{At(p, at) + ": prices must be in ascending `from`"};
      sku.prices.push_back({from, usd});
    };
    if (s["prices"]) {
      if (s["usd"] || s["from"]) throw Bad{At(s, where) + ": give usd and from, or prices, not both"};
      ForEachItem(s, "prices",
                  [&](const YAML::Node& p, const std::string& at) { read_price(p, where + "." + at); });
    } else {
      read_price(s, where);
    }
    c.skus.push_back(std::move(sku));
  });
  return c;
}

void CheckModel(const YAML::Node& n, const std::string& where, const std::string& model, bool allow_empty) {
  if ((allow_empty && model.empty()) || model == "STANDARD" || model == "SPOT") return;
  throw Bad{At(n, where) + ": provisioning_model must be STANDARD or SPOT, got '" + model + "'"};
}

}  // namespace

Result<std::string> EmulatorScenarioProvider(const std::string& text) {
  try {
    Result<YAML::Node> loaded = LoadBoundedYaml(text);
    if (!loaded) return loaded.error().WithContext("emulator scenario");
    const YAML::Node root = *loaded;
    if (!root || !root.IsMap() || !root["provider"]) return std::string();
    const std::string p = root["provider"].as<std::string>();
    if (p != "aws" && p != "gcp") {
      return Error::Config("emulator scenario: " + At(root["provider"], "provider") +
                           ": must be aws or gcp, got '" + p + "'");
    }
    return p;
  } catch (const YAML::Exception& e) {
    return Error::Config(std::string("emulator scenario: ") + e.what());
  }
}

Result<GcpScenario> ParseGcpScenario(const std::string& text, const std::string& base_dir) {
  GcpScenario s;
  try {
    Result<YAML::Node> loaded = LoadBoundedYaml(text);
    if (!loaded) return loaded.error().WithContext("emulator scenario");
    const YAML::Node root = *loaded;
    if (!root || root.IsNull()) return s;
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
          "mig_retry_interval",
          "capacity",
          "quotas",
          "preemptions",
          "managed_instance_groups",
          "machine_gpus",
          "billing_catalog",
          "throttle",
          "server_error_rate",
          "seed"});
    Read(root, "project", "", &s.project);
    Read(root, "zones", "", &s.zones);
    if (s.zones.empty()) throw Bad{At(root["zones"], "zones") + ": at least one zone is required"};
    Read(root, "token_audience", "", &s.token_audience);
    Read(root, "metadata_account", "", &s.metadata_account);
    Read(root, "access_tokens", "", &s.access_tokens);
    ReadDuration(root, "token_lifetime", "", &s.token_lifetime);
    ReadDuration(root, "operation_latency", "", &s.operation_latency);
    ReadDuration(root, "boot_latency", "", &s.boot_latency);
    ReadDuration(root, "delete_latency", "", &s.delete_latency);
    ReadDuration(root, "mig_retry_interval", "", &s.mig_retry_interval);
    if (s.token_lifetime <= Seconds(0))
      throw Bad{At(root["token_lifetime"], "token_lifetime") + ": must be > 0"};
    Read(root, "seed", "", &s.seed);
    Read(root, "server_error_rate", "", &s.server_error_rate);
    if (const YAML::Node t = root["throttle"]) {
      Keys(t, "throttle", {"every", "rate"});
      Read(t, "every", "throttle", &s.throttle_every);
      Read(t, "rate", "throttle", &s.throttle_rate);
    }
    auto in_zones = [&](const YAML::Node& n, const std::string& where, const std::string& zone) {
      if (!zone.empty() && std::find(s.zones.begin(), s.zones.end(), zone) == s.zones.end()) {
        throw Bad{At(n, where) + ": zone '" + zone + "' is not one of `zones`"};
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
      if (!n["limit"]) throw Bad{At(n, where) + ": limit is required"};
      Read(n, "limit", where, &l.limit);
      Read(n, "error", where, &l.error_code);
      if (l.error_code != "ZONE_RESOURCE_POOL_EXHAUSTED" &&
          l.error_code != "ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS") {
        throw Bad{At(n["error"], where + ".error") +
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
        throw Bad{At(n, where) + ": region, metric and limit are required"};
      Read(n, "limit", where, &q.limit);
      s.quotas.push_back(std::move(q));
    });
    ForEachItem(root, "preemptions", [&](const YAML::Node& n, const std::string& where) {
      Keys(n, where, {"at", "machine_type", "zone", "count", "notice"});
      GcpPreemption x;
      if (!n["at"]) throw Bad{At(n, where) + ": at is required"};
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
            "termination_action", "labels", "target_size"});
      GcpManagedGroup g;
      Read(n, "name", where, &g.name);
      Read(n, "zone", where, &g.zone);
      if (g.name.empty() || g.zone.empty()) throw Bad{At(n, where) + ": name and zone are required"};
      in_zones(n, where, g.zone);
      Read(n, "base_instance_name", where, &g.base_instance_name);
      Read(n, "instance_template", where, &g.instance_template);
      Read(n, "machine_type", where, &g.machine_type);
      Read(n, "provisioning_model", where, &g.provisioning_model);
      CheckModel(n, where, g.provisioning_model, false);
      Read(n, "termination_action", where, &g.termination_action);
      if (!g.termination_action.empty() && g.termination_action != "STOP" &&
          g.termination_action != "DELETE") {
        throw Bad{At(n, where) + ": termination_action must be STOP or DELETE"};
      }
      Read(n, "labels", where, &g.labels);
      Read(n, "target_size", where, &g.target_size);
      if (g.target_size < 0) throw Bad{At(n, where) + ": target_size must be >= 0"};
      for (const GcpManagedGroup& other : s.groups) {
        if (other.name == g.name && other.zone == g.zone)
          throw Bad{At(n, where) + ": duplicate group " + g.zone + "/" + g.name};
      }
      s.groups.push_back(std::move(g));
    });
    if (const YAML::Node m = root["machine_gpus"]) s.machine_gpus = ReadMachineGpus(m);
    if (const YAML::Node b = root["billing_catalog"]) s.billing_catalog = ReadBillingCatalog(b);
  } catch (const Bad& b) {
    return Error::Config("emulator scenario: " + b.message);
  } catch (const YAML::Exception& e) {
    return Error::Config(std::string("emulator scenario: ") + e.what());
  }
  return s;
}

}  // namespace gpuscaler::sim
