// Building the GCP provider stack from configuration and the process
// environment, for the daemon's setup: the HTTP transport, the Application
// Default Credentials, the Compute Engine client and the GcpProvider.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "gpuscaler/cloud/client_setup.h"
#include "gpuscaler/cloud/credentials.h"
#include "gpuscaler/cloud/gcp_client.h"
#include "gpuscaler/cloud/gcp_credentials.h"
#include "gpuscaler/cloud/gcp_provider.h"
#include "gpuscaler/cloud/transport.h"
#include "gpuscaler/model/clock.h"

namespace gpuscaler::cloud {

struct GcpSetupOptions : ClientSetupOptions {
  // Empty: kComputeEndpoint.
  std::string endpoint;
  // The Cloud Billing v1 base URL, used when provider.billing_catalog is
  // enabled. Empty: kCloudBillingEndpoint, or, when `endpoint` names another
  // server (an emulator), that server's "/v1/" (scheme, host and port of
  // `endpoint`).
  std::string billing_endpoint;
  // `project` empty: the credentials file's project_id, else
  // GOOGLE_CLOUD_PROJECT, else CLOUDSDK_CORE_PROJECT.
  GcpProviderOptions provider;
};

// Owns everything the provider uses; keep it alive as long as the provider.
struct GcpStack {
  std::unique_ptr<Transport> transport;
  std::unique_ptr<TokenSource> tokens;
  std::unique_ptr<GcpClient> client;
  std::unique_ptr<GcpClient> billing_client;  // null when the billing catalog is disabled
  std::unique_ptr<GcpProvider> provider;
  std::string project;
};

// kConfig when no project can be found, kAuth when a credentials file named
// by GOOGLE_APPLICATION_CREDENTIALS cannot be used. Tokens themselves are
// fetched on the first call (a rejected key shows as kAuth errors then);
// with the billing catalog enabled they carry the scope
// kCloudBillingReadonlyScope besides kComputeScope.
Result<GcpStack> MakeGcpStack(const GcpSetupOptions& options, const Environment& env, const Clock& clock);

}  // namespace gpuscaler::cloud
