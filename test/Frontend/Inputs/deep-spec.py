#!/usr/bin/env python3
"""Prints a spec whose one statement nests KIND N levels deep (for the
front end's nesting limits): deep-spec.py KIND N. `inlined` nests through N
functions instead."""

import sys

kind, n = sys.argv[1], int(sys.argv[2])
dims, stmt = "", ""
if kind == "calls":
    stmt = "y = " + "exp(" * n + "x" + ")" * n
elif kind == "parens":
    stmt = "y = " + "(" * n + "x" + ")" * n
elif kind == "negations":
    stmt = "y = " + "-" * n + "x"
elif kind == "sum":
    stmt = "y = x" + " + x" * n
elif kind == "product":
    stmt = "y = x" + " * x" * n
elif kind == "arguments":
    stmt = "y = maximum(x" + " - x" * n + ", x)"
elif kind == "bodies":
    # Built outside in, in one join: wrapping the string level by level
    # copies it n times (minutes of CPU time for n = 100000).
    opens = ["depth(max=1, init=%s) do (l%d, h%d) { return " %
             ("x" if i == 0 else "h%d" % (i - 1), i, i) for i in range(n)]
    stmt = "y = " + "".join(opens) + "h%d" % (n - 1) + " }" * n
elif kind == "inlined":
    # N functions, each nesting 190 calls around a call of the next.
    fns = []
    for i in range(n):
        inner = "f%d(z)" % (i + 1) if i + 1 < n else "z"
        fns.append("fn f%d(z) { return %s%s%s }" % (i, "exp(" * 190, inner, ")" * 190))
    print("\n".join(fns))
    stmt = "y = f0(x)"
elif kind == "dim-parens":
    dims = "dim A = " + "(" * n + "1" + ")" * n
elif kind == "dim-sum":
    dims = "dim A = 1" + " + 1" * n
elif kind == "dim-product":
    dims = "dim A = 1" + " * 1" * n
else:
    sys.exit("unknown kind " + kind)
print("layer Deep {")
if dims:
    print("  " + dims)
print("  input x: f32[4]")
print("  output y: f32[4]")
print("  " + (stmt or "y = x"))
print("}")
