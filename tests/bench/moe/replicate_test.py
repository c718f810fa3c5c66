#!/usr/bin/env python3
"""The replication what-if and the removal A/B of layerbench-moe on the host backend, end to end.

One rank, a layer whose local_expert_compute is serial host work (2 small experts per head, 512
tokens). The run must carry: one replicate what-if of it at copies 0..3 per instance, primed rounds,
null energy on the host, the predicted removal equal to its basis (the removal step or the slope)
x instances per forward; and `--ab drop:local_expert_compute` with 6 pairs and at least 7 primed stacks, a
prediction from the replication what-if with its verdict and the sign of a removal, outputs marked
unchecked, energy null, and the markdown of both. The removal A/B runs right after its component's
what-if and before the next one's (routing's): the progress lines say in which order.

Nothing here compares timings: the figures are a loaded machine's as much as the method's. The
estimators are tested on a virtual clock (tests/harness/whatif_test.cpp: the slope is the cost per
copy, the removal step, the stopping rules) and the unit they measure is counted (tests/moe,
ComponentCopiesRunTheStepExactlyKTimes: k copies run the step k times; ComponentCopiesAreIdempotent:
outputs bit for bit).

usage: replicate_test.py MPIEXEC LAYERBENCH_MOE WORKDIR
"""
import json
import os
import subprocess
import sys


def main() -> int:
    mpiexec, moe, work = sys.argv[1], sys.argv[2], sys.argv[3]
    os.makedirs(work, exist_ok=True)
    out = os.path.join(work, "replicate.json")
    # The fewest rounds and seconds that still run every level: the run's figures are not checked.
    cmd = [mpiexec, "-n", "1", "--oversubscribe", moe, "--backend", "host",
           "--hidden", "64", "--moe-heads", "2", "--experts", "2", "--topk", "2", "--intermediate", "64",
           "--tokens", "512", "--iterations", "15", "--warmup", "2", "--layers", "2",
           "--what-if", "local_expert_compute,routing", "--what-if-rounds", "2", "--what-if-seconds", "1",
           "--ab", "drop:local_expert_compute", "--pairs", "6", "--json", out, "--markdown", "-"]
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", LAYERBENCH_PROGRESS="lines")
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    if p.returncode != 0:
        print(p.stdout, p.stderr)
        print(f"FAIL: exit {p.returncode}")
        return 1
    doc = json.load(open(out))
    fails = []

    removal_per_stack = None  # the what-if's predicted removal, ms per stack
    wi = [w for w in doc["what_if"] if w["component"] == "local_expert_compute"]
    if len(wi) != 1 or wi[0]["method"] != "replicate":
        fails.append(f"expected one replicate what-if of local_expert_compute, got {doc['what_if']!r:.300}")
    else:
        w = wi[0]
        print(f"replication slope {w['slope']:.4f} ms/copy {w['slope_ci']}, isolated cost {w['isolated_cost_ms']:.4f} ms, "
              f"stop: {w['stop']}, {w['rounds']} rounds, {w['seconds']:.1f} s (printed, not checked)")
        if not (w["rounds"] >= 2 and len(w["observations"]["energy_j"]) == 4 * w["rounds"]):
            fails.append(f"expected at least 2 rounds of 4 levels, got {w['rounds']} rounds, "
                         f"{len(w['observations']['energy_j'])} observations")
        levels = [l["copies_per_instance"] for l in w["levels"]]
        if levels != [0, 1, 2, 3]:
            fails.append(f"copies per instance {levels}, expected [0, 1, 2, 3]")
        if not (w.get("prime_stacks_per_change") == 1 and w.get("primed_stacks", 0) > 0):
            fails.append(f"what-if rounds not primed: {w.get('prime_stacks_per_change')}, {w.get('primed_stacks')}")
        if w["energy"] is not None or any(e is not None for e in w["observations"]["energy_j"]):
            fails.append("host backend: what-if energy must be null")
        # The removal step (one copy minus none) predicts the removal where it is known to the
        # target precision; the slope x instances elsewhere.
        if w["predicted_removal_basis"].startswith("removal step"):
            per_instance, basis = w["removal_step_ms_per_stack"] / w["instances_per_stack"], "the removal step"
        else:
            per_instance, basis = w["slope"], "slope"
        expected = per_instance * w["instances_per_forward"]
        if abs(w["predicted_removal_ms_per_forward"] - expected) > 1e-9 * abs(expected):
            fails.append(f"predicted removal is not {basis} x instances per forward")
        removal_per_stack = per_instance * w["instances_per_stack"]

    drops = doc.get("ab_drop", [])
    if len(drops) != 1:
        fails.append(f"expected one drop A/B, got {len(drops)}")
    else:
        d = drops[0]
        if d["component"] != "local_expert_compute" or d["outputs_checked"] is not False or d["pairs"] != 6:
            fails.append(f"drop A/B header wrong: {d['component']}, outputs_checked {d['outputs_checked']}, pairs {d['pairs']}")
        preds = d.get("predictions", [])
        if not preds or not preds[0]["source"].startswith("replicate") or "verdict" not in preds[0]:
            fails.append(f"drop A/B has no replication prediction with a verdict: {preds!r:.300}")
        elif d.get("delta") != "candidate - base" or removal_per_stack is None or \
                abs(preds[0]["predicted_ms"] + removal_per_stack) > 1e-9 * abs(removal_per_stack):
            # One sign: the delta is candidate - base, so removing a component predicts minus its removal.
            fails.append(f"the removal's delta (candidate - base) must be predicted as minus the what-if's removal "
                         f"{removal_per_stack} ms per stack, got {preds[0]['predicted_ms']} (delta {d.get('delta')!r})")
        if d["energy"] is not None:
            fails.append("host backend: A/B energy must be null")
        # Every timed stack follows one of its own arm: untimed stacks where the arm changed, at
        # least one and as long as the other arm's stack before (6 pairs AB BA ...: 7 changes after
        # the warm-up pair; how many more than one depends on the stacks' times: not checked here,
        # tests/harness/interleave_test.cpp counts them on a virtual clock).
        if d.get("prime_stacks_per_change") != 1 or not 7 <= d.get("primed_stacks", 0) <= 7 * 256:
            fails.append(f"drop A/B primes: {d.get('prime_stacks_per_change')} per change, "
                         f"{d.get('primed_stacks')} in all (expected 1, and 7 to 7 x 256)")
        if "analysis" not in d:
            fails.append(f"drop A/B has no analysis: {d.get('analysis_error')}")
    # The phases in the order they ran: the removal between its own what-if and the next.
    phases = []
    for line in p.stderr.splitlines():
        if line.startswith("[what-if] "):
            phases.append("what-if " + line.split()[2])
        elif line.startswith("[drop:local_expert_compute A/B]") and (not phases or phases[-1] != "drop"):
            phases.append("drop")
    if phases != ["what-if local_expert_compute", "drop", "what-if routing"]:
        fails.append(f"phase order {phases}: the removal A/B must run right after its component's what-if")
    md = p.stdout
    for frag in ["Removal A/B drop:local_expert_compute", "outputs not checked", "| local_expert_compute | replicate |",
                 "Every timed stack follows a stack of its own arm"]:
        if frag not in md:
            fails.append(f"markdown lacks {frag!r}")
    for m in doc["results"]:
        if "energy" not in m or m["energy"] is not None:
            fails.append(f"{m['name']}: host energy must be null, got {m.get('energy', 'missing')}")
            break
    lec = [m for m in doc["results"] if m["name"] == "local_expert_compute"][0]
    if lec.get("reference", {}).get("name") != "dense_gemm_reference" or len(lec["reference"]["samples_ms"]) != 15:
        fails.append("local_expert_compute must carry the dense reference's samples from the same iterations")

    for f in fails:
        print("FAIL:", f)
    if not fails:
        print("ok")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
