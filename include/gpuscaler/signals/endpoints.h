// Where the signal sources are and how to reach them: the endpoints the
// SignalCollector (collector.h) reads, which the daemon's configuration
// (daemon/config.h) holds as they are read from its file. Value types.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

namespace gpuscaler::signals {

struct PrometheusEndpoint {
  std::string url;  // e.g. http://prometheus:9090; empty: not configured
  // Authorization: Bearer <file contents> when set; else basic auth when
  // username is set (password from password_file).
  std::string bearer_token_file;
  std::string username;
  std::string password_file;
  std::string ca_file;  // https: trusted CAs (PEM); empty: the system store
  bool insecure_skip_verify = false;
};

struct RabbitMqEndpoint {
  std::string url;  // management API base, e.g. http://rabbitmq:15672; empty: not configured
  // The user: `username`, else the contents of username_file, else the
  // variable username_env. The password: password_file, else password_env.
  std::string username;
  std::string username_file;
  std::string username_env;
  std::string password_file;
  std::string password_env;
};

struct DcgmEndpoint {
  std::vector<std::string> urls;  // exporters scraped directly, e.g. http://node:9400/metrics
};

struct SignalEndpoints {
  PrometheusEndpoint prometheus;
  RabbitMqEndpoint rabbitmq;
  DcgmEndpoint dcgm;
  std::chrono::milliseconds timeout{3000};  // per request: connect + write + read
  size_t max_body_bytes = 16 << 20;
};

}  // namespace gpuscaler::signals
