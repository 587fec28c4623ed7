#!/usr/bin/env python3
"""Checks that every front-end diagnostic has a test that checks its text.

Reads the C++ sources of the front end and collects every diagnostic they
can emit:

  - `error(range, message)` and `note(range, message)` (also as
    `diags.error`, `gen.error`, ...), checked as `error: message` and
    `note: message`;
  - the parser's `expect(Tok::KIND, context)`, whose message is
    `expected <token name> <context>, found <...>` with the token's name
    taken from `tokenName` in the lexer;
  - the driver's `fail(message)`, printed as `recurc: error: message`;
  - any string literal that itself starts with `error: `.

Each message becomes a template: its string literals in order (adjacent
literals joined, `llvm::Twine("...")` and `std::string("...")` unwrapped,
parenthesized sums flattened), with a wildcard for everything that is not a
literal (names, types, numbers). A conditional `c ? A : B` whose branches
carry real text (three letters or more, not a plural "s") stands for two
messages, each of which needs its own test.

A diagnostic whose call is on the line right after a comment
`// untestable: <reason>` is exempt, for a message only a front-end bug can
produce; the summary counts the exemptions, and a marker without a reason
is an error.

A message is covered when its template, with its `error: ` (or `note: `,
`recurc: error: `) prefix, matches inside one FileCheck directive of the
test files (any prefix, any suffix except -NOT, which proves nothing), so a
test must spell the whole message, not only its first words.

Usage:
  check-diagnostic-coverage.py [--source FILE_OR_DIR]... [TEST_DIR_OR_FILE]...

Sources default to lib/Frontend/*.cpp and tools/recurc/recurc.cpp, tests to
test/Frontend (every .recur, .test and .mlir below it), relative to the
source root this script lives in.

Prints each message no test checks, with its file and line, and exits 1;
otherwise prints how many messages it checked and exits 0. Exits 2 when an
input cannot be read or a diagnostic has no fixed text to look for.
"""

import argparse
import os
import re
import sys

WILDCARD = None  # an argument that is not a string literal


class ScanError(Exception):
    pass


# --------------------------------------------------------------------------
# C++ lexing
# --------------------------------------------------------------------------

ESCAPES = {"n": "\n", "t": "\t", "\\": "\\", '"': '"', "'": "'", "0": "\0"}


def unescape(body):
    return re.sub(r"\\(.)", lambda m: ESCAPES.get(m.group(1), m.group(1)), body)


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


def strip_comments(src):
    """Blanks out comments, keeping literals and line numbers intact."""
    out, i, n = [], 0, len(src)
    while i < n:
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
        elif src[i] in "\"'":
            j = skip_literal(src, i)
            out.append(src[i:j])
            i = j
        else:
            out.append(src[i])
            i += 1
    return "".join(out)


TOKEN = re.compile(
    r"\s*(?:(?P<str>\"(?:[^\"\\\n]|\\.)*\")|(?P<chr>'(?:[^'\\\n]|\\.)*')"
    r"|(?P<id>[A-Za-z_]\w*(?:::[A-Za-z_]\w*)*)|(?P<num>\d[\w.]*)"
    r"|(?P<op>::|->|==|!=|<=|>=|&&|\|\||<<|>>|[-+*/%?:()\[\]{}<>,.!&|=~^;]))"
)


def tokenize(text):
    tokens, i = [], 0
    text = text.rstrip()
    while i < len(text):
        m = TOKEN.match(text, i)
        if not m or m.end() == i:
            raise ScanError("cannot tokenize %r" % text[i : i + 20])
        kind = m.lastgroup
        tokens.append((kind, m.group(kind)))
        i = m.end()
    return tokens


# --------------------------------------------------------------------------
# Message templates
# --------------------------------------------------------------------------


def split_top(tokens, separator):
    """Splits a token list at `separator` outside brackets."""
    pieces, depth, start = [], 0, 0
    for i, (kind, text) in enumerate(tokens):
        if kind == "op" and text in "([{":
            depth += 1
        elif kind == "op" and text in ")]}":
            depth -= 1
        elif depth == 0 and kind == "op" and text == separator:
            pieces.append(tokens[start:i])
            start = i + 1
    pieces.append(tokens[start:])
    return pieces


def find_ternary(tokens):
    """(cond, then, else) for a top-level `c ? a : b`, or None."""
    depth, question = 0, None
    nested = 0
    for i, (kind, text) in enumerate(tokens):
        if kind != "op":
            continue
        if text in "([{":
            depth += 1
        elif text in ")]}":
            depth -= 1
        elif depth == 0 and text == "?":
            if question is None:
                question = i
            else:
                nested += 1
        elif depth == 0 and text == ":" and question is not None:
            if nested:
                nested -= 1
            else:
                return tokens[:question], tokens[question + 1 : i], tokens[i + 1 :]
    return None


def matching(tokens, open_index):
    depth = 0
    for i in range(open_index, len(tokens)):
        kind, text = tokens[i]
        if kind == "op" and text in "([{":
            depth += 1
        elif kind == "op" and text in ")]}":
            depth -= 1
            if depth == 0:
                return i
    return -1


WRAPPERS = {"llvm::Twine", "Twine", "std::string", "llvm::StringRef", "StringRef"}


def join(pieces):
    """Merges adjacent literal pieces and adjacent wildcards."""
    out = []
    for p in pieces:
        if p is WILDCARD:
            if not (out and out[-1] is WILDCARD):
                out.append(WILDCARD)
        elif out and out[-1] is not WILDCARD:
            out[-1] += p
        else:
            out.append(p)
    return out


def significant(alternatives):
    """True when a branch carries real text, not a plural "s" or nothing."""
    return any(
        sum(ch.isalpha() for ch in p) >= 3
        for alt in alternatives
        for p in alt
        if p is not WILDCARD
    )


MAX_ALTERNATIVES = 16


def alternatives(tokens):
    """The message templates an expression can produce, as piece lists."""
    if not tokens:
        return [[]]
    ternary = find_ternary(tokens)
    if ternary:
        _, then, other = ternary
        a, b = alternatives(then), alternatives(other)
        if significant(a) or significant(b):
            return a + b
        return [[WILDCARD]]
    result = [[]]
    for term in split_top(tokens, "+"):
        options = term_alternatives(term)
        result = [r + o for r in result for o in options][:MAX_ALTERNATIVES]
    return [join(r) for r in result]


def term_alternatives(term):
    if term and all(kind == "str" for kind, _ in term):
        return [["".join(unescape(text[1:-1]) for _, text in term)]]
    # (inner) or (inner).str()
    if term and term[0] == ("op", "("):
        close = matching(term, 0)
        rest = term[close + 1 :]
        if close > 0 and rest in ([], [("op", "."), ("id", "str"), ("op", "("), ("op", ")")]):
            return alternatives(term[1:close])
    # llvm::Twine(inner), std::string(inner)
    if len(term) >= 3 and term[0][0] == "id" and term[0][1] in WRAPPERS:
        if term[1] == ("op", "(") and matching(term, 1) == len(term) - 1:
            return alternatives(term[2:-1])
    return [[WILDCARD]]


def template_regex(prefix, pieces):
    return re.compile(
        re.escape(prefix)
        + "".join(".*?" if p is WILDCARD else re.escape(p) for p in pieces)
    )


def template_text(prefix, pieces):
    return prefix + "".join("<...>" if p is WILDCARD else p for p in pieces)


# --------------------------------------------------------------------------
# Collecting diagnostics
# --------------------------------------------------------------------------

CALL = re.compile(r"\b(error|note|fail|expect)\s*\(")
# `void DiagnosticEngine::error(`, `int fail(`, `WithColor::error(`: a
# definition or another function of that name, not a diagnostic.
NOT_A_CALL = re.compile(r"(::|\b(?:void|int|bool|auto)\s+)$")
TOKEN_NAME = re.compile(r'case\s+Tok::(\w+)\s*:\s*return\s+"([^"]*)"\s*;')


def call_arguments(src, open_index):
    """The top-level arguments of the call whose '(' is at `open_index`."""
    depth, i, start, args = 0, open_index, open_index + 1, []
    while i < len(src):
        c = src[i]
        if c in "\"'":
            i = skip_literal(src, i)
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                args.append(src[start:i])
                return args
        elif c == "," and depth == 1:
            args.append(src[start:i])
            start = i + 1
        i += 1
    raise ScanError("unbalanced parentheses at offset %d" % open_index)


def source_files(paths):
    files = []
    for path in paths:
        if os.path.isdir(path):
            files += sorted(
                os.path.join(path, f)
                for f in os.listdir(path)
                if f.endswith(".cpp")
            )
        else:
            files.append(path)
    return files


UNTESTABLE = re.compile(r"//\s*untestable:(.*)$")


def untestable_lines(raw, path):
    """Lines (1-based) that a `// untestable: reason` comment exempts."""
    exempt = set()
    for number, line in enumerate(raw.split("\n"), 1):
        m = UNTESTABLE.search(line)
        if m:
            if not m.group(1).strip():
                raise ScanError("%s:%d: 'untestable:' without a reason" % (path, number))
            exempt.add(number + 1)
    return exempt


def collect_messages(paths):
    """[(file, line, prefix, pieces, exempt)] for every diagnostic in
    `paths`."""
    sources = []
    token_names = {}
    for path in source_files(paths):
        with open(path, encoding="utf-8") as f:
            raw = f.read()
        src = strip_comments(raw)
        sources.append((path, src, untestable_lines(raw, path)))
        token_names.update(TOKEN_NAME.findall(src))
    messages = []
    for path, src, exempt in sources:
        for m in CALL.finditer(src):
            name = m.group(1)
            line_start = src.rfind("\n", 0, m.start()) + 1
            if NOT_A_CALL.search(src[line_start : m.start()]):
                continue
            args = call_arguments(src, m.end() - 1)
            line = src.count("\n", 0, m.start()) + 1
            where = (path, line)
            if name in ("error", "note"):
                if len(args) != 2:
                    continue  # not the diagnostic engine's error/note
                prefix = name + ": "
                templates = alternatives(tokenize(args[1]))
            elif name == "fail":
                if len(args) != 1:
                    continue
                prefix = "recurc: error: "
                templates = alternatives(tokenize(args[0]))
            else:  # expect(Tok::KIND, context)
                kind = re.fullmatch(r"\s*Tok::(\w+)\s*", args[0]) if args else None
                if not kind or len(args) != 2:
                    continue
                if kind.group(1) not in token_names:
                    raise ScanError(
                        "%s:%d: no tokenName for Tok::%s" % (path, line, kind.group(1))
                    )
                prefix = "error: "
                head = "expected " + token_names[kind.group(1)] + " "
                templates = [
                    join([head] + t + [", found ", WILDCARD])
                    for t in alternatives(tokenize(args[1]))
                ]
            for pieces in templates:
                if not any(p for p in pieces if p is not WILDCARD) and prefix == "error: ":
                    raise ScanError(
                        "%s:%d: %s(...) has no fixed message text to look for"
                        % (path, line, name)
                    )
                messages.append((where, prefix, pieces, line in exempt))
        for m in re.finditer(r'"error: (?:[^"\\\n]|\\.)*"', src):
            line = src.count("\n", 0, m.start()) + 1
            text = unescape(m.group(0)[1:-1]).rstrip("\n")
            messages.append(((path, line), "", [text], line in exempt))
    return messages


# --------------------------------------------------------------------------
# Collecting what the tests check
# --------------------------------------------------------------------------

DIRECTIVE = re.compile(r"^\s*(?:#|//|;)\s*([A-Za-z][\w-]*)\s*:(.*)$")
LIT_WORDS = {"RUN", "REQUIRES", "UNSUPPORTED", "XFAIL", "ALLOW_RETRIES",
             "DEFINE", "REDEFINE", "END"}
TEST_SUFFIXES = (".recur", ".test", ".mlir")


def collect_checked(paths):
    texts = []
    for path in paths:
        if os.path.isdir(path):
            files = sorted(
                os.path.join(d, f)
                for d, _, names in os.walk(path)
                for f in names
                if f.endswith(TEST_SUFFIXES)
            )
        else:
            files = [path]
        for name in files:
            with open(name, encoding="utf-8") as f:
                for line in f:
                    m = DIRECTIVE.match(line)
                    if not m or m.group(1) in LIT_WORDS or m.group(1).endswith("-NOT"):
                        continue
                    texts.append(m.group(2))
    return texts


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--source", action="append", default=None,
                        help="a front-end source file or directory (repeatable)")
    parser.add_argument("tests", nargs="*",
                        default=[os.path.join(root, "test", "Frontend")])
    args = parser.parse_args()
    sources = args.source or [
        os.path.join(root, "lib", "Frontend"),
        os.path.join(root, "tools", "recurc", "recurc.cpp"),
    ]

    try:
        messages = collect_messages(sources)
        checked = collect_checked(args.tests)
    except (OSError, ScanError) as e:
        print("error: %s" % e, file=sys.stderr)
        return 2
    if not messages:
        print("error: no diagnostics found in %s" % ", ".join(sources),
              file=sys.stderr)
        return 2

    missing = untestable = 0
    for (path, line), prefix, pieces, exempt in messages:
        if exempt:
            untestable += 1
            continue
        regex = template_regex(prefix, pieces)
        if not any(regex.search(text) for text in checked):
            print("%s:%d: no test checks: %s"
                  % (path, line, template_text(prefix, pieces)))
            missing += 1
    if missing:
        print("%d of %d front-end diagnostics have no test"
              % (missing, len(messages) - untestable))
        return 1
    print("all %d front-end diagnostics have a test (%d marked untestable)"
          % (len(messages) - untestable, untestable))
    return 0


if __name__ == "__main__":
    sys.exit(main())
