#include "gpuscaler/cloud/gcp_setup.h"

#include "gpuscaler/cloud/gcp_billing_catalog.h"
#include "gpuscaler/model/text_file.h"

namespace gpuscaler::cloud {
namespace {

std::string BillingEndpoint(const GcpSetupOptions& options) {
  if (!options.billing_endpoint.empty()) return options.billing_endpoint;
  if (options.endpoint.empty() || options.endpoint == kComputeEndpoint) return kCloudBillingEndpoint;
  // An emulator that serves Compute Engine serves the catalog beside it.
  const size_t scheme = options.endpoint.find("://");
  const size_t path =
      scheme == std::string::npos ? std::string::npos : options.endpoint.find('/', scheme + 3);
  return options.endpoint.substr(0, path) + "/v1/";
}

}  // namespace

Result<GcpStack> MakeGcpStack(const GcpSetupOptions& options, const Environment& env, const Clock& clock) {
  GcpStack s;
  const FileReader read = [](const std::string& path) { return ReadTextFile(path); };
  s.transport = MakeNetTransport(options);
  const bool billing = options.provider.billing_catalog.enabled;
  std::string scope = kComputeScope;
  if (billing) scope += std::string(" ") + kCloudBillingReadonlyScope;
  Result<std::unique_ptr<TokenSource>> tokens = DefaultTokenSource(env, *s.transport, read, scope);
  if (!tokens) return tokens.error();
  s.tokens = std::move(tokens).value();

  GcpProviderOptions provider = options.provider;
  if (provider.project.empty()) provider.project = ProjectFromCredentials(env, read);
  for (const char* key : {"GOOGLE_CLOUD_PROJECT", "CLOUDSDK_CORE_PROJECT"}) {
    if (!provider.project.empty()) break;
    if (auto it = env.find(key); it != env.end()) provider.project = it->second;
  }
  if (provider.project.empty()) {
    return Error::Config(
        "gcp: no project (set cloud.gcp.project, use a service-account key that names one, or "
        "GOOGLE_CLOUD_PROJECT)");
  }
  if (provider.cluster_name.empty()) return Error::Config("gcp: cluster_name is required");
  s.project = provider.project;

  GcpClientOptions c;
  c.endpoint = options.endpoint;
  c.retry = options.retry;
  c.seed = options.seed;
  s.client = std::make_unique<GcpClient>(c, *s.transport, *s.tokens, clock, SleepOnThisThread);
  if (billing) {
    GcpClientOptions b = c;
    b.endpoint = BillingEndpoint(options);
    b.seed = options.seed + 1;
    s.billing_client = std::make_unique<GcpClient>(b, *s.transport, *s.tokens, clock, SleepOnThisThread);
  }
  s.provider = std::make_unique<GcpProvider>(std::move(provider), *s.client, s.billing_client.get());
  return s;
}

}  // namespace gpuscaler::cloud
