"""layerbench's standard-block expert MLPs and torch._grouped_mm interleaved in one process.

Our expert MLPs (gate/up, the preset's GLU fused or as a kernel, down) run through
liblayerbench_std_experts (tools/std_experts_capi.h) loaded with ctypes, on torch's buffers and
current stream; torch runs its grouped GEMMs only (gate/up, then down on a separate activation
input), as bench/moe/torch_std.py times them. Per preset and path:
  1. check: ours against torch on the same inputs (torch._grouped_mm gate/up, the GLU as torch ops,
     torch._grouped_mm down): max |diff| <= 2e-2 * max |torch| (bf16 rounding), all finite;
     a path that fails is not timed;
  2. warm-up, then pairs: each pair times ours and torch back to back with CUDA events on the
     same stream (each launch synchronised before the next and queued behind a 0.2 ms spin
     kernel, so that the host's launch time is not timed), ours first in pairs 0, 3, 4, 7, 8, ...
     and torch first in the others (ABBA, as the harness times a component beside its reference);
  3. per pair the ratio torch / ours (> 1: ours faster); the median of the ratios with a
     distribution-free 95% interval for the median (order statistics of the ratios whose ranks
     come from Binomial(n, 1/2): coverage >= 95%, no assumption on the distribution).
"""
import ctypes
import math
import statistics

import torch


class OursLib:
    """liblayerbench_std_experts through ctypes; every call's return code is checked."""

    def __init__(self, path):
        L = ctypes.CDLL(path)
        vp, i64 = ctypes.c_void_p, ctypes.c_int64
        L.lbse_create.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(vp)]
        L.lbse_destroy.argtypes = [vp]
        L.lbse_destroy.restype = None
        L.lbse_shape.argtypes = [vp, ctypes.POINTER(i64), ctypes.POINTER(i64), ctypes.POINTER(i64)]
        L.lbse_run.argtypes = [vp, vp, vp, vp, vp, ctypes.POINTER(i64), i64, i64, vp]
        for f in (L.lbse_path, L.lbse_describe):
            f.argtypes = [vp]
            f.restype = ctypes.c_char_p
        L.lbse_last_error.argtypes = []
        L.lbse_last_error.restype = ctypes.c_char_p
        self.L = L

    def check(self, rc, what):
        if rc != 0:
            raise RuntimeError(f"{what}: code {rc}: {self.L.lbse_last_error().decode()}")

    def create(self, preset, path, table):
        h = ctypes.c_void_p()
        self.check(self.L.lbse_create(preset.encode(), path.encode(), table.encode() if table else None,
                                      ctypes.byref(h)), f"lbse_create({preset}, {path})")
        return h

    def shape(self, h):
        v = [ctypes.c_int64() for _ in range(3)]
        self.check(self.L.lbse_shape(h, *[ctypes.byref(x) for x in v]), "lbse_shape")
        return tuple(x.value for x in v)

    def run(self, h, x, w13, wd, y, counts):
        stream = torch.cuda.current_stream().cuda_stream
        self.check(self.L.lbse_run(h, x.data_ptr(), w13.data_ptr(), wd.data_ptr(), y.data_ptr(), counts,
                                   len(counts), y.shape[0], stream), "lbse_run")

    def path(self, h):
        return self.L.lbse_path(h).decode()

    def describe(self, h):
        return self.L.lbse_describe(h).decode()


def median_interval(values, level=0.95):
    """Distribution-free interval for the median: (x_(k), x_(n+1-k)), k the largest rank with
    P(Binomial(n, 1/2) < k) <= (1 - level) / 2. None when n is too small for the level."""
    xs, n = sorted(values), len(values)
    tail, cdf, k = (1 - level) / 2, 0.0, 0
    for j in range(n + 1):
        cdf += math.comb(n, j) / 2 ** n  # P(B <= j)
        if cdf > tail:
            k = j  # P(B < j + 1) = P(B <= j) > tail, so the rank is j
            break
    if k < 1:
        return None
    return xs[k - 1], xs[n - k]


SPIN_CYCLES = 400_000  # about 0.2 ms: longer than either side takes to launch its kernels


def one_ms(fn):
    """fn's GPU time: its launches queue behind a short spin kernel, so the first kernel starts
    right after the start event instead of after the host has made the launch."""
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda._sleep(SPIN_CYCLES)
    e0.record()
    fn()
    e1.record()
    e1.synchronize()
    return e0.elapsed_time(e1)


def time_pairs(ours, theirs, warmup, pairs):
    """ABBA pairs: (ours ms, torch ms) per pair, each launch timed alone."""
    for _ in range(warmup):
        ours()
        theirs()
    torch.cuda.synchronize()
    out = []
    for i in range(pairs):
        if i % 4 in (0, 3):
            a = one_ms(ours)
            b = one_ms(theirs)
        else:
            b = one_ms(theirs)
            a = one_ms(ours)
        out.append((a, b))
    return out


def torch_weights(xs, w13, wd, offs):
    """torch's B operands from nn.Linear's (E, out, in) weights, as torch_std.py gives them: a
    row-major (E, in, out) copy where this torch takes it, else the transposed (K-contiguous) view."""
    try:
        t13 = w13.transpose(-2, -1).contiguous()
        torch._grouped_mm(xs, t13, offs=offs)
        return t13, wd.transpose(-2, -1).contiguous(), "row-major (E, in, out) copies"
    except RuntimeError:
        return w13.transpose(-2, -1), wd.transpose(-2, -1), "(out, in) weights, transposed views"


def check_path(lib, h, counts_c, xs, w13, wd, ref):
    y = torch.empty(ref.shape, device=ref.device, dtype=torch.bfloat16)
    lib.run(h, xs, w13, wd, y, counts_c)
    torch.cuda.synchronize()
    d = (y.float() - ref.float()).abs()
    err = d.max().item() if torch.isfinite(y).all().item() else math.inf
    scale = ref.float().abs().max().item()
    return err, scale, err <= 2e-2 * scale and scale > 0, y


def run_preset(lib, m, counts, paths, table, warmup, pairs, glu):
    """Checks and times every path of `paths` against torch at one preset; returns result rows."""
    dev, name = "cuda", m["name"]
    H, E, I = m["hidden"], m["experts"], m["moe_intermediate"]
    rows = int(sum(counts))
    offs = torch.tensor(counts, dtype=torch.int64).cumsum(0).to(device=dev, dtype=torch.int32)
    counts_c = (ctypes.c_int64 * E)(*counts)
    xs = torch.randn(rows, H, device=dev, dtype=torch.bfloat16)
    w13 = torch.randn(E, 2 * I, H, device=dev, dtype=torch.bfloat16) / H ** 0.5  # nn.Linear (out, in)
    wd = torch.randn(E, H, I, device=dev, dtype=torch.bfloat16) / I ** 0.5
    act_in = torch.randn(rows, I, device=dev, dtype=torch.bfloat16)
    t13, td, layout = torch_weights(xs, w13, wd, offs)
    with torch.no_grad():
        ref = torch._grouped_mm(glu(torch._grouped_mm(xs, t13, offs=offs)), td, offs=offs)
    out, seen = [], set()
    for p in paths:
        h = lib.create(name, p, table)
        try:
            got = lib.shape(h)
            if got != (H, I, E):
                raise RuntimeError(f"{name}: the library's shape {got} is not the description's {(H, I, E)}")
            err, scale, ok, y = check_path(lib, h, counts_c, xs, w13, wd, ref)
            taken = lib.path(h)
            r = {"model": name, "path": p, "taken": taken, "how": lib.describe(h), "torch_weights": layout,
                 "max_diff": err, "max_out": scale, "check": ok}
            if not ok or taken in seen:
                out.append(r)
                continue
            seen.add(taken)
            with torch.no_grad():
                samples = time_pairs(lambda: lib.run(h, xs, w13, wd, y, counts_c),
                                     lambda: (torch._grouped_mm(xs, t13, offs=offs),
                                              torch._grouped_mm(act_in, td, offs=offs)), warmup, pairs)
            ratios = [b / a for a, b in samples]
            r.update({"ours_ms": [a for a, _ in samples], "torch_ms": [b for _, b in samples],
                      "ours_median_ms": statistics.median(a for a, _ in samples),
                      "torch_median_ms": statistics.median(b for _, b in samples),
                      "ratio_median": statistics.median(ratios), "ratio_ci95": median_interval(ratios),
                      "flop": 6.0 * rows * H * I})
            out.append(r)
        finally:
            lib.L.lbse_destroy(h)
    del xs, w13, wd, act_in, t13, td, ref
    torch.cuda.empty_cache()
    return out


def verdict(r, target):
    ci = r.get("ratio_ci95")
    if ci is None:
        return "too few pairs"
    return "met" if ci[0] >= target else "not met" if ci[1] < target else "inside the interval"  # of the median


def print_table(results, target=1.15):
    print("\n| model | ours: path (taken) | check max abs diff (of max out) | ours median ms "
          f"| torch GEMMs-only median ms | torch / ours: median of pair ratios | 95% interval (order statistics) | pairs | target {target} |\n"
          "|---|---|---|---:|---:|---:|---|---:|---|")
    for r in results:
        head = f"| {r['model']} | {r['path']} ({r['taken']}) | {r['max_diff']:.3g} ({r['max_out']:.3g})"
        if not r["check"]:
            print(f"{head} FAILED | | | | | | not timed |")
            continue
        if "ratio_median" not in r:
            print(f"{head} | | | | | | same path as above |")
            continue
        ci = r["ratio_ci95"]
        ci_s = f"[{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "n/a"
        print(f"{head} | {r['ours_median_ms']:.4f} | {r['torch_median_ms']:.4f} | {r['ratio_median']:.3f}x "
              f"| {ci_s} | {len(r['ours_ms'])} | {verdict(r, target)} |")
    if results:
        print(f"\ntorch's weights: {results[0]['torch_weights']}; ours reads the (out, in) weights in place.")
