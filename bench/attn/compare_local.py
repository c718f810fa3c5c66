#!/usr/bin/env python3
"""Side by side: layerbench-attn --advise's local attention per topology (SP rank 0, timed on this
GPU) against torch on the same work (torch_local.py). Prints a markdown table; exit 0 always (the
table says).
usage: compare_local.py NAME=ADVISE_JSON:TORCH_JSON ...
"""
import json
import statistics
import sys

HEADER = """\
Each row: SP rank 0's local attention of one 8-GPU topology (all Ring steps, no transfers) at the
preset's shape, on this GPU. **Verdict (ratio = torch steps / ours, >= 0.95 passes): torch doing
the same calls the way torch's own context-parallel ring attention does them** (torch_local.py
`steps`): per call of our plan (Ring step; request where masks differ; document where packed) one
cuDNN SDPA over that call's rows and keys; where rows meet several calls each call returns its
log-sum-exp (`aten._scaled_dot_product_cudnn_attention`, compute_log_sumexp) and the partial
outputs are merged with torch's ring merge (fp32, sigmoid / logsigmoid update), then cast to bf16.
Ours: the same calls through cuDNN's SDPA op, each partial output and LSE kept, one merge kernel
after the last step. **Ideal** (for reading, not the verdict): torch's one cuDNN SDPA call over
every key the rank meets (per request over its valid keys gathered beforehand; per document when
packed), the work without the Ring's split. Timing, both sides: warm-up, then each iteration one
forward between two CUDA events after a device sync (host launch cost included on both sides);
median. calls: SDPA calls per forward (ours: +1, the merge kernel, where rows meet several calls).
"""


def main():
    worst, rows, passed = [], 0, 0
    print(HEADER)
    print("| case | topology | calls ours / torch | ours ms | torch steps ms | ratio | >= 0.95 | ours TFLOP/s | "
          "torch steps TFLOP/s | torch ideal ms (calls) | ideal / ours | torch check |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for arg in sys.argv[1:]:
        name, files = arg.split("=", 1)
        adv_file, torch_file = files.split(":")
        adv, tor = json.load(open(adv_file)), json.load(open(torch_file))
        ours = {m["group"]: statistics.median(m["samples_ms"]) for m in adv["results"]
                if m["name"] == "local_attention"}
        plans = {f"{a['topology']}/S={a['seq']}": a.get("local_plan") for a in adv["advice"]}
        for t in tor["results"]:
            g = f"{t['topology']}/S={t['seq']}"
            if g not in ours:
                continue
            st, idl, plan = t.get("steps", {}), t.get("ideal", {}), plans.get(g) or {}
            n_ours = f"{len(plan.get('calls', []))}{'' if plan.get('direct', True) else '+1'}"
            ideal = (f"{idl['median_ms']:.3f} ({idl['calls']})", f"{idl['median_ms'] / ours[g]:.3f}") \
                if "median_ms" in idl else (idl.get("error", "-")[:60], "-")
            check = st.get("check_max_abs_err")
            check = "-" if check is None else f"{check:.2g}"
            if "median_ms" not in st:
                print(f"| {name} | {t['topology']} | {n_ours} / - | {ours[g]:.3f} | {st.get('error', 'not run')[:60]} "
                      f"| - | NO | - | - | {ideal[0]} | {ideal[1]} | - |")
                rows += 1
                continue
            ratio = st["median_ms"] / ours[g]
            ok = ratio >= 0.95
            rows += 1
            passed += ok
            worst.append((ratio, name, t["topology"]))
            print(f"| {name} | {t['topology']} | {n_ours} / {st['calls']} | {ours[g]:.3f} | {st['median_ms']:.3f} | "
                  f"{ratio:.3f} | {'yes' if ok else 'NO'} | {st['flops'] / (ours[g] * 1e9):.1f} | {st['tflops']:.1f} | "
                  f"{ideal[0]} | {ideal[1]} | {check} |")
    worst.sort()
    print(f"\n{passed} of {rows} rows >= 0.95.")
    if worst:
        print("worst ratios: " + ", ".join(f"{n} {t} {r:.3f}" for r, n, t in worst[:5]))
    backends = set()
    for arg in sys.argv[1:]:
        tor = json.load(open(arg.split("=", 1)[1].split(":")[1]))
        for t in tor["results"]:
            for k in ("steps", "ideal"):
                if "backend" in t.get(k, {}):
                    backends.add(f"{k}: {t[k]['backend']}")
        backends.add(f"torch {tor.get('torch')}, cuDNN {tor.get('cudnn')}")
    print("\ntorch backends: " + "; ".join(sorted(backends)))


if __name__ == "__main__":
    main()
