#!/usr/bin/env python3
"""How far a replay's on-demand fleet is from the cheapest fleet that holds the same work.

    bench/sim/fleet_packing_gap.py AUDIT.db [--run NAME] [--samples N] [--time-limit S]

AUDIT.db is the audit store of a `gpuscaler sim ... --db AUDIT.db` replay;
NAME the run to read (default gpuscaler). At N instants spread evenly over the
run (default 40), the snapshot of the first decision at or after the instant
gives the on-demand nodes and the units running on them. For each instant a
mixed-integer program finds the cheapest set of on-demand nodes of the
snapshot's GPU instance types (at the snapshot's on-demand prices) that holds
those units: every unit on one node, each node's vCPUs, memory and GPUs
covering what its units ask (a unit's GPUs are its whole GPUs plus its
fractional share, so two half-GPU units may share one GPU). It knows nothing
of zones, GPU models or how the fleet could get there. Solved to optimality, it
is a lower bound on what any fleet holding that work at that instant costs;
stopped at the time limit (default 20 s), the cheaper of its best fleet and
the replay's own is still a fleet that holds the work (so the replay's could
cost at least that much less), marked "not proven optimal".

Prints, per instant, the fleet's price per hour and the optimum's, then the
sums over the instants (uniform in time, so their ratio estimates the share of
the run's on-demand bill that perfect repacking at no cost would save).
Needs the `cbc` solver (Debian: coinor-cbc) and the `zstd` tool; exits 2 on
bad input.
"""
import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile


def snapshot(db, decision_id):
    blob = db.execute("select snapshot from decision_inputs where decision_id = ?", (decision_id,)).fetchone()
    if blob is None:
        return None
    raw = subprocess.run(["zstd", "-dcq"], input=blob[0], capture_output=True, check=True).stdout
    return json.loads(raw)


def on_demand_types(snap):
    """(name, vcpus*1000, memory MiB, gpus, price) of every GPU type with an on-demand offering,
    the dominated ones (dearer and no larger in any resource than another) left out."""
    price = {}
    for o in snap["offerings"]:
        if o["capacity_type"] == "on-demand" and o.get("available", True):
            t = o["instance_type"]
            price[t] = min(price.get(t, float("inf")), o["usd_per_hour"])
    types = [(t["name"], t["vcpus"] * 1000, t["memory_mib"], t["gpu_count"], price[t["name"]])
             for t in snap["instance_types"] if t.get("gpu_count", 0) > 0 and t["name"] in price]
    kept = []
    for a in types:
        dominated = any(b is not a and b[4] <= a[4] and b[1] >= a[1] and b[2] >= a[2] and b[3] >= a[3] and
                        (b[4] < a[4] or b[0] < a[0]) for b in types)
        if not dominated:
            kept.append(a)
    return kept


def demand(u):
    return (u["cpu_milli"], u["memory_mib"], u["gpus"] + u["gpu_milli"] / 1000.0)


def optimum(units, types, time_limit):
    """The cheapest fleet of `types` holding `units`: (USD per hour, proven optimal)."""
    n = len(units)
    if n == 0:
        return 0.0, True
    bins = n  # one unit per node always fits where the unit fits at all
    lines = ["Minimize", " cost: " + " + ".join(f"{t[4]:.6f} y_{b}_{k}" for b in range(bins)
                                               for k, t in enumerate(types)), "Subject To"]
    for i in range(n):
        # A unit goes to a node no later than its own index (breaks symmetry).
        lines.append(f" one_{i}: " + " + ".join(f"x_{i}_{b}" for b in range(i + 1)) + " = 1")
    for b in range(bins):
        lines.append(f" type_{b}: " + " + ".join(f"y_{b}_{k}" for k in range(len(types))) + " <= 1")
        for r, name in enumerate(("cpu", "mem", "gpu")):
            cap = " - ".join(f"{t[1 + r]} y_{b}_{k}" for k, t in enumerate(types))
            use = " + ".join(f"{demand(units[i])[r]:.4f} x_{i}_{b}" for i in range(b, n))
            if use:
                lines.append(f" {name}_{b}: {use} - {cap} <= 0")
    lines.append("Binaries")
    lines += [f" y_{b}_{k}" for b in range(bins) for k in range(len(types))]
    lines += [f" x_{i}_{b}" for i in range(n) for b in range(i + 1)]
    lines.append("End")
    with tempfile.TemporaryDirectory() as tmp:
        lp, sol = os.path.join(tmp, "p.lp"), os.path.join(tmp, "p.sol")
        with open(lp, "w") as f:
            f.write("\n".join(lines) + "\n")
        subprocess.run(["cbc", lp, "sec", str(time_limit), "solve", "solu", sol], capture_output=True, check=True)
        with open(sol) as f:
            head = f.readline()
    proven = head.startswith("Optimal")
    value = float(head.rsplit(None, 1)[-1])
    return value, proven


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("db")
    ap.add_argument("--run", default="gpuscaler")
    ap.add_argument("--samples", type=int, default=40)
    ap.add_argument("--time-limit", type=int, default=20)
    a = ap.parse_args()
    if not os.path.exists(a.db):
        print(f"{a.db}: no such file", file=sys.stderr)
        sys.exit(2)
    db = sqlite3.connect(a.db)
    run = db.execute("select id from runs where name = ?", (a.run,)).fetchone()
    if run is None:
        print(f"{a.db}: no run named {a.run}", file=sys.stderr)
        sys.exit(2)
    first, last = db.execute("select min(time), max(time) from decisions where run_id = ?", run).fetchone()
    fleet_sum = opt_sum = 0.0
    unproven = 0
    print("time_h  units  nodes  fleet_usd_h  optimum_usd_h  ratio")
    for s in range(a.samples):
        at = first + (last - first) * (s + 0.5) / a.samples
        row = db.execute("select id from decisions where run_id = ? and time >= ? order by time limit 1",
                         (run[0], at)).fetchone()
        snap = snapshot(db, row[0]) if row else None
        if snap is None:
            continue
        nodes = [n for n in snap["nodes"] if n["offering"]["capacity_type"] == "on-demand" and n["running"]]
        units = sorted((u for n in nodes for u in n["running"]), key=lambda u: -sum(demand(u)[:2]))
        fleet = sum(n["offering"]["usd_per_hour"] for n in nodes)
        best, proven = optimum(units, on_demand_types(snap), a.time_limit)
        # The fleet itself holds the work: a search stopped early can only do better.
        best = min(best, fleet)
        unproven += not proven
        fleet_sum += fleet
        opt_sum += best
        print(f"{(at - first) / 3600:7.0f} {len(units):6d} {len(nodes):6d} {fleet:12.3f} {best:14.3f} "
              f"{best / fleet if fleet else 1:6.3f}{'' if proven else '  (not proven optimal)'}")
    print(f"sum over {a.samples} instants: fleet {fleet_sum:.3f} USD/h, optimum {opt_sum:.3f} USD/h, "
          f"ratio {opt_sum / fleet_sum if fleet_sum else 1:.4f}")
    if unproven:
        print(f"{unproven} of the programs stopped at the {a.time_limit} s limit: their fleets hold the work "
              "but may not be the cheapest")


if __name__ == "__main__":
    main()
