// The Compute Engine emulator's instances and operations, without sockets:
// bulkInsert (named or by pattern, minCount all or nothing, labels, Spot
// scheduling, the operation's latency), requestId idempotency, delete through
// STOPPING, the aggregated list's filters and pages, and operations listed,
// waited for, and a blocking wait that ends when done or at its cap.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include <nlohmann/json.hpp>

#include "sim/cloud_emulator/gcp_emulator.h"
#include "tests/cloud/gcp_emulator_fixture.h"

namespace gpuscaler::sim::gcp_emulator_instances_test {
namespace {

using nlohmann::json;
using gcp_emulator_testing::GcpEmulatorTest;
using gcp_emulator_testing::Reason;
using gcp_emulator_testing::Start;

TEST_F(GcpEmulatorTest, BulkInsertCreatesLabelledSpotInstancesAfterTheOperationLatency) {
  Emu("operation_latency: 5s\nboot_latency: 20s\n");
  auto op = BulkInsert("us-central1-a", {"gpu-1", "gpu-2"}, "g2-standard-8", "SPOT");
  ASSERT_EQ(op.status, 200) << op.raw.body;
  EXPECT_EQ(op.body["kind"], "compute#operation");
  EXPECT_EQ(op.body["operationType"], "bulkInsert");
  EXPECT_EQ(op.body["status"], "RUNNING");
  EXPECT_FALSE(op.body.contains("error"));

  auto inst = Get("zones/us-central1-a/instances/gpu-1");
  ASSERT_EQ(inst.status, 200);
  EXPECT_EQ(inst.body["status"], "PROVISIONING");
  EXPECT_EQ(inst.body["labels"]["gpuscaler-pool"], "l4");
  EXPECT_EQ(inst.body["scheduling"]["provisioningModel"], "SPOT");
  EXPECT_EQ(inst.body["scheduling"]["instanceTerminationAction"], "DELETE");
  EXPECT_EQ(inst.body["metadata"]["items"][0]["value"], "tok-1");
  EXPECT_EQ(inst.body["machineType"],
            "https://www.googleapis.com/compute/v1/projects/gpuscaler-test/zones/us-central1-a/machineTypes/"
            "g2-standard-8");

  clock_.Advance(std::chrono::seconds(5));
  auto done = Operation(op);
  EXPECT_EQ(done.body["status"], "DONE");
  EXPECT_EQ(done.body["instancesBulkInsertOperationMetadata"]["perLocationStatus"]["zones/us-central1-a"]
                     ["createdVmCount"],
            2);
  EXPECT_EQ(Get("zones/us-central1-a/instances/gpu-1").body["status"], "STAGING");
  clock_.Advance(std::chrono::seconds(20));
  EXPECT_EQ(Get("zones/us-central1-a/instances/gpu-1").body["status"], "RUNNING");

  // The same name again: 409 alreadyExists.
  auto again = BulkInsert("us-central1-a", {"gpu-1"}, "g2-standard-8");
  EXPECT_EQ(again.status, 409);
  EXPECT_EQ(Reason(again.body), "alreadyExists");
  // A bad name, an unknown zone.
  EXPECT_EQ(BulkInsert("us-central1-a", {"GPU_1"}, "g2-standard-8").status, 400);
  auto zone = BulkInsert("mars-north1-a", {"gpu-9"}, "g2-standard-8");
  EXPECT_EQ(zone.status, 400);
  EXPECT_EQ(Reason(zone.body), "invalid");
}

TEST_F(GcpEmulatorTest, NamePatternFillsCountAndMinCountIsAllOrNothing) {
  Emu("capacity:\n  - {machine_type: a2-highgpu-1g, zone: us-central1-b, limit: 2}\n");
  json body = {{"count", 3},
               {"namePattern", "a100-##"},
               {"instanceProperties", {{"machineType", "zones/us-central1-b/machineTypes/a2-highgpu-1g"}}}};
  auto all = Post("zones/us-central1-b/instances/bulkInsert", body);
  ASSERT_EQ(all.status, 200);
  clock_.Advance(std::chrono::seconds(2));
  auto op = Operation(all);
  ASSERT_EQ(op.body["status"], "DONE");
  ASSERT_TRUE(op.body.contains("error"));
  EXPECT_EQ(op.body["error"]["errors"][0]["code"], "ZONE_RESOURCE_POOL_EXHAUSTED");
  EXPECT_EQ(Get("zones/us-central1-b/instances/a100-01").status, 404) << "a failed bulkInsert keeps nothing";

  body["minCount"] = 1;
  auto some = Post("zones/us-central1-b/instances/bulkInsert", body);
  clock_.Advance(std::chrono::seconds(2));
  op = Operation(some);
  EXPECT_FALSE(op.body.contains("error"));
  EXPECT_EQ(op.body["instancesBulkInsertOperationMetadata"]["perLocationStatus"]["zones/us-central1-b"]
                   ["createdVmCount"],
            2);
  EXPECT_EQ(Get("zones/us-central1-b/instances/a100-01").status, 200);
  EXPECT_EQ(Get("zones/us-central1-b/instances/a100-02").status, 200);
  EXPECT_EQ(Get("zones/us-central1-b/instances/a100-03").status, 404);

  // int64 fields arrive as JSON strings from Google's clients; a wrong type is a 400, not a crash.
  json as_strings = {{"count", "1"},
                     {"minCount", "1"},
                     {"namePattern", "str-#"},
                     {"instanceProperties", {{"machineType", "g2-standard-4"}}}};
  EXPECT_EQ(Post("zones/us-central1-a/instances/bulkInsert", as_strings).status, 200);
  EXPECT_EQ(Get("zones/us-central1-a/instances/str-1").status, 200);
  as_strings["count"] = "many";
  EXPECT_EQ(Post("zones/us-central1-a/instances/bulkInsert", as_strings).status, 400);
  auto wrong_type =
      Post("zones/us-central1-a/instances/bulkInsert",
           {{"count", 1}, {"namePattern", "x-#"}, {"instanceProperties", {{"machineType", 7}}}});
  EXPECT_EQ(wrong_type.status, 400);
  EXPECT_EQ(Reason(wrong_type.body), "parseError");
  EXPECT_EQ(Call("POST", "zones/us-central1-a/instances/bulkInsert", "{not json").status, 400);
}

TEST_F(GcpEmulatorTest, RequestIdMakesACallIdempotent) {
  Emu();
  const std::string id = "?requestId=3f2504e0-4f89-11d3-9a0c-0305e82c3301";
  auto first = BulkInsert("us-central1-a", {"idem-1"}, "g2-standard-4", "STANDARD", id);
  ASSERT_EQ(first.status, 200);
  EXPECT_EQ(first.body["clientOperationId"], "3f2504e0-4f89-11d3-9a0c-0305e82c3301");
  auto second = BulkInsert("us-central1-a", {"idem-1"}, "g2-standard-4", "STANDARD", id);
  ASSERT_EQ(second.status, 200) << "a retry with the same requestId is not a conflict";
  EXPECT_EQ(second.body["name"], first.body["name"]);
  EXPECT_EQ(emu_->stats().created, 1);
  auto del1 =
      Call("DELETE", "zones/us-central1-a/instances/idem-1?requestId=9d2504e0-4f89-11d3-9a0c-0305e82c3301");
  auto del2 =
      Call("DELETE", "zones/us-central1-a/instances/idem-1?requestId=9d2504e0-4f89-11d3-9a0c-0305e82c3301");
  EXPECT_EQ(del1.body["name"], del2.body["name"]);
  EXPECT_EQ(BulkInsert("us-central1-a", {"x"}, "g2-standard-4", "STANDARD", "?requestId=not-a-uuid").status,
            400);
  EXPECT_EQ(BulkInsert("us-central1-a", {"x"}, "g2-standard-4", "STANDARD",
                       "?requestId=00000000-0000-0000-0000-000000000000")
                .status,
            400);
}

TEST_F(GcpEmulatorTest, DeleteStopsThenRemovesTheInstance) {
  Emu("delete_latency: 30s\n");
  BulkInsert("us-central1-a", {"del-1"}, "g2-standard-4");
  clock_.Advance(std::chrono::minutes(1));
  auto op = Call("DELETE", "zones/us-central1-a/instances/del-1");
  ASSERT_EQ(op.status, 200);
  EXPECT_EQ(op.body["operationType"], "delete");
  EXPECT_EQ(op.body["status"], "RUNNING");
  EXPECT_EQ(Get("zones/us-central1-a/instances/del-1").body["status"], "STOPPING");
  clock_.Advance(std::chrono::seconds(30));
  EXPECT_EQ(Operation(op).body["status"], "DONE");
  auto gone = Get("zones/us-central1-a/instances/del-1");
  EXPECT_EQ(gone.status, 404);
  EXPECT_EQ(Reason(gone.body), "notFound");
  EXPECT_EQ(gone.body["error"]["message"],
            "The resource 'projects/gpuscaler-test/zones/us-central1-a/instances/del-1' was not found");
  EXPECT_EQ(Call("DELETE", "zones/us-central1-a/instances/del-1").status, 404);
}

TEST_F(GcpEmulatorTest, AggregatedListFiltersOnLabelsAndPages) {
  Emu();
  BulkInsert("us-central1-a", {"p-1", "p-2"}, "g2-standard-4");
  BulkInsert("us-central1-c", {"p-3"}, "g2-standard-4");
  json other = {
      {"count", 1},
      {"perInstanceProperties", {{"q-1", json::object()}}},
      {"instanceProperties", {{"machineType", "g2-standard-4"}, {"labels", {{"gpuscaler-cluster", "dev"}}}}}};
  Post("zones/us-central1-a/instances/bulkInsert", other);

  auto all = Get("aggregated/instances?filter=labels.gpuscaler-cluster%20%3D%20%22prod%22");
  ASSERT_EQ(all.status, 200) << all.raw.body;
  EXPECT_EQ(all.body["kind"], "compute#instanceAggregatedList");
  EXPECT_EQ(all.body["items"]["zones/us-central1-a"]["instances"].size(), 2u);
  EXPECT_EQ(all.body["items"]["zones/us-central1-c"]["instances"].size(), 1u);
  EXPECT_EQ(all.body["items"]["zones/us-central1-b"]["warning"]["code"], "NO_RESULTS_ON_PAGE");
  EXPECT_FALSE(all.body.contains("nextPageToken"));

  auto both =
      Get("aggregated/instances?filter=" + std::string("(labels.gpuscaler-cluster%20%3D%20%22prod%22)%20") +
          "(labels.gpuscaler-pool%20!%3D%20%22l4%22)");
  ASSERT_EQ(both.status, 200);
  EXPECT_FALSE(both.body["items"]["zones/us-central1-a"].contains("instances"));
  auto dev = Get("aggregated/instances?filter=labels.gpuscaler-cluster%3Ddev%20AND%20name%3Dq-*");
  EXPECT_EQ(dev.body["items"]["zones/us-central1-a"]["instances"][0]["name"], "q-1");

  // Paging: one at a time, every instance once.
  std::vector<std::string> seen;
  std::string page = "aggregated/instances?maxResults=1&filter=labels.gpuscaler-cluster%3D%22prod%22";
  for (int k = 0; k < 10; ++k) {
    auto a = Get(page);
    ASSERT_EQ(a.status, 200);
    for (const auto& [scope, v] : a.body["items"].items()) {
      for (const auto& i : v.value("instances", json::array())) seen.push_back(i["name"]);
    }
    if (!a.body.contains("nextPageToken")) break;
    page = "aggregated/instances?maxResults=1&filter=labels.gpuscaler-cluster%3D%22prod%22&pageToken=" +
           a.body["nextPageToken"].get<std::string>();
  }
  EXPECT_EQ(seen, (std::vector<std::string>{"p-1", "p-2", "p-3"}));

  auto bad_filter = Get("aggregated/instances?filter=labels.x%20~%20y");
  EXPECT_EQ(bad_filter.status, 400);
  EXPECT_NE(bad_filter.body["error"]["message"].get<std::string>().find("filter"), std::string::npos);
  EXPECT_EQ(Get("aggregated/instances?pageToken=forged").status, 400);
  EXPECT_EQ(Get("aggregated/instances?maxResults=501").status, 400);
}

TEST_F(GcpEmulatorTest, OperationsListPagesAndWaitAnswersTheCurrentState) {
  Emu("operation_latency: 10s\n");
  auto a = BulkInsert("us-central1-a", {"o-1"}, "g2-standard-4");
  BulkInsert("us-central1-a", {"o-2"}, "g2-standard-4");
  auto page = Get("zones/us-central1-a/operations?maxResults=1");
  ASSERT_EQ(page.body["items"].size(), 1u);
  ASSERT_TRUE(page.body.contains("nextPageToken"));
  auto rest = Get("zones/us-central1-a/operations?maxResults=1&pageToken=" +
                  page.body["nextPageToken"].get<std::string>());
  ASSERT_EQ(rest.body["items"].size(), 1u);
  EXPECT_NE(rest.body["items"][0]["name"], page.body["items"][0]["name"]);
  const std::string wait = "zones/us-central1-a/operations/" + a.body["name"].get<std::string>() + "/wait";
  EXPECT_EQ(Post(wait).body["status"], "RUNNING");
  clock_.Advance(std::chrono::seconds(10));
  EXPECT_EQ(Post(wait).body["status"], "DONE");
  EXPECT_EQ(Get("zones/us-central1-a/operations/operation-nope").status, 404);
  EXPECT_EQ(Get("/compute/v1/projects/someone-else/aggregated/instances").status, 404);
}

TEST_F(GcpEmulatorTest, BlockingWaitReturnsWhenDoneOrAtTheCap) {
  Emu("operation_latency: 10s\n");
  std::chrono::milliseconds slept{0};
  bool keep_going = true;
  emu_->EnableBlockingWait(std::chrono::seconds(4), [&](std::chrono::milliseconds d) {
    slept += d;
    clock_.Advance(std::chrono::duration_cast<Seconds>(d + std::chrono::milliseconds(999)));  // whole seconds
    return keep_going;
  });
  auto a = BulkInsert("us-central1-a", {"w-1"}, "g2-standard-4");
  const std::string wait = "zones/us-central1-a/operations/" + a.body["name"].get<std::string>() + "/wait";
  auto capped = Post(wait);
  EXPECT_EQ(capped.body["status"], "RUNNING") << "the cap (4 s) ends the wait before the 10 s operation";
  EXPECT_GE(clock_.WallNow() - Start(), std::chrono::seconds(4));
  EXPECT_LT(clock_.WallNow() - Start(), std::chrono::seconds(10));
  EXPECT_EQ(Post(wait).body["status"], "RUNNING");  // 8 s
  auto done = Post(wait);
  EXPECT_EQ(done.body["status"], "DONE");
  EXPECT_GE(clock_.WallNow() - Start(), std::chrono::seconds(10));
  EXPECT_LT(clock_.WallNow() - Start(), std::chrono::seconds(12))
      << "the wait ends when the operation is DONE";
  EXPECT_GT(slept.count(), 0);
  // get never blocks; a stop (shutdown) ends a wait at once.
  auto b = BulkInsert("us-central1-a", {"w-2"}, "g2-standard-4");
  const WallTime before = clock_.WallNow();
  EXPECT_EQ(Get("zones/us-central1-a/operations/" + b.body["name"].get<std::string>()).body["status"],
            "RUNNING");
  EXPECT_EQ(clock_.WallNow(), before);
  keep_going = false;
  auto stopped = Post("zones/us-central1-a/operations/" + b.body["name"].get<std::string>() + "/wait");
  EXPECT_EQ(stopped.body["status"], "RUNNING");
  EXPECT_LE(clock_.WallNow() - before, std::chrono::seconds(1));
  EmulatorRequest r{"POST", "/compute/v1/projects/p/zones/z/operations/op/wait", {}, ""};
  EXPECT_TRUE(GcpEmulator::IsWait(r));
  r.method = "GET";
  EXPECT_FALSE(GcpEmulator::IsWait(r));
}

}  // namespace
}  // namespace gpuscaler::sim::gcp_emulator_instances_test
