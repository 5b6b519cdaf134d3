// The daemon with `cloud.provider: azure` against `gpuscaler cloud-emulator
// --provider azure`: the emulator process over HTTPS (its test CA written
// with --tls-ca-out, which the daemon trusts with cloud.azure.ca_file), an
// app registration with a client secret (the daemon gets its token from the
// emulator's Entra ID endpoint), the daemon's configuration and policy for
// either driver, and the emulator's VMs read as CloudInstance for the
// checks of daemon_harness.h and the crash campaign (crash_campaign.h).
//
// The truth about the fleet is the emulator's /_emulator/state (every VM,
// deleted ones too, and every scale set with its tags; an AKS pool's scale
// set with the agent pool's own tags as pool_tags). A VM's launch intent is
// the emulator's record, not the provider's reading: each VM carries its
// group's tags as the write that made it left them, and gpuscaler puts a
// raise's <hash>:<mark>:<count> last in kAzureIntentsTag in that very write;
// the launch rows of the audit database give hash -> token. A raise sent
// twice (a duplicate) shows as two entries with the same hash.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cloud/daemon_harness.h"
#include "gpuscaler/cloud/azure_provider.h"
#include "gpuscaler/net/http_client.h"

namespace gpuscaler::testing {

inline constexpr const char* kAzureSubscription = "00000000-0000-0000-0000-000000000001";
inline constexpr const char* kAzureTenant = "00000000-0000-0000-0000-0000000000aa";
inline constexpr const char* kAzureClientId = "6e3d7b1a-0000-4000-8000-00000000a2e0";
inline constexpr const char* kAzureClientSecret = "emulator-secret";
// A Bearer token the emulator always accepts, for the test's own reads.
inline constexpr const char* kAzureTestToken = "test-reader-token";

class AzureEmulatorProcess : public EmulatedCloud {
 public:
  // `scenario` is the scenario file after its provider, client and token
  // keys (operation_latency, clusters, scale_sets, capacity, …). VMs count
  // as ours (kOwnerTag set) when their group is tagged gpuscaler-cluster =
  // `cluster`.
  AzureEmulatorProcess(const std::filesystem::path& dir, const std::string& scenario,
                       std::string cluster = "test")
      : dir_(dir), cluster_(std::move(cluster)) {
    std::ofstream(dir / "scenario.yaml")
        << "provider: azure\nclients:\n  - {client_id: " << kAzureClientId
        << ", client_secret: " << kAzureClientSecret << "}\naccess_tokens: [" << kAzureTestToken << "]\n"
        << scenario;
    std::ofstream(dir / "azure-secret") << kAzureClientSecret;
    std::filesystem::remove(dir / "emulator.port");
    process_ = std::make_unique<ChildProcess>(
        std::vector<std::string>{GPUSCALER_BINARY, "cloud-emulator", "--provider", "azure", "--listen",
                                 "127.0.0.1:0", "--scenario", (dir / "scenario.yaml").string(), "--port-file",
                                 (dir / "emulator.port").string(), "--tls-ca-out",
                                 (dir / "azure-ca.pem").string()},
        dir / "emulator.out", dir / "emulator.err");
    port_ = WaitForPortFile(dir / "emulator.port", 60s);
  }
  ~AzureEmulatorProcess() override {
    if (process_ && process_->started()) {
      process_->Signal(SIGTERM);
      process_->Wait(20s);
    }
  }
  bool ok() const { return port_ != 0; }
  std::string url() const { return "https://127.0.0.1:" + std::to_string(port_); }
  std::filesystem::path ca_file() const { return dir_ / "azure-ca.pem"; }
  std::filesystem::path secret_file() const { return dir_ / "azure-secret"; }
  std::string log() const override { return ReadAll(dir_ / "emulator.err"); }
  // The audit databases whose launch rows name the VMs' intents (one per
  // installation sharing the emulator).
  void set_audit_db(std::string db) { dbs_ = {std::move(db)}; }
  void add_audit_db(std::string db) { dbs_.push_back(std::move(db)); }

  // One call to the emulator (its own endpoints need no token; ARM paths
  // get the test token).
  std::optional<net::HttpResponse> Call(const std::string& method, const std::string& path,
                                        const std::string& body = "", std::string* error = nullptr) {
    net::HttpRequest r;
    r.method = method;
    r.url = url() + path;
    r.headers = {{"Authorization", std::string("Bearer ") + kAzureTestToken}};
    if (!body.empty()) r.headers.push_back({"Content-Type", "application/json"});
    r.body = body;
    net::HttpClientOptions o;
    o.ca_file = ca_file().string();
    Result<net::HttpResponse> a = net::Fetch(r, o);
    if (!a) {
      if (error) *error = a.error().ToString();
      return std::nullopt;
    }
    return *a;
  }

  std::optional<nlohmann::json> State(std::string* error = nullptr) {
    std::optional<net::HttpResponse> a = Call("GET", "/_emulator/state", "", error);
    if (!a || a->status != 200) {
      if (error && a) *error = "HTTP " + std::to_string(a->status);
      return std::nullopt;
    }
    return nlohmann::json::parse(a->body, nullptr, false);
  }

  // POST /_emulator/evictions with `request`; the HTTP status (0: no
  // answer), and the answer in *answer ({"at"}: when the VM goes).
  int Evict(const nlohmann::json& request, nlohmann::json* answer = nullptr) {
    std::optional<net::HttpResponse> a = Call("POST", "/_emulator/evictions", request.dump());
    if (a && answer) *answer = nlohmann::json::parse(a->body, nullptr, false);
    return a ? a->status : 0;
  }

  std::optional<std::vector<CloudInstance>> Instances(std::string* error = nullptr) override {
    std::optional<nlohmann::json> state = State(error);
    if (!state || !state->is_object()) return std::nullopt;
    std::map<std::string, std::string> tokens;
    for (const std::string& db : dbs_) {
      for (auto& [hash, token] : LaunchTokensByHash(db, cloud::AzureProvider::IntentHash)) tokens[hash] = token;
    }
    // Each group's tags (an agent pool's own).
    std::map<std::string, std::map<std::string, std::string>> group_tags;
    for (const nlohmann::json& s : (*state)["scale_sets"]) {
      const std::string key = s.value("resource_group", "") + "/" + s.value("name", "");
      const nlohmann::json& tags = s.contains("pool_tags") ? s["pool_tags"] : s["tags"];
      for (const auto& [k, v] : tags.items()) {
        if (v.is_string()) group_tags[key][k] = v.get<std::string>();
      }
    }
    std::vector<CloudInstance> out;
    for (const nlohmann::json& j : (*state)["vms"]) {
      CloudInstance i;
      const std::string key = j.value("resource_group", "") + "/" + j.value("scale_set", "");
      i.id = j.value("computer_name", "");
      const std::string zone = j.value("zone", "");
      i.zone = zone.empty() ? "" : "eastus-" + zone;
      i.lifecycle = j.value("priority", "") == "Spot" ? CapacityType::kSpot : CapacityType::kOnDemand;
      const std::string state_name = j.value("state", "");
      i.state = state_name == "Running"       ? "running"
                : state_name == "Creating"    ? "pending"
                : state_name == "Deleting"    ? "shutting-down"
                : state_name == "Deallocated" ? "stopped"
                                              : "terminated";
      i.tags = group_tags[key];
      i.tags["group"] = j.value("scale_set", "");
      i.tags["instance_id"] = j.value("instance_id", "");
      i.tags["evicted"] = j.value("evicted", false) ? "true" : "false";
      auto cluster = i.tags.find(cloud::kAzureClusterTag);
      if (cluster != i.tags.end() && cluster->second == cluster_) {
        auto pool = i.tags.find(cloud::kAzurePoolTag);
        i.tags[kOwnerTag] = pool != i.tags.end() ? pool->second : j.value("scale_set", "");
      }
      // The write that made it put its raise last in the intents tag.
      const nlohmann::json made_by = j.value("group_tags", nlohmann::json::object());
      const std::vector<cloud::AzureProvider::Intent> raises =
          cloud::AzureProvider::ParseIntents(made_by.value(cloud::kAzureIntentsTag, ""));
      if (!raises.empty()) {
        auto token = tokens.find(raises.back().hash);
        if (token != tokens.end()) i.tags[kIntentTag] = token->second;
      }
      out.push_back(std::move(i));
    }
    return out;
  }

 private:
  std::filesystem::path dir_;
  std::string cluster_;
  std::unique_ptr<ChildProcess> process_;
  uint16_t port_ = 0;
  std::vector<std::string> dbs_;
};

// One pool "gpu" of Standard_NC4as_T4_v3 (one T4) in eastus-1 and -2; 5
// jobs per GPU as PolicyYaml.
inline std::string AzurePolicyYaml(const std::string& capacity_types, bool interruptible) {
  std::string p = PolicyYaml(capacity_types, interruptible);
  auto replace = [&](const std::string& from, const std::string& to) {
    const size_t at = p.find(from);
    if (at != std::string::npos) p.replace(at, from.size(), to);
  };
  replace("instance_types: [g5.xlarge]", "instance_types: [Standard_NC4as_T4_v3]");
  replace("regions: [us-east-1]", "regions: [eastus]");
  replace("zones: [us-east-1a, us-east-1b]", "zones: [eastus-1, eastus-2]");
  replace("name: emulator-e2e", "name: azure-emulator-e2e");
  return p;
}

// The daemon's configuration: provider azure at the emulator, with
// `driver_yaml` under cloud.azure (indented by 4: resource_group, driver,
// aks_cluster, pools), signals from the fixture.
inline std::string AzureDaemonConfigYaml(const AzureEmulatorProcess& emulator,
                                         const std::string& prometheus_url, const std::string& driver_yaml,
                                         const std::string& cluster = "test", const std::string& extra = "") {
  return "apiVersion: gpuscaler/v1\nkind: DaemonConfig\ncluster_name: " + cluster +
         "\npolicy: policy.yaml\ncatalog: " + std::string(GPUSCALER_SOURCE_DIR) +
         "/config/catalogs/azure.yaml\nregions: [eastus]\ndb: audit.db\nlisten: 127.0.0.1:0\n"
         "cloud:\n  provider: azure\n  azure:\n    subscription_id: " +
         kAzureSubscription + "\n    location: eastus\n    endpoint: \"" + emulator.url() +
         "/\"\n    ca_file: " + emulator.ca_file().string() + "\n    operation_timeout: 30s\n" + driver_yaml +
         "    credentials:\n      kind: client_secret\n      tenant_id: " + kAzureTenant +
         "\n      client_id: " + kAzureClientId +
         "\n      client_secret_file: " + emulator.secret_file().string() + "\n      authority_host: \"" +
         emulator.url() + "/\"\n" + "signals:\n  prometheus: {url: \"" + prometheus_url +
         "\"}\n  timeout: 5s\n" + extra;
}

// cloud.azure for driver aks: cluster "prod" in rg-aks, policy pool "gpu"
// on `agent_pools`; for driver vmss: the scale sets `scale_sets` in rg-gpu.
inline std::string AzureAksDriverYaml(const std::string& agent_pools) {
  return "    resource_group: rg-aks\n    driver: aks\n    aks_cluster: prod\n    pools:\n      gpu: "
         "{agent_pools: [" +
         agent_pools + "]}\n";
}
inline std::string AzureVmssDriverYaml(const std::string& scale_sets) {
  return "    resource_group: rg-gpu\n    driver: vmss\n    pools:\n      gpu: {scale_sets: [" + scale_sets +
         "]}\n";
}

// A Spot agent pool `name` of cluster "prod" (rg-aks) over zones 1 and 2,
// tagged for `cluster`, with `count` nodes to start with.
inline std::string AzureAgentPoolYaml(const std::string& name, const std::string& priority,
                                      const std::string& cluster = "test", int count = 0) {
  return "      - {name: " + name + ", vm_size: Standard_NC4as_T4_v3, count: " + std::to_string(count) +
         ", priority: " + priority + (priority == "Spot" ? ", eviction_policy: Delete" : "") +
         ", zones: ['1', '2'], tags: {gpuscaler-cluster: " + cluster + "}}\n";
}
inline std::string AzureClusterYaml(const std::string& pools_yaml) {
  return "clusters:\n  - resource_group: rg-aks\n    name: prod\n    pools:\n"
         "      - {name: system, vm_size: Standard_D4s_v5, count: 1, mode: System}\n" +
         pools_yaml;
}
// A scale set `name` in rg-gpu over zones 1 and 2, tagged for `cluster`.
inline std::string AzureScaleSetYaml(const std::string& name, const std::string& priority,
                                     const std::string& cluster = "test") {
  return "  - {resource_group: rg-gpu, name: " + name +
         ", vm_size: Standard_NC4as_T4_v3, priority: " + priority +
         ", zones: ['1', '2'], capacity: 0, tags: {gpuscaler-cluster: " + cluster + "}}\n";
}

// StartDaemon, with no Azure variables from the test's environment.
inline std::unique_ptr<ChildProcess> StartAzureDaemon(const std::filesystem::path& dir, int tick_ms,
                                                      const std::string& failpoint = "", int run = 0) {
  for (const char* v : {"AZURE_FEDERATED_TOKEN_FILE", "AZURE_CLIENT_ID", "AZURE_TENANT_ID",
                        "AZURE_AUTHORITY_HOST", "AZURE_SUBSCRIPTION_ID"})
    ::unsetenv(v);
  return StartDaemon(dir, tick_ms, failpoint, run);
}

}  // namespace gpuscaler::testing
