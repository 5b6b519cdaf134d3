// SetUpDaemon: from the command line and the configuration file to a ready
// engine. Every failure here is a configuration error reported before the
// daemon listens or touches the cloud.
#include <spdlog/spdlog.h>

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <random>

#include "daemon_parts.h"
#include "kube_setup.h"
#include "gpuscaler/cloud/aws_setup.h"
#include "gpuscaler/cloud/azure_setup.h"
#include "gpuscaler/cloud/gcp_provider.h"
#include "gpuscaler/cloud/gcp_setup.h"
#include "gpuscaler/controller/failpoint.h"
#include "gpuscaler/model/text_file.h"
#include "gpuscaler/report/retention.h"
#include "gpuscaler/store/database_url.h"
#include "gpuscaler/store/sqlite_audit_store.h"
#include "gpuscaler/model/builtin_catalog.h"
#include "signal_reader.h"

namespace gpuscaler::daemon {
namespace {

// A secret from a file: surrounding whitespace (a trailing newline from
// `echo`, `kubectl create secret --from-file`) is not part of it.
// `where`: what named the file ("gpuscaler.yaml:9:1: api_token_file",
// "--api-token-file"), said first in every error.
Result<std::string> ReadSecretFile(const std::string& path, const std::string& where) {
  Result<std::string> text = ReadConfigFile(path);
  if (!text) {
    const std::string& why = text.error().message();
    return Error::Config(where + ": " + (why.rfind(path, 0) == 0 ? why : path + ": " + why));
  }
  std::string s = std::move(text).value();
  const auto not_space = [](unsigned char c) { return !std::isspace(c); };
  s.erase(s.begin(), std::find_if(s.begin(), s.end(), not_space));
  s.erase(std::find_if(s.rbegin(), s.rend(), not_space).base(), s.end());
  if (s.empty()) return Error::Config(where + ": " + path + " is empty");
  return s;
}

Status ApplyListen(const std::string& listen, server::HttpServerOptions* out) {
  Result<std::pair<std::string, uint16_t>> l = ParseListenAddress(listen);
  if (!l) return l.error();
  out->host = l->first;
  out->port = l->second;
  return Status();
}

// How either cloud's API clients talk: `cloud:`'s timeout and attempts.
void SetClientOptions(const CloudSettings& c, cloud::ClientSetupOptions* o) {
  o->http_timeout = std::chrono::duration_cast<std::chrono::milliseconds>(c.request_timeout);
  o->retry.max_attempts = c.max_attempts;
  // Jitter must differ between processes (replicas, restarts), or their
  // retries after a shared throttle would line up again.
  o->seed = std::random_device{}();
}

// The AWS provider and everything it uses, kept alive by the setup.
struct AwsCloud {
  SystemClock clock;
  cloud::AwsStack stack;
};

Result<std::shared_ptr<AwsCloud>> MakeAwsCloud(const DaemonConfig& config, const Catalog& catalog) {
  const CloudSettings& c = config.cloud;
  cloud::AwsSetupOptions o;
  SetClientOptions(c, &o);
  o.region = c.region;
  o.endpoint_url = c.endpoint_url;
  if (c.launch_template.rfind("lt-", 0) == 0) {
    o.provider.launch_template.id = c.launch_template;
  } else {
    o.provider.launch_template.name = c.launch_template;
  }
  o.provider.launch_template.version = c.launch_template_version;
  o.provider.subnet_by_zone = c.subnets;
  o.provider.spot_allocation_strategy = c.spot_allocation_strategy;
  o.provider.on_demand_allocation_strategy = c.on_demand_allocation_strategy;
  o.provider.interruption_queue_url = c.interruption_queue_url;
  o.provider.gang_timeout = c.gang_timeout;
  o.provider.cluster_name = config.cluster_name;
  o.provider.eks = {config.cluster_name, c.eks.kubernetes_version, c.eks.api_server_endpoint,
                    c.eks.certificate_authority, c.eks.service_cidr};
  // Spot prices of the catalog's types only: the types the planner can buy.
  for (const InstanceType& t : catalog.instance_types) o.provider.price_instance_types.push_back(t.name);
  auto aws = std::make_shared<AwsCloud>();
  Result<cloud::AwsStack> stack = cloud::MakeAwsStack(o, cloud::ProcessEnvironment(), aws->clock);
  if (!stack) return stack.error().WithContext(config.source_file + ": cloud");
  aws->stack = std::move(stack).value();
  return aws;
}

void GcpBillingCatalogOptionsFrom(const GcpSettings& g, const Catalog& catalog,
                                  cloud::GcpBillingCatalogOptions* out) {
  out->enabled = g.billing_catalog.enabled;
  out->refresh = g.billing_catalog.refresh;
  out->machine_types = catalog.instance_types;
  for (const RegionPrices& r : catalog.regions) {
    if (r.region == g.region) out->zones = r.zones;
  }
  for (const std::string& zone : g.zones) {
    if (std::find(out->zones.begin(), out->zones.end(), zone) == out->zones.end()) out->zones.push_back(zone);
  }
}

// Where the GCP provider's Spot prices come from, for the start log.
std::string SpotPriceSource(const cloud::GcpStack& stack, const GcpSettings& g) {
  if (!stack.billing_client) return "the catalog's (cloud.gcp.billing_catalog.enabled: false)";
  return "Cloud Billing Catalog at " + stack.billing_client->options().endpoint + ", every " +
         FormatDuration(g.billing_catalog.refresh);
}

// The GCP provider and everything it uses, kept alive by the setup.
struct GcpCloud {
  SystemClock clock;
  cloud::GcpStack stack;
};

Result<std::shared_ptr<GcpCloud>> MakeGcpCloud(const DaemonConfig& config, const Catalog& catalog) {
  const CloudSettings& c = config.cloud;
  const GcpSettings& g = c.gcp;
  cloud::GcpSetupOptions o;
  SetClientOptions(c, &o);
  o.endpoint = g.endpoint;
  o.provider.cluster_name = config.cluster_name;
  o.provider.project = g.project;
  o.provider.region = g.region;
  o.provider.zones = g.zones;
  o.provider.instance_template = g.instance_template;
  o.provider.operation_timeout = g.operation_timeout;
  o.provider.quota_recheck = g.quota_recheck;
  for (const auto& [name, pool] : g.pools) {
    o.provider.pools[name] = {pool.migs, pool.mig_pattern, pool.instance_template, pool.reservation_migs};
  }
  // Spot prices for the catalog's machine types (the ones the planner can
  // buy), in every zone of the region that the catalog or cloud.gcp names.
  o.billing_endpoint = g.billing_catalog.endpoint;
  GcpBillingCatalogOptionsFrom(g, catalog, &o.provider.billing_catalog);
  auto gcp = std::make_shared<GcpCloud>();
  Result<cloud::GcpStack> stack = cloud::MakeGcpStack(o, cloud::ProcessEnvironment(), gcp->clock);
  if (!stack) return stack.error().WithContext(config.source_file + ": cloud.gcp");
  gcp->stack = std::move(stack).value();
  return gcp;
}

// The Azure provider and everything it uses, kept alive by the setup.
struct AzureCloud {
  SystemClock clock;
  cloud::AzureStack stack;
};

Result<std::shared_ptr<AzureCloud>> MakeAzureCloud(const DaemonConfig& config) {
  const AzureSettings& a = config.cloud.azure;
  cloud::AzureSetupOptions o;
  SetClientOptions(config.cloud, &o);
  o.endpoint = a.endpoint;
  o.ca_file = a.ca_file;
  o.operation_timeout = a.operation_timeout;
  std::optional<cloud::AzureCredentialKind> kind = cloud::ParseAzureCredentialKind(a.credentials.kind);
  if (!kind) return Error::Config(config.source_file + ": cloud.azure.credentials.kind '" + a.credentials.kind + "'");
  o.credentials = {*kind,
                   a.credentials.tenant_id,
                   a.credentials.client_id,
                   a.credentials.client_secret_file,
                   a.credentials.certificate_file,
                   a.credentials.authority_host,
                   a.credentials.imds_endpoint};
  o.provider.cluster_name = config.cluster_name;
  o.provider.subscription_id = a.subscription_id;
  o.provider.resource_group = a.resource_group;
  o.provider.aks_cluster = a.aks_cluster;
  o.provider.location = a.location;
  o.provider.driver = a.driver == "vmss" ? cloud::AzureDriver::kVmss : cloud::AzureDriver::kAks;
  o.provider.force_deletion = a.force_deletion;
  for (const auto& [pool, groups] : a.pools) o.provider.pools[pool].groups = groups;
  auto azure = std::make_shared<AzureCloud>();
  Result<cloud::AzureStack> stack = cloud::MakeAzureStack(o, cloud::ProcessEnvironment(), azure->clock);
  if (!stack) return stack.error().WithContext(config.source_file + ": cloud.azure");
  azure->stack = std::move(stack).value();
  return azure;
}

// Opens the audit store, kept alive by the setup, and names it for the API.
Result<std::shared_ptr<SqliteAuditStore>> OpenStore(const std::string& db_file, DaemonSetup* d) {
  d->store_commits = std::make_shared<std::vector<StoreCommit>>();
  SqliteAuditStoreOptions options;
  options.on_commit = [commits = d->store_commits](double seconds, const Status& result) {
    commits->push_back({seconds, result.ok() ? std::nullopt : std::optional(result.error().category())});
  };
  Result<std::unique_ptr<SqliteAuditStore>> store = SqliteAuditStore::Open(db_file, options);
  if (!store) return store.error().WithContext("audit database " + RedactDatabaseUrl(db_file));
  std::shared_ptr<SqliteAuditStore> owned = std::move(store).value();
  d->keep_alive.push_back(owned);
  d->db_file = db_file;
  return owned;
}

// Every daemon lifetime is a run of the audit store: the engine's shutdown
// ends it (call before MakeLiveEngine), BeginDaemonRun starts it.
void EndRunAtShutdown(SqliteAuditStore* store, LiveEngineParts* parts) {
  parts->shutdown = [store, clock = parts->clock, flush = std::move(parts->shutdown)]() -> Status {
    Status s = clock != nullptr ? store->EndRun(clock->WallNow()) : Status::Ok();
    if (flush) {
      Status f = flush();
      if (s.ok()) s = std::move(f);
    }
    return s;
  };
}

// The run's cloud and the tags its instances carry, as the cloud shows them,
// for the reports (FOCUS ProviderName and Tags). A simulated cloud stands
// for the cloud of its catalog and tags as the launch request says; GCP
// carries labels instead (cloud.tags are not applied there, docs/gcp.md).
RunCloud CloudOf(const std::string& cloud_name, bool gcp_labels, const std::map<std::string, std::string>& launch_tags,
                 const std::string& cluster, const Policy& policy) {
  RunCloud run;
  run.name = cloud_name;
  if (gcp_labels) {
    run.instance_tags[cloud::kGcpClusterLabel] = cloud::GcpProvider::LabelValue(cluster);
  } else {
    run.instance_tags = launch_tags;
  }
  for (const NodePoolPolicy& pool : policy.pools) {
    if (gcp_labels) {
      run.pool_tags[pool.name][cloud::kGcpPoolLabel] = cloud::GcpProvider::LabelValue(pool.name);
    } else {
      run.pool_tags[pool.name][kOwnerTag] = pool.name;
    }
  }
  return run;
}

Status BeginDaemonRun(SqliteAuditStore* store, const std::string& name, const RunCloud& cloud,
                      const Engine& engine) {
  Result<int64_t> run = store->BeginRun(RunRecord{.name = name,
                                                  .source = "daemon",
                                                  .policy_hash = engine.controller().policy().content_hash,
                                                  .started = engine.now()});
  Status s = run.status();
  if (s.ok()) s = store->RecordRunCloud(cloud);
  if (!s.ok()) return s.error().WithContext("audit database " + RedactDatabaseUrl(store->path()));
  spdlog::info("audit run {} ('{}', cloud {}) started", *run, name, cloud.name.empty() ? "unknown" : cloud.name);
  return Status::Ok();
}

}  // namespace

Result<DaemonSetup> SetUpDaemon(const RunCommandOptions& options, const SimulatedWiring& wiring) {
  DaemonSetup d;
  // Test-only crash hook (controller/failpoint.h); a bad value is a
  // configuration error, so a crash test never runs silently unarmed.
  if (Status s = failpoint::ArmFromEnvironment(); !s.ok()) return s.error();
  d.server_options.host = "127.0.0.1";
  d.server_options.port = 8080;

  if (options.demo) {
    if (options.speed <= 0 || options.speed > 1e6) return Error::Config("--speed must be in (0, 1000000]");
    if (!wiring.demo) return Error::Config("this build has no demo (no simulator wired in)");
    std::string db_file = options.db_file;
    if (db_file.empty()) {
      // A fresh database per demo run, so reports show this run only and two
      // demos never share one: named by the start time (UTC) and the process.
      const std::string stamp = FormatRfc3339(std::chrono::time_point_cast<Seconds>(std::chrono::system_clock::now()));
      std::string name = "gpuscaler-demo-";
      for (char c : stamp) {
        if (c != '-' && c != ':') name += c;
      }
      name += "-" + std::to_string(::getpid()) + ".db";
      db_file = (std::filesystem::temp_directory_path() / name).string();
    }
    auto catalog = std::make_shared<Catalog>();
    std::string catalog_source;
    *catalog = DefaultCatalog(options.source_dir, &catalog_source);
    d.keep_alive.push_back(catalog);
    Result<std::shared_ptr<SqliteAuditStore>> store = OpenStore(db_file, &d);
    if (!store) return store.error();
    LiveEngineParts parts;
    parts.catalog = catalog.get();
    parts.store = store->get();
    parts.mode = "demo";
    parts.speed = options.speed;
    parts.controller_options.source = "demo";
    parts.controller_options.tags[kClusterTag] = "demo";
    if (Result<std::string> installation = (*store)->InstallationId(); installation) {
      parts.controller_options.token_prefix = "demo-" + *installation + "-";
    }
    parts.shutdown = [st = store->get()] { return st->Flush(); };
    DemoOptions demo;
    demo.seed = options.seed;
    demo.days = options.demo_days;
    demo.speed = options.speed;
    demo.source_dir = options.source_dir;
    if (Status s = wiring.demo(demo, *catalog, &parts, &d.keep_alive); !s.ok()) return s.error();
    EndRunAtShutdown(store->get(), &parts);
    const std::map<std::string, std::string> launch_tags = parts.controller_options.tags;
    d.engine = MakeLiveEngine(std::move(parts));
    const RunCloud cloud = CloudOf(catalog->provider, false, launch_tags, "demo", d.engine->controller().policy());
    if (Status s = BeginDaemonRun(store->get(), "demo", cloud, *d.engine); !s.ok()) return s.error();
    if (!options.listen.empty()) {
      if (Status s = ApplyListen(options.listen, &d.server_options); !s.ok()) return s.error();
    }
    if (!options.api_token_file.empty()) {
      Result<std::string> token = ReadSecretFile(options.api_token_file, "--api-token-file");
      if (!token) return token.error();
      d.api_token = *token;
    }
    return d;
  }

  if (options.config_file.empty()) return Error::Config("give --config FILE (or --demo for the built-in demo)");
  Result<DaemonConfig> loaded = LoadDaemonConfig(options.config_file);
  if (!loaded) return loaded.error();
  DaemonConfig config = std::move(loaded).value();
  // A real cloud and its instances keep real time: only the simulated
  // cloud can follow a faster clock.
  if (options.speed_set && config.cloud.provider != "simulated")
    return Error::Config("--speed: only for --demo or a configuration with cloud.provider simulated (" +
                         config.source_file + " has '" + config.cloud.provider + "')");
  if (!options.listen.empty()) config.listen = options.listen;
  if (!options.db_file.empty()) config.db_file = options.db_file;
  if (!options.api_token_file.empty()) config.api_token_file = options.api_token_file;
  if (options.dry_run) config.dry_run = true;
  if (Status s = ApplyListen(config.listen, &d.server_options); !s.ok()) return s.error();
  if (!config.api_token_file.empty()) {
    const auto place = config.places.find("api_token_file");
    const std::string where = !options.api_token_file.empty() ? "--api-token-file"
                              : place != config.places.end()  ? place->second + ": api_token_file"
                                                              : config.source_file + ": api_token_file";
    Result<std::string> token = ReadSecretFile(config.api_token_file, where);
    if (!token) return token.error();
    d.api_token = *token;
  }

  auto catalog = std::make_shared<Catalog>();
  if (!config.catalog_file.empty()) {
    Result<Catalog> c = LoadCatalogFile(config.catalog_file);
    if (!c) return c.error().WithContext("catalog");
    *catalog = std::move(c).value();
  } else {
    std::string source;
    *catalog = DefaultCatalog(options.source_dir, &source);
  }
  d.keep_alive.push_back(catalog);

  // An AWS or GCP installation buys in its cloud region only: a policy pool
  // elsewhere is a configuration error now, not a failure at every launch.
  std::vector<std::string> served_regions;
  if (config.cloud.provider == "aws") served_regions = {config.cloud.region};
  if (config.cloud.provider == "gcp") served_regions = {config.cloud.gcp.region};
  if (config.cloud.provider == "azure") served_regions = {config.cloud.azure.location};
  auto watcher = std::make_unique<PolicyWatcher>(config.policy_file, *catalog, served_regions);
  if (Result<Policy> p = watcher->LoadInitial(); !p) return p.error();
  else if (Status s = CheckPoolsCanLaunch(config, *p); !s.ok()) return s.error();

  if (!config.db_password_file.empty()) {
    // Every connection of the process (the writer, the report and dashboard
    // readers) logs in with it.
    const auto place = config.places.find("db_password_file");
    Result<std::string> password = ReadSecretFile(
        config.db_password_file, (place != config.places.end() ? place->second : config.source_file) +
                                     ": db_password_file");
    if (!password) return password.error();
    SetDefaultDatabasePassword(*password);
  }
  Result<std::shared_ptr<SqliteAuditStore>> store = OpenStore(config.db_file, &d);
  if (!store) return store.error();

  Result<SignalReader> reader = MakeSignalReader(config.signals);
  if (!reader) return reader.error();

  LiveEngineParts parts;
  parts.catalog = catalog.get();
  parts.store = store->get();
  parts.read_signals = std::move(reader).value();
  Result<HistoryReader> history = MakeHistoryReader(config.signals);
  if (!history) return history.error();
  parts.read_history = std::move(history).value();
  parts.controller_options.source = config.dry_run ? "dry-run" : "daemon";
  parts.controller_options.dry_run = config.dry_run;
  parts.controller_options.regions = config.regions;
  // A dry run neither reads nor replaces the live daemon's learned state
  // (it may share its store): it starts from the priors.
  if (!config.dry_run) parts.controller_options.learned_state_owner = config.cluster_name;
  parts.controller_options.tags = config.cloud.tags;
  parts.controller_options.tags[kClusterTag] = config.cluster_name;
  Result<std::string> installation = (*store)->InstallationId();
  if (!installation) return installation.error().WithContext("audit database " + config.db_file);
  parts.controller_options.token_prefix = config.cluster_name + "-" + *installation + "-";

  // --speed: the whole daemon (controller, simulated cloud, drains) runs on
  // one clock that much faster than real time.
  std::shared_ptr<ScaledClock> scaled;
  if (options.speed_set) {
    if (options.speed <= 0 || options.speed > 1e6) return Error::Config("--speed must be in (0, 1000000]");
    scaled = std::make_shared<ScaledClock>(options.speed);
    d.keep_alive.push_back(scaled);
    parts.speed = options.speed;
  }
  if (config.cloud.provider == "simulated") {
    if (!wiring.cloud) return Error::Config(config.source_file + ": cloud.provider simulated: not in this build");
    SimulatedCloudOptions sim;
    sim.regions = config.regions;
    sim.launch_latency = config.cloud.simulated_launch_latency;
    sim.time = scaled.get();
    if (Status s = wiring.cloud(sim, *catalog, &parts, &d.keep_alive); !s.ok()) return s.error();
  } else if (config.cloud.provider == "gcp") {
    Result<std::shared_ptr<GcpCloud>> gcp = MakeGcpCloud(config, *catalog);
    if (!gcp) return gcp.error();
    d.keep_alive.push_back(*gcp);
    parts.clock = &(*gcp)->clock;
    parts.cloud = (*gcp)->stack.provider.get();
    spdlog::info("cloud: GCP project {} region {} at {} (credentials: {}); Spot prices: {}",
                 (*gcp)->stack.project, config.cloud.gcp.region,
                 config.cloud.gcp.endpoint.empty() ? cloud::kComputeEndpoint : config.cloud.gcp.endpoint,
                 (*gcp)->stack.tokens->Name(), SpotPriceSource((*gcp)->stack, config.cloud.gcp));
  } else if (config.cloud.provider == "azure") {
    Result<std::shared_ptr<AzureCloud>> azure = MakeAzureCloud(config);
    if (!azure) return azure.error();
    d.keep_alive.push_back(*azure);
    parts.clock = &(*azure)->clock;
    parts.cloud = (*azure)->stack.provider.get();
    const AzureSettings& a = config.cloud.azure;
    spdlog::info("cloud: Azure {} in resource group {} ({}) at {} (credentials: {})",
                 a.driver == "vmss" ? "VM Scale Sets" : "AKS cluster " + a.aks_cluster, a.resource_group,
                 a.location, (*azure)->stack.client->options().endpoint, (*azure)->stack.tokens->Name());
  } else {
    Result<std::shared_ptr<AwsCloud>> aws = MakeAwsCloud(config, *catalog);
    if (!aws) return aws.error();
    d.keep_alive.push_back(*aws);
    parts.clock = &(*aws)->clock;
    parts.cloud = (*aws)->stack.provider.get();
    spdlog::info("cloud: AWS region {} at {}", (*aws)->stack.region,
                 config.cloud.endpoint_url.empty() ? "the AWS endpoints" : config.cloud.endpoint_url);
  }
  if (config.kubernetes.enabled) {
    if (Status s = SetUpKubernetes(config, *catalog, &parts, &d, scaled); !s.ok()) return s.error();
  }
  parts.watcher = std::move(watcher);
  EndRunAtShutdown(store->get(), &parts);
  const std::map<std::string, std::string> launch_tags = parts.controller_options.tags;
  d.engine = MakeLiveEngine(std::move(parts));
  const std::string run_name = config.cluster_name.empty() ? "daemon" : config.cluster_name;
  const bool gcp = config.cloud.provider == "gcp";
  RunCloud cloud =
      CloudOf(config.cloud.provider == "simulated" ? catalog->provider : config.cloud.provider, gcp, launch_tags,
              config.cluster_name, d.engine->controller().policy());
  if (config.cloud.provider == "azure") {
    // Azure nodes carry their agent pool's or scale set's tags, whose names
    // cannot hold '/' (cloud/azure_provider.h).
    cloud.instance_tags = {{cloud::kAzureClusterTag, config.cluster_name}};
    for (auto& [pool, tags] : cloud.pool_tags) tags = {{cloud::kAzurePoolTag, pool}};
  }
  if (Status s = BeginDaemonRun(store->get(), run_name, cloud, *d.engine); !s.ok()) return s.error();
  auto pruner = std::make_shared<report::RetentionPruner>(**store, config.retention);
  d.keep_alive.push_back(pruner);
  d.retention_step = [pruner, engine = d.engine.get()] { return pruner->Step(engine->now()); };
  if (d.lease_view) {
    // Fencing: each leadership term claims the store before its first tick.
    d.claim_leadership = [st = store->get(), cluster = config.cluster_name, lease = d.lease_view,
                          engine = d.engine.get()](int64_t term) {
      return st->ClaimLeadership({cluster, term, lease().holder, engine->now()});
    };
  }
  spdlog::info("policy {} ({}) from {}; catalog {} ({} instance types); cloud {}", d.engine->controller().policy().name,
               d.engine->controller().policy().content_hash.substr(0, 12), config.policy_file,
               config.catalog_file.empty() ? "built-in" : config.catalog_file, catalog->instance_types.size(),
               config.cloud.provider);
  return d;
}

}  // namespace gpuscaler::daemon
