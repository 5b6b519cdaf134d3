// Two daemon replicas as the live engine sees them: one leads and ticks, the
// other stands by (Engine::Standby) and never plans, calls the cloud or
// writes the store; a replica that loses the Lease drops what its controller
// held (Engine::Resign) and, leading again, starts from the shared store as
// a restart does, so what the other leader did meanwhile is not lost. Run
// on the demo's simulated world and virtual clock, with one SQLite store
// standing for the shared one.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>

#include "gpuscaler/daemon/engine.h"
#include "gpuscaler/store/sqlite_audit_store.h"
#include "sim/runner.h"
#include "sim/scenario.h"
#include "sim/world.h"
#include "tests/support/temp_dir.h"

namespace gpuscaler::standby_engine_test {
namespace {

using sim::World;

// The month-to-date spend the replica's last snapshot carried (its budget
// guard's figure).
double MonthToDate(const daemon::Engine& e) { return e.controller().snapshot().month_to_date_usd; }

class StandbyEngine : public ::testing::Test {
 protected:
  void SetUp() override {
    Result<sim::Scenario> made = sim::MakeBuiltinScenario("demo", 3, 1, BuiltinCatalog());
    ASSERT_TRUE(made.ok());
    scenario_ = std::make_unique<sim::Scenario>(std::move(made).value());
    preset_ = ControllerOptions::ForSimulation(scenario_->policy);
    // As the daemon runs: restored from the store, open usage intervals
    // written every minute.
    preset_.restore_from_store = true;
    preset_.open_usage_every = Seconds(60);
    preset_.usage_interval = Seconds(600);
    world_ = std::make_unique<World>(*scenario_, scenario_->policy, sim::RunIdPrefix("gpuscaler"),
                                     preset_.max_pending_units);
    Result<std::unique_ptr<SqliteAuditStore>> opened = SqliteAuditStore::Open((dir_.path() / "audit.db").string());
    ASSERT_TRUE(opened.ok()) << opened.error().ToString();
    store_ = std::move(opened).value();
    a_ = MakeReplica();
    b_ = MakeReplica();
  }

  std::unique_ptr<daemon::Engine> MakeReplica() {
    daemon::LiveEngineParts parts;
    parts.clock = &world_->clock();
    parts.cloud = &world_->cloud();
    parts.store = store_.get();
    parts.catalog = &scenario_->catalog;
    parts.work = &world_->work();
    parts.fixed_policy = scenario_->policy;
    parts.before_tick = [w = world_.get()] { return w->RunUntilTick(); };
    parts.after_tick = [w = world_.get()] { w->AfterTick(); };
    parts.controller_options = preset_;
    parts.controller_options.regions = scenario_->regions;
    return daemon::MakeLiveEngine(std::move(parts));
  }

  // `n` ticks of `leader`, the other replica standing by after each.
  int64_t Lead(daemon::Engine& leader, daemon::Engine& standby, int n) {
    int64_t last_decision = 0;
    for (int i = 0; i < n; ++i) {
      const daemon::EngineTick t = leader.Tick();
      for (const Error& e : t.report.errors) ADD_FAILURE() << e.ToString();
      if (t.report.decision_id != 0) last_decision = t.report.decision_id;
      const daemon::EngineTick s = standby.Standby();
      EXPECT_TRUE(s.standby);
    }
    return last_decision;
  }

  testing::TempDir dir_{"gpuscaler-standby"};
  std::unique_ptr<sim::Scenario> scenario_;
  ControllerOptions preset_;
  std::unique_ptr<World> world_;
  std::unique_ptr<SqliteAuditStore> store_;
  std::unique_ptr<daemon::Engine> a_;
  std::unique_ptr<daemon::Engine> b_;
};

TEST_F(StandbyEngine, AStandbyNeverPlansCallsTheCloudOrWritesTheStore) {
  Lead(*a_, *b_, 30);
  const size_t nodes = a_->controller().snapshot().nodes.size();
  ASSERT_GT(nodes, 0u) << "the demo load launches nodes";
  const daemon::EngineTick first = a_->Tick();
  // Between two of the leader's decisions the standby passes ten times:
  // the leader's next decision is the next row, and the standby's
  // controller has seen no node (it never listed the cloud).
  for (int i = 0; i < 10; ++i) b_->Standby();
  const daemon::EngineTick second = a_->Tick();
  if (first.report.decision_id != 0 && second.report.decision_id != 0) {
    EXPECT_EQ(second.report.decision_id, first.report.decision_id + 1);
  }
  EXPECT_TRUE(b_->controller().snapshot().nodes.empty());
  EXPECT_EQ(MonthToDate(*b_), 0.0);
}

TEST_F(StandbyEngine, ALeaderThatLostTheLeaseStartsAgainFromTheSharedStore) {
  Lead(*a_, *b_, 40);
  const double a_spent = MonthToDate(*a_);
  ASSERT_GT(a_spent, 0.0);
  // A loses the Lease: its memory goes. B takes over and restores A's
  // month-to-date and nodes from the store and the cloud on its first tick.
  a_->Resign();
  EXPECT_TRUE(a_->controller().snapshot().nodes.empty());
  EXPECT_EQ(MonthToDate(*a_), 0.0);
  b_->Tick();
  EXPECT_GE(MonthToDate(*b_), a_spent * 0.999) << "B restored what A recorded";
  EXPECT_FALSE(b_->controller().snapshot().nodes.empty());
  Lead(*b_, *a_, 40);
  const double b_spent = MonthToDate(*b_);
  ASSERT_GT(b_spent, a_spent) << "B's own spend, recorded in full usage intervals";
  // A leads again: what B recorded meanwhile is in A's month-to-date.
  b_->Resign();
  a_->Tick();
  EXPECT_GE(MonthToDate(*a_), b_spent * 0.999);
}

}  // namespace
}  // namespace gpuscaler::standby_engine_test
