"""Articulated-body forward dynamics and the innovations factorization (SPEC E7, E8).

Seed 001 §VI–VII (Riccati equation (34)–(36), ψ (38)–(41), Identities 3–6, Algorithms 1–3),
seed 000 eqs. (3.1)–(3.7) with the tree recursions (A.1)–(A.2).  With τ̄ = I − G H and
ψ(p, k) = φ(p, k) τ̄(k):

    Riccati (inward):    P(k) = Σ_c ψ(k, c) P(c) ψ*(k, c) + M(k),  D = H P H*,  G = P H* D⁻¹
    filter  (inward):    z(k) = Σ_c φ(k, c) z⁺(c) + P(k) a(k) + b(k) − f_ext(k)
                         ε(k) = T(k) − H(k) z(k),  ν(k) = D⁻¹(k) ε(k),  z⁺(k) = z(k) + G(k) ε(k)
    smoother (outward):  α⁺(k) = φ*(p, k) α(p),  β̇(k) = ν(k) − G*(k) α⁺(k),
                         α(k) = α⁺(k) + H*(k) β̇(k) + a(k)

The filter carries the bias (P a + b) as in Algorithm 3 (eqs. 60–65), so forward dynamics is three
sweeps; ``forward_dynamics_bias_free`` is Algorithm 2 (eqs. 55–59): bias torques from Newton–Euler,
the bias-free filter/smoother for λ and β̇, and α = λ + ζ with ζ = φ*a.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .inverse_dynamics import inward_forces, project_forces
from .kinematics import (BAD_TAU, OK, SINGULAR, as_vector, check_configuration, check_state,
                         first_nonfinite, outward_accelerations, outward_placements, outward_positions,
                         outward_velocities, pack_external_forces, raise_for_status)
from .mass_matrix import inertias_to_world, joint_maps_to_world
from .model import Model, views
from .spatial import INLINE, JIT, add_phi, add_phi_inertia, apply_phi_star


@njit(**JIT)
def invert_spd(A: np.ndarray, n: int, out: np.ndarray) -> bool:
    """out[:n, :n] = A[:n, :n]⁻¹ for a symmetric positive-definite block (Cholesky); False if not PD."""
    if n == 1:
        if not A[0, 0] > 0.0:
            return False
        out[0, 0] = 1.0 / A[0, 0]
        return True
    L = np.zeros((n, n))
    for j in range(n):
        s = A[j, j]
        for k in range(j):
            s -= L[j, k] * L[j, k]
        if not s > 1e-300:
            return False
        L[j, j] = np.sqrt(s)
        for i in range(j + 1, n):
            t = A[i, j]
            for k in range(j):
                t -= L[i, k] * L[j, k]
            L[i, j] = t / L[j, j]
    Li = np.zeros((n, n))
    for j in range(n):
        Li[j, j] = 1.0 / L[j, j]
        for i in range(j + 1, n):
            t = 0.0
            for k in range(j, i):
                t -= L[i, k] * Li[k, j]
            Li[i, j] = t / L[i, i]
    for i in range(n):
        for j in range(n):
            t = 0.0
            for k in range(max(i, j), n):
                t += Li[k, i] * Li[k, j]
            out[i, j] = t
    return True


@njit(**INLINE)
def riccati_step_1dof(S: np.ndarray, P: np.ndarray, G: np.ndarray, Dinv: np.ndarray,
                      Pplus: np.ndarray) -> bool:
    """One joint of the Riccati sweep for r_v = 1 (the common case, written out):
    U = P H*, D = H U, G = U / D, P⁺ = P − U Uᵀ / D.  False if D ≤ 0."""
    D = 0.0
    for i in range(6):
        u = 0.0
        for j in range(6):
            u += P[i, j] * S[j]
        G[i, 0] = u
        D += S[i] * u
    if not D > 0.0:
        return False
    d = 1.0 / D
    Dinv[0, 0] = d
    for i in range(6):
        gi = G[i, 0] * d
        for j in range(i, 6):
            v = P[i, j] - gi * G[j, 0]
            Pplus[i, j] = v
            Pplus[j, i] = v
    for i in range(6):
        G[i, 0] *= d
    return True


@njit(**JIT)
def riccati_step(S: np.ndarray, v0: int, n: int, P: np.ndarray, G: np.ndarray, Dinv: np.ndarray,
                 D: np.ndarray, u: np.ndarray, Pplus: np.ndarray) -> bool:
    """One joint of the Riccati sweep for any r_v = n (seed 001 eqs. 35–36; seed 000 A.1):
    U = P H* (kept in G), D = H U, P⁺ = P − U D⁻¹ Uᵀ (= τ̄ P), G = U D⁻¹.  False if D is not PD."""
    for d in range(n):
        for i in range(6):
            s = 0.0
            for j in range(6):
                s += P[i, j] * S[v0 + d, j]
            G[i, d] = s
    for d in range(n):
        for e in range(n):
            s = 0.0
            for i in range(6):
                s += S[v0 + d, i] * G[i, e]
            D[d, e] = s
    if not invert_spd(D, n, Dinv):
        return False
    for i in range(6):
        for j in range(6):
            s = 0.0
            for d in range(n):
                for e in range(n):
                    s += G[i, d] * Dinv[d, e] * G[j, e]
            Pplus[i, j] = P[i, j] - s
    for i in range(6):
        for d in range(n):
            u[d] = G[i, d]
        for d in range(n):
            s = 0.0
            for e in range(n):
                s += u[e] * Dinv[e, d]
            G[i, d] = s
    return True


@njit(**INLINE)
def copy_inertias(m, w) -> None:
    """w.P(k) ← M(k) for every body (the start of the inward inertia sweeps)."""
    for k in range(m.parent.shape[0]):
        for i in range(6):
            for j in range(6):
                w.P[k, i, j] = m.inertia[k, i, j]


@njit(**JIT)
def riccati_sweep(m, w, inertial: bool = False) -> int:
    """P(k), D(k)⁻¹, G(k) for every body, tip to base (seed 001 eqs. 34–36; seed 000 A.1):

        P(k) = Σ_c φ(k, c) P⁺(c) φ*(k, c) + M(k),   P⁺ = τ̄ P = P − G D G*   (so ψ P ψ* = φ P⁺ φ*)

    in body frames, or with ``inertial`` in the inertial frame (world axes and origin: M_𝕀(k),
    H*_𝕀(k) = w.Sw; every φ(k, c) is then the identity and the sum is plain — needs the world
    placements).  Returns the index of a body whose D(k) is not positive definite, or −1."""
    if inertial:
        joint_maps_to_world(m, w, w.Sw)
        inertias_to_world(m, w)
        S = w.Sw
    else:
        copy_inertias(m, w)
        S = m.S
    Pplus = w.s66[3]
    for k in range(m.parent.shape[0] - 1, -1, -1):
        n = m.nv[k]
        if n == 1:
            ok = riccati_step_1dof(S[m.v0[k]], w.P[k], w.G[k], w.Dinv[k], Pplus)
        elif n > 1:
            ok = riccati_step(S, m.v0[k], n, w.P[k], w.G[k], w.Dinv[k], w.s66[2], w.s6[3], Pplus)
        else:
            ok = True
            for i in range(6):
                for j in range(6):
                    Pplus[i, j] = w.P[k, i, j]
        if not ok:
            return k
        p = m.parent[k]
        if p < 0:
            continue
        if inertial:
            for i in range(6):
                for j in range(6):
                    w.P[p, i, j] += Pplus[i, j]
        else:
            add_phi_inertia(w.R[k], w.l[k], Pplus, w.P[p], w.s66)
    return -1


@njit(**JIT)
def innovations_filter(m, w, T: np.ndarray, with_bias: bool, use_fext: bool) -> None:
    """Tip-to-base filter (seed 001 eqs. 49–51 / 63–65; seed 000 A.2): z in w.f (as z⁺), ε, ν."""
    nb = m.parent.shape[0]
    for k in range(nb):
        for i in range(6):
            s = 0.0
            if with_bias:
                s = w.b[k, i]
                for j in range(6):
                    s += w.P[k, i, j] * w.a[k, j]
            if use_fext:
                s -= w.fext[k, i]
            w.f[k, i] = s
    tmp = w.s6[2]
    for k in range(nb - 1, -1, -1):
        v0, n = m.v0[k], m.nv[k]
        z = w.f[k]
        for d in range(n):
            s = T[v0 + d]
            for i in range(6):
                s -= m.S[v0 + d, i] * z[i]
            w.eps[v0 + d] = s
        for d in range(n):
            s = 0.0
            for e in range(n):
                s += w.Dinv[k, d, e] * w.eps[v0 + e]
            w.nu[v0 + d] = s
        for i in range(6):
            for d in range(n):
                z[i] += w.G[k, i, d] * w.eps[v0 + d]
        p = m.parent[k]
        if p >= 0:
            add_phi(w.R[k], w.l[k], z, w.f[p], tmp)


@njit(**JIT)
def innovations_smoother(m, w, base: np.ndarray, with_bias: bool, qdd: np.ndarray) -> None:
    """Base-to-tip smoother (seed 001 eqs. 52–54; seed 000 A.2): β̇ and α (λ when bias-free)."""
    for k in range(m.parent.shape[0]):
        p = m.parent[k]
        ak = w.alpha[k]
        apply_phi_star(w.R[k], w.l[k], base if p < 0 else w.alpha[p], ak)
        v0, n = m.v0[k], m.nv[k]
        for d in range(n):
            s = w.nu[v0 + d]
            for i in range(6):
                s -= w.G[k, i, d] * ak[i]
            qdd[v0 + d] = s
        for d in range(n):
            for i in range(6):
                ak[i] += m.S[v0 + d, i] * qdd[v0 + d]
        if with_bias:
            for i in range(6):
                ak[i] += w.a[k, i]


@njit(**JIT)
def aba_kernel(mi, mf, wf, q, qd, tau, use_fext, qdd):
    """Innovations forward dynamics, three sweeps (seed 001 Algorithm 3; seed 000 A.1–A.2)."""
    m, w = views(mi, mf, wf)
    kind, i = check_state(m, q, qd)
    if kind != OK:
        return kind, i
    i = first_nonfinite(tau)
    if i >= 0:
        return BAD_TAU, i
    outward_placements(m, w, q)
    outward_velocities(m, w, qd)
    k = riccati_sweep(m, w)
    if k >= 0:
        return SINGULAR, k
    innovations_filter(m, w, tau, True, use_fext)
    innovations_smoother(m, w, m.a0, True, qdd)
    return OK, 0


@njit(**JIT)
def bias_free_kernel(mi, mf, wf, q, qd, tau, use_fext, qdd):
    """Algorithm 2 (seed 001 eqs. 55–59): T' = T − Hφ(Mφ*a + b − f_ext) with gravity, then
    ν by the bias-free filter, λ and β̇ by the smoother, and α = λ + ζ, ζ = φ*a."""
    m, w = views(mi, mf, wf)
    kind, i = check_state(m, q, qd)
    if kind != OK:
        return kind, i
    i = first_nonfinite(tau)
    if i >= 0:
        return BAD_TAU, i
    nv = qdd.shape[0]
    outward_placements(m, w, q)
    outward_velocities(m, w, qd)
    zero = np.zeros(nv)
    outward_accelerations(m, w, zero, m.a0)       # ζ = φ*a (with gravity as base acceleration)
    inward_forces(m, w, use_fext)
    Tbias = np.empty(nv)
    project_forces(m, w, Tbias)
    zeta = w.alpha.copy()
    k = riccati_sweep(m, w)
    if k >= 0:
        return SINGULAR, k
    Tp = tau - Tbias
    innovations_filter(m, w, Tp, False, False)
    innovations_smoother(m, w, np.zeros(6), False, qdd)   # w.alpha = λ
    w.alpha[:] += zeta
    return OK, 0


@njit(**JIT)
def minv_kernel(mi, mf, wf, q, Minv):
    """M⁻¹ = (I − HψK)* D⁻¹ (I − HψK) (seed 001 Identity 6, eq. 46; seed 000 eq. 3.6).

    The filter and smoother of Algorithm 1 (eqs. 49–54) run on all nv unit inputs at once, one
    6 × nv block per body (w.X holds Z⁺ inward, then Λ outward), in the inertial frame where the
    block propagations φ and φ* are identities.  Inward, body k's block is non-zero only on its
    subtree's columns [v0(k), vend(k)); outward only the upper triangle c ≥ v0(k) is formed and then
    mirrored: O(N · nv) in all."""
    m, w = views(mi, mf, wf)
    kind, i = check_configuration(m, q)
    if kind != OK:
        return kind, i
    nb = m.parent.shape[0]
    nv = Minv.shape[0]
    outward_positions(m, w, q)
    k = riccati_sweep(m, w, True)
    if k >= 0:
        return SINGULAR, k
    # C-layout views of the same memory, so the column loops below vectorize
    H, E, X = np.ascontiguousarray(w.Sw), np.ascontiguousarray(w.Y), np.ascontiguousarray(w.X)
    for k in range(nb):
        for i in range(6):
            for c in range(m.v0[k], m.vend[k]):
                X[k, i, c] = 0.0
    for k in range(nb - 1, -1, -1):
        v0, n, c0, c1 = m.v0[k], m.nv[k], m.v0[k], m.vend[k]
        Z = X[k]
        # E = I(rows of k) − H(k) Z;  rows of k of M⁻¹ ← N = D⁻¹ E;  Z⁺ = Z + G E   (eqs. 50–51)
        for d in range(n):                 # (inner loops run along contiguous columns)
            for c in range(c0, c1):
                E[d, c] = 0.0
            E[d, v0 + d] = 1.0
            for i in range(6):
                h = H[v0 + d, i]
                if h != 0.0:
                    for c in range(c0, c1):
                        E[d, c] -= h * Z[i, c]
        for d in range(n):
            for c in range(c0, nv):
                Minv[v0 + d, c] = 0.0
            for e in range(n):
                g = w.Dinv[k, d, e]
                for c in range(c0, c1):
                    Minv[v0 + d, c] += g * E[e, c]
        p = m.parent[k]
        if p >= 0:
            for i in range(6):
                for c in range(c0, c1):
                    X[p, i, c] += Z[i, c]
                for d in range(n):
                    g = w.G[k, i, d]
                    for c in range(c0, c1):
                        X[p, i, c] += g * E[d, c]
    for k in range(nb):
        # Λ(k) = Λ(p) + H*(k) M⁻¹(rows of k),  M⁻¹(rows) −= G* Λ(p)   (eqs. 53–54)
        p, v0, n, c0 = m.parent[k], m.v0[k], m.nv[k], m.v0[k]
        Lam = X[k]
        for i in range(6):
            for c in range(c0, nv):
                Lam[i, c] = 0.0 if p < 0 else X[p, i, c]
        for d in range(n):
            for i in range(6):
                g = w.G[k, i, d]
                for c in range(c0, nv):
                    Minv[v0 + d, c] -= g * Lam[i, c]
        for d in range(n):
            for i in range(6):
                sd = H[v0 + d, i]
                if sd != 0.0:
                    for c in range(c0, nv):
                        Lam[i, c] += sd * Minv[v0 + d, c]
    for r in range(nv):
        for c in range(r):
            Minv[r, c] = Minv[c, r]
    return OK, 0


# ---------------------------------------------------------------- Python API
def forward_dynamics(model: Model, q, qd, tau, f_ext=None) -> np.ndarray:
    """q̈ = M⁻¹(τ − C − g + J*f_ext) by the O(N) innovations algorithm (SPEC §5)."""
    q = as_vector(q, model.nq, "q")
    qd = as_vector(qd, model.nv, "qd")
    tau = as_vector(tau, model.nv, "tau")
    use = pack_external_forces(model, model.workspace(), f_ext) if f_ext else False
    mi, mf, wf = model.packed()
    qdd = np.empty(model.nv)
    kind, index = aba_kernel(mi, mf, wf, q, qd, tau, use, qdd)
    if kind:
        raise_for_status(model, kind, index)
    return qdd


def forward_dynamics_bias_free(model: Model, q, qd, tau, f_ext=None) -> tuple[np.ndarray, np.ndarray]:
    """Algorithm 2 of seed 001: (q̈, α) with α(k) the spatial acceleration of every body (nb × 6,
    body frames, gravity included as the base acceleration)."""
    q = as_vector(q, model.nq, "q")
    qd = as_vector(qd, model.nv, "qd")
    tau = as_vector(tau, model.nv, "tau")
    use = pack_external_forces(model, model.workspace(), f_ext) if f_ext else False
    qdd = np.empty(model.nv)
    raise_for_status(model, *bias_free_kernel(*model.packed(), q, qd, tau, use, qdd))
    return qdd, model.workspace().alpha.copy()


def mass_matrix_inverse(model: Model, q) -> np.ndarray:
    """M(q)⁻¹ by the innovations factorization (seed 001 Identity 6)."""
    q = as_vector(q, model.nq, "q")
    Minv = np.empty((model.nv, model.nv))
    raise_for_status(model, *minv_kernel(*model.packed(), q, Minv))
    return Minv
