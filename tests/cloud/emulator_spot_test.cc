// The AWS emulator's Spot market, without sockets: the Spot price history's
// window and pages, and interruptions as EventBridge events on the SQS queue
// (visibility timeout, delete, the two-minute notice), scripted ones waiting
// for a matching Spot instance.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpuscaler/cloud/ec2_api.h"
#include "gpuscaler/cloud/sqs_api.h"
#include "sim/cloud_emulator/emulator.h"
#include "tests/cloud/emulator_fixture.h"

namespace gpuscaler::sim::emulator_spot_test {
namespace {

using emulator_testing::EmulatorTest;
using emulator_testing::FleetRequest;
using emulator_testing::Start;

TEST_F(EmulatorTest, SpotPriceHistoryWindowAndPaging) {
  EmulatorScenario s;
  for (int h = 0; h < 6; ++h) {
    s.spot_prices.push_back({"g5.xlarge", "us-east-1a", 0.40 + 0.01 * h, Start() - Seconds(3600 * (5 - h))});
  }
  s.spot_prices.push_back({"g6.xlarge", "us-east-1b", 0.30, Start() - Seconds(7200)});
  s.spot_prices.push_back({"g5.xlarge", "us-east-1a", 0.99, Start() + Seconds(3600)});  // the future
  Emu(s);
  cloud::DescribeSpotPriceHistoryRequest req;
  req.instance_types = {"g5.xlarge"};
  req.start_time = Start() - Seconds(3600 * 2 + 60);  // in force then: the -3h price
  auto page = cloud::ParseDescribeSpotPriceHistory(Query("ec2", cloud::DescribeSpotPriceHistoryQuery(req)).body);
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page->prices.size(), 4u);  // -2h, -1h, 0h and the one before the window
  EXPECT_DOUBLE_EQ(page->prices[0].usd_per_hour, 0.45);
  EXPECT_EQ(page->prices[0].time, Start());
  EXPECT_DOUBLE_EQ(page->prices[3].usd_per_hour, 0.42);
  EXPECT_TRUE(page->next_token.empty());

  cloud::DescribeSpotPriceHistoryRequest paged;
  paged.max_results = 3;
  std::vector<cloud::SpotPricePoint> all;
  for (int n = 0; n < 5; ++n) {
    auto p = cloud::ParseDescribeSpotPriceHistory(Query("ec2", cloud::DescribeSpotPriceHistoryQuery(paged)).body);
    ASSERT_TRUE(p.ok());
    all.insert(all.end(), p->prices.begin(), p->prices.end());
    if (p->next_token.empty()) break;
    paged.next_token = p->next_token;
  }
  EXPECT_EQ(all.size(), 7u);  // everything up to now; the future price is not history yet
  clock_.Advance(Seconds(3600));
  paged = {};
  auto later = cloud::ParseDescribeSpotPriceHistory(Query("ec2", cloud::DescribeSpotPriceHistoryQuery(paged)).body);
  EXPECT_DOUBLE_EQ(later->prices[0].usd_per_hour, 0.99);
}

TEST_F(EmulatorTest, SpotInterruptionsArriveOnTheQueue) {
  EmulatorScenario s;
  s.interruptions = {{Seconds(60), "g5.xlarge", "us-east-1a", 1, Seconds(120)}};
  Emu(s);
  auto fleet = Fleet(FleetRequest({{"g5.xlarge", "us-east-1a"}}, 2, CapacityType::kSpot));
  const std::string victim = fleet.instances.at(0).instance_ids.at(0);
  EmulatorResponse url = SqsCall("GetQueueUrl", {{"QueueName", "gpuscaler-interruptions"}});
  ASSERT_EQ(url.status, 200);
  const std::string queue = nlohmann::json::parse(url.body)["QueueUrl"];
  EXPECT_EQ(queue, "http://127.0.0.1:4566/123456789012/gpuscaler-interruptions");
  EXPECT_EQ(SqsCall("ReceiveMessage", {{"QueueUrl", queue}}).body, "{}");

  clock_.Advance(Seconds(61));
  EmulatorResponse got = SqsCall("ReceiveMessage", nlohmann::json::parse(cloud::ReceiveMessageBody(queue, 10, 0)));
  auto msgs = cloud::ParseReceiveMessage(got.body);
  ASSERT_TRUE(msgs.ok()) << got.body;
  ASSERT_EQ(msgs->size(), 1u);
  EXPECT_EQ((*msgs)[0].md5_of_body, cloud::Md5Hex((*msgs)[0].body));
  auto event = cloud::ParseEventBridgeEvent((*msgs)[0].body);
  ASSERT_TRUE(event.ok());
  EXPECT_EQ(event->kind, cloud::Ec2EventKind::kSpotInterruption);
  EXPECT_EQ(event->instance_id, victim);
  EXPECT_EQ(event->time, Start() + Seconds(61));
  // Invisible until the visibility timeout passes, then delivered again.
  EXPECT_EQ(SqsCall("ReceiveMessage", {{"QueueUrl", queue}}).body, "{}");
  clock_.Advance(Seconds(30));
  auto again = cloud::ParseReceiveMessage(SqsCall("ReceiveMessage", {{"QueueUrl", queue}}).body);
  ASSERT_EQ(again->size(), 1u);
  EXPECT_EQ(SqsCall("DeleteMessage", {{"QueueUrl", queue}, {"ReceiptHandle", (*again)[0].receipt_handle}}).status, 200);
  EXPECT_EQ(SqsCall("DeleteMessage", {{"QueueUrl", queue}, {"ReceiptHandle", "bogus"}}).status, 400);
  EmulatorResponse no_queue = SqsCall("ReceiveMessage", {{"QueueUrl", "http://x/1/other"}});
  EXPECT_EQ(no_queue.status, 400);
  EXPECT_EQ(cloud::ParseErrorBody(no_queue.body)->code, "QueueDoesNotExist");

  clock_.Advance(Seconds(120));  // the 2-minute notice is over
  for (const auto& i : Describe()) {
    EXPECT_EQ(i.state, i.instance_id == victim ? "terminated" : "running") << i.instance_id;
  }
  EXPECT_FALSE(emu_->Interrupt("i-nope").ok());
}

TEST_F(EmulatorTest, ScriptedInterruptionsWaitForMatchingInstances) {
  EmulatorScenario s;
  s.interruptions = {{Seconds(0), "g5.xlarge", "", 2, Seconds(120)}};
  Emu(s);
  Describe();  // armed, nothing to hit yet
  auto first = Fleet(FleetRequest({{"g5.xlarge", "us-east-1a"}}, 1, CapacityType::kSpot));
  Fleet(FleetRequest({{"g5.xlarge", "us-east-1b"}}, 1, CapacityType::kOnDemand));  // not spot: spared
  clock_.Advance(Seconds(10));
  auto second = Fleet(FleetRequest({{"g5.xlarge", "us-east-1b"}}, 2, CapacityType::kSpot));
  Describe();
  const std::string queue = "http://127.0.0.1:4566/123456789012/gpuscaler-interruptions";
  auto msgs = cloud::ParseReceiveMessage(SqsCall("ReceiveMessage", {{"QueueUrl", queue}, {"MaxNumberOfMessages", 10}}).body);
  ASSERT_TRUE(msgs.ok());
  ASSERT_EQ(msgs->size(), 2u);  // count 2: the first spot instance, then the older of the next two
  EXPECT_EQ(cloud::ParseEventBridgeEvent((*msgs)[0].body)->instance_id, first.instances[0].instance_ids[0]);
  EXPECT_EQ(cloud::ParseEventBridgeEvent((*msgs)[1].body)->instance_id, second.instances[0].instance_ids[0]);
}

}  // namespace
}  // namespace gpuscaler::sim::emulator_spot_test
