#!/usr/bin/env python3
"""Generates config/catalogs/aws.yaml from the public data in ../shared.

Inputs (read at generation time; the generated YAML is committed):
  - ../shared/data/catalog/aws_gpu_instance_types.csv: GPU specs and the
    us-east-1 on-demand prices (Karpenter's generated pricing table, generated
    2026-07-20T13:44:30Z; see ../shared/data/README.md section 3.1).
  - ../shared/data/prices/aws_spot_advisor_gpu_2025-06-28_primary.csv: the AWS
    Spot Instance Advisor (savings vs on-demand and interruption band per
    region and type; README section 2.4).
  - REGIONAL_ON_DEMAND / REGIONAL_NOT_OFFERED below: on-demand list prices
    for us-west-2 and eu-west-1 and the types AWS does not sell there, kept
    by hand (see the comment there for their source).
  - CPU_TYPES below: CPU-only types (m/c/r, 6th and 7th generation Intel)
    with us-east-1 prices, kept by hand from the same Karpenter commit as the
    GPU table. Nothing is downloaded.

Usage: scripts/catalog/gen_aws_catalog.py [--shared DIR] [--out FILE]
"""

import argparse
import csv
import os
import sys
import textwrap

from catalog_yaml import fmt_price, gpu_model_lines, write_catalog

FAMILIES = ["p5", "p5e", "p5en", "p4d", "p4de", "p3", "p3dn", "g6", "g6e", "g5", "g4dn"]

# Karpenter's short GPU name (column gpu_name) + memory -> the GPU model as
# NVIDIA GPU feature discovery's nvidia.com/gpu.product label spells it.
GPU_MODELS = {
    ("h100", 81920): ("NVIDIA-H100-80GB-HBM3", "h100-80gb"),
    ("h200", 144384): ("NVIDIA-H200", "h200-141gb"),
    ("a100", 40960): ("NVIDIA-A100-SXM4-40GB", "a100-40gb"),
    ("a100", 81920): ("NVIDIA-A100-SXM4-80GB", "a100-80gb"),
    ("v100", 16384): ("Tesla-V100-SXM2-16GB", "v100-16gb"),
    ("v100", 32768): ("Tesla-V100-SXM2-32GB", "v100-32gb"),
    ("l4", 22888): ("NVIDIA-L4", "l4"),
    ("l40s", 45776): ("NVIDIA-L40S", "l40s"),
    ("a10g", 22888): ("NVIDIA-A10G", "a10g"),
    ("t4", 16384): ("Tesla-T4", "t4"),
}

LAUNCH_LATENCY = {  # typical request-to-Ready times, by family (estimates)
    "p5": "8m", "p5e": "8m", "p5en": "8m", "p4d": "6m", "p4de": "6m",
    "p3": "5m", "p3dn": "5m", "g6": "3m", "g6e": "3m", "g5": "3m", "g4dn": "3m",
}

REGIONS = [
    ("us-east-1", ["us-east-1a", "us-east-1b", "us-east-1c", "us-east-1d", "us-east-1e", "us-east-1f"]),
    ("us-west-2", ["us-west-2a", "us-west-2b", "us-west-2c", "us-west-2d"]),
    ("eu-west-1", ["eu-west-1a", "eu-west-1b", "eu-west-1c"]),
]

# On-demand Linux list prices (USD/h) outside us-east-1, transcribed by hand
# from skypilot-org/skypilot-catalog catalogs/v8/aws/vms.csv, column Price
# (SkyPilot fills it from the AWS Price List API), stored copy at commit
# 00148f2af3672e2229b4f7bf8157d5a3f36e3c35, read 2026-12-02. The file has one
# row per (instance type, AZ ID) with the same Price on every row of a region.
# The copy does not record when SkyPilot fetched the prices; its us-east-1 rows
# equal the Karpenter table above (p5.48xlarge 55.04, p4d.24xlarge 21.957642,
# g6.xlarge 0.8048, ...), so they are taken as of the same date, 2026-07-20.
#
# Every type of FAMILIES that has a us-east-1 price was looked up in both
# regions. A type with no row for a region is listed in REGIONAL_NOT_OFFERED;
# main() refuses to run if a type is in neither table. p5e.48xlarge has no
# price in any region of the file (and none in Karpenter's us-east-1 table), so
# the catalog leaves it out everywhere. Local Zone rows (usw2-lax1-az*) are
# ignored.
#
# Not modelled: per-AZ availability. The catalog offers a type in every zone of
# a region, but the file lists some types in only some AZ IDs (eu-west-1:
# p4d.24xlarge in euw1-az2 only, p3dn.24xlarge in euw1-az1/az2, p3.* in
# euw1-az2/az3; us-west-2: p3.*, g5.* and p4de.24xlarge in usw2-az1..az3,
# p3dn.24xlarge in usw2-az1/az3, p5en.48xlarge in usw2-az2..az4). AZ IDs map
# to the account's AZ names differently per account, so they cannot be written
# as zone names.
#
# Prices are copied digit for digit: the file gives p4d.24xlarge as 21.95764 in
# us-west-2 but 21.957642 in us-east-1, and the tables keep that difference.
#
# Not used: the file's SpotPrice column (one point-in-time price per AZ).
# Spot prices come from the Spot Instance Advisor, as for us-east-1; it lists
# every type offered in these two regions except p5.4xlarge in us-west-2,
# whose SpotPrice is empty in the file too (that type uses the defaults).
VMS_CSV = "skypilot-org/skypilot-catalog catalogs/v8/aws/vms.csv @00148f2a"
REGIONAL_ON_DEMAND_SOURCE = {
    "us-west-2": f"AWS Price List API via {VMS_CSV} (read 2026-12-02)",
    "eu-west-1": f"AWS Price List API via {VMS_CSV} (read 2026-12-02)",
}
REGIONAL_ON_DEMAND = {
    "us-west-2": {
        "p5.4xlarge": 6.88, "p5.48xlarge": 55.04, "p5en.48xlarge": 63.296,
        "p4d.24xlarge": 21.95764, "p4de.24xlarge": 27.44705,
        "p3.2xlarge": 3.06, "p3.8xlarge": 12.24, "p3.16xlarge": 24.48, "p3dn.24xlarge": 31.212,
        "g6.xlarge": 0.8048, "g6.2xlarge": 0.9776, "g6.4xlarge": 1.3232, "g6.8xlarge": 2.0144,
        "g6.12xlarge": 4.6016, "g6.16xlarge": 3.3968, "g6.24xlarge": 6.6752, "g6.48xlarge": 13.3504,
        "g6e.xlarge": 1.861, "g6e.2xlarge": 2.24208, "g6e.4xlarge": 3.00424, "g6e.8xlarge": 4.52856,
        "g6e.12xlarge": 10.49264, "g6e.16xlarge": 7.57719, "g6e.24xlarge": 15.06559,
        "g6e.48xlarge": 30.13118,
        "g5.xlarge": 1.006, "g5.2xlarge": 1.212, "g5.4xlarge": 1.624, "g5.8xlarge": 2.448,
        "g5.12xlarge": 5.672, "g5.16xlarge": 4.096, "g5.24xlarge": 8.144, "g5.48xlarge": 16.288,
        "g4dn.xlarge": 0.526, "g4dn.2xlarge": 0.752, "g4dn.4xlarge": 1.204, "g4dn.8xlarge": 2.176,
        "g4dn.12xlarge": 3.912, "g4dn.16xlarge": 4.352, "g4dn.metal": 7.824,
    },
    "eu-west-1": {
        "p4d.24xlarge": 23.71569,
        "p3.2xlarge": 3.305, "p3.8xlarge": 13.22, "p3.16xlarge": 26.44, "p3dn.24xlarge": 33.711,
        "g5.xlarge": 1.123, "g5.2xlarge": 1.35296, "g5.4xlarge": 1.81287, "g5.8xlarge": 2.73271,
        "g5.12xlarge": 6.33167, "g5.16xlarge": 4.57237, "g5.24xlarge": 9.09117, "g5.48xlarge": 18.18233,
        "g4dn.xlarge": 0.587, "g4dn.2xlarge": 0.838, "g4dn.4xlarge": 1.342, "g4dn.8xlarge": 2.426,
        "g4dn.12xlarge": 4.362, "g4dn.16xlarge": 4.853, "g4dn.metal": 8.724,
    },
}
# Types that have a us-east-1 price but no row at all for the region in the
# same file: AWS does not sell them there.
REGIONAL_NOT_OFFERED = {
    "us-west-2": [],
    "eu-west-1": [
        "p5.4xlarge", "p5.48xlarge", "p5en.48xlarge", "p4de.24xlarge",
        "g6.xlarge", "g6.2xlarge", "g6.4xlarge", "g6.8xlarge",
        "g6.12xlarge", "g6.16xlarge", "g6.24xlarge", "g6.48xlarge",
        "g6e.xlarge", "g6e.2xlarge", "g6e.4xlarge", "g6e.8xlarge",
        "g6e.12xlarge", "g6e.16xlarge", "g6e.24xlarge", "g6e.48xlarge",
    ],
}

# Spot Instance Advisor interruption bands: share of instances interrupted
# over the trailing month. Rate per node-hour = band midpoint / (30 * 24); the
# open band ">20%" is taken as 25%.
# CPU-only types for mixed CPU/GPU services (general purpose m, compute optimised c,
# memory optimised r; Intel, current and previous generation), us-east-1 only: name ->
# (vCPUs, memory MiB, network Mbps, on-demand USD/h), from aws/karpenter-provider-aws
# @1d927085: website/content/en/docs/reference/instance-types.md (instance-cpu,
# instance-memory, instance-network-bandwidth) and pkg/providers/pricing/
# zz_generated.pricing_aws.go (us-east-1), the same commit as the GPU table. Metal sizes left out.
CPU_FAMILIES = ['m7i', 'c7i', 'r7i', 'm6i', 'c6i', 'r6i']
CPU_TYPES = {
    "m7i.large": (2, 8192, 781, 0.1008),
    "m7i.xlarge": (4, 16384, 1562, 0.2016),
    "m7i.2xlarge": (8, 32768, 3125, 0.4032),
    "m7i.4xlarge": (16, 65536, 6250, 0.8064),
    "m7i.8xlarge": (32, 131072, 12500, 1.6128),
    "m7i.12xlarge": (48, 196608, 18750, 2.4192),
    "m7i.16xlarge": (64, 262144, 25000, 3.2256),
    "m7i.24xlarge": (96, 393216, 37500, 4.8384),
    "m7i.48xlarge": (192, 786432, 50000, 9.6768),
    "c7i.large": (2, 4096, 781, 0.08925),
    "c7i.xlarge": (4, 8192, 1562, 0.1785),
    "c7i.2xlarge": (8, 16384, 3125, 0.357),
    "c7i.4xlarge": (16, 32768, 6250, 0.714),
    "c7i.8xlarge": (32, 65536, 12500, 1.428),
    "c7i.12xlarge": (48, 98304, 18750, 2.142),
    "c7i.16xlarge": (64, 131072, 25000, 2.856),
    "c7i.24xlarge": (96, 196608, 37500, 4.284),
    "c7i.48xlarge": (192, 393216, 50000, 8.568),
    "r7i.large": (2, 16384, 781, 0.1323),
    "r7i.xlarge": (4, 32768, 1562, 0.2646),
    "r7i.2xlarge": (8, 65536, 3125, 0.5292),
    "r7i.4xlarge": (16, 131072, 6250, 1.0584),
    "r7i.8xlarge": (32, 262144, 12500, 2.1168),
    "r7i.12xlarge": (48, 393216, 18750, 3.1752),
    "r7i.16xlarge": (64, 524288, 25000, 4.2336),
    "r7i.24xlarge": (96, 786432, 37500, 6.3504),
    "r7i.48xlarge": (192, 1572864, 50000, 12.7008),
    "m6i.large": (2, 8192, 781, 0.096),
    "m6i.xlarge": (4, 16384, 1562, 0.192),
    "m6i.2xlarge": (8, 32768, 3125, 0.384),
    "m6i.4xlarge": (16, 65536, 6250, 0.768),
    "m6i.8xlarge": (32, 131072, 12500, 1.536),
    "m6i.12xlarge": (48, 196608, 18750, 2.304),
    "m6i.16xlarge": (64, 262144, 25000, 3.072),
    "m6i.24xlarge": (96, 393216, 37500, 4.608),
    "m6i.32xlarge": (128, 524288, 50000, 6.144),
    "c6i.large": (2, 4096, 781, 0.085),
    "c6i.xlarge": (4, 8192, 1562, 0.17),
    "c6i.2xlarge": (8, 16384, 3125, 0.34),
    "c6i.4xlarge": (16, 32768, 6250, 0.68),
    "c6i.8xlarge": (32, 65536, 12500, 1.36),
    "c6i.12xlarge": (48, 98304, 18750, 2.04),
    "c6i.16xlarge": (64, 131072, 25000, 2.72),
    "c6i.24xlarge": (96, 196608, 37500, 4.08),
    "c6i.32xlarge": (128, 262144, 50000, 5.44),
    "r6i.large": (2, 16384, 781, 0.126),
    "r6i.xlarge": (4, 32768, 1562, 0.252),
    "r6i.2xlarge": (8, 65536, 3125, 0.504),
    "r6i.4xlarge": (16, 131072, 6250, 1.008),
    "r6i.8xlarge": (32, 262144, 12500, 2.016),
    "r6i.12xlarge": (48, 393216, 18750, 3.024),
    "r6i.16xlarge": (64, 524288, 25000, 4.032),
    "r6i.24xlarge": (96, 786432, 37500, 6.048),
    "r6i.32xlarge": (128, 1048576, 50000, 8.064),
}
CPU_LAUNCH_LATENCY = "2m"  # typical request-to-Ready time of a CPU node (estimate)

BAND_MIDPOINT = {"<5%": 0.025, "5-10%": 0.075, "10-15%": 0.125, "15-20%": 0.175, ">20%": 0.25}
HOURS_PER_MONTH = 30 * 24


def load_types(path):
    types = []
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            if row["family"] not in FAMILIES:
                continue
            types.append(row)
    order = {f: i for i, f in enumerate(FAMILIES)}
    types.sort(key=lambda r: (order[r["family"]], int(r["gpu_count"]), int(r["vcpus"]), r["instance_type"]))
    return types


def load_advisor(path):
    advisor = {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            if row["os"] != "Linux":
                continue
            advisor[(row["region"], row["instance_type"])] = (
                int(row["savings_pct_vs_ondemand"]), row["interruption_range_label"])
    return advisor


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    repo = os.path.normpath(os.path.join(here, "..", ".."))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shared", default=os.path.normpath(os.path.join(repo, "..", "shared")))
    ap.add_argument("--out", default=os.path.join(repo, "config", "catalogs", "aws.yaml"))
    args = ap.parse_args()

    types_csv = os.path.join(args.shared, "data", "catalog", "aws_gpu_instance_types.csv")
    advisor_csv = os.path.join(args.shared, "data", "prices", "aws_spot_advisor_gpu_2025-06-28_primary.csv")
    for p in (types_csv, advisor_csv):
        if not os.path.exists(p):
            sys.exit(f"gen_aws_catalog: {p} not found (pass --shared)")
    types = load_types(types_csv)
    advisor = load_advisor(advisor_csv)

    on_demand = {"us-east-1": {}}
    for t in types:
        if t["ondemand_usd_per_h_us_east_1"]:
            on_demand["us-east-1"][t["instance_type"]] = float(t["ondemand_usd_per_h_us_east_1"])
    for region, prices in REGIONAL_ON_DEMAND.items():
        not_offered = set(REGIONAL_NOT_OFFERED.get(region, []))
        if not_offered & set(prices):
            sys.exit(f"gen_aws_catalog: {region}: priced and not offered: {sorted(not_offered & set(prices))}")
        unknown = (set(prices) | not_offered) - {t["instance_type"] for t in types}
        if unknown:
            sys.exit(f"gen_aws_catalog: {region}: not in the GPU type list: {sorted(unknown)}")
        unread = set(on_demand["us-east-1"]) - set(prices) - not_offered
        if unread:
            sys.exit(f"gen_aws_catalog: {region}: neither priced nor marked not offered: {sorted(unread)}")
        on_demand[region] = dict(prices)
    priced = {name for prices in on_demand.values() for name in prices}
    types = [t for t in types if t["instance_type"] in priced]

    out = []
    w = out.append
    w("# AWS GPU instance catalog: GPU models, instance types, list prices and spot risk.")
    w("# GENERATED by scripts/catalog/gen_aws_catalog.py from the public data in ../shared;")
    w("# edit the script (or its inputs) and regenerate rather than editing this file.")
    w("#")
    w("# Specs and us-east-1 on-demand prices: ../shared/data/catalog/aws_gpu_instance_types.csv")
    w("#   (aws/karpenter-provider-aws instance-types docs and zz_generated.pricing_aws.go,")
    w("#   commit 1d927085, prices generated 2026-07-20T13:44:30Z for us-east-1).")
    w("#   us-west-2 and eu-west-1 use the same date: the source's us-east-1 rows equal that table.")
    for region, src in REGIONAL_ON_DEMAND_SOURCE.items():
        w(f"# {region} on-demand prices ({len(REGIONAL_ON_DEMAND[region])} types): {src}.")
        missing = REGIONAL_NOT_OFFERED.get(region, [])
        if missing:
            text = f"Not offered in {region} (no row in the source): " + ", ".join(missing) + "."
            for line in textwrap.wrap(text, width=96):
                w("#   " + line)
        else:
            w(f"#   Every type priced in us-east-1 is offered in {region}.")
    w("#   Per-AZ availability is not modelled: a type is offered in every zone of its region")
    w("#   (the source lists e.g. p4d.24xlarge in one eu-west-1 AZ only; see the script).")
    w("# Spot prices and interruption rates: AWS Spot Instance Advisor snapshot of 2025-06-28")
    w("#   (../shared/data/prices/aws_spot_advisor_gpu_2025-06-28_primary.csv, Linux rows):")
    w("#   spot_usd_per_hour = on-demand x (1 - savings_pct / 100);")
    w("#   spot_interruptions_per_hour = midpoint of the monthly interruption band / (30 x 24 h),")
    w("#   bands <5% 5-10% 10-15% 15-20% >20% -> 0.025 0.075 0.125 0.175 0.25 (the open band as 25%),")
    w("#   e.g. \"5-10%\" -> 0.075 / 720 = 0.000104 per node-hour.")
    w("#   Types the advisor does not list in a region use the defaults below.")
    w("# CPU-only types (for mixed CPU/GPU services; a pool must list their families or types):")
    w("#   " + ", ".join(CPU_FAMILIES) + ", us-east-1 only; specs and on-demand prices from")
    w("#   aws/karpenter-provider-aws @1d927085 (instance-types docs, zz_generated.pricing_aws.go);")
    w("#   no Spot Advisor rows: spot price and rate are the defaults below.")
    w("# Launch latencies are typical request-to-Ready times per family (estimates).")
    w("apiVersion: gpuscaler/v1")
    w("kind: Catalog")
    w("provider: aws")
    w('source: "GPU specs and us-east-1 prices: aws/karpenter-provider-aws @1d927085 (pricing generated 2026-07-20); '
      'us-west-2/eu-west-1 on-demand: AWS Price List API via skypilot-org/skypilot-catalog vms.csv @00148f2a; '
      'spot: AWS Spot Instance Advisor 2025-06-28"')
    w('as_of: "2026-07-20"')
    w("# Warm capacity (pools[].warm): a stopped node pays its volumes only, at the volume price below\n"
      "#   (EBS gp3 in us-east-1, USD 0.08 per GiB-month, the AWS EBS pricing page), volume_gib where the pool names none;\n"
      "#   wake_latency is the typical start-to-Ready time of a stopped node whose image and driver are\n"
      "#   already in place (an estimate: the instance starts in under a minute, the kubelet reports Ready after).")
    w("defaults: {spot_discount: 0.6, spot_interruptions_per_hour: 0.01, launch_latency: 4m, wake_latency: 1m, "
      "volume_usd_per_gib_month: 0.08, volume_gib: 100}")
    fams = [f for f in FAMILIES if any(t["family"] == f for t in types)]
    latencies = [f"{f}: {LAUNCH_LATENCY[f]}" for f in fams] + [f"{f}: {CPU_LAUNCH_LATENCY}" for f in CPU_FAMILIES]
    w("launch_latency: {" + ", ".join(latencies) + "}")

    used_models = []
    for t in types:
        key = (t["gpu_name"], int(t["gpu_memory_mib_per_gpu"]))
        if key not in GPU_MODELS:
            sys.exit(f"gen_aws_catalog: no GPU model for {key} ({t['instance_type']})")
        if key not in used_models:
            used_models.append(key)
    out.extend(gpu_model_lines([(*GPU_MODELS[key], key[1]) for key in used_models]))

    w("instance_types:")
    for t in types:
        model = GPU_MODELS[(t["gpu_name"], int(t["gpu_memory_mib_per_gpu"]))][0]
        nvme = t["local_nvme_gb"] or "0"
        w(f"  - {{name: {t['instance_type']}, family: {t['family']}, gpu_model: {model}, "
          f"gpu_count: {t['gpu_count']}, gpu_memory_mib: {t['gpu_memory_mib_per_gpu']}, "
          f"vcpus: {t['vcpus']}, memory_mib: {t['memory_mib']}, local_nvme_gb: {nvme}, "
          f"network_mbps: {t['network_bandwidth_mbps']}}}")
    for name, (vcpus, memory_mib, network_mbps, _) in CPU_TYPES.items():
        w(f"  - {{name: {name}, family: {name.split('.')[0]}, gpu_count: 0, vcpus: {vcpus}, "
          f"memory_mib: {memory_mib}, network_mbps: {network_mbps}}}")

    w("regions:")
    names = [t["instance_type"] for t in types]
    for region, zones in REGIONS:
        prices = on_demand.get(region, {})
        if not prices:
            continue
        w(f"  - region: {region}")
        w(f"    zones: [{', '.join(zones)}]")
        w("    on_demand_usd_per_hour:")
        for n in names:
            if n in prices:
                w(f"      {n}: {fmt_price(prices[n])}")
        if region == "us-east-1":
            for n, (_, _, _, usd) in CPU_TYPES.items():
                w(f"      {n}: {fmt_price(usd)}")
        spot = [(n, advisor[(region, n)]) for n in names if n in prices and (region, n) in advisor]
        if spot:
            w("    spot_usd_per_hour:")
            for n, (savings, _) in spot:
                w(f"      {n}: {fmt_price(round(prices[n] * (1 - savings / 100.0), 4))}")
            w("    spot_interruptions_per_hour:")
            for n, (_, band) in spot:
                w(f"      {n}: {BAND_MIDPOINT[band] / HOURS_PER_MONTH:.6f}  # {band} a month")

    write_catalog(args.out, out)
    print(f"wrote {args.out}: {len(types)} GPU and {len(CPU_TYPES)} CPU instance types, {len(used_models)} GPU models")


if __name__ == "__main__":
    main()
