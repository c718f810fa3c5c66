#!/usr/bin/env python3
"""Joins layerbench-attn JSON files with torch_sdpa.py's JSON: attention TFLOP/s of each
topology against torch's cuDNN SDPA at the same per-rank shape, K/V all-gather per tensor
against torch.distributed's figures (DEVICE.md), and the UAA padding cost. Prints markdown."""
import json
import sys

# torch.distributed all_gather_into_tensor of one K/V tensor, 2 x H200, 14 heads x 128, bf16.
TORCH_KV_ALLGATHER_MS = {16384: 0.201, 32768: 0.347, 65536: 0.588}


def main():
    torch_json, attn_jsons = sys.argv[1], sys.argv[2:]
    ref = {(r["heads"], r["seq_q"], r["seq_kv"]): r for r in json.load(open(torch_json))["results"]}
    print("| H | topology | S | attn TFLOP/s (median / best) | torch cuDNN (median / best) | ratio (median) "
          "| kv all-gather ms/tensor (torch) | total ms | vs first |")
    print("|---|---|---|---|---|---|---|---|---|")
    cases = []
    for path in attn_jsons:
        doc = json.load(open(path))
        for c in doc["topologies"]:
            if not c.get("pass") or "attention_tflops" not in c:
                continue
            p = c["params"]
            t = ref.get((p["local_heads"], p["seq_q"], p["seq_kv"]))
            kv = next((m for m in doc["results"] if m["name"] == "kv_all_gather"
                       and m["group"] == f"{c['topology']}/S={c['seq']}"), None)
            kv_txt = "—"
            if kv:
                torch_ms = TORCH_KV_ALLGATHER_MS.get(c["seq"]) if p["heads"] == 14 else None
                kv_txt = f"{kv['metrics']['per_tensor_ms']:.3f}" + (f" ({torch_ms:.3f})" if torch_ms else "")
            ratio = c["attention_tflops"] / t["tflops"] if t else float("nan")
            tt = f"{t['tflops']:.1f} / {t['tflops_best']:.1f}" if t else "—"
            print(f"| {p['heads']} | {c['topology']} | {c['seq']} | {c['attention_tflops']:.1f} / "
                  f"{c['attention_tflops_best']:.1f} | {tt} | {ratio:.3f} | {kv_txt} | {c['total_ms']:.3f} "
                  f"| {c['relative_to_first']:.3f} |")
            cases.append((p["heads"], c["topology"], c["seq"], c["components_ms"]["attention"]))
    # Padding cost: usp2+uaa at 7 heads (8 executed) against cp2 at 7 heads (same useful work).
    att = {(h, t, s): ms for h, t, s, ms in cases}
    print("\n| S | usp2+uaa attention ms (7->8 heads) | cp2 attention ms (7 heads) | extra | expected (Hpad-H)/H |")
    print("|---|---|---|---|---|")
    for (h, t, s), ms in sorted(att.items()):
        if h == 7 and t == "usp2+uaa" and (7, "cp2", s) in att:
            base = att[(7, "cp2", s)]
            print(f"| {s} | {ms:.3f} | {base:.3f} | {ms / base - 1:+.1%} | +14.3% |")


if __name__ == "__main__":
    main()
