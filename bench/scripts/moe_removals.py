#!/usr/bin/env python3
"""The removal A/Bs of layerbench-moe profiles (--ab drop:COMPONENT), per family and component:
the measured removal, its prediction from the component's replication what-if, whether the
measured mean landed inside the predicted interval and the prediction's half-width relative to
it, what the prediction came from (the removal step or the slope of further copies), and the counts
per family over every process given (inside; half-width <= 15%; both).

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
                half = p["half_width_ms"] / abs(p["predicted_ms"]) if p.get("predicted_ms") else float("nan")
                rows.append((family, model, tokens, ab["component"], path.rsplit("/", 1)[-1], p["measured_ms"],
                             p["predicted_ms"], p["predicted_ci_ms"], half, basis, inside, ab.get("pairs")))
    print("| family | model | tokens | component | process | measured delta (ms) | predicted (ms) [CI] "
          "| half-width / predicted | from | inside | pairs |")
    print("|---|---|---:|---|---|---:|---:|---:|---|---|---:|")
    for fam, model, tokens, comp, proc, meas, pred, ci, half, basis, inside, pairs in rows:
        print(f"| {fam} | {model} | {tokens} | {comp} | {proc} | {meas:+.4f} | {pred:+.4f} [{ci[0]:+.4f}, {ci[1]:+.4f}] | "
              f"{100 * half:.1f}% | {basis} | {'yes' if inside else 'NO'} | {pairs} |")
    print()
    per_family = defaultdict(list)  # (inside, narrow) of each removal
    for fam, *_, half, _basis, inside, _pairs in rows:
        per_family[fam].append((inside, half <= 0.15))
    for fam, marks in sorted(per_family.items()):
        total = len(marks)
        inside, narrow = sum(i for i, _ in marks), sum(n for _, n in marks)
        both = sum(i and n for i, n in marks)
        print(f"- {fam}: {inside} of {total} removals inside their predicted interval; "
              f"{narrow} of {total} predictions with a half-width <= 15% of the prediction; {both} of {total} both")


if __name__ == "__main__":
    main(sys.argv[1:])
