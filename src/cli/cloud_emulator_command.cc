// `gpuscaler cloud-emulator [--listen 127.0.0.1:PORT] [--scenario FILE] [--port-file FILE]
// [--provider aws|gcp|azure] [--tls-cert FILE --tls-key FILE] [--tls-ca-out FILE]`:
// serves the EC2 / Auto Scaling / SQS emulator (sim/cloud_emulator/,
// docs/aws.md) or, with `--provider gcp` or a scenario saying `provider:
// gcp`, the Compute Engine / OAuth / metadata-server emulator
// (docs/gcp-emulator.md) over HTTP, or with `azure` the Azure Resource
// Manager / Entra ID / IMDS emulator (docs/azure-emulator.md) over HTTPS,
// until SIGINT or SIGTERM. Point the daemon's provider, `aws --endpoint-url
// http://127.0.0.1:PORT`, a Google client's rootUrl or an Azure SDK's
// endpoint at it. PORT 0 picks a free port; the first stdout line says which
// ("listening on http://…" or https://).
//
// HTTPS (Azure's SDKs send bearer tokens over HTTPS only): with --tls-cert
// and --tls-key (PEM) that identity, else a self-signed certificate made at
// start for 127.0.0.1, ::1 and localhost, whose PEM --tls-ca-out writes for
// clients to trust (NODE_EXTRA_CA_CERTS, curl --cacert).
#include <spdlog/spdlog.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <atomic>
#include <chrono>
#include <csignal>
#include <thread>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>

#include "commands.h"
#include "gpuscaler/model/clock.h"
#include "gpuscaler/model/text_file.h"
#include "gpuscaler/server/http_server.h"
#include "gpuscaler/server/router.h"
#include "gpuscaler/server/tls_identity.h"
#include "sim/cloud_emulator/azure_emulator.h"
#include "sim/cloud_emulator/emulator.h"
#include "sim/cloud_emulator/gcp_emulator.h"

namespace gpuscaler::cli {
namespace {

struct CloudEmulatorOptions {
  std::string listen = "127.0.0.1:4566";
  std::string scenario_file;
  std::string port_file;
  std::string provider;  // "", aws, gcp or azure
  std::string tls_cert_file;
  std::string tls_key_file;
  std::string tls_ca_out;
};

int EmulatorFail(const std::string& message, int code) {
  return FailCommand("gpuscaler cloud-emulator", message, code);
}

template <typename Emulator>
server::HttpResponse Serve(Emulator& emulator, const server::HttpRequest& request) {
  sim::EmulatorRequest r;
  r.method = request.method;
  r.target = request.target;
  r.headers = request.headers;
  r.body = request.body;
  sim::EmulatorResponse out = emulator.Handle(r);
  server::HttpResponse resp;
  resp.status = out.status;
  resp.content_type = out.content_type;
  resp.body = std::move(out.body);
  resp.headers = std::move(out.headers);
  return resp;
}

// The TLS identity of --tls-cert / --tls-key, or a self-signed one for the
// loopback names (its PEM written to --tls-ca-out); nonzero: the exit code
// after a failure was reported.
int SetUpEmulatorTls(const CloudEmulatorOptions& o, server::HttpServerOptions* http_options) {
  if (o.tls_cert_file.empty() != o.tls_key_file.empty())
    return EmulatorFail("--tls-cert and --tls-key go together", 2);
  if (!o.tls_cert_file.empty()) {
    auto cert = ReadConfigFile(o.tls_cert_file);
    if (!cert.ok()) return EmulatorFail(o.tls_cert_file + ": " + cert.error().message(), 2);
    auto key = ReadConfigFile(o.tls_key_file);
    if (!key.ok()) return EmulatorFail(o.tls_key_file + ": " + key.error().message(), 2);
    http_options->tls_certificate_pem = std::move(*cert);
    http_options->tls_private_key_pem = std::move(*key);
  } else {
    std::vector<std::string> ips = {"127.0.0.1", "::1"};
    if (http_options->host != "localhost" && http_options->host != "127.0.0.1" && http_options->host != "::1" &&
        http_options->host != "0.0.0.0" && http_options->host != "::") {
      ips.push_back(http_options->host);
    }
    auto made = server::MakeSelfSignedTlsIdentity({"localhost"}, ips);
    if (!made.ok()) return EmulatorFail(made.error().message(), 2);
    http_options->tls_certificate_pem = std::move(made->certificate_pem);
    http_options->tls_private_key_pem = std::move(made->private_key_pem);
  }
  if (!o.tls_ca_out.empty()) {
    std::ofstream out(o.tls_ca_out);
    out << http_options->tls_certificate_pem;
    if (!out.good()) return EmulatorFail("cannot write " + o.tls_ca_out, 2);
  }
  return 0;
}

int RunCloudEmulator(const CloudEmulatorOptions& o) {
  const size_t colon = o.listen.rfind(':');
  if (colon == std::string::npos) return EmulatorFail("--listen wants HOST:PORT, got '" + o.listen + "'", 2);
  server::HttpServerOptions http_options;
  http_options.host = o.listen.substr(0, colon);
  try {
    const int port = std::stoi(o.listen.substr(colon + 1));
    if (port < 0 || port > 65535) throw std::out_of_range("port");
    http_options.port = static_cast<uint16_t>(port);
  } catch (const std::exception&) {
    return EmulatorFail("--listen wants HOST:PORT, got '" + o.listen + "'", 2);
  }
  http_options.max_body_bytes = 16 * 1024 * 1024;

  SystemClock clock;
  std::string text;
  if (!o.scenario_file.empty()) {
    auto read = ReadConfigFile(o.scenario_file);
    if (!read.ok()) return EmulatorFail(o.scenario_file + ": " + read.error().message(), 2);
    text = std::move(*read);
  }
  auto provider = sim::EmulatorScenarioProvider(text);
  if (!provider.ok()) return EmulatorFail(o.scenario_file + ": " + provider.error().message(), 2);
  if (!o.provider.empty() && !provider->empty() && *provider != o.provider) {
    return EmulatorFail(
        "--provider " + o.provider + " but " + o.scenario_file + " says provider: " + *provider, 2);
  }
  const std::string which = !o.provider.empty() ? o.provider : !provider->empty() ? *provider : "aws";

  if (which != "azure" && !(o.tls_cert_file.empty() && o.tls_key_file.empty() && o.tls_ca_out.empty()))
    return EmulatorFail("--tls-cert, --tls-key and --tls-ca-out are for --provider azure", 2);
  server::Router router;
  std::atomic<bool> stopping{false};  // ends blocked zoneOperations.wait calls at shutdown
  std::unique_ptr<sim::CloudEmulator> aws;
  std::unique_ptr<sim::GcpEmulator> gcp;
  std::unique_ptr<sim::AzureEmulator> azure;
  std::string banner;
  if (which == "azure") {
    const std::string base_dir =
        o.scenario_file.empty() ? "." : std::filesystem::path(o.scenario_file).parent_path().string();
    auto parsed = sim::ParseAzureScenario(text, base_dir.empty() ? "." : base_dir);
    if (!parsed.ok()) return EmulatorFail(o.scenario_file + ": " + parsed.error().message(), 2);
    banner = "(Azure Resource Manager, subscription " + parsed->subscription + ", " + parsed->location + ")";
    azure = std::make_unique<sim::AzureEmulator>(std::move(*parsed), clock);
    if (int failed = SetUpEmulatorTls(o, &http_options); failed != 0) return failed;
    // ARM is REST with PUT and PATCH too; the emulator checks the Bearer
    // token itself.
    auto handler = [&azure](const server::HttpRequest& r) { return Serve(*azure, r); };
    for (const char* method : {"GET", "PUT", "PATCH", "POST", "DELETE"})
      router.Add(method, "/", /*prefix=*/true, /*mutating=*/false, handler);
  } else if (which == "gcp") {
    const std::string base_dir =
        o.scenario_file.empty() ? "." : std::filesystem::path(o.scenario_file).parent_path().string();
    auto parsed = sim::ParseGcpScenario(text, base_dir.empty() ? "." : base_dir);
    if (!parsed.ok()) return EmulatorFail(o.scenario_file + ": " + parsed.error().message(), 2);
    banner = "(Compute Engine, project " + parsed->project + ")";
    gcp = std::make_unique<sim::GcpEmulator>(std::move(*parsed), clock);
    // zoneOperations.wait blocks up to 2 minutes as Compute Engine's does,
    // on the slow-request threads so the I/O thread keeps serving.
    gcp->EnableBlockingWait(std::chrono::minutes(2), [&stopping](std::chrono::milliseconds d) {
      if (stopping.load()) return false;
      std::this_thread::sleep_for(d);
      return !stopping.load();
    });
    http_options.slow_request = [](const server::HttpRequest& r) {
      return sim::GcpEmulator::IsWait(sim::EmulatorRequest{r.method, r.target, {}, {}});
    };
    http_options.slow_handler_threads = 4;
    http_options.slow_handler_nice = 0;
    // Compute Engine is REST (GET, POST, DELETE on resource paths); the
    // emulator checks the Bearer token itself.
    auto handler = [&gcp](const server::HttpRequest& r) { return Serve(*gcp, r); };
    for (const char* method : {"GET", "POST", "DELETE"}) router.Add(method, "/", /*prefix=*/true, /*mutating=*/false, handler);
  } else {
    sim::EmulatorScenario scenario;
    if (!text.empty()) {
      auto parsed = sim::ParseEmulatorScenario(text, clock.WallNow());
      if (!parsed.ok()) return EmulatorFail(o.scenario_file + ": " + parsed.error().message(), 2);
      scenario = std::move(*parsed);
    }
    banner = "(region " + scenario.region + ")";
    aws = std::make_unique<sim::CloudEmulator>(scenario, clock);
    // The AWS APIs are POSTs (and EC2 also accepts GET) to any path; the
    // emulator checks SigV4 itself, so no bearer token.
    auto handler = [&aws](const server::HttpRequest& r) { return Serve(*aws, r); };
    router.Add("POST", "/", /*prefix=*/true, /*mutating=*/false, handler);
    router.Add("GET", "/", /*prefix=*/true, /*mutating=*/false, handler);
  }

  boost::asio::io_context io(1);
  server::HttpServer http(io, http_options, std::move(router));
  if (Status s = http.Start(); !s.ok()) return EmulatorFail(s.error().message(), 2);
  const char* scheme = http_options.tls_certificate_pem.empty() ? "http" : "https";
  std::cout << "cloud-emulator listening on " << scheme << "://" << http_options.host << ":" << http.port() << "/ " << banner
            << std::endl;
  if (!o.port_file.empty()) {
    std::ofstream(o.port_file) << http.port() << "\n";
  }

  boost::asio::signal_set signals(io, SIGINT, SIGTERM);
  signals.async_wait([&](const boost::system::error_code& ec, int) {
    if (ec) return;
    stopping.store(true);
    http.Stop();
    io.stop();
  });
  io.run();
  if (aws) {
    const sim::EmulatorStats st = aws->stats();
    spdlog::info("cloud-emulator: {} requests, {} launched, {} throttled, {} server errors, {} auth failures",
                 st.requests, st.launched, st.throttled, st.server_errors, st.auth_failures);
  } else if (azure) {
    const sim::AzureEmulatorStats st = azure->stats();
    spdlog::info("cloud-emulator (azure): {} requests, {} created, {} evicted, {} throttled, {} server errors, "
                 "{} auth failures, {} tokens issued",
                 st.requests, st.created, st.evicted, st.throttled, st.server_errors, st.auth_failures,
                 st.tokens_issued);
  } else {
    const sim::GcpEmulatorStats st = gcp->stats();
    spdlog::info("cloud-emulator (gcp): {} requests, {} created, {} preempted, {} throttled, {} server errors, "
                 "{} auth failures, {} tokens issued",
                 st.requests, st.created, st.preempted, st.throttled, st.server_errors, st.auth_failures,
                 st.tokens_issued);
  }
  return 0;
}

}  // namespace

void RegisterCloudEmulatorCommand(CLI::App& app, int* exit_code) {
  auto opts = std::make_shared<CloudEmulatorOptions>();
  CLI::App* cmd = app.add_subcommand(
      "cloud-emulator",
      "Serve an emulator of the cloud APIs gpuscaler uses: EC2 / Auto Scaling / SQS (docs/aws.md), Compute Engine "
      "(docs/gcp-emulator.md) or Azure Resource Manager (docs/azure-emulator.md, over HTTPS)");
  cmd->add_option("--listen", opts->listen, "HOST:PORT to listen on (PORT 0: any free port)")
      ->capture_default_str();
  cmd->add_option("--scenario", opts->scenario_file,
                  "YAML/JSON scenario: capacity limits, throttling, latency, interruptions, prices, groups");
  cmd->add_option("--port-file", opts->port_file, "Write the bound port to this file once listening");
  cmd->add_option("--provider", opts->provider, "aws, gcp or azure (default: the scenario's `provider`, else aws)")
      ->check(CLI::IsMember({"aws", "gcp", "azure"}));
  cmd->add_option("--tls-cert", opts->tls_cert_file, "azure: PEM certificate chain to serve HTTPS with");
  cmd->add_option("--tls-key", opts->tls_key_file, "azure: PEM private key of --tls-cert");
  cmd->add_option("--tls-ca-out", opts->tls_ca_out,
                  "azure: write the served certificate (self-signed unless --tls-cert) here, for clients to trust");
  cmd->callback([opts, exit_code] { *exit_code = RunCloudEmulator(*opts); });
}

}  // namespace gpuscaler::cli
