// Helpers of the Kubernetes tests: the recorded object shapes of
// ../shared/reference/kubernetes (read at test time, never copied into the
// repository) and a client pointed at a FakeApiServer.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>

#include "gpuscaler/kube/client.h"
#include "gpuscaler/policy/policy.h"
#include "kube/fake_api_server.h"

namespace gpuscaler::testing {

inline std::filesystem::path KubeReferenceDir() {
  return std::filesystem::path(GPUSCALER_SHARED_DIR) / "reference" / "kubernetes";
}

// The file's text, or nullopt when ../shared is absent (callers skip).
inline std::optional<std::string> ReadReference(const std::string& relative) {
  std::ifstream in(KubeReferenceDir() / relative, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

#define GPUSCALER_REFERENCE_JSON(var, relative)                                                    \
  std::optional<std::string> var##_text = ::gpuscaler::testing::ReadReference(relative);           \
  if (!var##_text) GTEST_SKIP() << "reference file " << relative << " absent (../shared missing)"; \
  nlohmann::json var = nlohmann::json::parse(*var##_text)

// One pool ("gpu") and one class ("training") that takes every pod.
inline Policy TrainingPolicy() {
  Policy p;
  NodePoolPolicy gpu;
  gpu.name = "gpu";
  p.pools = {gpu};
  WorkloadClassPolicy training;
  training.name = "training";
  p.classes = {training};
  return p;
}

// An object of tests/kube/testdata (the gang sources' shapes; see its README).
inline nlohmann::json KubeTestData(const std::string& name) {
  std::ifstream in(std::filesystem::path(GPUSCALER_SOURCE_DIR) / "tests" / "kube" / "testdata" / name);
  std::ostringstream s;
  s << in.rdbuf();
  return nlohmann::json::parse(s.str());
}

inline kube::ClusterConfig FakeClusterConfig(const FakeApiServer& server) {
  kube::ClusterConfig c;
  c.server = server.url();
  c.namespace_name = "gpuscaler";
  return c;
}

}  // namespace gpuscaler::testing
