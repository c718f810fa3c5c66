#!/usr/bin/env python3
"""Joins layerbench-attn JSON files with torch_sdpa.py's JSON: attention TFLOP/s of each
topology against torch's cuDNN SDPA at the same per-rank shape, K/V all-gather per tensor
against torch.distributed's figures (DEVICE.md), and the UAA padding cost. Prints markdown.
Rates are the ones layerbench-attn derived from its declared work; every ratio of two
separately timed medians carries a 95% percentile-bootstrap interval (or reads "unresolved")."""
import json
import random
import statistics
import sys

# torch.distributed all_gather_into_tensor of one K/V tensor, 2 x H200, 14 heads x 128, bf16.
TORCH_KV_ALLGATHER_MS = {16384: 0.201, 32768: 0.347, 65536: 0.588}


def ratio_ci(a, b, resamples=4000, seed=7):
    """median(a) / median(b) with a 95% bootstrap interval, a and b resampled independently."""
    rng = random.Random(seed)
    med = lambda x: statistics.median(rng.choices(x, k=len(x)))
    thetas = sorted(med(a) / med(b) for _ in range(resamples))
    lo, hi = thetas[int(0.025 * resamples)], thetas[int(0.975 * resamples) - 1]
    value = statistics.median(a) / statistics.median(b)
    if lo <= 1 <= hi:
        return f"unresolved ({value:.3f}, CI [{lo:.3f}, {hi:.3f}] contains 1)"
    return f"{value:.3f} [{lo:.3f}, {hi:.3f}]"


def main():
    torch_json, attn_jsons = sys.argv[1], sys.argv[2:]
    ref = {(r["heads"], r["seq_q"], r["seq_kv"]): r for r in json.load(open(torch_json))["results"]}
    print("| H | topology | S | attn TFLOP/s | torch cuDNN TFLOP/s | torch time / ours (95% CI) "
          "| kv all-gather ms/tensor (torch) | total ms |")
    print("|---|---|---|---|---|---|---|---|")
    cases = {}
    for path in attn_jsons:
        doc = json.load(open(path))
        for c in doc["topologies"]:
            if not c.get("pass"):
                continue
            group = f"{c['topology']}/S={c['seq']}"
            ms = {m["name"]: m for m in doc["results"] if m.get("group") == group}
            if "attention" not in ms or "total" not in ms:
                continue
            p, att = c["params"], ms["attention"]
            t = ref.get((p["local_heads"], p["seq_q"], p["seq_kv"]))
            kv_txt = "—"
            if "kv_all_gather" in ms:  # K and V in one timed call: half of it per tensor
                torch_ms = TORCH_KV_ALLGATHER_MS.get(c["seq"]) if p["heads"] == 14 else None
                kv_txt = f"{ms['kv_all_gather']['median_ms'] / 2:.3f}" + (f" ({torch_ms:.3f})" if torch_ms else "")
            torch_rate = f"{t['tflops']:.1f}" if t else "—"
            ratio = ratio_ci(t["samples_ms"], att["samples_ms"]) if t else "—"
            print(f"| {p['heads']} | {c['topology']} | {c['seq']} | {att['rates']['flop_per_s'] / 1e12:.1f} "
                  f"| {torch_rate} | {ratio} | {kv_txt} | {ms['total']['median_ms']:.3f} |")
            cases[(p["heads"], c["topology"], c["seq"])] = att["samples_ms"]
    # Padding cost: usp2+uaa at 7 heads (8 executed) against cp2 at 7 heads (same useful work).
    print("\n| S | usp2+uaa / cp2 attention time, 7 heads (95% CI) | expected Hpad/H |")
    print("|---|---|---|")
    for (h, t, s), samples in sorted(cases.items()):
        if h == 7 and t == "usp2+uaa" and (7, "cp2", s) in cases:
            print(f"| {s} | {ratio_ci(samples, cases[(7, 'cp2', s)])} | 1.143 |")


if __name__ == "__main__":
    main()
