#!/usr/bin/env bash
# Fuzzes the Recur front end (lexer, parser, checker and IR emitter) with
# libFuzzer under ASan + UBSan for a bounded time.
#
#   scripts/fuzz-frontend.sh [SECONDS]        (default 60)
#
# Configures build-fuzz/ (FUZZ_BUILD_DIR) with -DRECUR_BUILD_FUZZER=ON,
# builds recur-fuzz, seeds the corpus (build-fuzz/fuzz-corpus, kept between
# runs) from examples/*.recur and test/Frontend/**/*.recur, and runs the
# fuzzer with -max_total_time=SECONDS -timeout=10 -rss_limit_mb=4096. Exits
# non-zero on any crash, sanitizer report, leak, timeout or out-of-memory,
# leaving the input that caused it in build-fuzz/fuzz-artifacts/. Replay one
# with: build-fuzz/bin/recur-fuzz build-fuzz/fuzz-artifacts/crash-...
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-60}
case "$seconds" in
  '' | *[!0-9]*) echo "usage: $0 [SECONDS]" >&2; exit 2 ;;
esac
build=${FUZZ_BUILD_DIR:-build-fuzz}
llvm_prefix=${LLVM_PREFIX:-/usr/lib/llvm-22}

if [ ! -f "$build/build.ninja" ]; then
  cmake -G Ninja -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
    -DMLIR_DIR="$llvm_prefix/lib/cmake/mlir" -DRECUR_BUILD_FUZZER=ON
fi
ninja -C "$build" ${NINJA_JOBS:+-j "$NINJA_JOBS"} recur-fuzz

corpus="$build/fuzz-corpus"
artifacts="$build/fuzz-artifacts"
mkdir -p "$corpus" "$artifacts"
seeds=0
while IFS= read -r -d '' spec; do
  cp "$spec" "$corpus/seed-$(echo "$spec" | tr '/' '_')"
  seeds=$((seeds + 1))
done < <(find examples test/Frontend -name '*.recur' -print0 2>/dev/null)
echo "fuzz-frontend: $seeds seed specs, corpus $corpus, ${seconds}s"

# As for `make test-asan`: libMLIR.so is not instrumented and shares
# allocator slabs with our code (see test/lit.cfg.py).
export ASAN_OPTIONS="allow_user_poisoning=0:detect_leaks=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"

status=0
"$build/bin/recur-fuzz" "$corpus" \
  -dict=tools/recur-fuzz/recur.dict \
  -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 \
  -max_len=8192 -print_final_stats=1 \
  -artifact_prefix="$artifacts/" || status=$?

if [ "$status" -ne 0 ]; then
  echo "fuzz-frontend: FAILED (exit $status); inputs in $artifacts:" >&2
  ls -1 "$artifacts" >&2 || true
  exit 1
fi
echo "fuzz-frontend: no crash, leak or hang in ${seconds}s"
