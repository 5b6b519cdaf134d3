#include "gpuscaler/cloud/net_transport.h"

#include <chrono>
#include <thread>

#include "gpuscaler/cloud/aws_setup.h"
#include "gpuscaler/model/text_file.h"

extern char** environ;

namespace gpuscaler::cloud {

Result<TransportResponse> NetTransport::Send(const TransportRequest& request) {
  net::HttpRequest r;
  r.method = request.method;
  r.url = request.url;
  r.headers = request.headers;
  r.body = request.body;
  auto resp = net::Fetch(r, options_);
  if (!resp.ok()) return resp.error();
  TransportResponse out;
  out.status = resp->status;
  out.headers = std::move(resp->headers);
  out.body = std::move(resp->body);
  return out;
}

std::unique_ptr<Transport> MakeNetTransport(const ClientSetupOptions& options) {
  net::HttpClientOptions http;
  http.timeout = options.http_timeout;
  return std::make_unique<NetTransport>(http);
}

void SleepOnThisThread(std::chrono::milliseconds d) { std::this_thread::sleep_for(d); }

Environment ProcessEnvironment() {
  Environment env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string kv = *e;
    const size_t eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return env;
}

Result<AwsStack> MakeAwsStack(const AwsSetupOptions& options, const Environment& env, const Clock& clock) {
  AwsStack s;
  FileReader read = [](const std::string& path) { return ReadTextFile(path); };
  s.region = options.region;
  if (s.region.empty()) s.region = RegionFor(env, read).value_or("");
  if (s.region.empty()) {
    return Error::Config("aws: no region (set it in the config, AWS_REGION or the profile's region)");
  }
  s.transport = MakeNetTransport(options);
  s.credentials = DefaultCredentialsChain(env, *s.transport, read);
  AwsClientOptions c;
  c.region = s.region;
  c.endpoint_url = options.endpoint_url;
  if (c.endpoint_url.empty()) {
    auto it = env.find("AWS_ENDPOINT_URL");
    if (it != env.end()) c.endpoint_url = it->second;
  }
  c.retry = options.retry;
  c.seed = options.seed;
  s.client = std::make_unique<AwsClient>(c, *s.transport, *s.credentials, clock, SleepOnThisThread);
  s.provider = std::make_unique<AwsProvider>(options.provider, *s.client, clock);
  return s;
}

}  // namespace gpuscaler::cloud
