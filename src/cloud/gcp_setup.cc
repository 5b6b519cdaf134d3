#include "gpuscaler/cloud/gcp_setup.h"

#include <thread>

#include "gpuscaler/cloud/net_transport.h"
#include "gpuscaler/model/text_file.h"

namespace gpuscaler::cloud {

Result<GcpStack> MakeGcpStack(const GcpSetupOptions& options, const Environment& env, const Clock& clock) {
  GcpStack s;
  const FileReader read = [](const std::string& path) { return ReadTextFile(path); };
  net::HttpClientOptions http;
  http.timeout = options.http_timeout;
  s.transport = std::make_unique<NetTransport>(http);
  Result<std::unique_ptr<TokenSource>> tokens = DefaultTokenSource(env, *s.transport, read);
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
  s.client = std::make_unique<GcpClient>(c, *s.transport, *s.tokens, clock,
                                         [](std::chrono::milliseconds d) { std::this_thread::sleep_for(d); });
  s.provider = std::make_unique<GcpProvider>(std::move(provider), *s.client);
  return s;
}

}  // namespace gpuscaler::cloud
