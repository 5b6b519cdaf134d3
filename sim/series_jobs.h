// Demand series to jobs. A replay places jobs, but a demand series (Helios'
// per-VC minute series: GPUs allocated plus GPUs asked for by queued jobs)
// only says how many GPUs a class wanted over time. SeriesToJobs rebuilds
// jobs from the level's steps, last in, first out:
//  - a rise of N GPUs at t submits jobs at t of max_gpus_per_job GPUs each,
//    the last one the remainder (a job's GPUs share one node, as the Philly
//    reader splits multi-machine jobs);
//  - a fall of N GPUs at t ends the newest open jobs first; a job that ends
//    only in part becomes two jobs from its submit time, one with the GPUs
//    that ended at t and one with the rest. The level is thus a baseload of
//    long jobs under short bursts, and the GPU-seconds of the jobs equal the
//    integral of the (rounded) level exactly;
//  - jobs still open at the last point end one step after it (the series'
//    last interval).
// A job's duration is how long the level held its GPUs; for Helios that
// includes the time the job queued in the source cluster (pending GPUs count
// as demand), so it is an upper bound of the work.
//
// Series with unit "gpus" become jobs; values are rounded to whole GPUs.
// With a policy, series of requests per second ("qps") and of queued jobs
// ("jobs") whose class the policy names with target.jobs_per_gpu_per_minute
// become GPU levels first: qps x 60 / jobs_per_gpu_per_minute GPUs serve a
// request rate; a queue of N jobs needs N / (jobs_per_gpu_per_minute x
// max_queue_wait in minutes) GPUs to drain in time (the daemon's rule for a
// queue depth signal; 1 minute without max_queue_wait), each rounded up to
// whole GPUs. Series of other units, or of classes without that target, are
// kept as series.
// Jobs: id "<class>/<n>" (n in submit order), class = the series' class,
// whole GPUs, no GPU model, CPU or memory request (the series has none),
// interruptible with the DemandUnit defaults for checkpoints and restarts,
// and Trace::behaviour_from_policy set, so a policy class of the same name
// decides how they tolerate a move. Pure and deterministic.
#pragma once

#include "gpuscaler/policy/policy.h"
#include "sim/trace.h"

namespace gpuscaler::sim {

struct SeriesJobOptions {
  int max_gpus_per_job = 8;  // >= 1
  // Converts "qps" and "jobs" series to GPUs (see above); null: not.
  const Policy* policy = nullptr;
};

// `trace` with its "gpus" series turned into jobs (added to any jobs it
// already has, sorted by submit then id) and removed from `series`; other
// series are kept. Counts go to stats.warnings.
Trace SeriesToJobs(Trace trace, const SeriesJobOptions& options = {});

}  // namespace gpuscaler::sim
