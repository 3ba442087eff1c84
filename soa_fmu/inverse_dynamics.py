"""Newton–Euler inverse dynamics (SPEC E5): seed 001 eqs. (6)–(12), (23)–(27); seed 000 eq. (2.11).

    α = φ*(H* β̇ + a)          outward, with gravity as the base acceleration α(world) = [0; −g]
    f = φ(M α + b − f_ext)     inward
    T = H f
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .kinematics import (BAD_QDD, BAD_TAU, OK, as_vector, check_state, first_nonfinite,
                         outward_accelerations, outward_placements, outward_velocities,
                         pack_external_forces, raise_for_status)
from .model import Model, views
from .spatial import JIT, add_phi


@njit(**JIT)
def inward_forces(m, w, use_fext: bool) -> None:
    """f(k) = Σ_children φ(k, c) f(c) + M(k) α(k) + b(k) − f_ext(k)   (tip to base)."""
    nb = m.parent.shape[0]
    for k in range(nb):
        for i in range(6):
            s = w.b[k, i]
            for j in range(6):
                s += m.inertia[k, i, j] * w.alpha[k, j]
            if use_fext:
                s -= w.fext[k, i]
            w.f[k, i] = s
    tmp = w.s6[2]
    for k in range(nb - 1, -1, -1):
        p = m.parent[k]
        if p >= 0:
            add_phi(w.R[k], w.l[k], w.f[k], w.f[p], tmp)


@njit(**JIT)
def project_forces(m, w, T: np.ndarray) -> None:
    """T(k) = H(k) f(k)."""
    for k in range(m.parent.shape[0]):
        v0 = m.v0[k]
        for d in range(m.nv[k]):
            s = 0.0
            for i in range(6):
                s += m.S[v0 + d, i] * w.f[k, i]
            T[v0 + d] = s


@njit(**JIT)
def rnea_kernel(mi, mf, wf, q, qd, qdd, use_fext, tau):
    """Recursive Newton–Euler, seed 001 eq. (25): outward (V, α), inward (f), projection (T)."""
    m, w = views(mi, mf, wf)
    kind, i = check_state(m, q, qd)
    if kind != OK:
        return kind, i
    i = first_nonfinite(qdd)
    if i >= 0:
        return BAD_QDD, i
    outward_placements(m, w, q)
    outward_velocities(m, w, qd)
    outward_accelerations(m, w, qdd, m.a0)
    inward_forces(m, w, use_fext)
    project_forces(m, w, tau)
    return OK, 0


def inverse_dynamics(model: Model, q, qd, qdd, f_ext=None) -> np.ndarray:
    """τ = M(q) q̈ + C(q, q̇) + g(q) − J*f_ext  (SPEC §5)."""
    q = as_vector(q, model.nq, "q")
    qd = as_vector(qd, model.nv, "qd")
    qdd = as_vector(qdd, model.nv, "qdd")
    use = pack_external_forces(model, model.workspace(), f_ext) if f_ext else False
    mi, mf, wf = model.packed()
    tau = np.empty(model.nv)
    kind, index = rnea_kernel(mi, mf, wf, q, qd, qdd, use, tau)
    if kind:
        raise_for_status(model, kind, index)
    return tau


def bias_forces(model: Model, q, qd, f_ext=None) -> np.ndarray:
    """C(q, q̇) + g(q) − J*f_ext: inverse dynamics at q̈ = 0 (seed 001 eq. (27))."""
    return inverse_dynamics(model, q, qd, np.zeros(model.nv), f_ext)


def gravity_forces(model: Model, q) -> np.ndarray:
    """g(q): inverse dynamics at q̇ = q̈ = 0."""
    z = np.zeros(model.nv)
    return inverse_dynamics(model, q, z, z)


__all__ = ["inverse_dynamics", "bias_forces", "gravity_forces", "BAD_TAU"]
