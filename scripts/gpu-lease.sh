#!/usr/bin/env bash
# The GPU suite on a lent GPU machine (the workplace's `device` tool: a
# copy of the working tree plus up to 64 MiB of ignored paths, no LLVM, no
# package registry), in two steps:
#
#   scripts/gpu-lease.sh pack [BUILD_DIR]
#     Here, after `make gpu-suite`: packs BUILD_DIR/gpu-suite (about 111 MB
#     of programs and data on 2026-12-07) into
#     BUILD_DIR/gpu-carry/suite.tar.xz (about 43 MB), and downloads the
#     wheels bench/gpu_peers.py's gla peer needs (fla-core, einops;
#     WHEELS=0 skips them, as does a pip that cannot reach PyPI). Fails
#     when the whole is more than the 64 MiB a lease carries. Carry
#     BUILD_DIR/gpu-carry.
#   scripts/gpu-lease.sh variants [BUILD_DIR]
#     Here, before pack: builds each line of bench/gpu-variants.txt (or of
#     the file VARIANTS names) as a benchmark program into
#     BUILD_DIR/gpu-suite/variants/NAME (the layer compiled forward only
#     with the line's recurc options; a LAYER named BASEBackward: BASE
#     with its backward, which run times), so that pack carries them and run
#     times them with the benchmarks (scripts/gpu-suite.sh run), at their
#     layer's shapes.
#   scripts/gpu-lease.sh run [BUILD_DIR]
#     On the GPU machine: unpacks the suite, runs `scripts/gpu-suite.sh run`
#     (every case, then the benchmarks), then the peers
#     (PEERS_ONLY, default copy,scan,window,gla: the gla last, its Triton
#     compiles the slowest; PEERS=0 skips them), writing
#     the logs under $OUT (or /tmp/gpu-lease), and prints a summary last: a
#     line per case (largest error, stream error, gradient error, times) and
#     per benchmark. Exits 1 if a case failed.
#
# SUITE names the suite's directory (default BUILD_DIR/gpu-suite, where
# make gpu-suite writes it). SUITE_S and PEERS_S bound the two steps' seconds (default 330 and 150):
# a lease has 15 minutes of device time, the machine's start included.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cmd=${1:-}
build=$(cd "${2:-$root/build}" && pwd)
carry=$build/gpu-carry
suite=${SUITE:-$build/gpu-suite}

if [[ $cmd == pack ]]; then
  [[ -d $suite ]] || { echo "gpu-lease: no $suite (make gpu-suite)" >&2; exit 1; }
  rm -rf "$carry"
  mkdir -p "$carry"
  tar -C "$suite/.." -cf - --transform "s|^$(basename "$suite")|gpu-suite|" \
    "$(basename "$suite")" | xz -T2 -6 >"$carry/suite.tar.xz"
  if [[ ${WHEELS:-1} != 0 ]]; then
    (cd "$carry" && timeout 120 python3 -m pip download -q --no-deps \
        fla-core==0.6.0 einops) ||
      echo "gpu-lease: no wheels (no PyPI): the gla peer will not run" >&2
  fi
  du -sh "$carry"/*
  bytes=$(du -sb "$carry" | cut -f1)
  if ((bytes > 64 * 1024 * 1024)); then
    echo "gpu-lease: $carry holds $bytes bytes, more than the 64 MiB a" \
      "lease carries: make the cases smaller" >&2
    exit 1
  fi
  exit 0
fi

if [[ $cmd == variants ]]; then
  [[ -d $suite/lib ]] || { echo "gpu-lease: no $suite (make gpu-suite)" >&2; exit 1; }
  rm -rf "$suite/variants"
  while read -r name layer flags; do
    [[ -z $name || $name == \#* ]] && continue
    dir=$suite/variants/$name
    mkdir -p "$dir"
    # LAYERBackward: LAYER with its backward, timed with --backward.
    base=${layer%Backward}
    forward=--no-backward
    [[ $base != "$layer" ]] && forward=
    # shellcheck disable=SC2086
    "$build/bin/recurc" "$root/bench/layers.recur" --layer "$base" $forward \
      --target=cuda:${CUDA_ARCH:-sm_90} $flags -o "$dir"
    bash "$root/scripts/gpu-suite.sh" link "$dir" "$base" "$build" "$suite"
    echo "$layer" >"$dir/layer"
    echo "gpu-lease: variant $name ($layer $flags)"
  done <"${VARIANTS:-$root/bench/gpu-variants.txt}"
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
      "$root/bench/gpu_peers.py" --only "${PEERS_ONLY:-copy,scan,window,gla}" --reps 10 \
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
    function endline() { if (open) printf "\n"; open = 0 }
    /^== bench/ { flush(); endline(); printf "%s", $0; open = 1; next }
    /^== / { flush(); endline(); name = $2; err = st = g = t = b = "-"; bad = ""; next }
    /^max_rel_err:/ { if (err == "-" || $2 + 0 > err + 0) err = $2 }
    /^stream_max_rel_err:/ { st = $2 }
    /^max_grad_rel_err:/ { g = $2 }
    /^time_ms:/ { t = $2 }
    /^backward_ms:/ { b = $2 }
    /error|FAIL/ { bad = bad " [" substr($0, 1, 140) "]" }
    /^(kernel_ms|GBps|of_copy|copy_GBps):/ { printf " %s", $0 }
    /^of_copy:/ { endline() }
    /^gpu-suite:/ { flush(); endline(); print }
    END { flush(); endline() }' "$out/suite.log"
  grep -vE '^\s*$' "$out/peers.log" 2>/dev/null | tail -25 || true
  exit $((rc != 0))
fi

echo "usage: scripts/gpu-lease.sh pack|variants|run [BUILD_DIR]" >&2
exit 2
