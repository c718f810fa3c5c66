#!/usr/bin/env python3
"""torch on the same local attention as layerbench-attn --advise timed for each topology.

Reads the advise JSON (its config holds the problem and workload; each advice entry the local plan
of SP rank 0: its buffers and kernel calls) and times two torch forwards of that rank's work:

steps  the verdict's peer: the same calls as our plan, made the way torch's own context-parallel
       ring attention makes them (torch.distributed.tensor.experimental context parallel): per
       call (Ring step, request where masks differ, document where packed) one cuDNN SDPA over
       that call's query rows and keys; where a query row meets several calls (Ring steps, the
       key ranges of a mask) each call returns its log-sum-exp
       (aten._scaled_dot_product_cudnn_attention, compute_log_sumexp) and the partial outputs
       are merged as torch's ring merger does (fp32: out -= sigmoid(lse_b - lse) * (out - out_b),
       lse -= logsigmoid(lse - lse_b)), then cast to bf16. Checked, outside the timing, against
       one SDPA over every key of the merged rows.
ideal  one cuDNN SDPA call over every key the rank meets (per request over its valid keys,
       gathered beforehand, where masks differ; per document where packed): the work without
       the Ring's split, which no Ring implementation can make.

Both are timed as layerbench-attn times ours: after the warm-up and a device sync, each
iteration is one forward between two CUDA events, synchronised before the next (host launch
cost included on both sides). Writes one JSON per advise file with per-topology medians and FLOPs.
"""
import argparse
import json
import re
import statistics

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

aten = torch.ops.aten


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


def ideal_calls(cfg, seq, label):
    """(request or -1, q0, q rows, key index list or None for all) of SP rank 0 over every key it
    meets, and the local heads, query rows and key rows."""
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


def time_cold(forward, warmup, iterations):
    """Median and samples (ms): CUDA events around one forward, a sync before each iteration."""
    for _ in range(warmup):
        forward()
    torch.cuda.synchronize()
    ms = []
    for _ in range(iterations):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        forward()
        e1.record()
        e1.synchronize()
        ms.append(e0.elapsed_time(e1))
    return statistics.median(ms), ms


def time_pipelined(forward, iterations):
    """Median (ms) of forwards enqueued back to back, CUDA events around each, one sync at the end
    (launch cost hidden behind the previous forward where the GPU is the slower side)."""
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(iterations)]
    for e0, e1 in events:
        e0.record()
        forward()
        e1.record()
    torch.cuda.synchronize()
    return statistics.median(e0.elapsed_time(e1) for e0, e1 in events)


def cudnn_with_lse(q, k, v):
    """torch's cuDNN SDPA returning (out, lse), as the context-parallel ring calls it."""
    res = aten._scaled_dot_product_cudnn_attention(q, k, v, attn_bias=None, compute_log_sumexp=True, dropout_p=0.0,
                                                 is_causal=False, return_debug_mask=False)
    out, lse = res[0], res[1]
    return out, (lse.unsqueeze(-1) if lse.dim() < out.dim() else lse)


def flash_with_lse(q, k, v):
    res = aten._scaled_dot_product_flash_attention(q, k, v, dropout_p=0.0, is_causal=False, return_debug_mask=False)
    out, lse = res[0], res[1]
    return out, (lse.unsqueeze(-1) if lse.dim() < out.dim() else lse)


def pick_lse_op(q, k, v):
    """(op, expand K/V heads to the query's, label): cuDNN as torch's ring picks it; K/V heads
    repeated beforehand where the op refuses GQA; flash where cuDNN refuses the shape."""
    rep = q.shape[1] // k.shape[1]
    tries = [(cudnn_with_lse, False, "cudnn")]
    if rep > 1:
        tries.append((cudnn_with_lse, True, "cudnn (K/V heads repeated beforehand)"))
    tries += [(flash_with_lse, rep > 1, "flash (cuDNN refused)")]
    errors = []
    for op, expand, label in tries:
        try:
            kk = k.repeat_interleave(rep, 1) if expand else k
            op(q, kk, kk)
            torch.cuda.synchronize()
            return op, expand, label
        except RuntimeError as e:
            errors.append(f"{label}: {e}"[:200])
    raise RuntimeError("; ".join(errors))


class Merger:
    """torch's ring merger (fp32 output and LSE, the sigmoid / logsigmoid update)."""

    def __init__(self):
        self.out = None
        self.lse = None

    def step(self, out, lse):
        out, lse = out.to(torch.float32), lse.to(torch.float32)
        if self.out is None:
            self.out, self.lse = out, lse
        else:
            self.out = self.out - torch.sigmoid(lse - self.lse) * (self.out - out)
            self.lse = self.lse - F.logsigmoid(self.lse - lse)

    def result(self):
        return self.out.to(torch.bfloat16)


def steps_peer(plan, cfg, q, D):
    """The forward that makes our plan's calls the torch way; its FLOPs, calls and a check."""
    B = cfg["batch"]
    hl, hkvl = plan["local_heads"], plan["local_kv_heads"]
    bufs = [(torch.randn(B, hkvl, plan["keys0"], D, device="cuda", dtype=torch.bfloat16),
             torch.randn(B, hkvl, plan["keys0"], D, device="cuda", dtype=torch.bfloat16))]
    if any(c[4] == 1 for c in plan["calls"]):
        sb = plan["superblock"]
        bufs.append((torch.randn(B, hkvl, sb, D, device="cuda", dtype=torch.bfloat16),
                     torch.randn(B, hkvl, sb, D, device="cuda", dtype=torch.bfloat16)))
    groups, prepared, flops = {}, [], 0.0
    for (step, req, q0, nq, kb, k0, nk) in plan["calls"]:
        bs = slice(None) if req < 0 else slice(req, req + 1)
        g = groups.setdefault((req, q0, nq), len(groups))
        kk = bufs[kb][0][bs, :, k0:k0 + nk].contiguous()
        vv = bufs[kb][1][bs, :, k0:k0 + nk].contiguous()
        prepared.append((g, q[bs, :, q0:q0 + nq].contiguous(), kk, vv))
        flops += 4.0 * (B if req < 0 else 1) * hl * nq * nk * D
    gqa = hl != hkvl
    direct = plan["direct"]
    backend = "cudnn"
    if not direct:
        op, expand, backend = pick_lse_op(*prepared[0][1:])
        if expand:
            rep = hl // hkvl
            prepared = [(g, qq, kk.repeat_interleave(rep, 1), vv.repeat_interleave(rep, 1))
                        for (g, qq, kk, vv) in prepared]

    def forward():
        if direct:
            return [F.scaled_dot_product_attention(qq, kk, vv, enable_gqa=gqa) for (_, qq, kk, vv) in prepared]
        mergers = [Merger() for _ in groups]
        for (g, qq, kk, vv) in prepared:
            mergers[g].step(*op(qq, kk, vv))
        return [m.result() for m in mergers]

    err = None
    if not direct:  # each merged group against one SDPA over all of its keys
        outs = forward()
        err = 0.0
        for g in range(len(groups)):
            mine = [(qq, kk, vv) for (gg, qq, kk, vv) in prepared if gg == g]
            ref = F.scaled_dot_product_attention(mine[0][0], torch.cat([m[1] for m in mine], 2),
                                                 torch.cat([m[2] for m in mine], 2), enable_gqa=gqa)
            err = max(err, (outs[g].float() - ref.float()).abs().max().item())
    return forward, flops, len(prepared), backend, err


def ideal_peer(cfg, seq, label, q, D):
    B = cfg["batch"]
    hl, hkvl, lq, lk, calls = ideal_calls(cfg, seq, label)
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

    def forward():
        return [F.scaled_dot_product_attention(qq, kk, vv, enable_gqa=gqa) for (qq, kk, vv) in prepared]

    return forward, flops, len(calls), "cudnn"


def timed(make, warmup, iterations):
    """Runs `make` (returns forward, flops, calls, backend[, check]) with SDPA held to cuDNN (the
    default dispatch where cuDNN refuses the shape, said so) and times its forward."""
    with torch.no_grad():
        try:
            with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                made = make()
                made[0]()
                med, ms = time_cold(made[0], warmup, iterations)
                # Short forwards only (where launch cost can show): the pipelined figure beside.
                pipelined = time_pipelined(made[0], iterations) if med < 1.0 else None
            backend = made[3]
        except RuntimeError as e:
            made = make()
            med, ms = time_cold(made[0], warmup, iterations)
            pipelined = None
            backend = f"default dispatch (cuDNN refused: {str(e)[:120]})"
    r = {"calls": made[2], "flops": made[1], "median_ms": med, "min_ms": min(ms), "samples_ms": ms,
         "tflops": made[1] / (med * 1e9), "backend": backend, "pipelined_median_ms": pipelined}
    if len(made) > 4:
        r["check_max_abs_err"] = made[4]
    return r


def run_file(path, out_path, a):
    doc = json.load(open(path))
    cfg = doc["config"]
    D, B = cfg["head_dim"], cfg["batch"]
    out = {"torch": torch.__version__, "cudnn": torch.backends.cudnn.version(),
           "device": torch.cuda.get_device_name(0), "source": path,
           "timing": f"cold: warm-up {a.warmup}, then {a.iterations} iterations of one forward between CUDA events, "
                     "a sync before each; median", "results": []}
    torch.manual_seed(20261202)
    for adv in doc["advice"]:
        seq, label, plan = adv["seq"], adv["topology"], adv.get("local_plan")
        hl = plan["local_heads"] if plan else ideal_calls(cfg, seq, label)[0]
        lq = plan["query_rows"] if plan else ideal_calls(cfg, seq, label)[2]
        q = torch.randn(B, hl, lq, D, device="cuda", dtype=torch.bfloat16)
        r = {"seq": seq, "topology": label, "local_heads": hl, "seq_q": lq}
        for name, make in (("steps", (lambda: steps_peer(plan, cfg, q, D)) if plan else None),
                           ("ideal", lambda: ideal_peer(cfg, seq, label, q, D))):
            if make is None:
                continue
            try:
                r[name] = timed(make, a.warmup, a.iterations)
            except Exception as e:  # one refused shape never hides the rest
                r[name] = {"error": f"{type(e).__name__}: {e}"[:300]}
        out["results"].append(r)
        st, idl = r.get("steps", {}), r.get("ideal", {})
        print(f"torch {path} {label} S={seq}: steps {st.get('calls')} call(s) {st.get('median_ms', float('nan')):.3f} ms "
              f"(check {st.get('check_max_abs_err')}) {st.get('error', '')}; ideal {idl.get('calls')} call(s) "
              f"{idl.get('median_ms', float('nan')):.3f} ms {idl.get('error', '')}", flush=True)
        del q
        torch.cuda.empty_cache()
    with open(out_path, "w") as f:
        json.dump(out, f, indent=1)


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


if __name__ == "__main__":
    main()
