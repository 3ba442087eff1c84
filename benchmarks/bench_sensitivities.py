"""Sensitivities and linearization vs Pinocchio in one run (issue 6): ∂𝓜/∂θ (all i), the Coriolis
matrix, inverse/forward-dynamics derivatives and the state-space linearization, on revolute chains of
N = 7, 30 and 100 bodies.  Ours and Pinocchio's runs are interleaved (timing.median_ratio), so a
ratio compares the two under the same load of the shared machine.

Pinocchio has no call for the whole tensor ∂𝓜/∂θ; its reference is what a Pinocchio user would run:
nv calls of ``computeRNEADerivatives(q, 0, e_k)`` with gravity off (∂(𝓜e_k)/∂θ, column by column).
``linearize`` is compared with ``computeABADerivatives`` plus the same (A, B) assembly in numpy.
"""
from __future__ import annotations

import os
import sys

import numpy as np
import pinocchio as pin

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from timing import chain_case, median_ratio, median_time, table, write_result  # noqa: E402

from soa_fmu.linearization import (forward_dynamics_derivatives, inverse_dynamics_derivatives,  # noqa: E402
                                   linearize)
from soa_fmu.sensitivities import christoffel_symbols, coriolis_matrix, mass_matrix_derivative  # noqa: E402

BARS = {"FD derivatives": 0.7, "linearize (A, B)": 0.7}     # SPEC §6: linearization ≤ 0.7× ABA derivatives
SIZES = (7, 30, 100)


def pin_mass_matrix_derivative(pmod, data, qp, out):
    """∂𝓜/∂θ in Pinocchio: nv RNEA-derivative calls at q̇ = 0, q̈ = e_k, gravity off."""
    nv = pmod.nv
    g = pmod.gravity.linear.copy()
    pmod.gravity.linear[:] = 0.0
    zero, e = np.zeros(nv), np.zeros(nv)
    for k in range(nv):
        e[:] = 0.0
        e[k] = 1.0
        pin.computeRNEADerivatives(pmod, data, qp, zero, e)
        out[:, :, k] = data.dtau_dq.T
    pmod.gravity.linear[:] = g


def pin_linearize(pmod, data, qp, vp, tp):
    pin.computeABADerivatives(pmod, data, qp, vp, tp)
    nv = pmod.nv
    A = np.zeros((2 * nv, 2 * nv))
    B = np.zeros((2 * nv, nv))
    A[:nv, nv:] = np.eye(nv)
    A[nv:, :nv] = data.ddq_dq
    A[nv:, nv:] = data.ddq_dv
    Minv = data.Minv
    B[nv:] = np.triu(Minv) + np.triu(Minv, 1).T
    return A, B


def compare(n: int) -> list[list]:
    model, pm, data, q, qd, tau, qp, vp, tp = chain_case(n)
    pmod = pm.pin_model
    qdd = np.random.default_rng(1).normal(size=n)
    ap = pm.v_to_pin(qdd)
    tensor = np.empty((n, n, n))
    pairs = {
        "∂𝓜/∂θ (all i)": (lambda: mass_matrix_derivative(model, q),
                          lambda: pin_mass_matrix_derivative(pmod, data, qp, tensor),
                          "nv × computeRNEADerivatives"),
        "Coriolis matrix C": (lambda: coriolis_matrix(model, q, qd),
                              lambda: pin.computeCoriolisMatrix(pmod, data, qp, vp),
                              "computeCoriolisMatrix"),
        "ID derivatives": (lambda: inverse_dynamics_derivatives(model, q, qd, qdd),
                           lambda: pin.computeRNEADerivatives(pmod, data, qp, vp, ap),
                           "computeRNEADerivatives"),
        "FD derivatives": (lambda: forward_dynamics_derivatives(model, q, qd, tau),
                           lambda: pin.computeABADerivatives(pmod, data, qp, vp, tp),
                           "computeABADerivatives"),
        "linearize (A, B)": (lambda: linearize(model, q, qd, tau),
                             lambda: pin_linearize(pmod, data, qp, vp, tp),
                             "computeABADerivatives + (A, B)"),
    }
    rows = []
    for name, (ours, ref, ref_name) in pairs.items():
        ours(), ref()
        t_ours, t_pin, ratio = median_ratio(ours, ref, repeat=21 if n < 100 or "𝓜" not in name else 5)
        bar = f"≤ {BARS[name]}" if name in BARS else ""
        rows.append([name, str(n), t_ours * 1e6, t_pin * 1e6, ratio, bar, ref_name])
    christoffel_symbols(model, q)
    t = median_time(lambda: christoffel_symbols(model, q), repeat=15)
    rows.append(["Christoffel ℂ (5.53)", str(n), t * 1e6, float("nan"), float("nan"), "", "(none)"])
    return rows


def main() -> None:
    rows = [row for n in SIZES for row in compare(n)]
    notes = [
        "",
        "bar: SPEC §6, linearization ≤ 0.7× Pinocchio's ABA derivatives (ours / Pinocchio, same run)",
        f"model: serial chain of revolute joints (random axes/inertias); pinocchio {pin.__version__}; "
        "times are medians of 21 interleaved runs (5 for ∂𝓜/∂θ at N = 100), CPU time, called from "
        "Python; ratio: the median of the per-run ratios",
    ]
    write_result("sensitivities.txt", table(
        "Sensitivities and linearization vs Pinocchio (µs per call)",
        ["quantity", "N", "soa_fmu µs", "pin µs", "ratio", "bar", "Pinocchio reference"], rows, notes))


if __name__ == "__main__":
    main()
