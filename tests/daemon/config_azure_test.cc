// The cloud.azure section of the daemon configuration.
#include <gtest/gtest.h>

#include "gpuscaler/daemon/config.h"
#include "gpuscaler/policy/loader.h"

namespace gpuscaler::daemon::config_azure_test {
namespace {

const char* kHead = R"(apiVersion: gpuscaler/v1
kind: DaemonConfig
cluster_name: prod-east
policy: p.yaml
cloud:
  provider: azure
)";

TEST(DaemonConfigAzure, ReadsEveryFieldAndResolvesTheCredentialFiles) {
  const std::string text = std::string(kHead) + R"(  azure:
    subscription_id: 00000000-0000-0000-0000-000000000000
    resource_group: rg-ml
    location: eastus
    driver: aks
    aks_cluster: ml-aks
    endpoint: "https://127.0.0.1:8443/"
    ca_file: emulator-ca.pem
    operation_timeout: 15m
    credentials:
      kind: client_certificate
      tenant_id: 72f988bf-86f1-41af-91ab-2d7cd011db47
      client_id: 6e3d7b1a-0000-0000-0000-000000000000
      certificate_file: secrets/sp.pem
      authority_host: "https://127.0.0.1:8443/"
    pools:
      a100: {agent_pools: [gpuspot, gpuod]}
)";
  Result<DaemonConfig> c = ParseDaemonConfig(text, "/etc/gpuscaler/d.yaml");
  ASSERT_TRUE(c.ok()) << c.error().message();
  const AzureSettings& a = c->cloud.azure;
  EXPECT_EQ(c->cloud.provider, "azure");
  EXPECT_EQ(a.subscription_id, "00000000-0000-0000-0000-000000000000");
  EXPECT_EQ(a.resource_group, "rg-ml");
  EXPECT_EQ(a.location, "eastus");
  EXPECT_EQ(a.driver, "aks");
  EXPECT_EQ(a.aks_cluster, "ml-aks");
  EXPECT_EQ(a.endpoint, "https://127.0.0.1:8443/");
  EXPECT_EQ(a.ca_file, "/etc/gpuscaler/emulator-ca.pem");
  EXPECT_EQ(a.operation_timeout, Seconds(900));
  EXPECT_EQ(a.credentials.kind, "client_certificate");
  EXPECT_EQ(a.credentials.certificate_file, "/etc/gpuscaler/secrets/sp.pem");
  EXPECT_EQ(a.credentials.authority_host, "https://127.0.0.1:8443/");
  EXPECT_EQ(a.pools.at("a100"), (std::vector<std::string>{"gpuspot", "gpuod"}));
}

TEST(DaemonConfigAzure, RejectsBadSettingsEachAtItsLine) {
  const std::string text = std::string(kHead) + R"(  azure:
    subscription_id: my-subscription
    resource_group: "rg."
    location: East US
    driver: vmss
    aks_cluster: ml-aks
    endpoint: management.azure.com
    operation_timeout: 1s
    credentials:
      kind: password
      client_secret_file: s.txt
    pools:
      a100: {agent_pools: [gpuspot]}
      h100: {scale_sets: ["bad name"]}
      l4: {}
)";
  Result<DaemonConfig> c = ParseDaemonConfig(text, "d.yaml");
  ASSERT_FALSE(c.ok());
  const std::string& m = c.error().message();
  EXPECT_NE(m.find("d.yaml:8:"), std::string::npos) << m;  // the subscription's line
  EXPECT_NE(m.find("'my-subscription' is not a subscription id"), std::string::npos) << m;
  EXPECT_NE(m.find("'rg.' is not a resource group name"), std::string::npos) << m;
  EXPECT_NE(m.find("'East US' is not a region name like eastus"), std::string::npos) << m;
  EXPECT_NE(m.find("cloud.azure.aks_cluster: only used with driver: aks"), std::string::npos) << m;
  EXPECT_NE(m.find("cloud.azure.endpoint: must start with http:// or https://"), std::string::npos) << m;
  EXPECT_NE(m.find("cloud.azure.operation_timeout: must be between 10s and 1h"), std::string::npos) << m;
  EXPECT_NE(m.find("d.yaml:17:"), std::string::npos) << m;  // the kind's line
  EXPECT_NE(m.find("must be auto, workload_identity"), std::string::npos) << m;
  EXPECT_NE(m.find("client_secret_file: only read with kind: client_secret"), std::string::npos) << m;
  EXPECT_NE(m.find("driver 'vmss' scales scale_sets"), std::string::npos) << m;
  EXPECT_NE(m.find("'bad name' is not a scale set name"), std::string::npos) << m;
  EXPECT_NE(m.find("cloud.azure.pools.l4: needs scale_sets"), std::string::npos) << m;

  Result<DaemonConfig> bare = ParseDaemonConfig(std::string(kHead), "d.yaml");
  ASSERT_FALSE(bare.ok());
  EXPECT_NE(bare.error().message().find("provider 'azure' needs cloud.azure with at least resource_group"),
            std::string::npos)
      << bare.error().message();
  Result<DaemonConfig> no_cluster = ParseDaemonConfig(
      std::string(kHead) + "  azure: {resource_group: rg, location: eastus}\n", "d.yaml");
  ASSERT_FALSE(no_cluster.ok());
  EXPECT_NE(no_cluster.error().message().find("driver 'aks' needs aks_cluster"), std::string::npos);
}

TEST(DaemonConfigAzure, EveryPoolNeedsItsGroupsAndNoAwsActuation) {
  const PolicyLoadResult policy = ParsePolicy(
      "apiVersion: gpuscaler/v1\nkind: Policy\nclasses: [{name: a}]\npools:\n"
      "  - name: a100\n"
      "  - name: l4\n"
      "  - {name: group, actuation: asg, auto_scaling_group: g}\n",
      "p.yaml");
  ASSERT_TRUE(policy.ok()) << policy.status().error().message();
  DaemonConfig c;
  c.source_file = "d.yaml";
  c.cloud.provider = "azure";
  c.cloud.azure.resource_group = "rg";
  c.cloud.azure.location = "eastus";
  c.cloud.azure.pools["a100"] = {"gpuspot"};
  c.cloud.azure.pools["gone"] = {"old"};
  Status s = CheckPoolsCanLaunch(c, policy.policy);
  ASSERT_FALSE(s.ok());
  const std::string& m = s.error().message();
  EXPECT_EQ(m.find("'a100'"), std::string::npos) << m;
  EXPECT_NE(m.find("pools[1] 'l4': has no entry in d.yaml cloud.azure.pools"), std::string::npos) << m;
  EXPECT_NE(m.find("pools[2] 'group': actuation 'asg' is AWS's"), std::string::npos) << m;
  EXPECT_NE(m.find("cloud.azure.pools.gone: no policy pool of that name"), std::string::npos) << m;
}

}  // namespace
}  // namespace gpuscaler::daemon::config_azure_test
