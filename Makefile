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

.PHONY: all deps build test demo bench test-gpu gpu-suite bench-gpu test-asan fuzz docs format clean

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
# Then recur-cost: the papers' cost claims (Block-Recurrent vs sliding
# window, MemBART turns, Transformer-XL cached vs recomputed).
BENCH_FLAGS ?=
bench: build
	python3 bench/run.py --build $(BUILD_DIR) $(BENCH_FLAGS)
	$(BUILD_DIR)/bin/recur-cost $(filter --tiny,$(BENCH_FLAGS))

# On a machine with a CUDA GPU and this build: the GPU suite through lit
# (test/Integration/CUDA, feature cuda-gpu: every case of gpu-cases.txt by
# recur-run --target=cuda against the oracle). Fails where lit finds no GPU.
LIT ?= $(LLVM_PREFIX)/bin/lit
test-gpu: build
	@$(LIT) -v $(BUILD_DIR)/test/Integration/CUDA >$(BUILD_DIR)/test-gpu.log 2>&1; \
	  rc=$$?; cat $(BUILD_DIR)/test-gpu.log; \
	  if grep -q '^UNSUPPORTED: .*gpu.test' $(BUILD_DIR)/test-gpu.log; then \
	    echo "make test-gpu: no CUDA GPU here (lit feature cuda-gpu); see docs/cuda.md"; exit 1; \
	  fi; exit $$rc

# The same cases and the GPU benchmark layers as programs without LLVM
# (scripts/gpu-suite.sh prepare): $(BUILD_DIR)/gpu-suite, to copy to a GPU
# machine and run there with `scripts/gpu-suite.sh run DIR`.
gpu-suite: build
	bash scripts/gpu-suite.sh prepare $(BUILD_DIR)

# On a machine with a CUDA GPU: the suite and Recur's kernels timed against
# a device-to-device copy, then the peers (bench/gpu_peers.py: PyTorch,
# flash-linear-attention, FlexAttention) in the same run (docs/performance.md).
bench-gpu: gpu-suite
	bash scripts/gpu-suite.sh run $(BUILD_DIR)/gpu-suite
	python3 bench/gpu_peers.py

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
