#!/usr/bin/env python3
"""Throughput against sequence length: Recur and its peers, one PNG.

    python3 bench/plot.py [--build build] [--seqs 512,1024,...] [--out FILE]
                          [--threads N] [--runs N] [--json FILE]

For each length T it runs `recur-bench --seq=T` (gla_fwd and window_fwd:
Recur's kernel and the plain -O3 loop) and `scripts/bench-peers.sh --seq T
--skip-install` (ggml and PyTorch, installed by a full `make bench`), then
plots tokens per second (batch x T / time; gla: B = 4, H = 8, d = 64;
window: B = 1, H = 8, W = 512, d = 64) against T, one panel per case, and
writes the PNG (default docs/performance-seq.png) and, with --json, every
figure. Each length is one run of each program, so the figures of one
length are measured side by side. Needs matplotlib (pip install
matplotlib); see docs/performance.md.
"""

import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# case -> (recur-bench filter prefix, sequences per call)
CASES = {"gla_fwd": 4, "window_fwd": 1}
TITLES = {"gla_fwd": "gated linear attention, forward (B=4, H=8, d=64)",
          "window_fwd": "sliding-window attention, forward (H=8, W=512, d=64)"}


def recur_times(build, seq, threads):
    """{(case, impl): ms} from one recur-bench run at length `seq`."""
    cmd = [os.path.join(build, "bin", "recur-bench"), f"--threads={threads}",
           f"--seq={seq}", "--benchmark_filter=^(gla_fwd|window_fwd)/",
           "--benchmark_format=json"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    times = {}
    for b in json.loads(out.stdout)["benchmarks"]:
        case, impl = b["name"].split("/")[:2]
        unit = {"ms": 1.0, "us": 1e-3, "ns": 1e-6, "s": 1e3}[b["time_unit"]]
        times[(case, impl)] = b["real_time"] * unit
    return times


def peer_times(seq, threads, runs):
    """{(case, impl): ms} from one scripts/bench-peers.sh run."""
    cmd = [os.path.join(ROOT, "scripts", "bench-peers.sh"), "--skip-install",
           "--seq", str(seq), "--threads", str(threads), "--runs", str(runs)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    times = {}
    for line in out.stdout.splitlines():
        if not line.startswith("{"):
            continue
        r = json.loads(line)
        if r.get("case") in CASES and "ms" in r:
            times[(r["case"], f"{r['peer']}:{r['impl']}")] = r["ms"]
    return times


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--seqs", default="512,1024,2048,4096,8192")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--out", default=os.path.join(ROOT, "docs",
                                                  "performance-seq.png"))
    ap.add_argument("--json")
    args = ap.parse_args()
    try:
        seqs = [int(s) for s in args.seqs.split(",")]
    except ValueError:
        sys.exit(f"plot: --seqs must be a comma-separated list of lengths, "
                 f"not '{args.seqs}'")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit("plot: matplotlib is missing (pip install matplotlib)")

    # series[case][impl] = [(T, tokens/s)]
    series = {case: {} for case in CASES}
    rows = []
    for seq in seqs:
        print(f"plot: T = {seq}", file=sys.stderr)
        times = recur_times(args.build, seq, args.threads)
        times.update(peer_times(seq, args.threads, args.runs))
        for (case, impl), ms in sorted(times.items()):
            if case not in CASES:
                continue
            rate = CASES[case] * seq / (ms * 1e-3)
            series[case].setdefault(impl, []).append((seq, rate))
            rows.append({"case": case, "impl": impl, "T": seq, "ms": ms,
                         "tokens_per_s": rate})
            print(f"{case:<11} {impl:<26} T={seq:<6} {ms:10.2f} ms "
                  f"{rate / 1e6:8.3f} M tokens/s")

    fig, axes = plt.subplots(1, len(CASES), figsize=(12, 4.5))
    for ax, case in zip(axes, CASES):
        for impl, points in sorted(series[case].items()):
            xs, ys = zip(*points)
            style = "-o" if impl.startswith("recur") else "--s"
            ax.plot(xs, [y / 1e6 for y in ys], style, label=impl,
                    linewidth=2.5 if impl == "recur" else 1.2)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("sequence length T")
        ax.set_ylabel("million tokens / s")
        ax.set_title(TITLES[case], fontsize=10)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(f"Recur and peers on this CPU, {args.threads} threads "
                 f"(higher is better)")
    fig.tight_layout()
    fig.savefig(args.out, dpi=110)
    print(f"plot: wrote {args.out}", file=sys.stderr)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"threads": args.threads, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
