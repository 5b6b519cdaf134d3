// Azure's own JavaScript SDKs (@azure/arm-containerservice and
// @azure/arm-compute, pinned in tests/cloud/azure_node_client/
// package-lock.json and installed by scripts/setup.sh) against `gpuscaler
// cloud-emulator --provider azure`, started by the test on a free loopback
// port over HTTPS with a self-signed certificate it writes out
// (--tls-ca-out) for node to trust (NODE_EXTRA_CA_CERTS): our reading of
// ARM's agent pools, machines, scale sets, long-running operations and
// ETags is checked by code we did not write. client.js gets a token from
// the emulator's Entra ID endpoint, then creates, scales and deletes
// machines of an agent pool and creates, scales and deletes instances of a
// scale set, with the SDKs' own pollers.
//
// Skipped when `node` is not on PATH or the packages are not installed,
// except under CI=true where that fails.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/process.h"

namespace gpuscaler::azure_node_client_test {
namespace {

using nlohmann::json;
using testing::ChildProcess;
using testing::FindOnPath;
using testing::ReadAll;
using testing::ShellQuote;
using testing::WaitForPortFile;
using namespace std::chrono_literals;

constexpr const char* kAzSub = "00000000-0000-0000-0000-000000000001";
constexpr const char* kAzTenant = "00000000-0000-0000-0000-0000000000aa";

// $GPUSCALER_AZURE_NODE_CACHE/node_modules, else
// ~/.cache/gpuscaler/azure_node_client/node_modules.
std::filesystem::path AzureNodeModules() {
  if (const char* c = std::getenv("GPUSCALER_AZURE_NODE_CACHE"); c != nullptr && *c != '\0') {
    return std::filesystem::path(c) / "node_modules";
  }
  const char* home = std::getenv("HOME");
  return std::filesystem::path(home != nullptr ? home : "/root") / ".cache/gpuscaler/azure_node_client/node_modules";
}

class AzureNodeClient : public testing::CliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    node_ = FindOnPath("node");
    const bool ci = std::getenv("CI") != nullptr && std::string(std::getenv("CI")) == "true";
    if (node_.empty()) {
      if (ci) FAIL() << "node is not on PATH (CI=true): scripts/setup.sh installs it";
      GTEST_SKIP() << "node is not on PATH";
    }
    for (const char* package : {"@azure/arm-containerservice", "@azure/arm-compute"}) {
      if (!std::filesystem::exists(AzureNodeModules() / package / "package.json")) {
        if (ci) FAIL() << package << " is not installed in " << AzureNodeModules() << " (CI=true): run scripts/setup.sh";
        GTEST_SKIP() << package << " is not installed in " << AzureNodeModules() << ": run scripts/setup.sh";
      }
    }
  }
  void TearDown() override {
    if (emulator_) {
      emulator_->Signal(SIGTERM);
      emulator_->Wait(20s);
    }
    CliTest::TearDown();
  }

  void StartEmulator(const std::string& scenario) {
    const auto path = Write("scenario.yaml", scenario);
    emulator_ = std::make_unique<ChildProcess>(
        std::vector<std::string>{GPUSCALER_BINARY, "cloud-emulator", "--provider", "azure", "--listen",
                                 "127.0.0.1:0", "--scenario", path.string(), "--port-file",
                                 (dir_ / "emulator.port").string(), "--tls-ca-out", (dir_ / "ca.pem").string()},
        dir_ / "emulator.out", dir_ / "emulator.err");
    port_ = WaitForPortFile(dir_ / "emulator.port", 60s);
    ASSERT_NE(port_, 0) << "the emulator did not start: " << ReadAll(dir_ / "emulator.err");
  }

  json RunClient() {
    const std::string script = std::string(GPUSCALER_SOURCE_DIR) + "/tests/cloud/azure_node_client/client.js";
    const std::string url = "https://127.0.0.1:" + std::to_string(port_);
    const std::string cmd = "NODE_EXTRA_CA_CERTS=" + ShellQuote((dir_ / "ca.pem").string()) +
                            " NODE_PATH=" + ShellQuote(AzureNodeModules().string()) + " " + ShellQuote(node_) + " " +
                            ShellQuote(script) + " " + ShellQuote(url) + " " + kAzSub + " " + kAzTenant +
                            " gpuscaler-app s3cret >" + ShellQuote((dir_ / "client.out").string()) + " 2>" +
                            ShellQuote((dir_ / "client.err").string());
    const int status = std::system(cmd.c_str());
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    EXPECT_EQ(code, 0) << ReadAll(dir_ / "client.err");
    json out = json::parse(ReadAll(dir_ / "client.out"), nullptr, false);
    EXPECT_TRUE(out.is_object()) << ReadAll(dir_ / "client.out") << ReadAll(dir_ / "client.err");
    return out.is_object() ? out : json::object();
  }

  std::string node_;
  std::unique_ptr<ChildProcess> emulator_;
  uint16_t port_ = 0;
};

TEST_F(AzureNodeClient, AzureSdksDriveAgentPoolsAndScaleSetsOverHttps) {
  ASSERT_NO_FATAL_FAILURE(StartEmulator(
      "provider: azure\noperation_latency: 1s\nretry_after: 1s\n"
      "clients:\n  - {client_id: gpuscaler-app, client_secret: s3cret}\n"
      "clusters:\n"
      "  - resource_group: rg-aks\n    name: prod\n    tags: {gpuscaler-owned: 'true'}\n"
      "    pools:\n      - {name: system, vm_size: Standard_D4s_v5, count: 1, mode: System}\n"
      "capacity:\n  - {vm_size: Standard_NC40ads_H100_v5, limit: 1, error: OverconstrainedAllocationRequest}\n"));
  const json out = RunClient();
  SCOPED_TRACE(out.dump(2));

  EXPECT_EQ(out["token"]["status"], 200);
  EXPECT_EQ(out["token"]["token_type"], "Bearer");
  EXPECT_EQ(out["token"]["has_token"], true);
  EXPECT_EQ(out["cluster"]["tags"]["gpuscaler-owned"], "true");
  EXPECT_EQ(out["cluster"]["nodeResourceGroup"], "MC_rg-aks_prod_eastus");

  // Agent pool create and scale: the SDK's poller follows
  // Azure-AsyncOperation to Succeeded, then reads the pool back.
  EXPECT_EQ(out["pool_create"]["count"], 2);
  EXPECT_EQ(out["pool_create"]["provisioningState"], "Succeeded");
  EXPECT_EQ(out["pool_create"]["scaleSetPriority"], "Spot");
  EXPECT_EQ(out["pool_create"]["availabilityZones"], json::array({"1", "2"}));
  EXPECT_EQ(out["pool_create"]["tags"]["gpuscaler-owned"], "true");
  EXPECT_EQ(out["pool_scale"]["count"], 3);
  EXPECT_EQ(out["pool_scale"]["provisioningState"], "Succeeded");
  ASSERT_EQ(out["machines"].size(), 3u);
  for (const json& m : out["machines"]) {
    EXPECT_EQ(m["name"].get<std::string>().rfind("aks-gpu-", 0), 0u);
    EXPECT_NE(m["resourceId"].get<std::string>().find("/resourceGroups/MC_rg-aks_prod_eastus/"), std::string::npos);
    EXPECT_EQ(m["ip"].get<std::string>().rfind("10.224.", 0), 0u);
  }
  // deleteMachines (202, Location and Azure-AsyncOperation), read back.
  const json& deleted = out["delete_machines"];
  EXPECT_EQ(deleted["deleted"], out["machines"][0]["name"]);
  ASSERT_EQ(deleted["left"].size(), 2u);
  for (const json& name : deleted["left"]) EXPECT_NE(name, deleted["deleted"]);
  EXPECT_EQ(deleted["got"], deleted["left"][0]);
  EXPECT_EQ(deleted["count"], 2);
  // A capacity error surfaces from the operation's final status.
  const std::string failed = out["pool_failed"]["error"].value("message", "");
  EXPECT_NE(failed.find("OverconstrainedAllocationRequest"), std::string::npos);
  EXPECT_NE(failed.find("Allocation failed"), std::string::npos);

  // Scale set create (PUT) and scale (PATCH) through the pollers.
  EXPECT_EQ(out["vmss_create"]["capacity"], 1);
  EXPECT_EQ(out["vmss_create"]["provisioningState"], "Succeeded");
  EXPECT_EQ(out["vmss_create"]["priority"], "Spot");
  EXPECT_EQ(out["vmss_create"]["maxPrice"], 2.5);
  EXPECT_EQ(out["vmss_scale"]["capacity"], 3);
  EXPECT_EQ(out["vmss_scale"]["provisioningState"], "Succeeded");
  // If-Match with a stale ETag: 412 PreconditionFailed.
  EXPECT_EQ(out["vmss_stale_etag"]["error"]["statusCode"], 412);
  EXPECT_EQ(out["vmss_stale_etag"]["error"]["code"], "PreconditionFailed");
  // Delete instances (forceDeletion), VMs read back with their instance view.
  EXPECT_EQ(out["vmss_delete_instances"]["instanceIds"], json::array({"1", "2"}));
  EXPECT_EQ(out["vmss_delete_instances"]["capacity"], 2);
  EXPECT_EQ(out["vmss_delete_instances"]["power"][1], "PowerState/running");
  // The pool's scale set, in the AKS-managed node resource group.
  EXPECT_EQ(out["vmss_aks_managed"]["tags"]["aks-managed-poolName"], "gpu");
}

}  // namespace
}  // namespace gpuscaler::azure_node_client_test
