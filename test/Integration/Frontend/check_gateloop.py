"""recurc -> reference lowering -> run, against a float64 GateLoop loop."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..",
                                "scripts"))
import spec_harness as h  # noqa: E402
from oracles import gateloop_max_headed as reference  # noqa: E402

tools, spec = h.tools_from_args(sys.argv[1:])


# Tolerances: f32 results differ from float64 by rounding in 8-term dot
# products, exp/sin/cos and up to T steps of the recurrence: a few dozen
# f32 ulps at most; observed about 5e-8, so 2e-6 (about 30 unit roundoffs)
# leaves room without hiding a wrong term. f64 keeps 1e-12.
failed = False
for layer, tol in (("GateLoop32", 2e-6), ("GateLoop64", 1e-12)):
    for B, T, seed in ((2, 7, 1), (1, 1, 2), (3, 12, 3)):
        run = h.run_layer(tools, spec, layer, {"B": B, "T": T}, seed=seed)
        want_y, want_h = reference(run.inputs)
        ey = h.max_rel_err(run.outputs["y"], want_y)
        eh = h.max_rel_err(run.outputs["next_h"], want_h)
        ok = ey <= tol and eh <= tol
        failed |= not ok
        print(f"{layer} B={B} T={T}: y rel err {ey:.2e}, next h rel err "
              f"{eh:.2e} (tol {tol:g}) {'ok' if ok else 'FAIL'}")
sys.exit(1 if failed else 0)
