"""Runs every case of a gpu-cases.txt through recur-run --target=cuda.

usage: run-gpu-cases.py SRC_ROOT RECUR_RUN CASES_FILE

Prints each case's output and a summary line `gpu cases: P passed, F
failed`; the exit status is 0 either way, the summary is what the test
checks.
"""
import shlex
import subprocess
import sys

root, recur_run, cases = sys.argv[1:4]
passed, failed = 0, []
for line in open(cases):
    if not line.strip() or line.lstrip().startswith("#"):
        continue
    # The fifth field, CUDA-only compile flags, is optional.
    fields = [f.strip() for f in line.split("|")] + [""]
    name, spec, cflags, rflags, gflags = fields[:5]
    cmd = [recur_run, f"{root}/{spec}", "--target=cuda", "--repeat", "1"]
    cmd += shlex.split(cflags) + shlex.split(gflags) + shlex.split(rflags)
    run = subprocess.run(cmd, capture_output=True, text=True)
    print(f"== {name}: {' '.join(cmd)}\n{run.stdout}{run.stderr}", end="")
    if run.returncode == 0:
        passed += 1
    else:
        failed.append(name)
print(f"gpu cases: {passed} passed, {len(failed)} failed {' '.join(failed)}")
