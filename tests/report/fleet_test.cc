// Fleet reports over several audit stores: two simulated clusters (the demo
// load, different seeds). In every view and format the fleet report is its
// clusters' single reports with a cluster column, so it adds up to their sum
// to the cent; read in parallel or one by one it is the same bytes; a store
// that cannot be read, or two stores of one cluster, fail the whole report.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "gpuscaler/report/report.h"
#include "gpuscaler/store/audit_reader.h"
#include "gpuscaler/store/sqlite_audit_store.h"
#include "report/demo_stores.h"
#include "report_test_util.h"

namespace gpuscaler::report {
namespace {

namespace fs = std::filesystem;
using Params = std::map<std::string, std::string>;

constexpr int kDays = testing::kDemoStoreDays;
// The most rows a top list takes (`top`'s limit in ParseReportQuery): the
// tests read every row of the demo stores' top lists.
constexpr int kEveryRow = 10000;

int64_t Cents(const std::string& text) { return std::llround(std::stod(text) * 100.0); }
int64_t Cents(const nlohmann::json& v) { return v.is_null() ? 0 : std::llround(v.get<double>() * 100.0); }

struct Csv {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  size_t Col(const std::string& name) const {
    return static_cast<size_t>(std::find(header.begin(), header.end(), name) - header.begin());
  }
};
Csv ParseTable(const std::string& text) {
  std::vector<std::vector<std::string>> all = testing::ParseCsv(text);
  Csv out;
  if (all.empty()) return out;
  out.header = all.front();
  out.rows.assign(all.begin() + 1, all.end());
  return out;
}

// The rows of `cluster` with the cluster column taken out.
std::vector<std::vector<std::string>> RowsOf(const Csv& fleet, size_t column, const std::string& cluster) {
  std::vector<std::vector<std::string>> out;
  for (std::vector<std::string> row : fleet.rows) {
    if (row.at(column) != cluster) continue;
    row.erase(row.begin() + static_cast<std::ptrdiff_t>(column));
    out.push_back(std::move(row));
  }
  return out;
}

class Fleet : public ::testing::Test {
 protected:
  // The demo stores east and west (demo_stores.h): shared with other test
  // processes, so every test that changes a store changes a copy in dir_.
  static void SetUpTestSuite() {
    dir_ = new testing::TempDir();
    for (auto [cluster, path] : {std::pair{"east", &east_}, std::pair{"west", &west_}}) {
      Result<std::string> store = testing::DemoStore(cluster, dir_->File(""));
      ASSERT_TRUE(store.ok()) << store.error().ToString();
      *path = *store;
    }
    Result<sim::Scenario> east = testing::DemoStoreScenario("east");
    ASSERT_TRUE(east.ok()) << east.error().ToString();
    start_ = east->start;
    Result<sim::Scenario> west = testing::DemoStoreScenario("west");
    ASSERT_TRUE(west.ok()) << west.error().ToString();
    ASSERT_EQ(west->start, start_);
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }

  // One range for the single and the fleet reports (a single report's
  // default ends at its own last record; a fleet's at the latest of them).
  static Params With(Params extra) {
    Params p = {{"from", FormatRfc3339(start_)},
                {"to", FormatRfc3339(start_ + Seconds(86400 * (kDays + 1)))},
                {"budget_monthly_usd", "5000"},
                {"top", std::to_string(kEveryRow)}};
    for (auto& [k, v] : extra) p[k] = v;
    return p;
  }
  static std::string Single(const std::string& db, const Params& params) {
    Result<ReportQuery> q = ParseReportQuery(params);
    EXPECT_TRUE(q.ok()) << q.error().ToString();
    if (!q) return "";
    q->db_path = db;
    Result<RenderedReport> r = RenderReport(*q);
    EXPECT_TRUE(r.ok()) << r.error().ToString();
    return r ? r->body : "";
  }
  static Result<RenderedReport> FleetReport(const std::vector<FleetStore>& stores, const Params& params,
                                            int parallelism = 0) {
    Result<ReportQuery> q = ParseReportQuery(params);
    if (!q) return q.error();
    return RenderFleetReport(stores, *q, parallelism);
  }
  static std::string FleetBody(const Params& params, int parallelism = 0) {
    Result<RenderedReport> r = FleetReport({{east_, ""}, {west_, ""}}, params, parallelism);
    EXPECT_TRUE(r.ok()) << r.error().ToString();
    return r ? r->body : "";
  }

  static inline testing::TempDir* dir_ = nullptr;
  static inline std::string east_, west_;
  static inline WallTime start_{};
};

TEST_F(Fleet, EveryCsvViewIsTheClustersOwnRowsWithAClusterColumn) {
  struct Case {
    Params params;
    size_t cluster_column;
  };
  const std::vector<Case> cases = {
      {{{"view", "costs"}}, 2},
      {{{"view", "costs"}, {"group_by", "team,capacity_type"}, {"team_map", "training=research"}}, 2},
      {{{"view", "costs"}, {"group_by", "class,cluster"}, {"period", "week"}}, 3},
      {{{"view", "allocation"}}, 0},
      {{{"view", "savings"}}, 2},
      {{{"view", "budget"}}, 0},
      {{{"view", "decisions"}}, 0},
      {{{"view", "nodes"}}, 0},
      {{{"view", "predictions"}}, 0},
      {{{"view", "prediction_summary"}}, 0},
  };
  for (const Case& c : cases) {
    Params single_params = c.params;
    if (single_params.count("group_by") != 0) {
      std::string g = single_params["group_by"];
      if (const size_t at = g.find(",cluster"); at != std::string::npos) g.erase(at, 8);
      single_params["group_by"] = g;
    }
    const Params fleet_params = With(c.params);
    SCOPED_TRACE(fleet_params.at("view") +
                 (c.params.count("group_by") ? " by " + c.params.at("group_by") : ""));
    const Csv fleet = ParseTable(FleetBody(fleet_params));
    const Csv east = ParseTable(Single(east_, With(single_params)));
    const Csv west = ParseTable(Single(west_, With(single_params)));
    ASSERT_FALSE(east.rows.empty());
    ASSERT_FALSE(west.rows.empty());
    // The header: a single report's with `cluster` in its place.
    std::vector<std::string> header = east.header;
    header.insert(header.begin() + static_cast<std::ptrdiff_t>(c.cluster_column), "cluster");
    ASSERT_EQ(fleet.header, header);
    // Each cluster's rows are its own report's, in its order.
    EXPECT_EQ(RowsOf(fleet, c.cluster_column, "east"), east.rows);
    EXPECT_EQ(RowsOf(fleet, c.cluster_column, "west"), west.rows);
    EXPECT_EQ(fleet.rows.size(), east.rows.size() + west.rows.size());
    // So every money column adds up to the clusters' sum to the cent.
    for (size_t col = 0; col < east.header.size(); ++col) {
      const std::string& name = east.header[col];
      if (!name.ends_with("_usd")) continue;
      int64_t sum_fleet = 0, sum_singles = 0;
      const size_t fleet_col = fleet.Col(name);
      for (const auto& r : fleet.rows) sum_fleet += r[fleet_col].empty() ? 0 : Cents(r[fleet_col]);
      for (const Csv* s : {&east, &west}) {
        for (const auto& r : s->rows) sum_singles += r[col].empty() ? 0 : Cents(r[col]);
      }
      EXPECT_EQ(sum_fleet, sum_singles) << name;
    }
  }
  // Time views in time order across clusters.
  const Csv costs = ParseTable(FleetBody(With({{"view", "costs"}})));
  EXPECT_TRUE(std::is_sorted(costs.rows.begin(), costs.rows.end(),
                             [](const auto& a, const auto& b) { return a[0] < b[0]; }));
}

TEST_F(Fleet, TheTopListsAreTheFleetsDearest) {
  const Csv fleet = ParseTable(FleetBody(With({{"view", "decisions"}, {"top", "5"}})));
  const Csv all = ParseTable(FleetBody(With({{"view", "decisions"}})));
  ASSERT_EQ(fleet.rows.size(), 5u);
  ASSERT_GT(all.rows.size(), 5u);
  const size_t cost = fleet.Col("cost_usd");
  for (size_t i = 0; i < 5; ++i) EXPECT_EQ(fleet.rows[i][cost], all.rows[i][cost]);
  EXPECT_GE(Cents(all.rows[4][cost]), Cents(all.rows[5][cost]));
  std::set<std::string> clusters;
  for (const auto& r : all.rows) clusters.insert(r[0]);
  EXPECT_EQ(clusters, (std::set<std::string>{"east", "west"}));
}

TEST_F(Fleet, JsonTotalsAreTheSumOfTheClustersToTheCent) {
  const Params params = With({{"format", "json"}, {"group_by", "team"}, {"team_map", "training=research"}});
  const nlohmann::json fleet = nlohmann::json::parse(FleetBody(params));
  const nlohmann::json east = nlohmann::json::parse(Single(east_, params));
  const nlohmann::json west = nlohmann::json::parse(Single(west_, params));
  ASSERT_GT(Cents(east["totals"]["cost_usd"]), 0);
  for (const auto& [key, value] : fleet["totals"].items()) {
    SCOPED_TRACE(key);
    if (key.ends_with("_usd")) {
      EXPECT_EQ(Cents(value), Cents(east["totals"][key]) + Cents(west["totals"][key]));
    } else if (key == "nodes" || key == "interrupted_nodes") {
      EXPECT_EQ(value.get<int64_t>(),
                east["totals"][key].get<int64_t>() + west["totals"][key].get<int64_t>());
    } else if (key.starts_with("gpu_hours")) {
      EXPECT_NEAR(value.get<double>(), east["totals"][key].get<double>() + west["totals"][key].get<double>(),
                  0.002);
    }
  }
  // Per cluster: the single report's totals, exactly.
  ASSERT_EQ(fleet["query"]["clusters"].size(), 2u);
  EXPECT_EQ(fleet["query"]["clusters"][0]["cluster"], "east");
  EXPECT_EQ(fleet["query"]["clusters"][0]["totals"], east["totals"]);
  EXPECT_EQ(fleet["query"]["clusters"][1]["cluster"], "west");
  EXPECT_EQ(fleet["query"]["clusters"][1]["totals"], west["totals"]);
  // The fleet's top lists are cut at `top` rows across its clusters (its
  // dearest), so each cluster's rows are its single report's only while the
  // lists hold every row: fewer rows than `top` in all.
  for (const char* table : {"top_decisions", "top_nodes", "predictions"}) {
    ASSERT_LT(east[table].size() + west[table].size(), size_t{kEveryRow})
        << table << ": the stores hold more rows than `top` takes";
  }
  // Every table: each cluster's rows are its report's, with a cluster field.
  for (const char* table :
       {"allocation", "costs", "savings", "budget", "top_decisions", "top_nodes", "predictions"}) {
    SCOPED_TRACE(table);
    for (const auto& [name, single] : {std::pair{"east", &east}, std::pair{"west", &west}}) {
      nlohmann::json rows = nlohmann::json::array();
      for (nlohmann::json row : fleet[table]) {
        ASSERT_TRUE(row.contains("cluster")) << row;
        if (row["cluster"] != name) continue;
        row.erase("cluster");
        rows.push_back(row);
      }
      EXPECT_EQ(rows, (*single)[table]) << name;
    }
  }
  ASSERT_EQ(fleet["prediction_summary"].size(), 2u);
  nlohmann::json summary = fleet["prediction_summary"][1];
  EXPECT_EQ(summary["cluster"], "west");
  summary.erase("cluster");
  EXPECT_EQ(summary, west["prediction_summary"]);
}

// Fleet and single JSON reports are written in parts (the predictions in two
// halves on two threads): the text is what one dump of the whole document
// writes.
TEST_F(Fleet, JsonIsOneDocumentsDumpWrittenInParts) {
  const Params params = With({{"format", "json"}});
  for (const std::string& body : {FleetBody(params), Single(east_, params), Single(west_, params)}) {
    const nlohmann::ordered_json parsed = nlohmann::ordered_json::parse(body);
    EXPECT_FALSE(parsed.at("predictions").empty());
    EXPECT_EQ(parsed.dump(2) + "\n", body);
  }
  EXPECT_GE(nlohmann::json::parse(FleetBody(params)).at("predictions").size(), 3u);
}

TEST_F(Fleet, FocusRowsNameTheirClusterAsSubAccount) {
  const Params params = With({{"format", "focus"}});
  const Csv fleet = ParseTable(FleetBody(params));
  const Csv east = ParseTable(Single(east_, params));
  const Csv west = ParseTable(Single(west_, params));
  const size_t id = fleet.Col("SubAccountId"), name = fleet.Col("SubAccountName"), tags = fleet.Col("Tags");
  ASSERT_LT(id, fleet.header.size());
  ASSERT_LT(name, fleet.header.size());
  // Both are FOCUS 1.2 columns.
  const std::string spec = testing::ReadFile(std::string(GPUSCALER_SHARED_DIR) +
                                             "/reference/focus/columns/focus-v1.2-columns.csv");
  if (!spec.empty()) {
    EXPECT_NE(spec.find("\nSubAccountId,"), std::string::npos);
    EXPECT_NE(spec.find("\nSubAccountName,"), std::string::npos);
  }
  // A single store's report names its cluster the same way (here the file's
  // stem): the rows differ only in the fleet's cluster tag.
  EXPECT_EQ(east.header, fleet.header);
  int64_t fleet_micros = 0, single_micros = 0;
  const size_t billed = fleet.Col("BilledCost");
  for (const auto& [cluster, single] : {std::pair{"east", &east}, std::pair{"west", &west}}) {
    std::vector<std::vector<std::string>> rows;
    for (std::vector<std::string> row : fleet.rows) {
      if (row[id] != cluster) continue;
      EXPECT_EQ(row[name], cluster);
      // The tags: a single report's, and the cluster.
      nlohmann::ordered_json t = nlohmann::ordered_json::parse(row[tags]);
      EXPECT_EQ(t["gpuscaler.io/cluster"], cluster);
      t.erase("gpuscaler.io/cluster");
      row[tags] = t.dump();
      rows.push_back(std::move(row));
    }
    EXPECT_EQ(rows, single->rows) << cluster;
    for (const auto& r : single->rows)
      single_micros += std::llround(std::stod(r[single->Col("BilledCost")]) * 1e6);
  }
  for (const auto& r : fleet.rows) fleet_micros += std::llround(std::stod(r[billed]) * 1e6);
  EXPECT_EQ(fleet_micros, single_micros);
  EXPECT_EQ(fleet.rows.size(), east.rows.size() + west.rows.size());
}

TEST_F(Fleet, HtmlShowsTheFleetsTotalsAndEveryTableHasAClusterColumn) {
  const Params params = With({{"format", "html"}});
  const std::string html = FleetBody(params);
  const nlohmann::json east = nlohmann::json::parse(Single(east_, With({{"format", "json"}})));
  const nlohmann::json west = nlohmann::json::parse(Single(west_, With({{"format", "json"}})));
  const int64_t total = Cents(east["totals"]["cost_usd"]) + Cents(west["totals"]["cost_usd"]);
  char card[64];
  std::snprintf(card, sizeof(card), "<b>$%lld.%02lld</b><span>total cost</span>",
                static_cast<long long>(total / 100), static_cast<long long>(total % 100));
  EXPECT_NE(html.find(card), std::string::npos) << card;
  EXPECT_NE(html.find("2 clusters (east, west)"), std::string::npos);
  size_t tables = 0, with_cluster = 0;
  for (size_t at = html.find("<table id=\"t-"); at != std::string::npos;
       at = html.find("<table id=\"t-", at + 1)) {
    ++tables;
    const size_t head_end = html.find("</thead>", at);
    if (html.substr(at, head_end - at).find("<th>cluster</th>") != std::string::npos) ++with_cluster;
  }
  EXPECT_EQ(tables, 8u);
  EXPECT_EQ(with_cluster, tables);
  for (const char* chart :
       {"chart-daily-cost", "chart-savings", "chart-burndown", "chart-teams", "chart-predictions"}) {
    EXPECT_NE(html.find(std::string("id=\"") + chart + "\""), std::string::npos) << chart;
  }
}

TEST_F(Fleet, ReadInParallelOrOneByOneItIsTheSameBytes) {
  for (const Params& p :
       {With({{"view", "costs"}, {"group_by", "team,cluster"}}), With({{"view", "nodes"}}),
        With({{"format", "json"}}), With({{"format", "focus"}}), With({{"format", "html"}})}) {
    const std::string sequential = FleetBody(p, 1);
    ASSERT_FALSE(sequential.empty());
    EXPECT_EQ(FleetBody(p, 2), sequential);
    // The order the stores are given in does not matter either.
    Result<RenderedReport> reversed = FleetReport({{west_, ""}, {east_, ""}}, p, 2);
    ASSERT_TRUE(reversed.ok()) << reversed.error().ToString();
    EXPECT_EQ(reversed->body, sequential);
  }
}

TEST_F(Fleet, GroupingOneStoreByClusterNamesItsCluster) {
  const Csv csv = ParseTable(Single(east_, With({{"group_by", "cluster,capacity_type"}})));
  ASSERT_GE(csv.header.size(), 4u);
  EXPECT_EQ(csv.header[2], "cluster");
  EXPECT_EQ(csv.header[3], "capacity_type");
  for (const auto& r : csv.rows) EXPECT_EQ(r[2], "east");
  // Named on the command line instead of by the file.
  Result<RenderedReport> named = FleetReport({{east_, "prod-east"}}, With({{"view", "allocation"}}));
  ASSERT_TRUE(named.ok()) << named.error().ToString();
  EXPECT_NE(named->body.find("\r\nprod-east,"), std::string::npos) << named->body.substr(0, 300);
}

TEST_F(Fleet, WithoutARangeTheFleetCoversTheUnionOfItsClusters) {
  Result<RenderedReport> r = FleetReport({{east_, ""}, {west_, ""}}, {{"format", "json"}});
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_NE(r->scope.find("the union of the clusters' ranges"), std::string::npos) << r->scope;
  const nlohmann::json j = nlohmann::json::parse(r->body);
  EXPECT_EQ(j["query"]["from"], FormatRfc3339(start_));
  EXPECT_GT(Cents(j["totals"]["cost_usd"]), 0);
}

TEST_F(Fleet, TwoStoresOfOneClusterAreAnErrorNamingBoth) {
  fs::create_directories(dir_->File("copy"));
  const std::string copy = dir_->File("copy/east.db");
  fs::copy_file(east_, copy, fs::copy_options::overwrite_existing);
  Result<RenderedReport> r = FleetReport({{east_, ""}, {copy, ""}}, With({}));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().category(), ErrorCategory::kInvalidInput);
  EXPECT_NE(r.error().message().find("cluster 'east'"), std::string::npos) << r.error().message();
  EXPECT_NE(r.error().message().find(east_), std::string::npos) << r.error().message();
  EXPECT_NE(r.error().message().find(copy), std::string::npos) << r.error().message();
  // Named apart, they are two clusters.
  EXPECT_TRUE(FleetReport({{east_, ""}, {copy, "east-copy"}}, With({})).ok());
}

TEST_F(Fleet, OneStoreThatCannotBeReadFailsTheReportNamingIt) {
  const std::string missing = dir_->File("missing.db");
  Result<RenderedReport> r = FleetReport({{east_, ""}, {missing, ""}}, With({}));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().category(), ErrorCategory::kNotFound);
  EXPECT_NE(r.error().message().find(missing), std::string::npos) << r.error().message();

  const std::string text = dir_->File("notes.db");
  std::ofstream(text) << "not a database\n";
  r = FleetReport({{east_, ""}, {text, "notes"}}, With({}));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find(text), std::string::npos) << r.error().message();

  // A store written by a newer gpuscaler.
  const std::string newer = dir_->File("newer.db");
  fs::copy_file(west_, newer, fs::copy_options::overwrite_existing);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(newer.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db,
                         "INSERT INTO schema_version (version, description, applied_at) "
                         "SELECT max(version) + 1, 'from the future', 0 FROM schema_version",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  r = FleetReport({{east_, ""}, {newer, ""}}, With({}));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().category(), ErrorCategory::kConfig);
  EXPECT_NE(r.error().message().find(newer), std::string::npos) << r.error().message();
  EXPECT_NE(r.error().message().find("newer"), std::string::npos) << r.error().message();

  // A run that one store lacks fails the report too (no partial totals).
  r = FleetReport({{east_, ""}, {west_, ""}}, With({{"run", "on-demand"}}));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().category(), ErrorCategory::kInvalidInput);
  EXPECT_NE(r.error().message().find(east_), std::string::npos) << r.error().message();
}

TEST_F(Fleet, ClusterNamesComeFromTheDaemonsRunElseTheFileName) {
  const std::string golden = dir_->File("golden-audit.db");
  testing::WriteGoldenScenario(golden);  // a daemon run named 'golden'
  Result<std::unique_ptr<AuditReader>> reader = AuditReader::Open(golden);
  ASSERT_TRUE(reader.ok()) << reader.error().ToString();
  Result<std::string> name = ClusterNameOf(**reader, golden);
  ASSERT_TRUE(name.ok());
  EXPECT_EQ(*name, "golden");
  reader = AuditReader::Open(east_);
  ASSERT_TRUE(reader.ok());
  name = ClusterNameOf(**reader, east_);  // a simulation: no daemon run
  ASSERT_TRUE(name.ok());
  EXPECT_EQ(*name, "east");

  // A daemon without cluster_name names its run "daemon": the file names it.
  const std::string unnamed = dir_->File("eu-west.db");
  {
    Result<std::unique_ptr<SqliteAuditStore>> store = SqliteAuditStore::Open(unnamed);
    ASSERT_TRUE(store.ok());
    ASSERT_TRUE((*store)->BeginRun({"daemon", "daemon", "h", start_}).ok());
    ASSERT_TRUE((*store)->Flush().ok());
  }
  reader = AuditReader::Open(unnamed);
  ASSERT_TRUE(reader.ok());
  name = ClusterNameOf(**reader, unnamed);
  ASSERT_TRUE(name.ok());
  EXPECT_EQ(*name, "eu-west");
}

TEST_F(Fleet, ADirectoryMeansEveryAuditStoreInIt) {
  const fs::path dir = dir_->File("fleet");
  fs::create_directories(dir);
  fs::copy_file(west_, dir / "west.db", fs::copy_options::overwrite_existing);
  fs::copy_file(east_, dir / "east.db", fs::copy_options::overwrite_existing);
  std::ofstream(dir / "README.txt") << "the fleet's audit stores\n";
  {  // an SQLite database that is not an audit store
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open((dir / "other.sqlite").c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, "CREATE TABLE t (x INTEGER)", nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(db);
  }
  std::vector<std::string> skipped;
  Result<std::vector<FleetStore>> stores = ExpandFleetArguments({dir.string()}, &skipped);
  ASSERT_TRUE(stores.ok()) << stores.error().ToString();
  ASSERT_EQ(stores->size(), 2u);
  EXPECT_EQ((*stores)[0].db_path, (dir / "east.db").string());
  EXPECT_EQ((*stores)[1].db_path, (dir / "west.db").string());
  ASSERT_EQ(skipped.size(), 2u);
  EXPECT_NE(skipped[0].find("README.txt: not an SQLite database"), std::string::npos) << skipped[0];
  EXPECT_NE(skipped[1].find("other.sqlite: an SQLite database but not an audit store"), std::string::npos)
      << skipped[1];
  // The directory's report is the two files' report.
  Result<RenderedReport> from_dir = FleetReport(*stores, With({{"format", "json"}}));
  ASSERT_TRUE(from_dir.ok()) << from_dir.error().ToString();
  nlohmann::json j = nlohmann::json::parse(from_dir->body);
  nlohmann::json k = nlohmann::json::parse(FleetBody(With({{"format", "json"}})));
  for (nlohmann::json* doc : {&j, &k}) (*doc)["query"].erase("clusters");  // the paths differ
  EXPECT_EQ(j, k);

  // NAME=PATH, and the mistakes.
  skipped.clear();
  stores = ExpandFleetArguments({"blue=" + east_, west_}, &skipped);
  ASSERT_TRUE(stores.ok()) << stores.error().ToString();
  EXPECT_EQ((*stores)[0].cluster, "blue");
  EXPECT_EQ((*stores)[0].db_path, east_);
  EXPECT_EQ((*stores)[1].cluster, "");
  EXPECT_EQ(ExpandFleetArguments({"blue=" + dir.string()}, &skipped).error().category(),
            ErrorCategory::kInvalidInput);
  EXPECT_EQ(ExpandFleetArguments({dir_->File("nowhere.db")}, &skipped).error().category(),
            ErrorCategory::kNotFound);
  const fs::path empty = dir_->File("empty");
  fs::create_directories(empty);
  Result<std::vector<FleetStore>> none = ExpandFleetArguments({empty.string()}, &skipped);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message().find("no audit store"), std::string::npos);
}

// Exit code 3 of the CLI: only when the range lies outside every cluster's
// data; each empty cluster gets its own notice.
TEST_F(Fleet, TheRangeIsOutsideTheDataOnlyWhenItIsSoForEveryCluster) {
  Result<RenderedReport> r =
      FleetReport({{east_, ""}, {west_, ""}}, {{"from", "2020-01-01"}, {"to", "2020-01-02"}});
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_TRUE(r->range_outside_data);
  ASSERT_EQ(r->notices.size(), 2u);
  EXPECT_EQ(r->notices[0].rfind("cluster 'east': no nodes or usage recorded", 0), 0u) << r->notices[0];
  EXPECT_EQ(r->notices[1].rfind("cluster 'west': no nodes or usage recorded", 0), 0u) << r->notices[1];

  const std::string golden = dir_->File("golden-range.db");
  testing::WriteGoldenScenario(golden);  // November 2026; the simulations are in July
  r = FleetReport({{east_, ""}, {golden, ""}}, {{"from", "2026-11-02"}, {"to", "2026-11-04"}});
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_FALSE(r->range_outside_data);
  ASSERT_EQ(r->notices.size(), 1u);
  EXPECT_EQ(r->notices[0].rfind("cluster 'east': ", 0), 0u) << r->notices[0];
}

}  // namespace
}  // namespace gpuscaler::report
