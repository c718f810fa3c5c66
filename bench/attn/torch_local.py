#!/usr/bin/env python3
"""torch's cuDNN SDPA on the same local attention as layerbench-attn --advise timed for each topology.

Reads the advise JSON (its config holds the problem and workload; its results the timed
`local_attention` of each topology, SP rank 0) and computes, for that rank, the same attention
in torch: the local query rows (joint tokens + image region 0) against every key the rank meets
over all Ring steps, with the same key-padding masks and packed requests. torch's masked SDPA
cannot run on cuDNN (a boolean attn_mask sends it to another kernel and materialises an
[Lq, Lk] mask), so masks and packing are served the varlen way: one cuDNN SDPA call per request
(masks: its valid keys gathered beforehand) or per packed request (its query rows and keys).
Unmasked work is one call for the whole batch. Timed with CUDA events around all calls of one
forward; warm-up and iterations as given. Writes one JSON with per-topology medians and FLOPs.
"""
import argparse
import json
import re
import statistics

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel


def topology(label):
    u = r = a = 1
    for part in label.split("+"):
        m = re.fullmatch(r"(usp|ring|cp)(\d+)", part)
        if m:
            deg = int(m.group(2))
            if m.group(1) == "usp":
                u = deg
            elif m.group(1) == "ring":
                r = deg
            else:
                a = deg
    return u, r, a, label.endswith("+uaa")


def remap(cu, lo, hi):
    out = [0]
    for i in range(len(cu) - 1):
        out.append(out[-1] + max(0, min(cu[i + 1], hi) - max(cu[i], lo)))
    return out


def calls_for(cfg, seq, label):
    """(request or -1, q rows, key index list or None for all) of SP rank 0, and the local heads."""
    H, kv = cfg["heads"], cfg["kv_heads"] or cfg["heads"]
    u, r, a, uaa = topology(label)
    hpad = -(-H // u) * u if uaa else H
    hl, hkvl = hpad // u, (hpad if kv == H else kv) // u
    B, lt, lc = cfg["batch"], cfg["text_tokens"], cfg["cached_kv"]
    region = seq // (r * a)
    lq = lt + region
    front = cfg["joint_position"] == "front"
    # Key order: [cached; joint; image] (front) or [cached; image; joint] (rear).
    joint_at = lc if front else lc + seq
    image_at = lc + (lt if front else 0)
    lk = lc + lt + seq
    calls = []
    jl, il = cfg.get("joint_lengths") or [], cfg.get("image_lengths") or []
    cu = cfg.get("cu_seqlens_used") or []
    if len(cu) > 2:
        local = remap(cu, 0, region)
        q_image_at = lt if front else 0
        for d in range(len(cu) - 1):
            if local[d + 1] > local[d]:
                keys = list(range(image_at + cu[d], image_at + cu[d + 1]))
                calls.append((0, q_image_at + local[d], local[d + 1] - local[d], keys))
    elif jl or il:
        for b in range(B):
            jv = jl[b] if jl else lt
            iv = il[b] if il else seq
            keys = list(range(lc)) + list(range(joint_at, joint_at + jv)) + list(range(image_at, image_at + iv))
            calls.append((b, 0, lq, sorted(keys)))
    else:
        calls.append((-1, 0, lq, None))
    return hl, hkvl, lq, lk, calls


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--advise-json", required=True, nargs="+", help="one or more advise JSON files")
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--iterations", type=int, default=5)
    ap.add_argument("--suffix", default=".torch.json", help="written beside each advise JSON")
    a = ap.parse_args()
    for path in a.advise_json:
        try:
            run_file(path, path[:-5] + a.suffix if path.endswith(".json") else path + a.suffix, a)
        except Exception as e:  # one broken case never hides the others
            print(f"{path}: {type(e).__name__}: {e}", flush=True)


def run_file(path, out_path, a):
    doc = json.load(open(path))
    cfg = doc["config"]
    D, B = cfg["head_dim"], cfg["batch"]
    out = {"torch": torch.__version__, "cudnn": torch.backends.cudnn.version(),
           "device": torch.cuda.get_device_name(0), "source": path, "results": []}
    torch.manual_seed(20261201)
    for seq in cfg["seqs"]:
        for adv in doc["advice"]:
            if adv["seq"] != seq:
                continue
            label = adv["topology"]
            hl, hkvl, lq, lk, calls = calls_for(cfg, seq, label)
            q = torch.randn(B, hl, lq, D, device="cuda", dtype=torch.bfloat16)
            k = torch.randn(B, hkvl, lk, D, device="cuda", dtype=torch.bfloat16)
            v = torch.randn(B, hkvl, lk, D, device="cuda", dtype=torch.bfloat16)
            prepared, flops = [], 0.0
            for (b, q0, nq, keys) in calls:
                bs = slice(None) if b < 0 else slice(b, b + 1)
                qq = q[bs, :, q0:q0 + nq]
                if keys is None:
                    kk, vv = k[bs], v[bs]
                else:
                    idx = torch.tensor(keys, device="cuda")
                    kk, vv = k[bs].index_select(2, idx).contiguous(), v[bs].index_select(2, idx).contiguous()
                prepared.append((qq, kk, vv))
                flops += 4.0 * qq.shape[0] * hl * nq * kk.shape[2] * D
            gqa = hl != hkvl
            backend = "cudnn"

            def forward():
                for (qq, kk, vv) in prepared:
                    torch.nn.functional.scaled_dot_product_attention(qq, kk, vv, enable_gqa=gqa)

            with torch.no_grad():
                try:
                    with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                        forward()
                except RuntimeError:
                    backend = "default dispatch (cuDNN refused)"
                ctx = sdpa_kernel(SDPBackend.CUDNN_ATTENTION) if backend == "cudnn" else torch.no_grad()
                with ctx:
                    for _ in range(a.warmup):
                        forward()
                    torch.cuda.synchronize()
                    ms = []
                    for _ in range(a.iterations):
                        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                        e0.record()
                        forward()
                        e1.record()
                        e1.synchronize()
                        ms.append(e0.elapsed_time(e1))
            med = statistics.median(ms)
            r = {"seq": seq, "topology": label, "calls": len(calls), "local_heads": hl, "local_kv_heads": hkvl,
                 "seq_q": lq, "seq_kv": lk, "flops": flops, "median_ms": med, "min_ms": min(ms),
                 "tflops": flops / (med * 1e9), "backend": backend, "samples_ms": ms}
            out["results"].append(r)
            print(f"torch {path} {label} S={seq}: {len(calls)} call(s), {med:.3f} ms, {r['tflops']:.1f} TFLOP/s "
                  f"({backend})", flush=True)
            del q, k, v, prepared
            torch.cuda.empty_cache()
    with open(out_path, "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
