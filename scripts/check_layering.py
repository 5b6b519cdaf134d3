#!/usr/bin/env python3
"""Fails when a module includes a header of a module it does not link.

Reads the layering table CMake writes at configure time (one entry per
module: the folders and files it owns, the modules it links, directly or
through others, and the seam headers it may use without linking their
module) and checks every `#include "..."` of every file a module owns.
Includes of a module's own headers, of gpuscaler/status.h and of local
private headers (no folder) are always allowed. Exit 1 with one line per
wrong-way include (file:line: ...), 0 when the layering holds.
"""
import json
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def owner_of(header, table):
    """The module owning an include path such as gpuscaler/cloud/provider.h or sim/world.h."""
    best, best_len = None, -1
    for name, m in table.items():
        for prefix in m["include_prefixes"]:
            if prefix.endswith("/"):
                ok = header.startswith(prefix) and "/" not in header[len(prefix):]
            else:
                ok = header == prefix
            if ok and len(prefix) > best_len:
                best, best_len = name, len(prefix)
    return best


def main():
    table_path, stamp = sys.argv[1], sys.argv[2]
    with open(table_path) as f:
        table = json.load(f)
    problems = []
    for name, m in sorted(table.items()):
        allowed = set(m["links"]) | {name}
        seams = set(m["seams"])
        for path in m["files"]:
            try:
                lines = open(path, encoding="utf-8").read().splitlines()
            except OSError as e:
                problems.append(f"{path}: cannot read: {e}")
                continue
            for n, line in enumerate(lines, 1):
                hit = INCLUDE.match(line)
                if not hit:
                    continue
                header = hit.group(1)
                if "/" not in header or header == "gpuscaler/status.h" or header in seams:
                    continue
                owner = owner_of(header, table)
                if owner is None or owner in allowed:
                    continue
                problems.append(f"{path}:{n}: {name} includes {header} of {owner}, which it does not link "
                                f"(add {owner} to its dependencies if the layering allows it, or move the code)")
    if problems:
        print("\n".join(problems), file=sys.stderr)
        return 1
    with open(stamp, "w") as f:
        f.write("ok\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
