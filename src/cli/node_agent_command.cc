// `gpuscaler node-agent --node-name NAME [--vm-name NAME] [--imds-endpoint URL]
// [--ca-file FILE] [--kubeconfig FILE [--context NAME]] [--interval-ms N]`:
// the node-local half of Spot eviction notices on Azure, run as a DaemonSet
// on the Spot nodes (config/kubernetes/overlays/aks/node-agent.yaml). Every
// interval it reads the Instance Metadata Service's scheduled events (only
// the VM itself can) and, on a Preempt or Terminate event for its own VM,
// sets the condition gpuscaler.io/SpotPreempted on its own Node with the
// event's NotBefore (kube/spot_notice.h), by a strategic merge patch of the
// Node's status. The daemon reads the condition from the nodes it watches
// and cordons, drains and replaces the node before the VM goes (docs/azure.md).
//
// Its own VM: events whose Resources name --vm-name, the node name, or the
// VM name a scale set's node name gives (AzureVmNameOfComputerName); IMDS
// also shows the events of other VMs of a placement group, which are theirs
// to report. It acknowledges no event (a POST to IMDS would let the
// platform start it sooner, and the eviction is not the agent's to speed up).
// Until SIGINT or SIGTERM; an unreachable IMDS or API server is logged and
// tried again next interval.
#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <memory>
#include <set>
#include <string>
#include <thread>

#include "commands.h"
#include "gpuscaler/cloud/azure_scheduled_events.h"
#include "gpuscaler/kube/client.h"
#include "gpuscaler/kube/config.h"
#include "gpuscaler/kube/spot_notice.h"
#include "gpuscaler/net/http_client.h"
#include "gpuscaler/net/url.h"

namespace gpuscaler::cli {
namespace {

struct NodeAgentOptions {
  std::string node_name;
  std::string vm_name;
  std::string imds_endpoint = "http://169.254.169.254";
  std::string ca_file;
  std::string kubeconfig;
  std::string context;
  int interval_ms = 1000;
};

std::atomic<bool> node_agent_stopping{false};

bool IsOwnEvent(const cloud::AzureScheduledEvent& e, const std::set<std::string>& names) {
  if (e.event_type != "Preempt" && e.event_type != "Terminate") return false;
  for (const std::string& r : e.resources) {
    if (names.count(r) != 0) return true;
  }
  return false;
}

// Reports the VM's own eviction events not reported yet onto the Node;
// `reported` holds the event ids done.
void PollOnce(const NodeAgentOptions& o, const std::set<std::string>& names, kube::ApiClient& api,
              std::set<std::string>* reported) {
  net::HttpRequest request;
  request.url = o.imds_endpoint + cloud::kAzureScheduledEventsPath;
  request.headers = {{"Metadata", "true"}};
  net::HttpClientOptions http;
  http.timeout = std::chrono::milliseconds(2000);
  http.ca_file = o.ca_file;
  Result<net::HttpResponse> answer = net::Fetch(request, http);
  if (!answer || answer->status != 200) {
    spdlog::warn("node-agent: scheduled events: {}",
                 answer ? "HTTP " + std::to_string(answer->status) : answer.error().ToString());
    return;
  }
  Result<std::vector<cloud::AzureScheduledEvent>> events = cloud::ParseAzureScheduledEvents(answer->body);
  if (!events) {
    spdlog::warn("node-agent: {}", events.error().ToString());
    return;
  }
  const WallTime now = std::chrono::time_point_cast<Seconds>(std::chrono::system_clock::now());
  for (const cloud::AzureScheduledEvent& e : *events) {
    if (!IsOwnEvent(e, names) || reported->count(e.event_id) != 0) continue;
    // A Started event has no NotBefore: it is happening now.
    const kube::NodeSpotNotice notice{e.event_type, e.event_id, e.not_before.value_or(now)};
    Result<kube::ApiResponse> patched =
        api.Call("PATCH", "/api/v1/nodes/" + net::PercentEncode(o.node_name) + "/status",
                 kube::SpotNoticeStatusPatch(notice, now), "application/strategic-merge-patch+json");
    if (!patched || !patched->ok()) {
      spdlog::warn("node-agent: node {} status: {}", o.node_name,
                   patched ? kube::ApiError(*patched, "patch").ToString() : patched.error().ToString());
      continue;  // tried again next interval
    }
    reported->insert(e.event_id);
    spdlog::info("node-agent: {} event {} for {}: node {} condition {} set ({})", e.event_type, e.event_id,
                 e.resources.empty() ? "?" : e.resources.front(), o.node_name, kube::kSpotPreemptedCondition,
                 kube::FormatSpotNoticeMessage(notice));
  }
}

int RunNodeAgent(const NodeAgentOptions& o) {
  auto fail = [](const std::string& message, int code) {
    return FailCommand("gpuscaler node-agent", message, code);
  };
  if (o.node_name.empty()) return fail("--node-name is required (the downward API's spec.nodeName)", 2);
  if (o.interval_ms < 100) return fail("--interval-ms must be at least 100", 2);
  Result<kube::ClusterConfig> cluster =
      o.kubeconfig.empty() ? kube::InClusterConfig([](const std::string& name) -> std::optional<std::string> {
        const char* v = std::getenv(name.c_str());
        return v == nullptr ? std::nullopt : std::optional<std::string>(v);
      })
                           : kube::KubeconfigConfig(o.kubeconfig, o.context);
  if (!cluster) return fail(cluster.error().ToString(), 2);
  kube::ApiClient api(std::move(cluster).value(), std::chrono::seconds(5));
  std::set<std::string> names = {o.node_name};
  if (!o.vm_name.empty()) names.insert(o.vm_name);
  if (std::optional<std::string> vm = cloud::AzureVmNameOfComputerName(o.node_name)) names.insert(*vm);
  spdlog::info("node-agent: node {}; scheduled events at {} every {} ms", o.node_name, o.imds_endpoint,
               o.interval_ms);
  std::signal(SIGTERM, [](int) { node_agent_stopping.store(true); });
  std::signal(SIGINT, [](int) { node_agent_stopping.store(true); });
  std::set<std::string> reported;
  while (!node_agent_stopping.load()) {
    const auto next = std::chrono::steady_clock::now() + std::chrono::milliseconds(o.interval_ms);
    PollOnce(o, names, api, &reported);
    // Wakes often enough to stop within 100 ms of a signal.
    while (!node_agent_stopping.load() && std::chrono::steady_clock::now() < next)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return 0;
}

}  // namespace

void RegisterNodeAgentCommand(CLI::App& app, int* exit_code) {
  auto opts = std::make_shared<NodeAgentOptions>();
  CLI::App* cmd = app.add_subcommand(
      "node-agent",
      "On an Azure Spot node: report the VM's eviction notice (IMDS scheduled events, ~30 s ahead) as the "
      "condition gpuscaler.io/SpotPreempted on its own Node (docs/azure.md)");
  if (const char* node = std::getenv("NODE_NAME"); node != nullptr) opts->node_name = node;
  cmd->add_option("--node-name", opts->node_name, "This node's name (default: $NODE_NAME)");
  cmd->add_option(
      "--vm-name", opts->vm_name,
      "This VM's name as IMDS lists it in Resources (default: derived from a scale set node name)");
  cmd->add_option("--imds-endpoint", opts->imds_endpoint, "The Instance Metadata Service")
      ->capture_default_str();
  cmd->add_option("--ca-file", opts->ca_file,
                  "PEM CAs to trust for an https --imds-endpoint (an emulator's)");
  cmd->add_option("--kubeconfig", opts->kubeconfig, "A kubeconfig (default: the in-cluster service account)");
  cmd->add_option("--context", opts->context, "The kubeconfig's context (default: its current one)");
  cmd->add_option("--interval-ms", opts->interval_ms, "How often to read scheduled events")
      ->capture_default_str();
  cmd->callback([opts, exit_code] { *exit_code = RunNodeAgent(*opts); });
}

}  // namespace gpuscaler::cli
