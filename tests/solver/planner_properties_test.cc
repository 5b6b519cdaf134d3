// The planner on seeded random instances: the same input gives the same
// plan, and every plan passes the independent checker (plan_checker.h).
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>

#include "gpuscaler/solver/planner.h"
#include "solver/consolidation_scenes.h"
#include "solver/fixtures.h"
#include "solver/plan_checker.h"
#include "solver/planner_test_support.h"

namespace gpuscaler::planner_properties_test {
namespace {

using testing::BasePolicy;
using testing::BaseSnapshot;
using testing::CheckPlan;
using testing::MakeNode;
using testing::Mig;
using testing::Milli;
using testing::Unit;
using testing::Units;

Snapshot RandomSnapshot(uint32_t seed, Policy* policy) {
  std::mt19937 rng(seed);
  auto pick = [&](int n) { return int(rng() % uint32_t(n)); };
  Snapshot s = BaseSnapshot();
  for (auto& o : s.offerings) {
    if (pick(10) == 0) o.available = false;
    if (o.capacity_type == CapacityType::kSpot) {
      o.usd_per_hour = o.on_demand_usd_per_hour * (0.3 + 0.5 * pick(100) / 100.0);
      o.interruptions_per_hour = 0.01 * pick(30);
    }
  }
  *policy = BasePolicy();
  policy->classes[0].max_spot_share = pick(3) == 0 ? 0.5 : 1.0;
  policy->classes[1].max_zone_share = pick(3) == 0 ? 0.6 : 1.0;
  // From the seed, not the generator, so the other draws stay as they were.
  policy->spot.max_pool_share = seed % 3 == 0 ? 0.3 : 1.0;
  if (seed % 5 == 0) {
    for (const auto& o : s.offerings) {
      if (o.capacity_type != CapacityType::kSpot) continue;
      s.reclaimed_spot_pools = {o.Key()};
      break;
    }
  }
  policy->pools[0].max_nodes = 5 + pick(30);
  policy->scaling.max_nodes_added_per_tick = 3 + pick(20);
  if (pick(3) == 0) policy->budget.global.hourly_usd = 5.0 + pick(60);
  const int nodes = pick(6);
  for (int i = 0; i < nodes; ++i) {
    const auto& o = s.offerings[pick(int(s.offerings.size()))];
    if (o.instance_type == "m5.xlarge") continue;
    Node n = MakeNode(s, "n" + std::to_string(i), o.instance_type, o.zone, o.capacity_type);
    if (pick(2)) n.running.push_back(Unit("r" + std::to_string(i), 1));
    s.nodes.push_back(n);
  }
  const int units = 1 + pick(40);
  for (int i = 0; i < units; ++i) {
    DemandUnit u;
    switch (pick(5)) {
      case 0: u = Unit("", 1 + pick(4), 1000 * (1 + pick(8)), 1024 * (2 + pick(30))); break;
      case 1: u = Milli("", 100 * (1 + pick(9))); break;
      case 2: u = Mig("", pick(2) ? "1g.10gb" : "3g.40gb"); break;
      case 3: u = Unit("", 0, 1000 * (1 + pick(3)), 2048); break;
      default: u = Unit("", 8, 90000, 500000, "training"); break;
    }
    u.id = "u" + std::to_string(i);
    u.priority = pick(3);
    u.interruptible = pick(4) != 0;
    if (pick(8) == 0) u.zones = {"us-east-1b"};
    if (pick(5) == 0) u.workload_class = "training";
    s.pending.push_back(u);
  }
  return s;
}

TEST(Planner, GivesTheSamePlanForTheSameInput) {
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    Policy p;
    const Snapshot s = RandomSnapshot(seed, &p);
    const std::string a = testing::CanonicalPlan(MakePlan(s, p));
    const Snapshot copy = s;
    const Policy pcopy = p;
    EXPECT_EQ(a, testing::CanonicalPlan(MakePlan(copy, pcopy)));
  }
}

TEST(Planner, RandomInstancesGiveValidPlans) {
  for (uint32_t seed = 1; seed <= 300; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    Policy p;
    const Snapshot s = RandomSnapshot(seed, &p);
    const Plan plan = MakePlan(s, p);
    for (const auto& v : CheckPlan(s, p, plan)) ADD_FAILURE() << v << "\n" << plan.summary;
    // Reported interruption cost equals the sum over launches plus existing work.
    double launches = 0;
    for (const auto& l : plan.launches) launches += l.expected_interruption_usd_per_hour;
    EXPECT_LE(launches, plan.expected_interruption_usd_per_hour + 1e-9);
  }
}

TEST(Planner, RandomInstancesWithFreeRoomAndPinsGiveValidPlans) {
  // More existing nodes than RandomSnapshot, and GPU-model, zone and GPU
  // memory pins, so that the scarcity order and the free-room repairs move
  // work between existing and new nodes.
  for (uint32_t seed = 1; seed <= 200; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    Policy p;
    Snapshot s = RandomSnapshot(seed, &p);
    // The added nodes can put the fleet over a budget or pool max that
    // RandomSnapshot drew for fewer nodes: those limits stay off here.
    p.budget.global.hourly_usd.reset();
    p.pools[0].max_nodes = 1000;
    std::mt19937 rng(seed * 31u + 7u);
    auto pick = [&](int n) { return int(rng() % uint32_t(n)); };
    for (int i = 0; i < 6; ++i) {
      const auto& o = s.offerings[size_t(pick(int(s.offerings.size())))];
      if (o.instance_type == "m5.xlarge") continue;
      Node n = MakeNode(s, "x" + std::to_string(i), o.instance_type, o.zone, o.capacity_type);
      int gpus = 0;
      for (const auto& t : s.instance_types)
        if (t.name == o.instance_type) gpus = t.gpu_count;
      n.running = Units(n.id + "-r", pick(gpus), Unit("", 1));  // at least one GPU stays free
      s.nodes.push_back(n);
    }
    for (auto& u : s.pending) {
      if (u.gpus == 0) continue;
      if (pick(4) == 0) u.gpu_models = {pick(2) ? "a10g" : "l4"};
      if (pick(6) == 0) u.min_gpu_memory_mib = 40000;
      if (pick(5) == 0) u.zones = {"us-east-1a"};
    }
    const Plan plan = MakePlan(s, p);
    for (const auto& v : CheckPlan(s, p, plan)) ADD_FAILURE() << v << "\n" << plan.summary;
    EXPECT_EQ(testing::CanonicalPlan(plan), testing::CanonicalPlan(MakePlan(s, p)));
  }
}

}  // namespace
}  // namespace gpuscaler::planner_properties_test
