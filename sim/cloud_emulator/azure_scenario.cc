// The Azure emulator's scenario file (YAML or JSON), read as scenario_yaml.h
// says; its errors name the key path and line.
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <set>

#include "gpuscaler/model/text_file.h"
#include "sim/cloud_emulator/azure_emulator.h"
#include "sim/cloud_emulator/scenario_yaml.h"

namespace gpuscaler::sim {
namespace azure_scenario_reader {

using scenario_yaml::KeyPath;
using scenario_yaml::Problem;

std::string AzAt(const YAML::Node& n, const std::string& where) {
  const YAML::Mark m = n.Mark();
  return m.line >= 0 ? where + " (line " + std::to_string(m.line + 1) + ")" : where;
}

void AzKeys(const YAML::Node& n, const std::string& where, const std::set<std::string>& known) {
  if (!n.IsMap()) throw Problem{AzAt(n, where) + ": expected a mapping"};
  for (const auto& kv : n) {
    const std::string k = kv.first.as<std::string>();
    if (known.count(k) == 0) throw Problem{AzAt(kv.first, where) + ": unknown key '" + k + "'"};
  }
}

template <typename T>
void AzRead(const YAML::Node& n, const char* key, const std::string& where, T* out) {
  if (!n[key]) return;
  try {
    *out = n[key].as<T>();
  } catch (const YAML::Exception&) {
    throw Problem{AzAt(n[key], KeyPath(where, key)) + ": wrong type"};
  }
}

template <typename D>
void AzDuration(const YAML::Node& n, const char* key, const std::string& where, D* out) {
  if (!n[key]) return;
  Seconds d;
  if (!n[key].IsScalar() || !ParseDuration(n[key].as<std::string>(), &d) || d < Seconds(0)) {
    throw Problem{AzAt(n[key], KeyPath(where, key)) + ": expected a duration like 30s or 5m"};
  }
  *out = d;
}

template <typename F>
void AzEach(const YAML::Node& root, const char* key, const std::string& where, F&& read) {
  const YAML::Node list = root[key];
  if (!list) return;
  if (!list.IsSequence()) throw Problem{AzAt(list, KeyPath(where, key)) + ": expected a list"};
  for (size_t i = 0; i < list.size(); ++i) {
    read(list[i], KeyPath(where, key) + "[" + std::to_string(i) + "]");
  }
}

// A PEM given inline (`key`) or as a file (`key`_file, relative to base_dir).
std::string AzPem(const YAML::Node& n, const std::string& key, const std::string& where,
                  const std::string& base_dir) {
  std::string pem;
  std::string file;
  AzRead(n, key.c_str(), where, &pem);
  AzRead(n, (key + "_file").c_str(), where, &file);
  if (!pem.empty() && !file.empty()) throw Problem{AzAt(n, where) + ": give one of " + key + ", " + key + "_file"};
  if (!file.empty()) {
    const std::filesystem::path path = std::filesystem::path(file).is_absolute()
                                           ? std::filesystem::path(file)
                                           : std::filesystem::path(base_dir) / file;
    auto read = ReadConfigFile(path.string());
    if (!read.ok()) throw Problem{AzAt(n, where + "." + key + "_file") + ": " + read.error().message()};
    pem = *read;
  }
  if (!pem.empty() && pem.find("-----BEGIN") == std::string::npos)
    throw Problem{AzAt(n, where + "." + key) + ": not PEM"};
  return pem;
}

void AzPriority(const YAML::Node& n, const std::string& where, const std::string& priority,
                const std::string& eviction) {
  if (priority != "Regular" && priority != "Spot")
    throw Problem{AzAt(n, where) + ": priority must be Regular or Spot, got '" + priority + "'"};
  if (!eviction.empty() && eviction != "Delete" && eviction != "Deallocate")
    throw Problem{AzAt(n, where) + ": eviction_policy must be Delete or Deallocate"};
}

AzureClient AzReadClient(const YAML::Node& n, const std::string& where, const std::string& base_dir) {
  AzKeys(n, where,
         {"client_id", "client_secret", "certificate", "certificate_file", "federated_issuer", "federated_subject",
          "federated_audience", "federated_key", "federated_key_file"});
  AzureClient c;
  AzRead(n, "client_id", where, &c.client_id);
  AzRead(n, "client_secret", where, &c.client_secret);
  AzRead(n, "federated_issuer", where, &c.federated_issuer);
  AzRead(n, "federated_subject", where, &c.federated_subject);
  AzRead(n, "federated_audience", where, &c.federated_audience);
  c.certificate_pem = AzPem(n, "certificate", where, base_dir);
  c.federated_key_pem = AzPem(n, "federated_key", where, base_dir);
  if (c.client_id.empty()) throw Problem{AzAt(n, where) + ": client_id is required"};
  if (c.federated_issuer.empty() != c.federated_subject.empty())
    throw Problem{AzAt(n, where) + ": federated_issuer and federated_subject go together"};
  return c;
}

AzureAgentPoolSpec AzReadPool(const YAML::Node& n, const std::string& where) {
  AzKeys(n, where,
         {"name", "vm_size", "count", "mode", "priority", "eviction_policy", "spot_max_price", "zones", "node_labels",
          "node_taints", "tags"});
  AzureAgentPoolSpec p;
  AzRead(n, "name", where, &p.name);
  AzRead(n, "vm_size", where, &p.vm_size);
  AzRead(n, "count", where, &p.count);
  AzRead(n, "mode", where, &p.mode);
  AzRead(n, "priority", where, &p.priority);
  AzRead(n, "eviction_policy", where, &p.eviction_policy);
  AzRead(n, "spot_max_price", where, &p.spot_max_price);
  AzRead(n, "zones", where, &p.zones);
  AzRead(n, "node_labels", where, &p.node_labels);
  AzRead(n, "node_taints", where, &p.node_taints);
  AzRead(n, "tags", where, &p.tags);
  if (p.name.empty() || p.count < 0) throw Problem{AzAt(n, where) + ": name and a count >= 0 are required"};
  AzPriority(n, where, p.priority, p.eviction_policy);
  return p;
}

AzureClusterSpec AzReadCluster(const YAML::Node& n, const std::string& where) {
  AzKeys(n, where, {"resource_group", "name", "node_resource_group", "kubernetes_version", "tags", "pools"});
  AzureClusterSpec c;
  AzRead(n, "resource_group", where, &c.resource_group);
  AzRead(n, "name", where, &c.name);
  AzRead(n, "node_resource_group", where, &c.node_resource_group);
  AzRead(n, "kubernetes_version", where, &c.kubernetes_version);
  AzRead(n, "tags", where, &c.tags);
  if (c.resource_group.empty() || c.name.empty())
    throw Problem{AzAt(n, where) + ": resource_group and name are required"};
  AzEach(n, "pools", where,
         [&](const YAML::Node& p, const std::string& at) { c.pools.push_back(AzReadPool(p, at)); });
  return c;
}

AzureScaleSetSpec AzReadScaleSet(const YAML::Node& n, const std::string& where) {
  AzKeys(n, where,
         {"resource_group", "name", "vm_size", "priority", "eviction_policy", "max_price", "zones", "tags",
          "capacity"});
  AzureScaleSetSpec s;
  AzRead(n, "resource_group", where, &s.resource_group);
  AzRead(n, "name", where, &s.name);
  AzRead(n, "vm_size", where, &s.vm_size);
  AzRead(n, "priority", where, &s.priority);
  AzRead(n, "eviction_policy", where, &s.eviction_policy);
  AzRead(n, "max_price", where, &s.max_price);
  AzRead(n, "zones", where, &s.zones);
  AzRead(n, "tags", where, &s.tags);
  AzRead(n, "capacity", where, &s.capacity);
  if (s.resource_group.empty() || s.name.empty() || s.capacity < 0)
    throw Problem{AzAt(n, where) + ": resource_group, name and a capacity >= 0 are required"};
  AzPriority(n, where, s.priority, s.eviction_policy);
  return s;
}

AzureCapacityLimit AzReadLimit(const YAML::Node& n, const std::string& where) {
  AzKeys(n, where, {"vm_size", "zone", "priority", "limit", "error", "from", "until"});
  AzureCapacityLimit l;
  AzRead(n, "vm_size", where, &l.vm_size);
  AzRead(n, "zone", where, &l.zone);
  AzRead(n, "priority", where, &l.priority);
  AzRead(n, "limit", where, &l.limit);
  AzRead(n, "error", where, &l.error_code);
  Seconds d;
  if (n["from"]) AzDuration(n, "from", where, &d), l.from = d;
  if (n["until"]) AzDuration(n, "until", where, &d), l.until = d;
  static const std::set<std::string> kCodes = {"AllocationFailed", "OverconstrainedAllocationRequest",
                                               "SkuNotAvailable", "QuotaExceeded"};
  if (kCodes.count(l.error_code) == 0) {
    throw Problem{AzAt(n, where) +
                  ": error must be AllocationFailed, OverconstrainedAllocationRequest, SkuNotAvailable or "
                  "QuotaExceeded"};
  }
  if (!l.priority.empty() && l.priority != "Regular" && l.priority != "Spot")
    throw Problem{AzAt(n, where) + ": priority must be Regular or Spot"};
  if (l.limit < 0) throw Problem{AzAt(n, where) + ": limit must be >= 0"};
  return l;
}

AzureEviction AzReadEviction(const YAML::Node& n, const std::string& where) {
  AzKeys(n, where, {"at", "scale_set", "cluster", "pool", "instance_id", "notice"});
  AzureEviction e;
  AzDuration(n, "at", where, &e.at);
  AzRead(n, "scale_set", where, &e.scale_set);
  AzRead(n, "cluster", where, &e.cluster);
  AzRead(n, "pool", where, &e.pool);
  AzRead(n, "instance_id", where, &e.instance_id);
  AzDuration(n, "notice", where, &e.notice);
  if (e.scale_set.empty() == (e.cluster.empty() || e.pool.empty()))
    throw Problem{AzAt(n, where) + ": give scale_set, or cluster and pool"};
  return e;
}

void AzReadRoot(const YAML::Node& root, AzureScenario& s, const std::string& base_dir) {
  AzKeys(root, "scenario",
         {"provider", "subscription", "tenant", "location", "clients", "managed_identity_client_id", "access_tokens",
          "token_lifetime", "operation_latency", "retry_after", "clusters", "scale_sets", "capacity", "evictions",
          "throttle", "server_error_rate", "seed"});
  AzRead(root, "subscription", "", &s.subscription);
  AzRead(root, "tenant", "", &s.tenant);
  AzRead(root, "location", "", &s.location);
  AzRead(root, "managed_identity_client_id", "", &s.managed_identity_client_id);
  AzRead(root, "access_tokens", "", &s.access_tokens);
  AzDuration(root, "token_lifetime", "", &s.token_lifetime);
  AzDuration(root, "operation_latency", "", &s.operation_latency);
  AzDuration(root, "retry_after", "", &s.retry_after);
  if (const YAML::Node t = root["throttle"]) {
    AzKeys(t, "throttle", {"every", "rate", "retry_after"});
    AzRead(t, "every", "throttle", &s.throttle_every);
    AzRead(t, "rate", "throttle", &s.throttle_rate);
    AzDuration(t, "retry_after", "throttle", &s.throttle_retry_after);
    if (s.throttle_every < 0 || s.throttle_rate < 0 || s.throttle_rate > 1)
      throw Problem{AzAt(t, "throttle") + ": every must be >= 0 and rate in [0, 1]"};
  }
  AzRead(root, "server_error_rate", "", &s.server_error_rate);
  AzRead(root, "seed", "", &s.seed);
  AzEach(root, "clients", "",
         [&](const YAML::Node& n, const std::string& at) { s.clients.push_back(AzReadClient(n, at, base_dir)); });
  AzEach(root, "clusters", "",
         [&](const YAML::Node& n, const std::string& at) { s.clusters.push_back(AzReadCluster(n, at)); });
  AzEach(root, "scale_sets", "",
         [&](const YAML::Node& n, const std::string& at) { s.scale_sets.push_back(AzReadScaleSet(n, at)); });
  AzEach(root, "capacity", "",
         [&](const YAML::Node& n, const std::string& at) { s.capacity.push_back(AzReadLimit(n, at)); });
  AzEach(root, "evictions", "",
         [&](const YAML::Node& n, const std::string& at) { s.evictions.push_back(AzReadEviction(n, at)); });
  if (s.subscription.empty() || s.tenant.empty() || s.location.empty())
    throw Problem{"subscription, tenant and location must not be empty"};
}

}  // namespace azure_scenario_reader

Result<AzureScenario> ParseAzureScenario(const std::string& text, const std::string& base_dir) {
  return scenario_yaml::ParseScenario<AzureScenario>(text, [&](const YAML::Node& root, AzureScenario& s) {
    azure_scenario_reader::AzReadRoot(root, s, base_dir);
  });
}

}  // namespace gpuscaler::sim
