#!/usr/bin/env python3
"""Runs a compiled Recur layer through the scalar reference pipeline.

Test utility (no numpy needed): compiles SPEC with recurc (every dim fixed
with -D so shapes are static), feeds the layer deterministic pseudo-random
inputs that are exact in f32 (multiples of 1/64), executes it with
mlir-runner after `recur-opt --recur-reference-to-llvm`, and returns the
outputs as Python floats/complex numbers, read back bit-exactly (each value
is printed as the i64 bit pattern of its f64 widening).

    import spec_harness as h
    run = h.run_layer(tools, "spec.recur", "GateLoop", {"B": 2, "T": 5}, seed=1)
    run.inputs["x"], run.outputs["y"]   # nested lists, row-major

Integration tests pair it with an independent float64 implementation of the
layer's equations written in plain Python.
"""

import random
import re
import struct
import subprocess
import tempfile
from dataclasses import dataclass, field

TENSOR = r"tensor<((?:[^<>]|<[^<>]*>)*)>"
ARG_RE = re.compile(r"%(arg\d+): " + TENSOR + r"\s*\{([^}]*)\}")
RESULT_RE = re.compile(TENSOR + r"\s*\{([^}]*)\}")
ATTR_RE = re.compile(r'recur\.(\w+) = "([^"]*)"')


@dataclass
class Tools:
    recurc: str
    recur_opt: str
    mlir_runner: str
    runner_libs: str


@dataclass
class Tensor:
    name: str
    role: str
    shape: list
    elem: str  # f32, f64, complex<f32>, complex<f64>

    @property
    def mlir(self):
        dims = "x".join(str(d) for d in self.shape)
        return f"tensor<{dims + 'x' if dims else ''}{self.elem}>"

    @property
    def is_complex(self):
        return self.elem.startswith("complex")

    @property
    def real_elem(self):
        return self.elem[8:-1] if self.is_complex else self.elem


@dataclass
class Run:
    inputs: dict = field(default_factory=dict)
    outputs: dict = field(default_factory=dict)
    ir: str = ""


def parse_type(text):
    parts = text.split("x")
    elem = parts[-1]
    if text.startswith("complex") or "complex<" in text:
        # Shapes never contain 'x' inside the element type except complex.
        m = re.match(r"((?:\d+x)*)(complex<\w+>)$", text)
        dims = [int(d) for d in m.group(1).split("x") if d]
        return dims, m.group(2)
    dims = [int(d) for d in parts[:-1]]
    return dims, elem


def signature(ir, layer):
    m = re.search(r"func\.func @" + re.escape(layer) + r"\((.*?)\)\s*->\s*\((.*?)\)\s*\{",
                  ir, re.S)
    if not m:
        m1 = re.search(r"func\.func @" + re.escape(layer) + r"\((.*?)\)\s*->\s*(" + TENSOR + r"\s*\{[^}]*\})\s*\{",
                       ir, re.S)
        if not m1:
            raise RuntimeError(f"no function @{layer} in the IR")
        args_text, results_text = m1.group(1), m1.group(2)
    else:
        args_text, results_text = m.group(1), m.group(2)
    args, results = [], []
    for _, ty, attrs in ARG_RE.findall(args_text):
        a = dict(ATTR_RE.findall(attrs))
        shape, elem = parse_type(ty)
        if "?" in ty:
            raise RuntimeError("fix every dim with -D: " + ty)
        args.append(Tensor(a["name"], a["role"], shape, elem))
    for ty, attrs in RESULT_RE.findall(results_text):
        a = dict(ATTR_RE.findall(attrs))
        shape, elem = parse_type(ty)
        results.append(Tensor(a["name"], a["role"], shape, elem))
    return args, results


def numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def nest(flat, shape):
    if not shape:
        return flat[0]
    if len(shape) == 1:
        return list(flat)
    step = numel(shape[1:])
    return [nest(flat[i * step:(i + 1) * step], shape[1:])
            for i in range(shape[0])]


def fmt(v):
    return repr(float(v))


def dense(values, t):
    if t.is_complex:
        body = ", ".join(f"({fmt(v.real)}, {fmt(v.imag)})" for v in values)
    else:
        body = ", ".join(fmt(v) for v in values)
    return f"dense<[{body}]> : tensor<{numel(t.shape)}x{t.elem}>"


def run_layer(tools, spec, layer, dims, seed=0, values=None, scale=1.0):
    """Compiles and runs `layer`; `values` maps input names to flat lists
    that replace the random ones."""
    defines = [f"-D{k}={v}" for k, v in dims.items()]
    ir = subprocess.run([tools.recurc, spec, "--emit=mlir", "--layer", layer]
                        + defines, check=True, capture_output=True,
                        text=True).stdout
    args, results = signature(ir, layer)
    rng = random.Random(seed)
    run = Run(ir=ir)
    lines = []
    for i, t in enumerate(args):
        n = numel(t.shape)
        if values and t.name in values:
            flat = values[t.name]
        elif t.is_complex:
            flat = [complex(rng.randint(-64, 64) / 64 * scale,
                            rng.randint(-64, 64) / 64 * scale)
                    for _ in range(n)]
        else:
            flat = [rng.randint(-64, 64) / 64 * scale for _ in range(n)]
        run.inputs[t.name] = nest(flat, t.shape)
        lines.append(f"    %flat{i} = arith.constant {dense(flat, t)}")
        shape = ", ".join(str(d) for d in t.shape)
        lines.append(f"    %shape{i} = arith.constant dense<[{shape}]> : "
                     f"tensor<{len(t.shape)}xindex>" if t.shape else "")
        if t.shape:
            lines.append(f"    %in{i} = tensor.reshape %flat{i}(%shape{i}) : "
                         f"(tensor<{n}x{t.elem}>, tensor<{len(t.shape)}xindex>) "
                         f"-> {t.mlir}")
        else:
            lines.append(f"    %in{i} = tensor.collapse_shape %flat{i} [] : "
                         f"tensor<1x{t.elem}> into {t.mlir}")
    arg_list = ", ".join(f"%in{i}" for i in range(len(args)))
    arg_types = ", ".join(t.mlir for t in args)
    res_types = ", ".join(t.mlir for t in results)
    lines.append(f"    %r:{len(results)} = call @{layer}({arg_list}) : "
                 f"({arg_types}) -> ({res_types})")
    for j, t in enumerate(results):
        rank = len(t.shape)
        dims_ = ", ".join(f"d{k}" for k in range(rank))
        ident = f"affine_map<({dims_}) -> ({dims_})>"
        iters = ", ".join(['"parallel"'] * rank)
        parts = ["re", "im"] if t.is_complex else ["re"]
        for p in parts:
            i64 = Tensor("", "", t.shape, "i64").mlir
            lines.append(f"    %e{j}{p} = tensor.empty() : {i64}")
            # Widen each element to f64 (taking the real or imaginary part
            # of a complex one), then print its bits.
            conv, src = [], "%in"
            if t.is_complex:
                conv.append(f"%c = complex.{p} %in : {t.elem}")
                src = "%c"
            if t.real_elem != "f64":
                conv.append(f"%w = arith.extf {src} : {t.real_elem} to f64")
                src = "%w"
            conv.append(f"%bits = arith.bitcast {src} : f64 to i64")
            conv = "\n      ".join(conv)
            lines.append(
                f"    %b{j}{p} = linalg.generic {{indexing_maps = [{ident}, {ident}], "
                f"iterator_types = [{iters}]}} ins(%r#{j} : {t.mlir}) "
                f"outs(%e{j}{p} : {i64}) {{\n"
                f"    ^bb0(%in: {t.elem}, %out: i64):\n"
                f"      {conv}\n"
                f"      linalg.yield %bits : i64\n"
                f"    }} -> {i64}")
            lines.append(f"    %u{j}{p} = tensor.cast %b{j}{p} : {i64} "
                         f"to tensor<*xi64>")
            lines.append(f"    call @printMemrefI64(%u{j}{p}) : (tensor<*xi64>) -> ()")
    main = ("  func.func private @printMemrefI64(tensor<*xi64>)\n"
            "  func.func @main() {\n" + "\n".join(l for l in lines if l) +
            "\n    return\n  }\n")
    module = ir.rstrip()
    assert module.endswith("}")
    module = module[:-1] + main + "}\n"
    with tempfile.NamedTemporaryFile("w", suffix=".mlir", delete=False) as f:
        f.write(module)
        path = f.name
    lowered = subprocess.run([tools.recur_opt, path, "--recur-reference-to-llvm"],
                             check=True, capture_output=True, text=True).stdout
    out = subprocess.run([tools.mlir_runner, "-e", "main",
                          "-entry-point-result=void",
                          f"-shared-libs={tools.runner_libs}"],
                         input=lowered, check=True, capture_output=True,
                         text=True).stdout
    blocks = out.split("Unranked Memref")[1:]
    idx = 0
    for t in results:
        parts = []
        for _ in (["re", "im"] if t.is_complex else ["re"]):
            data = blocks[idx].split("data =", 1)[1]
            idx += 1
            ints = [int(x) for x in re.findall(r"-?\d+", data)]
            parts.append([struct.unpack("<d", struct.pack("<q", v))[0]
                          for v in ints])
        flat = ([complex(a, b) for a, b in zip(*parts)] if t.is_complex
                else parts[0])
        key = t.name if t.role == "output" else "next_" + t.name
        run.outputs[key] = nest(flat, t.shape)
    return run


def flatten(x):
    if isinstance(x, list):
        out = []
        for e in x:
            out.extend(flatten(e))
        return out
    return [x]


def max_rel_err(got, want):
    """max |got - want| / max(max |want|, tiny): a norm-wise relative error,
    which stays meaningful where individual entries cross zero."""
    g, w = flatten(got), flatten(want)
    assert len(g) == len(w), (len(g), len(w))
    scale = max((abs(v) for v in w), default=0.0) or 1e-300
    return max((abs(a - b) for a, b in zip(g, w)), default=0.0) / scale


def tools_from_args(argv):
    """Parses `--recur-bin DIR --llvm-bin DIR --llvm-lib DIR --spec FILE`."""
    import argparse
    import os
    p = argparse.ArgumentParser()
    p.add_argument("--recur-bin", required=True)
    p.add_argument("--llvm-bin", required=True)
    p.add_argument("--llvm-lib", required=True)
    p.add_argument("--spec", required=True)
    a = p.parse_args(argv)
    libs = ",".join(os.path.join(a.llvm_lib, n) for n in
                    ("libmlir_runner_utils.so", "libmlir_c_runner_utils.so"))
    return Tools(os.path.join(a.recur_bin, "recurc"),
                 os.path.join(a.recur_bin, "recur-opt"),
                 os.path.join(a.llvm_bin, "mlir-runner"), libs), a.spec
