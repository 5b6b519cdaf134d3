// The daemon configuration file; fields map 1:1 to config.h and are
// documented in docs/daemon.md.
#include "gpuscaler/daemon/config.h"

#include "config_azure.h"

#include <algorithm>
#include <cctype>

#include <charconv>
#include <cstdio>
#include <filesystem>

#include "gpuscaler/model/text_file.h"
#include "gpuscaler/policy/policy.h"
#include "gpuscaler/store/database_url.h"

namespace gpuscaler::daemon {
namespace {

// Relative paths in the file are relative to the file's folder, so a config
// and its policy can move together (a ConfigMap mounted anywhere).
std::string Resolve(const std::string& base_dir, const std::string& path) {
  if (path.empty() || base_dir.empty()) return path;
  std::filesystem::path p(path);
  if (p.is_absolute()) return path;
  return (std::filesystem::path(base_dir) / p).lexically_normal().string();
}

bool IsHttpUrl(const std::string& url) {
  return url.rfind("http://", 0) == 0 || url.rfind("https://", 0) == 0;
}

bool OneOf(const std::string& value, std::initializer_list<const char*> allowed) {
  for (const char* a : allowed) {
    if (value == a) return true;
  }
  return false;
}

// "us-east-1", "eu-central-2", "us-gov-west-1": lower-case words and a number.
bool IsRegionName(const std::string& region) {
  const size_t dash = region.rfind('-');
  if (dash == std::string::npos || dash == 0 || dash + 1 == region.size()) return false;
  for (size_t i = 0; i < dash; ++i) {
    const char ch = region[i];
    if (!((ch >= 'a' && ch <= 'z') || ch == '-')) return false;
  }
  return region.find_first_not_of("0123456789", dash + 1) == std::string::npos;
}

bool IsClusterName(const std::string& name) {
  if (name.empty() || name.size() > 100 || !std::isalnum(static_cast<unsigned char>(name[0]))) return false;
  return std::all_of(name.begin(), name.end(),
                     [](unsigned char c) { return std::isalnum(c) || c == '-' || c == '_'; });
}

class ConfigReader {
 public:
  ConfigReader(DocReader& r, DaemonConfig* c) : r_(r), c_(*c) {}

  void Read(const DocNode& root) {
    if (root.IsNull()) {
      r_.Report(SourceMark{1, 1}, "", "the configuration file is empty");
      return;
    }
    MapReader top(r_, root, "",
                  {"apiVersion", "kind", "cluster_name", "policy", "catalog", "regions", "db", "listen", "dry_run",
                   "cloud", "signals", "kubernetes", "api_token_file", "retention", "db_password_file"});
    if (!root.IsMapping()) return;
    top.Require({"apiVersion", "kind", "cluster_name", "policy"});
    if (top.ReadString("cluster_name", &c_.cluster_name) && !IsClusterName(c_.cluster_name)) {
      r_.ReportAt("cluster_name", "'" + c_.cluster_name +
                                      "' is not a cluster name (1 to 100 letters, digits, '-' or '_', starting with "
                                      "a letter or digit)");
    }
    std::string api_version, kind;
    if (top.ReadString("apiVersion", &api_version) && api_version != "gpuscaler/v1")
      r_.ReportAt("apiVersion", "unsupported apiVersion '" + api_version + "' (expected 'gpuscaler/v1')");
    if (top.ReadString("kind", &kind) && kind != "DaemonConfig")
      r_.ReportAt("kind", "expected 'DaemonConfig', got '" + kind + "'");
    top.ReadString("policy", &c_.policy_file);
    top.ReadString("catalog", &c_.catalog_file);
    top.ReadStringList("regions", &c_.regions);
    if (top.ReadString("db", &c_.db_file) && c_.db_file.empty()) r_.ReportAt("db", "must not be empty");
    if (top.ReadString("listen", &c_.listen)) {
      if (Result<std::pair<std::string, uint16_t>> l = ParseListenAddress(c_.listen); !l)
        r_.ReportAt("listen", l.error().message());
    }
    top.ReadBool("dry_run", &c_.dry_run);
    top.ReadString("api_token_file", &c_.api_token_file);
    if (top.ReadString("db_password_file", &c_.db_password_file) && !IsPostgresUrl(c_.db_file))
      r_.ReportAt("db_password_file", "is for a PostgreSQL db (postgresql://...); db is a SQLite file");
    if (top.ReadDuration("retention", &c_.retention) && c_.retention < Seconds(86400))
      r_.ReportAt("retention", "must be at least 1d (the audit trail is what reports are made from)");
    if (const DocNode* n = top.Find("cloud")) ReadCloud(*n);
    if (const DocNode* n = top.Find("signals")) ReadSignals(*n);
    if (const DocNode* n = top.Find("kubernetes")) ReadKubernetes(*n);
  }

 private:
  void ReadCloud(const DocNode& n) {
    MapReader m(r_, n, "cloud",
                {"provider", "region", "endpoint_url", "launch_template", "subnets", "interruption_queue_url",
                 "launch_template_version", "spot_allocation_strategy", "on_demand_allocation_strategy", "tags",
                 "max_attempts", "request_timeout", "gang_timeout",
                 "simulated_launch_latency", "eks", "gcp", "azure"});
    CloudSettings& cloud = c_.cloud;
    if (m.ReadString("provider", &cloud.provider) && !OneOf(cloud.provider, {"aws", "gcp", "azure", "simulated"}))
      r_.ReportAt("cloud.provider", "must be 'aws', 'gcp', 'azure' or 'simulated', got '" + cloud.provider + "'");
    if (m.ReadString("endpoint_url", &cloud.endpoint_url) && !cloud.endpoint_url.empty() &&
        !IsHttpUrl(cloud.endpoint_url))
      r_.ReportAt("cloud.endpoint_url", "must start with http:// or https://");
    m.ReadString("launch_template", &cloud.launch_template);
    m.ReadStringMap("subnets", &cloud.subnets);
    ReadUrl(m, "interruption_queue_url", &cloud.interruption_queue_url);
    if (m.ReadString("region", &cloud.region) && !IsRegionName(cloud.region))
      r_.ReportAt("cloud.region", "'" + cloud.region + "' is not a region name like us-east-1");
    for (const auto& [zone, subnet] : cloud.subnets) {
      if (subnet.rfind("subnet-", 0) != 0)
        r_.ReportAt("cloud.subnets." + zone, "'" + subnet + "' is not a subnet id (subnet-…)");
      if (zone.rfind(cloud.region, 0) != 0 || zone.size() <= cloud.region.size())
        r_.ReportAt("cloud.subnets." + zone, "zone '" + zone + "' is not in region " + cloud.region);
    }
    if (m.ReadString("launch_template_version", &cloud.launch_template_version) &&
        cloud.launch_template_version != "$Latest" && cloud.launch_template_version != "$Default" &&
        (cloud.launch_template_version.empty() ||
         cloud.launch_template_version.find_first_not_of("0123456789") != std::string::npos))
      r_.ReportAt("cloud.launch_template_version", "must be $Latest, $Default or a version number");
    if (m.ReadString("spot_allocation_strategy", &cloud.spot_allocation_strategy) &&
        !OneOf(cloud.spot_allocation_strategy, {"price-capacity-optimized", "capacity-optimized",
                                                "capacity-optimized-prioritized", "lowest-price", "diversified"}))
      r_.ReportAt("cloud.spot_allocation_strategy",
                  "must be price-capacity-optimized, capacity-optimized, capacity-optimized-prioritized, "
                  "lowest-price or diversified");
    if (m.ReadString("on_demand_allocation_strategy", &cloud.on_demand_allocation_strategy) &&
        !OneOf(cloud.on_demand_allocation_strategy, {"lowest-price", "prioritized"}))
      r_.ReportAt("cloud.on_demand_allocation_strategy", "must be lowest-price or prioritized");
    if (m.ReadStringMap("tags", &cloud.tags)) {
      for (const auto& [key, value] : cloud.tags) {
        if (key.rfind("gpuscaler.io/", 0) == 0)
          r_.ReportAt("cloud.tags." + key, "keys under gpuscaler.io/ are set by gpuscaler itself");
        else if (key.empty() || key.size() > 128 || value.size() > 256 || key.rfind("aws:", 0) == 0)
          r_.ReportAt("cloud.tags." + key, "EC2 tag keys are 1..128 characters, not starting with aws:, "
                                           "values at most 256");
      }
    }
    if (m.ReadInt("max_attempts", &cloud.max_attempts) && (cloud.max_attempts < 1 || cloud.max_attempts > 20))
      r_.ReportAt("cloud.max_attempts", "must be between 1 and 20");
    if (m.ReadDuration("request_timeout", &cloud.request_timeout) &&
        (cloud.request_timeout < Seconds(1) || cloud.request_timeout > Seconds(300)))
      r_.ReportAt("cloud.request_timeout", "must be between 1s and 5m");
    if (m.ReadDuration("gang_timeout", &cloud.gang_timeout) &&
        (cloud.gang_timeout < Seconds(1) || cloud.gang_timeout > Seconds(600)))
      r_.ReportAt("cloud.gang_timeout", "must be between 1s and 10m");
    if (m.ReadDuration("simulated_launch_latency", &cloud.simulated_launch_latency) &&
        cloud.simulated_launch_latency < Seconds(0))
      r_.ReportAt("cloud.simulated_launch_latency", "must not be negative");
    if (const DocNode* e = m.Find("eks")) ReadEks(*e);
    if (const DocNode* g = m.Find("gcp")) ReadGcp(*g);
    if (const DocNode* a = m.Find("azure")) ReadAzureSection(r_, *a, &cloud.azure);
    if (cloud.provider == "azure" && !cloud.azure.configured())
      r_.ReportAt("cloud", "provider 'azure' needs cloud.azure with at least resource_group and location (docs/azure.md)");
    if (cloud.provider == "gcp" && !cloud.gcp.configured())
      r_.ReportAt("cloud", "provider 'gcp' needs cloud.gcp with at least region (docs/gcp.md)");
    if (cloud.provider == "aws" && cloud.launch_template.empty() && !cloud.eks.configured() && !c_.dry_run)
      r_.ReportAt("cloud", "provider 'aws' needs launch_template (the EC2 launch template new nodes boot from) "
                           "or eks (pools with a node_template get their own)");
  }

  // GCP zone "us-central1-a" of region "us-central1".
  static bool IsZoneOf(const std::string& zone, const std::string& region) {
    return zone.size() > region.size() + 1 && zone.rfind(region + "-", 0) == 0 &&
           zone.find_first_not_of("abcdefghijklmnopqrstuvwxyz", region.size() + 1) == std::string::npos;
  }
  // "us-central1", "europe-west4", "northamerica-northeast2".
  static bool IsGcpRegion(const std::string& region) {
    const size_t dash = region.find('-');
    if (dash == std::string::npos || dash == 0 || region.find('-', dash + 1) != std::string::npos) return false;
    const size_t digits = region.find_first_of("0123456789");
    return digits != std::string::npos && digits > dash + 1 &&
           region.find_first_not_of("abcdefghijklmnopqrstuvwxyz-") == digits &&
           region.find_first_not_of("0123456789", digits) == std::string::npos;
  }
  // RFC 1035 names (managed instance groups): [a-z]([-a-z0-9]{0,61}[a-z0-9])?
  static bool IsGcpName(const std::string& name) {
    if (name.empty() || name.size() > 63 || name[0] < 'a' || name[0] > 'z' || name.back() == '-') return false;
    return name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-") == std::string::npos;
  }

  void ReadGcp(const DocNode& n) {
    MapReader m(r_, n, "cloud.gcp",
                {"project", "region", "zones", "endpoint", "instance_template", "pools", "operation_timeout",
                 "quota_recheck", "billing_catalog"});
    if (!n.IsMapping()) return;
    m.Require({"region"});
    GcpSettings& g = c_.cloud.gcp;
    if (m.ReadString("project", &g.project) &&
        (g.project.size() < 6 || g.project.size() > 30 || !IsGcpName(g.project)))
      r_.ReportAt("cloud.gcp.project", "'" + g.project + "' is not a project id (6-30 of a-z, 0-9, '-')");
    if (m.ReadString("region", &g.region) && !IsGcpRegion(g.region))
      r_.ReportAt("cloud.gcp.region", "'" + g.region + "' is not a region name like us-central1");
    if (m.ReadStringList("zones", &g.zones)) {
      for (size_t i = 0; i < g.zones.size(); ++i) {
        if (!IsZoneOf(g.zones[i], g.region))
          r_.ReportAt(IndexPath("cloud.gcp.zones", i), "'" + g.zones[i] + "' is not a zone of region " + g.region);
      }
    }
    if (m.ReadString("endpoint", &g.endpoint) && !IsHttpUrl(g.endpoint))
      r_.ReportAt("cloud.gcp.endpoint", "must start with http:// or https://");
    m.ReadString("instance_template", &g.instance_template);
    if (m.ReadDuration("operation_timeout", &g.operation_timeout) &&
        (g.operation_timeout < Seconds(1) || g.operation_timeout > Seconds(600)))
      r_.ReportAt("cloud.gcp.operation_timeout", "must be between 1s and 10m");
    if (m.ReadDuration("quota_recheck", &g.quota_recheck) &&
        (g.quota_recheck < Seconds(60) || g.quota_recheck > Seconds(24 * 3600)))
      r_.ReportAt("cloud.gcp.quota_recheck", "must be between 1m and 24h");
    if (const DocNode* b = m.Find("billing_catalog"); b != nullptr && !b->IsNull()) ReadGcpBillingCatalog(*b);
    const DocNode* pools = m.Find("pools");
    if (pools == nullptr || pools->IsNull()) return;
    if (!pools->IsMapping()) {
      r_.Report(*pools, "cloud.gcp.pools", "must be a mapping from policy pool name to its groups, got " +
                                               pools->Describe());
      return;
    }
    for (const DocEntry& e : pools->entries) {
      const std::string name = e.key.scalar;
      const std::string path = "cloud.gcp.pools." + name;
      MapReader p(r_, e.value, path, {"migs", "mig_pattern", "instance_template", "reservation_migs"});
      if (!e.value.IsMapping()) continue;
      GcpPoolSettings& pool = g.pools[name];
      if (p.ReadStringMap("migs", &pool.migs)) {
        for (const auto& [zone, mig] : pool.migs) {
          if (!IsZoneOf(zone, g.region))
            r_.ReportAt(path + ".migs." + zone, "'" + zone + "' is not a zone of region " + g.region);
          if (!IsGcpName(mig))
            r_.ReportAt(path + ".migs." + zone, "'" + mig + "' is not a managed instance group name");
        }
      }
      if (p.ReadString("mig_pattern", &pool.mig_pattern)) {
        if (pool.mig_pattern.find("{zone}") == std::string::npos)
          r_.ReportAt(path + ".mig_pattern", "must contain {zone} (one group per zone)");
        if (g.zones.empty())
          r_.ReportAt(path + ".mig_pattern", "needs cloud.gcp.zones (the zones the pattern is expanded for)");
      }
      p.ReadString("instance_template", &pool.instance_template);
      if (pool.migs.empty() && pool.mig_pattern.empty() && pool.instance_template.empty())
        r_.ReportAt(path, "needs migs, mig_pattern or instance_template");
      if (p.ReadStringMap("reservation_migs", &pool.reservation_migs)) {
        for (const auto& [reservation, mig] : pool.reservation_migs) {
          if (!IsGcpName(mig))
            r_.ReportAt(path + ".reservation_migs." + reservation,
                        "'" + mig + "' is not a managed instance group name");
        }
        if (pool.migs.empty() && pool.mig_pattern.empty())
          r_.ReportAt(path + ".reservation_migs",
                      "only a pool with groups (migs or mig_pattern) has them; a bare pool targets the "
                      "reservation in its bulkInsert");
      }
      if ((!pool.migs.empty() || !pool.mig_pattern.empty()) && !pool.instance_template.empty())
        r_.ReportAt(path + ".instance_template",
                    "a pool with managed instance groups launches from their templates; remove it");
    }
  }

  void ReadGcpBillingCatalog(const DocNode& n) {
    MapReader m(r_, n, "cloud.gcp.billing_catalog", {"enabled", "refresh", "endpoint"});
    if (!n.IsMapping()) return;
    GcpBillingCatalogSettings& b = c_.cloud.gcp.billing_catalog;
    m.ReadBool("enabled", &b.enabled);
    if (m.ReadDuration("refresh", &b.refresh) && (b.refresh < Seconds(60) || b.refresh > Seconds(24 * 3600)))
      r_.ReportAt("cloud.gcp.billing_catalog.refresh", "must be between 1m and 24h");
    if (m.ReadString("endpoint", &b.endpoint) && !IsHttpUrl(b.endpoint))
      r_.ReportAt("cloud.gcp.billing_catalog.endpoint", "must start with http:// or https://");
  }

  void ReadEks(const DocNode& n) {
    MapReader m(r_, n, "cloud.eks",
                {"kubernetes_version", "api_server_endpoint", "certificate_authority", "service_cidr"});
    if (!n.IsMapping()) return;
    m.Require({"kubernetes_version", "api_server_endpoint", "certificate_authority", "service_cidr"});
    EksSettings& e = c_.cloud.eks;
    if (m.ReadString("kubernetes_version", &e.kubernetes_version)) {
      const size_t dot = e.kubernetes_version.find('.');
      const bool ok = dot != std::string::npos && dot > 0 && dot + 1 < e.kubernetes_version.size() &&
                      e.kubernetes_version.find_first_not_of("0123456789.") == std::string::npos &&
                      e.kubernetes_version.find('.', dot + 1) == std::string::npos;
      if (!ok) r_.ReportAt("cloud.eks.kubernetes_version", "'" + e.kubernetes_version + "' is not like 1.31");
    }
    if (m.ReadString("api_server_endpoint", &e.api_server_endpoint) && e.api_server_endpoint.rfind("https://", 0) != 0)
      r_.ReportAt("cloud.eks.api_server_endpoint", "must start with https://");
    if (m.ReadString("certificate_authority", &e.certificate_authority)) {
      const bool base64 = !e.certificate_authority.empty() && e.certificate_authority.size() % 4 == 0 &&
                          std::all_of(e.certificate_authority.begin(), e.certificate_authority.end(), [](unsigned char c) {
                            return std::isalnum(c) || c == '+' || c == '/' || c == '=';
                          });
      if (!base64)
        r_.ReportAt("cloud.eks.certificate_authority", "must be the cluster CA in base64, as EKS shows it (one line)");
    }
    if (m.ReadString("service_cidr", &e.service_cidr)) {
      unsigned a = 0, b = 0, c = 0, d = 0, bits = 0;
      char tail = 0;
      if (std::sscanf(e.service_cidr.c_str(), "%u.%u.%u.%u/%u%c", &a, &b, &c, &d, &bits, &tail) != 5 || a > 255 ||
          b > 255 || c > 255 || d > 255 || bits > 32)
        r_.ReportAt("cloud.eks.service_cidr", "'" + e.service_cidr + "' is not an IPv4 CIDR like 10.100.0.0/16");
    }
  }

  void ReadSignals(const DocNode& n) {
    MapReader m(r_, n, "signals", {"prometheus", "rabbitmq", "dcgm", "timeout"});
    SignalSettings& s = c_.signals;
    Seconds timeout{};
    if (m.ReadDuration("timeout", &timeout)) {
      if (timeout <= Seconds(0) || timeout > Seconds(60))
        r_.ReportAt("signals.timeout", "must be between 1s and 60s");
      else
        s.timeout = timeout;
    }
    if (const DocNode* p = m.Find("prometheus")) {
      using P = PrometheusSettings;
      MapReader pm = ReadEndpoint<P>(*p, "signals.prometheus", &s.prometheus,
                                     {{"bearer_token_file", &P::bearer_token_file},
                                      {"username", &P::username},
                                      {"password_file", &P::password_file},
                                      {"ca_file", &P::ca_file}},
                                     {"insecure_skip_verify"});
      pm.ReadBool("insecure_skip_verify", &s.prometheus.insecure_skip_verify);
    }
    if (const DocNode* q = m.Find("rabbitmq")) {
      using R = RabbitMqSettings;
      ReadEndpoint<R>(*q, "signals.rabbitmq", &s.rabbitmq,
                      {{"username", &R::username},
                       {"username_file", &R::username_file},
                       {"username_env", &R::username_env},
                       {"password_file", &R::password_file},
                       {"password_env", &R::password_env}});
    }
    if (const DocNode* d = m.Find("dcgm")) {
      MapReader dm(r_, *d, "signals.dcgm", {"urls"});
      if (dm.ReadStringList("urls", &s.dcgm.urls)) {
        for (size_t i = 0; i < s.dcgm.urls.size(); ++i) {
          if (!IsHttpUrl(s.dcgm.urls[i]))
            r_.ReportAt(IndexPath("signals.dcgm.urls", i), "must start with http:// or https://");
        }
      }
    }
  }

  void ReadKubernetes(const DocNode& n) {
    MapReader m(r_, n, "kubernetes",
                {"enabled", "in_cluster", "kubeconfig", "context", "namespace", "leader_election", "team_label"});
    KubernetesSettings& k = c_.kubernetes;
    m.ReadBool("enabled", &k.enabled);
    const bool said_in_cluster = m.ReadBool("in_cluster", &k.in_cluster);
    if (m.ReadString("kubeconfig", &k.kubeconfig) && !k.kubeconfig.empty()) {
      if (said_in_cluster && k.in_cluster)
        r_.ReportAt("kubernetes.kubeconfig", "give either in_cluster: true or a kubeconfig, not both");
      k.in_cluster = false;
    }
    if (m.ReadString("context", &k.context) && !k.context.empty() && k.kubeconfig.empty())
      r_.ReportAt("kubernetes.context", "needs kubeconfig");
    if (!k.in_cluster && k.kubeconfig.empty())
      r_.ReportAt("kubernetes", "in_cluster: false needs kubeconfig (the file to reach the cluster with)");
    m.ReadString("namespace", &k.namespace_name);
    if (m.ReadString("team_label", &k.team_label) && k.team_label.empty())
      r_.ReportAt("kubernetes.team_label", "must not be empty (leave it out for gpuscaler.io/team)");
    if (const DocNode* le = m.Find("leader_election")) {
      MapReader lm(r_, *le, "kubernetes.leader_election",
                   {"enabled", "lease_name", "namespace", "lease_duration", "renew_deadline", "retry_period"});
      LeaderElectionSettings& l = c_.kubernetes.leader_election;
      lm.ReadBool("enabled", &l.enabled);
      lm.ReadString("lease_name", &l.lease_name);
      lm.ReadString("namespace", &l.namespace_name);
      if (l.lease_name.empty()) r_.ReportAt("kubernetes.leader_election.lease_name", "must not be empty");
      const bool timed = lm.ReadDuration("lease_duration", &l.lease_duration) |
                         lm.ReadDuration("renew_deadline", &l.renew_deadline) |
                         lm.ReadDuration("retry_period", &l.retry_period);
      if (timed && !(l.lease_duration > l.renew_deadline && l.renew_deadline * 10 > l.retry_period * 12 &&
                     l.retry_period > Seconds(0)))
        r_.ReportAt("kubernetes.leader_election",
                    "needs lease_duration > renew_deadline > 1.2 x retry_period > 0 (got " +
                        std::to_string(l.lease_duration.count()) + "s, " + std::to_string(l.renew_deadline.count()) +
                        "s, " + std::to_string(l.retry_period.count()) + "s)");
    }
  }

  template <typename Settings>
  using StringFields = std::initializer_list<std::pair<std::string_view, std::string Settings::*>>;

  // An endpoint section: `url` (http or https) and the string `fields`;
  // `other_keys` are known too, read by the caller from the returned reader.
  template <typename Settings>
  MapReader ReadEndpoint(const DocNode& n, const std::string& path, Settings* out,
                         StringFields<Settings> fields,
                         std::initializer_list<std::string_view> other_keys = {}) {
    std::vector<std::string_view> known = {"url"};
    for (const auto& field : fields) known.push_back(field.first);
    known.insert(known.end(), other_keys);
    MapReader m(r_, n, path, std::move(known));
    ReadUrl(m, "url", &out->url);
    for (const auto& [key, member] : fields) m.ReadString(key, &(out->*member));
    return m;
  }

  void ReadUrl(MapReader& m, std::string_view key, std::string* out) {
    if (m.ReadString(key, out) && !out->empty() && !IsHttpUrl(*out))
      r_.ReportAt(m.PathOf(key), "must start with http:// or https://");
  }

  DocReader& r_;
  DaemonConfig& c_;
};

}  // namespace

Status CheckPoolsCanLaunch(const DaemonConfig& config, const Policy& policy) {
  if (config.dry_run) return Status::Ok();
  if (config.cloud.provider != "simulated" && config.cloud.provider != "aws") {
    // Spot warm refills must be launched stop-capable (a persistent Spot
    // request, a Spot VM that stops). The AWS provider launches them so (an
    // `actuation: asg` pool with spot warm capacity is refused by the policy
    // loader); the other cloud providers launch spot capacity that cannot
    // be stopped, which every stop of a refill would then fail on.
    std::string problems;
    for (size_t i = 0; i < policy.pools.size(); ++i) {
      const NodePoolPolicy& pool = policy.pools[i];
      if (!pool.warm || pool.warm->capacity_type == WarmCapacityType::kOnDemand) continue;
      problems += "\n" + policy.source_file + ": pools[" + std::to_string(i) + "] '" + pool.name +
                  "': warm.capacity_type " + std::string(ToString(pool.warm->capacity_type)) +
                  " runs on AWS, the simulator and the simulated cloud only; with cloud.provider " +
                  config.cloud.provider + " use on-demand";
    }
    if (!problems.empty()) return Error::Config("pools that cannot launch:" + problems);
  }
  if (config.cloud.provider == "azure") {
    const std::string problems = AzurePoolProblems(config, policy);
    if (problems.empty()) return Status::Ok();
    return Error::Config("pools that cannot launch:" + problems);
  }
  if (config.cloud.provider == "gcp") {
    const GcpSettings& g = config.cloud.gcp;
    std::string problems;
    for (size_t i = 0; i < policy.pools.size(); ++i) {
      const NodePoolPolicy& pool = policy.pools[i];
      const std::string where = policy.source_file + ": pools[" + std::to_string(i) + "] '" + pool.name + "': ";
      if (pool.actuation != Actuation::kFleet) {
        problems += "\n" + where + "actuation '" + std::string(ToString(pool.actuation)) + "' is AWS's; on GCP name the pool's groups in " +
                    config.source_file + " cloud.gcp.pools";
      } else if (g.pools.count(pool.name) == 0 && g.instance_template.empty()) {
        problems += "\n" + where + "has no entry in " + config.source_file +
                    " cloud.gcp.pools and there is no cloud.gcp.instance_template";
      } else if (auto it = g.pools.find(pool.name);
                 !pool.placement_group.empty() && it != g.pools.end() && it->second.instance_template.empty()) {
        // A group's instances come from its own template: nothing per launch
        // can put them under a resource policy.
        problems += "\n" + where + "placement_group needs a pool of bare instances (instance_template); " +
                    "its managed instance groups set compact placement on the GKE node pool itself " +
                    "(--placement-type=COMPACT)";
      }
    }
    for (const auto& [name, settings] : g.pools) {
      if (policy.FindPool(name) == nullptr)
        problems += "\n" + config.source_file + ": cloud.gcp.pools." + name + ": no policy pool of that name";
    }
    if (problems.empty()) return Status::Ok();
    return Error::Config("pools that cannot launch:" + problems);
  }
  if (config.cloud.provider != "aws") return Status::Ok();
  std::string problems;
  for (size_t i = 0; i < policy.pools.size(); ++i) {
    const NodePoolPolicy& pool = policy.pools[i];
    if (pool.actuation != Actuation::kFleet) continue;
    const std::string where = policy.source_file + ": pools[" + std::to_string(i) + "] '" + pool.name + "': ";
    if (pool.node_template && !config.cloud.eks.configured()) {
      problems += "\n" + where + "has a node_template, so " + config.source_file +
                  " needs cloud.eks (the cluster its nodes join)";
    } else if (!pool.node_template && config.cloud.launch_template.empty()) {
      problems += "\n" + where + "has no node_template, so " + config.source_file +
                  " needs cloud.launch_template";
    }
  }
  if (problems.empty()) return Status::Ok();
  return Error::Config("pools that cannot launch:" + problems);
}

Result<std::pair<std::string, uint16_t>> ParseListenAddress(const std::string& text) {
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon + 1 == text.size())
    return Error::Config("listen address '" + text + "' must be host:port");
  std::string host = text.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  if (host.empty()) return Error::Config("listen address '" + text + "' has no host (use 0.0.0.0 for all)");
  const std::string port_text = text.substr(colon + 1);
  unsigned port = 0;
  auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (ec != std::errc() || end != port_text.data() + port_text.size() || port > 65535)
    return Error::Config("listen address '" + text + "': port must be a number in 0..65535");
  return std::make_pair(host, static_cast<uint16_t>(port));
}

Result<DaemonConfig> ParseDaemonConfig(const std::string& text, const std::string& file_name) {
  DaemonConfig config;
  config.source_file = file_name;
  DocReader reader(file_name);
  DocNode root;
  if (reader.Parse(text, &root)) ConfigReader(reader, &config).Read(root);
  if (!reader.ok()) return Error::Config(JoinProblems(reader.SortedProblems()));
  const std::pair<const char*, const std::string*> file_fields[] = {
      {"policy", &config.policy_file}, {"catalog", &config.catalog_file},
      {"api_token_file", &config.api_token_file}, {"db_password_file", &config.db_password_file}};
  for (const auto& [field, value] : file_fields) {
    const SourceMark at = reader.MarkOf(field);
    if (at.line > 0 && !value->empty())
      config.places[field] = file_name + ":" + std::to_string(at.line) + ":" + std::to_string(at.column);
  }
  const std::string dir = std::filesystem::path(file_name).parent_path().string();
  // A PostgreSQL URL is not a path.
  if (!IsPostgresUrl(config.db_file)) config.db_file = Resolve(dir, config.db_file);
  for (std::string* p : {&config.policy_file, &config.catalog_file, &config.db_password_file, &config.api_token_file,
                         &config.signals.prometheus.bearer_token_file, &config.signals.prometheus.password_file,
                         &config.signals.prometheus.ca_file, &config.signals.rabbitmq.username_file,
                         &config.signals.rabbitmq.password_file, &config.kubernetes.kubeconfig,
                         &config.cloud.azure.credentials.client_secret_file,
                         &config.cloud.azure.credentials.certificate_file, &config.cloud.azure.ca_file}) {
    *p = Resolve(dir, *p);
  }
  return config;
}

Result<DaemonConfig> LoadDaemonConfig(const std::string& path) {
  Result<std::string> text = ReadConfigFile(path);
  if (!text) return Error::Config(text.error().message());
  return ParseDaemonConfig(*text, path);
}

}  // namespace gpuscaler::daemon
