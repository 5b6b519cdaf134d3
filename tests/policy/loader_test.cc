#include "gpuscaler/policy/loader.h"
#include "gpuscaler/policy/schedule.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace gpuscaler {
namespace {

// The smallest valid policy; cases below edit it or replace it.
constexpr const char* kMinimal = R"(apiVersion: gpuscaler/v1
kind: Policy
pools:
  - name: gpu
classes:
  - name: default
)";

std::string Join(const std::vector<ConfigProblem>& problems) {
  std::string out;
  for (const auto& p : problems) out += p.ToString() + "\n";
  return out;
}

TEST(PolicyLoader, MinimalPolicyGetsTheStructDefaults) {
  const PolicyLoadResult r = ParsePolicy(kMinimal, "p.yaml");
  ASSERT_TRUE(r.ok()) << Join(r.problems);
  const Policy& p = r.policy;
  EXPECT_EQ(p.name, "default");
  ASSERT_EQ(p.pools.size(), 1u);
  EXPECT_EQ(p.pools[0].max_nodes, 100);
  EXPECT_EQ(p.pools[0].capacity_types.size(), 2u);
  EXPECT_EQ(p.pools[0].actuation, Actuation::kFleet);
  ASSERT_EQ(p.classes.size(), 1u);
  EXPECT_TRUE(p.classes[0].interruptible);
  EXPECT_EQ(p.classes[0].checkpoint_interval, Seconds(1800));
  EXPECT_EQ(p.scaling.max_nodes_removed_per_tick, 5);
  EXPECT_EQ(p.signals.max_staleness.at("prices"), Seconds(3600));
  EXPECT_EQ(p.source_file, "p.yaml");
  EXPECT_EQ(p.content_hash.size(), 64u);
}

TEST(PolicyLoader, ReadsEveryFieldIntoTheStructs) {
  const char* text = R"(apiVersion: gpuscaler/v1
kind: Policy
name: full
pools:
  - name: od
    instance_types: [g5.xlarge]
    families: [g6]
    gpu_models: [a10g]
    regions: [us-east-1]
    zones: [us-east-1a]
    capacity_types: [on-demand]
    min_nodes: 2
    max_nodes: 8
    taints: [{key: nvidia.com/gpu, value: "true", effect: NoSchedule}]
    actuation: asg
    auto_scaling_group: my-asg
classes:
  - name: online
    match: {namespaces: [ns1], labels: {app: web}}
    pools: [od]
    interruptible: false
    max_spot_share: 0
    max_lost_work_share: 0.002
    checkpoint_interval: 5m
    restart_cost: 90s
    priority: 7
    target: {max_queue_wait: 1h30m, jobs_per_gpu_per_minute: 2.5}
    zone_spread: {max_zone_share: 0.5, min_zones: 2}
    shape: {gpus: 2, mig_profile: "", gpu_models: [a10g], min_gpu_memory_mib: 20000,
            cpu_milli: 3000, memory_mib: 12000, expected_runtime: 2h}
    signals:
      queue_depth: {source: rabbitmq, vhost: /v, queue: q1}
      gpu_utilization: {source: prometheus, query: avg(x)}
    scale_in_utilization_below: 0.25
budget:
  global: {hourly_usd: 10, monthly_usd: 5000, hard: false}
  pools: {od: {hourly_usd: 4}}
spot: {max_price_fraction_of_on_demand: 0.5, max_interruptions_per_hour: 0.2, max_pool_share: 0.4,
       fallback_to_on_demand: false, fallback_duration: 10m, reclaim_cooldown: 15m,
       reclaim_cooldown_max: 1h}
scaling: {tick_interval: 15s, scale_up_stabilization: 1m, scale_down_stabilization: 2m,
          scale_up_cooldown: 3m, scale_down_cooldown: 4m, max_nodes_added_per_tick: 6,
          max_nodes_removed_per_tick: 1}
disruption: {consolidation: false, min_node_age: 20m, max_disrupted_per_interval: 3,
             disruption_interval: 7m, do_not_disrupt_labels: [a, b],
             min_savings_usd_per_hour: 1.5, min_savings_fraction: 0.3}
signals: {max_staleness: {prometheus: 30s}}
)";
  const PolicyLoadResult r = ParsePolicy(text, "full.yaml");
  ASSERT_TRUE(r.ok()) << Join(r.problems);
  const Policy& p = r.policy;
  EXPECT_EQ(p.name, "full");
  const NodePoolPolicy& pool = p.pools.at(0);
  EXPECT_EQ(pool.instance_types, std::vector<std::string>{"g5.xlarge"});
  EXPECT_EQ(pool.families, std::vector<std::string>{"g6"});
  EXPECT_EQ(pool.zones, std::vector<std::string>{"us-east-1a"});
  EXPECT_EQ(pool.capacity_types, std::vector<CapacityType>{CapacityType::kOnDemand});
  EXPECT_EQ(pool.min_nodes, 2);
  EXPECT_EQ(pool.max_nodes, 8);
  ASSERT_EQ(pool.taints.size(), 1u);
  EXPECT_EQ(pool.taints[0].effect, "NoSchedule");
  EXPECT_EQ(pool.taints[0].value, "true");
  EXPECT_EQ(pool.auto_scaling_group, "my-asg");
  const WorkloadClassPolicy& c = p.classes.at(0);
  EXPECT_EQ(c.match_namespaces, std::vector<std::string>{"ns1"});
  EXPECT_EQ(c.match_labels.at("app"), "web");
  EXPECT_FALSE(c.interruptible);
  EXPECT_EQ(c.max_spot_share, 0.0);
  EXPECT_EQ(c.max_lost_work_share, 0.002);
  EXPECT_EQ(WorkloadClassPolicy{}.max_lost_work_share, 1.0) << "default: no budget";
  EXPECT_EQ(WorkloadClassPolicy{}.spot_share_window, Seconds(0)) << "default: the floor at every placement";
  EXPECT_EQ(c.checkpoint_interval, Seconds(300));
  EXPECT_EQ(c.restart_cost, Seconds(90));
  EXPECT_EQ(c.priority, 7);
  EXPECT_EQ(c.max_queue_wait, Seconds(5400));
  EXPECT_EQ(c.jobs_per_gpu_per_minute, 2.5);
  EXPECT_EQ(c.max_zone_share, 0.5);
  EXPECT_EQ(c.min_zones, 2);
  EXPECT_EQ(c.gpus_per_job, 2);
  EXPECT_EQ(c.min_gpu_memory_mib, 20000);
  EXPECT_EQ(c.cpu_milli_per_job, 3000);
  EXPECT_EQ(c.memory_mib_per_job, 12000);
  EXPECT_EQ(c.expected_runtime, Seconds(7200));
  ASSERT_TRUE(c.queue_depth.has_value());
  EXPECT_EQ(c.queue_depth->vhost, "/v");
  EXPECT_EQ(c.queue_depth->queue, "q1");
  ASSERT_TRUE(c.gpu_utilization.has_value());
  EXPECT_EQ(c.gpu_utilization->query, "avg(x)");
  EXPECT_EQ(c.scale_in_utilization_below, 0.25);
  EXPECT_EQ(p.budget.global.hourly_usd, 10.0);
  EXPECT_EQ(p.budget.global.monthly_usd, 5000.0);
  EXPECT_FALSE(p.budget.global.hard);
  EXPECT_EQ(p.budget.per_pool.at("od").hourly_usd, 4.0);
  EXPECT_FALSE(p.budget.per_pool.at("od").monthly_usd.has_value());
  EXPECT_EQ(p.spot.max_price_fraction_of_on_demand, 0.5);
  EXPECT_EQ(p.spot.max_interruptions_per_hour, 0.2);
  EXPECT_EQ(p.spot.max_pool_share, 0.4);
  EXPECT_FALSE(p.spot.fallback_to_on_demand);
  EXPECT_EQ(p.spot.fallback_duration, Seconds(600));
  EXPECT_EQ(p.spot.reclaim_cooldown, Seconds(900));
  EXPECT_EQ(p.spot.reclaim_cooldown_max, Seconds(3600));
  EXPECT_EQ(p.scaling.tick_interval, Seconds(15));
  EXPECT_EQ(p.scaling.scale_up_stabilization, Seconds(60));
  EXPECT_EQ(p.scaling.scale_down_stabilization, Seconds(120));
  EXPECT_EQ(p.scaling.scale_up_cooldown, Seconds(180));
  EXPECT_EQ(p.scaling.scale_down_cooldown, Seconds(240));
  EXPECT_EQ(p.scaling.max_nodes_added_per_tick, 6);
  EXPECT_EQ(p.scaling.max_nodes_removed_per_tick, 1);
  EXPECT_FALSE(p.disruption.consolidation);
  EXPECT_EQ(p.disruption.min_node_age, Seconds(1200));
  EXPECT_EQ(p.disruption.max_disrupted_per_interval, 3);
  EXPECT_EQ(p.disruption.disruption_interval, Seconds(420));
  EXPECT_EQ(p.disruption.do_not_disrupt_labels, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(p.disruption.min_savings_usd_per_hour, 1.5);
  EXPECT_EQ(p.disruption.min_savings_fraction, 0.3);
  EXPECT_EQ(p.signals.max_staleness.at("prometheus"), Seconds(30));
  EXPECT_EQ(p.signals.max_staleness.at("rabbitmq"), Seconds(120));  // default kept
}

TEST(PolicyLoader, ReadsTheNodeLifecycleFieldsAndHashesThemOnlyWhenSet) {
  const std::string text = std::string(kMinimal).substr(0, std::string(kMinimal).find("pools:")) +
                           "pools: [{name: gpu, registration_timeout: 20m, repair_after: 10m}]\n"
                           "classes: [{name: batch}]\nspot: {on_rebalance: replace}\n";
  const PolicyLoadResult r = ParsePolicy(text, "p.yaml");
  ASSERT_TRUE(r.ok()) << Join(r.problems);
  EXPECT_EQ(r.policy.pools[0].registration_timeout, Seconds(1200));
  EXPECT_EQ(r.policy.pools[0].repair_after, Seconds(600));
  EXPECT_EQ(r.policy.spot.on_rebalance, RebalanceResponse::kReplace);
  EXPECT_NE(r.policy.content_hash, ParsePolicy(kMinimal, "p.yaml").policy.content_hash);
}

TEST(PolicyLoader, ReadsThePlacementGroupAndHashesItOnlyWhenSet) {
  const std::string head = std::string(kMinimal).substr(0, std::string(kMinimal).find("pools:"));
  const PolicyLoadResult r =
      ParsePolicy(head + "pools: [{name: gpu, placement_group: train-gangs}]\nclasses: [{name: batch}]\n", "p.yaml");
  ASSERT_TRUE(r.ok()) << Join(r.problems);
  EXPECT_EQ(r.policy.pools[0].placement_group, "train-gangs");
  EXPECT_EQ(NodePoolPolicy{}.placement_group, "") << "default: no placement group";
  const PolicyLoadResult without = ParsePolicy(head + "pools: [{name: gpu}]\nclasses: [{name: batch}]\n", "p.yaml");
  ASSERT_TRUE(without.ok()) << Join(without.problems);
  EXPECT_NE(r.policy.content_hash, without.policy.content_hash);
}

TEST(PolicyLoader, ReadsTheWarmPoolAndHashesItOnlyWhenSet) {
  const std::string head = std::string(kMinimal).substr(0, std::string(kMinimal).find("pools:"));
  const PolicyLoadResult fixed = ParsePolicy(
      head + "pools: [{name: gpu, warm: {size: 4, state: hibernated, max_usd_per_hour: 0.5}}]\nclasses: [{name: batch}]\n",
      "p.yaml");
  ASSERT_TRUE(fixed.ok()) << Join(fixed.problems);
  ASSERT_TRUE(fixed.policy.pools[0].warm.has_value());
  EXPECT_EQ(fixed.policy.pools[0].warm->size, 4);
  EXPECT_EQ(fixed.policy.pools[0].warm->state, WarmState::kHibernated);
  EXPECT_DOUBLE_EQ(fixed.policy.pools[0].warm->max_usd_per_hour, 0.5);
  const PolicyLoadResult automatic =
      ParsePolicy(head + "pools: [{name: gpu, warm: {size: auto}}]\nclasses: [{name: batch}]\n", "p.yaml");
  ASSERT_TRUE(automatic.ok()) << Join(automatic.problems);
  EXPECT_FALSE(automatic.policy.pools[0].warm->size.has_value()) << "auto";
  EXPECT_EQ(automatic.policy.pools[0].warm->state, WarmState::kStopped);
  EXPECT_DOUBLE_EQ(automatic.policy.pools[0].warm->max_usd_per_hour, 1.0);
  EXPECT_EQ(automatic.policy.pools[0].warm->capacity_type, WarmCapacityType::kOnDemand) << "on-demand by default";
  const PolicyLoadResult spot =
      ParsePolicy(head + "pools: [{name: gpu, warm: {size: auto, capacity_type: spot}}]\nclasses: [{name: batch}]\n",
                  "p.yaml");
  ASSERT_TRUE(spot.ok()) << Join(spot.problems);
  EXPECT_EQ(spot.policy.pools[0].warm->capacity_type, WarmCapacityType::kSpot);
  EXPECT_NE(spot.policy.content_hash, automatic.policy.content_hash);
  const PolicyLoadResult empty = ParsePolicy(head + "pools: [{name: gpu, warm: {}}]\nclasses: [{name: batch}]\n", "p.yaml");
  ASSERT_TRUE(empty.ok()) << Join(empty.problems);
  EXPECT_FALSE(empty.policy.pools[0].warm->size.has_value()) << "size defaults to auto";
  const PolicyLoadResult without = ParsePolicy(head + "pools: [{name: gpu}]\nclasses: [{name: batch}]\n", "p.yaml");
  ASSERT_TRUE(without.ok()) << Join(without.problems);
  EXPECT_FALSE(without.policy.pools[0].warm.has_value());
  EXPECT_NE(fixed.policy.content_hash, without.policy.content_hash);
  EXPECT_NE(fixed.policy.content_hash, automatic.policy.content_hash);
  EXPECT_EQ(without.policy.content_hash, ParsePolicy(head + "pools: [{name: gpu}]\nclasses: [{name: batch}]\n", "p.yaml").policy.content_hash);
}

TEST(PolicyLoader, ReadsReservationTermsAndHashesThemOnlyWhenSet) {
  const std::string head = std::string(kMinimal).substr(0, std::string(kMinimal).find("pools:"));
  const PolicyLoadResult r = ParsePolicy(
      head + "pools: [{name: gpu, reservations: [cr-0123, my-gcp-reservation, {tags: {team: ml}}]}]\n"
             "classes: [{name: batch}]\n",
      "p.yaml");
  ASSERT_TRUE(r.ok()) << Join(r.problems);
  const std::vector<ReservationSelector>& terms = r.policy.pools[0].reservations;
  ASSERT_EQ(terms.size(), 3u);
  EXPECT_EQ(terms[0].id, "cr-0123");
  EXPECT_EQ(terms[1].id, "my-gcp-reservation") << "a Compute Engine reservation is named freely";
  EXPECT_EQ(terms[2].tags, (std::map<std::string, std::string>{{"team", "ml"}}));
  Reservation tagged;
  tagged.id = "cr-9";
  tagged.tags = {{"team", "ml"}, {"env", "prod"}};
  EXPECT_TRUE(r.policy.pools[0].SelectsReservation(tagged));
  tagged.tags = {{"team", "web"}};
  EXPECT_FALSE(r.policy.pools[0].SelectsReservation(tagged));
  const PolicyLoadResult without = ParsePolicy(head + "pools: [{name: gpu}]\nclasses: [{name: batch}]\n", "p.yaml");
  ASSERT_TRUE(without.ok()) << Join(without.problems);
  EXPECT_NE(r.policy.content_hash, without.policy.content_hash);
}

TEST(PolicyLoader, ReadsTheDeadlineAndHashesItOnlyWhenSet) {
  const std::string head = std::string(kMinimal).substr(0, std::string(kMinimal).find("classes:"));
  const PolicyLoadResult r =
      ParsePolicy(head + "classes:\n  - name: a\n    deadline: 24h\n  - name: b\n  - name: c\n    deadline: 1.5x\n", "p.yaml");
  ASSERT_TRUE(r.ok()) << Join(r.problems);
  EXPECT_EQ(r.policy.classes[0].deadline, (DeadlineRule{Seconds(24 * 3600), 0}));
  EXPECT_FALSE(r.policy.classes[1].deadline.has_value());
  // The multiple form: that many times the work's runtime.
  ASSERT_TRUE(r.policy.classes[2].deadline.has_value());
  EXPECT_EQ(r.policy.classes[2].deadline->runtime_multiple, 1.5);
  EXPECT_EQ(r.policy.classes[2].deadline->Allowed(Seconds(3600)), Seconds(5400));
  EXPECT_EQ(r.policy.classes[0].deadline->Allowed(Seconds(3600)), Seconds(24 * 3600));
  EXPECT_EQ(r.policy.classes[2].deadline->ToString(), "1.5x");
  const PolicyLoadResult without = ParsePolicy(head + "classes: [{name: c}]\n", "p.yaml");
  const PolicyLoadResult day = ParsePolicy(head + "classes: [{name: c, deadline: 1d}]\n", "p.yaml");
  const PolicyLoadResult hours = ParsePolicy(head + "classes: [{name: c, deadline: 24h}]\n", "p.yaml");
  const PolicyLoadResult other = ParsePolicy(head + "classes: [{name: c, deadline: 12h}]\n", "p.yaml");
  ASSERT_TRUE(day.ok()) << Join(day.problems);
  EXPECT_EQ(day.policy.content_hash, hours.policy.content_hash);
  EXPECT_NE(day.policy.content_hash, without.policy.content_hash);
  EXPECT_NE(day.policy.content_hash, other.policy.content_hash);
  // The canonical form names it.
  EXPECT_NE(CanonicalPolicyText(day.policy).find(".deadline"), std::string::npos);
}

TEST(PolicyLoader, ReadsTheForecastAndWaitCostAndHashesThemOnlyWhenSet) {
  const std::string head = std::string(kMinimal).substr(0, std::string(kMinimal).find("classes:"));
  const PolicyLoadResult r = ParsePolicy(
      head + "classes:\n  - name: a\n    wait_cost_usd_per_hour: 12.5\n"
             "    forecast: {quantile: 0.95, horizon: 5m, max_idle_usd_per_hour: 8}\n"
             "  - name: b\n    forecast: {horizon: auto}\n  - name: c\n    forecast: {}\n",
      "p.yaml");
  ASSERT_TRUE(r.ok()) << Join(r.problems);
  const WorkloadClassPolicy& a = r.policy.classes[0];
  EXPECT_EQ(a.wait_cost_usd_per_hour, 12.5);
  ASSERT_TRUE(a.forecast.has_value());
  EXPECT_EQ(a.forecast->quantile, 0.95);
  EXPECT_EQ(a.forecast->horizon, Seconds(300));
  EXPECT_EQ(a.forecast->max_idle_usd_per_hour, 8.0);
  const WorkloadClassPolicy& b = r.policy.classes[1];
  ASSERT_TRUE(b.forecast.has_value());
  EXPECT_FALSE(b.forecast->horizon.has_value());  // auto: the learned lead time
  EXPECT_FALSE(b.wait_cost_usd_per_hour.has_value());
  const WorkloadClassPolicy& c = r.policy.classes[2];
  ASSERT_TRUE(c.forecast.has_value());
  EXPECT_EQ(c.forecast->quantile, 0.9);
  EXPECT_FALSE(c.forecast->horizon.has_value());
  EXPECT_FALSE(c.forecast->max_idle_usd_per_hour.has_value());

  // "auto" spelled out is the default; a class without a forecast keeps the
  // hash it had before the field existed.
  const PolicyLoadResult spelled = ParsePolicy(head + "classes: [{name: c, forecast: {horizon: auto, quantile: 0.9}}]\n", "p.yaml");
  const PolicyLoadResult implicit = ParsePolicy(head + "classes: [{name: c, forecast: {}}]\n", "p.yaml");
  const PolicyLoadResult without = ParsePolicy(head + "classes: [{name: c}]\n", "p.yaml");
  const PolicyLoadResult other = ParsePolicy(head + "classes: [{name: c, forecast: {quantile: 0.8}}]\n", "p.yaml");
  ASSERT_TRUE(spelled.ok()) << Join(spelled.problems);
  EXPECT_EQ(spelled.policy.content_hash, implicit.policy.content_hash);
  EXPECT_NE(implicit.policy.content_hash, without.policy.content_hash);
  EXPECT_NE(implicit.policy.content_hash, other.policy.content_hash);
  EXPECT_EQ(without.policy.content_hash,
            ParsePolicy(head + "classes:\n  - name: c\n", "p.yaml").policy.content_hash);
}

TEST(PolicyLoader, JsonAndYamlOfTheSamePolicyAreEqualAndHashTheSame) {
  const char* json = "{\n\t\"apiVersion\": \"gpuscaler/v1\",\n\t\"kind\": \"Policy\",\n"
                     "\t\"pools\": [{\"name\": \"gpu\"}],\n"
                     "\t\"classes\": [{\"name\":\"default\"}]\n}\n";
  const PolicyLoadResult from_json = ParsePolicy(json, "p.json");
  const PolicyLoadResult from_yaml = ParsePolicy(kMinimal, "p.yaml");
  ASSERT_TRUE(from_json.ok()) << Join(from_json.problems);
  ASSERT_TRUE(from_yaml.ok());
  EXPECT_EQ(from_json.policy.content_hash, from_yaml.policy.content_hash);
}

TEST(PolicyLoader, FormattingOnlyEditsKeepTheHashAndRealEditsChangeIt) {
  const std::string reformatted =
      "# a comment\nkind: Policy\napiVersion: 'gpuscaler/v1'\n"
      "classes: [{name: default, max_spot_share: 1.0}]\npools:\n- {name: gpu, max_nodes: 100}\n";
  const std::string edited = std::string(kMinimal) + "scaling: {max_nodes_added_per_tick: 49}\n";
  const PolicyLoadResult a = ParsePolicy(kMinimal, "a.yaml");
  const PolicyLoadResult b = ParsePolicy(reformatted, "b.yaml");
  const PolicyLoadResult c = ParsePolicy(edited, "c.yaml");
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(b.ok()) << Join(b.problems);
  ASSERT_TRUE(c.ok()) << Join(c.problems);
  EXPECT_EQ(a.policy.content_hash, b.policy.content_hash);
  EXPECT_NE(a.policy.content_hash, c.policy.content_hash);
}

TEST(PolicyLoader, DefaultPolicyHasOnePoolAllowingEverythingAndOneClass) {
  const Policy p = DefaultPolicy();
  ASSERT_EQ(p.pools.size(), 1u);
  EXPECT_EQ(p.pools[0].name, "gpu");
  EXPECT_TRUE(p.pools[0].instance_types.empty());
  EXPECT_TRUE(p.pools[0].families.empty());
  EXPECT_TRUE(p.pools[0].gpu_models.empty());
  EXPECT_EQ(p.pools[0].capacity_types.size(), 2u);
  ASSERT_EQ(p.classes.size(), 1u);
  EXPECT_EQ(p.classes[0].name, "default");
  // It is also what the minimal file says.
  EXPECT_EQ(p.content_hash, ParsePolicy(kMinimal, "p.yaml").policy.content_hash);
}

// A pool with the smallest node template (lines 5-8); cases append lines 9+.
constexpr const char* kTemplatePool =
    "apiVersion: gpuscaler/v1\nkind: Policy\nclasses: [{name: a}]\npools:\n"
    "  - name: gpu\n    node_template:\n      instance_profile: p\n      security_groups: [sg-1]\n";

// kTemplatePool with its security groups replaced by `groups`.
std::string WithSecurityGroups(const std::string& groups) {
  std::string text = kTemplatePool;
  const std::string ids = "security_groups: [sg-1]";
  return text.replace(text.find(ids), ids.size(), "security_groups: " + groups);
}

TEST(PolicyLoader, ReadsPoolLabelsAndTheNodeTemplate) {
  const PolicyLoadResult r = ParsePolicy(WithSecurityGroups("[sg-1, {tags: {karpenter.sh/discovery: prod}}]") +
                                             "      ami: {ssm_parameter: /aws/service/bottlerocket/x}\n"
                                             "      ami_family: bottlerocket\n"
                                             "      block_devices:\n"
                                             "        - {device_name: /dev/xvda, volume_size_gib: 200, iops: 4000, "
                                             "throughput: 250, encrypted: false}\n"
                                             "      mig_config: all-1g.10gb\n"
                                             "    labels: {team: ml, node.kubernetes.io/role: gpu}\n"
                                             "    taints: [{key: nvidia.com/gpu, value: \"true\", effect: NoSchedule}]\n",
                                         "p.yaml");
  ASSERT_TRUE(r.ok()) << Join(r.problems);
  const NodePoolPolicy& pool = r.policy.pools[0];
  EXPECT_EQ(pool.labels, (std::map<std::string, std::string>{{"node.kubernetes.io/role", "gpu"}, {"team", "ml"}}));
  ASSERT_TRUE(pool.node_template.has_value());
  const NodeTemplate& t = *pool.node_template;
  EXPECT_EQ(t.ami_id, "");
  EXPECT_EQ(t.ami_ssm_parameter, "/aws/service/bottlerocket/x");
  EXPECT_EQ(t.ami_family, "bottlerocket");
  EXPECT_EQ(t.instance_profile, "p");
  EXPECT_EQ(t.security_groups, std::vector<std::string>{"sg-1"});
  EXPECT_EQ(t.security_group_selectors,
            (std::vector<std::map<std::string, std::string>>{{{"karpenter.sh/discovery", "prod"}}}));
  ASSERT_EQ(t.block_devices.size(), 1u);
  EXPECT_EQ(t.block_devices[0].device_name, "/dev/xvda");
  EXPECT_EQ(t.block_devices[0].volume_size_gib, 200);
  EXPECT_EQ(t.block_devices[0].volume_type, "gp3");
  EXPECT_EQ(t.block_devices[0].iops, 4000);
  EXPECT_EQ(t.block_devices[0].throughput_mibps, 250);
  EXPECT_FALSE(t.block_devices[0].encrypted);
  EXPECT_EQ(t.mig_config, "all-1g.10gb");

  const PolicyLoadResult with_subnets = ParsePolicy(
      std::string(kTemplatePool) + "      subnets: [subnet-0a, {tags: {karpenter.sh/discovery: prod}}]\n", "p.yaml");
  ASSERT_TRUE(with_subnets.ok()) << Join(with_subnets.problems);
  const NodeTemplate& st = *with_subnets.policy.pools[0].node_template;
  EXPECT_EQ(st.subnets, std::vector<std::string>{"subnet-0a"});
  EXPECT_EQ(st.subnet_selectors, (std::vector<std::map<std::string, std::string>>{{{"karpenter.sh/discovery", "prod"}}}));
  // Hashed only when set.
  EXPECT_NE(with_subnets.policy.content_hash, ParsePolicy(kTemplatePool, "p.yaml").policy.content_hash);
  EXPECT_EQ(CanonicalPolicyText(ParsePolicy(kTemplatePool, "p.yaml").policy).find("subnets"), std::string::npos);

  // The template is part of the policy's identity; a policy without one
  // hashes as before the field existed.
  const PolicyLoadResult other = ParsePolicy(std::string(kTemplatePool) + "      mig_config: all-2g.20gb\n", "p.yaml");
  const PolicyLoadResult same = ParsePolicy(std::string(kTemplatePool) + "      mig_config: all-2g.20gb\n", "q.yaml");
  ASSERT_TRUE(other.ok() && same.ok());
  EXPECT_NE(other.policy.content_hash, r.policy.content_hash);
  EXPECT_EQ(other.policy.content_hash, same.policy.content_hash);
  EXPECT_EQ(CanonicalPolicyText(ParsePolicy(kMinimal, "m.yaml").policy).find("node_template"), std::string::npos);
}

// The floor held on average: parsed, and part of the policy's identity (a
// policy without the field keeps the hash it had before the field existed).
TEST(PolicyLoader, ReadsTheSpotShareWindowOfAClass) {
  const std::string base = "apiVersion: gpuscaler/v1\nkind: Policy\npools: [{name: gpu}]\nclasses:\n"
                           "  - name: a\n    max_spot_share: 0.7\n";
  const PolicyLoadResult with = ParsePolicy(base + "    spot_share_window: 6h\n", "w.yaml");
  const PolicyLoadResult without = ParsePolicy(base, "o.yaml");
  ASSERT_TRUE(with.ok() && without.ok());
  EXPECT_EQ(with.policy.classes[0].spot_share_window, Seconds(6 * 3600));
  EXPECT_EQ(without.policy.classes[0].spot_share_window, Seconds(0));
  EXPECT_NE(with.policy.content_hash, without.policy.content_hash);
  EXPECT_EQ(CanonicalPolicyText(without.policy).find("spot_share_window"), std::string::npos);
}

struct InvalidCase {
  std::string name;
  std::string text;  // appended to kMinimal when `append`, else the whole file
  bool append;
  std::string field;
  int line;
  std::string message;  // substring
};

TEST(PolicyLoader, RejectsInvalidPoliciesWithFieldLineAndMessage) {
  const std::vector<InvalidCase> cases = {
      {"unknown top-level field", "scalng: {}\n", true, "scalng", 7,
       "unknown field 'scalng' (did you mean 'scaling'?)"},
      {"typo in a class field",
       "apiVersion: gpuscaler/v1\nkind: Policy\npools: [{name: gpu}]\nclasses:\n"
       "  - name: a\n    max_spot_shar: 0.5\n",
       false, "classes[0].max_spot_shar", 6,
       "unknown field 'max_spot_shar' (did you mean 'max_spot_share'?)"},
      {"pool share of 0", "spot: {max_pool_share: 0}\n", true, "spot.max_pool_share", 7,
       "must be in (0, 1], got 0"},
      {"pool share above 1", "spot: {max_pool_share: 1.5}\n", true, "spot.max_pool_share", 7,
       "must be in (0, 1], got 1.5"},
      {"string for a number", "spot: {max_interruptions_per_hour: lots}\n", true,
       "spot.max_interruptions_per_hour", 7, "expected a number, got a string"},
      {"quoted number is a string", "spot: {max_interruptions_per_hour: \"0.5\"}\n", true,
       "spot.max_interruptions_per_hour", 7, "expected a number, got a string"},
      {"fraction for an integer", "scaling: {max_nodes_added_per_tick: 2.5}\n", true,
       "scaling.max_nodes_added_per_tick", 7, "expected an integer, got a number (2.5)"},
      {"number for a boolean", "spot: {fallback_to_on_demand: 1}\n", true,
       "spot.fallback_to_on_demand", 7, "expected a boolean"},
      {"list for a string", "name: [a]\n", true, "name", 7, "expected a string, got a list"},
      {"bad duration", "spot: {fallback_duration: 5 minutes}\n", true, "spot.fallback_duration",
       7, "invalid duration '5 minutes'"},
      {"unknown on_rebalance", "spot: {on_rebalance: replce}\n", true, "spot.on_rebalance", 7,
       "unknown on_rebalance 'replce'"},
      {"reclaim cooldown max below the first", "spot: {reclaim_cooldown: 1h, reclaim_cooldown_max: 30m}\n", true,
       "spot.reclaim_cooldown_max", 7, "must be at least reclaim_cooldown (1h), got 30m"},
      {"negative reclaim cooldown", "spot: {reclaim_cooldown: -5m}\n", true, "spot.reclaim_cooldown", 7, "invalid duration '-5m'"},
      {"zero registration timeout",
       "apiVersion: gpuscaler/v1\nkind: Policy\nclasses: [{name: a}]\npools:\n"
       "  - name: gpu\n    registration_timeout: 0s\n",
       false, "pools[0].registration_timeout", 6, "must be"},
      {"negative repair_after",
       "apiVersion: gpuscaler/v1\nkind: Policy\nclasses: [{name: a}]\npools:\n"
       "  - name: gpu\n    repair_after: -5m\n",
       false, "pools[0].repair_after", 6, ""},
      {"spot share above 1",
       "apiVersion: gpuscaler/v1\nkind: Policy\npools: [{name: gpu}]\nclasses:\n"
       "  - name: a\n    max_spot_share: 1.5\n",
       false, "classes[0].max_spot_share", 6, "must be in [0, 1], got 1.5"},
      {"negative spot share window",
       "apiVersion: gpuscaler/v1\nkind: Policy\npools: [{name: gpu}]\nclasses:\n"
       "  - name: a\n    max_spot_share: 0.7\n    spot_share_window: -1h\n",
       false, "classes[0].spot_share_window", 7, "invalid duration '-1h'"},
      {"spot share window without a floor",
       "apiVersion: gpuscaler/v1\nkind: Policy\npools: [{name: gpu}]\nclasses:\n"
       "  - name: a\n    spot_share_window: 6h\n",
       false, "classes[0].spot_share_window", 6, "is used only with a max_spot_share between 0 and 1"},
      {"negative lost-work share",
       "apiVersion: gpuscaler/v1\nkind: Policy\npools: [{name: gpu}]\nclasses:\n"
       "  - name: a\n    max_lost_work_share: -0.01\n",
       false, "classes[0].max_lost_work_share", 6, "must be in [0, 1], got -0.01"},
      {"negative budget", "budget: {global: {hourly_usd: -5}}\n", true, "budget.global.hourly_usd",
       7, "must be >= 0"},
      {"min above max",
       "apiVersion: gpuscaler/v1\nkind: Policy\nclasses: [{name: a}]\npools:\n"
       "  - name: gpu\n    min_nodes: 5\n    max_nodes: 2\n",
       false, "pools[0].max_nodes", 7, "max_nodes (2) must be >= min_nodes (5)"},
      {"unknown capacity type",
       "apiVersion: gpuscaler/v1\nkind: Policy\nclasses: [{name: a}]\npools:\n"
       "  - name: gpu\n    capacity_types: [on-demand, spto]\n",
       false, "pools[0].capacity_types[1]", 6, "unknown capacity type 'spto'"},
      {"class names an unknown pool",
       "apiVersion: gpuscaler/v1\nkind: Policy\npools: [{name: gpu-spot}]\nclasses:\n"
       "  - name: a\n    pools: [gpu-spto]\n",
       false, "classes[0].pools[0]", 6, "unknown pool 'gpu-spto' (did you mean 'gpu-spot'?)"},
      {"non-interruptible class with only spot pools",
       "apiVersion: gpuscaler/v1\nkind: Policy\npools: [{name: s, capacity_types: [spot]}]\n"
       "classes:\n  - name: online\n    interruptible: false\n",
       false, "classes[0].name", 5, "no pool can serve class 'online'"},
      {"class needs a GPU model no pool allows",
       "apiVersion: gpuscaler/v1\nkind: Policy\npools: [{name: l4, gpu_models: [l4]}]\n"
       "classes:\n  - name: big\n    shape: {gpu_models: [h100-80gb]}\n",
       false, "classes[0].name", 5, "allows GPU models 'l4'"},
      {"duplicate pool name",
       "apiVersion: gpuscaler/v1\nkind: Policy\nclasses: [{name: a}]\npools:\n"
       "  - name: gpu\n  - name: gpu\n",
       false, "pools[1].name", 6, "duplicate pool name 'gpu'"},
      {"duplicate class name",
       "apiVersion: gpuscaler/v1\nkind: Policy\npools: [{name: gpu}]\nclasses:\n"
       "  - name: a\n  - name: a\n",
       false, "classes[1].name", 6, "duplicate class name 'a'"},
      {"duplicate key", "name: one\nname: two\n", true, "name", 8,
       "duplicate key 'name' (first at line 7)"},
      {"asg without a group",
       "apiVersion: gpuscaler/v1\nkind: Policy\nclasses: [{name: a}]\npools:\n"
       "  - name: gpu\n    actuation: asg\n",
       false, "pools[0].actuation", 6, "actuation 'asg' needs auto_scaling_group"},
      {"wrong apiVersion", "apiVersion: gpuscaler/v2\nkind: Policy\npools: [{name: g}]\n"
       "classes: [{name: a}]\n", false, "apiVersion", 1, "must be gpuscaler/v1"},
      {"wrong kind", "apiVersion: gpuscaler/v1\nkind: Catalog\npools: [{name: g}]\n"
       "classes: [{name: a}]\n", false, "kind", 2, "must be Policy"},
      {"missing kind", "apiVersion: gpuscaler/v1\npools: [{name: g}]\nclasses: [{name: a}]\n",
       false, "kind", 1, "required field is missing"},
      {"missing pool name",
       "apiVersion: gpuscaler/v1\nkind: Policy\nclasses: [{name: a}]\npools:\n"
       "  - max_nodes: 3\n",
       false, "pools[0].name", 5, "required field is missing"},
      {"budget for an unknown pool", "budget: {pools: {gpuu: {hourly_usd: 1}}}\n", true,
       "budget.pools.gpuu", 7, "unknown pool 'gpuu' (did you mean 'gpu'?)"},
      {"budget for a team no class names",
       "apiVersion: gpuscaler/v1\nkind: Policy\npools: [{name: gpu}]\nclasses: [{name: a, team: ml}]\n"
       "budget: {teams: {mll: {hourly_usd: 1}}}\n",
       false, "budget.teams.mll", 5, "no class names team 'mll' (classes[].team) (did you mean 'ml'?)"},
      {"empty team",
       "apiVersion: gpuscaler/v1\nkind: Policy\npools: [{name: gpu}]\nclasses:\n  - name: a\n    team: \"\"\n",
       false, "classes[0].team", 6, "must not be empty"},
      {"unknown signal source", "signals: {max_staleness: {promethues: 1m}}\n", true,
       "signals.max_staleness.promethues", 7, "(did you mean 'prometheus'?)"},
      {"zero staleness", "signals: {max_staleness: {dcgm: 0s}}\n", true,
       "signals.max_staleness.dcgm", 7, "must be longer than 0s"},
      {"prometheus signal without a query",
       "apiVersion: gpuscaler/v1\nkind: Policy\npools: [{name: gpu}]\nclasses:\n"
       "  - name: a\n    signals:\n      queue_depth: {source: prometheus}\n",
       false, "classes[0].signals.queue_depth.query", 7, "required for source prometheus"},
      {"a source the signal cannot come from",
       "apiVersion: gpuscaler/v1\nkind: Policy\npools: [{name: gpu}]\nclasses:\n"
       "  - name: a\n    signals:\n      gpu_utilization: {source: rabbitmq, queue: q}\n",
       false, "classes[0].signals.gpu_utilization.source", 7, "unknown source 'rabbitmq' (use prometheus, dcgm)"},
      {"an unknown signal source",
       "apiVersion: gpuscaler/v1\nkind: Policy\npools: [{name: gpu}]\nclasses:\n"
       "  - name: a\n    signals:\n      queue_depth: {source: rabbitqm, queue: q}\n",
       false, "classes[0].signals.queue_depth.source", 7, "(did you mean 'rabbitmq'?)"},
      {"bad taint effect",
       "apiVersion: gpuscaler/v1\nkind: Policy\nclasses: [{name: a}]\npools:\n"
       "  - name: gpu\n    taints: [{key: k, effect: NoSchedul}]\n",
       false, "pools[0].taints[0].effect", 6, "(did you mean 'NoSchedule'?)"},
      {"zone outside the pool's regions",
       "apiVersion: gpuscaler/v1\nkind: Policy\nclasses: [{name: a}]\npools:\n"
       "  - name: gpu\n    regions: [us-east-1]\n    zones: [eu-west-1a]\n",
       false, "pools[0].zones[0]", 7, "in none of the pool's regions"},
      {"queues are not a match condition (a class's queue is its signals.queue_depth)",
       "apiVersion: gpuscaler/v1\nkind: Policy\npools: [{name: gpu}]\nclasses:\n"
       "  - name: a\n    match: {queues: [q1]}\n",
       false, "classes[0].match.queues", 6, "unknown field 'queues'"},
      {"pool labels reach nodes only through a node_template",
       "apiVersion: gpuscaler/v1\nkind: Policy\nclasses: [{name: a}]\npools:\n"
       "  - name: gpu\n    labels: {tier: serving}\n",
       false, "pools[0].labels", 6, "labels reach nodes only through a node_template"},
      {"label keys under gpuscaler.io/ are gpuscaler's", std::string(kTemplatePool) + "    labels: {gpuscaler.io/team: ml}\n",
       false, "pools[0].labels.gpuscaler.io/team", 9, "set by gpuscaler itself"},
      {"the kubelet may not set kubernetes.io labels",
       std::string(kTemplatePool) + "    labels: {kubernetes.io/role: gpu}\n", false,
       "pools[0].labels.kubernetes.io/role", 9, "the kubelet may not set labels under kubernetes.io/"},
      {"label value with a space", std::string(kTemplatePool) + "    labels: {team: \"m l\"}\n", false,
       "pools[0].labels.team", 9, "is not a Kubernetes label or taint value"},
      {"taint key with a comma",
       "apiVersion: gpuscaler/v1\nkind: Policy\nclasses: [{name: a}]\npools:\n"
       "  - name: gpu\n    taints: [{key: \"a,b\", effect: NoSchedule}]\n",
       false, "pools[0].taints[0].key", 6, "is not a Kubernetes key"},
      {"node_template needs an instance profile",
       "apiVersion: gpuscaler/v1\nkind: Policy\nclasses: [{name: a}]\npools:\n"
       "  - name: gpu\n    node_template:\n      security_groups: [sg-1]\n",
       false, "pools[0].node_template.instance_profile", 7, "required field is missing"},
      {"ami id and ssm_parameter together",
       std::string(kTemplatePool) + "      ami: {id: ami-1, ssm_parameter: /a/b}\n", false,
       "pools[0].node_template.ami.ssm_parameter", 9, "either id or ssm_parameter, not both"},
      {"ami id that is not one", std::string(kTemplatePool) + "      ami: {id: img-1}\n", false,
       "pools[0].node_template.ami.id", 9, "is not an AMI id"},
      {"unknown ami family", std::string(kTemplatePool) + "      ami_family: botlerocket\n", false,
       "pools[0].node_template.ami_family", 9, "(did you mean 'bottlerocket'?)"},
      {"security group that is not an id",
       "apiVersion: gpuscaler/v1\nkind: Policy\nclasses: [{name: a}]\npools:\n"
       "  - name: gpu\n    node_template:\n      instance_profile: p\n      security_groups: [default]\n",
       false, "pools[0].node_template.security_groups[0]", 8, "is not a security group id"},
      {"an empty security group list", WithSecurityGroups("[]"), false, "pools[0].node_template.security_groups", 8,
       "must list at least one sg-… id"},
      {"an empty security group selector", WithSecurityGroups("[{tags: {}}]"), false,
       "pools[0].node_template.security_groups[0].tags", 8, "must name at least one tag"},
      {"a security group selector without tags", WithSecurityGroups("[{}]"), false,
       "pools[0].node_template.security_groups[0].tags", 8, "required field is missing"},
      {"subnet that is not an id", std::string(kTemplatePool) + "      subnets: [vpc-1]\n", false,
       "pools[0].node_template.subnets[0]", 9, "is not a subnet id"},
      {"an empty subnet list", std::string(kTemplatePool) + "      subnets: []\n", false,
       "pools[0].node_template.subnets", 9, "must list at least one subnet"},
      {"an empty subnet selector", std::string(kTemplatePool) + "      subnets: [{tags: {}}]\n", false,
       "pools[0].node_template.subnets[0].tags", 9, "must name at least one tag"},
      {"iops on a gp2 volume",
       std::string(kTemplatePool) +
           "      block_devices: [{device_name: /dev/xvda, volume_size_gib: 100, volume_type: gp2, iops: 3000}]\n",
       false, "pools[0].node_template.block_devices[0].iops", 9, "only for gp3, io1 and io2"},
      {"throughput on an io2 volume",
       std::string(kTemplatePool) +
           "      block_devices: [{device_name: /dev/xvda, volume_size_gib: 100, volume_type: io2, throughput: 500}]\n",
       false, "pools[0].node_template.block_devices[0].throughput", 9, "only for gp3"},
      {"node_template on an asg pool",
       std::string(kTemplatePool) + "    actuation: asg\n    auto_scaling_group: g\n", false,
       "pools[0].node_template", 7, "fleet pools only"},
      {"mig_config that is no label value", std::string(kTemplatePool) + "      mig_config: \"all 1g\"\n", false,
       "pools[0].node_template.mig_config", 9, "is not a Kubernetes label or taint value"},
      {"a placement group name with capitals",
       "apiVersion: gpuscaler/v1\nkind: Policy\nclasses: [{name: a}]\npools:\n"
       "  - name: gpu\n    placement_group: Train_Gangs\n",
       false, "pools[0].placement_group", 6, "'Train_Gangs' is not a placement group name"},
      {"a warm pool in an unknown state",
       "apiVersion: gpuscaler/v1\nkind: Policy\nclasses: [{name: a}]\npools:\n"
       "  - name: gpu\n    warm: {state: frozen}\n",
       false, "pools[0].warm.state", 6, "unknown state 'frozen' (use stopped or hibernated)"},
      {"a negative warm pool size",
       "apiVersion: gpuscaler/v1\nkind: Policy\nclasses: [{name: a}]\npools:\n"
       "  - name: gpu\n    warm: {size: -1}\n",
       false, "pools[0].warm.size", 6, "must be >= 0 or auto"},
      {"a warm pool that buys no on-demand",
       "apiVersion: gpuscaler/v1\nkind: Policy\nclasses: [{name: a}]\npools:\n"
       "  - name: gpu\n    capacity_types: [spot]\n    warm: {size: 2}\n",
       false, "pools[0].warm", 7, "needs on-demand in capacity_types"},
      {"spot warm capacity in a pool that buys only spot",
       "apiVersion: gpuscaler/v1\nkind: Policy\nclasses: [{name: a}]\npools:\n"
       "  - name: gpu\n    capacity_types: [spot]\n    warm: {size: 2, capacity_type: spot}\n",
       false, "pools[0].warm", 7, "needs on-demand in capacity_types (the warm type is chosen among"},
      {"spot warm capacity in a pool that buys no spot",
       "apiVersion: gpuscaler/v1\nkind: Policy\nclasses: [{name: a}]\npools:\n"
       "  - name: gpu\n    capacity_types: [on-demand]\n    warm: {size: 2, capacity_type: spot}\n",
       false, "pools[0].warm", 7, "capacity_type spot needs spot in capacity_types"},
      {"spot warm capacity in an Auto Scaling group",
       "apiVersion: gpuscaler/v1\nkind: Policy\nclasses: [{name: a}]\npools:\n"
       "  - name: gpu\n    actuation: asg\n    auto_scaling_group: g\n    warm: {capacity_type: auto}\n",
       false, "pools[0].warm.capacity_type", 8, "an Auto Scaling group's warm pool holds no spot instances"},
      {"an unknown warm capacity type",
       "apiVersion: gpuscaler/v1\nkind: Policy\nclasses: [{name: a}]\npools:\n"
       "  - name: gpu\n    warm: {capacity_type: reserved}\n",
       false, "pools[0].warm.capacity_type", 6, "unknown capacity type 'reserved' (use on-demand, spot or auto)"},
      {"a warm pool with a placement group",
       "apiVersion: gpuscaler/v1\nkind: Policy\nclasses: [{name: a}]\npools:\n"
       "  - name: gpu\n    placement_group: gangs\n    warm: {size: 2}\n",
       false, "pools[0].warm", 7, "is not used with placement_group"},
      {"an unknown warm pool field",
       "apiVersion: gpuscaler/v1\nkind: Policy\nclasses: [{name: a}]\npools:\n"
       "  - name: gpu\n    warm: {size: 2, count: 3}\n",
       false, "pools[0].warm.count", 6, "unknown field"},
      {"an empty placement group name",
       "apiVersion: gpuscaler/v1\nkind: Policy\nclasses: [{name: a}]\npools:\n"
       "  - name: gpu\n    placement_group: \"\"\n",
       false, "pools[0].placement_group", 6, "is not a placement group name"},
      {"a placement group that is not a string",
       "apiVersion: gpuscaler/v1\nkind: Policy\nclasses: [{name: a}]\npools:\n"
       "  - name: gpu\n    placement_group: [a]\n",
       false, "pools[0].placement_group", 6, "expected a string"},
      {"a placement group on an asg pool",
       "apiVersion: gpuscaler/v1\nkind: Policy\nclasses: [{name: a}]\npools:\n"
       "  - name: gpu\n    actuation: asg\n    auto_scaling_group: g\n    placement_group: gangs\n",
       false, "pools[0].placement_group", 8, "is used only with actuation 'fleet'"},
      {"an empty reservation list",
       "apiVersion: gpuscaler/v1\nkind: Policy\nclasses: [{name: a}]\npools:\n"
       "  - name: gpu\n    reservations: []\n",
       false, "pools[0].reservations", 6, "must list at least one"},
      {"an empty reservation tag selector",
       "apiVersion: gpuscaler/v1\nkind: Policy\nclasses: [{name: a}]\npools:\n"
       "  - name: gpu\n    reservations: [{tags: {}}]\n",
       false, "pools[0].reservations[0].tags", 6, "must name at least one tag"},
      {"an empty reservation id",
       "apiVersion: gpuscaler/v1\nkind: Policy\nclasses: [{name: a}]\npools:\n"
       "  - name: gpu\n    reservations: [\"\"]\n",
       false, "pools[0].reservations[0]", 6, "must not be empty"},
      {"reservations on an Auto Scaling group pool",
       "apiVersion: gpuscaler/v1\nkind: Policy\nclasses: [{name: a}]\npools:\n"
       "  - name: gpu\n    actuation: asg\n    auto_scaling_group: g\n    reservations: [cr-0a]\n",
       false, "pools[0].reservations", 8, "is used only with actuation 'fleet'"},
      {"min_zones below 1",
       "apiVersion: gpuscaler/v1\nkind: Policy\npools: [{name: gpu}]\nclasses:\n"
       "  - name: a\n    zone_spread: {min_zones: 0}\n",
       false, "classes[0].zone_spread.min_zones", 6, "must be >= 1"},
      {"no pools", "apiVersion: gpuscaler/v1\nkind: Policy\npools: []\nclasses: [{name: a}]\n",
       false, "pools", 3, "at least one pool"},
      {"syntax error", "apiVersion: gpuscaler/v1\nkind: Policy\npools: [{name: gpu}\n", false, "",
       4, "syntax error"},
      {"forecast quantile of 1", "apiVersion: gpuscaler/v1\nkind: Policy\npools: [{name: gpu}]\nclasses:\n  - name: a\n    forecast: {quantile: 1}\n", false,
       "classes[0].forecast.quantile", 6, "must be in (0, 1), got 1"},
      {"forecast horizon not a duration", "apiVersion: gpuscaler/v1\nkind: Policy\npools: [{name: gpu}]\nclasses:\n  - name: a\n    forecast: {horizon: soon}\n", false,
       "classes[0].forecast.horizon", 6, "invalid duration 'soon'"},
      {"forecast horizon of two days", "apiVersion: gpuscaler/v1\nkind: Policy\npools: [{name: gpu}]\nclasses:\n  - name: a\n    forecast: {horizon: 2d}\n", false,
       "classes[0].forecast.horizon", 6, "must be auto or a duration between 1s and 1d, got 2d"},
      {"negative idle cap", "apiVersion: gpuscaler/v1\nkind: Policy\npools: [{name: gpu}]\nclasses:\n  - name: a\n    forecast: {max_idle_usd_per_hour: -1}\n", false,
       "classes[0].forecast.max_idle_usd_per_hour", 6, "must be >= 0, got -1"},
      {"typo in forecast", "apiVersion: gpuscaler/v1\nkind: Policy\npools: [{name: gpu}]\nclasses:\n  - name: a\n    forecast: {quantil: 0.5}\n", false,
       "classes[0].forecast.quantil", 6, "unknown field 'quantil' (did you mean 'quantile'?)"},
      {"negative wait cost", "apiVersion: gpuscaler/v1\nkind: Policy\npools: [{name: gpu}]\nclasses:\n  - name: a\n    wait_cost_usd_per_hour: -2\n", false,
       "classes[0].wait_cost_usd_per_hour", 6, "must be >= 0, got -2"},
      {"deadline not a duration", "apiVersion: gpuscaler/v1\nkind: Policy\npools: [{name: gpu}]\nclasses:\n  - name: a\n    deadline: tomorrow\n", false,
       "classes[0].deadline", 6, "expected a duration longer than 0s such as \"24h\" or a multiple of the runtime such as \"1.5x\", got 'tomorrow'"},
      {"deadline multiple below 1", "apiVersion: gpuscaler/v1\nkind: Policy\npools: [{name: gpu}]\nclasses:\n  - name: a\n    deadline: 0.5x\n", false,
       "classes[0].deadline", 6, "expected a multiple of the runtime of at least 1 such as \"1.5x\", got '0.5x'"},
      {"deadline of zero", "apiVersion: gpuscaler/v1\nkind: Policy\npools: [{name: gpu}]\nclasses:\n  - name: a\n    deadline: 0s\n", false,
       "classes[0].deadline", 6, "got '0s' (omit it for work that runs at once)"},
      {"not a mapping", "- a\n- b\n", false, "", 1, "expected a mapping, got a list"},
      {"empty file", "", false, "", 1, "empty"},
  };
  for (const InvalidCase& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string text = c.append ? std::string(kMinimal) + c.text : c.text;
    const PolicyLoadResult r = ParsePolicy(text, "bad.yaml");
    ASSERT_EQ(r.problems.size(), 1u) << Join(r.problems);
    const ConfigProblem& p = r.problems[0];
    EXPECT_EQ(p.file, "bad.yaml");
    EXPECT_EQ(p.field, c.field);
    EXPECT_EQ(p.line, c.line) << p.ToString();
    EXPECT_GT(p.column, 0);
    EXPECT_NE(p.message.find(c.message), std::string::npos) << p.ToString();
    EXPECT_FALSE(r.status().ok());
    EXPECT_EQ(r.status().error().category(), ErrorCategory::kConfig);
  }
}

TEST(PolicyLoader, ReportsEveryProblemAtOnceInFileOrder) {
  const char* text = R"(apiVersion: gpuscaler/v1
kind: Policy
pools:
  - name: gpu
    max_nodes: ten
classes:
  - name: train
    max_spot_shar: 0.5
    max_spot_share: 1.5
)";
  const PolicyLoadResult r = ParsePolicy(text, "three.yaml");
  ASSERT_EQ(r.problems.size(), 3u) << Join(r.problems);
  EXPECT_EQ(r.problems[0].ToString(),
            "three.yaml:5:16: pools[0].max_nodes: expected an integer, got a string");
  EXPECT_EQ(r.problems[1].ToString(),
            "three.yaml:8:5: classes[0].max_spot_shar: unknown field 'max_spot_shar' (did you "
            "mean 'max_spot_share'?)");
  EXPECT_EQ(r.problems[2].ToString(),
            "three.yaml:9:21: classes[0].max_spot_share: must be in [0, 1], got 1.5");
}

TEST(PolicyLoader, JsonProblemsPointAtTheJsonLine) {
  const char* json = "{\"apiVersion\": \"gpuscaler/v1\", \"kind\": \"Policy\",\n"
                     " \"pools\": [{\"name\": \"gpu\", \"max_nodes\": \"5\"}],\n"
                     " \"classes\": [{\"name\": \"a\"}]}\n";
  const PolicyLoadResult r = ParsePolicy(json, "p.json");
  ASSERT_EQ(r.problems.size(), 1u) << Join(r.problems);
  EXPECT_EQ(r.problems[0].ToString(),
            "p.json:2:41: pools[0].max_nodes: expected an integer, got a string");
}

Catalog SmallCatalog() {
  Catalog c;
  c.provider = "aws";
  GpuModel a10g{"NVIDIA-A10G", "a10g", 22888, {}};
  GpuModel l4{"NVIDIA-L4", "l4", 22888, {}};
  GpuModel a100{"NVIDIA-A100-SXM4-80GB", "a100-80gb", 81920,
                {{"1g.10gb", 1, 1, 9728, {0, 1, 2, 3, 4, 5, 6}}}};
  c.gpu_models = {a10g, l4, a100};
  c.instance_types = {
      {"g5.xlarge", "g5", "NVIDIA-A10G", 1, 22888, 4, 16384, 250, 2500},
      {"g5.12xlarge", "g5", "NVIDIA-A10G", 4, 22888, 48, 196608, 3800, 40000},
      {"g6.xlarge", "g6", "NVIDIA-L4", 1, 22888, 4, 16384, 250, 2500},
      {"p4de.24xlarge", "p4de", "NVIDIA-A100-SXM4-80GB", 8, 81920, 96, 1179648, 8000, 400000},
  };
  RegionPrices r;
  r.region = "us-east-1";
  r.zones = {"us-east-1a", "us-east-1b"};
  r.on_demand_usd_per_hour = {{"g5.xlarge", 1.006}, {"g5.12xlarge", 5.672},
                              {"g6.xlarge", 0.8048}, {"p4de.24xlarge", 27.447}};
  c.regions = {r};
  return c;
}

TEST(PolicyLoader, WithACatalogRejectsNamesTheCatalogLacks) {
  const Catalog catalog = SmallCatalog();
  const std::string head = "apiVersion: gpuscaler/v1\nkind: Policy\nclasses: [{name: a}]\n";
  const std::vector<InvalidCase> cases = {
      {"unknown instance type", head + "pools: [{name: p, instance_types: [g5.xlarg]}]\n", false,
       "pools[0].instance_types[0]", 4, "unknown instance type 'g5.xlarg' (not in the catalog) "
       "(did you mean 'g5.xlarge'?)"},
      {"unknown family", head + "pools: [{name: p, families: [g7]}]\n", false,
       "pools[0].families[0]", 4, "unknown instance family 'g7'"},
      {"unknown GPU model", head + "pools: [{name: p, gpu_models: [h100]}]\n", false,
       "pools[0].gpu_models[0]", 4, "unknown GPU model 'h100'"},
      {"unknown region", head + "pools: [{name: p, regions: [us-west-2]}]\n", false,
       "pools[0].regions[0]", 4, "unknown region 'us-west-2'"},
      {"unknown zone", head + "pools: [{name: p, zones: [us-east-1z]}]\n", false,
       "pools[0].zones[0]", 4, "unknown zone 'us-east-1z'"},
      {"class GPU model unknown",
       "apiVersion: gpuscaler/v1\nkind: Policy\npools: [{name: p}]\n"
       "classes: [{name: a, shape: {gpu_models: [a10]}}]\n",
       false, "classes[0].shape.gpu_models[0]", 4, "unknown GPU model 'a10'"},
      {"unknown MIG profile",
       "apiVersion: gpuscaler/v1\nkind: Policy\npools: [{name: p}]\n"
       "classes: [{name: a, shape: {mig_profile: 2g.99gb}}]\n",
       false, "classes[0].shape.mig_profile", 4, "MIG profile '2g.99gb'"},
      {"class shape fits no instance of its pool",
       "apiVersion: gpuscaler/v1\nkind: Policy\npools: [{name: p, families: [g5, g6]}]\n"
       "classes: [{name: a, shape: {gpus: 8}}]\n",
       false, "classes[0].name", 4, "no instance type of pool 'p' fits"},
      {"pool that matches no priced type",
       "apiVersion: gpuscaler/v1\nkind: Policy\nclasses: [{name: a, pools: [q]}]\n"
       "pools: [{name: p}, {name: q, families: [g5], gpu_models: [l4]}]\n",
       false, "pools[1].name", 4, "no priced GPU instance type in the catalog matches pool 'q'"},
  };
  for (const InvalidCase& c : cases) {
    SCOPED_TRACE(c.name);
    const PolicyLoadResult r = ParsePolicy(c.text, "cat.yaml", &catalog);
    ASSERT_GE(r.problems.size(), 1u);
    const ConfigProblem& p = r.problems[0];
    EXPECT_EQ(p.field, c.field) << Join(r.problems);
    EXPECT_EQ(p.line, c.line) << p.ToString();
    EXPECT_NE(p.message.find(c.message), std::string::npos) << p.ToString();
    // One mistake, one problem: no follow-on noise.
    EXPECT_EQ(r.problems.size(), 1u) << Join(r.problems);
  }
}

TEST(PolicyLoader, WithACatalogShortAndFullGpuNamesAgree) {
  const Catalog catalog = SmallCatalog();
  const char* text = "apiVersion: gpuscaler/v1\nkind: Policy\n"
                     "pools: [{name: p, gpu_models: [NVIDIA-A100-SXM4-80GB]}]\n"
                     "classes: [{name: a, shape: {gpus: 8, gpu_models: [a100-80gb]}},\n"
                     "          {name: m, shape: {mig_profile: 1g.10gb}}]\n";
  const PolicyLoadResult r = ParsePolicy(text, "p.yaml", &catalog);
  EXPECT_TRUE(r.ok()) << Join(r.problems);
}

TEST(PolicyLoader, WithACatalogAMigClassNeedsItsMemoryInTheMigInstance) {
  // The planner leaves such units unplaced (tests/solver): one rule, in
  // model/compatibility.h, for both. The 1g.10gb instance has 9728 MiB.
  const Catalog catalog = SmallCatalog();
  const std::string file = ::testing::TempDir() + "/mig_memory.yaml";
  const auto policy = [](const std::string& min_gpu_memory_mib) {
    return "apiVersion: gpuscaler/v1\nkind: Policy\npools: [{name: p}]\nclasses:\n"
           "  - name: mig\n"
           "    shape: {mig_profile: 1g.10gb, min_gpu_memory_mib: " + min_gpu_memory_mib + "}\n";
  };
  std::ofstream(file) << policy("20000");
  const PolicyLoadResult rejected = LoadPolicyFile(file, &catalog);
  ASSERT_EQ(rejected.problems.size(), 1u) << Join(rejected.problems);
  EXPECT_EQ(rejected.problems[0].ToString(),
            file + ":5:11: classes[0].name: no pool can serve class 'mig': no instance type of "
                   "pool 'p' fits the class's shape (GPU model, GPU count or memory, MIG "
                   "profile, CPU, memory)");
  std::ofstream(file) << policy("9728");
  const PolicyLoadResult accepted = LoadPolicyFile(file, &catalog);
  EXPECT_TRUE(accepted.ok()) << Join(accepted.problems);
}

TEST(PolicyLoader, WithServedRegionsRejectsPoolsOutsideThem) {
  struct Case {
    std::string name;
    std::string pool;       // the pool's lines after "  - name: gpu\n"
    std::string field;      // "" when valid
    std::string message;    // substring
  };
  const std::vector<Case> cases = {
      {"a region outside", "    regions: [us-east-1, eu-west-1]\n", "pools[0].regions",
       "region 'eu-west-1' outside the regions this installation serves ('us-east-1', 'us-west-2')"},
      {"zones without regions, outside", "    zones: [us-east-1a, eu-west-1b]\n", "pools[0].zones",
       "zone 'eu-west-1b' outside the regions"},
      {"served region and its zones", "    regions: [us-west-2]\n    zones: [us-west-2a]\n", "", ""},
      {"zones without regions, served", "    zones: [us-east-1a, us-west-2b]\n", "", ""},
      {"no regions or zones: any", "", "", ""},
  };
  PolicyLoadOptions options;
  options.regions = {"us-east-1", "us-west-2"};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string text = "apiVersion: gpuscaler/v1\nkind: Policy\nclasses: [{name: a}]\npools:\n"
                             "  - name: gpu\n" + c.pool;
    const PolicyLoadResult r = ParsePolicy(text, "p.yaml", options);
    if (c.field.empty()) {
      EXPECT_TRUE(r.ok()) << Join(r.problems);
      continue;
    }
    ASSERT_EQ(r.problems.size(), 1u) << Join(r.problems);
    EXPECT_EQ(r.problems[0].field, c.field);
    EXPECT_EQ(r.problems[0].line, 6);
    EXPECT_EQ(r.problems[0].column, int(c.pool.find('[')) + 1) << r.problems[0].ToString();  // the list
    EXPECT_NE(r.problems[0].message.find(c.message), std::string::npos) << r.problems[0].ToString();
    // Without served regions the same pool loads.
    EXPECT_TRUE(ParsePolicy(text, "p.yaml").ok());
  }
}

TEST(PolicyLoader, UnreadableFileIsOneProblemWithTheOsReason) {
  const PolicyLoadResult r = LoadPolicyFile("/nonexistent/policy.yaml");
  ASSERT_EQ(r.problems.size(), 1u);
  EXPECT_EQ(r.problems[0].ToString(),
            "/nonexistent/policy.yaml: cannot read: No such file or directory");
}

std::vector<std::filesystem::path> ExamplePolicies() {
  std::vector<std::filesystem::path> files;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::filesystem::path(GPUSCALER_SOURCE_DIR) / "policies")) {
    files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

TEST(ExamplePolicies, EveryFileInPoliciesLoads) {
  const auto files = ExamplePolicies();
  ASSERT_GE(files.size(), 3u);
  bool saw_json = false;
  for (const auto& f : files) {
    SCOPED_TRACE(f.string());
    saw_json = saw_json || f.extension() == ".json";
    const PolicyLoadResult r = LoadPolicyFile(f.string());
    EXPECT_TRUE(r.ok()) << Join(r.problems);
    EXPECT_FALSE(r.policy.pools.empty());
    EXPECT_FALSE(r.policy.classes.empty());
  }
  EXPECT_TRUE(saw_json);
}

// The examples for GKE (`*-gke.*`) name Compute Engine machine series and
// regions; the others name AWS's.
std::string CatalogOfExample(const std::filesystem::path& policy) {
  const bool gke = policy.stem().string().ends_with("-gke");
  return std::string(GPUSCALER_SOURCE_DIR) + (gke ? "/config/catalogs/gcp.yaml" : "/config/catalogs/aws.yaml");
}

TEST(ExamplePolicies, EveryFileInPoliciesLoadsAgainstItsCloudsCatalog) {
  int gke = 0;
  for (const auto& f : ExamplePolicies()) {
    SCOPED_TRACE(f.string());
    const std::string catalog_path = CatalogOfExample(f);
    gke += catalog_path.ends_with("gcp.yaml") ? 1 : 0;
    const Result<Catalog> catalog = LoadCatalogFile(catalog_path);
    ASSERT_TRUE(catalog.ok()) << catalog.error().message();
    const PolicyLoadResult r = LoadPolicyFile(f.string(), &*catalog);
    EXPECT_TRUE(r.ok()) << Join(r.problems);
  }
  EXPECT_GE(gke, 1) << "no GKE example policy";
}

TEST(ExamplePolicies, InferenceKeepsAnOnDemandFloor) {
  const PolicyLoadResult r =
      LoadPolicyFile(std::string(GPUSCALER_SOURCE_DIR) + "/policies/inference.yaml");
  ASSERT_TRUE(r.ok()) << Join(r.problems);
  const NodePoolPolicy* floor = r.policy.FindPool("serve-on-demand");
  ASSERT_NE(floor, nullptr);
  EXPECT_GT(floor->min_nodes, 0);
  EXPECT_EQ(floor->capacity_types, std::vector<CapacityType>{CapacityType::kOnDemand});
  const WorkloadClassPolicy* online = r.policy.FindClass("online");
  ASSERT_NE(online, nullptr);
  EXPECT_LE(online->max_spot_share, 0.3);
}

TEST(ExamplePolicies, InferenceRaisesItsFloorInNewYorkBusinessHours) {
  const PolicyLoadResult r = LoadPolicyFile(std::string(GPUSCALER_SOURCE_DIR) + "/policies/inference.yaml");
  ASSERT_TRUE(r.ok()) << Join(r.problems);
  const NodePoolPolicy* floor = r.policy.FindPool("serve-on-demand");
  const NodePoolPolicy* burst = r.policy.FindPool("serve-spot");
  ASSERT_NE(floor, nullptr);
  ASSERT_NE(burst, nullptr);
  const auto limits_at = [&](const NodePoolPolicy& pool, const char* when) {
    WallTime t{};
    EXPECT_TRUE(ParseRfc3339(when, &t)) << when;
    return PoolLimitsAt(pool, SchedulesInForce(r.policy.scaling.schedules, t));
  };
  // Tuesday 2026-03-10 (EDT since the 8th): 08:00-18:00 New York is 12:00-22:00 UTC.
  EXPECT_EQ(limits_at(*floor, "2026-03-10T11:59:00Z").min_nodes, 3);
  EXPECT_EQ(limits_at(*floor, "2026-03-10T12:00:00Z").min_nodes, 6);
  EXPECT_EQ(limits_at(*floor, "2026-03-10T21:59:00Z").min_nodes, 6);
  EXPECT_EQ(limits_at(*floor, "2026-03-10T22:00:00Z").min_nodes, 3);
  // Friday 2026-03-06 (still EST): 13:00-23:00 UTC.
  EXPECT_EQ(limits_at(*floor, "2026-03-06T12:59:00Z").min_nodes, 3);
  EXPECT_EQ(limits_at(*floor, "2026-03-06T13:00:00Z").min_nodes, 6);
  // Saturday: the floor stays at 3.
  EXPECT_EQ(limits_at(*floor, "2026-03-07T15:00:00Z").min_nodes, 3);
  // Night in New York (00:00-05:59 EDT is 04:00-09:59 UTC): the burst pool adds nothing.
  EXPECT_EQ(limits_at(*burst, "2026-03-10T03:59:00Z").max_nodes, 40);
  EXPECT_EQ(limits_at(*burst, "2026-03-10T04:00:00Z").max_nodes, 0);
  EXPECT_EQ(limits_at(*burst, "2026-03-10T09:59:00Z").max_nodes, 0);
  EXPECT_EQ(limits_at(*burst, "2026-03-10T10:00:00Z").max_nodes, 40);
}

}  // namespace
}  // namespace gpuscaler
