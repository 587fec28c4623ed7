#!/usr/bin/env python3
"""`make bench`: Recur's CPU benchmarks, the limits and the peers in one run.

Runs build/bin/recur-bench (the compiled layers, a streaming copy, OpenBLAS
sgemm and plain C++ loops, all on the same threads), then the peers of
scripts/bench-peers.sh (ggml and PyTorch, installed outside the tree) when
they are installed, then times recurc on every example spec (with its
backward, and the forward alone), and prints one table: each figure, its
ratio to the machine's limit and to each peer, and the issue's target.
docs/performance.md records a run.

  bench/run.py [--build DIR] [--threads N] [--tiny] [--no-peers]
               [--json FILE]

--tiny runs everything once at a tiny size (what CI does: the numbers mean
nothing); --json also writes every figure to FILE.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_recur_bench(build, threads, tiny):
    cmd = [os.path.join(build, "bin", "recur-bench"), f"--threads={threads}",
           "--benchmark_format=json"]
    if tiny:
        cmd.append("--tiny")
    else:
        # Each figure the median of three runs of a second or more: one run
        # of the Block-Recurrent layer is a single call of about 0.6 s,
        # which a stall of this VM once made 1.9x as long.
        cmd += ["--benchmark_repetitions=3",
                "--benchmark_report_aggregates_only=true"]
    print("bench: " + " ".join(cmd), file=sys.stderr, flush=True)
    out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True)
    report = json.loads(out.stdout)
    results = {}
    for b in report["benchmarks"]:
        if b.get("run_type") == "aggregate" and \
                b.get("aggregate_name") != "median":
            continue
        name = b["run_name"].split("/iterations")[0].split("/min_time")[0]
        name = name.replace("/real_time", "")
        ms = b["real_time"] if b["time_unit"] == "ms" else None
        if ms is None:
            scale = {"ns": 1e-6, "us": 1e-3, "s": 1e3}[b["time_unit"]]
            ms = b["real_time"] * scale
        results[name] = {
            "ms": ms,
            "gbps": b.get("bytes_per_second", 0) / 1e9 or None,
            "gflops": b.get("flops", 0) / 1e9 or None,
        }
    return report.get("context", {}), results


def run_peers(threads, tiny):
    script = os.path.join(ROOT, "scripts", "bench-peers.sh")
    if not os.path.exists(script):
        print("bench: no scripts/bench-peers.sh; peers skipped",
              file=sys.stderr)
        return []
    cmd = ["bash", script, "--threads", str(threads)]
    if tiny:
        cmd.append("--tiny")
    print("bench: " + " ".join(cmd), file=sys.stderr, flush=True)
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
    peers = []
    for line in proc.stdout.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            peers.append(json.loads(line))
        except json.JSONDecodeError:
            print(f"bench: unreadable peer line: {line}", file=sys.stderr)
    if proc.returncode != 0:
        print(f"bench: bench-peers.sh exited with {proc.returncode}",
              file=sys.stderr)
    return peers


def compile_times(build, tiny, flags=()):
    recurc = os.path.join(build, "bin", "recurc")
    examples = os.path.join(ROOT, "examples")
    times = {}
    specs = sorted(s for s in os.listdir(examples) if s.endswith(".recur"))
    # --tiny: one small spec shows the timing works.
    for spec in (["custom_scan.recur"] if tiny else specs):
        with tempfile.TemporaryDirectory() as out:
            start = time.perf_counter()
            subprocess.run([recurc, os.path.join(examples, spec),
                            "--target=cpu", "-o", out, *flags], check=True,
                           stdout=subprocess.DEVNULL)
            times[spec] = time.perf_counter() - start
    return times


def fmt(x, unit=""):
    if x is None:
        return "-"
    if abs(x) >= 100:
        return f"{x:.0f}{unit}"
    if abs(x) >= 10:
        return f"{x:.1f}{unit}"
    return f"{x:.3g}{unit}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--tiny", action="store_true")
    ap.add_argument("--no-peers", action="store_true")
    ap.add_argument("--json")
    args = ap.parse_args()

    context, ours = run_recur_bench(args.build, args.threads, args.tiny)
    peers = [] if args.no_peers else run_peers(args.threads, args.tiny)
    compiles = compile_times(args.build, args.tiny)
    # The forward alone (recurc --no-backward: an inference build).
    forward_compiles = compile_times(args.build, args.tiny, ["--no-backward"])

    copy = ours.get("copy/stream", {}).get("gbps")
    sgemm = ours.get("sgemm/openblas", {}).get("gflops")
    print()
    print(f"Recur CPU benchmarks: {context.get('num_cpus', '?')} CPUs at "
          f"{context.get('mhz_per_cpu', '?')} MHz, {args.threads} threads"
          + (" (tiny sizes: the numbers mean nothing)" if args.tiny else ""))
    print(f"limits: streaming copy {fmt(copy)} GB/s, OpenBLAS sgemm "
          f"{fmt(sgemm)} GFLOP/s")
    print()
    header = (f"{'benchmark':<22} {'impl':<26} {'ms':>9} {'GB/s':>7} "
              f"{'GFLOP/s':>8} {'vs limit':>9} {'recur speedup':>13}")
    print(header)
    print("-" * len(header))

    cases = ["scan_f32", "scan_f32_one", "scan_c64", "gla_fwd", "gla_bwd",
             "window_fwd", "window_bwd"]
    rows = []
    for case in cases:
        recur = ours.get(f"{case}/recur")
        if recur is None:
            continue
        entries = [("recur", recur)]
        for name, r in ours.items():
            if name.startswith(case + "/") and name != f"{case}/recur":
                entries.append((name.split("/", 1)[1], r))
        for p in peers:
            if p.get("case") != case:
                continue
            label = f"{p.get('peer')}:{p.get('impl')}"
            if "error" in p:
                entries.append((label, {"error": p["error"]}))
            else:
                entries.append((label, {"ms": p["ms"]}))
        for label, r in entries:
            if "error" in r:
                print(f"{case:<22} {label:<26} failed: {r['error'][:60]}")
                continue
            limit = None
            if label == "recur":
                if case.startswith("scan") and copy and r.get("gbps"):
                    limit = r["gbps"] / copy
                elif sgemm and r.get("gflops"):
                    limit = r["gflops"] / sgemm
            speedup = None if label == "recur" else r["ms"] / recur["ms"]
            print(f"{case:<22} {label:<26} {fmt(r['ms']):>9} "
                  f"{fmt(r.get('gbps')):>7} {fmt(r.get('gflops')):>8} "
                  f"{fmt(limit):>9} {fmt(speedup, 'x'):>13}")
            rows.append({"case": case, "impl": label, **r,
                         "vs_limit": limit, "recur_speedup": speedup})

    brt = ours.get("brt/block_recurrent")
    slide = ours.get("brt/sliding_window")
    brt_ratio = brt["ms"] / slide["ms"] if brt and slide else None
    print()
    print("targets: scans >= 0.8 of the copy; gla and window attention "
          ">= 0.5 of sgemm; faster than every peer")
    if brt_ratio is not None:
        print(f"Block-Recurrent layer / sliding-window layer (W = S = 512, "
              f"d = 512): {fmt(brt['ms'])} ms / {fmt(slide['ms'])} ms = "
              f"{brt_ratio:.2f}x (target <= 1.1x)")
        if brt.get("gflops") and slide.get("gflops"):
            # The FLOPs recur-bench counts per call (bench/recur_bench.cpp):
            # the time ratio the layers' own arithmetic implies at equal
            # rates, and each layer's rate against the same run's sgemm.
            flop_ratio = (brt["gflops"] * brt["ms"]) / (slide["gflops"] *
                                                        slide["ms"])
            rates = ", ".join(
                f"{name} {fmt(r['gflops'])} GFLOP/s"
                + (f" ({fmt(r['gflops'] / sgemm)} of sgemm)" if sgemm else "")
                for name, r in (("block-recurrent", brt),
                                ("sliding window", slide)))
            print(f"  FLOPs block-recurrent / sliding window: "
                  f"{flop_ratio:.2f}x; {rates}")
    print("recurc, spec to object (target < 2 s): " +
          ", ".join(f"{k} {v:.2f} s" for k, v in compiles.items()))
    print("recurc --no-backward (the forward alone): " +
          ", ".join(f"{k} {v:.2f} s" for k, v in forward_compiles.items()))

    if args.json:
        with open(args.json, "w") as f:
            json.dump({"context": context, "threads": args.threads,
                       "tiny": args.tiny, "limits": {"copy_gbps": copy,
                                                     "sgemm_gflops": sgemm},
                       "rows": rows, "brt_ratio": brt_ratio,
                       "compile_s": compiles,
                       "compile_forward_s": forward_compiles,
                       "peers": peers}, f, indent=1)


if __name__ == "__main__":
    main()
