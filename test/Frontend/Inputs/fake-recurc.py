#!/usr/bin/env python3
"""A stand-in for recurc that misbehaves on purpose, to show that
scripts/mutate-spec.py catches it: fake-recurc.py MODE SPEC --emit=mlir.

MODE: crash (aborts on specs that contain 'output'), silent (exits 1 and
prints nothing), hang (sleeps past any timeout), empty (exits 0, prints
nothing)."""

import os
import sys
import time

mode, spec = sys.argv[1], sys.argv[2]
if mode == "crash":
    with open(spec, "rb") as f:
        if b"output" in f.read():
            os.abort()
    print("module {\n}")
elif mode == "silent":
    sys.exit(1)
elif mode == "hang":
    time.sleep(30)
elif mode == "empty":
    sys.exit(0)
