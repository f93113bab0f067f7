#!/usr/bin/env python3
"""The library's rooms, checked: every libsim/ source file sits in a folder, each folder's README.md
says what it may include, includes keep to that, the folders form no cycle, and no code file passes
600 lines. Prints every breach with file:line and exits 1; exits 0 silently when all hold."""
import os
import re
import subprocess
import sys

MAX_LINES = 600
CODE = re.compile(r"\.(c|cc|cpp|h|hpp|cu|cuh|py|in)$")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')

root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
os.chdir(root)
lib = "libsim"
problems = []


def files_under(top):
    try:
        out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", top],
                             capture_output=True, text=True, check=True).stdout.split()
        if out:
            return sorted(out)
    except (OSError, subprocess.CalledProcessError):
        pass
    return sorted(os.path.join(d, f) for d, _, fs in os.walk(top) for f in fs)


folders = sorted(d for d in os.listdir(lib) if os.path.isdir(os.path.join(lib, d)))
allowed = {}
for f in folders:
    readme = os.path.join(lib, f, "README.md")
    if not os.path.isfile(readme):
        problems.append(f"{readme}: missing: each folder says what it owns and what it may include")
        continue
    text = open(readme, encoding="utf-8").read()
    m = re.search(r"^May include:\s*(.*)$", text, re.M)
    if not re.search(r"^Owns:", text, re.M) or not m:
        problems.append(f"{readme}:1: expected an 'Owns:' line and a 'May include:' line")
        continue
    may = m.group(1)
    if may.startswith("every folder"):
        allowed[f] = set(folders) | {"fleetsim"}
    else:
        allowed[f] = {w for w in re.findall(r"[a-z_]+", may) if w in folders}

# the folders' own graph must have no cycle: then "lower" and "higher" mean something
order, state = [], {}


def visit(f, path):
    if state.get(f) == "done":
        return
    if state.get(f) == "open":
        problems.append(f"{lib}/{f}/README.md: the folders include each other in a cycle: {' -> '.join(path + [f])}")
        return
    state[f] = "open"
    for g in sorted(allowed.get(f, ())):
        if g != f and g in folders:
            visit(g, path + [f])
    state[f] = "done"
    order.append(f)


for f in folders:
    visit(f, [])

for path in files_under(lib):
    rel = os.path.relpath(path, lib)
    parts = rel.split(os.sep)
    if len(parts) == 1:
        if rel != "README.md":
            problems.append(f"{path}: sits in libsim/ itself; put it in the folder its concern names ({', '.join(folders)})")
        continue
    folder = parts[0]
    if not CODE.search(path):
        continue
    for n, line in enumerate(open(path, encoding="utf-8", errors="replace"), 1):
        m = INCLUDE.match(line)
        if not m:
            continue
        inc = m.group(1)
        head = inc.split("/")[0]
        if "/" not in inc:
            if not os.path.isfile(os.path.join(os.path.dirname(path), inc)):
                problems.append(f"{path}:{n}: #include \"{inc}\" names no file beside it; "
                                f"include another folder's file as \"folder/{inc}\"")
        elif head == folder:
            continue
        elif head not in allowed.get(folder, set()):
            problems.append(f"{path}:{n}: {folder}/ may not include {head}/ (#include \"{inc}\"); "
                            f"{lib}/{folder}/README.md says what it may include")

for path in files_under("."):
    path = os.path.normpath(path)
    if not CODE.search(path) or path.startswith(("tests/golden", "build")) or not os.path.isfile(path):
        continue
    with open(path, encoding="utf-8", errors="replace") as fh:
        lines = sum(1 for _ in fh)
    if lines > MAX_LINES:
        problems.append(f"{path}: {lines} lines, over {MAX_LINES}: split it by concern")

for p in problems:
    print(p)
if problems:
    print(f"check-layout: {len(problems)} problem(s); layers from the bottom: {', '.join(order)}")
    sys.exit(1)
