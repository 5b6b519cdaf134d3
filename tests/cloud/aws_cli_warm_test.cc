// Warm capacity through the real `aws` CLI (botocore) against
// `gpuscaler cloud-emulator`: EC2 stop-instances / start-instances with the
// state codes and filters EC2 gives, and Auto Scaling warm pools
// (put-warm-pool, describe-warm-pool with paging, delete-warm-pool) as the
// group fills, draws on and refills them.
// Skipped when `aws` is not on PATH, except under CI=true where that fails.
#include <set>
#include <string>

#include "cloud/aws_cli_harness.h"

namespace gpuscaler::testing::aws_cli_warm {
namespace {

// Latencies of 0 s: each state change is seen by the next call.
constexpr const char* kScenario = R"(
zones: [us-east-1a, us-east-1b]
launch_latency: 0s
start_latency: 0s
stop_latency: 0s
terminate_latency: 0s
capacity:
  - {instance_type: p4d.24xlarge, zone: us-east-1a, limit: 1}
auto_scaling_groups:
  - {name: gpu-warm, min: 0, max: 4, desired: 1, instance_type: g5.xlarge, tags: {team: ml}}
)";

class AwsCliWarm : public AwsCliTest {
 protected:
  std::string Scenario() const override { return kScenario; }

  // Launches `count` on-demand instances of `type` in us-east-1a; their ids.
  std::vector<std::string> Launch(const std::string& type, int count) {
    const std::string configs =
        R"([{"LaunchTemplateSpecification":{"LaunchTemplateName":"gpu-nodes","Version":"$Latest"},
      "Overrides":[{"InstanceType":")" +
        type + R"(","AvailabilityZone":"us-east-1a"}]}])";
    Run fleet =
        Aws({"ec2", "create-fleet", "--type", "instant", "--launch-template-configs", configs,
             "--target-capacity-specification",
             "TotalTargetCapacity=" + std::to_string(count) + ",DefaultTargetCapacityType=on-demand"});
    EXPECT_EQ(fleet.exit_code, 0) << fleet.err;
    std::vector<std::string> ids;
    for (const json& got : fleet.out["Instances"]) {
      for (const json& id : got["InstanceIds"]) ids.push_back(id);
    }
    return ids;
  }
  // The instance as `aws ec2 describe-instances` shows it.
  json Described(const std::string& id) {
    Run r = Aws({"ec2", "describe-instances", "--instance-ids", id});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    if (r.out["Reservations"].empty()) return json::object();
    return r.out["Reservations"][0]["Instances"][0];
  }
  // The ids of the instances in state `state`, by the instance-state-name filter.
  std::set<std::string> InState(const std::string& state) {
    Run r = Aws({"ec2", "describe-instances", "--filters", "Name=instance-state-name,Values=" + state});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::set<std::string> ids;
    for (const json& reservation : r.out["Reservations"]) {
      for (const json& i : reservation["Instances"]) ids.insert(i["InstanceId"].get<std::string>());
    }
    return ids;
  }
  json WarmPool() {
    Run r = Aws({"autoscaling", "describe-warm-pool", "--auto-scaling-group-name", "gpu-warm"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out;
  }
};

TEST_F(AwsCliWarm, StopAndStartInstances) {
  const std::vector<std::string> ids = Launch("g5.xlarge", 2);
  ASSERT_EQ(ids.size(), 2u);
  const std::string& a = ids[0];
  const std::string& b = ids[1];

  Run stop = Aws({"ec2", "stop-instances", "--instance-ids", a});
  ASSERT_EQ(stop.exit_code, 0) << stop.err;
  ASSERT_EQ(stop.out["StoppingInstances"].size(), 1u) << stop.raw;
  const json& change = stop.out["StoppingInstances"][0];
  EXPECT_EQ(change["InstanceId"], a);
  EXPECT_EQ(change["PreviousState"]["Name"], "running");
  EXPECT_EQ(change["PreviousState"]["Code"], 16);
  EXPECT_EQ(change["CurrentState"]["Name"], "stopping");
  EXPECT_EQ(change["CurrentState"]["Code"], 64);

  EXPECT_EQ(InState("stopped"), std::set<std::string>{a});
  const std::set<std::string> running = InState("running");
  EXPECT_EQ(running.count(a), 0u);
  EXPECT_EQ(running.count(b), 1u);
  const json stopped = Described(a);
  EXPECT_EQ(stopped["State"]["Code"], 80);
  EXPECT_EQ(stopped["StateReason"]["Code"], "Client.UserInitiatedShutdown");

  // Stopping a stopped instance is no change.
  Run again = Aws({"ec2", "stop-instances", "--instance-ids", a});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(again.out["StoppingInstances"][0]["PreviousState"]["Name"], "stopped");
  EXPECT_EQ(again.out["StoppingInstances"][0]["CurrentState"]["Name"], "stopped");

  Run start = Aws({"ec2", "start-instances", "--instance-ids", a});
  ASSERT_EQ(start.exit_code, 0) << start.err;
  ASSERT_EQ(start.out["StartingInstances"].size(), 1u) << start.raw;
  EXPECT_EQ(start.out["StartingInstances"][0]["InstanceId"], a);
  EXPECT_EQ(start.out["StartingInstances"][0]["PreviousState"]["Name"], "stopped");
  EXPECT_EQ(start.out["StartingInstances"][0]["PreviousState"]["Code"], 80);
  EXPECT_EQ(start.out["StartingInstances"][0]["CurrentState"]["Name"], "pending");
  EXPECT_EQ(start.out["StartingInstances"][0]["CurrentState"]["Code"], 0);
  EXPECT_EQ(Described(a)["State"]["Name"], "running");

  Run hibernate = Aws({"ec2", "stop-instances", "--instance-ids", b, "--hibernate"});
  ASSERT_EQ(hibernate.exit_code, 0) << hibernate.err;
  EXPECT_EQ(Described(b)["StateReason"]["Code"], "Client.UserInitiatedHibernate");
  EXPECT_EQ(InState("stopping,stopped"), std::set<std::string>{b});

  Run terminated = Aws({"ec2", "terminate-instances", "--instance-ids", b});
  ASSERT_EQ(terminated.exit_code, 0) << terminated.err;
  EXPECT_EQ(terminated.out["TerminatingInstances"][0]["PreviousState"]["Name"], "stopped");
  Run gone = Aws({"ec2", "start-instances", "--instance-ids", b});
  EXPECT_NE(gone.exit_code, 0);
  EXPECT_NE(gone.err.find("IncorrectInstanceState"), std::string::npos) << gone.err;
  Run unknown = Aws({"ec2", "stop-instances", "--instance-ids", "i-0123456789abcdef0"});
  EXPECT_NE(unknown.exit_code, 0);
  EXPECT_NE(unknown.err.find("InvalidInstanceID.NotFound"), std::string::npos) << unknown.err;
}

// A stopped instance holds no capacity: another launch takes its place, and
// then it cannot start again.
TEST_F(AwsCliWarm, AStartWithoutCapacityFails) {
  const std::vector<std::string> first = Launch("p4d.24xlarge", 1);
  ASSERT_EQ(first.size(), 1u);
  Run stop = Aws({"ec2", "stop-instances", "--instance-ids", first[0]});
  ASSERT_EQ(stop.exit_code, 0) << stop.err;
  ASSERT_EQ(Described(first[0])["State"]["Name"], "stopped");
  ASSERT_EQ(Launch("p4d.24xlarge", 1).size(), 1u);
  Run start = Aws({"ec2", "start-instances", "--instance-ids", first[0]});
  EXPECT_NE(start.exit_code, 0);
  EXPECT_NE(start.err.find("InsufficientInstanceCapacity"), std::string::npos) << start.err;
  EXPECT_EQ(Described(first[0])["State"]["Name"], "stopped");
}

TEST_F(AwsCliWarm, WarmPoolFillsWakesRefillsAndIsDeleted) {
  Run put = Aws({"autoscaling", "put-warm-pool", "--auto-scaling-group-name", "gpu-warm", "--min-size", "2",
                 "--max-group-prepared-capacity", "2", "--pool-state", "Stopped", "--instance-reuse-policy",
                 "ReuseOnScaleIn=true"});
  ASSERT_EQ(put.exit_code, 0) << put.err;
  EXPECT_TRUE(put.raw.empty()) << put.raw;

  const json pool = WarmPool();
  const json& config = pool["WarmPoolConfiguration"];
  EXPECT_EQ(config["MinSize"], 2);
  EXPECT_EQ(config["MaxGroupPreparedCapacity"], 2);
  EXPECT_EQ(config["PoolState"], "Stopped");
  EXPECT_EQ(config["InstanceReusePolicy"]["ReuseOnScaleIn"], true);
  ASSERT_EQ(pool["Instances"].size(), 2u) << pool.dump();
  std::set<std::string> warm;
  for (const json& i : pool["Instances"]) {
    EXPECT_EQ(i["LifecycleState"], "Warmed:Stopped");
    EXPECT_EQ(i["InstanceType"], "g5.xlarge");
    warm.insert(i["InstanceId"].get<std::string>());
  }
  EXPECT_EQ(InState("stopped"), warm);

  // One page at a time, and the CLI's paging over them.
  Run page = Aws({"autoscaling", "describe-warm-pool", "--auto-scaling-group-name", "gpu-warm",
                  "--no-paginate", "--max-records", "1"});
  ASSERT_EQ(page.exit_code, 0) << page.err;
  EXPECT_EQ(page.out["Instances"].size(), 1u);
  EXPECT_TRUE(page.out.contains("NextToken")) << page.raw;
  Run paged =
      Aws({"autoscaling", "describe-warm-pool", "--auto-scaling-group-name", "gpu-warm", "--page-size", "1"});
  ASSERT_EQ(paged.exit_code, 0) << paged.err;
  EXPECT_EQ(paged.out["Instances"].size(), 2u) << paged.raw;

  Run groups = Aws({"autoscaling", "describe-auto-scaling-groups", "--auto-scaling-group-names", "gpu-warm"});
  ASSERT_EQ(groups.exit_code, 0) << groups.err;
  const json& g = groups.out["AutoScalingGroups"][0];
  ASSERT_EQ(g["Instances"].size(), 1u) << "warm instances are not in the group's instances";
  EXPECT_EQ(warm.count(g["Instances"][0]["InstanceId"]), 0u);
  EXPECT_EQ(g["WarmPoolSize"], 2);
  EXPECT_EQ(g["WarmPoolConfiguration"]["MinSize"], 2);

  // A raise takes a warm instance, and the pool is refilled with a new one.
  Run set = Aws({"autoscaling", "set-desired-capacity", "--auto-scaling-group-name", "gpu-warm",
                 "--desired-capacity", "2"});
  ASSERT_EQ(set.exit_code, 0) << set.err;
  groups = Aws({"autoscaling", "describe-auto-scaling-groups", "--auto-scaling-group-names", "gpu-warm"});
  ASSERT_EQ(groups.out["AutoScalingGroups"][0]["Instances"].size(), 2u);
  int woken = 0;
  for (const json& i : groups.out["AutoScalingGroups"][0]["Instances"]) {
    if (warm.count(i["InstanceId"]) != 0) {
      ++woken;
      EXPECT_EQ(i["LifecycleState"], "InService");
    }
  }
  EXPECT_EQ(woken, 1);
  const json refilled = WarmPool();
  ASSERT_EQ(refilled["Instances"].size(), 2u) << refilled.dump();
  int fresh = 0;
  for (const json& i : refilled["Instances"]) fresh += warm.count(i["InstanceId"]) == 0;
  EXPECT_EQ(fresh, 1);

  Run activities =
      Aws({"autoscaling", "describe-scaling-activities", "--auto-scaling-group-name", "gpu-warm"});
  ASSERT_EQ(activities.exit_code, 0) << activities.err;
  EXPECT_NE(activities.raw.find("from warm pool"), std::string::npos) << activities.raw;

  Run bad =
      Aws({"autoscaling", "put-warm-pool", "--auto-scaling-group-name", "no-such-group", "--min-size", "1"});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("ValidationError"), std::string::npos) << bad.err;

  Run del = Aws({"autoscaling", "delete-warm-pool", "--auto-scaling-group-name", "gpu-warm"});
  ASSERT_EQ(del.exit_code, 0) << del.err;
  EXPECT_TRUE(del.raw.empty()) << del.raw;
  const json deleted = WarmPool();
  // The CLI's paging writes null for a key no page had.
  EXPECT_TRUE(!deleted.contains("WarmPoolConfiguration") || deleted["WarmPoolConfiguration"].is_null())
      << deleted.dump();
  EXPECT_TRUE(!deleted.contains("Instances") || deleted["Instances"].empty()) << deleted.dump();
  EXPECT_TRUE(InState("stopped").empty());
  Run twice = Aws({"autoscaling", "delete-warm-pool", "--auto-scaling-group-name", "gpu-warm"});
  EXPECT_NE(twice.exit_code, 0);
}

}  // namespace
}  // namespace gpuscaler::testing::aws_cli_warm
