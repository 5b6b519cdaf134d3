#include "gpuscaler/signals/dcgm.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <map>
#include <tuple>

namespace gpuscaler::signals {
namespace {

enum class Field { kGpuUtil, kGrEngineActive, kFbUsed, kFbFree };

std::optional<Field> FieldOf(std::string_view name) {
  if (name == kDcgmGpuUtil) return Field::kGpuUtil;
  if (name == kDcgmGrEngineActive) return Field::kGrEngineActive;
  if (name == kDcgmFbUsed) return Field::kFbUsed;
  if (name == kDcgmFbFree) return Field::kFbFree;
  return std::nullopt;
}

std::string_view FirstNonEmpty(const Sample& s, std::initializer_list<std::string_view> names) {
  for (std::string_view n : names) {
    std::string_view v = s.LabelOr(n);
    if (!v.empty()) return v;
  }
  return {};
}

// Collected per GPU before choosing the utilization field.
struct Partial {
  GpuReading reading;
  std::optional<double> gpu_util_ratio;
  std::optional<double> gr_engine_active;
};

using Key = std::tuple<std::string, std::string, std::string>;  // hostname, uuid-or-index, instance

std::optional<double> Ratio(double value, double full_scale) {
  double r = value / full_scale;
  // A little slack for rounding in the exporter; beyond it the value is bad.
  if (!(r >= 0.0) || r > 1.0 + 1e-6) return std::nullopt;
  return std::min(r, 1.0);
}

std::optional<int64_t> Mib(double value) {
  if (!(value >= 0.0) || value > 1e15) return std::nullopt;
  return static_cast<int64_t>(std::llround(value));
}

bool GpuLess(const GpuReading& a, const GpuReading& b) {
  auto index = [](const std::string& g) {
    // Numeric order for "2" < "10"; non-numbers after numbers.
    return std::make_pair(g.empty() || g.find_first_not_of("0123456789") != std::string::npos, g.size());
  };
  auto ia = index(a.gpu);
  auto ib = index(b.gpu);
  return std::tie(ia, a.gpu, a.uuid, a.mig_instance_id) < std::tie(ib, b.gpu, b.uuid, b.mig_instance_id);
}

}  // namespace

bool IsDcgmBlank(double value) {
  static const double kBlankFloor = std::ldexp(1.0, 63) - 4096.0;
  return std::isnan(value) || value >= kBlankFloor;
}

DcgmReadings ReadDcgm(const std::vector<Sample>& samples, const DcgmOptions& options) {
  DcgmReadings out;
  std::map<Key, Partial> gpus;
  for (const Sample& s : samples) {
    std::optional<Field> field = FieldOf(s.name);
    if (!field.has_value()) continue;
    std::string_view hostname = FirstNonEmpty(s, {"Hostname", "hostname"});
    if (hostname.empty()) hostname = options.default_hostname;
    std::string_view uuid = s.LabelOr("UUID");
    std::string_view gpu = s.LabelOr("gpu");
    std::string_view instance = s.LabelOr("GPU_I_ID");
    Key key{std::string(hostname), std::string(uuid.empty() ? gpu : uuid), std::string(instance)};
    auto [it, inserted] = gpus.try_emplace(std::move(key));
    Partial& p = it->second;
    GpuReading& r = p.reading;
    if (inserted) {
      r.hostname = hostname;
      r.gpu = gpu;
      r.uuid = uuid;
      r.model_name = s.LabelOr("modelName");
      r.mig_profile = s.LabelOr("GPU_I_PROFILE");
      r.mig_instance_id = instance;
    }
    if (r.pod.empty()) {
      r.pod = FirstNonEmpty(s, {"pod", "exported_pod", "pod_name"});
      if (!r.pod.empty()) {
        r.pod_namespace = FirstNonEmpty(s, {"namespace", "exported_namespace", "pod_namespace"});
        r.container = FirstNonEmpty(s, {"container", "exported_container", "container_name"});
      }
    }
    if (IsDcgmBlank(s.value)) {
      ++out.blank_values;
      continue;
    }
    switch (*field) {
      case Field::kGpuUtil:
        p.gpu_util_ratio = Ratio(s.value, 100.0);
        break;
      case Field::kGrEngineActive:
        p.gr_engine_active = Ratio(s.value, 1.0);
        break;
      case Field::kFbUsed:
        r.fb_used_mib = Mib(s.value);
        break;
      case Field::kFbFree:
        r.fb_free_mib = Mib(s.value);
        break;
    }
  }

  std::map<std::string, NodeGpuReadings> nodes;
  std::map<std::pair<std::string, std::string>, PodGpuUsage> pods;
  std::map<std::pair<std::string, std::string>, double> pod_util_sum;
  std::map<std::pair<std::string, std::string>, int> pod_util_n;
  for (auto& [key, p] : gpus) {
    GpuReading& r = p.reading;
    if (p.gpu_util_ratio.has_value()) {
      r.utilization = p.gpu_util_ratio;
      r.utilization_field = kDcgmGpuUtil;
    } else if (p.gr_engine_active.has_value()) {
      r.utilization = p.gr_engine_active;
      r.utilization_field = kDcgmGrEngineActive;
    }
    if (!r.pod.empty()) {
      auto pod_key = std::make_pair(r.pod_namespace, r.pod);
      PodGpuUsage& u = pods[pod_key];
      u.pod_namespace = r.pod_namespace;
      u.pod = r.pod;
      if (u.hostname.empty()) u.hostname = r.hostname;
      ++u.gpus;
      if (r.utilization.has_value()) {
        pod_util_sum[pod_key] += *r.utilization;
        ++pod_util_n[pod_key];
      }
      if (r.fb_used_mib.has_value()) u.fb_used_mib = u.fb_used_mib.value_or(0) + *r.fb_used_mib;
    }
    NodeGpuReadings& node = nodes[r.hostname];
    node.hostname = r.hostname;
    (r.is_mig_instance() ? node.mig_instances : node.gpus).push_back(std::move(r));
  }

  for (auto& [hostname, node] : nodes) {
    std::sort(node.gpus.begin(), node.gpus.end(), GpuLess);
    std::sort(node.mig_instances.begin(), node.mig_instances.end(), GpuLess);
    // A GPU seen only through its MIG instances still counts as a GPU.
    std::map<std::string, std::pair<double, int>> by_gpu;  // uuid-or-index -> (sum, n) of instances
    std::map<std::string, bool> instance_only;
    for (const GpuReading& m : node.mig_instances) {
      std::string id = m.uuid.empty() ? m.gpu : m.uuid;
      instance_only.try_emplace(id, true);
      if (m.utilization.has_value()) {
        by_gpu[id].first += *m.utilization;
        ++by_gpu[id].second;
      }
    }
    double sum = 0;
    // Captured through a plain reference: clang 14 (the fuzz preset) cannot
    // capture a structured binding.
    NodeGpuReadings& counted = node;
    auto add = [&](std::optional<double> u) {
      if (u.has_value()) {
        sum += *u;
        ++counted.gpus_with_utilization;
      } else {
        ++counted.gpus_without_utilization;
      }
    };
    for (const GpuReading& g : node.gpus) {
      std::string id = g.uuid.empty() ? g.gpu : g.uuid;
      instance_only[id] = false;
      std::optional<double> u = g.utilization;
      auto it = by_gpu.find(id);
      if (!u.has_value() && it != by_gpu.end()) u = it->second.first / it->second.second;
      add(u);
    }
    for (const auto& [id, only] : instance_only) {
      if (!only) continue;
      auto it = by_gpu.find(id);
      add(it != by_gpu.end() ? std::optional<double>(it->second.first / it->second.second) : std::nullopt);
    }
    if (node.gpus_with_utilization > 0) node.mean_utilization = sum / node.gpus_with_utilization;
    out.nodes.push_back(std::move(node));
  }
  for (auto& [key, u] : pods) {
    auto n = pod_util_n.find(key);
    if (n != pod_util_n.end()) u.mean_utilization = pod_util_sum[key] / n->second;
    out.pods.push_back(std::move(u));
  }
  return out;
}

}  // namespace gpuscaler::signals
