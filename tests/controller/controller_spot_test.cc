// The controller and spot: capacity errors that pause a class's spot (or not),
// interruption notices, reclaim waves and their cooldown, spot price changes,
// and interruption rates learned from the fleet's own reclaims.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "controller_harness.h"

namespace gpuscaler::controller_spot_test {
namespace {

using Harness = testing::ControllerHarness;
using testing::FakeClock;
using testing::FakeCloudProvider;
using testing::FakeWorkSource;
using testing::Find;
using testing::TestPolicy;
using testing::TwoG5SizesCatalog;

// spot.fallback_duration: after a spot capacity error for a class's work,
// the class is kept off spot that long.
TEST(Controller, ASpotCapacityErrorKeepsTheClassOffSpotForTheFallbackDuration) {
  Policy p = TestPolicy();
  p.spot.fallback_duration = Seconds(1800);
  Harness h(p);
  DemandUnit u;
  u.id = "job-1";
  u.workload_class = "batch";
  u.gpus = 1;
  h.work.SetPending({u});
  h.cloud.no_capacity = {"g5.xlarge/us-east-1a/spot"};
  LaunchAction l = h.Launch("g5.xlarge/us-east-1a/spot", 1);
  l.unit_ids = {"job-1"};
  h.next_plan.launches = {l};
  h.controller->Tick();
  h.clock.Advance(Seconds(60));
  h.controller->Tick();
  EXPECT_EQ(h.seen.back().spot_paused_classes, std::vector<std::string>{"batch"});
  h.clock.Advance(Seconds(1800));
  h.controller->Tick();
  EXPECT_TRUE(h.seen.back().spot_paused_classes.empty());
}

// Deadline work probes spot offering by offering: its capacity error marks
// the offering, and does not pause its class's spot.
TEST(Controller, ASpotCapacityErrorForDeadlineWorkDoesNotPauseItsClass) {
  Policy p = TestPolicy();
  p.spot.fallback_duration = Seconds(1800);
  Harness h(p);
  DemandUnit u;
  u.id = "job-1";
  u.workload_class = "batch";
  u.gpus = 1;
  u.deadline = h.clock.WallNow() + Seconds(24 * 3600);
  h.work.SetPending({u});
  h.cloud.no_capacity = {"g5.xlarge/us-east-1a/spot"};
  LaunchAction l = h.Launch("g5.xlarge/us-east-1a/spot", 1);
  l.unit_ids = {"job-1"};
  h.next_plan.launches = {l};
  h.controller->Tick();
  h.clock.Advance(Seconds(60));
  h.controller->Tick();
  EXPECT_TRUE(h.seen.back().spot_paused_classes.empty());
  bool marked = false;
  for (const Offering& o : h.seen.back().offerings)
    marked = marked || (o.Key() == "g5.xlarge/us-east-1a/spot" && !o.available);
  EXPECT_TRUE(marked) << "the offering that failed is marked";
}

// The pause is for a shortage of spot, not for one spot offering without
// capacity: a launch whose spot fallback in another zone filled it keeps the
// class on spot; one that fell back to on-demand pauses it.
TEST(Controller, ASpotLaunchFilledByAnotherSpotOfferingDoesNotPauseSpot) {
  Policy p = TestPolicy();
  p.spot.fallback_duration = Seconds(1800);
  for (const bool spot_fallback : {true, false}) {
    SCOPED_TRACE(spot_fallback ? "spot fallback" : "on-demand fallback");
    Harness h(p);
    DemandUnit u;
    u.id = "job-1";
    u.workload_class = "batch";
    u.gpus = 1;
    h.work.SetPending({u});
    h.cloud.no_capacity = {"g5.xlarge/us-east-1a/spot"};
    LaunchAction l = h.Launch("g5.xlarge/us-east-1a/spot", 1,
                              {spot_fallback ? "g5.xlarge/us-east-1b/spot" : "g5.xlarge/us-east-1a/on-demand"});
    l.unit_ids = {"job-1"};
    h.next_plan.launches = {l};
    TickReport r = h.controller->Tick();
    EXPECT_EQ(r.nodes_launched, 1);
    EXPECT_EQ(r.capacity_errors, 1);
    h.clock.Advance(Seconds(60));
    h.controller->Tick();
    if (spot_fallback) {
      EXPECT_TRUE(h.seen.back().spot_paused_classes.empty());
    } else {
      EXPECT_EQ(h.seen.back().spot_paused_classes, std::vector<std::string>{"batch"});
    }
  }
}

TEST(Controller, InterruptionNoticeDrainsTheNodeAndAddsReplacementDemand) {
  Harness h;
  h.next_plan.launches = {h.Launch("g5.xlarge/us-east-1a/spot", 1)};
  h.controller->Tick();
  const std::string id = h.controller->snapshot().nodes.at(0).instance_id;
  DemandUnit u;
  u.id = "job-1";
  u.workload_class = "batch";
  u.gpus = 1;
  h.work.SetRunning(id, {u});
  h.clock.Advance(Seconds(60));
  h.cloud.notices = {{id, h.clock.WallNow(), h.clock.WallNow() + Seconds(120)}};
  TickReport r = h.controller->Tick();
  EXPECT_EQ(r.interruption_notices, 1);
  const Snapshot& s = h.seen.back();
  EXPECT_EQ(s.nodes.at(0).state, NodeState::kDraining);
  ASSERT_EQ(s.pending.size(), 1u);
  EXPECT_EQ(s.pending[0].id, "job-1@replace");
  // At the deadline the node is gone even before the instance list says so.
  h.clock.Advance(Seconds(120));
  h.controller->Tick();
  EXPECT_TRUE(h.seen.back().nodes.empty());
  EXPECT_TRUE(h.seen.back().pending.empty());
}

// A zone's spot capacity of one family goes at once, every size together:
// one notice on each of two sizes in a zone is a wave of the domain, though
// neither size alone lost two nodes or half of its own.
TEST(Controller, NoticesOnTwoSizesOfAFamilyInAZoneAreOneReclaimWave) {
  Harness h(TestPolicy(), TwoG5SizesCatalog());
  h.next_plan.launches = {h.Launch("g5.xlarge/us-east-1a/spot", 3), h.Launch("g5.2xlarge/us-east-1a/spot", 3),
                          h.Launch("g5.xlarge/us-east-1b/spot", 1)};
  h.controller->Tick();
  ASSERT_EQ(h.controller->snapshot().nodes.size(), 7u);
  std::vector<std::string> noticed;
  for (const char* key : {"g5.xlarge/us-east-1a/spot", "g5.2xlarge/us-east-1a/spot"}) {
    for (const Node& n : h.controller->snapshot().nodes) {
      if (n.offering.Key() == key) {
        noticed.push_back(n.instance_id);
        break;
      }
    }
  }
  ASSERT_EQ(noticed.size(), 2u);
  h.clock.Advance(Seconds(60));
  h.cloud.notices = {{noticed[0], h.clock.WallNow(), h.clock.WallNow() + Seconds(120)}};
  h.controller->Tick();
  EXPECT_TRUE(h.controller->snapshot().reclaimed_spot_pools.empty()) << "one notice of six is not a wave";
  h.clock.Advance(Seconds(90));
  h.cloud.notices = {{noticed[1], h.clock.WallNow(), h.clock.WallNow() + Seconds(120)}};
  h.controller->Tick();
  EXPECT_EQ(h.controller->snapshot().reclaimed_spot_pools,
            (std::vector<std::string>{"g5.2xlarge/us-east-1a/spot", "g5.xlarge/us-east-1a/spot"}))
      << "both sizes in zone a, nothing in zone b";
}

// spot.reclaim_cooldown: the wave's mark lasts the policy's cooldown, not
// the built-in 30 minutes.
TEST(Controller, AReclaimWaveKeepsTheDomainMarkedForThePolicysCooldown) {
  Policy p = TestPolicy();
  p.spot.reclaim_cooldown = Seconds(600);
  p.spot.reclaim_cooldown_max = Seconds(600);
  Harness h(p, TwoG5SizesCatalog());
  h.next_plan.launches = {h.Launch("g5.xlarge/us-east-1a/spot", 2)};
  h.controller->Tick();
  ASSERT_EQ(h.controller->snapshot().nodes.size(), 2u);
  h.clock.Advance(Seconds(60));
  for (const Node& n : h.controller->snapshot().nodes)
    h.cloud.notices.push_back({n.instance_id, h.clock.WallNow(), h.clock.WallNow() + Seconds(120)});
  h.controller->Tick();
  const std::vector<std::string> domain{"g5.2xlarge/us-east-1a/spot", "g5.xlarge/us-east-1a/spot"};
  EXPECT_EQ(h.controller->snapshot().reclaimed_spot_pools, domain);
  h.cloud.notices.clear();
  h.clock.Advance(Seconds(590));
  h.controller->Tick();
  EXPECT_EQ(h.controller->snapshot().reclaimed_spot_pools, domain) << "10 s before the cooldown ends";
  h.clock.Advance(Seconds(10));
  h.controller->Tick();
  EXPECT_TRUE(h.controller->snapshot().reclaimed_spot_pools.empty()) << "after 10 minutes, where the default is 30";
}

// spot.reclaim_cooldown_max: consecutive waves double the policy's first
// cooldown up to its longest (5, 10, then 10 minutes), not up to 8 hours.
TEST(Controller, ConsecutiveReclaimWavesDoubleTheCooldownUpToThePolicysLongest) {
  Policy p = TestPolicy();
  p.spot.reclaim_cooldown = Seconds(300);
  p.spot.reclaim_cooldown_max = Seconds(600);
  Harness h(p, TwoG5SizesCatalog());
  const std::vector<std::string> domain{"g5.2xlarge/us-east-1a/spot", "g5.xlarge/us-east-1a/spot"};
  for (const int cooldown_s : {300, 600, 600}) {
    SCOPED_TRACE("a wave whose cooldown should be " + std::to_string(cooldown_s) + " s");
    h.next_plan.launches = {h.Launch("g5.xlarge/us-east-1a/spot", 2)};
    h.controller->Tick();
    h.clock.Advance(Seconds(60));
    h.cloud.notices.clear();
    for (const Node& n : h.controller->snapshot().nodes)
      if (n.state == NodeState::kReady || n.state == NodeState::kLaunching)
        h.cloud.notices.push_back({n.instance_id, h.clock.WallNow(), h.clock.WallNow() + Seconds(120)});
    ASSERT_EQ(h.cloud.notices.size(), 2u);
    h.controller->Tick();
    h.cloud.notices.clear();
    ASSERT_EQ(h.controller->snapshot().reclaimed_spot_pools, domain);
    h.clock.Advance(Seconds(cooldown_s - 10));
    h.controller->Tick();
    EXPECT_EQ(h.controller->snapshot().reclaimed_spot_pools, domain) << "10 s before the cooldown ends";
    h.clock.Advance(Seconds(10));
    h.controller->Tick();
    EXPECT_TRUE(h.controller->snapshot().reclaimed_spot_pools.empty()) << "at the cooldown's end";
  }
}

TEST(Controller, SpotPriceChangesReachOfferingsAndNodes) {
  Harness h;
  h.next_plan.launches = {h.Launch("g5.xlarge/us-east-1a/spot", 1)};
  h.controller->Tick();
  h.clock.Advance(Seconds(60));
  h.cloud.prices.push_back({"g5.xlarge", "us-east-1a", CapacityType::kSpot, 0.55, h.clock.WallNow()});
  h.controller->Tick();
  EXPECT_DOUBLE_EQ(Find(h.seen.back(), "g5.xlarge/us-east-1a/spot").usd_per_hour, 0.55);
  EXPECT_DOUBLE_EQ(h.seen.back().nodes.at(0).offering.usd_per_hour, 0.55);
  EXPECT_DOUBLE_EQ(Find(h.seen.back(), "g5.xlarge/us-east-1b/spot").usd_per_hour, 0.4);
}

// A controller with the real planner: one interruptible 1-GPU job, spot at
// 0.4 in two zones (same price and catalog rate), on-demand at 1.0.
struct RiskHarness {
  FakeClock clock;
  FakeCloudProvider cloud{clock};
  FakeWorkSource work;
  Catalog catalog = TwoG5SizesCatalog();
  std::unique_ptr<SqliteAuditStore> store = std::move(SqliteAuditStore::Open(":memory:")).value();
  std::unique_ptr<Controller> controller;
  DemandUnit job;

  explicit RiskHarness(bool learn) {
    ControllerOptions o;
    o.reuse_unchanged_plans = false;
    o.learn_interruption_risk = learn;
    controller = std::make_unique<Controller>(clock, cloud, store.get(), work, catalog, TestPolicy(), o);
    job.id = "job-1";
    job.workload_class = "batch";
    job.gpus = 1;
    job.expected_runtime = Seconds(10 * 3600);
    job.checkpoint_interval = Seconds(1800);
    job.restart_cost = Seconds(300);
  }

  // The offering of the newest launch call.
  std::string LastLaunchKey() const {
    return cloud.launches.empty() ? "" : cloud.launches.back().offerings.front().Key();
  }

  // The job runs on the newest node for `hours`, then the node is reclaimed
  // (2-minute notice). The tick that reads the notice plans the job's
  // replacement; at the deadline the job waits for that node.
  void RunThenReclaim(double hours) {
    const std::string id = controller->snapshot().nodes.back().instance_id;
    work.SetPending({});
    work.SetRunning(id, {job});
    for (int m = 0; m < static_cast<int>(hours * 60); m += 10) {
      clock.Advance(Seconds(600));
      controller->Tick();
    }
    cloud.notices = {{id, clock.WallNow(), clock.WallNow() + Seconds(120)}};
    controller->Tick();
    clock.Advance(Seconds(120));
    work.SetRunning(id, {});
    work.SetPending({job});
    controller->Tick();
  }
};

double RateOf(const Controller& c, const std::string& key) { return Find(c.snapshot(), key).interruptions_per_hour; }

TEST(ControllerLearnedRisk, RepeatedInterruptionsOnOneOfferingShiftThePlanToAnother) {
  for (const bool learn : {false, true}) {
    SCOPED_TRACE(learn ? "learning" : "catalog rates only");
    RiskHarness h(learn);
    h.work.SetPending({h.job});
    h.controller->Tick();
    const std::string first = h.LastLaunchKey();
    ASSERT_NE(first.find("/spot"), std::string::npos) << first;
    const double prior = RateOf(*h.controller, first);
    // Reclaim the node the job runs on, after an hour each time, while the
    // replacements stay on the first offering (at most three times).
    std::string last = first;
    for (int i = 0; i < 3 && last == first; ++i) {
      h.RunThenReclaim(1.0);
      last = h.LastLaunchKey();
    }
    ASSERT_GE(h.cloud.launches.size(), 2u);
    if (!learn) {
      // Catalog rates: the rate stays the prior, but the node was its
      // failure domain's only one, so its notice is a reclaim wave: the
      // domain (family x zone: every spot size of the family in that zone)
      // is marked (in the snapshot, for the planner and any replay of it)
      // and the replacement goes elsewhere during the cooldown.
      EXPECT_NE(last, first);
      EXPECT_EQ(h.cloud.launches.size(), 2u);
      const Snapshot& snap = h.controller->snapshot();
      const Offering reclaimed = Find(snap, first);
      auto family_of = [&](const std::string& type) {
        for (const InstanceType& t : snap.instance_types)
          if (t.name == type) return t.family;
        return std::string();
      };
      std::vector<std::string> domain;
      for (const Offering& o : snap.offerings) {
        if (o.capacity_type == CapacityType::kSpot && o.zone == reclaimed.zone &&
            family_of(o.instance_type) == family_of(reclaimed.instance_type))
          domain.push_back(o.Key());
      }
      std::sort(domain.begin(), domain.end());
      ASSERT_GE(domain.size(), 2u) << "the catalog has more than one size of the family";
      EXPECT_EQ(snap.reclaimed_spot_pools, domain);
      EXPECT_DOUBLE_EQ(RateOf(*h.controller, first), prior);
      // Thirty minutes after the notice the mark is gone.
      h.clock.Advance(Seconds(1800));
      h.controller->Tick();
      EXPECT_TRUE(h.controller->snapshot().reclaimed_spot_pools.empty());
      continue;
    }
    EXPECT_NE(last, first) << "the plan kept the offering that was reclaimed";
    EXPECT_NE(last.find("/spot"), std::string::npos) << "the other zone's spot is still cheapest: " << last;
    EXPECT_GT(RateOf(*h.controller, first), 10 * prior);
    EXPECT_DOUBLE_EQ(RateOf(*h.controller, last), prior);
    // Nodes carry their offering's learned rate (the planner prices the risk
    // of keeping work on them from it).
    for (const Node& n : h.controller->snapshot().nodes) {
      EXPECT_DOUBLE_EQ(n.offering.interruptions_per_hour, RateOf(*h.controller, n.offering.Key())) << n.instance_id;
    }
  }
}

TEST(ControllerLearnedRisk, ARestartRebuildsTheRatesFromTheStoresNodeHistory) {
  RiskHarness h(true);
  h.work.SetPending({h.job});
  h.controller->Tick();
  const std::string first = h.LastLaunchKey();
  h.RunThenReclaim(2.0);
  const double learned = RateOf(*h.controller, first);
  ASSERT_GT(learned, 0.02);
  // A new controller on the same store (and cloud) after a restart.
  ControllerOptions o;
  o.reuse_unchanged_plans = false;
  Controller restarted(h.clock, h.cloud, h.store.get(), h.work, h.catalog, TestPolicy(), o);
  TickReport r = restarted.Tick();
  EXPECT_TRUE(r.errors.empty()) << r.errors[0].ToString();
  const double rebuilt = RateOf(restarted, first);
  // The history knows the same reclaim; exposure is timed a little
  // differently (node launch to end vs the ticks that saw it), so close.
  EXPECT_NEAR(rebuilt, learned, 0.1 * learned);
  // Without the store it starts from the catalog.
  Controller fresh(h.clock, h.cloud, nullptr, h.work, h.catalog, TestPolicy(), o);
  fresh.Tick();
  EXPECT_LT(RateOf(fresh, first), learned / 5);
}

}  // namespace
}  // namespace gpuscaler::controller_spot_test
