"""Runs every case of a gpu-cases.txt through recur-run --target=cuda.

usage: run-gpu-cases.py SRC_ROOT RECUR_RUN CASES_FILE [--gpu-forms]

With --gpu-forms, through recur-run --gpu-forms instead: the CUDA
pipeline's loops on the CPU; a case that needs a GPU (--cuda-scan-warps:
shuffles) is skipped. Prints each case's output and a summary line `gpu
cases: P passed, F failed` (and `, S skipped`); the exit status is 0 either
way, the summary is what the test checks.
"""
import shlex
import subprocess
import sys

root, recur_run, cases = sys.argv[1:4]
if sys.argv[4:] not in ([], ["--gpu-forms"]):
    sys.exit(f"run-gpu-cases.py: unexpected arguments {sys.argv[4:]}")
forms = sys.argv[4:] == ["--gpu-forms"]
passed, failed, skipped = 0, [], []
for line in open(cases):
    if not line.strip() or line.lstrip().startswith("#"):
        continue
    # The fifth field, CUDA-only compile flags, is optional.
    fields = [f.strip() for f in line.split("|")] + [""]
    name, spec, cflags, rflags, gflags = fields[:5]
    if forms and "--cuda-scan-warps" in gflags:
        skipped.append(name)
        continue
    target = "--gpu-forms" if forms else "--target=cuda"
    cmd = [recur_run, f"{root}/{spec}", target, "--repeat", "1"]
    cmd += shlex.split(cflags) + shlex.split(gflags) + shlex.split(rflags)
    run = subprocess.run(cmd, capture_output=True, text=True)
    print(f"== {name}: {' '.join(cmd)}\n{run.stdout}{run.stderr}", end="")
    if run.returncode == 0:
        passed += 1
    else:
        failed.append(name)
summary = f"gpu cases: {passed} passed, {len(failed)} failed"
if forms:
    summary += f", {len(skipped)} skipped"
print(f"{summary} {' '.join(failed)}")
