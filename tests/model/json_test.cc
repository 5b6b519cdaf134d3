#include "gpuscaler/model/json.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gpuscaler/policy/loader.h"
#include "gpuscaler/solver/planner.h"

namespace gpuscaler {
namespace {

const std::string kFixtureDir = std::string(GPUSCALER_SOURCE_DIR) + "/sim/testdata/explain/";

// A snapshot with every field set to something other than its default.
Snapshot FullSnapshot() {
  Snapshot s;
  s.time = FromUnixSeconds(1784548800);  // 2026-07-20T12:00:00Z
  s.month_to_date_usd = 1234.5625;
  s.hours_left_in_month = 275.75;
  s.scale_down_blocked_classes = {"inference", "training"};
  s.recently_disrupted = {{"gpu", 1}, {"training", 2}};
  GpuModel a100;
  a100.name = "NVIDIA-A100-SXM4-80GB";
  a100.short_name = "a100-80gb";
  a100.memory_mib = 81920;
  a100.mig_profiles = {{"1g.10gb", 1, 1, 9728, {0, 1, 2, 3, 4, 5, 6}}, {"7g.80gb", 7, 8, 80896, {0}}};
  s.gpu_models = {a100};
  InstanceType p4de;
  p4de.name = "p4de.24xlarge";
  p4de.family = "p4de";
  p4de.gpu_model = a100.name;
  p4de.gpu_count = 8;
  p4de.gpu_memory_mib = 81920;
  p4de.vcpus = 96;
  p4de.memory_mib = 1179648;
  p4de.local_nvme_gb = 8000;
  p4de.network_mbps = 400000;
  s.instance_types = {p4de};
  Offering od;
  od.instance_type = "p4de.24xlarge";
  od.region = "us-east-1";
  od.zone = "us-east-1c";
  od.usd_per_hour = 27.44705;
  od.on_demand_usd_per_hour = 27.44705;
  od.launch_latency = Seconds(360);
  Offering spot = od;
  spot.capacity_type = CapacityType::kSpot;
  spot.usd_per_hour = 9.606468;
  spot.interruptions_per_hour = 0.1 / 3;  // a double that needs all 17 digits
  spot.available = false;
  s.offerings = {od, spot};

  DemandUnit u;
  u.id = "job-1";
  u.workload_class = "training";
  u.gpus = 8;
  u.gpu_models = {"a100-80gb", "h100-80gb"};
  u.min_gpu_memory_mib = 40960;
  u.cpu_milli = 90000;
  u.memory_mib = 1048576;
  u.priority = -3;
  u.interruptible = false;
  u.expected_runtime = Seconds(86400);
  u.checkpoint_interval = Seconds(0);
  u.restart_cost = Seconds(600);
  u.zones = {"us-east-1c"};
  u.instance_types = {"p4de.24xlarge"};
  u.capacity_type = CapacityType::kOnDemand;
  u.pool = "training";
  u.labels = {{"team", "research"}, {"app", "llm"}};
  DemandUnit mig;
  mig.id = "nb-1";
  mig.mig_profile = "1g.10gb";
  DemandUnit shared;
  shared.id = "embed-1";
  shared.gpu_milli = 250;

  Node n;
  n.id = "ip-10-0-0-1";
  n.instance_id = "i-0123";
  n.pool = "training";
  n.offering = spot;
  n.launch_time = FromUnixSeconds(1784530800);
  n.state = NodeState::kDraining;
  n.labels = {{"gpuscaler.io/pool", "training"}};
  n.do_not_disrupt = true;
  n.running = {u};
  s.nodes = {n};
  s.pending = {mig, shared};
  return s;
}

TEST(SnapshotJson, RoundTripIsByteIdentical) {
  const Snapshot s = FullSnapshot();
  const std::string first = FormatSnapshotJson(s);
  Result<Snapshot> parsed = ParseSnapshotJson(first, "full.json");
  ASSERT_TRUE(parsed.ok()) << parsed.error().message();
  EXPECT_EQ(FormatSnapshotJson(*parsed), first);
}

TEST(SnapshotJson, RoundTripKeepsEveryField) {
  const Snapshot s = FullSnapshot();
  Result<Snapshot> parsed = ParseSnapshotJson(FormatSnapshotJson(s), "full.json");
  ASSERT_TRUE(parsed.ok()) << parsed.error().message();
  const Snapshot& p = *parsed;
  EXPECT_EQ(p.time, s.time);
  EXPECT_EQ(p.month_to_date_usd, s.month_to_date_usd);
  EXPECT_EQ(p.hours_left_in_month, s.hours_left_in_month);
  EXPECT_EQ(p.scale_down_blocked_classes, s.scale_down_blocked_classes);
  EXPECT_EQ(p.recently_disrupted, s.recently_disrupted);
  ASSERT_EQ(p.gpu_models.size(), 1u);
  ASSERT_EQ(p.gpu_models[0].mig_profiles.size(), 2u);
  EXPECT_EQ(p.gpu_models[0].mig_profiles[0].allowed_starts, (std::vector<int>{0, 1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(p.gpu_models[0].mig_profiles[1].memory_mib, 80896);
  ASSERT_EQ(p.instance_types.size(), 1u);
  EXPECT_EQ(p.instance_types[0].network_mbps, 400000);
  ASSERT_EQ(p.offerings.size(), 2u);
  EXPECT_EQ(p.offerings[1].capacity_type, CapacityType::kSpot);
  EXPECT_EQ(p.offerings[1].interruptions_per_hour, s.offerings[1].interruptions_per_hour);
  EXPECT_FALSE(p.offerings[1].available);
  EXPECT_EQ(p.offerings[0].launch_latency, Seconds(360));
  ASSERT_EQ(p.nodes.size(), 1u);
  const Node& n = p.nodes[0];
  EXPECT_EQ(n.state, NodeState::kDraining);
  EXPECT_TRUE(n.do_not_disrupt);
  EXPECT_EQ(n.launch_time, s.nodes[0].launch_time);
  EXPECT_EQ(n.offering.Key(), "p4de.24xlarge/us-east-1c/spot");
  ASSERT_EQ(n.running.size(), 1u);
  const DemandUnit& u = n.running[0];
  EXPECT_EQ(u.priority, -3);
  EXPECT_FALSE(u.interruptible);
  EXPECT_EQ(u.checkpoint_interval, Seconds(0));
  EXPECT_EQ(u.restart_cost, Seconds(600));
  EXPECT_EQ(u.capacity_type, CapacityType::kOnDemand);
  EXPECT_EQ(u.labels.at("team"), "research");
  ASSERT_EQ(p.pending.size(), 2u);
  EXPECT_EQ(p.pending[0].mig_profile, "1g.10gb");
  EXPECT_EQ(p.pending[1].gpu_milli, 250);
  EXPECT_FALSE(p.pending[1].capacity_type.has_value());
}

TEST(SnapshotJson, WritesDurationsAsSecondsAndTimesAsRfc3339) {
  const Json j = ToJson(FullSnapshot());
  EXPECT_EQ(j["time"], "2026-07-20T12:00:00Z");
  EXPECT_EQ(j["nodes"][0]["running"][0]["expected_runtime_s"], 86400);
  EXPECT_EQ(j["offerings"][0]["launch_latency_s"], 360);
  EXPECT_EQ(j["nodes"][0]["launch_time"], "2026-07-20T07:00:00Z");
  EXPECT_EQ(j.begin().key(), "apiVersion");
}

TEST(SnapshotJson, OptionalFieldsTakeTheModelDefaults) {
  Result<Snapshot> s = ParseSnapshotJson(R"({"pending": [{"id": "a"}]})", "min.json");
  ASSERT_TRUE(s.ok()) << s.error().message();
  const DemandUnit def;
  ASSERT_EQ(s->pending.size(), 1u);
  EXPECT_EQ(s->pending[0].gpus, def.gpus);
  EXPECT_EQ(s->pending[0].checkpoint_interval, def.checkpoint_interval);
  EXPECT_EQ(s->pending[0].interruptible, def.interruptible);
  EXPECT_TRUE(s->nodes.empty());
}

TEST(SnapshotJson, RejectsBadInputNamingFileAndPath) {
  struct Case {
    std::string name;
    std::string text;
    std::string want;  // substring of the error message
  } cases[] = {
      {"non-integer gpus",
       R"({"pending": [{"id": "a"}, {"id": "b"}, {"id": "c"}, {"id": "d", "gpus": 1.5}]})",
       "snap.json: pending[3].gpus: expected an integer"},
      {"string gpus", R"({"pending": [{"id": "a", "gpus": "2"}]})", "snap.json: pending[0].gpus: expected an integer"},
      {"negative memory", R"({"pending": [{"id": "a", "memory_mib": -1}]})", "pending[0].memory_mib: expected an integer >= 0"},
      {"unknown root field", R"({"pendng": []})", "snap.json: pendng: unknown field"},
      {"unknown nested field",
       R"({"nodes": [{"id": "n", "offering": {"instance_type": "g5.xlarge", "zone": "us-east-1a", "capacity_type": "spot", "zonee": "x"}}]})",
       "snap.json: nodes[0].offering.zonee: unknown field"},
      {"duration with unit", R"({"pending": [{"id": "a", "checkpoint_interval_s": "30m"}]})",
       "pending[0].checkpoint_interval_s: expected an integer number of seconds"},
      {"bad time", R"({"time": "yesterday"})", "snap.json: time: expected an RFC 3339 time"},
      {"bad capacity type",
       R"({"offerings": [{"instance_type": "g5.xlarge", "zone": "us-east-1a", "capacity_type": "preemptible"}]})",
       "offerings[0].capacity_type: expected \"on-demand\", \"spot\" or \"reserved\""},
      {"missing capacity type", R"({"offerings": [{"instance_type": "g5.xlarge", "zone": "us-east-1a"}]})",
       "offerings[0].capacity_type: required field is missing"},
      {"missing id", R"({"pending": [{"gpus": 1}]})", "snap.json: pending[0].id: required field is missing"},
      {"bad node state",
       R"({"nodes": [{"id": "n", "state": "up", "offering": {"instance_type": "t", "zone": "z", "capacity_type": "spot"}}]})",
       "nodes[0].state: expected one of"},
      {"node without offering", R"({"nodes": [{"id": "n"}]})", "nodes[0].offering: required field is missing"},
      {"duplicate unit id",
       R"({"nodes": [{"id": "n", "offering": {"instance_type": "t", "zone": "z", "capacity_type": "spot"}, "running": [{"id": "a"}]}], "pending": [{"id": "a"}]})",
       "pending[0].id: duplicate unit id \"a\""},
      {"two shapes", R"({"pending": [{"id": "a", "gpus": 1, "mig_profile": "1g.10gb"}]})",
       "pending[0].gpus: set only one of"},
      {"pending not an array", R"({"pending": {"id": "a"}})", "snap.json: pending: expected an array"},
      {"unit not an object", R"({"pending": [3]})", "snap.json: pending[0]: expected an object"},
      {"root not an object", R"([1, 2])", "snap.json: (root): expected an object"},
      {"wrong kind", R"({"kind": "Catalog"})", "snap.json: kind: expected \"Snapshot\""},
      {"wrong label type", R"({"pending": [{"id": "a", "labels": {"x": 1}}]})", "pending[0].labels: expected an object of strings"},
      {"invalid JSON", "{\"pending\": [\n  {\"id\": }\n]}", "snap.json: invalid JSON: parse error at line 2"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Result<Snapshot> s = ParseSnapshotJson(c.text, "snap.json");
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.error().category(), ErrorCategory::kInvalidInput);
    EXPECT_NE(s.error().message().find(c.want), std::string::npos) << s.error().message();
  }
}

TEST(SnapshotJson, ReportsEveryProblemOnItsOwnLine) {
  Result<Snapshot> s = ParseSnapshotJson(R"({"tme": 1, "pending": [{"id": "a", "gpus": "x", "colour": "red"}]})", "s.json");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message(),
            "s.json: pending[0].gpus: expected an integer >= 0\n"
            "s.json: pending[0].colour: unknown field\n"
            "s.json: tme: unknown field");
}

TEST(SnapshotJson, NodeWithoutPriceTakesTheMatchingOffering) {
  Result<Snapshot> s = ParseSnapshotJson(R"({
    "offerings": [{"instance_type": "g5.xlarge", "zone": "us-east-1a", "capacity_type": "spot",
                   "usd_per_hour": 0.41, "on_demand_usd_per_hour": 1.006, "interruptions_per_hour": 0.0003}],
    "nodes": [{"id": "n1", "offering": {"instance_type": "g5.xlarge", "zone": "us-east-1a", "capacity_type": "spot"}},
              {"id": "n2", "offering": {"instance_type": "g5.xlarge", "zone": "us-east-1a", "capacity_type": "on-demand"}}]
  })", "s.json");
  ASSERT_TRUE(s.ok()) << s.error().message();
  EXPECT_EQ(s->nodes[0].offering.usd_per_hour, 0.41);
  EXPECT_EQ(s->nodes[0].offering.interruptions_per_hour, 0.0003);
  EXPECT_EQ(s->nodes[0].offering.region, "us-east-1");  // from the zone name
  EXPECT_EQ(s->nodes[1].offering.usd_per_hour, 0);      // no such offering: left as written
}

TEST(SnapshotJson, LoadingAMissingFileIsNotFound) {
  Result<Snapshot> s = LoadSnapshotFile(kFixtureDir + "no-such-file.json");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().category(), ErrorCategory::kNotFound);
  EXPECT_NE(s.error().message().find("no-such-file.json"), std::string::npos);
}

Catalog SmallCatalog() {
  Catalog c;
  c.provider = "aws";
  GpuModel l4;
  l4.name = "NVIDIA-L4";
  l4.short_name = "l4";
  l4.memory_mib = 22888;
  c.gpu_models = {l4};
  InstanceType g6;
  g6.name = "g6.xlarge";
  g6.family = "g6";
  g6.gpu_model = l4.name;
  g6.gpu_count = 1;
  c.instance_types = {g6};
  RegionPrices east;
  east.region = "us-east-1";
  east.zones = {"us-east-1a", "us-east-1b"};
  east.on_demand_usd_per_hour = {{"g6.xlarge", 0.8048}};
  RegionPrices west = east;
  west.region = "us-west-2";
  west.zones = {"us-west-2a", "us-west-2b", "us-west-2c"};
  c.regions = {east, west};
  return c;
}

TEST(AddCatalog, AddsModelsTypesAndOfferingsOfTheChosenRegionsOnce) {
  Snapshot s;
  Node n;
  n.id = "n1";
  n.offering.instance_type = "g6.xlarge";
  n.offering.zone = "us-west-2a";
  s.nodes = {n};
  AddCatalog(SmallCatalog(), {"us-west-2"}, &s);
  EXPECT_EQ(s.gpu_models.size(), 1u);
  EXPECT_EQ(s.instance_types.size(), 1u);
  EXPECT_EQ(s.offerings.size(), 6u);  // 1 type x 3 zones x 2 capacity types
  for (const Offering& o : s.offerings) EXPECT_EQ(o.region, "us-west-2");
  EXPECT_EQ(s.nodes[0].offering.usd_per_hour, 0.8048);

  AddCatalog(SmallCatalog(), {}, &s);  // all regions; nothing added twice
  EXPECT_EQ(s.gpu_models.size(), 1u);
  EXPECT_EQ(s.offerings.size(), 10u);
}

Plan SamplePlan() {
  Plan p;
  LaunchAction l;
  l.pool = "gpu";
  l.offering.instance_type = "g5.12xlarge";
  l.offering.region = "us-east-1";
  l.offering.zone = "us-east-1b";
  l.offering.capacity_type = CapacityType::kSpot;
  l.offering.usd_per_hour = 2.3822;
  l.offering.on_demand_usd_per_hour = 5.672;
  l.count = 3;
  l.usd_per_hour = 7.1466;
  l.expected_interruption_usd_per_hour = 0.0123;
  l.unit_ids = {"u1", "u2", "u3"};
  l.reason = "3x g5.12xlarge spot us-east-1b for 3 pending units";
  Offering fallback = l.offering;
  fallback.zone = "us-east-1c";
  l.fallbacks = {fallback};
  p.launches = {l};
  TerminationAction t;
  t.node_id = "node-7";
  t.instance_id = "i-07";
  t.pool = "gpu";
  t.offering.instance_type = "g5.xlarge";
  t.offering.zone = "us-east-1a";
  t.offering.usd_per_hour = 1.006;
  t.kind = TerminationKind::kConsolidate;
  t.moved_unit_ids = {"r1"};
  t.saves_usd_per_hour = 1.006;
  t.reason = "its one unit fits on node-3";
  p.terminations = {t};
  p.placements = {{"u1", "", 0, 0}, {"u2", "", 0, 1}, {"r1", "node-3", -1, -1}};
  p.unplaced = {{"u9", "batch", UnplacedReason::kBudget, "hourly cap $50.00/h reached"},
                {"u8", "batch", UnplacedReason::kBudget, "hourly cap $50.00/h reached"},
                {"u7", "infer", UnplacedReason::kNoOfferingFits, "needs 16 GPUs on one node"}};
  p.cost_before_usd_per_hour = 10.0;
  p.cost_after_usd_per_hour = 16.1406;
  p.expected_interruption_usd_per_hour = 0.0123;
  p.summary = "1 launch, 1 termination, 3 unplaced";
  return p;
}

TEST(PlanJson, HasTheCostFieldsAndReasonStrings) {
  const Json j = ToJson(SamplePlan());
  EXPECT_EQ(j.begin().key(), "predicted_cost_usd_per_hour");
  EXPECT_EQ(j["predicted_cost_usd_per_hour"], 16.1406);
  EXPECT_EQ(j["cost_before_usd_per_hour"], 10.0);
  EXPECT_EQ(j["expected_interruption_usd_per_hour"], 0.0123);
  EXPECT_EQ(j["launches"][0]["count"], 3);
  EXPECT_EQ(j["launches"][0]["offering"]["capacity_type"], "spot");
  EXPECT_EQ(j["launches"][0]["fallbacks"][0]["zone"], "us-east-1c");
  EXPECT_EQ(j["terminations"][0]["kind"], "consolidate");
  EXPECT_EQ(j["placements"][0]["launch_ordinal"], 0);
  EXPECT_FALSE(j["placements"][0].contains("node_id"));
  EXPECT_EQ(j["placements"][2]["node_id"], "node-3");
  // Unplaced units with the same class, reason and detail are one entry.
  ASSERT_EQ(j["unplaced"].size(), 2u);
  EXPECT_EQ(j["unplaced"][0]["reason"], "budget");
  EXPECT_EQ(j["unplaced"][0]["workload_class"], "batch");
  EXPECT_EQ(j["unplaced"][0]["detail"], "hourly cap $50.00/h reached");
  EXPECT_EQ(j["unplaced"][0]["unit_ids"], Json::parse(R"(["u9","u8"])"));
  EXPECT_EQ(j["unplaced"][1]["reason"], "no-offering-fits");
  EXPECT_EQ(j["unplaced"][1]["unit_ids"], Json::parse(R"(["u7"])"));
}

TEST(PlanJson, KeepsUnplacedUnitsApartWhenTheirDetailsDiffer) {
  Plan p;
  p.unplaced = {{"a", "batch", UnplacedReason::kBudget, "team ml over its cap"},
                {"b", "batch", UnplacedReason::kBudget, "team cv over its cap"},
                {"c", "infer", UnplacedReason::kBudget, "team ml over its cap"},
                {"d", "batch", UnplacedReason::kPoolMax, "team ml over its cap"},
                {"e", "batch", UnplacedReason::kBudget, "team ml over its cap"}};
  const Json j = ToJson(p);
  ASSERT_EQ(j["unplaced"].size(), 4u);
  EXPECT_EQ(j["unplaced"][0]["unit_ids"], Json::parse(R"(["a","e"])"));
  EXPECT_EQ(j["unplaced"][1]["unit_ids"], Json::parse(R"(["b"])"));
  EXPECT_EQ(j["unplaced"][2]["workload_class"], "infer");
  EXPECT_EQ(j["unplaced"][3]["reason"], "pool-max");
}

// The audit store's one-line form is the same document, byte for byte what
// nlohmann writes for it.
TEST(PlanJson, OneLineFormIsTheSameDocument) {
  const std::string line = FormatPlanJsonLine(SamplePlan());
  EXPECT_EQ(line.find('\n'), std::string::npos);
  EXPECT_EQ(Json::parse(line), ToJson(SamplePlan()));
  EXPECT_EQ(line, ToJson(SamplePlan()).dump());
}

TEST(PlanJson, IsDeterministic) {
  EXPECT_EQ(FormatPlanJson(SamplePlan()), FormatPlanJson(SamplePlan()));
  EXPECT_EQ(FormatPlanJson(SamplePlan()).back(), '\n');
}

TEST(PlanText, ShowsLaunchesTerminationsUnplacedByReasonAndCosts) {
  Snapshot s;
  s.time = FromUnixSeconds(1784548800);
  Plan plan = SamplePlan();
  plan.notes = {"pool gpu: schedule office in force, min_nodes 4, max_nodes 100"};
  const std::string text = FormatPlanText(plan, s);
  for (const char* want : {
           "Notes (1):\n  pool gpu: schedule office in force, min_nodes 4, max_nodes 100\n",
           "Snapshot 2026-07-20T12:00:00Z: 0 pending units, 0 nodes (0 running units), 0 offerings\n",
           "Launches (1):\n  [0] 3x g5.12xlarge spot us-east-1b (pool gpu): $7.15/h ($2.38/h each), on-demand $5.67/h each",
           "      for 3 units: u1, u2, u3\n",
           "      reason: 3x g5.12xlarge spot us-east-1b for 3 pending units\n",
           "      fallbacks: g5.12xlarge spot us-east-1c $2.38/h\n",
           "  node-7 i-07 (g5.xlarge on-demand us-east-1a, pool gpu): consolidate, saves $1.01/h, moves 1 unit: r1\n",
           "Placements (3): 1 on existing nodes, 2 on new nodes\n",
           "Unplaced (3):\n  budget (2): u9, u8\n      hourly cap $50.00/h reached\n",
           "  no-offering-fits (1): u7\n      needs 16 GPUs on one node\n",
           "Cost: $10.00/h before, $16.14/h after (+$6.14/h)\n",
           "Expected interruption cost: $0.0123/h\n",
       }) {
    EXPECT_NE(text.find(want), std::string::npos) << "missing: " << want << "\nin:\n" << text;
  }
}

TEST(PlanText, SaysNoneForAnEmptyPlan) {
  const std::string text = FormatPlanText(Plan{}, Snapshot{});
  EXPECT_NE(text.find("Launches (0): none\n"), std::string::npos) << text;
  EXPECT_NE(text.find("Terminations (0): none\n"), std::string::npos) << text;
  EXPECT_NE(text.find("Unplaced (0): none\n"), std::string::npos) << text;
  EXPECT_NE(text.find("Cost: $0.00/h before, $0.00/h after (+$0.00/h)\n"), std::string::npos) << text;
}

// The hand-written fixtures that `gpuscaler explain` is documented with.
class ExplainFixture : public ::testing::TestWithParam<const char*> {};

TEST_P(ExplainFixture, ParsesRoundTripsAndExplains) {
  Result<Snapshot> s = LoadSnapshotFile(kFixtureDir + GetParam());
  ASSERT_TRUE(s.ok()) << s.error().message();
  EXPECT_FALSE(s->pending.empty());
  for (const Node& n : s->nodes) {
    if (!s->offerings.empty()) {
      EXPECT_GT(n.offering.usd_per_hour, 0) << n.id << " has no price";
    }
  }
  const std::string json = FormatSnapshotJson(*s);
  Result<Snapshot> again = ParseSnapshotJson(json, "again.json");
  ASSERT_TRUE(again.ok()) << again.error().message();
  EXPECT_EQ(FormatSnapshotJson(*again), json);

  const Plan plan = MakePlan(*s, DefaultPolicy());
  const std::string text = FormatPlanText(plan, *s);
  EXPECT_NE(text.find("Cost: "), std::string::npos);
  EXPECT_EQ(FormatPlanText(MakePlan(*s, DefaultPolicy()), *s), text);  // deterministic
  const Json pj = Json::parse(FormatPlanJson(plan));
  EXPECT_TRUE(pj.contains("predicted_cost_usd_per_hour"));
}

INSTANTIATE_TEST_SUITE_P(Fixtures, ExplainFixture,
                         ::testing::Values("inference_scale_up.json", "mig_training.json", "catalog_offerings.json"));

}  // namespace
}  // namespace gpuscaler
