// The pieces RunDaemon wires together, built from the command line and the
// configuration file: the engine and what it owns, the HTTP routes and the
// metrics. Private to src/daemon; split from daemon.cc so that the Asio loop
// stays in one translation unit and the rest is testable without sockets.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gpuscaler/cloud/provider.h"
#include "gpuscaler/model/clock.h"
#include "gpuscaler/daemon/config.h"
#include "gpuscaler/daemon/daemon.h"
#include "gpuscaler/daemon/engine.h"
#include "gpuscaler/model/catalog.h"
#include "gpuscaler/server/http_server.h"
#include "gpuscaler/server/metrics.h"
#include "gpuscaler/server/router.h"
#include "gpuscaler/store/audit_store.h"
#include "state.h"

namespace gpuscaler::daemon {

// The leader Lease as one replica sees it (kube::LeaderElector).
struct LeaseView {
  double leaderless_seconds = 0;  // LeaderElector::LeaderlessFor
  int64_t transitions = 0;        // the Lease's leaseTransitions (the leadership term is one more)
  std::string holder;             // this replica's identity
};

// One audit store commit (SqliteAuditStoreOptions::on_commit).
struct StoreCommit {
  double seconds = 0;
  std::optional<ErrorCategory> failure;  // nullopt: committed
};

struct DaemonSetup {
  // Owned dependencies of a live engine, in construction order (the engine
  // holds references to them, so it is declared last and destroyed first).
  std::vector<std::shared_ptr<void>> keep_alive;
  std::string db_file;  // the audit database the HTTP API and reports read
  std::string api_token;  // empty: mutating endpoints disabled
  server::HttpServerOptions server_options;
  // Leader election (kube_setup.h): ticks run only while it says true;
  // empty: always the leader.
  std::function<bool()> is_leader;
  // With leader election: the Lease as this replica sees it (for metrics).
  std::function<LeaseView()> lease_view;
  // With leader election: claims the audit store for leadership term `term`
  // (SqliteAuditStore::ClaimLeadership); the loop ticks only once it has.
  std::function<Status(int64_t term)> claim_leadership;
  // The audit store's commits since the loop last took them (the loop's
  // thread writes and takes them); null without a store.
  std::shared_ptr<std::vector<StoreCommit>> store_commits;
  // Retention: one bounded step (report::RetentionPruner::Step), run on the
  // loop's thread after a tick; returns the rows pruned. Empty: none.
  std::function<Result<int64_t>()> retention_step;
  std::unique_ptr<Engine> engine;
};

// Builds everything from the options (and the config file, unless demo).
// kConfig for a bad configuration, with every problem.
Result<DaemonSetup> SetUpDaemon(const RunCommandOptions& options, const SimulatedWiring& wiring);

// The daemon's Prometheus metrics (names in docs/daemon.md). Thread-safe.
class DaemonMetrics {
 public:
  DaemonMetrics();
  ~DaemonMetrics();
  void ObserveTick(const EngineTick& tick, double seconds, const PublishedState& state);
  // One routed HTTP request (called on the I/O thread).
  void ObserveHttp(const server::HttpExchange& exchange);
  void SetPaused(bool paused);
  void SetLeader(bool leader);
  // This replica gained (true) or lost the Lease.
  void CountLeaderTransition(bool leader);
  void ObserveLease(const LeaseView& lease);
  void ObserveStoreCommits(const std::vector<StoreCommit>& commits);
  server::MetricsRegistry& registry() { return registry_; }

 private:
  server::MetricsRegistry registry_;
  struct Families;
  std::unique_ptr<Families> f_;
};

// Every HTTP route of the daemon (handlers read `state` only).
server::Router BuildRouter(DaemonSetup& setup, DaemonState& state, DaemonMetrics& metrics);

}  // namespace gpuscaler::daemon
