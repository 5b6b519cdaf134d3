#!/usr/bin/env python3
"""scripts/check_layering.py on small source trees: each wrong-way include
fails with file:line, each allowed one passes."""
import json
import os
import subprocess
import sys
import tempfile

CHECK = os.path.join(os.path.dirname(__file__), "..", "..", "scripts", "check_layering.py")

# A source tree: three modules with public headers, store's private header,
# an unowned header, a test-side helper and the sources that include them.
TREE = {
    "include/gpuscaler/store/rows.h": "",
    "include/gpuscaler/model/time.h": "",
    "include/gpuscaler/controller/controller.h": "",
    "include/gpuscaler/cloud/provider.h": "",
    "include/gpuscaler/orphan.h": "",
    "src/store/schema.h": "",
    "src/store/local.h": "",
    "tests/support/helper.h": '#include "gpuscaler/store/rows.h"\n',
}


def module(files, links, seams=()):
    return {"kind": "module", "files": files, "include_dirs": ["include"], "links": links, "seams": list(seams)}


def test_entry(files, links):
    return {"kind": "test", "files": files, "include_dirs": ["tests", ".", "include"], "links": links, "seams": []}


MODULES = {
    "gpuscaler_model": module(["include/gpuscaler/model/time.h"], []),
    "gpuscaler_controller": module(["include/gpuscaler/controller/controller.h"], ["gpuscaler_model"],
                                   seams=["gpuscaler/cloud/provider.h"]),
    "gpuscaler_cloud": module(["include/gpuscaler/cloud/provider.h"], ["gpuscaler_model"]),
}


def run(files, entries):
    """Writes TREE plus `files` and the table of MODULES plus `entries` (paths
    relative to the tree) and runs the check: (exit code, stderr with the
    tree's path replaced by ROOT)."""
    with tempfile.TemporaryDirectory() as d:
        root = os.path.realpath(d)
        for rel, text in {**TREE, **files}.items():
            path = os.path.join(root, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write(text)
        table = {"source_dir": root, "entries": {}}
        for name, entry in {**MODULES, **entries}.items():
            entry = dict(entry)
            entry["files"] = [os.path.join(root, p) for p in entry["files"]]
            entry["include_dirs"] = [os.path.normpath(os.path.join(root, p)) for p in entry["include_dirs"]]
            table["entries"][name] = entry
        with open(os.path.join(root, "t.json"), "w") as f:
            json.dump(table, f)
        stamp = os.path.join(root, "ok")
        r = subprocess.run([sys.executable, CHECK, os.path.join(root, "t.json"), stamp], capture_output=True, text=True)
        assert (r.returncode == 0) == os.path.exists(stamp), "the stamp is written exactly when the check passes"
        return r.returncode, r.stderr.replace(root, "ROOT")


def store_module(links=("gpuscaler_model",), seams=()):
    owned = ["src/store/store.cc", "src/store/schema.h", "src/store/local.h", "include/gpuscaler/store/rows.h"]
    return {"gpuscaler_store": module(owned, list(links), seams)}


def expect_pass(name, files, entries):
    rc, err = run(files, entries)
    assert rc == 0, f"{name}: expected to pass, got:\n{err}"


def expect_fail(name, files, entries, line):
    """The check fails and reports `line` (file:line: message start) on a line of its own."""
    rc, err = run(files, entries)
    assert rc == 1, f"{name}: expected to fail, exit {rc}:\n{err}"
    assert any(l.startswith(line) for l in err.splitlines()), f"{name}: no line starting with\n  {line}\nin:\n{err}"


def main():
    ok_module = '#include "gpuscaler/store/rows.h"\n#include "gpuscaler/model/time.h"\n#include "local.h"\n'
    wrong_way = ok_module + '#include "gpuscaler/controller/controller.h"\n'
    cases = 0

    expect_pass("a module includes its own, a linked module's and a local header",
                {"src/store/store.cc": ok_module}, store_module())
    expect_fail("a module includes a module it does not link",
                {"src/store/store.cc": wrong_way}, store_module(),
                "ROOT/src/store/store.cc:4: gpuscaler_store includes gpuscaler/controller/controller.h of "
                "gpuscaler_controller, which it does not link")
    expect_pass("a module includes a seam it declares",
                {"src/store/store.cc": wrong_way}, store_module(seams=["gpuscaler/controller/controller.h"]))
    cases += 3

    expect_fail("a module includes a tests/ header",
                {"src/store/store.cc": ok_module + '#include "tests/support/helper.h"\n'}, store_module(),
                'ROOT/src/store/store.cc:4: gpuscaler_store includes tests/support/helper.h (tests/support/helper.h), '
                'test code')
    expect_fail("an include that resolves to no file",
                {"src/store/store.cc": '#include "gpuscaler/status.h"\n#include "gpuscaler/store/nowhere.h"\n'},
                store_module(),
                'ROOT/src/store/store.cc:2: cannot attribute "gpuscaler/store/nowhere.h" to a module (no such file')
    expect_fail("an include of a file no module owns",
                {"src/store/store.cc": '#include "gpuscaler/orphan.h"\n'}, store_module(),
                'ROOT/src/store/store.cc:1: cannot attribute "gpuscaler/orphan.h" to a module '
                '(include/gpuscaler/orphan.h is owned by none')
    cases += 3

    linked_test = {"store_test": test_entry(["tests/store/store_test.cc"], ["gpuscaler_store", "gpuscaler_model"])}
    expect_pass("a test includes a linked module's public and private headers and a test-side helper",
                {"src/store/store.cc": ok_module,
                 "tests/store/store_test.cc": '#include "gpuscaler/store/rows.h"\n#include "src/store/schema.h"\n'
                                              '#include "support/helper.h"\n#include "../support/helper.h"\n'},
                {**store_module(), **linked_test})
    expect_fail("a test includes a module it does not link",
                {"src/store/store.cc": ok_module,
                 "tests/store/store_test.cc": '#include "gpuscaler/store/rows.h"\n'
                                              '#include "gpuscaler/controller/controller.h"\n'},
                {**store_module(), **linked_test},
                "ROOT/tests/store/store_test.cc:2: store_test includes gpuscaler/controller/controller.h of "
                "gpuscaler_controller, which it does not link")
    expect_fail("a test includes a module's private header without linking the module",
                {"src/store/store.cc": ok_module, "tests/model/model_test.cc": '#include "src/store/schema.h"\n'},
                {**store_module(), "model_test": test_entry(["tests/model/model_test.cc"], ["gpuscaler_model"])},
                "ROOT/tests/model/model_test.cc:1: model_test includes src/store/schema.h of gpuscaler_store, "
                "which it does not link")
    expect_fail("a test-side helper header includes a module the test does not link",
                {"src/store/store.cc": ok_module, "tests/model/model_test.cc": '\n#include "support/helper.h"\n'},
                {**store_module(), "model_test": test_entry(["tests/model/model_test.cc"], ["gpuscaler_model"])},
                "ROOT/tests/support/helper.h:1: model_test includes gpuscaler/store/rows.h of gpuscaler_store, "
                "which it does not link")
    expect_fail("a test includes a test-side header that does not exist",
                {"src/store/store.cc": ok_module, "tests/store/store_test.cc": '#include "support/gone.h"\n'},
                {**store_module(), **linked_test},
                'ROOT/tests/store/store_test.cc:1: cannot attribute "support/gone.h" to a module (no such file')
    expect_pass("a test uses a seam declared by a module it links",
                {"tests/controller/controller_test.cc": '#include "gpuscaler/cloud/provider.h"\n'},
                {"controller_test": test_entry(["tests/controller/controller_test.cc"], ["gpuscaler_controller"])})
    expect_fail("a test uses a seam of a module it does not link",
                {"tests/model/model_test.cc": '#include "gpuscaler/cloud/provider.h"\n'},
                {"model_test": test_entry(["tests/model/model_test.cc"], ["gpuscaler_model"])},
                "ROOT/tests/model/model_test.cc:1: model_test includes gpuscaler/cloud/provider.h of gpuscaler_cloud")
    cases += 7

    print(f"check_layering: {cases} cases pass")


if __name__ == "__main__":
    main()
