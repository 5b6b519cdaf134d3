// Parser for the RabbitMQ management API queue object
// (GET /api/queues/{vhost}/{name}, and the array or paged list from
// GET /api/queues[/{vhost}]), and the URL paths for it.
// Pure functions; thread-safe. Reference: docs/signals.md.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpuscaler/status.h"

namespace gpuscaler::signals {

// One queue's counters. A count the server did not send (a freshly declared
// queue may lack them, and stats may be disabled) is empty: unknown, not zero.
struct QueueStats {
  std::string name;
  std::string vhost;
  std::string state;  // "running", "idle", "flow", ...; may be empty
  std::string type;   // "classic" | "quorum" | "stream"; empty on old servers
  std::optional<int64_t> messages_ready;           // the backlog
  std::optional<int64_t> messages_unacknowledged;  // delivered, not yet acked (incl. prefetched)
  std::optional<int64_t> messages;                 // ready + unacknowledged
  std::optional<int64_t> consumers;
  std::optional<double> consumer_utilisation;  // 0..1; null or "" on some servers: empty
  // Per-second rates over the server's sample window, when present.
  std::optional<double> messages_ready_rate_per_s;
  std::optional<double> publish_rate_per_s;
  std::optional<double> deliver_get_rate_per_s;
  std::optional<double> ack_rate_per_s;
};

// Parses one queue object. A body like {"error":"Object Not Found",
// "reason":"Not Found"} is kNotFound with the reason; other error bodies
// kInvalidInput with the server's text; not JSON or not an object, or no
// "name": kInvalidInput. A count of the wrong type (string, negative,
// fractional) is kInvalidInput naming the field.
Result<QueueStats> ParseQueueResponse(std::string_view body);

// Parses GET /api/queues or /api/queues/{vhost}: a JSON array of queue
// objects or a paged answer {"items":[…],…}. Errors as above, the first
// bad queue failing the whole list.
Result<std::vector<QueueStats>> ParseQueueListResponse(std::string_view body);

// "/api/queues/%2F/celery" for vhost "/" and queue "celery": each name
// percent-encoded as one path segment (net::PercentEncode).
std::string QueuePath(std::string_view vhost, std::string_view queue);

// base_url (trailing slashes dropped) + QueuePath(vhost, queue):
// "http://rabbit:15672/api/queues/%2F/celery".
std::string QueueUrl(std::string_view base_url, std::string_view vhost, std::string_view queue);

}  // namespace gpuscaler::signals
