#!/usr/bin/env python3
"""torch's cuDNN SDPA at the per-rank shapes layerbench-attn runs, for a side-by-side check.

Each shape is HEADS:SQ:SKV (B=1, bf16, non-causal, scale 1/sqrt(D), no grad so no LSE), in
the BSHD memory layout that layerbench uses (for B=1 identical to its sequence-major one).
Warm-up and iteration counts match layerbench's; every iteration is timed with CUDA events;
the median and the best are reported as TFLOP/s = 4*B*H*Sq*Skv*D / time.
"""
import argparse
import json
import statistics

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", required=True, help="comma list of HEADS:SQ:SKV")
    ap.add_argument("--head-dim", type=int, default=128)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--iterations", type=int, default=20)
    ap.add_argument("--json", required=True)
    a = ap.parse_args()
    torch.manual_seed(20261129)
    out = {"torch": torch.__version__, "cudnn": torch.backends.cudnn.version(),
           "device": torch.cuda.get_device_name(0), "warmup": a.warmup,
           "iterations": a.iterations, "results": []}
    d = a.head_dim
    for spec in a.shapes.split(","):
        h, sq, skv = (int(x) for x in spec.split(":"))
        # [B, S, H, D] memory, viewed as [B, H, S, D]
        q = torch.randn(1, sq, h, d, device="cuda", dtype=torch.bfloat16).transpose(1, 2)
        k = torch.randn(1, skv, h, d, device="cuda", dtype=torch.bfloat16).transpose(1, 2)
        v = torch.randn(1, skv, h, d, device="cuda", dtype=torch.bfloat16).transpose(1, 2)
        with torch.no_grad(), sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            for _ in range(a.warmup):
                torch.nn.functional.scaled_dot_product_attention(q, k, v)
            torch.cuda.synchronize()
            ms = []
            for _ in range(a.iterations):
                e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                e0.record()
                torch.nn.functional.scaled_dot_product_attention(q, k, v)
                e1.record()
                e1.synchronize()
                ms.append(e0.elapsed_time(e1))
        flop = 4.0 * h * sq * skv * d
        med, best = statistics.median(ms), min(ms)
        r = {"heads": h, "seq_q": sq, "seq_kv": skv, "head_dim": d, "median_ms": med,
             "min_ms": best, "tflops": flop / (med * 1e9), "tflops_best": flop / (best * 1e9),
             "samples_ms": ms}
        out["results"].append(r)
        print(f"torch cudnn sdpa H={h} Sq={sq} Skv={skv}: {med:.3f} ms, "
              f"{r['tflops']:.1f} TFLOP/s (best {r['tflops_best']:.1f})", flush=True)
        del q, k, v
    with open(a.json, "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
