"""Flexible bodies (issue 12): forward dynamics of a chain of 20 flexible links × 4 modes (beam
elements, alternating hinge axes) against the rigid chain of the same links (the same mass
properties); bar: ≤ 3 ×.

    python benchmarks/bench_flexible.py

Writes benchmarks/results/flexible.txt.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]
from timing import median_ratio, table, write_result  # noqa: E402

import soa_fmu as sf  # noqa: E402
from soa_fmu import flexible as fx  # noqa: E402
from soa_fmu import joints as J  # noqa: E402

BAR = 3.0


def chain(flexible: bool, n: int = 20, modes: int = 4) -> sf.Model:
    red = fx.reduce(fx.beam(0.5, 1.0, 1e6, 100.0, 120.0, 80.0, 4), modes, 0.01)
    m = sf.Model("chain", gravity=(0, 0, -9.81))
    parent = "world"
    for i in range(n):
        kw = {"flexible": red} if flexible else {"mass": red.mass, "com": red.com,
                                                 "inertia": red.inertia}
        m.add_body(f"l{i}", parent, J.Revolute([0, 1, 0] if i % 2 else [0, 0, 1]),
                   translation=(0.5 if i else 0.0, 0, 0), **kw)
        parent = f"l{i}"
    return m


def main() -> int:
    calls = []
    for flexible in (True, False):
        m = chain(flexible)
        rng = np.random.default_rng(0)
        q, qd, tau = rng.normal(size=m.nq) * 0.1, rng.normal(size=m.nv) * 0.1, rng.normal(size=m.nv)
        calls.append((m.nv, lambda m=m, q=q, qd=qd, tau=tau: sf.forward_dynamics(m, q, qd, tau)))
    t_flex, t_rigid, ratio = median_ratio(calls[0][1], calls[1][1])
    rows = [["rigid chain, 20 links", calls[1][0], t_rigid * 1e6, 1.0, ""],
            ["flexible chain, 20 links × 4 modes", calls[0][0], t_flex * 1e6, ratio, f"≤ {BAR:g}"]]
    write_result("flexible.txt", table(
        "Forward dynamics: 20 flexible links × 4 modes vs the rigid chain (Python API, one run)",
        ["", "dofs", "median µs", "× rigid", "bar"], rows,
        ["Both through sf.forward_dynamics (the same Python call overhead); runs interleaved, "
         "the ratio is the median of the per-run ratios."]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
