// The simulated cloud's warm capacity: Stop keeps an instance and bills its
// volumes only, Start needs capacity and takes the wake latency.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "gpuscaler/solver/warm_pool.h"
#include "sim/scenario.h"
#include "sim/sim_cloud.h"

namespace gpuscaler::sim::sim_cloud_warm_test {
namespace {

struct Recorder : SimCloudObserver {
  std::vector<std::string> events;
  void OnReady(const Instance& instance, int) override {
    events.push_back("ready " + instance.instance_id + (instance.tags.count(kWarmTag) ? " warm" : ""));
  }
  void OnNotice(const std::string&, WallTime) override {}
  int interrupted = 0;
  void OnGone(const std::string& id, WallTime, bool by_reclaim) override {
    events.push_back("gone " + id);
    interrupted += by_reclaim ? 1 : 0;
  }
};

struct WarmCloud {
  Catalog catalog = BuiltinCatalog();
  SpotMarket market;
  ManualClock clock{FromUnixSeconds(1782000000)};
  std::unique_ptr<SimCloud> cloud;
  Recorder recorder;

  explicit WarmCloud(SimCloudConfig config = {}) {
    config.hazard_multiplier = 0;  // hazard_by_family still applies
    cloud = std::make_unique<SimCloud>(clock, catalog, catalog.Offerings({"us-east-1"}), market, config);
    cloud->SetObserver(&recorder);
  }
  std::string Launch(const std::string& key, bool refill = false, bool stops_on_interruption = false) {
    LaunchRequest r;
    r.pool = "p";
    r.count = 1;
    for (const Offering& o : catalog.Offerings({"us-east-1"}))
      if (o.Key() == key) r.offerings.push_back(o);
    if (refill) r.tags[kWarmTag] = "refill";
    if (stops_on_interruption) r.tags[kWarmInterruptionTag] = "stop";
    Result<LaunchResult> res = cloud->Launch(r);
    EXPECT_TRUE(res.ok() && res->instances.size() == 1u);
    return res.ok() && !res->instances.empty() ? res->instances[0].instance_id : "";
  }
  InstanceState StateOf(const std::string& id) {
    const Result<std::vector<Instance>> listed = cloud->ListInstances();
    if (!listed.ok()) return InstanceState::kShuttingDown;
    const std::vector<Instance>& instances = *listed;
    for (const Instance& i : instances)
      if (i.instance_id == id) return i.state;
    ADD_FAILURE() << id << " not listed";
    return InstanceState::kShuttingDown;
  }
  void Run(Seconds d) {
    const WallTime t = clock.WallNow() + d;
    cloud->RunEventsUntil(t);
    clock.AdvanceTo(t);
  }
};

TEST(SimCloudWarm, AStoppedInstanceKeepsItsIdAndPaysOnlyItsVolumesUntilWoken) {
  WarmCloud w;
  const std::string id = w.Launch("g5.xlarge/us-east-1a/on-demand", /*refill=*/true);
  w.Run(Seconds(1800));
  EXPECT_EQ(w.StateOf(id), InstanceState::kRunning);
  ASSERT_TRUE(w.cloud->Stop({id}, WarmState::kStopped).ok());
  EXPECT_EQ(w.StateOf(id), InstanceState::kStopped);
  EXPECT_TRUE(w.cloud->Stop({id}, WarmState::kStopped).ok()) << "stopping a stopped instance is no error";
  const double volume_per_hour = w.catalog.default_volume_gib * w.catalog.volume_usd_per_gib_hour;
  EXPECT_NEAR(w.cloud->CurrentUsdPerHour(), volume_per_hour, 1e-12);
  w.Run(Seconds(10 * 3600));
  ASSERT_TRUE(w.cloud->Start({id}).ok());
  EXPECT_EQ(w.StateOf(id), InstanceState::kPending);
  // Ready after the wake latency (a minute in the catalog, lognormal), well
  // before a cold launch's three minutes or more.
  w.Run(Seconds(25));
  EXPECT_EQ(w.StateOf(id), InstanceState::kPending);
  w.Run(Seconds(95));
  EXPECT_EQ(w.StateOf(id), InstanceState::kRunning);
  ASSERT_TRUE(w.cloud->Terminate({id}).ok());
  const std::vector<InstanceBill> bills = w.cloud->Bills(w.clock.WallNow());
  ASSERT_EQ(bills.size(), 1u);
  EXPECT_EQ(bills[0].wakes, 1);
  EXPECT_NEAR(bills[0].stopped_usd, 10 * volume_per_hour, 1e-9);
  EXPECT_NEAR(bills[0].usd, 1.006 * (1800 + 120) / 3600.0 + 10 * volume_per_hour, 1e-9);
  // The refill's node is not schedulable before its stop; once woken it is.
  EXPECT_EQ(w.recorder.events, (std::vector<std::string>{"ready " + id + " warm", "gone " + id, "ready " + id,
                                                        "gone " + id}));
}

TEST(SimCloudWarm, AStartNeedsCapacityAndStartsNothingWithout) {
  SimCloudConfig config;
  config.on_demand_capacity_by_family = {{"g5", 1}};
  WarmCloud w(config);
  const std::string first = w.Launch("g5.xlarge/us-east-1a/on-demand");
  w.Run(Seconds(600));
  ASSERT_TRUE(w.cloud->Stop({first}, WarmState::kStopped).ok());
  // The stopped instance holds no capacity: another launch takes the slot.
  const std::string second = w.Launch("g5.xlarge/us-east-1a/on-demand");
  const Status start = w.cloud->Start({first});
  ASSERT_FALSE(start.ok());
  EXPECT_EQ(start.error().category(), ErrorCategory::kCapacity);
  EXPECT_EQ(w.StateOf(first), InstanceState::kStopped);
  ASSERT_TRUE(w.cloud->Terminate({second}).ok());
  EXPECT_TRUE(w.cloud->Start({first}).ok());
  EXPECT_FALSE(w.cloud->Start({"i-unknown"}).ok());
}

TEST(SimCloudWarm, AHibernatedInstanceAlsoKeepsItsMemoryOnItsVolume) {
  WarmCloud w;
  const std::string id = w.Launch("g5.xlarge/us-east-1a/on-demand");
  w.Run(Seconds(600));
  ASSERT_TRUE(w.cloud->Stop({id}, WarmState::kHibernated).ok());
  const InstanceType* t = w.catalog.FindInstanceType("g5.xlarge");
  ASSERT_NE(t, nullptr);
  const double gib = w.catalog.default_volume_gib + static_cast<double>(t->memory_mib) / 1024.0;
  EXPECT_NEAR(w.cloud->CurrentUsdPerHour(), gib * w.catalog.volume_usd_per_gib_hour, 1e-12);
}

TEST(SimCloudWarm, AReclaimStopsASpotInstanceLaunchedToStopAndAStartRunsItAtTheSpotPriceAgain) {
  SimCloudConfig config;
  config.hazard_by_family = {{"g5", 6.0}};  // a reclaim every 10 minutes on average
  WarmCloud w(config);
  const std::string key = "g5.xlarge/us-east-1a/spot";
  const std::string id = w.Launch(key, /*refill=*/true, /*stops_on_interruption=*/true);
  // Within two hours a reclaim comes (e^-12 odds of none): after its notice
  // the instance is stopped, not ended, and its node is gone.
  for (int i = 0; i < 240 && w.StateOf(id) != InstanceState::kStopped; ++i) w.Run(Seconds(30));
  ASSERT_EQ(w.StateOf(id), InstanceState::kStopped) << "no reclaim within two hours";
  EXPECT_EQ(w.recorder.interrupted, 1);
  EXPECT_EQ(w.cloud->interrupted(), 1);
  const double volume_per_hour = w.catalog.default_volume_gib * w.catalog.volume_usd_per_gib_hour;
  EXPECT_NEAR(w.cloud->CurrentUsdPerHour(), volume_per_hour, 1e-12);
  // Stopped, nothing more is reclaimed, and it pays its volumes only.
  w.Run(Seconds(3 * 3600));
  EXPECT_EQ(w.recorder.interrupted, 1);
  EXPECT_EQ(w.StateOf(id), InstanceState::kStopped);
  std::vector<InstanceBill> bills = w.cloud->Bills(w.clock.WallNow());
  ASSERT_EQ(bills.size(), 1u);
  EXPECT_EQ(bills[0].interrupted_stops, 1);
  EXPECT_FALSE(bills[0].interrupted) << "stopped, not ended";
  EXPECT_GE(bills[0].stopped_usd, 3 * volume_per_hour - 1e-9);
  // Started, it runs at the spot price, and can be reclaimed again.
  ASSERT_TRUE(w.cloud->Start({id}).ok());
  EXPECT_NEAR(w.cloud->CurrentUsdPerHour(), w.cloud->CurrentPrice(key), 1e-12);
  for (int i = 0; i < 240 && w.recorder.interrupted < 2; ++i) w.Run(Seconds(30));
  EXPECT_EQ(w.recorder.interrupted, 2);
  EXPECT_EQ(w.StateOf(id), InstanceState::kStopped);
  // Stopped by hand during a notice, the reclaim has nothing left to take.
  ASSERT_TRUE(w.cloud->Start({id}).ok());
  ASSERT_TRUE(w.cloud->Stop({id}, WarmState::kStopped).ok());
  w.Run(Seconds(3600));
  EXPECT_EQ(w.recorder.interrupted, 2);
}

TEST(SimCloudWarm, AOneTimeSpotInstanceCannotBeStopped) {
  WarmCloud w;
  const std::string one_time = w.Launch("g5.xlarge/us-east-1a/spot");
  w.Run(Seconds(600));
  const Status stop = w.cloud->Stop({one_time}, WarmState::kStopped);
  ASSERT_FALSE(stop.ok());
  EXPECT_NE(stop.error().ToString().find("cannot be stopped"), std::string::npos) << stop.error().ToString();
  EXPECT_EQ(w.StateOf(one_time), InstanceState::kRunning);
  const std::string stoppable = w.Launch("g5.xlarge/us-east-1a/spot", false, /*stops_on_interruption=*/true);
  w.Run(Seconds(600));
  EXPECT_TRUE(w.cloud->Stop({stoppable}, WarmState::kStopped).ok());
  EXPECT_EQ(w.StateOf(stoppable), InstanceState::kStopped);
}

}  // namespace
}  // namespace gpuscaler::sim::sim_cloud_warm_test
