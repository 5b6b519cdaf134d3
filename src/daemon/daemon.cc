// The daemon's I/O loop: the only Asio translation unit of src/daemon (the
// HTTP server's Beast code is in src/server/).
#include "gpuscaler/daemon/daemon.h"

#include <spdlog/spdlog.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <malloc.h>

#include <atomic>
#include <filesystem>
#include <functional>
#include <fstream>
#include <iostream>
#include <map>

#include "daemon_parts.h"
#include "gpuscaler/daemon/config.h"
#include "gpuscaler/server/http_server.h"
#include "gpuscaler/store/database_url.h"
#include "state.h"

namespace gpuscaler::daemon {
namespace asio = boost::asio;
namespace {

using SteadyClock = std::chrono::steady_clock;

// Real time between ticks: the policy's interval, divided by the demo speed
// (or the --tick-interval-ms override).
std::chrono::milliseconds RealInterval(const Engine& engine, std::chrono::milliseconds override_interval) {
  if (override_interval.count() > 0) return override_interval;
  const double ms = 1000.0 * static_cast<double>(engine.tick_interval().count()) / std::max(engine.speed(), 1e-3);
  return std::chrono::milliseconds(std::max<int64_t>(10, static_cast<int64_t>(ms)));
}

struct Loop {
  asio::io_context& io;
  asio::thread_pool& worker;
  Engine& engine;
  DaemonState& state;
  DaemonMetrics& metrics;
  int64_t max_ticks = 0;
  std::chrono::milliseconds tick_interval_override{0};
  // The loop runs on the worker, timer included: HTTP traffic on the I/O
  // thread cannot delay a tick. `stopping` is only
  // touched there; tick_in_flight is read by the main thread at exit.
  bool stopping = false;
  std::atomic<bool> tick_in_flight{false};
  bool done = false;
  asio::steady_timer timer{worker.get_executor()};
  std::function<bool()> is_leader{};  // DaemonSetup::is_leader
  std::function<LeaseView()> lease_view{};  // DaemonSetup::lease_view
  bool role_known = false;  // Leading() has run once
  std::function<Status(int64_t)> claim_leadership{};  // DaemonSetup::claim_leadership
  int64_t claimed_term = 0;  // the term the store was claimed for; 0: none
  std::shared_ptr<std::vector<StoreCommit>> store_commits{};  // DaemonSetup::store_commits
  SteadyClock::time_point last_trim{};

  // glibc keeps what a thread freed in that thread's arena for reuse: after
  // a burst (a report render on a pool thread, a large plan) the process
  // holds the burst's high-water mark, arena by arena, for good. Handing
  // free pages back once a minute keeps the resident size that of the live
  // heap over months of running. A few milliseconds on this thread, between
  // ticks.
  void TrimHeap() {
    const auto now = SteadyClock::now();
    if (now - last_trim < std::chrono::seconds(60)) return;
    last_trim = now;
    malloc_trim(0);
  }

  // Retention between ticks, on this thread (the store's only writer):
  // bounded steps (a month's rollup, or at most 500 rows) for a few
  // milliseconds at most, so a tick never waits for it.
  std::function<Result<int64_t>()> retention_step{};
  bool retention_failing = false;
  void Prune() {
    if (!retention_step) return;
    const auto until = SteadyClock::now() + std::chrono::milliseconds(5);
    do {
      Result<int64_t> pruned = retention_step();
      if (!pruned) {
        if (!retention_failing) spdlog::warn("retention: {} (retrying after the next tick)", pruned.error().ToString());
        retention_failing = true;
        return;
      }
      retention_failing = false;
      if (*pruned == 0) return;
    } while (SteadyClock::now() < until);
  }

  // Leader election: a standby replica does not tick (the cloud wrapper
  // also refuses to act the moment the Lease is lost, mid-tick); /readyz
  // and gpuscaler_leader follow the Lease. Losing the Lease drops the
  // controller's memory (Engine::Resign): the next leadership starts from
  // the store, as a restart does.
  bool Leading() {
    bool leader = !is_leader || is_leader();
    std::optional<LeaseView> lease;
    if (lease_view) {
      lease = lease_view();
      metrics.ObserveLease(*lease);
    }
    // The Lease's first holder has leaseTransitions 0; terms start at 1.
    const int64_t term = lease ? lease->transitions + 1 : 0;
    if (leader && lease && claim_leadership && claimed_term != term) {
      // A new term (taken now, or lost and retaken between two looks): what
      // the controller holds may predate another leader's acts, and the
      // store must know this term before anything is written under it.
      if (claimed_term != 0) engine.Resign();
      claimed_term = 0;
      if (Status s = claim_leadership(term); !s.ok()) {
        spdlog::warn("leader election: holding the Lease (term {}) but not the audit store: {}; retrying",
                     term, s.error().ToString());
        leader = false;
      } else {
        claimed_term = term;
      }
    }
    const bool first_look = !role_known;
    role_known = true;
    if (leader != state.Get().leader) {
      state.Update([leader](PublishedState& s) { s.leader = leader; });
      metrics.SetLeader(leader);
      // The role a replica starts in is no transition.
      if (!first_look) metrics.CountLeaderTransition(leader);
      if (!leader) {
        engine.Resign();
        claimed_term = 0;
      }
      spdlog::info("leader election: {}", leader ? "this replica leads; ticking" : "standing by (not the leader)");
    }
    return leader;
  }

  // A standby's pass (Engine::Standby), on this thread like a tick.
  void StandBy() {
    const EngineTick tick = engine.Standby();
    state.Update([&tick](PublishedState& s) { s.queue_depth = tick.queue_depth; });
    if (tick.reload.kind == PolicyReload::Kind::kRejected)
      spdlog::error("policy reload rejected, keeping the policy in force:\n{}", tick.reload.errors);
    if (tick.reload.kind == PolicyReload::Kind::kReloaded)
      spdlog::info("policy reloaded (standby): {} ({})", engine.controller().policy().name,
                   engine.controller().policy().content_hash.substr(0, 12));
  }

  asio::awaitable<void> Run() {
    int64_t ticks = 0;
    while (!stopping) {
      const auto started = SteadyClock::now();
      state.Beat(started);
      const bool paused = state.Get().paused;
      const bool leading = Leading();
      if (!paused && leading) {
        tick_in_flight = true;
        // The tick blocks (cloud and signal calls): it runs on the worker,
        // never on the I/O thread.
        // The duration is the worker's: the tick itself, not the wait for
        // this thread to take the result back while it serves HTTP.
        double seconds = 0;
        EngineTick tick = co_await asio::co_spawn(
            worker,
            [this, &seconds]() -> asio::awaitable<EngineTick> {
              const auto begun = SteadyClock::now();
              EngineTick t = engine.Tick();
              Publish(engine, t, &state);
              seconds = std::chrono::duration<double>(SteadyClock::now() - begun).count();
              co_return t;
            },
            asio::use_awaitable);
        tick_in_flight = false;
        // The metric families are rebuilt on the I/O thread, where /metrics
        // renders, so that no scrape sees one half-rebuilt; the loop does not
        // wait for it.
        asio::post(io, [this, tick, seconds, published = state.Get()] { metrics.ObserveTick(tick, seconds, published); });
        if (store_commits) {
          metrics.ObserveStoreCommits(*store_commits);
          store_commits->clear();
        }
        LogTick(tick);
        Prune();
        ++ticks;
        if (tick.finished) {
          spdlog::info("demo: the scenario's horizon is reached; serving the final state until stopped");
          co_await WaitForStop();
          break;
        }
        if (max_ticks > 0 && ticks >= max_ticks) break;
      } else if (!paused) {
        StandBy();
      }
      TrimHeap();
      state.Beat(SteadyClock::now());
      // A standby looks at the Lease every second, so it starts within
      // about a second of winning it.
      timer.expires_at(started + (leading ? RealInterval(engine, tick_interval_override)
                                          : std::min<std::chrono::milliseconds>(
                                                RealInterval(engine, tick_interval_override), std::chrono::seconds(1))));
      boost::system::error_code ec;
      co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    }
    done = true;
  }

  asio::awaitable<void> WaitForStop() {
    while (!stopping) {
      state.Beat(SteadyClock::now());
      timer.expires_after(std::chrono::seconds(1));
      boost::system::error_code ec;
      co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    }
  }

  // Signal state changes, logged once each (not every tick while a source
  // is down).
  std::map<std::string, signals::SignalState> signal_states{};

  void LogTick(const EngineTick& t) {
    const TickReport& r = t.report;
    for (const ClassSignal& c : t.signals) {
      const std::string name = c.workload_class + (c.kind == ClassSignal::Kind::kQueueDepth ? " queue depth" : " gpu utilization");
      auto [it, inserted] = signal_states.emplace(name, c.reading.state);
      if (!inserted && it->second == c.reading.state) continue;
      it->second = c.reading.state;
      if (c.reading.ok()) {
        if (!inserted) spdlog::info("signal {} ({}) is back: {}", name, c.reading.source, c.reading.value.value_or(0));
      } else {
        spdlog::warn("signal {} ({}) is {}: {}; scale-down held for class {}", name, c.reading.source,
                     signals::ToString(c.reading.state), c.reading.error, c.workload_class);
      }
    }
    if (t.reload.kind == PolicyReload::Kind::kReloaded)
      spdlog::info("policy reloaded: {} ({})", engine.controller().policy().name,
                   engine.controller().policy().content_hash.substr(0, 12));
    if (t.reload.kind == PolicyReload::Kind::kRejected)
      spdlog::error("policy reload rejected, keeping the policy in force:\n{}", t.reload.errors);
    for (const Error& e : r.errors) spdlog::warn("tick: {}", e.ToString());
    for (const std::string& note : r.forecast_notes) spdlog::info("{}", note);
    if (!r.blocked_classes.empty())
      spdlog::debug("scale-down blocked by stale or missing signals for: {}", fmt::join(r.blocked_classes, ", "));
    if (r.nodes_launched + r.nodes_terminated + r.capacity_errors > 0 || (r.planned && !r.plan.launches.empty()))
      spdlog::info("tick {}: {} (launched {}, terminated {}, capacity errors {})", FormatRfc3339(t.time),
                   r.plan.summary, r.nodes_launched, r.nodes_terminated, r.capacity_errors);
    else
      spdlog::debug("tick {}: {}", FormatRfc3339(t.time), r.planned ? r.plan.summary : "no change");
  }
};

Status WritePortFile(const std::string& path, uint16_t port) {
  if (path.empty()) return Status();
  // Written whole and renamed, so a reader polling for it never sees half.
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << port << "\n";
    if (!out) return Error::Config("cannot write port file " + tmp);
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) return Error::Config("cannot write port file " + path + ": " + ec.message());
  return Status();
}

}  // namespace

// What the operator must fix before starting again (the configuration, a
// file it names, credentials) exits 2; anything else at start (the audit
// database's disk, a failed system call) is a runtime failure, 1.
int StartupExitCode(const Error& e) {
  switch (e.category()) {
    case ErrorCategory::kConfig:
    case ErrorCategory::kAuth:
    case ErrorCategory::kNotFound:
    case ErrorCategory::kInvalidInput:
      return 2;
    default:
      return 1;
  }
}

int RunDaemon(const RunCommandOptions& options, const SimulatedWiring& wiring) {
  Result<DaemonSetup> setup = SetUpDaemon(options, wiring);
  if (!setup) {
    std::cerr << "gpuscaler run: " << setup.error().message() << "\n";
    return StartupExitCode(setup.error());
  }
  DaemonSetup& d = *setup;
  DaemonState state;
  state.Update([&](PublishedState& s) {
    s.mode = d.engine->mode();
    s.speed = d.engine->speed();
    s.started_at = d.engine->now();
    s.db_file = d.db_file;
  });
  DaemonMetrics metrics;

  asio::io_context io(1);
  asio::thread_pool worker(1);
  server::Router router = BuildRouter(d, state, metrics);
  server::HttpServerOptions server_options = d.server_options;
  server_options.on_response = [&metrics](const server::HttpExchange& e) { metrics.ObserveHttp(e); };
  server::HttpServer http(io, server_options, std::move(router));
  if (Status s = http.Start(); !s.ok()) {
    std::cerr << "gpuscaler run: " << s.error().message() << "\n";
    return 2;
  }
  spdlog::info("gpuscaler {} listening on http://{}:{}/ (mode {}, audit db {})", d.engine->mode(),
               d.server_options.host, http.port(), d.engine->mode(), d.db_file.empty() ? "none" : RedactDatabaseUrl(d.db_file));
  // Signals are caught from here on (one that arrives before the handler
  // below waits is kept for it): whoever reads the port file may stop the
  // daemon at once and still get a clean exit.
  asio::signal_set signals(io, SIGINT, SIGTERM);
  if (Status s = WritePortFile(options.port_file, http.port()); !s.ok()) {
    std::cerr << "gpuscaler run: " << s.error().message() << "\n";
    return 2;
  }

  Loop loop{io, worker, *d.engine, state, metrics, options.max_ticks, options.tick_interval_override};
  loop.is_leader = d.is_leader;
  loop.lease_view = d.lease_view;
  loop.claim_leadership = d.claim_leadership;
  loop.store_commits = d.store_commits;
  loop.retention_step = d.retention_step;
  int exit_code = 0;
  asio::steady_timer grace(io);
  auto finish = [&] {
    // The loop ended (a signal, max_ticks, or an error): flush on the worker
    // (the engine is only ever touched there), then stop serving.
    asio::post(worker, [&] {
      Status s = d.engine->Shutdown();
      asio::post(io, [&, s] {
        if (!s.ok()) {
          spdlog::error("shutdown: {}", s.error().ToString());
          exit_code = 1;
        }
        grace.cancel();
        http.Stop();
        io.stop();
      });
    });
  };
  asio::co_spawn(worker, loop.Run(), [&](std::exception_ptr e) {
    if (e) {
      try {
        std::rethrow_exception(e);
      } catch (const std::exception& ex) {
        spdlog::critical("control loop failed: {}", ex.what());
      }
      exit_code = 1;
    }
    finish();
  });

  signals.async_wait([&](const boost::system::error_code& ec, int signo) {
    if (ec) return;
    spdlog::info("signal {}: finishing the current tick, then stopping (grace {}s)", signo, options.grace.count());
    asio::post(worker, [&loop] {
      loop.stopping = true;
      loop.timer.cancel();
    });
    grace.expires_after(options.grace);
    grace.async_wait([&](const boost::system::error_code& gec) {
      if (gec) return;
      spdlog::error("shutdown took longer than the {}s grace period; exiting", options.grace.count());
      exit_code = 1;
      http.Stop();
      io.stop();
    });
  });

  io.run();
  if (loop.tick_in_flight) {
    // Past the grace period with a tick still blocked on the cloud: what it
    // committed is durable (intents are written before each call and
    // reconciled at the next start), so leave without waiting for it.
    spdlog::default_logger()->flush();
    std::_Exit(exit_code == 0 ? 1 : exit_code);
  }
  worker.stop();
  worker.join();
  // The last line of every orderly exit, so an operator (or a log collector)
  // can tell a stop from a crash.
  spdlog::info("gpuscaler stopped (exit code {})", exit_code);
  return exit_code;
}

}  // namespace gpuscaler::daemon
