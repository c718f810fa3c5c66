"""Every output of every binary, read by every tool: written by X (the fixture lb.fixture.outputs:
layerbench-moe/-attn/-coll JSON, CSV and Google Benchmark JSON, layerbench-ab's study JSONL, --json
and --csv; a hyperfine --export-json file in hyperfine's documented format), read by
`layerbench-ab analyze`, `layerbench-gate` and `layerbench-report`. A paired file is analysed by
all three (with one sign); an unpaired one is gated and reported, and `analyze` refuses it in one
line naming what it is. A Google Benchmark file written with --benchmark_report_aggregates_only (by
layerbench-coll here) is reported, and the gate names why it cannot test it. A binary's summary CSV is
reported; the gate and analyze name what it is. Foreign files (another tool's JSON, a JSON array, an
empty file, a CSV of another shape, plain text, markdown, binary bytes) get a one-line named diagnosis
and exit 2 from every tool.

usage: matrix_check.py AB GATE REPORT COLL OUTPUTS_DIR WORK_DIR
"""
import json
import os
import shutil
import subprocess
import sys

AB, GATE, REPORT, COLL, OUTPUTS, WORK = sys.argv[1:7]
WORK = os.path.join(WORK, "matrix_check")
shutil.rmtree(WORK, ignore_errors=True)
os.makedirs(WORK)
failures = []


def run(exe, *args):
    p = subprocess.run([exe, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300, cwd=WORK,
                       env=dict(os.environ, LAYERBENCH_PROGRESS="off"))
    return p.returncode, p.stdout.decode(), p.stderr.decode()


def expect(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what[:1500])


def out(name):
    return os.path.join(OUTPUTS, name)


def work(name):
    return os.path.join(WORK, name)


# hyperfine 1.15's --export-json, per its documentation: one result per command with its times (s).
def hyperfine(path, command, times):
    mean = sum(times) / len(times)
    with open(path, "w") as f:
        json.dump({"results": [{"command": command, "mean": mean, "stddev": 0.0, "median": sorted(times)[len(times) // 2],
                                "user": 0.001, "system": 0.001, "min": min(times), "max": max(times), "times": times,
                                "exit_codes": [0] * len(times)}]}, f)


hyperfine(work("hf-old.json"), "./old", [0.0200 + 0.0001 * (i % 5) for i in range(20)])
hyperfine(work("hf-new.json"), "./new", [0.0240 + 0.0001 * (i % 7) for i in range(20)])
# The real hyperfine (Debian's package, bench/scripts/deps.sh) where installed: its own file.
if shutil.which("hyperfine"):
    subprocess.run(["hyperfine", "--runs", "5", "--warmup", "1", "-N", "true", "--export-json", work("hf-real.json")],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120, check=True)

# A Google Benchmark file of aggregates only, written by a binary (one host rank: a second's run).
aggregates = work("coll_aggregates.json")
subprocess.run([COLL, "--backend", "host", "-b", "8", "-e", "64", "-f", "8", "--iterations", "5", "--warmup", "1",
                "--benchmark_format=json", "--benchmark_out=" + aggregates, "--benchmark_report_aggregates_only=true"],
               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120, check=True, cwd=WORK,
               env=dict(os.environ, LAYERBENCH_PROGRESS="off", OMPI_ALLOW_RUN_AS_ROOT="1",
                        OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1"))

paired = [out("study.jsonl"), out("ab.json"), out("ab-runs.csv")]
unpaired = [out("moe.json"), out("attn.json"), out("coll.json"), out("moe_gb.json"), out("coll_gb.json"),
            work("hf-old.json")] + ([work("hf-real.json")] if shutil.which("hyperfine") else [])
summaries = [out("moe.csv"), out("attn.csv"), out("coll.csv")]


def one_line(rc, err, name, *words):
    """Exit 2 and one line on stderr that names the file (and each of `words`)."""
    return rc == 2 and err.count("\n") == 1 and name in err and all(w in err for w in words)


# Paired: the same pairs and the same sign in all three tools; --baseline/--candidate points to --pairs.
means = []
for f in paired:
    name = os.path.basename(f)
    rc, text, err = run(AB, "analyze", f, "--json", "-", "--resamples", "1000")
    expect(rc == 0, f"analyze {name}: rc {rc}: {err}")
    if rc == 0:
        j = json.loads(text)
        means.append(j["delta"]["mean"])
        expect(j["n"] == 24, f"analyze {name}: {j['n']} pairs, not 24")
    rc, text, err = run(GATE, "--pairs", f, "--json", "-")
    expect(rc in (0, 1), f"gate --pairs {name}: rc {rc}: {err}")
    if rc in (0, 1) and means:
        change = json.loads(text)["findings"][0]["change"]
        expect((change > 0) == (means[-1] > 0), f"gate and analyze disagree in sign on {name}")
    rc, _, err = run(REPORT, f, "-o", work("r-" + name))
    expect(rc == 0 and "skipped" not in err, f"report {name}: rc {rc}: {err}")
    rc, _, err = run(GATE, "--baseline", f, "--candidate", f)
    expect(one_line(rc, err, name, "--pairs"), f"gate --baseline {name}: rc {rc}: {err!r}")
expect(len(means) == 3 and max(means) - min(means) < 1e-9 * max(1.0, abs(means[0])),
       f"the three paired files give different mean deltas: {means}")

# Unpaired: gated against themselves (an A/A: no regression), reported; analyze and gate --pairs
# refuse in one line naming what the file is.
for f in unpaired:
    name = os.path.basename(f)
    rc, _, err = run(GATE, "--baseline", f, "--candidate", f)
    expect(rc == 0, f"gate --baseline/--candidate {name}: rc {rc}: {err}")
    rc, _, err = run(REPORT, f, "-o", work("r-" + name))
    expect(rc == 0 and "skipped" not in err, f"report {name}: rc {rc}: {err}")
    rc, _, err = run(AB, "analyze", f)
    expect(one_line(rc, err, name, "pairs"), f"analyze {name}: rc {rc}: {err!r}")
    rc, _, err = run(GATE, "--pairs", f)
    expect(one_line(rc, err, name, "pairs"), f"gate --pairs {name}: rc {rc}: {err!r}")

# Aggregates only: reported; the gate says why it cannot test it; analyze names Google Benchmark.
rc, _, err = run(REPORT, aggregates, "-o", work("r-aggregates"))
expect(rc == 0, f"report of an aggregates-only file: rc {rc}: {err}")
rc, _, err = run(GATE, "--baseline", aggregates, "--candidate", aggregates)
expect(one_line(rc, err, "coll_aggregates.json", "--benchmark_report_aggregates_only", "--iterations") and
       "unknown metric" not in err, f"gate of an aggregates-only file: rc {rc}: {err!r}")
rc, _, err = run(AB, "analyze", aggregates)
expect(one_line(rc, err, "coll_aggregates.json", "Google Benchmark"), f"analyze of aggregates: rc {rc}: {err!r}")

# A binary's summary CSV: reported; the gate and analyze name it (summaries, no samples, no pairs).
for f in summaries:
    name = os.path.basename(f)
    rc, _, err = run(REPORT, f, "-o", work("r-" + name))
    expect(rc == 0, f"report {name}: rc {rc}: {err}")
    for exe, args in [(AB, ["analyze", f]), (GATE, ["--pairs", f]), (GATE, ["--baseline", f, "--candidate", f])]:
        rc, _, err = run(exe, *args)
        expect(one_line(rc, err, name, "results CSV"), f"{os.path.basename(exe)} {args[0]} {name}: rc {rc}: {err!r}")

# hyperfine: the two files gated (the new command is 20% slower: a regression) and reported together.
rc, text, err = run(GATE, "--baseline", work("hf-old.json"), "--candidate", work("hf-new.json"), "--json", "-")
expect(rc == 1 and json.loads(text)["findings"][0]["label"] == "regressed beyond the threshold",
       f"gate on hyperfine files: rc {rc}: {text[:400]} {err}")
rc, _, err = run(REPORT, work("hf-old.json"), work("hf-new.json"), "-o", work("r-hf"))
expect(rc == 0, f"report of hyperfine files: rc {rc}: {err}")

# Foreign files: one named line, exit 2, from every tool.
foreign = {"foreign.json": json.dumps({"hello": [1, 2, 3]}), "array.json": "[1, 2, 3]\n", "empty.csv": "",
           "cities.csv": "city,population\nParis,2100000\nLyon,520000\n", "notes.txt": "hello world\n",
           "notes.md": "# Notes\n\n| a | b |\n|---|---|\n| 1 | 2 |\n"}
for name, text in foreign.items():
    with open(work(name), "w") as f:
        f.write(text)
with open(work("foreign.bin"), "wb") as f:
    f.write(bytes(range(256)))
for name in list(foreign) + ["foreign.bin"]:
    f = work(name)
    for exe, args in [(AB, ["analyze", f]), (GATE, ["--pairs", f]), (GATE, ["--baseline", f, "--candidate", f]),
                      (REPORT, [f, "-o", work("r-foreign")])]:
        rc, _, err = run(exe, *args)
        expect(one_line(rc, err, name), f"{os.path.basename(exe)} {args[0]} {name}: rc {rc}: {err!r}")

print(f"{len(failures)} failure(s)")
sys.exit(1 if failures else 0)
