"""Golden outputs of the study tools: layerbench-ab analyze (text, markdown, JSON), layerbench-gate
(text, markdown, JSON) and layerbench-report's markdown, on the committed studies in data/,
compared byte for byte with golden/cli/. Run from data/ with relative paths, so the outputs name
the files as a user's would. After an intended change of an output, regenerate with
LB_UPDATE_GOLDEN=1 and review the diff (and say why in the commit).

usage: golden_check.py LAYERBENCH_AB LAYERBENCH_GATE LAYERBENCH_REPORT WORK_DIR
"""
import difflib
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data")
GOLDEN = os.path.join(HERE, "golden", "cli")

STUDIES = ["telemetry.jsonl", "metrics.jsonl", "three.jsonl", "sequential.jsonl", "pairs.csv"]
FORMATS = {"txt": [], "md": ["--markdown", "-"], "json": ["--json", "-"]}

# (golden name, tool, arguments, exit code)
GATES = [
    ("gate-metrics-routing", "gate", ["--pairs", "metrics.jsonl", "--metric", "routing"], 1),
    ("gate-three", "gate", ["--pairs", "three.jsonl"], 1),
    ("gate-sequential", "gate", ["--pairs", "sequential.jsonl", "--sequential"], 1),
    ("gate-gbench", "gate", ["--baseline", "gbench_base.json", "--candidate", "gbench_candidate.json"], 1),
]


def cases():
    out = []
    for study in STUDIES:
        stem = os.path.splitext(study)[0]
        for ext, flags in FORMATS.items():
            out.append((f"analyze-{stem}.{ext}", "ab", ["analyze", study, *flags], 0))
    for name, tool, args, rc in GATES:
        for ext, flags in FORMATS.items():
            out.append((f"{name}.{ext}", tool, [*args, *flags], rc))
    return out


def main():
    ab, gate, report, work = sys.argv[1:5]
    tools = {"ab": ab, "gate": gate}
    work = os.path.join(work, "golden_check")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    update = bool(os.environ.get("LB_UPDATE_GOLDEN"))
    env = dict(os.environ, LAYERBENCH_PROGRESS="off")
    failures = []

    def compare(name, text):
        path = os.path.join(GOLDEN, name)
        if update:
            os.makedirs(GOLDEN, exist_ok=True)
            with open(path, "w", encoding="utf-8", newline="") as f:
                f.write(text)
            return
        if not os.path.exists(path):
            failures.append(f"{name}: golden missing (LB_UPDATE_GOLDEN=1 writes it)")
            return
        with open(path, encoding="utf-8", newline="") as f:
            want = f.read()
        if want != text:
            diff = "".join(difflib.unified_diff(want.splitlines(True), text.splitlines(True), name, "now", n=1))
            failures.append(f"{name}: differs from {path}\n{diff[:4000]}")

    for name, tool, args, rc in cases():
        p = subprocess.run([tools[tool], *args], cwd=DATA, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=120)
        if p.returncode != rc:
            failures.append(f"{name}: exit {p.returncode}, expected {rc}: {p.stderr.decode()[:500]}")
            continue
        compare(name, p.stdout.decode("utf-8"))

    # The report's paired-study sections (markdown) of every study.
    out = os.path.join(work, "report")
    p = subprocess.run([report, *STUDIES, "-o", out], cwd=DATA, env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=120)
    if p.returncode != 0:
        failures.append(f"report: exit {p.returncode}: {p.stderr.decode()[:500]}")
    else:
        with open(os.path.join(out, "report.md"), encoding="utf-8", newline="") as f:
            compare("report-studies.md", f.read())

    for f in failures:
        print("FAIL:", f)
    print(f"{len(cases()) + 1 - len(failures)} of {len(cases()) + 1} outputs match")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
