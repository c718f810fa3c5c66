#!/usr/bin/env python3
"""layerbench-ab run under faults.

usage: kill_resume.py AB_BINARY WORKDIR KIND
  kills    20 SIGKILLs at random moments with --resume in between: no completed pair is lost,
           the file always parses, no arm process outlives a kill, and the study completes.
           Around each kill the arms are held (they wait while a HOLD file exists), so an arm the
           guard failed to end would live on: the check waits up to ORPHAN_WAIT_S for the arms to
           go, which a loaded machine needs, without letting a short arm end on its own first.
  writers  two writers of one study at once: the second exits 2 while the first still holds the
           study (its arms are held, so it cannot finish first), and the file stays valid.
Real time only as watchdogs (a kill must end the arms, a writer must not wait): margins that a
loaded machine cannot reach, and no verdict on how long anything took.
"""
import json
import os
import random
import signal
import subprocess
import sys
import time

PAIRS = 30
# A watchdog, not a measurement: the guard ends the arms within milliseconds; a loaded machine may
# take seconds; an arm the guard missed lives on forever (held), so a long wait tells them apart.
ORPHAN_WAIT_S = 60
# Unique sleep lengths mark each kind's arm processes in /proc (the kinds may run side by side);
# the token below tells this run's from another build tree's.
MARKS = {"kills": ("0.0517", "0.0523"), "writers": ("0.0531", "0.0537")}
BASE, CAND = "", ""  # the arms' commands
MARK_BASE, MARK_CAND = "", ""  # what each arm's processes carry in their command line
# Set in the environment of every layerbench-ab this script starts (its arms inherit it): the arms
# counted are this run's only, not those of the same test run from another build tree at once.
TOKEN = f"{os.getpid()}-{time.time_ns()}"
ENV = dict(os.environ, LAYERBENCH_FAULTS_TOKEN=TOKEN)


def arm_processes():
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmd = open(f"/proc/{entry}/cmdline", "rb").read().replace(b"\0", b" ").decode(errors="replace")
            state = open(f"/proc/{entry}/stat").read().rsplit(")", 1)[1].split()[0]
            ours = f"LAYERBENCH_FAULTS_TOKEN={TOKEN}".encode() in open(f"/proc/{entry}/environ", "rb").read().split(b"\0")
        except OSError:
            continue
        if not ours:
            continue
        # The arms (sh -c sleep ...), not layerbench-ab itself or its guard (a fork of it).
        if state != "Z" and (MARK_BASE in cmd or MARK_CAND in cmd) and "layerbench-ab" not in cmd and "kill_resume" not in cmd:
            pids.append((int(entry), cmd.strip()))
    return pids


def read_study(path):
    """Completed pairs {pair: (base, candidate)}; fails on anything but a torn last line."""
    text = open(path, "rb").read().decode()
    lines = text.split("\n")
    runs, header = {}, None
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            if i == len(lines) - 1:
                break  # torn last line
            sys.exit(f"FAIL: line {i + 1} is not JSON: {line[:80]!r}")
        if rec.get("type") == "study":
            if header is not None:
                sys.exit("FAIL: second study header")
            header = rec
        elif rec.get("type") == "run":
            key = (rec["pair"], rec["attempt"], rec["arm"])
            if key in runs:
                sys.exit(f"FAIL: duplicate run record {key}")
            runs[key] = rec
    if header is None:
        sys.exit("FAIL: no header")
    done = {}
    for (pair, attempt, arm), rec in runs.items():
        other = runs.get((pair, attempt, "candidate" if arm == "base" else "base"))
        if rec["status"] == "ok" and other and other["status"] == "ok" and pair not in done:
            done[pair] = True
    return done


def ab(binary, out, resume, **kw):
    args = [binary, "run", "--base", BASE, "--candidate", CAND, "--pairs", str(PAIRS), "--out", out]
    if resume:
        args.append("--resume")
    return subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=ENV, **kw)


def finish_complete(p, out, what):
    """Waits for writer `p`, then checks that the study holds every pair exactly once."""
    _, err = p.communicate(timeout=400)  # a watchdog: 30 pairs of ~0.05 s runs
    if p.returncode != 0:
        sys.exit(f"FAIL: {what} exited {p.returncode}: {err.decode()}")
    done = read_study(out)
    if sorted(done) != list(range(PAIRS)):
        sys.exit(f"FAIL: the study has pairs {sorted(done)}, expected 0..{PAIRS - 1}")
    return done


def arms_gone(deadline_s):
    """Waits until no arm process is left (True), or deadline_s pass (False)."""
    deadline = time.monotonic() + deadline_s
    while arm_processes():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def kills(binary, work):
    global BASE, CAND
    out = os.path.join(work, "kills.jsonl")
    hold = os.path.join(work, "kills.hold")
    for f in (out, hold):
        if os.path.exists(f):
            os.unlink(f)
    # Each arm waits while `hold` exists: the run in flight at a kill is held until the guard ends it.
    BASE, CAND = (f"{arm}; while [ -e '{hold}' ]; do sleep 0.01; done" for arm in (BASE, CAND))
    rng = random.Random(20261201)
    done_before = {}
    for k in range(20):
        p = ab(binary, out, resume=os.path.exists(out))
        time.sleep(rng.uniform(0.02, 0.5))
        open(hold, "w").close()
        p.kill()
        p.wait()
        gone = arms_gone(ORPHAN_WAIT_S)  # the arm guard ends the run in flight
        left = arm_processes()
        os.unlink(hold)
        if not gone:
            for pid, _ in left:
                os.kill(pid, signal.SIGKILL)
            sys.exit(f"FAIL: after kill {k + 1} arm processes outlive layerbench-ab by {ORPHAN_WAIT_S} s: {left}")
        if os.path.exists(out) and os.path.getsize(out) > 0:
            done = read_study(out)
            lost = set(done_before) - set(done)
            if lost:
                sys.exit(f"FAIL: kill {k + 1} lost completed pairs {sorted(lost)}")
            done_before = done
        print(f"kill {k + 1}: {len(done_before)} pairs complete")
    done = finish_complete(ab(binary, out, resume=True), out, "the final resume")
    print(f"complete: {len(done)} pairs after 20 kills")


def writers(binary, work):
    global BASE, CAND
    out = os.path.join(work, "writers.jsonl")
    hold = os.path.join(work, "writers.hold")
    for f in (out, hold):
        if os.path.exists(f):
            os.unlink(f)
    # The first writer's arms wait while `hold` exists: it holds the study until the check is done,
    # so "the second did not wait for the first" is read from the first's state, not from a clock.
    BASE, CAND = (f"{arm}; while [ -e '{hold}' ]; do sleep 0.01; done" for arm in (BASE, CAND))
    open(hold, "w").close()
    first = ab(binary, out, resume=False)
    deadline = time.monotonic() + 120  # a watchdog: the header comes at start-up
    while time.monotonic() < deadline and (not os.path.exists(out) or os.path.getsize(out) == 0):
        time.sleep(0.02)
    second = subprocess.run([binary, "run", "--base", BASE, "--candidate", CAND, "--pairs", str(PAIRS), "--out", out,
                             "--resume"], capture_output=True, timeout=300, env=ENV)
    first_running = first.poll() is None
    os.unlink(hold)
    msg = second.stderr.decode()
    print(msg.strip(), f"(exit {second.returncode}; the first writer {'still held' if first_running else 'ended'})")
    if second.returncode != 2 or "another layerbench-ab run is writing" not in msg:
        first.kill()
        sys.exit("FAIL: the second writer did not exit 2 with the lock message")
    if not first_running:
        sys.exit("FAIL: the second writer returned only after the first had ended (it waited for the lock)")
    done = finish_complete(first, out, "the first writer")
    r = subprocess.run([binary, "analyze", out], capture_output=True)
    if r.returncode != 0:
        sys.exit(f"FAIL: analyze of the study exited {r.returncode}: {r.stderr.decode()}")
    print("the file is valid:", len(done), "pairs")


def main():
    global BASE, CAND, MARK_BASE, MARK_CAND
    binary, work, kind = sys.argv[1:4]
    BASE, CAND = (f"sleep {m}" for m in MARKS[kind])
    MARK_BASE, MARK_CAND = BASE, CAND
    os.makedirs(work, exist_ok=True)
    {"kills": kills, "writers": writers}[kind](binary, work)
    print("PASS")


if __name__ == "__main__":
    main()
