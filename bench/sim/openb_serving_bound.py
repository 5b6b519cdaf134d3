#!/usr/bin/env python3
"""A lower bound on what the openb trace's serving pods cost on on-demand nodes.

    bench/sim/openb_serving_bound.py TRACE.csv CATALOG.yaml SIM.json [REGION]

TRACE.csv is an Alibaba GPU v2023 openb pod file (`--trace-format
alibaba-openb`), CATALOG.yaml a gpuscaler catalog (config/catalogs/aws.yaml),
SIM.json the output of `gpuscaler sim ... --json` on that file (for its
horizon), REGION the region whose on-demand prices count (default us-east-1).

The serving pods are the ones the reader makes non-interruptible (qos LS or
Guaranteed), so every policy without a class for them runs them on on-demand
nodes. As the reader replays them, each is submitted at its creation_time and
runs for deletion_time (else the largest time in the file) minus its
scheduled_time (else creation_time); here each starts the moment it is
submitted (times shifted so the earliest submission is 0), and the bill stops
at the run's horizon. At every instant their summed vCPUs, memory and GPUs (whole GPUs, or
gpu_milli / 1000 for a shared one) must be covered by GPU instance types of
the catalog, bought in any fraction: a linear program whose optimum no
packing into whole nodes, with whole GPUs per pod and nodes launched ahead of
time, can beat. Its dual has three variables (a price per vCPU, per GiB and
per GPU), so its optimum is the best of the dual polytope's vertices, which
depend on the catalog only and are enumerated once.

Prints the bound in USD and the serving GPU-hours; exits 2 on bad input.
"""
import csv
import itertools
import json
import sys

import yaml  # Debian: python3-yaml


def catalog_types(path, region):
    """(vcpus, memory GiB, gpus, on-demand USD/h) of every GPU type priced in `region`."""
    with open(path, encoding="utf-8") as f:
        catalog = yaml.safe_load(f)
    prices = next((r.get("on_demand_usd_per_hour", {}) for r in catalog.get("regions", []) if r.get("region") == region),
                  None)
    if prices is None:
        sys.exit(f"{path}: no region {region}")
    return [(t["vcpus"], t["memory_mib"] / 1024, t["gpu_count"], prices[t["name"]])
            for t in catalog.get("instance_types", [])
            if t.get("gpu_count", 0) > 0 and t["name"] in prices]


def solve3(rows, rhs):
    """Solves a 3x3 system by Gaussian elimination; None when singular."""
    m = [list(map(float, rows[i])) + [float(rhs[i])] for i in range(3)]
    for c in range(3):
        p = max(range(c, 3), key=lambda r: abs(m[r][c]))
        if abs(m[p][c]) < 1e-12:
            return None
        m[c], m[p] = m[p], m[c]
        for r in range(3):
            if r != c:
                f = m[r][c] / m[c][c]
                m[r] = [m[r][k] - f * m[c][k] for k in range(4)]
    return [m[i][3] / m[i][i] for i in range(3)]


def dual_vertices(types):
    """Vertices of {y >= 0 : vcpu*y0 + mem*y1 + gpu*y2 <= price for every type}."""
    planes = [t for t in types] + [(-1, 0, 0, 0), (0, -1, 0, 0), (0, 0, -1, 0)]
    vertices = []
    for a, b, c in itertools.combinations(planes, 3):
        y = solve3([a[:3], b[:3], c[:3]], [a[3], b[3], c[3]])
        if y is None or any(v < -1e-9 for v in y):
            continue
        if all(t[0] * y[0] + t[1] * y[1] + t[2] * y[2] <= t[3] + 1e-9 for t in types):
            vertices.append(y)
    return vertices


def main():
    if len(sys.argv) not in (4, 5):
        sys.exit(__doc__.split("\n\n")[1])
    trace, catalog, sim = sys.argv[1], sys.argv[2], sys.argv[3]
    region = sys.argv[4] if len(sys.argv) == 5 else "us-east-1"
    with open(sim, encoding="utf-8") as f:
        horizon = json.load(f)["scenario"]["horizon_s"]
    types = catalog_types(catalog, region)
    if not types:
        sys.exit(f"{catalog}: no GPU types priced in {region}")
    vertices = dual_vertices(types)
    with open(trace, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    last = 0
    for r in rows:
        for col in ("creation_time", "deletion_time", "scheduled_time"):
            if r.get(col):
                last = max(last, int(r[col]))
    first = min((int(r["creation_time"]) for r in rows if r.get("creation_time")), default=0)
    changes = {}
    for line, r in enumerate(rows, start=2):
        if r["qos"] not in ("LS", "Guaranteed"):
            continue
        try:
            submit = int(r["creation_time"]) - first
            start = submit
            ran = int(r["deletion_time"] or last) - int(r["scheduled_time"] or r["creation_time"])
            end = min(horizon, submit + ran)
            gpus = int(r["num_gpu"]) if int(r["num_gpu"]) > 0 else int(r["gpu_milli"]) / 1000
            need = (int(r["cpu_milli"]) / 1000, int(r["memory_mib"]) / 1024, gpus)
        except ValueError as e:
            print(f"{trace}:{line}: {e}", file=sys.stderr)
            sys.exit(2)
        if end <= start:
            continue
        for t, sign in ((start, 1), (end, -1)):
            d = changes.setdefault(t, [0.0, 0.0, 0.0])
            for i in range(3):
                d[i] += sign * need[i]
    now = [0.0, 0.0, 0.0]
    usd = gpu_hours = 0.0
    previous = None
    for t in sorted(changes):
        if previous is not None and t > previous:
            hours = (t - previous) / 3600
            usd += hours * max(now[0] * y[0] + now[1] * y[1] + now[2] * y[2] for y in vertices)
            gpu_hours += hours * now[2]
        for i in range(3):
            now[i] += changes[t][i]
        previous = t
    print(f"serving pods on on-demand, lower bound: {usd:.0f} USD for {gpu_hours:.0f} GPU-hours "
          f"({len(types)} GPU types in {region}, {len(vertices)} dual vertices)")


if __name__ == "__main__":
    main()
