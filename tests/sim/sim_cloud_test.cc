#include "sim/sim_cloud.h"

#include <gtest/gtest.h>

#include "sim/scenario.h"

namespace gpuscaler::sim {
namespace {

struct Fixture {
  Catalog catalog = BuiltinCatalog();
  SpotMarket market;
  ManualClock clock{FromUnixSeconds(1782000000)};
  std::unique_ptr<SimCloud> cloud;

  void Start(SimCloudConfig config = {}) {
    config.hazard_multiplier = 0;  // no random interruptions unless a test asks
    cloud = std::make_unique<SimCloud>(clock, catalog, catalog.Offerings({"us-east-1"}), market, config);
  }
  Offering Get(const std::string& key) {
    for (const Offering& o : catalog.Offerings({"us-east-1"})) {
      if (o.Key() == key) return o;
    }
    ADD_FAILURE() << key;
    return {};
  }
  // Spot capacity for `nodes` p5 nodes per offering.
  void StartWithP5Spot(int nodes) {
    SimCloudConfig c;
    c.spot_capacity_by_family = {{"p5", nodes}};
    Start(c);
  }
  LaunchRequest Request(int count, const std::vector<std::string>& keys) {
    LaunchRequest r;
    r.pool = "p";
    r.count = count;
    for (const std::string& key : keys) r.offerings.push_back(Get(key));
    return r;
  }
  std::string LaunchOne(const std::string& key) {
    LaunchRequest r;
    r.pool = "p";
    r.count = 1;
    r.offerings = {Get(key)};
    Result<LaunchResult> res = cloud->Launch(r);
    EXPECT_TRUE(res.ok());
    EXPECT_EQ(res->instances.size(), 1u);
    return res->instances.empty() ? "" : res->instances[0].instance_id;
  }
  void Run(Seconds d) {
    const WallTime t = clock.WallNow() + d;
    cloud->RunEventsUntil(t);
    clock.AdvanceTo(t);
  }
};

TEST(SimCloud, BillsPerSecondWithASixtySecondMinimum) {
  struct Case {
    std::string name;
    Seconds ran;
    int64_t billed;
  };
  for (const Case& c : std::vector<Case>{{"short", Seconds(10), 60}, {"one minute", Seconds(60), 60},
                                         {"per second after", Seconds(3601), 3601}}) {
    SCOPED_TRACE(c.name);
    Fixture f;
    f.Start();
    const std::string id = f.LaunchOne("g5.xlarge/us-east-1a/on-demand");
    f.Run(c.ran);
    ASSERT_TRUE(f.cloud->Terminate({id}).ok());
    const std::vector<InstanceBill> bills = f.cloud->Bills(f.clock.WallNow());
    ASSERT_EQ(bills.size(), 1u);
    EXPECT_EQ(bills[0].billed_seconds, c.billed);
    EXPECT_NEAR(bills[0].usd, 1.006 * static_cast<double>(c.billed) / 3600.0, 1e-9);
  }
}

TEST(SimCloud, BillsSpotPiecewiseAtThePriceInForce) {
  Fixture f;
  f.market.prices = {{Seconds(0), "g5.xlarge", "us-east-1a", CapacityType::kSpot, 0.5},
                     {Seconds(1800), "g5.xlarge", "us-east-1a", CapacityType::kSpot, 1.0},
                     {Seconds(1800), "g5.xlarge", "us-east-1b", CapacityType::kSpot, 9.0}};
  f.Start();
  const std::string id = f.LaunchOne("g5.xlarge/us-east-1a/spot");
  f.Run(Seconds(3600));
  ASSERT_TRUE(f.cloud->Terminate({id}).ok());
  const std::vector<InstanceBill> bills = f.cloud->Bills(f.clock.WallNow());
  EXPECT_NEAR(bills[0].usd, 0.5 * 0.5 + 1.0 * 0.5, 1e-9);
  EXPECT_NEAR(f.cloud->CostUntil(f.clock.WallNow()), 0.75, 1e-9);
  // The price change is visible to the controller as a spot price.
  Result<std::vector<SpotPrice>> prices = f.cloud->SpotPrices(f.clock.WallNow() - Seconds(3600));
  ASSERT_TRUE(prices.ok());
  ASSERT_FALSE(prices->empty());
  EXPECT_DOUBLE_EQ(prices->back().usd_per_hour, 9.0);
}

// Like DescribeSpotPriceHistory, the answer reaches back a bounded time:
// a months-long demo keeps a bounded price log.
TEST(SimCloud, SpotPriceHistoryReachesBackOnlyItsRetention) {
  Fixture f;
  for (int h = 0; h < 6; ++h) {
    f.market.prices.push_back({Seconds(h * 3600), "g5.xlarge", "us-east-1a", CapacityType::kSpot, 0.5 + 0.1 * h});
  }
  SimCloudConfig c;
  c.price_history = Seconds(2 * 3600);
  const WallTime start = f.clock.WallNow();
  f.Start(c);
  f.Run(Seconds(6 * 3600));
  Result<std::vector<SpotPrice>> prices = f.cloud->SpotPrices(start);
  ASSERT_TRUE(prices.ok());
  ASSERT_FALSE(prices->empty());
  std::vector<double> g5;
  for (const SpotPrice& p : *prices) {
    EXPECT_GE(p.time, start + Seconds(3 * 3600)) << FormatRfc3339(p.time);
    if (p.instance_type == "g5.xlarge" && p.zone == "us-east-1a") g5.push_back(p.usd_per_hour);
  }
  ASSERT_FALSE(g5.empty());
  EXPECT_DOUBLE_EQ(g5.back(), 1.0);  // the 5 h price
}

TEST(SimCloud, LiveInstancesAreBilledToTheEndOfTheReplay) {
  Fixture f;
  f.Start();
  f.LaunchOne("p5.48xlarge/us-east-1a/on-demand");
  f.Run(Seconds(1800));
  EXPECT_NEAR(f.cloud->Bills(f.clock.WallNow())[0].usd, 55.04 / 2, 1e-9);
}

TEST(SimCloud, CapacityLimitGivesACapacityErrorAndTheNextOfferingIsTried) {
  Fixture f;
  f.StartWithP5Spot(1);
  LaunchRequest r = f.Request(3, {"p5.48xlarge/us-east-1a/spot", "p5.48xlarge/us-east-1b/spot"});
  Result<LaunchResult> res = f.cloud->Launch(r);
  ASSERT_TRUE(res.ok());
  EXPECT_EQ(res->instances.size(), 2u);  // one per zone: partial fulfilment
  ASSERT_EQ(res->errors.size(), 2u);
  EXPECT_EQ(res->errors[0].error.category(), ErrorCategory::kCapacity);
  // Same token, same answer: nothing launched twice.
  r.idempotency_token = "d1-0";
  Result<LaunchResult> first = f.cloud->Launch(r);
  Result<LaunchResult> again = f.cloud->Launch(r);
  EXPECT_EQ(first->instances.size(), again->instances.size());
  EXPECT_EQ(f.cloud->launched(), 2);
}

// A gang's launch: all its nodes or none.
TEST(SimCloud, AnAllOrNothingLaunchShortOfRoomLaunchesNothing) {
  Fixture f;
  f.StartWithP5Spot(2);
  LaunchRequest r = f.Request(3, {"p5.48xlarge/us-east-1a/spot"});
  r.all_or_nothing = true;
  Result<LaunchResult> res = f.cloud->Launch(r);
  ASSERT_TRUE(res.ok());
  EXPECT_TRUE(res->instances.empty());
  ASSERT_EQ(res->errors.size(), 1u);
  EXPECT_EQ(res->errors[0].error.category(), ErrorCategory::kCapacity);
  EXPECT_EQ(f.cloud->launched(), 0);
  r.count = 2;
  EXPECT_EQ(f.cloud->Launch(r)->instances.size(), 2u);
}

TEST(SimCloud, AvailabilityDropInterruptsWithATwoMinuteNotice) {
  Fixture f;
  f.market.availability = {{Seconds(0), "g5.xlarge", "us-east-1a", 5},
                           {Seconds(600), "g5.xlarge", "us-east-1a", 0}};
  f.Start();
  const std::string id = f.LaunchOne("g5.xlarge/us-east-1a/spot");
  f.Run(Seconds(600));
  Result<std::vector<InterruptionNotice>> notices = f.cloud->PollInterruptions();
  ASSERT_EQ(notices->size(), 1u);
  EXPECT_EQ((*notices)[0].instance_id, id);
  EXPECT_EQ((*notices)[0].deadline - (*notices)[0].notice_time, Seconds(120));
  EXPECT_EQ(f.cloud->live_count(), 1);
  f.Run(Seconds(120));
  EXPECT_EQ(f.cloud->live_count(), 0);
  EXPECT_EQ(f.cloud->interrupted(), 1);
  EXPECT_TRUE(f.cloud->Bills(f.clock.WallNow())[0].interrupted);
}

TEST(SimCloud, HazardInterruptionsAreSeededAndRepeatable) {
  auto run = [](uint64_t seed) {
    Fixture f;
    SimCloudConfig c;
    c.seed = seed;
    f.cloud = std::make_unique<SimCloud>(f.clock, f.catalog, f.catalog.Offerings({"us-east-1"}), f.market, [&] {
      SimCloudConfig k = c;
      k.hazard_by_family = {{"g5", 1.0}};
      return k;
    }());
    for (int i = 0; i < 20; ++i) f.LaunchOne("g5.xlarge/us-east-1a/spot");
    f.Run(Seconds(3600));
    return f.cloud->interrupted();
  };
  EXPECT_EQ(run(7), run(7));
  EXPECT_GT(run(7), 5);   // about 1 - e^-1 of 20 in an hour at 1/h
  EXPECT_LT(run(7), 20);
}

// A long-running simulated cloud (the daemon's demo) forgets ended
// instances and spent idempotency tokens after forget_ended_after, so its
// memory does not grow with the instances it ever ran; the cost stays.
TEST(SimCloud, ForgetsEndedInstancesAndOldTokensButKeepsTheirCost) {
  auto run = [](std::optional<Seconds> forget) {
    Fixture f;
    SimCloudConfig c;
    c.forget_ended_after = forget;
    c.seed = 3;
    f.cloud = std::make_unique<SimCloud>(f.clock, f.catalog, f.catalog.Offerings({"us-east-1"}), f.market, [&] {
      SimCloudConfig k = c;
      k.hazard_by_family = {{"g5", 0.5}};  // interruptions end some, with events queued for others
      return k;
    }());
    const std::string live = f.LaunchOne("g5.xlarge/us-east-1a/on-demand");
    LaunchRequest tokened;
    tokened.pool = "p";
    tokened.count = 1;
    tokened.offerings = {f.Get("g5.xlarge/us-east-1b/on-demand")};
    tokened.idempotency_token = "token-1";
    const std::string first = f.cloud->Launch(tokened)->instances.at(0).instance_id;
    EXPECT_EQ(f.cloud->Launch(tokened)->instances.at(0).instance_id, first);  // honoured while remembered
    for (int hour = 0; hour < 48; ++hour) {
      std::vector<std::string> ids;
      for (int i = 0; i < 5; ++i) ids.push_back(f.LaunchOne("g5.xlarge/us-east-1a/spot"));
      f.Run(Seconds(1800));
      EXPECT_TRUE(f.cloud->Terminate(ids).ok());  // some were interrupted already: no-op for those
      f.Run(Seconds(1800));
    }
    struct Out {
      double cost;
      size_t remembered;
      size_t tokens;
      int launched, interrupted;
      bool live_listed;
      std::string first, relaunch;
    } out;
    out.first = first;
    out.cost = f.cloud->CostUntil(f.clock.WallNow());
    out.remembered = f.cloud->remembered_instances();
    out.tokens = f.cloud->remembered_tokens();
    out.launched = f.cloud->launched();
    out.interrupted = f.cloud->interrupted();
    Result<std::vector<Instance>> listed = f.cloud->ListInstances();
    out.live_listed = listed.ok() && listed->size() == 2 && (*listed)[0].instance_id == live;
    out.relaunch = f.cloud->Launch(tokened)->instances.at(0).instance_id;
    return out;
  };
  const auto kept = run(std::nullopt);
  const auto forgetful = run(Seconds(3 * 3600));
  // Same world, same bill: forgetting changes what is remembered, not what happened.
  EXPECT_EQ(forgetful.launched, kept.launched);
  EXPECT_EQ(forgetful.interrupted, kept.interrupted);
  EXPECT_GT(kept.interrupted, 0);
  EXPECT_NEAR(forgetful.cost, kept.cost, 1e-6 * kept.cost);
  EXPECT_TRUE(kept.live_listed);
  EXPECT_TRUE(forgetful.live_listed);
  EXPECT_EQ(kept.remembered, 2u + 48u * 5u);
  // The two live ones plus those ended in the last 3 hours (5 per hour).
  EXPECT_LE(forgetful.remembered, 2u + 4u * 5u);
  EXPECT_EQ(kept.tokens, 1u);
  EXPECT_EQ(forgetful.tokens, 0u);
  // A forgotten token launches anew, as a real cloud's expired client token would.
  EXPECT_EQ(kept.relaunch, kept.first);
  EXPECT_NE(forgetful.relaunch, forgetful.first);
  EXPECT_FALSE(forgetful.relaunch.empty());
}

}  // namespace
}  // namespace gpuscaler::sim
