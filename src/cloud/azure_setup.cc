#include "gpuscaler/cloud/azure_setup.h"

#include "gpuscaler/cloud/net_transport.h"
#include "gpuscaler/model/text_file.h"

namespace gpuscaler::cloud {

Result<AzureStack> MakeAzureStack(const AzureSetupOptions& options, const Environment& env, const Clock& clock) {
  AzureProviderOptions provider = options.provider;
  if (provider.subscription_id.empty()) {
    if (auto it = env.find("AZURE_SUBSCRIPTION_ID"); it != env.end()) provider.subscription_id = it->second;
  }
  if (provider.subscription_id.empty())
    return Error::Config("azure: no subscription (set cloud.azure.subscription_id or AZURE_SUBSCRIPTION_ID)");
  if (provider.resource_group.empty()) return Error::Config("azure: resource_group is required");
  if (provider.cluster_name.empty()) return Error::Config("azure: cluster_name is required");
  if (provider.driver == AzureDriver::kAks && provider.aks_cluster.empty())
    return Error::Config("azure: driver aks needs aks_cluster (the managed cluster's name)");
  AzureStack s;
  if (options.ca_file.empty()) {
    s.transport = MakeNetTransport(options);
  } else {
    net::HttpClientOptions http;
    http.timeout = options.http_timeout;
    http.ca_file = options.ca_file;
    s.transport = std::make_unique<NetTransport>(http);
  }
  const FileReader read = [](const std::string& path) { return ReadTextFile(path); };
  Result<std::unique_ptr<TokenSource>> tokens = MakeAzureTokenSource(options.credentials, env, *s.transport, read);
  if (!tokens) return tokens.error();
  s.tokens = std::move(tokens).value();
  AzureClientOptions c;
  if (!options.endpoint.empty()) c.endpoint = options.endpoint;
  c.retry = options.retry;
  c.seed = options.seed;
  c.operation_timeout = options.operation_timeout;
  c.poll_interval = options.poll_interval;
  s.client = std::make_unique<AzureClient>(c, *s.transport, *s.tokens, clock, SleepOnThisThread);
  s.provider = std::make_unique<AzureProvider>(std::move(provider), *s.client);
  return s;
}

}  // namespace gpuscaler::cloud
