// A pod's deadline, runtime and progress annotations (and its class) become
// the work terms of its unit: every form of each annotation, its effect on
// pending and running pods, every error text, and the pod start read from
// the recorded object shapes.
#include "gpuscaler/kube/deadline_terms.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "gpuscaler/kube/objects.h"
#include "gpuscaler/kube/workload.h"
#include "gpuscaler/model/catalog.h"
#include "kube/kube_fixtures.h"

namespace gpuscaler::kube {
namespace {

using nlohmann::json;

constexpr Seconds kHour{3600};

WallTime Utc(const std::string& text) {
  WallTime t{};
  EXPECT_TRUE(ParseRfc3339(text, &t)) << text;
  return t;
}

// A pending one-GPU pod created at 2026-12-07T09:00:00Z.
PodInfo TermsPod(std::map<std::string, std::string> annotations = {}) {
  PodInfo p;
  p.uid = "6f1c0000-0000-4000-8000-000000000001";
  p.name = "llama-ft-0";
  p.namespace_name = "ml-training";
  p.phase = "Pending";
  p.created = Utc("2026-12-07T09:00:00Z");
  p.annotations = std::move(annotations);
  p.requests_milli = {{"nvidia.com/gpu", 1000}};
  return p;
}

// The same pod bound to a node, started by its kubelet at 09:30.
PodInfo RunningTermsPod(std::map<std::string, std::string> annotations = {}) {
  PodInfo p = TermsPod(std::move(annotations));
  p.phase = "Running";
  p.node_name = "ip-10-0-1-7.us-west-2.compute.internal";
  p.started = Utc("2026-12-07T09:30:00Z");
  return p;
}

// A class whose jobs run 10 hours, with no deadline of its own.
WorkloadClassPolicy TenHourClass() {
  WorkloadClassPolicy c;
  c.name = "training";
  c.expected_runtime = 10 * kHour;
  return c;
}

// The unit's terms; the test fails when ApplyWorkTerms reports an error.
DemandUnit Terms(const PodInfo& pod, const WorkloadClassPolicy* cls, PodRun run) {
  DemandUnit u;
  Status status = ApplyWorkTerms(pod, cls, run, &u);
  EXPECT_TRUE(status.ok()) << status.error().ToString();
  return u;
}

TEST(ApplyWorkTerms, WithoutAnnotationsOrClassDeadlineTheUnitHasTheClasssRuntimeAndNoDeadline) {
  const WorkloadClassPolicy cls = TenHourClass();
  const DemandUnit u = Terms(TermsPod(), &cls, PodRun::kPending);
  EXPECT_EQ(u.expected_runtime, 10 * kHour);
  EXPECT_FALSE(u.deadline.has_value());
  EXPECT_FALSE(u.submitted.has_value());
  EXPECT_EQ(u.total_work, Seconds(0));
  EXPECT_FALSE(u.progressing_since.has_value());
}

TEST(ApplyWorkTerms, TheDeadlineAnnotationIsATimeADurationAfterCreationOrAMultipleOfTheRuntime) {
  const WorkloadClassPolicy cls = TenHourClass();
  struct Case {
    std::string name;
    std::map<std::string, std::string> annotations;
    WallTime want_deadline;
    Seconds want_runtime;
    Seconds want_total_work;  // the line's: only a runtime the pod states
  } cases[] = {
      {"an RFC 3339 time", {{kAnnotationDeadline, "2026-12-14T09:00:00Z"}}, Utc("2026-12-14T09:00:00Z"), 10 * kHour,
       Seconds(0)},
      {"an RFC 3339 time with an offset", {{kAnnotationDeadline, "2026-12-14T10:00:00+01:00"}},
       Utc("2026-12-14T09:00:00Z"), 10 * kHour, Seconds(0)},
      {"a duration after the pod's creation", {{kAnnotationDeadline, "36h"}}, Utc("2026-12-08T21:00:00Z"), 10 * kHour,
       Seconds(0)},
      {"a multiple of the class's runtime", {{kAnnotationDeadline, "1.5x"}}, Utc("2026-12-08T00:00:00Z"), 10 * kHour,
       Seconds(0)},
      {"a multiple of the annotated runtime", {{kAnnotationDeadline, "1.5x"}, {kAnnotationExpectedRuntime, "4h"}},
       Utc("2026-12-07T15:00:00Z"), 4 * kHour, 4 * kHour},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const DemandUnit u = Terms(TermsPod(c.annotations), &cls, PodRun::kPending);
    ASSERT_TRUE(u.deadline.has_value());
    EXPECT_EQ(FormatRfc3339(*u.deadline), FormatRfc3339(c.want_deadline));
    EXPECT_EQ(u.submitted, Utc("2026-12-07T09:00:00Z"));
    EXPECT_EQ(u.total_work, c.want_total_work);
    EXPECT_EQ(u.expected_runtime, c.want_runtime) << "nothing done yet: all of it is left";
  }
}

TEST(ApplyWorkTerms, TheClasssMultipleRuleCountsFromCreationOverTheWholeRuntime) {
  WorkloadClassPolicy cls = TenHourClass();
  cls.deadline = DeadlineRule{Seconds(0), 1.5};
  DemandUnit u = Terms(TermsPod(), &cls, PodRun::kPending);
  EXPECT_EQ(u.deadline, Utc("2026-12-07T09:00:00Z") + 15 * kHour);
  EXPECT_EQ(u.submitted, Utc("2026-12-07T09:00:00Z"));
  EXPECT_EQ(u.total_work, Seconds(0)) << "the class's guess draws no line";
  // The pod's runtime is what the class's multiple applies to.
  u = Terms(TermsPod({{kAnnotationExpectedRuntime, "2h"}}), &cls, PodRun::kPending);
  EXPECT_EQ(u.deadline, Utc("2026-12-07T09:00:00Z") + 3 * kHour);
  EXPECT_EQ(u.total_work, 2 * kHour);
  EXPECT_EQ(u.expected_runtime, 2 * kHour);
}

TEST(ApplyWorkTerms, AJobWithoutAStatedRuntimeIsPlannedWithItsClasssDefaultHour) {
  WorkloadClassPolicy cls;  // expected_runtime left at its default
  cls.name = "batch";
  const DemandUnit u = Terms(TermsPod({{kAnnotationDeadline, "2x"}}), &cls, PodRun::kPending);
  EXPECT_EQ(u.expected_runtime, kHour);
  EXPECT_EQ(u.total_work, Seconds(0));
  EXPECT_EQ(u.deadline, Utc("2026-12-07T11:00:00Z"));
}

TEST(ApplyWorkTerms, AnnotationsOverrideTheClass) {
  WorkloadClassPolicy cls = TenHourClass();
  cls.deadline = DeadlineRule{24 * kHour, 0};
  EXPECT_EQ(Terms(TermsPod(), &cls, PodRun::kPending).deadline, Utc("2026-12-08T09:00:00Z")) << "the class's own";
  EXPECT_EQ(Terms(TermsPod({{kAnnotationDeadline, "36h"}}), &cls, PodRun::kPending).deadline, Utc("2026-12-08T21:00:00Z"));
  EXPECT_EQ(Terms(TermsPod({{kAnnotationDeadline, "2026-12-07T18:00:00Z"}}), &cls, PodRun::kPending).deadline,
            Utc("2026-12-07T18:00:00Z"));
  EXPECT_EQ(Terms(TermsPod({{kAnnotationDeadline, "3x"}}), &cls, PodRun::kPending).deadline, Utc("2026-12-08T15:00:00Z"));
  const DemandUnit runtime = Terms(TermsPod({{kAnnotationExpectedRuntime, "90m"}}), &cls, PodRun::kPending);
  EXPECT_EQ(runtime.expected_runtime, Seconds(5400));
  EXPECT_EQ(runtime.total_work, Seconds(5400));
  EXPECT_EQ(runtime.deadline, Utc("2026-12-08T09:00:00Z")) << "a fixed class deadline does not scale";
}

TEST(ApplyWorkTerms, ProgressOfAPendingPodLeavesTheRestOfTheWorkAndNoRunningStart) {
  const WorkloadClassPolicy cls = TenHourClass();
  // A job restarted after an eviction, a quarter done at its last checkpoint.
  DemandUnit u = Terms(TermsPod({{kAnnotationProgress, "0.25"}, {kAnnotationDeadline, "1.5x"}}), &cls, PodRun::kPending);
  EXPECT_EQ(u.expected_runtime, Seconds(27000));
  EXPECT_EQ(u.total_work, Seconds(0)) << "the class's runtime: no line";
  EXPECT_EQ(u.deadline, Utc("2026-12-07T09:00:00Z") + 15 * kHour) << "the multiple is of the whole job";
  EXPECT_FALSE(u.progressing_since.has_value());
  // The checkpoint's time changes nothing while it waits; nor does a start.
  PodInfo pod = TermsPod({{kAnnotationProgress, "0.25"}, {kAnnotationCheckpointTime, "2026-12-07T08:00:00Z"}});
  pod.started = Utc("2026-12-07T09:10:00Z");
  u = Terms(pod, &cls, PodRun::kPending);
  EXPECT_EQ(u.expected_runtime, Seconds(27000));
  EXPECT_FALSE(u.progressing_since.has_value());
  EXPECT_FALSE(u.deadline.has_value());
  EXPECT_EQ(u.total_work, Seconds(0)) << "no deadline: no progress line";
  // All done, and none done.
  EXPECT_EQ(Terms(TermsPod({{kAnnotationProgress, "1"}}), &cls, PodRun::kPending).expected_runtime, Seconds(0));
  EXPECT_EQ(Terms(TermsPod({{kAnnotationProgress, "0"}}), &cls, PodRun::kPending).expected_runtime, 10 * kHour);
}

TEST(ApplyWorkTerms, ARunningPodProgressesSinceItsStartOrItsLaterCheckpoint) {
  const WorkloadClassPolicy cls = TenHourClass();
  struct Case {
    std::string name;
    std::map<std::string, std::string> annotations;
    bool start_known;
    std::optional<WallTime> want_since;
    Seconds want_left;
  } cases[] = {
      {"no progress: since the pod's start, all of the work", {}, true, Utc("2026-12-07T09:30:00Z"), 10 * kHour},
      {"progress without a checkpoint time: resumed from it at the start",
       {{kAnnotationProgress, "0.4"}}, true, Utc("2026-12-07T09:30:00Z"), 6 * kHour},
      {"a checkpoint of this run: since the checkpoint, what was left at it",
       {{kAnnotationProgress, "0.4"}, {kAnnotationCheckpointTime, "2026-12-07T13:30:00Z"}}, true,
       Utc("2026-12-07T13:30:00Z"), 6 * kHour},
      {"a checkpoint of an earlier run: since the start",
       {{kAnnotationProgress, "0.4"}, {kAnnotationCheckpointTime, "2026-12-06T23:00:00Z"}}, true,
       Utc("2026-12-07T09:30:00Z"), 6 * kHour},
      {"start unknown: since the checkpoint",
       {{kAnnotationProgress, "0.4"}, {kAnnotationCheckpointTime, "2026-12-06T23:00:00Z"}}, false,
       Utc("2026-12-06T23:00:00Z"), 6 * kHour},
      {"start unknown, no checkpoint: not known", {{kAnnotationProgress, "0.4"}}, false, std::nullopt, 6 * kHour},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    PodInfo pod = RunningTermsPod(c.annotations);
    if (!c.start_known) pod.started.reset();
    const DemandUnit u = Terms(pod, &cls, PodRun::kRunning);
    EXPECT_EQ(u.progressing_since, c.want_since);
    EXPECT_EQ(u.expected_runtime, c.want_left);
  }
}

TEST(ApplyWorkTerms, EveryBadValueIsAnErrorNamingThePodTheAnnotationAndWhatWasExpected) {
  const WorkloadClassPolicy cls = TenHourClass();
  const std::string deadline_forms =
      "expected a duration longer than 0s such as \"36h\", a multiple of the runtime such as \"1.5x\" or an RFC "
      "3339 time such as \"2026-12-14T09:00:00Z\", got '";
  const std::string pod = "pod ml-training/llama-ft-0: annotation ";
  struct Case {
    std::map<std::string, std::string> annotations;
    std::string want;
  } cases[] = {
      {{{kAnnotationDeadline, "soon"}}, pod + "gpuscaler.io/deadline: " + deadline_forms + "soon'"},
      {{{kAnnotationDeadline, "0s"}}, pod + "gpuscaler.io/deadline: " + deadline_forms + "0s'"},
      {{{kAnnotationDeadline, "-1h"}}, pod + "gpuscaler.io/deadline: " + deadline_forms + "-1h'"},
      {{{kAnnotationDeadline, ""}}, pod + "gpuscaler.io/deadline: " + deadline_forms + "'"},
      {{{kAnnotationDeadline, "2026-13-01T00:00:00Z"}},
       pod + "gpuscaler.io/deadline: " + deadline_forms + "2026-13-01T00:00:00Z'"},
      {{{kAnnotationDeadline, "0.5x"}},
       pod + "gpuscaler.io/deadline: expected a multiple of the runtime of at least 1 such as \"1.5x\", got '0.5x'"},
      {{{kAnnotationDeadline, "2026-12-07T09:00:00Z"}},
       pod + "gpuscaler.io/deadline: expected a time after the pod's creation (2026-12-07T09:00:00Z), got "
             "'2026-12-07T09:00:00Z'"},
      {{{kAnnotationExpectedRuntime, "long"}},
       pod + "gpuscaler.io/expected-runtime: expected a duration longer than 0s such as \"10h\", got 'long'"},
      {{{kAnnotationExpectedRuntime, "0s"}},
       pod + "gpuscaler.io/expected-runtime: expected a duration longer than 0s such as \"10h\", got '0s'"},
      {{{kAnnotationProgress, "x"}}, pod + "gpuscaler.io/progress: expected a number between 0 and 1, got 'x'"},
      {{{kAnnotationProgress, "1.5"}}, pod + "gpuscaler.io/progress: expected a number between 0 and 1, got '1.5'"},
      {{{kAnnotationProgress, "-0.1"}}, pod + "gpuscaler.io/progress: expected a number between 0 and 1, got '-0.1'"},
      {{{kAnnotationProgress, "40%"}}, pod + "gpuscaler.io/progress: expected a number between 0 and 1, got '40%'"},
      {{{kAnnotationProgress, "nan"}}, pod + "gpuscaler.io/progress: expected a number between 0 and 1, got 'nan'"},
      {{{kAnnotationProgress, ""}}, pod + "gpuscaler.io/progress: expected a number between 0 and 1, got ''"},
      {{{kAnnotationProgress, "0.5"}, {kAnnotationCheckpointTime, "yesterday"}},
       pod + "gpuscaler.io/checkpoint-time: expected an RFC 3339 time such as \"2026-12-14T09:00:00Z\", got "
             "'yesterday'"},
      {{{kAnnotationCheckpointTime, "2026-12-07T08:00:00Z"}},
       pod + "gpuscaler.io/checkpoint-time: only with gpuscaler.io/progress, the fraction of the work done at it"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.want);
    for (PodRun run : {PodRun::kPending, PodRun::kRunning}) {
      DemandUnit u;
      Status status = ApplyWorkTerms(RunningTermsPod(c.annotations), &cls, run, &u);
      ASSERT_FALSE(status.ok());
      EXPECT_EQ(status.error().category(), ErrorCategory::kInvalidInput);
      EXPECT_EQ(status.error().message(), c.want);
    }
  }
}

TEST(ApplyWorkTerms, ABadAnnotationReadsAsAbsentAndTheFirstErrorIsReturned) {
  WorkloadClassPolicy cls = TenHourClass();
  cls.deadline = DeadlineRule{24 * kHour, 0};
  DemandUnit u;
  Status status = ApplyWorkTerms(
      RunningTermsPod({{kAnnotationExpectedRuntime, "long"}, {kAnnotationProgress, "half"}, {kAnnotationDeadline, "soon"}}),
      &cls, PodRun::kRunning, &u);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().message(),
            "pod ml-training/llama-ft-0: annotation gpuscaler.io/expected-runtime: expected a duration longer than 0s "
            "such as \"10h\", got 'long'");
  EXPECT_EQ(u.expected_runtime, 10 * kHour);
  EXPECT_EQ(u.total_work, Seconds(0)) << "a bad runtime states none";
  EXPECT_EQ(u.deadline, Utc("2026-12-08T09:00:00Z")) << "the class's deadline";
  EXPECT_EQ(u.progressing_since, Utc("2026-12-07T09:30:00Z"));
}

TEST(ApplyWorkTerms, WithoutAClassTheAnnotationsStillApply) {
  DemandUnit u;  // the model's default expected_runtime: 1h
  ASSERT_TRUE(ApplyWorkTerms(TermsPod({{kAnnotationDeadline, "3x"}}), nullptr, PodRun::kPending, &u).ok());
  EXPECT_EQ(u.deadline, Utc("2026-12-07T12:00:00Z"));
  EXPECT_EQ(u.total_work, Seconds(0));
}

// PodDemand returns the error (the pod is skipped, with the message);
// RunningPodUnit keeps the pod with the bad annotation read as absent.
TEST(ApplyWorkTerms, PodDemandRejectsABadAnnotationAndRunningPodUnitIgnoresIt) {
  Policy policy = testing::TrainingPolicy();
  policy.classes[0].expected_runtime = 10 * kHour;
  policy.classes[0].deadline = DeadlineRule{Seconds(0), 2};
  const Catalog catalog;
  Result<DemandUnit> pending =
      PodDemand(TermsPod({{kAnnotationExpectedRuntime, "5h"}, {kAnnotationProgress, "0.2"}}), policy, catalog);
  ASSERT_TRUE(pending.ok()) << pending.error().ToString();
  EXPECT_EQ(pending->expected_runtime, 4 * kHour);
  EXPECT_EQ(pending->total_work, 5 * kHour);
  EXPECT_EQ(pending->deadline, Utc("2026-12-07T19:00:00Z"));
  EXPECT_FALSE(pending->progressing_since.has_value());

  Result<DemandUnit> rejected = PodDemand(TermsPod({{kAnnotationProgress, "most"}}), policy, catalog);
  ASSERT_FALSE(rejected.ok());
  EXPECT_EQ(rejected.error().message(),
            "pod ml-training/llama-ft-0: annotation gpuscaler.io/progress: expected a number between 0 and 1, got "
            "'most'");

  const DemandUnit running = RunningPodUnit(
      RunningTermsPod({{kAnnotationProgress, "most"}, {kAnnotationExpectedRuntime, "5h"}}), policy, catalog);
  EXPECT_EQ(running.expected_runtime, 5 * kHour);
  EXPECT_EQ(running.deadline, Utc("2026-12-07T19:00:00Z"));
  EXPECT_EQ(running.progressing_since, Utc("2026-12-07T09:30:00Z"));
}

// The ```yaml blocks of docs/kubernetes.md's "Deadlines, runtimes and
// progress": each block's `gpuscaler.io/…: "value"` lines, in order.
std::vector<std::map<std::string, std::string>> DocumentedAnnotations() {
  std::ifstream in(std::filesystem::path(GPUSCALER_SOURCE_DIR) / "docs" / "kubernetes.md");
  std::vector<std::map<std::string, std::string>> blocks;
  std::string line;
  bool in_section = false, in_block = false;
  while (std::getline(in, line)) {
    if (line.rfind("### ", 0) == 0) in_section = line == "### Deadlines, runtimes and progress";
    if (!in_section) continue;
    if (line == "```yaml") {
      in_block = true;
      blocks.emplace_back();
    } else if (line == "```") {
      in_block = false;
    } else if (const size_t key = line.find("gpuscaler.io/"); in_block && key != std::string::npos) {
      const size_t colon = line.find(": \"", key);
      const size_t close = line.find('"', colon + 3);
      EXPECT_NE(close, std::string::npos) << line;
      if (close != std::string::npos) blocks.back()[line.substr(key, colon - key)] = line.substr(colon + 3, close - colon - 3);
    }
  }
  return blocks;
}

TEST(ApplyWorkTerms, TheDocumentedExamplesReadAsTheirCommentsSay) {
  const std::vector<std::map<std::string, std::string>> blocks = DocumentedAnnotations();
  ASSERT_EQ(blocks.size(), 2u);
  WorkloadClassPolicy cls;
  cls.name = "training";
  // "15 h after the pod's creation"
  const DemandUnit relative = Terms(TermsPod(blocks[0]), &cls, PodRun::kPending);
  EXPECT_EQ(relative.deadline, Utc("2026-12-07T09:00:00Z") + 15 * kHour);
  EXPECT_EQ(relative.expected_runtime, 10 * kHour);
  // "6 h left when it starts", by a fixed time.
  const DemandUnit resumed = Terms(TermsPod(blocks[1]), &cls, PodRun::kPending);
  EXPECT_EQ(resumed.expected_runtime, 6 * kHour);
  EXPECT_EQ(resumed.total_work, 10 * kHour);
  EXPECT_EQ(resumed.deadline, Utc("2026-12-14T09:00:00Z"));
}

TEST(ParsePod, ReadsThePodsStartTime) {
  GPUSCALER_REFERENCE_JSON(upstream, "api-testdata/core.v1.Pod.json");
  Result<PodInfo> every_field = ParsePod(upstream.dump());
  ASSERT_TRUE(every_field.ok()) << every_field.error().ToString();
  EXPECT_EQ(every_field->started, Utc("2007-01-01T01:01:01Z"));

  GPUSCALER_REFERENCE_JSON(list, "examples/podlist-pending-gpu.assembled.json");
  json pod = list["items"][0];
  Result<PodInfo> pending = ParsePod(pod.dump());
  ASSERT_TRUE(pending.ok()) << pending.error().ToString();
  EXPECT_FALSE(pending->started.has_value()) << "no kubelet has taken it";

  // The recorded pod once bound and started, with its progress annotated.
  pod["spec"]["nodeName"] = "ip-10-0-1-7.us-west-2.compute.internal";
  pod["status"]["phase"] = "Running";
  pod["status"]["startTime"] = "2023-08-04T06:02:05Z";
  pod["metadata"]["annotations"] = {{kAnnotationExpectedRuntime, "8h"}, {kAnnotationProgress, "0.5"}};
  Result<PodInfo> running = ParsePod(pod.dump());
  ASSERT_TRUE(running.ok()) << running.error().ToString();
  EXPECT_EQ(running->started, Utc("2023-08-04T06:02:05Z"));
  const DemandUnit u = RunningPodUnit(*running, testing::TrainingPolicy(), Catalog{});
  EXPECT_EQ(u.progressing_since, Utc("2023-08-04T06:02:05Z"));
  EXPECT_EQ(u.expected_runtime, 4 * kHour);
}

}  // namespace
}  // namespace gpuscaler::kube
