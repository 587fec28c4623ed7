#!/usr/bin/env python3
"""GPU peers of Recur's CUDA kernels (NVIDIA H100/H200), float32 unless noted.

copy    dst.copy_(src), B*T*C float32 and complex64: the scan's bandwidth
        reference (GB/s counts bytes read + written).
scan    h_t = a_t h_{t-1} + x_t along T of [B,T,C], float32 and complex64:
        associative_scan compiled, else a compiled Hillis-Steele doubling
        scan (torch_ref); GB/s = 3*B*T*C*elem_bytes / time.
gla     o_t = q_t S_t, S_t = diag(a_t) S_{t-1} + k_t^T v_t, no scale: fla's
        chunk_gla (g = log a) with Triton's default float32 dots (TF32; or
        with --gla-dot ieee, exact), fused_recurrent_gla (forward, no dots).
window  causal sliding-window softmax attention (p-W < j <= p, W=512, scale
        0.125): compiled FlexAttention with a block mask (float32, bfloat16),
        SDPA with a dense boolean mask (forward only).
FLOPs: gla 4*B*H*T*dk*dv, window 4*B*H*T*W*d forward, 2x that backward. Each
peer is checked against float64 on a small shape (err = max|peer - ref|
/ max|ref|). Time = median of --reps CUDA-event timed calls after 3 warm-ups,
L2 flushed before each; a backward is timed alone (autograd.grad with
retain_graph after an untimed forward) unless its line says "fwd+bwd minus
fwd". Exit status 1 if any peer failed or did not validate. On the GPU:

  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
      --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
  python3 bench/gpu_peers.py [--scan B,T,C] [--gla B,T] [--window B,T]
      [--reps N] [--only copy,scan,gla,window] [--quick] [--json PATH]
      [--gla-dot tf32|ieee]     (exact fla: --only gla --gla-dot ieee)
"""

import argparse
import json
import math
import os
import statistics
import sys
import time

p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
p.add_argument("--scan", default="16,8192,1024", help="B,T,C")
p.add_argument("--gla", default="4,4096", help="B,T")
p.add_argument("--window", default="4,4096", help="B,T")
p.add_argument("--reps", type=int, default=20)
p.add_argument("--json", help="write the results, a JSON list, to this file")
p.add_argument("--only", default="copy,scan,gla,window")
p.add_argument("--quick", action="store_true", help="tiny shapes (smoke test)")
p.add_argument("--gla-dot", default="tf32", choices=["tf32", "ieee"],
               help="fla's float32 dots: Triton's default (tf32) or exact")
ARGS = p.parse_args()
if ARGS.gla_dot == "ieee":  # read by Triton when it compiles a kernel
    os.environ["TRITON_F32_DEFAULT"] = "ieee"

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

DEV = os.environ.get("GPU_PEERS_DEVICE", "cuda")  # "cpu": smoke tests only
F64, C128, SCALE = torch.float64, torch.complex128, 0.125
RESULTS, BAD = [], []
for knob in ("cache_size_limit", "recompile_limit"):  # flex: up to 8 graphs
    if hasattr(torch._dynamo.config, knob):
        setattr(torch._dynamo.config, knob, 64)


def sizes(text, n):
    vals = [int(v) for v in text.split(",")]
    assert len(vals) == n, f"expected {n} comma-separated sizes: {text}"
    return vals


def first_line(exc):
    return (f"{type(exc).__name__}: {exc}".strip().splitlines() or ["?"])[0][:300]


def rel_err(got, want):
    """max |got - want| / max |want| in float64 (complex: moduli)."""
    return ((got.detach().to(want.dtype) - want).abs().max()
            / want.abs().max()).item()


def record(case, impl, ms, shape, dtype, err, tol, unit, amount, note=""):
    """One result; unit "GBps" (amount = bytes) or "TFLOPs" (amount = FLOPs)."""
    valid = err <= tol
    rate = amount / ms / (1e6 if unit == "GBps" else 1e9)
    RESULTS.append({"case": case, "impl": impl, "ms": round(ms, 4),
                    unit: round(rate, 3), "shape": shape, "dtype": dtype,
                    "err": err, "tol": tol, "valid": valid, "note": note})
    if not valid:
        BAD.append(f"{case}/{impl}/{dtype}")
    print(f"{case:10} {impl:20} {dtype:9} {shape:28} {ms:9.3f} ms {rate:9.2f} "
          f"{unit}  err {err:.1e}{'' if valid else ' INVALID'}  {note}",
          flush=True)


def failed(case, impl, exc):
    BAD.append(f"{case}/{impl}")
    RESULTS.append({"case": case, "impl": impl, "error": first_line(exc)})
    print(f"{case} {impl}: FAILED: {first_line(exc)}", flush=True)


def time_ms(fn, reps, warmup=3):
    """Median of reps calls of fn (CUDA events, L2 flushed before each)."""
    for _ in range(warmup):
        fn()
    if DEV != "cuda":
        ts = []
        for _ in range(reps):
            t0 = time.perf_counter()
            fn()
            ts.append((time.perf_counter() - t0) * 1e3)
        return statistics.median(ts)
    flush = torch.empty(256 << 20, dtype=torch.int8, device=DEV)
    events = [[torch.cuda.Event(enable_timing=True) for _ in range(2)]
              for _ in range(reps)]
    torch.cuda.synchronize()
    for start, end in events:
        flush.zero_()
        start.record()
        fn()
        end.record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in events)


def time_fwd(fn, inputs):
    with torch.no_grad():
        return time_ms(lambda: fn(*inputs), ARGS.reps)


def time_bwd(fn, inputs):
    """Backward of sum(fn(*inputs) * do) w.r.t. every input -> (ms, how)."""
    xs = [x.detach().requires_grad_(True) for x in inputs]
    out = fn(*xs)
    do = torch.randn_like(out)
    try:
        return time_ms(lambda: torch.autograd.grad(out, xs, do, retain_graph=True),
                       ARGS.reps), "bwd alone"
    except Exception as exc:  # noqa: BLE001 - e.g. no retain_graph support
        out = None  # free the retained graph
        fwd = time_ms(lambda: fn(*xs), ARGS.reps)
        both = time_ms(lambda: torch.autograd.grad(fn(*xs), xs, do), ARGS.reps)
        return both - fwd, f"fwd+bwd minus fwd ({first_line(exc)[:60]})"


def grad_err(fn, ref, inputs):
    """Worst rel_err of the input gradients of sum(fn(*x) * do), ref in f64."""
    xs = [x.detach().clone().requires_grad_(True) for x in inputs]
    out = fn(*xs)
    do = torch.randn_like(out)
    got = torch.autograd.grad(out, xs, do)
    x64 = [x.detach().to(F64).requires_grad_(True) for x in inputs]
    want = torch.autograd.grad(ref(*x64), x64, do.to(F64))
    return max(rel_err(g, w) for g, w in zip(got, want))


def uniform(shape, lo, hi):
    return lo + (hi - lo) * torch.rand(shape, device=DEV)


def run_copy():
    B, T, C = sizes(ARGS.scan, 3)
    for dtype in (torch.float32, torch.complex64):
        name = str(dtype)[6:]
        try:
            src = torch.randn(B, T, C, dtype=dtype, device=DEV)
            dst = torch.empty_like(src)
            ms = time_ms(lambda: dst.copy_(src), ARGS.reps)
            record("copy", "torch_copy_", ms, f"B={B} T={T} C={C}", name,
                   0.0 if torch.equal(dst, src) else 1.0, 0.0, "GBps",
                   2 * src.nbytes)
            src = dst = None
        except Exception as exc:  # noqa: BLE001
            failed("copy", f"torch_copy_ {name}", exc)


# --- scan: (a1, x1) then (a2, x2) combine to (a1 a2, a2 x1 + x2) ---------------

def scan_inputs(B, T, C, cplx):
    mag, x = uniform((B, T, C), 0.9, 0.999), uniform((B, T, C), -1, 1)
    if not cplx:
        return mag, x
    return (torch.polar(mag, uniform((B, T, C), -math.pi, math.pi)),
            torch.complex(x, uniform((B, T, C), -1, 1)))


def scan_ref64(a, x):
    a, x = (t.to(C128 if t.is_complex() else F64) for t in (a, x))
    h, ys = torch.zeros_like(x[:, 0]), []
    for t in range(x.shape[1]):
        h = a[:, t] * h + x[:, t]
        ys.append(h)
    return torch.stack(ys, 1)


def doubling(a, x):
    """Hillis-Steele over dim 1: log2(T) steps combining (a, x)[t - d] into
    (a, x)[t] for every t >= d, d = 1, 2, 4, ..."""
    T, d = x.shape[1], 1
    while d < T:
        x = torch.cat([x[:, :d], x[:, d:] + a[:, d:] * x[:, :-d]], 1)
        if 2 * d < T:
            a = torch.cat([a[:, :d], a[:, d:] * a[:, :-d]], 1)
        d *= 2
    return x


def assoc_real(a, x):
    from torch._higher_order_ops.associative_scan import associative_scan
    return associative_scan(lambda l, r: (l[0] * r[0], r[0] * l[1] + r[1]),
                            (a, x), dim=1, combine_mode="pointwise")[1]


def assoc_pairs(ar, ai, xr, xi):
    """The complex scan on real and imaginary parts (inductor has no complex)."""
    from torch._higher_order_ops.associative_scan import associative_scan

    def combine(l, r):
        return (l[0] * r[0] - l[1] * r[1], l[0] * r[1] + l[1] * r[0],
                r[0] * l[2] - r[1] * l[3] + r[2], r[0] * l[3] + r[1] * l[2] + r[3])
    ys = associative_scan(combine, (ar, ai, xr, xi), 1, combine_mode="pointwise")
    return torch.stack((ys[2], ys[3]), -1)


def scan_methods(cplx):
    if cplx:
        pairs = torch.compile(assoc_pairs, dynamic=False)

        def assoc(a, x):  # view_as_real/complex are free views
            av, xv = torch.view_as_real(a), torch.view_as_real(x)
            return torch.view_as_complex(pairs(av[..., 0], av[..., 1],
                                               xv[..., 0], xv[..., 1]))
        yield "associative_scan compiled on re/im", assoc
    else:
        yield "associative_scan compiled", torch.compile(assoc_real, dynamic=False)
    yield "doubling compiled", torch.compile(doubling, dynamic=False)
    yield "doubling eager", doubling


def run_scan():
    B, T, C = sizes(ARGS.scan, 3)
    for case, cplx in (("scan_f32", False), ("scan_c64", True)):
        small = scan_inputs(2, 300, 64, cplx)
        want = scan_ref64(*small)
        big = scan_inputs(B, T, C, cplx)
        done, skipped = 0, ""
        for method, fn in scan_methods(cplx):  # the first that works is torch_ref
            try:
                with torch.no_grad():
                    err = rel_err(fn(*small), want)
                if err > 1e-4:
                    raise RuntimeError(f"err {err:.1e} > 1e-4")
                ms = time_fwd(fn, big)
            except Exception as exc:  # noqa: BLE001 - try the next method
                skipped += f"; not {method}: {first_line(exc)[:150]}"
                continue
            record(case, "torch_doubling" if done else "torch_ref", ms,
                   f"B={B} T={T} C={C}", str(big[1].dtype)[6:], err, 1e-4,
                   "GBps", 3 * big[1].nbytes, method + ("" if done else skipped))
            done += 1
            if method.startswith("doubling"):
                break
        if not done:
            failed(case, "torch_ref", RuntimeError(skipped[2:]))
        del big


# --- gla ----------------------------------------------------------------------

def gla_ref64(q, k, v, g):
    """[B,H,T,*] float64: S_t = diag(exp g_t) S_{t-1} + k_t^T v_t, o_t = q_t S_t."""
    B, H, T, dk = q.shape
    a, S, out = g.exp(), q.new_zeros(B, H, dk, v.shape[-1]), []
    for t in range(T):
        S = a[:, :, t, :, None] * S + k[:, :, t, :, None] * v[:, :, t, None, :]
        out.append((q[:, :, t, None, :] @ S).squeeze(-2))
    return torch.stack(out, 2)


def gla_inputs(B, H, T, d):
    """q, k, v ~ N(0, 0.5) and g = log a, a in [0.9, 0.999), as fla's [B,T,H,d]."""
    q, k, v = (0.5 * torch.randn(B, T, H, d, device=DEV) for _ in range(3))
    return q, k, v, uniform((B, T, H, d), 0.9, 0.999).log()


def bhtd(fn):
    """fn of [B,T,H,d] tensors as a function of [B,H,T,d] tensors."""
    return lambda *xs: fn(*(x.transpose(1, 2) for x in xs)).transpose(1, 2)


def run_gla():
    """Each fla kernel is timed before it is checked: Triton's autotuner keys
    leave out T, so the configs it picks at the timed shape serve the check
    (at dk = dv = 64 too, so that the check runs exactly those configs)."""
    B, T = sizes(ARGS.gla, 2)
    H, d, dot = 8, 64, ARGS.gla_dot
    shape, flops = f"B={B} H={H} T={T} dk={d} dv={d}", 4 * B * H * T * d * d
    tol = 1e-3 if dot == "ieee" else 4e-3  # TF32 operands: ~1.5e-3 expected
    impl = f"fla_chunk_{dot}"
    try:
        import fla
        from fla.ops.gla import chunk_gla
        print(f"fla {fla.__version__}, float32 dots {dot}", flush=True)

        def chunk(q, k, v, g):
            return chunk_gla(q, k, v, g, scale=1.0, initial_state=None,
                             output_final_state=False)[0]
        big = gla_inputs(B, H, T, d)
        ms = time_fwd(chunk, big)
        small = [x.transpose(1, 2) for x in gla_inputs(1, 2, 130, d)]
        want = gla_ref64(*(x.to(F64) for x in small))
        with torch.no_grad():
            err = rel_err(bhtd(chunk)(*small), want)
        record("gla_fwd", impl, ms, shape, "float32", err, tol, "TFLOPs",
               flops, f"chunk_gla on [B,T,H,d], dots {dot}")
    except Exception as exc:  # noqa: BLE001
        failed("gla_fwd", impl, exc)
        failed("gla_bwd", impl, exc)
        return
    try:
        ms, how = time_bwd(chunk, big)
        err = grad_err(bhtd(chunk), gla_ref64, small)
        record("gla_bwd", impl, ms, shape, "float32", err, 10 * tol, "TFLOPs",
               2 * flops, f"dq,dk,dv,dg; {how}; dots {dot}")
    except Exception as exc:  # noqa: BLE001
        failed("gla_bwd", impl, exc)
    try:
        from fla.ops.gla import fused_recurrent_gla
    except ImportError:
        return

    def recurrent(q, k, v, g):
        return fused_recurrent_gla(q, k, v, gk=g, scale=1.0)[0]
    try:
        ms = time_fwd(recurrent, big)
        with torch.no_grad():
            err = rel_err(bhtd(recurrent)(*small), want)
        record("gla_fwd", "fla_fused_recurrent", ms, shape, "float32", err,
               1e-3, "TFLOPs", flops, "no dots")
    except Exception as exc:  # noqa: BLE001
        failed("gla_fwd", "fla_fused_recurrent", exc)


# --- window -------------------------------------------------------------------

def band(T, W):
    """True where key j is visible from query i: i - W < j <= i."""
    i = torch.arange(T, device=DEV)
    return (i[None, :] <= i[:, None]) & (i[:, None] - i[None, :] < W)


def window_ref64(W):
    def ref(q, k, v):
        s = (q @ k.transpose(-1, -2) * SCALE).masked_fill(~band(q.shape[-2], W),
                                                           -math.inf)
        return torch.softmax(s, -1) @ v
    return ref


def run_window():
    B, T = sizes(ARGS.window, 2)
    H, d, W, small_T, small_W = 8, 64, 64 if ARGS.quick else 512, 200, 64
    shape, flops = f"B={B} H={H} T={T} W={W} d={d}", 4 * B * H * T * W * d
    small = [uniform((1, 2, small_T, d), -1, 1) for _ in range(3)]
    ref = window_ref64(small_W)
    want = ref(*(x.to(F64) for x in small))
    big = [uniform((B, H, T, d), -1, 1) for _ in range(3)]
    flex_error = None
    try:
        from torch.nn.attention.flex_attention import (create_block_mask,
                                                       flex_attention)
        flex = torch.compile(flex_attention, dynamic=False)

        def flex_fn(length, width):
            def mask_mod(b, h, q_idx, kv_idx):
                return (q_idx >= kv_idx) & (q_idx - kv_idx < width)
            mask = create_block_mask(mask_mod, None, None, length, length,
                                     device=DEV)
            return lambda q, k, v: flex(q, k, v, block_mask=mask, scale=SCALE)
        small_fn, big_fn = flex_fn(small_T, small_W), flex_fn(T, W)
    except Exception as exc:  # noqa: BLE001
        flex_error = exc

    def sdpa(length, width):
        mask = band(length, width)
        return lambda q, k, v: F.scaled_dot_product_attention(
            q, k, v, attn_mask=mask, scale=SCALE)
    for dtype, tol in ((torch.float32, 1e-3), (torch.bfloat16, 3e-2)):
        name = str(dtype)[6:]
        sm, bg = [x.to(dtype) for x in small], [x.to(dtype) for x in big]
        try:
            if flex_error:
                raise flex_error
            with torch.no_grad():
                err = rel_err(small_fn(*sm), want)
            record("window_fwd", "flex_attention", time_fwd(big_fn, bg), shape,
                   name, err, tol, "TFLOPs", flops, "compiled, block mask")
            fwd_ok = True
        except Exception as exc:  # noqa: BLE001
            failed("window_fwd", f"flex_attention {name}", exc)
            fwd_ok = False
        try:
            if not fwd_ok:
                raise RuntimeError("no forward")
            err = grad_err(small_fn, ref, sm)
            ms, how = time_bwd(big_fn, bg)
            record("window_bwd", "flex_attention", ms, shape, name, err,
                   3 * tol, "TFLOPs", 2 * flops, f"dq,dk,dv; {how}")
        except Exception as exc:  # noqa: BLE001
            failed("window_bwd", f"flex_attention {name}", exc)
        try:
            with torch.no_grad():
                err = rel_err(sdpa(small_T, small_W)(*sm), want)
            record("window_fwd", "sdpa_bool_mask", time_fwd(sdpa(T, W), bg),
                   shape, name, err, tol, "TFLOPs", flops, "dense [T,T] mask")
        except Exception as exc:  # noqa: BLE001
            failed("window_fwd", f"sdpa_bool_mask {name}", exc)


def main():
    if ARGS.quick:
        ARGS.scan, ARGS.gla, ARGS.window = "2,256,64", "1,256", "1,256"
        ARGS.reps = min(ARGS.reps, 3)
    torch.manual_seed(1234)
    import triton
    mm = torch.backends.cuda.matmul
    gpu = torch.cuda.get_device_name() if DEV == "cuda" else DEV
    print(f"GPU: {gpu}; torch {torch.__version__}, triton {triton.__version__}; "
          f"torch matmul fp32 precision "
          f"{getattr(mm, 'fp32_precision', None) or mm.allow_tf32}; "
          f"reps {ARGS.reps}", flush=True)
    cases = {"copy": run_copy, "scan": run_scan, "gla": run_gla,
             "window": run_window}
    for name in ARGS.only.split(","):
        t0 = time.time()
        try:
            cases[name]()
        except Exception as exc:  # noqa: BLE001 - e.g. out of memory in setup
            failed(name, "setup", exc)
        if DEV == "cuda":
            torch.cuda.empty_cache()
        print(f"[{name}: {time.time() - t0:.0f} s]", flush=True)
    if ARGS.json:
        with open(ARGS.json, "w") as f:
            json.dump(RESULTS, f, indent=1)
    if BAD:
        print("failed or not validated: " + ", ".join(BAD), flush=True)
    return 1 if BAD else 0


if __name__ == "__main__":
    sys.exit(main())
