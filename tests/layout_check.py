"""The layout is part of the product: the include graph's rules, checked over every source file.

- `bench/<x>` never includes `bench/<y>` (bench/ holds binaries only; what two binaries share lives
  in a library outside bench/);
- no library (`common/`, `stats/`, `collectives/`, `harness/`, `reports/`, `study/`, `moe/`,
  `attention/`) and no developer tool (`tools/`) includes `bench/`;
- no include climbs out of its directory with `../` (so the rules above cannot be side-stepped).

usage: layout_check.py SOURCE_DIR
"""
import os
import re
import sys

ROOT = sys.argv[1]
LIBRARIES = ["common", "stats", "collectives", "harness", "reports", "study", "moe", "attention", "tools"]
SOURCES = (".cpp", ".hpp", ".cu", ".cuh", ".h", ".cc", ".inl")
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.M)
failures = []


def sources(top):
    for dirpath, dirnames, filenames in os.walk(os.path.join(ROOT, top)):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        for name in filenames:
            if name.endswith(SOURCES):
                yield os.path.join(dirpath, name)


def includes(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return INCLUDE.findall(f.read())


checked = 0
for top in ["bench"] + LIBRARIES:
    for path in sources(top):
        checked += 1
        rel = os.path.relpath(path, ROOT)
        parts = rel.split(os.sep)
        for inc in includes(path):
            if inc.startswith("../") or "/../" in inc:
                failures.append(f"{rel}: includes {inc} (a path out of its directory)")
            if not inc.startswith("bench/"):
                continue
            if top != "bench":
                failures.append(f"{rel}: includes {inc} ({top}/ never includes bench/)")
            elif len(parts) < 3 or inc.split("/")[1] != parts[1]:
                failures.append(f"{rel}: includes {inc} (bench/<x> never includes bench/<y>)")

# The check must see the tree: a wrong SOURCE_DIR would pass on nothing.
if checked < 50:
    failures.append(f"only {checked} source files under {ROOT}: not the source tree")
for f in failures:
    print("FAIL:", f)
print(f"{checked} source files checked, {len(failures)} violation(s)")
sys.exit(1 if failures else 0)
