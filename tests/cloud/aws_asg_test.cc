// AwsProvider over HTTP against `gpuscaler cloud-emulator`, checked with the
// real `aws` CLI (botocore) as an independent reader:
//  - `actuation: asg`: a launch raises the group's DesiredCapacity, the
//    group's instances run after the emulator's latency, a termination takes
//    exactly the chosen instance and decrements the group, MaxSize holds, a
//    capacity failure is a kCapacity error and a Failed scaling activity, a
//    gang that comes up in part is given back and leaves the group as it was;
//  - two installations on one emulator see and terminate only their own
//    instances, with installation-wide idempotency tokens.
// Skipped when `aws` is not on PATH, except under CI=true where that fails.
#include <gtest/gtest.h>

#include <memory>

#include "cloud/aws_cli_harness.h"
#include "cloud/emulated_aws.h"
#include "gpuscaler/cloud/aws_provider.h"

namespace gpuscaler::testing {
namespace {

using cloud::emulated::TrainRequest;

constexpr const char* kScenario = R"(
zones: [us-east-1a, us-east-1b]
launch_latency: 1s
terminate_latency: 1s
capacity:
  - {instance_type: p4d.24xlarge, limit: 0}
  - {instance_type: g6.xlarge, limit: 1}
auto_scaling_groups:
  - {name: gpu-a, min: 0, max: 3, desired: 0, instance_type: g5.xlarge, tags: {gpuscaler.io/cluster: a}}
  - {name: gpu-big, min: 0, max: 2, desired: 0, instance_type: p4d.24xlarge, tags: {gpuscaler.io/cluster: a}}
  - {name: gpu-gang, min: 0, max: 4, desired: 0, instance_type: g6.xlarge, tags: {gpuscaler.io/cluster: a}}
)";

class AwsAsg : public AwsCliTest {
 protected:
  std::string Scenario() const override { return kScenario; }
  void SetUp() override {
    AwsCliTest::SetUp();
    if (HasFatalFailure() || IsSkipped()) return;
    a_ = Provider("a");
    b_ = Provider("b");
  }
  // One installation's provider, over HTTP.
  std::unique_ptr<cloud::AwsProvider> Provider(const std::string& cluster) {
    return std::make_unique<cloud::AwsProvider>(cloud::emulated::ProviderOptions(cluster), emulator_->client(),
                                                clock_);
  }

  json Group(const std::string& name) {
    Run r = Aws({"autoscaling", "describe-auto-scaling-groups", "--auto-scaling-group-names", name});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out["AutoScalingGroups"].size() == 1 ? r.out["AutoScalingGroups"][0] : json::object();
  }
  // The instance's state name as `aws ec2 describe-instances` reads it.
  std::string State(const std::string& id) {
    Run r = Aws({"ec2", "describe-instances", "--instance-ids", id});
    if (r.exit_code != 0 || r.out["Reservations"].empty()) return "";
    return r.out["Reservations"][0]["Instances"][0]["State"]["Name"];
  }

  SystemClock clock_;
  std::unique_ptr<cloud::AwsProvider> a_, b_;
};

TEST_F(AwsAsg, LaunchAndTerminateGoThroughTheAutoScalingGroup) {
  auto launched = a_->Launch(TrainRequest("gpu-a", 2, "a-0f8e3c2a-7-0"));
  ASSERT_TRUE(launched.ok()) << launched.error().ToString();
  EXPECT_TRUE(launched->errors.empty());
  EXPECT_EQ(launched->instances.size(), 2u);
  json g = Group("gpu-a");
  EXPECT_EQ(g["DesiredCapacity"], 2);
  ASSERT_EQ(g["Instances"].size(), 2u);

  // After the emulator's launch latency the group's instances run, tagged
  // with the launch's intent.
  std::vector<std::string> ids = {g["Instances"][0]["InstanceId"], g["Instances"][1]["InstanceId"]};
  ASSERT_TRUE(Eventually([&] { return State(ids[0]) == "running" && State(ids[1]) == "running"; }, 10s));
  Run tagged = Aws({"ec2", "describe-instances", "--filters", "Name=tag:gpuscaler.io/intent,Values=a-0f8e3c2a-7-0",
                    "Name=tag:aws:autoscaling:groupName,Values=gpu-a"});
  ASSERT_EQ(tagged.exit_code, 0) << tagged.err;
  ASSERT_EQ(tagged.out["Reservations"].size(), 2u);  // one reservation per group launch
  auto listed = a_->ListInstances();
  ASSERT_TRUE(listed.ok()) << listed.error().ToString();
  ASSERT_EQ(listed->size(), 2u);
  EXPECT_EQ((*listed)[0].pool, "train");
  EXPECT_EQ((*listed)[0].state, InstanceState::kRunning);

  ASSERT_TRUE(a_->Terminate({ids[1]}).ok());
  EXPECT_EQ(Group("gpu-a")["DesiredCapacity"], 1);
  ASSERT_TRUE(Eventually([&] { return State(ids[1]) == "terminated"; }, 10s));
  EXPECT_EQ(State(ids[0]), "running");
  g = Group("gpu-a");
  ASSERT_EQ(g["Instances"].size(), 1u);  // not replaced
  EXPECT_EQ(g["Instances"][0]["InstanceId"], ids[0]);

  // MaxSize 3: 1 + 5 is cut to 3, then the group is full.
  auto cut = a_->Launch(TrainRequest("gpu-a", 5, "a-0f8e3c2a-8-0"));
  ASSERT_TRUE(cut.ok()) << cut.error().ToString();
  EXPECT_EQ(cut->instances.size(), 2u);
  ASSERT_EQ(cut->errors.size(), 1u);
  EXPECT_EQ(cut->errors[0].error.category(), ErrorCategory::kCapacity);
  EXPECT_EQ(Group("gpu-a")["DesiredCapacity"], 3);
  auto full = a_->Launch(TrainRequest("gpu-a", 1, "a-0f8e3c2a-9-0"));
  ASSERT_FALSE(full.ok());
  EXPECT_EQ(full.error().category(), ErrorCategory::kCapacity);
  EXPECT_EQ(Group("gpu-a")["DesiredCapacity"], 3);
}

TEST_F(AwsAsg, CapacityFailuresAreFailedScalingActivitiesAndCapacityErrors) {
  auto r = a_->Launch(TrainRequest("gpu-big", 1, "a-0f8e3c2a-7-0", "p4d.24xlarge"));
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_TRUE(r->instances.empty());
  ASSERT_EQ(r->errors.size(), 1u);
  EXPECT_EQ(r->errors[0].error.category(), ErrorCategory::kCapacity);
  Run activities = Aws({"autoscaling", "describe-scaling-activities", "--auto-scaling-group-name", "gpu-big"});
  ASSERT_EQ(activities.exit_code, 0) << activities.err;
  ASSERT_FALSE(activities.out["Activities"].empty()) << activities.raw;
  const json& newest = activities.out["Activities"][0];
  EXPECT_EQ(newest["StatusCode"], "Failed");
  EXPECT_NE(newest["StatusMessage"].get<std::string>().find("InsufficientInstanceCapacity"), std::string::npos);
  EXPECT_EQ(newest["AutoScalingGroupName"], "gpu-big");
}

// g6.xlarge has room for one instance per zone: a lone node takes one zone's,
// then a gang of two gets one node and gives it back.
TEST_F(AwsAsg, AGangGivenBackLeavesTheGroupsDesiredCapacityAsItWas) {
  auto lone = a_->Launch(TrainRequest("gpu-gang", 1, "a-0f8e3c2a-7-0", "g6.xlarge"));
  ASSERT_TRUE(lone.ok()) << lone.error().ToString();
  ASSERT_EQ(lone->instances.size(), 1u);
  EXPECT_EQ(Group("gpu-gang")["DesiredCapacity"], 1);

  LaunchRequest gang = TrainRequest("gpu-gang", 2, "a-0f8e3c2a-8-0", "g6.xlarge");
  gang.all_or_nothing = true;
  auto r = a_->Launch(gang);
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_TRUE(r->instances.empty());
  ASSERT_EQ(r->errors.size(), 1u);
  EXPECT_EQ(r->errors[0].error.category(), ErrorCategory::kCapacity);
  EXPECT_NE(r->errors[0].error.message().find("a gang needs all 2 nodes; 1 came up within 60 s, and every one of "
                                              "them is given back"),
            std::string::npos)
      << r->errors[0].error.message();

  json g = Group("gpu-gang");
  EXPECT_EQ(g["DesiredCapacity"], 1);
  Run made = Aws({"ec2", "describe-instances", "--filters", "Name=tag:gpuscaler.io/intent,Values=a-0f8e3c2a-8-0"});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  std::vector<std::string> ids;
  for (const json& reservation : made.out["Reservations"]) {
    for (const json& i : reservation["Instances"]) {
      ids.push_back(i["InstanceId"]);
      const std::string state = i["State"]["Name"];
      EXPECT_TRUE(state == "shutting-down" || state == "terminated") << ids.back() << " " << state;
    }
  }
  EXPECT_EQ(ids.size(), 1u) << made.raw;
  const std::string kept = lone->instances[0].instance_id;
  ASSERT_TRUE(Eventually([&] { return Group("gpu-gang")["Instances"].size() == 1; }, 10s));
  EXPECT_EQ(Group("gpu-gang")["Instances"][0]["InstanceId"], kept);
  const std::string state = State(kept);
  EXPECT_TRUE(state == "pending" || state == "running") << state;
}

TEST_F(AwsAsg, TwoInstallationsSeeAndTerminateOnlyTheirOwn) {
  // Installation-wide tokens, long enough that the ClientToken is hashed.
  const std::string a_token = "prod-eu-west-1-gpu-training-cluster-a-7f3c9e2a1b4d4e6f8a0b-123456-0";
  const std::string b_token = "prod-eu-west-1-gpu-training-cluster-b-7f3c9e2a1b4d4e6f8a0b-123456-0";
  auto a = a_->Launch(TrainRequest("", 2, a_token));
  auto b = b_->Launch(TrainRequest("", 1, b_token));
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(a->instances.size(), 2u);
  ASSERT_EQ(b->instances.size(), 1u);

  auto b_listed = b_->ListInstances();
  ASSERT_TRUE(b_listed.ok());
  ASSERT_EQ(b_listed->size(), 1u);
  EXPECT_EQ((*b_listed)[0].instance_id, b->instances[0].instance_id);
  EXPECT_EQ(a_->ListInstances()->size(), 2u);

  Status refused = b_->Terminate({a->instances[0].instance_id});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().category(), ErrorCategory::kInvalidInput);
  const std::string state = State(a->instances[0].instance_id);
  EXPECT_TRUE(state == "pending" || state == "running") << state;

  Run described = Aws({"ec2", "describe-instances", "--filters", "Name=tag:gpuscaler.io/cluster,Values=a"});
  ASSERT_EQ(described.exit_code, 0) << described.err;
  const json& instances = described.out["Reservations"][0]["Instances"];
  ASSERT_EQ(instances.size(), 2u);
  const std::string client_token = instances[0]["ClientToken"];
  EXPECT_LE(client_token.size(), 64u);
  EXPECT_EQ(client_token, cloud::AwsProvider::ClientToken(a_token, 0));
  EXPECT_NE(client_token, cloud::AwsProvider::ClientToken(b_token, 0));
}

}  // namespace
}  // namespace gpuscaler::testing
