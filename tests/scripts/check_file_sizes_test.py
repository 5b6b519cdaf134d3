#!/usr/bin/env python3
"""scripts/check_file_sizes.py: a new file over 600 lines fails, and so does a
listed one that grows; a file at the limit passes."""
import os
import subprocess
import sys
import tempfile

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "scripts", "check_file_sizes.py")


def run(repo):
    return subprocess.run([sys.executable, SCRIPT, repo], capture_output=True, text=True)


def write(repo, rel, lines):
    path = os.path.join(repo, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write("//\n" * lines)


with tempfile.TemporaryDirectory() as repo:
    write(repo, "src/model/ok.cc", 600)
    r = run(repo)
    assert r.returncode == 0, r.stdout
    write(repo, "sim/new.h", 601)
    r = run(repo)
    assert r.returncode == 1 and "sim/new.h: 601 lines, over 600" in r.stdout, r.stdout
    os.remove(os.path.join(repo, "sim/new.h"))
    write(repo, "src/solver/scale_up.cc", 1003)
    r = run(repo)
    assert r.returncode == 1 and "src/solver/scale_up.cc: 1003 lines, at most 1002" in r.stdout, r.stdout
    write(repo, "tests/big_test.cc", 5000)  # tests are not looked at
    write(repo, "src/solver/scale_up.cc", 900)
    r = run(repo)
    assert r.returncode == 0, r.stdout
print("ok")
