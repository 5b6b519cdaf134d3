"""What the catalog generators share: NVIDIA's MIG profiles, price formatting,
the gpu_models section and writing the file. The catalog format itself is
docs/catalog.md."""

import os

# MIG profiles from NVIDIA's MIG user guide ("Supported MIG Profiles"):
# (name, compute slices, memory slices, usable MiB). Placement starts follow
# from the memory-slice width: 1 -> 0..6, 2 -> 0,2,4,6 (2g: 0,2,4), 4 -> 0,4
# (4g: 0), 8 -> 0.
MIG_A100_40GB = [
    ("1g.5gb", 1, 1, 4864), ("1g.10gb", 1, 2, 9728), ("2g.10gb", 2, 2, 9728),
    ("3g.20gb", 3, 4, 19968), ("4g.20gb", 4, 4, 19968), ("7g.40gb", 7, 8, 40192),
]
MIG_80GB = [
    ("1g.10gb", 1, 1, 9728), ("1g.20gb", 1, 2, 19968), ("2g.20gb", 2, 2, 19968),
    ("3g.40gb", 3, 4, 40192), ("4g.40gb", 4, 4, 40192), ("7g.80gb", 7, 8, 80896),
]
# NVIDIA publishes the H200 profiles by name only; memory_mib is the nominal
# size in the name (GiB x 1024), the whole card for 7g.
MIG_H200 = [
    ("1g.18gb", 1, 1, 18432), ("1g.35gb", 1, 2, 35840), ("2g.35gb", 2, 2, 35840),
    ("3g.71gb", 3, 4, 72704), ("4g.71gb", 4, 4, 72704), ("7g.141gb", 7, 8, 144384),
]
# H100 NVL (94 GB): NVIDIA publishes the profiles by name; memory_mib is the
# nominal size in the name, as for the H200.
MIG_H100_NVL = [
    ("1g.12gb", 1, 1, 12288), ("1g.24gb", 1, 2, 24576), ("2g.24gb", 2, 2, 24576),
    ("3g.47gb", 3, 4, 48128), ("4g.47gb", 4, 4, 48128), ("7g.94gb", 7, 8, 96256),
]
MIG_BY_MODEL = {
    "NVIDIA-A100-SXM4-40GB": MIG_A100_40GB,
    "NVIDIA-A100-SXM4-80GB": MIG_80GB,
    # The PCIe A100 80GB has the SXM4 part's MIG geometry and profiles.
    "NVIDIA-A100-80GB-PCIe": MIG_80GB,
    "NVIDIA-H100-80GB-HBM3": MIG_80GB,
    "NVIDIA-H100-NVL": MIG_H100_NVL,
    "NVIDIA-H200": MIG_H200,
}


def mig_starts(compute_slices, memory_slices):
    if memory_slices == 1:
        return list(range(7))
    if memory_slices == 2:
        return [0, 2, 4] if compute_slices == 2 else [0, 2, 4, 6]
    if memory_slices == 4:
        return [0] if compute_slices == 4 else [0, 4]
    return [0]


def fmt_price(x):
    s = f"{x:.6f}".rstrip("0").rstrip(".")
    return s if s else "0"


def gpu_model_lines(models):
    """The gpu_models section for (name, short name, memory MiB) tuples, in order."""
    out = ["gpu_models:"]
    for name, short, mib in models:
        out.append(f"  - name: {name}")
        out.append(f"    short_name: {short}")
        out.append(f"    memory_mib: {mib}")
        profiles = MIG_BY_MODEL.get(name)
        if profiles:
            out.append("    mig_profiles:")
            for pname, cs, ms, pmib in profiles:
                starts = ",".join(str(s) for s in mig_starts(cs, ms))
                out.append(f"      - {{name: {pname}, compute_slices: {cs}, memory_slices: {ms}, "
                           f"memory_mib: {pmib}, starts: [{starts}]}}")
    return out


def write_catalog(path, lines):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
