# Recur: the two set-up commands are `make demo` and `make test`.
# Both install missing dependencies first (scripts/install-deps.sh) and build
# into build/, with the tools in build/bin/.

LLVM_PREFIX ?= /usr/lib/llvm-22
BUILD_DIR   ?= build
ASAN_DIR    ?= build-asan
FUZZ_DIR    ?= build-fuzz
FUZZ_SECONDS ?= 60
CMAKE_FLAGS  = -G Ninja \
               -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
               -DMLIR_DIR=$(LLVM_PREFIX)/lib/cmake/mlir

.PHONY: all deps build test demo bench test-asan fuzz docs format clean

all: build

deps:
	@bash scripts/install-deps.sh

$(BUILD_DIR)/build.ninja:
	cmake -S . -B $(BUILD_DIR) $(CMAKE_FLAGS) -DCMAKE_BUILD_TYPE=Release

$(ASAN_DIR)/build.ninja:
	cmake -S . -B $(ASAN_DIR) $(CMAKE_FLAGS) -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DRECUR_ENABLE_SANITIZERS=ON

build: deps $(BUILD_DIR)/build.ninja
	ninja -C $(BUILD_DIR)

# lit (dialect, conversion, integration, lint) + GoogleTest unit tests.
test: build
	ninja -C $(BUILD_DIR) check-recur

# Compiles GateLoop and a Block-Recurrent layer for the CPU, runs them
# against the float64 oracle and explains what the numbers mean.
demo: build
	@bash scripts/demo.sh $(BUILD_DIR)

# The CPU benchmarks with the machine's limits and the peers in one run
# (bench/run.py; docs/performance.md). BENCH_FLAGS=--tiny runs each once at a
# tiny size, --no-peers skips ggml and PyTorch (scripts/bench-peers.sh).
BENCH_FLAGS ?=
bench: build
	python3 bench/run.py --build $(BUILD_DIR) $(BENCH_FLAGS)

# The whole suite again with the project's own code under ASan + UBSan.
test-asan: deps $(ASAN_DIR)/build.ninja
	ninja -C $(ASAN_DIR) check-recur

# libFuzzer on the front end (recur-fuzz, ASan + UBSan) for FUZZ_SECONDS;
# fails on any crash, leak or hang (scripts/fuzz-frontend.sh).
fuzz: deps
	FUZZ_BUILD_DIR=$(FUZZ_DIR) LLVM_PREFIX=$(LLVM_PREFIX) \
	  bash scripts/fuzz-frontend.sh $(FUZZ_SECONDS)

# Generated op and pass reference (build/docs/Recur/*.md).
docs: build
	ninja -C $(BUILD_DIR) mlir-doc
	@echo "docs: $(BUILD_DIR)/docs/Recur/"

format:
	find dialects include lib tools test/unit examples \( -name '*.cpp' -o -name '*.h' \) \
	  | xargs clang-format-22 -i

clean:
	rm -rf $(BUILD_DIR) $(ASAN_DIR) $(FUZZ_DIR)
