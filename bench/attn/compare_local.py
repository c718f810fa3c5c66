#!/usr/bin/env python3
"""Side by side: layerbench-attn --advise's local attention per topology (SP rank 0, timed on this
GPU) against torch's cuDNN SDPA on the same work (torch_local.py). Ratio = torch time / ours
(>= 0.95: ours is at most 5% slower). Prints a markdown table; exit 0 always (the table says).
usage: compare_local.py NAME=ADVISE_JSON:TORCH_JSON ...
"""
import json
import statistics
import sys


def main():
    rows, worst = [], None
    print("| case | topology | calls | ours ms | torch ms | ours TFLOP/s | torch TFLOP/s | ratio torch/ours | >= 0.95 |")
    print("|---|---|---|---|---|---|---|---|---|")
    for arg in sys.argv[1:]:
        name, files = arg.split("=", 1)
        adv_file, torch_file = files.split(":")
        adv, tor = json.load(open(adv_file)), json.load(open(torch_file))
        ours = {}
        for m in adv["results"]:
            if m["name"] == "local_attention":
                ours[m["group"]] = statistics.median(m["samples_ms"])
        for t in tor["results"]:
            g = f"{t['topology']}/S={t['seq']}"
            if g not in ours:
                continue
            ratio = t["median_ms"] / ours[g]
            ok = ratio >= 0.95
            worst = ratio if worst is None else min(worst, ratio)
            print(f"| {name} | {t['topology']} | {t['calls']} | {ours[g]:.3f} | {t['median_ms']:.3f} | "
                  f"{t['flops'] / (ours[g] * 1e9):.1f} | {t['tflops']:.1f} | {ratio:.3f} | {'yes' if ok else 'NO'} |")
    print(f"\nworst ratio: {worst:.3f}" if worst is not None else "\nno pairs")


if __name__ == "__main__":
    main()
