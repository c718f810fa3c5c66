#!/usr/bin/env python3
"""The removal A/Bs of layerbench-moe profiles (--ab drop:COMPONENT), per family and component:
the measured removal, its prediction from the component's replication what-if, whether the
measured mean landed inside the predicted interval and the prediction's half-width relative to
it, what the prediction came from (the removal step or the slope of further copies), whether the
prediction holds (the paired check of measured minus predicted: its interval, from both the A/B's
and the prediction's, contains 0), and the counts per family over every process given (inside;
half-width <= 15%; both; holds).

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
        for ab in doc.get("ab_drop", []):
            for p in ab.get("predictions", []):
                basis = "step" if p.get("basis", "").startswith("removal step") else "slope"
                inside = bool(p.get("measured_inside_predicted_ci"))
                holds = bool(p.get("holds"))
                half = p["half_width_ms"] / abs(p["predicted_ms"]) if p.get("predicted_ms") else float("nan")
                rows.append((family, model, tokens, ab["component"], path.rsplit("/", 1)[-1], p["measured_ms"],
                             p["predicted_ms"], p["predicted_ci_ms"], half, basis, inside, holds, ab.get("pairs")))
    print("| family | model | tokens | component | process | measured delta (ms) | predicted (ms) [CI] "
          "| half-width / predicted | from | inside | holds | pairs |")
    print("|---|---|---:|---|---|---:|---:|---:|---|---|---|---:|")
    for fam, model, tokens, comp, proc, meas, pred, ci, half, basis, inside, holds, pairs in rows:
        print(f"| {fam} | {model} | {tokens} | {comp} | {proc} | {meas:+.4f} | {pred:+.4f} [{ci[0]:+.4f}, {ci[1]:+.4f}] | "
              f"{100 * half:.1f}% | {basis} | {'yes' if inside else 'NO'} | {'yes' if holds else 'NO'} | {pairs} |")
    print()
    per_family = defaultdict(list)  # (inside, narrow, holds) of each removal
    for fam, *_, half, _basis, inside, holds, _pairs in rows:
        per_family[fam].append((inside, half <= 0.15, holds))
    for fam, marks in sorted(per_family.items()):
        total = len(marks)
        inside, narrow, holds = (sum(m[i] for m in marks) for i in range(3))
        both = sum(i and n for i, n, _ in marks)
        print(f"- {fam}: {inside} of {total} removals inside their predicted interval; "
              f"{narrow} of {total} predictions with a half-width <= 15% of the prediction; {both} of {total} both; "
              f"{holds} of {total} hold (measured - predicted consistent with 0, both intervals)")


if __name__ == "__main__":
    main(sys.argv[1:])
