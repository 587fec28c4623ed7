#!/usr/bin/env bash
# The GPU suite on a lent GPU machine (the workplace's `device` tool: a
# copy of the working tree plus up to 64 MiB of ignored paths, no LLVM, no
# package registry), in two steps:
#
#   scripts/gpu-lease.sh pack [BUILD_DIR]
#     Here, after `make gpu-suite`: packs BUILD_DIR/gpu-suite (about 85 MB
#     of programs and data) into BUILD_DIR/gpu-carry/suite.tar.xz (about
#     23 MB), and downloads the wheels bench/gpu_peers.py's gla peer needs
#     (fla-core, einops; WHEELS=0 skips them, as does a pip that cannot
#     reach PyPI). Carry
#     BUILD_DIR/gpu-carry.
#   scripts/gpu-lease.sh run [BUILD_DIR]
#     On the GPU machine: unpacks the suite, runs `scripts/gpu-suite.sh run`
#     (every case, then the benchmarks), then the peers
#     (PEERS_ONLY, default copy,scan,window; PEERS=0 skips them), writing
#     the logs under $OUT (or /tmp/gpu-lease), and prints a summary last: a
#     line per case (largest error, stream error, gradient error, times) and
#     per benchmark. Exits 1 if a case failed.
#
# SUITE_S and PEERS_S bound the two steps' seconds (default 330 and 150):
# a lease has 15 minutes of device time, the machine's start included.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cmd=${1:-}
build=$(cd "${2:-$root/build}" && pwd)
carry=$build/gpu-carry

if [[ $cmd == pack ]]; then
  [[ -d $build/gpu-suite ]] || { echo "gpu-lease: no $build/gpu-suite (make gpu-suite)" >&2; exit 1; }
  rm -rf "$carry"
  mkdir -p "$carry"
  tar -C "$build" -cf - gpu-suite | xz -T2 -6 >"$carry/suite.tar.xz"
  if [[ ${WHEELS:-1} != 0 ]]; then
    (cd "$carry" && timeout 120 python3 -m pip download -q --no-deps \
        fla-core==0.6.0 einops) ||
      echo "gpu-lease: no wheels (no PyPI): the gla peer will not run" >&2
  fi
  du -sh "$carry"/*
  exit 0
fi

if [[ $cmd == run ]]; then
  out=${OUT:-/tmp/gpu-lease}
  mkdir -p "$out" /tmp/gpu-lease-suite
  tar -C /tmp/gpu-lease-suite -xJf "$carry/suite.tar.xz"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu \
    --format=csv | tee "$out/gpu.txt" || true
  start=$(date +%s)
  rc=0
  BENCH_REPEAT=${BENCH_REPEAT:-10} timeout "${SUITE_S:-330}" \
    bash "$root/scripts/gpu-suite.sh" run /tmp/gpu-lease-suite/gpu-suite \
    >"$out/suite.log" 2>&1 || rc=$?
  echo "suite: exit $rc after $(($(date +%s) - start)) s"
  if [[ ${PEERS:-1} != 0 ]]; then
    if compgen -G "$carry/*.whl" >/dev/null; then
      python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
        --upgrade --target /tmp/gpu-lease-site "$carry"/*.whl >"$out/pip.log" 2>&1 || true
    fi
    PYTHONPATH=/tmp/gpu-lease-site timeout "${PEERS_S:-150}" python3 \
      "$root/bench/gpu_peers.py" --only "${PEERS_ONLY:-copy,scan,window}" --reps 10 \
      --json "$out/peers.json" >"$out/peers.log" 2>&1 ||
      echo "peers: exit $? (see peers.log)"
  fi
  # The summary: a line per case and per benchmark.
  awk '
    function flush() {
      if (name != "")
        printf "%-18s err %-9s stream %-9s grad %-9s ms %-8s bwd_ms %s%s\n",
               name, err, st, g, t, b, bad
      name = ""
    }
    /^== bench/ { flush(); printf "%s", $0; next }
    /^== / { flush(); name = $2; err = st = g = t = b = "-"; bad = ""; next }
    /^max_rel_err:/ { if (err == "-" || $2 + 0 > err + 0) err = $2 }
    /^stream_max_rel_err:/ { st = $2 }
    /^max_grad_rel_err:/ { g = $2 }
    /^time_ms:/ { t = $2 }
    /^backward_ms:/ { b = $2 }
    /error|FAIL/ { bad = bad " [" substr($0, 1, 140) "]" }
    /^(kernel_ms|GBps|of_copy|copy_GBps):/ { printf " %s", $0 }
    /^copy_GBps:|^of_copy:/ { if ($1 == "of_copy:") printf "\n" }
    /^gpu-suite:/ { flush(); print }
    END { flush() }' "$out/suite.log"
  grep -vE '^\s*$' "$out/peers.log" 2>/dev/null | tail -25 || true
  exit $((rc != 0))
fi

echo "usage: scripts/gpu-lease.sh pack [BUILD_DIR] | run [BUILD_DIR]" >&2
exit 2
