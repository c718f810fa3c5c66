#!/usr/bin/env python3
"""Docs that cannot drift: every --flag that README.md and docs/*.md name exists in that binary's
--help, and every relative link resolves (the file, and the heading of a #anchor in a markdown file).

Which binary a flag belongs to:
  - in a code block or an inline `code span`, the flags after the last `layerbench-X` word of the
    command (a quoted string holding its own `layerbench-X` command is checked as that command);
    flags of other programs (mpirun, srun, nsys, cmake, scripts) are not checked;
  - elsewhere (prose, a span without a binary): the page's binary (docs/X.md documents layerbench-X),
    or, on the README and the concept pages, any binary.
A binary with subcommands is checked against the union of its --help and each subcommand's --help.

usage: docs_check.py --root SRC --bin layerbench-X=PATH ... [--rename layerbench-X:--old=--new]
                     [--expect-drift --flag]
  --rename        simulate a binary renaming a flag (its --help text is rewritten before the check)
  --expect-drift  pass only if the check fails and names this flag (shows that a rename is caught)
Exit: 0 the docs agree with the binaries (or, with --expect-drift, the drift was caught); 1 otherwise.
"""
import argparse
import os
import re
import subprocess
import sys

FLAG = re.compile(r"(?<![\w-])--[A-Za-z][A-Za-z0-9_-]*")
BINARY = re.compile(r"(?<![\w.-])(?:[\w./-]*/)?(layerbench-[a-z][a-z0-9-]*)(?![\w.-])")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"")

# Flags a page names on purpose though no binary's --help has them, each with the reason.
NOT_OURS = {
    "--benchmark_repetitions": "Google Benchmark's own flag, refused by every binary",
    "--export-json": "hyperfine's flag (its files are read)",
}


def help_text(path, renames):
    def run(args):
        p = subprocess.run([path] + args + ["--help"], capture_output=True, text=True, timeout=60)
        return p.stdout + p.stderr
    text = run([])
    m = re.search(r"^Subcommands:\n((?:  \S.*\n?)+)", text, re.M)
    if m:
        for line in m.group(1).splitlines():
            text += run([line.split()[0]])
    for old, new in renames:
        text = re.sub(re.escape(old) + r"(?![\w-])", new, text)
    return text


def slug(heading):
    h = heading.strip().lower()
    h = re.sub(r"[^\w\- ]", "", h)
    return h.replace(" ", "-")


def anchors(path):
    out, fence = set(), False
    for line in open(path, encoding="utf-8"):
        if line.startswith("```"):
            fence = not fence
        elif not fence and line.startswith("#"):
            out.add(slug(line.lstrip("#")))
    return out


def logical_lines(text):
    """(line number, text) of each line outside code blocks, and of each command inside them (with
    continuation lines joined), marked as code or prose."""
    out, fence, cont, start = [], False, "", 0
    for n, line in enumerate(text.splitlines(), 1):
        if line.startswith("```"):
            fence, cont = not fence, ""
            continue
        if fence:
            if line.rstrip().endswith("\\"):
                if not cont:
                    start = n
                cont += line.rstrip()[:-1] + " "
                continue
            out.append((start if cont else n, cont + line, True))
            cont = ""
        else:
            out.append((n, line, False))
    return out


def command_flags(cmd, default):
    """[(binary or None, flag)] of one command: quoted strings holding their own command first."""
    found = []
    for q in QUOTED.findall(cmd):
        if BINARY.search(q):
            found += command_flags(q[1:-1], None)
    outer = QUOTED.sub(" ", cmd)
    bins = list(BINARY.finditer(outer))
    if bins:
        last = bins[-1]
        found += [(last.group(1), f) for f in FLAG.findall(outer[last.end():])]
    elif default is not False and outer.lstrip().startswith("-"):
        # flags alone (`--json FILE`): the page's; a span naming another program (`mpirun --hostfile`,
        # `cmake --workflow --preset ci`) is that program's, not checked
        found += [(default, f) for f in FLAG.findall(outer)]
    return found


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", required=True)
    ap.add_argument("--bin", action="append", default=[])
    ap.add_argument("--rename", action="append", default=[])
    ap.add_argument("--expect-drift")
    a = ap.parse_args()
    renames = {}
    for r in a.rename:
        name, _, pair = r.partition(":")
        old, _, new = pair.partition("=")
        renames.setdefault(name, []).append((old, new))
    helps = {}
    for b in a.bin:
        name, _, path = b.partition("=")
        helps[name] = set(f for f in FLAG.findall(help_text(path, renames.get(name, []))))
    every = set().union(*helps.values())

    pages = [os.path.join(a.root, "README.md")]
    docs = os.path.join(a.root, "docs")
    pages += sorted(os.path.join(docs, f) for f in os.listdir(docs) if f.endswith(".md"))
    problems, checked, links = [], 0, 0
    for page in pages:
        rel = os.path.relpath(page, a.root)
        stem = os.path.splitext(os.path.basename(page))[0]
        page_bin = f"layerbench-{stem}" if os.path.dirname(rel) == "docs" and f"layerbench-{stem}" in helps else None
        text = open(page, encoding="utf-8").read()
        for n, line, code in logical_lines(text):
            pairs = []
            if code:
                pairs = command_flags(line, False)
            else:
                for target in LINK.findall(line):
                    if re.match(r"[a-z]+:", target) or target.startswith("#"):
                        continue
                    links += 1
                    path, _, anchor = target.partition("#")
                    full = os.path.normpath(os.path.join(os.path.dirname(page), path))
                    if not os.path.exists(full):
                        problems.append(f"{rel}:{n}: link {target}: {os.path.relpath(full, a.root)} does not exist")
                    elif anchor and full.endswith(".md") and anchor not in anchors(full):
                        problems.append(f"{rel}:{n}: link {target}: no heading #{anchor} in {os.path.relpath(full, a.root)}")
                spans = re.findall(r"`([^`]+)`", line)
                for s in spans:
                    pairs += command_flags(s, page_bin)
                pairs += [(page_bin, f) for f in FLAG.findall(re.sub(r"`[^`]+`", " ", line))]
            for binary, flag in pairs:
                if flag in NOT_OURS or flag.endswith(("_", "-")):  # a family (`--benchmark_*`)
                    continue
                checked += 1
                if binary is None:
                    if flag not in every:
                        problems.append(f"{rel}:{n}: {flag}: in no binary's --help")
                elif binary not in helps:
                    checked -= 1  # a developer program (libexec) or another tool: not checked here
                elif flag not in helps[binary]:
                    problems.append(f"{rel}:{n}: {flag}: not in {binary} --help")
    for p in problems:
        print(p)
    print(f"docs_check: {len(pages)} pages, {checked} flags and {links} links checked, {len(problems)} problem(s)")
    if a.expect_drift:
        caught = any(f" {a.expect_drift}: " in p for p in problems)
        print(f"docs_check: drift of {a.expect_drift} {'caught' if caught else 'NOT caught'}")
        return 0 if caught else 1
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
