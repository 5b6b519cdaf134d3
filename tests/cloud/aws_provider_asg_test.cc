// AwsProvider's ownership (the cluster tag) and `actuation: asg` pools,
// against the cloud emulator in process: two installations on one account,
// launches through an Auto Scaling group, their idempotency, MaxSize,
// MinSize and capacity failures.
#include <gtest/gtest.h>

#include <set>

#include "cloud/emulated_aws.h"

namespace gpuscaler::cloud {
namespace {

using emulated::Installation;
using emulated::ProviderOptions;
using emulated::Start;
using emulated::TrainRequest;
using sim::CloudEmulator;
using sim::EmulatorScenario;
using sim::ScriptedGroup;

ScriptedGroup Group(std::string name, std::string cluster, int min, int max, int desired) {
  ScriptedGroup g;
  g.name = std::move(name);
  g.min_size = min;
  g.max_size = max;
  g.desired_capacity = desired;
  g.zones = {"us-east-1a", "us-east-1b"};
  if (!cluster.empty()) g.tags[kClusterTag] = std::move(cluster);
  return g;
}

std::vector<std::string> Ids(const std::vector<Instance>& instances) {
  std::vector<std::string> out;
  for (const Instance& i : instances) out.push_back(i.instance_id);
  return out;
}

class AsgProvider : public ::testing::Test {
 protected:
  AsgProvider() : clock_(Start()) {}

  void Boot(EmulatorScenario s) {
    emulator_ = std::make_unique<CloudEmulator>(std::move(s), clock_);
    a_ = Restart("a");
    b_ = Restart("b");
  }
  // A fresh process of installation `cluster`: nothing remembered.
  std::unique_ptr<Installation> Restart(const std::string& cluster) {
    return std::make_unique<Installation>(*emulator_, clock_, ProviderOptions(cluster));
  }

  // The group as DescribeAutoScalingGroups answers it.
  AutoScalingGroup Described(const std::string& name) {
    DescribeAutoScalingGroupsRequest req;
    req.names = {name};
    auto body = a_->client.Query("autoscaling", DescribeAutoScalingGroupsQuery(req));
    EXPECT_TRUE(body.ok());
    auto page = ParseDescribeAutoScalingGroups(body.ok() ? *body : "");
    EXPECT_TRUE(page.ok() && page->groups.size() == 1);
    return page.ok() && !page->groups.empty() ? page->groups[0] : AutoScalingGroup{};
  }
  std::string State(const std::string& id) {
    for (const sim::EmulatedInstance& i : emulator_->Instances()) {
      if (i.instance_id == id) return i.state;
    }
    return "";
  }

  ManualClock clock_;
  std::unique_ptr<CloudEmulator> emulator_;
  std::unique_ptr<Installation> a_, b_;
};

TEST_F(AsgProvider, LaunchRaisesDesiredCapacityAndReturnsTheNewInstances) {
  EmulatorScenario s;
  s.groups = {Group("gpu-a", "a", 0, 5, 1)};
  Boot(s);
  const std::string before = Described("gpu-a").instances.at(0).instance_id;
  auto r = a_->provider.Launch(TrainRequest("gpu-a", 2, "a-7-0"));
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_TRUE(r->errors.empty());
  ASSERT_EQ(r->instances.size(), 2u);
  for (const Instance& i : r->instances) {
    EXPECT_NE(i.instance_id, before);
    EXPECT_EQ(i.pool, "train");
    EXPECT_EQ(i.tags.at(kIntentTag), "a-7-0");
    EXPECT_EQ(i.tags.at(kAsgGroupNameTag), "gpu-a");
    EXPECT_DOUBLE_EQ(i.offering.usd_per_hour, 1.006);
  }
  const AutoScalingGroup g = Described("gpu-a");
  EXPECT_EQ(g.desired_capacity, 3);
  EXPECT_EQ(g.tags.at(kOwnerTag), "train");
  EXPECT_EQ(emulator_->stats().create_fleet_calls, 0);

  // Every instance of the group is listed, the one it had before included.
  auto listed = a_->provider.ListInstances();
  ASSERT_TRUE(listed.ok()) << listed.error().ToString();
  ASSERT_EQ(listed->size(), 3u);
  for (const Instance& i : *listed) EXPECT_EQ(i.pool, "train");
  EXPECT_TRUE(b_->provider.ListInstances()->empty());
}

TEST_F(AsgProvider, ReplayedLaunchNeverRaisesTwiceEvenAfterARestart) {
  EmulatorScenario s;
  s.groups = {Group("gpu-a", "a", 0, 8, 1)};
  Boot(s);
  auto first = a_->provider.Launch(TrainRequest("gpu-a", 2, "a-7-0"));
  ASSERT_TRUE(first.ok());
  auto again = a_->provider.Launch(TrainRequest("gpu-a", 2, "a-7-0"));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(Ids(again->instances), Ids(first->instances));
  auto restarted = Restart("a");
  auto replayed = restarted->provider.Launch(TrainRequest("gpu-a", 2, "a-7-0"));
  ASSERT_TRUE(replayed.ok());
  EXPECT_EQ(Ids(replayed->instances), Ids(first->instances));
  EXPECT_EQ(Described("gpu-a").desired_capacity, 3);

  // A crash after the intent tag, before SetDesiredCapacity: the replay
  // finishes the raise, once.
  ASSERT_TRUE(a_->client.Query("autoscaling", CreateOrUpdateTagsQuery("gpu-a", {{kIntentTag, "a-8-0", true},
                                                                               {kIntentDesiredTag, "5", false}}))
                  .ok());
  restarted = Restart("a");
  auto finished = restarted->provider.Launch(TrainRequest("gpu-a", 2, "a-8-0"));
  ASSERT_TRUE(finished.ok()) << finished.error().ToString();
  EXPECT_EQ(finished->instances.size(), 2u);
  EXPECT_EQ(Described("gpu-a").desired_capacity, 5);
  ASSERT_TRUE(Restart("a")->provider.Launch(TrainRequest("gpu-a", 2, "a-8-0")).ok());
  EXPECT_EQ(Described("gpu-a").desired_capacity, 5);
}

TEST_F(AsgProvider, MaxSizeCutsALaunchAndAFullGroupIsACapacityError) {
  EmulatorScenario s;
  s.groups = {Group("gpu-a", "a", 0, 2, 1)};
  Boot(s);
  auto r = a_->provider.Launch(TrainRequest("gpu-a", 3, "a-1-0"));
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_EQ(r->instances.size(), 1u);
  ASSERT_EQ(r->errors.size(), 1u);
  EXPECT_EQ(r->errors[0].error.category(), ErrorCategory::kCapacity);
  EXPECT_NE(r->errors[0].error.message().find("MaxSize 2"), std::string::npos) << r->errors[0].error.message();
  EXPECT_EQ(Described("gpu-a").desired_capacity, 2);

  auto full = a_->provider.Launch(TrainRequest("gpu-a", 1, "a-2-0"));
  ASSERT_FALSE(full.ok());
  EXPECT_EQ(full.error().category(), ErrorCategory::kCapacity);
  EXPECT_EQ(Described("gpu-a").desired_capacity, 2);
}

TEST_F(AsgProvider, FailedScalingActivitiesAreCapacityErrors) {
  EmulatorScenario s;
  s.capacity = {{"g5.xlarge", "us-east-1a", std::nullopt, 1, "InsufficientInstanceCapacity", {}, {}},
                {"g5.xlarge", "us-east-1b", std::nullopt, 0, "InsufficientInstanceCapacity", {}, {}}};
  s.groups = {Group("gpu-a", "a", 0, 5, 0)};
  Boot(s);
  auto r = a_->provider.Launch(TrainRequest("gpu-a", 3, "a-1-0"));
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  ASSERT_EQ(r->instances.size(), 1u);
  EXPECT_EQ(r->instances[0].offering.zone, "us-east-1a");
  ASSERT_EQ(r->errors.size(), 1u);  // one per offering, however many launches failed
  EXPECT_EQ(r->errors[0].offering_key, "g5.xlarge/us-east-1b/on-demand");  // the zone the activity names
  EXPECT_EQ(r->errors[0].error.category(), ErrorCategory::kCapacity);
  EXPECT_NE(r->errors[0].error.message().find("InsufficientInstanceCapacity"), std::string::npos);
  EXPECT_EQ(Described("gpu-a").desired_capacity, 3);  // the group keeps trying, as on AWS
}

TEST_F(AsgProvider, InstancesTheGroupLaunchesLaterShowUpInListInstances) {
  EmulatorScenario s;
  s.group_launch_delay = Seconds(30);
  s.groups = {Group("gpu-a", "a", 0, 5, 1)};
  Boot(s);
  auto r = a_->provider.Launch(TrainRequest("gpu-a", 2, "a-1-0"));
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_TRUE(r->instances.empty());
  EXPECT_TRUE(r->errors.empty());
  EXPECT_EQ(a_->provider.ListInstances()->size(), 1u);

  clock_.Advance(Seconds(30));
  auto listed = a_->provider.ListInstances();
  ASSERT_EQ(listed->size(), 3u);
  std::set<std::string> of_launch;
  for (const Instance& i : *listed) {
    if (i.tags.count(kIntentTag) != 0 && i.tags.at(kIntentTag) == "a-1-0") of_launch.insert(i.instance_id);
  }
  EXPECT_EQ(of_launch.size(), 2u);
  auto replayed = a_->provider.Launch(TrainRequest("gpu-a", 2, "a-1-0"));
  ASSERT_TRUE(replayed.ok());
  const std::vector<std::string> ids = Ids(replayed->instances);
  EXPECT_EQ(std::set<std::string>(ids.begin(), ids.end()), of_launch);
  EXPECT_EQ(Described("gpu-a").desired_capacity, 3);
}

TEST_F(AsgProvider, TerminateDecrementsTheGroupAndRespectsMinSize) {
  EmulatorScenario s;
  s.groups = {Group("gpu-a", "a", 1, 5, 3)};
  Boot(s);
  const AutoScalingGroup g = Described("gpu-a");
  ASSERT_EQ(g.instances.size(), 3u);
  const std::string victim = g.instances[1].instance_id;
  ASSERT_TRUE(a_->provider.Terminate({victim}).ok());
  EXPECT_EQ(State(victim), "shutting-down");
  EXPECT_EQ(Described("gpu-a").desired_capacity, 2);
  clock_.Advance(Seconds(60));
  EXPECT_EQ(Described("gpu-a").instances.size(), 2u);  // not replaced
  EXPECT_EQ(State(victim), "terminated");
  ASSERT_TRUE(a_->provider.Terminate({victim}).ok());  // already gone

  auto below = a_->provider.Terminate({g.instances[0].instance_id, g.instances[2].instance_id});
  ASSERT_FALSE(below.ok());
  EXPECT_EQ(below.error().category(), ErrorCategory::kConfig);
  EXPECT_NE(below.error().message().find("MinSize 1"), std::string::npos) << below.error().message();
  EXPECT_EQ(State(g.instances[0].instance_id), "running");
  EXPECT_EQ(State(g.instances[2].instance_id), "running");
  EXPECT_EQ(Described("gpu-a").desired_capacity, 2);
}

TEST_F(AsgProvider, GroupsThatDoNotPropagateTheirTagsAreStillListedAndTerminated) {
  EmulatorScenario s;
  s.groups = {Group("gpu-a", "a", 0, 5, 0)};
  s.groups[0].propagate_at_launch = false;
  Boot(s);
  auto r = a_->provider.Launch(TrainRequest("gpu-a", 2, "a-1-0"));
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  ASSERT_EQ(r->instances.size(), 2u);
  EXPECT_EQ(r->instances[0].tags.count(kClusterTag), 0u);  // only the group carries it
  auto listed = a_->provider.ListInstances();
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(Ids(*listed).size(), 2u);
  ASSERT_TRUE(a_->provider.Terminate({r->instances[0].instance_id}).ok());
  EXPECT_EQ(Described("gpu-a").desired_capacity, 1);
  EXPECT_FALSE(b_->provider.Terminate({r->instances[1].instance_id}).ok());
}

TEST_F(AsgProvider, GroupsNotTaggedForTheClusterOrForAnotherPoolAreRefused) {
  EmulatorScenario s;
  s.groups = {Group("shared", "", 0, 5, 0), Group("infer", "a", 0, 5, 0)};
  s.groups[1].tags[kOwnerTag] = "infer";
  Boot(s);
  auto untagged = a_->provider.Launch(TrainRequest("shared", 1, "a-1-0"));
  ASSERT_FALSE(untagged.ok());
  EXPECT_EQ(untagged.error().category(), ErrorCategory::kConfig);
  auto other_pool = a_->provider.Launch(TrainRequest("infer", 1, "a-1-1"));
  ASSERT_FALSE(other_pool.ok());
  EXPECT_EQ(other_pool.error().category(), ErrorCategory::kConfig);
  auto missing = a_->provider.Launch(TrainRequest("no-such-group", 1, "a-1-2"));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().category(), ErrorCategory::kConfig);
  EXPECT_EQ(Described("shared").desired_capacity, 0);
  EXPECT_EQ(Described("infer").desired_capacity, 0);
}

TEST_F(AsgProvider, TwoInstallationsListAndTerminateOnlyTheirOwnInstances) {
  EmulatorScenario s;
  s.groups = {Group("gpu-a", "a", 0, 5, 0), Group("gpu-b", "b", 0, 5, 0)};
  Boot(s);
  LaunchRequest fleet = TrainRequest("", 2, "a-0f3c-7-0");
  auto a_fleet = a_->provider.Launch(fleet);
  fleet.count = 1;
  fleet.idempotency_token = "b-91d2-7-0";
  auto b_fleet = b_->provider.Launch(fleet);
  auto a_group = a_->provider.Launch(TrainRequest("gpu-a", 1, "a-0f3c-7-1"));
  auto b_group = b_->provider.Launch(TrainRequest("gpu-b", 2, "b-91d2-7-1"));
  ASSERT_TRUE(a_fleet.ok() && b_fleet.ok() && a_group.ok() && b_group.ok());

  std::vector<std::string> a_ids = Ids(a_fleet->instances), b_ids = Ids(b_fleet->instances);
  a_ids.push_back(a_group->instances.at(0).instance_id);
  for (const Instance& i : b_group->instances) b_ids.push_back(i.instance_id);
  std::sort(a_ids.begin(), a_ids.end());
  std::sort(b_ids.begin(), b_ids.end());
  EXPECT_EQ(Ids(*a_->provider.ListInstances()), a_ids);
  EXPECT_EQ(Ids(*b_->provider.ListInstances()), b_ids);

  for (const std::vector<std::string>& ids : std::vector<std::vector<std::string>>{
           {a_fleet->instances[0].instance_id}, {a_group->instances[0].instance_id}, {b_ids[0], a_ids[0]}}) {
    Status refused = b_->provider.Terminate(ids);
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.error().category(), ErrorCategory::kInvalidInput);
  }
  for (const std::string& id : a_ids) EXPECT_EQ(State(id), "pending") << id;
  for (const std::string& id : b_ids) EXPECT_EQ(State(id), "pending") << id;
  auto into_a = b_->provider.Launch(TrainRequest("gpu-a", 1, "b-91d2-8-0"));
  ASSERT_FALSE(into_a.ok());
  EXPECT_EQ(into_a.error().category(), ErrorCategory::kConfig);
  EXPECT_EQ(Described("gpu-a").desired_capacity, 1);

  ASSERT_TRUE(a_->provider.Terminate(a_ids).ok());
  for (const std::string& id : a_ids) EXPECT_EQ(State(id), "shutting-down") << id;
  for (const std::string& id : b_ids) EXPECT_EQ(State(id), "pending") << id;
  int terminate_calls = 0;
  for (const sim::EmulatorRequestRecord& r : emulator_->Requests()) {
    terminate_calls += r.action == "TerminateInstances" || r.action == "TerminateInstanceInAutoScalingGroup";
  }
  EXPECT_EQ(terminate_calls, 2);  // a's fleet instances in one call, its group's one in another
}

TEST_F(AsgProvider, LongIdempotencyTokensLaunchAndReplay) {
  Boot({});
  const std::string token = "prod-eu-west-1-gpu-training-cluster-7f3c9e2a1b4d4e6f8a0b-1234567-12";
  ASSERT_GT(token.size(), 64u);
  auto first = a_->provider.Launch(TrainRequest("", 2, token));
  ASSERT_TRUE(first.ok()) << first.error().ToString();
  auto again = a_->provider.Launch(TrainRequest("", 2, token));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(Ids(again->instances), Ids(first->instances));
  EXPECT_EQ(emulator_->Instances().size(), 2u);
}

TEST(AwsProviderToken, InstallationTokensGiveDistinctClientTokensWithinEc2Limit) {
  std::set<std::string> seen;
  int made = 0;
  for (const std::string cluster : {"a", "b", "prod-eu-west-1-gpu-training", "prod-eu-west-1-gpu-training-cluster-blue",
                                   "prod-eu-west-1-gpu-training-cluster-green"}) {
    for (const std::string installation : {"0f8e3c2a9b7d4e1f", "7d4e1f0f8e3c2a9b"}) {
      for (const std::string decision : {"7", "1234567"}) {
        for (int action = 0; action < 12; ++action) {
          const std::string token = cluster + "-" + installation + "-" + decision + "-" + std::to_string(action);
          for (int run = 0; run < 3; ++run) {
            const std::string t = AwsProvider::ClientToken(token, run);
            SCOPED_TRACE(token + " run " + std::to_string(run) + ": " + t);
            EXPECT_LE(t.size(), 64u);
            EXPECT_TRUE(std::all_of(t.begin(), t.end(), [](char c) { return c > 32 && c < 127; }));
            EXPECT_EQ(t, AwsProvider::ClientToken(token, run));
            seen.insert(t);
            ++made;
          }
        }
      }
    }
  }
  EXPECT_EQ(static_cast<int>(seen.size()), made);
  // Short tokens stay readable; long ones keep a readable head.
  EXPECT_EQ(AwsProvider::ClientToken("a-0f8e3c2a9b7d4e1f-7-0", 1), "a-0f8e3c2a9b7d4e1f-7-0-1");
  const std::string long_token(63, 'x');
  EXPECT_EQ(AwsProvider::ClientToken(long_token, 0).substr(0, 29), std::string(29, 'x'));
}

}  // namespace
}  // namespace gpuscaler::cloud
