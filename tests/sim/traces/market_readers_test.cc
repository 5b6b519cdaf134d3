#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "sim/trace_readers.h"
#include "sim/traces/fixture_path.h"

namespace gpuscaler::sim {
namespace {

using testing::Fixture;

SpotMarket MustRead(const std::string& name, MarketFormat format, const MarketOptions& o = {}) {
  Result<SpotMarket> m = ReadSpotMarket(Fixture(name), format, o);
  if (!m.ok()) {
    ADD_FAILURE() << name << ": " << m.error().ToString();
    return {};
  }
  return std::move(*m);
}

using Avail = std::tuple<int64_t, std::string, std::string, int>;
std::vector<Avail> Availability(const SpotMarket& m) {
  std::vector<Avail> out;
  for (const AvailabilityPoint& p : m.availability) out.emplace_back(p.t.count(), p.instance_type, p.zone, p.available_nodes);
  return out;
}

using Price = std::tuple<int64_t, std::string, std::string, CapacityType, double>;
std::vector<Price> Prices(const SpotMarket& m) {
  std::vector<Price> out;
  for (const PricePoint& p : m.prices) out.emplace_back(p.t.count(), p.instance_type, p.zone, p.capacity_type, p.usd_per_hour);
  return out;
}

TEST(CblAvailability, ReadsZoneColumnsAsChangesOfTheDefaultType) {
  const SpotMarket m = MustRead("cbl_availability_1node.csv", MarketFormat::kCblAvailability);
  EXPECT_EQ(Availability(m), (std::vector<Avail>{{0, "p3.2xlarge", "us-east-1a", 0},
                                                {0, "p3.2xlarge", "us-west-2b", 1},
                                                {195, "p3.2xlarge", "us-east-1a", 1},
                                                {390, "p3.2xlarge", "us-west-2b", 0},
                                                {585, "p3.2xlarge", "us-east-1a", 0}}));
  EXPECT_EQ(m.stats.rows_read, 4);
  EXPECT_EQ(m.stats.rows_used, 4);
  EXPECT_TRUE(m.prices.empty());
  EXPECT_FALSE(m.start_time.has_value());
}

TEST(CblAvailability, ScalesProbeHitsWhenAsked) {
  MarketOptions o;
  o.available_nodes_when_up = 100;
  const SpotMarket m = MustRead("cbl_availability_1node.csv", MarketFormat::kCblAvailability, o);
  ASSERT_EQ(m.availability.size(), 5u);
  EXPECT_EQ(m.availability[1].available_nodes, 100);
  EXPECT_EQ(m.availability[2].available_nodes, 100);
  EXPECT_EQ(m.availability[3].available_nodes, 0);
}

TEST(CblAvailability, ZoneColumnsCanAlsoSetOtherSizesOfTheProbedType) {
  MarketOptions o;
  o.also_instance_types = {"p3.2xlarge", "p3.16xlarge"};  // the probed type itself is not doubled
  const SpotMarket m = MustRead("cbl_availability_1node.csv", MarketFormat::kCblAvailability, o);
  EXPECT_EQ(Availability(m), (std::vector<Avail>{{0, "p3.16xlarge", "us-east-1a", 0},
                                                {0, "p3.16xlarge", "us-west-2b", 1},
                                                {0, "p3.2xlarge", "us-east-1a", 0},
                                                {0, "p3.2xlarge", "us-west-2b", 1},
                                                {195, "p3.16xlarge", "us-east-1a", 1},
                                                {195, "p3.2xlarge", "us-east-1a", 1},
                                                {390, "p3.16xlarge", "us-west-2b", 0},
                                                {390, "p3.2xlarge", "us-west-2b", 0},
                                                {585, "p3.16xlarge", "us-east-1a", 0},
                                                {585, "p3.2xlarge", "us-east-1a", 0}}));
  // Typed columns (<zone>_<gpu>_<count>) name their own type and are left alone.
  const SpotMarket multi = MustRead("cbl_availability_multi.csv", MarketFormat::kCblAvailability, o);
  for (const AvailabilityPoint& p : multi.availability) {
    if (p.zone == "us-west-2a") {
      EXPECT_NE(p.instance_type, "p3.2xlarge");
    }
  }
}

TEST(CblAvailability, MapsGpuColumnsToInstanceTypesAndReadsPrices) {
  const SpotMarket m = MustRead("cbl_availability_multi.csv", MarketFormat::kCblAvailability);
  EXPECT_EQ(Availability(m), (std::vector<Avail>{{0, "p2.xlarge", "us-west-2a", 1},
                                                {0, "p3.16xlarge", "us-west-2a", 0},
                                                {0, "p3.2xlarge", "us-east-1c", 4},
                                                {600, "p3.16xlarge", "us-west-2a", 1},
                                                {1200, "p2.xlarge", "us-west-2a", 0},
                                                {1800, "p3.2xlarge", "us-east-1c", 2}}));
  EXPECT_EQ(Prices(m), (std::vector<Price>{{0, "p3.2xlarge", "us-east-1c", CapacityType::kSpot, 0.918},
                                          {1200, "p3.2xlarge", "us-east-1c", CapacityType::kSpot, 0.95}}));
  ASSERT_EQ(m.stats.warnings.size(), 1u);
  EXPECT_EQ(m.stats.warnings[0], "1 cells are empty (no probe data); the last value stays in force");
}

TEST(CblAvailability, WindowCarriesTheStateInForceAtItsStart) {
  MarketOptions o;
  o.window_start = Seconds(900);
  o.window_end = Seconds(1500);
  const SpotMarket m = MustRead("cbl_availability_multi.csv", MarketFormat::kCblAvailability, o);
  EXPECT_EQ(Availability(m), (std::vector<Avail>{{0, "p2.xlarge", "us-west-2a", 1},
                                                {0, "p3.16xlarge", "us-west-2a", 1},
                                                {0, "p3.2xlarge", "us-east-1c", 4},
                                                {300, "p2.xlarge", "us-west-2a", 0}}));
  EXPECT_EQ(Prices(m), (std::vector<Price>{{0, "p3.2xlarge", "us-east-1c", CapacityType::kSpot, 0.918},
                                          {300, "p3.2xlarge", "us-east-1c", CapacityType::kSpot, 0.95}}));
  EXPECT_EQ(m.stats.skipped.at("outside window"), 2);
}

TEST(CblInstanceTypes, FollowTheSourceNaming) {
  EXPECT_EQ(CblInstanceType("v100_1"), "p3.2xlarge");
  EXPECT_EQ(CblInstanceType("v100_8"), "p3.16xlarge");
  EXPECT_EQ(CblInstanceType("k80_1"), "p2.xlarge");
  EXPECT_EQ(CblInstanceType("k80_8"), "p2.16xlarge");
  EXPECT_EQ(CblInstanceType("a100_8"), std::nullopt);
}

TEST(ParcaeEvents, TurnsRemovalsIntoInterruptionsInTheGivenZone) {
  MarketOptions o;
  o.zone = "us-west-2b";
  const SpotMarket m = MustRead("parcae_events.csv", MarketFormat::kParcaeEvents, o);
  ASSERT_EQ(m.interruptions.size(), 2u);
  EXPECT_EQ(m.interruptions[0].t, Seconds(61));  // 60500 ms, rounded
  EXPECT_EQ(m.interruptions[0].instance_type, "p3.2xlarge");
  EXPECT_EQ(m.interruptions[0].zone, "us-west-2b");
  EXPECT_EQ(m.interruptions[1].t, Seconds(180));
  EXPECT_EQ(m.stats.skipped.at("add event"), 3);
  EXPECT_EQ(m.stats.rows_used, 2);
}

TEST(AwsSpotAdvisor, TurnsBandsIntoHourlyRatesForLinuxRows) {
  const SpotMarket m = MustRead("aws_spot_advisor.csv", MarketFormat::kAwsSpotAdvisor);
  ASSERT_EQ(m.risks.size(), 3u);
  EXPECT_EQ(m.risks[0].region, "eu-west-1");
  EXPECT_EQ(m.risks[0].instance_type, "g5.xlarge");
  EXPECT_DOUBLE_EQ(m.risks[0].interruptions_per_hour, 0.025 / 720);
  EXPECT_DOUBLE_EQ(m.risks[0].savings_fraction, 0.55);
  EXPECT_EQ(m.risks[1].instance_type, "g4dn.xlarge");
  EXPECT_DOUBLE_EQ(m.risks[1].interruptions_per_hour, 0.25 / 720);
  EXPECT_DOUBLE_EQ(m.risks[1].savings_fraction, 0.0);
  EXPECT_EQ(m.risks[2].instance_type, "p3.2xlarge");
  EXPECT_DOUBLE_EQ(m.risks[2].interruptions_per_hour, 0.125 / 720);
  EXPECT_DOUBLE_EQ(m.risks[2].savings_fraction, 0.70);
  EXPECT_EQ(m.stats.skipped.at("os not Linux"), 1);
}

TEST(AwsSpotAdvisor, ClampsNegativeSavingsAndSaysSo) {
  Result<SpotMarket> m = ParseSpotMarket(
      "region,os,instance_type,savings_pct_vs_ondemand,interruption_range_index\nr,Linux,p5.48xlarge,-62,0\n",
      "a.csv", MarketFormat::kAwsSpotAdvisor);
  ASSERT_TRUE(m.ok()) << m.error().ToString();
  ASSERT_EQ(m->risks.size(), 1u);
  EXPECT_EQ(m->risks[0].savings_fraction, 0.0);
  EXPECT_EQ(m->stats.warnings,
            std::vector<std::string>{"1 rows have negative savings (spot above on-demand); savings_fraction set to 0"});
}

TEST(AwsSpotPriceHistory, KeepsLinuxPricesAndNamesZones) {
  MarketOptions o;
  o.zone_names["use1-az4"] = "us-east-1a";
  const SpotMarket m = MustRead("aws_spot_price_history.csv", MarketFormat::kAwsSpotPriceHistory, o);
  EXPECT_EQ(Prices(m), (std::vector<Price>{{0, "g4dn.xlarge", "us-east-1a", CapacityType::kSpot, 0.17},
                                          {19, "p3.2xlarge", "use1-az6", CapacityType::kSpot, 0.918},
                                          {259, "g4dn.xlarge", "us-east-1a", CapacityType::kSpot, 0.18}}));
  EXPECT_EQ(FormatRfc3339(*m.start_time), "2022-05-31T18:20:41Z");
  EXPECT_EQ(m.stats.skipped.at("product not Linux/UNIX"), 1);
}

TEST(GcpSpotPrices, ReadsTheChangeLogAsStepFunctions) {
  const SpotMarket m = MustRead("gcp_spot_prices.csv", MarketFormat::kGcpSpotPrices);
  EXPECT_EQ(Prices(m), (std::vector<Price>{{0, "g2-standard-4", "us-central1", CapacityType::kSpot, 0.28},
                                          {1644768, "a2-highgpu-1g", "us-central1", CapacityType::kSpot, 1.10},
                                          {6915168, "g2-standard-4", "us-central1", CapacityType::kSpot, 0.30}}));
  EXPECT_EQ(m.stats.skipped, (std::map<std::string, int64_t>{
                                 {"key removed", 1}, {"no spot price", 1}, {"spot price unchanged", 1}}));
  EXPECT_EQ(ToUnixSeconds(*m.start_time), 1644448032);

  MarketOptions o;
  o.include_on_demand = true;
  const SpotMarket with_od = MustRead("gcp_spot_prices.csv", MarketFormat::kGcpSpotPrices, o);
  int on_demand = 0;
  for (const PricePoint& p : with_od.prices) on_demand += p.capacity_type == CapacityType::kOnDemand;
  EXPECT_EQ(on_demand, 4);
  EXPECT_EQ(with_od.prices.size(), 7u);
}

TEST(MarketReaders, RejectMalformedFixtures) {
  struct Case {
    std::string file;
    MarketFormat format;
    std::string want;
  } cases[] = {
      {"cbl_availability_malformed.csv", MarketFormat::kCblAvailability,
       ":3: column 'us-east-1a': '0.5' is not a whole number of nodes"},
      {"cbl_availability_bad_column.csv", MarketFormat::kCblAvailability,
       ":1: column 'us-east-1a_a100_4': unknown GPU 'a100_4' (known: v100_1, v100_4, v100_8, k80_1, k80_8)"},
      {"parcae_malformed.csv", MarketFormat::kParcaeEvents, ":3: column 'event': 'lost' is not add or remove"},
      {"aws_spot_advisor_malformed.csv", MarketFormat::kAwsSpotAdvisor,
       ":3: column 'interruption_range_label': '10-15%' does not match interruption_range_index 1 ('5-10%')"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.file);
    Result<SpotMarket> m = ReadSpotMarket(Fixture(c.file), c.format);
    ASSERT_FALSE(m.ok());
    EXPECT_EQ(m.error().category(), ErrorCategory::kInvalidInput);
    EXPECT_EQ(m.error().message(), Fixture(c.file) + c.want);
  }
}

TEST(MarketReaders, RejectMalformedRowsNamingColumnAndValue) {
  struct Case {
    std::string name;
    MarketFormat format;
    std::string text;
    std::string want;
  } cases[] = {
      {"cbl missing elapsed_s", MarketFormat::kCblAvailability, "tick,us-east-1a\n0,1\n",
       "m.csv:1: missing column 'elapsed_s'"},
      {"cbl no zones", MarketFormat::kCblAvailability, "tick,elapsed_s\n0,0\n", "m.csv:1: no availability columns"},
      {"cbl time goes backwards", MarketFormat::kCblAvailability, "elapsed_s,z\n0,1\n60,1\n30,1\n",
       "m.csv:4: column 'elapsed_s': '30' is not after the previous row's 60"},
      {"cbl negative price", MarketFormat::kCblAvailability, "elapsed_s,z,price_z\n0,1,-2\n",
       "m.csv:2: column 'price_z': must be >= 0, got '-2'"},
      {"parcae negative time", MarketFormat::kParcaeEvents, "time_ms,event,node\n-5,add,n\n",
       "m.csv:2: column 'time_ms': must be >= 0, got '-5'"},
      {"advisor band out of range", MarketFormat::kAwsSpotAdvisor,
       "region,os,instance_type,savings_pct_vs_ondemand,interruption_range_index\nr,Linux,t,10,5\n",
       "m.csv:2: column 'interruption_range_index': must be 0..4, got '5'"},
      {"advisor savings of 100 %", MarketFormat::kAwsSpotAdvisor,
       "region,os,instance_type,savings_pct_vs_ondemand,interruption_range_index\nr,Linux,t,100,0\n",
       "m.csv:2: column 'savings_pct_vs_ondemand': must be below 100, got '100'"},
      {"advisor duplicate", MarketFormat::kAwsSpotAdvisor,
       "region,os,instance_type,savings_pct_vs_ondemand,interruption_range_index\nr,Linux,t,10,0\nr,Linux,t,10,0\n",
       "m.csv:3: column 'instance_type': duplicate 't' in region 'r' (first on line 2)"},
      {"aws price negative", MarketFormat::kAwsSpotPriceHistory,
       "timestamp,az_id,instance_type,product_description,spot_price_usd_per_h\n"
       "2022-05-31T18:20:41+00:00,a,t,Linux/UNIX,-1\n",
       "m.csv:2: column 'spot_price_usd_per_h': must be >= 0, got '-1'"},
      {"aws price bad time", MarketFormat::kAwsSpotPriceHistory,
       "timestamp,az_id,instance_type,product_description,spot_price_usd_per_h\n"
       "31/05/2022,a,t,Linux/UNIX,1\n",
       "m.csv:2: column 'timestamp': '31/05/2022' is not an RFC 3339 time"},
      {"gcp out of order", MarketFormat::kGcpSpotPrices,
       "snapshot_unix,machine_type,region,ondemand_usd_per_h,spot_usd_per_h\n20,m,r,1,0.5\n10,m,r,1,0.4\n",
       "m.csv:3: column 'snapshot_unix': '10' is before the previous row's 20; a change log is in time order"},
      {"gcp bad price", MarketFormat::kGcpSpotPrices,
       "snapshot_unix,machine_type,region,ondemand_usd_per_h,spot_usd_per_h\n20,m,r,1,cheap\n",
       "m.csv:2: column 'spot_usd_per_h': 'cheap' is not a number"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Result<SpotMarket> m = ParseSpotMarket(c.text, "m.csv", c.format);
    ASSERT_FALSE(m.ok());
    EXPECT_EQ(m.error().message(), c.want);
  }
}

}  // namespace
}  // namespace gpuscaler::sim
