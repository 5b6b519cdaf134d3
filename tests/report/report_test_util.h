// Helpers for the report tests: a temp dir, an RFC 4180 CSV reader, and the
// small committed scenario (an audit database written with the store API).
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "gpuscaler/report/report.h"
#include "gpuscaler/store/sqlite_audit_store.h"
#include "report/csv.h"

namespace gpuscaler::report::testing {

class TempDir {
 public:
  TempDir() {
    std::random_device rd;
    path_ = std::filesystem::path(::testing::TempDir()) / ("report-" + std::to_string(rd()) + "-" + std::to_string(rd()));
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

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

inline WallTime T(const char* rfc3339) {
  WallTime t;
  EXPECT_TRUE(ParseRfc3339(rfc3339, &t)) << rfc3339;
  return t;
}

inline Offering MakeOffering(const char* type, const char* zone, CapacityType ct, double usd, double od) {
  Offering o;
  o.instance_type = type;
  o.region = "us-east-1";
  o.zone = zone;
  o.capacity_type = ct;
  o.usd_per_hour = usd;
  o.on_demand_usd_per_hour = od;
  o.interruptions_per_hour = ct == CapacityType::kSpot ? 0.05 : 0;
  return o;
}

// The golden scenario, 2026-11-02 .. 2026-11-04 (docs/reports.md walks
// through it):
//  A  on-demand g5.12xlarge (4 GPUs, $5.672/h), 11-02 01:00 -> 11-03 07:00, terminated;
//     inference/search 2 GPUs 01:00-13:00, then training (no team) 4 GPUs to the end.
//  B  spot g5.12xlarge, $2.00/h from 02:00, $2.50/h from 10:00, interrupted 14:00;
//     training 3 GPUs on average 02:00-14:00, 60 % busy.
//  C  spot g5.xlarge (1 GPU, $0.40/h), lived 30 s: billed the 60 s minimum, idle.
//  D  on-demand g5.2xlarge (1 GPU, $1.212/h) found running since 11-01 22:00, still
//     running; inference/search 11-01 22:00 -> 11-02 04:00 (partly before the
//     range), then 11-02 04:00 -> 11-03 12:00, the last record (as_of).
// Expected total: A 30 h x 5.672 = 170.16; B 8 h x 2 + 4 h x 2.5 = 26;
// C 60 s x 0.40 = 0.00667; D 36 h x 1.212 = 43.632. Sum 239.798667.
inline constexpr double kGoldenTotalUsd = 170.16 + 26.0 + 0.4 / 60.0 + 43.632;

inline void WriteGoldenScenario(const std::string& path) {
  Result<std::unique_ptr<SqliteAuditStore>> opened = SqliteAuditStore::Open(path);
  ASSERT_TRUE(opened.ok()) << opened.error().ToString();
  SqliteAuditStore& store = **opened;
  ASSERT_TRUE(store.BeginRun({"golden", "daemon", "h1", T("2026-11-01T22:00:00Z")}).ok());
  ASSERT_TRUE(store.BeginTick().ok());
  DecisionRecord d1;
  d1.time = T("2026-11-02T01:00:00Z");
  d1.policy_name = "golden";
  d1.policy_hash = "h1";
  d1.summary = "launch 1 x g5.12xlarge on-demand: inference queue 40 > target";
  Result<int64_t> id1 = store.RecordDecision(d1);
  ASSERT_TRUE(id1.ok());
  DecisionRecord d2 = d1;
  d2.time = T("2026-11-02T02:00:00Z");
  d2.summary = "launch 1 x g5.12xlarge spot, 1 x g5.xlarge spot: training backlog";
  Result<int64_t> id2 = store.RecordDecision(d2);
  ASSERT_TRUE(id2.ok());

  auto launch = [&](const char* id, const char* pool, Offering o, int gpus, const char* at, int64_t decision,
                    const char* reason) {
    NodeLaunchRecord n;
    n.instance_id = id;
    n.node_id = std::string("node-") + id;
    n.pool = pool;
    n.offering = std::move(o);
    n.gpu_count = gpus;
    n.launch_time = T(at);
    n.decision_id = decision;
    n.reason = reason;
    ASSERT_TRUE(store.RecordNodeLaunch(n).ok()) << id;
  };
  launch("i-a", "gpu-od", MakeOffering("g5.12xlarge", "us-east-1a", CapacityType::kOnDemand, 5.672, 5.672), 4,
         "2026-11-02T01:00:00Z", *id1, "inference queue over target, spot share for inference is 0");
  launch("i-b", "gpu-spot", MakeOffering("g5.12xlarge", "us-east-1b", CapacityType::kSpot, 2.0, 5.672), 4,
         "2026-11-02T02:00:00Z", *id2, "training backlog: cheapest expected cost, spot \"allowed\", 4 GPUs");
  launch("i-c", "gpu-spot", MakeOffering("g5.xlarge", "us-east-1b", CapacityType::kSpot, 0.40, 1.006), 1,
         "2026-11-02T05:00:00Z", *id2, "training backlog, small shape");
  launch("i-d", "gpu-od", MakeOffering("g5.2xlarge", "us-east-1a", CapacityType::kOnDemand, 1.212, 1.212), 1,
         "2026-11-01T22:00:00Z", 0, "found running, not launched by this controller");
  ASSERT_TRUE(store.RecordNodePrice("i-b", T("2026-11-02T10:00:00Z"), 2.5).ok());
  ASSERT_TRUE(store.RecordNodeEnd({"i-b", T("2026-11-02T14:00:00Z"), "interrupted"}).ok());
  ASSERT_TRUE(store.RecordNodeEnd({"i-c", T("2026-11-02T05:00:30Z"), "terminated"}).ok());
  ASSERT_TRUE(store.RecordNodeEnd({"i-a", T("2026-11-03T07:00:00Z"), "terminated"}).ok());
  auto usage = [](const char* id, const char* cls, const char* team, const char* from, const char* to, double gpus,
                  double busy_fraction) {
    UsageRecord u;
    u.instance_id = id;
    u.workload_class = cls;
    u.team = team;
    u.start = T(from);
    u.end = T(to);
    u.gpu_seconds_allocated = gpus * static_cast<double>((u.end - u.start).count());
    u.gpu_seconds_busy = u.gpu_seconds_allocated * busy_fraction;
    return u;
  };
  ASSERT_TRUE(store
                  .RecordUsage({
                      usage("i-a", "inference", "search", "2026-11-02T01:00:00Z", "2026-11-02T13:00:00Z", 2, 0.7),
                      usage("i-a", "training", "", "2026-11-02T13:00:00Z", "2026-11-03T07:00:00Z", 4, 0.9),
                      usage("i-b", "training", "", "2026-11-02T02:00:00Z", "2026-11-02T14:00:00Z", 3, 0.6),
                      usage("i-d", "inference", "search", "2026-11-01T22:00:00Z", "2026-11-02T04:00:00Z", 1, 0.5),
                      usage("i-d", "inference", "search", "2026-11-02T04:00:00Z", "2026-11-03T12:00:00Z", 1, 0.5),
                  })
                  .ok());
  ASSERT_TRUE(store.CommitTick().ok());
}

// The query of the golden files (as URL parameters).
inline std::map<std::string, std::string> GoldenParams(const char* format) {
  return {{"from", "2026-11-02"},         {"to", "2026-11-04"},
          {"format", format},             {"group_by", "team,capacity_type"},
          {"team_map", "training=research"}, {"budget_monthly_usd", "500"}};
}

}  // namespace gpuscaler::report::testing
