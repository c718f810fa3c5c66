#!/usr/bin/env python3
"""layerbench's FP8 (e4m3, rowwise) grouped expert GEMMs and torch._scaled_grouped_mm interleaved
in one process, one GPU, every preset; torch._scaled_mm dense 8192^3 as the ceiling.

For each preset (model-<name>.json and counts-<name>.txt, written by
`layerbench-moe-kernels --models ... --precision fp8-rowwise --counts-dir DIR` in the same run):
  operands  bf16 randn x (R, H), W13 (E, 2I, H) / sqrt(H), Wd (E, H, I) / sqrt(I), a separate
            down input (R, I); each quantized rowwise to float8_e4m3fn in torch with the recipe of
            moe/fp8.hpp (s = max(amax, 1e-4) / 448 per row of x and a, per output channel of the
            weights; q = x / s cast to e4m3); both sides read the same codes and scales;
  ours      liblayerbench_fp8_experts (tools/fp8_experts_capi.h): gate/up with the GLU fused
            (bf16 act), and down (bf16 y), over tile lists built once from the counts;
  torch     torch._scaled_grouped_mm (2d x 3d, offs = cumulative counts, rowwise scales,
            bf16 out, use_fast_accum=True: like ours, no promotion of partial sums) for gate/up
            (R x 2I, no activation) and down;
  check     ours against torch on the same codes: act against the GLU (torch ops) of torch's
            gate/up, y against torch's down: ||ours - torch|| / ||torch|| <= 1e-2, all finite; a
            GEMM that fails is not timed;
  timing    per GEMM ABBA pairs of ours and torch (bench/moe/torch_interleaved.py: each launch
            timed alone behind a short spin kernel), the median of the pair ratios torch / ours
            with its distribution-free 95% interval; the dense ceiling torch._scaled_mm 8192^3
            rowwise (fast accumulation) timed in the same process, before and after the presets.
"""
import argparse
import ctypes
import json
import math
import statistics

import torch

import torch_interleaved as ti
from torch_std import glu_ops

F8 = torch.float8_e4m3fn


class Fp8Lib:
    def __init__(self, path):
        L = ctypes.CDLL(path)
        vp, i64 = ctypes.c_void_p, ctypes.c_int64
        L.lbf8_create.argtypes = [ctypes.c_char_p, i64, ctypes.POINTER(vp)]
        L.lbf8_destroy.argtypes = [vp]
        L.lbf8_destroy.restype = None
        L.lbf8_shape.argtypes = [vp, ctypes.POINTER(i64), ctypes.POINTER(i64), ctypes.POINTER(i64)]
        L.lbf8_tiles.argtypes = [vp, vp, vp]
        L.lbf8_gate_up.argtypes = [vp, vp, vp, vp, vp, vp, i64, vp]
        L.lbf8_down.argtypes = [vp, vp, vp, vp, vp, vp, i64, vp]
        L.lbf8_last_error.argtypes = []
        L.lbf8_last_error.restype = ctypes.c_char_p
        self.L = L

    def check(self, rc, what):
        if rc != 0:
            raise RuntimeError(f"{what}: code {rc}: {self.L.lbf8_last_error().decode()}")

    def stream(self):
        return torch.cuda.current_stream().cuda_stream


def quantize_rows(x):
    """Rowwise e4m3 with moe/fp8.hpp's recipe: (codes, fp32 scales (rows,))."""
    xf = x.float()
    s = xf.abs().amax(dim=-1).clamp(min=1e-4) / 448.0
    q = (xf / s.unsqueeze(-1)).to(F8)
    return q, s.contiguous()


def quantize_weights(E, N, K):
    """randn (E, N, K) / sqrt(K) weights quantized per output channel, an expert at a time (the
    fp32 temporaries of all experts at once would not fit): (codes (E, N, K), scales (E, N))."""
    q = torch.empty(E, N, K, device="cuda", dtype=F8)
    s = torch.empty(E, N, device="cuda", dtype=torch.float32)
    for e in range(E):
        q[e], s[e] = quantize_rows(torch.randn(N, K, device="cuda", dtype=torch.bfloat16) / K ** 0.5)
    return q, s


def rel_err(ours, ref):
    o, r = ours.float(), ref.float()
    if not torch.isfinite(o).all().item():
        return math.inf
    return ((o - r).norm() / r.norm()).item()


def dense_ceiling(warmup, iterations, n=8192):
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    aq, sa = quantize_rows(a)
    bq, sb = quantize_rows(b)  # (N, K) rows: one scale per output column
    fn = lambda: torch._scaled_mm(aq, bq.t(), scale_a=sa.view(-1, 1), scale_b=sb.view(1, -1),
                                  out_dtype=torch.bfloat16, use_fast_accum=True)
    for _ in range(warmup):
        fn()
    ms = [ti.one_ms(fn) for _ in range(iterations)]
    med = statistics.median(ms)
    return {"case": f"torch._scaled_mm rowwise {n}^3 (fast accumulation)", "median_ms": med,
            "min_ms": min(ms), "tflops": 2.0 * n ** 3 / (med * 1e-3) * 1e-12}


def run_preset(lib, m, counts, warmup, pairs, tolerance=1e-2):
    dev, name = "cuda", m["name"]
    H, E, I = m["hidden"], m["experts"], m["moe_intermediate"]
    R = int(sum(counts))
    offs = torch.tensor(counts, dtype=torch.int64).cumsum(0).to(device=dev, dtype=torch.int32)
    counts_d = torch.tensor(counts, dtype=torch.int32, device=dev)
    xq, xs = quantize_rows(torch.randn(R, H, device=dev, dtype=torch.bfloat16))
    w13q, w13s = quantize_weights(E, 2 * I, H)
    wdq, wds = quantize_weights(E, H, I)
    aq, as_ = quantize_rows(torch.randn(R, I, device=dev, dtype=torch.bfloat16))
    act = torch.full((R, I), float("nan"), device=dev, dtype=torch.bfloat16)
    y = torch.full((R, H), float("nan"), device=dev, dtype=torch.bfloat16)
    h = ctypes.c_void_p()
    lib.check(lib.L.lbf8_create(name.encode(), R, ctypes.byref(h)), f"lbf8_create({name})")
    out = []
    try:
        lib.check(lib.L.lbf8_tiles(h, counts_d.data_ptr(), lib.stream()), "lbf8_tiles")
        ours_gu = lambda: lib.check(lib.L.lbf8_gate_up(h, xq.data_ptr(), xs.data_ptr(), w13q.data_ptr(),
                                                       w13s.data_ptr(), act.data_ptr(), R, lib.stream()), "lbf8_gate_up")
        ours_dn = lambda: lib.check(lib.L.lbf8_down(h, aq.data_ptr(), as_.data_ptr(), wdq.data_ptr(), wds.data_ptr(),
                                                    y.data_ptr(), R, lib.stream()), "lbf8_down")
        torch_gu = lambda: torch._scaled_grouped_mm(xq, w13q.transpose(-2, -1), xs, w13s, offs=offs,
                                                    out_dtype=torch.bfloat16, use_fast_accum=True)
        torch_dn = lambda: torch._scaled_grouped_mm(aq, wdq.transpose(-2, -1), as_, wds, offs=offs,
                                                    out_dtype=torch.bfloat16, use_fast_accum=True)
        glu = glu_ops(m)
        with torch.no_grad():
            ours_gu()
            ours_dn()
            ref_act = glu(torch_gu())
            ref_y = torch_dn()
            torch.cuda.synchronize()
            checks = {"gate/up + GLU": rel_err(act, ref_act), "down": rel_err(y, ref_y)}
            for what, err, ours, theirs, flop in (
                    ("gate/up + GLU", checks["gate/up + GLU"], ours_gu, torch_gu, 4.0 * R * H * I),
                    ("down", checks["down"], ours_dn, torch_dn, 2.0 * R * H * I)):
                r = {"model": name, "gemm": what, "rows": R, "experts": E, "hidden": H, "inter": I,
                     "rel_err_vs_torch": err, "tolerance": tolerance, "check": err <= tolerance, "flop": flop}
                if r["check"]:
                    samples = ti.time_pairs(ours, theirs, warmup, pairs)
                    ratios = [b / a for a, b in samples]
                    om = statistics.median(a for a, _ in samples)
                    tm = statistics.median(b for _, b in samples)
                    r.update({"ours_ms": [a for a, _ in samples], "torch_ms": [b for _, b in samples],
                              "ours_median_ms": om, "torch_median_ms": tm,
                              "ours_tflops": flop / (om * 1e-3) * 1e-12, "torch_tflops": flop / (tm * 1e-3) * 1e-12,
                              "ratio_median": statistics.median(ratios), "ratio_ci95": ti.median_interval(ratios)})
                out.append(r)
    finally:
        lib.L.lbf8_destroy(h)
    del xq, w13q, wdq, aq, act, y
    torch.cuda.empty_cache()
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True, help="model-<name>.json and counts-<name>.txt")
    ap.add_argument("--models", required=True, help="comma list of presets")
    ap.add_argument("--ours-lib", required=True, help="liblayerbench_fp8_experts.so")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--pairs", type=int, default=30, help="interleaved pairs per GEMM (>= 20)")
    ap.add_argument("--iterations", type=int, default=30, help="timed runs of the dense ceiling")
    ap.add_argument("--json", required=True)
    args = ap.parse_args()
    if args.pairs < 20:
        ap.error("--pairs must be at least 20 (the 95% interval of the median needs them)")
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}")
    lib = Fp8Lib(args.ours_lib)
    with torch.no_grad():
        dense = [dense_ceiling(args.warmup, args.iterations)]
    results = []
    for name in args.models.split(","):
        with open(f"{args.dir}/model-{name}.json") as f:
            m = json.load(f)
        with open(f"{args.dir}/counts-{name}.txt") as f:
            counts = [int(v) for v in f.read().split()]
        try:
            results += run_preset(lib, m, counts, args.warmup, args.pairs)
        except Exception as e:  # noqa: BLE001 -- a preset that fails is reported, the others still run
            print(f"{name}: failed: {e}")
            results.append({"model": name, "error": str(e)})
    with torch.no_grad():
        dense.append(dense_ceiling(args.warmup, args.iterations))
    ceiling = max(d["tflops"] for d in dense)
    with open(args.json, "w") as f:
        json.dump({"torch": torch.__version__, "device": torch.cuda.get_device_name(), "dense": dense,
                   "results": results}, f, indent=1)
    print("\n## ours (FP8 rowwise, wgmma) and torch._scaled_grouped_mm interleaved\n")
    for d in dense:
        print(f"dense ceiling: {d['case']}: median {d['median_ms']:.4f} ms, {d['tflops']:.0f} TFLOP/s")
    print("\n| model | GEMM | rows | check: rel err vs torch | ours ms | torch ms | ours TFLOP/s | torch TFLOP/s "
          "| ours % of dense | torch / ours (median of pair ratios) | 95% interval | pairs | >= 1.3x |\n"
          "|---|---|---:|---|---:|---:|---:|---:|---:|---:|---|---:|---|")
    for r in results:
        if "error" in r:
            print(f"| {r['model']} | failed: {r['error']} | | | | | | | | | | | |")
            continue
        head = f"| {r['model']} | {r['gemm']} | {r['rows']} | {r['rel_err_vs_torch']:.2e}"
        if not r["check"]:
            print(f"{head} FAILED | | | | | | | | | not timed |")
            continue
        ci = r["ratio_ci95"]
        ci_s = f"[{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "n/a"
        verdict = "n/a" if not ci else "met" if ci[0] >= 1.3 else "not met" if ci[1] < 1.3 else "inside"
        print(f"{head} | {r['ours_median_ms']:.4f} | {r['torch_median_ms']:.4f} | {r['ours_tflops']:.0f} "
              f"| {r['torch_tflops']:.0f} | {100 * r['ours_tflops'] / ceiling:.0f}% | {r['ratio_median']:.3f}x "
              f"| {ci_s} | {len(r['ours_ms'])} | {verdict} |")


if __name__ == "__main__":
    main()
