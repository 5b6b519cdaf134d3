// `gpuscaler cloud-emulator [--listen 127.0.0.1:PORT] [--scenario FILE] [--port-file FILE]`:
// serves the EC2 / Auto Scaling / SQS emulator (sim/cloud_emulator/,
// docs/aws.md) over HTTP until SIGINT or SIGTERM. Point the daemon's AWS
// provider or `aws --endpoint-url http://127.0.0.1:PORT` at it. PORT 0 picks
// a free port; the first stdout line says which ("listening on http://…").
#include <spdlog/spdlog.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <csignal>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>

#include "commands.h"
#include "gpuscaler/model/clock.h"
#include "gpuscaler/model/text_file.h"
#include "gpuscaler/server/http_server.h"
#include "gpuscaler/server/router.h"
#include "sim/cloud_emulator/emulator.h"

namespace gpuscaler::cli {
namespace {

struct CloudEmulatorOptions {
  std::string listen = "127.0.0.1:4566";
  std::string scenario_file;
  std::string port_file;
};

int Fail(const std::string& message, int code) {
  std::cerr << "gpuscaler cloud-emulator: " << message << "\n";
  return code;
}

server::HttpResponse Serve(sim::CloudEmulator& emulator, const server::HttpRequest& request) {
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

int RunCloudEmulator(const CloudEmulatorOptions& o) {
  const size_t colon = o.listen.rfind(':');
  if (colon == std::string::npos) return Fail("--listen wants HOST:PORT, got '" + o.listen + "'", 2);
  server::HttpServerOptions http_options;
  http_options.host = o.listen.substr(0, colon);
  try {
    const int port = std::stoi(o.listen.substr(colon + 1));
    if (port < 0 || port > 65535) throw std::out_of_range("port");
    http_options.port = static_cast<uint16_t>(port);
  } catch (const std::exception&) {
    return Fail("--listen wants HOST:PORT, got '" + o.listen + "'", 2);
  }
  http_options.max_body_bytes = 16 * 1024 * 1024;

  SystemClock clock;
  sim::EmulatorScenario scenario;
  if (!o.scenario_file.empty()) {
    auto text = ReadTextFile(o.scenario_file);
    if (!text.ok()) return Fail(o.scenario_file + ": " + text.error().message(), 2);
    auto parsed = sim::ParseEmulatorScenario(*text, clock.WallNow());
    if (!parsed.ok()) return Fail(o.scenario_file + ": " + parsed.error().message(), 2);
    scenario = std::move(*parsed);
  }
  sim::CloudEmulator emulator(scenario, clock);

  server::Router router;
  // The AWS APIs are POSTs (and EC2 also accepts GET) to any path; the
  // emulator checks SigV4 itself, so no bearer token.
  auto handler = [&emulator](const server::HttpRequest& r) { return Serve(emulator, r); };
  router.Add("POST", "/", /*prefix=*/true, /*mutating=*/false, handler);
  router.Add("GET", "/", /*prefix=*/true, /*mutating=*/false, handler);

  boost::asio::io_context io(1);
  server::HttpServer http(io, http_options, std::move(router));
  if (Status s = http.Start(); !s.ok()) return Fail(s.error().message(), 2);
  std::cout << "cloud-emulator listening on http://" << http_options.host << ":" << http.port() << "/ (region "
            << scenario.region << ")" << std::endl;
  if (!o.port_file.empty()) {
    std::ofstream(o.port_file) << http.port() << "\n";
  }

  boost::asio::signal_set signals(io, SIGINT, SIGTERM);
  signals.async_wait([&](const boost::system::error_code& ec, int) {
    if (ec) return;
    http.Stop();
    io.stop();
  });
  io.run();
  const sim::EmulatorStats st = emulator.stats();
  spdlog::info("cloud-emulator: {} requests, {} launched, {} throttled, {} server errors, {} auth failures", st.requests,
               st.launched, st.throttled, st.server_errors, st.auth_failures);
  return 0;
}

}  // namespace

void RegisterCloudEmulatorCommand(CLI::App& app, int* exit_code) {
  auto opts = std::make_shared<CloudEmulatorOptions>();
  CLI::App* cmd = app.add_subcommand(
      "cloud-emulator", "Serve an emulator of the EC2 / Auto Scaling / SQS APIs gpuscaler uses (docs/aws.md)");
  cmd->add_option("--listen", opts->listen, "HOST:PORT to listen on (PORT 0: any free port)")
      ->capture_default_str();
  cmd->add_option("--scenario", opts->scenario_file,
                  "YAML/JSON scenario: capacity limits, throttling, latency, interruptions, prices, groups");
  cmd->add_option("--port-file", opts->port_file, "Write the bound port to this file once listening");
  cmd->callback([opts, exit_code] { *exit_code = RunCloudEmulator(*opts); });
}

}  // namespace gpuscaler::cli
