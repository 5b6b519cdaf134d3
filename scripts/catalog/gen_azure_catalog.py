#!/usr/bin/env python3
"""Generates config/catalogs/azure.yaml from a downloaded Azure price table.

Inputs (read at generation time; the generated YAML is committed, the price
table is not):
  - --vms-csv FILE: SkyPilot's Azure catalog, skypilot-org/skypilot-catalog
    catalogs/v6/azure/vms.csv at commit
    098741e70562f65d7af1cceb81e33b284f742604 (one row per VM size and region:
    Linux pay-as-you-go Price and Spot SpotPrice in USD per hour, which
    SkyPilot's fetch_azure.py reads from the Azure Retail Prices API,
    prices.azure.com/api/retail/prices, "Spot" meters for SpotPrice).
    Obtain it with
      curl -L -o azure_vms.csv https://raw.githubusercontent.com/skypilot-org/\\
        skypilot-catalog/098741e70562f65d7af1cceb81e33b284f742604/catalogs/v6/azure/vms.csv
    Only the rows of the sizes in SIZES are read, so a copy cut down to them
    gives the same catalog.
  - SIZES below: GPU model and count, vCPUs and memory per VM size, from the
    Microsoft Learn size pages of each series (read 2026-12-07). main()
    checks the price table agrees with them, except for the disagreements
    listed in SOURCE_SPEC_ERRORS.
  - ZONES below: the covered regions and their availability zones.
  Nothing is downloaded.

Usage: scripts/catalog/gen_azure_catalog.py --vms-csv FILE [--out FILE]
"""

import argparse
import csv
import os
import sys
import textwrap

from catalog_yaml import fmt_price, gpu_model_lines, write_catalog

SOURCE_REPO = "skypilot-org/skypilot-catalog"
SOURCE_PATH = "catalogs/v6/azure/vms.csv"
SOURCE_COMMIT = "098741e70562f65d7af1cceb81e33b284f742604"
# The copy records no fetch date. SkyPilot did not refresh its Azure catalog
# automatically (skypilot-catalog issue #76, open since 2024-08-18); its last
# datable Azure change before the v6 copy is PR #75, merged 2024-08-18, and
# the copy has no ND H200 v5 row (a size Azure sells now). So
# the prices are taken as of 2024-08-18: an estimate of their date.
SOURCE_AS_OF = "2024-08-18"
READ_ON = "2026-12-07"

# The GPU as NVIDIA GPU feature discovery labels it (nvidia.com/gpu.product),
# the short name for policies, memory MiB per GPU. Names and memory equal the
# AWS and GCP catalogs' where the part is the same, so a policy naming
# a100-80gb or h100-80gb means the same GPU on every cloud.
GPU_MODELS = {
    "h100-sxm": ("NVIDIA-H100-80GB-HBM3", "h100-80gb", 81920),
    # NC H100 v5 carries the PCIe H100 NVL, 94 GB: the nominal size x 1024.
    "h100-nvl": ("NVIDIA-H100-NVL", "h100-nvl", 96256),
    "a100-80-sxm": ("NVIDIA-A100-SXM4-80GB", "a100-80gb", 81920),
    "a100-40-sxm": ("NVIDIA-A100-SXM4-40GB", "a100-40gb", 40960),
    # NC A100 v4 carries the PCIe A100 80GB, not the SXM4 part.
    "a100-80-pcie": ("NVIDIA-A100-80GB-PCIe", "a100-80gb-pcie", 81920),
    "a10": ("NVIDIA-A10", "a10", 23028),
    "t4": ("Tesla-T4", "t4", 16384),
}

# VM size -> (family, GPU key, GPU count, vCPUs, memory GiB). Family is the
# series as Azure's size names spell it, with the vCPU count left out; a
# policy's `families` names these. Specs: Microsoft Learn, "Sizes for virtual
# machines in Azure", pages nd-h100-v5-series, nc-h100-v5-series,
# ndm-a100-v4-series, nda100-v4-series, nc-a100-v4-series,
# nvadsa10v5-series, ncast4v3-series.
SIZES = {
    "Standard_ND96isr_H100_v5": ("NDisr_H100_v5", "h100-sxm", 8, 96, 1900),
    "Standard_NC40ads_H100_v5": ("NCads_H100_v5", "h100-nvl", 1, 40, 320),
    "Standard_NC80adis_H100_v5": ("NCads_H100_v5", "h100-nvl", 2, 80, 640),
    "Standard_ND96amsr_A100_v4": ("NDamsr_A100_v4", "a100-80-sxm", 8, 96, 1900),
    "Standard_ND96asr_v4": ("NDasr_A100_v4", "a100-40-sxm", 8, 96, 900),
    "Standard_NC24ads_A100_v4": ("NCads_A100_v4", "a100-80-pcie", 1, 24, 220),
    "Standard_NC48ads_A100_v4": ("NCads_A100_v4", "a100-80-pcie", 2, 48, 440),
    "Standard_NC96ads_A100_v4": ("NCads_A100_v4", "a100-80-pcie", 4, 96, 880),
    "Standard_NV36ads_A10_v5": ("NVads_A10_v5", "a10", 1, 36, 440),
    "Standard_NV36adms_A10_v5": ("NVads_A10_v5", "a10", 1, 36, 880),
    "Standard_NV72ads_A10_v5": ("NVads_A10_v5", "a10", 2, 72, 880),
    "Standard_NC4as_T4_v3": ("NCas_T4_v3", "t4", 1, 4, 28),
    "Standard_NC8as_T4_v3": ("NCas_T4_v3", "t4", 1, 8, 56),
    "Standard_NC16as_T4_v3": ("NCas_T4_v3", "t4", 1, 16, 110),
    "Standard_NC64as_T4_v3": ("NCas_T4_v3", "t4", 4, 64, 440),
}
FAMILIES = ["NDisr_H100_v5", "NCads_H100_v5", "NDamsr_A100_v4", "NDasr_A100_v4", "NCads_A100_v4",
            "NVads_A10_v5", "NCas_T4_v3"]

# Where the price table's specs are wrong, the size page wins; each entry is
# (size, column) -> the table's value, so a corrected table fails loudly.
SOURCE_SPEC_ERRORS = {
    ("Standard_ND96isr_H100_v5", "AcceleratorCount"): "12",
    ("Standard_ND96amsr_A100_v4", "MemoryGiB"): "1800",
}

LAUNCH_LATENCY = {  # typical request-to-Ready times, by family (estimates)
    "NDisr_H100_v5": "8m", "NCads_H100_v5": "6m", "NDamsr_A100_v4": "8m", "NDasr_A100_v4": "8m",
    "NCads_A100_v4": "6m", "NVads_A10_v5": "4m", "NCas_T4_v3": "4m",
}

# The covered regions and their availability zones as AKS labels nodes
# (topology.kubernetes.io/zone = <region>-<n>). Azure maps zone numbers to
# datacenters per subscription, so "eastus-1" of one subscription is not
# another's; a size missing in one zone shows up as a capacity error there.
# westeurope is not covered: the price table has US regions only (SkyPilot
# fetches the US regions unless asked for all).
ZONES = {
    "eastus": ["1", "2", "3"],
    "eastus2": ["1", "2", "3"],
    "southcentralus": ["1", "2", "3"],
    "westus2": ["1", "2", "3"],
    "westus3": ["1", "2", "3"],
}

# Sizes the catalog leaves out, and why (the header repeats this).
NOT_OFFERED = [
    "ND H200 v5 (Standard_ND96isr_H200_v5): no row in the price table",
    "NC V100 v3 and ND V100 v2: retired by Azure (the table still prices them)",
    "NVads A10 v5 sizes with a fraction of an A10 (NV6/12/18ads): the catalog counts whole GPUs",
    "NCads A10 v4, confidential NCC H100 v5, AMD NV/NG sizes: no GPU spec or price in the table",
]


def load(path):
    """Returns {(size, region): (on-demand, spot or None)} for the sizes in SIZES."""
    prices = {}
    with open(path, newline="") as f:
        for line, row in enumerate(csv.DictReader(f), start=2):
            size = row["InstanceType"]
            if size not in SIZES:
                continue
            _, _, count, vcpus, mem_gib = SIZES[size]
            for column, want in (("AcceleratorCount", count), ("vCPUs", vcpus), ("MemoryGiB", mem_gib)):
                got = row[column]
                if SOURCE_SPEC_ERRORS.get((size, column)) == got:
                    continue
                if float(got) != want:
                    sys.exit(f"gen_azure_catalog: {path}:{line}: {size} {column} is {got}, "
                             f"the size page says {want}")
            if not row["Price"]:
                continue  # listed without a price in that region: not offered there
            spot = float(row["SpotPrice"]) if row["SpotPrice"] else None
            prices[(size, row["Region"])] = (float(row["Price"]), spot)
    return prices


def header_lines(types, prices):
    out = []
    w = out.append
    w("# Microsoft Azure GPU VM catalog: GPU models, VM sizes, list prices.")
    w("# GENERATED by scripts/catalog/gen_azure_catalog.py; edit the script (or its inputs) and")
    w("# regenerate rather than editing this file.")
    w("#")
    w(f"# On-demand and Spot prices: {SOURCE_REPO} {SOURCE_PATH}")
    w(f"#   @{SOURCE_COMMIT[:8]} (read {READ_ON}; SkyPilot's fetch_azure.py fills it from the Azure")
    w("#   Retail Prices API, prices.azure.com/api/retail/prices: Price is the Linux pay-as-you-go")
    w("#   meter, SpotPrice the \"Spot\" meter; USD per hour, no discounts). The copy records no")
    w(f"#   fetch date; as_of {SOURCE_AS_OF} is an ESTIMATE (the last datable Azure catalog change,")
    w("#   skypilot-catalog PR #75; the copy predates ND H200 v5 prices). The raw table is not")
    w("#   committed: the script's docstring says how to download it.")
    w("#   The table lists the same Spot price as on-demand for NC H100 v5 and ND H100 v5: kept as")
    w("#   listed, so a policy with max_price_fraction_of_on_demand < 1 buys those on-demand only.")
    w("# Specs (GPU model and count, vCPUs, memory): the Microsoft Learn size page of each series.")
    w("#   The price table says 12 GPUs for Standard_ND96isr_H100_v5 and 1800 GiB for")
    w("#   Standard_ND96amsr_A100_v4; the size pages say 8 and 1900, and the catalog follows them.")
    w("# Family: the series as Azure spells its sizes, without the vCPU count (NCads_A100_v4).")
    w("# Not offered:")
    for reason in NOT_OFFERED:
        w(f"#   - {reason}.")
    for line in textwrap.wrap(f"Regions: {', '.join(ZONES)}; zones <region>-1..3 as AKS labels them.",
                              width=94, break_on_hyphens=False):
        w("# " + line if line.startswith("Regions") else "#   " + line)
    w("#   A size priced in a region is offered in every zone of it; per-zone availability and")
    w("#   the per-subscription zone numbering are not modelled (a missing zone is a")
    w("#   SkuNotAvailable / AllocationFailed capacity error at run time).")
    missing = [f"{t} in {r}" for r in ZONES for t in types if (t, r) not in prices]
    for line in textwrap.wrap("Not priced in a covered region (so not offered there): " + ", ".join(missing) + ".",
                              width=92, break_on_hyphens=False):
        w("#   " + line)
    w("# Spot eviction rates: Azure shows them only as bands (0-5 %, 5-10 %, 10-15 %, 15-20 %, 20+ %)")
    w("#   per size and region in the portal and through Azure Resource Graph (SpotResources,")
    w("#   microsoft.compute/skuspotevictionrate/location), both behind a sign-in; no public dataset")
    w("#   of them was found, so every size uses defaults.spot_interruptions_per_hour (0.01 per")
    w("#   node-hour, the other catalogs' default), an ESTIMATE. Spot VMs get a 30-second notice.")
    w("# Launch latencies are typical request-to-Ready times per family (ESTIMATES).")
    return out


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    repo = os.path.normpath(os.path.join(here, "..", ".."))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vms-csv", required=True, help=f"{SOURCE_REPO} {SOURCE_PATH} @{SOURCE_COMMIT[:8]}")
    ap.add_argument("--out", default=os.path.join(repo, "config", "catalogs", "azure.yaml"))
    args = ap.parse_args()
    if not os.path.exists(args.vms_csv):
        sys.exit(f"gen_azure_catalog: {args.vms_csv} not found")

    prices = load(args.vms_csv)
    for region in ZONES:
        if not any(r == region for (_, r) in prices):
            sys.exit(f"gen_azure_catalog: region {region} has no priced GPU size in {args.vms_csv}")
    order = {f: i for i, f in enumerate(FAMILIES)}
    types = [t for t in SIZES if any((t, r) in prices for r in ZONES)]
    types.sort(key=lambda t: (order[SIZES[t][0]], SIZES[t][2], SIZES[t][3], SIZES[t][4]))
    for t in SIZES:
        if t not in types:
            sys.exit(f"gen_azure_catalog: {t} has no price in any covered region")

    out = header_lines(types, prices)
    w = out.append
    w("apiVersion: gpuscaler/v1")
    w("kind: Catalog")
    w("provider: azure")
    w(f'source: "Azure Retail Prices API via {SOURCE_REPO} {SOURCE_PATH} @{SOURCE_COMMIT[:8]} '
      f'(fetch date not recorded; as_of estimated); specs: Microsoft Learn size pages"')
    w(f'as_of: "{SOURCE_AS_OF}"')
    w("# Warm capacity (pools[].warm): a stopped (deallocated) node pays its managed disks only, at the\n"
      "#   volume price below (Premium SSD P10, 128 GiB, about USD 19.71 a month in eastus on the Azure\n"
      "#   managed disks pricing page: 0.154 per GiB-month, an ESTIMATE: no dataset was read), volume_gib\n"
      "#   the AKS default OS disk size where the pool names none; wake_latency is the typical\n"
      "#   start-to-Ready time of a deallocated node whose image and driver are already in place (an\n"
      "#   estimate: Azure documents none).")
    w("defaults: {spot_discount: 0.6, spot_interruptions_per_hour: 0.01, launch_latency: 5m, wake_latency: 2m, "
      "volume_usd_per_gib_month: 0.154, volume_gib: 128}")
    fams = [f for f in FAMILIES if any(SIZES[t][0] == f for t in types)]
    w("launch_latency: {" + ", ".join(f"{f}: {LAUNCH_LATENCY[f]}" for f in fams) + "}")

    used = []
    for t in types:
        model = GPU_MODELS[SIZES[t][1]]
        if model not in used:
            used.append(model)
    out.extend(gpu_model_lines(used))

    w("instance_types:")
    for t in types:
        family, key, count, vcpus, mem_gib = SIZES[t]
        name, _, mib = GPU_MODELS[key]
        w(f"  - {{name: {t}, family: {family}, gpu_model: {name}, gpu_count: {count}, "
          f"gpu_memory_mib: {mib}, vcpus: {vcpus}, memory_mib: {mem_gib * 1024}}}")

    w("regions:")
    for region, numbers in ZONES.items():
        priced = [t for t in types if (t, region) in prices]
        w(f"  - region: {region}")
        w(f"    zones: [{', '.join(region + '-' + n for n in numbers)}]")
        w("    on_demand_usd_per_hour:")
        for t in priced:
            w(f"      {t}: {fmt_price(prices[(t, region)][0])}")
        spot = [t for t in priced if prices[(t, region)][1] is not None]
        if spot:
            w("    spot_usd_per_hour:")
            for t in spot:
                w(f"      {t}: {fmt_price(prices[(t, region)][1])}")

    write_catalog(args.out, out)
    print(f"wrote {args.out}: {len(types)} VM sizes, {len(used)} GPU models, {len(ZONES)} regions")


if __name__ == "__main__":
    main()
