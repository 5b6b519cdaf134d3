// The high-availability overlay (config/kubernetes/overlays/ha-postgresql)
// as `kubectl kustomize` renders it: two replicas on different nodes, a
// disruption budget that keeps one, a priority class of its own, a rolling
// update that never takes both down, the audit store in PostgreSQL with no
// ReadWriteOnce volume, and a daemon configuration the daemon's loader
// accepts with leader election on.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <string>
#include <vector>

#include "gpuscaler/daemon/config.h"
#include "tests/kube/tools.h"

namespace gpuscaler::kube_test::ha_manifests {
namespace {

namespace fs = std::filesystem;

const fs::path kHaOverlay = "config/kubernetes/overlays/ha-postgresql";

std::string Text(const YAML::Node& n) { return n ? n.as<std::string>("") : ""; }

class HaManifests : public ::testing::Test {
 protected:
  void SetUp() override {
    GPUSCALER_REQUIRE_TOOL(kubectl, "kubectl");
    objects_ = Kustomize(kubectl, SourceDir() / kHaOverlay);
    ASSERT_FALSE(objects_.empty());
    deployment_ = FindObject(objects_, "Deployment", "gpuscaler");
    ASSERT_TRUE(deployment_);
  }

  YAML::Node PodSpec() const { return deployment_["spec"]["template"]["spec"]; }

  std::vector<YAML::Node> objects_;
  YAML::Node deployment_;
};

TEST_F(HaManifests, TwoReplicasOnDifferentNodesRolledOneAtATime) {
  EXPECT_EQ(deployment_["spec"]["replicas"].as<int>(), 2);
  const YAML::Node strategy = deployment_["spec"]["strategy"];
  EXPECT_EQ(Text(strategy["type"]), "RollingUpdate");
  EXPECT_EQ(strategy["rollingUpdate"]["maxUnavailable"].as<int>(), 1);
  EXPECT_EQ(strategy["rollingUpdate"]["maxSurge"].as<int>(), 0);
  const YAML::Node required = PodSpec()["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"];
  ASSERT_TRUE(required && required.size() == 1);
  EXPECT_EQ(Text(required[0]["topologyKey"]), "kubernetes.io/hostname");
  // The anti-affinity selects the Deployment's own pods.
  const YAML::Node pod_labels = deployment_["spec"]["template"]["metadata"]["labels"];
  for (const auto& kv : required[0]["labelSelector"]["matchLabels"]) {
    EXPECT_EQ(Text(pod_labels[kv.first.as<std::string>()]), kv.second.as<std::string>());
  }
  // The base's rule stays: never on a node gpuscaler launched.
  EXPECT_TRUE(PodSpec()["affinity"]["nodeAffinity"]);
}

TEST_F(HaManifests, ABudgetKeepsOneReplicaAndAPriorityClassOfItsOwnOutranksWorkloads) {
  const YAML::Node pdb = FindObject(objects_, "PodDisruptionBudget", "gpuscaler");
  ASSERT_TRUE(pdb);
  EXPECT_EQ(pdb["spec"]["minAvailable"].as<int>(), 1);
  const YAML::Node pod_labels = deployment_["spec"]["template"]["metadata"]["labels"];
  for (const auto& kv : pdb["spec"]["selector"]["matchLabels"]) {
    EXPECT_EQ(Text(pod_labels[kv.first.as<std::string>()]), kv.second.as<std::string>());
  }
  const std::string class_name = Text(PodSpec()["priorityClassName"]);
  ASSERT_EQ(class_name, "gpuscaler-critical");
  const YAML::Node priority = FindObject(objects_, "PriorityClass", class_name);
  ASSERT_TRUE(priority) << "the class the pods name is rendered with them";
  EXPECT_FALSE(priority["metadata"]["namespace"]) << "PriorityClass is cluster-scoped";
  // At the top of the user range, below the system-* classes (2e9).
  EXPECT_EQ(priority["value"].as<int64_t>(), 1000000000);
  EXPECT_FALSE(priority["globalDefault"].as<bool>());
}

TEST_F(HaManifests, TheStoreIsPostgresqlWithNoReadWriteOnceVolumeAndLeaderElectionOn) {
  EXPECT_FALSE(FindObject(objects_, "PersistentVolumeClaim", "gpuscaler-audit"));
  bool postgres_secret = false;
  for (const YAML::Node& v : PodSpec()["volumes"]) {
    EXPECT_FALSE(v["persistentVolumeClaim"]) << Text(v["name"]);
    if (v["secret"] && Text(v["secret"]["secretName"]) == "gpuscaler-postgres") postgres_secret = true;
  }
  EXPECT_TRUE(postgres_secret);
  const YAML::Node cm = FindObject(objects_, "ConfigMap", "gpuscaler-config", /*hashed=*/true);
  ASSERT_TRUE(cm);
  TempDir dir;
  const fs::path file = dir.path() / "gpuscaler.yaml";
  WriteFile(file, Text(cm["data"]["gpuscaler.yaml"]));
  Result<daemon::DaemonConfig> config = daemon::LoadDaemonConfig(file.string());
  ASSERT_TRUE(config.ok()) << config.error().message();
  EXPECT_EQ(config->db_file.rfind("postgresql://", 0), 0u) << config->db_file;
  EXPECT_TRUE(config->kubernetes.enabled);
  EXPECT_TRUE(config->kubernetes.leader_election.enabled);
  // The password file is on the Secret's mount.
  bool mounted = false;
  for (const YAML::Node& m : PodSpec()["containers"][0]["volumeMounts"]) {
    if (Text(m["name"]) == "postgres" && Text(m["mountPath"]) == "/etc/gpuscaler/postgres") mounted = true;
  }
  EXPECT_TRUE(mounted);
  EXPECT_NE(Text(cm["data"]["gpuscaler.yaml"]).find("db_password_file: /etc/gpuscaler/postgres/password"),
            std::string::npos);
  // Egress to the database's port is allowed beside the base's rules.
  const YAML::Node egress = FindObject(objects_, "NetworkPolicy", "gpuscaler-postgresql");
  ASSERT_TRUE(egress);
  EXPECT_EQ(egress["spec"]["egress"][0]["ports"][0]["port"].as<int>(), 5432);
}

}  // namespace
}  // namespace gpuscaler::kube_test::ha_manifests
