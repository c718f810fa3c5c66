"""The layout is part of the product: the include graph's rules, checked over every source file.

- `bench/<x>` never includes `bench/<y>` (bench/ holds binaries only; what two binaries share lives
  in a library outside bench/);
- no library (`common/`, `stats/`, `collectives/`, `harness/`, `reports/`, `study/`, `moe/`,
  `attention/`) and no developer tool (`tools/`) includes `bench/`;
- no include climbs out of its directory with `../` (so the rules above cannot be side-stepped);
- `moe/`'s folders keep their order: `config/` (the model description and its reading) < `moe/`'s own
  files (the layer interface, seeded values, FP8, expert tiles) < `hopper/` (the Hopper kernels) <
  `magi2/` and `standard/` (the two families, which never include each other) < `advisor/`. A file
  includes only its own folder and those below it;
- no source file under `moe/` is longer than MOE_MAX_LINES lines (a longer one is split by what it
  does, so that a folder's files show its seams).

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


MOE_MAX_LINES = 500

# moe/'s folders, lowest first ("" = moe/'s own files); equal levels never include each other.
MOE_LEVELS = {"config": 0, "": 1, "hopper": 2, "magi2": 3, "standard": 3, "advisor": 4}


def moe_folder(rel_parts):
    """The moe/ folder of a path split on '/', or None outside moe/."""
    if len(rel_parts) < 2 or rel_parts[0] != "moe":
        return None
    return rel_parts[1] if len(rel_parts) > 2 else ""


checked = 0
for top in ["bench"] + LIBRARIES:
    for path in sources(top):
        checked += 1
        rel = os.path.relpath(path, ROOT)
        parts = rel.split(os.sep)
        if top == "moe":
            with open(path, encoding="utf-8", errors="replace") as f:
                lines = sum(1 for _ in f)
            if lines > MOE_MAX_LINES:
                failures.append(f"{rel}: {lines} lines (a moe/ source file has at most {MOE_MAX_LINES}: split it)")
        for inc in includes(path):
            if inc.startswith("../") or "/../" in inc:
                failures.append(f"{rel}: includes {inc} (a path out of its directory)")
            src_folder, inc_folder = moe_folder(parts), moe_folder(inc.split("/"))
            if src_folder is not None and inc_folder is not None and src_folder != inc_folder:
                if src_folder not in MOE_LEVELS or inc_folder not in MOE_LEVELS:
                    failures.append(f"{rel}: includes {inc} (a moe/ folder the order does not know: add it to MOE_LEVELS)")
                elif MOE_LEVELS[inc_folder] >= MOE_LEVELS[src_folder]:
                    failures.append(f"{rel}: includes {inc} (moe/{inc_folder or '.'} is not below moe/{src_folder or '.'})")
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
