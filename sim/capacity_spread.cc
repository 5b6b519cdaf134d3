#include "sim/capacity_spread.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace gpuscaler::sim {

std::optional<CapacitySpread> SpreadForShare(double max_spot_share) {
  if (!(max_spot_share > 0) || max_spot_share >= 1) return std::nullopt;
  const double floor = 1.0 - max_spot_share;
  for (int n = 1; n <= kMaxSpreadDomains; ++n) {
    const double k = floor * n;
    if (std::abs(k - std::round(k)) < 1e-9 && std::round(k) >= 1 && std::round(k) < n) {
      return CapacitySpread{n, static_cast<int>(std::round(k))};
    }
  }
  const int k = static_cast<int>(std::ceil(floor * kMaxSpreadDomains - 1e-9));
  return CapacitySpread{kMaxSpreadDomains, std::clamp(k, 1, kMaxSpreadDomains)};
}

std::string SpreadLabelKey(const std::string& cls) { return kCapacitySpreadLabelPrefix + cls; }

std::string SpreadLabelValue(int domain) { return std::to_string(domain + 1); }

SpreadClasses::SpreadClasses(const Policy& policy) {
  for (const WorkloadClassPolicy& c : policy.classes) {
    if (!c.interruptible) continue;
    if (std::optional<CapacitySpread> spread = SpreadForShare(c.max_spot_share)) {
      classes_[c.name] = Entry{*spread, c.pools};
    }
  }
}

const CapacitySpread* SpreadClasses::Find(const std::string& cls) const {
  auto it = classes_.find(cls);
  return it == classes_.end() ? nullptr : &it->second.spread;
}

int SpreadClasses::DomainOf(const std::map<std::string, std::string>& labels, const std::string& cls) const {
  const CapacitySpread* spread = Find(cls);
  if (spread == nullptr) return -1;
  auto it = labels.find(SpreadLabelKey(cls));
  if (it == labels.end()) return -1;
  for (int d = 0; d < spread->domains; ++d) {
    if (it->second == SpreadLabelValue(d)) return d;
  }
  return -1;
}

bool SpreadClasses::InDomain(const std::map<std::string, std::string>& labels, const std::string& cls,
                             int domain) {
  auto it = labels.find(SpreadLabelKey(cls));
  return it != labels.end() && it->second == SpreadLabelValue(domain);
}

std::map<std::string, std::string> SpreadClasses::LabelsForNewNode(const std::string& pool, CapacityType type,
                                                                   const std::string& cls, int domain) const {
  std::map<std::string, std::string> labels;
  for (const auto& [name, entry] : classes_) {
    if (!entry.pools.empty() && std::find(entry.pools.begin(), entry.pools.end(), pool) == entry.pools.end())
      continue;
    const int d = name == cls ? domain : entry.spread.FirstOf(type);
    if (d < 0) continue;
    labels[SpreadLabelKey(name)] = SpreadLabelValue(d);
  }
  return labels;
}

void SpreadClasses::Counts::AddRunning(const std::map<std::string, std::string>& labels,
                                       const std::vector<DemandUnit>& running) {
  if (classes_.empty()) return;
  for (const DemandUnit& u : running) {
    const int d = classes_.DomainOf(labels, u.workload_class);
    if (d >= 0) Add(u.workload_class, d);
  }
}

void SpreadClasses::Counts::Add(const std::string& cls, int domain) {
  const CapacitySpread* spread = classes_.Find(cls);
  if (spread == nullptr || domain < 0 || domain >= spread->domains) return;
  std::vector<int>& pods = pods_[cls];
  pods.resize(static_cast<size_t>(spread->domains), 0);
  ++pods[static_cast<size_t>(domain)];
}

int SpreadClasses::Counts::Next(const std::string& cls, const std::string& tie_key) const {
  const CapacitySpread* spread = classes_.Find(cls);
  if (spread == nullptr) return -1;
  std::vector<int> pods(static_cast<size_t>(spread->domains), 0);
  if (auto it = pods_.find(cls); it != pods_.end()) pods = it->second;
  const int fewest = *std::min_element(pods.begin(), pods.end());
  std::vector<int> tied;
  for (size_t d = 0; d < pods.size(); ++d) {
    if (pods[d] == fewest) tied.push_back(static_cast<int>(d));
  }
  // FNV-1a: the same pick on every platform, so replays are reproducible.
  uint64_t hash = 14695981039346656037ull;
  for (const char c : tie_key) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 1099511628211ull;
  }
  return tied[static_cast<size_t>(hash % tied.size())];
}

}  // namespace gpuscaler::sim
