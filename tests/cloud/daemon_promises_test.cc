// Promises the daemon keeps on the production path, checked as processes:
// the daemon binary (provider aws) against `gpuscaler cloud-emulator`, read
// back with the real `aws` CLI as an independent client.
//  - A hard budget holds through the capacity-error fallback: with no spot
//    capacity, a fallback to on-demand that would break the cap is not sent.
//  - Two installations (their own cluster_name, database and policy) on one
//    account never list or terminate each other's instances, and no
//    ClientToken repeats.
#include <gtest/gtest.h>

#include <set>

#include "cloud/aws_cli_harness.h"
#include "cloud/daemon_harness.h"
#include "gpuscaler/store/audit_reader.h"

namespace gpuscaler::testing {
namespace {

constexpr int kTickMs = 200;

// Live instances as the aws CLI sees them: id -> (lifecycle, cluster tag).
struct CliInstance {
  std::string lifecycle;  // "spot" or "" (on-demand)
  std::string cluster;
};

class DaemonPromises : public AwsCliTest {
 protected:
  void TearDown() override {
    for (auto& d : daemons_) {
      if (d) {
        d->Signal(SIGTERM);
        d->Wait(60s);
      }
    }
    daemons_.clear();
    AwsCliTest::TearDown();
  }

  // Starts a daemon in its own folder (config, policy, audit.db).
  ChildProcess& Start(const std::string& name, const std::string& cluster, const std::string& policy,
                      const QueueDepthServer& prometheus) {
    const std::filesystem::path d = dir_ / name;
    std::filesystem::create_directories(d);
    std::ofstream(d / "policy.yaml") << policy;
    std::string config = DaemonConfigYaml(emulator_->url(), prometheus.url());
    config.replace(config.find("cluster_name: test"), std::string("cluster_name: test").size(),
                   "cluster_name: " + cluster);
    std::ofstream(d / "gpuscaler.yaml") << config;
    daemons_.push_back(StartDaemon(d, kTickMs, "", 1));
    EXPECT_TRUE(Eventually([&] { return std::filesystem::exists(d / "daemon.port"); }, 30s))
        << ReadAll(d / "daemon1.err");
    return *daemons_.back();
  }

  std::map<std::string, CliInstance> LiveByCli() {
    std::map<std::string, CliInstance> out;
    Run r = Aws({"ec2", "describe-instances", "--filters", "Name=instance-state-name,Values=pending,running"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    for (const json& res : r.out.value("Reservations", json::array())) {
      for (const json& i : res.value("Instances", json::array())) {
        CliInstance c;
        c.lifecycle = i.value("InstanceLifecycle", "");
        for (const json& t : i.value("Tags", json::array())) {
          if (t.value("Key", "") == kClusterTag) c.cluster = t.value("Value", "");
        }
        out[i.value("InstanceId", "")] = c;
      }
    }
    return out;
  }

  std::vector<std::unique_ptr<ChildProcess>> daemons_;
};

class HardBudget : public DaemonPromises {
 protected:
  std::string Scenario() const override {
    return "zones: [us-east-1a, us-east-1b]\nlaunch_latency: 1s\n"
           "capacity:\n  - {instance_type: g5.xlarge, zone: us-east-1a, capacity_type: spot, limit: 0}\n";
  }
};

// One pool of g5.xlarge in us-east-1a, spot allowed, a hard cap of $1.00/h,
// demand for 2 nodes: the planner plans 2 spot ($0.82/h); the spot launch
// fails; 2 on-demand ($2.01/h) would break the cap and are never launched.
TEST_F(HardBudget, HoldsThroughTheCapacityErrorFallback) {
  std::string policy = PolicyYaml("[spot, on-demand]", true);
  policy.replace(policy.find("zones: [us-east-1a, us-east-1b]"), std::string("zones: [us-east-1a, us-east-1b]").size(),
                 "zones: [us-east-1a]");
  policy += "budget:\n  global: {hourly_usd: 1.0, hard: true}\n";
  QueueDepthServer prometheus(10);
  Start("a", "budget-test", policy, prometheus);
  auto create_fleets = [&] {
    int n = 0;
    for (const nlohmann::json& r : emulator_->Requests()) n += r["action"] == "CreateFleet";
    return n;
  };
  ASSERT_TRUE(Eventually([&] { return create_fleets() >= 1; }, 30s)) << ReadAll(dir_ / "a" / "daemon1.err");
  ASSERT_TRUE(WaitForMoreDaemonTicks(dir_ / "a", 15)) << ReadAll(dir_ / "a" / "daemon1.err");
  EXPECT_TRUE(LiveByCli().empty()) << "an instance was launched past the hard budget";

  // The audit row of the spot launch says what was not sent, and why.
  Result<std::unique_ptr<AuditReader>> reader = AuditReader::Open((dir_ / "a" / "audit.db").string());
  ASSERT_TRUE(reader.ok()) << reader.error().ToString();
  Result<std::vector<DecisionRow>> decisions = (*reader)->DecisionsAfterId(0, 1000);
  ASSERT_TRUE(decisions.ok());
  std::string reasons;
  for (const DecisionRow& d : *decisions) {
    Result<std::vector<ActionRow>> actions = (*reader)->ActionsForDecision(d.id);
    ASSERT_TRUE(actions.ok()) << actions.error().ToString();
    for (const ActionRow& a : *actions) reasons += a.action.reason + "\n";
  }
  EXPECT_NE(reasons.find("not sent: 2 x g5.xlarge/us-east-1a/on-demand"), std::string::npos) << reasons;
  EXPECT_NE(reasons.find("would exceed the hard global budget"), std::string::npos) << reasons;
}

class TwoInstallations : public DaemonPromises {
 protected:
  std::string Scenario() const override { return "zones: [us-east-1a, us-east-1b]\nlaunch_latency: 1s\n"; }
};

TEST_F(TwoInstallations, NeverTouchEachOthersInstancesAndNeverShareAClientToken) {
  QueueDepthServer demand_a(10);  // 2 nodes
  QueueDepthServer demand_b(5);   // 1 node
  Start("a", "cluster-a", PolicyYaml("[on-demand]", false), demand_a);
  Start("b", "cluster-b", PolicyYaml("[on-demand]", false), demand_b);
  ASSERT_TRUE(Eventually([&] { return LiveByCli().size() == 3; }, 60s)) << ReadAll(dir_ / "b" / "daemon1.err");
  std::map<std::string, int> per_cluster;
  std::set<std::string> a_instances;
  for (const auto& [id, i] : LiveByCli()) {
    ++per_cluster[i.cluster];
    if (i.cluster == "cluster-a") a_instances.insert(id);
  }
  EXPECT_EQ(per_cluster["cluster-a"], 2);
  EXPECT_EQ(per_cluster["cluster-b"], 1);

  // B's demand goes away: B removes its own node, and only that one.
  demand_b.Set(0);
  ASSERT_TRUE(Eventually([&] { return LiveByCli().size() == 2; }, 60s)) << ReadAll(dir_ / "b" / "daemon1.err");
  // Ten more ticks of each daemon, counted from now for both.
  const uint16_t port_a = DaemonPort(dir_ / "a"), port_b = DaemonPort(dir_ / "b");
  const std::optional<int64_t> ticks_a = DaemonTicks(port_a), ticks_b = DaemonTicks(port_b);
  ASSERT_TRUE(ticks_a.has_value() && ticks_b.has_value()) << ReadAll(dir_ / "b" / "daemon1.err");
  ASSERT_TRUE(WaitForTicks(port_b, *ticks_b + 10, 60s)) << ReadAll(dir_ / "b" / "daemon1.err");
  ASSERT_TRUE(WaitForTicks(port_a, *ticks_a + 10, 60s)) << ReadAll(dir_ / "a" / "daemon1.err");
  std::set<std::string> live;
  for (const auto& [id, i] : LiveByCli()) live.insert(id);
  EXPECT_EQ(live, a_instances);

  std::set<std::string> tokens;
  int fleets = 0;
  for (const nlohmann::json& r : emulator_->Requests()) {
    if (r["action"] != "CreateFleet") continue;
    ++fleets;
    const std::string token = r["client_token"];
    EXPECT_LE(token.size(), 64u) << token;
    EXPECT_TRUE(token.rfind("cluster-a-", 0) == 0 || token.rfind("cluster-b-", 0) == 0) << token;
    tokens.insert(token);
  }
  EXPECT_GE(fleets, 2);
  EXPECT_EQ(static_cast<int>(tokens.size()), fleets) << "a ClientToken was sent twice";
}

}  // namespace
}  // namespace gpuscaler::testing
