// Which gang a pod belongs to when the cluster names it in several ways:
// ProvisioningRequests, the two PodGroup kinds and gpuscaler's annotations,
// on the object shapes of tests/kube/testdata.
#include "gpuscaler/kube/gangs.h"

#include <gtest/gtest.h>

#include "gpuscaler/kube/workload.h"
#include "kube/kube_fixtures.h"

namespace gpuscaler::kube {
namespace {

using nlohmann::json;

GangDirectory RecordedDirectory() {
  return GangDirectory::From(
      {ProvisioningRequestFromJson(testing::KubeTestData("provisioningrequest.json")).value()},
      {testing::KubeTestData("podgroup-coscheduling.json")},
      {testing::KubeTestData("podgroup-volcano.json")});
}

PodInfo PendingWorker() {
  PodInfo p;
  p.uid = "uid-worker-0";
  p.name = "worker-0";
  p.namespace_name = "ml-training";
  p.phase = "Pending";
  p.unschedulable = true;
  p.requests_milli = {{"nvidia.com/gpu", 8000}, {"cpu", 4000}};
  return p;
}

constexpr const char* kRequest = "llama-train-5f2c1-provision-1";
constexpr const char* kPodGroup = "resnet-ddp";
constexpr const char* kVolcanoGroup = "bert-mpi-7c1d2e3f-4a5b-6c7d-8e9f-0a1b2c3d4e5f";

TEST(GangDirectory, ReadsTheSizesOfRequestsAndBothPodGroupKinds) {
  const GangDirectory d = RecordedDirectory();
  EXPECT_EQ(d.provisioning_requests,
            (std::map<std::string, int>{{std::string("ml-training/") + kRequest, 4}}));
  EXPECT_EQ(d.pod_groups, (std::map<std::string, int>{{std::string("ml-training/") + kPodGroup, 3}}));
  EXPECT_EQ(d.volcano_pod_groups,
            (std::map<std::string, int>{{std::string("ml-training/") + kVolcanoGroup, 2}}));
}

TEST(GangOfPod, TheRequestThenTheCoschedulingGroupThenVolcanoThenTheAnnotationsWin) {
  const GangDirectory d = RecordedDirectory();
  PodInfo pod = PendingWorker();
  pod.annotations[kAnnotationGang] = "by-hand";
  pod.annotations[kAnnotationGangSize] = "5";
  pod.annotations[kAnnotationVolcanoGroupName] = kVolcanoGroup;
  pod.labels[kLabelCoschedulingPodGroup] = kPodGroup;
  pod.annotations[kAnnotationConsumeProvisioningRequest] = kRequest;
  const auto gang = [&] {
    Result<std::optional<GangMembership>> g = GangOfPod(pod, &d);
    EXPECT_TRUE(g.ok()) << g.error().ToString();
    return g.ok() ? g->value_or(GangMembership{}) : GangMembership{};
  };
  EXPECT_EQ(gang(),
            (GangMembership{std::string("provisioningrequest:ml-training/") + kRequest, 4, true, false}));
  pod.annotations.erase(kAnnotationConsumeProvisioningRequest);
  EXPECT_EQ(gang(), (GangMembership{std::string("podgroup:ml-training/") + kPodGroup, 3, true, false}));
  pod.labels.erase(kLabelCoschedulingPodGroup);
  EXPECT_EQ(gang(), (GangMembership{std::string("volcano:ml-training/") + kVolcanoGroup, 2, true, false}));
  pod.annotations.erase(kAnnotationVolcanoGroupName);
  EXPECT_EQ(gang(), (GangMembership{"ml-training/by-hand", 5, true, false}));
  // Without a directory only the annotations count.
  pod.labels[kLabelCoschedulingPodGroup] = kPodGroup;
  EXPECT_EQ(GangOfPod(pod, nullptr)->value().name, "ml-training/by-hand");
}

TEST(GangOfPod, ARequestTheClusterDoesNotHaveFallsThroughToTheNextSource) {
  const GangDirectory d = RecordedDirectory();
  PodInfo pod = PendingWorker();
  pod.annotations[kAnnotationConsumeProvisioningRequest] = "deleted-request";
  pod.labels[kLabelCoschedulingPodGroup] = kPodGroup;
  EXPECT_EQ(GangOfPod(pod, &d)->value().name, std::string("podgroup:ml-training/") + kPodGroup);
}

TEST(PodDemand, APendingPodWhosePodGroupDoesNotExistIsNotDemandButARunningOneHoldsItsRoom) {
  const GangDirectory d = RecordedDirectory();
  PodInfo pod = PendingWorker();
  pod.labels[kLabelCoschedulingPodGroup] = "not-created-yet";
  Result<DemandUnit> u = PodDemand(pod, testing::TrainingPolicy(), Catalog{}, &d);
  ASSERT_FALSE(u.ok());
  EXPECT_EQ(u.error().category(), ErrorCategory::kNotFound);
  EXPECT_NE(
      u.error().message().find("waits for its PodGroup (scheduling.x-k8s.io) ml-training/not-created-yet"),
      std::string::npos)
      << u.error().message();

  pod.node_name = "node-a";
  pod.phase = "Running";
  const DemandUnit running = RunningPodUnit(pod, testing::TrainingPolicy(), Catalog{}, &d);
  EXPECT_EQ(running.gpus, 8);
  EXPECT_FALSE(running.gang);
}

TEST(DemandFromCluster, PodGroupMembersArePendingGangMembersAndPodsWaitingForAGroupAreSkipped) {
  const GangDirectory d = RecordedDirectory();
  std::vector<PodInfo> pods;
  for (int i = 0; i < 3; ++i) {
    PodInfo p = PendingWorker();
    p.name = "resnet-" + std::to_string(i);
    p.uid = "uid-resnet-" + std::to_string(i);
    p.labels[kLabelCoschedulingPodGroup] = kPodGroup;
    pods.push_back(p);
  }
  PodInfo orphan = PendingWorker();
  orphan.labels[kLabelCoschedulingPodGroup] = "missing";
  pods.push_back(orphan);
  const ClusterDemand demand =
      DemandFromCluster(pods, {}, testing::TrainingPolicy(), Catalog{}, kDefaultTeamLabel, &d);
  ASSERT_EQ(demand.pending.size(), 3u);
  for (const DemandUnit& u : demand.pending) {
    ASSERT_TRUE(u.gang);
    EXPECT_EQ(u.gang->size, 3);
  }
  ASSERT_EQ(demand.skipped.size(), 1u);
  EXPECT_NE(demand.skipped[0].find("ml-training/worker-0: pod ml-training/worker-0 waits for its PodGroup"),
            std::string::npos)
      << demand.skipped[0];
}

}  // namespace
}  // namespace gpuscaler::kube
