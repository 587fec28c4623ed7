"""recurc glue builtins -> reference lowering -> run, against plain Python."""

import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..",
                                "scripts"))
import spec_harness as h  # noqa: E402

tools, spec = h.tools_from_args(sys.argv[1:])


def sig(v):
    return 1 / (1 + math.exp(-v))


def reference(inp):
    x, g, c, W = inp["x"], inp["g"], inp["c"], inp["W"]
    B, T, D, H = len(x), len(x[0]), len(x[0][0]), 2
    dh = D // H
    out = {k: [] for k in ("norm_rms", "norm_layer", "norm_l2", "attn",
                           "scanned", "averaged", "gated", "joined")}
    for b in range(B):
        rms, lay, l2, att, scn, gat, joi = [], [], [], [], [], [], []
        xw = [[sum(x[b][t][i] * W[i][j] for i in range(D)) for j in range(D)]
              for t in range(T)]
        for t in range(T):
            v = x[b][t]
            ms = sum(e * e for e in v) / D
            rms.append([v[i] / math.sqrt(ms + 1e-6) * g[i] for i in range(D)])
            mu = sum(v) / D
            var = sum((e - mu) ** 2 for e in v) / D
            lay.append([(v[i] - mu) / math.sqrt(var + 1e-3) * g[i] + c[i]
                        for i in range(D)])
            ss = sum(e * e for e in v)
            l2.append([e / math.sqrt(ss + 1e-6) for e in v])
            row = [0.0] * D
            for hh in range(H):
                qv = xw[t][hh * dh:(hh + 1) * dh]
                logits = [sum(qv[d] * x[b][s][hh * dh + d] for d in range(dh)) / 2
                          for s in range(T)]
                m = max(logits)
                e = [math.exp(z - m) for z in logits]
                z = sum(e)
                for d in range(dh):
                    row[hh * dh + d] = sum(e[s] / z * x[b][s][hh * dh + d]
                                           for s in range(T))
            att.append(row)
            gat.append([v[i] * sig(-v[i] + 1) + math.tanh(v[i]) * sig(v[i] - 1)
                        for i in range(D)])
            joi.append(list(v) + [-e for e in v])
        # The scan: (A, S) with A the running product of sigmoid(x) and S the
        # linear recurrence S_t = sigmoid(x_t) S_{t-1} + x_t.
        A, S = [1.0] * D, [0.0] * D
        for t in range(T):
            for i in range(D):
                a = sig(x[b][t][i])
                A[i], S[i] = (a if t == 0 else A[i] * a), a * S[i] + x[b][t][i]
            scn.append([S[i] - A[i] for i in range(D)])
        for k, v in (("norm_rms", rms), ("norm_layer", lay), ("norm_l2", l2),
                     ("attn", att), ("scanned", scn), ("gated", gat),
                     ("joined", joi)):
            out[k].append(v)
        out["averaged"].append([sum(x[b][t][i] for t in range(T)) / T
                                for i in range(D)])
    return out


failed = False
for B, T, seed in ((2, 5, 1), (1, 1, 7), (2, 13, 3)):
    run = h.run_layer(tools, spec, "Glue", {"B": B, "T": T}, seed=seed)
    want = reference(run.inputs)
    for name in sorted(want):
        err = h.max_rel_err(run.outputs[name], want[name])
        ok = err <= 1e-12
        failed |= not ok
        print(f"B={B} T={T} {name}: rel err {err:.2e} {'ok' if ok else 'FAIL'}")
sys.exit(1 if failed else 0)
