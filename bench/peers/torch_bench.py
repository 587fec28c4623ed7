#!/usr/bin/env python3
"""PyTorch CPU peers of the benchmark cases in bench/layers.recur.

    torch_bench.py --case scan|gla|window [--tiny] [--threads N] [--runs N]
                   [--seq T]  (T of the gla and window cases: 4096, 8192)

Prints one JSON object per line on stdout (bench/peers/README.md lists the
fields); progress and diagnostics go to stderr. Run by
scripts/bench-peers.sh from a virtual environment outside the tree.

Every implementation is first run at the tiny shape and compared with a
float64 recurrent loop written from the layer's equations ("check":
max |peer - ref| / max |ref|, as recur-run's max_rel_err; for a backward
line, the worst such error over the input gradients). It is then timed at
the requested shape: one warm-up call (which also compiles, for the compiled
implementations), then the median of --runs calls. Forward times are taken
under torch.no_grad(); a backward line times forward + loss.backward() of
loss = sum(out * cotangent) and reports bwd = fwdbwd - fwd as "ms".
"""

import argparse
import json
import math
import statistics
import sys
import time

import torch
import torch.nn.functional as F

SEED = 1234


def log(msg):
    print(f"torch_bench: {msg}", file=sys.stderr, flush=True)


def emit(**fields):
    print(json.dumps(fields), flush=True)


def first_line(exc):
    text = f"{type(exc).__name__}: {exc}".strip()
    return text.splitlines()[0][:500] if text else type(exc).__name__


def median_ms(fn, runs):
    fn()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def rel_err(got, want):
    """max |got - want| / max |want|, in float64 (complex: moduli)."""
    got = got.detach().to(want.dtype)
    scale = want.abs().max().item()
    err = (got - want).abs().max().item()
    return err / scale if scale > 0 else err


def grad_rel_err(fn, ref_fn, inputs, cotangent):
    """The worst rel_err over the input gradients of sum(fn(*in) * cot),
    fn in float32 and ref_fn on float64 copies."""
    def grads(f, xs, cot):
        xs = [x.detach().clone().requires_grad_(True) for x in xs]
        (f(*xs) * cot).sum().backward()
        return [x.grad for x in xs]
    got = grads(fn, inputs, cotangent)
    want = grads(ref_fn, [x.double() for x in inputs], cotangent.double())
    return max(rel_err(g, w) for g, w in zip(got, want))


class Bench:
    def __init__(self, args):
        self.args = args

    def result(self, impl, case, shape, ms, check, note, **extra):
        emit(peer="torch", impl=impl, case=case, shape=shape,
             threads=self.args.threads, ms=round(ms, 4), runs=self.args.runs,
             check=None if check is None else float(f"{check:.3g}"),
             note=note, **extra)

    def error(self, impl, case, exc):
        log(f"{impl} {case} failed: {first_line(exc)}")
        emit(peer="torch", impl=impl, case=case, error=first_line(exc))

    def forward(self, impl, case, shape, fn, inputs, check, note):
        """Times fn(*inputs) under no_grad and prints its line."""
        log(f"{impl} {case} {shape}")
        with torch.no_grad():
            ms = median_ms(lambda: fn(*inputs), self.args.runs)
        self.result(impl, case, shape, ms, check, note)
        return ms

    def backward(self, impl, case, shape, fn, inputs, fwd_ms, check, note):
        """Times forward + backward of sum(fn(*inputs) * cotangent) and
        prints bwd = fwdbwd - fwd_ms."""
        log(f"{impl} {case} {shape}")
        params = [x.detach().clone().requires_grad_(True) for x in inputs]
        gen = torch.Generator().manual_seed(SEED + 1)
        with torch.no_grad():
            out = fn(*params)
        cotangent = torch.randn(out.shape, generator=gen, dtype=out.dtype)

        def step():
            for p in params:
                p.grad = None
            (fn(*params) * cotangent).sum().backward()

        fwdbwd = median_ms(step, self.args.runs)
        self.result(impl, case, shape, fwdbwd - fwd_ms, check, note,
                    fwd_ms=round(fwd_ms, 4), fwdbwd_ms=round(fwdbwd, 4))


# --- scan_f32, scan_c64: torch's associative_scan ------------------------------

def scan_combine(left, right):
    a1, x1 = left
    a2, x2 = right
    return a1 * a2, a2 * x1 + x2


def scan_inputs(shape, dtype, gen):
    T, C = shape
    mag = 0.5 + 0.499 * torch.rand(T, C, generator=gen)
    x = 2 * torch.rand(T, C, generator=gen) - 1
    if dtype == torch.complex64:
        phase = (2 * torch.rand(T, C, generator=gen) - 1) * math.pi
        a = torch.polar(mag, phase)
        x = torch.complex(x, 2 * torch.rand(T, C, generator=gen) - 1)
        return a, x
    return mag, x


def scan_reference(a, x):
    a, x = a.to(torch.complex128 if a.is_complex() else torch.float64), \
        x.to(torch.complex128 if x.is_complex() else torch.float64)
    h = torch.zeros_like(x[0])
    out = []
    for t in range(x.shape[0]):
        h = a[t] * h + x[t]
        out.append(h)
    return torch.stack(out)


def run_scan(bench, case, dtype):
    tiny, full = (512, 64), (16384, 1024)
    shape = tiny if bench.args.tiny else full
    shape_str = f"B=1 T={shape[0]} C={shape[1]}"
    impl = "associative_scan"
    note = ("torch._higher_order_ops.associative_scan (a prototype API), "
            "combine_mode='generic', eager: a log-depth odd/even scan over T "
            "of the pairs (a, x) with (a1, x1), (a2, x2) -> (a1 a2, a2 x1 + "
            "x2), so it also forms products of a; [T, C] layout. Its "
            "compiled form (combine_mode='pointwise') is not supported on "
            "CPU")
    try:
        from torch._higher_order_ops.associative_scan import associative_scan

        def fn(a, x):
            return associative_scan(scan_combine, (a, x), dim=0,
                                    combine_mode="generic")[1]
        gen = torch.Generator().manual_seed(SEED)
        a, x = scan_inputs(tiny, dtype, gen)
        with torch.no_grad():
            check = rel_err(fn(a, x), scan_reference(a, x))
        a, x = scan_inputs(shape, dtype, gen)
        bench.forward(impl, case, shape_str, fn, (a, x), check, note)
    except Exception as exc:  # noqa: BLE001 - reported as an error line
        bench.error(impl, case, exc)


# --- gla_fwd, gla_bwd: chunked gated linear attention --------------------------

def gla_chunked(q, k, v, a, chunk=64):
    """S_t = diag(a_t) S_{t-1} + k_t^T v_t, o_t = q_t S_t, S_{-1} = 0, for
    q, k, a [B, H, T, dk] and v [B, H, T, dv], chunk by chunk (Yang et al.
    2023, "Gated Linear Attention Transformers with Hardware-Efficient
    Training", the one-level chunk form). Within a chunk, with b the
    cumulative sum of log a from the chunk start (inclusive):
      o_intra = ((q e^b) (k e^-b)^T masked to r <= m) v
      o_inter = (q e^b) S_prev
      S_next  = diag(e^{b_last}) S_prev + (k e^{b_last - b})^T v
    The state recurrence over chunks is a Python loop of T / chunk steps."""
    B, H, T, dk = q.shape
    dv = v.shape[-1]
    n = T // chunk
    q, k, a = (x.reshape(B, H, n, chunk, dk) for x in (q, k, a))
    v = v.reshape(B, H, n, chunk, dv)
    b = torch.log(a).cumsum(-2)
    qd = q * b.exp()
    kd = k * (-b).exp()
    causal = torch.ones(chunk, chunk, dtype=torch.bool).tril()
    scores = (qd @ kd.transpose(-1, -2)).masked_fill(~causal, 0)
    o = scores @ v
    b_last = b[..., -1:, :]
    update = (k * (b_last - b).exp()).transpose(-1, -2) @ v
    decay = b_last.exp().transpose(-1, -2)
    state = q.new_zeros(B, H, dk, dv)
    prev = []
    for c in range(n):
        prev.append(state)
        state = decay[:, :, c] * state + update[:, :, c]
    o = o + qd @ torch.stack(prev, dim=2)
    return o.reshape(B, H, T, dv)


def gla_recurrent(q, k, v, a):
    """The same recurrence one step at a time (the reference)."""
    B, H, T, dk = q.shape
    state = q.new_zeros(B, H, dk, v.shape[-1])
    out = []
    for t in range(T):
        state = a[:, :, t, :, None] * state + \
            k[:, :, t, :, None] * v[:, :, t, None, :]
        out.append((q[:, :, t, None, :] @ state).squeeze(-2))
    return torch.stack(out, dim=2)


def gla_inputs(B, H, T, d, gen):
    def uniform(lo, hi):
        return lo + (hi - lo) * torch.rand(B, H, T, d, generator=gen)
    return (uniform(-1, 1), uniform(-1, 1), uniform(-1, 1), uniform(0.9, 1))


def run_gla(bench):
    tiny, full = (1, 2, 256, 64), (4, 8, bench.args.seq or 4096, 64)
    B, H, T, d = tiny if bench.args.tiny else full
    shape_str = f"B={B} H={H} T={T} dk={d} dv={d}"
    impl = "chunked_gla"
    note = ("plain-torch chunked GLA, chunk 64, log-space cumulative gates "
            "within a chunk, intra-chunk causal matmul + inter-chunk state "
            "(one-level form: fine for these gates a in [0.9, 1), it "
            "overflows when a chunk's gate product falls below ~e^-80); "
            "autograd backward gives grads for q, k, v, a")
    gen = torch.Generator().manual_seed(SEED)
    small = gla_inputs(*tiny, gen)
    inputs = gla_inputs(B, H, T, d, gen)
    try:
        with torch.no_grad():
            want = gla_recurrent(*(x.double() for x in small))
            check = rel_err(gla_chunked(*small), want)
        fwd_ms = bench.forward(impl, "gla_fwd", shape_str, gla_chunked,
                               inputs, check, note)
    except Exception as exc:  # noqa: BLE001
        bench.error(impl, "gla_fwd", exc)
        bench.error(impl, "gla_bwd", exc)
        return
    try:
        cot = torch.randn(small[0].shape, generator=gen)
        check = grad_rel_err(gla_chunked, gla_recurrent, small, cot)
        bench.backward(impl, "gla_bwd", shape_str, gla_chunked, inputs,
                       fwd_ms, check, note)
    except Exception as exc:  # noqa: BLE001
        bench.error(impl, "gla_bwd", exc)


# --- window_fwd, window_bwd: causal sliding-window softmax attention -----------

def band_mask(T, W):
    """True where key j is visible from query i: i - W < j <= i."""
    i = torch.arange(T)
    return (i[None, :] <= i[:, None]) & (i[:, None] - i[None, :] < W)


def window_reference(q, k, v, W):
    T, d = q.shape[-2], q.shape[-1]
    scores = (q @ k.transpose(-1, -2)) / math.sqrt(d)
    scores = scores.masked_fill(~band_mask(T, W), float("-inf"))
    return torch.softmax(scores, dim=-1) @ v


def window_inputs(H, T, d, gen):
    return tuple(2 * torch.rand(1, H, T, d, generator=gen) - 1
                 for _ in range(3))


def run_window(bench):
    tiny, full = (2, 512, 64, 64), (8, bench.args.seq or 8192, 512, 64)
    H, T, W, d = tiny if bench.args.tiny else full
    shape_str = f"B=1 H={H} T={T} W={W} d={d}"
    gen = torch.Generator().manual_seed(SEED)
    small_H, small_T, small_W, small_d = tiny
    small = window_inputs(small_H, small_T, small_d, gen)
    inputs = window_inputs(H, T, d, gen)
    cot = torch.randn(small[0].shape, generator=gen)
    scale = 1 / math.sqrt(d)

    def ref(q, k, v):
        return window_reference(q, k, v, small_W)

    # scaled_dot_product_attention with a dense boolean band mask.
    impl = "sdpa_band"
    note = ("F.scaled_dot_product_attention(q, k, v, attn_mask=dense bool "
            "[T, T] band, built before timing); CPU kernel chosen by torch; "
            "autograd backward gives grads for q, k, v")

    def sdpa(mask):
        return lambda q, k, v: F.scaled_dot_product_attention(
            q, k, v, attn_mask=mask, scale=scale)
    small_fn = sdpa(band_mask(small_T, small_W))
    fn = sdpa(band_mask(T, W))
    try:
        with torch.no_grad():
            check = rel_err(small_fn(*small),
                            ref(*(x.double() for x in small)))
        fwd_ms = bench.forward(impl, "window_fwd", shape_str, fn, inputs,
                               check, note)
    except Exception as exc:  # noqa: BLE001
        bench.error(impl, "window_fwd", exc)
        fwd_ms = None
    try:
        if fwd_ms is None:
            raise RuntimeError("no forward time (the forward failed)")
        check = grad_rel_err(small_fn, ref, small, cot)
        bench.backward(impl, "window_bwd", shape_str, fn, inputs, fwd_ms,
                       check, note)
    except Exception as exc:  # noqa: BLE001
        bench.error(impl, "window_bwd", exc)

    # FlexAttention with a sliding-window block mask, compiled.
    impl = "flex_attention"
    note = ("torch.compile(flex_attention) with create_block_mask of the "
            "band i - W < j <= i (128-blocks: only blocks touching the band "
            "are computed); compile time excluded")
    try:
        from torch.nn.attention.flex_attention import (create_block_mask,
                                                       flex_attention)
        flex = torch.compile(flex_attention, dynamic=False)

        def flex_fn(length, width):
            def band(b, h, q_idx, kv_idx):
                return (kv_idx <= q_idx) & (q_idx - kv_idx < width)
            block_mask = create_block_mask(band, B=None, H=None, Q_LEN=length,
                                           KV_LEN=length, device="cpu")
            return lambda q, k, v: flex(q, k, v, block_mask=block_mask,
                                        scale=scale)
        with torch.no_grad():
            check = rel_err(flex_fn(small_T, small_W)(*small),
                            ref(*(x.double() for x in small)))
        fn = flex_fn(T, W)
        fwd_ms = bench.forward(impl, "window_fwd", shape_str, fn, inputs,
                               check, note)
    except Exception as exc:  # noqa: BLE001
        bench.error(impl, "window_fwd", exc)
        bench.error(impl, "window_bwd", exc)
        return
    try:
        check = grad_rel_err(flex_fn(small_T, small_W), ref, small, cot)
        bench.backward(impl, "window_bwd", shape_str, fn, inputs, fwd_ms,
                       check, note)
    except Exception as exc:  # noqa: BLE001
        bench.error(impl, "window_bwd", exc)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", required=True,
                        choices=["scan_f32", "scan_c64", "gla", "window"])
    parser.add_argument("--tiny", action="store_true")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--seq", type=int, default=0,
                        help="T of the gla and window cases (4096, 8192)")
    args = parser.parse_args()
    torch.manual_seed(SEED)
    torch.set_num_threads(args.threads)
    log(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    bench = Bench(args)
    if args.case == "scan_f32":
        run_scan(bench, "scan_f32", torch.float32)
    elif args.case == "scan_c64":
        run_scan(bench, "scan_c64", torch.complex64)
    elif args.case == "gla":
        run_gla(bench)
    else:
        run_window(bench)


if __name__ == "__main__":
    main()
