// What the tests of the Kubernetes manifests share (base_manifests,
// cloud_overlay_manifests, daemon_config_example and sweep_job_test.cc): the
// kustomize trees under config/kubernetes, Str (a YAML scalar as text, "" when
// absent), and Manifests, a fixture that renders `kubectl kustomize
// config/kubernetes` once per test (skipped without kubectl) and reads the
// daemon configuration a rendering ships with the daemon's own loader.
#pragma once

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <string>
#include <vector>

#include "gpuscaler/daemon/config.h"
#include "kube/tools.h"

namespace gpuscaler::kube_test::manifests_testing {

namespace fs = std::filesystem;

inline const fs::path kRoot = "config/kubernetes";
inline const fs::path kBase = "config/kubernetes/base";
inline const fs::path kGkeOverlay = "config/kubernetes/overlays/gke";

inline std::string Str(const YAML::Node& n) { return n ? n.as<std::string>("") : ""; }

class Manifests : public ::testing::Test {
 protected:
  void SetUp() override {
    GPUSCALER_REQUIRE_TOOL(kubectl, "kubectl");
    kubectl_ = kubectl;
    root_ = Kustomize(kubectl_, SourceDir() / kRoot);
    ASSERT_FALSE(root_.empty());
  }

  std::vector<YAML::Node> RenderBase() { return Kustomize(kubectl_, SourceDir() / kBase); }

  YAML::Node Deployment(const std::vector<YAML::Node>& objects) { return FindObject(objects, "Deployment", "gpuscaler"); }

  // The daemon configuration the rendered ConfigMap carries, loaded with the
  // daemon's own loader.
  daemon::DaemonConfig RenderedDaemonConfig(const std::vector<YAML::Node>& objects) {
    const YAML::Node cm = FindObject(objects, "ConfigMap", "gpuscaler-config", /*hashed=*/true);
    EXPECT_TRUE(cm) << "no gpuscaler-config ConfigMap";
    TempDir dir;
    const fs::path file = dir.path() / "gpuscaler.yaml";
    WriteFile(file, Str(cm["data"]["gpuscaler.yaml"]));
    Result<daemon::DaemonConfig> config = daemon::LoadDaemonConfig(file.string());
    EXPECT_TRUE(config.ok()) << (config.ok() ? "" : config.error().message());
    return config.ok() ? *config : daemon::DaemonConfig{};
  }

  fs::path kubectl_;
  std::vector<YAML::Node> root_;
};

}  // namespace gpuscaler::kube_test::manifests_testing
