#!/usr/bin/env python3
"""End-to-end checks of layerbench-history on real outputs of the binaries.

usage: history_check.py CASE HISTORY WORK [MPIEXEC COLL AB]
CASE:
  steps        a history of real layerbench-coll (host) and layerbench-ab outputs over synthetic
               commits, the samples scaled by a per-commit factor with a 3% step: every change
               found is at the step's commit (+-1), both kinds of series find it; an A/A history
               (the same factors without the step) finds nothing; re-adding changes nothing
  confirm      confirm on a benchmark printing 30 against 20 confirms (exit 1), two equal ones
               refute (exit 0), the verdict is recorded, and bisection names the culprit commit;
               the benchmarks print a metric fixed per call (known values with a deterministic
               ripple), so the verdicts are the rule's on known data, never the machine's timing
  concurrency  two `add` processes at once lose nothing; a `kill -9` mid-`add` leaves the file
               consistent (that add wholly there or wholly absent), and the add re-run completes it
  badinput     a non-result file, a missing or unknown commit, a corrupt database and a newer
               schema: one message, exit 2, the database byte-for-byte untouched
  chromium     the report page with its trend plots renders in headless Chromium (77 = skip)
Exit 0 pass, 1 fail, 77 skip.
"""
import hashlib
import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time

SKIP = 77
ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", LAYERBENCH_PROGRESS="off")
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failures.append(what)


def run(cmd, **kw):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV, timeout=300, **kw)


def sha_of(i, salt="a"):
    return hashlib.sha1(f"{salt}{i}".encode()).hexdigest()


def iso(i):
    return f"2026-11-{1 + i // 24:02d}T{i % 24:02d}:00:00Z"


def real_outputs(work, mpiexec, coll, ab):
    """One real run of each binary: the bytes every synthetic commit is made from."""
    out = os.path.join(work, "real")
    os.makedirs(out, exist_ok=True)
    r = run([mpiexec, "-np", "2", "--oversubscribe", coll, "--backend", "host", "-b", "8", "-e", "4K", "-f", "8",
             "--iterations", "12", "--warmup", "1", "--json", os.path.join(out, "coll.json"), "--csv",
             os.path.join(out, "coll.csv"), "--benchmark_format=json", "--benchmark_out=" + os.path.join(out, "gb.json")])
    if r.returncode != 0:
        sys.exit("layerbench-coll failed: " + r.stderr[-2000:])
    arm = "python3 -c \"import random; print('time_ms=%.5f' % ({} * (1 + 0.002 * random.gauss(0, 1))))\""
    study = os.path.join(out, "study.jsonl")
    r = run([ab, "run", "--base", arm.format(100.0), "--candidate", arm.format(99.0), "--metric",
             "time_ms=regex:time_ms=([0-9.]+)", "--pairs", "8", "--study", study, "--json",
             os.path.join(out, "ab.json"), "--csv", os.path.join(out, "ab.csv")])
    if r.returncode != 0:
        sys.exit("layerbench-ab failed: " + r.stderr[-2000:])
    return os.path.join(out, "coll.json"), study


def scaled_coll(src, dst, factor):
    doc = json.load(open(src))
    for res in doc["results"]:
        res["samples_ms"] = [v * factor for v in res["samples_ms"]]
        for k in ("median_ms", "min_ms", "max_ms", "mean_ms", "p10_ms", "p90_ms"):
            if k in res and isinstance(res[k], (int, float)):
                res[k] *= factor
    json.dump(doc, open(dst, "w"))


def scaled_study(src, dst, factor):
    with open(src) as f, open(dst, "w") as g:
        for line in f:
            rec = json.loads(line)
            if rec.get("type") == "run" and rec.get("metric") is not None:
                rec["metric"] *= factor
                rec["metrics"] = {k: v * factor for k, v in rec.get("metrics", {}).items()}
            g.write(json.dumps(rec) + "\n")


def build_history(hist, work, db, coll, study, commits, step_at, step, salt, seed=7):
    rng = random.Random(seed)
    d = os.path.join(work, f"files-{salt}")
    os.makedirs(d, exist_ok=True)
    for i in range(commits):
        f = (1 + rng.gauss(0, 0.003)) * ((1 + step) if step_at is not None and i >= step_at else 1)
        c, s = os.path.join(d, f"coll{i}.json"), os.path.join(d, f"study{i}.jsonl")
        scaled_coll(coll, c, f)
        scaled_study(study, s, f)
        r = run([hist, "add", "--db", db, "--commit", sha_of(i, salt), "--time", iso(i), "--branch", "main",
                 "--machine", "ci-host", c, s])
        if r.returncode != 0:
            sys.exit(f"add failed: {r.stderr}")
    return d


def check_formats(hist, work, real_dir):
    """Every format add reads: each file of a real run gives series with samples."""
    db = os.path.join(work, "formats.sqlite")
    hyper = os.path.join(real_dir, "hyperfine.json")
    json.dump({"results": [{"command": "sleep 0.1", "mean": 0.1, "times": [0.1, 0.101, 0.099]}]}, open(hyper, "w"))
    expect = {"coll.json": "time", "coll.csv": "time", "gb.json": "real_time", "study.jsonl": "time_ms",
              "ab.json": "time_ms", "ab.csv": "time_ms", "hyperfine.json": "time"}
    for i, (name, metric) in enumerate(expect.items()):
        r = run([hist, "add", "--db", db, "--commit", sha_of(i, "f"), os.path.join(real_dir, name)])
        check(r.returncode == 0 and "1 file(s) added" in r.stdout, f"add reads {name}: {r.stdout.strip()} {r.stderr.strip()}")
        with sqlite3.connect(db) as con:
            n = con.execute("SELECT count(*) FROM samples x JOIN runs r ON r.id = x.run_id JOIN series s ON "
                            "s.id = x.series_id JOIN commits c ON c.id = r.commit_id WHERE c.sha = ? AND s.metric = ?",
                            (sha_of(i, "f"), metric)).fetchone()[0]
        check(n > 0, f"{name}: {n} samples of metric {metric}")


def case_steps(hist, work, mpiexec, coll_bin, ab_bin):
    coll, study = real_outputs(work, mpiexec, coll_bin, ab_bin)
    check_formats(hist, work, os.path.dirname(coll))
    db = os.path.join(work, "steps.sqlite")
    n, at = 30, 18
    files = build_history(hist, work, db, coll, study, n, at, 0.03, "s")
    r = run([hist, "detect", "--db", db, "--json", os.path.join(work, "steps.json")])
    print(r.stdout[-3000:])
    check(r.returncode == 3, f"detect on a 3% step exits 3 (a suspicion awaits confirmation): {r.returncode}")
    doc = json.load(open(os.path.join(work, "steps.json")))
    pos = {sha_of(i, "s"): i for i in range(n)}
    found = [pos[c["first_commit_after"]] for c in doc["changes"]]
    check(len(found) > 0 and all(abs(p - at) <= 1 for p in found),
          f"every change is at the step's commit {at} (+-1): {sorted(set(found))}")
    kinds = {("ab" if c["benchmark"].startswith("ab ") else "coll") for c in doc["changes"]}
    check(kinds == {"ab", "coll"}, f"both the layerbench-coll and the layerbench-ab series find it: {kinds}")
    check(all(0.015 < c["relative"] < 0.045 for c in doc["changes"]), "each step reads about +3%")
    check(all(c["status"] == "suspected" for c in doc["changes"]), "unconfirmed changes are suspicions")
    # Idempotent: the same file again for its commit changes nothing.
    before = json.dumps(doc["changes"], sort_keys=True)
    r = run([hist, "add", "--db", db, "--commit", sha_of(5, "s"), "--machine", "ci-host",
             os.path.join(files, "coll5.json"), os.path.join(files, "study5.jsonl")])
    check(r.returncode == 0 and "0 file(s) added" in r.stdout, f"re-adding a commit's files adds nothing: {r.stdout}")
    with sqlite3.connect(db) as con:
        runs = con.execute("SELECT count(*) FROM runs").fetchone()[0]
    check(runs == 2 * n, f"{runs} runs recorded for {n} commits x 2 files")
    r = run([hist, "detect", "--db", db, "--json", "-"])
    check(json.dumps(json.loads(r.stdout)["changes"], sort_keys=True) == before, "detect unchanged after the re-add")
    # A/A: the same per-commit factors, no step.
    aa = os.path.join(work, "aa.sqlite")
    build_history(hist, work, aa, coll, study, n, None, 0.0, "aa")
    r = run([hist, "detect", "--db", aa, "--json", "-"])
    changes = json.loads(r.stdout)["changes"]
    check(r.returncode == 0 and not changes, f"an A/A history: nothing, exit 0 ({r.returncode}, {len(changes)} changes)")
    # Marks: the step marked expected is no longer a suspicion.
    r = run([hist, "mark", "--db", db, "--expected", "--commit", sha_of(at, "s"), "--note", "intended"])
    check(r.returncode == 0, "mark --expected")
    r = run([hist, "detect", "--db", db, "--json", "-"])
    doc = json.loads(r.stdout)
    check(r.returncode == 0 and all(c["status"] == "expected" for c in doc["changes"]),
          f"marked expected: statuses {[c['status'] for c in doc['changes']]}, exit {r.returncode}")


def two_commit_db(hist, work, name):
    db = os.path.join(work, name)
    res = os.path.join(work, "tiny.json")
    json.dump({"results": [{"command": "x", "times": [0.02, 0.021, 0.019]}]}, open(res, "w"))
    for i in range(2):
        r = run([hist, "add", "--db", db, "--commit", sha_of(i, name), "--time", iso(i), res])
        assert r.returncode == 0, r.stderr
    return db, sha_of(0, name), sha_of(1, name)


def value_bench(path, work, means):
    """A benchmark script for `confirm --run 'SCRIPT {commit}'`: prints value=M x (1 + 5% ripple), M by
    commit (`means`: sha -> M), the ripple a fixed function of the call's number for that commit and
    of the commit (a phase each), so every A/B reads known data."""
    cases = "".join(f"  {sha}) m={m}; p={k};;\n" for k, (sha, m) in enumerate(means.items()))
    with open(path, "w") as f:
        f.write("#!/bin/sh\n"
                f"f='{work}/calls.'\"$1\"\n"
                "n=$(cat \"$f\" 2>/dev/null || echo 0); echo $((n + 1)) > \"$f\"\n"
                f"case \"$1\" in\n{cases}  *) exit 3;;\nesac\n"
                "awk -v n=\"$n\" -v m=\"$m\" -v p=\"$p\" 'BEGIN { printf \"value=%.4f\\n\", m * (1 + 0.05 * sin(1.7 * n + 2.1 * p)) }'\n")
    os.chmod(path, 0o755)


def case_confirm(hist, work):
    script = os.path.join(work, "bench.sh")
    for name, slow in (("differ.sqlite", 30), ("same.sqlite", 20)):
        db, a, b = two_commit_db(hist, work, name)
        value_bench(script, work, {a: 20, b: slow})
        margin = "3%" if slow == 30 else "15%"
        r = run([hist, "confirm", "--db", db, "--run", script + " {commit}", "--metric", "regex:value=([0-9.]+)",
                 "--before", a, "--after", b, "--alpha", "1%", "--equivalence", margin, "--max-pairs", "300",
                 "--journal-dir", work])
        print(r.stdout, r.stderr)
        if slow == 30:
            check(r.returncode == 1 and "confirmed" in r.stdout, f"30 vs 20: confirmed, exit 1 ({r.returncode})")
        else:
            check(r.returncode == 0 and "refuted" in r.stdout, f"two equal benchmarks: refuted, exit 0 ({r.returncode})")
        with sqlite3.connect(db) as con:
            verdicts = [v for (v,) in con.execute("SELECT verdict FROM confirmations")]
        check(verdicts == (["confirmed"] if slow == 30 else ["refuted"]), f"the verdict is recorded: {verdicts}")


def case_bisect(hist, work):
    """A confirmed range of five commits is bisected to the culprit (80 from the fourth commit on, 10 before)."""
    db = os.path.join(work, "bisect.sqlite")
    res = os.path.join(work, "tiny.json")
    shas = [sha_of(i, "bisect") for i in range(6)]
    for i, sha in enumerate(shas):
        r = run([hist, "add", "--db", db, "--commit", sha, "--time", iso(i), res])
        assert r.returncode == 0, r.stderr
    script = os.path.join(work, "bisect.sh")
    value_bench(script, work, {sha: (80 if i >= 3 else 10) for i, sha in enumerate(shas)})
    r = run([hist, "confirm", "--db", db, "--run", script + " {commit}", "--metric", "regex:value=([0-9.]+)",
             "--before", shas[0], "--after", shas[5], "--bisect", "--alpha", "1%", "--equivalence", "20%",
             "--max-pairs", "100", "--journal-dir", work])
    print(r.stdout, r.stderr)
    check(r.returncode == 1, f"the slower range is a confirmed regression: exit {r.returncode}")
    check(f"culprit: {shas[3]}" in r.stdout, "bisection names the culprit")


def count(db, sql):
    with sqlite3.connect(db) as con:
        return con.execute(sql).fetchone()[0]


def case_concurrency(hist, work):
    src = os.path.join(work, "c.json")
    files = []
    for k in range(40):
        p = os.path.join(work, f"c{k}.json")
        json.dump({"results": [{"command": f"bench{j}", "times": [1.0 + k * 1e-3 + j * 1e-4 + t * 1e-6 for t in range(50)]}
                               for j in range(20)]}, open(p, "w"))
        files.append(p)
    json.dump({"results": [{"command": "x", "times": [1.0, 1.1]}]}, open(src, "w"))
    db = os.path.join(work, "conc.sqlite")
    # Two writers, 20 commits each, at the same time.
    script = ("import subprocess, sys\n"
              "h, db, salt = sys.argv[1:4]\n"
              "for i in range(20):\n"
              "    subprocess.run([h, 'add', '--db', db, '--commit', salt + format(i, '038x'), *sys.argv[4:]], check=True,"
              " stdout=subprocess.DEVNULL)\n")
    procs = [subprocess.Popen([sys.executable, "-c", script, hist, db, salt, *files[:8]], env=ENV)
             for salt in ("aa", "bb")]
    rcs = [p.wait(timeout=300) for p in procs]
    check(rcs == [0, 0], f"two concurrent writers succeed: {rcs}")
    check(count(db, "SELECT count(*) FROM commits") == 40, "40 commits from two writers")
    check(count(db, "SELECT count(*) FROM runs") == 40 * 8, "every run of both writers is there")
    check(count(db, "SELECT count(*) FROM samples") == 40 * 8 * 20 * 50, "every sample of both writers is there")
    # Two jobs creating the same new history at the same instant (each process sleeps until a
    # common start, then execs the add), 16 times: both succeed. SQLite refuses the WAL switch at
    # once, without its busy handler, while another connection holds the new file; before the
    # store retried the switch, about half of these rounds lost a writer.
    go = "import os, sys, time\ntime.sleep(max(0.0, float(sys.argv[1]) - time.time()))\nos.execv(sys.argv[2], sys.argv[2:])\n"
    refused = []
    for rnd in range(16):
        fresh = os.path.join(work, f"new{rnd}.sqlite")
        start = str(time.time() + 0.3)
        ps = [subprocess.Popen([sys.executable, "-c", go, start, hist, "add", "--db", fresh, "--commit",
                                f"{salt}{rnd:038x}", src], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               text=True, env=ENV) for salt in ("aa", "bb")]
        outs = [(p, p.communicate(timeout=300)[1]) for p in ps]
        refused += [err.strip() for p, err in outs if p.returncode != 0]
    check(not refused, f"two writers creating a new history at the same instant, 16 rounds: none refused {refused[:1]}")
    # kill -9 at several moments of one large add: all of it or none of it, and a re-run completes it.
    big = [os.path.join(work, f"c{k}.json") for k in range(40)]
    for attempt, delay in enumerate((0.05, 0.15, 0.3)):
        sha = format(0xdead0 + attempt, "040x")
        p = subprocess.Popen([hist, "add", "--db", db, "--commit", sha, *big], stdout=subprocess.DEVNULL, env=ENV)
        time.sleep(delay)
        p.send_signal(signal.SIGKILL)
        p.wait()
        with sqlite3.connect(db) as con:
            ok = con.execute("PRAGMA integrity_check").fetchone()[0]
            n = con.execute("SELECT count(*) FROM runs r JOIN commits c ON c.id = r.commit_id WHERE c.sha = ?",
                            (sha,)).fetchone()[0]
        check(ok == "ok", f"kill -9 after {delay}s: integrity_check {ok}")
        check(n in (0, 40), f"kill -9 after {delay}s: that add is all there or absent ({n} of 40 runs)")
        r = run([hist, "add", "--db", db, "--commit", sha, *big])
        check(r.returncode == 0, "the add re-run after the kill succeeds")
        check(count(db, f"SELECT count(*) FROM runs r JOIN commits c ON c.id = r.commit_id WHERE c.sha = '{sha}'") == 40,
              "after the re-run: all 40 runs")
    check(count(db, "SELECT count(*) FROM samples") == 40 * 8 * 20 * 50 + 3 * 40 * 20 * 50, "nothing else lost")


def digest(path):
    """The main file's bytes and the database's logical content (SQLite may create or remove its
    -wal/-shm companions when a database is merely opened; those are not the database)."""
    h = hashlib.sha256(open(path, "rb").read())
    try:
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            for line in con.iterdump():
                h.update(line.encode())
        finally:
            con.close()
    except sqlite3.DatabaseError as e:
        h.update(b"unreadable")
    return h.hexdigest()


def expect_usage(cmd, db, what):
    before = digest(db) if db else None
    r = run(cmd)
    lines = [l for l in r.stderr.splitlines() if l.strip()]
    check(r.returncode == 2, f"{what}: exit 2 ({r.returncode})")
    check(len(lines) == 1 and lines[0].startswith("layerbench-history: error:"), f"{what}: one message: {lines}")
    if db:
        check(digest(db) == before, f"{what}: the database is untouched")


def case_badinput(hist, work):
    db, a, b = two_commit_db(hist, work, "bad.sqlite")
    run([hist, "detect", "--db", db])  # checkpoint state settles
    text = os.path.join(work, "notes.txt")
    open(text, "w").write("this is not a result\n")
    expect_usage([hist, "add", "--db", db, "--commit", sha_of(9), text], db, "a non-result file")
    empty = os.path.join(work, "empty.json")
    json.dump({"results": []}, open(empty, "w"))
    expect_usage([hist, "add", "--db", db, "--commit", sha_of(9), empty], db, "a JSON file that is no result")
    tiny = os.path.join(work, "tiny.json")
    expect_usage([hist, "add", "--db", db, tiny], db, "add without --commit")
    expect_usage([hist, "add", "--db", db, "--commit", "not-a-sha", tiny], db, "a commit that is no sha")
    expect_usage([hist, "add", "--db", db, "--commit", sha_of(9), "--time", "yesterday", tiny], db, "a bad --time")
    expect_usage([hist, "mark", "--db", db, "--expected", "--commit", sha_of(99)], db, "marking an unknown commit")
    expect_usage([hist, "confirm", "--db", db, "--run", "true {commit}", "--before", sha_of(99), "--after", b], db,
                 "confirming an unknown commit")
    expect_usage([hist, "confirm", "--db", db, "--run", "true", "--before", a, "--after", b], db,
                 "a --run without {commit}")
    corrupt = os.path.join(work, "corrupt.sqlite")
    with open(corrupt, "wb") as f:
        f.write(b"SQLite format 3\x00" + os.urandom(4000))
    for sub in (["add", "--commit", sha_of(1), tiny], ["detect"], ["report", "--markdown", "-"]):
        expect_usage([hist, sub[0], "--db", corrupt, *sub[1:]], corrupt, f"a corrupt database ({sub[0]})")
    garbage = os.path.join(work, "garbage.sqlite")
    open(garbage, "w").write("not a database at all\n" * 100)
    expect_usage([hist, "add", "--db", garbage, "--commit", sha_of(1), tiny], garbage, "a file that is no database")
    newer = os.path.join(work, "newer.sqlite")
    shutil.copy(db, newer)
    for ext in ("-wal", "-shm"):
        if os.path.exists(db + ext):
            shutil.copy(db + ext, newer + ext)
    con = sqlite3.connect(newer)
    con.execute("PRAGMA user_version = 99")
    con.commit()
    con.close()
    for sub in (["add", "--commit", sha_of(1), tiny], ["detect"], ["mark", "--list"]):
        expect_usage([hist, sub[0], "--db", newer, *sub[1:]], newer, f"a newer schema ({sub[0]})")
    expect_usage([hist, "detect", "--db", os.path.join(work, "missing.sqlite")], None, "a missing database")
    check(not os.path.exists(os.path.join(work, "missing.sqlite")), "detect never creates a database")


def case_chromium(hist, work):
    browser = next((shutil.which(b) for b in ("chromium", "chromium-browser", "google-chrome", "headless_shell")
                    if shutil.which(b)), None)
    if browser is None:
        print("SKIP: no chromium on PATH (apt-get install -y chromium)")
        return SKIP
    db = os.path.join(work, "plot.sqlite")
    rng = random.Random(3)
    for i in range(40):
        p = os.path.join(work, f"p{i}.json")
        lvl = 1.03 if i >= 25 else 1.0
        json.dump({"results": [{"command": "bench", "times": [lvl * (1 + rng.gauss(0, 0.004)) for _ in range(10)]}]},
                  open(p, "w"))
        r = run([hist, "add", "--db", db, "--commit", sha_of(i, "p"), "--time", iso(i), p])
        assert r.returncode == 0, r.stderr
    out = os.path.join(work, "page")
    r = run([hist, "report", "--db", db, "-o", out])
    check(r.returncode == 3, f"report exits 3 on a suspicion ({r.returncode})")
    page = os.path.join(out, "report.html")
    html = open(page).read()
    check(html.count("<svg") >= 1 and "class=\"spans\"" in html, "the page holds a trend plot with the change's range")
    png = os.path.join(out, "page.png")
    profile = tempfile.mkdtemp(prefix="lb-chromium-")
    try:
        subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                        "--disable-background-networking", "--disable-component-update", "--disable-sync",
                        "--hide-scrollbars", f"--user-data-dir={profile}", f"--screenshot={png}",
                        "--window-size=1200,1400", "file://" + os.path.abspath(page)],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=180)
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    if not os.path.exists(png):
        check(False, "chromium wrote a screenshot")
        return 1
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "report"))
    from png_check import colour_stats  # noqa: E402
    median_blue, samples_blue, band = (0x00, 0x72, 0xB2), (0x56, 0xB4, 0xE9), (0xD5, 0x5E, 0x00)
    distinct, non_white, found = colour_stats(png, [median_blue, samples_blue, band])
    print(f"screenshot {png}: {distinct} colours, {100 * non_white:.1f}% non-white, found {found}")
    check(distinct >= 16 and non_white >= 0.02, "the page is not blank")
    check(all(found.values()), "the samples, the median line and the step's interval are drawn")


def main():
    case, hist, work = sys.argv[1:4]
    work = os.path.join(work, "history-" + case)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    if case == "steps":
        case_steps(hist, work, *sys.argv[4:7])
    elif case == "confirm":
        case_confirm(hist, work)
        case_bisect(hist, work)
    elif case == "concurrency":
        case_concurrency(hist, work)
    elif case == "badinput":
        case_badinput(hist, work)
    elif case == "chromium":
        if case_chromium(hist, work) == SKIP:
            return SKIP
    else:
        sys.exit(f"unknown case {case}")
    print("FAIL: " + "; ".join(failures) if failures else "PASS")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
