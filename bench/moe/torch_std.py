#!/usr/bin/env python3
"""torch beside layerbench's standard-block router and expert MLPs, one GPU, every preset.

For each preset (its description model-<name>.json and routed row counts counts-<name>.txt,
both written by `layerbench-moe-kernels --models ... --counts-dir DIR` in the same run):
  router     the family's eager router as the Hugging Face implementations write it, at T tokens:
             sigmoid + selection bias (+ group limit): fp32 logits (F.linear on .float()),
             sigmoid, group scores (sum of the top 2, or max), group mask, top-k, gather,
             renormalise, scale (DeepSeek-V3, GLM-4.5);
             softmax then top-k: bf16 logits, softmax in fp32, top-k, renormalise (Qwen3, Mixtral);
             top-k then softmax: bf16 logits, top-k, softmax over the k (gpt-oss);
  experts    torch._grouped_mm gate/up (rows, H) x (E, H, 2I) and down (rows, I) x (E, I, H) over
             the same row counts (GEMMs only, back to back, and each alone), and with the activation
             as torch ops (SiLU-GLU, or gpt-oss's clamped SwiGLU) between them;
  dense      one cuBLAS GEMM (torch.mm) of the gate/up FLOPs: rows x H x 2I, the rate reference.
Every case is timed with CUDA events after a warm-up; median and min are reported. --ours reads
layerbench-moe-kernels' table and prints the side-by-side (torch / ours: > 1 means ours is faster).
--ours-lib liblayerbench_std_experts.so: ours and torch._grouped_mm (GEMMs only) in this process,
checked against each other first, then timed interleaved in ABBA pairs (bench/moe/torch_interleaved.py);
--interleaved-only skips the separate torch timings above.
"""
import argparse
import json
import re

import torch
import torch.nn.functional as F

from torch_moe import timed  # the one CUDA-event timing loop of the torch side-by-sides
import torch_interleaved




def make_router(m):
    r, k = m["router"], m["topk"]
    if r["topk_before_score"]:
        def route(x, w, bias):
            logits = F.linear(x, w)
            top_v, top_i = torch.topk(logits, k, dim=-1)
            p = torch.softmax(top_v, dim=-1, dtype=torch.float32) if r["score"] == "softmax" else top_v.float().sigmoid()
            return top_i, p * r["scale"]
        return route, "top-k then softmax (bf16 logits)"
    if r["score"] == "softmax":
        def route(x, w, bias):
            logits = F.linear(x, w)
            p = torch.softmax(logits, dim=-1, dtype=torch.float32)
            wt, idx = torch.topk(p, k, dim=-1)
            if r["normalize"]:
                wt = wt / wt.sum(dim=-1, keepdim=True)
            return idx, wt * r["scale"]
        return route, "softmax then top-k (bf16 logits, fp32 softmax)"
    G, KG = r["groups"], r["topk_groups"]

    def route(x, w, bias):
        logits = F.linear(x.float(), w.float())
        scores = logits.sigmoid()
        sel = scores + bias if r["selection_bias"] else scores
        if G > 1:
            T = sel.shape[0]
            gs = sel.view(T, G, -1)
            gs = gs.topk(2, dim=-1)[0].sum(-1) if r["group_score"] == "top2_sum" else gs.amax(-1)
            gidx = torch.topk(gs, KG, dim=-1, sorted=False)[1]
            gmask = torch.zeros_like(gs).scatter_(1, gidx, 1)
            smask = gmask.unsqueeze(-1).expand(T, G, sel.shape[1] // G).reshape(T, -1)
            sel = sel.masked_fill(~smask.bool(), float("-inf"))
        idx = torch.topk(sel, k, dim=-1, sorted=False)[1]
        wt = scores.gather(1, idx)
        if r["normalize"]:
            wt = wt / (wt.sum(dim=-1, keepdim=True) + 1e-20)
        return idx, wt * r["scale"]
    return route, "sigmoid + bias" + (" + group limit" if G > 1 else "") + " (fp32 logits, as in transformers)"


def glu_ops(m):
    a = m["activation"]
    if a["kind"] == "swiglu_clamped":
        alpha, limit = a["alpha"], a["limit"]

        def act(gu):
            g, u = gu.chunk(2, dim=-1)
            g = g.clamp(max=limit)
            u = u.clamp(min=-limit, max=limit)
            return g * torch.sigmoid(alpha * g) * (u + 1)
        return act
    return lambda gu: (lambda g, u: F.silu(g) * u)(*gu.chunk(2, dim=-1))


def run_model(m, counts, T, warmup, iterations, record):
    dev, name = "cuda", m["name"]
    H, E, I = m["hidden"], m["experts"], m["moe_intermediate"]
    x = torch.randn(T, H, device=dev, dtype=torch.bfloat16)
    w = torch.randn(E, H, device=dev, dtype=torch.bfloat16) / H ** 0.5
    bias = torch.randn(E, device=dev, dtype=torch.float32) * 0.05
    route, label = make_router(m)
    with torch.no_grad():
        med, best, _ = timed(lambda: route(x, w, bias), warmup, iterations)
    record(name, f"torch eager router: {label}", med, best, 2.0 * T * E * H)
    del x, w, bias
    rows = int(sum(counts))
    offs = torch.tensor(counts, dtype=torch.int64).cumsum(0).to(device=dev, dtype=torch.int32)
    xs = torch.randn(rows, H, device=dev, dtype=torch.bfloat16)
    w13 = torch.randn(E, H, 2 * I, device=dev, dtype=torch.bfloat16) / H ** 0.5
    wd = torch.randn(E, I, H, device=dev, dtype=torch.bfloat16) / I ** 0.5
    act_in = torch.randn(rows, I, device=dev, dtype=torch.bfloat16)
    try:
        torch._grouped_mm(xs, w13, offs=offs)
    except RuntimeError:  # builds that take B only column-major (K contiguous)
        w13 = w13.transpose(-2, -1).contiguous().transpose(-2, -1)
        wd = wd.transpose(-2, -1).contiguous().transpose(-2, -1)
    act = glu_ops(m)
    flop = 6.0 * rows * H * I
    with torch.no_grad():
        med, best, _ = timed(lambda: (torch._grouped_mm(xs, w13, offs=offs), torch._grouped_mm(act_in, wd, offs=offs)),
                          warmup, iterations)
        record(name, "torch._grouped_mm gate/up + down (GEMMs only)", med, best, flop)
        med, best, _ = timed(lambda: torch._grouped_mm(xs, w13, offs=offs), warmup, iterations)
        record(name, "torch._grouped_mm gate/up alone", med, best, 4.0 * rows * H * I)
        med, best, _ = timed(lambda: torch._grouped_mm(act_in, wd, offs=offs), warmup, iterations)
        record(name, "torch._grouped_mm down alone", med, best, 2.0 * rows * H * I)
        med, best, _ = timed(lambda: torch._grouped_mm(act(torch._grouped_mm(xs, w13, offs=offs)), wd, offs=offs),
                          warmup, iterations)
        record(name, "torch._grouped_mm gate/up + activation as torch ops + down", med, best, flop)
        wdense = w13[0].contiguous()
        med, best, _ = timed(lambda: torch.mm(xs, wdense), warmup, iterations)
        record(name, "dense cuBLAS torch.mm rows x H x 2I (reference rate)", med, best, 4.0 * rows * H * I)
    del xs, w13, wd, act_in
    torch.cuda.empty_cache()


def read_ours(path):
    """{(model, kernel): median ms} from layerbench-moe-kernels --models output."""
    ours = {}
    for line in open(path):
        m = re.match(r"\| (\S+) \| (.+?) \| ([\d.]+) \| ([\d.]+) \|", line)
        if m:
            ours[(m.group(1), m.group(2))] = float(m.group(3))
    return ours


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True, help="model-<name>.json and counts-<name>.txt")
    ap.add_argument("--models", required=True, help="comma list of presets")
    ap.add_argument("--tokens", type=int, default=8192)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--iterations", type=int, default=30)
    ap.add_argument("--ours", help="layerbench-moe-kernels --models output to put beside")
    ap.add_argument("--json", required=True)
    ap.add_argument("--ours-lib", help="liblayerbench_std_experts.so: ours and torch interleaved in this process")
    ap.add_argument("--ours-paths", default="automatic,wgmma",
                    help="expert paths of ours to time against torch (automatic = --ours-table's row, else the device's default; "
                         "wgmma:<modifiers> = a launch variant, e.g. wgmma:unpaired+in-place)")
    ap.add_argument("--ours-table", help="layerbench-moe-kernels' expert-path table, for the automatic path")
    ap.add_argument("--pairs", type=int, default=30, help="interleaved pairs per preset and path (>= 20)")
    ap.add_argument("--interleaved-only", action="store_true", help="only the interleaved study")
    a = ap.parse_args()
    if a.ours_lib and a.pairs < 20:
        ap.error(f"--pairs {a.pairs}: at least 20")
    lib = torch_interleaved.OursLib(a.ours_lib) if a.ours_lib else None
    torch.manual_seed(20261201)
    out = {"torch": torch.__version__, "device": torch.cuda.get_device_name(0), "tokens": a.tokens,
           "warmup": a.warmup, "iterations": a.iterations, "results": []}
    res = {}

    def record(model, what, med, best, flop):
        out["results"].append({"model": model, "name": what, "median_ms": med, "min_ms": best,
                               "tflops": flop / (med * 1e9)})
        res[(model, what.split(":")[0])] = med
        print(f"| {model} | {what} | {med:.4f} | {best:.4f} | {flop / (med * 1e9):.1f} |", flush=True)

    print("| model | torch | median ms | min ms | TFLOP/s (median) |\n|---|---|---:|---:|---:|")
    names = [n for n in a.models.split(",") if n]
    inter = out.setdefault("interleaved", []) if lib else None
    failed = []
    for n in names:
        try:
            m = json.load(open(f"{a.dir}/model-{n}.json"))
            counts = [int(v) for v in open(f"{a.dir}/counts-{n}.txt").read().split()]
        except OSError:
            print(f"{n}: no description or counts from layerbench-moe-kernels; skipped")
            continue
        if not a.interleaved_only:
            run_model(m, counts, a.tokens, a.warmup, a.iterations, record)
        if lib:
            try:
                rows = torch_interleaved.run_preset(lib, m, counts, [p for p in a.ours_paths.split(",") if p],
                                                    a.ours_table, a.warmup, a.pairs, glu_ops(m))
            except RuntimeError as e:  # the library's message (code 1 or 2), or torch's
                print(f"error: {n}: {e}")
                failed.append(n)
                continue
            inter.extend(rows)
            torch_interleaved.print_table(rows)
    with open(a.json, "w") as f:
        json.dump(out, f, indent=1)
    if a.ours and not a.interleaved_only:
        side_by_side(read_ours(a.ours), res, names)
    if lib:
        print("\n## ours and torch._grouped_mm interleaved (same process, same stream, ABBA pairs)")
        torch_interleaved.print_table(inter)
        if failed or not all(r["check"] for r in inter):
            bad = failed + sorted({r["model"] for r in inter if not r["check"]})
            print(f"error: ours failed or differs from torch at {', '.join(bad)} (see above); not timed there")
            raise SystemExit(1)


def side_by_side(ours, res, names):
    print("\n| model | routing ours ms | torch eager router ms | torch / ours (target >= 2) "
          "| experts ours ms (path) | torch grouped_mm GEMMs ms | torch / ours (target >= 1.15) "
          "| torch with activation ops ms | torch / ours |\n|---|---:|---:|---:|---|---:|---:|---:|---:|")
    for n in names:
        r_ours = ours.get((n, "routing (logits GEMM + warp selection)"))
        pe = ours.get((n, "expert MLPs, per-expert cuBLAS + activation"))
        gr = ours.get((n, "expert MLPs, grouped cuBLAS + activation"))
        ms = ours.get((n, "expert MLPs, per-expert cuBLAS on 4 streams + activation"))
        pd = ours.get((n, "expert MLPs, padded batched cuBLAS + activation"))
        wg = ours.get((n, "expert MLPs, grouped wgmma (activation fused)"))
        r_t = res.get((n, "torch eager router"))
        g_t = res.get((n, "torch._grouped_mm gate/up + down (GEMMs only)"))
        a_t = res.get((n, "torch._grouped_mm gate/up + activation as torch ops + down"))
        if None in (r_ours, pe, gr, ms, pd, r_t, g_t, a_t):
            print(f"| {n} | missing figures | | | | | | | |")
            continue
        e_ours, path = min([(pe, "per-expert"), (gr, "grouped"), (ms, "multi-stream"), (pd, "padded")] +
                           ([(wg, "wgmma")] if wg is not None else []))
        print(f"| {n} | {r_ours:.4f} | {r_t:.4f} | {r_t / r_ours:.2f}x | {e_ours:.4f} ({path}) | {g_t:.4f} "
              f"| {g_t / e_ours:.2f}x | {a_t:.4f} | {a_t / e_ours:.2f}x |")
    print("\n| model | wgmma gate/up + activation ms | torch grouped_mm gate/up ms | torch / ours "
          "| wgmma down ms | torch grouped_mm down ms | torch / ours |\n|---|---:|---:|---:|---:|---:|---:|")
    for n in names:
        f = [ours.get((n, "wgmma gate/up + activation alone")), res.get((n, "torch._grouped_mm gate/up alone")),
             ours.get((n, "wgmma down alone")), res.get((n, "torch._grouped_mm down alone"))]
        if None in f:
            print(f"| {n} | missing figures | | | | | |")
            continue
        print(f"| {n} | {f[0]:.4f} | {f[1]:.4f} | {f[1] / f[0]:.2f}x | {f[2]:.4f} | {f[3]:.4f} | {f[3] / f[2]:.2f}x |")


if __name__ == "__main__":
    main()
