// Reports that add up: on a simulated fleet, every view and format sums to
// its totals to the cent, with cost = attributed + idle and on-demand
// equivalent = cost + savings on every row; a live report taken mid-hour
// agrees with the finished figure for the same stretch within 1 % when the
// controller writes its open intervals as the daemon does, and is
// estimated from the previous hour's allocation from full intervals alone.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sqlite3.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "gpuscaler/controller/controller.h"
#include "gpuscaler/report/cost_model.h"
#include "gpuscaler/report/report.h"
#include "gpuscaler/store/sqlite_audit_store.h"
#include "report/demo_stores.h"
#include "report_test_util.h"
#include "sim/runner.h"
#include "sim/scenario.h"

namespace gpuscaler::report {
namespace {

// The suite's store: the demo store east (demo_stores.h).
constexpr const char* kCluster = "east";
constexpr int kDays = testing::kDemoStoreDays;

int64_t Cents(const std::string& text) {
  const double v = std::stod(text);
  return std::llround(v * 100.0);
}
int64_t Cents(const nlohmann::json& v) { return std::llround(v.get<double>() * 100.0); }

// A simulated two-day replay of the demo load written through the production
// controller: the demo store east, written once per ctest run and shared
// with other test processes (tests change copies of it in dir_ only).
class AddsUp : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::TempDir();
    Result<std::string> store = testing::DemoStore(kCluster, dir_->File(""));
    ASSERT_TRUE(store.ok()) << store.error().ToString();
    db_ = *store;
    Result<sim::Scenario> scenario = testing::DemoStoreScenario(kCluster);
    ASSERT_TRUE(scenario.ok()) << scenario.error().ToString();
    start_ = scenario->start;
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }

  static Result<RenderedReport> Render(const std::string& db, std::map<std::string, std::string> params) {
    Result<ReportQuery> q = ParseReportQuery(params);
    if (!q) return q.error();
    q->db_path = db;
    return RenderReport(*q);
  }

  static inline testing::TempDir* dir_ = nullptr;
  static inline std::string db_;
  static inline WallTime start_{};
};

// Columns by name of a CSV (first row the header).
struct Csv {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  size_t Col(const std::string& name) const {
    auto it = std::find(header.begin(), header.end(), name);
    EXPECT_NE(it, header.end()) << name;
    return static_cast<size_t>(it - header.begin());
  }
  int64_t SumCents(const std::string& name) const {
    const size_t c = Col(name);
    int64_t sum = 0;
    for (const auto& r : rows) sum += Cents(r[c]);
    return sum;
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

TEST_F(AddsUp, EveryViewAndFormatSumsToTheTotalsToTheCent) {
  const std::map<std::string, std::string> base = {{"group_by", "class,capacity_type"}, {"budget_monthly_usd", "5000"}};
  auto with = [&](std::map<std::string, std::string> extra) {
    std::map<std::string, std::string> p = base;
    for (auto& [k, v] : extra) p[k] = v;
    return p;
  };
  Result<RenderedReport> json = Render(db_, with({{"format", "json"}}));
  ASSERT_TRUE(json.ok()) << json.error().ToString();
  const nlohmann::json j = nlohmann::json::parse(json->body);
  const nlohmann::json& t = j["totals"];
  const int64_t cost = Cents(t["cost_usd"]), idle = Cents(t["idle_usd"]), savings = Cents(t["savings_usd"]);
  const int64_t on_demand = Cents(t["on_demand_equivalent_usd"]);
  ASSERT_GT(cost, 0);
  ASSERT_GT(idle, 0);
  ASSERT_GT(savings, 0) << "the demo runs spot: savings are expected";
  EXPECT_EQ(Cents(t["attributed_usd"]) + idle, cost);
  EXPECT_EQ(cost + savings, on_demand);
  // On-demand nodes save nothing, so all savings are spot savings.
  EXPECT_EQ(Cents(t["spot_savings_usd"]), savings);

  // JSON tables.
  for (const char* view : {"costs", "allocation"}) {
    SCOPED_TRACE(view);
    int64_t c = 0, i = 0, s = 0, o = 0;
    for (const auto& row : j[view]) {
      c += Cents(row["cost_usd"]);
      i += Cents(row["idle_usd"]);
      s += Cents(row["savings_usd"]);
      o += Cents(row["on_demand_equivalent_usd"]);
      EXPECT_EQ(Cents(row["cost_usd"]) + Cents(row["savings_usd"]), Cents(row["on_demand_equivalent_usd"])) << row;
      if (row["class"] == "__idle__") {
        EXPECT_EQ(Cents(row["idle_usd"]), Cents(row["cost_usd"])) << row;
      } else {
        EXPECT_EQ(Cents(row["idle_usd"]), 0) << row;
      }
      if (row.contains("capacity_type") && row["capacity_type"] == "on-demand") {
        EXPECT_EQ(Cents(row["savings_usd"]), 0) << row;
      }
    }
    EXPECT_EQ(c, cost);
    EXPECT_EQ(i, idle);
    EXPECT_EQ(s, savings);
    EXPECT_EQ(o, on_demand);
  }
  int64_t savings_rows = 0, spot_rows = 0;
  for (const auto& row : j["savings"]) {
    savings_rows += Cents(row["savings_usd"]);
    if (row["capacity_type"] == "on-demand") {
      EXPECT_EQ(Cents(row["savings_usd"]), 0) << row;
    }
    if (row["capacity_type"] == "spot") spot_rows += Cents(row["savings_usd"]);
  }
  EXPECT_EQ(savings_rows, savings);
  EXPECT_EQ(spot_rows, Cents(t["spot_savings_usd"]));
  int64_t budget_rows = 0;
  for (const auto& row : j["budget"]) budget_rows += Cents(row["cost_usd"]);
  EXPECT_EQ(budget_rows, cost);

  // CSV views.
  for (const char* view : {"costs", "allocation", "savings", "budget"}) {
    SCOPED_TRACE(view);
    Result<RenderedReport> r = Render(db_, with({{"format", "csv"}, {"view", view}}));
    ASSERT_TRUE(r.ok()) << r.error().ToString();
    const Csv csv = ParseTable(r->body);
    ASSERT_FALSE(csv.rows.empty());
    EXPECT_EQ(csv.SumCents("cost_usd"), cost);
    if (std::string(view) != "budget") {
      EXPECT_EQ(csv.SumCents("savings_usd"), savings);
    }
    if (std::string(view) == "costs" || std::string(view) == "allocation") {
      EXPECT_EQ(csv.SumCents("idle_usd"), idle);
    }
  }
  // Weekly periods and other groupings round the same way.
  Result<RenderedReport> weekly =
      Render(db_, {{"format", "csv"}, {"period", "week"}, {"group_by", "pool,zone,instance_type,team"}});
  ASSERT_TRUE(weekly.ok());
  const Csv weekly_csv = ParseTable(weekly->body);
  EXPECT_EQ(weekly_csv.SumCents("cost_usd"), cost);
  EXPECT_EQ(weekly_csv.SumCents("idle_usd"), idle);
  EXPECT_EQ(weekly_csv.SumCents("savings_usd"), savings);

  // FOCUS: one row per node, day and price at ten decimals; their sum is the
  // total to the cent.
  Result<RenderedReport> focus = Render(db_, with({{"format", "focus"}}));
  ASSERT_TRUE(focus.ok());
  const Csv focus_csv = ParseTable(focus->body);
  double billed = 0;
  for (const auto& row : focus_csv.rows) billed += std::stod(row[focus_csv.Col("BilledCost")]);
  EXPECT_EQ(std::llround(billed * 100.0), cost);

  // HTML: the total cards and the attribution table's cells.
  Result<RenderedReport> html = Render(db_, with({{"format", "html"}}));
  ASSERT_TRUE(html.ok());
  const std::string& page = html->body;
  // Plain string search (std::regex trips GCC's -O1 sanitizer warnings).
  auto card = [&](const std::string& label) -> int64_t {
    const size_t at = page.find("</b><span>" + label + "</span>");
    const size_t open = at == std::string::npos ? at : page.rfind("<b>$", at);
    EXPECT_NE(open, std::string::npos) << label;
    return open == std::string::npos ? -1 : Cents(page.substr(open + 4, at - open - 4));
  };
  EXPECT_EQ(card("total cost"), cost);
  EXPECT_EQ(card("attributed to workloads") + card("idle"), cost);
  EXPECT_EQ(card("on-demand equivalent"), on_demand);
  EXPECT_EQ(card("spot savings"), savings);
  const size_t table = page.find("<table id=\"t-allocation\"");
  ASSERT_NE(table, std::string::npos);
  const std::string allocation = page.substr(table, page.find("</table>", table) - table);
  // The texts between `open...>` and `close`, in order.
  auto between = [](const std::string& text, const std::string& open, const std::string& close) {
    std::vector<std::string> out;
    for (size_t at = text.find(open); at != std::string::npos; at = text.find(open, at + 1)) {
      const size_t start = text.find('>', at) + 1;
      out.push_back(text.substr(start, text.find(close, start) - start));
    }
    return out;
  };
  const std::vector<std::string> header = between(allocation, "<th>", "</th>");
  const size_t cost_col = static_cast<size_t>(std::find(header.begin(), header.end(), "cost_usd") - header.begin());
  ASSERT_LT(cost_col, header.size());
  int64_t html_rows = 0;
  for (const std::string& row : between(allocation, "<tr>", "</tr>")) {
    const std::vector<std::string> cells = between(row, "<td", "</td>");
    if (cells.size() > cost_col) html_rows += Cents(cells[cost_col]);
  }
  EXPECT_EQ(html_rows, cost);
}

// The sum of a stretch [from, to) of the report: attributed and idle cost.
struct Stretch {
  double cost = 0;
  double attributed = 0;
  double idle = 0;
  std::vector<std::string> warnings;
};
Stretch Figures(const std::string& db, WallTime from, WallTime to) {
  ReportQuery q;
  q.db_path = db;
  q.from = from;
  q.to = to;
  q.from_given = q.to_given = true;
  q.as_of = to;
  q.format = Format::kJson;
  Result<RenderedReport> r = RenderReport(q);
  EXPECT_TRUE(r.ok()) << r.error().ToString();
  Stretch s;
  if (!r.ok()) return s;
  const nlohmann::json j = nlohmann::json::parse(r->body);
  s.cost = j["totals"]["cost_usd"].get<double>();
  s.attributed = j["totals"]["attributed_usd"].get<double>();
  s.idle = j["totals"]["idle_usd"].get<double>();
  for (const auto& w : j["warnings"]) s.warnings.push_back(w.get<std::string>());
  return s;
}

// A copy of the store as it is now (its write-ahead log included), as a
// report reading the live daemon's file would see it.
void SnapshotStore(const std::string& from, const std::string& to) {
  std::filesystem::remove(to);
  sqlite3* handle = nullptr;
  ASSERT_EQ(sqlite3_open(from.c_str(), &handle), SQLITE_OK);
  const std::string vacuum = "VACUUM INTO '" + to + "'";
  char* message = nullptr;
  EXPECT_EQ(sqlite3_exec(handle, vacuum.c_str(), nullptr, nullptr, &message), SQLITE_OK) << (message ? message : "");
  sqlite3_free(message);
  sqlite3_close(handle);
}

// One replay of the suite's scenario into `db`, with the controller's
// preset adjusted; `at_cut` is called with the replay stopped at each of
// `cuts` (in order), after the store's writes are committed.
void ReplayInto(const std::string& db, const std::function<void(ControllerOptions&)>& adjust,
                const std::vector<WallTime>& cuts, const std::function<void(size_t)>& at_cut) {
  Result<sim::Scenario> scenario = testing::DemoStoreScenario(kCluster);
  ASSERT_TRUE(scenario.ok()) << scenario.error().ToString();
  Result<sim::RunSpec> spec = sim::MakeRunSpec("gpuscaler", *scenario, nullptr);
  ASSERT_TRUE(spec.ok());
  Result<std::unique_ptr<SqliteAuditStore>> store = SqliteAuditStore::Open(db);
  ASSERT_TRUE(store.ok()) << store.error().ToString();
  sim::RunOptions options;
  options.store = store->get();
  options.adjust_controller = adjust;
  sim::Replay replay(*scenario, *spec, options);
  for (size_t i = 0; i < cuts.size(); ++i) {
    while (!replay.done() && replay.now() < cuts[i]) replay.Step();
    ASSERT_TRUE((*store)->Flush().ok());
    at_cut(i);
  }
  while (!replay.done()) replay.Step();
  const sim::RunResult run = replay.Finish();
  ASSERT_EQ(run.controller_errors, 0);
  ASSERT_TRUE((*store)->Flush().ok());
}

TEST_F(AddsUp, ALiveReportWithTheDaemonsOpenIntervalsAgreesWithTheFinishedFigureWithinOnePercent) {
  // The replay with each node's open usage interval written at the
  // daemon's cadence; its store is copied at :22 and :43 of every third
  // hour of the second day (two and three minutes after an open write, so
  // the report estimates those minutes), as the diurnal load rises and
  // falls and training bursts come and go.
  std::vector<WallTime> cuts;
  std::vector<std::string> live_dbs;
  for (int hour = 1; hour < 24; hour += 3) {
    for (int minute : {22, 43}) {
      cuts.push_back(start_ + Seconds(86400 + hour * 3600 + minute * 60));
      live_dbs.push_back(dir_->File("open-live-" + std::to_string(hour) + "-" + std::to_string(minute) + ".db"));
    }
  }
  const Seconds cadence = ControllerOptions::ForDaemon().open_usage_every;
  ASSERT_GT(cadence.count(), 0);
  const std::string finished_db = dir_->File("open-finished.db");
  ReplayInto(
      finished_db, [cadence](ControllerOptions& o) { o.open_usage_every = cadence; }, cuts,
      [&](size_t i) { SnapshotStore(finished_db, live_dbs[i]); });
  // The finished figure: the same replay recording usage by the minute (its
  // ticks), so a partial hour is what the nodes' work held in it. The hourly
  // rows of a finished store spread each node's hour evenly over the hour,
  // which moves the GPUs a node fills during its hour back into its empty
  // first minutes, and so differs from any live figure by that smoothing.
  const std::string by_minute_db = dir_->File("by-minute.db");
  ReplayInto(
      by_minute_db, [](ControllerOptions& o) { o.usage_interval = Seconds(60); }, {}, [](size_t) {});

  double worst = 0;
  std::string worst_at;
  for (size_t i = 0; i < cuts.size(); ++i) {
    const WallTime hour = cuts[i] - Seconds(ToUnixSeconds(cuts[i]) % 3600);
    const Stretch finished = Figures(by_minute_db, hour, cuts[i]);
    const Stretch at_now = Figures(live_dbs[i], hour, cuts[i]);
    ASSERT_GT(finished.cost, 0) << FormatRfc3339(cuts[i]);
    EXPECT_NEAR(at_now.cost, finished.cost, 0.005) << FormatRfc3339(cuts[i]);
    const double gap = std::abs(at_now.attributed - finished.attributed) / finished.cost;
    EXPECT_LE(gap, 0.01) << FormatRfc3339(cuts[i]) << ": live " << at_now.attributed << " vs finished "
                         << finished.attributed << " of " << finished.cost;
    EXPECT_NEAR(at_now.idle, finished.idle, 0.01 * finished.cost + 0.005) << FormatRfc3339(cuts[i]);
    if (gap >= worst) {
      worst = gap;
      worst_at = FormatRfc3339(cuts[i]);
    }
  }
  if (const char* keep = std::getenv("KEEP_DBS")) {
    std::filesystem::create_directories(keep);
    for (const std::string& db : live_dbs) std::filesystem::copy_file(db, std::string(keep) + "/" + std::filesystem::path(db).filename().string(), std::filesystem::copy_options::overwrite_existing);
    std::filesystem::copy_file(by_minute_db, std::string(keep) + "/by-minute.db", std::filesystem::copy_options::overwrite_existing);
  }
  std::printf("open intervals: worst of %zu cuts %s, attributed off by %.3f %% of the partial hour's cost\n",
              cuts.size(), worst_at.c_str(), 100 * worst);
  // Open rows are replaced, never added to: the finished store's totals are
  // those of the suite's replay, which wrote none.
  const Stretch whole_open = Figures(finished_db, start_, start_ + Seconds(kDays * 86400));
  const Stretch whole = Figures(db_, start_, start_ + Seconds(kDays * 86400));
  EXPECT_NEAR(whole_open.cost, whole.cost, 0.005);
  EXPECT_NEAR(whole_open.attributed, whole.attributed, 0.005);
  EXPECT_NEAR(whole_open.idle, whole.idle, 0.005);
}

// The share of the cost of the stretch [hour, now) (at the nodes' launch
// prices) billed by GPU nodes launched after the start of the hour before
// `hour`: nodes with less than a full hour of allocation recorded when the
// stretch opens, or none. Read from the store's nodes, not from a report.
double NewNodesShare(const std::string& db, WallTime hour, WallTime now) {
  sqlite3* handle = nullptr;
  double all = 0, recent = 0;
  if (sqlite3_open_v2(db.c_str(), &handle, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    ADD_FAILURE() << db << ": " << sqlite3_errmsg(handle);
    sqlite3_close(handle);
    return 1;
  }
  sqlite3_stmt* stmt = nullptr;
  const char* sql =
      "SELECT launch_time, launch_usd_per_hour * (MIN(COALESCE(end_time, ?2), ?2) - MAX(launch_time, ?1)) "
      "FROM nodes WHERE gpu_count > 0 AND launch_time < ?2 AND COALESCE(end_time, ?2) > ?1";
  EXPECT_EQ(sqlite3_prepare_v2(handle, sql, -1, &stmt, nullptr), SQLITE_OK) << sqlite3_errmsg(handle);
  sqlite3_bind_int64(stmt, 1, ToUnixSeconds(hour));
  sqlite3_bind_int64(stmt, 2, ToUnixSeconds(now));
  while (stmt != nullptr && sqlite3_step(stmt) == SQLITE_ROW) {
    const double cost = sqlite3_column_double(stmt, 1);
    all += cost;
    if (sqlite3_column_int64(stmt, 0) > ToUnixSeconds(hour) - 3600) recent += cost;
  }
  sqlite3_finalize(stmt);
  sqlite3_close(handle);
  return all > 0 ? recent / all : 1;
}

TEST_F(AddsUp, ALiveReportFromFullIntervalsOnlyEstimatesTheOpenHourFromTheLastOne) {
  // A live report estimates the open stretch of the hour at each running
  // node's last recorded allocation (a node launched since usage was last
  // written: its pool's), which is the finished figure when the fleet of the
  // stretch is the fleet of the hour before, holding what it held. Nodes
  // launched since the start of the hour before break that: they have part
  // of an hour recorded, or nothing (launched in the stretch, or not yet
  // holding work when it opened). The test takes every steady hour of the
  // replay, 40 minutes in: one where such nodes bill at most a tenth of the
  // stretch's cost.
  constexpr double kMostNewNodesShare = 0.10;
  const Seconds open = Seconds(40 * 60);
  std::vector<WallTime> hours;
  for (int h = 1; h < kDays * 24; ++h) {
    const WallTime hour = start_ + Seconds(int64_t{h} * 3600);
    if (NewNodesShare(db_, hour, hour + open) <= kMostNewNodesShare) hours.push_back(hour);
  }
  ASSERT_FALSE(hours.empty()) << "no hour of the replay whose nodes launched since the hour before bill at "
                              << "most " << 100 * kMostNewNodesShare << " % of its first 40 minutes";
  double worst = 0;
  std::string worst_at;
  for (const WallTime hour : hours) {
    const WallTime now = hour + open;
    SCOPED_TRACE(FormatRfc3339(now));
    // The live database of a writer without open intervals (a daemon of an
    // earlier version): what the store held at `now` (usage is written when
    // a node's interval ends, so every row ending later is not there yet).
    const std::string live = dir_->File("live.db");
    std::filesystem::copy_file(db_, live, std::filesystem::copy_options::overwrite_existing);
    sqlite3* handle = nullptr;
    ASSERT_EQ(sqlite3_open(live.c_str(), &handle), SQLITE_OK);
    sqlite3_stmt* del = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(handle, "DELETE FROM usage WHERE end_time > ?1", -1, &del, nullptr),
              SQLITE_OK);
    sqlite3_bind_int64(del, 1, ToUnixSeconds(now));
    ASSERT_EQ(sqlite3_step(del), SQLITE_DONE);
    const int removed = sqlite3_changes(handle);
    sqlite3_finalize(del);
    ASSERT_GT(removed, 0) << "no usage row ends after " << FormatRfc3339(now);
    // ... and its run has not ended: a live daemon's.
    ASSERT_EQ(sqlite3_exec(handle, "UPDATE runs SET ended = NULL", nullptr, nullptr, nullptr), SQLITE_OK)
        << sqlite3_errmsg(handle);
    sqlite3_close(handle);

    const Stretch finished = Figures(db_, hour, now);
    const Stretch at_now = Figures(live, hour, now);
    ASSERT_GT(finished.attributed, 0);
    // Billing does not depend on usage rows.
    EXPECT_NEAR(at_now.cost, finished.cost, 0.005);
    // Attribution (and so idle) of the partial hour is the previous hour's
    // allocation for 40 minutes: within 6 % of its cost (the nodes that were
    // up take on or finish work within the hour, and up to a tenth of the
    // cost is on nodes estimated from part of an hour or their pool's);
    // counting the unrecorded stretch as idle would put most of its cost in
    // idle.
    EXPECT_NEAR(at_now.attributed, finished.attributed, 0.06 * finished.cost)
        << "live " << at_now.attributed << " vs finished " << finished.attributed << " of " << finished.cost;
    EXPECT_NEAR(at_now.idle / at_now.cost, finished.idle / finished.cost, 0.06);
    EXPECT_LT(at_now.idle, 0.5 * at_now.cost);
    bool said = false;
    for (const std::string& w : at_now.warnings) {
      said = said || w.find("estimated at each node's last recorded") != std::string::npos;
    }
    EXPECT_TRUE(said) << "the live report should say what it estimated";
    for (const std::string& w : finished.warnings) EXPECT_EQ(w.find("estimated"), std::string::npos) << w;
    const double gap = std::abs(at_now.attributed - finished.attributed) / finished.cost;
    if (gap >= worst) {
      worst = gap;
      worst_at = FormatRfc3339(now);
    }
  }
  std::printf("full intervals only: %zu steady hours, worst %s, attributed off by %.3f %% of the stretch's "
              "cost\n",
              hours.size(), worst_at.c_str(), 100 * worst);
}

TEST(CentsPreservingTotal, ZerosStayZeroAndAGivenTotalIsMet) {
  // Three amounts whose remainders compete, and exact zeros that must not
  // win a cent.
  std::vector<int64_t> c = CentsPreservingTotal({0.004, 0.0, 1.005, 0.0, 2.336});
  EXPECT_EQ(c[1], 0);
  EXPECT_EQ(c[3], 0);
  EXPECT_EQ(c[0] + c[1] + c[2] + c[3] + c[4], std::llround((0.004 + 1.005 + 2.336) * 100));
  // A total rounded elsewhere, a cent above the rounded sum: the largest
  // amount takes it, zeros stay zero.
  c = CentsPreservingTotal({0.0, 4.50, 0.0}, 451);
  EXPECT_EQ(c, (std::vector<int64_t>{0, 451, 0}));
  c = CentsPreservingTotal({0.0, 4.50, 1.0}, 549);
  EXPECT_EQ(c, (std::vector<int64_t>{0, 449, 100}));
  // Noise around a whole cent is that cent.
  c = CentsPreservingTotal({0.07, 1e-15, -1e-15});
  EXPECT_EQ(c, (std::vector<int64_t>{7, 0, 0}));
}

}  // namespace
}  // namespace gpuscaler::report
