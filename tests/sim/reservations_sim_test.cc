// Reserved capacity in the simulator: the simulated cloud's slots, windows
// and bills, the reservations file, and the Karpenter baseline's use of
// reservations.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "gpuscaler/model/builtin_catalog.h"
#include "sim/baselines.h"
#include "sim/reservations_file.h"
#include "sim/sim_cloud.h"
#include "sim/sim_test_jobs.h"
#include "sim/workload.h"
#include "solver/fixtures.h"

namespace gpuscaler::sim {
namespace {

constexpr const char* kType = "p5.48xlarge";
constexpr const char* kZone = "us-east-1a";

struct Cloud {
  Catalog catalog = BuiltinCatalog();
  SpotMarket market;
  ManualClock clock{FromUnixSeconds(1782000000)};
  std::unique_ptr<SimCloud> cloud;
  Reservation reservation;

  explicit Cloud(ReservationKind kind = ReservationKind::kDefault, Seconds starts_in = Seconds(0),
                 std::optional<Seconds> lasts = std::nullopt) {
    reservation.id = "cr-test";
    reservation.instance_type = kType;
    reservation.zone = kZone;
    reservation.kind = kind;
    reservation.total_count = 2;
    reservation.start = clock.WallNow() + starts_in;
    if (lasts) reservation.end = reservation.start + *lasts;
    reservation.usd_per_hour = 10;
    SimCloudConfig config;
    config.hazard_multiplier = 0;
    config.reservations = {reservation};
    cloud = std::make_unique<SimCloud>(clock, catalog, catalog.Offerings({"us-east-1"}), market, config);
  }
  Offering Reserved() const {
    Offering o = ReservedOffering(reservation, nullptr);
    o.region = "us-east-1";
    return o;
  }
  LaunchResult Launch(int count) {
    LaunchRequest r;
    r.pool = "p";
    r.count = count;
    r.offerings = {Reserved()};
    Result<LaunchResult> res = cloud->Launch(r);
    EXPECT_TRUE(res.ok());
    return res.ok() ? *res : LaunchResult{};
  }
  int Free() {
    Result<std::vector<Reservation>> listed = cloud->ListReservations();
    EXPECT_TRUE(listed.ok());
    return listed.ok() && !listed->empty() ? listed->front().available_count : -1;
  }
  void Run(Seconds d) {
    const WallTime t = clock.WallNow() + d;
    cloud->RunEventsUntil(t);
    clock.AdvanceTo(t);
  }
};

TEST(SimReservations, ALaunchTakesFreeSlotsAndTheRestIsACapacityError) {
  Cloud c;
  EXPECT_EQ(c.Free(), 2);
  const LaunchResult got = c.Launch(3);
  ASSERT_EQ(got.instances.size(), 2u);
  EXPECT_EQ(got.instances[0].offering.capacity_type, CapacityType::kReserved);
  EXPECT_EQ(got.instances[0].offering.reservation_id, "cr-test");
  ASSERT_EQ(got.errors.size(), 1u);
  EXPECT_EQ(got.errors[0].error.category(), ErrorCategory::kCapacity);
  EXPECT_EQ(c.Free(), 0);
  ASSERT_TRUE(c.cloud->Terminate({got.instances[0].instance_id}).ok());
  EXPECT_EQ(c.Free(), 1) << "a terminated instance gives its slot back";
}

TEST(SimReservations, EverySlotIsPaidUsedOrNotAndTheSplitAddsUp) {
  Cloud c;
  c.Launch(1);
  c.Run(Seconds(3 * 3600));
  const std::vector<ReservationUse> uses = c.cloud->ReservationUses(c.clock.WallNow());
  ASSERT_EQ(uses.size(), 1u);
  EXPECT_DOUBLE_EQ(uses[0].slot_hours, 6.0);
  EXPECT_DOUBLE_EQ(uses[0].cost_usd, 60.0);
  EXPECT_DOUBLE_EQ(uses[0].used_usd, 30.0);
  EXPECT_DOUBLE_EQ(uses[0].unused_usd, 30.0);
  EXPECT_DOUBLE_EQ(uses[0].used_usd + uses[0].unused_usd, uses[0].cost_usd);
  EXPECT_DOUBLE_EQ(c.cloud->CostUntil(c.clock.WallNow()), 60.0) << "the idle slot is in the total";
  EXPECT_DOUBLE_EQ(c.cloud->CurrentUsdPerHour(), 20.0);
}

TEST(SimReservations, ACapacityBlockTakesLaunchesOnlyInItsWindowAndTakesItsNodesBack) {
  Cloud c(ReservationKind::kCapacityBlock, Seconds(3600), Seconds(24 * 3600));
  EXPECT_TRUE(c.Launch(1).instances.empty()) << "before the block starts: InsufficientInstanceCapacity";
  c.Run(Seconds(3600));
  const LaunchResult got = c.Launch(1);
  ASSERT_EQ(got.instances.size(), 1u);
  c.Run(Seconds(24 * 3600 - 31 * 60));
  Result<std::vector<InterruptionNotice>> none = c.cloud->PollInterruptions();
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
  c.Run(Seconds(60));  // 30 minutes before the end
  Result<std::vector<InterruptionNotice>> notices = c.cloud->PollInterruptions();
  ASSERT_TRUE(notices.ok());
  ASSERT_EQ(notices->size(), 1u);
  EXPECT_EQ((*notices)[0].instance_id, got.instances[0].instance_id);
  c.Run(Seconds(5 * 60));
  EXPECT_EQ(c.cloud->live_count(), 0);
  const std::vector<ReservationUse> uses = c.cloud->ReservationUses(c.clock.WallNow());
  ASSERT_EQ(uses.size(), 1u);
  EXPECT_EQ(uses[0].instances_taken_back, 1);
}

TEST(SimReservations, JobsOnABlockNodeWhenItIsTakenBackAreCountedLost) {
  Cloud c(ReservationKind::kCapacityBlock, Seconds(0), Seconds(6 * 3600));  // taken back after 5.5 h
  Policy policy;
  policy.classes.resize(2);
  policy.classes[0].name = "training";
  policy.classes[0].expected_runtime = Seconds(4 * 3600);
  policy.classes[1].name = "short";
  policy.classes[1].expected_runtime = Seconds(8 * 3600);
  Trace trace;
  trace.jobs.push_back(testing::TrainingJob(0, Seconds(0), Seconds(3 * 3600)));   // ends in time
  trace.jobs.push_back(testing::TrainingJob(1, Seconds(0), Seconds(20 * 3600)));  // longer than its class says
  trace.jobs.push_back(testing::TrainingJob(2, Seconds(0), Seconds(6 * 3600)));   // as long as its class says
  trace.jobs[2].unit.workload_class = "short";
  const WallTime t0 = c.clock.WallNow();
  Workload work(trace, c.catalog, policy, t0);
  work.UseClassRuntimes(policy);
  c.cloud->SetObserver(&work);
  ASSERT_EQ(c.Launch(1).instances.size(), 1u);
  for (WallTime t = t0; t <= t0 + Seconds(6 * 3600); t += Seconds(60)) {
    c.cloud->RunEventsUntil(t);
    work.RunEventsUntil(t);
    work.Schedule(t);
    c.clock.AdvanceTo(t);
  }
  EXPECT_EQ(work.stats().jobs_completed, 1);
  EXPECT_EQ(work.stats().jobs_taken_back, 2);
  EXPECT_EQ(work.stats().jobs_taken_back_runtime_known, 1) << "job 2: its class's runtime was right";
  EXPECT_GT(work.stats().lost_gpu_seconds, 0);
}

std::string WriteFile(const std::string& name, const std::string& text) {
  const std::string path = (std::filesystem::temp_directory_path() / name).string();
  std::ofstream(path) << text;
  return path;
}

TEST(SimReservations, TheFileGivesTimesFromTheStartAndSpreadsABlocksFee) {
  const Catalog catalog = BuiltinCatalog();
  const WallTime start = FromUnixSeconds(1782000000);
  const std::string path = WriteFile("gpuscaler-reservations-ok.yaml",
                                     "reservations:\n"
                                     "  - {id: cr-a, instance_type: p5.48xlarge, zone: us-east-1a, count: 2}\n"
                                     "  - id: cb-b\n    instance_type: p5.48xlarge\n    zone: us-east-1a\n"
                                     "    count: 4\n    kind: capacity-block\n    start: 2d\n    end: 9d\n"
                                     "    upfront_usd: 67200\n    tags: {team: ml}\n");
  Result<std::vector<Reservation>> read = ReadReservationsFile(path, start, catalog);
  ASSERT_TRUE(read.ok()) << read.error().message();
  ASSERT_EQ(read->size(), 2u);
  const Reservation& odcr = (*read)[0];
  EXPECT_EQ(odcr.start, start);
  EXPECT_FALSE(odcr.end.has_value());
  EXPECT_GT(odcr.usd_per_hour, 0) << "an ODCR costs the catalog's on-demand price";
  const Reservation& block = (*read)[1];
  EXPECT_EQ(block.kind, ReservationKind::kCapacityBlock);
  EXPECT_EQ(block.start, start + Seconds(2 * 86400));
  EXPECT_EQ(*block.end, start + Seconds(9 * 86400));
  EXPECT_DOUBLE_EQ(block.usd_per_hour, 67200.0 / (4 * 7 * 24));
  EXPECT_EQ(block.tags.at("team"), "ml");
}

TEST(SimReservations, FileProblemsNameTheFileLineAndField) {
  const Catalog catalog = BuiltinCatalog();
  const std::string path = WriteFile("gpuscaler-reservations-bad.yaml",
                                     "reservations:\n"
                                     "  - {id: cr-a, instance_type: p5.48xlarge, zone: us-east-1a, count: 0}\n"
                                     "  - {id: cr-b, instance_type: p9.huge, zone: us-east-1a, count: 1}\n"
                                     "  - {id: cr-c, instance_type: p5.48xlarge, zone: us-east-1a, count: 1,"
                                     " kind: capacity-block}\n");
  Result<std::vector<Reservation>> read = ReadReservationsFile(path, FromUnixSeconds(1782000000), catalog);
  ASSERT_FALSE(read.ok());
  const std::string& m = read.error().message();
  EXPECT_NE(m.find(path + ":2"), std::string::npos) << m;
  EXPECT_NE(m.find("reservations[0].count: must be >= 1"), std::string::npos) << m;
  EXPECT_NE(m.find("the catalog has no on-demand p9.huge in zone us-east-1a"), std::string::npos) << m;
  EXPECT_NE(m.find("a capacity-block has an end"), std::string::npos) << m;
}

TEST(SimReservations, KarpenterLaunchesIntoFreeSlotsFirstThenBuys) {
  // Karpenter v1.3+: a reserved offering ranks at its on-demand price / 10^7
  // and a NodeClaim launches reserved while slots are left.
  Snapshot s = gpuscaler::testing::BaseSnapshot();
  gpuscaler::testing::AddReservation(s, "cr-k", "g6.12xlarge", "us-east-1a", 2, 1);
  Policy p = gpuscaler::testing::BasePolicy();
  p.pools[0].capacity_types = {CapacityType::kOnDemand};
  p.pools[0].instance_types = {"g6.12xlarge"};
  p.pools[0].reservations = {{"cr-k", {}}};
  s.pending = gpuscaler::testing::Units("u", 2, gpuscaler::testing::Unit("", 4, 40000, 65536));
  const Plan plan = KarpenterLikePlanner()(s, p);
  int reserved = 0, bought = 0;
  for (const LaunchAction& l : plan.launches)
    (l.offering.capacity_type == CapacityType::kReserved ? reserved : bought) += l.count;
  EXPECT_EQ(reserved, 1);
  EXPECT_EQ(bought, 1);
  p.pools[0].reservations.clear();
  for (const LaunchAction& l : KarpenterLikePlanner()(s, p).launches)
    EXPECT_NE(l.offering.capacity_type, CapacityType::kReserved) << "a pool that does not select it";
}

TEST(SimReservations, BaselinesOtherThanKarpenterBuyNoSlot) {
  // The cheapest-node greedy and the on-demand reference pay for the
  // reservation and buy their nodes as they would without it.
  Snapshot s = gpuscaler::testing::BaseSnapshot({"us-east-1a"});
  gpuscaler::testing::AddReservation(s, "cr-g", "g6.12xlarge", "us-east-1a", 1, 1);
  Policy p = gpuscaler::testing::BasePolicy();
  p.pools[0].instance_types = {"g6.12xlarge"};
  p.pools[0].reservations = {{"cr-g", {}}};
  s.pending = gpuscaler::testing::Units("u", 2, gpuscaler::testing::OnDemandOnly(gpuscaler::testing::Unit("", 4)));
  const Plan plan = CheapestNodeGreedyPlanner()(s, p);
  int bought = 0;
  for (const LaunchAction& l : plan.launches) {
    EXPECT_EQ(l.offering.capacity_type, CapacityType::kOnDemand) << l.offering.Key();
    bought += l.count;
  }
  EXPECT_EQ(bought, 2);
}

}  // namespace
}  // namespace gpuscaler::sim
