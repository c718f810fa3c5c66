#!/usr/bin/env python3
"""Fault tests of the host backend under mpirun (4 ranks).

usage: host_faults.py MPIEXEC COLL_BINARY KIND
  stop   SIGSTOP one rank: the job ends (within --timeout + 60 s), the message names the stopped rank
  kill9  SIGKILL one rank: the job ends (within 60 s)
  sigint SIGINT to mpirun (once with a rank stopped too): the job ends (within 60 s)
Every kind then checks that no rank process is left running.
Real time, as a hang is: the limits only tell an ending job from a hung one. A job ends in about a
second; 60 s holds on a loaded machine, and a hang never ends.
"""
import os
import signal
import subprocess
import sys
import time

TIMEOUT_S = 3
NP = 4
END_S = 60  # the watchdog after a fault (see above)


def ranks_of(mpirun_pid, binary):
    """{world rank: pid} of the binary's processes below mpirun."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            if int(fields[1]) != mpirun_pid:
                continue
            if os.path.realpath(f"/proc/{entry}/exe") != os.path.realpath(binary):
                continue
            env = open(f"/proc/{entry}/environ", "rb").read().split(b"\0")
            for kv in env:
                if kv.startswith(b"OMPI_COMM_WORLD_RANK="):
                    found[int(kv.split(b"=", 1)[1])] = int(entry)
        except (OSError, IndexError, ValueError):
            continue
    return found


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
        return state != "Z"
    except OSError:
        return False


def start(mpiexec, binary):
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1")
    # Long enough to be running when the fault comes: many small iterations.
    args = [mpiexec, "-np", str(NP), "--oversubscribe", binary, "--backend", "host", "--ops", "all_reduce",
            "-b", "8", "-e", "8K", "--iterations", "2000000", "--warmup", "1", "--align", "barrier",
            "--timeout", str(TIMEOUT_S)]
    p = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + 120  # start-up of 4 ranks, a watchdog
    ranks = {}
    while time.monotonic() < deadline and len(ranks) < NP:
        time.sleep(0.2)
        ranks = ranks_of(p.pid, binary)
    if len(ranks) < NP:
        p.kill()
        sys.exit(f"FAIL: only {len(ranks)} of {NP} ranks started")
    time.sleep(2)  # past start-up, inside the timed loop
    return p, ranks


def finish(p, ranks, limit_s, t0):
    try:
        out, _ = p.communicate(timeout=limit_s + 30)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        for pid in ranks.values():
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        sys.exit("FAIL: the job did not end (hang)")
    elapsed = time.monotonic() - t0
    text = out.decode(errors="replace")
    print(text[-3000:])
    print(f"mpirun exit {p.returncode} after {elapsed:.1f} s")
    time.sleep(1)
    left = [r for r, pid in ranks.items() if alive(pid)]
    for r in left:
        os.kill(ranks[r], signal.SIGKILL)
    if left:
        sys.exit(f"FAIL: ranks {left} still running after the job ended")
    if p.returncode == 0:
        sys.exit("FAIL: the job exited 0 after a fault")
    if elapsed > limit_s:
        sys.exit(f"FAIL: took {elapsed:.1f} s, limit {limit_s} s")
    return text


def main():
    mpiexec, binary, kind = sys.argv[1:4]
    p, ranks = start(mpiexec, binary)
    if kind == "stop":
        os.kill(ranks[2], signal.SIGSTOP)
        t0 = time.monotonic()
        text = finish(p, ranks, TIMEOUT_S + END_S, t0)
        if "rank 2 " not in text or "no sign of life" not in text:
            sys.exit("FAIL: the message does not name the stopped rank 2")
    elif kind == "kill9":
        os.kill(ranks[1], signal.SIGKILL)
        finish(p, ranks, END_S, time.monotonic())
    elif kind == "sigint":
        os.kill(p.pid, signal.SIGINT)
        finish(p, ranks, END_S, time.monotonic())
    elif kind == "sigint-stopped":
        os.kill(ranks[3], signal.SIGSTOP)
        time.sleep(0.5)
        os.kill(p.pid, signal.SIGINT)
        finish(p, ranks, END_S, time.monotonic())
    else:
        sys.exit(f"unknown kind {kind}")
    print("PASS")


if __name__ == "__main__":
    main()
