// Spot warm capacity through the real `aws` CLI (botocore) against
// `gpuscaler cloud-emulator`: run-instances with --instance-market-options
// (a persistent Spot request that stops on interruption) gives an instance
// that stop-instances and start-instances take; a one-time Spot Instance is
// refused with UnsupportedOperation; stop needs a persistent request
// (InvalidParameterCombination); cancel-spot-instance-requests by the
// SpotInstanceRequestId that describe-instances shows.
// Skipped when `aws` is not on PATH, except under CI=true where that fails.
#include <string>

#include "cloud/aws_cli_harness.h"

namespace gpuscaler::testing::aws_cli_spot_warm {
namespace {

// Latencies of 0 s: each state change is seen by the next call.
constexpr const char* kSpotScenario = R"(
zones: [us-east-1a, us-east-1b]
launch_latency: 0s
start_latency: 0s
stop_latency: 0s
terminate_latency: 0s
)";

class AwsCliSpotWarm : public AwsCliTest {
 protected:
  std::string Scenario() const override { return kSpotScenario; }

  // run-instances of one g5.xlarge in us-east-1b with these market options.
  Run RunSpot(const std::string& market_options) {
    return Aws({"ec2", "run-instances", "--launch-template", "LaunchTemplateName=gpu-nodes", "--instance-type",
                "g5.xlarge", "--placement", "AvailabilityZone=us-east-1b", "--count", "1",
                "--instance-market-options", market_options});
  }
  json DescribedSpot(const std::string& id) {
    Run r = Aws({"ec2", "describe-instances", "--instance-ids", id});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    if (r.out["Reservations"].empty()) return json::object();
    return r.out["Reservations"][0]["Instances"][0];
  }
};

TEST_F(AwsCliSpotWarm, APersistentSpotInstanceThatStopsOnInterruptionStopsAndStarts) {
  Run run = RunSpot(
      R"({"MarketType":"spot","SpotOptions":{"SpotInstanceType":"persistent","InstanceInterruptionBehavior":"stop"}})");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  ASSERT_EQ(run.out["Instances"].size(), 1u) << run.raw;
  const std::string id = run.out["Instances"][0]["InstanceId"];
  const json described = DescribedSpot(id);
  EXPECT_EQ(described["InstanceLifecycle"], "spot");
  const std::string request = described.value("SpotInstanceRequestId", "");
  EXPECT_EQ(request.rfind("sir-", 0), 0u) << described.dump();

  Run stop = Aws({"ec2", "stop-instances", "--instance-ids", id});
  ASSERT_EQ(stop.exit_code, 0) << stop.err;
  EXPECT_EQ(stop.out["StoppingInstances"][0]["CurrentState"]["Name"], "stopping");
  EXPECT_EQ(DescribedSpot(id)["State"]["Name"], "stopped");
  Run start = Aws({"ec2", "start-instances", "--instance-ids", id});
  ASSERT_EQ(start.exit_code, 0) << start.err;
  EXPECT_EQ(start.out["StartingInstances"][0]["CurrentState"]["Name"], "pending");
  EXPECT_EQ(DescribedSpot(id)["State"]["Name"], "running");

  Run cancel = Aws({"ec2", "cancel-spot-instance-requests", "--spot-instance-request-ids", request});
  ASSERT_EQ(cancel.exit_code, 0) << cancel.err;
  ASSERT_EQ(cancel.out["CancelledSpotInstanceRequests"].size(), 1u) << cancel.raw;
  EXPECT_EQ(cancel.out["CancelledSpotInstanceRequests"][0]["SpotInstanceRequestId"], request);
  EXPECT_EQ(cancel.out["CancelledSpotInstanceRequests"][0]["State"], "cancelled");
  EXPECT_EQ(DescribedSpot(id)["State"]["Name"], "running") << "cancelling a request leaves its instance";
  Run unknown = Aws({"ec2", "cancel-spot-instance-requests", "--spot-instance-request-ids", "sir-00000000"});
  EXPECT_NE(unknown.exit_code, 0);
  EXPECT_NE(unknown.err.find("InvalidSpotInstanceRequestID.NotFound"), std::string::npos) << unknown.err;
}

TEST_F(AwsCliSpotWarm, AOneTimeSpotInstanceCannotBeStoppedNorAskedToStopOnInterruption) {
  Run run = RunSpot(R"({"MarketType":"spot"})");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string id = run.out["Instances"][0]["InstanceId"];
  Run stop = Aws({"ec2", "stop-instances", "--instance-ids", id});
  EXPECT_NE(stop.exit_code, 0);
  EXPECT_NE(stop.err.find("UnsupportedOperation"), std::string::npos) << stop.err;
  EXPECT_EQ(DescribedSpot(id)["State"]["Name"], "running");

  Run refused = RunSpot(R"({"MarketType":"spot","SpotOptions":{"InstanceInterruptionBehavior":"stop"}})");
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_NE(refused.err.find("InvalidParameterCombination"), std::string::npos) << refused.err;
}

}  // namespace
}  // namespace gpuscaler::testing::aws_cli_spot_warm
