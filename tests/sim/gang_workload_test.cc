// The workload's gangs: members start together once all are placed, stop
// together, and under kEachPod admission hold what they got meanwhile.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gpuscaler/model/builtin_catalog.h"
#include "sim/workload.h"

namespace gpuscaler::sim {
namespace {

const WallTime kT0 = FromUnixSeconds(1782000000);

// A gang "job" of `size` members of 4 GPUs, three hours of work, a
// checkpoint every 30 minutes, no restart cost.
Trace GangTrace(int size) {
  Trace trace;
  for (int k = 0; k < size; ++k) {
    TraceJob j;
    j.duration = Seconds(3 * 3600);
    j.unit.id = "job/" + std::to_string(k);
    j.unit.workload_class = "training";
    j.unit.gpus = 4;
    j.unit.checkpoint_interval = Seconds(1800);
    j.unit.restart_cost = Seconds(0);
    j.unit.gang = GangMembership{"job", size, /*same_zone=*/true, /*same_instance_type=*/false};
    trace.jobs.push_back(j);
  }
  return trace;
}

Instance G5Node(const std::string& id, const std::string& zone = "us-east-1a") {
  Instance node;
  node.instance_id = id;
  node.pool = "p";
  node.offering.instance_type = "g5.12xlarge";
  node.offering.zone = zone;
  node.offering.capacity_type = CapacityType::kSpot;
  return node;
}

struct GangScene {
  Catalog catalog = BuiltinCatalog();
  Trace trace;
  Workload work;
  GangScene(int size, GangAdmission admission)
      : trace(GangTrace(size)), work(trace, catalog, Policy{}, kT0) {
    work.SetGangAdmission(admission);
    work.RunEventsUntil(kT0);
  }
  void Ready(const Instance& node, WallTime at) {
    work.OnReady(node, 4);
    work.Schedule(at);
  }
};

TEST(GangWorkload, WholeAdmissionStartsAGangOnlyWhenEveryMemberFitsInOneZone) {
  GangScene s(2, GangAdmission::kWhole);
  s.Ready(G5Node("i-a1"), kT0);
  EXPECT_EQ(s.work.running(), 0) << "one node holds one member: nothing is placed";
  s.Ready(G5Node("i-b1", "us-east-1b"), kT0 + Seconds(60));
  EXPECT_EQ(s.work.running(), 0) << "two nodes, two zones";
  s.Ready(G5Node("i-a2"), kT0 + Seconds(120));
  ASSERT_EQ(s.work.running(), 2);
  EXPECT_EQ(s.work.RunningOn("i-b1").size(), 0u);
  EXPECT_EQ(s.work.stats().gang_starts, 1);
  EXPECT_EQ(*s.work.NextEventTime(), kT0 + Seconds(120 + 3 * 3600));
  s.work.RunEventsUntil(kT0 + Seconds(120 + 3 * 3600));
  EXPECT_EQ(s.work.stats().jobs_completed, 2);
  EXPECT_EQ(s.work.stats().partial_gang_idle_gpu_seconds, 0);
  EXPECT_EQ(s.work.GangWaits(kT0 + Seconds(86400)), std::vector<int64_t>{120});
}

TEST(GangWorkload, EachPodAdmissionHoldsTheGpusOfMembersPlacedBeforeTheRest) {
  GangScene s(2, GangAdmission::kEachPod);
  s.Ready(G5Node("i-a1"), kT0);
  EXPECT_EQ(s.work.running(), 1) << "placed alone, waiting at its rendezvous";
  EXPECT_EQ(s.work.RunningOn("i-a1").size(), 1u);
  ASSERT_EQ(s.work.Pending().size(), 1u);
  EXPECT_EQ(s.work.Pending()[0].zones, std::vector<std::string>{"us-east-1a"}) << "the placed member's zone";
  EXPECT_FALSE(s.work.NextEventTime()) << "no progress, no finish, while the gang waits";

  s.Ready(G5Node("i-b1", "us-east-1b"), kT0 + Seconds(600));
  EXPECT_EQ(s.work.running(), 1) << "the second member only goes to the first's zone";
  s.Ready(G5Node("i-a2"), kT0 + Seconds(1800));
  ASSERT_EQ(s.work.running(), 2);
  EXPECT_DOUBLE_EQ(s.work.stats().partial_gang_idle_gpu_seconds, 4.0 * 1800);
  EXPECT_EQ(*s.work.NextEventTime(), kT0 + Seconds(1800 + 3 * 3600));
  s.work.RunEventsUntil(kT0 + Seconds(1800 + 3 * 3600));
  EXPECT_EQ(s.work.stats().jobs_completed, 2);
  const auto classes = s.work.ClassResults(kT0 + Seconds(86400));
  EXPECT_EQ(classes.at("training").waits_s, (std::vector<int64_t>{1800, 1800})) << "a member waits until its gang starts";
  EXPECT_EQ(s.work.stats().busy_gpu_seconds, 2 * 4.0 * 3 * 3600) << "held while waiting is idle, not busy";
}

TEST(GangWorkload, AnInterruptionOfOneMemberSendsTheWholeGangBackToItsLastCheckpoint) {
  GangScene s(2, GangAdmission::kWhole);
  s.work.OnReady(G5Node("i-a1"), 4);
  s.Ready(G5Node("i-a2"), kT0);
  ASSERT_EQ(s.work.running(), 2);
  (void)s.work.TakeLostWork();
  // 70 minutes in: the checkpoint at 60 minutes holds; 10 minutes lost on
  // each member.
  s.work.OnNotice("i-a1", kT0 + Seconds(70 * 60));
  s.work.OnGone("i-a1", kT0 + Seconds(70 * 60), /*interrupted=*/true);
  EXPECT_EQ(s.work.running(), 0);
  EXPECT_EQ(s.work.queued(), 2);
  EXPECT_EQ(s.work.RunningOn("i-a2").size(), 0u) << "the other member stopped too";
  EXPECT_DOUBLE_EQ(s.work.stats().lost_gpu_seconds, 2 * 4.0 * 600);
  const std::optional<std::vector<LostWork>> lost = s.work.TakeLostWork();
  ASSERT_TRUE(lost && lost->size() == 1u);
  EXPECT_DOUBLE_EQ(lost->front().gpu_seconds.at({"training", ""}), 2 * 4.0 * 600) << "charged to the reclaim";

  // Both resume from the checkpoint on fresh room: two hours left.
  const WallTime t1 = kT0 + Seconds(80 * 60);
  s.Ready(G5Node("i-a3"), t1);
  ASSERT_EQ(s.work.running(), 2);
  EXPECT_EQ(*s.work.NextEventTime(), t1 + Seconds(2 * 3600));
  EXPECT_EQ(s.work.stats().gang_starts, 2);
}

TEST(GangWorkload, AGracefulRemovalOfOneMemberStopsTheGangWithItsProgress) {
  GangScene s(2, GangAdmission::kWhole);
  s.work.OnReady(G5Node("i-a1"), 4);
  s.Ready(G5Node("i-a2"), kT0);
  s.work.OnGone("i-a1", kT0 + Seconds(70 * 60), /*interrupted=*/false);
  EXPECT_EQ(s.work.queued(), 2);
  EXPECT_EQ(s.work.stats().lost_gpu_seconds, 0);
  const WallTime t1 = kT0 + Seconds(80 * 60);
  s.Ready(G5Node("i-a3"), t1);
  EXPECT_EQ(*s.work.NextEventTime(), t1 + Seconds(3 * 3600 - 70 * 60));
}

TEST(GangWorkload, AWaitingMemberWhoseNodeGoesLosesNothingAndTheGangKeepsWaiting) {
  GangScene s(3, GangAdmission::kEachPod);
  s.work.OnReady(G5Node("i-a1"), 4);
  s.Ready(G5Node("i-a2"), kT0);
  ASSERT_EQ(s.work.running(), 2);
  s.work.OnGone("i-a1", kT0 + Seconds(600), /*interrupted=*/true);
  EXPECT_EQ(s.work.running(), 1);
  EXPECT_EQ(s.work.queued(), 2);
  EXPECT_EQ(s.work.stats().lost_gpu_seconds, 0);
  EXPECT_DOUBLE_EQ(s.work.stats().partial_gang_idle_gpu_seconds, 4.0 * 600);
  s.work.CloseAccounting(kT0 + Seconds(1200));
  EXPECT_DOUBLE_EQ(s.work.stats().partial_gang_idle_gpu_seconds, 4.0 * 600 + 4.0 * 1200);
  EXPECT_EQ(s.work.GangWaits(kT0 + Seconds(1200)), std::vector<int64_t>{1200}) << "still waiting at the end";
}

}  // namespace
}  // namespace gpuscaler::sim
