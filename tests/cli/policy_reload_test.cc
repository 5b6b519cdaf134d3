// `gpuscaler run --config`, run as a process on the simulated cloud: a
// policy file replaced by an alias bomb or by an oversized file while the
// daemon runs is rejected like any invalid policy (the old one stays in
// force, the error is logged and served), and the daemon's memory stays
// small (the Kubernetes manifests give it 1 GiB).
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>

#include "cli/http_get.h"
#include "cli/process.h"
#include "support/alias_bomb.h"

namespace gpuscaler::testing {
namespace {

using namespace std::chrono_literals;

std::string GoodPolicy() {
  return "apiVersion: gpuscaler/v1\nkind: Policy\nname: good\npools:\n  - name: gpu\n    max_nodes: 5\n"
         "classes:\n  - name: batch\n    pools: [gpu]\n";
}

// Peak resident memory of process `pid` in KiB (VmHWM), or -1.
long PeakRssKib(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

class PolicyReloadProcess : public CliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    Write("policy.yaml", GoodPolicy());
    Write("gpuscaler.yaml",
          "apiVersion: gpuscaler/v1\nkind: DaemonConfig\ncluster_name: test\npolicy: policy.yaml\n"
          "catalog: " +
              std::string(GPUSCALER_SOURCE_DIR) +
              "/config/catalogs/aws.yaml\n"
              "regions: [us-east-1]\ndb: audit.db\nlisten: 127.0.0.1:0\ncloud: {provider: simulated}\n");
    daemon_ = std::make_unique<ChildProcess>(
        std::vector<std::string>{GPUSCALER_BINARY, "run", "--config", (dir_ / "gpuscaler.yaml").string(),
                                 "--port-file", (dir_ / "port").string(), "--tick-interval-ms", "50"},
        dir_ / "out.log", dir_ / "err.log");
    ASSERT_TRUE(daemon_->started());
    port_ = WaitForPortFile(dir_ / "port", 30s);
    ASSERT_NE(port_, 0) << DaemonLog();
  }
  void TearDown() override {
    if (daemon_) {
      daemon_->Signal(SIGTERM);
      EXPECT_EQ(daemon_->Wait(20s).value_or(-1), 0) << DaemonLog();
    }
    CliTest::TearDown();
  }
  std::string DaemonLog() { return ReadAll(dir_ / "err.log"); }
  // Replaces the policy by a rename, as the kubelet swaps a ConfigMap: the
  // daemon never sees it half written.
  void ReplacePolicy(const std::string& text) {
    Write("policy.yaml.new", text);
    std::filesystem::rename(dir_ / "policy.yaml.new", dir_ / "policy.yaml");
  }
  nlohmann::json Policy() {
    const HttpReply r = HttpGet(port_, "/api/v1/policy");
    return r.status == 200 ? nlohmann::json::parse(r.body) : nlohmann::json();
  }
  // Polls /api/v1/policy every 50 ms, for up to 30 s, until `done` holds.
  template <typename Done>
  nlohmann::json WaitForPolicy(Done done) {
    nlohmann::json p;
    for (int i = 0; i < 600; ++i) {
      p = Policy();
      if (p.is_object() && done(p)) break;
      std::this_thread::sleep_for(50ms);
    }
    return p;
  }

  std::unique_ptr<ChildProcess> daemon_;
  uint16_t port_ = 0;
};

TEST_F(PolicyReloadProcess, AnAliasBombOrAnOversizedFileIsRejectedAndTheDaemonKeepsItsPolicyAndItsMemory) {
  // The policy is published with the first tick.
  const nlohmann::json before = WaitForPolicy([](const nlohmann::json& p) { return p.contains("name"); });
  ASSERT_EQ(before["name"], "good") << before.dump() << DaemonLog();

  const std::string file = (dir_ / "policy.yaml").string();
  ReplacePolicy(AliasBombPolicy(7));
  nlohmann::json after = WaitForPolicy([](const nlohmann::json& p) { return p["rejections"] == 1; });
  ASSERT_EQ(after["rejections"], 1) << after.dump() << DaemonLog();
  EXPECT_EQ(after["name"], "good");
  EXPECT_EQ(after["hash"], before["hash"]);
  EXPECT_EQ(after["last_rejection"],
            file +
                ":9:12: f[1]: alias *e (111111 nodes) takes the document past 250000 nodes, "
                "the cap for a configuration document with its aliases expanded");
  EXPECT_NE(DaemonLog().find("policy reload rejected"), std::string::npos) << DaemonLog();

  const std::string big = GoodPolicy() + "# " + std::string(5 << 20, 'x') + "\n";
  ReplacePolicy(big);
  after = WaitForPolicy([](const nlohmann::json& p) { return p["rejections"] == 2; });
  ASSERT_EQ(after["rejections"], 2) << after.dump() << DaemonLog();
  EXPECT_EQ(after["hash"], before["hash"]);
  EXPECT_EQ(after["last_rejection"],
            file + " is " + std::to_string(big.size()) +
                " bytes, more than the 4194304 bytes (4 MiB) a configuration file may have");

  // The daemon itself is some tens of MB; the bomb expanded was 1 to 2 GB.
  const long peak = PeakRssKib(daemon_->pid());
  EXPECT_GT(peak, 0);
  EXPECT_LT(peak, 200 * 1024) << "KiB";
}

}  // namespace
}  // namespace gpuscaler::testing
