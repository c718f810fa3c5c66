"""layerbench-gate end to end: exit 0 pass / 1 regression / 2 bad input, on Google Benchmark JSON,
layerbench JSON and paired studies.

usage: cli_check.py LAYERBENCH_GATE DATA_DIR WORK_DIR
"""
import json
import math
import os
import shutil
import subprocess
import sys


def gbench(path, benchmarks, field="real_time", unit="ns"):
    rows = []
    for name, values in benchmarks.items():
        for i, v in enumerate(values):
            rows.append({"name": name, "run_name": name, "run_type": "iteration", "repetitions": len(values),
                         "repetition_index": i, "iterations": 1000, "real_time": v, "cpu_time": v * 0.99,
                         "time_unit": unit, field: v})
        rows.append({"name": name + "_mean", "run_name": name, "run_type": "aggregate", "aggregate_name": "mean",
                     "real_time": sum(values) / len(values), "cpu_time": 0, "time_unit": "ns"})
    with open(path, "w") as f:
        json.dump({"context": {"date": "2026-11-29"}, "benchmarks": rows}, f)


def wobble(level, n, phase=0.0, amp=0.003):
    return [level * (1 + amp * math.sin(1.7 * i + phase)) for i in range(n)]


def main():
    exe, data, work, outputs = sys.argv[1:5]  # outputs: real outputs of the binaries (lb.fixture.outputs)
    work = os.path.join(work, "cli_check")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    failures = []

    def run(*args):
        p = subprocess.run([exe, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
        return p.returncode, p.stdout.decode(), p.stderr.decode()

    def expect(cond, what):
        if not cond:
            failures.append(what)

    p = lambda name: os.path.join(work, name)  # noqa: E731
    gbench(p("base.json"), {"BM_a": wobble(100, 10), "BM_b": wobble(50, 10)})
    gbench(p("same.json"), {"BM_a": wobble(100, 10, 0.5), "BM_b": wobble(50, 10, 0.5)})
    gbench(p("slow.json"), {"BM_a": wobble(100, 10, 0.5), "BM_b": wobble(60, 10, 0.5)})
    gbench(p("other.json"), {"BM_c": wobble(100, 10)})
    gbench(p("few.json"), {"BM_a": wobble(100, 3), "BM_b": wobble(50, 3)})

    rc, out, err = run("--baseline", p("base.json"), "--candidate", p("same.json"))
    expect(rc == 0 and "PASS" in out, f"unchanged gbench: rc {rc} {err}")
    rc, out, err = run("--baseline", p("base.json"), "--candidate", p("slow.json"), "--markdown", p("gate.md"))
    expect(rc == 1 and "BM_b" in out and "regressed" in out, f"20% slower BM_b: rc {rc} {out} {err}")
    md = open(p("gate.md")).read() if os.path.exists(p("gate.md")) else ""
    expect(md.startswith("### Performance gate: FAIL") and "| BM_b | regressed beyond the threshold |" in md, f"markdown: {md[:300]!r}")
    rc, out, _ = run("--baseline", p("base.json"), "--candidate", p("slow.json"), "--metric", "cpu_time", "--json", "-")
    expect(rc == 1 and json.loads(out)["metric"] == "cpu_time", f"--metric cpu_time --json: rc {rc}")
    rc, out, _ = run("--baseline", p("base.json"), "--candidate", p("slow.json"), "--threshold", "25%")
    expect(rc == 0, f"20% change under a 25% threshold must pass: rc {rc}")
    rc, out, _ = run("--baseline", p("slow.json"), "--candidate", p("base.json"))
    expect(rc == 0 and "improved" in out, f"improvement: rc {rc}")
    # The same times in another unit (a unit chosen from each run's median may differ): compared in ns.
    gbench(p("same_us.json"), {"BM_a": [v / 1e3 for v in wobble(100, 10, 0.5)],
                               "BM_b": [v / 1e3 for v in wobble(50, 10, 0.5)]}, unit="us")
    rc, out, err = run("--baseline", p("base.json"), "--candidate", p("same_us.json"))
    expect(rc == 0 and "PASS" in out, f"same times in us: rc {rc} {out} {err}")
    rc, out, err = run("--baseline", p("same_us.json"), "--candidate", p("slow.json"))
    expect(rc == 1 and "BM_b" in out and "regressed" in out, f"us baseline, slower ns candidate: rc {rc} {out} {err}")
    rc, out, _ = run("--baseline", p("few.json"), "--candidate", p("few.json"))
    expect(rc == 0 and "need ≥ 4 samples per arm" in out, f"3 repetitions: rc {rc} {out}")

    # Bad input: exit 2 with a message naming the problem.
    with open(p("base.json")) as f:
        text = f.read()
    with open(p("cut.json"), "w") as f:
        f.write(text[: len(text) // 2])
    for args, needle in [
        (("--baseline", p("cut.json"), "--candidate", p("base.json")), "truncated"),
        (("--baseline", p("missing.json"), "--candidate", p("base.json")), "cannot open"),
        (("--baseline", p("base.json"), "--candidate", p("same.json"), "--metric", "bogus"), "unknown metric"),
        (("--baseline", p("base.json"), "--candidate", p("same.json"), "--threshold", "abc"), "threshold"),
        (("--baseline", p("base.json"), "--candidate", p("same.json"), "--threshold", "2"), "2%"),
        (("--baseline", p("base.json"), "--candidate", p("other.json")), "no common benchmarks"),
        (("--baseline", p("base.json"),), "--candidate"),
        (("--pairs", os.path.join(data, "study.csv"), "--baseline", p("base.json")), "either"),
        (("--baseline", p("base.json"), "--candidate", os.path.join(outputs, "coll.json")), "like with like"),
    ]:
        rc, _, err = run(*args)
        expect(rc == 2 and needle in err, f"bad input {args[-1]}: rc {rc}, stderr {err!r}")

    # layerbench JSON: a real output's rows with known samples (1 ms +-1%, so no host timing's noise
    # decides the verdict), and every sample 1.5x slower in the candidate: every row regressed.
    with open(os.path.join(outputs, "coll.json")) as f:
        doc = json.load(f)
    for r in doc["results"]:
        r["samples_ms"] = [1.0 + 0.01 * math.sin(1.3 * i) for i in range(len(r["samples_ms"]))]
    with open(p("coll_known.json"), "w") as f:
        json.dump(doc, f)
    for r in doc["results"]:
        r["samples_ms"] = [v * 1.5 for v in r["samples_ms"]]
    with open(p("coll_slow.json"), "w") as f:
        json.dump(doc, f)
    rc, out, err = run("--baseline", p("coll_known.json"), "--candidate", p("coll_slow.json"))
    expect(rc == 1 and out.count("regressed") >= len(doc["results"]), f"layerbench JSON 1.5x: rc {rc} {out} {err}")
    rc, out, _ = run("--baseline", os.path.join(outputs, "coll.json"), "--candidate", os.path.join(outputs, "coll.json"))
    expect(rc == 0, f"layerbench JSON vs itself: rc {rc}")
    rc, _, err = run("--baseline", os.path.join(outputs, "coll.json"), "--candidate", p("coll_slow.json"), "--metric", "real_time")
    expect(rc == 2 and "unknown metric" in err, f"layerbench JSON with a gbench metric: rc {rc} {err!r}")

    # Paired studies: the study JSONL fixture has the candidate ~0.6% faster; the CSV one ~3% slower.
    rc, out, _ = run("--pairs", os.path.join(outputs, "study.jsonl"), "--threshold", "0.2%")
    expect(rc == 0 and "improved" in out, f"paired JSONL improvement: rc {rc} {out}")
    rc, out, _ = run("--pairs", os.path.join(data, "study.csv"))
    expect(rc == 1 and "regressed" in out, f"paired CSV 3% slower: rc {rc} {out}")
    rc, out, _ = run("--pairs", os.path.join(data, "study.csv"), "--threshold", "5%")
    expect(rc == 0, f"paired CSV under a 5% threshold: rc {rc}")
    with open(p("cut.jsonl"), "w") as f:
        f.write(open(os.path.join(outputs, "study.jsonl")).read()[:-40])
    rc, _, err = run("--pairs", p("cut.jsonl"))
    expect(rc in (0, 1), f"a torn last line (a killed study) is skipped as layerbench-ab analyze does: rc {rc} {err!r}")
    lines = open(os.path.join(outputs, "study.jsonl")).read().splitlines()
    with open(p("broken.jsonl"), "w") as f:
        f.write("\n".join(lines[:2] + [lines[2][:-10]] + lines[3:]) + "\n")
    rc, _, err = run("--pairs", p("broken.jsonl"))
    expect(rc == 2 and "broken.jsonl:3" in err, f"a broken line before the end: rc {rc} {err!r}")

    # --sequential: 5% slower with ~0.5% noise stops early as a regression; three pairs are undecided
    # (exit 3: add pairs); an A/A study stops on equivalence within the 2% threshold.
    def pairs_csv(name, ratio, n):
        with open(p(name), "w") as f:
            f.write("base,candidate\n")
            for i in range(n):
                b = 100 * (1 + 0.005 * math.sin(1.3 * i))
                f.write(f"{b},{ratio * 100 * (1 + 0.005 * math.cos(2.1 * i))}\n")
    pairs_csv("slow5.csv", 1.05, 60)
    pairs_csv("same.csv", 1.0, 60)
    pairs_csv("three.csv", 1.05, 3)
    rc, out, _ = run("--pairs", p("slow5.csv"), "--sequential", "--json", "-")
    j = json.loads(out) if rc in (0, 1, 3) else {}
    seq = j.get("findings", [{}])[0].get("sequential", {})
    expect(rc == 1 and seq.get("stop") == "effect" and seq.get("pairs", 99) < 60,
           f"sequential 5% slower: rc {rc} {seq}")
    rc, out, _ = run("--pairs", p("three.csv"), "--sequential")
    expect(rc == 3 and "UNDECIDED" in out, f"sequential after 3 pairs: rc {rc} {out}")
    rc, out, _ = run("--pairs", p("same.csv"), "--sequential", "--json", "-")
    seq = json.loads(out)["findings"][0].get("sequential", {}) if rc == 0 else {}
    expect(rc == 0 and seq.get("stop") == "equivalence", f"sequential A/A: rc {rc} {seq}")
    rc, _, err = run("--pairs", p("same.csv"), "--max-pairs", "9")
    expect(rc == 2 and "--sequential" in err, f"--max-pairs without --sequential: rc {rc} {err}")

    # A study of three arms (layerbench-ab run with two --candidate): gated as base against the first.
    with open(p("three.jsonl"), "w") as f:
        f.write(json.dumps({"type": "study", "version": 1, "base": "b", "candidate": "c", "more_candidates": ["d"],
                            "pairs": 8, "metric": "wall"}) + "\n")
        for i in range(8):
            for pos, (arm, v) in enumerate((("base", 1.0), ("candidate", 1.2), ("candidate2", 0.5))):
                f.write(json.dumps({"type": "run", "pair": i, "attempt": 0, "arm": arm, "position": pos,
                                    "metric": v * (1 + 0.001 * math.sin(i + pos)), "status": "ok"}) + "\n")
    rc, out, err = run("--pairs", p("three.jsonl"))
    expect(rc == 1 and "regressed" in out, f"three-arm study, first candidate 20% slower: rc {rc} {out} {err}")

    for f in failures:
        print("FAIL:", f)
    print("PASS" if not failures else f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
