#!/usr/bin/env python3
"""scripts/check_layering.py: a wrong-way include fails, allowed ones pass."""
import json
import os
import subprocess
import sys
import tempfile

CHECK = os.path.join(os.path.dirname(__file__), "..", "..", "scripts", "check_layering.py")


def run(files, links, seams=()):
    with tempfile.TemporaryDirectory() as d:
        paths = {}
        for name, text in files.items():
            p = os.path.join(d, name.replace("/", "_"))
            with open(p, "w") as f:
                f.write(text)
            paths[name] = p
        table = {
            "gpuscaler_store": {"files": [paths["store.cc"]], "include_prefixes": ["gpuscaler/store/"],
                                "links": links, "seams": list(seams)},
            "gpuscaler_model": {"files": [], "include_prefixes": ["gpuscaler/model/"], "links": [], "seams": []},
            "gpuscaler_controller": {"files": [], "include_prefixes": ["gpuscaler/controller/"], "links": [],
                                     "seams": []},
        }
        with open(os.path.join(d, "t.json"), "w") as f:
            json.dump(table, f)
        r = subprocess.run([sys.executable, CHECK, os.path.join(d, "t.json"), os.path.join(d, "ok")],
                           capture_output=True, text=True)
        return r.returncode, r.stderr


def main():
    ok_src = '#include "gpuscaler/store/rows.h"\n#include "gpuscaler/model/time.h"\n#include "local.h"\n'
    rc, err = run({"store.cc": ok_src}, ["gpuscaler_model"])
    assert rc == 0, err
    bad_src = ok_src + '#include "gpuscaler/controller/controller.h"\n'
    rc, err = run({"store.cc": bad_src}, ["gpuscaler_model"])
    assert rc == 1 and ":4: gpuscaler_store includes gpuscaler/controller/controller.h" in err, err
    rc, err = run({"store.cc": bad_src}, ["gpuscaler_model"], seams=["gpuscaler/controller/controller.h"])
    assert rc == 0, err
    print("check_layering: 3 cases pass")


if __name__ == "__main__":
    main()
