#!/usr/bin/env bash
# Builds recur-train-char with the character models' blocks at other sizes
# than the tree's (examples/train/CMakeLists.txt compiles char_lm.recur with
# D=64 H=4 W=16 S=16 F=256), for the experiments of docs/training.md:
#
#   scripts/build-char-variant.sh OUT_DIR NAME=VALUE...
#
# compiles examples/train/char_lm.recur with those dimensions (the others as
# in the tree) through BUILD_DIR/bin/recurc, and links OUT_DIR/recur-train-char
# against BUILD_DIR's training library and runtime (BUILD_DIR: the
# environment's, default build/ beside this script; `make build` first).
#   scripts/build-char-variant.sh /tmp/w64 W=64
# gives a program whose blocks and window are 64 bytes; its model line says
# so. Weights saved by one size load only into a program of that size.
# CXX (default clang++-22) compiles and links, with the sanitizers of
# BUILD_DIR's build where it has them (RECUR_ENABLE_SANITIZERS, as under
# make test-asan) and CXXFLAGS added.
set -euo pipefail

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }
if [ $# -ge 1 ] && { [ "$1" = "--help" ] || [ "$1" = "-h" ]; }; then
  usage
  exit 0
fi
if [ $# -lt 1 ] || [[ "$1" =~ ^[A-Z]+= ]]; then
  echo "build-char-variant: error: no output directory (usage: scripts/build-char-variant.sh OUT_DIR NAME=VALUE...)" >&2
  exit 2
fi

root=$(cd "$(dirname "$0")/.." && pwd)
out=$1
shift

declare -A dims=([D]=64 [H]=4 [W]=16 [S]=16 [F]=256)
for define in "$@"; do
  if [[ ! "$define" =~ ^(D|H|W|S|F)=[1-9][0-9]*$ ]]; then
    echo "build-char-variant: error: '$define' is not NAME=VALUE with NAME one of D H W S F and VALUE a positive integer" >&2
    exit 2
  fi
  dims[${define%%=*}]=${define#*=}
done

build=${BUILD_DIR:-$root/build}
for need in "$build/bin/recurc" "$build/lib/libRecurTrainLM.a" "$build/lib/librecur_rt.so"; do
  if [ ! -e "$need" ]; then
    echo "build-char-variant: error: '$need' is missing (run 'make build' first, or set BUILD_DIR)" >&2
    exit 1
  fi
done
# Absolute: the program's runpath names it.
build=$(cd "$build" && pwd)

# The flags CMakeLists.txt adds under RECUR_ENABLE_SANITIZERS: that build's
# training library and runtime need the sanitizer runtimes.
compile_flags=()
link_flags=()
if grep -q '^RECUR_ENABLE_SANITIZERS:BOOL=ON$' "$build/CMakeCache.txt" 2>/dev/null; then
  compile_flags=(-fsanitize=address,undefined -fno-sanitize=vptr
                 -fno-omit-frame-pointer -fno-sanitize-recover=all)
  link_flags=(-fsanitize=address,undefined)
fi

cxx=${CXX:-clang++-22}
layers=BlockRecurrentBlock,BlockRecurrentLSTMBlock,SlidingWindowBlock,SlidingWindowWideBlock,SlidingWindowWideLSTMBlock
mkdir -p "$out"
rm -rf "$out/layers"
"$build/bin/recurc" "$root/examples/train/char_lm.recur" --target=cpu \
  --layer=$layers -o "$out/layers" \
  -D D=${dims[D]} -D H=${dims[H]} -D W=${dims[W]} -D S=${dims[S]} -D F=${dims[F]}
"$cxx" "${compile_flags[@]}" ${CXXFLAGS:-} -std=gnu++17 -O3 -DNDEBUG \
  -fopenmp=libomp -I"$root/include" -I"$build/include" -I"$out/layers" \
  -isystem /usr/lib/llvm-22/include \
  -c "$root/examples/train/char_lm.cpp" -o "$out/char_lm.o"
"$cxx" "${link_flags[@]}" ${CXXFLAGS:-} -O3 -fopenmp=libomp \
  "$out"/layers/*.o "$out/char_lm.o" -o "$out/recur-train-char" \
  -Wl,-rpath,"$build/lib" "$build/lib/libRecurTrainLM.a" \
  "$build/lib/librecur_rt.so" -lm
echo "build-char-variant: $out/recur-train-char (D=${dims[D]} H=${dims[H]} W=${dims[W]} S=${dims[S]} F=${dims[F]})"
