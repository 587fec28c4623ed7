#!/usr/bin/env bash
# Peer benchmarks of the CPU performance cases (bench/layers.recur): ggml's
# CPU kernels and PyTorch on the CPU, built and installed outside the tree,
# timed on fixed shapes. Prints one JSON object per line on stdout and
# nothing else; progress and diagnostics go to stderr. See
# bench/peers/README.md.
#
#   scripts/bench-peers.sh [--tiny] [--threads N] [--runs N] [--seq T]
#                          [--skip-install | --install]
#
# --tiny         every case once at tiny sizes (a smoke test). Implies
#                --skip-install unless --install is given.
# --threads N    threads for ggml, torch and OpenMP (default 2).
# --runs N       timed runs per case, after one warm-up (default 5; 1 with
#                --tiny); each line reports the median.
# --seq T        the sequence length of the gla and window cases instead
#                of 4096 and 8192; the scans are skipped (bench/plot.py).
# --skip-install use what is already in the work dir; a peer that is not
#                there is skipped with a line on stderr.
# --install      install what is missing even with --tiny.
#
# Work dir: ${RECUR_PEERS_DIR:-$HOME/.cache/recur-peers}. Reruns reuse what
# is there. ggml is the copy vendored by the llama-cpp-python source
# distribution on PyPI (built with cmake, -DGGML_NATIVE=ON, OpenMP);
# torch is PyPI's wheel in a venv. A peer whose tools or download are
# missing is skipped with a message on stderr; the script still exits 0.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
work="${RECUR_PEERS_DIR:-$HOME/.cache/recur-peers}"
llama_version="${RECUR_PEERS_LLAMA_CPP_PYTHON:-0.3.36}"
torch_version="${RECUR_PEERS_TORCH:-2.15.0}"

tiny=0
threads=2
runs=""
install=""
seq=""
while [ $# -gt 0 ]; do
  case "$1" in
    --tiny) tiny=1 ;;
    --threads) threads="${2:?--threads needs a value}"; shift ;;
    --runs) runs="${2:?--runs needs a value}"; shift ;;
    --seq) seq="${2:?--seq needs a value}"; shift ;;
    --skip-install) install=0 ;;
    --install) install=1 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench-peers: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
case "$threads" in ''|*[!0-9]*|0) echo "bench-peers: --threads must be a positive integer" >&2; exit 2 ;; esac
if [ -z "$runs" ]; then runs=$([ "$tiny" = 1 ] && echo 1 || echo 5); fi
case "$runs" in ''|*[!0-9]*|0) echo "bench-peers: --runs must be a positive integer" >&2; exit 2 ;; esac
case "$seq" in ''|*[!0-9]*|0) [ -z "$seq" ] || { echo "bench-peers: --seq must be a positive integer" >&2; exit 2; } ;; esac
seq_flag=()
[ -n "$seq" ] && seq_flag=(--seq "$seq")
if [ -z "$install" ]; then install=$([ "$tiny" = 1 ] && echo 0 || echo 1); fi

export OMP_NUM_THREADS="$threads"
export TORCHINDUCTOR_CACHE_DIR="$work/inductor-cache"
tiny_flag=()
[ "$tiny" = 1 ] && tiny_flag=(--tiny)
# A hung peer must not hold the driver forever.
limit=$([ "$tiny" = 1 ] && echo 300 || echo 1800)
timeout_cmd=()
command -v timeout >/dev/null && timeout_cmd=(timeout "$limit")

say() { echo "bench-peers: $*" >&2; }

json_escape() { printf '%s' "$1" | tr -d '\000-\037' | sed -e 's/\\/\\\\/g' -e 's/"/\\"/g'; }

error_line() { # peer impl case message
  printf '{"peer": "%s", "impl": "%s", "case": "%s", "error": "%s"}\n' \
    "$1" "$2" "$3" "$(json_escape "$4")"
}

# Runs one peer command for one case, forwards its JSON lines, and prints an
# error line for each expected impl:case pair that the command did not print.
run_case() { # peer expected-pairs command...
  local peer="$1" expected="$2" out err rc=0 pair
  shift 2
  out="$(mktemp)" err="$(mktemp)"
  nice -n 10 "${timeout_cmd[@]}" "$@" >"$out" 2>"$err" || rc=$?
  grep '^{' "$out" || true
  cat "$err" >&2
  if [ "$rc" != 0 ]; then
    local why
    # The assertion or exception line if there is one, else the last line.
    why="$(grep -v '^\(ggml_bench\|torch_bench\): ' "$err" | grep -E 'GGML_ASSERT|GGML_ABORT|Error|error' | tail -n 1 || true)"
    [ -n "$why" ] || why="$(grep -v '^\(ggml_bench\|torch_bench\): ' "$err" | tail -n 1 || true)"
    [ "$rc" = 124 ] && why="timed out after ${limit} s"
    [ -n "$why" ] || why="exit status $rc"
    for pair in $expected; do
      grep -q "\"impl\": \"${pair%%:*}\", \"case\": \"${pair#*:}\"" "$out" ||
        error_line "$peer" "${pair%%:*}" "${pair#*:}" "$why"
    done
  fi
  rm -f "$out" "$err"
}

# --- ggml ---------------------------------------------------------------------

ggml_src="$work/src/llama_cpp_python-$llama_version/vendor/llama.cpp/ggml"
ggml_build="$work/ggml-build-$llama_version"
ggml_bench="$work/ggml_bench-$llama_version"
ggml_libs=("$ggml_build/src/libggml.a" "$ggml_build/src/libggml-cpu.a"
           "$ggml_build/src/libggml-base.a")

install_ggml() {
  local tool
  for tool in cmake c++ python3; do
    command -v "$tool" >/dev/null || { say "ggml: $tool not found; skipping ggml"; return 1; }
  done
  mkdir -p "$work/src"
  local sdist="$work/src/llama_cpp_python-$llama_version.tar.gz"
  if [ ! -d "$ggml_src" ]; then
    if [ ! -f "$sdist" ]; then
      say "ggml: downloading the llama-cpp-python $llama_version source distribution"
      if ! python3 -m pip download --no-binary :all: --no-deps \
          "llama-cpp-python==$llama_version" -d "$work/src" >&2; then
        say "ggml: pip download of llama-cpp-python failed; skipping ggml"
        return 1
      fi
    fi
    tar -xzf "$sdist" -C "$work/src" || { say "ggml: cannot unpack $sdist; skipping ggml"; return 1; }
    [ -d "$ggml_src" ] || { say "ggml: no ggml sources at $ggml_src; skipping ggml"; return 1; }
  fi
  if ! ggml_libs_built; then
    # The sdist leaves out ggml.pc.in, which a standalone configure of ggml
    # reads to write a pkg-config file that nothing here uses.
    [ -f "$ggml_src/ggml.pc.in" ] || : >"$ggml_src/ggml.pc.in"
    local generator=()
    command -v ninja >/dev/null && generator=(-G Ninja)
    say "ggml: building its CPU backend in $ggml_build"
    if ! { nice -n 10 cmake -S "$ggml_src" -B "$ggml_build" "${generator[@]}" \
             -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
             -DGGML_NATIVE=ON -DGGML_OPENMP=ON -DGGML_BLAS=OFF \
             -DGGML_CUDA=OFF -DGGML_METAL=OFF -DGGML_VULKAN=OFF \
             -DGGML_BUILD_TESTS=OFF -DGGML_BUILD_EXAMPLES=OFF >&2 &&
           nice -n 10 cmake --build "$ggml_build" --target ggml -j "$threads" >&2; }; then
      say "ggml: the cmake build failed; skipping ggml"
      return 1
    fi
  fi
  compile_ggml_bench
}

ggml_libs_built() {
  [ -f "${ggml_libs[0]}" ] && [ -f "${ggml_libs[1]}" ] && [ -f "${ggml_libs[2]}" ]
}

# Compiles bench/peers/ggml_bench.cpp against the built ggml when the binary
# is missing or older than the source.
compile_ggml_bench() {
  if [ -x "$ggml_bench" ] && [ ! "$root/bench/peers/ggml_bench.cpp" -nt "$ggml_bench" ]; then
    return 0
  fi
  say "ggml: compiling bench/peers/ggml_bench.cpp"
  if ! nice -n 10 c++ -std=c++17 -O3 -march=native -I"$ggml_src/include" \
      "$root/bench/peers/ggml_bench.cpp" -o "$ggml_bench" \
      -Wl,--start-group "${ggml_libs[@]}" -Wl,--end-group \
      -fopenmp -lpthread -lm >&2; then
    rm -f "$ggml_bench"
    say "ggml: compiling ggml_bench failed; skipping ggml"
    return 1
  fi
}

ggml_ready() { ggml_libs_built && compile_ggml_bench; }

run_ggml() {
  if [ -z "$seq" ]; then
    run_case ggml "ssm_scan:scan_f32" \
      "$ggml_bench" --case scan --threads "$threads" --runs "$runs" "${tiny_flag[@]}"
    say "ggml: scan_c64 skipped (ggml has no complex types)"
  fi
  run_case ggml "gated_linear_attn:gla_fwd rwkv_wkv6:gla_fwd" \
    "$ggml_bench" --case gla --threads "$threads" --runs "$runs" "${tiny_flag[@]}" "${seq_flag[@]}"
  say "ggml: gla_bwd and window_bwd skipped (no backward for these ops)"
  run_case ggml "flash_attn_ext:window_fwd" \
    "$ggml_bench" --case window --threads "$threads" --runs "$runs" "${tiny_flag[@]}" "${seq_flag[@]}"
}

# --- PyTorch ------------------------------------------------------------------

venv="$work/venv"

torch_ready() { [ -x "$venv/bin/python" ] && "$venv/bin/python" -c 'import torch' 2>/dev/null; }

install_torch() {
  torch_ready && return 0
  command -v python3 >/dev/null || { say "torch: python3 not found; skipping torch"; return 1; }
  if [ ! -x "$venv/bin/python" ]; then
    mkdir -p "$work"
    python3 -m venv "$venv" >&2 || { say "torch: python3 -m venv failed (Debian: apt-get install python3-venv); skipping torch"; return 1; }
  fi
  # PyPI's Linux wheel is the CUDA build: its libtorch links CUDA libraries
  # (cufile, cusparseLt, nvshmem, ...) even to run on the CPU, so the wheel
  # is installed with its dependencies (about 5 GiB in the venv).
  say "torch: installing torch==$torch_version from PyPI into $venv"
  if ! nice -n 10 "$venv/bin/python" -m pip install "torch==$torch_version" >&2; then
    say "torch: pip install torch failed; skipping torch"
    return 1
  fi
  torch_ready || { say "torch: torch installed but does not import; skipping torch"; return 1; }
}

run_torch() {
  local py=("$venv/bin/python" "$root/bench/peers/torch_bench.py"
            --threads "$threads" --runs "$runs" "${tiny_flag[@]}" "${seq_flag[@]}")
  if [ -z "$seq" ]; then
    run_case torch "associative_scan:scan_f32" "${py[@]}" --case scan_f32
    run_case torch "associative_scan:scan_c64" "${py[@]}" --case scan_c64
  fi
  run_case torch "chunked_gla:gla_fwd chunked_gla:gla_bwd" "${py[@]}" --case gla
  run_case torch "sdpa_band:window_fwd sdpa_band:window_bwd flex_attention:window_fwd flex_attention:window_bwd" \
    "${py[@]}" --case window
}

# --- main ---------------------------------------------------------------------

say "work dir $work, $threads threads, $runs runs$([ "$tiny" = 1 ] && echo ', tiny sizes')"
mkdir -p "$work" 2>/dev/null || { say "cannot create $work; nothing to run"; exit 0; }

if [ "$install" = 1 ]; then
  install_ggml || true
  install_torch || true
fi

hint=""
[ "$install" = 1 ] || hint=" (run without --tiny, or with --install, to install it)"
ran=0
if ggml_ready; then
  run_ggml
  ran=1
else
  say "ggml: not built in $work$hint; skipping ggml"
fi
if torch_ready; then
  run_torch
  ran=1
else
  say "torch: not installed in $work$hint; skipping torch"
fi
[ "$ran" = 1 ] || say "no peer is installed; nothing was timed"
say "brt: skipped (no peer)"
exit 0
