// The crash campaign: the daemon (provider aws, ticks every 100 ms)
// scales a pool against `gpuscaler cloud-emulator` while the demand changes
// at every run, and is killed with SIGKILL at a random point — half of the
// runs at a random failpoint of the actuation path (controller/failpoint.h,
// a random occurrence 1..2), half after a random wall time (from the
// exec to ~10 ticks after the daemon listens) — then started
// again. One cloud and one audit database across all runs, as in a
// deployment that keeps crashing. After every run the invariants that must
// hold at every instant are checked; at the end a clean daemon settles the
// fleet and everything is checked. It prints
//   crash campaign: runs=N duplicate_launches=0 untracked_instances=0 lost_audit_rows=0 …
// (figures in bench/RESULTS.md, method in docs/reliability.md "Crash safety").
//
// GPUSCALER_CRASH_RUNS (default 200) and GPUSCALER_CRASH_SEED (default 1)
// change the campaign; the seed is printed, and a failure names the run.
#include <gtest/gtest.h>

#include <cstdio>
#include <random>

#include "cloud/crash_campaign.h"
#include "cloud/daemon_harness.h"
#include "gpuscaler/controller/failpoint.h"

namespace gpuscaler::testing {
namespace {

constexpr int kTickMs = 100;
constexpr int kJobsPerNode = 5;  // PolicyYaml: 5 queued jobs per one-GPU node


TEST(Failpoint, ArmingChecksTheNameAndTheCount) {
  EXPECT_TRUE(failpoint::Arm("launch.after_call").ok());
  EXPECT_TRUE(failpoint::Arm("tick.after_commit:3").ok());
  failpoint::Disarm();
  for (const char* bad : {"launch.after", "launch.after_call:0", "launch.after_call:x", "launch.after_call:2x", ""}) {
    SCOPED_TRACE(bad);
    Status s = failpoint::Arm(bad);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.error().category(), ErrorCategory::kConfig);
  }
  failpoint::Check("launch.after_call");  // unarmed: nothing happens
}

TEST(FailpointDeathTest, TheNthHitOfTheArmedPointIsASigkill) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        if (!failpoint::Arm("launch.after_call:3").ok()) std::_Exit(3);
        failpoint::Check("launch.before_call");  // other points do not count
        failpoint::Check("launch.after_call");
        failpoint::Check("launch.after_call");
        std::fprintf(stderr, "survived two hits\n");
        failpoint::Check("launch.after_call");
        std::_Exit(0);
      },
      ::testing::KilledBySignal(SIGKILL), "survived two hits");
}

class CrashCampaign : public CliTest {};

TEST_F(CrashCampaign, RandomSigkillsNeverDuplicateLoseOrLeaveUntracked) {
  EmulatorProcess emulator(dir_, "zones: [us-east-1a, us-east-1b]\nlaunch_latency: 1s\nterminate_latency: 1s\n"
                                 "terminated_visible: 24h\n");
  ASSERT_TRUE(emulator.ok()) << emulator.log();
  QueueDepthServer prometheus(0);
  Write("policy.yaml", PolicyYaml("[spot, on-demand]", true));
  Write("gpuscaler.yaml", DaemonConfigYaml(emulator.url(), prometheus.url()));
  CrashCampaignSetup setup;
  setup.dir = dir_;
  setup.cloud = &emulator;
  setup.prometheus = &prometheus;
  setup.runs = EnvInt("GPUSCALER_CRASH_RUNS", 200);
  setup.seed = static_cast<uint64_t>(EnvInt("GPUSCALER_CRASH_SEED", 1));
  setup.tick_ms = kTickMs;
  setup.jobs_per_node = kJobsPerNode;
  setup.start = [&](const std::string& failpoint, int run) { return StartDaemon(dir_, kTickMs, failpoint, run); };
  RunCrashCampaign(setup);
}

}  // namespace
}  // namespace gpuscaler::testing
