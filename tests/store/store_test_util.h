// Helpers for the audit store tests: a temporary directory per test, and
// records with every field set.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "gpuscaler/store/audit_store.h"

namespace gpuscaler::testing_store {

// A fresh directory under the test temp dir, removed at the end of the test.
class TempDir {
 public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = std::filesystem::path(::testing::TempDir()) /
            ("gpuscaler_store_" + std::to_string(::getpid()) + "_" + info->test_suite_name() + "_" + info->name());
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string File(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

inline WallTime T(int64_t unix_seconds) { return FromUnixSeconds(unix_seconds); }

inline Offering SpotOffering() {
  Offering o;
  o.instance_type = "g5.12xlarge";
  o.region = "us-east-1";
  o.zone = "us-east-1b";
  o.capacity_type = CapacityType::kSpot;
  o.usd_per_hour = 2.2345;
  o.on_demand_usd_per_hour = 5.672;
  o.interruptions_per_hour = 0.015;
  return o;
}

inline DecisionRecord FullDecision(int64_t unix_seconds) {
  DecisionRecord d;
  d.time = T(unix_seconds);
  d.source = "sim:cheapest";
  d.policy_name = "render-farm";
  d.policy_hash = "sha256:0f1e2d";
  d.pending_units = 17;
  d.nodes = 4;
  d.signals_json = R"({"queue_depth":{"value":120,"age_s":3,"stale":false}})";
  d.snapshot_summary_json = R"({"pods":17})";
  d.plan_json = R"({"launches":[{"offering":"g5.12xlarge/us-east-1b/spot","count":1}]})";
  d.summary = "launch 1 × g5.12xlarge spot for render";
  d.cost_before_usd_per_hour = 12.5;
  d.cost_after_usd_per_hour = 14.7345;
  d.expected_interruption_usd_per_hour = 0.031;
  d.scale_down_blocked = true;
  return d;
}

inline ActionRecord LaunchAction(int64_t decision_id, const std::string& token) {
  ActionRecord a;
  a.decision_id = decision_id;
  a.kind = ActionKind::kLaunch;
  a.idempotency_token = token;
  a.pool = "render";
  a.offering = SpotOffering();
  a.count = 2;
  a.reason = "queue render: 120 jobs, wait target 5m";
  return a;
}

inline NodeLaunchRecord NodeLaunch(const std::string& instance_id, int64_t decision_id, int64_t launch) {
  NodeLaunchRecord n;
  n.instance_id = instance_id;
  n.node_id = "ip-10-0-1-" + instance_id;
  n.pool = "render";
  n.offering = SpotOffering();
  n.gpu_count = 4;
  n.launch_time = T(launch);
  n.decision_id = decision_id;
  n.reason = "queue render";
  return n;
}

}  // namespace gpuscaler::testing_store
