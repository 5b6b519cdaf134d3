#!/usr/bin/env python3
"""Checks a DLRM replay against its trace: unfinished = alive at the horizon.

    bench/sim/dlrm_alive_at_horizon.py TRACE.csv SIM.json

TRACE.csv is an Alibaba GPU v2025 DLRM instance file (`--trace-format
alibaba-dlrm`), SIM.json the output of `gpuscaler sim ... --json` (one run or
`--compare`) on that file with the reader's defaults (no window, no job cap).

From the CSV alone, with the reader's rules (docs/traces.md), each instance
becomes a job submitted at its creation time (0 when it existed at the trace
start) running for deletion - start (start = scheduled_time, else
creation_time; no deletion_time: until the largest time in the file); times
are rounded to whole seconds and shifted so the earliest submission is 0, and
rows of non-positive duration are dropped, as the reader does. A job is alive
at the horizon when it would still run there had it started the moment it was
submitted: submit + duration > horizon_s (taken from the JSON). Such a job can
never finish in the replay, so every run has at least that many unfinished;
exactly that many, and no job that never started, means every other instance
was placed and ran to its end.

Prints one line per run and exits 0 when every run holds, 1 when one does not,
2 on bad input (naming the file, line and column).
"""
import csv
import json
import math
import sys


class BadInput(Exception):
    pass


def seconds(path, line, column, text):
    try:
        v = float(text)
    except ValueError:
        raise BadInput(f"{path}:{line}: column '{column}': '{text}' is not a number") from None
    if not math.isfinite(v):
        raise BadInput(f"{path}:{line}: column '{column}': '{text}' is not a finite number")
    return int(math.copysign(math.floor(abs(v) + 0.5), v))  # half away from zero, as the reader rounds


def read_jobs(path):
    """Returns [(instance_sn, role, submit_s, duration_s)] as the reader builds them."""
    required = ("instance_sn", "role", "creation_time", "scheduled_time", "deletion_time")
    rows = []
    latest = 0
    try:
        with open(path, newline="", encoding="utf-8-sig") as f:
            reader = csv.DictReader(f)
            missing = [c for c in required if c not in (reader.fieldnames or [])]
            if missing:
                raise BadInput(f"{path}:1: missing column '{missing[0]}'")
            for r in reader:
                line = reader.line_num
                times = {}
                for c in ("creation_time", "scheduled_time", "deletion_time"):
                    text = (r[c] or "").strip()
                    times[c] = None if text == "" else seconds(path, line, c, text)
                created = times["creation_time"] or 0
                started = times["scheduled_time"] if times["scheduled_time"] is not None else created
                latest = max(latest, created, started, times["deletion_time"] or 0)
                rows.append((r["instance_sn"], r["role"], created, started, times["deletion_time"]))
    except OSError as e:
        raise BadInput(f"{path}: {e.strerror}") from None
    jobs = []
    for sn, role, created, started, deleted in rows:
        end = deleted if deleted is not None else latest
        if end - started <= 0:
            continue  # the reader's "non-positive duration"
        jobs.append((sn, role, created, end - started))
    if jobs:
        origin = min(j[2] for j in jobs)
        jobs = [(sn, role, submit - origin, d) for sn, role, submit, d in jobs]
    return jobs


def read_runs(path):
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except OSError as e:
        raise BadInput(f"{path}: {e.strerror}") from None
    except json.JSONDecodeError as e:
        raise BadInput(f"{path}:{e.lineno}: {e.msg}") from None
    try:
        scenario = doc["scenario"]
        horizon = int(scenario["horizon_s"])
        jobs = int(scenario["jobs"])
        runs = [(r["name"], int(r["jobs_completed"]), int(r["jobs_unfinished"]), dict(r["never_started"]))
                for r in doc["results"]]
    except (KeyError, TypeError, ValueError) as e:
        raise BadInput(f"{path}: not the JSON of `gpuscaler sim --json` ({type(e).__name__}: {e})") from None
    return horizon, jobs, runs


def check(trace_path, json_path, out=sys.stdout):
    jobs = read_jobs(trace_path)
    horizon, sim_jobs, runs = read_runs(json_path)
    if sim_jobs != len(jobs):
        raise BadInput(f"{json_path}: the replay has {sim_jobs} jobs, {trace_path} gives {len(jobs)}: "
                       "not a replay of this file with the reader's defaults")
    alive = [j for j in jobs if j[2] + j[3] > horizon]
    by_role = {}
    for j in alive:
        by_role[j[1]] = by_role.get(j[1], 0) + 1
    roles = ", ".join(f"{k} {v}" for k, v in sorted(by_role.items()))
    print(f"{trace_path}: {len(jobs)} jobs; alive at the horizon ({horizon} s): {len(alive)} ({roles})", file=out)
    ok = True
    for name, completed, unfinished, never in runs:
        never_count = sum(never.values())
        holds = unfinished == len(alive) and completed == len(jobs) - len(alive) and never_count == 0
        ok = ok and holds
        detail = "" if never_count == 0 else "; never started: " + ", ".join(f"{v} x {k}" for k, v in never.items())
        print(f"{name}: completed {completed}, unfinished {unfinished} (alive {len(alive)}){detail}: "
              f"{'holds' if holds else 'FAILS'}", file=out)
    return ok


def main(argv):
    if len(argv) != 3:
        print("usage: dlrm_alive_at_horizon.py TRACE.csv SIM.json", file=sys.stderr)
        return 2
    try:
        return 0 if check(argv[1], argv[2]) else 1
    except BadInput as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
