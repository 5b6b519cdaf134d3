// The FOCUS export checked against the FOCUS 1.2 column table (read from
// ../shared at test time, never copied here; focus_conformance.h), and the
// values that depend on the run: the provider and service of the run's
// cloud, region display names, the instances' tags.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdlib>
#include <map>
#include <set>

#include "gpuscaler/model/catalog.h"
#include "report/focus_conformance.h"
#include "report_test_util.h"

namespace gpuscaler::report {
namespace {

using testing::ExpectFocusConforms;
using testing::FocusSpec;
using testing::GoldenParams;
using testing::kGoldenTotalUsd;
using testing::LoadFocusSpec;
using testing::MakeOffering;
using testing::T;
using testing::TempDir;

using Rows = std::vector<std::map<std::string, std::string>>;

class FocusExport : public ::testing::Test {
 protected:
  void SetUp() override {
    std::optional<FocusSpec> spec = LoadFocusSpec();
    if (!spec) GTEST_SKIP() << "FOCUS column table not found at " << testing::FocusSpecPath() << " (../shared absent)";
    spec_ = std::move(*spec);
  }

  // A FOCUS report of `db` over the golden range (all runs).
  Result<RenderedReport> Focus(const std::string& db) {
    auto params = GoldenParams("focus");
    params["all_runs"] = "true";
    Result<ReportQuery> q = ParseReportQuery(params);
    EXPECT_TRUE(q.ok());
    q->db_path = db;
    return RenderReport(*q);
  }

  // Starts a run in `store` with one node of `pool` in `region`/`zone`,
  // billed 11-02 01:00 to 03:00.
  static void RunWithNode(SqliteAuditStore& store, const std::string& run, const std::optional<RunCloud>& cloud,
                          const std::string& id, const std::string& pool, const std::string& region,
                          const std::string& zone) {
    ASSERT_TRUE(store.BeginRun({run, "daemon", "h", T("2026-11-02T00:00:00Z")}).ok());
    if (cloud) {
      ASSERT_TRUE(store.RecordRunCloud(*cloud).ok());
    }
    NodeLaunchRecord n;
    n.instance_id = id;
    n.node_id = "node-" + id;
    n.pool = pool;
    n.offering = MakeOffering("gpu-type", zone.c_str(), CapacityType::kSpot, 2.0, 5.0);
    n.offering.region = region;
    n.gpu_count = 4;
    n.launch_time = T("2026-11-02T01:00:00Z");
    ASSERT_TRUE(store.RecordNodeLaunch(n).ok());
    ASSERT_TRUE(store.RecordNodeEnd({id, T("2026-11-02T03:00:00Z"), "terminated"}).ok());
  }

  FocusSpec spec_;
  TempDir dir_;
};

TEST_F(FocusExport, TheGoldenScenarioConformsToFocus12AndAddsUpToTheReport) {
  testing::WriteGoldenScenario(dir_.File("golden.db"));
  Result<ReportQuery> q = ParseReportQuery(GoldenParams("focus"));
  ASSERT_TRUE(q.ok());
  q->db_path = dir_.File("golden.db");
  Result<RenderedReport> r = RenderReport(*q);
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  const Rows rows = ExpectFocusConforms(spec_, r->body);
  ASSERT_GE(rows.size(), 4u);
  double billed = 0;
  for (const auto& row : rows) {
    EXPECT_EQ(row.at("PricingCategory"), row.at("x_CapacityType") == "spot" ? "Dynamic" : "Standard");
    EXPECT_EQ(row.at("BilledCost"), row.at("EffectiveCost"));
    // The golden run recorded no cloud: its us-east-1 nodes are AWS's.
    EXPECT_EQ(row.at("ProviderName"), "Amazon Web Services");
    EXPECT_EQ(row.at("RegionName"), "US East (N. Virginia)");
    EXPECT_EQ(row.at("SubAccountId"), "golden");  // the daemon run's cluster
    billed += std::strtod(row.at("BilledCost").c_str(), nullptr);
  }
  EXPECT_NEAR(billed, kGoldenTotalUsd, 1e-6);
  ASSERT_EQ(r->notices.size(), 1u);
  EXPECT_NE(r->notices[0].find("'golden' (id 1) recorded no cloud"), std::string::npos) << r->notices[0];
}

// Each row names the cloud its run recorded (a store may hold runs of both),
// the region's display name, and the tags the run's instances carry.
TEST_F(FocusExport, ProviderServiceRegionAndTagsFollowEachRunsCloud) {
  {
    std::unique_ptr<SqliteAuditStore> store = std::move(SqliteAuditStore::Open(dir_.File("two.db"))).value();
    RunCloud aws{"aws", {{"team", "ml"}, {"gpuscaler.io/cluster", "east"}}, {{"train", {{"gpuscaler.io/pool", "train"}}}}};
    RunWithNode(*store, "east", aws, "i-0aws", "train", "us-east-1", "us-east-1b");
    RunCloud gcp{"gcp", {{"gpuscaler-cluster", "central"}}, {{"Train", {{"gpuscaler-pool", "train-1234"}}}}};
    RunWithNode(*store, "central", gcp, "gs-central-1", "Train", "us-central1", "us-central1-a");
  }
  Result<RenderedReport> r = Focus(dir_.File("two.db"));
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_TRUE(r->notices.empty()) << r->notices.front();
  const Rows rows = ExpectFocusConforms(spec_, r->body);
  ASSERT_EQ(rows.size(), 2u);  // a row per node, day and price
  std::map<std::string, std::map<std::string, std::string>> by_node;
  for (const auto& row : rows) by_node[row.at("ResourceId")] = row;
  const auto& aws = by_node.at("i-0aws");
  for (const char* c : {"ProviderName", "PublisherName", "InvoiceIssuerName"}) {
    EXPECT_EQ(aws.at(c), "Amazon Web Services") << c;
    EXPECT_EQ(by_node.at("gs-central-1").at(c), "Google Cloud") << c;
  }
  EXPECT_EQ(aws.at("ServiceName"), "Amazon Elastic Compute Cloud");
  EXPECT_EQ(aws.at("RegionName"), "US East (N. Virginia)");
  EXPECT_EQ(aws.at("SkuPriceId"), "gpu-type/us-east-1/spot/us-east-1b");
  EXPECT_EQ(nlohmann::json::parse(aws.at("Tags")),
            nlohmann::json::parse(R"({"team": "ml", "gpuscaler.io/cluster": "east", "gpuscaler.io/pool": "train",
                                      "gpuscaler.io/capacity-type": "spot", "gpuscaler.io/node": "node-i-0aws"})"));
  const auto& gcp = by_node.at("gs-central-1");
  EXPECT_EQ(gcp.at("ServiceName"), "Compute Engine");
  EXPECT_EQ(gcp.at("RegionId"), "us-central1");
  EXPECT_EQ(gcp.at("RegionName"), "Iowa");
  // GCP's labels as the instance carries them, then gpuscaler's own keys.
  EXPECT_EQ(nlohmann::json::parse(gcp.at("Tags")),
            nlohmann::json::parse(R"({"gpuscaler-cluster": "central", "gpuscaler-pool": "train-1234",
                                      "gpuscaler.io/pool": "Train", "gpuscaler.io/capacity-type": "spot",
                                      "gpuscaler.io/node": "node-gs-central-1"})"));
}

// A run without a recorded cloud (a store from before schema version 6) is
// named from its nodes' regions where the table knows them, else as AWS, as
// every row was before; a region without a display name keeps its id as
// RegionName (never null next to a RegionId). The operator is told both.
TEST_F(FocusExport, ARunWithoutARecordedCloudIsNamedFromItsRegionsAndTheOperatorIsTold) {
  {
    std::unique_ptr<SqliteAuditStore> store = std::move(SqliteAuditStore::Open(dir_.File("old.db"))).value();
    RunWithNode(*store, "old-gcp", std::nullopt, "i-1", "p", "europe-west4", "europe-west4-a");
    RunWithNode(*store, "old-elsewhere", std::nullopt, "i-2", "p", "moon-1", "moon-1a");
  }
  Result<RenderedReport> r = Focus(dir_.File("old.db"));
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  std::map<std::string, std::map<std::string, std::string>> by_node;
  for (const auto& row : ExpectFocusConforms(spec_, r->body)) by_node[row.at("ResourceId")] = row;
  EXPECT_EQ(by_node.at("i-1").at("ProviderName"), "Google Cloud");
  EXPECT_EQ(by_node.at("i-1").at("RegionName"), "Netherlands");
  EXPECT_EQ(by_node.at("i-2").at("ProviderName"), "Amazon Web Services");
  EXPECT_EQ(by_node.at("i-2").at("RegionName"), "moon-1");
  std::string notices;
  for (const std::string& n : r->notices) notices += n + "\n";
  EXPECT_NE(notices.find("'old-gcp' (id 1) recorded no cloud"), std::string::npos) << notices;
  EXPECT_NE(notices.find("follow the nodes' region ids"), std::string::npos) << notices;
  EXPECT_NE(notices.find("'old-elsewhere' (id 2) recorded no cloud"), std::string::npos) << notices;
  EXPECT_NE(notices.find("say Amazon Web Services"), std::string::npos) << notices;
  EXPECT_NE(notices.find("RegionName repeats the region id for regions without a known display name: moon-1"),
            std::string::npos)
      << notices;
}

// Every region of the shipped catalogs has a display name.
TEST_F(FocusExport, EveryRegionOfTheShippedCatalogsHasADisplayName) {
  {
    std::unique_ptr<SqliteAuditStore> store = std::move(SqliteAuditStore::Open(dir_.File("regions.db"))).value();
    int i = 0;
    for (const char* file : {"aws.yaml", "gcp.yaml", "azure.yaml"}) {
      Result<Catalog> catalog = LoadCatalogFile(std::string(GPUSCALER_SOURCE_DIR) + "/config/catalogs/" + file);
      ASSERT_TRUE(catalog.ok()) << catalog.error().ToString();
      for (const RegionPrices& region : catalog->regions) {
        SCOPED_TRACE(region.region);
        const std::string n = std::to_string(++i);
        RunWithNode(*store, "run-" + n, RunCloud{catalog->provider, {}, {}}, "i-" + n, "p", region.region,
                    region.zones.front());
      }
    }
    ASSERT_GT(i, 10);
  }
  Result<RenderedReport> r = Focus(dir_.File("regions.db"));
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_TRUE(r->notices.empty()) << r->notices.front();
  for (const auto& row : ExpectFocusConforms(spec_, r->body)) {
    EXPECT_NE(row.at("RegionName"), row.at("RegionId")) << "no display name for " << row.at("RegionId");
  }
}

}  // namespace
}  // namespace gpuscaler::report
