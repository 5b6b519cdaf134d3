// The daemon's HTTP routes. Handlers read the published state (state.h) or
// open the audit database read-only; none touches the engine, so none can
// block or race a tick.
#include <nlohmann/json.hpp>

#include <map>
#include <memory>
#include <mutex>

#include "daemon_parts.h"
#include "dashboard.h"
#include "gpuscaler/daemon/decision_replay.h"
#include "gpuscaler/model/json.h"
#include "gpuscaler/report/report.h"
#include "gpuscaler/solver/planner.h"
#include "gpuscaler/store/audit_reader.h"
#include "report_cache.h"

namespace gpuscaler::daemon {
namespace {

using server::HttpRequest;
using server::HttpResponse;

// How long the loop may be silent before /healthz fails: a tick may take
// a while (cloud calls with retries), so be generous.
std::chrono::seconds LivenessWindow(const PublishedState& s, const Policy* policy) {
  const double interval = policy ? static_cast<double>(policy->scaling.tick_interval.count()) : 30.0;
  return std::chrono::seconds(static_cast<int64_t>(std::max(60.0, 3 * interval / std::max(s.speed, 1.0) + 60)));
}

HttpResponse Decisions(const std::string& db_file, int64_t last_id, const HttpRequest& req) {
  if (db_file.empty()) return HttpResponse::Error(404, "no audit database");
  WallTime since{};
  const std::string since_text = req.Param("since");
  if (!since_text.empty() && !ParseRfc3339(since_text, &since)) {
    char* end = nullptr;
    const long long unix_s = std::strtoll(since_text.c_str(), &end, 10);
    if (end == since_text.c_str() || *end != '\0')
      return HttpResponse::Error(400, "since: expected an RFC 3339 time or unix seconds, got '" + since_text + "'");
    since = WallTime(Seconds(unix_s));
  }
  int limit = 100;
  if (const std::string l = req.Param("limit"); !l.empty()) {
    char* end = nullptr;
    const long v = std::strtol(l.c_str(), &end, 10);
    if (end == l.c_str() || *end != '\0' || v < 1 || v > 1000)
      return HttpResponse::Error(400, "limit: expected 1..1000, got '" + l + "'");
    limit = static_cast<int>(v);
  }
  Result<std::unique_ptr<AuditReader>> reader = AuditReader::Open(db_file);
  if (!reader) return HttpResponse::Error(503, reader.error().message());
  // Without `since`: the newest, newest first (the dashboard's "recent").
  // Ids only grow, so the last `limit` ids up to the latest decision are it.
  Result<std::vector<DecisionRow>> rows =
      since_text.empty() ? (*reader)->DecisionsAfterId(std::max<int64_t>(0, last_id - limit), limit)
                         : (*reader)->DecisionsSince(since, limit);
  if (!rows) return HttpResponse::Error(503, rows.error().message());
  std::vector<DecisionRow> list = std::move(rows).value();
  if (since_text.empty()) {
    if (list.size() > static_cast<size_t>(limit)) list.erase(list.begin(), list.end() - limit);
    std::reverse(list.begin(), list.end());
  }
  nlohmann::json out = nlohmann::json::array();
  for (const DecisionRow& r : list) {
    const DecisionRecord& d = r.decision;
    nlohmann::json j = {{"id", r.id},
                        {"time", FormatRfc3339(d.time)},
                        {"source", d.source},
                        {"policy", d.policy_name},
                        {"policy_hash", d.policy_hash},
                        {"pending_units", d.pending_units},
                        {"nodes", d.nodes},
                        {"summary", d.summary},
                        {"cost_before_usd_per_hour", d.cost_before_usd_per_hour},
                        {"cost_after_usd_per_hour", d.cost_after_usd_per_hour},
                        {"expected_interruption_usd_per_hour", d.expected_interruption_usd_per_hour},
                        {"scale_down_blocked", d.scale_down_blocked}};
    if (req.Param("detail") == "1") {
      j["plan"] = nlohmann::json::parse(d.plan_json, nullptr, false);
      j["signals"] = nlohmann::json::parse(d.signals_json, nullptr, false);
    }
    out.push_back(std::move(j));
  }
  return HttpResponse::Json(nlohmann::json{{"decisions", out}}.dump());
}

HttpResponse Report(const std::string& db_file, const PublishedState& s, const HttpRequest& req) {
  if (db_file.empty()) return HttpResponse::Error(404, "no audit database");
  std::map<std::string, std::string> params = req.query;
  // Default window: from the day the daemon started to the day after its
  // latest tick (the demo's clock is virtual, so "this month" would be empty).
  const WallTime last = s.last_tick_time.value_or(s.started_at);
  auto day = [](WallTime t) { return WallTime(std::chrono::floor<std::chrono::days>(t)); };
  if (!params.count("from")) params["from"] = FormatRfc3339(day(s.started_at));
  if (!params.count("to")) params["to"] = FormatRfc3339(day(last) + std::chrono::days(1));
  if (!params.count("format")) params["format"] = "html";
  // The daemon's database holds one run per daemon lifetime: report them
  // together unless a run is asked for.
  if (!params.count("run") && !params.count("all_runs")) params["all_runs"] = "true";
  // A path below /reports/ names the format: /reports/report.csv, .json, .html, .focus.csv
  const std::string tail = req.path.substr(std::string("/reports").size());
  for (const auto& [suffix, format] : std::vector<std::pair<std::string, std::string>>{
           {".focus.csv", "focus"}, {".csv", "csv"}, {".json", "json"}, {".html", "html"}}) {
    if (tail.size() >= suffix.size() && tail.compare(tail.size() - suffix.size(), suffix.size(), suffix) == 0) {
      params["format"] = format;
      break;
    }
  }
  Result<report::ReportQuery> q = report::ParseReportQuery(params);
  if (!q) return HttpResponse::Error(400, q.error().message());
  q->db_path = db_file;
  Result<report::RenderedReport> r = report::RenderReport(*q);
  if (!r) {
    const int status = r.error().category() == ErrorCategory::kInvalidInput ? 400
                       : r.error().category() == ErrorCategory::kNotFound   ? 404
                                                                            : 503;
    return HttpResponse::Error(status, r.error().message());
  }
  HttpResponse out;
  out.content_type = r->content_type;
  out.body = std::move(r->body);
  return out;
}

// The decision id in `path` after `prefix` and before `suffix`; 0 when the
// path is not of that form.
int64_t DecisionIdIn(const std::string& path, std::string_view prefix, std::string_view suffix) {
  if (path.rfind(prefix, 0) != 0 || path.size() < prefix.size() + suffix.size() ||
      path.compare(path.size() - suffix.size(), suffix.size(), suffix) != 0)
    return 0;
  const std::string id_text = path.substr(prefix.size(), path.size() - prefix.size() - suffix.size());
  char* end = nullptr;
  const long long id = std::strtoll(id_text.c_str(), &end, 10);
  if (id_text.empty() || *end != '\0' || id < 1) return 0;
  return id;
}

// The decision replayed from its stored input (daemon/decision_replay.h), as
// `gpuscaler explain --db --decision` does: GET /decisions/ID as a page (with
// the nodes the decision launched), GET /api/v1/decisions/ID/explain as JSON.
HttpResponse DecisionReplayResponse(const std::string& db_file, const PublishedState& s, const HttpRequest& req,
                                    bool html) {
  if (db_file.empty()) return HttpResponse::Error(404, "no audit database");
  const int64_t id = html ? DecisionIdIn(req.path, "/decisions/", "") : DecisionIdIn(req.path, "/api/v1/decisions/", "/explain");
  if (id == 0) {
    return HttpResponse::Error(400, std::string("expected ") + (html ? "/decisions/ID" : "/api/v1/decisions/ID/explain") +
                                        " with a decision id >= 1, got '" + req.path + "'");
  }
  Result<std::unique_ptr<AuditReader>> reader = AuditReader::Open(db_file);
  if (!reader) return HttpResponse::Error(503, reader.error().message());
  Result<DecisionReplay> replay = ReplayDecision(**reader, id);
  if (!replay) {
    return HttpResponse::Error(replay.error().category() == ErrorCategory::kNotFound ? 404 : 500,
                               replay.error().message());
  }
  if (!html) return HttpResponse::Json(FormatDecisionReplayJson(*replay));
  const WallTime decided = replay->decision.decision.time;
  Result<std::vector<NodeRow>> nodes =
      (*reader)->NodesOverlapping(decided, std::max(decided, s.last_tick_time.value_or(decided)) + Seconds(1));
  if (!nodes) return HttpResponse::Error(503, nodes.error().message());
  std::vector<NodeRow> launched;
  for (NodeRow& n : *nodes) {
    if (n.launch.decision_id == id) launched.push_back(std::move(n));
  }
  return HttpResponse::Html(DecisionExplainPage(*replay, launched, s));
}

// The dashboard's page and JSON, rendered together once per state version:
// both read the audit database, and a wall of open dashboards must not
// multiply that.
class DashboardCache {
 public:
  struct Rendered {
    std::string page;
    std::string json;
  };
  std::shared_ptr<const Rendered> Get(const DaemonState& state) {
    const uint64_t version = state.Version();
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (rendered_ && version_ == version) return rendered_;
    }
    const DashboardInputs inputs = ReadDashboardInputs(state.Get());
    auto rendered = std::make_shared<const Rendered>(Rendered{DashboardPage(inputs), DashboardJson(inputs)});
    std::lock_guard<std::mutex> lock(mu_);
    if (!rendered_ || version >= version_) {
      rendered_ = rendered;
      version_ = version;
    }
    return rendered;
  }
  bool Ready(const DaemonState& state) {
    std::lock_guard<std::mutex> lock(mu_);
    return rendered_ && version_ == state.Version();
  }

 private:
  std::mutex mu_;
  uint64_t version_ = 0;
  std::shared_ptr<const Rendered> rendered_;
};

}  // namespace

server::Router BuildRouter(DaemonSetup& setup, DaemonState& state, DaemonMetrics& metrics) {
  server::Router router(setup.api_token);
  const std::string db_file = setup.db_file;

  router.Get("/healthz", [&state](const HttpRequest&) {
    const PublishedState s = state.Get();
    const auto silent = std::chrono::steady_clock::now() - state.last_beat();
    if (state.last_beat() != std::chrono::steady_clock::time_point{} &&
        silent > LivenessWindow(s, s.policy.get()))
      return HttpResponse::Text("control loop stalled\n", 503);
    return HttpResponse::Text("ok\n");
  });
  router.Get("/readyz", [&state](const HttpRequest&) {
    const PublishedState s = state.Get();
    if (!s.leader) return HttpResponse::Text("not the leader\n", 503);
    if (!s.ready) return HttpResponse::Text("no successful tick yet\n", 503);
    return HttpResponse::Text("ready\n");
  });
  router.Get("/metrics", [&metrics](const HttpRequest&) {
    HttpResponse r = HttpResponse::Text(metrics.registry().Render());
    r.content_type = server::MetricsRegistry::kContentType;
    return r;
  });
  auto dashboard = std::make_shared<DashboardCache>();
  router.Get("/", [&state, dashboard](const HttpRequest&) { return HttpResponse::Html(dashboard->Get(state)->page); });
  router.Get("/api/v1/dashboard",
             [&state, dashboard](const HttpRequest&) { return HttpResponse::Json(dashboard->Get(state)->json); });
  // The dashboard polls this and a load test floods it: rendered once per
  // state version (a 720-point series is milliseconds of JSON), not per
  // request, which at 1,000 connections saturated the I/O thread.
  struct StatusCache {
    std::mutex mu;
    uint64_t version = 0;
    std::shared_ptr<const std::string> json;
  };
  auto status = std::make_shared<StatusCache>();
  router.Get("/api/v1/status", [&state, status](const HttpRequest&) {
    // The version is read before the copy: an Update in between makes the
    // render newer than its label, which costs one more render, never a
    // stale answer.
    const uint64_t version = state.Version();
    {
      std::lock_guard<std::mutex> lock(status->mu);
      if (status->json && status->version == version) return HttpResponse::Json(*status->json);
    }
    auto json = std::make_shared<const std::string>(StatusJson(state.Get()));
    std::lock_guard<std::mutex> lock(status->mu);
    if (!status->json || version >= status->version) {
      status->json = json;
      status->version = version;
    }
    return HttpResponse::Json(*json);
  });
  router.Get("/api/v1/decisions", [db_file, &state](const HttpRequest& req) {
    return Decisions(db_file, state.Get().last_decision_id, req);
  });
  router.GetPrefix("/decisions/", [db_file, &state](const HttpRequest& req) {
    return DecisionReplayResponse(db_file, state.Get(), req, true);
  });
  router.GetPrefix("/api/v1/decisions/", [db_file, &state](const HttpRequest& req) {
    return DecisionReplayResponse(db_file, state.Get(), req, false);
  });
  router.Get("/api/v1/snapshot", [&state](const HttpRequest&) {
    const PublishedState s = state.Get();
    if (!s.snapshot) return HttpResponse::Error(503, "no tick has run yet");
    return HttpResponse::Json(FormatSnapshotJson(*s.snapshot));
  });
  // A dry run of the planner on the last snapshot with the policy in force:
  // what the next tick would do if nothing changed (before the governor's
  // stabilisation and cooldowns).
  router.Get("/api/v1/plan", [&state](const HttpRequest&) {
    const PublishedState s = state.Get();
    if (!s.snapshot || !s.policy) return HttpResponse::Error(503, "no tick has run yet");
    return HttpResponse::Json(FormatPlanJson(MakePlan(*s.snapshot, *s.policy)));
  });
  router.Get("/api/v1/policy", [&state](const HttpRequest&) {
    const PublishedState s = state.Get();
    nlohmann::json j;
    if (s.policy) {
      j["name"] = s.policy->name;
      j["hash"] = s.policy->content_hash;
      j["file"] = s.policy->source_file;
      j["pools"] = s.policy->pools.size();
      j["classes"] = s.policy->classes.size();
      j["tick_interval_s"] = s.policy->scaling.tick_interval.count();
    }
    j["reloads"] = s.policy_reloads;
    j["rejections"] = s.policy_rejections;
    j["last_rejection"] = s.policy_errors;
    return HttpResponse::Json(j.dump());
  });
  router.Post("/api/v1/pause", [&state, &metrics](const HttpRequest&) {
    state.Update([](PublishedState& s) { s.paused = true; });
    metrics.SetPaused(true);
    return HttpResponse::Json(R"({"paused":true})");
  });
  router.Post("/api/v1/resume", [&state, &metrics](const HttpRequest&) {
    state.Update([](PublishedState& s) { s.paused = false; });
    metrics.SetPaused(false);
    return HttpResponse::Json(R"({"paused":false})");
  });
  auto reports = std::make_shared<ReportCache>();
  router.GetPrefix("/reports", [db_file, &state, reports](const HttpRequest& req) {
    const PublishedState s = state.Get();
    return reports->Get(req.target, s.ticks, [&] { return Report(db_file, s, req); });
  });
  // These read the audit file or run the planner (milliseconds to seconds):
  // on the server's pool, so a burst of them cannot starve /healthz,
  // /metrics or the tick timer on the I/O thread (bench/load/run_load.sh).
  // Their handlers share nothing but the mutex-guarded state. A report this
  // tick has already rendered is a copy, answered on the I/O thread: the
  // pool runs at low priority, and a cached answer must not queue behind
  // CPU-bound work under a flood of clients.
  setup.server_options.slow_request = [reports, dashboard, &state](const HttpRequest& req) {
    if (req.path == "/reports" || req.path.rfind("/reports/", 0) == 0) return !reports->Ready(req.target, state.Ticks());
    if (req.path == "/" || req.path == "/api/v1/dashboard") return !dashboard->Ready(state);
    return req.path == "/api/v1/decisions" || req.path == "/api/v1/plan" || req.path.rfind("/decisions/", 0) == 0 ||
           req.path.rfind("/api/v1/decisions/", 0) == 0;
  };
  return router;
}

}  // namespace gpuscaler::daemon
