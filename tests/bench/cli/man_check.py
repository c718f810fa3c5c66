"""The man pages made from --help: each has its EXAMPLES, and no raw UTF-8 symbol that a C-locale
man shows as "??" (they are roff escapes: \\(+- for ±).

usage: man_check.py MAN_DIR
"""
import os
import sys

man_dir = sys.argv[1]
failures = []
pages = [p for p in os.listdir(man_dir) if p.endswith(".1")] if os.path.isdir(man_dir) else []
if not pages:
    print("no man pages built (help2man missing)")
    sys.exit(77)
for page in pages:
    text = open(os.path.join(man_dir, page), encoding="utf-8").read()
    if "EXAMPLES" not in text.upper():
        failures.append(f"{page}: no EXAMPLES")
    raw = sorted({c for c in text if ord(c) > 127})
    if raw:
        failures.append(f"{page}: raw non-ASCII characters {raw}")
    if page == "layerbench-ab.1" and "\\(+-" not in text:
        failures.append(f"{page}: X\\(+-E missing (--predicted)")
for f in failures:
    print("FAIL:", f)
sys.exit(1 if failures else 0)
