// Building the Azure provider stack from configuration and the process
// environment, for the daemon's setup: the HTTP transport, the Entra ID
// token source, the ARM client and the AzureProvider.
#pragma once

#include <memory>
#include <string>

#include "gpuscaler/cloud/azure_client.h"
#include "gpuscaler/cloud/azure_credentials.h"
#include "gpuscaler/cloud/azure_provider.h"
#include "gpuscaler/cloud/client_setup.h"
#include "gpuscaler/cloud/credentials.h"
#include "gpuscaler/cloud/transport.h"
#include "gpuscaler/model/clock.h"

namespace gpuscaler::cloud {

struct AzureSetupOptions : ClientSetupOptions {
  // The ARM base URL; empty: kArmEndpoint (an emulator's otherwise).
  std::string endpoint;
  // https: a PEM file of CAs to trust instead of the system's (an
  // emulator's test CA); it covers ARM, Entra ID and IMDS alike.
  std::string ca_file;
  AzureCredentialOptions credentials;
  std::chrono::seconds operation_timeout{600};
  std::chrono::milliseconds poll_interval{5000};
  // subscription_id empty: AZURE_SUBSCRIPTION_ID.
  AzureProviderOptions provider;
};

// Owns everything the provider uses; keep it alive as long as the provider.
struct AzureStack {
  std::unique_ptr<Transport> transport;
  std::unique_ptr<TokenSource> tokens;
  std::unique_ptr<AzureClient> client;
  std::unique_ptr<AzureProvider> provider;
};

// kConfig when the subscription, resource group, cluster name (or, for the
// AKS driver, the AKS cluster) is missing or a credential kind lacks what
// it needs; kAuth when a secret or certificate file cannot be read. Tokens
// are fetched on the first call.
Result<AzureStack> MakeAzureStack(const AzureSetupOptions& options, const Environment& env, const Clock& clock);

}  // namespace gpuscaler::cloud
