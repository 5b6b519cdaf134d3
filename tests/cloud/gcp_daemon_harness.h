// The daemon with `cloud.provider: gcp` against `gpuscaler cloud-emulator
// --provider gcp`: the emulator process with a generated service-account
// key (the daemon gets a real JWT-bearer token from the emulator's /token),
// the daemon's configuration and policy, and the emulator's instances read
// as CloudInstance for the checks of daemon_harness.h.
//
// The truth about the fleet is the emulator's /_emulator/state (every
// instance, deleted ones too). An instance's launch intent is found from its
// name: gpuscaler names instances GcpProvider::InstanceName(cluster, token,
// slot), so the launch rows of the audit database give hash -> token.
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
#include "cloud/gcp_test_key.h"
#include "gpuscaler/cloud/gcp_provider.h"
#include "gpuscaler/net/http_client.h"
#include "gpuscaler/net/url.h"

namespace gpuscaler::testing {

inline constexpr const char* kGcpProject = "gpu-project";
inline constexpr const char* kGcpAccount = "gpuscaler@gpu-project.iam.gserviceaccount.com";
// A Bearer token the emulator always accepts, for the test's own reads.
inline constexpr const char* kGcpTestToken = "test-reader-token";

class GcpEmulatorProcess : public EmulatedCloud {
 public:
  // `scenario` is the scenario file after its provider, project, account and
  // token keys (zones, latencies, groups, capacity, …).
  GcpEmulatorProcess(const std::filesystem::path& dir, const std::string& scenario) : dir_(dir) {
    const cloud::testing::TestRsaKey& key = cloud::testing::SharedTestRsaKey();
    std::ofstream(dir / "sa-public.pem") << key.PublicPem();
    std::ofstream(dir / "scenario.yaml")
        << "provider: gcp\nproject: " << kGcpProject << "\nservice_accounts:\n  - {email: " << kGcpAccount
        << ", public_key_file: sa-public.pem}\naccess_tokens: [" << kGcpTestToken << "]\n"
        << scenario;
    std::filesystem::remove(dir / "emulator.port");
    process_ = std::make_unique<ChildProcess>(
        std::vector<std::string>{GPUSCALER_BINARY, "cloud-emulator", "--provider", "gcp", "--listen",
                                 "127.0.0.1:0", "--scenario", (dir / "scenario.yaml").string(), "--port-file",
                                 (dir / "emulator.port").string()},
        dir / "emulator.out", dir / "emulator.err");
    port_ = WaitForPortFile(dir / "emulator.port", 60s);
    // The daemon's key file: the emulator's token endpoint as token_uri.
    std::ofstream(dir / "sa-key.json")
        << cloud::testing::ServiceAccountKeyJson(url() + "/token", key.PrivatePem(), kGcpProject);
  }
  ~GcpEmulatorProcess() override {
    if (process_ && process_->started()) {
      process_->Signal(SIGTERM);
      process_->Wait(20s);
    }
  }
  bool ok() const { return port_ != 0; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::string compute_endpoint() const { return url() + "/compute/v1/"; }
  std::filesystem::path key_file() const { return dir_ / "sa-key.json"; }
  std::string log() const override { return ReadAll(dir_ / "emulator.err"); }
  // The audit database whose launch rows name the instances' intents.
  void set_audit_db(std::string db) { db_ = std::move(db); }

  std::optional<nlohmann::json> State(std::string* error = nullptr) {
    net::HttpRequest r;
    r.url = url() + "/_emulator/state";
    Result<net::HttpResponse> a = net::Fetch(r);
    if (!a || a->status != 200) {
      if (error) *error = a ? "HTTP " + std::to_string(a->status) : a.error().ToString();
      return std::nullopt;
    }
    return nlohmann::json::parse(a->body);
  }

  std::optional<std::vector<CloudInstance>> Instances(std::string* error = nullptr) override {
    std::optional<nlohmann::json> state = State(error);
    if (!state) return std::nullopt;
    const std::map<std::string, std::string> tokens =
        db_.empty() ? std::map<std::string, std::string>{} : LaunchTokensByHash(db_, cloud::GcpProvider::IntentHash);
    std::vector<CloudInstance> out;
    for (const nlohmann::json& j : (*state)["instances"]) {
      CloudInstance i;
      i.id = j.value("name", "");
      i.zone = j.value("zone", "");
      i.lifecycle =
          j.value("provisioningModel", "") == "SPOT" ? CapacityType::kSpot : CapacityType::kOnDemand;
      const std::string status = j.value("status", "");
      // A member at rest TERMINATED or SUSPENDED and not deleted is a
      // stopped (warm) VM: "stopped", as EC2 names it.
      i.state = j.value("deleted", false)                         ? "terminated"
                : status == "RUNNING"                             ? "running"
                : status == "PROVISIONING" || status == "STAGING" ? "pending"
                : status == "STOPPING"                            ? "shutting-down"
                : status == "TERMINATED" || status == "SUSPENDED" ? "stopped"
                                                                  : "terminated";
      for (const auto& [k, v] : j["labels"].items()) {
        if (v.is_string()) i.tags[k] = v.get<std::string>();
      }
      if (i.tags.count(cloud::kGcpPoolLabel)) i.tags[kOwnerTag] = i.tags[cloud::kGcpPoolLabel];
      i.tags["group"] = j.value("group", "");
      // "gs-<cluster>-<hash>-<slot>": the hash is the second-to-last part.
      const size_t last = i.id.rfind('-');
      const size_t before = last == std::string::npos ? std::string::npos : i.id.rfind('-', last - 1);
      if (before != std::string::npos) {
        auto token = tokens.find(i.id.substr(before + 1, last - before - 1));
        if (token != tokens.end()) i.tags[kIntentTag] = token->second;
      }
      out.push_back(std::move(i));
    }
    return out;
  }

  // Operations of `type` in `zone` (zoneOperations.list with a filter).
  int CountOperations(const std::string& zone, const std::string& type) {
    net::HttpRequest r;
    r.url = compute_endpoint() + "projects/" + kGcpProject + "/zones/" + zone +
            "/operations?filter=" + net::PercentEncode("operationType = \"" + type + "\"");
    r.headers = {{"Authorization", std::string("Bearer ") + kGcpTestToken}};
    Result<net::HttpResponse> a = net::Fetch(r);
    if (!a || a->status != 200) return -1;
    return static_cast<int>(nlohmann::json::parse(a->body).value("items", nlohmann::json::array()).size());
  }

 private:
  std::filesystem::path dir_;
  std::unique_ptr<ChildProcess> process_;
  uint16_t port_ = 0;
  std::string db_;
};

// One pool "gpu" of g2-standard-8 (one L4) in us-central1-a and -b; 5 jobs
// per GPU as PolicyYaml.
inline std::string GcpPolicyYaml(const std::string& capacity_types, bool interruptible) {
  std::string p = PolicyYaml(capacity_types, interruptible);
  auto replace = [&](const std::string& from, const std::string& to) {
    const size_t at = p.find(from);
    if (at != std::string::npos) p.replace(at, from.size(), to);
  };
  replace("instance_types: [g5.xlarge]", "instance_types: [g2-standard-8]");
  replace("regions: [us-east-1]", "regions: [us-central1]");
  replace("zones: [us-east-1a, us-east-1b]", "zones: [us-central1-a, us-central1-b]");
  replace("name: emulator-e2e", "name: gcp-emulator-e2e");
  return p;
}

// The daemon's configuration: provider gcp at the emulator, `pools_yaml`
// under cloud.gcp (indented by 4), signals from the fixture.
inline std::string GcpDaemonConfigYaml(const GcpEmulatorProcess& emulator, const std::string& prometheus_url,
                                       const std::string& gcp_extra) {
  return "apiVersion: gpuscaler/v1\nkind: DaemonConfig\ncluster_name: test\npolicy: policy.yaml\ncatalog: " +
         std::string(GPUSCALER_SOURCE_DIR) +
         "/config/catalogs/gcp.yaml\nregions: [us-central1]\ndb: audit.db\nlisten: 127.0.0.1:0\n"
         "cloud:\n  provider: gcp\n  gcp:\n    region: us-central1\n    zones: [us-central1-a, "
         "us-central1-b]\n"
         "    endpoint: " +
         emulator.compute_endpoint() + "\n    operation_timeout: 10s\n" + gcp_extra +
         "signals:\n  prometheus: {url: \"" + prometheus_url + "\"}\n  timeout: 5s\n";
}

// The managed instance groups of pool "gpu" (cluster "test") as the
// scenario names them, and as cloud.gcp.pools names them.
inline std::string GcpGroupsScenario(const std::string& provisioning_model) {
  std::string s = "managed_instance_groups:\n";
  for (const char* zone : {"us-central1-a", "us-central1-b"}) {
    s += std::string("  - {name: gke-test-gpu-") + zone + ", zone: " + zone +
         ", machine_type: g2-standard-8, provisioning_model: " + provisioning_model +
         (provisioning_model == "SPOT" ? ", termination_action: DELETE" : "") +
         ", labels: {gpuscaler-cluster: test, gpuscaler-pool: gpu}}\n";
  }
  return s;
}
inline constexpr const char* kGcpGroupPools =
    "    pools:\n      gpu: {mig_pattern: \"gke-test-{pool}-{zone}\"}\n";
inline constexpr const char* kGcpBarePools = "    instance_template: global/instanceTemplates/gpu-node\n";

// StartDaemon with GOOGLE_APPLICATION_CREDENTIALS naming the emulator's key.
inline std::unique_ptr<ChildProcess> StartGcpDaemon(const std::filesystem::path& dir,
                                                    const GcpEmulatorProcess& emulator, int tick_ms,
                                                    const std::string& failpoint = "", int run = 0) {
  ::setenv("GOOGLE_APPLICATION_CREDENTIALS", emulator.key_file().c_str(), 1);
  ::setenv("NO_GCE_CHECK", "true", 1);
  auto p = StartDaemon(dir, tick_ms, failpoint, run);
  ::unsetenv("GOOGLE_APPLICATION_CREDENTIALS");
  ::unsetenv("NO_GCE_CHECK");
  return p;
}

}  // namespace gpuscaler::testing
