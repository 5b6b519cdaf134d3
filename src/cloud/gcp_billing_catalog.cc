#include "gpuscaler/cloud/gcp_billing_catalog.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <map>

#include "gpuscaler/model/json_fields.h"

namespace gpuscaler::cloud {
namespace {

using nlohmann::json;

constexpr std::string_view kSpotPrefix = "Spot Preemptible ";
constexpr std::string_view kAttachedToSpot = " attached to Spot Preemptible VMs";
constexpr std::string_view kSpotLocalSsd = "SSD backed Local Storage attached to Spot Preemptible VMs";

bool StartsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool EndsWith(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}

struct Classified {
  GcpSpotComponent component;
  std::string name;
};

// What a Spot SKU's description says it prices. Google's forms:
//   "Spot Preemptible G2 Instance Core running in Americas" (and "… Ram …"),
//   "Nvidia L4 GPU attached to Spot Preemptible VMs running in Americas",
//   "RTX 6000 96GB attached to Spot Preemptible VMs running in …" (no "GPU"),
//   "SSD backed Local Storage attached to Spot Preemptible VMs [in <city>]";
// "Spot Preemptible <GPU> GPU running in …" is read as a GPU too.
std::optional<Classified> Classify(std::string_view d, std::string_view resource_group) {
  if (StartsWith(d, kSpotLocalSsd)) return Classified{GcpSpotComponent::kLocalSsd, ""};
  if (const size_t at = d.find(kAttachedToSpot); at != std::string_view::npos) {
    std::string_view name = d.substr(0, at);
    if (EndsWith(name, " GPU")) name.remove_suffix(4);
    if (name.empty() || resource_group != "GPU") return std::nullopt;
    return Classified{GcpSpotComponent::kGpu, std::string(name)};
  }
  if (!StartsWith(d, kSpotPrefix)) return std::nullopt;
  d.remove_prefix(kSpotPrefix.size());
  for (const auto& [marker, component] :
       {std::pair{std::string_view(" Instance Core"), GcpSpotComponent::kCore},
        std::pair{std::string_view(" Instance Ram"), GcpSpotComponent::kRam}}) {
    const size_t at = d.find(marker);
    if (at == std::string_view::npos || at == 0) continue;
    const size_t end = at + marker.size();
    if (end != d.size() && d[end] != ' ') continue;  // "Instance Cores…" is something else
    return Classified{component, std::string(d.substr(0, at))};
  }
  if (const size_t at = d.find(" GPU running in ");
      at != std::string_view::npos && at > 0 && resource_group == "GPU") {
    return Classified{GcpSpotComponent::kGpu, std::string(d.substr(0, at))};
  }
  return std::nullopt;
}

// Hours one unit of `usage_unit` stands for in a per-hour price (per GiB-month
// -> per GiB-hour divides by 730); nullopt when the unit does not fit.
std::optional<double> HoursPerUnit(GcpSpotComponent c, std::string_view usage_unit) {
  switch (c) {
    case GcpSpotComponent::kCore:
    case GcpSpotComponent::kGpu:
      if (usage_unit == "h") return 1.0;
      break;
    case GcpSpotComponent::kRam:
      if (usage_unit == "GiBy.h") return 1.0;
      break;
    case GcpSpotComponent::kLocalSsd:
      if (usage_unit == "GiBy.h") return 1.0;
      if (usage_unit == "GiBy.mo") return kGcpHoursPerMonth;
      break;
  }
  return std::nullopt;
}

// Money {currencyCode, units (int64, a JSON string), nanos} in USD.
std::optional<double> UsdOf(const json& money) {
  if (StringAt(money, "currencyCode") != "USD") return std::nullopt;
  int64_t units = 0;
  if (money.contains("units")) {
    const json& u = money["units"];
    if (u.is_number_integer()) {
      units = u.get<int64_t>();
    } else if (u.is_string()) {
      const std::string& s = u.get_ref<const std::string&>();
      char* end = nullptr;
      errno = 0;
      units = std::strtoll(s.c_str(), &end, 10);
      if (s.empty() || *end != '\0' || errno != 0) return std::nullopt;
    } else {
      return std::nullopt;
    }
  }
  const int64_t nanos = IntAt(money, "nanos", 0);
  const double usd = static_cast<double>(units) + static_cast<double>(nanos) / 1e9;
  if (usd < 0) return std::nullopt;
  return usd;
}

// A number field, 0 when absent or not a number.
double NumberAt(const json& j, const char* key) {
  if (!j.is_object()) return 0;
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : 0;
}

// The family of a machine type: "a3-highgpu-8g" -> "a3-highgpu".
std::string FamilyOf(const InstanceType& t) {
  if (!t.family.empty()) return t.family;
  const size_t dash = t.name.rfind('-');
  return dash == std::string::npos ? t.name : t.name.substr(0, dash);
}

// The GPU SKU name of a GPU attached to an N1 VM, from the catalog's model
// name ("NVIDIA-Tesla-T4", "nvidia-tesla-v100").
std::string N1GpuSkuName(const std::string& model) {
  std::string upper;
  for (char c : model) upper += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  std::vector<std::string> tokens;
  std::string token;
  for (char c : upper + "-") {
    if (c == '-' || c == '_' || c == ' ') {
      if (!token.empty()) tokens.push_back(token);
      token.clear();
    } else {
      token += c;
    }
  }
  for (const char* known : {"T4", "V100", "P100", "P4"}) {
    if (std::find(tokens.begin(), tokens.end(), known) != tokens.end())
      return std::string("Nvidia Tesla ") + known;
  }
  return "";
}

struct FamilyRule {
  std::string_view family;
  std::string_view series;
  std::string_view gpu;
};

// Accelerator-optimized families: the series their core and RAM SKUs name,
// and their GPU SKU (docs/gcp.md, "Prices").
constexpr std::array<FamilyRule, 7> kFamilies = {{
    {"a3-highgpu", "A3", "Nvidia H100 80GB"},
    {"a3-megagpu", "A3", "Nvidia H100 80GB Mega"},
    {"a2-highgpu", "A2", "Nvidia Tesla A100"},
    {"a2-megagpu", "A2", "Nvidia Tesla A100"},
    {"a2-ultragpu", "A2", "Nvidia Tesla A100 80GB"},
    {"g2-standard", "G2", "Nvidia L4"},
    {"g4-standard", "G4", "RTX 6000 96GB"},
}};

// Which of two SKUs serving the same region wins (see the header).
bool Better(const GcpSpotSku& a, const GcpSpotSku& b) {
  if (a.regions.size() != b.regions.size()) return a.regions.size() < b.regions.size();
  if (a.effective != b.effective) return a.effective > b.effective;
  if (a.usd_per_unit_hour != b.usd_per_unit_hour) return a.usd_per_unit_hour > b.usd_per_unit_hour;
  return a.sku_id < b.sku_id;
}

std::string Describe(GcpSpotComponent c, const std::string& name) {
  switch (c) {
    case GcpSpotComponent::kCore:
      return name + " core";
    case GcpSpotComponent::kRam:
      return name + " RAM";
    case GcpSpotComponent::kGpu:
      return name + " GPU";
    case GcpSpotComponent::kLocalSsd:
      return "Local SSD";
  }
  return name;
}

}  // namespace

std::optional<GcpSpotSku> ParseGcpSpotSku(const json& sku) {
  if (!sku.is_object()) return std::nullopt;
  const json& category = ObjectAt(sku, "category");
  const std::string description = StringAt(sku, "description");
  std::optional<Classified> what = Classify(description, StringAt(category, "resourceGroup"));
  if (!what) return std::nullopt;
  const std::string usage_type = StringAt(category, "usageType");
  const bool spot = usage_type == "Preemptible" ||
                    (what->component == GcpSpotComponent::kLocalSsd && usage_type == "OnDemand");
  if (!spot) return std::nullopt;

  // The pricing in force: the latest effectiveTime (one entry unless a time
  // range was asked for).
  const json* pricing = nullptr;
  WallTime effective{};
  for (const json& p : ArrayAt(sku, "pricingInfo")) {
    WallTime t;
    if (!ParseRfc3339(StringAt(p, "effectiveTime"), &t)) continue;
    if (pricing == nullptr || t > effective) {
      pricing = &p;
      effective = t;
    }
  }
  if (pricing == nullptr) return std::nullopt;
  const json& expression = ObjectAt(*pricing, "pricingExpression");
  const std::optional<double> hours = HoursPerUnit(what->component, StringAt(expression, "usageUnit"));
  if (!hours) return std::nullopt;
  // The first tier (from usage 0): one VM's rate.
  const json* tier = nullptr;
  for (const json& r : ArrayAt(expression, "tieredRates")) {
    if (!r.is_object()) continue;
    if (tier == nullptr || NumberAt(r, "startUsageAmount") < NumberAt(*tier, "startUsageAmount")) tier = &r;
  }
  if (tier == nullptr) return std::nullopt;
  const std::optional<double> usd = UsdOf(ObjectAt(*tier, "unitPrice"));
  if (!usd) return std::nullopt;

  GcpSpotSku out;
  out.sku_id = StringAt(sku, "skuId");
  out.description = description;
  out.component = what->component;
  out.name = std::move(what->name);
  for (const json& r : ArrayAt(sku, "serviceRegions")) {
    if (r.is_string()) out.regions.push_back(r.get<std::string>());
  }
  out.usd_per_unit_hour = *usd / *hours;
  out.effective = effective;
  return out;
}

Result<std::string> ParseGcpSkuPage(const json& page, std::vector<GcpSpotSku>* out) {
  if (!page.is_object())
    return Error::Transient("Cloud Billing Catalog: the answer is not a ListSkusResponse");
  if (page.contains("skus") && !page["skus"].is_array())
    return Error::Transient("Cloud Billing Catalog: `skus` is not a list");
  for (const json& sku : ArrayAt(page, "skus")) {
    if (std::optional<GcpSpotSku> s = ParseGcpSpotSku(sku)) out->push_back(std::move(*s));
  }
  return StringAt(page, "nextPageToken");
}

std::optional<GcpMachinePricing> GcpMachinePricingFor(const InstanceType& type) {
  GcpMachinePricing p;
  p.machine_type = type.name;
  p.vcpus = type.vcpus;
  p.memory_gib = static_cast<double>(type.memory_mib) / 1024.0;
  p.gpu_count = type.gpu_count;
  const std::string family = FamilyOf(type);
  for (const FamilyRule& rule : kFamilies) {
    if (family != rule.family) continue;
    p.series = rule.series;
    if (type.gpu_count > 0) p.gpu = rule.gpu;
    // These series bill their bundled Local SSD with the machine.
    p.local_ssd_gib = static_cast<double>(type.local_nvme_gb);
    return p;
  }
  if (StartsWith(family, "n1-")) {
    p.series = "N1 Predefined";
    if (type.gpu_count > 0) {
      p.gpu = N1GpuSkuName(type.gpu_model);
      if (p.gpu.empty()) return std::nullopt;
    }
    return p;
  }
  return std::nullopt;
}

GcpSpotPriceBook ComposeGcpSpotPrices(const std::vector<GcpSpotSku>& skus,
                                      const std::vector<GcpMachinePricing>& machines,
                                      const std::string& region) {
  // (component, name) -> the best SKU serving `region`.
  std::map<std::pair<GcpSpotComponent, std::string>, const GcpSpotSku*> best;
  for (const GcpSpotSku& s : skus) {
    if (std::find(s.regions.begin(), s.regions.end(), region) == s.regions.end()) continue;
    const GcpSpotSku*& slot = best[{s.component, s.name}];
    if (slot == nullptr || Better(s, *slot)) slot = &s;
  }
  GcpSpotPriceBook book;
  for (const GcpMachinePricing& m : machines) {
    struct Need {
      GcpSpotComponent component;
      std::string name;
      double quantity;
    };
    std::vector<Need> needs = {{GcpSpotComponent::kCore, m.series, static_cast<double>(m.vcpus)},
                               {GcpSpotComponent::kRam, m.series, m.memory_gib}};
    if (m.gpu_count > 0) needs.push_back({GcpSpotComponent::kGpu, m.gpu, static_cast<double>(m.gpu_count)});
    if (m.local_ssd_gib > 0) needs.push_back({GcpSpotComponent::kLocalSsd, "", m.local_ssd_gib});
    GcpComposedPrice price;
    price.machine_type = m.machine_type;
    std::string missing;
    for (const Need& n : needs) {
      auto it = best.find({n.component, n.name});
      if (it == best.end()) {
        missing = Describe(n.component, n.name);
        break;
      }
      price.usd_per_hour += n.quantity * it->second->usd_per_unit_hour;
      price.effective = std::max(price.effective, it->second->effective);
      price.sku_ids.push_back(it->second->sku_id);
    }
    if (!missing.empty()) {
      book.unpriced.push_back(m.machine_type + ": no Spot " + missing + " SKU for " + region);
      continue;
    }
    book.prices.push_back(std::move(price));
  }
  return book;
}

}  // namespace gpuscaler::cloud
