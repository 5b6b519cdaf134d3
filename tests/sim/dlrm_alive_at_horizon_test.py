#!/usr/bin/env python3
"""bench/sim/dlrm_alive_at_horizon.py: counts the instances alive at the horizon
as the alibaba-dlrm reader builds them, and fails a run whose unfinished jobs
differ from that count or that left a job never started."""
import json
import os
import subprocess
import sys
import tempfile

CHECK = os.path.join(os.path.dirname(__file__), "..", "..", "bench", "sim", "dlrm_alive_at_horizon.py")
HEADER = "instance_sn,role,app_name,cpu_request,gpu_request,memory_request,creation_time,scheduled_time,deletion_time\n"
# Horizon 1000 s; the largest time in the file is 5000 s.
ROWS = [
    "i0,HN,a,8,1,40,,,",              # existed at the start, never deleted: runs to 5000, alive
    "i1,CN,a,64,0,320,100,100,200",   # runs 100..200: finishes
    "i2,CN,a,64,0,320,50,60,",        # runs from 50 until 5000 - 60 later: alive
    "i3,HN,a,8,1,40,10.4,10.4,5000",  # deleted after the horizon: alive
    "i4,CN,a,48,0,240,300,300,300",   # zero duration: dropped by the reader
    # Deleted after the horizon in the source, but scheduled 800 s after its
    # creation: replayed from its creation it needs 200 s and ends at 300.
    "i5,HN,a,8,1,40,100,900,1100",
]


def run(rows, results, jobs=None, horizon=1000):
    with tempfile.TemporaryDirectory() as d:
        trace = os.path.join(d, "t.csv")
        with open(trace, "w") as f:
            f.write(HEADER + "".join(r + "\n" for r in rows))
        sim = os.path.join(d, "s.json")
        with open(sim, "w") as f:
            json.dump({"scenario": {"horizon_s": horizon, "jobs": 5 if jobs is None else jobs},
                       "results": results}, f)
        r = subprocess.run([sys.executable, CHECK, trace, sim], capture_output=True, text=True)
        return r.returncode, r.stdout, r.stderr


def result(name, completed, unfinished, never=None):
    return {"name": name, "jobs_completed": completed, "jobs_unfinished": unfinished, "never_started": never or {}}


def main():
    rc, out, err = run(ROWS, [result("on-demand", 2, 3), result("gpuscaler", 2, 3)])
    assert rc == 0, (out, err)
    assert "5 jobs; alive at the horizon (1000 s): 3 (CN 1, HN 2)" in out, out
    assert "on-demand: completed 2, unfinished 3 (alive 3): holds" in out, out

    # One run left a fourth job unfinished: that run fails, the other holds.
    rc, out, err = run(ROWS, [result("on-demand", 2, 3), result("greedy", 1, 4)])
    assert rc == 1, (out, err)
    assert "greedy: completed 1, unfinished 4 (alive 3): FAILS" in out, out
    assert "on-demand: completed 2, unfinished 3 (alive 3): holds" in out, out

    # The right count, but a job never started: not every instance was placed.
    rc, out, err = run(ROWS, [result("karpenter", 2, 3, {"pool-max: pools that fit are at max_nodes": 1})])
    assert rc == 1, (out, err)
    assert "never started: 1 x pool-max" in out and "FAILS" in out, out

    # i2 is replayed from its submission at 50 for 5000 - 60 s: alive until 4990.
    rc, out, err = run(ROWS, [result("on-demand", 2, 3)], horizon=4989)
    assert rc == 0, (out, err)
    rc, out, err = run(ROWS, [result("on-demand", 3, 2)], horizon=4990)
    assert rc == 0 and "alive at the horizon (4990 s): 2" in out, (out, err)

    # A replay of another file (or with a window) is refused, not compared.
    rc, out, err = run(ROWS, [result("on-demand", 2, 3)], jobs=6)
    assert rc == 2 and "the replay has 6 jobs" in err and "gives 5" in err, err

    # Bad input names the place.
    rc, out, err = run(ROWS + ["i6,CN,a,8,0,40,abc,,"], [result("on-demand", 2, 3)])
    assert rc == 2 and "t.csv:8: column 'creation_time': 'abc' is not a number" in err, err
    with tempfile.TemporaryDirectory() as d:
        trace = os.path.join(d, "t.csv")
        with open(trace, "w") as f:
            f.write("instance_sn,role,creation_time,scheduled_time\n")
        r = subprocess.run([sys.executable, CHECK, trace, os.path.join(d, "none.json")], capture_output=True, text=True)
        assert r.returncode == 2 and "t.csv:1: missing column 'deletion_time'" in r.stderr, r.stderr
    print("ok")


if __name__ == "__main__":
    main()
