// Building the AWS provider stack from configuration and the process
// environment, for main() / the daemon's setup: the HTTP transport, the
// credentials chain, the signed client and the AwsProvider.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gpuscaler/cloud/aws_client.h"
#include "gpuscaler/cloud/aws_provider.h"
#include "gpuscaler/cloud/client_setup.h"
#include "gpuscaler/cloud/credentials.h"
#include "gpuscaler/cloud/transport.h"
#include "gpuscaler/model/clock.h"

namespace gpuscaler::cloud {

struct AwsSetupOptions : ClientSetupOptions {
  std::string region;        // empty: from the environment / config file
  std::string endpoint_url;  // "--endpoint-url" for every service (emulator, LocalStack)
  AwsProviderOptions provider;
};

// Owns everything the provider uses; keep it alive as long as the provider.
struct AwsStack {
  std::unique_ptr<Transport> transport;
  std::unique_ptr<CredentialsProvider> credentials;
  std::unique_ptr<AwsClient> client;
  std::unique_ptr<AwsProvider> provider;
  std::string region;
};

// kConfig when no region can be found. Credentials are looked up lazily, on
// the first call (so a missing key shows as kAuth errors, not a boot failure).
Result<AwsStack> MakeAwsStack(const AwsSetupOptions& options, const Environment& env, const Clock& clock);

// The process environment as a map (for main(); nothing below it reads getenv).
Environment ProcessEnvironment();

}  // namespace gpuscaler::cloud
