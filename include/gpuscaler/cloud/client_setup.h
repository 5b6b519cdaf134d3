// What the AWS and GCP stack setups (aws_setup.h, gcp_setup.h) share: how
// their API clients talk (HTTP timeout, retries, jitter seed), and the real
// transport and sleep they build the clients with.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>

#include "gpuscaler/cloud/retry.h"
#include "gpuscaler/cloud/transport.h"

namespace gpuscaler::cloud {

struct ClientSetupOptions {
  std::chrono::milliseconds http_timeout{10000};
  RetryPolicy retry;
  uint64_t seed = 1;  // jitter
};

// A NetTransport whose requests time out after options.http_timeout.
std::unique_ptr<Transport> MakeNetTransport(const ClientSetupOptions& options);

// A SleepFn for real clients: std::this_thread::sleep_for.
void SleepOnThisThread(std::chrono::milliseconds d);

}  // namespace gpuscaler::cloud
