// For the tests that run AwsProvider against the cloud emulator, mostly in
// process (the emulator's handler behind the Transport seam): no sockets, no
// sleeping, a ManualClock.
#pragma once

#include <chrono>
#include <string>
#include <utility>

#include "gpuscaler/cloud/aws_provider.h"
#include "sim/cloud_emulator/emulator.h"

namespace gpuscaler::cloud::emulated {

inline WallTime Start() {
  WallTime t;
  ParseRfc3339("2026-12-02T10:00:00Z", &t);
  return t;
}

inline Credentials Creds(std::string secret = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY") {
  Credentials c;
  c.access_key_id = "AKIDEXAMPLE";
  c.secret_access_key = std::move(secret);
  return c;
}

inline Offering Off(std::string type, std::string zone, CapacityType c, double price = 1.0) {
  Offering o;
  o.instance_type = std::move(type);
  o.region = "us-east-1";
  o.zone = std::move(zone);
  o.capacity_type = c;
  o.usd_per_hour = price;
  return o;
}

// A launch of `count` nodes of pool "train": `type` on demand in us-east-1a,
// then us-east-1b, at $1.006/h; through Auto Scaling group `group` unless
// it is empty.
inline LaunchRequest TrainRequest(std::string group, int count, std::string token, std::string type = "g5.xlarge") {
  LaunchRequest r;
  r.pool = "train";
  r.offerings = {Off(type, "us-east-1a", CapacityType::kOnDemand, 1.006),
                 Off(type, "us-east-1b", CapacityType::kOnDemand, 1.006)};
  r.count = count;
  r.tags = {{kIntentTag, token}};
  r.idempotency_token = std::move(token);
  r.auto_scaling_group = std::move(group);
  return r;
}

inline AwsProviderOptions ProviderOptions(std::string cluster_name) {
  AwsProviderOptions po;
  po.cluster_name = std::move(cluster_name);
  po.launch_template.name = "gpu-nodes";
  po.interruption_queue_url = "http://127.0.0.1:4566/123456789012/gpuscaler-interruptions";
  return po;
}

// One installation: its signed client and its provider, talking to `emulator`.
struct Installation {
  Installation(sim::CloudEmulator& emulator, const Clock& clock, AwsProviderOptions options,
               Credentials credentials = Creds(), SleepFn sleep = [](std::chrono::milliseconds) {})
      : transport(emulator),
        credentials(std::move(credentials), "test"),
        client(ClientOptions(), transport, this->credentials, clock, std::move(sleep)),
        provider(std::move(options), client, clock) {}

  static AwsClientOptions ClientOptions() {
    AwsClientOptions o;
    o.endpoint_url = "http://127.0.0.1:4566/";
    o.seed = 42;
    return o;
  }

  sim::EmulatorTransport transport;
  StaticCredentialsProvider credentials;
  AwsClient client;
  AwsProvider provider;
};

}  // namespace gpuscaler::cloud::emulated
