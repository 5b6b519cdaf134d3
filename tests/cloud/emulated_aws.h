// For the tests that run AwsProvider against the cloud emulator in process
// (the emulator's handler behind the Transport seam): no sockets, no
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
