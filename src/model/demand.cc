#include "gpuscaler/model/demand.h"

#include <algorithm>

#include "gpuscaler/model/gpu.h"

namespace gpuscaler {
namespace {

// "3g.40gb" takes 3 of the 7 compute slices.
double MigShare(const std::string& profile) {
  int n = 0;
  for (size_t i = 0; i < profile.size() && profile[i] >= '0' && profile[i] <= '9'; ++i) {
    n = n * 10 + (profile[i] - '0');
    if (n > kMigComputeSlices) break;  // out of range already; stops overflow too
  }
  if (n <= 0 || n > kMigComputeSlices) n = 1;
  return static_cast<double>(n) / kMigComputeSlices;
}

}  // namespace

double GpuShare(const DemandUnit& u) {
  if (u.gpus > 0) return u.gpus;
  if (u.gpu_milli > 0) return u.gpu_milli / 1000.0;
  if (!u.mig_profile.empty()) return MigShare(u.mig_profile);
  return 0;
}

bool NeedsGpu(const DemandUnit& u) { return GpuShare(u) > 0; }

int WholeGpusTaken(const DemandUnit& u) {
  if (u.gpus > 0) return u.gpus;
  return NeedsGpu(u) ? 1 : 0;
}

int InterruptionReach(const DemandUnit& u) { return u.gang ? std::max(1, u.gang->size) : 1; }

}  // namespace gpuscaler
