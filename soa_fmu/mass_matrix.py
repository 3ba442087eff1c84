"""Composite-body mass matrix (SPEC E6): seed 001 Identity 1, eqs. (28)–(33); seed 004 (5.44)–(5.46).

    r(k) = Σ_children φ(k, c) r(c) φ*(k, c) + M(k)      composite inertia, inward      (eq. 31)
    x(k) = r(k) H*(k);   m(k, k) = H(k) x(k)                                             (eq. 32)
    x ← φ(i, j) x up the ancestors i of k;  m(i, k) = H(i) x                            (eq. 33)

evaluated, as seed 004 §5 does for its composite inertias, in the inertial frame at the world origin:
there every φ(k, c) is absorbed into the one transform of each body's inertia to that frame,
r_𝕀(k) = M_𝕀(k) + Σ_c r_𝕀(c) is a plain sum, and m(i, k) = H_𝕀(i)·x_𝕀(k) is a 6-vector dot product
(the pairing of a motion and a force is frame-independent) — O(N·depth) dot products in all.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .kinematics import OK, as_vector, check_configuration, outward_positions, raise_for_status
from .model import Model, views
from .spatial import JIT, add_phi_inertia


@njit(**JIT)
def joint_maps_to_world(m, w, Sw: np.ndarray) -> None:
    """Sw[i] = H*_𝕀 of velocity dof i: its unit twist as a motion at the world origin, world axes."""
    for k in range(m.parent.shape[0]):
        R, p = w.Rw[k], w.pw[k]
        for d in range(m.nv[k]):
            s = m.S[m.v0[k] + d]
            for i in range(3):
                Sw[m.v0[k] + d, i] = R[i, 0] * s[0] + R[i, 1] * s[1] + R[i, 2] * s[2]
                Sw[m.v0[k] + d, 3 + i] = R[i, 0] * s[3] + R[i, 1] * s[4] + R[i, 2] * s[5]
            wx, wy, wz = Sw[m.v0[k] + d, 0], Sw[m.v0[k] + d, 1], Sw[m.v0[k] + d, 2]
            # velocity of the point at the world origin: v + ω × (0 − p) = v + p × ω
            Sw[m.v0[k] + d, 3] += p[1] * wz - p[2] * wy
            Sw[m.v0[k] + d, 4] += p[2] * wx - p[0] * wz
            Sw[m.v0[k] + d, 5] += p[0] * wy - p[1] * wx


@njit(**JIT)
def inertias_to_world(m, w) -> None:
    """w.P(k) ← M_𝕀(k) = φ(𝕀, k) M(k) φ*(𝕀, k): each body's inertia at the world origin."""
    w.P[:, :, :] = 0.0
    for k in range(m.parent.shape[0]):
        add_phi_inertia(w.Rw[k], w.pw[k], m.inertia[k], w.P[k], w.s66)


@njit(**JIT)
def composite_inertia_sweep(m, w) -> None:
    """w.P(k) ← r_𝕀(k), the composite inertia of body k's subtree at the world origin, world axes
    (seed 001 eq. 31; seed 004 eqs. 5.44–5.46).  Needs the world placements."""
    nb = m.parent.shape[0]
    inertias_to_world(m, w)
    for k in range(nb - 1, -1, -1):
        p = m.parent[k]
        if p >= 0:
            for i in range(6):
                for j in range(6):
                    w.P[p, i, j] += w.P[k, i, j]


@njit(**JIT)
def crba_kernel(mi, mf, wf, q, Mout):
    m, w = views(mi, mf, wf)
    kind, i = check_configuration(m, q)
    if kind != OK:
        return kind, i
    outward_positions(m, w, q)
    composite_inertia_sweep(m, w)
    Sw = w.Sw
    joint_maps_to_world(m, w, Sw)
    x = w.s6[0]
    for k in range(m.parent.shape[0]):
        for d in range(m.nv[k]):
            c = m.v0[k] + d
            for i in range(6):                     # x = r(k) H*(k)   (eq. 32)
                s = 0.0
                for j in range(6):
                    s += w.P[k, i, j] * Sw[c, j]
                x[i] = s
            j = k
            while j >= 0:                          # m(j, k) = H(j) x  up the ancestors (eq. 33)
                for e in range(m.nv[j]):
                    r = m.v0[j] + e
                    if r <= c:
                        s = 0.0
                        for i in range(6):
                            s += Sw[r, i] * x[i]
                        Mout[r, c] = s
                        Mout[c, r] = s
                j = m.parent[j]
    return OK, 0


def mass_matrix(model: Model, q) -> np.ndarray:
    """M(q) = HφMφ*H* by the composite-body recursion (nv × nv, symmetric)."""
    q = as_vector(q, model.nq, "q")
    M = np.zeros((model.nv, model.nv))
    kind, index = crba_kernel(*model.packed(), q, M)
    if kind:
        raise_for_status(model, kind, index)
    return M
