#include "gpuscaler/daemon/config.h"

#include <gtest/gtest.h>

#include "gpuscaler/policy/loader.h"

namespace gpuscaler::daemon {
namespace {

TEST(DaemonConfig, ReadsEveryFieldAndResolvesPathsAgainstTheFilesFolder) {
  const std::string text = R"(apiVersion: gpuscaler/v1
kind: DaemonConfig
cluster_name: test
policy: policy/policy.yaml
catalog: /usr/share/gpuscaler/aws.yaml
regions: [us-east-1]
db: data/audit.db
listen: 0.0.0.0:9090
dry_run: true
cloud: {provider: aws, region: us-west-2, endpoint_url: "http://127.0.0.1:4566", launch_template: gpu,
        subnets: {us-west-2a: subnet-1}, interruption_queue_url: "https://sqs/q"}
signals:
  prometheus: {url: "http://prom:9090", bearer_token_file: token}
  rabbitmq: {url: "http://rabbit:15672", username: gpuscaler, password_file: /run/secrets/pw}
  dcgm: {urls: ["http://node:9400/metrics"]}
  timeout: 2s
kubernetes: {enabled: true, leader_election: {enabled: true, lease_name: gs, namespace: ops}, team_label: acme.io/team}
api_token_file: api-token
retention: 30d
)";
  Result<DaemonConfig> c = ParseDaemonConfig(text, "/etc/gpuscaler/gpuscaler.yaml");
  ASSERT_TRUE(c.ok()) << c.error().message();
  EXPECT_EQ(c->policy_file, "/etc/gpuscaler/policy/policy.yaml");
  EXPECT_EQ(c->catalog_file, "/usr/share/gpuscaler/aws.yaml");
  EXPECT_EQ(c->db_file, "/etc/gpuscaler/data/audit.db");
  EXPECT_EQ(c->listen, "0.0.0.0:9090");
  EXPECT_TRUE(c->dry_run);
  EXPECT_EQ(c->cloud.provider, "aws");
  EXPECT_EQ(c->cloud.region, "us-west-2");
  EXPECT_EQ(c->cloud.subnets.at("us-west-2a"), "subnet-1");
  EXPECT_EQ(c->signals.prometheus.bearer_token_file, "/etc/gpuscaler/token");
  EXPECT_EQ(c->signals.rabbitmq.password_file, "/run/secrets/pw");
  EXPECT_EQ(c->signals.dcgm.urls.size(), 1u);
  EXPECT_EQ(c->signals.timeout, std::chrono::milliseconds(2000));
  EXPECT_TRUE(c->kubernetes.leader_election.enabled);
  EXPECT_EQ(c->kubernetes.leader_election.namespace_name, "ops");
  EXPECT_EQ(c->kubernetes.team_label, "acme.io/team");
  EXPECT_EQ(c->api_token_file, "/etc/gpuscaler/api-token");
  EXPECT_EQ(c->retention, Seconds(30 * 86400));
}

// A PostgreSQL db is a URL, not a path: it is kept as written, and its
// password file is resolved as every file is. A password file for a SQLite
// db is a mistake, said at its line.
TEST(DaemonConfig, APostgresDbKeepsItsUrlAndReadsItsPasswordFile) {
  const std::string head = "apiVersion: gpuscaler/v1\nkind: DaemonConfig\ncluster_name: test\npolicy: p.yaml\n";
  Result<DaemonConfig> c = ParseDaemonConfig(
      head + "db: postgresql://gpuscaler@db.internal:5432/audit?sslmode=verify-full&sslrootcert=/etc/ca.pem\n"
             "db_password_file: secrets/db-password\n",
      "/etc/gpuscaler/gpuscaler.yaml");
  ASSERT_TRUE(c.ok()) << c.error().message();
  EXPECT_EQ(c->db_file, "postgresql://gpuscaler@db.internal:5432/audit?sslmode=verify-full&sslrootcert=/etc/ca.pem");
  EXPECT_EQ(c->db_password_file, "/etc/gpuscaler/secrets/db-password");

  Result<DaemonConfig> sqlite = ParseDaemonConfig(head + "db: audit.db\ndb_password_file: pw\n", "d.yaml");
  ASSERT_FALSE(sqlite.ok());
  EXPECT_NE(sqlite.error().message().find("d.yaml:6:"), std::string::npos) << sqlite.error().message();
  EXPECT_NE(sqlite.error().message().find("db_password_file"), std::string::npos) << sqlite.error().message();
}

TEST(DaemonConfig, ReportsEveryProblemWithItsLine) {
  const std::string text = R"(apiVersion: gpuscaler/v1
kind: DaemonConfig
cluster_name: test
policy: p.yaml
listen: localhost
cloud: {provider: openstack}
signals:
  prometheus: {url: "prom:9090"}
  timout: 3s
)";
  Result<DaemonConfig> c = ParseDaemonConfig(text, "d.yaml");
  ASSERT_FALSE(c.ok());
  const std::string& m = c.error().message();
  EXPECT_EQ(c.error().category(), ErrorCategory::kConfig);
  EXPECT_NE(m.find("d.yaml:5:"), std::string::npos) << m;
  EXPECT_NE(m.find("listen"), std::string::npos) << m;
  EXPECT_NE(m.find("d.yaml:6:"), std::string::npos) << m;
  EXPECT_NE(m.find("'aws', 'gcp', 'azure' or 'simulated'"), std::string::npos) << m;
  EXPECT_NE(m.find("d.yaml:8:"), std::string::npos) << m;
  EXPECT_NE(m.find("d.yaml:9:"), std::string::npos) << m;
  EXPECT_NE(m.find("did you mean 'timeout'"), std::string::npos) << m;
}

TEST(DaemonConfig, RequiresThePolicy) {
  Result<DaemonConfig> c = ParseDaemonConfig("apiVersion: gpuscaler/v1\nkind: DaemonConfig\ncluster_name: test\n", "d.yaml");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message().find("policy"), std::string::npos);
}

TEST(DaemonConfig, ParsesListenAddresses) {
  struct Case {
    std::string text;
    bool ok;
    std::string host;
    uint16_t port;
  };
  for (const Case& c : std::vector<Case>{{"127.0.0.1:8080", true, "127.0.0.1", 8080},
                                         {"0.0.0.0:0", true, "0.0.0.0", 0},
                                         {"[::1]:80", true, "::1", 80},
                                         {"localhost", false, "", 0},
                                         {":80", false, "", 0},
                                         {"h:99999", false, "", 0},
                                         {"h:8x", false, "", 0}}) {
    SCOPED_TRACE(c.text);
    auto r = ParseListenAddress(c.text);
    ASSERT_EQ(r.ok(), c.ok);
    if (c.ok) {
      EXPECT_EQ(r->first, c.host);
      EXPECT_EQ(r->second, c.port);
    }
  }
}

TEST(DaemonConfig, ReadsTheAwsProviderSettings) {
  const std::string text = R"(apiVersion: gpuscaler/v1
kind: DaemonConfig
cluster_name: test
policy: p.yaml
cloud:
  provider: aws
  region: eu-west-1
  launch_template: lt-0abc
  launch_template_version: "7"
  spot_allocation_strategy: capacity-optimized-prioritized
  on_demand_allocation_strategy: prioritized
  subnets: {eu-west-1a: subnet-0a, eu-west-1b: subnet-0b}
  tags: {team: ml, cost-center: "42"}
  max_attempts: 8
  request_timeout: 30s
  gang_timeout: 90s
)";
  Result<DaemonConfig> c = ParseDaemonConfig(text, "d.yaml");
  ASSERT_TRUE(c.ok()) << c.error().message();
  EXPECT_EQ(c->cloud.launch_template, "lt-0abc");
  EXPECT_EQ(c->cloud.launch_template_version, "7");
  EXPECT_EQ(c->cloud.spot_allocation_strategy, "capacity-optimized-prioritized");
  EXPECT_EQ(c->cloud.on_demand_allocation_strategy, "prioritized");
  EXPECT_EQ(c->cloud.tags.at("cost-center"), "42");
  EXPECT_EQ(c->cloud.max_attempts, 8);
  EXPECT_EQ(c->cloud.request_timeout, Seconds(30));
  EXPECT_EQ(c->cloud.gang_timeout, Seconds(90));
}

TEST(DaemonConfig, RejectsBadAwsSettingsEachAtItsLine) {
  const std::string text = R"(apiVersion: gpuscaler/v1
kind: DaemonConfig
cluster_name: test
policy: p.yaml
cloud:
  provider: aws
  region: US East
  launch_template: gpu
  launch_template_version: latest
  spot_allocation_strategy: cheapest
  on_demand_allocation_strategy: capacity-optimized
  interruption_queue_url: sqs/queue
  tags: {gpuscaler.io/pool: x}
  max_attempts: 0
  request_timeout: 0s
  gang_timeout: 11m
)";
  Result<DaemonConfig> c = ParseDaemonConfig(text, "d.yaml");
  ASSERT_FALSE(c.ok());
  const std::string& m = c.error().message();
  for (const char* want : {"d.yaml:7:", "cloud.region", "d.yaml:9:", "cloud.launch_template_version", "d.yaml:10:",
                           "cloud.spot_allocation_strategy", "d.yaml:11:", "cloud.on_demand_allocation_strategy",
                           "d.yaml:12:", "cloud.interruption_queue_url", "gpuscaler.io/ are set by gpuscaler",
                           "d.yaml:14:", "cloud.max_attempts", "d.yaml:15:", "cloud.request_timeout", "d.yaml:16:",
                           "cloud.gang_timeout", "between 1s and 10m"}) {
    EXPECT_NE(m.find(want), std::string::npos) << want << " in:\n" << m;
  }
}

TEST(DaemonConfig, EksSettingsLetAwsRunWithoutALaunchTemplate) {
  const std::string head = "apiVersion: gpuscaler/v1\nkind: DaemonConfig\ncluster_name: prod\npolicy: p.yaml\n"
                           "cloud:\n  provider: aws\n";
  Result<DaemonConfig> neither = ParseDaemonConfig(head, "d.yaml");
  ASSERT_FALSE(neither.ok());
  EXPECT_NE(neither.error().message().find("needs launch_template"), std::string::npos) << neither.error().message();

  Result<DaemonConfig> c = ParseDaemonConfig(head +
                                                 "  eks:\n    kubernetes_version: \"1.31\"\n"
                                                 "    api_server_endpoint: https://ABC.gr7.us-east-1.eks.amazonaws.com\n"
                                                 "    certificate_authority: LS0tLS1CRUdJTg==\n"
                                                 "    service_cidr: 10.100.0.0/16\n",
                                             "d.yaml");
  ASSERT_TRUE(c.ok()) << c.error().message();
  EXPECT_EQ(c->cloud.launch_template, "");
  EXPECT_EQ(c->cloud.eks.kubernetes_version, "1.31");
  EXPECT_EQ(c->cloud.eks.api_server_endpoint, "https://ABC.gr7.us-east-1.eks.amazonaws.com");
  EXPECT_EQ(c->cloud.eks.certificate_authority, "LS0tLS1CRUdJTg==");
  EXPECT_EQ(c->cloud.eks.service_cidr, "10.100.0.0/16");
}

TEST(DaemonConfig, EveryFleetPoolNeedsWhatItLaunchesFrom) {
  const PolicyLoadResult policy = ParsePolicy(
      "apiVersion: gpuscaler/v1\nkind: Policy\nclasses: [{name: a}]\npools:\n"
      "  - name: own\n    node_template: {instance_profile: p, security_groups: [sg-1]}\n"
      "  - name: legacy\n"
      "  - {name: group, actuation: asg, auto_scaling_group: g}\n",
      "p.yaml");
  ASSERT_TRUE(policy.ok()) << policy.status().error().message();
  DaemonConfig c;
  c.source_file = "d.yaml";
  c.cloud.provider = "aws";
  c.cloud.launch_template = "gpu-nodes";
  Status no_eks = CheckPoolsCanLaunch(c, policy.policy);
  ASSERT_FALSE(no_eks.ok());
  EXPECT_NE(no_eks.error().message().find("p.yaml: pools[0] 'own': has a node_template, so d.yaml needs cloud.eks"),
            std::string::npos)
      << no_eks.error().message();
  EXPECT_EQ(no_eks.error().message().find("'legacy'"), std::string::npos);

  c.cloud.launch_template.clear();
  c.cloud.eks.api_server_endpoint = "https://x";
  Status no_template = CheckPoolsCanLaunch(c, policy.policy);
  ASSERT_FALSE(no_template.ok());
  EXPECT_NE(no_template.error().message().find("pools[1] 'legacy': has no node_template, so d.yaml needs "
                                               "cloud.launch_template"),
            std::string::npos)
      << no_template.error().message();
  EXPECT_EQ(no_template.error().message().find("'group'"), std::string::npos);  // its group has a template

  c.cloud.launch_template = "gpu-nodes";
  EXPECT_TRUE(CheckPoolsCanLaunch(c, policy.policy).ok());
  c.cloud.provider = "simulated";
  c.cloud.eks = {};
  EXPECT_TRUE(CheckPoolsCanLaunch(c, policy.policy).ok());
}

// Spot warm refills must be launched stop-capable, which only the simulated
// cloud does yet: a daemon on a real cloud refuses the policy at start-up.
TEST(DaemonConfig, SpotWarmCapacityIsRefusedOnGcpAndAzureAndAcceptedOnAwsAndTheSimulatedCloud) {
  const PolicyLoadResult policy = ParsePolicy(
      "apiVersion: gpuscaler/v1\nkind: Policy\nclasses: [{name: a}]\npools:\n"
      "  - {name: cold}\n"
      "  - {name: hot, warm: {size: 2, capacity_type: auto}}\n"
      "  - {name: parked, warm: {size: 1}}\n",
      "p.yaml");
  ASSERT_TRUE(policy.ok()) << policy.status().error().message();
  DaemonConfig c;
  c.source_file = "d.yaml";
  c.cloud.launch_template = "gpu-nodes";
  for (const char* provider : {"gcp", "azure"}) {
    c.cloud.provider = provider;
    Status s = CheckPoolsCanLaunch(c, policy.policy);
    ASSERT_FALSE(s.ok()) << provider;
    EXPECT_NE(s.error().message().find("p.yaml: pools[1] 'hot': warm.capacity_type auto runs on AWS, the simulator "
                                       "and the simulated cloud only; with cloud.provider " +
                                       std::string(provider) + " use on-demand"),
              std::string::npos)
        << s.error().message();
    EXPECT_EQ(s.error().message().find("'parked'"), std::string::npos) << "on-demand warm capacity is real";
  }
  c.dry_run = true;
  EXPECT_TRUE(CheckPoolsCanLaunch(c, policy.policy).ok()) << "a dry run launches nothing";
  c.dry_run = false;
  c.cloud.provider = "simulated";
  EXPECT_TRUE(CheckPoolsCanLaunch(c, policy.policy).ok());
  // The AWS provider launches spot warm refills as persistent Spot requests
  // that stop on interruption (fleet pools; asg ones are the policy's to refuse).
  c.cloud.provider = "aws";
  Status aws = CheckPoolsCanLaunch(c, policy.policy);
  EXPECT_TRUE(aws.ok()) << aws.error().message();
}

TEST(DaemonConfig, ReadsGcpSettings) {
  const std::string text = R"(apiVersion: gpuscaler/v1
kind: DaemonConfig
cluster_name: ml-prod
policy: p.yaml
cloud:
  provider: gcp
  request_timeout: 30s
  gcp:
    project: ml-project-123
    region: us-central1
    zones: [us-central1-a, us-central1-b]
    endpoint: http://127.0.0.1:8085/compute/v1/
    instance_template: global/instanceTemplates/gpu-node
    operation_timeout: 90s
    quota_recheck: 30m
    pools:
      a100-spot:
        migs: {us-central1-a: gke-ml-a100-spot-a, us-central1-b: gke-ml-a100-spot-b}
      l4:
        mig_pattern: "gke-ml-{pool}-{zone}"
        reservation_migs: {l4-rsv: gke-ml-l4-rsv-a}
      h100:
        instance_template: global/instanceTemplates/h100-node
)";
  Result<DaemonConfig> c = ParseDaemonConfig(text, "d.yaml");
  ASSERT_TRUE(c.ok()) << c.error().message();
  const GcpSettings& g = c->cloud.gcp;
  EXPECT_EQ(c->cloud.provider, "gcp");
  EXPECT_EQ(g.project, "ml-project-123");
  EXPECT_EQ(g.region, "us-central1");
  EXPECT_EQ(g.zones, (std::vector<std::string>{"us-central1-a", "us-central1-b"}));
  EXPECT_EQ(g.endpoint, "http://127.0.0.1:8085/compute/v1/");
  EXPECT_EQ(g.instance_template, "global/instanceTemplates/gpu-node");
  EXPECT_EQ(g.operation_timeout, Seconds(90));
  EXPECT_EQ(g.quota_recheck, Seconds(1800));
  ASSERT_EQ(g.pools.size(), 3u);
  EXPECT_EQ(g.pools.at("a100-spot").migs.at("us-central1-b"), "gke-ml-a100-spot-b");
  EXPECT_EQ(g.pools.at("l4").mig_pattern, "gke-ml-{pool}-{zone}");
  EXPECT_EQ(g.pools.at("l4").reservation_migs,
            (std::map<std::string, std::string>{{"l4-rsv", "gke-ml-l4-rsv-a"}}));
  EXPECT_EQ(g.pools.at("h100").instance_template, "global/instanceTemplates/h100-node");
}

TEST(DaemonConfig, RejectsBadGcpSettingsEachAtItsLine) {
  const std::string text = R"(apiVersion: gpuscaler/v1
kind: DaemonConfig
cluster_name: test
policy: p.yaml
cloud:
  provider: gcp
  gcp:
    project: X
    region: us-central1
    zones: [us-east1-b]
    endpoint: compute.local
    operation_timeout: 0s
    pools:
      a100:
        migs: {us-central1-a: Bad_Name}
      l4:
        mig_pattern: "gke-{pool}"
      bare: {}
      both:
        migs: {us-central1-a: ok-group}
        instance_template: t
      reserved-bare:
        instance_template: t
        reservation_migs: {rsv: Bad_Group}
)";
  Result<DaemonConfig> c = ParseDaemonConfig(text, "d.yaml");
  ASSERT_FALSE(c.ok());
  const std::string& m = c.error().message();
  EXPECT_NE(m.find("d.yaml:8:"), std::string::npos) << m;
  EXPECT_NE(m.find("'X' is not a project id"), std::string::npos) << m;
  EXPECT_NE(m.find("'us-east1-b' is not a zone of region us-central1"), std::string::npos) << m;
  EXPECT_NE(m.find("d.yaml:11:"), std::string::npos) << m;
  EXPECT_NE(m.find("cloud.gcp.endpoint"), std::string::npos) << m;
  EXPECT_NE(m.find("cloud.gcp.operation_timeout"), std::string::npos) << m;
  EXPECT_NE(m.find("'Bad_Name' is not a managed instance group name"), std::string::npos) << m;
  EXPECT_NE(m.find("must contain {zone}"), std::string::npos) << m;
  EXPECT_NE(m.find("cloud.gcp.pools.bare: needs migs, mig_pattern or instance_template"), std::string::npos) << m;
  EXPECT_NE(m.find("launches from their templates"), std::string::npos) << m;
  EXPECT_NE(m.find("cloud.gcp.pools.reserved-bare.reservation_migs: only a pool with groups"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("'Bad_Group' is not a managed instance group name"), std::string::npos) << m;

  Result<DaemonConfig> no_region = ParseDaemonConfig(
      "apiVersion: gpuscaler/v1\nkind: DaemonConfig\ncluster_name: t\npolicy: p.yaml\ncloud: {provider: gcp}\n",
      "d.yaml");
  ASSERT_FALSE(no_region.ok());
  EXPECT_NE(no_region.error().message().find("provider 'gcp' needs cloud.gcp with at least region"),
            std::string::npos)
      << no_region.error().message();
}

TEST(DaemonConfig, GcpSpotPricesComeFromTheBillingCatalogUnlessDisabled) {
  const std::string head =
      "apiVersion: gpuscaler/v1\nkind: DaemonConfig\ncluster_name: t\npolicy: p.yaml\ncloud:\n  provider: "
      "gcp\n"
      "  gcp:\n    region: us-central1\n";
  Result<DaemonConfig> defaults = ParseDaemonConfig(head, "d.yaml");
  ASSERT_TRUE(defaults.ok()) << defaults.error().message();
  EXPECT_TRUE(defaults->cloud.gcp.billing_catalog.enabled);
  EXPECT_EQ(defaults->cloud.gcp.billing_catalog.refresh, Seconds(3600));
  EXPECT_EQ(defaults->cloud.gcp.billing_catalog.endpoint, "");

  Result<DaemonConfig> set = ParseDaemonConfig(
      head + "    billing_catalog: {enabled: false, refresh: 6h, endpoint: \"http://127.0.0.1:8085/v1/\"}\n",
      "d.yaml");
  ASSERT_TRUE(set.ok()) << set.error().message();
  EXPECT_FALSE(set->cloud.gcp.billing_catalog.enabled);
  EXPECT_EQ(set->cloud.gcp.billing_catalog.refresh, Seconds(6 * 3600));
  EXPECT_EQ(set->cloud.gcp.billing_catalog.endpoint, "http://127.0.0.1:8085/v1/");

  Result<DaemonConfig> bad = ParseDaemonConfig(
      head +
          "    billing_catalog:\n      refresh: 10s\n      endpoint: cloudbilling.local\n      every: 1h\n",
      "d.yaml");
  ASSERT_FALSE(bad.ok());
  const std::string& m = bad.error().message();
  EXPECT_NE(m.find("cloud.gcp.billing_catalog.refresh: must be between 1m and 24h"), std::string::npos) << m;
  EXPECT_NE(m.find("cloud.gcp.billing_catalog.endpoint: must start with http:// or https://"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("every"), std::string::npos) << m;
  EXPECT_NE(m.find("d.yaml:10:"), std::string::npos) << m;  // the refresh's line
}

// A daemon configuration for GCP (region us-central1) read from "d.yaml".
DaemonConfig GcpDaemonConfig() {
  DaemonConfig c;
  c.source_file = "d.yaml";
  c.cloud.provider = "gcp";
  c.cloud.gcp.region = "us-central1";
  return c;
}

TEST(DaemonConfig, EveryGcpPoolNeedsGroupsOrATemplate) {
  const PolicyLoadResult policy = ParsePolicy(
      "apiVersion: gpuscaler/v1\nkind: Policy\nclasses: [{name: a}]\npools:\n"
      "  - name: a100\n"
      "  - name: l4\n"
      "  - {name: group, actuation: asg, auto_scaling_group: g}\n",
      "p.yaml");
  ASSERT_TRUE(policy.ok()) << policy.status().error().message();
  DaemonConfig c = GcpDaemonConfig();
  c.cloud.gcp.pools["a100"].migs = {{"us-central1-a", "gke-a100-a"}};
  c.cloud.gcp.pools["gone"].instance_template = "t";
  Status s = CheckPoolsCanLaunch(c, policy.policy);
  ASSERT_FALSE(s.ok());
  const std::string& m = s.error().message();
  EXPECT_EQ(m.find("'a100'"), std::string::npos) << m;
  EXPECT_NE(m.find("pools[1] 'l4': has no entry in d.yaml cloud.gcp.pools and there is no cloud.gcp.instance_template"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("pools[2] 'group': actuation 'asg' is AWS's"), std::string::npos) << m;
  EXPECT_NE(m.find("cloud.gcp.pools.gone: no policy pool of that name"), std::string::npos) << m;
  c.cloud.gcp.instance_template = "global/instanceTemplates/gpu";
  c.cloud.gcp.pools.erase("gone");
  Status only_asg = CheckPoolsCanLaunch(c, policy.policy);
  ASSERT_FALSE(only_asg.ok());
  EXPECT_EQ(only_asg.error().message().find("'l4'"), std::string::npos);
}

// A placement group is put on bare instances per launch; a GKE node pool's
// groups launch from their own template, so the policy cannot place them.
TEST(DaemonConfig, AGcpPlacementGroupNeedsABarePool) {
  const PolicyLoadResult policy = ParsePolicy(
      "apiVersion: gpuscaler/v1\nkind: Policy\nclasses: [{name: a}]\npools:\n"
      "  - {name: grouped, placement_group: gangs}\n"
      "  - {name: bare, placement_group: gangs}\n",
      "p.yaml");
  ASSERT_TRUE(policy.ok()) << policy.status().error().message();
  DaemonConfig c = GcpDaemonConfig();
  c.cloud.gcp.pools["grouped"].migs = {{"us-central1-a", "gke-a"}};
  c.cloud.gcp.pools["bare"].instance_template = "global/instanceTemplates/gpu";
  Status s = CheckPoolsCanLaunch(c, policy.policy);
  ASSERT_FALSE(s.ok());
  const std::string& m = s.error().message();
  EXPECT_NE(m.find("pools[0] 'grouped': placement_group needs a pool of bare instances"), std::string::npos) << m;
  EXPECT_EQ(m.find("'bare'"), std::string::npos) << m;
}

TEST(DaemonConfig, RejectsBadEksSettingsEachAtItsLine) {
  Result<DaemonConfig> c = ParseDaemonConfig(
      "apiVersion: gpuscaler/v1\nkind: DaemonConfig\ncluster_name: prod\npolicy: p.yaml\n"
      "cloud:\n  provider: aws\n  launch_template: gpu\n  eks:\n"
      "    kubernetes_version: latest\n"
      "    api_server_endpoint: http://insecure\n"
      "    certificate_authority: \"-----BEGIN CERTIFICATE-----\"\n"
      "    service_cidr: 10.100.0.0\n",
      "d.yaml");
  ASSERT_FALSE(c.ok());
  const std::string& m = c.error().message();
  for (const char* want : {"d.yaml:9:", "cloud.eks.kubernetes_version", "d.yaml:10:", "must start with https://",
                           "d.yaml:11:", "cluster CA in base64", "d.yaml:12:", "not an IPv4 CIDR"}) {
    EXPECT_NE(m.find(want), std::string::npos) << want << " in:\n" << m;
  }
  Result<DaemonConfig> partial = ParseDaemonConfig(
      "apiVersion: gpuscaler/v1\nkind: DaemonConfig\ncluster_name: prod\npolicy: p.yaml\n"
      "cloud: {provider: aws, eks: {kubernetes_version: \"1.31\"}}\n",
      "d.yaml");
  ASSERT_FALSE(partial.ok());
  EXPECT_NE(partial.error().message().find("cloud.eks.api_server_endpoint: required field is missing"),
            std::string::npos)
      << partial.error().message();
}

TEST(DaemonConfig, SubnetsMustBeSubnetIdsInZonesOfTheRegion) {
  Result<DaemonConfig> c = ParseDaemonConfig(
      "apiVersion: gpuscaler/v1\nkind: DaemonConfig\ncluster_name: test\npolicy: p.yaml\n"
      "cloud: {provider: aws, region: us-east-1, launch_template: gpu, subnets: {us-west-2a: subnet-1, us-east-1b: sg-2}}\n",
      "d.yaml");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message().find("zone 'us-west-2a' is not in region us-east-1"), std::string::npos)
      << c.error().message();
  EXPECT_NE(c.error().message().find("'sg-2' is not a subnet id"), std::string::npos) << c.error().message();
}

TEST(DaemonConfig, TheEmulatorExampleLoads) {
  Result<DaemonConfig> c = LoadDaemonConfig(std::string(GPUSCALER_SOURCE_DIR) + "/config/gpuscaler-emulator.yaml");
  ASSERT_TRUE(c.ok()) << c.error().message();
  EXPECT_EQ(c->cloud.provider, "aws");
  EXPECT_EQ(c->cloud.endpoint_url, "http://127.0.0.1:4566");
}

TEST(DaemonConfig, ClusterNameIsRequiredAndMustBeAClusterName) {
  Result<DaemonConfig> missing =
      ParseDaemonConfig("apiVersion: gpuscaler/v1\nkind: DaemonConfig\npolicy: p.yaml\n", "d.yaml");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message().find("cluster_name"), std::string::npos) << missing.error().message();
  Result<DaemonConfig> bad = ParseDaemonConfig(
      "apiVersion: gpuscaler/v1\nkind: DaemonConfig\ncluster_name: \"a b\"\npolicy: p.yaml\n", "d.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("d.yaml:3:15: cluster_name: 'a b' is not a cluster name"), std::string::npos)
      << bad.error().message();
  Result<DaemonConfig> good = ParseDaemonConfig(
      "apiVersion: gpuscaler/v1\nkind: DaemonConfig\ncluster_name: prod-eu_1\npolicy: p.yaml\n", "d.yaml");
  ASSERT_TRUE(good.ok()) << good.error().message();
  EXPECT_EQ(good->cluster_name, "prod-eu_1");
}


TEST(DaemonConfig, LeaderElectionTimingIsReadAndMustFollowClientGosOrder) {
  const std::string head = "apiVersion: gpuscaler/v1\nkind: DaemonConfig\ncluster_name: c\npolicy: p.yaml\n";
  Result<DaemonConfig> defaults =
      ParseDaemonConfig(head + "kubernetes: {enabled: true, leader_election: {enabled: true}}\n", "d.yaml");
  ASSERT_TRUE(defaults.ok()) << defaults.error().message();
  EXPECT_EQ(defaults->kubernetes.leader_election.lease_duration, Seconds(15));
  EXPECT_EQ(defaults->kubernetes.leader_election.renew_deadline, Seconds(10));
  EXPECT_EQ(defaults->kubernetes.leader_election.retry_period, Seconds(2));
  Result<DaemonConfig> fast = ParseDaemonConfig(
      head + "kubernetes:\n  enabled: true\n  leader_election: {enabled: true, lease_duration: 3s, renew_deadline: 2s, "
             "retry_period: 1s}\n",
      "d.yaml");
  ASSERT_TRUE(fast.ok()) << fast.error().message();
  EXPECT_EQ(fast->kubernetes.leader_election.lease_duration, Seconds(3));
  EXPECT_EQ(fast->kubernetes.leader_election.renew_deadline, Seconds(2));
  EXPECT_EQ(fast->kubernetes.leader_election.retry_period, Seconds(1));
  Result<DaemonConfig> bad = ParseDaemonConfig(
      head + "kubernetes:\n  enabled: true\n  leader_election: {enabled: true, lease_duration: 10s, renew_deadline: 10s}\n",
      "d.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("d.yaml:7:"), std::string::npos) << bad.error().message();
  EXPECT_NE(bad.error().message().find("lease_duration > renew_deadline > 1.2 x retry_period"), std::string::npos)
      << bad.error().message();
}

}  // namespace
}  // namespace gpuscaler::daemon
