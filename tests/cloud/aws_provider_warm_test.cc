// AwsProvider's warm capacity against the cloud emulator in process (a
// ManualClock): Stop and Start of fleet instances (the same id back in the
// start latency, kCapacity when there is none, another installation's
// instances neither listed nor touched), and an Auto Scaling group's warm
// pool (filled, listed as kStopped, drawn on first by a raise, refilled).
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "cloud/emulated_aws.h"

namespace gpuscaler::cloud::aws_provider_warm {
namespace {

using emulated::Installation;
using emulated::Off;
using emulated::ProviderOptions;
using emulated::Start;
using emulated::TrainRequest;
using sim::CloudEmulator;
using sim::EmulatorScenario;

constexpr Seconds kLaunch{300};
constexpr Seconds kStart{60};
constexpr Seconds kStop{15};

EmulatorScenario Scenario() {
  EmulatorScenario s;
  s.launch_latency = kLaunch;
  s.start_latency = kStart;
  s.stop_latency = kStop;
  return s;
}

sim::ScriptedGroup WarmGroup(const std::string& cluster) {
  sim::ScriptedGroup g;
  g.name = "gpu-warm";
  g.min_size = 0;
  g.max_size = 6;
  g.desired_capacity = 1;
  g.zones = {"us-east-1a", "us-east-1b"};
  g.tags = {{kClusterTag, cluster}, {kOwnerTag, "train"}};
  return g;
}

class WarmProvider : public ::testing::Test {
 protected:
  WarmProvider() : clock_(Start()) {}

  void Boot(EmulatorScenario s = Scenario()) {
    emulator_ = std::make_unique<CloudEmulator>(std::move(s), clock_);
    ours_ = std::make_unique<Installation>(*emulator_, clock_, ProviderOptions("test-cluster"));
    theirs_ = std::make_unique<Installation>(*emulator_, clock_, ProviderOptions("other-cluster"));
  }
  // Launches `count` on-demand g5.xlarge in us-east-1a through `who`; their ids.
  std::vector<std::string> LaunchFleet(Installation& who, int count, const std::string& token) {
    LaunchRequest r = TrainRequest("", count, token);
    r.offerings = {Off("g5.xlarge", "us-east-1a", CapacityType::kOnDemand, 1.006)};
    auto launched = who.provider.Launch(r);
    EXPECT_TRUE(launched.ok()) << launched.error().ToString();
    std::vector<std::string> ids;
    for (const Instance& i : launched.ok() ? launched->instances : std::vector<Instance>{})
      ids.push_back(i.instance_id);
    return ids;
  }
  sim::EmulatedInstance Emulated(const std::string& id) {
    for (const sim::EmulatedInstance& i : emulator_->Instances()) {
      if (i.instance_id == id) return i;
    }
    ADD_FAILURE() << "no instance " << id;
    return {};
  }
  // ListInstances of `who`, by id.
  std::map<std::string, Instance> Listed(Installation& who) {
    auto listed = who.provider.ListInstances();
    EXPECT_TRUE(listed.ok()) << listed.error().ToString();
    std::map<std::string, Instance> out;
    for (const Instance& i : listed.ok() ? *listed : std::vector<Instance>{}) out[i.instance_id] = i;
    return out;
  }
  int Calls(const std::string& action) {
    int n = 0;
    for (const sim::EmulatorRequestRecord& r : emulator_->Requests()) n += r.action == action;
    return n;
  }
  // The group's warm pool as DescribeWarmPool answers it.
  WarmPoolPage Pool() {
    DescribeWarmPoolRequest req;
    req.group = "gpu-warm";
    auto body = ours_->client.Query("autoscaling", DescribeWarmPoolQuery(req));
    EXPECT_TRUE(body.ok()) << body.error().ToString();
    auto page = ParseDescribeWarmPool(body.ok() ? *body : "");
    EXPECT_TRUE(page.ok()) << page.error().ToString();
    return page.ok() ? *page : WarmPoolPage{};
  }
  std::set<std::string> PoolIds() {
    std::set<std::string> ids;
    for (const AsgInstance& i : Pool().instances) ids.insert(i.instance_id);
    return ids;
  }

  ManualClock clock_;
  std::unique_ptr<CloudEmulator> emulator_;
  std::unique_ptr<Installation> ours_, theirs_;
};

TEST_F(WarmProvider, StopThenListShowsStoppedAndAStopIsIdempotent) {
  Boot();
  const std::vector<std::string> ids = LaunchFleet(*ours_, 2, "d-1");
  ASSERT_EQ(ids.size(), 2u);
  clock_.Advance(kLaunch);
  ASSERT_TRUE(ours_->provider.Stop({ids[0]}, WarmState::kStopped).ok());
  std::map<std::string, Instance> listed = Listed(*ours_);
  ASSERT_EQ(listed.size(), 2u);
  EXPECT_EQ(listed[ids[0]].state, InstanceState::kStopped);  // stopping
  EXPECT_EQ(listed[ids[1]].state, InstanceState::kRunning);
  EXPECT_EQ(listed[ids[0]].pool, "train");
  EXPECT_EQ(Emulated(ids[0]).state, "stopping");
  clock_.Advance(kStop);
  EXPECT_EQ(Emulated(ids[0]).state, "stopping") << "the emulator moves on at its next request";
  listed = Listed(*ours_);
  EXPECT_EQ(listed[ids[0]].state, InstanceState::kStopped);
  EXPECT_EQ(Emulated(ids[0]).state, "stopped");
  EXPECT_FALSE(Emulated(ids[0]).hibernated);

  // Already stopped: fine, and no StopInstances is sent for it.
  const int stops = Calls("StopInstances");
  ASSERT_TRUE(ours_->provider.Stop({ids[0]}, WarmState::kStopped).ok());
  EXPECT_EQ(Calls("StopInstances"), stops);

  ASSERT_TRUE(ours_->provider.Stop({ids[1]}, WarmState::kHibernated).ok());
  EXPECT_TRUE(Emulated(ids[1]).hibernated);
}

TEST_F(WarmProvider, AStopNamingAnUnknownIdIsAConfigErrorAndStopsNothing) {
  Boot();
  const std::vector<std::string> ids = LaunchFleet(*ours_, 1, "d-1");
  clock_.Advance(kLaunch);
  Status s = ours_->provider.Stop({ids[0], "i-0123456789abcdef0"}, WarmState::kStopped);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().category(), ErrorCategory::kConfig) << s.error().ToString();
  EXPECT_NE(s.error().message().find("i-0123456789abcdef0"), std::string::npos);
  EXPECT_EQ(Emulated(ids[0]).state, "running");
  EXPECT_EQ(Calls("StopInstances"), 0);
}

TEST_F(WarmProvider, StartBringsTheSameIdBackInTheStartLatency) {
  Boot();
  const std::vector<std::string> ids = LaunchFleet(*ours_, 1, "d-1");
  const std::string id = ids.at(0);
  clock_.Advance(kLaunch);
  ASSERT_TRUE(ours_->provider.Stop({id}, WarmState::kStopped).ok());
  clock_.Advance(Seconds(1));
  // Still stopping: EC2 cannot start it yet.
  Status early = ours_->provider.Start({id});
  ASSERT_FALSE(early.ok());
  EXPECT_EQ(early.error().category(), ErrorCategory::kTransient) << early.error().ToString();
  clock_.Advance(kStop);

  ASSERT_TRUE(ours_->provider.Start({id}).ok());
  EXPECT_EQ(Listed(*ours_)[id].state, InstanceState::kPending);
  clock_.Advance(kStart - Seconds(1));
  EXPECT_EQ(Listed(*ours_)[id].state, InstanceState::kPending);
  clock_.Advance(Seconds(1));
  std::map<std::string, Instance> listed = Listed(*ours_);
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[id].state, InstanceState::kRunning) << "a wake takes the start latency, not a launch's";
  EXPECT_LT(kStart, kLaunch);
  // Already running: no change, no call.
  const int starts = Calls("StartInstances");
  ASSERT_TRUE(ours_->provider.Start({id}).ok());
  EXPECT_EQ(Calls("StartInstances"), starts);
}

TEST_F(WarmProvider, AStartWithNoCapacityIsACapacityError) {
  EmulatorScenario s = Scenario();
  s.capacity = {
      {"g5.xlarge", "us-east-1a", CapacityType::kOnDemand, 1, "InsufficientInstanceCapacity", {}, {}}};
  Boot(s);
  const std::string stopped = LaunchFleet(*ours_, 1, "d-1").at(0);
  clock_.Advance(kLaunch);
  ASSERT_TRUE(ours_->provider.Stop({stopped}, WarmState::kStopped).ok());
  clock_.Advance(kStop);
  // The stopped instance holds no capacity: a launch takes its place.
  ASSERT_EQ(LaunchFleet(*ours_, 1, "d-2").size(), 1u);
  Status start = ours_->provider.Start({stopped});
  ASSERT_FALSE(start.ok());
  EXPECT_EQ(start.error().category(), ErrorCategory::kCapacity) << start.error().ToString();
  EXPECT_EQ(Emulated(stopped).state, "stopped");
  EXPECT_EQ(Calls("StartInstances"), 1) << "a capacity error is not retried";
}

TEST_F(WarmProvider, StoppedInstancesOfAnotherClusterAreNeitherListedNorTouched) {
  Boot();
  const std::string mine = LaunchFleet(*ours_, 1, "mine").at(0);
  const std::string theirs = LaunchFleet(*theirs_, 1, "theirs").at(0);
  clock_.Advance(kLaunch);
  ASSERT_TRUE(theirs_->provider.Stop({theirs}, WarmState::kStopped).ok());
  ASSERT_TRUE(ours_->provider.Stop({mine}, WarmState::kStopped).ok());
  clock_.Advance(kStop);
  std::map<std::string, Instance> listed = Listed(*ours_);
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed.count(mine), 1u);
  EXPECT_EQ(listed[mine].state, InstanceState::kStopped);
  EXPECT_EQ(Listed(*theirs_).count(mine), 0u);

  Status start = ours_->provider.Start({theirs});
  ASSERT_FALSE(start.ok());
  EXPECT_EQ(start.error().category(), ErrorCategory::kInvalidInput) << start.error().ToString();
  EXPECT_EQ(Emulated(theirs).state, "stopped");

  // A stopped instance can still be terminated.
  ASSERT_TRUE(ours_->provider.Terminate({mine}).ok());
  EXPECT_EQ(Emulated(mine).state, "shutting-down");
}

TEST_F(WarmProvider, AGroupsWarmPoolFillsIsListedStoppedWakesFirstAndRefills) {
  EmulatorScenario s = Scenario();
  s.groups = {WarmGroup("test-cluster")};
  Boot(s);
  clock_.Advance(kLaunch);
  ASSERT_TRUE(ours_->provider.PutWarmPool("gpu-warm", 2, WarmState::kStopped).ok());
  WarmPoolPage pool = Pool();
  ASSERT_TRUE(pool.config.has_value());
  EXPECT_EQ(pool.config->min_size, 2);
  EXPECT_EQ(pool.config->max_group_prepared_capacity, 2);
  EXPECT_EQ(pool.config->pool_state, "Stopped");
  ASSERT_EQ(pool.instances.size(), 2u);
  for (const AsgInstance& i : pool.instances) EXPECT_EQ(i.lifecycle_state, "Warmed:Pending");
  const std::set<std::string> warm = PoolIds();

  // Listed while they come up, as stopped nodes of the group's pool.
  std::map<std::string, Instance> listed = Listed(*ours_);
  ASSERT_EQ(listed.size(), 3u);
  for (const std::string& id : warm) {
    EXPECT_EQ(listed[id].state, InstanceState::kStopped) << id;
    EXPECT_EQ(listed[id].pool, "train");
  }
  clock_.Advance(kLaunch + kStop);
  for (const AsgInstance& i : Pool().instances) EXPECT_EQ(i.lifecycle_state, "Warmed:Stopped");
  for (const std::string& id : warm) EXPECT_EQ(Emulated(id).state, "stopped");

  // The same pool again: nothing sent.
  const int puts = Calls("PutWarmPool");
  ASSERT_TRUE(ours_->provider.PutWarmPool("gpu-warm", 2, WarmState::kStopped).ok());
  EXPECT_EQ(Calls("PutWarmPool"), puts);

  // A raise wakes a warm instance first; the pool is refilled.
  auto launched = ours_->provider.Launch(TrainRequest("gpu-warm", 1, "w-1"));
  ASSERT_TRUE(launched.ok()) << launched.error().ToString();
  ASSERT_EQ(launched->instances.size(), 1u);
  const std::string woken = launched->instances[0].instance_id;
  EXPECT_EQ(warm.count(woken), 1u) << "a warm instance, not a cold launch";
  EXPECT_FALSE(Emulated(woken).in_warm_pool);
  EXPECT_EQ(Emulated(woken).state, "pending");
  const std::set<std::string> refilled = PoolIds();
  EXPECT_EQ(refilled.size(), 2u);
  EXPECT_EQ(refilled.count(woken), 0u);
  clock_.Advance(kStart);
  listed = Listed(*ours_);
  EXPECT_EQ(listed[woken].state, InstanceState::kRunning) << "woken in the start latency";
  for (const std::string& id : refilled) EXPECT_EQ(listed[id].state, InstanceState::kStopped) << id;
  EXPECT_EQ(listed.size(), 4u);

  // The replay of the launch names the same instance.
  auto again = ours_->provider.Launch(TrainRequest("gpu-warm", 1, "w-1"));
  ASSERT_TRUE(again.ok());
  ASSERT_EQ(again->instances.size(), 1u);
  EXPECT_EQ(again->instances[0].instance_id, woken);

  // Hibernated from now on; size 0 empties the pool.
  ASSERT_TRUE(ours_->provider.PutWarmPool("gpu-warm", 0, WarmState::kHibernated).ok());
  EXPECT_EQ(Pool().config->pool_state, "Hibernated");
  clock_.Advance(Seconds(30));
  EXPECT_TRUE(PoolIds().empty());
  EXPECT_EQ(Listed(*theirs_).size(), 0u);
}

TEST_F(WarmProvider, AWarmPoolOfAnotherClustersGroupIsRefused) {
  EmulatorScenario s = Scenario();
  s.groups = {WarmGroup("other-cluster")};
  Boot(s);
  Status put = ours_->provider.PutWarmPool("gpu-warm", 2, WarmState::kStopped);
  ASSERT_FALSE(put.ok());
  EXPECT_EQ(put.error().category(), ErrorCategory::kConfig) << put.error().ToString();
  EXPECT_EQ(Calls("PutWarmPool"), 0);
  EXPECT_EQ(ours_->provider.PutWarmPool("no-such-group", 1, WarmState::kStopped).error().category(),
            ErrorCategory::kConfig);
  // The other installation's warm pool is not ours to list.
  ASSERT_TRUE(theirs_->provider.PutWarmPool("gpu-warm", 2, WarmState::kStopped).ok());
  clock_.Advance(kLaunch + kStop);
  EXPECT_TRUE(Listed(*ours_).empty());
  EXPECT_EQ(Listed(*theirs_).size(), 3u);
}

// The emulator's group: a scale-in returns an instance to a pool with
// ReuseOnScaleIn (hibernated, for PoolState Hibernated), and the pool sheds
// what is above its size; Force stops at once.
TEST_F(WarmProvider, TheEmulatorReusesScaledInInstancesAndForceStopsAtOnce) {
  EmulatorScenario s = Scenario();
  s.groups = {WarmGroup("test-cluster")};
  s.groups[0].desired_capacity = 2;
  Boot(s);
  clock_.Advance(kLaunch);
  PutWarmPoolRequest put;
  put.group = "gpu-warm";
  put.min_size = 2;
  put.max_group_prepared_capacity = 2;
  put.pool_state = "Hibernated";
  put.reuse_on_scale_in = true;
  ASSERT_TRUE(ours_->client.Query("autoscaling", PutWarmPoolQuery(put)).ok());
  clock_.Advance(kLaunch + kStop);
  ASSERT_EQ(PoolIds().size(), 2u);
  for (const AsgInstance& i : Pool().instances) EXPECT_EQ(i.lifecycle_state, "Warmed:Hibernated");

  std::set<std::string> in_service;
  for (const sim::EmulatedInstance& i : emulator_->Instances()) {
    if ((i.state == "pending" || i.state == "running") && !i.in_warm_pool) in_service.insert(i.instance_id);
  }
  ASSERT_EQ(in_service.size(), 2u);
  ASSERT_TRUE(ours_->client.Query("autoscaling", SetDesiredCapacityQuery("gpu-warm", 1, std::nullopt)).ok());
  int returned = 0;
  for (const std::string& id : in_service) {
    const sim::EmulatedInstance i = Emulated(id);
    if (!i.in_warm_pool) continue;
    ++returned;
    EXPECT_EQ(i.state, "stopping");
    EXPECT_TRUE(i.hibernated);
  }
  EXPECT_EQ(returned, 1) << "scaled in to the pool, not terminated";
  int warm = 0;
  for (const AsgInstance& i : Pool().instances) warm += i.lifecycle_state != "Warmed:Terminating";
  EXPECT_EQ(warm, 2) << "the pool keeps its size";

  const std::string fleet = LaunchFleet(*ours_, 1, "f-1").at(0);
  clock_.Advance(kLaunch);
  QueryParams force = StopInstancesQuery({fleet}, false);
  force.emplace_back("Force", "true");
  ASSERT_TRUE(ours_->client.Query("ec2", force).ok());
  ASSERT_TRUE(ours_->provider.ListInstances().ok());
  EXPECT_EQ(Emulated(fleet).state, "stopped");
}

}  // namespace
}  // namespace gpuscaler::cloud::aws_provider_warm
