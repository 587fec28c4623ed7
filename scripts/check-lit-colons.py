#!/usr/bin/env python3
"""Fails on lit/FileCheck/verify-diagnostics directives that check nothing.

lit and FileCheck silently skip `// CHECK foo` or `// RUN recur-opt` written
without the colon, and -verify-diagnostics skips an `expected-error` not
followed by `{{...}}`, so a test that looks strict can check nothing. This
scans files for such lines (including FileCheck prefixes that the file's RUN
lines declare with --check-prefix[es]) and prints each as file:line: text.
"""

import os
import re
import sys

SUFFIXES = (".mlir", ".test", ".recur", ".ll")
COMMENT_WORD = re.compile(r"^\s*(?://|#|;)\s*([A-Za-z][\w-]*)(.*)$")
PREFIX_OPT = re.compile(r"--?check-prefix(?:es)?[= ]([\w,-]+)")
SUFFIX = r"(?:-(?:NEXT|SAME|NOT|DAG|LABEL|EMPTY|COUNT-\d+))?"
LIT_WORDS = {"RUN", "REQUIRES", "UNSUPPORTED", "XFAIL", "ALLOW_RETRIES"}
EXPECTED = re.compile(r"expected-(?:error|warning|note|remark)(?:-re)?$")
EXPECTED_REST = re.compile(r"\s*(?:@\S+\s*)?\{\{")


def scan(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        lines = f.readlines()
    prefixes = {"CHECK"}
    for line in lines:
        for m in PREFIX_OPT.finditer(line):
            prefixes.update(p for p in m.group(1).split(",") if p)
    check_word = re.compile(
        "(?:" + "|".join(map(re.escape, sorted(prefixes))) + ")" + SUFFIX + "$"
    )
    problems = []
    for number, line in enumerate(lines, 1):
        m = COMMENT_WORD.match(line)
        if not m:
            continue
        word, rest = m.groups()
        if EXPECTED.match(word):
            ok = EXPECTED_REST.match(rest) is not None
        elif word in LIT_WORDS or check_word.match(word):
            ok = rest.startswith(":")
        else:
            continue
        if not ok:
            problems.append(f"{path}:{number}: {line.rstrip()}")
    return problems


def main(argv):
    if len(argv) < 2:
        print("usage: check-lit-colons.py DIR_OR_FILE...", file=sys.stderr)
        return 2
    problems, scanned = [], 0
    for root in argv[1:]:
        if os.path.isfile(root):
            paths = [root]
        else:
            paths = [
                os.path.join(d, f)
                for d, _, files in os.walk(root)
                # Fixtures under Inputs/ are broken on purpose.
                if "Inputs" not in os.path.relpath(d, root).split(os.sep)
                for f in files
                if f.endswith(SUFFIXES)
            ]
        for path in sorted(paths):
            scanned += 1
            problems.extend(scan(path))
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} directive line(s) that check nothing")
        return 1
    print(f"checked {scanned} file(s): every directive is well formed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
