#!/usr/bin/env python3
"""expect-exit.py STATUS CMD ARGS...: runs CMD, passes its output through,
and succeeds only if it exits with STATUS (lit's `not` accepts any failure)."""

import subprocess
import sys

want = int(sys.argv[1])
status = subprocess.run(sys.argv[2:]).returncode
if status != want:
    print("expect-exit.py: exit status %d, expected %d" % (status, want),
          file=sys.stderr)
    sys.exit(1)
