#!/usr/bin/env python3
"""Checks that every recur verifier message has a negative test.

Reads the C++ source of the op verifiers, collects every diagnostic built with
`emitOpError(...) << ...` or `emitOptionalError(location, ...)`, and turns
each into a template: its string literals in order (adjacent literals joined,
as clang-format may split them), with a wildcard for every argument that is
not a literal (values, types, shapes, conditional text). A message is covered
when its template matches inside the text of some `expected-error {{...}}` in
the test files, so the test has to spell the whole message, not only its
first words.

A diagnostic inside a method of an op class (`FooBarOp::verify`, ...) is only
covered by an `expected-error` aimed at a line that holds that op
(`recur.foo_bar` or `"recur.foo_bar"`), so two ops that share a message each
need their own test. A diagnostic in a free helper function is covered by a
match on any op.

Usage:
  check-verifier-coverage.py [OPS_CPP [TEST ...]]

OPS_CPP defaults to dialects/Recur/IR/RecurOps.cpp and TEST to
test/Dialect/Recur, both relative to the source root this script lives in. A
TEST that is a directory stands for the *.mlir files directly in it.

Prints each uncovered message (with its line) and exits 1, or prints how many
messages it checked and exits 0. Exits 2 when the input cannot be read or a
diagnostic has no fixed text to look for.
"""

import argparse
import os
import re
import sys

CALLS = ("emitOpError", "emitOptionalError")
WILDCARD = None  # marks an argument that is not a string literal


class ScanError(Exception):
    pass


def strip_comments(src):
    """Blanks out comments, keeping string and character literals and line
    numbers intact."""
    out = []
    i, n = 0, len(src)
    while i < n:
        c = src[i]
        if src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif src.startswith("/*", i):
            j = src.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", src[i:j]))
            i = j
        elif c in "\"'":
            j = skip_literal(src, i)
            out.append(src[i:j])
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def skip_literal(src, i):
    """Index just past the string or character literal starting at `i`."""
    quote = src[i]
    j = i + 1
    while j < len(src):
        if src[j] == "\\":
            j += 2
            continue
        if src[j] == quote:
            return j + 1
        if src[j] == "\n":
            break
        j += 1
    raise ScanError("unterminated literal at offset %d" % i)


ESCAPES = {"n": "\n", "t": "\t", "\\": "\\", '"': '"', "'": "'", "0": "\0"}


def unescape(body):
    return re.sub(r"\\(.)", lambda m: ESCAPES.get(m.group(1), m.group(1)), body)


def literal_value(expr):
    """The value of `expr` when it is one or more adjacent string literals,
    otherwise None."""
    expr = expr.strip()
    if not expr.startswith('"'):
        return None
    parts = []
    i = 0
    while i < len(expr):
        if expr[i].isspace():
            i += 1
            continue
        if expr[i] != '"':
            return None
        j = skip_literal(expr, i)
        parts.append(unescape(expr[i + 1 : j - 1]))
        i = j
    return "".join(parts)


def split_top_level(text, separator):
    """Splits `text` at `separator` outside brackets and literals."""
    pieces, depth, start, i = [], 0, 0, 0
    while i < len(text):
        c = text[i]
        if c in "\"'":
            i = skip_literal(text, i)
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif depth == 0 and text.startswith(separator, i):
            pieces.append(text[start:i])
            i += len(separator)
            start = i
            continue
        i += 1
    pieces.append(text[start:])
    return pieces


def matching_paren(src, open_index):
    depth, i = 0, open_index
    while i < len(src):
        c = src[i]
        if c in "\"'":
            i = skip_literal(src, i)
            continue
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    raise ScanError("unbalanced parentheses at offset %d" % open_index)


def stream_tail(src, start):
    """The `<< a << b` chain that follows a call ending at `start`, up to the
    end of the full expression."""
    depth, i = 0, start
    while i < len(src):
        c = src[i]
        if c in "\"'":
            i = skip_literal(src, i)
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            if depth == 0:
                break
            depth -= 1
        elif c in ";," and depth == 0:
            break
        i += 1
    tail = src[start:i].strip()
    if not tail.startswith("<<"):
        return []
    return split_top_level(tail[2:], "<<")


# A function definition starts at column 0 (clang-format may put the return
# type on the line before): `LogicalResult FooOp::verify() {`,
# `bool dimsCompatible(int64_t a, ...`.
DEFINITION = re.compile(
    r"^(?!namespace\b|using\b|return\b)(?:[A-Za-z_][^;{}()\n]*?)??"
    r"\b(?:(\w+)::)?(\w+)\s*\(",
    re.M,
)


def op_key(name):
    """`GatedLinearAttentionOp` and `gated_linear_attention` both give
    `gatedlinearattention`."""
    if name.endswith("Op"):
        name = name[:-2]
    return name.replace("_", "").lower()


def enclosing_ops(src):
    """[(offset, op class or None)] for every function definition in `src`."""
    definitions = []
    for m in DEFINITION.finditer(src):
        owner = m.group(1)
        if not (owner and owner.endswith("Op")):
            owner = None
        definitions.append((m.start(), owner))
    return definitions


def op_at(definitions, offset):
    owner = None
    for start, op in definitions:
        if start > offset:
            break
        owner = op
    return owner


def collect_messages(path):
    """[(line, op class or None, [piece, ...])] for every diagnostic in
    `path`; a piece is a string or WILDCARD."""
    with open(path, encoding="utf-8") as f:
        src = strip_comments(f.read())
    definitions = enclosing_ops(src)
    messages = []
    for m in re.finditer(r"\b(%s)\s*\(" % "|".join(CALLS), src):
        call = m.group(1)
        open_index = m.end() - 1
        close = matching_paren(src, open_index)
        args = split_top_level(src[open_index + 1 : close], ",")
        if call == "emitOptionalError":
            args = args[1:]  # the location
        else:
            # emitOpError's arguments are streamed into the message as well;
            # the chain after the call adds the rest.
            args = [a for a in args if a.strip()]
            args += stream_tail(src, close + 1)
        pieces = []
        for arg in args:
            value = literal_value(arg)
            if value is None:
                if pieces and pieces[-1] is WILDCARD:
                    continue
                pieces.append(WILDCARD)
            elif pieces and pieces[-1] is not WILDCARD:
                pieces[-1] += value
            else:
                pieces.append(value)
        line = src.count("\n", 0, m.start()) + 1
        if not any(p for p in pieces if p is not WILDCARD):
            raise ScanError(
                "%s:%d: %s has no fixed message text to look for"
                % (path, line, call)
            )
        messages.append((line, op_at(definitions, m.start()), pieces))
    return messages


def template_regex(pieces):
    return re.compile(
        "".join(".*?" if p is WILDCARD else re.escape(p) for p in pieces),
        re.DOTALL,
    )


def template_text(pieces):
    return "".join("<...>" if p is WILDCARD else p for p in pieces)


EXPECTED = re.compile(
    r"expected-error\s*(?:@(below|above|[+-]?\d+))?[^{\n]*\{\{(.*?)\}\}"
)
OP_NAME = re.compile(r"\brecur\.(\w+)")


def target_line(lines, index, designator):
    """Index of the line an expected-error on line `index` is aimed at."""
    if not designator:
        return index
    if designator in ("below", "above"):
        step = 1 if designator == "below" else -1
        i = index + step
        while 0 <= i < len(lines) and "expected-" in lines[i]:
            i += step
        return i
    if designator[0] in "+-":
        return index + int(designator)
    return int(designator) - 1


def collect_expected(paths):
    """[(op key or None, message text)] for every expected-error."""
    texts = []
    for path in paths:
        files = (
            sorted(
                os.path.join(path, name)
                for name in os.listdir(path)
                if name.endswith(".mlir")
            )
            if os.path.isdir(path)
            else [path]
        )
        for name in files:
            with open(name, encoding="utf-8") as f:
                lines = f.read().split("\n")
            for index, line in enumerate(lines):
                for m in EXPECTED.finditer(line):
                    target = target_line(lines, index, m.group(1))
                    op = None
                    if 0 <= target < len(lines):
                        found = OP_NAME.search(lines[target])
                        op = op_key(found.group(1)) if found else None
                    texts.append((op, m.group(2)))
    return texts


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "ops_cpp",
        nargs="?",
        default=os.path.join(root, "dialects", "Recur", "IR", "RecurOps.cpp"),
    )
    parser.add_argument(
        "tests", nargs="*", default=[os.path.join(root, "test", "Dialect", "Recur")]
    )
    args = parser.parse_args()

    try:
        messages = collect_messages(args.ops_cpp)
        expected = collect_expected(args.tests)
    except (OSError, ScanError) as e:
        print("error: %s" % e, file=sys.stderr)
        return 2
    if not messages:
        print("error: no diagnostics found in %s" % args.ops_cpp, file=sys.stderr)
        return 2

    missing = 0
    for line, op_class, pieces in messages:
        regex = template_regex(pieces)
        op = op_key(op_class) if op_class else None
        if not any(
            regex.search(text) and (op is None or op == target)
            for target, text in expected
        ):
            print(
                "%s:%d: %sno expected-error for: %s"
                % (
                    args.ops_cpp,
                    line,
                    "%s: " % op_class if op_class else "",
                    template_text(pieces),
                )
            )
            missing += 1
    if missing:
        print(
            "%d of %d verifier messages have no negative test"
            % (missing, len(messages))
        )
        return 1
    print("all %d verifier messages have a negative test" % len(messages))
    return 0


if __name__ == "__main__":
    sys.exit(main())
