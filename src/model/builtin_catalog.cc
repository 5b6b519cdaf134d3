#include "gpuscaler/model/builtin_catalog.h"

#include <filesystem>
#include <utility>

#include "gpuscaler/model/catalog.h"

namespace gpuscaler {
namespace {

InstanceType Type(std::string name, std::string family, std::string gpu, int gpus, int64_t gpu_mib, int vcpus,
                  int64_t mem_mib) {
  InstanceType t;
  t.name = std::move(name);
  t.family = std::move(family);
  t.gpu_model = std::move(gpu);
  t.gpu_count = gpus;
  t.gpu_memory_mib = gpu_mib;
  t.vcpus = vcpus;
  t.memory_mib = mem_mib;
  return t;
}

}  // namespace

Catalog BuiltinCatalog() {
  Catalog c;
  c.provider = "aws";
  c.source =
      "built-in: AWS us-east-1 Linux on-demand list prices and Spot Instance Advisor savings (2025-06-28)";
  c.as_of = "2026-07-20";
  c.gpu_models = {{"NVIDIA-A10G", "a10g", 22888, {}},
                  {"NVIDIA-L4", "l4", 22888, {}},
                  {"NVIDIA-A100-SXM4-40GB", "a100-40gb", 40960, {}},
                  {"NVIDIA-H100-80GB-HBM3", "h100-80gb", 81920, {}}};
  c.instance_types = {Type("g5.xlarge", "g5", "NVIDIA-A10G", 1, 22888, 4, 16384),
                      Type("g5.2xlarge", "g5", "NVIDIA-A10G", 1, 22888, 8, 32768),
                      Type("g5.12xlarge", "g5", "NVIDIA-A10G", 4, 22888, 48, 196608),
                      Type("g5.48xlarge", "g5", "NVIDIA-A10G", 8, 22888, 192, 786432),
                      Type("g6.xlarge", "g6", "NVIDIA-L4", 1, 22888, 4, 16384),
                      Type("g6.12xlarge", "g6", "NVIDIA-L4", 4, 22888, 48, 196608),
                      Type("g6.48xlarge", "g6", "NVIDIA-L4", 8, 22888, 192, 786432),
                      Type("p4d.24xlarge", "p4d", "NVIDIA-A100-SXM4-40GB", 8, 40960, 96, 1179648),
                      Type("p5.48xlarge", "p5", "NVIDIA-H100-80GB-HBM3", 8, 81920, 192, 2097152)};
  RegionPrices r;
  r.region = "us-east-1";
  r.zones = {"us-east-1a", "us-east-1b", "us-east-1c", "us-east-1d", "us-east-1e", "us-east-1f"};
  r.on_demand_usd_per_hour = {{"g5.xlarge", 1.006},     {"g5.2xlarge", 1.212},       {"g5.12xlarge", 5.672},
                              {"g5.48xlarge", 16.288},  {"g6.xlarge", 0.8048},       {"g6.12xlarge", 4.6016},
                              {"g6.48xlarge", 13.3504}, {"p4d.24xlarge", 21.957642}, {"p5.48xlarge", 55.04}};
  r.spot_usd_per_hour = {{"g5.xlarge", 0.4125},   {"g5.2xlarge", 0.509},   {"g5.12xlarge", 2.3822},
                         {"g5.48xlarge", 4.7235}, {"g6.xlarge", 0.4104},   {"g6.12xlarge", 1.8867},
                         {"g6.48xlarge", 4.1386}, {"p4d.24xlarge", 7.246}, {"p5.48xlarge", 26.4192}};
  for (const auto& [type, price] : r.on_demand_usd_per_hour) r.spot_interruptions_per_hour[type] = 0.000347;
  c.regions.push_back(std::move(r));
  c.launch_latency = {
      {"g5", Seconds(180)}, {"g6", Seconds(180)}, {"p4d", Seconds(360)}, {"p5", Seconds(480)}};
  return c;
}

Catalog DefaultCatalog(const std::string& source_dir, std::string* source) {
  std::vector<std::filesystem::path> candidates;
  if (!source_dir.empty())
    candidates.push_back(std::filesystem::path(source_dir) / "config/catalogs/aws.yaml");
  std::error_code ec;
  std::filesystem::path dir = std::filesystem::current_path(ec);
  for (int up = 0; up < 4 && !ec && !dir.empty(); ++up) {
    candidates.push_back(dir / "config/catalogs/aws.yaml");
    if (dir == dir.parent_path()) break;
    dir = dir.parent_path();
  }
  for (const auto& path : candidates) {
    if (!std::filesystem::exists(path, ec)) continue;
    Result<Catalog> loaded = LoadCatalogFile(path.string());
    if (loaded) {
      *source = path.string();
      return std::move(loaded).value();
    }
  }
  *source = "built-in";
  return BuiltinCatalog();
}

}  // namespace gpuscaler
