// Catalog files: the schema is documented in docs/catalog.md.
#include <set>

#include "gpuscaler/model/catalog.h"
#include "gpuscaler/model/text_file.h"
#include "gpuscaler/model/yaml_document.h"

namespace gpuscaler {
namespace {

constexpr const char* kCatalogApiVersion = "gpuscaler/v1";

void CheckNonNegative(DocReader& r, MapReader& m, std::string_view key, double value) {
  if (m.Has(key) && value < 0) r.ReportAt(m.PathOf(key), "must be >= 0");
}

void CheckPositive(DocReader& r, MapReader& m, std::string_view key, double value) {
  if (m.Has(key) && value <= 0) r.ReportAt(m.PathOf(key), "must be > 0");
}

MigProfile ReadMigProfile(DocReader& r, const DocNode& node, const std::string& path,
                          const GpuModel& gpu) {
  MapReader m(r, node, path, {"name", "compute_slices", "memory_slices", "memory_mib", "starts"});
  m.Require({"name", "compute_slices", "memory_slices", "memory_mib", "starts"});
  MigProfile p;
  m.ReadString("name", &p.name);
  if (m.ReadInt("compute_slices", &p.compute_slices) &&
      (p.compute_slices < 1 || p.compute_slices > kMigComputeSlices)) {
    r.ReportAt(m.PathOf("compute_slices"),
               "must be in 1.." + std::to_string(kMigComputeSlices) + ", got " +
                   std::to_string(p.compute_slices));
  }
  bool width_ok = false;
  if (m.ReadInt("memory_slices", &p.memory_slices)) {
    width_ok = p.memory_slices >= 1 && p.memory_slices <= kMigMemorySlices;
    if (!width_ok) {
      r.ReportAt(m.PathOf("memory_slices"), "must be in 1.." + std::to_string(kMigMemorySlices) +
                                                ", got " + std::to_string(p.memory_slices));
    }
  }
  if (m.ReadInt("memory_mib", &p.memory_mib)) {
    if (p.memory_mib <= 0) {
      r.ReportAt(m.PathOf("memory_mib"), "must be > 0");
    } else if (gpu.memory_mib > 0 && p.memory_mib > gpu.memory_mib) {
      r.ReportAt(m.PathOf("memory_mib"), "exceeds the GPU's memory_mib (" +
                                             std::to_string(gpu.memory_mib) + ")");
    }
  }
  if (const DocNode* starts = m.Find("starts"); starts != nullptr) {
    const std::string spath = m.PathOf("starts");
    r.Remember(spath, starts->mark);
    if (!starts->IsSequence()) {
      r.Report(*starts, spath, "expected a list of integers, got " + starts->Describe());
    } else {
      if (starts->items.empty()) r.Report(*starts, spath, "must list at least one start");
      std::set<int> seen;
      for (size_t i = 0; i < starts->items.size(); ++i) {
        const std::string ipath = IndexPath(spath, i);
        int s = 0;
        if (!r.ToInt(starts->items[i], ipath, &s)) continue;
        if (s < 0 || s >= kMigMemorySlices) {
          r.Report(starts->items[i], ipath,
                   "start " + std::to_string(s) + " is outside memory slices 0.." +
                       std::to_string(kMigMemorySlices - 1));
        } else if (width_ok && s + p.memory_slices > kMigMemorySlices) {
          r.Report(starts->items[i], ipath,
                   "a " + std::to_string(p.memory_slices) + "-slice instance starting at " +
                       std::to_string(s) + " does not fit in " +
                       std::to_string(kMigMemorySlices) + " memory slices");
        } else if (!seen.insert(s).second) {
          r.Report(starts->items[i], ipath, "start " + std::to_string(s) + " is listed twice");
        } else {
          p.allowed_starts.push_back(s);
        }
      }
    }
  }
  return p;
}

GpuModel ReadGpuModel(DocReader& r, const DocNode& node, const std::string& path) {
  MapReader m(r, node, path, {"name", "short_name", "memory_mib", "mig_profiles"});
  m.Require({"name", "memory_mib"});
  GpuModel g;
  m.ReadString("name", &g.name);
  m.ReadString("short_name", &g.short_name);
  if (m.ReadInt("memory_mib", &g.memory_mib)) CheckPositive(r, m, "memory_mib", g.memory_mib);
  std::set<std::string> names;
  m.ForEachItem("mig_profiles", [&](const DocNode& item, const std::string& ipath) {
    MigProfile p = ReadMigProfile(r, item, ipath, g);
    if (!p.name.empty() && !names.insert(p.name).second) {
      r.ReportAt(ipath + ".name", "duplicate MIG profile '" + p.name + "'");
    }
    g.mig_profiles.push_back(std::move(p));
  });
  return g;
}

InstanceType ReadInstanceType(DocReader& r, const DocNode& node, const std::string& path,
                              const Catalog& catalog) {
  MapReader m(r, node, path,
              {"name", "family", "gpu_model", "gpu_count", "gpu_memory_mib", "vcpus",
               "memory_mib", "local_nvme_gb", "network_mbps"});
  m.Require({"name", "vcpus", "memory_mib"});
  InstanceType t;
  m.ReadString("name", &t.name);
  if (!m.ReadString("family", &t.family)) t.family = t.name.substr(0, t.name.find('.'));
  const GpuModel* gpu = nullptr;
  if (m.ReadString("gpu_model", &t.gpu_model) && !t.gpu_model.empty()) {
    gpu = catalog.FindGpuModel(t.gpu_model);
    if (gpu == nullptr) {
      std::vector<std::string_view> known;
      for (const GpuModel& g : catalog.gpu_models) known.push_back(g.name);
      std::string message = "unknown gpu_model '" + t.gpu_model + "'";
      const std::string suggestion = ClosestName(t.gpu_model, known);
      if (!suggestion.empty()) message += " (did you mean '" + suggestion + "'?)";
      r.ReportAt(m.PathOf("gpu_model"), message);
    } else {
      t.gpu_model = gpu->name;  // short names resolve to the canonical one
    }
  }
  if (m.ReadInt("gpu_count", &t.gpu_count)) CheckNonNegative(r, m, "gpu_count", t.gpu_count);
  if (t.gpu_model.empty() && t.gpu_count > 0) {
    r.ReportAt(m.PathOf("gpu_count"), "needs a gpu_model");
  } else if (!t.gpu_model.empty() && t.gpu_count == 0 && !m.Has("gpu_count")) {
    r.Report(node, m.PathOf("gpu_count"), "required when gpu_model is set");
  } else if (!t.gpu_model.empty() && m.Has("gpu_count") && t.gpu_count == 0) {
    r.ReportAt(m.PathOf("gpu_count"), "must be > 0 when gpu_model is set");
  }
  if (m.ReadInt("gpu_memory_mib", &t.gpu_memory_mib)) {
    CheckNonNegative(r, m, "gpu_memory_mib", t.gpu_memory_mib);
  } else if (gpu != nullptr && !m.Has("gpu_memory_mib")) {
    t.gpu_memory_mib = gpu->memory_mib;
  }
  if (m.ReadInt("vcpus", &t.vcpus)) CheckPositive(r, m, "vcpus", t.vcpus);
  if (m.ReadInt("memory_mib", &t.memory_mib)) CheckPositive(r, m, "memory_mib", t.memory_mib);
  if (m.ReadInt("local_nvme_gb", &t.local_nvme_gb)) {
    CheckNonNegative(r, m, "local_nvme_gb", t.local_nvme_gb);
  }
  if (m.ReadInt("network_mbps", &t.network_mbps)) {
    CheckNonNegative(r, m, "network_mbps", t.network_mbps);
  }
  return t;
}

// A map from instance type to a non-negative number.
// `on_demand`, when given, holds the types listed with an on-demand price
// (valid or not, so a bad price is one problem, not one per map).
std::map<std::string, double> ReadTypeNumbers(DocReader& r, MapReader& parent,
                                              std::string_view key, const Catalog& catalog,
                                              const std::set<std::string>* on_demand,
                                              std::set<std::string>* listed = nullptr) {
  std::map<std::string, double> out;
  const DocNode* node = parent.Find(key);
  if (node == nullptr) return out;
  MapReader m(r, *node, parent.PathOf(key), {});
  std::vector<std::string_view> known;
  for (const InstanceType& t : catalog.instance_types) known.push_back(t.name);
  for (const auto& [k, v] : m.entries()) {
    const std::string path = m.PathOf(k->scalar);
    r.Remember(path, v->mark);
    if (catalog.FindInstanceType(k->scalar) == nullptr) {
      std::string message = "unknown instance type '" + k->scalar + "'";
      const std::string suggestion = ClosestName(k->scalar, known);
      if (!suggestion.empty()) message += " (did you mean '" + suggestion + "'?)";
      r.Report(*k, path, message);
      continue;
    }
    if (listed != nullptr) listed->insert(k->scalar);
    double value = 0;
    if (!r.ToNumber(*v, path, &value)) continue;
    if (value < 0) {
      r.Report(*v, path, "must be >= 0, got " + v->scalar);
      continue;
    }
    if (on_demand != nullptr && on_demand->count(k->scalar) == 0) {
      r.Report(*k, path, "has no on-demand price in this region");
      continue;
    }
    out[k->scalar] = value;
  }
  return out;
}

RegionPrices ReadRegion(DocReader& r, const DocNode& node, const std::string& path,
                        const Catalog& catalog, std::set<std::string>* all_zones) {
  MapReader m(r, node, path,
              {"region", "zones", "on_demand_usd_per_hour", "spot_usd_per_hour",
               "spot_interruptions_per_hour"});
  m.Require({"region", "zones", "on_demand_usd_per_hour"});
  RegionPrices p;
  m.ReadString("region", &p.region);
  if (m.ReadStringList("zones", &p.zones)) {
    if (p.zones.empty() && m.Has("zones")) r.ReportAt(m.PathOf("zones"), "must list a zone");
    for (size_t i = 0; i < p.zones.size(); ++i) {
      const std::string& z = p.zones[i];
      const std::string zpath = IndexPath(m.PathOf("zones"), i);
      if (!all_zones->insert(z).second) {
        r.ReportAt(zpath, "duplicate zone '" + z + "'");
      } else if (!p.region.empty() && z.rfind(p.region, 0) != 0) {
        r.ReportAt(zpath, "zone '" + z + "' is not in region '" + p.region + "'");
      }
    }
  }
  std::set<std::string> priced;
  p.on_demand_usd_per_hour =
      ReadTypeNumbers(r, m, "on_demand_usd_per_hour", catalog, nullptr, &priced);
  p.spot_usd_per_hour = ReadTypeNumbers(r, m, "spot_usd_per_hour", catalog, &priced);
  p.spot_interruptions_per_hour =
      ReadTypeNumbers(r, m, "spot_interruptions_per_hour", catalog, &priced);
  return p;
}

// A top-level map of instance family -> duration (launch_latency,
// wake_latency); a family no instance type has is an error.
void ReadFamilyLatencies(DocReader& r, MapReader& top, const char* key, const Catalog& c,
                         std::map<std::string, Seconds>* out) {
  const DocNode* l = top.Find(key);
  if (l == nullptr) return;
  MapReader m(r, *l, key, {});
  std::set<std::string> families;
  for (const InstanceType& t : c.instance_types) families.insert(t.family);
  for (const auto& [k, v] : m.entries()) {
    const std::string path = m.PathOf(k->scalar);
    Seconds latency;
    if (!r.ToDuration(*v, path, &latency)) continue;
    if (families.count(k->scalar) == 0) {
      r.Report(*k, path, "no instance type has family '" + k->scalar + "'");
      continue;
    }
    (*out)[k->scalar] = latency;
  }
}

void ReadCatalog(DocReader& r, const DocNode& root, Catalog* c) {
  MapReader top(r, root, "",
                {"apiVersion", "kind", "provider", "source", "as_of", "defaults", "launch_latency",
                 "wake_latency", "gpu_models", "instance_types", "regions"});
  if (!root.IsMapping()) {
    if (root.IsNull()) r.Report(SourceMark{1, 1}, "", "the catalog is empty");
    return;
  }
  top.Require({"apiVersion", "kind", "provider", "source", "as_of", "instance_types", "regions"});
  std::string api_version, kind;
  if (top.ReadString("apiVersion", &api_version) && api_version != kCatalogApiVersion) {
    r.ReportAt("apiVersion", "must be " + std::string(kCatalogApiVersion) + ", got '" +
                                 api_version + "'");
  }
  if (top.ReadString("kind", &kind) && kind != "Catalog") {
    r.ReportAt("kind", "must be Catalog, got '" + kind + "'");
  }
  top.ReadString("provider", &c->provider);
  if (top.ReadString("source", &c->source) && c->source.empty()) {
    r.ReportAt("source", "must say where the numbers come from");
  }
  if (top.ReadString("as_of", &c->as_of)) {
    WallTime t;
    if (!ParseRfc3339(c->as_of, &t)) {
      r.ReportAt("as_of", "expected a date like 2026-07-20, got '" + c->as_of + "'");
    }
  }

  if (const DocNode* d = top.Find("defaults"); d != nullptr) {
    MapReader m(r, *d, "defaults",
                {"spot_discount", "spot_interruptions_per_hour", "launch_latency", "wake_latency",
                 "volume_usd_per_gib_month", "volume_gib"});
    if (m.ReadNumber("spot_discount", &c->default_spot_discount) &&
        (c->default_spot_discount < 0 || c->default_spot_discount >= 1)) {
      r.ReportAt("defaults.spot_discount", "must be in [0, 1)");
    }
    if (m.ReadNumber("spot_interruptions_per_hour", &c->default_spot_interruptions_per_hour)) {
      CheckNonNegative(r, m, "spot_interruptions_per_hour", c->default_spot_interruptions_per_hour);
    }
    m.ReadDuration("launch_latency", &c->default_launch_latency);
    m.ReadDuration("wake_latency", &c->default_wake_latency);
    // Volumes are priced per GiB-month (EBS, persistent disk); a month is 730 hours.
    if (double per_month = 0; m.ReadNumber("volume_usd_per_gib_month", &per_month)) {
      CheckNonNegative(r, m, "volume_usd_per_gib_month", per_month);
      c->volume_usd_per_gib_hour = per_month / 730;
    }
    if (m.ReadInt("volume_gib", &c->default_volume_gib) && c->default_volume_gib <= 0) {
      r.ReportAt("defaults.volume_gib", "must be > 0");
    }
  }

  std::set<std::string> gpu_names;
  top.ForEachItem("gpu_models", [&](const DocNode& item, const std::string& path) {
    GpuModel g = ReadGpuModel(r, item, path);
    if (!g.name.empty() && !gpu_names.insert(g.name).second) {
      r.ReportAt(path + ".name", "duplicate GPU model '" + g.name + "'");
    }
    if (!g.short_name.empty() && !gpu_names.insert("short:" + g.short_name).second) {
      r.ReportAt(path + ".short_name", "duplicate short_name '" + g.short_name + "'");
    }
    c->gpu_models.push_back(std::move(g));
  });

  std::set<std::string> type_names;
  top.ForEachItem("instance_types", [&](const DocNode& item, const std::string& path) {
    InstanceType t = ReadInstanceType(r, item, path, *c);
    if (!t.name.empty() && !type_names.insert(t.name).second) {
      r.ReportAt(path + ".name", "duplicate instance type '" + t.name + "'");
      return;
    }
    c->instance_types.push_back(std::move(t));
  });

  ReadFamilyLatencies(r, top, "launch_latency", *c, &c->launch_latency);
  ReadFamilyLatencies(r, top, "wake_latency", *c, &c->wake_latency);

  std::set<std::string> regions, zones;
  top.ForEachItem("regions", [&](const DocNode& item, const std::string& path) {
    RegionPrices p = ReadRegion(r, item, path, *c, &zones);
    if (!p.region.empty() && !regions.insert(p.region).second) {
      r.ReportAt(path + ".region", "duplicate region '" + p.region + "'");
      return;
    }
    c->regions.push_back(std::move(p));
  });
}

}  // namespace

Result<Catalog> ParseCatalog(const std::string& text, const std::string& file_name) {
  DocReader reader(file_name);
  DocNode root;
  Catalog catalog;
  if (reader.Parse(text, &root)) ReadCatalog(reader, root, &catalog);
  if (!reader.ok()) return Error::Config(JoinProblems(reader.SortedProblems()));
  return catalog;
}

Result<Catalog> LoadCatalogFile(const std::string& path) {
  Result<std::string> text = ReadConfigFile(path);
  if (!text) return Error::Config(path + ": cannot read: " + text.error().message());
  return ParseCatalog(*text, path);
}

}  // namespace gpuscaler
