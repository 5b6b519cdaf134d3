// Rows of the policy field effects table for the fleet's fields: pools[],
// spot, scaling and disruption, each with the plan difference it makes.
#include <vector>

#include "policy/field_effects_cases.h"

namespace gpuscaler::field_effects_testing {

std::vector<FieldCase> PoolFieldCases() {
  return {
      // --- pools ---
      {"pools[].instance_types", [](Policy& p) { p.pools[0].instance_types = {"g5.xlarge"}; }, InferenceUnits(1),
       MovesType("g6.xlarge", "g5.xlarge")},
      {"pools[].families", [](Policy& p) { p.pools[0].families = {"g5"}; }, InferenceUnits(1),
       MovesType("g6.xlarge", "g5.xlarge")},
      {"pools[].gpu_models", [](Policy& p) { p.pools[0].gpu_models = {"a10g"}; }, InferenceUnits(1),
       MovesType("g6.xlarge", "g5.xlarge")},
      {"pools[].regions", [](Policy& p) { p.pools[0].regions = {"us-east-1"}; },
       [](Snapshot& s, Policy& p) {
         // The same type for half the price in another region.
         for (const CapacityType c : {CapacityType::kOnDemand, CapacityType::kSpot}) {
           Offering o = testing::FindOffering(s, "g6.xlarge", "us-east-1a", c);
           o.region = "us-west-2";
           o.zone = "us-west-2a";
           o.usd_per_hour /= 2;
           o.on_demand_usd_per_hour /= 2;
           s.offerings.push_back(o);
         }
         Demand(s, p, "inference", 1);
       },
       [](const Plan& base, const Plan& set) {
         EXPECT_EQ(Launches(base, RegionOf), std::set<std::string>{"us-west-2"});
         EXPECT_EQ(Launches(set, RegionOf), std::set<std::string>{"us-east-1"});
       }},
      {"pools[].zones", [](Policy& p) { p.pools[0].zones = {"us-east-1b"}; },
       [](Snapshot& s, Policy& p) {
         for (auto& o : s.offerings)
           if (o.zone == "us-east-1b") o.usd_per_hour *= 1.1;
         Demand(s, p, "inference", 1);
       },
       [](const Plan& base, const Plan& set) {
         EXPECT_EQ(Launches(base, ZoneOf), std::set<std::string>{"us-east-1a"});
         EXPECT_EQ(Launches(set, ZoneOf), std::set<std::string>{"us-east-1b"});
       }},
      {"pools[].capacity_types", OnDemandOnly, InferenceUnits(2), KeepsOffSpot(2)},
      {"pools[].min_nodes", [](Policy& p) { p.pools[0].min_nodes = 2; }, [](Snapshot&, Policy&) {},
       [](const Plan& base, const Plan& set) {
         NodesLaunched(0, 2)(base, set);
         EXPECT_EQ(Launches(set, ZoneOf), (std::set<std::string>{"us-east-1a", "us-east-1b"}));
       }},
      // A stopped g6.xlarge waits; an on-demand unit is pending: with warm
      // capacity it is woken instead of a cold launch.
      {"pools[].warm",
       [](Policy& p) {
         p.pools[0].warm = WarmPoolPolicy{};
         p.pools[0].warm->size = 1;
       },
       [](Snapshot& s, Policy&) {
         WarmNode w;
         w.instance_id = "i-warmfield";
         w.pool = "gpu";
         w.offering = testing::FindOffering(s, "g6.xlarge", "us-east-1a", CapacityType::kOnDemand);
         w.since = s.time - Seconds(600);
         s.warm_nodes = {w};
         DemandUnit u = Unit("u0", 1);
         u.capacity_type = CapacityType::kOnDemand;
         s.pending = {u};
       },
       [](const Plan& base, const Plan& set) {
         const auto woken = [](const Plan& plan) {
           int n = 0;
           for (const auto& l : plan.launches) n += int(l.wake_instance_ids.size());
           return n;
         };
         EXPECT_EQ(woken(base), 0);
         EXPECT_EQ(woken(set), 1);
       }},
      {"pools[].max_nodes", [](Policy& p) { p.pools[0].max_nodes = 1; }, EightGpuUnits(3),
       CapsLaunches(3, 1, UnplacedReason::kPoolMax)},
      // Two free slots of a g5.12xlarge reservation: selected, they take two
      // of the three 4-GPU units, the third is bought.
      {"pools[].reservations", [](Policy& p) { p.pools[0].reservations = {{"cr-0field", {}}}; },
       [](Snapshot& s, Policy& p) {
         testing::AddReservation(s, "cr-0field", "g5.12xlarge", "us-east-1a", 2, 2);
         FourGpuUnits(3)(s, p);
       },
       [](const Plan& base, const Plan& set) {
         const auto reserved = [](const Plan& plan) {
           int n = 0;
           for (const auto& l : plan.launches)
             if (l.offering.capacity_type == CapacityType::kReserved) n += l.count;
           return n;
         };
         EXPECT_EQ(reserved(base), 0);
         EXPECT_EQ(reserved(set), 2);
         EXPECT_EQ(LaunchedNodes(set), 3);
       }},
  };
}

std::vector<FieldCase> SpotFieldCases() {
  return {
      // --- spot ---
      {"spot.max_price_fraction_of_on_demand", [](Policy& p) { p.spot.max_price_fraction_of_on_demand = 0.35; },
       InferenceUnits(2), KeepsOffSpot(2)},
      {"spot.max_interruptions_per_hour", [](Policy& p) { p.spot.max_interruptions_per_hour = 0.01; },
       InferenceUnits(2), KeepsOffSpot(2)},
      // Two 1-GPU units: both in the cheapest spot failure domain (family x
      // zone), or one per domain when none may hold more than half of the
      // class's GPUs.
      {"spot.max_pool_share", [](Policy& p) { p.spot.max_pool_share = 0.5; }, InferenceUnits(2),
       [](const Plan& base, const Plan& set) {
         auto pools = [](const Plan& plan) {
           std::set<std::string> out;
           for (const auto& l : plan.launches) {
             if (l.offering.capacity_type != CapacityType::kSpot) continue;
             const std::string& type = l.offering.instance_type;  // AWS names: FAMILY.SIZE
             out.insert(type.substr(0, type.find('.')) + "/" + l.offering.zone);
           }
           return out;
         };
         EXPECT_EQ(UnitsOnSpot(base), 2);
         EXPECT_EQ(pools(base).size(), 1u);
         EXPECT_EQ(UnitsOnSpot(set), 2);
         EXPECT_EQ(pools(set).size(), 2u);
       }},
  };
}

std::vector<FieldCase> ScalingFieldCases() {
  return {
      // --- scaling ---
      {"scaling.max_nodes_added_per_tick", [](Policy& p) { p.scaling.max_nodes_added_per_tick = 2; },
       FourGpuUnits(5), CapsLaunches(5, 2, UnplacedReason::kMaxNodesPerTick)},
      {"scaling.max_nodes_removed_per_tick", [](Policy& p) { p.scaling.max_nodes_removed_per_tick = 1; },
       IdleNodes, NodesRemoved(3, 1)},
      // A schedule in force at the scene's time (every minute matches): its
      // floor keeps idle nodes, its cap holds launches back.
      {"scaling.schedules[].min_nodes",
       [](Policy& p) { p.scaling.schedules = {{"warm", "* * * * *", "UTC", Seconds(0), {"gpu"}, 3, std::nullopt}}; },
       IdleNodes, NodesRemoved(3, 0)},
      {"scaling.schedules[].max_nodes",
       [](Policy& p) { p.scaling.schedules = {{"night", "* * * * *", "UTC", Seconds(0), {}, std::nullopt, 2}}; },
       EightGpuUnits(5), CapsLaunches(5, 2, UnplacedReason::kPoolMax)},
      // The same schedule outside its hours (the scene is a Thursday at
      // 20:26 UTC) changes nothing; its time zone moves the hours.
      {"scaling.schedules[].cron",
       [](Policy& p) { p.scaling.schedules = {{"warm", "* 8-17 * * *", "UTC", Seconds(0), {}, 3, std::nullopt}}; },
       IdleNodes, NodesRemoved(3, 3)},
      {"scaling.schedules[].timezone",
       [](Policy& p) {
         p.scaling.schedules = {{"warm", "* 8-17 * * *", "America/Los_Angeles", Seconds(0), {}, 3, std::nullopt}};
       },
       IdleNodes, NodesRemoved(3, 0)},
      {"scaling.schedules[].duration",
       [](Policy& p) { p.scaling.schedules = {{"warm", "0 20 * * *", "UTC", Seconds(3600), {}, 3, std::nullopt}}; },
       IdleNodes, NodesRemoved(3, 0)},
      {"scaling.schedules[].pools",
       [](Policy& p) {
         p.pools.push_back(p.pools[0]);
         p.pools.back().name = "other";
         p.scaling.schedules = {{"warm", "* * * * *", "UTC", Seconds(0), {"other"}, 3, std::nullopt}};
       },
       IdleNodes, NodesRemoved(3, 3)},
  };
}

std::vector<FieldCase> DisruptionFieldCases() {
  return {
      // --- disruption (idle nodes are two hours old) ---
      {"disruption.consolidation", [](Policy& p) { p.disruption.consolidation = false; }, IdleNodes,
       NodesRemoved(3, 0)},
      {"disruption.min_node_age", [](Policy& p) { p.disruption.min_node_age = Seconds(3 * 3600); }, IdleNodes,
       NodesRemoved(3, 0)},
      {"disruption.max_disrupted_per_interval", [](Policy& p) { p.disruption.max_disrupted_per_interval = 1; },
       OversizedNodes, NodesRemoved(2, 1)},
      {"disruption.do_not_disrupt_labels",
       [](Policy& p) { p.disruption.do_not_disrupt_labels = {"team.example.com/keep"}; },
       [](Snapshot& s, Policy& p) {
         IdleNodes(s, p);
         for (auto& n : s.nodes) n.labels["team.example.com/keep"] = "true";
       },
       NodesRemoved(3, 0)},
      {"disruption.min_savings_usd_per_hour", [](Policy& p) { p.disruption.min_savings_usd_per_hour = 100; },
       OversizedNode,
       [](const Plan& base, const Plan& set) {
         ASSERT_EQ(base.terminations.size(), 1u);
         EXPECT_EQ(base.terminations[0].kind, TerminationKind::kReplace);
         EXPECT_TRUE(set.terminations.empty());
       }},
      {"disruption.min_savings_fraction", [](Policy& p) { p.disruption.min_savings_fraction = 0.99; },
       OversizedNode, NodesRemoved(1, 0)},
      // A one-second horizon: no saving covers the replacement's warm-up.
      {"disruption.replacement_horizon", [](Policy& p) { p.disruption.replacement_horizon = Seconds(1); },
       OversizedNode,
       [](const Plan& base, const Plan& set) {
         ASSERT_EQ(base.terminations.size(), 1u);
         EXPECT_EQ(base.terminations[0].kind, TerminationKind::kReplace);
         EXPECT_TRUE(set.terminations.empty());
       }},
  };
}

}  // namespace gpuscaler::field_effects_testing
