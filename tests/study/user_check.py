"""The A/B, gate and report chain as a user meets it: each numbered problem of the "one study
engine" issue reproduced with the binaries' own outputs, and shown fixed.

usage: user_check.py AB GATE REPORT MOE MPIEXEC OUTPUTS_DIR WORK_DIR
(OUTPUTS_DIR: the binaries' real outputs, made by the fixture lb.fixture.outputs)
"""
import json
import os
import re
import shutil
import subprocess
import sys
import time

AB, GATE, REPORT, MOE, MPIEXEC, OUTPUTS, WORK = sys.argv[1:8]
WORK = os.path.join(WORK, "user_check")
shutil.rmtree(WORK, ignore_errors=True)
os.makedirs(WORK)
ENV = dict(os.environ, LAYERBENCH_PROGRESS="off")
failures = []


def run(exe, *args, timeout=120):
    p = subprocess.run([exe, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout, env=ENV,
                       cwd=WORK)
    return p.returncode, p.stdout.decode(), p.stderr.decode()


def expect(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what[:2000])


def path(name):
    return os.path.join(WORK, name)


def records(name, kind="run"):
    with open(path(name)) as f:
        return [r for r in (json.loads(line) for line in f if line.strip()) if r.get("type") == kind]


# A command printing a latency that depends on the pair: base ~10.x ms, candidate ~11.x ms (slower).
BASE = 'echo "lat 10.$LAYERBENCH_AB_PAIR ms"'
SLOWER = 'echo "lat 11.$LAYERBENCH_AB_PAIR ms"'
LAT = "lat(ms)=regex:lat ([0-9.]+) ms"


def check_metric_by_name():
    """1. The wrong metric under the right name; an unknown metric is exit 2."""
    rc, _, err = run(AB, "run", "--base", BASE, "--candidate", SLOWER, "--pairs", "6", "--metric", LAT, "--metric",
                     "wall", "--metric", "peak_rss", "--study", path("py.jsonl"), "--resamples", "1000")
    expect(rc == 0, f"1: study run rc {rc}: {err}")
    runs = records("py.jsonl")
    base_rss = [r["metrics"]["peak_rss"] for r in runs if r["arm"] == "base"]
    rc, out, err = run(GATE, "--pairs", path("py.jsonl"), "--metric", "peak_rss", "--json", "-")
    expect(rc in (0, 1), f"1: gate --metric peak_rss rc {rc}: {err}")
    if rc in (0, 1):
        f = json.loads(out)["findings"][0]
        expect(abs(f["base_center"] - sum(base_rss) / len(base_rss)) < 1e-6,
               f"1: gate --metric peak_rss base mean {f['base_center']} is not the peak RSS mean")
        expect(f["base_center"] > 100, f"1: peak_rss read as the latency ({f['base_center']})")
    rc, out, _ = run(GATE, "--pairs", path("py.jsonl"), "--json", "-")
    expect(rc in (0, 1) and json.loads(out)["metric"] == "lat" and json.loads(out)["unit"] == "ms",
           f"1: the primary metric is named lat (ms): {out[:300]}")
    rc, _, err = run(GATE, "--pairs", path("py.jsonl"), "--metric", "nonexistent")
    expect(rc == 2 and "nonexistent" in err and "peak_rss" in err, f"1: --metric nonexistent: rc {rc} {err}")
    rc, _, err = run(REPORT, path("py.jsonl"), "-o", path("py-report"))
    expect(rc == 0, f"1: report of the study: rc {rc} {err}")
    md = open(path("py-report/report.md")).read() if rc == 0 else ""
    expect("regex:" not in md.split("\n## ")[1].split("\n")[0] if "\n## " in md else False,
           "1/8: a regex metric's pattern is not the section title")


def check_fail_fast():
    """3. A broken command stops the study at its first failure."""
    # Counted, not timed: at most the one pair of the failure ran (50 pairs would run 100 arms).
    rc, _, err = run(AB, "run", "--base", "sleeep 0.01", "--candidate", "sleep 0.2", "--pairs", "50", "--study",
                     path("broken.jsonl"))
    expect(rc == 2 and "stopped at the first failure" in err and "exit 127" in err, f"3: rc {rc}: {err}")
    expect(len(records("broken.jsonl")) <= 2, f"3: ran {len(records('broken.jsonl'))} runs")
    rc, _, err = run(AB, "run", "--base", "sleeep 0.01", "--candidate", "true", "--pairs", "3", "--study",
                     path("ignored.jsonl"), "--ignore-failure")
    expect(rc == 2 and "fewer than 2 completed pairs" in err and len(records("ignored.jsonl", "pair_excluded")) == 3,
           f"3: --ignore-failure carries on: rc {rc} {err}")


def check_one_sign():
    """4. One sign: + = candidate slower, in ab analyze, gate and report alike."""
    rc, _, err = run(AB, "run", "--base", BASE, "--candidate", SLOWER, "--pairs", "8", "--metric", LAT, "--study",
                     path("slower.jsonl"), "--resamples", "1000")
    expect(rc == 0, f"4: run rc {rc} {err}")
    rc, out, _ = run(AB, "analyze", path("slower.jsonl"), "--json", "-", "--resamples", "1000")
    ab = json.loads(out) if rc == 0 else {}
    rc2, out2, _ = run(GATE, "--pairs", path("slower.jsonl"), "--json", "-")
    gate = json.loads(out2) if rc2 in (0, 1) else {}
    expect(ab.get("delta", {}).get("mean", 0) > 0, f"4: ab analyze delta {ab.get('delta')}")
    expect(gate.get("findings", [{}])[0].get("change", 0) > 0, f"4: gate change {gate.get('findings')}")
    rc, text, _ = run(AB, "analyze", path("slower.jsonl"), "--resamples", "1000")
    expect("slower" in text and "candidate minus base" in text, f"4: text names the direction: {text[:600]}")
    rc, _, err = run(REPORT, path("slower.jsonl"), "-o", path("slower-report"))
    md = open(path("slower-report/report.md")).read() if rc == 0 else ""
    expect("delta = candidate − base" in md and "slower" in md, f"4: report states the sign: rc {rc} {err}")


def check_markdown_tables():
    """7. Every markdown table has a delimiter row with one cell per column."""
    rc, _, err = run(AB, "run", "--base", BASE, "--candidate", SLOWER, "--candidate", 'echo "lat 9.$LAYERBENCH_AB_PAIR ms"',
                     "--name", "a", "--name", "b", "--name", "c", "--pairs", "6", "--metric", LAT, "--study",
                     path("three.jsonl"), "--markdown", path("three.md"), "--resamples", "1000")
    expect(rc == 0, f"7: three-arm run rc {rc} {err}")
    md = open(path("three.md")).read() if rc == 0 else ""
    lines = md.split("\n")
    tables = 0
    for i in range(1, len(lines)):
        if re.fullmatch(r"\|(\s*:?-+:?\s*\|)+", lines[i].strip()):
            tables += 1
            head = lines[i - 1].strip()
            expect(head.count("|") == lines[i].strip().count("|"), f"7: delimiter row {lines[i]!r} under {head!r}")
    expect(tables >= 3 and "Every arm against the base" in md, f"7: {tables} tables in {md[:400]}")


def check_all_arms_in_report():
    """2. Every arm of a three-arm study in the report, under its own name."""
    rc, _, err = run(REPORT, path("three.jsonl"), "-o", path("three-report"))
    expect(rc == 0, f"2: report rc {rc} {err}")
    md = open(path("three-report/report.md")).read() if rc == 0 else ""
    expect("b against a" in md and "c against a" in md, f"2: both candidates against the base, by name: {md[:500]}")
    expect("| a |" in md and "| b |" in md and "| c |" in md, "2: the arms' names in the tables")


def check_first_minutes():
    """9. hyperfine's positional form, a default study length, an existing file, unknown flags, examples."""
    rc, out, err = run(AB, "run", "--metric", "regex:lat ([0-9]+)", "echo lat 1", "echo lat 2", "--pairs", "3",
                       "--resamples", "1000")
    expect(rc == 0 and "--base is required" not in err, f"9: positional form: rc {rc} {err}")
    header = json.loads(open(path("study.jsonl")).readline()) if rc == 0 else {}
    expect(header.get("base") == "echo lat 1" and header.get("candidate") == "echo lat 2" and
           header.get("metric") == "regex:lat ([0-9]+)", f"9: the commands after --metric are the arms: {header}")
    rc, _, err = run(AB, "run", "echo lat 1", "echo lat 2", "--metric", "regex:lat ([0-9]+)", "--pairs", "3")
    expect(rc == 2 and "--force" in err and "--resume" in err, f"9: existing study.jsonl: rc {rc} {err}")
    rc, _, err = run(AB, "run", "echo lat 1", "echo lat 2", "--metric", "regex:lat ([0-9]+)", "--pairs", "3",
                     "--force", "--resamples", "1000")
    expect(rc == 0 and len(records("study.jsonl")) == 6, f"9: --force starts afresh: rc {rc} {err}")
    rc, _, err = run(AB, "run", "sleep 0.001", "sleep 0.05", "--study", path("default.jsonl"), "--resamples", "1000")
    header = json.loads(open(path("default.jsonl")).readline()) if os.path.exists(path("default.jsonl")) else {}
    expect(rc == 0 and "sequential" in header and "no --pairs" in err, f"9: default length: rc {rc} {err}")
    rc, _, err = run(AB, "run", "--pair", "5", "a", "b")
    expect(rc == 2 and "did you mean --pairs?" in err, f"9: --pair: {err}")
    rc, _, err = run(AB, "run", "-n", "20", "a", "b")
    expect(rc == 2 and "did you mean --name?" in err, f"9: -n: {err}")
    rc, _, err = run(GATE, "--threshhold", "2%", "--pairs", path("slower.jsonl"))
    expect(rc == 2 and "did you mean --threshold?" in err, f"9: gate --threshhold: {err}")
    for exe, args in [(AB, []), (AB, ["run"]), (AB, ["analyze"]), (AB, ["plan"]), (GATE, []), (REPORT, [])]:
        rc, out, _ = run(exe, *args, "--help")
        expect(rc == 0 and "EXAMPLES:" in out, f"9: {os.path.basename(exe)} {' '.join(args)} --help has no EXAMPLES")


def check_gate_verdicts():
    """6. Verdict labels; --higher-is-better against the unit; a rate's direction; aggregates-only files."""
    # A 41% slower candidate on 8 noisy pairs: significant, but its interval reaches inside 2%.
    noisy = 'echo "lat $(( (LAYERBENCH_AB_PAIR * 37) % 11 + 5 )) ms"'
    slower = 'echo "lat $(( (LAYERBENCH_AB_PAIR * 37) % 11 + 5 + (LAYERBENCH_AB_PAIR % 3) * 3 )) ms"'
    rc, _, err = run(AB, "run", "--base", noisy, "--candidate", slower, "--pairs", "8", "--metric", LAT, "--study",
                     path("noisy.jsonl"), "--resamples", "1000")
    rc, text, err = run(GATE, "--pairs", path("noisy.jsonl"), "--json", "-")
    f = json.loads(text)["findings"][0] if rc in (0, 1) else {}
    expect(f.get("label") in ("significant, size not resolved", "inconclusive", "regressed beyond the threshold"),
           f"6: label {f.get('label')}")
    if f.get("p_worse", 1) < 0.05 and f.get("verdict") != "regressed":
        expect(f.get("label") == "significant, size not resolved", f"6: p {f.get('p_worse')} labelled {f.get('label')}")
    rc, text, _ = run(GATE, "--pairs", path("py.jsonl"), "--metric", "lat", "--threshold", "50%")
    expect("no change larger than 50%" in text or "significant, size not resolved" in text, f"6: {text[-400:]}")
    rc, _, err = run(GATE, "--pairs", path("slower.jsonl"), "--higher-is-better")
    expect(rc == 2 and "is a time" in err, f"6: --higher-is-better on a time: rc {rc} {err}")
    bw = {"context": {"num_cpus": 2, "load_avg": [9.5, 8.0, 7.0]}, "benchmarks": []}
    for i in range(10):
        bw["benchmarks"].append({"name": "BM_copy", "run_name": "BM_copy", "run_type": "iteration", "iterations": 10,
                                 "real_time": 100.0, "cpu_time": 100.0, "time_unit": "ns",
                                 "bytes_per_second": 1e9 * (1 + 0.001 * (i % 3))})
    json.dump(bw, open(path("bw-base.json"), "w"))
    for b in bw["benchmarks"]:
        b["bytes_per_second"] *= 0.8  # 20% less bandwidth: worse
    json.dump(bw, open(path("bw-cand.json"), "w"))
    rc, text, err = run(GATE, "--baseline", path("bw-base.json"), "--candidate", path("bw-cand.json"), "--metric",
                        "bytes_per_second")
    expect(rc == 1 and "higher is better" in text and "loaded" in text, f"6: bandwidth drop: rc {rc} {text} {err}")
    agg = {"context": {}, "benchmarks": [{"name": "BM_a_mean", "run_name": "BM_a", "run_type": "aggregate",
                                          "aggregate_name": "mean", "real_time": 10.0, "time_unit": "ns"}]}
    json.dump(agg, open(path("agg.json"), "w"))
    rc, _, err = run(GATE, "--baseline", path("agg.json"), "--candidate", path("agg.json"))
    expect(rc == 2 and "aggregates_only" in err and "unknown metric" not in err, f"6: aggregates-only: {err}")


def check_report_page():
    """8. The report page: a regex metric's name and unit, adaptive units, a sequential stop stated."""
    rc, _, err = run(AB, "run", "sleep 0.001", "sleep 0.03", "--sequential", "--max-pairs", "40", "--study",
                     path("seq.jsonl"), "--resamples", "1000")
    expect(rc == 0, f"8: sequential run rc {rc} {err}")
    rc, _, err = run(REPORT, path("seq.jsonl"), path("slower.jsonl"), "-o", path("page"))
    md = open(path("page/report.md")).read() if rc == 0 else ""
    expect("Sequential stop after" in md, "8: the sequential stop is stated in the report")
    # The tables' rows only: the reading guidance quotes small p-values in scientific notation.
    rows = "\n".join(l for l in md.split("\n")
                     if l.startswith(("| mean", "| median", "| sd")) or (l.startswith("|") and "CI of the" in l))
    expect(rows and not re.search(r"\d(\.\d+)?e-0\d", rows), f"8: raw exponent numbers in the A/B tables: {rows[:600]}")
    expect("ms" in md and "Paired study — lat" in md, "8: the regex metric is titled by its name with its unit")


def check_shell_and_load():
    """9. The shell's start-up is measured and subtracted; --shell none runs directly; the load is recorded."""
    rc, _, err = run(AB, "run", "sleep 0.02", "sleep 0.025", "--pairs", "3", "--study", path("spawn.jsonl"),
                     "--resamples", "1000")
    header = json.loads(open(path("spawn.jsonl")).readline()) if rc == 0 else {}
    expect(header.get("shell_spawn", {}).get("wall_s", 0) > 0 and "load" in header, f"9: header {header}")
    rc, _, err = run(AB, "run", "-N", "sleep 0.02", "sleep 0.025", "--pairs", "3", "--study", path("direct.jsonl"),
                     "--resamples", "1000")
    header = json.loads(open(path("direct.jsonl")).readline()) if rc == 0 else {}
    expect(rc == 0 and header.get("shell") == "none" and "shell_spawn" not in header, f"9: -N: rc {rc} {err}")
    walls = [r["wall"] for r in records("direct.jsonl") if r["arm"] == "base"]
    expect(walls and min(walls) >= 0.019, f"9: -N wall times {walls}")


def check_own_outputs():
    """5. Every tool reads layerbench-ab's own --json and --csv, and hyperfine's --export-json."""
    rc, _, err = run(AB, "run", "--base", BASE, "--candidate", SLOWER, "--pairs", "6", "--metric", LAT, "--study",
                     path("own.jsonl"), "--json", path("own.json"), "--csv", path("own.csv"), "--resamples", "1000")
    expect(rc == 0, f"5: run rc {rc} {err}")
    for f in ["own.json", "own.csv"]:
        rc, _, err = run(REPORT, path(f), "-o", path("r-" + f))
        expect(rc == 0 and "another tool" not in err, f"5: layerbench-report {f}: rc {rc} {err}")
        rc, out, err = run(AB, "analyze", path(f), "--json", "-", "--resamples", "1000")
        expect(rc == 0 and "missing column" not in err and json.loads(out)["n"] == 6, f"5: ab analyze {f}: rc {rc} {err}")
        rc, _, err = run(GATE, "--pairs", path(f))
        expect(rc in (0, 1) and "missing column" not in err, f"5: layerbench-gate --pairs {f}: rc {rc} {err}")
    # hyperfine's file: the real hyperfine where installed, else one in its documented format.
    hf = path("hyperfine.json")
    if shutil.which("hyperfine"):
        subprocess.run(["hyperfine", "--runs", "5", "-N", "true", "--export-json", hf], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=120, check=True)
    else:
        json.dump({"results": [{"command": "true", "mean": 0.001, "stddev": 0.0001, "median": 0.001, "user": 0.0005,
                                "system": 0.0005, "min": 0.0009, "max": 0.0011,
                                "times": [0.0009, 0.001, 0.001, 0.0011, 0.001], "exit_codes": [0] * 5}]}, open(hf, "w"))
    rc, _, err = run(GATE, "--baseline", hf, "--candidate", hf)
    expect(rc == 0, f"5: gate of hyperfine JSON: rc {rc} {err}")
    rc, _, err = run(REPORT, hf, "-o", path("r-hf"))
    expect(rc == 0, f"5: report of hyperfine JSON: rc {rc} {err}")
    rc, _, err = run(AB, "analyze", hf)
    expect(rc == 2 and "hyperfine" in err and "json.exception" not in err and err.count("\n") == 1,
           f"5: analyze of hyperfine JSON names it and says why not: rc {rc} {err!r}")


def check_significant_unresolved():
    """6. "+40.89% ... p = 0.019" is significant: it is labelled so, not "no significant change"."""
    base = [10.0, 10.2, 9.9, 10.1, 10.0, 9.8, 10.3, 10.0]
    delta = [0.2, 9.0, -0.5, 7.0, 0.1, 8.0, 2.0, 6.0]  # one pair of eight better: exact one-sided p = 5/256
    with open(path("sig.csv"), "w") as f:
        f.write("base,candidate\n" + "".join(f"{b},{b + d:.2f}\n" for b, d in zip(base, delta)))
    rc, out, err = run(GATE, "--pairs", path("sig.csv"), "--threshold", "25%", "--json", "-")
    f = json.loads(out)["findings"][0] if rc in (0, 1) else {}
    expect(f.get("p_worse", 1) < 0.05 and f.get("change", 0) > 0.25 and f.get("ci", [1])[0] < 0.25 and
           f.get("label") == "significant, size not resolved", f"6: significant, size unresolved: rc {rc} {f} {err}")
    rc, text, _ = run(GATE, "--pairs", path("sig.csv"), "--threshold", "25%")
    expect("significant, size not resolved" in text and "no significant change" not in text, f"6: text {text}")


def check_real_rate_and_load():
    """6. A bandwidth counter of a binary's Google Benchmark file is higher-is-better without the flag."""
    base, cand = os.path.join(OUTPUTS, "coll_gb.json"), os.path.join(OUTPUTS, "coll_b_gb.json")
    rc, out, err = run(GATE, "--baseline", base, "--candidate", cand, "--metric", "bytes_per_second", "--json", "-")
    doc = json.loads(out) if rc in (0, 1) else {}
    expect(doc.get("options", {}).get("higher_is_better") is True and "higher is better" in err,
           f"6: bytes_per_second is higher-is-better: rc {rc} {err}")
    rc, _, err = run(GATE, "--baseline", base, "--candidate", cand, "--metric", "bytes_per_second",
                     "--higher-is-better")
    expect(rc in (0, 1), f"6: --higher-is-better agrees with a rate: rc {rc} {err}")


def check_report_composition():
    """8. A binary's MoE composition keeps its second nesting level, each part in its own colour."""
    rc, _, err = run(REPORT, os.path.join(OUTPUTS, "moe.json"), "-o", path("moe-report"))
    expect(rc == 0, f"8: report of moe.json: rc {rc} {err}")
    if rc != 0:
        return
    md = open(path("moe-report/report.md")).read()
    expect("| └ routed_branch |" in md and "| &nbsp;&nbsp;└ local_expert_compute |" in md,
           "8: local_expert_compute nested under routed_branch under whole_layer")
    html = open(path("moe-report/report.html")).read()
    start = html.index("<title>Composition of")
    legend = html[html.index('<g class="legend">', start):html.index("</g>", start)]
    items = re.findall(r'fill="(#[0-9A-Fa-f]{6})"[^>]*/>\s*<text class="legend-label"[^>]*>([^<]+)</text>', legend)
    names = [n for _, n in items]
    expect("local_expert_compute" in names and len({c.lower() for c, _ in items}) == len(items),
           f"8: composition legend: {items}")


def check_long_host_run():
    """9. `mpirun -np 2 layerbench-moe --backend host` (hours on a CPU) is refused without --yes, on every rank."""
    start = time.monotonic()
    p = subprocess.run([MPIEXEC, "-np", "2", "--oversubscribe", MOE, "--backend", "host"], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=120, cwd=WORK,
                       env=dict(ENV, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1"))
    err = p.stderr.decode()
    # A watchdog, not a measurement: refused at start-up (about a second), where the run would take hours.
    expect(p.returncode == 2 and "--yes" in err and time.monotonic() - start < 100,
           f"9: mpirun -np 2 layerbench-moe --backend host: rc {p.returncode} {err[-600:]}")


for check in [check_metric_by_name, check_fail_fast, check_one_sign, check_markdown_tables, check_all_arms_in_report,
              check_first_minutes, check_gate_verdicts, check_report_page, check_shell_and_load, check_own_outputs,
              check_significant_unresolved, check_real_rate_and_load, check_report_composition,
              check_long_host_run]:
    try:
        check()
    except Exception as e:  # a crash in one check is a failure of it, the others still run
        expect(False, f"{check.__name__}: {type(e).__name__}: {e}")
print(f"{len(failures)} failure(s)")
sys.exit(1 if failures else 0)
