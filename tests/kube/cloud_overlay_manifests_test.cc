// The GKE and AKS overlays as an operator applies them: workload identity on
// each cloud, egress to the GKE metadata server, a daemon configuration for
// the cloud's provider whose pools all launch and whose policy passes `policy
// check` on the cloud's catalog, and the AKS node agent's DaemonSet on the Spot
// nodes with least privilege.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "gpuscaler/daemon/config.h"
#include "gpuscaler/policy/loader.h"
#include "kube/manifests_fixture.h"
#include "kube/tools.h"

namespace gpuscaler::kube_test::cloud_overlay_manifests_test {
namespace {

namespace fs = std::filesystem;
using manifests_testing::kGkeOverlay;
using manifests_testing::Manifests;
using manifests_testing::Str;

const fs::path kAksOverlay = "config/kubernetes/overlays/aks";

// The GKE overlay as an operator applies it: the base's objects, the
// service account bound to a Google service account (Workload Identity),
// egress to the GKE metadata server, and a daemon configuration with
// provider gcp whose pools all launch and whose policy is valid for the GCP
// catalog.
TEST_F(Manifests, GkeOverlayRendersWorkloadIdentityAndAGcpConfiguration) {
  const std::vector<YAML::Node> gke = Kustomize(kubectl_, SourceDir() / kGkeOverlay);
  ASSERT_FALSE(gke.empty());
  const YAML::Node sa = FindObject(gke, "ServiceAccount", "gpuscaler");
  ASSERT_TRUE(sa);
  EXPECT_EQ(Str(sa["metadata"]["annotations"]["iam.gke.io/gcp-service-account"]),
            "gpuscaler@my-gcp-project.iam.gserviceaccount.com");
  EXPECT_FALSE(sa["metadata"]["annotations"]["eks.amazonaws.com/role-arn"]);
  EXPECT_TRUE(FindObject(gke, "Deployment", "gpuscaler"));
  EXPECT_NE(Str(Deployment(gke)["spec"]["template"]["spec"]["containers"][0]["image"]).find("docker.pkg.dev"),
            std::string::npos);
  for (const YAML::Node& o : gke) EXPECT_NE(Str(o["kind"]), "Secret");

  // Egress: the base's rules plus the metadata server.
  const YAML::Node md = FindObject(gke, "NetworkPolicy", "gpuscaler-gke-metadata");
  ASSERT_TRUE(md);
  std::set<std::pair<std::string, int>> allowed;
  for (const YAML::Node& rule : md["spec"]["egress"]) {
    for (const YAML::Node& to : rule["to"])
      for (const YAML::Node& p : rule["ports"]) allowed.insert({Str(to["ipBlock"]["cidr"]), p["port"].as<int>()});
  }
  EXPECT_EQ(allowed.count({"169.254.169.254/32", 80}), 1u);
  EXPECT_EQ(allowed.count({"169.254.169.252/32", 988}), 1u);
  for (const auto& kv : md["spec"]["podSelector"]["matchLabels"])
    EXPECT_EQ(Str(Deployment(gke)["spec"]["template"]["metadata"]["labels"][kv.first.as<std::string>()]),
              kv.second.as<std::string>());

  const daemon::DaemonConfig config = RenderedDaemonConfig(gke);
  EXPECT_EQ(config.cloud.provider, "gcp");
  EXPECT_EQ(config.cloud.gcp.region, "us-central1");
  EXPECT_EQ(config.catalog_file, "/usr/share/gpuscaler/catalogs/gcp.yaml");
  const YAML::Node policy_map = FindObject(gke, "ConfigMap", "gpuscaler-policy");
  ASSERT_TRUE(policy_map);
  TempDir dir;
  WriteFile(dir.path() / "policy.yaml", Str(policy_map["data"]["policy.yaml"]));
  const CommandResult check =
      RunCommand({GPUSCALER_BINARY, "policy", "check", (dir.path() / "policy.yaml").string(), "--catalog",
                  (SourceDir() / "config/catalogs/gcp.yaml").string()});
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
  const PolicyLoadResult policy = LoadPolicyFile((dir.path() / "policy.yaml").string());
  ASSERT_TRUE(policy.ok()) << policy.status().error().message();
  daemon::DaemonConfig named = config;
  named.source_file = "gpuscaler.yaml";
  const Status launchable = daemon::CheckPoolsCanLaunch(named, policy.policy);
  EXPECT_TRUE(launchable.ok()) << (launchable.ok() ? "" : launchable.error().message());
}

// The AKS overlay: the base's objects, workload identity (the service
// account's client-id annotation, the pod's use label the webhook looks
// for), and a daemon configuration with provider azure whose pools all
// launch.
TEST_F(Manifests, AksOverlayRendersWorkloadIdentityAndAnAzureConfiguration) {
  const std::vector<YAML::Node> aks = Kustomize(kubectl_, SourceDir() / kAksOverlay);
  ASSERT_FALSE(aks.empty());
  const YAML::Node sa = FindObject(aks, "ServiceAccount", "gpuscaler");
  ASSERT_TRUE(sa);
  EXPECT_EQ(Str(sa["metadata"]["annotations"]["azure.workload.identity/client-id"]),
            "00000000-0000-0000-0000-000000000000");
  const YAML::Node pod = Deployment(aks)["spec"]["template"];
  EXPECT_EQ(Str(pod["metadata"]["labels"]["azure.workload.identity/use"]), "true");
  EXPECT_EQ(Str(pod["metadata"]["labels"]["app.kubernetes.io/name"]), "gpuscaler");  // the base's kept
  EXPECT_EQ(Str(pod["spec"]["serviceAccountName"]), "gpuscaler");
  for (const YAML::Node& o : aks) EXPECT_NE(Str(o["kind"]), "Secret");

  const daemon::DaemonConfig config = RenderedDaemonConfig(aks);
  EXPECT_EQ(config.cloud.provider, "azure");
  EXPECT_EQ(config.cloud.azure.driver, "aks");
  EXPECT_EQ(config.cloud.azure.location, "eastus");
  EXPECT_EQ(config.cloud.azure.credentials.kind, "auto");
  const YAML::Node policy_map = FindObject(aks, "ConfigMap", "gpuscaler-policy");
  ASSERT_TRUE(policy_map);
  TempDir dir;
  WriteFile(dir.path() / "policy.yaml", Str(policy_map["data"]["policy.yaml"]));
  EXPECT_EQ(config.catalog_file, "/usr/share/gpuscaler/catalogs/azure.yaml");
  const CommandResult check =
      RunCommand({GPUSCALER_BINARY, "policy", "check", (dir.path() / "policy.yaml").string(), "--catalog",
                  (SourceDir() / "config/catalogs/azure.yaml").string()});
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
  const PolicyLoadResult policy = LoadPolicyFile((dir.path() / "policy.yaml").string());
  ASSERT_TRUE(policy.ok()) << policy.status().error().message();
  daemon::DaemonConfig named = config;
  named.source_file = "gpuscaler.yaml";
  const Status launchable = daemon::CheckPoolsCanLaunch(named, policy.policy);
  EXPECT_TRUE(launchable.ok()) << (launchable.ok() ? "" : launchable.error().message());
}

// The AKS overlay's node agent: a DaemonSet on the Spot nodes only (their
// label and taint, the GPU taints tolerated), running `gpuscaler
// node-agent` with its node's name, without the host's network, and a role
// that can read nodes and patch their status, nothing else.
TEST_F(Manifests, AksOverlayRunsTheNodeAgentOnSpotNodesWithLeastPrivilege) {
  const std::vector<YAML::Node> aks = Kustomize(kubectl_, SourceDir() / kAksOverlay);
  ASSERT_FALSE(aks.empty());
  const YAML::Node ds = FindObject(aks, "DaemonSet", "gpuscaler-node-agent");
  ASSERT_TRUE(ds);
  EXPECT_EQ(Str(ds["metadata"]["namespace"]), "gpuscaler");
  const YAML::Node spec = ds["spec"]["template"]["spec"];
  EXPECT_EQ(Str(spec["nodeSelector"]["kubernetes.azure.com/scalesetpriority"]), "spot");
  EXPECT_FALSE(spec["hostNetwork"] && spec["hostNetwork"].as<bool>()) << "IMDS is reachable from pods on AKS";
  std::set<std::string> tolerated;
  for (const YAML::Node& t : spec["tolerations"]) tolerated.insert(Str(t["key"]) + "=" + Str(t["value"]));
  EXPECT_EQ(tolerated.count("kubernetes.azure.com/scalesetpriority=spot"), 1u);
  EXPECT_EQ(tolerated.count("nvidia.com/gpu="), 1u);
  EXPECT_EQ(Str(spec["serviceAccountName"]), "gpuscaler-node-agent");
  const YAML::Node container = spec["containers"][0];
  std::vector<std::string> args;
  for (const YAML::Node& a : container["args"]) args.push_back(Str(a));
  EXPECT_NE(std::find(args.begin(), args.end(), "node-agent"), args.end());
  EXPECT_EQ(Str(container["env"][0]["name"]), "NODE_NAME");
  EXPECT_EQ(Str(container["env"][0]["valueFrom"]["fieldRef"]["fieldPath"]), "spec.nodeName");

  const YAML::Node role = FindObject(aks, "ClusterRole", "gpuscaler-node-agent");
  ASSERT_TRUE(role);
  std::set<std::string> allowed;
  for (const YAML::Node& rule : role["rules"]) {
    for (const YAML::Node& r : rule["resources"]) {
      for (const YAML::Node& v : rule["verbs"]) allowed.insert(Str(r) + ":" + Str(v));
    }
  }
  EXPECT_EQ(allowed, (std::set<std::string>{"nodes:get", "nodes/status:patch"}));
  const YAML::Node binding = FindObject(aks, "ClusterRoleBinding", "gpuscaler-node-agent");
  ASSERT_TRUE(binding);
  EXPECT_EQ(Str(binding["subjects"][0]["name"]), "gpuscaler-node-agent");
  EXPECT_EQ(Str(binding["subjects"][0]["namespace"]), "gpuscaler");
}

}  // namespace
}  // namespace gpuscaler::kube_test::cloud_overlay_manifests_test
