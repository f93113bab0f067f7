#!/usr/bin/env python3
"""Golden outputs: a fleetsim JSON document flattened to `path = value` lines, and the check that
a new output reproduces every recorded line (new paths may appear; a recorded one must not change
or disappear).

  golden.py flatten < out.json     the lines, in document order
  golden.py check GOLDEN_DIR OUT_DIR
                                   for each GOLDEN_DIR/NAME.txt, compare OUT_DIR/NAME.json; exit 1,
                                   naming NAME and each path, on a mismatch or a missing output

Values are the JSON text of each scalar (floats in shortest round-trip form), so a recorded line
matches only the same bits. Keys with '.', '[', '"' or spaces are written as ["key"].
"""
import glob
import json
import os
import re
import sys

_PLAIN = re.compile(r"^[A-Za-z0-9_\-]+$")


def _key(path, k):
    if _PLAIN.match(k):
        return path + "." + k if path else k
    return path + "[" + json.dumps(k) + "]"


def flatten(doc, containers=None):
    """The (path, value) leaves; an empty object or list is a leaf `{}` or `[]`. With
    `containers`, also fill it with path -> `{}` or `[]` for every object and list."""
    out = []

    def walk(x, path):
        if containers is not None and isinstance(x, (dict, list)):
            containers[path] = "{}" if isinstance(x, dict) else "[]"
        if isinstance(x, dict):
            if not x:
                out.append((path, "{}"))
            for k, v in x.items():
                walk(v, _key(path, k))
        elif isinstance(x, list):
            if not x:
                out.append((path, "[]"))
            for i, v in enumerate(x):
                walk(v, "%s[%d]" % (path, i))
        else:
            out.append((path, json.dumps(x)))

    walk(doc, "")
    return out


def read_golden(path):
    lines = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            p, sep, v = line.partition(" = ")
            if not sep:
                raise ValueError("%s:%d: not a `path = value` line" % (path, n))
            lines.append((p, v))
    return lines


def check(name, golden, out):
    """The failure lines for one scenario (empty if every recorded value is reproduced)."""
    try:
        want = read_golden(golden)
    except ValueError as e:
        return ["FAIL: %s: %s" % (name, e)]
    if not want:
        return ["FAIL: %s: %s records nothing" % (name, golden)]
    try:
        with open(out, encoding="utf-8") as f:
            containers = {}
            got = dict(flatten(json.load(f), containers))
    except OSError:
        return ["FAIL: %s: no output" % name]
    except ValueError as e:
        return ["FAIL: %s: output is not JSON (%s)" % (name, e)]
    fails = []
    for p, v in want:
        g = got.get(p)
        if g == v:
            continue
        if v in ("{}", "[]") and containers.get(p) == v:
            continue  # an empty object or list that has gained entries
        if g is None:
            fails.append("FAIL: %s: %s: recorded %s, now missing" % (name, p, v))
        else:
            fails.append("FAIL: %s: %s: recorded %s, now %s" % (name, p, v, g))
    if len(fails) > 20:
        fails = fails[:20] + ["FAIL: %s: ... %d values differ in all" % (name, len(fails))]
    return fails


def main(argv):
    if len(argv) == 2 and argv[1] == "flatten":
        for p, v in flatten(json.load(sys.stdin)):
            print("%s = %s" % (p, v))
        return 0
    if len(argv) == 4 and argv[1] == "check":
        goldens = sorted(glob.glob(os.path.join(argv[2], "*.txt")))
        if not goldens:
            print("FAIL: no golden files under %s" % argv[2])
            return 1
        passed = failed = 0
        for g in goldens:
            name = os.path.splitext(os.path.basename(g))[0]
            fails = check(name, g, os.path.join(argv[3], name + ".json"))
            for line in fails:
                print(line)
            if fails:
                failed += 1
            else:
                passed += 1
        print("golden: %d passed, %d failed" % (passed, failed))
        return 1 if failed else 0
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
