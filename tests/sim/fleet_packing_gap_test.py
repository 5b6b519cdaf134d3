#!/usr/bin/env python3
"""bench/sim/fleet_packing_gap.py: on a small audit store, finds the cheapest
on-demand fleet for the work on the on-demand nodes (spot nodes and empty
nodes left out), and fails clearly on a missing store or run."""
import json
import os
import sqlite3
import subprocess
import sys
import tempfile

GAP = os.path.join(os.path.dirname(__file__), "..", "..", "bench", "sim", "fleet_packing_gap.py")

TYPES = [
    {"name": "g4dn.2xlarge", "vcpus": 8, "memory_mib": 32768, "gpu_count": 1},
    {"name": "g4dn.4xlarge", "vcpus": 16, "memory_mib": 65536, "gpu_count": 1},
    {"name": "g4dn.12xlarge", "vcpus": 48, "memory_mib": 196608, "gpu_count": 4},
    {"name": "m7i.4xlarge", "vcpus": 16, "memory_mib": 65536, "gpu_count": 0},
]
PRICES = {"g4dn.2xlarge": 0.752, "g4dn.4xlarge": 1.204, "g4dn.12xlarge": 3.912, "m7i.4xlarge": 0.8064}


def offering(instance_type, capacity_type="on-demand", price=None):
    return {"instance_type": instance_type, "region": "us-east-1", "zone": "us-east-1a",
            "capacity_type": capacity_type, "usd_per_hour": PRICES[instance_type] if price is None else price,
            "available": True}


def unit(uid, gpus, gpu_milli, cpu_milli, memory_mib):
    return {"id": uid, "gpus": gpus, "gpu_milli": gpu_milli, "cpu_milli": cpu_milli, "memory_mib": memory_mib}


def node(nid, off, running):
    return {"id": nid, "offering": off, "running": running}


def snapshot(nodes):
    # A spot g4dn.4xlarge far below on-demand: the cheapest fleet is on-demand only.
    offerings = [offering(t) for t in PRICES] + [offering("g4dn.4xlarge", "spot", 0.1)]
    return {"instance_types": TYPES, "offerings": offerings, "nodes": nodes, "pending": []}


# Two 0.46-GPU pods of 6 vCPU on a g4dn.2xlarge each (1.504 USD/h) share one
# g4dn.4xlarge (1.204); the spot node's unit and the empty node do not count.
SMALL = snapshot([
    node("a", offering("g4dn.2xlarge"), [unit("p1", 0, 460, 6000, 12288)]),
    node("b", offering("g4dn.2xlarge"), [unit("p2", 0, 460, 6000, 12288)]),
    node("s", offering("g4dn.4xlarge", "spot", 0.1), [unit("p3", 1, 0, 12000, 16384)]),
    node("e", offering("g4dn.12xlarge"), []),
])
# Four 12-vCPU replicas on a g4dn.4xlarge each (4.816) fit one g4dn.12xlarge (3.912).
REPLICAS = snapshot([node(f"r{i}", offering("g4dn.4xlarge"), [unit(f"q{i}", 1, 0, 12000, 16384)]) for i in range(4)])


def store(path):
    db = sqlite3.connect(path)
    db.executescript("create table runs (id integer primary key, name text);"
                     "create table decisions (id integer primary key, time integer, run_id integer);"
                     "create table decision_inputs (decision_id integer, snapshot blob);"
                     "insert into runs values (1, 'on-demand'), (2, 'gpuscaler');")
    # Samples of a 2-sample read fall at 25 and 75: the first decision at or
    # after each is SMALL (25) and REPLICAS (75). The other run's decision
    # (REPLICAS at 25) must not be read.
    for did, t, run, snap in [(1, 0, 2, SMALL), (2, 25, 2, SMALL), (3, 75, 2, REPLICAS), (4, 100, 2, REPLICAS),
                              (5, 25, 1, REPLICAS)]:
        blob = subprocess.run(["zstd", "-cq"], input=json.dumps(snap).encode(), capture_output=True,
                              check=True).stdout
        db.execute("insert into decisions values (?, ?, ?)", (did, t, run))
        db.execute("insert into decision_inputs values (?, ?)", (did, blob))
    db.commit()
    db.close()


def gap(*args):
    r = subprocess.run([sys.executable, GAP, *args], capture_output=True, text=True)
    return r.returncode, r.stdout, r.stderr


def main():
    with tempfile.TemporaryDirectory() as d:
        db = os.path.join(d, "audit.db")
        store(db)
        rc, out, err = gap(db, "--samples", "2")
        assert rc == 0, (out, err)
        rows = [line.split() for line in out.splitlines()[1:3]]
        # time_h units nodes fleet optimum ratio
        assert rows[0][1:5] == ["2", "2", "1.504", "1.204"], out
        assert rows[1][1:5] == ["4", "4", "4.816", "3.912"], out
        assert "fleet 6.320 USD/h, optimum 5.116 USD/h, ratio 0.8095" in out, out
        assert "not proven optimal" not in out, out

        rc, out, err = gap(db, "--run", "greedy")
        assert rc == 2 and "no run named greedy" in err, (rc, out, err)
    rc, out, err = gap(os.path.join(tempfile.gettempdir(), "no-such-store.db"))
    assert rc == 2 and "no such file" in err, (rc, out, err)
    print("fleet_packing_gap.py: ok")


if __name__ == "__main__":
    main()
