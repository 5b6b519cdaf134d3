#!/usr/bin/env python3
"""Fails when a source file in src/, sim/, include/, bench/ or tests/ is over 600 lines.

Rooms stay small: a file that outgrows 600 lines is split before a feature
lands in it. The files that are over the limit today are listed below with
the most lines each may have; they may shrink (lower the figure when one
does) but never grow, and a file leaves the list once it is under the limit.
Generated files and test data are not looked at.

  scripts/check_file_sizes.py [REPO]     # exit 1 with one line per file
"""
import os
import sys

LIMIT = 600
SOURCE_DIRS = ("src", "sim", "include", "bench", "tests")
SUFFIXES = (".cc", ".h")
# Files allowed over the limit, with the lines each may have at most (none
# today: a new one needs the review that says why it stays whole).
GRANDFATHERED: dict[str, int] = {}


def main():
    repo = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    problems = []
    for top in SOURCE_DIRS:
        for root, _, files in os.walk(os.path.join(repo, top)):
            for name in sorted(files):
                if not name.endswith(SUFFIXES):
                    continue
                path = os.path.join(root, name)
                rel = os.path.relpath(path, repo).replace(os.sep, "/")
                with open(path, encoding="utf-8", errors="replace") as f:
                    lines = sum(1 for _ in f)
                allowed = GRANDFATHERED.get(rel, LIMIT)
                if lines > allowed:
                    why = f"at most {allowed} (it may not grow)" if rel in GRANDFATHERED else f"over {LIMIT}"
                    problems.append(f"{rel}: {lines} lines, {why}: split it before adding to it")
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
