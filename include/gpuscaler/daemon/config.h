// The daemon's own configuration file (`gpuscaler run --config F`): where the
// policy, catalog and audit database are, how to reach the signal sources and
// the cloud, and what to listen on. Everything an operator tunes about
// *scaling* is in the policy file instead (policy/policy.h), which is
// hot-reloaded; this file is read once at start.
//
// YAML or JSON (apiVersion: gpuscaler/v1, kind: DaemonConfig; strict JSON
// when the name ends in .json; within the caps of model/config_limits.h);
// every problem is reported at once as "file:line:col: field: message",
// unknown fields included. Relative paths are resolved against the file's
// folder. Secrets are never in this file: it names files (or environment
// variables) that hold them. Reference: docs/daemon.md. Value type;
// thread-safe to read.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "gpuscaler/model/time.h"
#include "gpuscaler/model/yaml_document.h"
#include "gpuscaler/signals/endpoints.h"
#include "gpuscaler/status.h"

namespace gpuscaler {
struct Policy;
}

namespace gpuscaler::daemon {

// The signal sources as the collector takes them (signals/endpoints.h).
using PrometheusSettings = signals::PrometheusEndpoint;
using RabbitMqSettings = signals::RabbitMqEndpoint;
using DcgmSettings = signals::DcgmEndpoint;

struct SignalSettings {
  PrometheusSettings prometheus;
  RabbitMqSettings rabbitmq;
  DcgmSettings dcgm;
  std::chrono::milliseconds timeout{3000};
};

// What nodes of pools with a node template need to join the EKS cluster
// named by cluster_name (`aws eks describe-cluster` shows each value).
struct EksSettings {
  std::string kubernetes_version;     // "1.31": the default AMI's
  std::string api_server_endpoint;    // https://…
  std::string certificate_authority;  // base64, as EKS shows it
  std::string service_cidr;           // "10.100.0.0/16"

  bool configured() const { return !api_server_endpoint.empty(); }
};

// provider "gcp": one policy pool's managed instance groups (or template).
struct GcpPoolSettings {
  std::map<std::string, std::string> migs;  // zone -> managed instance group
  std::string mig_pattern;                  // "{pool}" / "{zone}" placeholders
  std::string instance_template;            // bare pools (bulkInsert)
  // Pools with groups: reservation name -> the group whose template
  // consumes it (GcpPoolTarget::reservation_migs).
  std::map<std::string, std::string> reservation_migs;
};

// provider "gcp": Spot prices from the Cloud Billing Catalog (docs/gcp.md#prices).
struct GcpBillingCatalogSettings {
  bool enabled = true;
  Seconds refresh{3600};  // the catalog is read at most this often
  // The Cloud Billing v1 base URL; empty: Google's (or, with `endpoint` set
  // to an emulator, the emulator's /v1/).
  std::string endpoint;
};

// provider "gcp" (docs/gcp.md).
struct GcpSettings {
  std::string project;  // empty: the service-account key's project_id
  std::string region;   // required
  std::vector<std::string> zones;
  // The Compute Engine v1 base URL (an emulator's); empty: Google's.
  std::string endpoint;
  // Pools not named in `pools` create bare instances from this template.
  std::string instance_template;
  std::map<std::string, GcpPoolSettings> pools;
  Seconds operation_timeout{60};
  // How long a QUOTA_EXCEEDED blocks its offerings at most when the quota
  // cannot be read back (regions.get).
  Seconds quota_recheck{900};
  GcpBillingCatalogSettings billing_catalog;
  bool configured() const { return !region.empty(); }
};

// provider "azure": how gpuscaler signs in to Azure Resource Manager
// (cloud/azure_credentials.h). Secrets are files, never values here.
struct AzureCredentialSettings {
  // auto (workload identity when AZURE_FEDERATED_TOKEN_FILE is set, else
  // managed identity), workload_identity, managed_identity, client_secret,
  // client_certificate.
  std::string kind = "auto";
  std::string tenant_id;  // empty: AZURE_TENANT_ID
  std::string client_id;  // empty: AZURE_CLIENT_ID; managed identity: a user-assigned one
  std::string client_secret_file;
  std::string certificate_file;  // PEM: certificate and RSA private key
  std::string authority_host;    // empty: AZURE_AUTHORITY_HOST, else Entra ID's (an emulator's URL)
  std::string imds_endpoint;     // empty: http://169.254.169.254 (an emulator's URL)
};

// provider "azure" (docs/azure.md).
struct AzureSettings {
  std::string subscription_id;  // empty: AZURE_SUBSCRIPTION_ID
  std::string resource_group;   // required: the AKS cluster's, or the scale sets'
  std::string location;         // required: the region ("eastus")
  std::string driver = "aks";   // "aks" (agent pools) or "vmss" (VM Scale Sets)
  std::string aks_cluster;      // driver aks: the managed cluster's name
  // The ARM base URL (an emulator's); empty: https://management.azure.com/.
  std::string endpoint;
  // https: a PEM file of CAs to trust instead of the system's (an
  // emulator's test CA), for ARM, Entra ID and IMDS.
  std::string ca_file;
  // driver vmss: delete instances with forceDeletion=true.
  bool force_deletion = false;
  Seconds operation_timeout{600};
  AzureCredentialSettings credentials;
  // Policy pool -> its agent pools (driver aks) or scale sets (driver vmss).
  std::map<std::string, std::vector<std::string>> pools;
  bool configured() const { return !resource_group.empty(); }
};

struct CloudSettings {
  // "aws": EC2 Fleet / Auto Scaling; "gcp": Compute Engine managed instance
  // groups / instances; "azure": AKS agent pools / VM Scale Sets;
  // "simulated": the simulator's cloud on the wall clock (try the daemon with
  // real signals and no cloud account).
  std::string provider = "simulated";
  std::string region = "us-east-1";
  std::string endpoint_url;  // override (an emulator); empty: the real endpoint
  // The launch template of pools without a node template.
  std::string launch_template;
  // Required (provider aws) when a pool has a node template.
  EksSettings eks;
  std::map<std::string, std::string> subnets;  // zone -> subnet id
  std::string interruption_queue_url;          // SQS queue fed by EventBridge
  // provider "aws": the launch template's version ("$Latest", "$Default" or a
  // number); a launch_template starting with "lt-" is an id, else a name.
  std::string launch_template_version = "$Latest";
  std::string spot_allocation_strategy = "price-capacity-optimized";
  std::string on_demand_allocation_strategy = "lowest-price";
  // Extra tags on every instance (the gpuscaler.io/ keys are ours).
  std::map<std::string, std::string> tags;
  // Tries per AWS call (throttles, 5xx, timeouts), backoff capped exponential
  // with full jitter; and the deadline of one HTTP exchange.
  int max_attempts = 5;
  Seconds request_timeout{10};
  // provider "aws": how long a gang's launch into an Auto Scaling group
  // waits for all its nodes before giving them back.
  Seconds gang_timeout{60};
  // provider "simulated": median launch-to-Ready time of every node (0: the
  // catalog's typical latency per family, minutes).
  Seconds simulated_launch_latency{0};
  GcpSettings gcp;
  AzureSettings azure;
};

struct LeaderElectionSettings {
  bool enabled = false;
  std::string lease_name = "gpuscaler";
  std::string namespace_name;  // empty: KubernetesSettings::namespace_name
  // client-go's defaults; lease > renew deadline > 1.2 x retry period.
  Seconds lease_duration{15};
  Seconds renew_deadline{10};
  Seconds retry_period{2};
};

struct KubernetesSettings {
  bool enabled = false;
  // Where the API server is: the pod's service account (in_cluster), or a
  // kubeconfig file (running outside the cluster; setting it turns
  // in_cluster off) and its context (empty: current-context).
  bool in_cluster = true;
  std::string kubeconfig;
  std::string context;
  // gpuscaler's own namespace (the Lease's); empty: the pod's namespace
  // in-cluster, the context's namespace with a kubeconfig.
  std::string namespace_name;
  LeaderElectionSettings leader_election;
  // The pod label naming the team that pays for a pod's GPUs; it overrides
  // the class's team (classes[].team) in usage rows and team budgets.
  std::string team_label = "gpuscaler.io/team";
};

struct DaemonConfig {
  std::string source_file;
  // Where each file-valued field given was set, "file:line:col" by field
  // name ("api_token_file"), so that a problem found when the file is read
  // at start names the place as a parse error would.
  std::map<std::string, std::string> places;
  // Names this installation (required; letters, digits, '-' and '_', at most
  // 100: EKS's cluster-name rule). Every instance it launches is tagged
  // gpuscaler.io/cluster=<name>, it lists, drains and terminates only
  // instances with that tag, and its idempotency tokens start with it.
  std::string cluster_name;
  std::string policy_file;   // required
  std::string catalog_file;  // empty: the built-in catalog search (config/catalogs/aws.yaml)
  std::vector<std::string> regions;  // empty: every region of the catalog
  // The audit store: a SQLite file, or a postgresql:// URL (several
  // clusters may share one database; store/database_url.h).
  std::string db_file = "gpuscaler-audit.db";
  // PostgreSQL db: a file holding the login password (empty: libpq's own
  // sources: the URL, PGPASSWORD, PGPASSFILE). Never logged.
  std::string db_password_file;
  std::string listen = "127.0.0.1:8080";
  bool dry_run = false;
  CloudSettings cloud;
  SignalSettings signals;
  KubernetesSettings kubernetes;
  std::string api_token_file;  // bearer token for mutating endpoints; empty: they are disabled
  Seconds retention{90 * 86400};
};

// With provider aws (not dry_run): every fleet pool of `policy` can launch,
// those with a node_template because cloud.eks is set, the others because
// cloud.launch_template is. With provider gcp or azure: every pool has an
// entry in cloud.gcp.pools / cloud.azure.pools (gcp: or an instance
// template) and every entry names a policy pool. kConfig naming the pools
// otherwise. Checked at boot; a reload that breaks it fails those pools'
// launches, naming them.
Status CheckPoolsCanLaunch(const DaemonConfig& config, const Policy& policy);

// Parses and validates; kConfig with every problem (one per line) on error.
Result<DaemonConfig> ParseDaemonConfig(const std::string& text, const std::string& file_name);
Result<DaemonConfig> LoadDaemonConfig(const std::string& path);

// "host:port" -> parts; the port must be 0..65535 ("[::1]:80" allowed).
Result<std::pair<std::string, uint16_t>> ParseListenAddress(const std::string& text);

}  // namespace gpuscaler::daemon
