// The crash campaign, for any emulated cloud: the daemon (ticks every
// 100 ms) scales a pool against an emulator while the demand changes at
// every run, and is killed with SIGKILL at a random point — half of the runs
// at a random failpoint of the actuation path (controller/failpoint.h, a
// random occurrence 1..2), half after a random wall time (from the exec to
// ~10 ticks after the daemon listens) — then started again. One cloud and
// one audit database across all runs, as in a deployment that keeps
// crashing. After every run the invariants that must hold at every instant
// are checked; at the end a clean daemon settles the fleet and everything is
// checked. It prints
//   <name>: runs=N duplicate_launches=0 untracked_instances=0 lost_audit_rows=0 …
// (figures in bench/RESULTS.md, method in docs/reliability.md "Crash safety").
// crash_campaign_test.cc runs it against the EC2 emulator,
// gcp_daemon_test.cc against the Compute Engine one.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <functional>
#include <random>

#include "cloud/daemon_harness.h"
#include "gpuscaler/controller/failpoint.h"

namespace gpuscaler::testing {

struct CrashCampaignSetup {
  std::string name = "crash campaign";  // the printed lines start with it
  std::filesystem::path dir;            // the daemon's folder: gpuscaler.yaml, policy.yaml, audit.db
  EmulatedCloud* cloud = nullptr;
  QueueDepthServer* prometheus = nullptr;
  int runs = 200;
  uint64_t seed = 1;
  int tick_ms = 100;
  int jobs_per_node = 5;  // queued jobs that ask for one node
  // Starts the daemon in `dir` (StartDaemon, with the environment the
  // cloud's credentials need), armed with `failpoint` when not empty.
  std::function<std::unique_ptr<ChildProcess>(const std::string& failpoint, int run)> start;
};

inline void RunCrashCampaign(const CrashCampaignSetup& c) {
  const int runs = c.runs;
  const uint64_t seed = c.seed;
  const std::filesystem::path& dir = c.dir;
  EmulatedCloud& emulator = *c.cloud;
  QueueDepthServer& prometheus = *c.prometheus;
  const char* name = c.name.c_str();
  std::mt19937_64 rng(seed);
  std::printf("%s: seed=%llu runs=%d\n", name, static_cast<unsigned long long>(seed), runs);
  const std::string db = (dir / "audit.db").string();
  const std::vector<std::string>& points = failpoint::Names();

  // Kill windows scale with how long a start takes here (a sanitizer build
  // on a loaded machine starts several times slower), so that the runs reach
  // the ticks and not only the start-up.
  int64_t startup_ms = 0;
  {
    const auto t0 = std::chrono::steady_clock::now();
    std::unique_ptr<ChildProcess> probe = c.start("", 0);
    ASSERT_NE(WaitForPortFile(dir / "daemon.port", 60s), 0) << ReadAll(dir / "daemon0.err");
    startup_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
    probe->Signal(SIGTERM);
    ASSERT_EQ(probe->Wait(60s).value_or(-1), 0) << ReadAll(dir / "daemon0.err");
  }
  std::printf("%s: the daemon starts listening in %lld ms\n", name, static_cast<long long>(startup_ms));

  const auto started = std::chrono::steady_clock::now();
  int failpoint_kills = 0, timer_kills = 0, clean_exits = 0;
  int target = 0;
  int open_intents = 0;  // left by the previous run
  for (int run = 1; run <= runs; ++run) {
    // A new demand each run, so that runs launch and terminate.
    const int previous = target;
    while (target == previous) target = static_cast<int>(rng() % 6);
    prometheus.Set(target * c.jobs_per_node);
    const bool by_failpoint = rng() % 2 == 0;
    std::string point;
    if (by_failpoint) {
      // Points this run can reach: launches when the demand grew, removals
      // when it shrank, the tick's commit always, a restart's reconciliation
      // when the previous run left intents open.
      std::vector<std::string> reachable;
      for (const std::string& p : points) {
        const bool launch = p.rfind("launch.", 0) == 0, terminate = p.rfind("terminate.", 0) == 0;
        const bool recover = p.rfind("recover.", 0) == 0;
        if ((launch && target > previous) || (terminate && target < previous) || p.rfind("tick.", 0) == 0 ||
            (recover && open_intents > 0))
          reachable.push_back(p);
      }
      point = reachable[rng() % reachable.size()] + ":" + std::to_string(1 + rng() % 2);
    }
    // Without a failpoint: dead anywhere from the exec to ~10 ticks after the
    // start. With one: killed by the test if it was not reached by then.
    const auto deadline = std::chrono::milliseconds(
        by_failpoint ? startup_ms + 1500 : static_cast<int64_t>(rng() % (startup_ms + 1000)));
    std::unique_ptr<ChildProcess> daemon = c.start(point, run % 2);
    ASSERT_TRUE(daemon->started());
    std::optional<int> code = daemon->Wait(deadline);
    if (code) {
      if (*code == 128 + SIGKILL) {
        ++failpoint_kills;
      } else {
        ++clean_exits;  // a start-up failure: shown below
        ADD_FAILURE() << "run " << run << " (seed " << seed << "): the daemon exited " << *code << "\n"
                      << ReadAll(dir / ("daemon" + std::to_string(run % 2) + ".err"));
      }
    } else {
      daemon->Signal(SIGKILL);
      daemon->Wait(30s);
      ++timer_kills;
    }
    std::string error;
    std::optional<std::vector<CloudInstance>> cloud = emulator.Instances(&error);
    ASSERT_TRUE(cloud.has_value()) << error;
    const CrashAudit now = AuditCloudAgainstStore(*cloud, db, /*settled=*/false);
    if (Result<std::unique_ptr<AuditReader>> reader = AuditReader::Open(db); reader.ok()) {
      Result<std::vector<ActionRow>> open = (*reader)->OpenIntents();
      open_intents = open.ok() ? static_cast<int>(open->size()) : 0;
    }
    ASSERT_EQ(now.duplicate_launches + now.lost_audit_rows, 0)
        << "run " << run << " (seed " << seed << ", failpoint '" << point << "'): " << now.Summary();
  }

  // A clean daemon settles the fleet on a final demand.
  const int final_nodes = 2;
  prometheus.Set(final_nodes * c.jobs_per_node);
  std::unique_ptr<ChildProcess> daemon = c.start("", runs + 1);
  const std::filesystem::path log = dir / ("daemon" + std::to_string(runs + 1) + ".err");
  auto settled = [&] {
    if (emulator.LiveCount() != final_nodes) return false;
    Result<std::unique_ptr<AuditReader>> reader = AuditReader::Open(db);
    if (!reader) return false;
    Result<std::vector<ActionRow>> open = (*reader)->OpenIntents();
    return open.ok() && open->empty();
  };
  ASSERT_TRUE(Eventually(settled, 120s)) << ReadAll(log);
  ASSERT_TRUE(WaitForMoreDaemonTicks(dir, 10)) << ReadAll(log);
  daemon->Signal(SIGTERM);
  EXPECT_EQ(daemon->Wait(60s).value_or(-1), 0) << ReadAll(log);

  std::optional<std::vector<CloudInstance>> cloud = emulator.Instances();
  ASSERT_TRUE(cloud.has_value());
  const CrashAudit audit = AuditCloudAgainstStore(*cloud, db, /*settled=*/true);
  int launched = 0, ended = 0;
  for (const CloudInstance& i : *cloud) {
    ++launched;
    ended += i.live() ? 0 : 1;
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::printf(
      "%s: runs=%d duplicate_launches=%d untracked_instances=%d lost_audit_rows=%d "
      "(failpoint kills %d, timer kills %d, instances launched %d, terminated %d, final fleet %d of %d "
      "planned, "
      "pending intents %d, %.0f s, seed %llu)\n",
      name, runs, audit.duplicate_launches, audit.untracked_instances, audit.lost_audit_rows, failpoint_kills,
      timer_kills, launched, ended, audit.live, final_nodes, audit.pending_actions, seconds,
      static_cast<unsigned long long>(seed));
  EXPECT_EQ(clean_exits, 0);
  EXPECT_EQ(audit.live, final_nodes) << audit.Summary();
  EXPECT_EQ(audit.duplicate_launches, 0) << audit.Summary();
  EXPECT_EQ(audit.untracked_instances, 0) << audit.Summary();
  EXPECT_EQ(audit.lost_audit_rows, 0) << audit.Summary();
  EXPECT_EQ(audit.pending_actions, 0) << audit.Summary();
  // The campaign must have exercised both kinds of kill and real actuation.
  EXPECT_GT(failpoint_kills, runs / 10);
  EXPECT_GT(timer_kills, runs / 10);
  EXPECT_GT(launched, runs / 4);
  EXPECT_GT(ended, runs / 8);
}

}  // namespace gpuscaler::testing
