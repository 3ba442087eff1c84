"""Composite-body mass matrix (SPEC E6): seed 001 Identity 1, eqs. (28)–(33); seed 004 (5.44)–(5.46).

    r(k) = Σ_children φ(k, c) r(c) φ*(k, c) + M(k)      composite inertia, inward
    x(k) = r(k) H*(k);   m(k, k) = H(k) x(k)
    x ← φ(i, j) x up the ancestors i of k;  m(i, k) = H(i) x        (eqs. 32–33 for trees)
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .kinematics import OK, as_vector, check_configuration, outward_placements, raise_for_status
from .model import Model, views
from .spatial import JIT, add_phi_inertia, apply_phi


@njit(**JIT)
def composite_inertia_sweep(m, w) -> None:
    """w.P(k) ← r(k), seed 001 eq. (31) for trees (children accumulate into their parent)."""
    nb = m.parent.shape[0]
    for k in range(nb):
        w.P[k] = m.inertia[k]
    for k in range(nb - 1, -1, -1):
        p = m.parent[k]
        if p >= 0:
            add_phi_inertia(w.R[k], w.l[k], w.P[k], w.P[p], w.s66)


@njit(**JIT)
def crba_kernel(mi, mf, wf, q, Mout):
    m, w = views(mi, mf, wf)
    kind, i = check_configuration(m, q)
    if kind != OK:
        return kind, i
    outward_placements(m, w, q)
    composite_inertia_sweep(m, w)
    nb = m.parent.shape[0]
    x = w.s66[2]
    tmp = w.s6[0]
    for k in range(nb):
        v0, nvk = m.v0[k], m.nv[k]
        if nvk == 0:
            continue
        # x(k) = r(k) H*(k), stored column-wise as rows x[d, :] (eq. 32)
        for d in range(nvk):
            for i in range(6):
                s = 0.0
                for j in range(6):
                    s += w.P[k, i, j] * m.S[v0 + d, j]
                x[d, i] = s
        j = k
        while j >= 0:
            # m(j, k) = H(j) x  (eq. 33)
            for e in range(m.nv[j]):
                for d in range(nvk):
                    s = 0.0
                    for i in range(6):
                        s += m.S[m.v0[j] + e, i] * x[d, i]
                    Mout[m.v0[j] + e, v0 + d] = s
                    Mout[v0 + d, m.v0[j] + e] = s
            p = m.parent[j]
            if p >= 0:
                for d in range(nvk):
                    apply_phi(w.R[j], w.l[j], x[d], tmp)
                    for i in range(6):
                        x[d, i] = tmp[i]
            j = p
    return OK, 0


def mass_matrix(model: Model, q) -> np.ndarray:
    """M(q) = HφMφ*H* by the composite-body recursion (nv × nv, symmetric)."""
    q = as_vector(q, model.nq, "q")
    M = np.zeros((model.nv, model.nv))
    raise_for_status(model, *crba_kernel(*model.packed(), q, M))
    return M
