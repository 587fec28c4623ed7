#!/usr/bin/env bash
# The GPU suite and benchmarks, for a GPU machine without LLVM or MLIR.
#
#   scripts/gpu-suite.sh prepare [BUILD_DIR] [OUT_DIR]
#     Here (LLVM, MLIR and the CUDA toolkit; no GPU needed): compiles every
#     case of test/Integration/CUDA/gpu-cases.txt with recurc --target=cuda
#     (--no-backward unless the case runs with --gradcheck; the benchmark
#     layers too, but for the two that time the backward),
#     saves its inputs and float64 oracle results with recur-run
#     --save-case (a case run with --gradcheck: the gradient check first,
#     on the CPU, then the gradients it passed), and links each with
#     recur-case (librecur_case.a) and
#     librecur_rt into OUT_DIR/cases/NAME/run; does the same without a case
#     for the layers of bench/layers.recur (OUT_DIR/bench/NAME/run; Gla and
#     Window also with their backward, as GlaBackward and WindowBackward, and
#     ScaleBias with its backward only, as ScaleBiasBackward), and
#     copies the OpenMP runtime beside them. OUT_DIR defaults to
#     BUILD_DIR/gpu-suite; it is self-contained (x86-64 programs, their
#     libraries and data) and can be copied to the GPU machine.
#   scripts/gpu-suite.sh run [OUT_DIR]
#     On the GPU machine: runs every case (output compared with the oracle,
#     then streamed; the gradient cases' backward compared with the saved
#     gradients), then times every benchmark layer (and the variants
#     scripts/gpu-lease.sh variants added under OUT_DIR/variants) and a
#     device-to-device copy of the same bytes. Prints one line per case
#     and exits 1 if any failed.
#
# CUDA_ARCH (default sm_90) names the chips the kernels are compiled for;
# RECURC_FLAGS is added to every recurc command (--cuda-block-threads=N,
# say);
# LDFLAGS is added to each program's link (the sanitizer flags of a
# sanitized build: its libraries are instrumented);
# CASES (a regular expression) selects cases by name; BENCH=0 skips the
# benchmarks (in both steps), BENCH_LAYERS names some of them, BENCH_REPEAT
# sets the timed calls (default 10).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cmd=${1:-}
shift || true

cc=${CC:-clang-22}
cxx=${CXX:-clang++-22}
# Links DIR/LAYER.o (recurc's object) with recur-case and librecur_rt of
# $build into DIR/run, which finds libomp in $out/lib (DIR two levels
# below $out).
link() { # DIR LAYER
  printf '#include "%s.h"\nconst recur_layer_desc *recur_case_layer(void) { return recur_%s_layer(); }\n' \
    "$2" "$2" >"$1/shim.c"
  $cc -c -I"$1" -I"$root/include" "$1/shim.c" -o "$1/shim.o"
  # shellcheck disable=SC2086
  $cxx -o "$1/run" "$1/shim.o" "$1/$2.o" "$build/lib/librecur_case.a" \
    "$build/lib/librecur_rt.a" -L"$out/lib" -lomp -ldl -lmvec -lm -lpthread \
    -Wl,-rpath,'$ORIGIN/../../lib' ${LDFLAGS:-}
  rm -f "$1/shim.o" "$1/$2.o" # the program holds it
}

# scripts/gpu-suite.sh link DIR LAYER BUILD_DIR OUT_DIR: that link alone
# (scripts/gpu-lease.sh variants).
if [[ $cmd == link ]]; then
  build=$(cd "$3" && pwd)
  out=$4
  link "$1" "$2"
  exit
fi

if [[ $cmd == prepare ]]; then
  build=$(cd "${1:-$root/build}" && pwd)
  out=${2:-$build/gpu-suite}
  arch=${CUDA_ARCH:-sm_90}
  rm -rf "$out"
  mkdir -p "$out/cases" "$out/bench" "$out/lib"
  # The OpenMP runtime the runtime links (libomp), found where the
  # compiler finds it.
  omp=$($cxx -print-file-name=libomp.so)
  [[ -f $omp ]] || { echo "gpu-suite: no libomp.so ($omp)" >&2; exit 1; }
  soname=$(objdump -p "$omp" | awk '/SONAME/ {print $2}')
  cp -L "$omp" "$out/lib/${soname:-libomp.so}"
  fails=0
  while IFS='|' read -r name spec cflags rflags gflags; do
    [[ $name =~ ^[[:space:]]*(#|$) ]] && continue
    name=$(echo "$name" | xargs)
    [[ -n ${CASES:-} && ! $name =~ $CASES ]] && continue
    spec=$(echo "$spec" | xargs)
    dir=$out/cases/$name
    mkdir -p "$dir"
    # A case checks its layer's backward only with --gradcheck; the others
    # are compiled forward only (half the compile time or less).
    forward=--no-backward
    [[ " $rflags " == *" --gradcheck "* ]] && forward=
    # The CUDA-only flags (the optional fifth field) go to recurc alone:
    # recur-run --save-case runs the oracle on the CPU.
    # shellcheck disable=SC2086
    if ! "$build/bin/recurc" "$root/$spec" $cflags ${gflags:-} $forward --target=cuda:$arch ${RECURC_FLAGS:-} \
           -o "$dir" >"$dir/compile.log" 2>&1; then
      echo "gpu-suite: $name: recurc failed:" >&2
      cat "$dir/compile.log" >&2
      fails=$((fails + 1))
      continue
    fi
    layer=$(basename "$(ls "$dir"/*.h)" .h)
    # shellcheck disable=SC2086
    if ! "$build/bin/recur-run" "$root/$spec" $cflags $rflags --repeat 3 \
           --save-case="$dir" >"$dir/save.log" 2>&1; then
      # A gradient case is saved only when its check passed here.
      echo "gpu-suite: $name: recur-run --save-case failed:" >&2
      cat "$dir/save.log" >&2
      fails=$((fails + 1))
      continue
    fi
    link "$dir" "$layer"
    echo "gpu-suite: prepared $name ($layer)"
  done <"$root/test/Integration/CUDA/gpu-cases.txt"
  # The benchmark layers, forward only; LAYERBackward: LAYER with its
  # backward, which run times (recur-case --bench --backward).
  for layer in ScanF32 ScanF32One ScanC64 Gla GlaChunked Window \
    GlaBackward WindowBackward ScaleBiasBackward; do
    [[ ${BENCH:-1} == 0 ]] && break
    dir=$out/bench/$layer
    mkdir -p "$dir"
    base=${layer%Backward}
    forward=--no-backward
    [[ $base != "$layer" ]] && forward=
    # shellcheck disable=SC2086
    "$build/bin/recurc" "$root/bench/layers.recur" --layer "$base" \
      $forward --target=cuda:$arch ${RECURC_FLAGS:-} -o "$dir"
    link "$dir" "$base"
  done
  echo "gpu-suite: prepared $(ls "$out/cases" | wc -l) cases and" \
    "$(ls "$out/bench" | wc -l) benchmark layers in $out"
  exit $((fails > 0))
fi

if [[ $cmd == run ]]; then
  out=${1:-$root/build/gpu-suite}
  passed=0
  failed=()
  for dir in "$out"/cases/*/; do
    name=$(basename "$dir")
    [[ -n ${CASES:-} && ! $name =~ $CASES ]] && continue
    echo "== $name"
    if timeout 300 "$dir/run" "$dir"; then
      passed=$((passed + 1))
    else
      failed+=("$name")
    fi
  done
  echo "gpu-suite: $passed passed, ${#failed[@]} failed${failed:+: ${failed[*]}}"
  # Benchmarks: sizes as in docs/performance.md; a scan along the last
  # dimension (few long sequences: the spread form) at three shapes of the
  # same bytes.
  if [[ ${BENCH:-1} != 0 ]]; then
    declare -A sizes=([ScanF32]=B=16,T=8192 [ScanC64]=B=16,T=8192
      [ScanF32One]="B=1,T=16777216 B=16,T=1048576 B=1024,T=16384"
      [Gla]=B=4,T=4096 [GlaChunked]=B=4,T=4096 [Window]=B=4,T=4096
      [ScaleBias]=B=16,T=4096)
    # NAME PROGRAM LAYER: PROGRAM at LAYER's shapes; a LAYER named
    # BASEBackward: BASE's backward (the forward it recomputes included)
    # at BASE's shapes.
    bench() {
      local base=${3%Backward} extra=()
      [[ $base != "$3" ]] && extra=(--backward)
      for shape in ${sizes[$base]}; do
        echo "== bench $1 $shape"
        timeout 300 "$2" --bench "$shape" --repeat "${BENCH_REPEAT:-10}" \
          ${extra[@]+"${extra[@]}"} || echo "gpu-suite: bench $1 $shape failed"
      done
    }
    for layer in ${BENCH_LAYERS:-ScanF32 ScanF32One ScanC64 Gla GlaChunked Window GlaBackward WindowBackward ScaleBiasBackward}; do
      bench "$layer" "$out/bench/$layer/run" "$layer"
    done
    # The variants scripts/gpu-lease.sh variants built beside the suite.
    for dir in "$out"/variants/*/; do
      [[ -x $dir/run ]] || continue
      bench "$(basename "$dir")" "$dir/run" "$(cat "$dir/layer")"
    done
  fi
  [[ ${#failed[@]} -eq 0 ]]
  exit
fi

echo "usage: scripts/gpu-suite.sh prepare [BUILD_DIR] [OUT_DIR] | run [OUT_DIR]" >&2
exit 2
