#!/usr/bin/env python3
"""Side-by-side table of layerbench-coll (coll.json) and nccl-tests text output in one folder.

busbw is compared at every size >= 32 MB (the issue's band) for out-of-place and in-place; small
messages compare time. layerbench's per-iteration rank-max median and its nccl-tests-style
aggregate are both shown.
"""
import json
import re
import sys
from pathlib import Path

names = {"all_gather": "all_gather", "alltoall": "all_to_all", "all_reduce": "all_reduce"}
row = re.compile(r"^\s+(\d+)\s+(\d+)\s+\S+\s+\S+\s+-?\d+\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+(\S+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+(\S+)")


def load_ours(path):
    """layerbench-coll JSON -> {(op, bytes, in_place): measurement}."""
    doc = json.loads(path.read_text())
    return {(r["params"]["op"], r["params"]["bytes"], r["params"]["in_place"]): r for r in doc["results"]}


def nccl_rows(path):
    """(bytes, place, time_us, busbw) for each out-of-place and in-place cell of an nccl-tests table."""
    if not path.exists():
        return
    for line in path.read_text().splitlines():
        mm = row.match(line)
        if mm:
            size = int(mm.group(1))
            yield size, "out", float(mm.group(3)), float(mm.group(5))
            yield size, "in", float(mm.group(7)), float(mm.group(9))


out = Path(sys.argv[1])
ours = load_ours(out / "coll.json")
print("| op | bytes | place | nccl-tests time (us) | ours median (us) | ours agg (us) | nccl-tests busbw | ours busbw (median) | ours busbw (agg) | ratio median | ratio agg |")
print("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")
worst = {}
for nt_name, op in names.items():
    for size, place, nt_t, nt_bw in nccl_rows(out / f"nccl-tests-{nt_name}.txt"):
        m = ours.get((op, size, place == "in"))
        if not m:
            continue
        # Our busbw: the rates layerbench-coll derived from the declared work (bytes/s).
        busbw = m["rates"]["busbw_bytes_per_s"] / 1e9
        agg_busbw = m["metrics"]["agg_busbw_bytes_per_s"] / 1e9
        r_med = busbw / nt_bw if nt_bw else float("nan")
        r_agg = agg_busbw / nt_bw if nt_bw else float("nan")
        if size >= 32 << 20:
            key = (op, place)
            worst[key] = min(worst.get(key, 9.0), max(r_med, r_agg))
        if size >= 32 << 20 or size <= 1024:
            print(f"| {op} | {size} | {place} | {nt_t:.2f} | {m['metrics']['time_us']:.2f} | {m['metrics']['agg_time_us']:.2f} | {nt_bw:.2f} | "
                  f"{busbw:.2f} | {agg_busbw:.2f} | {r_med:.3f} | {r_agg:.3f} |")
print()
for (op, place), r in sorted(worst.items()):
    print(f"- {op} {place}-of-place, sizes >= 32 MB: worst best-view busbw ratio ours/nccl-tests = {r:.3f}")

# Small messages, long runs: nccl-tests-small-<op>.txt beside coll-small-<variant>.json.
variants = sorted(out.glob("coll-small-*.json"))
if variants:
    print("\n## Small messages (time, us; nccl-tests' figure is its aggregate: host clock over back-to-back ops)\n")
    vs = [(f.stem.removeprefix("coll-small-"), load_ours(f)) for f in variants]
    print("| op | bytes | place | nccl-tests | " + " | ".join(f"{n} median / agg" for n, _ in vs) + " |")
    print("|---|---:|---|---:|" + "---:|" * len(vs))
    diffs = {}  # (variant, op) -> aggregate time minus nccl-tests, per size/place point
    for nt_name, op in names.items():
        for size, place, t, _ in nccl_rows(out / f"nccl-tests-small-{nt_name}.txt"):
            cells = []
            for n, res in vs:
                m = res.get((op, size, place == "in"))
                if m:
                    cells.append(f"{m['metrics']['time_us']:.2f} / {m['metrics']['agg_time_us']:.2f}")
                    diffs.setdefault((n, op), []).append(m["metrics"]["agg_time_us"] - t)
                else:
                    cells.append("-")
            print(f"| {op} | {size} | {place} | {t:.2f} | " + " | ".join(cells) + " |")
    print()
    # One-sided 95% t quantiles, df = 1..30 (beyond: the normal 1.645).
    t95 = [6.314, 2.920, 2.353, 2.132, 2.015, 1.943, 1.895, 1.860, 1.833, 1.812, 1.796, 1.782, 1.771, 1.761,
           1.753, 1.746, 1.740, 1.734, 1.729, 1.725, 1.721, 1.717, 1.714, 1.711, 1.708, 1.706, 1.703, 1.701,
           1.699, 1.697]
    for (n, op), dd in sorted(diffs.items()):
        mean = sum(dd) / len(dd)
        bound = ""
        if len(dd) > 1:
            sd = (sum((x - mean) ** 2 for x in dd) / (len(dd) - 1)) ** 0.5
            q = t95[len(dd) - 2] if len(dd) - 1 <= len(t95) else 1.645
            bound = f", one-sided 95% upper bound of the mean {mean + q * sd / len(dd) ** 0.5:+.2f} us"
        print(f"- {n}: {op}, aggregate time minus nccl-tests over {len(dd)} size/place points at 8 B-32 KB: "
              f"mean {mean:+.2f} us{bound}, largest {max(dd):+.2f} us")
