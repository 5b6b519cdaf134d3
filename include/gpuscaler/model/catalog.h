// The instance catalog: GPU models, instance types and their list prices per
// region, loaded from config/catalogs/*.yaml (or .json). It is the static
// price source and the fallback when live price signals are stale.
//
// Loading reports every problem as "file:line:col: field.path: message".
// A Catalog is an immutable value once loaded; const methods are thread-safe.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "gpuscaler/model/gpu.h"
#include "gpuscaler/model/instance.h"
#include "gpuscaler/status.h"

namespace gpuscaler {

struct RegionPrices {
  std::string region;               // "us-east-1"
  std::vector<std::string> zones;   // "us-east-1a", …
  // Instance type -> on-demand list price (USD/h, Linux).
  std::map<std::string, double> on_demand_usd_per_hour;
  // Instance type -> typical spot price (USD/h). Absent: no spot price known;
  // the catalog's spot_discount default applies.
  std::map<std::string, double> spot_usd_per_hour;
  // Instance type -> expected spot interruptions per node-hour.
  std::map<std::string, double> spot_interruptions_per_hour;
};

struct Catalog {
  std::string provider;     // "aws"
  std::string source;       // where the numbers come from
  std::string as_of;        // date of the numbers, "2026-07-20"
  std::vector<GpuModel> gpu_models;
  std::vector<InstanceType> instance_types;
  std::vector<RegionPrices> regions;
  // Used where a region lists no spot price for a type: spot = on-demand × (1 - discount).
  double default_spot_discount = 0.6;
  double default_spot_interruptions_per_hour = 0.01;
  // Family -> typical launch-to-Ready latency.
  std::map<std::string, Seconds> launch_latency;
  Seconds default_launch_latency{240};
  // Family -> typical start-to-Ready latency of a stopped (warm) node.
  std::map<std::string, Seconds> wake_latency;
  Seconds default_wake_latency{60};
  // What a stopped node costs: its volumes, USD per GiB-hour, and the
  // volume size of a node whose pool's template names none.
  double volume_usd_per_gib_hour = 0.08 / 730;
  int default_volume_gib = 100;

  const InstanceType* FindInstanceType(const std::string& name) const;
  const GpuModel* FindGpuModel(const std::string& name_or_short_name) const;
  // Every (type × zone × capacity type) the catalog can price, in a stable
  // order (region, type, zone, on-demand before spot). `regions` empty: all.
  std::vector<Offering> Offerings(const std::vector<std::string>& regions = {}) const;
};

// Reads and validates a catalog file: strict JSON when its name ends in
// .json, YAML otherwise, within the caps of config_limits.h (yaml_document.h).
Result<Catalog> LoadCatalogFile(const std::string& path);
// Same, from text; `file_name` names the file in problems and picks the format.
Result<Catalog> ParseCatalog(const std::string& text, const std::string& file_name);

}  // namespace gpuscaler
