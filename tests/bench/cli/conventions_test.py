#!/usr/bin/env python3
"""One command-line convention across the binaries, end to end:
  * --version: "NAME VERSION (git SHA)" and the CUDA/NCCL/cuDNN/MPI versions built against;
  * --help: the program name (not a path) in the usage line, defaults shown, the Google
    Benchmark flags listed (MPI binaries);
  * output files: --json FILE, --csv FILE, --markdown FILE everywhere ('-' = standard output),
    never a boolean --json / --markdown; every JSON written carries a schema;
  * CUDA-only flags on the host backend: exit 2 with one message.

usage: conventions_test.py COLL MOE ATTN AB GATE REPORT DATA_DIR [DEVELOPER_BINARY...]
(developer binaries: --version only)
"""
import json
import os
import re
import signal
import subprocess
import sys
import tempfile

coll, moe, attn, ab, gate, report, data = sys.argv[1:8]
developer = sys.argv[8:]
binaries = {"layerbench-coll": coll, "layerbench-moe": moe, "layerbench-attn": attn, "layerbench-ab": ab,
            "layerbench-gate": gate, "layerbench-report": report}
mpi_binaries = {"layerbench-coll", "layerbench-moe", "layerbench-attn"}
failures = []


def run(*cmd, timeout=120):
    p = subprocess.run(list(cmd), capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def expect(cond, what):
    if not cond:
        failures.append(what)


# Help texts to check: each binary's, and each subcommand's of layerbench-ab.
helps = {}
for name, exe in binaries.items():
    rc, out, err = run(exe, "--version")
    lines = out.splitlines()
    expect(rc == 0 and lines and re.fullmatch(rf"{name} \d+\.\d+\.\d+ \(git \S+\)", lines[0]),
           f"{name} --version: rc {rc}, {out!r} {err[-300:]!r}")
    expect(len(lines) > 1 and re.fullmatch(r"built with: CUDA \S+, NCCL \S+, cuDNN \S+, .*MPI.*", lines[1]),
           f"{name} --version: library line {lines[1:2]!r}")
    rc, out, err = run(exe, "--help")
    expect(rc == 0, f"{name} --help: rc {rc} {err[-300:]}")
    helps[name] = out
for exe in developer:
    name = os.path.basename(exe)
    rc, out, err = run(exe, "--version")
    expect(rc == 0 and re.match(rf"{name} \d+\.\d+\.\d+ \(git \S+\)\nbuilt with: CUDA ", out),
           f"{name} --version: rc {rc}, {out!r} {err[-300:]!r}")
for sub in ("analyze", "plan", "run"):
    rc, out, err = run(ab, sub, "--help")
    expect(rc == 0, f"layerbench-ab {sub} --help: rc {rc} {err[-300:]}")
    helps[f"layerbench-ab {sub}"] = out

for name, text in helps.items():
    # Every user binary's --help (and so its man page) ends with examples.
    expect("EXAMPLES:" in text and re.search(r"\n  (mpirun .*)?layerbench-", text.split("EXAMPLES:")[-1]),
           f"{name} --help: no EXAMPLES block")
    usage = [l for l in text.splitlines() if l.startswith("Usage:")]
    expect(usage and usage[0].split()[1] == name.split()[0] and "/" not in usage[0],
           f"{name}: usage line {usage[:1]!r} should name the program, not a path")
    # Output-file flags take FILE, never a bare switch.
    for flag in ("--json", "--csv", "--markdown"):
        for line in text.splitlines():
            m = re.match(rf"\s+{flag}(\s+(\S+))?", line)
            if m and not line.strip().startswith(f"{flag}_"):
                expect(m.group(2) == "FILE" and "'-': standard output" in line,
                       f"{name}: {flag} should be '{flag} FILE' ('-' = stdout): {line.strip()!r}")
    expect("--version" in text or " " in name, f"{name}: --version not listed")
    if name.split()[0] in mpi_binaries:
        for gb in ("--benchmark_format", "--benchmark_out", "--benchmark_filter"):
            expect(gb in text, f"{name}: {gb} not listed in --help")

# Defaults are shown (CLI11 prints TYPE=DEFAULT).
for name, needle in [("layerbench-coll", "--iterations INT=30"), ("layerbench-coll", "-e,--maxbytes TEXT=64M"),
                     ("layerbench-moe", "--tokens INT=7500"), ("layerbench-attn", "=14 "),
                     ("layerbench-gate", "--threshold TEXT=2%"), ("layerbench-report", "--title TEXT=layerbench report"),
                     ("layerbench-ab analyze", "--resamples UINT=200000"), ("layerbench-ab plan", "--power FLOAT=0.8")]:
    expect(needle in helps[name], f"{name} --help: default missing ({needle!r})")
for name in ("layerbench-gate", "layerbench-report", "layerbench-ab analyze", "layerbench-ab plan"):
    expect("--confidence C" in helps[name] and "--alpha A" in helps[name],
           f"{name}: --confidence and --alpha should both be accepted")

tmp = tempfile.mkdtemp()
csv_in = os.path.join(data, "study.csv")

# layerbench-ab analyze: text on stdout, JSON and markdown files in one call.
rc, out, err = run(ab, "analyze", csv_in, "--resamples", "2000", "--json", f"{tmp}/a.json", "--markdown", f"{tmp}/a.md")
expect(rc == 0 and "pairs" in out.lower(), f"ab analyze with files: rc {rc} {err[-300:]}")
if rc == 0:
    expect(json.load(open(f"{tmp}/a.json")).get("schema") == "layerbench-ab-analysis/1", "ab analyze JSON schema")
    md = open(f"{tmp}/a.md").read()  # the analysis' sections: prose, then GitHub tables
    expect("\n|---" in md and "**Arms**" in md, "ab analyze markdown file")
rc, out, err = run(ab, "analyze", csv_in, "--resamples", "2000", "--alpha", "1%", "--json", "-")
expect(rc == 0 and json.loads(out)["t_ci"]["confidence"] == 0.99, f"ab analyze --alpha 1% --json -: rc {rc} {err[-200:]}")
rc, out, err = run(ab, "analyze", csv_in, os.path.join(os.environ["LB_TEST_OUTPUTS"], "study.jsonl"), "--resamples", "2000", "--json", "-")
j = json.loads(out) if rc == 0 else {}
expect(j.get("schema") == "layerbench-ab-analyses/1" and len(j.get("analyses", [])) == 2
       and all(a["schema"] == "layerbench-ab-analysis/1" and "input" in a for a in j["analyses"]),
       f"ab analyze of two inputs --json -: rc {rc} {err[-200:]}")
rc, out, err = run(ab, "plan", "--sd", "1", "--effect", "0.5", "--json", "-")
expect(rc == 0 and json.loads(out).get("schema") == "layerbench-ab-plan/1", f"ab plan --json -: rc {rc} {err[-200:]}")

# layerbench-gate: text verdict on stdout, JSON to a file or to stdout.
rc, out, err = run(gate, "--pairs", csv_in, "--threshold", "50%", "--json", f"{tmp}/g.json")
expect(rc in (0, 1) and "PASS" in out or "FAIL" in out, f"gate --json FILE: text on stdout: rc {rc} {out[-200:]}")
expect(os.path.exists(f"{tmp}/g.json") and json.load(open(f"{tmp}/g.json")).get("schema") == "layerbench-gate/1",
       "gate JSON file with schema")
rc, out, err = run(gate, "--pairs", csv_in, "--threshold", "50%", "--json", "-")
expect(rc in (0, 1) and json.loads(out).get("schema") == "layerbench-gate/1", f"gate --json -: rc {rc}")

# layerbench-coll: '-' sends the JSON to stdout (the table moves to stderr); a host run records
# no CUDA driver version.
rc, out, err = run(coll, "--backend", "host", "--ops", "all_reduce", "-b", "1K", "-e", "1K", "--iterations", "2",
                   "--warmup", "1", "--json", "-")
doc = None
try:
    doc = json.loads(out)
except ValueError:
    failures.append(f"coll --json -: stdout is not JSON: rc {rc} {out[:300]!r} {err[-300:]!r}")
if doc:
    expect(doc["schema"] == "layerbench/2" and doc["complete"] is True, "coll JSON schema/complete")
    expect("cuda_driver" not in doc["context"]["versions"], f"host run records a CUDA driver: {doc['context']['versions']}")
    expect("all_reduce" in err, "coll --json -: the table should go to stderr")

# CUDA-only flags on the host backend: one message, exit 2.
for exe, args in [(coll, ["--graph"]), (coll, ["--comm-alloc", "--nvlink-centric-sched"])]:
    rc, out, err = run(exe, "--backend", "host", *args, "-b", "8", "-e", "8")
    expect(rc == 2 and "only the CUDA backend uses" in err and err.count("\n") <= 2,
           f"{os.path.basename(exe)} {args} on host: rc {rc} {err!r}")

# GPU-sized defaults on the host backend: a run estimated over 10 minutes is refused at once (exit 2,
# one message naming the flags that shrink it and --yes); with --yes it warns and runs (stopped here
# once the warning is read).
def first_line_then_exit(cmd, wait=20):
    """The first stderr line, and the exit code if the process ends within `wait` s (else None: killed)."""
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    line = p.stderr.readline()
    try:
        rc = p.wait(timeout=wait)
    except subprocess.TimeoutExpired:
        rc = None
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    return line, rc


for exe, args, flag, hours in [(moe, [], "--tokens", True), (attn, ["--topologies", "cp1"], "--seqs", False)]:
    line, rc = first_line_then_exit([exe, "--backend", "host", *args])
    expect("GPU-sized" in line and flag in line, f"{os.path.basename(exe)} default geometry on host: {line!r}")
    # MoE's default geometry takes hours on the host: refused without --yes.
    if hours:
        expect(rc == 2 and "--yes" in line, f"{os.path.basename(exe)}: a run of hours without --yes: rc {rc} {line!r}")
    line, rc = first_line_then_exit([exe, "--backend", "host", "--yes", *args], wait=1)
    expect("GPU-sized" in line and flag in line and rc is None, f"{os.path.basename(exe)} --yes: rc {rc} {line!r}")

if failures:
    print("FAILED:\n  " + "\n  ".join(failures))
    sys.exit(1)
print("PASS")
