// The planner's extra search on small inputs: plans that one fill order or
// one spot-share allocation per group does not reach.
#include <gtest/gtest.h>

#include <string>

#include "gpuscaler/solver/planner.h"
#include "solver/fixtures.h"
#include "solver/plan_checker.h"

namespace gpuscaler {
namespace {

using testing::BasePolicy;
using testing::BaseSnapshot;
using testing::ExpectValid;
using testing::LaunchesOf;
using testing::MakeNode;
using testing::OnDemandOnly;
using testing::Unit;
using testing::Units;

TEST(Planner, FindsTheFreeRoomWhereMemoryAndZonePinsMeetAcrossNodes) {
  // Three existing nodes: an empty on-demand g5.12xlarge (192 GiB) in
  // us-east-1a, an empty spot g6.12xlarge in us-east-1e and an on-demand
  // g6e.12xlarge in us-east-1e with one GPU and 42 vCPU free. Four 1-GPU
  // units of 46 GiB, six CPU-only units pinned to 1a/1e and twenty-one
  // CPU-only units all fit on them, with one GPU unit on the spot node, but
  // only if the 46 GiB units leave the g5's memory to the pinned ones and
  // one takes the g6e's GPU, three small CPU units moving to the g5 to
  // make room. Filling the GPU units first (the usual order) needs a new node.
  Snapshot s = BaseSnapshot({"us-east-1a", "us-east-1b", "us-east-1e"});
  s.gpu_models.push_back({"NVIDIA-L40S", "l40s", 46068, {}});
  s.instance_types.push_back(testing::Type("g6e.12xlarge", "g6e", "NVIDIA-L40S", 4, 46068, 48, 384));
  s.offerings.push_back(testing::MakeOffering("g6e.12xlarge", "us-east-1e", CapacityType::kOnDemand, 10.493));
  s.nodes.push_back(MakeNode(s, "g5", "g5.12xlarge", "us-east-1a", CapacityType::kOnDemand));
  s.nodes.push_back(MakeNode(s, "spot", "g6.12xlarge", "us-east-1e", CapacityType::kSpot));
  s.nodes.push_back(
      MakeNode(s, "g6e", "g6e.12xlarge", "us-east-1e", CapacityType::kOnDemand, Units("r", 3, Unit("", 1))));
  s.pending = Units("gpu-", 4, Unit("", 1, 5000, 47104));
  DemandUnit pinned = OnDemandOnly(Unit("", 0, 4000, 11264));
  pinned.zones = {"us-east-1a", "us-east-1e"};
  for (const DemandUnit& u : Units("pinned-", 6, pinned)) s.pending.push_back(u);
  for (const DemandUnit& u : Units("cpu-", 21, OnDemandOnly(Unit("", 0, 2000, 11264))))
    s.pending.push_back(u);
  const Policy p = BasePolicy();
  const Plan plan = MakePlan(s, p);
  EXPECT_TRUE(plan.launches.empty()) << plan.summary;
  EXPECT_TRUE(plan.unplaced.empty()) << plan.summary;
  int on_spot = 0;
  for (const auto& pl : plan.placements) on_spot += pl.node_id == "spot";
  EXPECT_EQ(on_spot, 1);
  ExpectValid(s, p, plan);
}

TEST(Planner, GivesAClassesSpotShareToTheWorkThatSavesMostOnSpot) {
  // Half of the class's GPUs may run on spot. Four 2-GPU units need 40 GB
  // GPUs (only a p4de, $41/h on demand, holds them); forty 2-GPU units run
  // anywhere. Spot saves about $24/h on the p4de and under $3/h on each
  // g6.12xlarge of the flexible units: the p4de gets its 8 GPUs of the
  // share, taken from a few of the flexible units' spot nodes (not all of
  // them, which would cost more than the p4de saves).
  Snapshot s = BaseSnapshot();
  DemandUnit big = Unit("", 2, 2000, 31744);
  big.min_gpu_memory_mib = 40000;
  s.pending = Units("big-", 4, big);
  for (const DemandUnit& u : Units("flex-", 40, Unit("", 2, 2000, 18432))) s.pending.push_back(u);
  Policy p = BasePolicy();
  p.classes[0].max_spot_share = 0.5;
  const Plan plan = MakePlan(s, p);
  EXPECT_TRUE(plan.unplaced.empty()) << plan.summary;
  for (const auto& l : plan.launches) {
    if (l.offering.instance_type == "p4de.24xlarge") {
      EXPECT_EQ(l.offering.capacity_type, CapacityType::kSpot) << l.reason;
    }
  }
  EXPECT_EQ(LaunchesOf(plan, "p4de.24xlarge"), 1);
  ExpectValid(s, p, plan);
}

}  // namespace
}  // namespace gpuscaler
