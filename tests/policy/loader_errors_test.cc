// The policy loader rejecting invalid files: each problem with its field,
// line and message, every problem at once in file order, JSON lines, and an
// unreadable file.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gpuscaler/policy/loader.h"
#include "policy/loader_test_support.h"

namespace gpuscaler::loader_errors_test {
namespace {

using testing::InvalidCase;
using testing::Join;
using testing::WithSecurityGroups;
using testing::kMinimal;
using testing::kTemplatePool;

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

TEST(PolicyLoader, UnreadableFileIsOneProblemWithTheOsReason) {
  const PolicyLoadResult r = LoadPolicyFile("/nonexistent/policy.yaml");
  ASSERT_EQ(r.problems.size(), 1u);
  EXPECT_EQ(r.problems[0].ToString(),
            "/nonexistent/policy.yaml: cannot read: No such file or directory");
}

}  // namespace
}  // namespace gpuscaler::loader_errors_test
