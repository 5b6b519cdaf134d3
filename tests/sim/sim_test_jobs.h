// Jobs the simulator tests replay: built the same way in every test that
// needs plain 1-GPU training work.
#pragma once

#include <string>

#include "gpuscaler/model/time.h"
#include "sim/trace.h"

namespace gpuscaler::sim::testing {

// Job `i` of class "training", as a checkpointing trainer: 1 GPU, 2 vCPU,
// 8 GiB, a checkpoint every `checkpoint_interval`, a 5-minute restart.
inline TraceJob TrainingJob(int i, Seconds submit, Seconds duration, Seconds checkpoint_interval = Seconds(3600)) {
  TraceJob j;
  j.submit = submit;
  j.duration = duration;
  j.unit.id = "train-" + std::to_string(i);
  j.unit.workload_class = "training";
  j.unit.gpus = 1;
  j.unit.cpu_milli = 2000;
  j.unit.memory_mib = 8192;
  j.unit.expected_runtime = duration;
  j.unit.checkpoint_interval = checkpoint_interval;
  j.unit.restart_cost = Seconds(300);
  return j;
}

}  // namespace gpuscaler::sim::testing
