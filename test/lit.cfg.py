# -*- Python -*-
# lit configuration for the Recur regression suite.

import os
import shutil

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "RECUR"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test", ".recur"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.recur_obj_root, "test")
# Inputs/ holds fixtures that tests feed to tools; unit/ is run by its own
# lit.cfg.py through the GoogleTest format.
config.excludes = ["Inputs", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py"]

# FileCheck is strict everywhere: variables are scoped to a CHECK-LABEL block
# and every prefix a RUN line names must be used.
config.environment["FILECHECK_OPTS"] = (
    "-enable-var-scope --allow-unused-prefixes=false"
)

# Under `make test-asan` only the project's code is instrumented. LLVM's
# headers poison the free parts of BumpPtrAllocator slabs in that code, while
# the uninstrumented libMLIR.so allocates from the same slabs without
# unpoisoning, so every such read would be reported. Ignoring manual
# poisoning keeps ASan's checks of our own memory accesses.
config.environment["ASAN_OPTIONS"] = "allow_user_poisoning=0"

llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

runner_libs = ",".join(
    os.path.join(config.llvm_lib_dir, lib)
    for lib in ("libmlir_runner_utils.so", "libmlir_c_runner_utils.so")
)
config.substitutions.append(("%mlir_runner_libs", runner_libs))
config.substitutions.append(("%recur_src_root", config.recur_src_root))
config.substitutions.append(("%recur_tools_dir", config.recur_tools_dir))
config.substitutions.append(("%llvm_tools_dir", config.llvm_tools_dir))
config.substitutions.append(("%llvm_lib_dir", config.llvm_lib_dir))

# C programs that use generated layers: %recur_cc compiles and links one
# with librecur_rt, OpenMP and libm (instrumented like the runtime under
# make test-asan, whose librecur_rt needs the sanitizer runtimes).
sanitize = (
    " -fsanitize=address,undefined"
    if config.recur_sanitizers.upper() in ("ON", "1", "TRUE", "YES")
    else ""
)
config.substitutions.append(
    (
        "%recur_cc",
        f"{config.recur_c_compiler} -std=c11 -Wall -Werror"
        f" -I{config.recur_src_root}/include{sanitize}",
    )
)
# A recur-case program (tools/recur-case): %recur_cxx LAYER.o SHIM.o
# %recur_case_libs -o PROGRAM.
config.substitutions.append(("%recur_cxx", f"{config.recur_cxx_compiler}{sanitize}"))
config.substitutions.append(("%recur_sanitize_flags", sanitize.strip()))
# The tools are instrumented (make test-asan): a test whose length is the
# kernels' (which are JIT-compiled, never instrumented) says
# UNSUPPORTED: sanitizers.
if sanitize:
    config.available_features.add("sanitizers")
config.substitutions.append(
    (
        "%recur_case_libs",
        f"{config.recur_lib_dir}/librecur_case.a"
        f" {config.recur_lib_dir}/librecur_rt.a -fopenmp -ldl -lmvec -lm",
    )
)
config.substitutions.append(
    (
        "%recur_link",
        f"-L{config.recur_lib_dir} -lrecur_rt -Wl,-rpath,{config.recur_lib_dir}"
        " -fopenmp -lm",
    )
)

tools = [
    ToolSubst("recur-opt", unresolved="fatal"),
    ToolSubst("recurc", unresolved="fatal"),
    ToolSubst("recur-run", unresolved="fatal"),
    ToolSubst("recur-train-horizon", unresolved="fatal"),
    ToolSubst("recur-train-char", unresolved="fatal"),
    ToolSubst("recur-bench", unresolved="fatal"),
    ToolSubst("recur-infer", unresolved="fatal"),
    ToolSubst("recur-cost", unresolved="fatal"),
    ToolSubst("mlir-runner", unresolved="fatal"),
]
llvm_config.add_tool_substitutions(
    tools, [config.recur_tools_dir, config.llvm_tools_dir]
)

# The CUDA toolkit's ptxas and fatbinary, which recurc --target=cuda runs:
# tests that assemble PTX say REQUIRES: cuda-toolkit. A machine without the
# toolkit skips them (this project's machines have it).
_cuda = os.environ.get("CUDA_PATH") or "/usr/local/cuda"
_ptxas = shutil.which("ptxas") or os.path.join(_cuda, "bin", "ptxas")
if os.path.exists(_ptxas) and os.path.exists(
    os.path.join(os.path.dirname(_ptxas), "fatbinary")
):
    config.available_features.add("cuda-toolkit")
    config.environment["CUDA_PATH"] = os.path.dirname(os.path.dirname(_ptxas))

# A CUDA GPU this process can use (the driver loads, cuInit succeeds and it
# sees a device): tests that run kernels on it say REQUIRES: cuda-gpu
# (`make test-gpu`). Machines without one skip them.
def _has_cuda_gpu():
    import ctypes

    try:
        cuda = ctypes.CDLL(os.environ.get("RECUR_CUDA_DRIVER", "libcuda.so.1"))
        count = ctypes.c_int(0)
        return cuda.cuInit(0) == 0 and (
            cuda.cuDeviceGetCount(ctypes.byref(count)) == 0 and count.value > 0
        )
    except OSError:
        return False


if "cuda-toolkit" in config.available_features and _has_cuda_gpu():
    config.available_features.add("cuda-gpu")
