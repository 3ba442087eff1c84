"""Closed-chain forward dynamics (issue 5): a chain of N bodies with one loop closure (its tip welded
to a world frame, 6 rows), N = 10 … 400.

* ``constrained_forward_dynamics`` — steps (A)–(F) of seed 000 §3: innovations FD, the Ω recursion
  for Λ⁻¹ = J M⁻¹ J*, the 6 × 6 solve, the (A.6) correction sweep: O(N) + O(n_c³).
* dense KKT — what a numpy user would write: ``mass_matrix`` (composite bodies, O(N²)), the bias
  ``bias_forces``, the constraint Jacobian G and bias γ, and ``np.linalg.solve`` of
  [[M, −Gᵀ], [G, 0]] (O(N³)).
* the tree ``forward_dynamics`` alone, for scale.

Second table: the example mechanisms (four-bar, slider-crank, two 7-dof arms holding a box) from
their model files — the recursive form against the dense general form (4.9) of the same call
(``method="general"``), and the engine's entry point ``_core.constrained_fd`` alone (what a native
FMU calls), in one run.

Third table: the three recursive algorithms of seed 003 Part II on the same calls — RCCFD1 (6.11),
RCCFD2 (6.12–6.18), RCCFD3 (6.19–6.22) — through the engine entry point, their times as ratios
to RCCFD1 measured interleaved in the same run, and their agreement with RCCFD1.

Bars (SPEC §6): linear growth, t(400)/t(100) ≤ 4.5; faster than the dense KKT from N ≈ 50 on.
Times are medians of CPU time, ratios measured in the same run.
"""
from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from timing import median_ratio, median_time, table, write_result  # noqa: E402

import soa_fmu as sf  # noqa: E402
from model_descriptions import example_path  # noqa: E402
from soa_fmu import _core  # noqa: E402
from soa_fmu.constraints import (constrained_forward_dynamics, constraint_bias,  # noqa: E402
                                 constraint_jacobian)
from soa_fmu.verify.builders import random_state, serial_chain  # noqa: E402

SIZES = (10, 25, 50, 100, 200, 400)
GROWTH_BAR = 4.5


def closed_chain(n: int):
    model = serial_chain(n, seed=1)
    q, qd = random_state(model, 2)
    model.add_frame("tip", f"link{n}", translation=(0.1, 0.0, 0.0))
    R, p = sf.frame_pose(model, q, "tip")
    model.add_frame("anchor", sf.WORLD, rotation=R, translation=p)
    model.add_constraint("loop", "weld", "tip", "anchor")
    return model, q, qd


def dense_kkt(model, q, qd, tau):
    M = sf.mass_matrix(model, q)
    C = sf.bias_forces(model, q, qd)
    G = constraint_jacobian(model, q)
    gamma = constraint_bias(model, q, qd)
    n, nv = G.shape
    K = np.zeros((nv + n, nv + n))
    K[:nv, :nv] = M
    K[:nv, nv:] = -G.T
    K[nv:, :nv] = G
    return np.linalg.solve(K, np.r_[tau - C, -gamma])[:nv]


def examples() -> str:
    """µs per call on the example mechanisms at their initial configuration, a random velocity."""
    rows = []
    for name in ("four_bar", "slider_crank", "two_arms_box"):
        model = sf.load_model(example_path(name))
        q = model.initial_q
        rng = np.random.default_rng(1)
        qd = sf.project_velocities(model, q, rng.normal(scale=0.3, size=model.nv))
        tau = rng.normal(size=model.nv)
        stab = (20.0, 20.0)
        rec = constrained_forward_dynamics(model, q, qd, tau, stabilization=stab)
        gen = constrained_forward_dynamics(model, q, qd, tau, stabilization=stab, method="general")
        err = np.abs(rec.qdd - gen.qdd).max() / np.abs(gen.qdd).max()
        active = np.ones(len(model.constraints), np.intc)
        t_rec = median_time(lambda: constrained_forward_dynamics(model, q, qd, tau, stabilization=stab))
        t_gen = median_time(lambda: constrained_forward_dynamics(model, q, qd, tau, stabilization=stab,
                                                                 method="general"))
        t_core = median_time(lambda: _core.constrained_fd(model.data, q, qd, tau, False, active, None,
                                                          None, None, 20.0, 20.0))
        t_fd = median_time(lambda: sf.forward_dynamics(model, q, qd, tau))
        rows.append([name, str(model.nv), str(sum(c.size for c in model.constraints)), t_rec * 1e6,
                     t_gen * 1e6, t_gen / t_rec, t_core * 1e6, t_rec / t_fd, f"{err:.0e}"])
    notes = ["",
             "recursive = constrained_forward_dynamics (steps (A)–(F), RCCFD1) from Python",
             "general = the same call with method=\"general\" (seed 003 (4.9), dense M⁻¹ and G)",
             "_core = the engine entry point alone (soa_constrained_fd, as a native FMU calls it)",
             "rel. err = |β̇_rec − β̇_gen|∞ / |β̇_gen|∞"]
    return table("Example mechanisms (µs per call, CPU-time medians, Baumgarte 20/20)",
                 ["model", "nv", "rows", "recursive", "general", "gen / rec", "_core", "rec / tree FD",
                  "rel. err"], rows, notes)


def methods() -> str:
    """µs per call of RCCFD1, 2, 3 (``_core.constrained_fd``), ratios to RCCFD1 (interleaved runs)."""
    cases = []
    for name in ("four_bar", "two_arms_box"):
        model = sf.load_model(example_path(name))
        cases.append((name, model, model.initial_q))
    cases += [(f"chain N = {n}", *closed_chain(n)[:2]) for n in (100, 400)]
    rows = []
    for name, model, q in cases:
        rng = np.random.default_rng(1)
        qd = sf.project_velocities(model, q, rng.normal(scale=0.3, size=model.nv))
        tau = rng.normal(size=model.nv)
        active = np.ones(len(model.constraints), np.intc)

        def call(method):
            return lambda: _core.constrained_fd(model.data, q, qd, tau, False, active, None, None,
                                                None, 20.0, 20.0, method)
        ref = call(1)()[0]
        errs = [np.abs(call(m)()[0] - ref).max() / np.abs(ref).max() for m in (2, 3)]
        t2, t1, r2 = median_ratio(call(2), call(1))
        t3, _, r3 = median_ratio(call(3), call(1))
        rows.append([name, str(model.nv), t1 * 1e6, t2 * 1e6, r2, t3 * 1e6, r3, f"{max(errs):.0e}"])
    notes = ["",
             "RCCFD1 = steps (A)–(F): FD with the bias (Riccati + filter, smoother), Ω pass, solve,",
             "         correction filter and smoother (6.11)",
             "RCCFD2 = T' by Newton–Euler at β̇ = 0, filter of T', the Ω pass carrying B*ψ*H*ν, solve,",
             "         one filter of T' and the tip forces, smoother (6.18)",
             "RCCFD3 = as RCCFD2 up to the solve, then θ̈₁ by 2 more sweeps and θ̈₂ by the correction",
             "         sweep (6.22): 4 + 2 after the Ω pass",
             "ratios: median of per-run ratios, runs interleaved with RCCFD1's; rel. err = max over",
             "RCCFD2, 3 of |β̇ − β̇_RCCFD1|∞ / |β̇_RCCFD1|∞"]
    return table("Seed 003's three recursive algorithms (µs per call of _core.constrained_fd, Baumgarte 20/20)",
                 ["model", "nv", "RCCFD1", "RCCFD2", "2 / 1", "RCCFD3", "3 / 1", "rel. err"], rows, notes)


def main() -> int:
    rows, t_cfd = [], {}
    for n in SIZES:
        model, q, qd = closed_chain(n)
        tau = np.random.default_rng(0).normal(size=n)
        res = constrained_forward_dynamics(model, q, qd, tau)
        err = np.abs(res.qdd - dense_kkt(model, q, qd, tau)).max() / np.abs(res.qdd).max()
        assert err < 1e-8, err
        t_cfd[n] = median_time(lambda: constrained_forward_dynamics(model, q, qd, tau))
        t_kkt = median_time(lambda: dense_kkt(model, q, qd, tau))
        t_fd = median_time(lambda: sf.forward_dynamics(model, q, qd, tau))
        rows.append([str(n), t_cfd[n] * 1e6, t_kkt * 1e6, t_kkt / t_cfd[n], t_cfd[n] / t_fd, f"{err:.0e}"])
    growth = t_cfd[400] / t_cfd[100]
    wins = [n for n in SIZES if n >= 50 and rows[SIZES.index(n)][3] > 1.0]
    notes = [
        "",
        f"growth t(400)/t(100) = {growth:.2f}  (bar ≤ {GROWTH_BAR}: "
        f"{'PASS' if growth <= GROWTH_BAR else 'FAIL'}; linear would be 4)",
        f"faster than the dense KKT for N ≥ 50: {'PASS' if len(wins) == sum(n >= 50 for n in SIZES) else 'FAIL'}"
        f"  (break-even below N = {min(n for n in SIZES if rows[SIZES.index(n)][3] > 1.0)})",
        "constrained FD = O(N) innovations FD + Ω recursion + 6×6 solve + (A.6) sweep, from Python",
        "dense KKT = mass_matrix + bias_forces + constraint_jacobian + constraint_bias + np.linalg.solve",
        "rel. err = |β̇ − β̇_KKT|∞ / |β̇|∞",
    ]
    text = table("Closed chain: N bodies, one weld loop closure (µs per call, CPU-time medians)",
                 ["N", "constrained FD", "dense KKT", "KKT / CFD", "CFD / tree FD", "rel. err"],
                 rows, notes)
    write_result("constraints.txt", text + "\n" + examples() + "\n" + methods())
    return 0 if growth <= GROWTH_BAR and len(wins) == sum(n >= 50 for n in SIZES) else 1


if __name__ == "__main__":
    sys.exit(main())
