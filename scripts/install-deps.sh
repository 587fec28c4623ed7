#!/usr/bin/env bash
# Installs what Recur needs to build and test, and nothing that is already there.
# Idempotent: a second run checks and exits without touching the system.
set -euo pipefail

packages=(
  llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools clang-22
  libclang-rt-22-dev libomp-22-dev ninja-build cmake
  libgtest-dev python3 clang-format-22
  # bench/ (recur-bench): Google Benchmark and OpenBLAS's sgemm, the
  # arithmetic limit the kernels are measured against.
  libbenchmark-dev libopenblas-dev
  # English text under /usr/share/games/fortunes: the default training data
  # of recur-train-char (examples/train/char_lm.cpp). The tests do not use it.
  fortunes
  # The King James Bible and the `bible` program that prints it:
  # recur-train-char --data=kjv, long documents. The tests do not use it.
  bible-kjv
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all build dependencies present (LLVM/MLIR 22, clang-22, ninja, cmake)."
  exit 0
fi

echo "install-deps: installing missing Debian packages: ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  SUDO="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "install-deps: done."
