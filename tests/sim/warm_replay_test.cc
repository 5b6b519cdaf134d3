// Warm capacity (pools[].warm) through the controller, in replays of the
// demo's load on the simulated cloud (the loop the daemon runs): stopped
// nodes are woken for pending work instead of cold launches, refills are
// stopped once ready, the stopped nodes' volumes are billed, and
// gpuscaler-reactive runs without them.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpuscaler/policy/loader.h"
#include "sim/report.h"
#include "sim/runner.h"
#include "sim/scenario.h"

namespace gpuscaler::sim::warm_replay_test {
namespace {

// Two demo days; the inference pool keeps `size` stopped nodes, and a
// waiting inference request is valued high enough that a wake beats a spot
// launch.
Scenario WarmDemo(int size) {
  Result<Scenario> s = MakeBuiltinScenario("demo", 11, 2, BuiltinCatalog());
  EXPECT_TRUE(s.ok()) << s.error().ToString();
  NodePoolPolicy& pool = s->policy.pools[0];
  EXPECT_EQ(pool.name, "inference");
  pool.warm = WarmPoolPolicy{};
  pool.warm->size = size;
  pool.warm->max_usd_per_hour = 5;
  s->policy.classes[0].wait_cost_usd_per_hour = 200;
  s->policy.content_hash = PolicyContentHash(s->policy);
  return std::move(s).value();
}

RunResult RunNamed(const Scenario& s, const std::string& name) {
  Result<RunSpec> spec = MakeRunSpec(name, s, nullptr);
  EXPECT_TRUE(spec.ok());
  return RunScenario(s, *spec, {});
}

TEST(WarmReplay, WokenNodesCutTheInferenceWaitAndTheirVolumesAreBilled) {
  const Scenario s = WarmDemo(4);
  const RunResult warm = RunNamed(s, "gpuscaler");
  const RunResult reactive = RunNamed(s, "gpuscaler-reactive");
  EXPECT_GT(warm.warm_wakes, 0);
  EXPECT_GT(warm.warm_stopped_usd, 0);
  EXPECT_EQ(reactive.warm_wakes, 0) << "gpuscaler-reactive runs without warm capacity";
  EXPECT_EQ(reactive.warm_stopped_usd, 0);
  const double warm_p95 = warm.queue_wait_s_by_class.at("inference").p95;
  const double reactive_p95 = reactive.queue_wait_s_by_class.at("inference").p95;
  EXPECT_LT(warm_p95, reactive_p95);
  double stopped = 0;
  int wakes = 0;
  for (const InstanceBill& b : warm.bills) {
    stopped += b.stopped_usd;
    wakes += b.wakes;
    EXPECT_LE(b.stopped_usd, b.usd + 1e-9) << b.instance_id;
  }
  EXPECT_NEAR(stopped, warm.warm_stopped_usd, 1e-9);
  EXPECT_EQ(wakes, warm.warm_wakes);
  // What `gpuscaler sim` prints: the table's row and the JSON's keys, for
  // the run with warm capacity only.
  const std::string table = FormatSummaryTable(s, {warm, reactive});
  EXPECT_NE(table.find("warm nodes woken / stopped cost"), std::string::npos) << table;
  const nlohmann::json doc = nlohmann::json::parse(FormatJson(s, {warm, reactive}));
  EXPECT_EQ(doc["results"][0]["warm_wakes"], warm.warm_wakes);
  EXPECT_NEAR(doc["results"][0]["warm_stopped_usd"].get<double>(), warm.warm_stopped_usd, 1e-9);
  EXPECT_FALSE(doc["results"][1].contains("warm_wakes"));
  EXPECT_EQ(FormatSummaryTable(s, {reactive}).find("warm nodes woken"), std::string::npos);
}

TEST(WarmReplay, EveryWakeStartsANodeThatWasStoppedAndRefillsAreStoppedOnceReady) {
  const Scenario s = WarmDemo(3);
  Result<RunSpec> spec = MakeRunSpec("gpuscaler", s, nullptr);
  ASSERT_TRUE(spec.ok());
  Replay replay(s, *spec);
  TickReport tick;
  std::set<std::string> stopped_before;
  int wakes = 0, refills = 0, max_warm = 0;
  while (!replay.done()) {
    std::set<std::string> stopped;
    for (const WarmNode& w : replay.controller().snapshot().warm_nodes) {
      EXPECT_EQ(w.pool, "inference");
      EXPECT_EQ(w.offering.capacity_type, CapacityType::kOnDemand);
      stopped.insert(w.instance_id);  // stopped, or a refill stopped within the step
    }
    max_warm = std::max(max_warm, static_cast<int>(replay.controller().snapshot().warm_nodes.size()));
    if (!replay.Step(&tick) || !tick.planned) {
      stopped_before = stopped;
      continue;
    }
    for (const LaunchAction& l : tick.plan.launches) {
      if (l.into_warm) refills += l.count;
      for (const std::string& id : l.wake_instance_ids) {
        ++wakes;
        EXPECT_TRUE(stopped_before.count(id) || stopped.count(id)) << id << " was not warm capacity";
      }
    }
    std::set<std::string> warm_now;
    for (const WarmNode& w : replay.controller().snapshot().warm_nodes) warm_now.insert(w.instance_id);
    for (const Node& n : replay.controller().snapshot().nodes) {
      EXPECT_EQ(warm_now.count(n.instance_id), 0u) << n.instance_id << " is both a node and warm";
    }
    stopped_before = stopped;
  }
  EXPECT_GT(wakes, 0);
  EXPECT_GT(refills, 0);
  EXPECT_LE(max_warm, 3 + 1) << "the size, and a refill under way for a woken one";
}

TEST(WarmReplay, SpotWarmNodesWakeAsSpotAndAReclaimStopsThemBackIntoTheWarmCapacity) {
  Scenario s = WarmDemo(4);
  s.policy.pools[0].warm->capacity_type = WarmCapacityType::kSpot;
  s.policy.content_hash = PolicyContentHash(s.policy);
  // Reclaims often enough that woken spot nodes meet some in two days.
  s.cloud.hazard_by_family = {{"g5", 0.3}, {"g6", 0.3}};
  Result<RunSpec> spec = MakeRunSpec("gpuscaler", s, nullptr);
  ASSERT_TRUE(spec.ok());
  Replay replay(s, *spec);
  TickReport tick;
  std::set<std::string> woken;
  while (!replay.done()) {
    for (const WarmNode& w : replay.controller().snapshot().warm_nodes) {
      EXPECT_EQ(w.offering.capacity_type, CapacityType::kSpot) << w.instance_id;
    }
    if (!replay.Step(&tick) || !tick.planned) continue;
    for (const LaunchAction& l : tick.plan.launches) {
      if (l.wake_instance_ids.empty()) continue;
      EXPECT_EQ(l.offering.capacity_type, CapacityType::kSpot) << l.reason;
      woken.insert(l.wake_instance_ids.begin(), l.wake_instance_ids.end());
    }
  }
  const RunResult r = replay.Finish();
  EXPECT_FALSE(woken.empty());
  EXPECT_GT(r.warm_spot_wakes, 0);
  EXPECT_EQ(r.warm_spot_wakes, r.warm_wakes) << "every warm node is spot";
  EXPECT_GT(r.warm_interrupted_stops, 0) << "no reclaim stopped a spot warm node";
  int stops = 0;
  for (const InstanceBill& b : r.bills) {
    if (b.wakes == 0 && b.interrupted_stops == 0) continue;
    EXPECT_EQ(b.capacity_type, CapacityType::kSpot) << b.instance_id;
    stops += b.interrupted_stops;
  }
  EXPECT_EQ(stops, r.warm_interrupted_stops);
  EXPECT_LE(r.warm_interrupted_stops, r.interruptions) << "a reclaim that stops is a reclaim";
}

}  // namespace
}  // namespace gpuscaler::sim::warm_replay_test
