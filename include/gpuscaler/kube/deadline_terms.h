// What a pod says of its work and its deadline (docs/kubernetes.md,
// "Deadlines, runtimes and progress"): the whole job's expected runtime,
// how much of it is done, and by when it must have finished; read from its
// annotations, else from its class. These are the terms of the unit's
// Uniform Progress line (DemandUnit::deadline, submitted, total_work,
// progressing_since) and the work it has left (expected_runtime). Pure
// functions of their arguments; thread-safe.
#pragma once

#include "gpuscaler/kube/objects.h"
#include "gpuscaler/model/demand.h"
#include "gpuscaler/policy/policy.h"
#include "gpuscaler/status.h"

namespace gpuscaler::kube {

// Pod annotations (each overrides what its class says):
// When the work must have finished: an RFC 3339 time
// ("2026-12-14T09:00:00Z"), a duration after the pod's creation ("36h"), or
// a multiple of the whole job's expected runtime ("1.5x"). Overrides the
// class's classes[].deadline.
inline constexpr const char* kAnnotationDeadline = "gpuscaler.io/deadline";
// The whole job's expected runtime, a duration ("10h"); overrides the
// class's shape.expected_runtime.
inline constexpr const char* kAnnotationExpectedRuntime = "gpuscaler.io/expected-runtime";
// The fraction of the work done as of the job's last checkpoint, a number
// in [0, 1] ("0.4").
inline constexpr const char* kAnnotationProgress = "gpuscaler.io/progress";
// When that checkpoint was written, an RFC 3339 time; only with
// kAnnotationProgress.
inline constexpr const char* kAnnotationCheckpointTime = "gpuscaler.io/checkpoint-time";

// Whether the pod waits for a node (pending demand) or holds one (running
// work, WorkSource::RunningOn).
enum class PodRun { kPending, kRunning };

// Sets the work terms of `u`, the unit of `pod` after its class `cls`
// (nullptr: none) was applied. With W the whole job's expected runtime
// (kAnnotationExpectedRuntime, else the class's expected_runtime, else
// u->expected_runtime as it is) and p the progress (kAnnotationProgress, 0
// when absent):
//  - expected_runtime: the work left when the current run started, (1 - p) x W
//    (rounded to the second);
//  - deadline: from kAnnotationDeadline, else the class's rule, counted
//    from the pod's creation ("Nx": N x W); unset when neither says. With a
//    deadline, submitted = the pod's creation and total_work = W when the
//    pod states it (kAnnotationExpectedRuntime), else 0 (no Uniform Progress
//    line: the planner holds it by its slack alone); without a deadline,
//    both are left as they are;
//  - progressing_since (kRunning only; left as it is for kPending): the
//    pod's start (PodInfo::started), or with kAnnotationCheckpointTime the
//    later of the checkpoint and the start (the checkpoint when the start is
//    unknown); left as it is when neither is known.
// Errors: kInvalidInput naming the pod, the annotation, what was expected and
// the value, for a value that does not parse, an expected runtime not above
// 0s, a progress outside [0, 1], an RFC 3339 deadline not after the pod's
// creation, and a checkpoint time without a progress. The first such error is
// returned, and `u` is still filled as if the bad annotations were absent (a
// running pod's unit is used anyway: its annotations were reported while it
// was pending).
Status ApplyWorkTerms(const PodInfo& pod, const WorkloadClassPolicy* cls, PodRun run, DemandUnit* u);

}  // namespace gpuscaler::kube
