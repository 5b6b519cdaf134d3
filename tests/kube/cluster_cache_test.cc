// The list/watch cache of the cluster against the fake API server: a paged
// list then the watch (bookmarks included), a dropped watch resumed from the
// last version, frames of the wrong shape skipped, "410 Gone" in the stream or
// as the status answered with a fresh list, and an unreachable server retried
// with backoff, never synced.
#include "gpuscaler/kube/cluster_cache.h"

#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "../fakes/fake_clock.h"
#include "gpuscaler/kube/objects.h"
#include "gpuscaler/kube/workload.h"
#include "kube/kube_fixtures.h"

namespace gpuscaler::kube::cluster_cache_test {
namespace {

using nlohmann::json;
using testing::FakeApiServer;

class ClusterCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::optional<std::string> pods = testing::ReadReference("examples/podlist-pending-gpu.assembled.json");
    std::optional<std::string> nodes = testing::ReadReference("examples/nodelist-gpu.assembled.json");
    if (!pods || !nodes) GTEST_SKIP() << "../shared/reference/kubernetes absent";
    pod_ = json::parse(*pods)["items"][0];
    const json node_list = json::parse(*nodes);
    for (const json& n : node_list["items"]) server_.Put("nodes", n);
    server_.Put("pods", pod_);
    options_.initial_backoff = std::chrono::milliseconds(20);
    options_.max_backoff = std::chrono::milliseconds(200);
  }

  json PodNamed(const std::string& name, const std::string& node) {
    json p = pod_;
    p["metadata"]["name"] = name;
    p["metadata"]["uid"] = "uid-" + name;
    if (!node.empty()) {
      p["spec"]["nodeName"] = node;
      p["status"] = {{"phase", "Running"}, {"conditions", {{{"type", "PodScheduled"}, {"status", "True"}}}}};
    }
    return p;
  }

  static size_t PendingCount(const ClusterView& v) {
    size_t n = 0;
    for (const PodInfo& p : v.pods) n += IsPendingGpuPod(p) ? 1 : 0;
    return n;
  }

  FakeApiServer server_;
  testing::FakeClock clock_;
  ClusterCacheOptions options_;
  json pod_;
};

constexpr std::chrono::seconds kWait{20};
// The watches the cache opens on this server: pods, nodes and PodTemplates
// (the custom resources it does not serve are not watched).
constexpr int kWatchedKinds = 3;

TEST_F(ClusterCacheTest, ListsThenFollowsTheWatchIncludingBookmarks) {
  ApiClient client(testing::FakeClusterConfig(server_));
  options_.list_page_size = 1;  // two pages of nodes: continue tokens
  ClusterCache cache(client, clock_, options_);
  cache.Start();
  ASSERT_TRUE(cache.WaitSynced(kWait));
  ClusterView v = cache.View();
  EXPECT_EQ(v.nodes.size(), 2u) << cache.node_stats().last_error << " lists " << cache.node_stats().lists;
  EXPECT_EQ(PendingCount(v), 1u);
  EXPECT_GE(server_.Count("GET", "/api/v1/nodes?limit=1&continue="), 1);

  server_.Put("pods", PodNamed("second", ""));
  ASSERT_TRUE(cache.WaitUntil([](const ClusterView& v) { return PendingCount(v) == 2; }, kWait));
  // The recorded pod gets scheduled: it is no longer demand.
  server_.Put("pods", PodNamed(pod_["metadata"]["name"], "ip-10-0-12-34.us-west-2.compute.internal"));
  ASSERT_TRUE(cache.WaitUntil([](const ClusterView& v) { return PendingCount(v) == 1; }, kWait));
  server_.Delete("pods", "default/second");
  ASSERT_TRUE(cache.WaitUntil([](const ClusterView& v) { return PendingCount(v) == 0 && v.pods.size() == 1; }, kWait));

  // A bookmark moves the version the next watch starts from, nothing else.
  server_.Bookmark();
  const std::string want = std::to_string(server_.resource_version());
  ASSERT_TRUE(cache.WaitUntil([&](const ClusterView&) { return cache.pod_stats().resource_version == want; }, kWait));
  EXPECT_GE(cache.pod_stats().bookmarks, 1);
  EXPECT_EQ(cache.View().pods.size(), 1u);
  // Every watch asked for bookmarks and started from a version.
  for (const auto& c : server_.calls()) {
    if (c.target.find("watch=1") == std::string::npos) continue;
    EXPECT_NE(c.target.find("allowWatchBookmarks=true"), std::string::npos) << c.target;
    EXPECT_NE(c.target.find("resourceVersion="), std::string::npos) << c.target;
  }
  cache.Stop();
}

TEST_F(ClusterCacheTest, ADroppedWatchResumesFromTheLastVersionWithoutRelisting) {
  ApiClient client(testing::FakeClusterConfig(server_));
  ClusterCache cache(client, clock_, options_);
  cache.Start();
  ASSERT_TRUE(cache.WaitSynced(kWait));
  ASSERT_TRUE(server_.WaitForWatches(kWatchedKinds, kWait));
  const int64_t lists = cache.pod_stats().lists;
  server_.EndWatches();
  ASSERT_TRUE(cache.WaitUntil([&](const ClusterView&) { return cache.pod_stats().watches >= 2; }, kWait));
  server_.Put("pods", PodNamed("after-drop", ""));
  ASSERT_TRUE(cache.WaitUntil([](const ClusterView& v) { return PendingCount(v) == 2; }, kWait));
  EXPECT_EQ(cache.pod_stats().lists, lists);
  EXPECT_GE(cache.pod_stats().watches, 2);
  cache.Stop();
}

// Event frames of every JSON shape but the right one: each is skipped and
// the watch goes on (the reads run on the watch thread, where a throw would
// end the process), and the next real event still lands.
TEST_F(ClusterCacheTest, WatchFramesOfTheWrongShapeAreSkippedAndTheWatchGoesOn) {
  ApiClient client(testing::FakeClusterConfig(server_));
  ClusterCache cache(client, clock_, options_);
  cache.Start();
  ASSERT_TRUE(cache.WaitSynced(kWait));
  ASSERT_TRUE(server_.WaitForWatches(kWatchedKinds, kWait));
  const int64_t watches = cache.pod_stats().watches;
  for (const char* line : {R"([1,2])", R"(5)", R"("ADDED")", R"({"type":5})", R"({"type":"ADDED","object":[]})",
                           R"({"type":"ADDED","object":{"metadata":[]}})",
                           R"({"type":"MODIFIED","object":{"metadata":{"name":7,"namespace":{},"resourceVersion":[]}}})",
                           R"({"type":"BOOKMARK","object":"x"})", R"({"type":"DELETED","object":null})",
                           R"({"type":"ADDED","object":{"metadata":{"name":"p","namespace":"x"},"spec":7}})",
                           R"({"type":"ADDED","object":{"metadata":{"name":"q","ownerReferences":[{"controller":"yes"}]}}})"}) {
    server_.SendRawWatchLine("pods", line);
  }
  server_.Put("pods", PodNamed("after-junk", ""));
  ASSERT_TRUE(cache.WaitUntil([](const ClusterView& v) { return PendingCount(v) == 2; }, kWait));
  EXPECT_EQ(cache.pod_stats().watches, watches);  // no reconnect: the same watch carried on
  cache.Stop();
}

class GoneTest : public ClusterCacheTest, public ::testing::WithParamInterface<bool> {};

// History compacted past the cache's version: "410 Gone" (in the stream, or
// as the HTTP status) drops the cache and lists again, which also catches a
// change made while the watch was down.
TEST_P(GoneTest, ExpiredVersionRelistsAndCatchesUp) {
  server_.gone_as_http_status = GetParam();
  ApiClient client(testing::FakeClusterConfig(server_));
  ClusterCache cache(client, clock_, options_);
  cache.Start();
  ASSERT_TRUE(cache.WaitSynced(kWait));
  ASSERT_TRUE(server_.WaitForWatches(kWatchedKinds, kWait));
  // Deleted and re-added while compacted: only a fresh list shows the new pod.
  server_.CompactHistory();
  server_.Delete("pods", "default/" + pod_["metadata"]["name"].get<std::string>());
  server_.Put("pods", PodNamed("while-gone", ""));
  server_.CompactHistory();
  server_.EndWatches();
  ASSERT_TRUE(cache.WaitUntil(
      [](const ClusterView& v) { return v.pods.size() == 1 && v.pods[0].name == "while-gone"; }, kWait));
  EXPECT_GE(cache.pod_stats().relists_after_gone, 1);
  EXPECT_GE(cache.pod_stats().lists, 2);
  cache.Stop();
}

INSTANTIATE_TEST_SUITE_P(InStreamAndAsStatus, GoneTest, ::testing::Values(false, true));

TEST_F(ClusterCacheTest, AnUnreachableServerIsRetriedWithBackoffAndNeverSynced) {
  kube::ClusterConfig config = testing::FakeClusterConfig(server_);
  testing::FixtureHttpServer closed([](const testing::FixtureRequest&) { return testing::FixtureResponse{}; });
  config.server = closed.url();
  closed.Stop();
  ApiClient client(config, std::chrono::milliseconds(500));
  ClusterCache cache(client, clock_, options_);
  cache.Start();
  EXPECT_TRUE(cache.WaitUntil([&](const ClusterView&) { return cache.pod_stats().failures >= 3; }, kWait));
  EXPECT_FALSE(cache.View().synced);
  EXPECT_FALSE(cache.FreshAt().has_value());
  cache.Stop();
}

}  // namespace
}  // namespace gpuscaler::kube::cluster_cache_test
