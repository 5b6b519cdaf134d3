// The AWS emulator's Auto Scaling groups, without sockets: desired capacity
// within min and max, balanced over zones, terminate in group, tag filters,
// and launches after the group's delay within capacity, recorded as scaling
// activities (failures retried).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gpuscaler/cloud/ec2_api.h"
#include "sim/cloud_emulator/emulator.h"
#include "tests/cloud/emulator_fixture.h"

namespace gpuscaler::sim::emulator_asg_test {
namespace {

using emulator_testing::EmulatorTest;
using emulator_testing::Start;

TEST_F(EmulatorTest, AutoScalingGroups) {
  EmulatorScenario s;
  s.groups = {{"gpu-a", 0, 4, 1, "g5.xlarge", {"us-east-1a", "us-east-1b"}, {{"team", "ml"}}},
              {"gpu-b", 1, 2, 1, "g6.xlarge", {}, {}}};
  Emu(s);
  EmulatorResponse set = Query("autoscaling", cloud::SetDesiredCapacityQuery("gpu-a", 3, true));
  ASSERT_EQ(set.status, 200) << set.body;
  EXPECT_TRUE(cloud::ParseEmptyResponse(set.body, "SetDesiredCapacity").ok());
  cloud::DescribeAutoScalingGroupsRequest req;
  req.names = {"gpu-a"};
  auto page = cloud::ParseDescribeAutoScalingGroups(Query("autoscaling", cloud::DescribeAutoScalingGroupsQuery(req)).body);
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page->groups.size(), 1u);
  const cloud::AutoScalingGroup& g = page->groups[0];
  EXPECT_EQ(g.desired_capacity, 3);
  ASSERT_EQ(g.instances.size(), 3u);
  EXPECT_EQ(g.instances[0].lifecycle_state, "Pending");
  EXPECT_EQ(g.tags.at("team"), "ml");
  int in_a = 0;
  for (const auto& i : g.instances) in_a += i.availability_zone == "us-east-1a";
  EXPECT_TRUE(in_a == 1 || in_a == 2);  // balanced over two zones

  EmulatorResponse over = Query("autoscaling", cloud::SetDesiredCapacityQuery("gpu-a", 5, std::nullopt));
  EXPECT_EQ(over.status, 400);
  EXPECT_NE(over.body.find("above max value 4"), std::string::npos);
  EXPECT_EQ(cloud::ErrorFromResponse("SetDesiredCapacity", over.status, over.body).category(), ErrorCategory::kConfig);

  EmulatorResponse term = Query("autoscaling", cloud::TerminateInstanceInAutoScalingGroupQuery(g.instances[0].instance_id, true));
  ASSERT_EQ(term.status, 200) << term.body;
  EXPECT_FALSE(cloud::ParseTerminateInstanceInAutoScalingGroup(term.body)->empty());
  clock_.Advance(Seconds(60));
  page = cloud::ParseDescribeAutoScalingGroups(Query("autoscaling", cloud::DescribeAutoScalingGroupsQuery(req)).body);
  EXPECT_EQ(page->groups[0].desired_capacity, 2);
  EXPECT_EQ(page->groups[0].instances.size(), 2u);

  // Tag filters; at min size a decrementing terminate is refused.
  cloud::DescribeAutoScalingGroupsRequest tagged;
  tagged.filters = {{"tag:team", {"ml"}}};
  EXPECT_EQ(cloud::ParseDescribeAutoScalingGroups(Query("autoscaling", cloud::DescribeAutoScalingGroupsQuery(tagged)).body)->groups.size(), 1u);
  auto b = cloud::ParseDescribeAutoScalingGroups(Query("autoscaling", cloud::DescribeAutoScalingGroupsQuery({{"gpu-b"}, {}, {}, ""})).body);
  EXPECT_EQ(Query("autoscaling", cloud::TerminateInstanceInAutoScalingGroupQuery(b->groups[0].instances[0].instance_id, true)).status, 400);
}

TEST_F(EmulatorTest, GroupsLaunchAfterTheDelayWithinCapacityAndRecordActivities) {
  EmulatorScenario s;
  s.group_launch_delay = Seconds(20);
  s.capacity = {{"g6.xlarge", "us-east-1a", std::nullopt, 1, "InsufficientInstanceCapacity", {}, {}}};
  ScriptedGroup g{"gpu-a", 0, 4, 0, "", {"us-east-1a"}, {{"team", "ml"}}};
  g.instance_types = {"g6.xlarge"};
  g.propagate_at_launch = false;
  s.groups = {g};
  Emu(s);
  auto group = [&] {
    auto page = cloud::ParseDescribeAutoScalingGroups(
        Query("autoscaling", cloud::DescribeAutoScalingGroupsQuery({{"gpu-a"}, {}, {}, ""})).body);
    EXPECT_TRUE(page.ok() && page->groups.size() == 1);
    return page->groups.at(0);
  };
  auto activities = [&] {
    cloud::DescribeScalingActivitiesRequest req;
    req.group = "gpu-a";
    EmulatorResponse r = Query("autoscaling", cloud::DescribeScalingActivitiesQuery(req));
    auto page = cloud::ParseDescribeScalingActivities(r.body);
    EXPECT_TRUE(page.ok()) << r.body;
    return page.ok() ? page->activities : std::vector<cloud::ScalingActivity>{};
  };
  EXPECT_EQ(group().instance_types, std::vector<std::string>{"g6.xlarge"});
  EXPECT_EQ(group().launch_template, "gpu-nodes");
  ASSERT_EQ(Query("autoscaling", cloud::SetDesiredCapacityQuery("gpu-a", 2, std::nullopt)).status, 200);
  EmulatorResponse tagged =
      Query("autoscaling", cloud::CreateOrUpdateTagsQuery("gpu-a", {{"gpuscaler.io/intent", "t1", true}}));
  EXPECT_TRUE(cloud::ParseEmptyResponse(tagged.body, "CreateOrUpdateTags").ok()) << tagged.body;
  EXPECT_TRUE(group().instances.empty());  // not before the delay
  EXPECT_TRUE(activities().empty());

  clock_.Advance(Seconds(25));
  const cloud::AutoScalingGroup launched = group();
  ASSERT_EQ(launched.instances.size(), 1u);  // the capacity limit
  EXPECT_EQ(launched.tags.at("gpuscaler.io/intent"), "t1");
  const auto listed = Describe();
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].launch_time, Start() + Seconds(20));
  EXPECT_EQ(listed[0].tags.at("gpuscaler.io/intent"), "t1");
  EXPECT_EQ(listed[0].tags.at(cloud::kAsgGroupNameTag), "gpu-a");
  EXPECT_EQ(listed[0].tags.count("team"), 0u);  // not propagated
  auto acts = activities();
  ASSERT_EQ(acts.size(), 2u);
  EXPECT_EQ(acts[0].status_code, "Failed");  // newest first
  EXPECT_NE(acts[0].status_message.find("InsufficientInstanceCapacity"), std::string::npos);
  EXPECT_NE(acts[0].status_message.find("g6.xlarge"), std::string::npos);
  EXPECT_EQ(acts[1].status_code, "Successful");
  EXPECT_EQ(acts[1].description, "Launching a new EC2 instance: " + listed[0].instance_id);

  clock_.Advance(Seconds(4));  // retried 10 s after the failure, not before
  EXPECT_EQ(activities().size(), 2u);
  clock_.Advance(Seconds(10));
  EXPECT_EQ(activities().size(), 3u);

  EmulatorResponse unknown = Query("autoscaling", cloud::CreateOrUpdateTagsQuery("gpu-x", {{"k", "v", false}}));
  EXPECT_EQ(unknown.status, 400);
}

}  // namespace
}  // namespace gpuscaler::sim::emulator_asg_test
