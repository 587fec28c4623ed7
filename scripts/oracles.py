"""Plain-Python float64 statements of layer equations, for tests and the demo.

Each function takes the inputs dict that spec_harness.run_layer feeds a
layer (nested lists keyed by declared name) and returns the outputs it must
produce, computed directly from the paper's equations with no code shared
with the compiler.
"""

import cmath
import math


def _matvec(x, W):
    return [sum(x[i] * W[i][j] for i in range(len(x)))
            for j in range(len(W[0]))]


def gateloop_max_headed(inp):
    """GateLoop with d_k = d_v = 1 (Katsch 2023, Eq. 7-8, 24-25):
    a = sigmoid(x Wg) e^{i x Wth}, h_t = a_t h_{t-1} + (x Wk)(x Wv),
    y_t = (x Wq) Re(h_t). Returns (y, next h)."""
    x, h0 = inp["x"], inp["h"]
    W = {k: inp[k] for k in ("Wq", "Wk", "Wv", "Wg", "Wth")}
    ys, last = [], []
    for b in range(len(x)):
        state = list(h0[b])
        rows = []
        for t in range(len(x[b])):
            p = {k: _matvec(x[b][t], W[k]) for k in W}
            row = []
            for d in range(len(state)):
                a = cmath.exp(1j * p["Wth"][d]) / (1 + math.exp(-p["Wg"][d]))
                state[d] = a * state[d] + p["Wk"][d] * p["Wv"][d]
                row.append(p["Wq"][d] * state[d].real)
            rows.append(row)
        ys.append(rows)
        last.append(state)
    return ys, last
