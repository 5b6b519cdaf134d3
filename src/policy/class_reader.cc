// The classes section of a policy file (classes[]: matching, spot and
// lost-work budgets, signals, forecasts, deadlines). See loader.cc for the
// rest of the file and docs/policy.md for the schema.
#include <algorithm>
#include <string>
#include <vector>

#include "policy_reader.h"

namespace gpuscaler::policy_detail {

void PolicyReader::ReadSignalQuery(MapReader& parent, std::string_view key,
                                   std::initializer_list<SignalSource> allowed_sources,
                                   std::optional<SignalQuery>* out) {
  const DocNode* node = parent.Find(key);
  if (node == nullptr || node->IsNull()) return;
  MapReader m(r_, *node, parent.PathOf(key), {"source", "query", "vhost", "queue"});
  if (!node->IsMapping()) return;
  m.Require({"source"});
  SignalQuery q;
  m.ReadString("query", &q.query);
  m.ReadString("vhost", &q.vhost);
  m.ReadString("queue", &q.queue);
  if (std::string source; m.ReadString("source", &source)) {
    const std::optional<SignalSource> value = ValueSpelled(source, allowed_sources);
    if (!value) {
      std::vector<std::string_view> spellings;
      for (SignalSource s : allowed_sources) spellings.push_back(ToString(s));
      std::string allowed;
      for (std::string_view s : spellings) allowed += (allowed.empty() ? "" : ", ") + std::string(s);
      r_.ReportAt(m.PathOf("source"),
                  WithSuggestion("unknown source '" + source + "' (use " + allowed + ")", source, spellings));
    } else if (*value == SignalSource::kPrometheus && q.query.empty()) {
      r_.Report(m.mark(), m.PathOf("query"), "required for source prometheus (a PromQL query)");
    } else if (*value == SignalSource::kRabbitMq && q.queue.empty()) {
      r_.Report(m.mark(), m.PathOf("queue"), "required for source rabbitmq");
    }
    if (value) q.source = *value;
  }
  *out = std::move(q);
}

WorkloadClassPolicy PolicyReader::ReadClass(const DocNode& node, const std::string& path) {
  MapReader m(r_, node, path,
              {"name", "team", "match", "pools", "interruptible", "max_spot_share", "spot_share_window", "max_lost_work_share",
               "checkpoint_interval", "checkpoint_on_notice", "restart_cost", "priority", "target", "zone_spread",
               "shape", "signals", "scale_in_utilization_below", "wait_cost_usd_per_hour", "forecast", "deadline"});
  m.Require({"name"});
  WorkloadClassPolicy c;
  m.ReadString("name", &c.name);
  if (m.Has("name") && c.name.empty()) r_.ReportAt(m.PathOf("name"), "must not be empty");
  m.ReadString("team", &c.team);
  if (m.Has("team") && c.team.empty()) r_.ReportAt(m.PathOf("team"), "must not be empty (omit it for no team)");
  if (const DocNode* n = m.Find("match")) {
    MapReader match(r_, *n, m.PathOf("match"), {"namespaces", "labels"});
    match.ReadStringList("namespaces", &c.match_namespaces);
    match.ReadStringMap("labels", &c.match_labels);
  }
  m.ReadStringList("pools", &c.pools);
  m.ReadBool("interruptible", &c.interruptible);
  Share(m, "max_spot_share", &c.max_spot_share);
  if (m.ReadDuration("spot_share_window", &c.spot_share_window) && c.spot_share_window.count() > 0 &&
      !(c.max_spot_share > 0 && c.max_spot_share < 1)) {
    r_.ReportAt(m.PathOf("spot_share_window"), "is used only with a max_spot_share between 0 and 1 (an on-demand floor)");
  }
  Share(m, "max_lost_work_share", &c.max_lost_work_share);
  PositiveDuration(m, "checkpoint_interval", &c.checkpoint_interval);
  m.ReadBool("checkpoint_on_notice", &c.checkpoint_on_notice);
  m.ReadDuration("restart_cost", &c.restart_cost);
  m.ReadInt("priority", &c.priority);
  if (std::string text; m.Has("deadline") && m.ReadString("deadline", &text)) {
    std::string error;
    if (std::optional<DeadlineRule> rule = ParseDeadlineRule(text, &error)) {
      c.deadline = *rule;
    } else {
      r_.ReportAt(m.PathOf("deadline"), error + " (omit it for work that runs at once)");
    }
  }
  if (const DocNode* n = m.Find("target")) {
    MapReader t(r_, *n, m.PathOf("target"), {"max_queue_wait", "jobs_per_gpu_per_minute"});
    Seconds wait;
    if (t.ReadDuration("max_queue_wait", &wait)) c.max_queue_wait = wait;
    double rate = 0;
    if (t.ReadNumber("jobs_per_gpu_per_minute", &rate)) {
      if (rate <= 0) {
        r_.ReportAt(t.PathOf("jobs_per_gpu_per_minute"),
                    "must be > 0, got " + t.Find("jobs_per_gpu_per_minute")->scalar);
      } else {
        c.jobs_per_gpu_per_minute = rate;
      }
    }
  }
  if (const DocNode* n = m.Find("zone_spread")) {
    MapReader z(r_, *n, m.PathOf("zone_spread"), {"max_zone_share", "min_zones"});
    Share(z, "max_zone_share", &c.max_zone_share);
    if (z.Has("max_zone_share") && c.max_zone_share == 0) {
      r_.ReportAt(z.PathOf("max_zone_share"), "must be > 0 (0 would forbid every zone)");
    }
    IntAtLeast(z, "min_zones", 1, &c.min_zones);
  }
  if (const DocNode* n = m.Find("shape")) {
    MapReader s(r_, *n, m.PathOf("shape"),
                {"gpus", "mig_profile", "gpu_models", "min_gpu_memory_mib", "cpu_milli",
                 "memory_mib", "expected_runtime"});
    IntAtLeast(s, "gpus", 1, &c.gpus_per_job);
    s.ReadString("mig_profile", &c.mig_profile);
    if (!c.mig_profile.empty() && s.Has("gpus") && c.gpus_per_job != 1) {
      r_.ReportAt(s.PathOf("gpus"), "must be 1 with a mig_profile (a job gets one MIG instance)");
    }
    s.ReadStringList("gpu_models", &c.gpu_models);
    IntAtLeast<int64_t>(s, "min_gpu_memory_mib", 0, &c.min_gpu_memory_mib);
    IntAtLeast<int64_t>(s, "cpu_milli", 0, &c.cpu_milli_per_job);
    IntAtLeast<int64_t>(s, "memory_mib", 0, &c.memory_mib_per_job);
    PositiveDuration(s, "expected_runtime", &c.expected_runtime);
    if (catalog_ != nullptr) {
      CheckKnown(s.PathOf("gpu_models"), c.gpu_models, "GPU model", CatalogGpuNames(),
                 [](const Catalog& cat, const std::string& v) {
                   return cat.FindGpuModel(v) != nullptr;
                 });
      if (!c.mig_profile.empty()) {
        const bool known = std::any_of(
            catalog_->gpu_models.begin(), catalog_->gpu_models.end(),
            [&](const GpuModel& g) { return g.FindMigProfile(c.mig_profile) != nullptr; });
        if (!known) {
          unresolved_.insert(path);
          r_.ReportAt(s.PathOf("mig_profile"),
                      "no GPU model in the catalog has MIG profile '" + c.mig_profile + "'");
        }
      }
    }
  }
  if (const DocNode* n = m.Find("signals")) {
    MapReader s(r_, *n, m.PathOf("signals"), {"queue_depth", "gpu_utilization"});
    ReadSignalQuery(s, "queue_depth", {SignalSource::kPrometheus, SignalSource::kRabbitMq}, &c.queue_depth);
    ReadSignalQuery(s, "gpu_utilization", {SignalSource::kPrometheus, SignalSource::kDcgm}, &c.gpu_utilization);
  }
  Share(m, "scale_in_utilization_below", &c.scale_in_utilization_below);
  double wait_cost = 0;
  if (m.Has("wait_cost_usd_per_hour")) {
    NonNegative(m, "wait_cost_usd_per_hour", &wait_cost);
    c.wait_cost_usd_per_hour = wait_cost;
  }
  if (const DocNode* n = m.Find("forecast")) c.forecast = ReadForecast(*n, m.PathOf("forecast"));
  return c;
}

ForecastPolicy PolicyReader::ReadForecast(const DocNode& node, const std::string& path) {
  MapReader m(r_, node, path, {"quantile", "horizon", "max_idle_usd_per_hour"});
  ForecastPolicy f;
  if (m.ReadNumber("quantile", &f.quantile) && !(f.quantile > 0 && f.quantile < 1)) {
    r_.ReportAt(m.PathOf("quantile"), "must be in (0, 1), got " + m.Find("quantile")->scalar);
  }
  if (const DocNode* h = m.Find("horizon")) {
    // "auto" (the class's learned lead time) or a duration.
    if (!(h->IsScalar() && h->scalar == "auto")) {
      Seconds horizon{0};
      if (m.ReadDuration("horizon", &horizon)) {
        if (horizon.count() < 1 || horizon > kMaxForecastHorizon) {
          r_.ReportAt(m.PathOf("horizon"), "must be auto or a duration between 1s and 1d, got " + h->scalar);
        } else {
          f.horizon = horizon;
        }
      }
    }
  }
  double cap = 0;
  if (m.Has("max_idle_usd_per_hour")) {
    NonNegative(m, "max_idle_usd_per_hour", &cap);
    f.max_idle_usd_per_hour = cap;
  }
  return f;
}

}  // namespace gpuscaler::policy_detail
