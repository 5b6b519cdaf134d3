#include "gpuscaler/signals/rabbitmq.h"

#include <gtest/gtest.h>

#include "signals/test_files.h"

namespace gpuscaler::signals {
namespace {

TEST(RabbitMq, ParsesARealQueueObject) {
  GPUSCALER_READ_REFERENCE_OR_SKIP(body, "rabbitmq/examples/get-queue-decode-ocr.captured.json");
  Result<QueueStats> got = ParseQueueResponse(body);
  ASSERT_TRUE(got.ok()) << got.error().ToString();
  EXPECT_EQ(got->name, "decode-ocr");
  EXPECT_EQ(got->vhost, "/");
  EXPECT_EQ(got->state, "running");
  EXPECT_EQ(got->messages_ready, 0);
  EXPECT_EQ(got->messages_unacknowledged, 0);
  EXPECT_EQ(got->messages, 0);
  EXPECT_EQ(got->consumers, 1);
  EXPECT_FALSE(got->consumer_utilisation.has_value());  // null
  EXPECT_EQ(got->messages_ready_rate_per_s, 0.0);
  EXPECT_EQ(got->publish_rate_per_s, 0.0);
  EXPECT_EQ(got->ack_rate_per_s, 0.0);
  EXPECT_EQ(got->deliver_get_rate_per_s, 0.0);
}

TEST(RabbitMq, ParsesAQueueListFromAnOldServer) {
  GPUSCALER_READ_REFERENCE_OR_SKIP(body, "rabbitmq/examples/list-queues-rabbitmq-3.5.1.captured.json");
  Result<std::vector<QueueStats>> got = ParseQueueListResponse(body);
  ASSERT_TRUE(got.ok()) << got.error().ToString();
  ASSERT_EQ(got->size(), 4u);
  const QueueStats& q = (*got)[0];
  EXPECT_EQ(q.name, "myQueue1");
  EXPECT_EQ(q.state, "flow");
  EXPECT_EQ(q.messages_ready, 6);
  EXPECT_EQ(q.consumers, 0);
  EXPECT_FALSE(q.consumer_utilisation.has_value());  // "" on 3.5
  EXPECT_DOUBLE_EQ(*q.publish_rate_per_s, 0.4);
  int without_stats = 0;
  for (const QueueStats& s : *got) {
    if (!s.publish_rate_per_s.has_value()) ++without_stats;
  }
  EXPECT_GT(without_stats, 0);
}

TEST(RabbitMq, MissingCountsAreUnknownNotZero) {
  Result<QueueStats> got = ParseQueueResponse(R"({"name":"fresh","vhost":"/","state":"running"})");
  ASSERT_TRUE(got.ok());
  EXPECT_FALSE(got->messages_ready.has_value());
  EXPECT_FALSE(got->messages_unacknowledged.has_value());
  EXPECT_FALSE(got->consumers.has_value());
  EXPECT_FALSE(got->publish_rate_per_s.has_value());
}

TEST(RabbitMq, ParsesPagedListsAndQuorumQueues) {
  Result<std::vector<QueueStats>> got = ParseQueueListResponse(
      R"({"items":[{"name":"celery","vhost":"prod","type":"quorum","messages_ready":12,
          "messages_unacknowledged":3,"consumers":2,"consumer_utilisation":0.5}],
          "page":1,"page_size":100,"page_count":1,"item_count":1,"filtered_count":1,"total_count":1})");
  ASSERT_TRUE(got.ok()) << got.error().ToString();
  ASSERT_EQ(got->size(), 1u);
  EXPECT_EQ((*got)[0].type, "quorum");
  EXPECT_EQ((*got)[0].messages_ready, 12);
  EXPECT_EQ((*got)[0].consumer_utilisation, 0.5);
}

TEST(RabbitMq, ReportsErrorsByCategory) {
  struct Case {
    const char* body;
    ErrorCategory want;
    const char* message_part;
  } cases[] = {
      {R"({"error":"Object Not Found","reason":"Not Found"})", ErrorCategory::kNotFound, "Object Not Found"},
      {R"({"error":"not_authorised","reason":"Login failed"})", ErrorCategory::kInvalidInput, "Login failed"},
      {"", ErrorCategory::kInvalidInput, "not JSON"},
      {"[]", ErrorCategory::kInvalidInput, "not a JSON object"},
      {R"({"vhost":"/"})", ErrorCategory::kInvalidInput, "no name"},
      {R"({"name":"q","messages_ready":"5"})", ErrorCategory::kInvalidInput, "messages_ready"},
      {R"({"name":"q","messages_ready":-1})", ErrorCategory::kInvalidInput, "negative"},
      {R"({"name":"q","consumers":1.5})", ErrorCategory::kInvalidInput, "consumers"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.body);
    Result<QueueStats> got = ParseQueueResponse(c.body);
    ASSERT_FALSE(got.ok());
    EXPECT_EQ(got.error().category(), c.want);
    EXPECT_NE(got.error().message().find(c.message_part), std::string::npos) << got.error().message();
  }
  EXPECT_EQ(ParseQueueResponse(R"({"name":"q","messages_ready":7.0})")->messages_ready, 7);
  EXPECT_FALSE(ParseQueueListResponse(R"({"name":"q"})").ok());
}

TEST(RabbitMq, PercentEncodesVhostsAndQueueNames) {
  struct Case {
    const char* vhost;
    const char* queue;
    const char* want;
  } cases[] = {
      {"/", "celery", "/api/queues/%2F/celery"},
      {"prod", "render", "/api/queues/prod/render"},
      {"/team a", "q#1?x", "/api/queues/%2Fteam%20a/q%231%3Fx"},
      {"100%", "a/b", "/api/queues/100%25/a%2Fb"},
      {"ü", "a.b-c_d~e", "/api/queues/%C3%BC/a.b-c_d~e"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.want);
    EXPECT_EQ(QueuePath(c.vhost, c.queue), c.want);
  }
  EXPECT_EQ(QueueUrl("http://rabbit:15672//", "/", "celery"), "http://rabbit:15672/api/queues/%2F/celery");
}

}  // namespace
}  // namespace gpuscaler::signals
