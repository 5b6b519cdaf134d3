// The real `aws` CLI (botocore) against `gpuscaler cloud-emulator`, started
// by the test on a free loopback port: an independent client must be able to
// launch, list, terminate, read prices, drive an Auto Scaling group and read
// the interruption queue, and its parsed JSON must say what we expect.
// Skipped when `aws` is not on PATH, except under CI=true where that fails.
#include <map>
#include <set>

#include "cloud/aws_cli_harness.h"
#include "cloud/emulated_aws.h"
#include "gpuscaler/cloud/aws_provider.h"

namespace gpuscaler::testing {
namespace {

constexpr const char* kScenario = R"(
zones: [us-east-1a, us-east-1b]
launch_latency: 1h
capacity:
  - {instance_type: p4d.24xlarge, zone: us-east-1a, limit: 0}
spot_prices:
  - {instance_type: g5.xlarge, zone: us-east-1a, price: 0.41, at: "2026-01-01T00:00:00Z"}
  - {instance_type: g5.xlarge, zone: us-east-1a, price: 0.43, at: "2026-01-01T06:00:00Z"}
  - {instance_type: g5.xlarge, zone: us-east-1b, price: 0.39, at: "2026-01-01T03:00:00Z"}
auto_scaling_groups:
  - {name: gpu-a, min: 0, max: 5, desired: 1, instance_type: g5.xlarge, tags: {team: ml}}
interruptions:
  - {at: 0s, instance_type: g5.xlarge, count: 1}
)";

class AwsCli : public AwsCliTest {
 protected:
  std::string Scenario() const override { return kScenario; }
};

const char* kTemplate = R"([{"LaunchTemplateSpecification":{"LaunchTemplateName":"gpu-nodes","Version":"$Latest"},
  "Overrides":[{"InstanceType":"g5.xlarge","AvailabilityZone":"us-east-1a"}]}])";

TEST_F(AwsCli, Ec2FleetInstancesPricesAndTermination) {
  Run fleet = Aws({"ec2", "create-fleet", "--type", "instant", "--launch-template-configs", kTemplate,
                   "--target-capacity-specification", "TotalTargetCapacity=2,DefaultTargetCapacityType=spot",
                   "--spot-options", "AllocationStrategy=price-capacity-optimized", "--tag-specifications",
                   "ResourceType=instance,Tags=[{Key=gpuscaler.io/pool,Value=train}]", "--client-token", "cli-1"});
  ASSERT_EQ(fleet.exit_code, 0) << fleet.err;
  EXPECT_EQ(fleet.out["FleetId"].get<std::string>().rfind("fleet-", 0), 0u);
  EXPECT_TRUE(fleet.out["Errors"].empty());
  ASSERT_EQ(fleet.out["Instances"].size(), 1u);
  const json& got = fleet.out["Instances"][0];
  EXPECT_EQ(got["Lifecycle"], "spot");
  EXPECT_EQ(got["LaunchTemplateAndOverrides"]["Overrides"]["AvailabilityZone"], "us-east-1a");
  ASSERT_EQ(got["InstanceIds"].size(), 2u);
  const std::string first = got["InstanceIds"][0];

  // Same client token: same fleet, same instances.
  Run again = Aws({"ec2", "create-fleet", "--type", "instant", "--launch-template-configs", kTemplate,
                   "--target-capacity-specification", "TotalTargetCapacity=2,DefaultTargetCapacityType=spot",
                   "--client-token", "cli-1"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(again.out["Instances"][0]["InstanceIds"], got["InstanceIds"]);

  // No capacity: HTTP 200 with the error per override.
  Run none = Aws({"ec2", "create-fleet", "--type", "instant", "--launch-template-configs",
                  R"([{"LaunchTemplateSpecification":{"LaunchTemplateId":"lt-0abc","Version":"1"},
                      "Overrides":[{"InstanceType":"p4d.24xlarge","AvailabilityZone":"us-east-1a"}]}])",
                  "--target-capacity-specification", "TotalTargetCapacity=1,DefaultTargetCapacityType=on-demand"});
  ASSERT_EQ(none.exit_code, 0) << none.err;
  EXPECT_TRUE(none.out["Instances"].empty());
  ASSERT_EQ(none.out["Errors"].size(), 1u);
  EXPECT_EQ(none.out["Errors"][0]["ErrorCode"], "InsufficientInstanceCapacity");
  EXPECT_EQ(none.out["Errors"][0]["Lifecycle"], "on-demand");

  Run listed = Aws({"ec2", "describe-instances", "--filters", "Name=tag:gpuscaler.io/pool,Values=train"});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  ASSERT_EQ(listed.out["Reservations"].size(), 1u);
  const json& instances = listed.out["Reservations"][0]["Instances"];
  ASSERT_EQ(instances.size(), 2u);
  EXPECT_EQ(instances[0]["InstanceId"], first);
  EXPECT_EQ(instances[0]["State"]["Name"], "pending");
  EXPECT_EQ(instances[0]["State"]["Code"], 0);
  EXPECT_EQ(instances[0]["InstanceType"], "g5.xlarge");
  EXPECT_EQ(instances[0]["InstanceLifecycle"], "spot");
  EXPECT_EQ(instances[0]["Placement"]["AvailabilityZone"], "us-east-1a");
  EXPECT_EQ(instances[0]["Tags"][0]["Key"], "gpuscaler.io/pool");
  EXPECT_EQ(instances[0]["ClientToken"], "cli-1");

  Run terminated = Aws({"ec2", "terminate-instances", "--instance-ids", first});
  ASSERT_EQ(terminated.exit_code, 0) << terminated.err;
  ASSERT_EQ(terminated.out["TerminatingInstances"].size(), 1u);
  EXPECT_EQ(terminated.out["TerminatingInstances"][0]["InstanceId"], first);
  EXPECT_EQ(terminated.out["TerminatingInstances"][0]["PreviousState"]["Name"], "pending");
  EXPECT_EQ(terminated.out["TerminatingInstances"][0]["CurrentState"]["Name"], "shutting-down");
  EXPECT_EQ(terminated.out["TerminatingInstances"][0]["CurrentState"]["Code"], 32);

  Run unknown = Aws({"ec2", "terminate-instances", "--instance-ids", "i-0123456789abcdef0"});
  EXPECT_NE(unknown.exit_code, 0);
  EXPECT_NE(unknown.err.find("InvalidInstanceID.NotFound"), std::string::npos) << unknown.err;

  Run prices = Aws({"ec2", "describe-spot-price-history", "--instance-types", "g5.xlarge", "--start-time",
                    "2026-01-01T04:00:00Z", "--end-time", "2026-01-01T12:00:00Z"});
  ASSERT_EQ(prices.exit_code, 0) << prices.err;
  const json& history = prices.out["SpotPriceHistory"];
  // The 06:00 change, plus the prices in force at 04:00 in each zone; newest first.
  ASSERT_EQ(history.size(), 3u);
  EXPECT_EQ(history[0]["SpotPrice"], "0.430000");
  EXPECT_EQ(history[0]["AvailabilityZone"], "us-east-1a");
  EXPECT_EQ(history[0]["ProductDescription"], "Linux/UNIX");
  EXPECT_EQ(history[0]["Timestamp"].get<std::string>().rfind("2026-01-01T06:00:00", 0), 0u);
  EXPECT_EQ(history[1]["SpotPrice"], "0.390000");
  EXPECT_EQ(history[2]["SpotPrice"], "0.410000");

  Run denied = Aws({"ec2", "describe-instances"}, "not-the-secret");
  EXPECT_NE(denied.exit_code, 0);
  EXPECT_NE(denied.err.find("SignatureDoesNotMatch"), std::string::npos) << denied.err;
}

// A gang's launch by AwsProvider over HTTP, read back with the CLI: the
// instances are in the pool's cluster placement group, in one zone, and the
// group is there, tagged with the installation and the pool.
TEST_F(AwsCli, AGangsInstancesAreInItsClusterPlacementGroup) {
  SystemClock clock;
  cloud::AwsProvider provider(cloud::emulated::ProviderOptions("prod"), emulator_->client(), clock);
  LaunchRequest gang = cloud::emulated::TrainRequest("", 2, "gang-1", "p5.48xlarge");
  gang.all_or_nothing = true;
  gang.placement_group = "train-gangs";
  auto launched = provider.Launch(gang);
  ASSERT_TRUE(launched.ok()) << launched.error().ToString();
  ASSERT_EQ(launched->instances.size(), 2u);

  Run listed = Aws({"ec2", "describe-instances", "--instance-ids", launched->instances[0].instance_id,
                    launched->instances[1].instance_id});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  std::set<std::string> zones;
  int in_group = 0;
  for (const json& reservation : listed.out["Reservations"]) {
    for (const json& i : reservation["Instances"]) {
      EXPECT_EQ(i["Placement"]["GroupName"], "train-gangs") << i.dump();
      in_group += i["Placement"]["GroupName"] == "train-gangs";
      zones.insert(i["Placement"]["AvailabilityZone"].get<std::string>());
    }
  }
  EXPECT_EQ(in_group, 2);
  EXPECT_EQ(zones.size(), 1u);

  Run groups = Aws({"ec2", "describe-placement-groups", "--group-names", "train-gangs"});
  ASSERT_EQ(groups.exit_code, 0) << groups.err;
  ASSERT_EQ(groups.out["PlacementGroups"].size(), 1u);
  const json& g = groups.out["PlacementGroups"][0];
  EXPECT_EQ(g["GroupName"], "train-gangs");
  EXPECT_EQ(g["Strategy"], "cluster");
  EXPECT_EQ(g["State"], "available");
  EXPECT_EQ(g["GroupId"].get<std::string>().rfind("pg-", 0), 0u);
  std::map<std::string, std::string> tags;
  for (const json& t : g["Tags"]) tags[t["Key"]] = t["Value"];
  EXPECT_EQ(tags["gpuscaler.io/cluster"], "prod");
  EXPECT_EQ(tags["gpuscaler.io/pool"], "train");

  Run unknown = Aws({"ec2", "describe-placement-groups", "--group-names", "no-such-group"});
  EXPECT_NE(unknown.exit_code, 0);
  EXPECT_NE(unknown.err.find("InvalidPlacementGroup.Unknown"), std::string::npos) << unknown.err;
}

TEST_F(AwsCli, AutoScalingGroups) {
  Run set = Aws({"autoscaling", "set-desired-capacity", "--auto-scaling-group-name", "gpu-a", "--desired-capacity", "3"});
  ASSERT_EQ(set.exit_code, 0) << set.err;
  EXPECT_TRUE(set.raw.empty()) << set.raw;  // no output, as from AWS

  Run groups = Aws({"autoscaling", "describe-auto-scaling-groups", "--auto-scaling-group-names", "gpu-a"});
  ASSERT_EQ(groups.exit_code, 0) << groups.err;
  ASSERT_EQ(groups.out["AutoScalingGroups"].size(), 1u);
  const json& g = groups.out["AutoScalingGroups"][0];
  EXPECT_EQ(g["AutoScalingGroupName"], "gpu-a");
  EXPECT_EQ(g["DesiredCapacity"], 3);
  EXPECT_EQ(g["MinSize"], 0);
  EXPECT_EQ(g["MaxSize"], 5);
  ASSERT_EQ(g["Instances"].size(), 3u);
  EXPECT_EQ(g["Instances"][0]["LifecycleState"], "Pending");
  EXPECT_EQ(g["Instances"][0]["HealthStatus"], "Healthy");
  EXPECT_EQ(g["Instances"][0]["ProtectedFromScaleIn"], false);
  EXPECT_EQ(g["Tags"][0]["Key"], "team");

  Run over = Aws({"autoscaling", "set-desired-capacity", "--auto-scaling-group-name", "gpu-a", "--desired-capacity", "9"});
  EXPECT_NE(over.exit_code, 0);
  EXPECT_NE(over.err.find("ValidationError"), std::string::npos) << over.err;

  const std::string victim = g["Instances"][0]["InstanceId"];
  Run term = Aws({"autoscaling", "terminate-instance-in-auto-scaling-group", "--instance-id", victim,
                  "--should-decrement-desired-capacity"});
  ASSERT_EQ(term.exit_code, 0) << term.err;
  EXPECT_EQ(term.out["Activity"]["AutoScalingGroupName"], "gpu-a");
  EXPECT_EQ(term.out["Activity"]["StatusCode"], "InProgress");
  groups = Aws({"autoscaling", "describe-auto-scaling-groups"});
  EXPECT_EQ(groups.out["AutoScalingGroups"][0]["DesiredCapacity"], 2);
}

TEST_F(AwsCli, SqsReceivesSpotInterruptionWarnings) {
  Run fleet = Aws({"ec2", "create-fleet", "--type", "instant", "--launch-template-configs", kTemplate,
                   "--target-capacity-specification", "TotalTargetCapacity=1,DefaultTargetCapacityType=spot"});
  ASSERT_EQ(fleet.exit_code, 0) << fleet.err;
  const std::string id = fleet.out["Instances"][0]["InstanceIds"][0];

  Run url = Aws({"sqs", "get-queue-url", "--queue-name", "gpuscaler-interruptions"});
  ASSERT_EQ(url.exit_code, 0) << url.err;
  const std::string queue = url.out["QueueUrl"];
  EXPECT_EQ(queue, emulator_->url() + "/123456789012/gpuscaler-interruptions");

  Run got = Aws({"sqs", "receive-message", "--queue-url", queue, "--max-number-of-messages", "10"});
  ASSERT_EQ(got.exit_code, 0) << got.err;
  ASSERT_EQ(got.out["Messages"].size(), 1u) << got.raw;
  const json& m = got.out["Messages"][0];
  const json event = json::parse(m["Body"].get<std::string>());
  EXPECT_EQ(event["source"], "aws.ec2");
  EXPECT_EQ(event["detail-type"], "EC2 Spot Instance Interruption Warning");
  EXPECT_EQ(event["detail"]["instance-id"], id);
  EXPECT_EQ(event["detail"]["instance-action"], "terminate");
  EXPECT_EQ(m["MD5OfBody"].get<std::string>().size(), 32u);

  Run del = Aws({"sqs", "delete-message", "--queue-url", queue, "--receipt-handle", m["ReceiptHandle"]});
  EXPECT_EQ(del.exit_code, 0) << del.err;
  Run empty = Aws({"sqs", "receive-message", "--queue-url", queue});
  EXPECT_EQ(empty.exit_code, 0) << empty.err;
  EXPECT_TRUE(empty.raw.empty() || !empty.out.contains("Messages")) << empty.raw;
}

}  // namespace
}  // namespace gpuscaler::testing
