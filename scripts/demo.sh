#!/usr/bin/env bash
# `make demo`: compile the GateLoop example spec, run it through the pipeline
# that exists today (recurc -> recur IR -> scalar reference loops -> LLVM ->
# mlir-runner) and check the numbers against a float64 loop of the paper's
# equations. See scripts/demo.py.
set -euo pipefail
exec python3 "$(dirname "$0")/demo.py" "${1:-build}"
