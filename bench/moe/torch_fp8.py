#!/usr/bin/env python3
"""layerbench's FP8 (e4m3) grouped expert GEMMs, rowwise beside torch._scaled_grouped_mm and
block-scaled beside the dense ceiling, interleaved in one process, one GPU, every preset;
torch._scaled_mm dense 8192^3 as the ceiling.

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
block       (--block) DeepSeek-V3's recipe (moe/hopper/fp8_block_sm90.cuh: x 1x128, weights 128x128, fp32
            promotion every 128 K elements), operands quantized by our device quantizers from bf16
            randn; torch has no grouped block-scaled GEMM on Hopper, so each of our block GEMMs
            (gate/up + GLU with bf16 act, gate/up with the e4m3 act quantization fused, down) is
            paired ABBA with the dense ceiling itself, and the pair statistic is our rate over the
            dense rate (median of pair ratios, 95% interval); checked first against torch on the
            dequantized operands (float32 matmul) on the rows of two experts: bf16 act and y
            <= 1e-2, the fused e4m3 act (dequantized) <= 5e-2 (e4m3 rounding).
"""
import argparse
import ctypes
import itertools
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
        L.lbf8_block_tiles.argtypes = [vp, vp, vp]
        L.lbf8_block_gate_up.argtypes = [vp, vp, vp, vp, vp, vp, vp, vp, i64, vp]
        L.lbf8_block_down.argtypes = [vp, vp, vp, vp, vp, vp, i64, vp]
        L.lbf8_quantize_1x128.argtypes = [vp, i64, i64, vp, vp, vp]
        L.lbf8_quantize_128x128.argtypes = [vp, i64, i64, i64, vp, vp, vp]
        L.lbf8_set_variant.argtypes = [ctypes.c_char_p]
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


def paired_rates(samples, flop, other, other_flop):
    """From ABBA samples (ours ms, the other side's ms): both sides' times, medians and rates, and the
    median of the pair ratios of our rate over the other's with its distribution-free 95% interval."""
    ratios = [(flop / a) / (other_flop / b) for a, b in samples]
    om = statistics.median(a for a, _ in samples)
    xm = statistics.median(b for _, b in samples)
    return {"ours_ms": [a for a, _ in samples], f"{other}_ms": [b for _, b in samples],
            "ours_median_ms": om, f"{other}_median_ms": xm,
            "ours_tflops": flop / (om * 1e-3) * 1e-12, f"{other}_tflops": other_flop / (xm * 1e-3) * 1e-12,
            "ratio_median": statistics.median(ratios), "ratio_ci95": ti.median_interval(ratios)}


def timed_if_checked(r, tag, err_text, time_pairs, other, other_flop, ratio_text):
    """A GEMM whose check passed is timed in pairs (paired_rates) and its line printed; one that
    failed is not timed, and says so."""
    if r["check"]:
        r.update(paired_rates(time_pairs(), r["flop"], other, other_flop))
        print(f"{tag}: {err_text}, ours {r['ours_tflops']:.0f} TFLOP/s, {other} {r[other + '_tflops']:.0f}, "
              f"{ratio_text} {r['ratio_median']:.3f} {r['ratio_ci95']}", flush=True)
    else:
        print(f"{tag}: check FAILED: {err_text}", flush=True)
    return r


def run_preset(lib, m, counts, warmup, pairs, variants=("",), tolerance=1e-2):
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
        for variant in variants:  # each launch variant: its own lists, checked, then paired with torch
            lib.check(lib.L.lbf8_set_variant(variant.encode()), f"lbf8_set_variant({variant!r})")
            lib.check(lib.L.lbf8_tiles(h, counts_d.data_ptr(), lib.stream()), "lbf8_tiles")
            act.fill_(float("nan"))
            y.fill_(float("nan"))
            ours_gu = lambda: lib.check(lib.L.lbf8_gate_up(h, xq.data_ptr(), xs.data_ptr(), w13q.data_ptr(),
                                                           w13s.data_ptr(), act.data_ptr(), R, lib.stream()),
                                        "lbf8_gate_up")
            ours_dn = lambda: lib.check(lib.L.lbf8_down(h, aq.data_ptr(), as_.data_ptr(), wdq.data_ptr(),
                                                        wds.data_ptr(), y.data_ptr(), R, lib.stream()), "lbf8_down")
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
                    r = {"model": name, "variant": variant or "default", "gemm": what, "rows": R, "experts": E,
                         "hidden": H, "inter": I, "rel_err_vs_torch": err, "tolerance": tolerance,
                         "check": err <= tolerance, "flop": flop}
                    out.append(timed_if_checked(r, f"rowwise {name} [{variant or 'default'}] {what}",
                                                f"err vs torch {err:.2e}",
                                                lambda: ti.time_pairs(ours, theirs, warmup, pairs), "torch", flop,
                                                "torch/ours"))
    finally:
        lib.L.lbf8_set_variant(b"")
        lib.L.lbf8_destroy(h)
    del xq, w13q, wdq, aq, act, y
    torch.cuda.empty_cache()
    return out


def cdiv(a, b):
    return (a + b - 1) // b


def block_quantize_rows(lib, x):
    """1x128 e4m3 of a bf16 (R, K) matrix by our device quantizer: (codes, scales (R, K/128))."""
    R, K = x.shape
    q = torch.empty(R, K, device="cuda", dtype=F8)
    s = torch.empty(R, cdiv(K, 128), device="cuda", dtype=torch.float32)
    lib.check(lib.L.lbf8_quantize_1x128(x.data_ptr(), R, K, q.data_ptr(), s.data_ptr(), lib.stream()),
              "lbf8_quantize_1x128")
    return q, s


def block_quantize_weights(lib, E, N, K, parts):
    """randn (E, N, K) / sqrt(K) bf16 weights quantized 128x128 by our device quantizer, an expert at
    a time, each expert as `parts` matrices of N / parts rows (gate and up apart): codes (E, N, K),
    scales (E * parts, N / parts / 128, K / 128)."""
    rows = N // parts
    q = torch.empty(E, N, K, device="cuda", dtype=F8)
    s = torch.empty(E * parts, cdiv(rows, 128), cdiv(K, 128), device="cuda", dtype=torch.float32)
    for e in range(E):
        w = torch.randn(N, K, device="cuda", dtype=torch.bfloat16) / K ** 0.5
        lib.check(lib.L.lbf8_quantize_128x128(w.data_ptr(), parts, rows, K, q[e].data_ptr(),
                                              s[e * parts].data_ptr(), lib.stream()), "lbf8_quantize_128x128")
    return q, s


def dequant_1x128(q, s):
    K = q.shape[-1]
    return q.float() * s.repeat_interleave(128, dim=-1)[..., :K]


def dequant_128x128(q, s):
    N, K = q.shape
    return q.float() * s.repeat_interleave(128, dim=0).repeat_interleave(128, dim=1)[:N, :K]


def run_block(lib, m, counts, warmup, pairs, dense_fn, dense_flop, variants=("",)):
    dev, name = "cuda", m["name"]
    H, E, I = m["hidden"], m["experts"], m["moe_intermediate"]
    R = int(sum(counts))
    counts_d = torch.tensor(counts, dtype=torch.int32, device=dev)
    xq, xs = block_quantize_rows(lib, torch.randn(R, H, device=dev, dtype=torch.bfloat16))
    w13q, w13s = block_quantize_weights(lib, E, 2 * I, H, 2)
    wdq, wds = block_quantize_weights(lib, E, H, I, 1)
    aq, as_ = block_quantize_rows(lib, torch.randn(R, I, device=dev, dtype=torch.bfloat16))
    act = torch.full((R, I), float("nan"), device=dev, dtype=torch.bfloat16)
    fq = torch.full((R, I), float("nan"), device=dev, dtype=torch.bfloat16).to(F8)
    fs = torch.full((R, cdiv(I, 128)), float("nan"), device=dev, dtype=torch.float32)
    y = torch.full((R, H), float("nan"), device=dev, dtype=torch.bfloat16)
    h = ctypes.c_void_p()
    lib.check(lib.L.lbf8_create(name.encode(), R, ctypes.byref(h)), f"lbf8_create({name})")
    out = []
    try:
        for variant in variants:  # each launch variant: its own lists, checked, then paired with the dense ceiling
            lib.check(lib.L.lbf8_set_variant(variant.encode()), f"lbf8_set_variant({variant!r})")
            for t in (act, fs, y):  # poisoned: every element must be written
                t.fill_(float("nan"))
            fq.view(torch.uint8).fill_(0x7f)  # e4m3fn NaN
            lib.check(lib.L.lbf8_block_tiles(h, counts_d.data_ptr(), lib.stream()), "lbf8_block_tiles")
            gu = lambda: lib.check(lib.L.lbf8_block_gate_up(h, xq.data_ptr(), xs.data_ptr(), w13q.data_ptr(),
                                                            w13s.data_ptr(), act.data_ptr(), None, None, R,
                                                            lib.stream()), "lbf8_block_gate_up")
            guq = lambda: lib.check(lib.L.lbf8_block_gate_up(h, xq.data_ptr(), xs.data_ptr(), w13q.data_ptr(),
                                                             w13s.data_ptr(), None, fq.data_ptr(), fs.data_ptr(), R,
                                                             lib.stream()), "lbf8_block_gate_up (fused)")
            dn = lambda: lib.check(lib.L.lbf8_block_down(h, aq.data_ptr(), as_.data_ptr(), wdq.data_ptr(),
                                                         wds.data_ptr(), y.data_ptr(), R, lib.stream()),
                                   "lbf8_block_down")
            glu = glu_ops(m)
            with torch.no_grad():
                gu()
                guq()
                dn()
                torch.cuda.synchronize()
                # Torch on the dequantized operands, the rows of the first and the largest expert.
                offs = [0] + list(itertools.accumulate(counts))
                live = [e for e in range(E) if counts[e] > 0]
                picks = sorted({live[0], max(range(E), key=lambda e: counts[e])}) if live else []
                err = {"act": [0.0, 0.0], "fused act": [0.0, 0.0], "y": [0.0, 0.0]}
                finite = (torch.isfinite(act).all() and torch.isfinite(y).all() and torch.isfinite(fs).all()
                          and torch.isfinite(fq.float()).all()).item()
                for e in picks:
                    r0, r1 = offs[e], offs[e + 1]
                    xd = dequant_1x128(xq[r0:r1], xs[r0:r1])
                    g = xd @ dequant_128x128(w13q[e, :I], w13s[2 * e]).t()
                    u = xd @ dequant_128x128(w13q[e, I:], w13s[2 * e + 1]).t()
                    ref = glu(torch.cat([g, u], dim=1))
                    refy = dequant_1x128(aq[r0:r1], as_[r0:r1]) @ dequant_128x128(wdq[e], wds[e]).t()
                    for what, o, r in (("act", act[r0:r1].float(), ref),
                                       ("fused act", dequant_1x128(fq[r0:r1], fs[r0:r1]), ref),
                                       ("y", y[r0:r1].float(), refy)):
                        err[what][0] += (o - r).pow(2).sum().item()
                        err[what][1] += r.pow(2).sum().item()
                rel = {k: (math.sqrt(v[0] / v[1]) if v[1] > 0 and finite else math.inf) for k, v in err.items()}
                for what, fn, flop, tol, key in (
                        ("block gate/up + GLU (bf16 act)", gu, 4.0 * R * H * I, 1e-2, "act"),
                        ("block gate/up + GLU + e4m3 act fused", guq, 4.0 * R * H * I, 5e-2, "fused act"),
                        ("block down", dn, 2.0 * R * H * I, 1e-2, "y")):
                    r = {"model": name, "variant": variant or "default", "gemm": what, "rows": R, "experts": E,
                         "hidden": H, "inter": I, "rel_err_vs_dequantized": rel[key], "tolerance": tol,
                         "check": rel[key] <= tol, "flop": flop}
                    out.append(timed_if_checked(r, f"block {name} [{variant or 'default'}] {what}",
                                                f"err {rel[key]:.2e} (tolerance {tol:.0e})",
                                                lambda: ti.time_pairs(fn, dense_fn, warmup, pairs), "dense",
                                                dense_flop, "ours/dense"))
        lib.L.lbf8_set_variant(b"")
    finally:
        lib.L.lbf8_destroy(h)
    del xq, w13q, wdq, aq, act, fq, y
    torch.cuda.empty_cache()
    return out


def dense_case(n=8192):
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    aq, sa = quantize_rows(a)
    bq, sb = quantize_rows(b)
    fn = lambda: torch._scaled_mm(aq, bq.t(), scale_a=sa.view(-1, 1), scale_b=sb.view(1, -1),
                                  out_dtype=torch.bfloat16, use_fast_accum=True)
    return fn, 2.0 * n ** 3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True, help="model-<name>.json and counts-<name>.txt")
    ap.add_argument("--models", required=True, help="comma list of presets")
    ap.add_argument("--ours-lib", required=True, help="liblayerbench_fp8_experts.so")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--pairs", type=int, default=30, help="interleaved pairs per GEMM (>= 20)")
    ap.add_argument("--iterations", type=int, default=30, help="timed runs of the dense ceiling")
    ap.add_argument("--json", required=True)
    ap.add_argument("--block", action="store_true",
                    help="also our block-scaled GEMMs, each paired with the dense ceiling")
    ap.add_argument("--variants", default="",
                    help="comma list of the rowwise kernels' launch variants to pair with torch, each as modifiers "
                         "(e.g. ',unpaired': the default, then unpaired); default: the default only")
    ap.add_argument("--block-variants", default="",
                    help="comma list of the block-scaled kernels' launch variants, each paired with the dense ceiling "
                         "(e.g. ',unpaired': the default, then single CTAs); default: the default only")
    args = ap.parse_args()
    if args.pairs < 20:
        ap.error("--pairs must be at least 20 (the 95% interval of the median needs them)")
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}")
    lib = Fp8Lib(args.ours_lib)
    with torch.no_grad():
        dense = [dense_ceiling(args.warmup, args.iterations)]
    results, block_results = [], []
    for name in args.models.split(","):
        with open(f"{args.dir}/model-{name}.json") as f:
            m = json.load(f)
        with open(f"{args.dir}/counts-{name}.txt") as f:
            counts = [int(v) for v in f.read().split()]
        try:
            results += run_preset(lib, m, counts, args.warmup, args.pairs, args.variants.split(","))
        except Exception as e:  # noqa: BLE001 -- a preset that fails is reported, the others still run
            print(f"{name}: failed: {e}")
            results.append({"model": name, "error": str(e)})
        if args.block:
            try:
                dense_fn, dense_flop = dense_case()
                with torch.no_grad():
                    block_results += run_block(lib, m, counts, args.warmup, args.pairs, dense_fn, dense_flop,
                                               args.block_variants.split(","))
                del dense_fn
                torch.cuda.empty_cache()
            except Exception as e:  # noqa: BLE001
                print(f"{name}: block-scaled failed: {e}")
                block_results.append({"model": name, "error": str(e)})
    with torch.no_grad():
        dense.append(dense_ceiling(args.warmup, args.iterations))
    ceiling = max(d["tflops"] for d in dense)
    with open(args.json, "w") as f:
        json.dump({"torch": torch.__version__, "device": torch.cuda.get_device_name(), "dense": dense,
                   "results": results, "block": block_results}, f, indent=1)
    print("\n## ours (FP8 rowwise, wgmma) and torch._scaled_grouped_mm interleaved\n")
    for d in dense:
        print(f"dense ceiling: {d['case']}: median {d['median_ms']:.4f} ms, {d['tflops']:.0f} TFLOP/s")
    print("\n| model | variant | GEMM | rows | check: rel err vs torch | ours ms | torch ms | ours TFLOP/s | torch TFLOP/s "
          "| ours % of dense | torch / ours (median of pair ratios) | 95% interval | pairs | >= 1.3x |\n"
          "|---|---|---|---:|---|---:|---:|---:|---:|---:|---:|---|---:|---|")
    for r in results:
        if "error" in r:
            print(f"| {r['model']} | | failed: {r['error']} | | | | | | | | | | | |")
            continue
        head = f"| {r['model']} | {r['variant']} | {r['gemm']} | {r['rows']} | {r['rel_err_vs_torch']:.2e}"
        if not r["check"]:
            print(f"{head} FAILED | | | | | | | | | not timed |")
            continue
        ci = r["ratio_ci95"]
        ci_s = f"[{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "n/a"
        verdict = "n/a" if not ci else "met" if ci[0] >= 1.3 else "not met" if ci[1] < 1.3 else "inside"
        print(f"{head} | {r['ours_median_ms']:.4f} | {r['torch_median_ms']:.4f} | {r['ours_tflops']:.0f} "
              f"| {r['torch_tflops']:.0f} | {100 * r['ours_tflops'] / ceiling:.0f}% | {r['ratio_median']:.3f}x "
              f"| {ci_s} | {len(r['ours_ms'])} | {verdict} |")

    if block_results:
        print("\n## ours block-scaled (DeepSeek-V3 recipe) paired with the dense ceiling (torch._scaled_mm 8192^3)\n")
        print("| model | variant | GEMM | rows | check: rel err vs dequantized (tol) | ours ms | ours TFLOP/s | dense TFLOP/s "
              "(paired) | ours / dense rate (median of pair ratios) | 95% interval | pairs | >= 60% |\n"
              "|---|---|---|---:|---|---:|---:|---:|---:|---|---:|---|")
        for r in block_results:
            if "error" in r:
                print(f"| {r['model']} | | failed: {r['error']} | | | | | | | | | |")
                continue
            head = (f"| {r['model']} | {r['variant']} | {r['gemm']} | {r['rows']} "
                    f"| {r['rel_err_vs_dequantized']:.2e} ({r['tolerance']:.0e})")
            if not r["check"]:
                print(f"{head} FAILED | | | | | | | not timed |")
                continue
            ci = r["ratio_ci95"]
            ci_s = f"[{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "n/a"
            verdict = "n/a" if not ci else "met" if ci[0] >= 0.6 else "not met" if ci[1] < 0.6 else "inside"
            print(f"{head} | {r['ours_median_ms']:.4f} | {r['ours_tflops']:.0f} | {r['dense_tflops']:.0f} "
                  f"| {r['ratio_median']:.3f} | {ci_s} | {len(r['ours_ms'])} | {verdict} |")


if __name__ == "__main__":
    main()

