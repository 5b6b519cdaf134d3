// `gpuscaler report` over several audit stores, as an operator runs it: two
// `gpuscaler sim --db` files as two clusters, given one by one, named, or as
// a directory; the fleet's totals are the single reports' sum to the cent.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <system_error>
#include <vector>

#include "cli/process.h"

namespace gpuscaler::testing {
namespace {

namespace fs = std::filesystem;

int64_t Cents(const nlohmann::json& v) { return std::llround(v.get<double>() * 100.0); }

// Two one-day demo replays, east (seed 1) and west (seed 2), in dir_/fleet.
// Under ctest they are copies of the stores the setup tests of the fixture
// cli_fleet_stores wrote once for the run (the same commands, in the
// directory GPUSCALER_CLI_FLEET_STORES names; copied, since a test adds
// files beside them); run by hand, the test writes its own.
class FleetReport : public CliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    fs::create_directories(dir_ / "fleet");
    const char* shared = std::getenv("GPUSCALER_CLI_FLEET_STORES");
    for (const auto& [name, seed] : {std::pair{"east", "1"}, std::pair{"west", "2"}}) {
      const std::string db = (dir_ / "fleet" / (std::string(name) + ".db")).string();
      if (shared != nullptr && *shared != '\0') {
        std::error_code ec;
        fs::copy_file(fs::path(shared) / (std::string(name) + ".db"), db, ec);
        ASSERT_FALSE(ec) << "copying the fixture's " << name << ".db from " << shared << ": " << ec.message();
        continue;
      }
      ProcessResult sim = Gpuscaler({"sim", "--scenario", "demo", "--days", "1", "--seed", seed, "--db", db});
      ASSERT_EQ(sim.exit_code, 0) << sim.err;
    }
    east_ = (dir_ / "fleet/east.db").string();
    west_ = (dir_ / "fleet/west.db").string();
  }
  std::string east_, west_;
};

TEST_F(FleetReport, TwoClustersAddUpToTheirSingleReportsToTheCent) {
  ProcessResult fleet =
      Gpuscaler({"report", "--db", east_, "--db", west_, "--run", "gpuscaler", "--format", "json"});
  ASSERT_EQ(fleet.exit_code, 0) << fleet.err;
  const nlohmann::json j = nlohmann::json::parse(fleet.out);
  int64_t sum = 0;
  for (const std::string& db : {east_, west_}) {
    ProcessResult single = Gpuscaler({"report", "--db", db, "--run", "gpuscaler", "--format", "json"});
    ASSERT_EQ(single.exit_code, 0) << single.err;
    const nlohmann::json s = nlohmann::json::parse(single.out);
    EXPECT_GT(Cents(s["totals"]["cost_usd"]), 0);
    sum += Cents(s["totals"]["cost_usd"]);
  }
  EXPECT_EQ(Cents(j["totals"]["cost_usd"]), sum);
  ASSERT_FALSE(j["costs"].empty());
  for (const auto& row : j["costs"]) EXPECT_TRUE(row["cluster"] == "east" || row["cluster"] == "west") << row;

  // The CSV has the column; read one store at a time, the same bytes.
  ProcessResult csv =
      Gpuscaler({"report", "--db", east_, "--db", west_, "--run", "gpuscaler", "--group-by", "team"});
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  EXPECT_EQ(csv.out.rfind("period_start,period_end,cluster,team,cost_usd,", 0), 0u) << csv.out.substr(0, 200);
  EXPECT_NE(csv.err.find("covers 2 clusters (east, west)"), std::string::npos) << csv.err;
  ProcessResult one_by_one = Gpuscaler({"report", "--db", east_, "--db", west_, "--run", "gpuscaler",
                                        "--group-by", "team", "--parallel", "1"});
  ASSERT_EQ(one_by_one.exit_code, 0) << one_by_one.err;
  EXPECT_EQ(one_by_one.out, csv.out);

  // A directory: its audit stores, other files skipped with a warning.
  std::ofstream(dir_ / "fleet" / "README.txt") << "audit stores of the fleet\n";
  ProcessResult from_dir =
      Gpuscaler({"report", "--db", (dir_ / "fleet").string(), "--run", "gpuscaler", "--group-by", "team"});
  ASSERT_EQ(from_dir.exit_code, 0) << from_dir.err;
  EXPECT_EQ(from_dir.out, csv.out);
  EXPECT_NE(
      from_dir.err.find("skipped " + (dir_ / "fleet" / "README.txt").string() + ": not an SQLite database"),
      std::string::npos)
      << from_dir.err;

  // Named stores.
  ProcessResult named = Gpuscaler({"report", "--db", "us-east=" + east_, "--db", "us-west=" + west_, "--run",
                                   "gpuscaler", "--view", "allocation"});
  ASSERT_EQ(named.exit_code, 0) << named.err;
  EXPECT_NE(named.out.find("\r\nus-east,"), std::string::npos) << named.out.substr(0, 300);
  EXPECT_NE(named.out.find("\r\nus-west,"), std::string::npos) << named.out.substr(0, 300);
}

TEST_F(FleetReport, ADuplicateClusterOrAMissingStoreFailsTheWholeReport) {
  ProcessResult twice =
      Gpuscaler({"report", "--db", "prod=" + east_, "--db", "prod=" + west_, "--run", "gpuscaler"});
  EXPECT_EQ(twice.exit_code, 2);
  EXPECT_TRUE(twice.out.empty()) << twice.out.substr(0, 200);
  EXPECT_NE(twice.err.find("cluster 'prod'"), std::string::npos) << twice.err;
  EXPECT_NE(twice.err.find(east_), std::string::npos) << twice.err;
  EXPECT_NE(twice.err.find(west_), std::string::npos) << twice.err;

  const std::string missing = (dir_ / "gone.db").string();
  ProcessResult gone = Gpuscaler({"report", "--db", east_, "--db", missing, "--run", "gpuscaler"});
  EXPECT_EQ(gone.exit_code, 2);
  EXPECT_TRUE(gone.out.empty()) << gone.out.substr(0, 200);
  EXPECT_NE(gone.err.find(missing), std::string::npos) << gone.err;
}

}  // namespace
}  // namespace gpuscaler::testing
