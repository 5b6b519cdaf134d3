// The AWS emulator's scenario: throttling and server errors as scripted, in the
// shapes of each service, and the scenario file's every key read and unknown
// ones refused.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gpuscaler/cloud/ec2_api.h"
#include "sim/cloud_emulator/emulator.h"
#include "tests/cloud/emulator_fixture.h"

namespace gpuscaler::sim::emulator_scenario_test {
namespace {

using cloud::QueryParams;
using emulator_testing::EmulatorTest;
using emulator_testing::Start;

TEST_F(EmulatorTest, ThrottlesAndFailsAsScripted) {
  EmulatorScenario s;
  s.throttle_every = 2;
  Emu(s);
  const QueryParams q = cloud::DescribeInstancesQuery({});
  EXPECT_EQ(Query("ec2", q).status, 200);
  EmulatorResponse t = Query("ec2", q);
  EXPECT_EQ(t.status, 503);
  EXPECT_EQ(cloud::ErrorFromResponse("DescribeInstances", t.status, t.body).category(), ErrorCategory::kThrottled);
  EXPECT_EQ(Query("autoscaling", cloud::DescribeAutoScalingGroupsQuery({})).status, 200);
  EmulatorResponse ta = Query("autoscaling", cloud::DescribeAutoScalingGroupsQuery({}));
  EXPECT_EQ(ta.status, 400);
  EXPECT_EQ(cloud::ErrorFromResponse("DescribeAutoScalingGroups", ta.status, ta.body).category(), ErrorCategory::kThrottled);
  EXPECT_EQ(emu_->stats().throttled, 2);

  EmulatorScenario f;
  f.server_error_rate = 1.0;
  Emu(f);
  EmulatorResponse e = Query("ec2", q);
  EXPECT_EQ(e.status, 503);
  EXPECT_EQ(cloud::ErrorFromResponse("DescribeInstances", e.status, e.body).category(), ErrorCategory::kTransient);
}

TEST(EmulatorScenarioFile, ParsesEveryKeyAndRejectsUnknownOnes) {
  const std::string yaml = R"(
region: us-west-2
zones: [us-west-2a, us-west-2b]
subnets: {subnet-aaa: us-west-2a}
launch_latency: 45s
terminate_latency: 5s
seed: 7
throttle: {every: 4, rate: 0.1}
server_error_rate: 0.05
capacity:
  - {instance_type: g5.xlarge, zone: us-west-2a, capacity_type: spot, limit: 0, error: InsufficientInstanceCapacity, until: 10m}
interruptions:
  - {at: 2m, instance_type: g5.xlarge, count: 2}
spot_prices:
  - {instance_type: g5.xlarge, zone: us-west-2a, price: 0.41, at: "2026-12-01T00:00:00Z"}
  - {instance_type: g5.xlarge, zone: us-west-2a, price: 0.43, at: 30m}
on_demand_prices: {g5.xlarge: 1.006}
auto_scaling_groups:
  - {name: gpu-a, min: 0, max: 5, desired: 1, instance_type: g5.xlarge, tags: {team: ml}}
  - {name: gpu-b, launch_template: gpu-mixed, instance_types: [g6.xlarge, g5.xlarge], propagate_at_launch: false}
group_launch_delay: 15s
queue: interruptions
visibility_timeout: 10s
credentials: {AKIDTEST: secret}
ssm_parameters: {/aws/service/eks/optimized-ami/1.31/amazon-linux-2023/x86_64/nvidia/recommended/image_id: ami-0eks}
security_groups: [{id: sg-0node, name: nodes, tags: {karpenter.sh/discovery: prod}}]
)";
  auto s = ParseEmulatorScenario(yaml, Start());
  ASSERT_TRUE(s.ok()) << s.error().ToString();
  EXPECT_EQ(s->region, "us-west-2");
  EXPECT_EQ(s->zones.size(), 2u);
  EXPECT_EQ(s->launch_latency, Seconds(45));
  EXPECT_EQ(s->throttle_every, 4);
  ASSERT_EQ(s->capacity.size(), 1u);
  EXPECT_EQ(s->capacity[0].capacity_type, CapacityType::kSpot);
  EXPECT_EQ(s->capacity[0].until, Seconds(600));
  EXPECT_EQ(s->interruptions[0].count, 2);
  EXPECT_EQ(s->spot_prices[1].time, Start() + Seconds(1800));
  EXPECT_EQ(s->groups[0].tags.at("team"), "ml");
  EXPECT_EQ(s->groups[1].launch_template, "gpu-mixed");
  EXPECT_EQ(s->groups[1].instance_types, (std::vector<std::string>{"g6.xlarge", "g5.xlarge"}));
  EXPECT_FALSE(s->groups[1].propagate_at_launch);
  EXPECT_EQ(s->group_launch_delay, Seconds(15));
  EXPECT_EQ(s->queue_name, "interruptions");
  EXPECT_EQ(s->credentials.at("AKIDTEST"), "secret");
  EXPECT_EQ(s->ssm_parameters.at("/aws/service/eks/optimized-ami/1.31/amazon-linux-2023/x86_64/nvidia/recommended/image_id"),
            "ami-0eks");
  ASSERT_EQ(s->security_groups.size(), 1u);
  EXPECT_EQ(s->security_groups[0].tags.at("karpenter.sh/discovery"), "prod");
  EXPECT_FALSE(ParseEmulatorScenario("security_groups: [{name: x}]", Start()).ok());

  EXPECT_EQ(ParseEmulatorScenario("regoin: x", Start()).error().category(), ErrorCategory::kConfig);
  EXPECT_FALSE(ParseEmulatorScenario("capacity: [{zone: a}]", Start()).ok());
  EXPECT_FALSE(ParseEmulatorScenario("launch_latency: soon", Start()).ok());
  EXPECT_FALSE(ParseEmulatorScenario("[", Start()).ok());
  EXPECT_TRUE(ParseEmulatorScenario("", Start()).ok());
}

}  // namespace
}  // namespace gpuscaler::sim::emulator_scenario_test
