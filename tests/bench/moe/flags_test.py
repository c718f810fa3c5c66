#!/usr/bin/env python3
"""Every `layerbench-moe --help` flag against the MAGI-2 layer and a standard-block preset.

Each flag either produces its figure (a check on the JSON, the markdown, the trace or the output
names what it must change) or is exit 2 on every rank with the reason (a fragment of the message).
A flag of --help without a row here fails the test, so a new flag must say what it does for both
families. `bench/moe/flag_scope.cpp` holds the table the binary applies.

usage: flags_test.py MPIEXEC LAYERBENCH_MOE WORKDIR NP
"""
import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys

GEOMETRY = ["--backend", "host", "--hidden", "256", "--experts", "8", "--topk", "2", "--intermediate", "64",
            "--tokens", "32", "--iterations", "2", "--warmup", "1"]
BASE = {"magi2": GEOMETRY + ["--moe-heads", "4"], "standard": ["--model", "qwen3-30b-a3b"] + GEOMETRY}
HF = os.path.join(os.path.dirname(__file__), "..", "..", "moe", "data", "hf", "Qwen--Qwen3-30B-A3B.json")


class Run:
    def __init__(self, rc, out, err, tmp):
        self.rc, self.out, self.err, self.tmp = rc, out, err, tmp
        self.json = self.load("r.json")

    def load(self, name):
        path = os.path.join(self.tmp, name)
        try:
            with open(path) as f:
                return json.load(f)
        except (OSError, ValueError):
            return None

    def names(self):
        return [r["name"] for r in (self.json or {}).get("results", [])]


def ok(check):
    if isinstance(check, tuple):  # model_is: the row runs --describe
        return check
    return ("ok", check)


def exit2(fragment):
    return ("exit2", fragment)


def same(expect):
    return {"magi2": expect, "standard": expect}


# Checks: each returns an error text or None.
def json_is(path, want):
    def check(r):
        v = r.json
        for k in path:
            if not isinstance(v, (dict, list)):
                return f"no {'.'.join(map(str, path))} in the JSON"
            v = v[k] if isinstance(v, list) else v.get(k)
        return None if v == want else f"{'.'.join(map(str, path))} = {v!r}, expected {want!r}"
    return check


def model_is(key, want):
    """A model field, read from --describe (the model every run of these flags times)."""
    return ("describe", key, want)


def has_result(pattern):
    return lambda r: None if any(re.search(pattern, n) for n in r.names()) else f"no result named /{pattern}/ in {r.names()}"


def stdout_has(pattern):
    return lambda r: None if re.search(pattern, r.out) else f"stdout lacks /{pattern}/"


def file_has(name, pattern):
    def check(r):
        try:
            with open(os.path.join(r.tmp, name)) as f:
                text = f.read()
        except OSError:
            return f"{name} not written"
        return None if re.search(pattern, text) else f"{name} lacks /{pattern}/"
    return check


def trace_other(key, want):
    def check(r):
        t = r.load("t.json")
        if t is None:
            return "no trace"
        return None if t.get("otherData", {}).get(key) == want else f"trace otherData.{key} = {t.get('otherData', {}).get(key)!r}"
    return check


def samples(n):
    return lambda r: None if r.json and all(len(x["samples_ms"]) == n for x in r.json["results"]) else f"not {n} samples each"


def describe(key, want):
    def check(r):
        try:
            m = json.loads(r.out)
        except ValueError:
            return "--describe printed no JSON"
        v = m
        for k in key.split("."):
            v = v.get(k) if isinstance(v, dict) else None
        return None if v == want else f"described {key} = {v!r}, expected {want!r}"
    return check


def all_of(*checks):
    def check(r):
        for c in checks:
            e = c(r)
            if e:
                return e
        return None
    return check


ADVISE = "belong to --advise"
FIXED = "MAGI-2 multi-head layer has fixed"
MAGI2_ONLY = "applies to the MAGI-2 multi-head layer; qwen3-30b-a3b runs the standard"
# flag -> (extra args, {family: expectation}); "np1" in the args runs the row on one rank.
ROWS = {
    "--help": (["--help"], same(ok(stdout_has("Usage: layerbench-moe")))),
    "--version": (["--version"], same(ok(stdout_has(r"layerbench")))),
    "--backend": (["--backend", "host"], same(ok(json_is(["context", "backend"], "host")))),
    "--warmup": (["--warmup", "2"], same(ok(json_is(["context", "timing", "warmup"], 2)))),
    "--iterations": (["--iterations", "3"], same(ok(samples(3)))),
    "--json": ([], same(ok(json_is(["schema"], "layerbench/2")))),
    "--csv": (["--csv", "{tmp}/r.csv"], same(ok(file_has("r.csv", r"whole_layer")))),
    "--markdown": (["--markdown", "{tmp}/r.md"], same(ok(file_has("r.md", r"\| whole_layer")))),
    "--trace": (["--trace", "{tmp}/t.json"], same(ok(file_has("t.json", r"traceEvents")))),
    "--trace-iterations": (["--trace", "{tmp}/t.json", "--trace-iterations", "1"], same(ok(trace_other("traced_iterations", 1)))),
    "--nvtx": (["--trace", "{tmp}/t.json", "--nvtx", "off"], same(ok(trace_other("nvtx", "off")))),
    "--align": (["--align", "none"], same(ok(json_is(["context", "timing", "align"], "none")))),
    "--timeout": (["--timeout", "100"], same(ok(lambda r: None))),  # a hung wait: tests/collectives fault tests
    "--seed": (["--seed", "7"], same(ok(json_is(["config", "seed"], 7)))),
    "--yes": (["--yes"], same(ok(lambda r: None))),  # the long-run refusal it lifts: badinput moe.host-estimate
    "--model": ({"magi2": ["--model", "magi-2"], "standard": ["--model", "mixtral-8x7b"]},
                {"magi2": ok(model_is("name", "magi-2")), "standard": ok(model_is("name", "mixtral-8x7b"))}),
    "--hf-config": ({"magi2": ["--model", "magi-2", "--hf-config", HF], "standard": ["--hf-config", HF]},
                    {"magi2": exit2("--model and --hf-config both name the model"),
                     "standard": ok(model_is("family", "qwen"))}),
    "--family": (["--family", "qwen"], same(exit2("--family applies to --hf-config"))),
    "--list-models": (["--list-models"], same(ok(stdout_has(r"qwen3-30b-a3b")))),
    "--describe": (["--describe"], same(ok(stdout_has(r"layerbench-model/1")))),
    "--ep": (["--ep", "{np}"], {"magi2": exit2("--ep applies to the standard expert-parallel block"),
                                "standard": ok(json_is(["config", "ep"], "{np}"))}),
    "--router-score": (["--router-score", "softmax"], {"magi2": exit2("sigmoid scores only"),
                                                       "standard": ok(model_is("router.score", "softmax"))}),
    "--activation": (["--activation", "swiglu-clamped"], {"magi2": ok(model_is("activation.kind", "swiglu_clamped")),
                                                          "standard": ok(model_is("activation.kind", "swiglu_clamped"))}),
    "--selection-bias": (["--selection-bias", "on"], {"magi2": ok(model_is("router.selection_bias", True)),
                                                      "standard": ok(model_is("router.selection_bias", True))}),
    "--normalize": (["--normalize", "off"], {"magi2": exit2(FIXED), "standard": ok(model_is("router.normalize", False))}),
    "--topk-before-score": (["--topk-before-score", "on"], {"magi2": exit2(FIXED),
                                                            "standard": ok(model_is("router.topk_before_score", True))}),
    "--shared-gate": (["--shared-gate", "on"], {"magi2": exit2(FIXED), "standard": ok(model_is("shared_gate", True))}),
    "--group-score": ({"magi2": ["--group-score", "top2-sum"],
                       "standard": ["--groups", "4", "--topk-groups", "2", "--group-score", "top2-sum"]},
                      {"magi2": exit2("--group-score applies to the standard expert-parallel block"),
                       "standard": ok(model_is("router.group_score", "top2_sum"))}),
    "--text-router-only": (["--text-router-only"], same(exit2("--text-router-only applies to --hf-config"))),
    "--precision": (["--precision", "fp8-block"],
                    {"magi2": exit2("--precision applies to the standard expert-parallel block"),
                     "standard": ok(model_is("precision.experts.format", "fp8-block"))}),
    "--groups": (["--groups", "2"], {"magi2": exit2(FIXED), "standard": ok(model_is("router.groups", 2))}),
    "--topk-groups": (["--groups", "4", "--topk-groups", "2"],
                      {"magi2": exit2(FIXED), "standard": ok(model_is("router.topk_groups", 2))}),
    "--shared-experts": (["--shared-experts", "2"], {"magi2": exit2(FIXED), "standard": ok(model_is("shared_experts", 2))}),
    "--shared-intermediate": (["--shared-experts", "1", "--shared-intermediate", "128"],
                              {"magi2": exit2(FIXED), "standard": ok(model_is("shared_intermediate", 128))}),
    "--swiglu-alpha": (["--activation", "swiglu-clamped", "--swiglu-alpha", "1.5"],
                       {"magi2": exit2(FIXED), "standard": ok(model_is("activation.alpha", 1.5))}),
    "--swiglu-limit": (["--activation", "swiglu-clamped", "--swiglu-limit", "5"],
                       {"magi2": exit2(FIXED), "standard": ok(model_is("activation.limit", 5.0))}),
    "--advise": (["np1", "--advise", "--gpus", "1", "--advise-budget-s", "0.5", "--json", "{tmp}/r.json"],
                 same(ok(stdout_has(r"(?i)layout")))),
    "--gpus": (["--gpus", "2"], same(exit2(ADVISE))),
    "--gpus-per-node": (["--gpus-per-node", "4"], same(exit2(ADVISE))),
    "--coll": (["--coll", "{tmp}/none.json"], same(exit2(ADVISE))),
    "--coll-inter": (["--coll-inter", "{tmp}/none.json"], same(exit2(ADVISE))),
    "--coll-rescale": (["--coll-rescale"], same(exit2(ADVISE))),
    "--inter-gbps": (["--inter-gbps", "25"], same(exit2(ADVISE))),
    "--inter-latency-us": (["--inter-latency-us", "5"], same(exit2(ADVISE))),
    "--margin": (["--margin", "0.1"], same(exit2(ADVISE))),
    "--advise-budget-s": (["--advise-budget-s", "1"], same(exit2(ADVISE))),
    "--calibration": (["--calibration", "{tmp}/none.json"], same(exit2(ADVISE))),
    "--hidden": (["--hidden", "128"], same(ok(model_is("hidden", 128)))),
    "--moe-heads": (["--moe-heads", "2"], {"magi2": ok(model_is("moe_heads", 2)),
                                           "standard": exit2("MoE heads exist only in the MAGI-2 layer")}),
    "--experts": (["--experts", "4"], same(ok(model_is("experts", 4)))),
    "--topk": (["--topk", "1"], same(ok(model_is("topk", 1)))),
    "--intermediate": (["--intermediate", "32"], same(ok(model_is("moe_intermediate", 32)))),
    "--scale": (["--scale", "2.5"], same(ok(model_is("router.scale", 2.5)))),
    "--tokens": (["--tokens", "16"], same(ok(json_is(["tokens_per_rank"], 16)))),
    "--split-sizes": (["--split-sizes", "{splits}"], same(ok(json_is(["config", "split_sizes"], "{splits_list}")))),
    "--layout": (["--layout", "tp"], {"magi2": ok(json_is(["config", "layout"], "tp")),
                                      "standard": exit2("--layout " + MAGI2_ONLY)}),
    "--layers": (["--layers", "2"], {"magi2": ok(has_result("^stack_reused_split_sizes$")), "standard": ok(has_result("^stack$"))}),
    "--stack-input": (["--layers", "2", "--stack-input", "chained"], same(ok(json_is(["config", "stack_input"], "chained")))),
    "--moe-layers": (["--moe-layers", "4"], same(ok(model_is("moe_layers", 4)))),
    "--ab": ({"magi2": ["--layers", "2", "--ab", "metadata", "--pairs", "2"],
              "standard": ["--layers", "2", "--ab", "drop:router", "--pairs", "2", "--what-if-rounds", "2",
                           "--what-if-seconds", "2"]},
             {"magi2": ok(stdout_has(r"(?i)metadata a/b")), "standard": ok(stdout_has(r"Removal A/B drop:router"))}),
    "--pairs": (["--pairs", "4"], same(exit2("--pairs applies with --ab only"))),
    "--prime-stacks": (["--prime-stacks", "2"], same(exit2("--prime-stacks applies with --ab or --what-if"))),
    "--ab-sequential": (["--ab-sequential"], same(exit2("--ab-sequential applies with --ab only"))),
    "--ab-equivalence": (["--ab-equivalence", "5%"], same(exit2("--ab-equivalence applies with --ab-sequential"))),
    "--confidence": (["--confidence", "0.9"], same(ok(json_is(["config", "confidence"], 0.9)))),
    "--dense-gemm-size": (["--dense-gemm-size", "64"],
                          same(ok(lambda r: None if any(x["name"] == "dense_gemm_reference" and
                                                        (x.get("params") or {}).get("m") in (64, None) for x in r.json["results"])
                                  else "no dense reference of 64"))),
    "--skip-check": (["--skip-check"], same(ok(json_is(["checks", "skipped"], True)))),
    # The graph itself is a GPU figure (the GPU result and tests/moe); on the host it is exit 2.
    "--graph": (["--graph"], same(exit2("--graph captures the layer in CUDA graphs: use it with --backend cuda"))),
    "--what-if": ({"magi2": ["--layers", "2", "--what-if", "routing", "--what-if-rounds", "2", "--what-if-levels", "0,50",
                             "--what-if-method", "delay"],
                   "standard": ["--layers", "2", "--what-if", "router,expert_compute", "--what-if-rounds", "2",
                                "--what-if-seconds", "2"]},
                  same(ok(stdout_has(r"(?i)what-if")))),
    "--what-if-levels": (["--what-if-levels", "0,50"], same(exit2("--what-if-levels applies with --what-if or --ab"))),
    "--what-if-rounds": (["--what-if-rounds", "2"], same(exit2("--what-if-rounds applies with --what-if or --ab"))),
    "--what-if-method": (["--what-if-method", "delay"], same(exit2("--what-if-method applies with --what-if or --ab"))),
    "--what-if-seconds": (["--what-if-seconds", "1"], same(exit2("--what-if-seconds applies with --what-if or --ab"))),
    "--what-if-precision": (["--what-if-precision", "0.2"], same(exit2("--what-if-precision applies with --what-if or --ab"))),
    "--what-if-floor-ms": (["--what-if-floor-ms", "0"], same(exit2("--what-if-floor-ms applies with --what-if or --ab"))),
    "--what-if-copies": (["--what-if-copies", "0,1,4"], same(exit2("--what-if-copies applies with --what-if or --ab"))),
    "--repeat": (["--repeat", "2"], same(exit2("which the host backend does not print"))),
    "--telemetry": (["--telemetry", "off"], same(ok(json_is(["telemetry_status"], "off")))),
    "--telemetry-period": (["--telemetry-period", "20"], same(exit2("--telemetry-period applies with --telemetry only"))),
    "--framework-exchange-ms": (["--framework-exchange-ms", "0.5"],
                                {"magi2": ok(stdout_has(r"0\.5")), "standard": exit2("--framework-exchange-ms " + MAGI2_ONLY)}),
    # CUDA-only flags (the "CUDA backend only" group): on the host backend they are exit 2 saying so.
    "--nvlink-centric-sched": (["--nvlink-centric-sched"], same(exit2("only the CUDA backend uses it"))),
    "--expert-gemm": (["--expert-gemm", "device"], {"magi2": exit2("only the CUDA backend uses it"),
                                                    "standard": exit2("--expert-gemm " + MAGI2_ONLY)}),
    "--dispatch": (["--dispatch", "fp8"],
                   {"magi2": exit2("--dispatch applies to the standard expert-parallel block"),
                    "standard": ok(all_of(json_is(["config", "dispatch"], "fp8"),
                                          stdout_has(r"dispatch fp8 \(e4m3 \+ fp32 scale per 128 channels\): 264 B"),
                                          stdout_has(r"ep_dispatch: .*FP8 dispatch")))}),
    "--expert-table": (["--expert-table", "{tmp}/none.txt"],
                       {"magi2": exit2("--expert-table applies to the standard expert-parallel block"),
                        "standard": exit2("only the CUDA backend uses it")}),
    # Google Benchmark's flags: rank 0 replays the samples into Google Benchmark's reporters.
    "--benchmark_format": (["--benchmark_format=json"], same(ok(stdout_has(r'"benchmarks"')))),
    "--benchmark_out": (["--benchmark_out={tmp}/gb.json"], same(ok(file_has("gb.json", r'"benchmarks"')))),
    "--benchmark_out_format": (["--benchmark_out={tmp}/gb.csv", "--benchmark_out_format=csv"],
                               same(ok(file_has("gb.csv", r"(?m)^name,")))),
    "--benchmark_filter": (["--benchmark_filter=whole_layer", "--benchmark_format=json"],
                           same(ok(lambda r: None if "whole_layer" in r.out and "dense_gemm_reference" not in r.out
                                   else "filter not applied"))),
    "--benchmark_list_tests": (["--benchmark_list_tests=true"], same(exit2("names its benchmarks only as it measures them"))),
    "--benchmark_time_unit": (["--benchmark_time_unit=us", "--benchmark_format=json"],
                              same(ok(stdout_has(r'"time_unit": "us"')))),
    "--benchmark_report_aggregates_only": (["--benchmark_report_aggregates_only=true", "--benchmark_format=json"],
                                           same(ok(lambda r: None if '"aggregate_name"' in r.out and '"run_type": "iteration"' not in r.out
                                                   else "iterations reported"))),
    "--benchmark_display_aggregates_only": (["--benchmark_display_aggregates_only=true"],
                                            same(ok(lambda r: None if r.rc == 0 else "exit"))),
    "--benchmark_color": (["--benchmark_color=false"], same(ok(lambda r: None if r.rc == 0 else "exit"))),
}


def help_flags(out):
    flags = []
    for line in out.splitlines():
        m = re.match(r"^\s{2}(-\w,)?(--[\w-]+)", line)
        if m:
            flags.append(m.group(2))
    return flags


def said(p):
    """The binary's own lines (mpirun's banner left out)."""
    lines = [l for l in (p.stderr + p.stdout).splitlines() if l.startswith(("layerbench", "error", "fatal", "terminate"))]
    return " | ".join(lines[:3]) or (p.stderr + p.stdout).strip()[-300:]


def main():
    mpiexec, binary, work, np = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1")
    helped = help_flags(subprocess.run([binary, "--help"], capture_output=True, text=True).stdout)
    # Long names with aliases are listed under their first name (--intermediate,--moe-intermediate).
    aliases = {"--yes": "--yes", "--moe-intermediate": "--intermediate"}
    missing = [f for f in helped if aliases.get(f, f) not in ROWS]
    failures = [f"{f}: in --help but without a row in flags_test.py" for f in missing]
    stale = [f for f in ROWS if f not in helped and f not in aliases]
    failures += [f"{f}: a row for a flag --help does not list" for f in stale]
    splits = ",".join(["16"] * (np - 1) + ["40"])
    subst = {"{np}": str(np), "{splits}": splits}
    jobs = []
    for flag, (args, expect) in ROWS.items():
        for family in ("magi2", "standard"):
            jobs.append((flag, family, args, expect[family]))

    def one(job):
        flag, family, args, expectation = job
        extra = args[family] if isinstance(args, dict) else args
        kind, *what = expectation
        what = what[0] if len(what) == 1 else what
        tmp = os.path.join(work, f"{family}{flag}")
        shutil.rmtree(tmp, ignore_errors=True)
        os.makedirs(tmp)
        extra = [a.replace("{tmp}", tmp) for a in extra]
        extra = [subst.get(a, a) for a in extra]
        ranks = np
        if "np1" in extra:
            extra.remove("np1")
            ranks = 1
        # Exit 2 and --describe do not depend on the rank count (every rank's exit code: the
        # bad-input table at 2 and 4 ranks): one process, at the 2-rank run only.
        direct = kind in ("exit2", "describe")
        if direct and np != 2:
            return None
        if kind == "describe":
            extra = extra + ["--describe"]
        base = list(BASE[family])
        for a in extra:  # a flag the row sets replaces the base's
            if a.startswith("--") and a in base:
                i = base.index(a)
                del base[i:i + 2]
        if flag in ("--model", "--hf-config"):
            base = [a for a in base if a not in ("--model", "qwen3-30b-a3b")]
        if flag in ("--help", "--version", "--list-models"):
            base = []
        cmd = ([binary] if direct else [mpiexec, "-n", str(ranks), binary]) + base + extra
        if not direct and "--json" not in extra and flag not in ("--help", "--version", "--list-models"):
            cmd += ["--json", os.path.join(tmp, "r.json")]
        p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
        r = Run(p.returncode, p.stdout, p.stderr, tmp)
        where = f"{flag} [{family}, {'1 process' if direct else f'{ranks} ranks'}]"
        if kind == "exit2":
            if p.returncode != 2:
                return f"{where}: expected exit 2 ({what}), got {p.returncode}"
            if what not in p.stderr + p.stdout:
                return f"{where}: exit 2 without '{what}': {said(p)}"
            return ""
        if p.returncode != 0:
            return f"{where}: exit {p.returncode}: {said(p)}"
        if kind == "describe":
            e = describe(what[0], what[1])(r)
        else:
            check = what
            if flag == "--ep":
                check = json_is(["config", "ep"], np)
            if flag == "--split-sizes":
                check = json_is(["config", "split_sizes"], [int(s) for s in splits.split(",")])
            e = check(r)
        return f"{where}: {e}" if e else ""

    # Launches are mostly waiting (MPI start-up): a few at a time.
    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        outcomes = list(pool.map(one, jobs))
    count = sum(o is not None for o in outcomes)
    failures += [o for o in outcomes if o]
    for f in failures:
        print("FAIL", f)
    print(f"{count} runs of {len(ROWS)} flags x 2 families ({np} ranks where it runs); {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
