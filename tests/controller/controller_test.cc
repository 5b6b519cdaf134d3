#include "gpuscaler/controller/controller.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>

#include "fakes/fake_clock.h"
#include "fakes/fake_cloud_provider.h"
#include "fakes/fake_work_source.h"
#include "fakes/recording_planner.h"
#include "gpuscaler/model/json.h"
#include "gpuscaler/store/audit_reader.h"
#include "lifecycle_harness.h"
#include "gpuscaler/store/sqlite_audit_store.h"

namespace gpuscaler {
namespace {

using testing::FakeClock;
using testing::FakeCloudProvider;
using testing::FakeWorkSource;

Catalog TinyCatalog() { return testing::LifecycleCatalog(); }

Policy TestPolicy() { return testing::UndampedGpuPolicy(); }

Offering Find(const Snapshot& s, const std::string& key) {
  for (const Offering& o : s.offerings) {
    if (o.Key() == key) return o;
  }
  ADD_FAILURE() << "no offering " << key;
  return {};
}

// TinyCatalog plus a dearer second g5 size: one failure domain (g5 in a
// zone) then holds two spot offerings.
Catalog TwoG5SizesCatalog() {
  Catalog c = TinyCatalog();
  InstanceType big = c.instance_types.front();
  big.name = "g5.2xlarge";
  big.vcpus = 8;
  big.memory_mib = 32768;
  c.instance_types.push_back(big);
  for (RegionPrices& r : c.regions) {
    r.on_demand_usd_per_hour[big.name] = 1.2;
    r.spot_usd_per_hour[big.name] = 0.5;
  }
  return c;
}

struct Harness {
  FakeClock clock;
  FakeCloudProvider cloud{clock};
  FakeWorkSource work;
  Catalog catalog = TinyCatalog();
  std::unique_ptr<SqliteAuditStore> store = std::move(SqliteAuditStore::Open(":memory:")).value();
  Plan next_plan;  // what the scripted planner returns (then cleared)
  std::vector<Snapshot> seen;
  std::unique_ptr<Controller> controller;

  explicit Harness(Policy policy = TestPolicy(), Catalog c = TinyCatalog()) : catalog(std::move(c)) {
    ControllerOptions o;
    o.reuse_unchanged_plans = false;
    controller = std::make_unique<Controller>(clock, cloud, store.get(), work, catalog, std::move(policy), o,
                                              testing::RecordingPlanner(&seen, &next_plan));
  }
  LaunchAction Launch(const std::string& key, int count, std::vector<std::string> fallbacks = {}) {
    LaunchAction l;
    l.pool = "gpu";
    l.offering = Find(controller->snapshot(), key);
    l.count = count;
    for (const std::string& f : fallbacks) l.fallbacks.push_back(Find(controller->snapshot(), f));
    l.reason = "test";
    return l;
  }
  TerminationAction Terminate(const std::string& instance_id) {
    TerminationAction t;
    t.node_id = t.instance_id = instance_id;
    t.pool = "gpu";
    t.reason = "test";
    return t;
  }
};

// The snapshot is a value: one kept from a tick stays as it was while later
// ticks observe new work and act, and the next tick's is another value.
TEST(Controller, TwoTicksSnapshotsAreIndependentValues) {
  Harness h;
  DemandUnit first_unit = testing::GpuUnit("u-1");
  h.work.SetPending({first_unit});
  h.controller->Tick();
  const std::shared_ptr<const Snapshot> first = h.controller->SharedSnapshot();
  const std::string first_json = FormatSnapshotJsonLine(*first);
  ASSERT_EQ(first->pending.size(), 1u);
  ASSERT_TRUE(first->nodes.empty());

  h.clock.Advance(Seconds(30));
  h.work.SetPending({first_unit, testing::GpuUnit("u-2")});
  h.next_plan.launches = {h.Launch("g5.xlarge/us-east-1a/on-demand", 2)};
  h.controller->Tick();
  const std::shared_ptr<const Snapshot> second = h.controller->SharedSnapshot();

  EXPECT_NE(first.get(), second.get());
  EXPECT_EQ(FormatSnapshotJsonLine(*first), first_json) << "a later tick changed a snapshot someone kept";
  EXPECT_EQ(second->pending.size(), 2u);
  EXPECT_EQ(second->nodes.size(), 2u);
  EXPECT_GT(second->time, first->time);
}

TEST(Controller, LaunchesWhatThePlanAsksForAndTracksTheNodes) {
  Harness h;
  h.next_plan.launches = {h.Launch("g5.xlarge/us-east-1a/on-demand", 2)};
  TickReport r = h.controller->Tick();
  EXPECT_TRUE(r.planned);
  EXPECT_EQ(r.nodes_launched, 2);
  ASSERT_EQ(h.cloud.launches.size(), 1u);
  EXPECT_EQ(h.cloud.launches[0].tags.at(kOwnerTag), "gpu");
  EXPECT_EQ(h.controller->snapshot().nodes.size(), 2u);
  EXPECT_TRUE(r.errors.empty()) << r.errors[0].ToString();
}

// A launch's node_labels go on the new instances as tags (beside, never
// over, the owner and intent tags), and so on the nodes of the next
// snapshot: how the simulator's baselines give a node its capacity-spread
// domain.
TEST(Controller, ALaunchsNodeLabelsAreOnItsNewNodes) {
  Harness h;
  LaunchAction l = h.Launch("g5.xlarge/us-east-1a/spot", 1);
  l.node_labels = {{"capacity-spread/inference", "3"}, {kOwnerTag, "not-the-pool"}};
  h.next_plan.launches = {l};
  TickReport r = h.controller->Tick();
  ASSERT_EQ(h.cloud.launches.size(), 1u);
  EXPECT_EQ(h.cloud.launches[0].tags.at("capacity-spread/inference"), "3");
  EXPECT_EQ(h.cloud.launches[0].tags.at(kOwnerTag), "gpu");
  ASSERT_EQ(h.controller->snapshot().nodes.size(), 1u);
  EXPECT_EQ(h.controller->snapshot().nodes[0].labels.at("capacity-spread/inference"), "3");
  EXPECT_TRUE(r.errors.empty()) << r.errors[0].ToString();
}

TEST(Controller, AGangsLaunchAsksTheCloudForAllOrNothing) {
  Harness h;
  LaunchAction gang = h.Launch("g5.xlarge/us-east-1a/spot", 2);
  gang.all_or_nothing = true;
  h.next_plan.launches = {gang, h.Launch("g5.xlarge/us-east-1b/spot", 1)};
  h.controller->Tick();
  ASSERT_EQ(h.cloud.launches.size(), 2u);
  EXPECT_TRUE(h.cloud.launches[0].all_or_nothing);
  EXPECT_FALSE(h.cloud.launches[1].all_or_nothing);
}

// pools[].placement_group goes with a gang's launch only: a lone node is
// not held to one placement group's zone and capacity.
TEST(Controller, OnlyAGangsLaunchNamesThePoolsPlacementGroup) {
  Policy policy = TestPolicy();
  policy.pools[0].placement_group = "train-gangs";
  Harness h(policy);
  LaunchAction gang = h.Launch("g5.xlarge/us-east-1a/spot", 2);
  gang.all_or_nothing = true;
  h.next_plan.launches = {gang, h.Launch("g5.xlarge/us-east-1b/spot", 1)};
  h.controller->Tick();
  ASSERT_EQ(h.cloud.launches.size(), 2u);
  EXPECT_EQ(h.cloud.launches[0].placement_group, "train-gangs");
  EXPECT_EQ(h.cloud.launches[1].placement_group, "");
  // The snapshot's nodes say which run in the group (the planner keeps the
  // pool's next gangs in their zone).
  std::map<std::string, int> in_group;
  for (const Node& n : h.controller->snapshot().nodes) ++in_group[n.placement_group];
  EXPECT_EQ(in_group, (std::map<std::string, int>{{"", 1}, {"train-gangs", 2}}));
}

TEST(Controller, WritesTheIntentBeforeCallingTheCloud) {
  Harness h;
  std::vector<ActionRow> open_at_call;
  h.cloud.on_launch = [&](const LaunchRequest&) { open_at_call = std::move(h.store->OpenIntents()).value(); };
  h.next_plan.launches = {h.Launch("g5.xlarge/us-east-1a/spot", 1)};
  TickReport r = h.controller->Tick();
  ASSERT_EQ(open_at_call.size(), 1u);
  EXPECT_EQ(open_at_call[0].action.kind, ActionKind::kLaunch);
  EXPECT_EQ(open_at_call[0].action.idempotency_token, std::to_string(r.decision_id) + "-0");
  EXPECT_EQ(h.cloud.launches[0].idempotency_token, std::to_string(r.decision_id) + "-0");
  // And the outcome afterwards: nothing is left open.
  EXPECT_TRUE(std::move(h.store->OpenIntents()).value().empty());
}

TEST(Controller, DoesNotCallTheCloudWhenTheIntentCannotBeWritten) {
  Harness h;
  h.next_plan.launches = {h.Launch("g5.xlarge/us-east-1a/spot", 1)};
  h.next_plan.launches[0].count = 1;
  // First tick: the action gets token "<decision>-0". Replaying the same token
  // (same decision id) cannot happen, so force a store failure by closing the
  // tick early: record an intent with the token the controller will use.
  ActionRecord clash;
  clash.idempotency_token = "1-0";
  clash.kind = ActionKind::kLaunch;
  ASSERT_TRUE(h.store->RecordActionIntent(clash).ok());
  TickReport r = h.controller->Tick();
  ASSERT_EQ(r.decision_id, 1);
  EXPECT_TRUE(h.cloud.launches.empty());
  EXPECT_FALSE(r.errors.empty());
}

TEST(Controller, CapacityErrorFallsBackInOrderAndMarksTheOfferingUnavailable) {
  Harness h;
  h.cloud.no_capacity = {"g5.xlarge/us-east-1a/spot"};
  h.next_plan.launches = {h.Launch("g5.xlarge/us-east-1a/spot", 1,
                                   {"g5.xlarge/us-east-1b/spot", "g5.xlarge/us-east-1a/on-demand"})};
  TickReport r = h.controller->Tick();
  ASSERT_EQ(h.cloud.launches.size(), 1u);
  ASSERT_EQ(h.cloud.launches[0].offerings.size(), 3u);
  EXPECT_EQ(h.cloud.launches[0].offerings[0].Key(), "g5.xlarge/us-east-1a/spot");
  EXPECT_EQ(h.cloud.launches[0].offerings[1].Key(), "g5.xlarge/us-east-1b/spot");
  EXPECT_EQ(r.capacity_errors, 1);
  EXPECT_EQ(r.nodes_launched, 1);
  EXPECT_EQ(h.controller->snapshot().nodes[0].offering.zone, "us-east-1b");

  h.clock.Advance(Seconds(60));
  h.controller->Tick();
  EXPECT_FALSE(Find(h.seen.back(), "g5.xlarge/us-east-1a/spot").available);
  EXPECT_TRUE(Find(h.seen.back(), "g5.xlarge/us-east-1b/spot").available);
  // The mark expires (first error: the base back-off of 3 minutes).
  h.clock.Advance(Seconds(180));
  h.controller->Tick();
  EXPECT_TRUE(Find(h.seen.back(), "g5.xlarge/us-east-1a/spot").available);
}

TEST(Controller, UnavailableOfferingsAreLeftOutOfLaterLaunches) {
  Harness h;
  h.cloud.no_capacity = {"g5.xlarge/us-east-1a/spot"};
  h.next_plan.launches = {h.Launch("g5.xlarge/us-east-1a/spot", 1, {"g5.xlarge/us-east-1b/spot"})};
  h.controller->Tick();
  h.clock.Advance(Seconds(60));
  h.next_plan.launches = {h.Launch("g5.xlarge/us-east-1a/spot", 1, {"g5.xlarge/us-east-1b/spot"})};
  h.controller->Tick();
  ASSERT_EQ(h.cloud.launches.size(), 2u);
  ASSERT_EQ(h.cloud.launches[1].offerings.size(), 1u);
  EXPECT_EQ(h.cloud.launches[1].offerings[0].Key(), "g5.xlarge/us-east-1b/spot");
}

TEST(Controller, NoOnDemandFallbackWhenThePolicyForbidsIt) {
  Policy p = TestPolicy();
  p.spot.fallback_to_on_demand = false;
  Harness h(p);
  h.cloud.no_capacity = {"g5.xlarge/us-east-1a/spot"};
  h.next_plan.launches = {h.Launch("g5.xlarge/us-east-1a/spot", 1, {"g5.xlarge/us-east-1a/on-demand"})};
  TickReport r = h.controller->Tick();
  ASSERT_EQ(h.cloud.launches.size(), 1u);
  EXPECT_EQ(h.cloud.launches[0].offerings.size(), 1u);
  EXPECT_EQ(r.nodes_launched, 0);
}

Policy HardBudgetPolicy(double hourly_usd) {
  Policy p = TestPolicy();
  p.budget.global.hourly_usd = hourly_usd;
  p.budget.global.hard = true;
  return p;
}

Result<std::vector<ActionRow>> ActionsOf(const Harness& h, int64_t decision_id) {
  Result<std::unique_ptr<AuditReader>> reader = h.store->OpenReader();
  if (!reader) return reader.error();
  return (*reader)->ActionsForDecision(decision_id);
}

// Spot $0.40/h, on-demand $1.00/h, a hard cap of $1.00/h: two spot nodes fit,
// two on-demand nodes would not.
TEST(Controller, AFallbackThatWouldBreakAHardBudgetIsNotSent) {
  Harness h(HardBudgetPolicy(1.0));
  h.cloud.no_capacity = {"g5.xlarge/us-east-1a/spot"};
  h.next_plan.launches = {h.Launch("g5.xlarge/us-east-1a/spot", 2, {"g5.xlarge/us-east-1a/on-demand"})};
  TickReport r = h.controller->Tick();
  ASSERT_EQ(h.cloud.launches.size(), 1u);
  ASSERT_EQ(h.cloud.launches[0].offerings.size(), 1u);
  EXPECT_EQ(h.cloud.launches[0].offerings[0].Key(), "g5.xlarge/us-east-1a/spot");
  EXPECT_EQ(r.nodes_launched, 0);
  EXPECT_TRUE(h.controller->snapshot().nodes.empty());
  bool noted = false;
  for (const std::string& n : r.governor.notes) noted |= n.find("would exceed the hard global budget") != std::string::npos;
  EXPECT_TRUE(noted);
  Result<std::vector<ActionRow>> actions = ActionsOf(h, r.decision_id);
  ASSERT_TRUE(actions.ok()) << actions.error().ToString();
  ASSERT_EQ(actions->size(), 1u);
  EXPECT_NE((*actions)[0].action.reason.find("not sent: 2 x g5.xlarge/us-east-1a/on-demand ($2.00/h)"),
            std::string::npos)
      << (*actions)[0].action.reason;
}

TEST(Controller, WithinTheHardBudgetTheFallbackIsSentAndTheRowNamesWhatWasBought) {
  Harness h(HardBudgetPolicy(2.5));
  h.cloud.no_capacity = {"g5.xlarge/us-east-1a/spot"};
  h.next_plan.launches = {h.Launch("g5.xlarge/us-east-1a/spot", 2, {"g5.xlarge/us-east-1a/on-demand"})};
  TickReport r = h.controller->Tick();
  ASSERT_EQ(h.cloud.launches.size(), 1u);
  EXPECT_EQ(h.cloud.launches[0].offerings.size(), 2u);
  EXPECT_EQ(r.nodes_launched, 2);
  Result<std::vector<ActionRow>> actions = ActionsOf(h, r.decision_id);
  ASSERT_TRUE(actions.ok()) << actions.error().ToString();
  ASSERT_EQ(actions->size(), 1u);
  EXPECT_EQ((*actions)[0].action.offering.Key(), "g5.xlarge/us-east-1a/spot");  // the intent
  EXPECT_NE((*actions)[0].detail.find("launched 2 x g5.xlarge/us-east-1a/on-demand"), std::string::npos)
      << (*actions)[0].detail;
}

// Nodes running count against the cap: with $0.80/h running under a $1.00/h
// cap, even the spot offering does not fit; nothing is sent and the row says why.
TEST(Controller, ALaunchNoOfferingOfWhichFitsTheHardBudgetIsRecordedAndNeverSent) {
  Harness h(HardBudgetPolicy(1.0));
  h.next_plan.launches = {h.Launch("g5.xlarge/us-east-1a/spot", 2)};
  h.controller->Tick();
  ASSERT_EQ(h.controller->snapshot().nodes.size(), 2u);
  h.clock.Advance(Seconds(60));
  h.next_plan.launches = {h.Launch("g5.xlarge/us-east-1b/spot", 1, {"g5.xlarge/us-east-1b/on-demand"})};
  TickReport r = h.controller->Tick();
  EXPECT_EQ(h.cloud.launches.size(), 1u);  // the first tick's only
  Result<std::vector<ActionRow>> actions = ActionsOf(h, r.decision_id);
  ASSERT_TRUE(actions.ok()) << actions.error().ToString();
  ASSERT_EQ(actions->size(), 1u);
  EXPECT_EQ((*actions)[0].outcome, ActionOutcome::kFailed);
  EXPECT_NE((*actions)[0].detail.find("would exceed the hard global budget ($0.20/h left of $1.00/h)"),
            std::string::npos)
      << (*actions)[0].detail;
}

// budget.teams: the team's share of what a fallback buys counts against its
// cap. Two 1-GPU units of team ml: spot ($0.80/h) fits its $1.00/h cap,
// the on-demand fallback ($2.00/h) does not, and the global cap is unset.
TEST(Controller, AFallbackThatWouldBreakATeamsHardBudgetIsNotSent) {
  Policy p = TestPolicy();
  p.classes[0].team = "ml";
  p.budget.per_team["ml"].hourly_usd = 1.0;
  Harness h(p);
  DemandUnit unit;
  unit.workload_class = "batch";
  unit.gpus = 1;
  unit.id = "u1";
  DemandUnit other = unit;
  other.id = "u2";
  h.work.SetPending({unit, other});
  h.cloud.no_capacity = {"g5.xlarge/us-east-1a/spot"};
  LaunchAction launch = h.Launch("g5.xlarge/us-east-1a/spot", 2, {"g5.xlarge/us-east-1a/on-demand"});
  launch.unit_ids = {"u1", "u2"};
  h.next_plan.launches = {launch};
  TickReport r = h.controller->Tick();
  ASSERT_EQ(h.cloud.launches.size(), 1u);
  ASSERT_EQ(h.cloud.launches[0].offerings.size(), 1u);
  EXPECT_EQ(h.cloud.launches[0].offerings[0].Key(), "g5.xlarge/us-east-1a/spot");
  EXPECT_EQ(r.nodes_launched, 0);
  bool noted = false;
  for (const std::string& n : r.governor.notes)
    noted |= n.find("would exceed the hard team ml budget ($1.00/h left of $1.00/h)") != std::string::npos;
  EXPECT_TRUE(noted);
}

// disruption.disruption_interval: a rolling window, per pool, of the nodes
// plans removed; interruptions do not count.
TEST(Controller, RecentlyDisruptedIsARollingWindowOfTheNodesPlansRemoved) {
  Harness h;
  h.next_plan.launches = {h.Launch("g5.xlarge/us-east-1a/on-demand", 3)};
  h.controller->Tick();
  const std::vector<Node> nodes = h.controller->snapshot().nodes;
  ASSERT_EQ(nodes.size(), 3u);
  h.clock.Advance(Seconds(60));
  h.next_plan.terminations = {h.Terminate(nodes[0].instance_id), h.Terminate(nodes[1].instance_id)};
  h.controller->Tick();
  h.clock.Advance(Seconds(60));
  h.controller->Tick();
  EXPECT_EQ(h.seen.back().recently_disrupted.at("gpu"), 2);
  h.clock.Advance(Seconds(600));  // the policy's default interval
  h.controller->Tick();
  EXPECT_TRUE(h.seen.back().recently_disrupted.empty());
}

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

// A monthly cap must not restart at zero with the process: the month-to-date
// spend, whole and per pool, comes back from the audit store.
TEST(ControllerRecovery, MonthToDateSpendIsRestoredFromTheStore) {
  Harness h;
  h.next_plan.launches = {h.Launch("g5.xlarge/us-east-1a/on-demand", 2)};  // $2.00/h
  h.controller->Tick();
  for (int i = 0; i < 3; ++i) {
    h.clock.Advance(Seconds(3600));
    h.controller->Tick();
  }
  EXPECT_NEAR(h.seen.back().month_to_date_usd, 6.0, 1e-6);
  EXPECT_NEAR(h.seen.back().month_to_date_usd_by_pool.at("gpu"), 6.0, 1e-6);

  h.clock.Advance(Seconds(1800));  // a restart half an hour later
  std::vector<Snapshot> seen;
  ControllerOptions o;
  o.reuse_unchanged_plans = false;
  Controller restarted(h.clock, h.cloud, h.store.get(), h.work, h.catalog, TestPolicy(), o,
                       [&seen](const Snapshot& s, const Policy&) {
                         seen.push_back(s);
                         return Plan{};
                       });
  restarted.Tick();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_NEAR(seen[0].month_to_date_usd, 7.0, 1e-6);
  EXPECT_NEAR(seen[0].month_to_date_usd_by_pool.at("gpu"), 7.0, 1e-6);
}

TEST(Controller, StaleSignalBlocksScaleDownOfTheClassPools) {
  Harness h;
  h.next_plan.launches = {h.Launch("g5.xlarge/us-east-1a/on-demand", 1)};
  h.controller->Tick();
  const std::string id = h.controller->snapshot().nodes.at(0).instance_id;

  struct Case {
    std::string name;
    std::optional<Seconds> age;  // unset: missing
    bool terminated;
  };
  const std::vector<Case> cases = {{"missing", std::nullopt, false},
                                   {"stale", Seconds(600), false},
                                   {"fresh", Seconds(10), true}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    h.clock.Advance(Seconds(60));
    SignalStatus s{"queue", "prometheus", {"batch"}, std::nullopt, 3};
    if (c.age) s.sampled_at = h.clock.WallNow() - *c.age;
    h.work.signals = {s};
    h.next_plan.terminations = {h.Terminate(id)};
    TickReport r = h.controller->Tick();
    EXPECT_EQ(r.nodes_terminated, c.terminated ? 1 : 0);
    if (!c.terminated) {
      EXPECT_EQ(r.blocked_classes, std::vector<std::string>{"batch"});
      EXPECT_EQ(h.seen.back().scale_down_blocked_classes, std::vector<std::string>{"batch"});
    }
  }
  EXPECT_EQ(h.cloud.terminations.size(), 1u);
}

// Empty nodes a plan leaves for later ticks lower the pool's scale-down
// recommendation only where removals are allowed: while a class's signals
// are stale its pools' recommendation stays the pool as it is, so the first
// removal after the signals come back still waits for the stabilization
// window.
TEST(Controller, EmptyNodesLeftForLaterDoNotLowerARecommendationWhileSignalsAreStale) {
  Policy p = TestPolicy();
  p.scaling.scale_down_stabilization = Seconds(300);
  p.scaling.scale_down_cooldown = Seconds(0);
  for (bool stale_first : {true, false}) {
    SCOPED_TRACE(stale_first ? "stale, then fresh" : "fresh throughout");
    Harness h(p);
    h.next_plan.launches = {h.Launch("g5.xlarge/us-east-1a/on-demand", 2)};
    h.controller->Tick();
    const std::string id = h.controller->snapshot().nodes.at(0).instance_id;
    h.clock.Advance(Seconds(600));  // the launch's recommendation has left the window
    SignalStatus s{"queue", "prometheus", {"batch"}, h.clock.WallNow() - Seconds(stale_first ? 600 : 10), 3};
    h.work.signals = {s};
    h.next_plan.empty_nodes_left_by_pool["gpu"] = 2;
    EXPECT_EQ(h.controller->Tick().nodes_terminated, 0);
    h.clock.Advance(Seconds(60));
    h.work.signals[0].sampled_at = h.clock.WallNow() - Seconds(10);
    h.next_plan.terminations = {h.Terminate(id)};
    h.next_plan.empty_nodes_left_by_pool["gpu"] = 1;
    // After the stale tick the window holds a 2-node recommendation; after a
    // fresh one it holds 0 nodes (the plan did not need either).
    EXPECT_EQ(h.controller->Tick().nodes_terminated, stale_first ? 0 : 1);
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

TEST(Controller, NoTerminationsWhenTheInstanceListFails) {
  Harness h;
  h.next_plan.launches = {h.Launch("g5.xlarge/us-east-1a/on-demand", 1)};
  h.controller->Tick();
  const std::string id = h.controller->snapshot().nodes.at(0).instance_id;
  h.clock.Advance(Seconds(60));
  h.cloud.next_list_error = Error::Transient("timeout");
  h.next_plan.terminations = {h.Terminate(id)};
  TickReport r = h.controller->Tick();
  EXPECT_EQ(r.nodes_terminated, 0);
  EXPECT_TRUE(h.cloud.terminations.empty());
}

TEST(Controller, AFailedTerminationIsCountedAndTheNodeKept) {
  Harness h;
  h.next_plan.launches = {h.Launch("g5.xlarge/us-east-1a/on-demand", 1)};
  h.controller->Tick();
  const std::string id = h.controller->snapshot().nodes.at(0).instance_id;
  h.clock.Advance(Seconds(60));
  h.cloud.next_terminate_error = Error::Auth("UnauthorizedOperation: not allowed to terminate");
  h.next_plan.terminations = {h.Terminate(id)};
  TickReport r = h.controller->Tick();
  EXPECT_EQ(r.nodes_terminated, 0);
  EXPECT_EQ(r.terminations_failed, 1);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].message().rfind("terminate " + id, 0), 0u) << r.errors[0].ToString();
  EXPECT_EQ(h.cloud.instances.count(id), 1u);
}

TEST(Controller, ScaleDownWaitsForTheStabilizationWindow) {
  Policy p = TestPolicy();
  p.scaling.scale_down_stabilization = Seconds(300);
  Harness h(p);
  h.next_plan.launches = {h.Launch("g5.xlarge/us-east-1a/on-demand", 1)};
  h.controller->Tick();  // recommendation: 1 node
  const std::string id = h.controller->snapshot().nodes.at(0).instance_id;
  int terminated_at = -1;
  for (int minute = 1; minute <= 8 && terminated_at < 0; ++minute) {
    h.clock.Advance(Seconds(60));
    h.next_plan.terminations = {h.Terminate(id)};  // recommendation: 0 nodes
    if (h.controller->Tick().nodes_terminated == 1) terminated_at = minute;
  }
  // The 1-node recommendation of minute 0 must leave the 300 s window first.
  EXPECT_EQ(terminated_at, 6);
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

TEST(ScalingGovernor, CapsNodesAddedAndRemovedPerTick) {
  ScalingPolicy s;
  s.scale_down_stabilization = Seconds(0);
  s.scale_down_cooldown = Seconds(0);
  s.max_nodes_added_per_tick = 3;
  s.max_nodes_removed_per_tick = 1;
  ScalingGovernor g;
  Plan plan;
  LaunchAction l;
  l.pool = "gpu";
  l.count = 5;
  plan.launches = {l};
  TerminationAction t;
  t.pool = "other";
  plan.terminations = {t, t};
  GovernorResult r = g.Apply(s, {{"gpu", 0}, {"other", 4}}, FromUnixSeconds(0), &plan);
  EXPECT_EQ(plan.launches[0].count, 3);
  EXPECT_EQ(r.launches_held, 2);
  EXPECT_EQ(plan.terminations.size(), 1u);
  EXPECT_EQ(r.terminations_held, 1);
}

namespace learned_risk {

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

}  // namespace learned_risk

namespace recovery {

// What the controller writes before calling the cloud, as if a previous run
// had crashed right after writing it (and, with `call_went_through`, right
// after the cloud answered, before the outcome was recorded).
ActionRow LeaveOpenLaunch(Harness& h, WallTime decided, bool call_went_through, int count = 2) {
  DecisionRecord d;
  d.time = decided;
  d.policy_name = "test";
  d.policy_hash = "h";
  const int64_t decision = std::move(h.store->RecordDecision(d)).value();
  ActionRecord a;
  a.decision_id = decision;
  a.kind = ActionKind::kLaunch;
  a.idempotency_token = std::to_string(decision) + "-0";
  a.pool = "gpu";
  a.offering.instance_type = "g5.xlarge";
  a.offering.region = "us-east-1";
  a.offering.zone = "us-east-1a";
  a.offering.capacity_type = CapacityType::kOnDemand;
  a.offering.usd_per_hour = a.offering.on_demand_usd_per_hour = 1.0;
  a.count = count;
  a.reason = "3 pending units";
  const int64_t id = std::move(h.store->RecordActionIntent(a)).value();
  if (call_went_through) {
    LaunchRequest r;
    r.pool = "gpu";
    r.count = count;
    r.offerings = {a.offering};
    r.idempotency_token = a.idempotency_token;
    r.tags = {{kOwnerTag, "gpu"}, {kIntentTag, a.idempotency_token}};
    EXPECT_TRUE(h.cloud.Launch(r).ok());
  }
  ActionRow row;
  row.id = id;
  row.action = a;
  return row;
}

int Nodes(Harness& h) {
  auto reader = h.store->OpenReader();
  return static_cast<int>(std::move((*reader)->NodesOverlapping(WallTime(), WallTime(Seconds(int64_t{1} << 40)))).value().size());
}

TEST(ControllerRecovery, ALaunchWhoseCallWentThroughIsCompletedNotRepeated) {
  Harness h;
  h.clock.Advance(Seconds(1790000000));
  ActionRow open = LeaveOpenLaunch(h, h.clock.WallNow(), /*call_went_through=*/true);
  h.clock.Advance(Seconds(20));  // the restart
  TickReport r = h.controller->Tick();
  EXPECT_EQ(h.cloud.instances.size(), 2u);        // no duplicate
  ASSERT_EQ(h.cloud.launches.size(), 2u);         // the original call and the replay
  EXPECT_EQ(h.cloud.launches[1].idempotency_token, open.action.idempotency_token);
  EXPECT_TRUE(std::move(h.store->OpenIntents()).value().empty());
  EXPECT_EQ(h.controller->snapshot().nodes.size(), 2u);
  EXPECT_EQ(Nodes(h), 2);  // recorded once each, with their decision
  EXPECT_TRUE(r.errors.empty()) << r.errors[0].ToString();
}

TEST(ControllerRecovery, ALaunchThatNeverReachedTheCloudIsSentOnceWithinTheWindow) {
  Harness h;
  h.clock.Advance(Seconds(1790000000));
  LeaveOpenLaunch(h, h.clock.WallNow(), /*call_went_through=*/false);
  h.clock.Advance(Seconds(30));
  h.controller->Tick();
  EXPECT_EQ(h.cloud.instances.size(), 2u);
  EXPECT_EQ(h.cloud.launches.size(), 1u);
  for (const auto& [id, inst] : h.cloud.instances) EXPECT_EQ(inst.tags.count(kIntentTag), 1u);
  EXPECT_TRUE(std::move(h.store->OpenIntents()).value().empty());
  // A second tick does not replay it again.
  h.controller->Tick();
  EXPECT_EQ(h.cloud.instances.size(), 2u);
}

TEST(ControllerRecovery, AnIntentOlderThanTheWindowIsAbandonedAndItsInstancesAdopted) {
  Harness h;
  h.clock.Advance(Seconds(1790000000));
  LeaveOpenLaunch(h, h.clock.WallNow(), /*call_went_through=*/true);
  h.clock.Advance(Seconds(3600));  // down for an hour
  h.controller->Tick();
  EXPECT_EQ(h.cloud.launches.size(), 1u);  // not replayed
  EXPECT_TRUE(std::move(h.store->OpenIntents()).value().empty());
  EXPECT_EQ(h.controller->snapshot().nodes.size(), 2u);  // found by the owner tag: not untracked
}

TEST(ControllerRecovery, AnOpenTerminationIsSentAgain) {
  Harness h;
  h.clock.Advance(Seconds(1790000000));
  h.next_plan.launches = {h.Launch("g5.xlarge/us-east-1a/on-demand", 1)};
  h.controller->Tick();
  ASSERT_EQ(h.cloud.instances.size(), 1u);
  const std::string id = h.cloud.instances.begin()->first;
  ActionRecord t;
  t.kind = ActionKind::kTerminate;
  t.idempotency_token = "crash-terminate";
  t.pool = "gpu";
  t.offering = h.cloud.instances.begin()->second.offering;
  t.count = 1;
  t.instance_ids = {id};
  t.reason = "consolidation";
  ASSERT_TRUE(h.store->RecordActionIntent(t).ok());
  Harness restarted;  // a new controller on the same cloud and store
  restarted.store = std::move(h.store);
  ControllerOptions o;
  o.reuse_unchanged_plans = false;
  restarted.controller = std::make_unique<Controller>(h.clock, h.cloud, restarted.store.get(), restarted.work,
                                                      restarted.catalog, TestPolicy(), o,
                                                      [](const Snapshot&, const Policy&) { return Plan{}; });
  restarted.controller->Tick();
  EXPECT_TRUE(h.cloud.instances.empty());
  ASSERT_EQ(h.cloud.terminations.size(), 1u);
  EXPECT_EQ(h.cloud.terminations[0], std::vector<std::string>{id});
  EXPECT_TRUE(std::move(restarted.store->OpenIntents()).value().empty());
}

}  // namespace recovery

}  // namespace
}  // namespace gpuscaler

namespace gpuscaler {
namespace {

// The summary recorded with a decision describes the plan as governed, the
// one stored as plan_json and acted on, not the planner's proposal.
TEST(Controller, RecordedSummaryDescribesThePlanTheGovernorTrimmed) {
  Policy policy = TestPolicy();
  policy.scaling.max_nodes_removed_per_tick = 0;
  Harness h(policy);
  h.next_plan.launches = {h.Launch("g5.xlarge/us-east-1a/on-demand", 2)};
  ASSERT_EQ(h.controller->Tick().nodes_launched, 2);
  ASSERT_EQ(h.controller->snapshot().nodes.size(), 2u);
  h.clock.Advance(Seconds(60));
  Plan proposal;
  for (const Node& n : h.controller->snapshot().nodes) {
    TerminationAction t = h.Terminate(n.instance_id);
    t.offering = n.offering;
    proposal.terminations.push_back(t);
  }
  proposal.cost_before_usd_per_hour = 2.0;
  proposal.cost_after_usd_per_hour = 0.0;
  proposal.summary = "launch 0 node(s), terminate 2";  // the proposal's own words
  h.next_plan = proposal;

  const TickReport r = h.controller->Tick();
  ASSERT_TRUE(r.planned);
  EXPECT_EQ(r.governor.terminations_held, 2);
  EXPECT_TRUE(r.plan.terminations.empty());
  EXPECT_EQ(r.nodes_terminated, 0);
  std::unique_ptr<AuditReader> reader = std::move(h.store->OpenReader()).value();
  Result<DecisionRow> d = reader->Decision(r.decision_id);
  ASSERT_TRUE(d.ok()) << d.error().ToString();
  EXPECT_NE(d->decision.summary.find("terminate 0"), std::string::npos) << d->decision.summary;
  EXPECT_EQ(d->decision.summary.find("terminate 2"), std::string::npos) << d->decision.summary;
  EXPECT_NE(d->decision.summary.find("max_nodes_removed_per_tick"), std::string::npos) << d->decision.summary;
  EXPECT_EQ(d->decision.plan_json.find("\"instance_id\""), std::string::npos) << d->decision.plan_json;
  EXPECT_EQ(d->decision.summary, r.plan.summary);
  EXPECT_DOUBLE_EQ(d->decision.cost_after_usd_per_hour, d->decision.cost_before_usd_per_hour);
  EXPECT_TRUE(std::move(reader->ActionsForDecision(r.decision_id)).value().empty());
}

}  // namespace
}  // namespace gpuscaler
