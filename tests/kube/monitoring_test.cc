// The monitoring operators import as is: the PrometheusRule passes promtool
// (syntax and the alert unit tests in alerts_test.yaml), and every metric the
// rules and the Grafana dashboard read exists — in dcgm-exporter's reference
// field lists or in what a running gpuscaler serves on /metrics.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "kube/tools.h"

namespace gpuscaler::kube_test {
namespace {

namespace fs = std::filesystem;

const fs::path kRuleFile = "config/kubernetes/monitoring/prometheusrule.yaml";
const fs::path kDashboard = "config/grafana/gpuscaler-dashboard.json";

// The daemon's metric families as its /metrics documents them, and `up`,
// which Prometheus adds per target. Histograms expand to their series names.
std::set<std::string> DaemonMetricNames() {
  std::set<std::string> names = {
      "up",
      "gpuscaler_ticks_total",
      "gpuscaler_decisions_total",
      "gpuscaler_actions_total",
      "gpuscaler_capacity_errors_total",
      "gpuscaler_nodes",
      "gpuscaler_gpus",
      "gpuscaler_cost_usd_per_hour",
      "gpuscaler_predicted_cost_usd_per_hour",
      "gpuscaler_month_to_date_cost_usd",
      "gpuscaler_budget_monthly_usd",
      "gpuscaler_budget_hourly_usd",
      "gpuscaler_pending_units",
      "gpuscaler_unplaced_units",
      "gpuscaler_queue_depth",
      "gpuscaler_signal_age_seconds",
      "gpuscaler_signal_stale",
      "gpuscaler_price_age_seconds",
      "gpuscaler_prices_stale",
      "gpuscaler_scale_down_blocked",
      "gpuscaler_policy_reloads_total",
      "gpuscaler_policy_reload_ok",
      "gpuscaler_policy_info",
      "gpuscaler_leader",
      "gpuscaler_paused",
      "gpuscaler_http_requests_total",
      "process_resident_memory_bytes",
      "gpuscaler_heap_in_use_bytes",
      "gpuscaler_lead_time_seconds",
      "gpuscaler_pool_node_limit",
      "gpuscaler_schedule_in_force",
  };
  for (const char* suffix : {"_bucket", "_sum", "_count"}) names.insert(std::string("gpuscaler_tick_duration_seconds") + suffix);
  return names;
}

// DCGM field names from dcgm-exporter's shipped CSVs and real captures in
// ../shared/reference/dcgm (empty when ../shared is absent).
std::set<std::string> DcgmMetricNames() {
  std::set<std::string> names;
  const fs::path dir = SharedDir() / "reference/dcgm";
  if (!fs::is_directory(dir)) return names;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    const fs::path p = entry.path();
    if (p.extension() == ".csv") {
      std::istringstream lines(ReadFile(p));
      std::string line;
      while (std::getline(lines, line)) {
        const size_t start = line.find_first_not_of(" \t");
        if (start == std::string::npos || line[start] == '#') continue;
        std::string field = line.substr(start, line.find(',') - start);
        field.erase(field.find_last_not_of(" \t") + 1);
        if (!field.empty()) names.insert(field);
      }
    } else if (p.extension() == ".prom") {
      for (const std::string& n : MetricNamesInExposition(ReadFile(p))) names.insert(n);
    }
  }
  return names;
}

struct Expr {
  std::string where;  // alert name or panel title
  std::string promql;
};

std::vector<Expr> RuleExprs() {
  std::vector<Expr> exprs;
  const YAML::Node rule = YAML::LoadFile((SourceDir() / kRuleFile).string());
  for (const YAML::Node& group : rule["spec"]["groups"])
    for (const YAML::Node& r : group["rules"])
      exprs.push_back({"alert " + r["alert"].as<std::string>(r["record"].as<std::string>("")),
                       r["expr"].as<std::string>()});
  return exprs;
}

void CollectPanelExprs(const nlohmann::json& panels, std::vector<Expr>* out) {
  for (const nlohmann::json& p : panels) {
    if (p.contains("targets"))
      for (const nlohmann::json& t : p["targets"]) out->push_back({"panel " + p.value("title", ""), t.value("expr", "")});
    if (p.contains("panels")) CollectPanelExprs(p["panels"], out);
  }
}

std::vector<Expr> DashboardExprs() {
  const nlohmann::json dash = nlohmann::json::parse(ReadFile(SourceDir() / kDashboard));
  std::vector<Expr> exprs;
  CollectPanelExprs(dash["panels"], &exprs);
  return exprs;
}

std::set<std::string> UsedDaemonMetrics() {
  std::set<std::string> used;
  for (const auto& list : {RuleExprs(), DashboardExprs()})
    for (const Expr& e : list)
      for (const std::string& n : MetricNamesInPromQl(e.promql))
        if (n.rfind("gpuscaler_", 0) == 0) used.insert(n);
  return used;
}

TEST(PromQlNames, FindsMetricsNotFunctionsLabelsOrLiterals) {
  EXPECT_EQ(MetricNamesInPromQl(
                R"(histogram_quantile(0.9, sum by (job, le) (rate(a_bucket{job="x",le!="1"}[5m]))) > 1e3)"),
            (std::set<std::string>{"a_bucket"}));
  EXPECT_EQ(MetricNamesInPromQl(R"(max_over_time(b[10m]) == 1 and on (instance) c == 0 unless d offset 5m)"),
            (std::set<std::string>{"b", "c", "d"}));
  EXPECT_EQ(MetricNamesInPromQl(R"(e * scalar(24 * (days_in_month() - day_of_month()) + 24 - hour()))"),
            (std::set<std::string>{"e"}));
  EXPECT_EQ(MetricNamesInPromQl(R"(sum(increase(f{a="}"}[$__rate_interval])) / sum without (g) (h) > bool 0)"),
            (std::set<std::string>{"f", "h"}));
  EXPECT_EQ(MetricNamesInExposition("# HELP x y\n# TYPE x_total counter\nx_total{a=\"1\"} 3\ny 1\n\nz_bucket{le=\"+Inf\"} 2\n"),
            (std::set<std::string>{"x_total", "y", "z_bucket"}));
}

TEST(PrometheusRule, PassesPromtoolCheckAndUnitTests) {
  GPUSCALER_REQUIRE_TOOL(promtool, "promtool");
  const YAML::Node rule = YAML::LoadFile((SourceDir() / kRuleFile).string());
  ASSERT_EQ(rule["kind"].as<std::string>(), "PrometheusRule");
  ASSERT_EQ(rule["apiVersion"].as<std::string>(), "monitoring.coreos.com/v1");
  TempDir dir;
  YAML::Emitter emitter;
  emitter << rule["spec"];
  WriteFile(dir.path() / "rules.yaml", emitter.c_str());

  const CommandResult check = RunCommand({promtool.string(), "check", "rules", (dir.path() / "rules.yaml").string()});
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
  EXPECT_NE(check.out.find("SUCCESS"), std::string::npos) << check.out;

  // alerts_test.yaml names rules.yaml beside it.
  fs::copy_file(SourceDir() / "tests/kube/alerts_test.yaml", dir.path() / "alerts_test.yaml");
  const CommandResult test = RunCommand({promtool.string(), "test", "rules", (dir.path() / "alerts_test.yaml").string()});
  EXPECT_EQ(test.exit_code, 0) << test.out << test.err;
}

TEST(PrometheusRule, EveryAlertHasSeverityAndText) {
  const YAML::Node rule = YAML::LoadFile((SourceDir() / kRuleFile).string());
  std::set<std::string> names;
  for (const YAML::Node& group : rule["spec"]["groups"]) {
    for (const YAML::Node& r : group["rules"]) {
      const std::string name = r["alert"].as<std::string>("");
      SCOPED_TRACE(name);
      ASSERT_FALSE(name.empty()) << "alerts only, no recording rules to depend on";
      EXPECT_TRUE(names.insert(name).second) << "duplicate alert name";
      const std::string severity = r["labels"]["severity"].as<std::string>("");
      EXPECT_TRUE(severity == "critical" || severity == "warning" || severity == "info") << severity;
      EXPECT_FALSE(r["annotations"]["summary"].as<std::string>("").empty());
      EXPECT_FALSE(r["annotations"]["description"].as<std::string>("").empty());
    }
  }
  // The alerts the operators rely on, each by name.
  for (const char* want : {"GpuscalerBudgetBurnRateHigh", "GpuscalerMonthlyBudgetExhausted", "GpuscalerSignalStale",
                           "GpuscalerActuationErrors", "GpuscalerCapacityErrorStorm", "GpuscalerLeaderLost",
                           "GpuscalerNoLeader", "GpuscalerPolicyReloadFailed", "GpuscalerDown", "GpuscalerTickSlow"})
    EXPECT_EQ(names.count(want), 1u) << want;
}

TEST(GrafanaDashboard, ImportsAsIsWithADatasourceVariable) {
  const nlohmann::json dash = nlohmann::json::parse(ReadFile(SourceDir() / kDashboard));
  EXPECT_EQ(dash.value("uid", ""), "gpuscaler");
  EXPECT_FALSE(dash.contains("id") && !dash["id"].is_null()) << "no instance-specific id";
  bool has_datasource_var = false;
  for (const nlohmann::json& v : dash["templating"]["list"])
    if (v.value("type", "") == "datasource" && v.value("query", "") == "prometheus") has_datasource_var = true;
  EXPECT_TRUE(has_datasource_var);
  std::set<std::string> titles;
  std::set<int> ids;
  for (const nlohmann::json& p : dash["panels"]) {
    EXPECT_TRUE(ids.insert(p.value("id", -1)).second) << "duplicate panel id";
    titles.insert(p.value("title", ""));
    if (p.value("type", "") == "row") continue;
    EXPECT_EQ(p["datasource"].value("uid", ""), "${datasource}") << p.value("title", "");
  }
  for (const char* want : {"GPU utilisation vs paid GPUs", "Queue depth vs GPU capacity", "Hourly cost by capacity type",
                           "Decisions and actions", "Signal and price age"})
    EXPECT_EQ(titles.count(want), 1u) << want;
  std::set<std::string> used;
  for (const Expr& e : DashboardExprs())
    for (const std::string& n : MetricNamesInPromQl(e.promql)) used.insert(n);
  EXPECT_EQ(used.count("DCGM_FI_DEV_GPU_UTIL"), 1u);
  EXPECT_EQ(used.count("gpuscaler_price_age_seconds"), 1u);
}

// Static half: names against the daemon's documented families and the DCGM
// reference. The live test below checks the daemon really serves them.
TEST(MonitoringMetrics, RulesAndDashboardUseOnlyKnownMetrics) {
  const std::set<std::string> dcgm = DcgmMetricNames();
  if (dcgm.empty()) GTEST_SKIP() << "../shared/reference/dcgm is absent (" << SharedDir() << ")";
  ASSERT_EQ(dcgm.count("DCGM_FI_DEV_GPU_UTIL"), 1u);
  const std::set<std::string> daemon = DaemonMetricNames();
  for (const auto& list : {RuleExprs(), DashboardExprs()}) {
    for (const Expr& e : list) {
      SCOPED_TRACE(e.where + ": " + e.promql);
      const std::set<std::string> names = MetricNamesInPromQl(e.promql);
      EXPECT_FALSE(names.empty()) << "an expression that reads no metric";
      for (const std::string& n : names)
        EXPECT_TRUE(daemon.count(n) || dcgm.count(n)) << n << " is neither a gpuscaler nor a dcgm-exporter metric";
    }
  }
}

// A `gpuscaler run --demo` child process on a free loopback port.
class DemoDaemon {
 public:
  explicit DemoDaemon(const fs::path& dir) : dir_(dir) {}
  ~DemoDaemon() { Stop(); }

  // Starts it and waits up to `timeout` for the port file and a 200 from
  // /readyz. Returns the port, or 0 (the reason in *why).
  int Start(std::chrono::seconds timeout, std::string* why) {
    const fs::path port_file = dir_ / "port";
    const std::vector<std::string> args = {GPUSCALER_BINARY, "run", "--demo", "--listen", "127.0.0.1:0",
                                           "--port-file", port_file.string(), "--speed", "600",
                                           "--db", (dir_ / "audit.db").string()};
    pid_ = ::fork();
    if (pid_ < 0) {
      *why = "fork failed";
      return 0;
    }
    if (pid_ == 0) {
      std::freopen((dir_ / "daemon.log").c_str(), "w", stdout);
      std::freopen((dir_ / "daemon.log").c_str(), "a", stderr);
      std::vector<char*> argv;
      for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    int port = 0;
    // Polling a child process: the only wait in these tests, bounded above.
    while (std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        *why = "gpuscaler run --demo exited (status " + std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) +
               "):\n" + ReadFile(dir_ / "daemon.log");
        return 0;
      }
      if (port == 0) {
        std::ifstream in(port_file);
        in >> port;
        if (!in) port = 0;
      }
      if (port != 0 && HttpGet(port, "/readyz").status == 200) return port;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    *why = "not ready within " + std::to_string(timeout.count()) + " s (port " + std::to_string(port) + "):\n" +
           ReadFile(dir_ / "daemon.log");
    return 0;
  }

  // SIGTERM, then the exit code (SIGKILL after 20 s).
  int Stop() {
    if (pid_ <= 0) return -1;
    ::kill(pid_, SIGTERM);
    int status = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (::waitpid(pid_, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

 private:
  fs::path dir_;
  pid_t pid_ = -1;
};

TEST(MonitoringMetrics, RunningDaemonServesEveryMetricTheMonitoringUses) {
  TempDir dir;
  DemoDaemon daemon(dir.path());
  std::string why;
  const int port = daemon.Start(std::chrono::seconds(30), &why);
  ASSERT_NE(port, 0) << why;
  const HttpResponse metrics = HttpGet(port, "/metrics");
  ASSERT_EQ(metrics.status, 200) << metrics.body;
  const std::set<std::string> served = MetricNamesInExposition(metrics.body);
  for (const std::string& name : UsedDaemonMetrics()) {
    // A histogram's series appear once it has observations; its family is
    // declared by a # TYPE line either way.
    std::string family = name;
    for (const char* suffix : {"_bucket", "_sum", "_count"}) {
      const std::string s(suffix);
      if (family.size() > s.size() && family.compare(family.size() - s.size(), s.size(), s) == 0 &&
          served.count(family.substr(0, family.size() - s.size())))
        family = family.substr(0, family.size() - s.size());
    }
    EXPECT_TRUE(served.count(name) || served.count(family)) << name << " is not in gpuscaler's /metrics";
  }
  EXPECT_EQ(daemon.Stop(), 0) << ReadFile(dir.path() / "daemon.log");
}

}  // namespace
}  // namespace gpuscaler::kube_test
