// The daemon's Prometheus metrics. Every name here is listed in
// docs/daemon.md, and the alert rules and the Grafana dashboard in config/
// use only these (tests/kube checks it against a live /metrics).
#include <malloc.h>
#include <unistd.h>

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define GPUSCALER_SANITIZER_ALLOCATOR 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#undef GPUSCALER_SANITIZER_ALLOCATOR
#define GPUSCALER_SANITIZER_ALLOCATOR 1
#endif
#ifdef GPUSCALER_SANITIZER_ALLOCATOR
// Declared here: GCC on Debian ships the runtime (libasan, libtsan) but not
// the <sanitizer/allocator_interface.h> header that declares it.
extern "C" size_t __sanitizer_get_current_allocated_bytes();
#endif

#include <cstdio>

#include "daemon_parts.h"
#include "gpuscaler/policy/schedule.h"

namespace gpuscaler::daemon {

struct DaemonMetrics::Families {
  explicit Families(server::MetricsRegistry& r)
      : tick_seconds(r.Histogram("gpuscaler_tick_duration_seconds",
                                 "Wall time of one control-loop tick (signals, plan, actions, audit)",
                                 // Millisecond buckets too: an idle or demo tick takes milliseconds,
                                 // and load tests compare its p99 (bench/load/run_load.sh).
                                 {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30})),
        ticks(r.Counter("gpuscaler_ticks_total", "Control-loop ticks by result (ok: no error)", {"result"})),
        decisions(r.Counter("gpuscaler_decisions_total", "Decisions recorded in the audit store")),
        actions(r.Counter("gpuscaler_actions_total", "Cloud actions by kind and result", {"kind", "result"})),
        capacity_errors(r.Counter("gpuscaler_capacity_errors_total",
                                  "Launches that found no capacity for an offering")),
        interruptions(r.Counter("gpuscaler_interruption_notices_total", "Spot interruption notices received")),
        deadlines_missed(r.Counter("gpuscaler_deadlines_missed_total",
                                   "Units with a deadline (classes[].deadline, gpuscaler.io/deadline) that miss it: "
                                   "still pending or running when it passed, or, with a stated runtime, as soon as "
                                   "their work left no longer fits before it; by class",
                                   {"class"})),
        rebalances(r.Counter("gpuscaler_rebalance_recommendations_total", "EC2 rebalance recommendations received")),
        registration_failures(r.Counter("gpuscaler_registration_failures_total",
                                        "Instances given up: no Ready node with GPUs within registration_timeout")),
        node_lifecycle(r.Histogram("gpuscaler_node_lifecycle_seconds",
                                   "Seconds from launch to each stage of a node this process launched, by family",
                                   {30, 60, 120, 180, 300, 600, 900, 1800, 3600}, {"family", "stage"})),
        drain_seconds(r.Histogram("gpuscaler_drain_duration_seconds", "Node drains, from start to end, by result",
                                  {5, 15, 30, 60, 120, 300, 600, 1200, 3600}, {"result"})),
        nodes(r.Gauge("gpuscaler_nodes", "Nodes by pool, zone, capacity type and instance type",
                      {"pool", "zone", "capacity_type", "instance_type"})),
        gpus(r.Gauge("gpuscaler_gpus", "GPUs paid for, by pool and capacity type", {"pool", "capacity_type"})),
        cost(r.Gauge("gpuscaler_cost_usd_per_hour", "Current spend rate of the fleet by capacity type (USD per hour)",
                     {"capacity_type"})),
        predicted(r.Gauge("gpuscaler_predicted_cost_usd_per_hour",
                          "Spend rate after the last plan is carried out (USD per hour)")),
        month_to_date(r.Gauge("gpuscaler_month_to_date_cost_usd", "Spend so far this month (USD)")),
        budget_monthly(r.Gauge("gpuscaler_budget_monthly_usd", "Monthly budget cap of the policy (USD)", {"scope"})),
        budget_hourly(r.Gauge("gpuscaler_budget_hourly_usd", "Hourly budget cap of the policy (USD)", {"scope"})),
        pending(r.Gauge("gpuscaler_pending_units", "Demand units waiting for capacity, by class", {"class"})),
        unplaced(r.Gauge("gpuscaler_unplaced_units", "Units the last plan could not place, by class and reason",
                         {"class", "reason"})),
        queue_depth(r.Gauge("gpuscaler_queue_depth", "Last usable queue depth per class", {"class"})),
        signal_age(r.Gauge("gpuscaler_signal_age_seconds", "Age of each signal's last value", {"source", "signal"})),
        signal_stale(r.Gauge("gpuscaler_signal_stale", "1 when a signal is stale or missing (blocks scale-down)",
                             {"source", "signal"})),
        price_age(r.Gauge("gpuscaler_price_age_seconds",
                          "Seconds since the spot price source last answered (since start when it has not)",
                          {"source"})),
        prices_stale(r.Gauge("gpuscaler_prices_stale",
                             "1 while spot prices are stale or the catalog's (no replacements are made)",
                             {"source"})),
        blocked(r.Gauge("gpuscaler_scale_down_blocked", "1 when stale signals hold back removals for the class",
                        {"class"})),
        reloads(r.Counter("gpuscaler_policy_reloads_total", "Policy file reloads by result", {"result"})),
        reload_ok(r.Gauge("gpuscaler_policy_reload_ok", "0 while the last policy file change was rejected")),
        policy_info(r.Gauge("gpuscaler_policy_info", "The policy in force (value 1)", {"name", "hash"})),
        leader(r.Gauge("gpuscaler_leader", "1 when this replica holds the leader lease (or runs alone)")),
        leader_transitions(r.Counter("gpuscaler_leader_transitions_total",
                                     "Times this replica gained (to=leader) or lost (to=standby) the leader lease since it started", {"to"})),
        lease_transitions(r.Gauge("gpuscaler_lease_transitions",
                                  "The leader Lease's leaseTransitions as this replica last read it")),
        store_commit_seconds(r.Histogram("gpuscaler_store_commit_seconds",
                                         "Audit store commits: the fence check and COMMIT of one transaction",
                                         {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5})),
        store_commit_errors(r.Counter("gpuscaler_store_commit_errors_total",
                                      "Audit store commits that failed, by error category (auth: fenced)",
                                      {"category"})),
        leaderless(r.Gauge("gpuscaler_leaderless_seconds",
                           "Seconds the leader Lease has had no live holder, as this replica sees it (0 while "
                           "one holds it)")),
        paused(r.Gauge("gpuscaler_paused", "1 while actuation is paused through the API")),
        http_requests(r.Counter("gpuscaler_http_requests_total",
                                "HTTP requests served, by route pattern and status code", {"path", "code"})),
        resident(r.Gauge("process_resident_memory_bytes", "Resident memory size in bytes")),
        heap_in_use(r.Gauge("gpuscaler_heap_in_use_bytes",
                            "Bytes the allocator has handed out and not had back (glibc mallinfo2): live "
                            "allocations, without the free pages the allocator keeps")),
        lead_time(r.Gauge("gpuscaler_lead_time_seconds",
                          "Learned seconds from a launch to a node with GPUs allocatable, by instance family "
                          "(the catalog's launch latency until this process has seen one)",
                          {"family"})),
        pool_limit(r.Gauge("gpuscaler_pool_node_limit",
                           "Node limits of each pool now, after the scaling schedules in force", {"pool", "limit"})),
        schedule_in_force(r.Gauge("gpuscaler_schedule_in_force", "1 for each scaling schedule in force",
                                  {"schedule"})) {}

  server::Family& tick_seconds;
  server::Family& ticks;
  server::Family& decisions;
  server::Family& actions;
  server::Family& capacity_errors;
  server::Family& interruptions;
  server::Family& deadlines_missed;
  server::Family& rebalances;
  server::Family& registration_failures;
  server::Family& node_lifecycle;
  server::Family& drain_seconds;
  server::Family& nodes;
  server::Family& gpus;
  server::Family& cost;
  server::Family& predicted;
  server::Family& month_to_date;
  server::Family& budget_monthly;
  server::Family& budget_hourly;
  server::Family& pending;
  server::Family& unplaced;
  server::Family& queue_depth;
  server::Family& signal_age;
  server::Family& signal_stale;
  server::Family& price_age;
  server::Family& prices_stale;
  server::Family& blocked;
  server::Family& reloads;
  server::Family& reload_ok;
  server::Family& policy_info;
  server::Family& leader;
  server::Family& leader_transitions;
  server::Family& lease_transitions;
  server::Family& store_commit_seconds;
  server::Family& store_commit_errors;
  server::Family& leaderless;
  server::Family& paused;
  server::Family& http_requests;
  server::Family& resident;
  server::Family& heap_in_use;
  server::Family& lead_time;
  server::Family& pool_limit;
  server::Family& schedule_in_force;
};

namespace {

// Resident set size from /proc/self/statm (pages), 0 when unreadable.
double ResidentBytes() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  unsigned long size_pages = 0, resident_pages = 0;
  const int read = std::fscanf(f, "%lu %lu", &size_pages, &resident_pages);
  std::fclose(f);
  return read == 2 ? static_cast<double>(resident_pages) * static_cast<double>(sysconf(_SC_PAGESIZE)) : 0;
}

// Bytes handed out by the allocator that is actually in use. Under ASan or
// TSan malloc is the sanitizer's: glibc's arenas are never set up, and
// mallinfo2 reads them anyway (it crashed a sanitizer run), so ask the
// sanitizer instead.
double HeapInUseBytes() {
#ifdef GPUSCALER_SANITIZER_ALLOCATOR
  return static_cast<double>(__sanitizer_get_current_allocated_bytes());
#else
  const struct mallinfo2 heap = mallinfo2();
  return static_cast<double>(heap.uordblks + heap.hblkhd);
#endif
}

}  // namespace

DaemonMetrics::DaemonMetrics() : f_(std::make_unique<Families>(registry_)) {
  // Present from the start, so alerts and dashboards see them before the
  // first tick (and `absent()` alerts mean the daemon is gone).
  f_->ticks.With({"ok"});
  f_->ticks.With({"error"});
  f_->decisions.With();
  f_->capacity_errors.With();
  f_->interruptions.With();
  f_->rebalances.With();
  f_->registration_failures.With();
  // Results as the audit store's outcomes: succeeded, failed.
  for (const char* kind : {"launch", "terminate"}) {
    for (const char* result : {"succeeded", "failed"}) f_->actions.With({kind, result});
  }
  f_->reloads.With({"ok"});
  f_->reloads.With({"rejected"});
  f_->reload_ok.With().Set(1);
  f_->leader.With().Set(1);
  f_->leader_transitions.With({"leader"});
  f_->leader_transitions.With({"standby"});
  f_->paused.With().Set(0);
  f_->cost.With({"on-demand"}).Set(0);
  f_->cost.With({"spot"}).Set(0);
  f_->predicted.With().Set(0);
  f_->month_to_date.With().Set(0);
}

DaemonMetrics::~DaemonMetrics() = default;

void DaemonMetrics::ObserveHttp(const server::HttpExchange& exchange) {
  // The route pattern, not the raw path: label values stay bounded whatever
  // clients ask for.
  const std::string route = exchange.route.empty() ? "unmatched" : std::string(exchange.route);
  f_->http_requests.With({route, std::to_string(exchange.status)}).Inc();
}

void DaemonMetrics::SetPaused(bool paused) { f_->paused.With().Set(paused ? 1 : 0); }
void DaemonMetrics::SetLeader(bool leader) { f_->leader.With().Set(leader ? 1 : 0); }

void DaemonMetrics::CountLeaderTransition(bool leader) {
  f_->leader_transitions.With({leader ? "leader" : "standby"}).Inc();
}

void DaemonMetrics::ObserveStoreCommits(const std::vector<StoreCommit>& commits) {
  for (const StoreCommit& c : commits) {
    f_->store_commit_seconds.With().Observe(c.seconds);
    if (c.failure) f_->store_commit_errors.With({std::string(ToString(*c.failure))}).Inc();
  }
}

void DaemonMetrics::ObserveLease(const LeaseView& lease) {
  f_->lease_transitions.With().Set(static_cast<double>(lease.transitions));
  f_->leaderless.With().Set(lease.leaderless_seconds);
}

void DaemonMetrics::ObserveTick(const EngineTick& tick, double seconds, const PublishedState& s) {
  const TickReport& r = tick.report;
  f_->tick_seconds.With().Observe(seconds);
  f_->ticks.With({r.errors.empty() ? "ok" : "error"}).Inc();
  if (r.decision_id != 0) f_->decisions.With().Inc();
  // Accepted launches whose instances are not listed yet are not failures.
  const int launched = r.nodes_launched + r.nodes_in_flight;
  if (launched > 0) f_->actions.With({"launch", "succeeded"}).Inc(launched);
  if (r.nodes_requested > launched) f_->actions.With({"launch", "failed"}).Inc(r.nodes_requested - launched);
  if (r.nodes_terminated > 0) f_->actions.With({"terminate", "succeeded"}).Inc(r.nodes_terminated);
  if (r.terminations_failed > 0) f_->actions.With({"terminate", "failed"}).Inc(r.terminations_failed);
  if (r.capacity_errors > 0) f_->capacity_errors.With().Inc(r.capacity_errors);
  if (r.interruption_notices > 0) f_->interruptions.With().Inc(r.interruption_notices);
  for (const auto& [cls, n] : r.deadlines_missed) f_->deadlines_missed.With({cls}).Inc(n);
  if (r.rebalance_recommendations > 0) f_->rebalances.With().Inc(r.rebalance_recommendations);
  if (r.registration_failures > 0) f_->registration_failures.With().Inc(r.registration_failures);
  for (const NodeMilestone& m : r.milestones) f_->node_lifecycle.With({m.family, m.stage}).Observe(m.seconds);
  for (const DrainOutcome& d : r.drains_ended) {
    f_->drain_seconds.With({std::string(ToString(d.end))}).Observe(
        std::chrono::duration<double>(d.ended - d.started).count());
  }

  std::map<std::string, double> rate_by_capacity = {{"on-demand", 0}, {"spot", 0}};
  f_->nodes.Clear();
  f_->gpus.Clear();
  f_->pending.Clear();
  if (s.snapshot) {
    std::map<std::string, int> gpu_count;
    for (const InstanceType& t : s.snapshot->instance_types) gpu_count[t.name] = t.gpu_count;
    for (const Node& n : s.snapshot->nodes) {
      const std::string cap(ToString(n.offering.capacity_type));
      f_->nodes.With({n.pool, n.offering.zone, cap, n.offering.instance_type}).Inc();
      f_->gpus.With({n.pool, cap}).Inc(gpu_count[n.offering.instance_type]);
      rate_by_capacity[cap] += n.offering.usd_per_hour;
    }
    for (const DemandUnit& u : s.snapshot->pending) f_->pending.With({u.workload_class}).Inc();
    f_->month_to_date.With().Set(s.snapshot->month_to_date_usd);
  }
  if (r.planned || r.decision_id != 0) {
    f_->unplaced.Clear();
    for (const UnplacedUnit& u : r.plan.unplaced) f_->unplaced.With({u.workload_class, std::string(ToString(u.reason))}).Inc();
  }
  // The split follows the nodes' prices; the total is the provider's spend
  // rate (the simulated cloud's, or the sum of node prices).
  double node_total = 0;
  for (const auto& [cap, v] : rate_by_capacity) node_total += v;
  for (const auto& [cap, v] : rate_by_capacity)
    f_->cost.With({cap}).Set(node_total > 0 ? s.cost_usd_per_hour * v / node_total : 0);
  f_->predicted.With().Set(s.predicted_cost_usd_per_hour);

  f_->queue_depth.Clear();
  for (const auto& [cls, depth] : tick.queue_depth) f_->queue_depth.With({cls}).Set(depth);
  f_->signal_age.Clear();
  f_->signal_stale.Clear();
  for (const ClassSignal& c : tick.signals) {
    const std::string name = c.workload_class + (c.kind == ClassSignal::Kind::kQueueDepth ? "/queue_depth" : "/gpu_utilization");
    if (auto age = signals::Age(c.reading, tick.time)) f_->signal_age.With({c.reading.source, name}).Set(age->count());
    f_->signal_stale.With({c.reading.source, name}).Set(c.reading.ok() ? 0 : 1);
  }
  // One source today: the cloud provider's spot price API (DescribeSpotPriceHistory on
  // AWS, the Billing Catalog on Google Cloud, the simulated cloud's log).
  f_->price_age.With({"cloud"}).Set(static_cast<double>(tick.report.price_age.count()));
  f_->prices_stale.With({"cloud"}).Set(tick.report.stale_prices.empty() ? 0 : 1);
  f_->blocked.Clear();
  for (const std::string& cls : r.blocked_classes) f_->blocked.With({cls}).Set(1);

  if (tick.reload.kind == PolicyReload::Kind::kReloaded) {
    f_->reloads.With({"ok"}).Inc();
    f_->reload_ok.With().Set(1);
  } else if (tick.reload.kind == PolicyReload::Kind::kRejected) {
    f_->reloads.With({"rejected"}).Inc();
    f_->reload_ok.With().Set(0);
  }
  f_->lead_time.Clear();
  if (s.snapshot) {
    for (const auto& [family, seconds] : s.snapshot->warmup_seconds_by_family) f_->lead_time.With({family}).Set(seconds);
  }
  if (s.policy) {
    f_->pool_limit.Clear();
    f_->schedule_in_force.Clear();
    const std::vector<ScheduleInForce> in_force = SchedulesInForce(s.policy->scaling.schedules, tick.time);
    for (const ScheduleInForce& f : in_force) f_->schedule_in_force.With({f.schedule->name}).Set(1);
    for (const NodePoolPolicy& pool : s.policy->pools) {
      const PoolLimits limits = PoolLimitsAt(pool, in_force);
      f_->pool_limit.With({pool.name, "min_nodes"}).Set(limits.min_nodes);
      f_->pool_limit.With({pool.name, "max_nodes"}).Set(limits.max_nodes);
    }
  }
  if (s.policy) {
    f_->policy_info.Clear();
    f_->policy_info.With({s.policy->name, s.policy->content_hash.substr(0, 16)}).Set(1);
    f_->budget_monthly.Clear();
    f_->budget_hourly.Clear();
    if (s.policy->budget.global.monthly_usd) f_->budget_monthly.With({"global"}).Set(*s.policy->budget.global.monthly_usd);
    if (s.policy->budget.global.hourly_usd) f_->budget_hourly.With({"global"}).Set(*s.policy->budget.global.hourly_usd);
    for (const auto& [pool, cap] : s.policy->budget.per_pool) {
      if (cap.monthly_usd) f_->budget_monthly.With({pool}).Set(*cap.monthly_usd);
      if (cap.hourly_usd) f_->budget_hourly.With({pool}).Set(*cap.hourly_usd);
    }
  }
  f_->paused.With().Set(s.paused ? 1 : 0);
  f_->leader.With().Set(s.leader ? 1 : 0);

  // Memory, per tick: RSS alone cannot tell a leak from pages the allocator
  // keeps after a burst (a report render); the heap in use can.
  f_->resident.With().Set(ResidentBytes());
  f_->heap_in_use.With().Set(HeapInUseBytes());
}

}  // namespace gpuscaler::daemon
