// Spot VM prices from the Cloud Billing Catalog API: the Compute Engine SKUs
// gpuscaler reads (services.skus.list of service 6F81-5844-456A) and a
// machine type's Spot price composed from its components, as Compute Engine
// bills it: vCPUs x the series' core SKU + memory GiB x its RAM SKU + GPUs x
// the GPU SKU (+ bundled Local SSD GiB x the Local SSD SKU, for the series
// that bundle it). docs/gcp.md ("Prices") names each fact and its source.
//
// Values and pure functions (no I/O, no clock): thread-compatible.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "gpuscaler/model/instance.h"
#include "gpuscaler/model/time.h"
#include "gpuscaler/status.h"

namespace gpuscaler::cloud {

inline constexpr const char* kCloudBillingEndpoint = "https://cloudbilling.googleapis.com/v1/";
// The Cloud Billing Catalog's id of the Compute Engine service.
inline constexpr const char* kComputeEngineServiceId = "6F81-5844-456A";
// The OAuth scope services.skus.list accepts besides cloud-platform.
inline constexpr const char* kCloudBillingReadonlyScope =
    "https://www.googleapis.com/auth/cloud-billing.readonly";
// Hours in Google's billing month: per-month SKU prices (Local SSD, GiBy.mo)
// become per-hour ones by this.
inline constexpr double kGcpHoursPerMonth = 730;

// What a Spot SKU prices.
enum class GcpSpotComponent { kCore, kRam, kGpu, kLocalSsd };

// One Spot SKU reduced to what pricing needs.
struct GcpSpotSku {
  std::string sku_id;
  std::string description;
  GcpSpotComponent component = GcpSpotComponent::kCore;
  // kCore / kRam: the series as the description names it ("G2", "A3",
  // "N1 Predefined"); kGpu: the GPU ("Nvidia L4", "Nvidia H100 80GB Mega",
  // "RTX 6000 96GB"); kLocalSsd: empty.
  std::string name;
  std::vector<std::string> regions;  // serviceRegions
  // USD per vCPU-hour, GiB-hour or GPU-hour (Local SSD: per GiB-month / 730).
  double usd_per_unit_hour = 0;
  WallTime effective{};  // the effectiveTime of the pricing used
};

// One element of ListSkusResponse.skus as a Spot component price, or nullopt
// when it is not one: another usage type than "Preemptible" (except the
// Local SSD SKU, whose description is what names it Spot), a description
// that names no core, RAM, GPU or Local SSD, no pricing, a currency other
// than USD, or a unit that does not fit the component (cores and GPUs "h",
// RAM "GiBy.h", Local SSD "GiBy.mo" or "GiBy.h"). Never an error: most of
// the catalog does not concern us.
std::optional<GcpSpotSku> ParseGcpSpotSku(const nlohmann::json& sku);

// One page of services.skus.list: its Spot component SKUs appended to `out`;
// the nextPageToken ("" on the last page). kTransient when the answer is not
// a ListSkusResponse (no object, `skus` not a list).
Result<std::string> ParseGcpSkuPage(const nlohmann::json& page, std::vector<GcpSpotSku>* out);

// How Compute Engine bills one machine type: its shape and the names of its
// component SKUs.
struct GcpMachinePricing {
  std::string machine_type;
  std::string series;  // core and RAM SKUs: "Spot Preemptible <series> Instance Core|Ram …"
  std::string gpu;     // GPU SKU name; empty without GPUs
  int vcpus = 0;
  double memory_gib = 0;
  int gpu_count = 0;
  double local_ssd_gib = 0;  // bundled Local SSD billed with the machine
};

// The pricing of a catalog instance type, by its machine family (A3 High and
// Mega, A2 Standard, Mega and Ultra, G2, G4; N1 with an attached T4, V100,
// P100 or P4), or nullopt for another family (its SKU names are not known).
std::optional<GcpMachinePricing> GcpMachinePricingFor(const InstanceType& type);

// A machine type's Spot price in a region.
struct GcpComposedPrice {
  std::string machine_type;
  double usd_per_hour = 0;
  WallTime effective{};              // the latest effective time of its components
  std::vector<std::string> sku_ids;  // the components used
};

struct GcpSpotPriceBook {
  std::vector<GcpComposedPrice> prices;  // in the order of `machines`
  // Machine types left out, each with the component it lacks
  // ("a3-highgpu-8g: no Spot Local SSD SKU for us-central1").
  std::vector<std::string> unpriced;
};

// Each machine's Spot price in `region` from `skus`. For each component the
// SKU serving `region` with the fewest serviceRegions wins (a region's own
// SKU over a multi-regional "running in Americas" one), then the latest
// effective time, then the higher price, then the lower skuId. A machine
// missing any component is left out (in `unpriced`), never guessed.
GcpSpotPriceBook ComposeGcpSpotPrices(const std::vector<GcpSpotSku>& skus,
                                      const std::vector<GcpMachinePricing>& machines,
                                      const std::string& region);

}  // namespace gpuscaler::cloud
