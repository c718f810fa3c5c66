#!/usr/bin/env python3
"""Schema check of a layerbench --trace file (Chrome trace-event JSON, layerbench-trace/1).

usage: trace_check.py TRACE [--ranks N] [--expect-collectives] [--expect-waits] [--tolerance-us T]
                      [--results RESULTS.json]

Asserts, exactly (times compared in integer nanoseconds; --tolerance-us for traces that mix
device and host clocks, 0 by default):
  - "traceEvents" of ph "M" and "X" only; otherData.schema is layerbench-trace/1; N ranks
  - one process_name per rank, one thread_name per (rank, stream) and no two tracks of a rank
    with the same name (one track per rank and stream); every slice on a declared track
  - per track, slices in non-decreasing start time, properly nested (each either after the
    previous one ended or inside it: every slice nested in its parent)
  - every slice's args.parent names a slice of the same rank whose span contains it
  - component slices: the same (series, name, iteration) on every rank, and rank_max_ms = the
    maximum over ranks of sample_ms (the slice is the sample the table takes its rank-max of);
    the slice's duration is its sample
  - collectives carry bytes and peers (world ranks in range); waits name the component after them
  - the clock alignment per rank in otherData (rank 0: 0 +- 0)
  - with --results (the same run's --json): every component slice's rank_max_ms is the sample of
    its iteration in a result of that name (or in the reference samples of one); names the file
    has no result of (round-robin forwards behind a ratio) are not compared
Exit 0 pass, 1 fail (each failure printed).
"""
import argparse
import json
import sys
from collections import defaultdict


def ns(us):
    return round(us * 1000)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("--ranks", type=int)
    ap.add_argument("--expect-collectives", action="store_true")
    ap.add_argument("--expect-waits", action="store_true")
    ap.add_argument("--tolerance-us", type=float, default=0.0)
    ap.add_argument("--results")
    a = ap.parse_args()
    tol = ns(a.tolerance_us)
    fails = []

    def fail(msg):
        if len(fails) < 40:
            print("FAIL:", msg)
        fails.append(msg)

    with open(a.trace) as f:
        doc = json.load(f)
    meta = doc.get("otherData", {})
    if meta.get("schema") != "layerbench-trace/1":
        fail(f"otherData.schema is {meta.get('schema')!r}")
    ranks = meta.get("ranks")
    if a.ranks is not None and ranks != a.ranks:
        fail(f"{ranks} ranks in the trace, expected {a.ranks}")
    events = doc.get("traceEvents")
    if not isinstance(events, list):
        fail("no traceEvents list")
        return 1

    processes = defaultdict(int)
    tracks = {}
    slices = []
    for e in events:
        ph = e.get("ph")
        if ph == "M":
            if e["name"] == "process_name":
                processes[e["pid"]] += 1
            elif e["name"] == "thread_name":
                key = (e["pid"], e["tid"])
                if key in tracks:
                    fail(f"track {key} declared twice")
                tracks[key] = e["args"]["name"]
        elif ph == "X":
            for k in ("name", "cat", "ts", "dur", "pid", "tid", "args"):
                if k not in e:
                    fail(f"slice without {k}: {e}")
            if e["dur"] < 0:
                fail(f"negative duration: {e}")
            slices.append(e)
        else:
            fail(f"unexpected ph {ph!r}")
    for r in range(ranks or 0):
        if processes.get(r) != 1:
            fail(f"rank {r}: {processes.get(r, 0)} process_name events")
    if set(processes) - set(range(ranks or 0)):
        fail(f"pids outside 0..{ranks - 1}: {sorted(set(processes))}")
    names_per_rank = defaultdict(list)
    for (pid, tid), name in tracks.items():
        names_per_rank[pid].append(name)
    for pid, names in names_per_rank.items():
        if len(names) != len(set(names)):
            fail(f"rank {pid}: two tracks share a name: {names}")
    declared = {pid: sorted(n) for pid, n in names_per_rank.items()}
    if len({tuple(v) for v in declared.values()}) > 1:
        fail(f"ranks declare different tracks: {declared}")

    by_track = defaultdict(list)
    by_id = {}
    for s in slices:
        if (s["pid"], s["tid"]) not in tracks:
            fail(f"slice on an undeclared track ({s['pid']}, {s['tid']}): {s['name']}")
        by_track[(s["pid"], s["tid"])].append(s)
        sid = s["args"].get("id")
        if sid is None:
            fail(f"slice without args.id: {s['name']}")
        elif (s["pid"], sid) in by_id:
            fail(f"rank {s['pid']}: id {sid} used twice")
        else:
            by_id[(s["pid"], sid)] = s

    for key, ts in by_track.items():
        stack = []
        last = None
        for s in ts:  # file order
            b, e = ns(s["ts"]), ns(s["ts"]) + ns(s["dur"])
            if last is not None and b < last:
                fail(f"track {key}: {s['name']} starts at {s['ts']} before the previous slice ({last / 1000})")
            last = b
            while stack and stack[-1][1] <= b + tol:
                stack.pop()
            if stack and e > stack[-1][1] + tol:
                fail(f"track {key}: {s['name']} [{b}, {e}] ns overlaps {stack[-1][2]} ending at {stack[-1][1]} "
                     "without being nested in it")
            stack.append((b, e, s["name"]))

    for s in slices:
        p = s["args"].get("parent")
        if p is None:
            continue
        parent = by_id.get((s["pid"], p))
        if parent is None:
            fail(f"rank {s['pid']}: {s['name']} names parent {p}, which is not in the trace")
            continue
        b, e = ns(s["ts"]), ns(s["ts"]) + ns(s["dur"])
        pb, pe = ns(parent["ts"]), ns(parent["ts"]) + ns(parent["dur"])
        if b + tol < pb or e > pe + tol:
            fail(f"rank {s['pid']}: {s['name']} [{b}, {e}] not inside its parent {parent['name']} [{pb}, {pe}]")

    comps = defaultdict(dict)
    collectives = waits = 0
    for s in slices:
        args = s["args"]
        if s["cat"] == "component":
            key = (args.get("series"), s["name"], args.get("iteration"))
            if s["pid"] in comps[key]:
                fail(f"{key} twice on rank {s['pid']}")
            comps[key][s["pid"]] = s
            if "sample_ms" not in args or "rank_max_ms" not in args:
                fail(f"component {key} on rank {s['pid']} lacks sample_ms or rank_max_ms")
            elif args.get("clock") != "cuda events" and ns(s["dur"]) != round(args["sample_ms"] * 1e6):
                fail(f"component {key} on rank {s['pid']}: duration {s['dur']} us is not its sample "
                     f"{args['sample_ms']} ms")
        elif s["cat"] == "collective":
            collectives += 1
            if not isinstance(args.get("bytes"), int) or not isinstance(args.get("peers"), list) or not args["peers"]:
                fail(f"collective {s['name']} on rank {s['pid']} without bytes and peers")
            elif any(not (0 <= q < (ranks or 0)) for q in args["peers"]):
                fail(f"collective {s['name']}: peers {args['peers']} outside the ranks")
        elif s["cat"] == "wait":
            waits += 1
            if "before" not in args:
                fail(f"wait on rank {s['pid']} does not name its component")
        else:
            fail(f"unknown category {s['cat']!r}")
    for key, per_rank in comps.items():
        if set(per_rank) != set(range(ranks or 0)):
            fail(f"component {key} on ranks {sorted(per_rank)}, not on all {ranks}")
            continue
        mx = max(s["args"]["sample_ms"] for s in per_rank.values())
        for s in per_rank.values():
            if abs(s["args"]["rank_max_ms"] - mx) > 1e-12 * max(1.0, mx):
                fail(f"component {key}: rank_max_ms {s['args']['rank_max_ms']} != max over ranks {mx}")
    if not comps:
        fail("no component slices")
    if a.expect_collectives and collectives == 0:
        fail("no collective slices")
    if a.expect_waits and waits == 0:
        fail("no barrier waits")

    if a.results:
        with open(a.results) as f:
            res = json.load(f)["results"]
        samples = defaultdict(list)  # name -> every sample list of a measurement of that name
        for r in res:
            samples[r["name"]].append(r.get("samples_ms", []))
            ref = r.get("reference")
            if isinstance(ref, dict):
                samples[ref["name"]].append(ref.get("samples_ms", []))
        for (series, name, it), per_rank in comps.items():
            v = next(iter(per_rank.values()))["args"].get("rank_max_ms")
            if name not in samples:  # timed for a derived figure only (attention's round-robin ratios)
                continue
            if not any(it < len(x) and x[it] == v for x in samples.get(name, [])):
                fail(f"component {name} (measurement {series}) iteration {it}: rank_max_ms {v} is no sample of "
                     f"{name} in {a.results}")

    align = meta.get("alignment", [])
    if len(align) != (ranks or 0):
        fail(f"alignment for {len(align)} ranks, expected {ranks}")
    for x in align:
        if x.get("error_us", -1) < 0:
            fail(f"rank {x.get('rank')}: alignment without a non-negative error")
        if x.get("rank") == 0 and (x.get("offset_us") != 0 or x.get("error_us") != 0):
            fail(f"rank 0 alignment is {x}, not 0 +- 0")
    if "alignment_error_us" not in meta:
        fail("no alignment_error_us in otherData")

    print(f"{a.trace}: {len(slices)} slices on {len(tracks)} tracks, {len(comps)} component iterations, "
          f"{collectives} collectives, {waits} waits: {'FAIL' if fails else 'PASS'}")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
