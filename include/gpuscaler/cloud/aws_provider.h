// AwsProvider: the CloudProvider on AWS (EC2 Fleet, DescribeInstances,
// DescribeSpotPriceHistory, and an SQS queue fed by EventBridge).
//
//  - Launch: the request's offerings, in order, are cut into runs of one
//    capacity type; each run is one CreateFleet (Type=instant, the launch
//    template with one override per offering: instance type and zone, or the
//    zone's subnet) for the nodes still missing, so a short run falls back to
//    the next run (other zone, other type, on-demand). Spot runs use
//    `spot_allocation_strategy` (price-capacity-optimized), on-demand runs
//    `on_demand_allocation_strategy` (lowest-price); the "prioritized"
//    strategies get Priority = position in the request. Each call's
//    ClientToken is derived from the request's idempotency token and the run,
//    so replaying a Launch returns the first call's instances. Instances are
//    tagged with the request's tags plus gpuscaler.io/pool=<pool>.
//  - Terminate: TerminateInstances in chunks of 1000; ids EC2 no longer
//    knows are skipped (termination is idempotent).
//  - ListInstances: DescribeInstances filtered on the gpuscaler.io/pool tag
//    key and pending|running|shutting-down, every page, sorted by id.
//  - PollInterruptions: drains the SQS queue (JSON protocol), turns "EC2 Spot
//    Instance Interruption Warning" events into notices (deadline = event
//    time + 2 minutes), deletes every message it has read (rebalance and
//    state-change events are read and dropped).
//  - SpotPrices: DescribeSpotPriceHistory from `since`, every page.
// Throttles and 5xx are retried by the AwsClient. Not thread-safe.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "gpuscaler/cloud/aws_client.h"
#include "gpuscaler/cloud/ec2_api.h"
#include "gpuscaler/cloud/provider.h"
#include "gpuscaler/model/clock.h"

namespace gpuscaler::cloud {

struct AwsProviderOptions {
  LaunchTemplateRef launch_template;
  // Zone -> subnet. When a zone has one, overrides name the subnet (the
  // launch template then needs no network settings).
  std::map<std::string, std::string> subnet_by_zone;
  std::string spot_allocation_strategy = "price-capacity-optimized";
  std::string on_demand_allocation_strategy = "lowest-price";
  // Full SQS queue URL; empty: PollInterruptions returns nothing.
  std::string interruption_queue_url;
  // Types whose spot prices SpotPrices() fetches; empty: all.
  std::vector<std::string> price_instance_types;
  std::string product_description = "Linux/UNIX";
  Seconds interruption_notice{120};
  int max_interruption_batches = 10;  // ReceiveMessage calls per poll (10 messages each)
};

class AwsProvider final : public CloudProvider {
 public:
  AwsProvider(AwsProviderOptions options, AwsClient& client, const Clock& clock);

  Result<LaunchResult> Launch(const LaunchRequest& request) override;
  Status Terminate(const std::vector<std::string>& instance_ids) override;
  Result<std::vector<Instance>> ListInstances() override;
  Result<std::vector<InterruptionNotice>> PollInterruptions() override;
  Result<std::vector<SpotPrice>> SpotPrices(WallTime since) override;

  // The ClientToken of run `run` of a launch with `idempotency_token`
  // (≤ 64 ASCII characters, as EC2 requires).
  static std::string ClientToken(const std::string& idempotency_token, int run);

 private:
  AwsProviderOptions options_;
  AwsClient& client_;
  const Clock& clock_;
  // Offerings of instances this process launched (price at launch).
  std::map<std::string, Offering> launched_;
};

}  // namespace gpuscaler::cloud
