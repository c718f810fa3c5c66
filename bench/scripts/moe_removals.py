#!/usr/bin/env python3
"""The removal A/Bs of layerbench-moe profiles (--ab drop:COMPONENT), per family and component:
the measured removal, its prediction from the component's replication what-if, whether the
measured mean landed inside the predicted interval and the prediction's half-width relative to
it, what the prediction came from (the removal step or the slope of further copies), whether the
prediction holds (the paired check of measured minus predicted: its interval, from both the A/B's
and the prediction's, contains 0), and the counts per family over every process given (inside;
half-width <= 15%; both; holds), per family and card (the JSONs of several calls and cards may be
given together: the acceptance of issue 46 counts coverage over at least two processes per card).

usage: moe_removals.py PROFILE.json [...]   (markdown on stdout)
"""
import json
import sys
from collections import defaultdict


def main(paths):
    rows = []
    for path in paths:
        with open(path) as f:
            doc = json.load(f)
        block = doc.get("block", "?")
        model = (doc.get("model") or {}).get("name", "?")
        family = "MAGI-2" if block == "magi2_multi_head" else "standard"
        tokens = doc.get("tokens_per_rank", "?")
        ctx = doc.get("context") or {}
        card = ((ctx.get("ranks") or [{}])[0]).get("device", "?")
        sha = ctx.get("git_sha", "?")
        for ab in doc.get("ab_drop", []):
            for p in ab.get("predictions", []):
                basis = "step" if p.get("basis", "").startswith("removal step") else "slope"
                inside = bool(p.get("measured_inside_predicted_ci"))
                holds = bool(p.get("holds"))
                half = p["half_width_ms"] / abs(p["predicted_ms"]) if p.get("predicted_ms") else float("nan")
                rows.append((family, model, tokens, ab["component"], path.rsplit("/", 1)[-1], p["measured_ms"],
                             p["predicted_ms"], p["predicted_ci_ms"], half, basis, inside, holds, ab.get("pairs"),
                             card, sha, path))
    print("| family | model | tokens | component | process | measured delta (ms) | predicted (ms) [CI] "
          "| half-width / predicted | from | inside | holds | pairs |")
    print("|---|---|---:|---|---|---:|---:|---:|---|---|---|---:|")
    for fam, model, tokens, comp, proc, meas, pred, ci, half, basis, inside, holds, pairs, *_ in rows:
        print(f"| {fam} | {model} | {tokens} | {comp} | {proc} | {meas:+.4f} | {pred:+.4f} [{ci[0]:+.4f}, {ci[1]:+.4f}] | "
              f"{100 * half:.1f}% | {basis} | {'yes' if inside else 'NO'} | {'yes' if holds else 'NO'} | {pairs} |")
    print()
    per_family = defaultdict(list)  # (inside, narrow, holds, process, commit) of each removal, by family and card
    for fam, *_, half, _basis, inside, holds, _pairs, card, sha, path in rows:
        per_family[(fam, card)].append((inside, half <= 0.15, holds, path, sha))
    for (fam, card), marks in sorted(per_family.items()):
        total = len(marks)
        inside, narrow, holds = (sum(m[i] for m in marks) for i in range(3))
        both = sum(m[0] and m[1] for m in marks)
        procs = len({m[3] for m in marks})
        commits = ", ".join(sorted({m[4] for m in marks}))
        print(f"- {fam} on {card} ({procs} processes, commit {commits}): {inside} of {total} removals inside their "
              f"predicted interval; {narrow} of {total} predictions with a half-width <= 15% of the prediction; "
              f"{both} of {total} both; {holds} of {total} hold (measured - predicted consistent with 0, both intervals)")


if __name__ == "__main__":
    main(sys.argv[1:])
