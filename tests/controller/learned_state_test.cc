// The learned state no history rebuilds (learned_state.h): the document
// round-trips every learner and mark, a bad one changes nothing and names
// the field, and a controller that takes over a store (a restart, a new
// leader) starts from what the previous one had learned.
#include "gpuscaler/controller/learned_state.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fakes/fake_clock.h"
#include "fakes/fake_cloud_provider.h"
#include "fakes/fake_work_source.h"
#include "fakes/recording_planner.h"
#include "gpuscaler/controller/controller.h"
#include "gpuscaler/store/sqlite_audit_store.h"
#include "lifecycle_harness.h"

namespace gpuscaler::learned_state_test {
namespace {

const WallTime kStart = FromUnixSeconds(1'780'000'000);

DemandUnit ClassUnit(const std::string& cls, int gpus) {
  DemandUnit u;
  u.id = cls + "-unit";
  u.workload_class = cls;
  u.gpus = gpus;
  u.expected_runtime = Seconds(7200);
  u.checkpoint_interval = Seconds(1800);
  return u;
}

Node RunningNode(const std::string& id, CapacityType capacity, std::vector<DemandUnit> running) {
  Node n;
  n.id = n.instance_id = id;
  n.offering.capacity_type = capacity;
  n.running = std::move(running);
  return n;
}

Policy AccountsPolicy() {
  Policy p;
  WorkloadClassPolicy batch;
  batch.name = "batch";
  batch.max_lost_work_share = 0.05;
  batch.max_spot_share = 0.6;
  batch.spot_share_window = Seconds(6 * 3600);
  p.classes = {batch};
  return p;
}

// Learners and marks with something in each part.
struct Learned {
  Catalog catalog;
  FleetLearners learners{catalog, Seconds(24 * 3600)};
  OfferingAvailability availability;

  explicit Learned(bool fill) {
    if (!fill) return;
    const std::vector<NodeMilestone> seen = {{"g5", "gpus_allocatable", 600}};
    learners.warm_up.Observe(seen);
    availability.RecordCapacityError("g5.xlarge/us-east-1a/spot", kStart);
    availability.RecordCapacityError("g5.xlarge/us-east-1a/spot", kStart + Seconds(400));
    availability.RecordReclaimNotice("g5/us-east-1b", 3, kStart);
    availability.RecordReclaimNotice("g5/us-east-1b", 3, kStart + Seconds(30));
    learners.disruption.PauseSpot("batch", kStart + Seconds(1800));
    const Policy policy = AccountsPolicy();
    const std::vector<Node> nodes = {RunningNode("i-1", CapacityType::kOnDemand, {ClassUnit("batch", 4)}),
                                     RunningNode("i-2", CapacityType::kSpot, {ClassUnit("batch", 2)})};
    learners.lost_work.Accrue(kStart, nodes);
    learners.spot_floor.Observe(policy, kStart, nodes);
    learners.lost_work.Accrue(kStart + Seconds(3600), nodes);
    learners.spot_floor.Observe(policy, kStart + Seconds(3600), nodes);
    learners.lost_work.ChargeInterruption(nodes[1].running);
  }
  Snapshot Published(WallTime now) {
    Snapshot s;
    learners.Publish(AccountsPolicy(), now, s);
    return s;
  }
};

TEST(LearnedStateCodec, RestoresEveryLearnerAndMarkAsSaved) {
  Learned before(true);
  const std::string document = LearnedStateCodec::Save(before.learners, before.availability);
  Learned after(false);
  ASSERT_TRUE(LearnedStateCodec::Restore(document, after.learners, after.availability).ok());
  EXPECT_EQ(LearnedStateCodec::Save(after.learners, after.availability), document);

  const WallTime now = kStart + Seconds(600);
  const Snapshot a = before.Published(now);
  const Snapshot b = after.Published(now);
  EXPECT_EQ(b.warmup_seconds_by_family, a.warmup_seconds_by_family);
  EXPECT_EQ(b.warmup_seconds_by_family.at("g5"), 360);  // the default prior 240 s + (600 - 240) / 3
  EXPECT_EQ(b.spot_paused_classes, std::vector<std::string>{"batch"});
  EXPECT_EQ(b.spot_budget_spent_classes, a.spot_budget_spent_classes);
  EXPECT_EQ(b.spot_budget_spent_classes, std::vector<std::string>{"batch"});
  ASSERT_EQ(b.spot_floor_credit_gpus.count("batch"), 1u);
  EXPECT_DOUBLE_EQ(b.spot_floor_credit_gpus.at("batch"), a.spot_floor_credit_gpus.at("batch"));
  EXPECT_FALSE(after.availability.IsAvailable("g5.xlarge/us-east-1a/spot", now));
  EXPECT_EQ(after.availability.ErrorStreak("g5.xlarge/us-east-1a/spot"), 2);
  EXPECT_EQ(after.availability.Reclaimed(now), before.availability.Reclaimed(now));
  EXPECT_EQ(after.availability.ReclaimWaves("g5/us-east-1b"), 1);
}

// What ran while nobody watched is not counted: the restored accounts
// decay over the gap and add no work for it.
TEST(LearnedStateCodec, ARestoredAccountDecaysOverTheGapWithoutCountingItsWork) {
  Learned before(true);
  Learned after(false);
  ASSERT_TRUE(LearnedStateCodec::Restore(LearnedStateCodec::Save(before.learners, before.availability),
                                         after.learners, after.availability)
                  .ok());
  const Policy policy = AccountsPolicy();
  const std::vector<Node> all_on_demand = {RunningNode("i-9", CapacityType::kOnDemand, {ClassUnit("batch", 8)})};
  const WallTime later = kStart + Seconds(3600 + 6 * 3600);  // one window later
  after.learners.spot_floor.Observe(policy, later, all_on_demand);
  before.learners.spot_floor.Observe(policy, later, all_on_demand);
  Snapshot resumed;
  Snapshot watched;
  after.learners.spot_floor.Publish(policy, resumed);
  before.learners.spot_floor.Publish(policy, watched);
  // Same decayed sums over the same weight: the credit stays what it was;
  // the process that watched the gap counted six hours of on-demand work.
  const Snapshot at_save = Learned(true).Published(kStart + Seconds(3600));
  EXPECT_NEAR(resumed.spot_floor_credit_gpus.at("batch"), at_save.spot_floor_credit_gpus.at("batch"), 1e-9);
  EXPECT_GT(watched.spot_floor_credit_gpus.at("batch"), resumed.spot_floor_credit_gpus.at("batch") + 1);
}

TEST(LearnedStateCodec, ABadDocumentNamesTheFieldAndChangesNothing) {
  Learned target(true);
  const std::string kept = LearnedStateCodec::Save(target.learners, target.availability);
  nlohmann::json good = nlohmann::json::parse(kept);
  struct Case {
    std::string document;
    std::string says;
  };
  nlohmann::json bad_streak = good;
  bad_streak["capacity_errors"]["g5.xlarge/us-east-1a/spot"]["streak"] = "two";
  nlohmann::json bad_warm = good;
  bad_warm["warm_up_s"]["g5"] = -3;
  nlohmann::json no_reclaims = good;
  no_reclaims.erase("reclaims");
  nlohmann::json bad_account = good;
  bad_account["lost_work"]["classes"]["batch"].erase("gpu_hours");
  nlohmann::json newer = good;
  newer["version"] = 2;
  const std::vector<Case> cases = {
      {"[1, 2]", "learned state: not an object"},
      {"{", "not JSON"},
      {newer.dump(), "version 2 (this build reads 1)"},
      {bad_streak.dump(), "capacity_errors.g5.xlarge/us-east-1a/spot.streak: not an integer"},
      {bad_warm.dump(), "warm_up_s.g5: not a number >= 0"},
      {no_reclaims.dump(), "learned state.reclaims: missing"},
      {bad_account.dump(), "lost_work.classes.batch.gpu_hours: missing"},
  };
  for (const Case& c : cases) {
    Status s = LearnedStateCodec::Restore(c.document, target.learners, target.availability);
    ASSERT_FALSE(s.ok()) << c.document;
    EXPECT_EQ(s.error().category(), ErrorCategory::kInvalidInput);
    EXPECT_NE(s.error().message().find(c.says), std::string::npos) << s.error().message();
    EXPECT_EQ(LearnedStateCodec::Save(target.learners, target.availability), kept) << "changed by " << c.document;
  }
}

// A controller over a store, as the daemon runs it (learned_state_owner:
// its cluster name).
struct Scene {
  testing::FakeClock clock;
  testing::FakeCloudProvider cloud{clock};
  testing::FakeWorkSource work;
  Catalog catalog = testing::LifecycleCatalog();
  std::unique_ptr<SqliteAuditStore> store = std::move(SqliteAuditStore::Open(":memory:")).value();
  Plan next_plan;
  std::vector<Snapshot> seen;

  std::unique_ptr<Controller> Make(const std::string& owner) {
    ControllerOptions o;
    o.reuse_unchanged_plans = false;
    o.learned_state_owner = owner;
    Policy p = testing::UndampedGpuPolicy();
    p.spot.fallback_duration = Seconds(1800);
    return std::make_unique<Controller>(clock, cloud, store.get(), work, catalog, p, o,
                                        testing::RecordingPlanner(&seen, &next_plan));
  }
};

LaunchAction SpotLaunch(const Snapshot& snapshot, const std::string& key) {
  LaunchAction l;
  l.pool = "gpu";
  for (const Offering& o : snapshot.offerings) {
    if (o.Key() == key) l.offering = o;
  }
  l.count = 1;
  l.unit_ids = {"job-1"};
  l.reason = "test";
  return l;
}

TEST(LearnedStateTakeover, ANewControllerOnTheStoreKeepsTheCapacityErrorMarkAndTheSpotPause) {
  Scene scene;
  const std::string key = "g5.xlarge/us-east-1a/spot";
  DemandUnit job;
  job.id = "job-1";
  job.workload_class = "batch";
  job.gpus = 1;
  scene.work.SetPending({job});
  scene.cloud.no_capacity = {key};
  {
    std::unique_ptr<Controller> first = scene.Make("prod");
    first->Tick();
    scene.next_plan.launches = {SpotLaunch(scene.seen.back(), key)};
    TickReport r = first->Tick();
    ASSERT_EQ(r.capacity_errors, 1);
  }
  // The next leader (or a restart) a minute later, within the mark's first
  // backoff (3 minutes).
  scene.clock.Advance(Seconds(60));
  std::unique_ptr<Controller> next = scene.Make("prod");
  TickReport r = next->Tick();
  EXPECT_TRUE(r.errors.empty()) << r.errors.front().ToString();
  ASSERT_FALSE(scene.seen.empty());
  EXPECT_EQ(scene.seen.back().spot_paused_classes, std::vector<std::string>{"batch"});
  EXPECT_FALSE(next->availability().IsAvailable(key, scene.clock.WallNow()));
  // Another cluster's controller on the same store learned nothing of it.
  std::unique_ptr<Controller> other = scene.Make("staging");
  other->Tick();
  EXPECT_TRUE(scene.seen.back().spot_paused_classes.empty());
  EXPECT_TRUE(other->availability().IsAvailable(key, scene.clock.WallNow()));
  // Without an owner nothing is saved or restored (the simulator's runs).
  std::unique_ptr<Controller> unnamed = scene.Make("");
  unnamed->Tick();
  EXPECT_TRUE(unnamed->availability().IsAvailable(key, scene.clock.WallNow()));
}

TEST(LearnedStateTakeover, AnUnreadableDocumentIsReportedAndReplacedByTheNextSave) {
  Scene scene;
  ASSERT_TRUE(scene.store->SaveLearnedState("prod", scene.clock.WallNow(), R"({"version": 7})").ok());
  std::unique_ptr<Controller> c = scene.Make("prod");
  TickReport r = c->Tick();
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_NE(r.errors[0].ToString().find("restoring learned state: learned state: version 7"), std::string::npos)
      << r.errors[0].ToString();
  Result<std::optional<std::string>> saved = scene.store->LearnedState("prod");
  ASSERT_TRUE(saved.ok() && saved->has_value());
  EXPECT_EQ(nlohmann::json::parse(**saved)["version"], 1);
}

// The decaying accounts drift every tick: they are saved with the first
// tick and then at most once a minute (learned_state_interval), while a
// moved mark is saved with its tick.
TEST(LearnedStateTakeover, TheDecayingAccountsAreSavedAtMostOnceAMinute) {
  Scene scene;
  std::unique_ptr<Controller> c = scene.Make("prod");
  auto saved_as_of = [&] {
    Result<std::optional<std::string>> saved = scene.store->LearnedState("prod");
    EXPECT_TRUE(saved.ok() && saved->has_value());
    if (!saved.ok() || !saved->has_value()) return int64_t{-1};
    return nlohmann::json::parse(**saved)["lost_work"]["as_of"].get<int64_t>();
  };
  const int64_t start = ToUnixSeconds(scene.clock.WallNow());
  c->Tick();
  EXPECT_EQ(saved_as_of(), start);
  scene.clock.Advance(Seconds(30));
  c->Tick();
  EXPECT_EQ(saved_as_of(), start) << "30 s later: not saved again";
  scene.clock.Advance(Seconds(30));
  c->Tick();
  EXPECT_EQ(saved_as_of(), start + 60) << "a minute later: saved";
}

}  // namespace
}  // namespace gpuscaler::learned_state_test
