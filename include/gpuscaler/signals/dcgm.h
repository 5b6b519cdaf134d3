// Readings from an NVIDIA DCGM exporter scrape (its /metrics, parsed with
// ParseExposition): per GPU (and per MIG instance) utilization and
// framebuffer memory, grouped per node, and which pod holds which GPU.
// Pure functions; thread-safe. Reference: docs/signals.md.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpuscaler/signals/exposition.h"

namespace gpuscaler::signals {

inline constexpr std::string_view kDcgmGpuUtil = "DCGM_FI_DEV_GPU_UTIL";                  // percent 0..100
inline constexpr std::string_view kDcgmGrEngineActive = "DCGM_FI_PROF_GR_ENGINE_ACTIVE";  // ratio 0..1
inline constexpr std::string_view kDcgmFbUsed = "DCGM_FI_DEV_FB_USED";                    // MiB
inline constexpr std::string_view kDcgmFbFree = "DCGM_FI_DEV_FB_FREE";                    // MiB

// DCGM marks a field it could not read with a "blank" sentinel: int64 blanks
// are 0x7ffffffffffffff0 + code (9223372036854775792 and up; the exporter
// README shows 9223372036854775794 for an unsupported field). As doubles these
// all round to 2^63, so any value at or above 2^63 - 4096 is a blank. NaN is
// treated the same. A blank is missing, never zero.
bool IsDcgmBlank(double value);

// One GPU, or one MIG instance of a GPU.
struct GpuReading {
  std::string hostname;     // `Hostname` (exporter <= 4.5) or `hostname`; or DcgmOptions default
  std::string gpu;          // `gpu` index as the exporter prints it ("0")
  std::string uuid;         // `UUID`
  std::string model_name;   // `modelName`; empty on old exporters
  std::string mig_profile;  // `GPU_I_PROFILE` ("1g.5gb"); empty for a whole GPU
  std::string mig_instance_id;  // `GPU_I_ID`; empty for a whole GPU
  // 0..1. From DCGM_FI_DEV_GPU_UTIL / 100 when present, else
  // DCGM_FI_PROF_GR_ENGINE_ACTIVE. Empty when neither is present, or both
  // are blank or out of range.
  std::optional<double> utilization;
  std::string utilization_field;  // which field gave it
  std::optional<int64_t> fb_used_mib;
  std::optional<int64_t> fb_free_mib;
  // Pod that holds this GPU/instance (Kubernetes mode); empty when none.
  std::string pod_namespace;
  std::string pod;
  std::string container;

  bool is_mig_instance() const { return !mig_instance_id.empty() || !mig_profile.empty(); }
};

// The GPUs of one node.
struct NodeGpuReadings {
  std::string hostname;
  std::vector<GpuReading> gpus;           // whole GPUs, ordered by (gpu index, uuid)
  std::vector<GpuReading> mig_instances;  // ordered by (gpu, uuid, instance id)
  // Mean utilization over the node's physical GPUs: each GPU's own reading,
  // or when it has none, the mean of its MIG instances' readings. Empty when
  // no GPU of the node has a reading: missing, not idle.
  std::optional<double> mean_utilization;
  int gpus_with_utilization = 0;
  int gpus_without_utilization = 0;
};

// A pod's GPU usage (one entry per pod, over all GPUs/instances it holds).
struct PodGpuUsage {
  std::string pod_namespace;
  std::string pod;
  std::string hostname;
  int gpus = 0;  // GPUs plus MIG instances it holds
  std::optional<double> mean_utilization;  // over those with a reading
  std::optional<int64_t> fb_used_mib;      // summed over those with a reading
};

struct DcgmReadings {
  std::vector<NodeGpuReadings> nodes;  // ordered by hostname
  std::vector<PodGpuUsage> pods;       // ordered by (namespace, pod)
  int blank_values = 0;  // sentinel or NaN values seen in the fields read
};

struct DcgmOptions {
  // Hostname for series without a host label (exporter run with NoHostname):
  // typically the node the scraped exporter runs on.
  std::string default_hostname;
};

// Groups the DCGM series of a scrape. Samples of other metrics are ignored.
// A GPU is keyed by (hostname, UUID, or gpu index when UUID is absent, MIG
// instance id). Pod labels are read as `pod`/`namespace`/`container`, else
// `exported_pod`/`exported_namespace`/`exported_container` (scrape-side
// rename), else the old `pod_name`/`pod_namespace`/`container_name`; empty
// values mean no pod.
DcgmReadings ReadDcgm(const std::vector<Sample>& samples, const DcgmOptions& options = {});

}  // namespace gpuscaler::signals
