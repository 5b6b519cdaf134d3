// The policy loader reading valid files: the struct defaults, every field,
// the node template, and which fields are part of the policy's hash (JSON
// and YAML alike, formatting aside).
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "gpuscaler/policy/loader.h"
#include "policy/loader_test_support.h"

namespace gpuscaler::loader_fields_test {
namespace {

using testing::Join;
using testing::WithSecurityGroups;
using testing::kMinimal;
using testing::kTemplatePool;

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

}  // namespace
}  // namespace gpuscaler::loader_fields_test
