#include "sim/scenario.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <numbers>
#include <random>

#include "gpuscaler/policy/loader.h"
#include "sim/series_jobs.h"

namespace gpuscaler::sim {
namespace {

// Seeded draws whose values do not depend on the standard library's
// distributions (those differ between implementations).
class Rng {
 public:
  explicit Rng(uint64_t seed) : engine_(seed) {}
  double Uniform() { return static_cast<double>(engine_() >> 11) * (1.0 / 9007199254740992.0); }
  double Normal() {
    const double u1 = std::max(Uniform(), 1e-12);
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * Uniform());
  }
  double LogNormal(double median, double sigma) { return median * std::exp(sigma * Normal()); }
  int Int(int lo, int hi) { return lo + static_cast<int>(Uniform() * (hi - lo + 1)); }

 private:
  std::mt19937_64 engine_;
};

struct LoadSpec {
  Seconds span{0};
  int64_t inference_jobs = 0;
  int64_t training_jobs = 0;
  int64_t eval_jobs = 0;
  // Distributed training jobs: gangs of 2-4 members of 8 GPUs each, one per
  // training burst with this probability (drawn from their own random
  // stream, so the other jobs are the same with or without them).
  double gang_per_burst = 0;
};

// What the jobs of one kind ask for and how they tolerate a move.
struct JobKind {
  std::string id_prefix;
  std::string workload_class;
  int priority;
  bool interruptible;
  Seconds checkpoint_interval;
  Seconds restart_cost;
};

struct JobShape {
  int gpus;
  std::vector<std::string> gpu_models;
  int64_t cpu_milli;
  int64_t memory_mib;
};

TraceJob MakeJob(const JobKind& kind, const JobShape& shape, int64_t n, double submit_s, double duration_s) {
  TraceJob j;
  j.submit = Seconds(static_cast<int64_t>(submit_s));
  j.duration = Seconds(static_cast<int64_t>(duration_s));
  j.unit.id = kind.id_prefix + std::to_string(n);
  j.unit.workload_class = kind.workload_class;
  j.unit.gpus = shape.gpus;
  j.unit.gpu_models = shape.gpu_models;
  j.unit.cpu_milli = shape.cpu_milli;
  j.unit.memory_mib = shape.memory_mib;
  j.unit.priority = kind.priority;
  j.unit.interruptible = kind.interruptible;
  j.unit.checkpoint_interval = kind.checkpoint_interval;
  j.unit.restart_cost = kind.restart_cost;
  j.unit.expected_runtime = j.duration;
  return j;
}

// Inference: diurnal arrivals (peak 15:00 UTC), 1 GPU, stateless replicas.
// Training: bursts of 3-12 multi-GPU jobs. Eval: 1 GPU, never on spot.
Trace GenerateLoad(const LoadSpec& spec, uint64_t seed, const std::string& source) {
  const JobKind inference{"inf-", "inference", 10, true, Seconds(60), Seconds(90)};
  const JobKind training{"train-", "training", 0, true, Seconds(1800), Seconds(600)};
  const JobKind eval{"eval-", "eval", 5, false, Seconds(0), Seconds(120)};
  const JobShape small{1, {"a10g", "l4"}, 3000, 12000};
  const JobShape eval_shape{1, {"a10g", "l4"}, 4000, 14000};
  // Training draws one of these: half 4-GPU A10G/L4, 35 % 8-GPU A100/H100,
  // the rest 8-GPU H100 only.
  const JobShape training_4{4, {"a10g", "l4"}, 32000, 131072};
  const JobShape training_8{8, {"a100-40gb", "a100-80gb", "h100-80gb"}, 80000, 614400};
  const JobShape training_h100{8, {"h100-80gb"}, 160000, 1228800};

  Rng rng(seed * 0x2545F4914F6CDD1DULL + 17);
  Rng gang_rng(seed * 0x9E3779B97F4A7C15ULL + 71);
  int64_t gangs = 0;
  Trace trace;
  trace.source = source;
  const double span_s = static_cast<double>(spec.span.count());
  auto diurnal = [](double t_s) {
    const double hour = std::fmod(t_s / 3600.0, 24.0);
    return 1.0 + 0.7 * std::cos(2.0 * std::numbers::pi * (hour - 15.0) / 24.0);
  };
  int64_t n = 0;
  while (n < spec.inference_jobs) {
    const double t = rng.Uniform() * span_s;
    if (rng.Uniform() * 1.7 > diurnal(t)) continue;
    const double duration = std::clamp(rng.LogNormal(2400, 0.6), 300.0, 21600.0);
    trace.jobs.push_back(MakeJob(inference, small, n, t, duration));
    ++n;
  }
  n = 0;
  while (n < spec.training_jobs) {
    const double burst = rng.Uniform() * span_s;
    const int size = rng.Int(3, 12);
    for (int k = 0; k < size && n < spec.training_jobs; ++k, ++n) {
      const double submit = std::min(span_s - 1, burst + rng.Uniform() * 600.0);
      const double duration = std::clamp(rng.LogNormal(7200, 0.7), 900.0, 86400.0);
      const double draw = rng.Uniform();
      const JobShape& shape = draw < 0.5 ? training_4 : draw < 0.85 ? training_8 : training_h100;
      trace.jobs.push_back(MakeJob(training, shape, n, submit, duration));
    }
    if (spec.gang_per_burst > 0 && gang_rng.Uniform() < spec.gang_per_burst) {
      // One job on several 8-GPU nodes: its members start and stop together.
      const int members = gang_rng.Int(2, 4);
      const double submit = std::min(span_s - 1, burst + gang_rng.Uniform() * 600.0);
      const double duration = std::clamp(gang_rng.LogNormal(10800, 0.6), 1800.0, 86400.0);
      const std::string name = "dist-" + std::to_string(gangs);
      const JobKind member_kind{name + "/", "training", 0, true, Seconds(1800), Seconds(900)};
      for (int m = 0; m < members; ++m) {
        TraceJob job = MakeJob(member_kind, training_8, m, submit, duration);
        job.unit.gang = GangMembership{name, members, /*same_zone=*/true, /*same_instance_type=*/false};
        trace.jobs.push_back(std::move(job));
      }
      ++gangs;
    }
  }
  for (n = 0; n < spec.eval_jobs; ++n) {
    const double submit = rng.Uniform() * span_s;
    const double duration = std::clamp(rng.LogNormal(2700, 0.5), 300.0, 14400.0);
    trace.jobs.push_back(MakeJob(eval, eval_shape, n, submit, duration));
  }
  std::stable_sort(trace.jobs.begin(), trace.jobs.end(), [](const TraceJob& a, const TraceJob& b) {
    return a.submit != b.submit ? a.submit < b.submit : a.unit.id < b.unit.id;
  });
  trace.span = trace.jobs.empty() ? Seconds(0) : trace.jobs.back().submit;
  trace.stats.rows_read = trace.stats.rows_used = static_cast<int64_t>(trace.jobs.size());
  return trace;
}

SimCloudConfig DemoCloud(uint64_t seed) {
  SimCloudConfig c;
  c.seed = seed;
  c.launch_latency = {{"g5", {Seconds(150), 0.25, Seconds(60)}},
                      {"g6", {Seconds(150), 0.25, Seconds(60)}},
                      {"p4d", {Seconds(360), 0.3, Seconds(120)}},
                      {"p5", {Seconds(480), 0.3, Seconds(120)}}};
  c.hazard_by_family = {{"g5", 0.02}, {"g6", 0.02}, {"p4d", 0.05}, {"p5", 0.08}};
  c.spot_capacity_per_zone = 40;
  c.spot_capacity_by_family = {{"p4d", 3}, {"p5", 2}};
  c.on_demand_capacity_per_zone = 200;
  c.on_demand_capacity_by_family = {{"p4d", 6}, {"p5", 4}};
  c.price_walk.enabled = true;
  c.price_walk.interval = Seconds(3600);
  c.price_walk.sigma = 0.05;
  c.price_walk.reversion = 0.15;
  return c;
}

}  // namespace

std::string_view ToString(ForecastSource source) {
  return source == ForecastSource::kOracle ? "oracle" : "learned";
}

const std::vector<std::string>& BuiltinScenarioNames() {
  static const std::vector<std::string> kNames = {"demo", "scale-30d-100k"};
  return kNames;
}

Policy DemoPolicy() {
  Policy p;
  p.name = "demo";
  NodePoolPolicy inference;
  inference.name = "inference";
  inference.families = {"g5", "g6"};
  inference.regions = {"us-east-1"};
  inference.max_nodes = 200;
  NodePoolPolicy training;
  training.name = "training";
  training.instance_types = {"g5.12xlarge", "g5.48xlarge", "g6.12xlarge", "g6.48xlarge", "p4d.24xlarge",
                             "p5.48xlarge"};
  training.regions = {"us-east-1"};
  training.max_nodes = 60;
  p.pools = {inference, training};

  WorkloadClassPolicy inf;
  inf.name = "inference";
  inf.pools = {"inference"};
  inf.max_spot_share = 0.6;
  inf.checkpoint_interval = Seconds(60);
  inf.restart_cost = Seconds(90);
  inf.priority = 10;
  inf.max_zone_share = 0.5;
  inf.min_zones = 2;
  WorkloadClassPolicy train;
  train.name = "training";
  train.pools = {"training"};
  train.checkpoint_interval = Seconds(1800);
  train.restart_cost = Seconds(600);
  train.gpus_per_job = 8;
  WorkloadClassPolicy eval;
  eval.name = "eval";
  eval.pools = {"inference", "training"};
  eval.interruptible = false;
  eval.max_spot_share = 0;
  eval.priority = 5;
  p.classes = {inf, train, eval};
  p.scaling.tick_interval = Seconds(60);
  p.budget.global.hourly_usd = 900.0;
  p.budget.global.hard = true;
  p.source_file = "(built-in demo policy)";
  p.content_hash = PolicyContentHash(p);
  return p;
}

Result<Scenario> MakeBuiltinScenario(const std::string& name, uint64_t seed, std::optional<int> days,
                                     const Catalog& catalog) {
  Scenario s;
  s.name = name;
  s.seed = seed;
  s.catalog = catalog;
  s.policy = DemoPolicy();
  s.policy_source = s.policy.source_file;
  s.cloud = DemoCloud(seed);
  ParseRfc3339("2026-07-06T00:00:00Z", &s.start);
  LoadSpec spec;
  if (name == "demo") {
    const int d = days.value_or(3);
    spec.span = Seconds(int64_t{86400} * d);
    spec.inference_jobs = int64_t{720} * d;
    spec.training_jobs = int64_t{30} * d;
    spec.eval_jobs = int64_t{6} * d;
    spec.gang_per_burst = 0.25;
    s.description = "diurnal inference + bursty training with distributed jobs, " + std::to_string(d) + (d == 1 ? " day" : " days") + ", seed " + std::to_string(seed);
  } else if (name == "scale-30d-100k") {
    const int d = days.value_or(30);
    spec.span = Seconds(int64_t{86400} * d);
    spec.inference_jobs = 92000 * int64_t{d} / 30;
    spec.training_jobs = 6000 * int64_t{d} / 30;
    spec.eval_jobs = 2000 * int64_t{d} / 30;
    s.description = "speed scenario: " + std::to_string(d) + " days, " +
                    std::to_string(spec.inference_jobs + spec.training_jobs + spec.eval_jobs) + " jobs, seed " +
                    std::to_string(seed);
  } else {
    std::string known;
    for (const std::string& n : BuiltinScenarioNames()) known += (known.empty() ? "" : ", ") + n;
    return Error::NotFound("unknown scenario '" + name + "' (known: " + known + ")");
  }
  if (days && *days <= 0) return Error::InvalidInput("--days must be positive");
  s.horizon = spec.span;
  s.trace = GenerateLoad(spec, seed, name);
  s.market.source = "random walk around the catalog's spot prices";
  return s;
}

void ApplyClassBehaviour(const Policy& policy, Trace* trace) {
  for (TraceJob& j : trace->jobs) {
    const WorkloadClassPolicy* c = policy.FindClass(j.unit.workload_class);
    if (c == nullptr) continue;
    // No trace format says how a job reacts to a notice: the class does.
    j.unit.checkpoint_on_notice = c->checkpoint_on_notice;
    if (trace->behaviour_from_policy) {
      j.unit.interruptible = c->interruptible;
      j.unit.checkpoint_interval = c->checkpoint_interval;
      j.unit.restart_cost = c->restart_cost;
      j.unit.priority = c->priority;
    } else {
      j.unit.interruptible = j.unit.interruptible && c->interruptible;
    }
  }
}

namespace {

bool KeepsOffGpuFreeWork(const NodePoolPolicy& pool) {
  return std::any_of(pool.taints.begin(), pool.taints.end(), [](const Taint& t) {
    return t.key == kGpuTaintKey && (t.effect == "NoSchedule" || t.effect == "NoExecute");
  });
}

}  // namespace

void ApplyPoolTaints(const Policy& policy, Trace* trace) {
  if (std::none_of(policy.pools.begin(), policy.pools.end(), KeepsOffGpuFreeWork)) return;
  int64_t no_pool = 0;
  std::vector<TraceJob> kept;
  kept.reserve(trace->jobs.size());
  for (TraceJob& j : trace->jobs) {
    DemandUnit& u = j.unit;
    if (!u.pool.empty() || NeedsGpu(u)) {
      kept.push_back(std::move(j));
      continue;
    }
    const WorkloadClassPolicy* c = policy.FindClass(u.workload_class);
    std::vector<const NodePoolPolicy*> candidates;
    for (const NodePoolPolicy& p : policy.pools) {
      if (c == nullptr || c->pools.empty() ||
          std::find(c->pools.begin(), c->pools.end(), p.name) != c->pools.end()) {
        candidates.push_back(&p);
      }
    }
    auto usable = std::find_if(candidates.begin(), candidates.end(),
                               [](const NodePoolPolicy* p) { return !KeepsOffGpuFreeWork(*p); });
    if (usable == candidates.end()) {
      ++no_pool;
      continue;
    }
    if (std::any_of(candidates.begin(), candidates.end(),
                    [](const NodePoolPolicy* p) { return KeepsOffGpuFreeWork(*p); })) {
      u.pool = (*usable)->name;
    }
    kept.push_back(std::move(j));
  }
  trace->jobs = std::move(kept);
  if (no_pool > 0) {
    trace->stats.warnings.push_back(std::to_string(no_pool) +
                                    " jobs need no GPU and every pool they may use carries the " +
                                    kGpuTaintKey + " taint; they are not replayed");
  }
}

Scenario MakeTraceScenario(Trace trace, SpotMarket market, Catalog catalog, Policy policy, uint64_t seed,
                           std::optional<int> days) {
  if (trace.jobs.empty() && !trace.series.empty()) {
    SeriesJobOptions series_options;
    series_options.policy = &policy;
    trace = SeriesToJobs(std::move(trace), series_options);
  }
  ApplyClassBehaviour(policy, &trace);
  ApplyPoolTaints(policy, &trace);
  Scenario s;
  s.name = "trace";
  s.seed = seed;
  s.description = trace.source + (market.source.empty() ? "" : " + " + market.source);
  for (const SpotRisk& risk : market.risks) {
    for (RegionPrices& r : catalog.regions) {
      if (r.region != risk.region) continue;
      auto od = r.on_demand_usd_per_hour.find(risk.instance_type);
      if (od == r.on_demand_usd_per_hour.end()) continue;
      r.spot_usd_per_hour[risk.instance_type] = od->second * (1.0 - risk.savings_fraction);
      r.spot_interruptions_per_hour[risk.instance_type] = risk.interruptions_per_hour;
    }
  }
  s.catalog = std::move(catalog);
  s.regions.clear();
  for (const NodePoolPolicy& p : policy.pools) {
    for (const std::string& r : p.regions) {
      if (std::find(s.regions.begin(), s.regions.end(), r) == s.regions.end()) s.regions.push_back(r);
    }
  }
  if (s.regions.empty() && !s.catalog.regions.empty()) s.regions.push_back(s.catalog.regions.front().region);
  s.policy_source = policy.source_file;
  s.policy = std::move(policy);
  s.start = trace.start_time.value_or(market.start_time.value_or(FromUnixSeconds(1767225600)));  // 2026-01-01
  s.horizon = days ? Seconds(int64_t{86400} * *days) : trace.span + Seconds(86400);
  s.cloud.seed = seed;
  s.trace = std::move(trace);
  s.market = std::move(market);
  return s;
}

}  // namespace gpuscaler::sim
