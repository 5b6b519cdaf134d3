#!/usr/bin/env python3
"""Generates config/catalogs/gcp.yaml from the public data in ../shared.

Inputs (read at generation time; the generated YAML is committed):
  - ../shared/data/catalog/gcp_gpu_machine_types_prices.csv: Compute Engine
    GPU machine types (A2, A3, G2, G4) with per-region on-demand and spot
    hourly prices, from Cyclenerd/google-cloud-pricing-cost-calculator
    pricing.yml at commit fd66b26f (generated 2026-07-30 06:13:17 UTC; see
    ../shared/data/README.md section 3.2).
  - ZONES below: the zones of the regions the catalog covers, kept by hand.
    Nothing is downloaded.

Not covered: N1 machine types with attached T4 / V100 / P4 / P100 GPUs. The
source keeps no prices for them (its machine-type table has no GPU-attached
N1 rows), so the catalog does not offer them rather than guess a price.
G4 shapes with a fraction of a GPU (g4-standard-6/12/24: 1/8, 1/4, 1/2 of an
RTX PRO 6000) are left out: the catalog counts whole GPUs.

Usage: scripts/catalog/gen_gcp_catalog.py [--shared DIR] [--out FILE]
"""

import argparse
import csv
import os
import sys
import textwrap

from catalog_yaml import fmt_price, gpu_model_lines, write_catalog

SOURCE_COMMIT = "fd66b26f"
SOURCE_GENERATED = "2026-07-30"

# Machine families, in catalog order. An accelerator-optimized machine type
# has its GPUs built in: the name fixes the GPU model and count (a2-highgpu-4g
# = 4 x A100 40GB), and it is priced as one unit.
FAMILIES = ["a3-megagpu", "a3-highgpu", "a2-ultragpu", "a2-megagpu", "a2-highgpu", "g4-standard", "g2-standard"]

# The CSV's gpu_model_key -> (nvidia.com/gpu.product as GPU feature discovery
# labels it, short name for policies, memory MiB per GPU). Names and memory
# match config/catalogs/aws.yaml where the GPU is the same part (A100 40/80 GB
# SXM4, H100 80 GB HBM3, L4), so a policy naming a model works on both clouds.
GPU_MODELS = {
    "a100": ("NVIDIA-A100-SXM4-40GB", "a100-40gb", 40960),
    "a100-80gb": ("NVIDIA-A100-SXM4-80GB", "a100-80gb", 81920),
    "h100-80gb": ("NVIDIA-H100-80GB-HBM3", "h100-80gb", 81920),
    # A3 Mega carries the same H100 80GB HBM3 as A3 High (more GPU network).
    "h100-80gb-mega": ("NVIDIA-H100-80GB-HBM3", "h100-80gb", 81920),
    "l4": ("NVIDIA-L4", "l4", 22888),
    # NVIDIA RTX PRO 6000 Blackwell Server Edition, 96 GB GDDR7.
    "rtx6000": ("NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition", "rtx-pro-6000", 98304),
}

LAUNCH_LATENCY = {  # typical request-to-Ready times, by family (estimates)
    "a3-megagpu": "8m", "a3-highgpu": "8m", "a2-ultragpu": "6m", "a2-megagpu": "6m",
    "a2-highgpu": "6m", "g4-standard": "4m", "g2-standard": "3m",
}

# The regions the catalog covers and their zones (Compute Engine's
# "Regions and zones" page). The source prices a machine type in a region;
# it does not say which zones of the region have the GPU, so every zone of
# the region is offered (a type missing in one zone shows up as a capacity
# error there, which the controller handles by falling back).
ZONES = {
    "us-central1": ["a", "b", "c", "f"],
    "us-east1": ["b", "c", "d"],
    "us-east4": ["a", "b", "c"],
    "us-east5": ["a", "b", "c"],
    "us-south1": ["a", "b", "c"],
    "us-west1": ["a", "b", "c"],
    "us-west4": ["a", "b", "c"],
    "europe-west1": ["b", "c", "d"],
    "europe-west2": ["a", "b", "c"],
    "europe-west4": ["a", "b", "c"],
    "asia-east1": ["a", "b", "c"],
    "asia-northeast1": ["a", "b", "c"],
    "asia-southeast1": ["a", "b", "c"],
}


def family_of(machine_type):
    return machine_type.rsplit("-", 1)[0]


def load(path):
    """Returns ({machine type: spec row}, {(type, region): (on-demand, spot or None)})."""
    specs, prices = {}, {}
    with open(path, newline="") as f:
        for line, row in enumerate(csv.DictReader(f), start=2):
            mt = row["machine_type"]
            if family_of(mt) not in FAMILIES:
                sys.exit(f"gen_gcp_catalog: {path}:{line}: unknown machine family of '{mt}'")
            if row["gpu_model_key"] not in GPU_MODELS:
                sys.exit(f"gen_gcp_catalog: {path}:{line}: unknown gpu_model_key '{row['gpu_model_key']}'")
            count = float(row["gpu_count"])
            if count != int(count):
                continue  # a fractional GPU (see the module docstring)
            spec = (row["gpu_model_key"], int(count), int(row["vcpus"]), float(row["ram_gb"]),
                    int(float(row["local_ssd_gb"] or 0)))
            if specs.setdefault(mt, spec) != spec:
                sys.exit(f"gen_gcp_catalog: {path}:{line}: '{mt}' has other specs than on an earlier row")
            if not row["ondemand_usd_per_h"]:
                sys.exit(f"gen_gcp_catalog: {path}:{line}: '{mt}' in {row['region']} has no on-demand price")
            spot = float(row["spot_usd_per_h"]) if row["spot_usd_per_h"] else None
            prices[(mt, row["region"])] = (float(row["ondemand_usd_per_h"]), spot)
    return specs, prices


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    repo = os.path.normpath(os.path.join(here, "..", ".."))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shared", default=os.path.normpath(os.path.join(repo, "..", "shared")))
    ap.add_argument("--out", default=os.path.join(repo, "config", "catalogs", "gcp.yaml"))
    args = ap.parse_args()

    src = os.path.join(args.shared, "data", "catalog", "gcp_gpu_machine_types_prices.csv")
    if not os.path.exists(src):
        sys.exit(f"gen_gcp_catalog: {src} not found (pass --shared)")
    specs, prices = load(src)
    for region in ZONES:
        if not any(r == region for (_, r) in prices):
            sys.exit(f"gen_gcp_catalog: region {region} has no row in {src}")

    order = {f: i for i, f in enumerate(FAMILIES)}
    types = sorted(specs, key=lambda mt: (order[family_of(mt)], specs[mt][1], specs[mt][2], mt))
    types = [mt for mt in types if any((mt, r) in prices for r in ZONES)]

    out = []
    w = out.append
    w("# Google Cloud (Compute Engine) GPU catalog: GPU models, machine types, list prices.")
    w("# GENERATED by scripts/catalog/gen_gcp_catalog.py from the public data in ../shared;")
    w("# edit the script (or its inputs) and regenerate rather than editing this file.")
    w("#")
    w("# Specs, on-demand and spot prices: ../shared/data/catalog/gcp_gpu_machine_types_prices.csv")
    w(f"#   (Cyclenerd/google-cloud-pricing-cost-calculator pricing.yml @{SOURCE_COMMIT},")
    w(f"#   generated {SOURCE_GENERATED} 06:13:17 UTC; USD list prices per hour, Linux, no discounts).")
    w("#   spot_usd_per_hour is the Spot VM price the source lists for the region on that date;")
    w("#   Google changes spot prices up to once a day (replay the history with")
    w("#   `gpuscaler sim --prices-format gcp-spot-prices`).")
    w("# Machine types: the accelerator-optimized A3, A2, G4 and G2 series; each has its GPUs")
    w("#   built in, so one machine type is one packable shape (model x count, vCPUs, memory).")
    w("#   Not offered: N1 with attached T4/V100/P4/P100 (the source has no prices for them) and")
    w("#   the fractional-GPU g4-standard-6/12/24.")
    for line in textwrap.wrap(f"Regions: {', '.join(ZONES)}; zones kept by hand in the script.", width=94, break_on_hyphens=False):
        w("# " + line if line.startswith("Regions") else "#   " + line)
    w("#   A type priced in a region is offered in every zone of it; per-zone GPU availability")
    w("#   is not modelled (a missing zone is a ZONE_RESOURCE_POOL_EXHAUSTED-style capacity error).")
    w("# Spot interruption rates: Google publishes none; every type uses the defaults below.")
    w("# Launch latencies are typical request-to-Ready times per family (estimates).")
    w("apiVersion: gpuscaler/v1")
    w("kind: Catalog")
    w("provider: gcp")
    w(f'source: "Compute Engine list prices via Cyclenerd/google-cloud-pricing-cost-calculator pricing.yml '
      f'@{SOURCE_COMMIT} (generated {SOURCE_GENERATED})"')
    w(f'as_of: "{SOURCE_GENERATED}"')
    w("# Warm capacity (pools[].warm): a stopped node pays its volumes only, at the volume price below\n"
      "#   (balanced persistent disk in us-central1, USD 0.10 per GiB-month, the Compute Engine disk pricing page), volume_gib where the pool names none;\n"
      "#   wake_latency is the typical start-to-Ready time of a stopped node whose image and driver are\n"
      "#   already in place (an estimate: the instance starts in under a minute, the kubelet reports Ready after).")
    w("defaults: {spot_discount: 0.6, spot_interruptions_per_hour: 0.01, launch_latency: 4m, wake_latency: 1m, "
      "volume_usd_per_gib_month: 0.10, volume_gib: 100}")
    fams = [f for f in FAMILIES if any(family_of(t) == f for t in types)]
    w("launch_latency: {" + ", ".join(f"{f}: {LAUNCH_LATENCY[f]}" for f in fams) + "}")

    used = []
    for mt in types:
        model = GPU_MODELS[specs[mt][0]]
        if model[0] not in [m[0] for m in used]:
            used.append(model)
    out.extend(gpu_model_lines(used))

    w("instance_types:")
    for mt in types:
        key, count, vcpus, ram_gb, ssd = specs[mt]
        name, _, mib = GPU_MODELS[key]
        w(f"  - {{name: {mt}, family: {family_of(mt)}, gpu_model: {name}, gpu_count: {count}, "
          f"gpu_memory_mib: {mib}, vcpus: {vcpus}, memory_mib: {int(round(ram_gb * 1024))}, "
          f"local_nvme_gb: {ssd}}}")

    w("regions:")
    for region, letters in ZONES.items():
        priced = [mt for mt in types if (mt, region) in prices]
        w(f"  - region: {region}")
        w(f"    zones: [{', '.join(region + '-' + z for z in letters)}]")
        w("    on_demand_usd_per_hour:")
        for mt in priced:
            w(f"      {mt}: {fmt_price(prices[(mt, region)][0])}")
        spot = [mt for mt in priced if prices[(mt, region)][1] is not None]
        if spot:
            w("    spot_usd_per_hour:")
            for mt in spot:
                w(f"      {mt}: {fmt_price(prices[(mt, region)][1])}")

    write_catalog(args.out, out)
    print(f"wrote {args.out}: {len(types)} machine types, {len(used)} GPU models, {len(ZONES)} regions")


if __name__ == "__main__":
    main()
