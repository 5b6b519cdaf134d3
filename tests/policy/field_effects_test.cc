// Every policy field the planner reads, with the plan difference it makes:
// one row per field documented in docs/policy.md, each planning the same
// scene with the field at its base value and set, and checking what must
// change. Class fields that shape demand reach the planner through
// WorkloadClassPolicy::Unit() (the daemon's queue-derived units), so each
// scene builds its pending units from the policy it plans with. Fields whose
// effect lives outside the planner are listed at the end with their tests.
#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "gpuscaler/solver/planner.h"
#include "policy/field_effects_cases.h"

namespace gpuscaler {
namespace {

using field_effects_testing::FieldCase;
using testing::BasePolicy;
using testing::BaseSnapshot;

// The table, in the order of docs/policy.md (rows in field_effects_fleet_cases.cc
// and field_effects_work_cases.cc).
const std::vector<FieldCase>& Cases() {
  static const std::vector<FieldCase> cases = [] {
    std::vector<FieldCase> all;
    for (auto part : {field_effects_testing::PoolFieldCases, field_effects_testing::ClassFieldCases,
                      field_effects_testing::BudgetFieldCases, field_effects_testing::SpotFieldCases,
                      field_effects_testing::ForecastFieldCases, field_effects_testing::DeferrableFieldCases,
                      field_effects_testing::ScalingFieldCases, field_effects_testing::DisruptionFieldCases}) {
      for (FieldCase& c : part()) all.push_back(std::move(c));
    }
    return all;
  }();
  return cases;
}

TEST(PolicyFieldEffects, EveryPlannerFieldChangesThePlanAsDocumented) {
  for (const FieldCase& c : Cases()) {
    SCOPED_TRACE(c.field);
    Policy base_policy = BasePolicy();
    Snapshot base_snapshot = BaseSnapshot();
    c.scene(base_snapshot, base_policy);
    Policy set_policy = BasePolicy();
    c.set(set_policy);
    Snapshot set_snapshot = BaseSnapshot();
    c.scene(set_snapshot, set_policy);
    const Plan base = MakePlan(base_snapshot, base_policy);
    const Plan set = MakePlan(set_snapshot, set_policy);
    c.expect(base, set);
  }
}

// Fields whose effect is outside the planner, and the tests that show it:
//
//  pools[].taints                  kube: PodDemand.TheRecordedPendingGpuPodIsOneGpuOfItsLabelClass
//                                  (tests/kube/workload_test.cc: an intolerant pod gets no pool)
//  pools[].labels, pools[].node_template (and pools[].taints on the nodes)
//                                  cloud: NodeTemplateLaunch.* (tests/cloud/aws_provider_templates_test.cc),
//                                  DaemonNodeTemplate.CreatesThePoolsTemplateThatJoinsWithExactlyItsLabelsAndTaints
//                                  (tests/cloud/daemon_node_template_test.cc: the daemon, a reload, the aws CLI)
//  pools[].node_template.subnets   cloud: NodeTemplateLaunch.SubnetsByIdsAndTagsPutEachZonesLaunchesInItsSubnet,
//                                  NodeTemplateLaunch.SubnetErrorsNameThePoolAndZoneAndLaunchNothing; the daemon's
//                                  instances in their zone's tagged subnet, read with the aws CLI in
//                                  DaemonNodeTemplate.CreatesThePoolsTemplateThatJoinsWithExactlyItsLabelsAndTaints
//  pools[].actuation,
//  pools[].auto_scaling_group      DaemonAsg.ScalesTheGroupAndNeverTouchesAnotherInstallation
//                                  (tests/cloud/daemon_asg_test.cc, the daemon against the emulator,
//                                  read back with the aws CLI)
//  pools[].warm (size, refills, retirements, parks, costs)
//                                  solver: WarmPlan.* (tests/solver/warm_plan_test.cc); through the
//                                  controller on the simulated cloud: WarmReplay.* (tests/sim);
//  pools[].warm.state              the stopped or hibernated cost: SimCloudWarm.AHibernatedInstanceAlso*;
//                                  the cloud calls: the providers' warm tests (tests/cloud)
//  pools[].placement_group         controller: Controller.OnlyAGangsLaunchNamesThePoolsPlacementGroup;
//                                  AWS: AwsProviderTest.AGangLaunchGoesIntoThePoolsClusterPlacementGroupMadeOnce,
//                                  AwsProviderTest.AnExistingPlacementGroupIsUsedAndOneOfAnotherStrategyRefused
//                                  (tests/cloud/aws_provider_test.cc), AwsCli.AGangsInstancesAreInItsClusterPlacementGroup
//                                  (the aws CLI reads the group and the instances' Placement.GroupName);
//                                  GCP: GcpProviderTest.AGangsBulkInsertIsAllOrNothingUnderItsCompactPlacementPolicy,
//                                  GcpProviderTest.APlacementGroupThatIsNoCompactPolicyOrOnAGroupPoolIsAConfigError,
//                                  DaemonConfig.AGcpPlacementGroupNeedsABarePool
//  classes[].match.namespaces,
//  classes[].match.labels          kube: PodDemand.*, DemandFromCluster.* (tests/kube/workload_test.cc)
//  classes[].target.*              daemon: SignalWorkSource.TurnsQueueDepthIntoGpusForTheTargetWait
//  classes[].signals.*             daemon: SignalWorkSource.* (tests/daemon/signal_work_source_test.cc)
//  classes[].scale_in_utilization_below
//                                  daemon: SignalWorkSource.AnEmptyQueueEmptiesNodesButABusyNodeKeepsWork
//  pools[].registration_timeout    controller: NodeRepair.AnInstanceThatNeverRegistersIsTerminatedAndItsWorkPlannedElsewhere,
//                                  InFlightLaunch.AcceptedInstancesThatNeverComeAreGivenUpAtTheRegistrationTimeout
//  pools[].repair_after            controller: NodeRepair.ANodeNotReadyPastRepairAfterIsReplacedFirstThenRemoved,
//                                  NodeRepair.RepairIsOffByDefault
//  spot.on_rebalance               controller: Rebalance.* (tests/controller/interruption_test.cc)
//  spot.fallback_to_on_demand      controller: Controller.NoOnDemandFallbackWhenThePolicyForbidsIt
//  classes[].max_lost_work_share   controller: LostWorkBudget.* (tests/controller/class_accounts_test.cc);
//                                  the planner side is
//                                  Planner.AClassWithItsLostWorkBudgetSpentGetsNoNewSpotWork; a replay:
//                                  Replay.ALostWorkBudgetKeepsAClassOffAFlappingSpotPoolAfterItIsSpent
//  classes[].spot_share_window     controller: SpotFloorAccount.* (tests/controller/class_accounts_test.cc);
//                                  the planner side is
//                                  Planner.AClassesCreditOverItsSpotShareWindowMovesTheFloorByOneUnit;
//                                  a replay: Replay.AFloorHeldOnAverageSendsALoneReplicaToSpotAboutSevenTimesInTen
//  spot.fallback_duration          Controller.ASpotCapacityErrorKeepsTheClassOffSpotForTheFallbackDuration;
//                                  the planner side is Planner.KeepsSpotPausedClassesOnOnDemandWithTheReason
//  spot.reclaim_cooldown,
//  spot.reclaim_cooldown_max       Controller.AReclaimWaveKeepsTheDomainMarkedForThePolicysCooldown,
//                                  Controller.ConsecutiveReclaimWavesDoubleTheCooldownUpToThePolicysLongest; the
//                                  doubling up to the longest, flat and 0s:
//                                  OfferingAvailability.TheCooldownsFollowTheirFirstAndLongestDurations
//                                  (tests/controller/availability_test.cc); the planner side is
//                                  Planner.PlacesNoNewSpotWorkInAReclaimedPool
//  scaling.tick_interval           TickInterval.TheLoopRunsOncePerIntervalOfThePolicy (tests/sim)
//  scaling.scale_down_stabilization
//                                  controller: Controller.ScaleDownWaitsForTheStabilizationWindow
//  scaling.scale_up_stabilization,
//  scaling.scale_up_cooldown,
//  scaling.scale_down_cooldown     GovernorFields.* (tests/controller/governor_fields_test.cc)
//  scaling.max_nodes_*_per_tick    also the governor: ScalingGovernor.CapsNodesAddedAndRemovedPerTick
//  scaling.schedules               when each is in force (cron, time zone, DST): ScheduleInForce.*
//                                  (tests/policy/schedule_test.cc); the floor appearing and going at
//                                  the cron times through the controller: Schedules.* (tests/sim)
//  disruption.disruption_interval  Controller.RecentlyDisruptedIsARollingWindowOfTheNodesPlansRemoved; the
//                                  planner side is Planner.RemovesNothingMoreInAPoolWhoseDisruptionWindowIsFull
//  budget.teams.* (actuator)       Controller.AFallbackThatWouldBreakATeamsHardBudgetIsNotSent
//  disruption.do_not_disrupt_labels
//                                  also the kube drain: DrainTest.DoNotDisruptOnAPodOrTheNodeRefusesBeforeCordoning
//                                  shows the built-in keys; a key from the policy there: none yet
//  disruption.drain_timeout        kube drain: DrainTest.ABudgetThatNeverAllowsTimesOutUncordonsAndKeepsThePod
//                                  (the timeout given directly; the policy's value reaches it in
//                                  daemon/kube_setup.cc)
//  classes[].forecast (the forecast itself, horizon auto, no history)
//                                  controller: Forecast.* (tests/controller/forecast_test.cc); replays:
//                                  ForecastReplay.* (tests/sim/forecast_replay_test.cc)
//  signals.max_staleness           SignalReading.JudgesFreshnessAgainstThePolicy (tests/signals),
//                                  Controller.StaleSignalBlocksScaleDownOfTheClassPools

}  // namespace
}  // namespace gpuscaler
