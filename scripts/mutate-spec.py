#!/usr/bin/env python3
"""Runs recurc on malformed variants of specs and fails on any crash or hang.

For every spec (a .recur file, or the .recur files below a directory) it
makes deterministic variants:

  - truncated at several points (evenly spread byte offsets, so cuts land in
    the middle of tokens, strings and UTF-8 sequences as well);
  - with one line deleted;
  - with two adjacent tokens swapped;

and compiles each with `recurc VARIANT --emit=mlir`. A run fails when its
exit status is neither 0 nor 1 (a crash, an abort, a sanitizer report), when
it takes longer than the timeout, when it exits 1 without printing an
`error:` line, or when it exits 0 without printing a module. The choice of
lines and tokens is seeded by each spec's content, so a spec always gives
the same variants.

Usage:
  mutate-spec.py --recurc CMD [--timeout S] [--variants N] [--jobs J]
                 [--keep DIR] SPEC_OR_DIR...
  mutate-spec.py --write DIR [--variants N] SPEC_OR_DIR...

CMD is the compiler command (split like a shell word list, so a wrapper
with arguments works). --variants is the number of variants of each kind
per spec (default 4). Failing variants are copied to --keep (default: a
temporary directory, printed). --write only writes the variants to DIR.

Prints one line per failure and a summary, and exits 1 if any run failed
(2 on bad usage or unreadable input).
"""

import argparse
import concurrent.futures
import os
import random
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import zlib

TOKEN = re.compile(
    rb'"[^"\n]*"?|[A-Za-z_][A-Za-z0-9_]*|[0-9][0-9A-Za-z_.+-]*|#[^\n]*|\S'
)


def specs_in(paths):
    found = []
    for path in paths:
        if os.path.isdir(path):
            for d, _, names in sorted(os.walk(path)):
                found += [os.path.join(d, n) for n in sorted(names)
                          if n.endswith(".recur")]
        elif os.path.isfile(path):
            found.append(path)
        else:
            raise OSError("no such spec or directory: %s" % path)
    return found


def variants(text, count):
    """[(description, bytes)] for one spec's content."""
    rng = random.Random(zlib.crc32(text))
    out = []
    n = len(text)
    for k in range(1, count + 1):
        cut = n * k // (count + 1)
        out.append(("truncated at byte %d" % cut, text[:cut]))
    lines = text.split(b"\n")
    code = [i for i, l in enumerate(lines) if l.strip() and not l.lstrip().startswith(b"#")]
    for i in sorted(rng.sample(code, min(count, len(code)))):
        out.append(("line %d deleted" % (i + 1),
                    b"\n".join(lines[:i] + lines[i + 1:])))
    tokens = [m for m in TOKEN.finditer(text) if not m.group().startswith(b"#")]
    pairs = list(range(len(tokens) - 1))
    for i in sorted(rng.sample(pairs, min(count, len(pairs)))):
        a, b = tokens[i], tokens[i + 1]
        swapped = (text[:a.start()] + b.group() + text[a.end():b.start()] +
                   a.group() + text[b.end():])
        line = text.count(b"\n", 0, a.start()) + 1
        out.append(("tokens %r and %r swapped on line %d"
                    % (a.group().decode("utf-8", "replace"),
                       b.group().decode("utf-8", "replace"), line), swapped))
    return out


def run_one(command, path, timeout):
    """None when the run is acceptable, else why not."""
    start = time.monotonic()
    try:
        p = subprocess.run(command + [path, "--emit=mlir"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        return "took longer than %gs" % timeout
    elapsed = time.monotonic() - start
    err = p.stderr.decode("utf-8", "replace")
    if p.returncode not in (0, 1):
        last = err.strip().splitlines()[-1:] or [""]
        return "exit status %d (%s)" % (p.returncode, last[0][:200])
    if p.returncode == 1 and "error:" not in err:
        return "exit status 1 without an 'error:' line"
    if p.returncode == 0 and b"module" not in p.stdout:
        return "exit status 0 without a module"
    if elapsed > timeout:
        return "took %.1fs" % elapsed
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--recurc", help="the compiler command")
    parser.add_argument("--write", metavar="DIR",
                        help="write the variants to DIR instead of running")
    parser.add_argument("--timeout", type=float, default=10.0)
    parser.add_argument("--variants", type=int, default=4)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--keep", metavar="DIR")
    parser.add_argument("specs", nargs="+")
    args = parser.parse_args()
    if bool(args.recurc) == bool(args.write):
        parser.error("give exactly one of --recurc and --write")

    try:
        specs = specs_in(args.specs)
        contents = []
        for spec in specs:
            with open(spec, "rb") as f:
                contents.append(f.read())
    except OSError as e:
        print("error: %s" % e, file=sys.stderr)
        return 2
    if not specs:
        print("error: no .recur specs in %s" % " ".join(args.specs),
              file=sys.stderr)
        return 2

    work = args.write or tempfile.mkdtemp(prefix="mutate-spec-")
    os.makedirs(work, exist_ok=True)
    jobs = []
    for s, (spec, text) in enumerate(zip(specs, contents)):
        stem = os.path.splitext(os.path.basename(spec))[0]
        for v, (what, data) in enumerate(variants(text, args.variants)):
            path = os.path.join(work, "%03d-%s-%02d.recur" % (s, stem, v))
            with open(path, "wb") as f:
                f.write(data)
            jobs.append((spec, what, path))
    if args.write:
        print("wrote %d variants of %d specs to %s" % (len(jobs), len(specs), work))
        return 0

    command = shlex.split(args.recurc)
    with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
        results = list(pool.map(
            lambda job: run_one(command, job[2], args.timeout), jobs))

    failures = [(job, why) for job, why in zip(jobs, results) if why]
    keep = args.keep or work
    if failures:
        os.makedirs(keep, exist_ok=True)
    for (spec, what, path), why in failures:
        kept = os.path.join(keep, os.path.basename(path))
        if os.path.abspath(kept) != os.path.abspath(path):
            shutil.copyfile(path, kept)
        print("%s (%s): %s [%s]" % (spec, what, why, kept))
    if not args.keep and not failures:
        shutil.rmtree(work, ignore_errors=True)
    if failures:
        print("%d of %d variants of %d specs failed" % (len(failures), len(jobs), len(specs)))
        return 1
    print("checked %d variants of %d specs: no crash, no hang, every error reported"
          % (len(jobs), len(specs)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
