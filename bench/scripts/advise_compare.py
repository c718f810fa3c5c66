#!/usr/bin/env python3
"""Predicted (layerbench-moe --advise JSON) against measured (layerbench-moe profile JSON) layers.

usage: advise_compare.py ADVISE.json LABEL=MEASURED.json [LABEL=MEASURED.json ...]

For every LABEL (a layout of the advice: ep2, sp2, tp4, ...) prints the measured whole layer
(median of the rank-max samples), the predicted median and interval, whether the measurement lies
inside, and per component measured / predicted. Also the ratio of the dense GEMM reference rate
measured beside the layer to the advisor's own (a device shared with other work, or ranks sharing
cores, runs slower than the one rank the advisor calibrated alone).
"""
import json
import statistics
import sys

# The profile's component names for the advisor's (the MAGI-2 layer calls the combine undispatch).
ALIASES = {"ep_combine": ["ep_combine", "ep_undispatch"]}


def median(xs):
    return statistics.median(xs) if xs else float("nan")


def main():
    adv = json.load(open(sys.argv[1]))
    preds = {a["layout"]: a for a in adv["advice"]}
    rate = adv["config"].get("dense_gemm_rate_flops", 0)
    print(f"advice: `{sys.argv[1]}` ({adv['config']['model_name']}, {adv['config']['tokens']} tokens per GPU, "
          f"{adv['config']['gpus']} GPUs)\n")
    print("| layout | measured whole_layer ms | predicted ms [interval] | inside | measured / predicted | "
          "dense-reference rate, measured run / advisor | components measured / predicted |")
    print("|---|---:|---|---|---:|---:|---|")
    for arg in sys.argv[2:]:
        label, path = arg.split("=", 1)
        doc = json.load(open(path))
        res = {r["name"]: r for r in doc["results"]}
        meas = median(res["whole_layer"]["samples_ms"])
        p = preds[label]
        inside = p["lo_ms"] <= meas <= p["hi_ms"]
        ref = res.get("dense_gemm_reference")
        ref_ratio = "-"
        if ref and rate > 0:
            m = ref["params"]["m"]
            ref_rate = 2.0 * m * m * m / (median(ref["samples_ms"]) * 1e-3)
            ref_ratio = f"{ref_rate / rate:.2f}"
        comps = []
        parts = p["parts"]  # a list of named parts (an object by name in files of 2026-12-03)
        parts = parts.items() if isinstance(parts, dict) else [(x["name"], x) for x in parts]
        for name, part in parts:
            for alias in ALIASES.get(name, [name]):
                if alias in res and res[alias]["samples_ms"]:
                    comps.append(f"{name} {median(res[alias]['samples_ms']) / part['median_ms']:.2f}")
                    break
        print(f"| {label} | {meas:.3f} | {p['predicted_ms']:.3f} [{p['lo_ms']:.3f}, {p['hi_ms']:.3f}] | "
              f"{'yes' if inside else 'NO'} | {meas / p['predicted_ms']:.2f} | {ref_ratio} | {'; '.join(comps)} |")


if __name__ == "__main__":
    main()
