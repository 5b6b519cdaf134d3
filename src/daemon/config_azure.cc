#include "config_azure.h"

#include <algorithm>
#include <cctype>

#include "gpuscaler/policy/policy.h"

namespace gpuscaler::daemon {
namespace {

bool IsAzureGuid(const std::string& text) {
  if (text.size() != 36) return false;
  for (size_t i = 0; i < text.size(); ++i) {
    const bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash != (text[i] == '-')) return false;
    if (!dash && !std::isxdigit(static_cast<unsigned char>(text[i]))) return false;
  }
  return true;
}

// Resource group names: 1-90 of letters, digits, '_', '-', '.', '(' and
// ')', not ending in '.'.
bool IsResourceGroupName(const std::string& name) {
  if (name.empty() || name.size() > 90 || name.back() == '.') return false;
  return std::all_of(name.begin(), name.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '_' || c == '-' || c == '.' || c == '(' || c == ')';
  });
}

// AKS agent pool names: 1-12 lower-case letters and digits, a letter first.
bool IsAgentPoolName(const std::string& name) {
  if (name.empty() || name.size() > 12 || !std::islower(static_cast<unsigned char>(name[0]))) return false;
  return std::all_of(name.begin(), name.end(),
                     [](unsigned char c) { return std::islower(c) || std::isdigit(c); });
}

// Scale set names: 1-64 of letters, digits, '_', '-' and '.'.
bool IsScaleSetName(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  return std::all_of(name.begin(), name.end(),
                     [](unsigned char c) { return std::isalnum(c) || c == '_' || c == '-' || c == '.'; });
}

bool IsAzureUrl(const std::string& url) { return url.rfind("http://", 0) == 0 || url.rfind("https://", 0) == 0; }

void ReadAzureCredentials(DocReader& r, const DocNode& n, AzureCredentialSettings* c) {
  const std::string base = "cloud.azure.credentials";
  MapReader m(r, n, base,
              {"kind", "tenant_id", "client_id", "client_secret_file", "certificate_file", "authority_host",
               "imds_endpoint"});
  if (!n.IsMapping()) return;
  static const char* kKinds[] = {"auto", "workload_identity", "managed_identity", "client_secret",
                                 "client_certificate"};
  if (m.ReadString("kind", &c->kind) &&
      std::none_of(std::begin(kKinds), std::end(kKinds), [&](const char* k) { return c->kind == k; }))
    r.ReportAt(base + ".kind",
               "must be auto, workload_identity, managed_identity, client_secret or client_certificate, got '" +
                   c->kind + "'");
  if (m.ReadString("tenant_id", &c->tenant_id) && !IsAzureGuid(c->tenant_id))
    r.ReportAt(base + ".tenant_id", "'" + c->tenant_id + "' is not a tenant id (a GUID)");
  if (m.ReadString("client_id", &c->client_id) && !IsAzureGuid(c->client_id))
    r.ReportAt(base + ".client_id", "'" + c->client_id + "' is not a client id (a GUID)");
  m.ReadString("client_secret_file", &c->client_secret_file);
  m.ReadString("certificate_file", &c->certificate_file);
  for (const char* key : {"authority_host", "imds_endpoint"}) {
    std::string* out = std::string_view(key) == "authority_host" ? &c->authority_host : &c->imds_endpoint;
    if (m.ReadString(key, out) && !IsAzureUrl(*out)) r.ReportAt(base + "." + key, "must start with http:// or https://");
  }
  if (c->kind == "client_secret" && c->client_secret_file.empty())
    r.ReportAt(base + ".kind", "client_secret needs client_secret_file (the file holding the secret)");
  if (c->kind == "client_certificate" && c->certificate_file.empty())
    r.ReportAt(base + ".kind", "client_certificate needs certificate_file (PEM: certificate and private key)");
  if (c->kind != "client_secret" && !c->client_secret_file.empty())
    r.ReportAt(base + ".client_secret_file", "only read with kind: client_secret");
  if (c->kind != "client_certificate" && !c->certificate_file.empty())
    r.ReportAt(base + ".certificate_file", "only read with kind: client_certificate");
}

}  // namespace

void ReadAzureSection(DocReader& r, const DocNode& n, AzureSettings* a) {
  MapReader m(r, n, "cloud.azure",
              {"subscription_id", "resource_group", "location", "driver", "aks_cluster", "endpoint", "ca_file",
               "force_deletion", "operation_timeout", "credentials", "pools"});
  if (!n.IsMapping()) return;
  m.Require({"resource_group", "location"});
  if (m.ReadString("subscription_id", &a->subscription_id) && !IsAzureGuid(a->subscription_id))
    r.ReportAt("cloud.azure.subscription_id", "'" + a->subscription_id + "' is not a subscription id (a GUID)");
  if (m.ReadString("resource_group", &a->resource_group) && !IsResourceGroupName(a->resource_group))
    r.ReportAt("cloud.azure.resource_group", "'" + a->resource_group + "' is not a resource group name");
  if (m.ReadString("location", &a->location) &&
      (a->location.empty() || a->location.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789") != std::string::npos))
    r.ReportAt("cloud.azure.location", "'" + a->location + "' is not a region name like eastus");
  if (m.ReadString("driver", &a->driver) && a->driver != "aks" && a->driver != "vmss")
    r.ReportAt("cloud.azure.driver", "must be 'aks' (agent pools) or 'vmss' (VM Scale Sets), got '" + a->driver + "'");
  m.ReadString("aks_cluster", &a->aks_cluster);
  if (a->driver == "aks" && a->aks_cluster.empty())
    r.ReportAt("cloud.azure", "driver 'aks' needs aks_cluster (the managed cluster's name)");
  if (a->driver != "aks" && !a->aks_cluster.empty())
    r.ReportAt("cloud.azure.aks_cluster", "only used with driver: aks");
  if (m.ReadString("endpoint", &a->endpoint) && !IsAzureUrl(a->endpoint))
    r.ReportAt("cloud.azure.endpoint", "must start with http:// or https://");
  if (m.ReadString("ca_file", &a->ca_file) && a->ca_file.empty())
    r.ReportAt("cloud.azure.ca_file", "must not be empty (leave it out for the system's CAs)");
  if (m.ReadBool("force_deletion", &a->force_deletion) && a->force_deletion && a->driver != "vmss")
    r.ReportAt("cloud.azure.force_deletion", "only used with driver: vmss (AKS deletes machines itself)");
  if (m.ReadDuration("operation_timeout", &a->operation_timeout) &&
      (a->operation_timeout < Seconds(10) || a->operation_timeout > Seconds(3600)))
    r.ReportAt("cloud.azure.operation_timeout", "must be between 10s and 1h");
  if (const DocNode* c = m.Find("credentials"); c != nullptr && !c->IsNull()) ReadAzureCredentials(r, *c, &a->credentials);
  const DocNode* pools = m.Find("pools");
  if (pools == nullptr || pools->IsNull()) return;
  if (!pools->IsMapping()) {
    r.Report(*pools, "cloud.azure.pools",
             "must be a mapping from policy pool name to its agent pools or scale sets, got " + pools->Describe());
    return;
  }
  const bool aks = a->driver == "aks";
  const char* key = aks ? "agent_pools" : "scale_sets";
  for (const DocEntry& e : pools->entries) {
    const std::string path = "cloud.azure.pools." + e.key.scalar;
    MapReader p(r, e.value, path, {"agent_pools", "scale_sets"});
    if (!e.value.IsMapping()) continue;
    if (p.Has(aks ? "scale_sets" : "agent_pools"))
      r.ReportAt(p.PathOf(aks ? "scale_sets" : "agent_pools"),
                 std::string("driver '") + a->driver + "' scales " + key + "; name them there");
    std::vector<std::string>& groups = a->pools[e.key.scalar];
    if (!p.ReadStringList(key, &groups) || groups.empty()) {
      r.ReportAt(path, std::string("needs ") + key + " (at least one)");
      continue;
    }
    for (size_t i = 0; i < groups.size(); ++i) {
      if (aks ? !IsAgentPoolName(groups[i]) : !IsScaleSetName(groups[i]))
        r.ReportAt(IndexPath(path + "." + key, i),
                   "'" + groups[i] + "' is not " +
                       (aks ? "an agent pool name (1-12 lower-case letters and digits, a letter first)"
                            : "a scale set name (1-64 letters, digits, '_', '-', '.')"));
    }
  }
}

std::string AzurePoolProblems(const DaemonConfig& config, const Policy& policy) {
  const AzureSettings& a = config.cloud.azure;
  std::string problems;
  for (size_t i = 0; i < policy.pools.size(); ++i) {
    const NodePoolPolicy& pool = policy.pools[i];
    const std::string where = policy.source_file + ": pools[" + std::to_string(i) + "] '" + pool.name + "': ";
    if (pool.actuation != Actuation::kFleet) {
      problems += "\n" + where + "actuation '" + std::string(ToString(pool.actuation)) +
                  "' is AWS's; on Azure name the pool's " + (a.driver == "aks" ? "agent pools" : "scale sets") +
                  " in " + config.source_file + " cloud.azure.pools";
    } else if (a.pools.count(pool.name) == 0) {
      problems += "\n" + where + "has no entry in " + config.source_file + " cloud.azure.pools";
    } else if (!pool.placement_group.empty()) {
      problems += "\n" + where + "placement_group is not supported on Azure (give the agent pool or scale set a "
                                 "proximity placement group instead)";
    }
  }
  for (const auto& [name, groups] : a.pools) {
    if (policy.FindPool(name) == nullptr)
      problems += "\n" + config.source_file + ": cloud.azure.pools." + name + ": no policy pool of that name";
  }
  return problems;
}

}  // namespace gpuscaler::daemon
