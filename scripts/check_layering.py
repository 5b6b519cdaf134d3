#!/usr/bin/env python3
"""Fails when a module, test or benchmark includes a header it may not use.

Reads the layering table CMake writes at configure time (cmake/layering.cmake):
{"source_dir": ..., "entries": {name: entry}}. An entry is a module
("kind": "module", its "files" are the files it owns) or a target defined
under tests/ or bench/ ("kind": "test", its "files" are its sources there);
each lists its "include_dirs", the modules it "links" (directly or through
other targets) and the "seams" it may include without linking their module.

Every `#include "..."` is resolved to a file as the compiler would: the
including file's folder, the entry's include directories, then include/ and
the source root. The file's owner is the module whose files contain it. The
include passes when the owner is the entry itself or a module it links, or
when it names a declared seam (for a test, also one declared by a module it
links). A file under tests/ or bench/ is test code:
a test entry may include it, and its includes are then checked as part of
that entry (so a helper header is checked for every target that uses it);
a module may not. gpuscaler/status.h and local headers named without a
folder always pass. Anything else fails, including an include that resolves
to no file or to a file no module owns.

Exit 1 with one line per problem (file:line: ...), 0 with the stamp written
when the layering holds.
"""
import json
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
ALWAYS_ALLOWED = {"gpuscaler/status.h"}


class Layering:
    def __init__(self, table):
        self.root = os.path.realpath(table["source_dir"])
        self.entries = table["entries"]
        self.test_roots = [os.path.join(self.root, "tests"), os.path.join(self.root, "bench")]
        self.owner = {}
        for name, entry in self.entries.items():
            if entry["kind"] == "module":
                for path in entry["files"]:
                    self.owner[os.path.realpath(path)] = name
        self._lines = {}

    def lines(self, path):
        """The lines of `path`, read once; None when it cannot be read."""
        if path not in self._lines:
            try:
                with open(path, encoding="utf-8") as f:
                    self._lines[path] = f.read().splitlines()
            except OSError:
                self._lines[path] = None
        return self._lines[path]

    def search_path(self, including_file, entry):
        """The folders an include of `including_file` is looked up in, in order."""
        folders = [os.path.dirname(including_file)] + entry["include_dirs"]
        return folders + [os.path.join(self.root, "include"), self.root]

    def resolve(self, header, folders):
        """The real path of the first file `header` names in `folders`, or None."""
        for folder in folders:
            candidate = os.path.join(folder, header)
            if os.path.isfile(candidate):
                return os.path.realpath(candidate)
        return None

    def is_test_code(self, path):
        return any(path.startswith(r + os.sep) for r in self.test_roots)

    def shown(self, path):
        """`path` relative to the source root, for messages."""
        return os.path.relpath(path, self.root)

    def check(self, name, entry):
        """The problems of one entry's files (and, for a test, its test-side headers)."""
        problems = []
        allowed = set(entry["links"]) | {name}
        seams = set(entry["seams"])
        is_test = entry["kind"] == "test"
        if is_test:
            # A test drives a module through the seams it is written against
            # (a fake CloudProvider for the controller), so it may include
            # them without linking their module either.
            for module in entry["links"]:
                seams |= set(self.entries.get(module, {}).get("seams", []))
        todo = [os.path.realpath(p) for p in entry["files"]]
        seen = set(todo)
        while todo:
            path = todo.pop(0)
            lines = self.lines(path)
            if lines is None:
                problems.append(f"{path}: cannot read it ({name})")
                continue
            for n, line in enumerate(lines, 1):
                hit = INCLUDE.match(line)
                if not hit:
                    continue
                header = hit.group(1)
                if header in ALWAYS_ALLOWED or header in seams:
                    continue
                folders = self.search_path(path, entry)
                resolved = self.resolve(header, folders)
                if resolved is not None and self.is_test_code(resolved):
                    if not is_test:
                        problems.append(f"{path}:{n}: {name} includes {header} ({self.shown(resolved)}), test code "
                                        f"(production code never includes tests/ or bench/: move what it needs into "
                                        f"the module)")
                    elif resolved not in seen:
                        seen.add(resolved)
                        todo.append(resolved)
                    continue
                if "/" not in header:
                    continue
                if resolved is None:
                    looked = ", ".join(self.shown(f) for f in dict.fromkeys(folders))
                    problems.append(f'{path}:{n}: cannot attribute "{header}" to a module (no such file in {looked}; '
                                    f'a third-party header is included with <...>)')
                    continue
                owner = self.owner.get(resolved)
                if owner is None:
                    problems.append(f'{path}:{n}: cannot attribute "{header}" to a module ({self.shown(resolved)} '
                                    f'is owned by none: give it to one with gpuscaler_owns)')
                    continue
                if owner in allowed:
                    continue
                problems.append(f"{path}:{n}: {name} includes {header} of {owner}, which it does not link "
                                f"(add {owner} to its dependencies if the layering allows it, or move the code)")
        return problems


def main():
    table_path, stamp = sys.argv[1], sys.argv[2]
    with open(table_path) as f:
        layering = Layering(json.load(f))
    problems = []
    for name, entry in sorted(layering.entries.items()):
        problems += layering.check(name, entry)
    if problems:
        print("\n".join(problems), file=sys.stderr)
        return 1
    with open(stamp, "w") as f:
        f.write("ok\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
