#!/usr/bin/env python3
"""Runs one case of the bad-input table (cases.txt) and checks its exit code and message.

Usage: run_case.py TABLE CASE_ID [NP] --bin NAME=PATH ... --mpirun PATH --data DIR --work DIR
       run_case.py --list TABLE [--have NAME,...]

A case line is  ID | RANKS | EXIT | MESSAGE FRAGMENT | COMMAND  (RANKS: '-' = no mpirun, or a
comma list such as 2,4); indented 'setup:' / 'after:' lines that follow it run through /bin/sh
before / after the command ('after' must exit 0: e.g. the input file is unchanged).
Placeholders: {NAME} (a binary), {tmp} (a fresh directory per case), {data} (test data).
Under mpirun every rank records its own exit code, and each must equal EXIT.
"""
import os
import re
import shlex
import shutil
import subprocess
import sys
import time

# A watchdog, not a measurement: a case answers in well under a second alone (mpirun start-up
# included); a loaded machine takes a few; a hang never answers.
CASE_TIMEOUT_S = 90


def parse_table(path):
    cases, last = {}, None
    with open(path, encoding="utf-8") as f:
        for n, raw in enumerate(f, 1):
            line = raw.rstrip("\n")
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            if line[0] in " \t":
                key, _, value = line.strip().partition(":")
                if last is None or key not in ("setup", "after"):
                    sys.exit(f"{path}:{n}: stray line")
                last[key].append(value.strip())
                continue
            parts = [p.strip() for p in line.split("|", 4)]
            if len(parts) != 5:
                sys.exit(f"{path}:{n}: expected ID | RANKS | EXIT | MESSAGE | COMMAND")
            cid, ranks, code, msg, cmd = parts
            if cid in cases:
                sys.exit(f"{path}:{n}: duplicate case id {cid}")
            last = {"id": cid, "ranks": ranks, "exit": int(code), "msg": msg, "cmd": cmd, "setup": [], "after": []}
            cases[cid] = last
    return cases


def substitute(text, subs):
    for k, v in subs.items():
        text = text.replace("{" + k + "}", v)
    return text


def main():
    args = sys.argv[1:]
    if args[0] == "--list":
        # For CMake: ID@NP entries (NP 0 = no mpirun), ';'-separated. With --have NAME,...: only the
        # cases whose binaries this build has (layerbench-moe-kernels exists only in CUDA builds).
        have = set(args[3].split(",")) if len(args) > 3 and args[2] == "--have" else None
        entries = []
        for cid, case in parse_table(args[1]).items():
            text = " ".join([case["cmd"]] + case["setup"] + case["after"])
            if have is not None and not set(re.findall(r"\{([a-z]+)\}", text)) <= have | {"tmp", "data", "mpirun"}:
                continue
            nps = ["0"] if case["ranks"] == "-" else case["ranks"].split(",")
            entries += [f"{cid}@{np}" for np in nps]
        sys.stdout.write(";".join(entries))
        return
    table, cid = args[0], args[1]
    np = None
    rest = args[2:]
    if rest and not rest[0].startswith("--"):
        np = int(rest[0])
        rest = rest[1:]
    subs, mpirun, work = {}, None, None
    i = 0
    while i < len(rest):
        flag, value = rest[i], rest[i + 1]
        i += 2
        if flag == "--bin":
            name, _, path = value.partition("=")
            subs[name] = path
        elif flag == "--mpirun":
            mpirun = value
        elif flag == "--data":
            subs["data"] = value
        elif flag == "--work":
            work = value
    if mpirun:
        subs["mpirun"] = mpirun  # cases that launch ranks of different configurations themselves
    case = parse_table(table)[cid]
    tmp = os.path.join(work, cid + (f".np{np}" if np else ""))
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    subs["tmp"] = tmp
    env = dict(os.environ)
    env.update({"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
                "OMPI_MCA_rmaps_base_oversubscribe": "1", "LC_ALL": "C"})

    for step in case["setup"]:
        r = subprocess.run(["/bin/sh", "-c", substitute(step, subs)], cwd=tmp, env=env)
        if r.returncode != 0:
            sys.exit(f"FAIL {cid}: setup '{step}' exited {r.returncode}")

    command = substitute(case["cmd"], subs)
    if np:
        # Each rank writes its own exit code; mpirun's status alone would hide the others. The
        # wrapper itself exits 0, so mpirun never aborts the job early (and loses a rank's output
        # or its code): a rank ended by MPI_Abort or a signal leaves no code, and mpirun fails.
        wrapper = 'rc=0; "$0" "$@" || rc=$?; echo $rc > "%s/rank-rc.$OMPI_COMM_WORLD_RANK"' % tmp
        argv = [mpirun, "-np", str(np), "--oversubscribe", "sh", "-c", wrapper] + shlex.split(command)
    else:
        argv = ["/bin/sh", "-c", command]
    print("$", " ".join(shlex.quote(a) for a in argv), flush=True)
    t0 = time.monotonic()
    try:
        r = subprocess.run(argv, cwd=tmp, env=env, stdin=subprocess.DEVNULL, capture_output=True,
                           timeout=CASE_TIMEOUT_S, start_new_session=True)
    except subprocess.TimeoutExpired as e:
        sys.exit(f"FAIL {cid}: did not end within {CASE_TIMEOUT_S} s (a hang)\n{e.stderr or ''}")
    elapsed = time.monotonic() - t0
    out = r.stdout.decode(errors="replace") + r.stderr.decode(errors="replace")
    print(out[-6000:])
    failures = []
    expected_job = 0 if np else case["exit"]
    if r.returncode != expected_job:
        failures.append(f"exit code {r.returncode}, expected {expected_job}" + (" (a rank was aborted)" if np else ""))
    if np:
        for rank in range(np):
            f = os.path.join(tmp, f"rank-rc.{rank}")
            if not os.path.exists(f):
                failures.append(f"rank {rank} left no exit code (killed, e.g. by MPI_Abort)")
                continue
            code = int(open(f).read().strip())
            if code != case["exit"]:
                failures.append(f"rank {rank} exited {code}, expected {case['exit']}")
    msg = substitute(case["msg"], subs)
    if msg and msg not in out:
        failures.append(f"message fragment not found: {msg!r}")
    for step in case["after"]:
        a = subprocess.run(["/bin/sh", "-c", substitute(step, subs)], cwd=tmp, env=env, capture_output=True)
        if a.returncode != 0:
            failures.append(f"after-check '{step}' failed: {a.stdout.decode()}{a.stderr.decode()}")
    print(f"{cid}: exit {r.returncode} in {elapsed:.2f} s")
    if failures:
        sys.exit("FAIL " + cid + ": " + "; ".join(failures))
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
