// Audit write throughput: decisions per second written in batched ticks to a
// WAL file in /tmp. Each tick: 1 decision, 10 price samples, 4 usage rows,
// and (by argument) 3 actions, each an intent then its outcome.
//
//   ./audit_write_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
//
// Arguments: actions per tick (0 or 3); intents one call each (0) or one
// batch per tick (1); intent sync: 0 kFsync (the daemon), 1 kNoFsync,
// 2 kWithTick (the simulator: intents join the tick's transaction); ticks
// per commit (1: the daemon; 64: the simulator's group commit); with the
// planner's input (0: none; N: a snapshot of N pending units beside the
// demo's 108 offerings and 20 nodes, kept per decision, decision_inputs.h).
//
// BM_EncodeSnapshot/N: the two steps of keeping a decision's input for N
// pending units, by themselves: writing the snapshot JSON, and zstd.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "gpuscaler/model/json.h"
#include "gpuscaler/policy/loader.h"
#include "gpuscaler/store/audit_reader.h"
#include "gpuscaler/store/decision_inputs.h"
#include "gpuscaler/store/sqlite_audit_store.h"

namespace gpuscaler {
namespace {

Offering BenchOffering(int i) {
  Offering o;
  o.instance_type = i % 2 == 0 ? "g5.12xlarge" : "p4d.24xlarge";
  o.region = "us-east-1";
  o.zone = "us-east-1" + std::string(1, static_cast<char>('a' + i % 5));
  o.capacity_type = i % 3 == 0 ? CapacityType::kOnDemand : CapacityType::kSpot;
  o.usd_per_hour = 2.0 + 0.01 * i;
  o.on_demand_usd_per_hour = 5.672;
  o.interruptions_per_hour = 0.02;
  return o;
}

// A snapshot shaped like the demo's (108 offerings, 20 nodes with two
// running units each) plus `pending` queue-derived units.
Snapshot BenchSnapshot(int pending) {
  Snapshot s;
  s.time = FromUnixSeconds(1'800'000'000);
  for (int i = 0; i < 108; ++i) s.offerings.push_back(BenchOffering(i));
  auto unit = [](const std::string& id, int gpus) {
    DemandUnit u;
    u.id = id;
    u.workload_class = gpus == 1 ? "render" : "train";
    u.gpus = gpus;
    u.cpu_milli = 3000 * gpus;
    u.memory_mib = 12000 * gpus;
    return u;
  };
  for (int n = 0; n < 20; ++n) {
    Node node;
    node.id = "i-" + std::to_string(100000 + n);
    node.instance_id = node.id;
    node.pool = "gpu";
    node.offering = BenchOffering(n);
    node.launch_time = s.time - Seconds(3600);
    for (int k = 0; k < 2; ++k) node.running.push_back(unit("run-" + std::to_string(n) + "-" + std::to_string(k), 1));
    s.nodes.push_back(node);
  }
  for (int i = 0; i < pending; ++i) s.pending.push_back(unit((i % 5 == 0 ? "train/" : "render/") + std::to_string(i), i % 5 == 0 ? 4 : 1));
  return s;
}

void BM_AuditTick(benchmark::State& state) {
  const int actions_per_tick = static_cast<int>(state.range(0));
  const bool batched_intents = state.range(1) == 1;
  SqliteAuditStoreOptions options;
  using Sync = SqliteAuditStoreOptions::IntentSync;
  options.group_commit_ticks = static_cast<int>(state.range(3));
  options.intent_sync = state.range(2) == 0 ? Sync::kFsync : state.range(2) == 1 ? Sync::kNoFsync : Sync::kWithTick;
  const std::string path = "/tmp/gpuscaler_audit_bench_" + std::to_string(::getpid()) + ".db";
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path + suffix);
  Result<std::unique_ptr<SqliteAuditStore>> opened = SqliteAuditStore::Open(path, options);
  if (!opened) {
    state.SkipWithError(opened.error().ToString().c_str());
    return;
  }
  SqliteAuditStore& store = **opened;

  DecisionRecord decision;
  decision.policy_name = "bench";
  decision.policy_hash = "sha256:bench";
  decision.signals_json = R"({"render_queue":{"value":1200,"age_s":4,"stale":false},"gpu_util":{"value":0.71}})";
  decision.snapshot_summary_json = R"({"pods":1200,"nodes":40,"pools":3})";
  decision.plan_json = std::string(R"({"launches":[{"offering":"g5.12xlarge/us-east-1b/spot","count":3}],"pad":")") +
                       std::string(1500, 'x') + "\"}";
  decision.summary = "launch 3 × g5.12xlarge spot for render";
  const Snapshot snapshot = BenchSnapshot(static_cast<int>(state.range(4)));
  const Policy policy = DefaultPolicy();
  if (state.range(4) > 0) {
    decision.planner_snapshot_json = FormatSnapshotJsonLine(snapshot);
    decision.planner_policy = &policy;
    decision.policy_hash = policy.content_hash;
  }
  std::vector<PriceSample> samples(10);
  for (int i = 0; i < 10; ++i) samples[i].offering = BenchOffering(i);
  std::vector<UsageRecord> usage(4);
  for (int i = 0; i < 4; ++i) {
    usage[i] = {"i-" + std::to_string(i), "render", "vfx", {}, {}, 120.0, 90.0};
  }

  int64_t tick = 0;
  int64_t tokens = 0;
  bool failed = false;
  for (auto _ : state) {
    const WallTime now = FromUnixSeconds(1'800'000'000 + 15 * tick++);
    bool ok = store.BeginTick().ok();
    decision.time = now;
    Result<int64_t> decision_id = store.RecordDecision(decision);
    ok = ok && decision_id.ok();
    std::vector<ActionRecord> actions(static_cast<size_t>(actions_per_tick));
    for (ActionRecord& a : actions) {
      a.decision_id = decision_id.ok() ? *decision_id : 0;
      a.idempotency_token = "bench-" + std::to_string(tokens++);
      a.pool = "render";
      a.offering = BenchOffering(1);
      a.count = 1;
      a.reason = "queue render";
    }
    std::vector<int64_t> action_ids;
    if (batched_intents && !actions.empty()) {
      Result<std::vector<int64_t>> ids = store.RecordActionIntents(actions);
      ok = ok && ids.ok();
      if (ids.ok()) action_ids = *ids;
    } else {
      for (const ActionRecord& a : actions) {
        Result<int64_t> id = store.RecordActionIntent(a);
        ok = ok && id.ok();
        if (id.ok()) action_ids.push_back(*id);
      }
    }
    for (int64_t id : action_ids) {
      ok = ok && store.RecordActionOutcome(id, ActionOutcome::kSucceeded, "", {"i-new"}).ok();
    }
    for (PriceSample& s : samples) s.time = now;
    ok = ok && store.RecordPriceSamples(samples).ok();
    for (UsageRecord& u : usage) {
      u.start = now - Seconds(15);
      u.end = now;
    }
    ok = ok && store.RecordUsage(usage).ok();
    ok = store.CommitTick().ok() && ok;
    if (!ok) {
      failed = true;
      break;
    }
  }
  if (failed) {
    state.SkipWithError("an audit write failed");
  } else {
    // Check the answer: every tick's decision is there.
    if (Status flushed = store.Flush(); !flushed.ok()) state.SkipWithError(flushed.error().ToString().c_str());
    Result<std::unique_ptr<AuditReader>> reader = store.OpenReader();
    Result<std::vector<DecisionRow>> last =
        reader ? (*reader)->DecisionsAfterId(tick - 1, 10) : Result<std::vector<DecisionRow>>(reader.error());
    if (!last || last->size() != 1 || (*last)[0].id != tick) state.SkipWithError("decision count mismatch");
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["decisions_per_s"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
  opened->reset();
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path + suffix);
}

BENCHMARK(BM_AuditTick)
    ->ArgNames({"actions", "batched", "sync", "group", "input"})
    ->Args({0, 0, 0, 1, 0})
    ->Args({0, 0, 0, 1, 5})
    ->Args({3, 0, 2, 1, 0})
    ->Args({3, 0, 2, 64, 0})
    ->Args({3, 0, 2, 64, 5})
    ->Args({3, 1, 1, 1, 0})
    ->Args({3, 1, 0, 1, 0})
    ->Args({3, 0, 0, 1, 0})
    ->MinTime(2.0)
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

void BM_EncodeSnapshot(benchmark::State& state) {
  const Snapshot snapshot = BenchSnapshot(static_cast<int>(state.range(0)));
  const bool compress = state.range(1) == 1;
  std::string text = FormatSnapshotJsonLine(snapshot);
  std::string packed;
  for (auto _ : state) {
    if (compress) {
      Result<std::string> out = CompressSnapshotText(text, std::move(packed));
      if (!out) {
        state.SkipWithError(out.error().message().c_str());
        break;
      }
      packed = std::move(*out);
    } else {
      text = FormatSnapshotJsonLine(snapshot, std::move(text));
    }
  }
  // Check the answer: the bytes read back.
  Result<std::string> packed_once = CompressSnapshotText(text);
  Result<std::string> back =
      packed_once ? DecompressSnapshotText(*packed_once, static_cast<int64_t>(text.size()), 0) : packed_once;
  if (!back || *back != text) state.SkipWithError("snapshot round trip mismatch");
  state.counters["json_bytes"] = static_cast<double>(text.size());
  state.counters["zstd_bytes"] = packed_once ? static_cast<double>(packed_once->size()) : 0;
}

BENCHMARK(BM_EncodeSnapshot)
    ->ArgNames({"units", "zstd"})
    ->Args({5, 0})
    ->Args({5, 1})
    ->Args({10000, 0})
    ->Args({10000, 1})
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace gpuscaler

BENCHMARK_MAIN();
