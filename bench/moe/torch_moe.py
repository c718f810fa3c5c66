#!/usr/bin/env python3
"""torch beside layerbench's expert kernels and router, one GPU, at the same shapes.

Expert GEMMs: torch._grouped_mm (CUTLASS's grouped GEMM) over E experts whose row counts are
drawn uniform in mean x [1 - spread, 1 + spread] (the distribution layerbench-moe-kernels uses;
not the same draw), d = 256, I = 1280, bf16:
  gate/up  x (rows, d) @ W13[e] (d, 2I)   (no SwiGLU7: torch has no fused epilogue for it)
  down     act (rows, I) @ Wd[e] (I, d)
FLOPs = 2 per MAC over live rows. Router (T tokens x H heads, 256 experts, top-6, scale 4.9):
fp32 logits per head, sigmoid, top-k of score + bias, L1 normalise, scale; eager with fp32
logits, eager with TF32 logits, and torch.compile (fp32).

Every iteration is timed with CUDA events after a warm-up; median and best are reported.
--ours FILE... reads layerbench-moe-kernels' tables and prints a side-by-side table of
median times and ratios (torch / ours: > 1 means ours is faster).
"""
import argparse
import json
import re
import statistics

import torch


def timed(fn, warmup, iterations):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    ms = []
    for _ in range(iterations):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        fn()
        e1.record()
        e1.synchronize()
        ms.append(e0.elapsed_time(e1))
    return statistics.median(ms), min(ms), ms


def router(x, gate, bias, k, scale):
    # x (T, H, d), gate (H, E, d) fp32, bias (H, E) -> idx (T, H, k), p (T, H, k)
    logits = torch.einsum("thd,hed->the", x.float(), gate)
    scores = torch.sigmoid(logits)
    idx = torch.topk(scores + bias, k, dim=-1).indices
    p = scores.gather(-1, idx)
    p = p / p.abs().sum(-1, keepdim=True).clamp_min(1e-12)
    return idx, p * scale


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--experts", type=int, default=768)
    ap.add_argument("--mean-rows", default="352,703", help="comma list of mean rows per expert")
    ap.add_argument("--spread", type=float, default=0.3)
    ap.add_argument("--d", type=int, default=256)
    ap.add_argument("--inter", type=int, default=1280)
    ap.add_argument("--router-tokens", type=int, default=15000)
    ap.add_argument("--router-heads", default="12,6")
    ap.add_argument("--no-compile", action="store_true", help="skip the torch.compile router")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--iterations", type=int, default=30)
    ap.add_argument("--ours", nargs="*", default=[], help="layerbench-moe-kernels outputs to put beside")
    ap.add_argument("--json", required=True)
    a = ap.parse_args()
    torch.manual_seed(20261201)
    dev = "cuda"
    out = {"torch": torch.__version__, "device": torch.cuda.get_device_name(0), "warmup": a.warmup,
           "iterations": a.iterations, "results": []}

    def record(name, flop, med, best, ms, **params):
        r = {"name": name, "median_ms": med, "min_ms": best, "tflops": flop / (med * 1e9), "samples_ms": ms}
        r.update(params)
        out["results"].append(r)
        print(f"| torch {name} | {med:.4f} | {best:.4f} | {r['tflops']:.1f} |", flush=True)

    print("| kernel | median ms | min ms | TFLOP/s (median) |\n|---|---:|---:|---:|")
    d, inter, E = a.d, a.inter, a.experts
    for mean in (int(v) for v in a.mean_rows.split(",")):
        u = torch.rand(E, generator=torch.Generator().manual_seed(5)) * 2 - 1
        counts = torch.clamp((mean * (1 + a.spread * u)).round().to(torch.int64), min=1)
        rows = int(counts.sum())
        offs = torch.cumsum(counts, 0).to(device=dev, dtype=torch.int32)
        x = torch.randn(rows, d, device=dev, dtype=torch.bfloat16)
        w13 = torch.randn(E, d, 2 * inter, device=dev, dtype=torch.bfloat16) / d ** 0.5
        act = torch.randn(rows, inter, device=dev, dtype=torch.bfloat16)
        wd = torch.randn(E, inter, d, device=dev, dtype=torch.bfloat16) / inter ** 0.5
        flop_gu, flop_dn = 2.0 * rows * d * 2 * inter, 2.0 * rows * inter * d
        try:
            torch._grouped_mm(x, w13, offs=offs)
        except RuntimeError:  # builds that take B only column-major (K contiguous)
            w13 = w13.transpose(-2, -1).contiguous().transpose(-2, -1)
            wd = wd.transpose(-2, -1).contiguous().transpose(-2, -1)
        with torch.no_grad():
            med, best, ms = timed(lambda: torch._grouped_mm(x, w13, offs=offs), a.warmup, a.iterations)
            record(f"grouped_mm gate/up {E} x {mean}", flop_gu, med, best, ms, experts=E, mean_rows=mean, rows=rows)
            med, best, ms = timed(lambda: torch._grouped_mm(act, wd, offs=offs), a.warmup, a.iterations)
            record(f"grouped_mm down {E} x {mean}", flop_dn, med, best, ms, experts=E, mean_rows=mean, rows=rows)
        del x, w13, act, wd

    T = a.router_tokens
    for H in (int(v) for v in a.router_heads.split(",")) if T > 0 else ():
        x = torch.randn(T, H, d, device=dev, dtype=torch.bfloat16)
        gate = torch.randn(H, 256, d, device=dev, dtype=torch.float32) / d ** 0.5
        bias = torch.randn(H, 256, device=dev, dtype=torch.float32) * 0.02
        flop = 2.0 * T * H * 256 * d
        variants = [("eager fp32", False, router), ("eager tf32", True, router)]
        if not a.no_compile:
            variants.append(("compiled fp32", False, torch.compile(router, dynamic=False)))
        with torch.no_grad():
            for label, tf32, fn in variants:
                torch.backends.cuda.matmul.allow_tf32 = tf32
                med, best, ms = timed(lambda: fn(x, gate, bias, 6, 4.9), a.warmup, a.iterations)
                record(f"router {T} x {H}, {label}", flop, med, best, ms, tokens=T, heads=H)
        torch.backends.cuda.matmul.allow_tf32 = False
        del x, gate, bias

    with open(a.json, "w") as f:
        json.dump(out, f, indent=1)
    if a.ours:
        side_by_side(a.ours, out["results"])


def side_by_side(files, torch_results):
    """Ours (layerbench-moe-kernels tables) beside torch: median ms and torch / ours."""
    ours = {}
    for path in files:
        experts = mean = None
        for line in open(path):
            m = re.match(r"experts (\d+), rows \d+ \(mean (\d+)", line)
            if m:
                experts, mean = int(m.group(1)), int(m.group(2))
            m = re.match(r"\| (.+?) \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \|", line)
            if m and not m.group(1).startswith("torch"):
                name = m.group(1)
                key = name if name.startswith("router") else f"{name} {experts} x {mean}"
                ours[key] = float(m.group(2))
    pairs = []
    for r in torch_results:
        n = r["name"]
        if n.startswith("grouped_mm gate/up"):
            shape = n.split("gate/up ")[1]
            pairs.append((f"gate/up {shape}", f"wgmma (sm_90a) {shape}", r))
            pairs.append((f"gate/up {shape}, 192-row tiles", f"wgmma (sm_90a), 192-row tiles {shape}", r))
            pairs.append((f"gate/up {shape}, 2-CTA pairs", f"wgmma (sm_90a), 2-CTA pairs {shape}", r))
        elif n.startswith("grouped_mm down"):
            shape = n.split("down ")[1]
            pairs.append((f"down {shape}", f"down GEMM, wgmma (sm_90a) {shape}", r))
            pairs.append((f"down {shape}, 2-CTA pairs", f"down GEMM, wgmma (sm_90a), 2-CTA pairs {shape}", r))
        elif n.startswith("router"):
            shape = n.split(", ")[0]
            pairs.append((n.replace("router", "router vs torch", 1), f"{shape}, fused kernel", r))
    print("\n| shape | ours ms | torch ms | torch / ours |\n|---|---:|---:|---:|")
    for label, key, r in pairs:
        if key in ours:
            print(f"| {label} | {ours[key]:.4f} | {r['median_ms']:.4f} | {r['median_ms'] / ours[key]:.2f}x |")


if __name__ == "__main__":
    main()
