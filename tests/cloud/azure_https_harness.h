// The Azure emulator served over real HTTPS for tests: an AzureEmulator on
// a ManualClock behind HttpServer with a self-signed TLS identity (made per
// test), on a loopback port with its own I/O thread, and a client
// (net::Fetch) that trusts exactly that certificate.
#pragma once

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "gpuscaler/model/clock.h"
#include "gpuscaler/model/time.h"
#include "gpuscaler/net/http_client.h"
#include "gpuscaler/server/http_server.h"
#include "gpuscaler/server/router.h"
#include "gpuscaler/server/tls_identity.h"
#include "sim/cloud_emulator/azure_emulator.h"

namespace gpuscaler::azure_https_testing {

inline WallTime AzureTestStart() {
  WallTime t;
  EXPECT_TRUE(ParseRfc3339("2026-12-07T10:00:00Z", &t));
  return t;
}

class AzureHttpsTest : public ::testing::Test {
 protected:
  static constexpr const char* kSub = "00000000-0000-0000-0000-000000000001";
  static constexpr const char* kTenant = "00000000-0000-0000-0000-0000000000aa";
  static constexpr const char* kToken = "test-token";

  AzureHttpsTest() : clock_(AzureTestStart()) {}
  ~AzureHttpsTest() override { StopServer(); }

  // Starts the emulator with `yaml` (after an always-valid test token).
  void StartEmulator(const std::string& yaml) {
    auto scenario = sim::ParseAzureScenario("access_tokens: [test-token]\n" + yaml);
    ASSERT_TRUE(scenario.ok()) << scenario.error().ToString();
    emu_ = std::make_unique<sim::AzureEmulator>(std::move(*scenario), clock_);
    auto identity = server::MakeSelfSignedTlsIdentity({"localhost"}, {"127.0.0.1"});
    ASSERT_TRUE(identity.ok()) << identity.error().ToString();
    ca_pem_ = identity->certificate_pem;
    server::HttpServerOptions options;
    options.host = "127.0.0.1";
    options.port = 0;
    options.tls_certificate_pem = identity->certificate_pem;
    options.tls_private_key_pem = identity->private_key_pem;
    server::Router router;
    auto handler = [this](const server::HttpRequest& r) {
      sim::EmulatorResponse out = emu_->Handle(sim::EmulatorRequest{r.method, r.target, r.headers, r.body});
      server::HttpResponse resp;
      resp.status = out.status;
      resp.content_type = out.content_type;
      resp.body = std::move(out.body);
      resp.headers = std::move(out.headers);
      return resp;
    };
    for (const char* m : {"GET", "PUT", "PATCH", "POST", "DELETE"}) router.Add(m, "/", true, false, handler);
    http_ = std::make_unique<server::HttpServer>(io_, options, std::move(router));
    ASSERT_TRUE(http_->Start().ok());
    thread_ = std::thread([this] { io_.run(); });
  }

  void StopServer() {
    if (!thread_.joinable()) return;
    boost::asio::post(io_, [this] {
      http_->Stop();
      io_.stop();
    });
    thread_.join();
  }

  std::string Base() const { return "https://127.0.0.1:" + std::to_string(http_->port()); }

  struct Answer {
    int status = 0;
    nlohmann::json body;
    net::HttpResponse raw;
    std::string Code() const { return body.is_object() ? body["error"].value("code", "") : ""; }
  };

  // One HTTPS request to `path` (a full URL is taken as is), with the test
  // token unless `token` says otherwise ("" : none).
  Answer Call(const std::string& method, const std::string& path, const std::string& body = "",
              const std::string& token = kToken,
              std::vector<std::pair<std::string, std::string>> headers = {}) {
    net::HttpRequest r;
    r.method = method;
    r.url = path.rfind("https://", 0) == 0 ? path : Base() + path;
    r.headers = std::move(headers);
    if (!token.empty()) r.headers.emplace_back("Authorization", "Bearer " + token);
    if (!body.empty()) r.headers.emplace_back("Content-Type", "application/json");
    r.body = body;
    net::HttpClientOptions o;
    o.ca_pem = ca_pem_;
    auto got = net::Fetch(r, o);
    EXPECT_TRUE(got.ok()) << (got.ok() ? "" : got.error().ToString());
    Answer a;
    if (!got.ok()) return a;
    a.raw = *got;
    a.status = got->status;
    a.body = nlohmann::json::parse(got->body, nullptr, false);
    return a;
  }
  Answer Get(const std::string& path) { return Call("GET", path); }

  // ARM paths of the scenario's subscription.
  static std::string Vmss(const std::string& rg, const std::string& name, const std::string& api = "2026-04-01") {
    return std::string("/subscriptions/") + kSub + "/resourceGroups/" + rg +
           "/providers/Microsoft.Compute/virtualMachineScaleSets/" + name + "?api-version=" + api;
  }
  static std::string VmssSub(const std::string& rg, const std::string& name, const std::string& rest,
                             const std::string& query = "") {
    return std::string("/subscriptions/") + kSub + "/resourceGroups/" + rg +
           "/providers/Microsoft.Compute/virtualMachineScaleSets/" + name + "/" + rest +
           "?api-version=2026-04-01" + query;
  }
  static std::string Pool(const std::string& rg, const std::string& cluster, const std::string& rest) {
    return std::string("/subscriptions/") + kSub + "/resourceGroups/" + rg +
           "/providers/Microsoft.ContainerService/managedClusters/" + cluster + "/agentPools" + rest +
           "?api-version=2026-06-01";
  }

  ManualClock clock_;
  std::unique_ptr<sim::AzureEmulator> emu_;
  boost::asio::io_context io_{1};
  std::unique_ptr<server::HttpServer> http_;
  std::thread thread_;
  std::string ca_pem_;
};

}  // namespace gpuscaler::azure_https_testing
