"""Mass-matrix sensitivities, Christoffel symbols and the Coriolis matrix (SPEC E14; seed 004).

What "∂/∂θᵢ" means
    i runs over the nv VELOCITY coordinates.  ∂X/∂θᵢ is the derivative along the i-th velocity
    direction, d/dε X(θ ⊕ ε eᵢ) at ε = 0, where θ ⊕ δ is the exponential map of the integrators
    (:func:`soa_fmu.integrators.integrate_configuration`): the body of joint k moves by
    exp(ε H*(k)eᵢ) in its own frame.  For revolute, prismatic, helical and cylindrical joints this is
    the ordinary partial derivative; for spherical and free joints (unit quaternion θ, nq ≠ nv) it is
    the derivative in the local tangent coordinates — the only choice that gives nv × nv × nv
    tensors and the one the Coriolis terms need (Pinocchio's ``ddq_dq`` uses the same convention).

Two evaluations of ∂M/∂θᵢ
    * operator form (seed 004 Lemma 4.2, eq. 4.43), dense, :func:`mass_matrix_derivative_operators`
      — verification only.  In body frames H* and M are constant and only E_φ depends on θ:
      [E_φ]_θᵢ = E_φ ℍ^i_δ (the body-frame form of 3.36), so [φ]_θᵢ = φ E_φ ℍ^i_δ φ and

          ∂M/∂θᵢ = Hφ[ℍ^i_δ φM + Mφ*ℍ^{i*}_δ]φ*H* − H[ℍ^i_δ φMφ* + φMφ*ℍ^{i*}_δ]H*

      with ℍ(i) = S[H*(i)] (2.7, 2.11) the force cross product of the hinge axis.  For revolute
      hinges ℍ is skew, ℍ* = −ℍ, and the last bracket vanishes (H(i)ℍ(i) = 0 for a 1-dof hinge),
      which is 4.43 verbatim; the general form also covers prismatic and multi-dof hinges.
    * composite-body form (Lemma 5.3, eq. 5.52), compiled, :func:`mass_matrix_derivative`.  With
      inertial-frame quantities (§5.2) — H_𝕀*(k) = s(k) (5.47), ℍ_𝕀(i) = S[s(i)] (5.48) and the
      composite inertias R_𝕀(k) = Σ_{c ⪰ k} M_𝕀(c) (5.44 with 5.50) — and, for a pair j ⪯ k
      (body of j an ancestor of, or equal to, the body of k):

          ∂M(j,k)/∂θᵢ = H_𝕀(j) ℍ_𝕀(i) R_𝕀(k) H_𝕀*(k)                    j ≺ i ⪯ k
                      = H_𝕀(j) [ℍ_𝕀(i) R_𝕀(i) + R_𝕀(i) ℍ_𝕀*(i)] H_𝕀*(k)    k ≺ i
                      = 0                                              otherwise (i ⪯ j, other branches)

      "≺/⪯" compare the BODIES of the coordinates along the tree, so the dofs of one multi-dof joint
      count as equal.  Cost O(nv³) (the size of the answer), after O(N) sweeps.

Christoffel symbols (eq. 5.53), ``christoffel_symbols``:  ℂᵢ(j,k) = ½[∂_k M(i,j) + ∂_j M(i,k) − ∂_i M(j,k)].
    The identities of §5.3 hold for every joint type with the derivative defined above.  For trees of
    1-dof (or commuting multi-dof) joints, C(i) = θ̇*ℂᵢθ̇ is the Newton–Euler bias.  Where the
    velocity directions of a joint do not commute (spherical, free, planar: [X_a, X_b] = Σ_e γ^e_ab X_e
    with H*(a) ×̃ H*(b) = Σ_e γ^e_ab H*(e)), the Boltzmann–Hamel equations add the term
    Σ_{b,e} γ^e_ib β_b (𝓜β)_e, so C(i) = β*ℂᵢβ + β*Γᵢβ with Γᵢ(b,c) = Σ_e γ^e_ib 𝓜(e,c);
    ``christoffel_symbols(..., quasi_velocity=True)`` returns ℂᵢ + ½(Γᵢ + Γᵢ*), the symmetrized
    Christoffel symbols of the kinetic-energy metric in the velocity frame, for which β*ℂᵢβ = C(i)
    holds for every joint (but 5.53 and the last identity of §5.3 do not).

Coriolis matrix, ``coriolis_matrix``:  C(a, b) = Σ_c Γ_a(c, b) β_c with
        Γ_a(c, b) = ℂ_a(b, c) + ½ Σ_e [γ^e_ab 𝓜(e,c) + γ^e_cb 𝓜(e,a) − γ^e_ca 𝓜(e,b)],
    the Christoffel symbols (first kind) of the Levi-Civita connection of the kinetic-energy metric
    in the velocity frame (Koszul's formula); their symmetric part in (b, c) is
    ``christoffel_symbols(quasi_velocity=True)``.  For 1-dof joints C(a, b) = Σ_c ℂ_a(b, c) β_c.
    Then C β = bias_forces − gravity_forces, Ṁ − 2C is skew-symmetric (metric compatibility), and C
    equals Pinocchio's ``computeCoriolisMatrix`` for every joint type.  Evaluated in O(N·nv) from the
    inertial-frame quantities: for coordinates a ⪯ b (bodies A ⪯ B), ũ(a) = s(a) ×̃ v(A),

        C(a, b) = s(a)·[½(Ṙ_𝕀(B) s(b) + s(b) ×̄* h(B)) − R_𝕀(B) ũ(b)]
        C(b, a) = s(a)·[½(Ṙ_𝕀(B) s(b) − s(b) ×̄* h(B))] − F(b)·ũ(a)            (A ≺ B)

    with h the composite momentum, Ṙ_𝕀 the rate of the composite inertia and F(b) = R_𝕀(B) s(b).
"""
from __future__ import annotations

import weakref
from typing import NamedTuple

import numpy as np
from numba import njit
from numba.extending import register_jitable

from .kinematics import (OK, as_vector, check_configuration, check_state, outward_positions,
                         outward_velocities, raise_for_status)
from .mass_matrix import mass_matrix
from .model import Model, view2, view3, views
from .spatial import INLINE, JIT, add_phi_inertia, cross_force, cross_motion, skew
from .verify.operators import build_operators


# ---------------------------------------------------------------- workspace
class SensitivityWorkspace(NamedTuple):
    """Per-call arrays of the sensitivity sweeps (inertial frame 𝕀 = world axes at the world origin),
    views into one flat float buffer ``sf`` (passed to the compiled entry points with mi, mf, wf)."""

    s: np.ndarray        # (nv, 6) H_𝕀*(i), eq. 5.47
    F: np.ndarray        # (nv, 6) R_𝕀(k) H_𝕀*(i), k = body(i)  (the CRBA force of column i)
    RI: np.ndarray       # (nb, 6, 6) composite inertia R_𝕀(k), eqs. 5.44 + 5.50
    Rdot: np.ndarray     # (nb, 6, 6) its time derivative Σ_{c⪰k} (v ×̄* M_𝕀 − M_𝕀 v ×̃)(c)
    h: np.ndarray        # (nb, 6) composite momentum Σ_{c⪰k} M_𝕀(c) v(c)
    v: np.ndarray        # (nb, 6) body velocity, inertial frame
    acc: np.ndarray      # (nb, 6) body spatial acceleration, inertial frame
    f: np.ndarray        # (nb, 6) composite force Σ_{c⪰k} f(c), inertial frame
    u: np.ndarray        # (nv, 6) per-coordinate work vectors of the Coriolis and linearization sweeps
    y: np.ndarray        # (nv, 6)
    z: np.ndarray        # (nv, 6)
    zb: np.ndarray       # (nv, 6)
    K: np.ndarray        # (nv, 6)
    cv: np.ndarray       # (nv, 6)
    t6: np.ndarray       # (4, 6) scratch


@register_jitable
def sensitivity_views(mi: np.ndarray, sf: np.ndarray) -> SensitivityWorkspace:
    """Named views into the flat sensitivity buffer (compiled inline into every entry point)."""
    nb, nv = mi[0], mi[1]
    o = 0
    s, o = view2(sf, o, nv, 6)
    F, o = view2(sf, o, nv, 6)
    RI, o = view3(sf, o, nb, 6, 6)
    Rdot, o = view3(sf, o, nb, 6, 6)
    h, o = view2(sf, o, nb, 6)
    v, o = view2(sf, o, nb, 6)
    acc, o = view2(sf, o, nb, 6)
    f, o = view2(sf, o, nb, 6)
    u, o = view2(sf, o, nv, 6)
    y, o = view2(sf, o, nv, 6)
    z, o = view2(sf, o, nv, 6)
    zb, o = view2(sf, o, nv, 6)
    K, o = view2(sf, o, nv, 6)
    cv, o = view2(sf, o, nv, 6)
    t6, o = view2(sf, o, 4, 6)
    return SensitivityWorkspace(s, F, RI, Rdot, h, v, acc, f, u, y, z, zb, K, cv, t6)


_buffers: "weakref.WeakKeyDictionary[Model, tuple]" = weakref.WeakKeyDictionary()
_brackets: "weakref.WeakKeyDictionary[Model, tuple]" = weakref.WeakKeyDictionary()


def packed(model: Model) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(mi, mf, wf, sf): the model's flat buffers plus its sensitivity buffer (allocated once per
    model, re-allocated when the model was edited)."""
    mi, mf, wf = model.packed()
    cached = _buffers.get(model)
    if cached is None or cached[0] is not mi:
        nb, nv = model.nbodies, model.nv
        cached = (mi, mf, wf, np.zeros(8 * nv * 6 + nb * (2 * 36 + 4 * 6) + 24))
        _buffers[model] = cached
    return cached


# ---------------------------------------------------------------- small compiled helpers
@njit(**INLINE)
def dot6(a: np.ndarray, b: np.ndarray) -> float:
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3] + a[4] * b[4] + a[5] * b[5]


@njit(**INLINE)
def matvec6(A: np.ndarray, x: np.ndarray, out: np.ndarray) -> None:
    """out = A x for a 6×6 A."""
    for i in range(6):
        s = 0.0
        for j in range(6):
            s += A[i, j] * x[j]
        out[i] = s


@njit(**JIT)
def motion_to_world(Rw: np.ndarray, pw: np.ndarray, x: np.ndarray, out: np.ndarray) -> None:
    """out = φ*(k, 𝕀) x: a body-k motion vector referred to the world origin, world axes (5.47):
    [Rw xω;  Rw xv + pw × Rw xω]."""
    for i in range(3):
        out[i] = Rw[i, 0] * x[0] + Rw[i, 1] * x[1] + Rw[i, 2] * x[2]
    for i in range(3):
        out[3 + i] = Rw[i, 0] * x[3] + Rw[i, 1] * x[4] + Rw[i, 2] * x[5]
    out[3] += pw[1] * out[2] - pw[2] * out[1]
    out[4] += pw[2] * out[0] - pw[0] * out[2]
    out[5] += pw[0] * out[1] - pw[1] * out[0]


@njit(**JIT)
def force_to_world(Rw: np.ndarray, pw: np.ndarray, f: np.ndarray, out: np.ndarray) -> None:
    """out = φ(𝕀, k) f: a body-k force referred to the world origin, world axes."""
    for i in range(3):
        out[i] = Rw[i, 0] * f[0] + Rw[i, 1] * f[1] + Rw[i, 2] * f[2]
        out[3 + i] = Rw[i, 0] * f[3] + Rw[i, 1] * f[4] + Rw[i, 2] * f[5]
    out[0] += pw[1] * out[5] - pw[2] * out[4]
    out[1] += pw[2] * out[3] - pw[0] * out[5]
    out[2] += pw[0] * out[4] - pw[1] * out[3]


@njit(**INLINE)
def store_up(m, sw, jb: int, y: np.ndarray, k: int, out: np.ndarray) -> None:
    """out(j, k) = out(k, j) = H_𝕀(j) y for every coordinate j of body jb and of all its ancestors."""
    while jb >= 0:
        for j in range(m.v0[jb], m.v0[jb] + m.nv[jb]):
            val = dot6(sw.s[j], y)
            out[j, k] = val
            out[k, j] = val
        jb = m.parent[jb]


# ---------------------------------------------------------------- inertial-frame sweep
@njit(**JIT)
def inertial_frame_sweep(m, w, sw, rates: bool) -> None:
    """H_𝕀*(i) (5.47), R_𝕀(k) (5.44 in the inertial frame: with every inertia referred to one frame
    φ is the identity and the recursion is a plain sum; 5.50), and F(i) = R_𝕀 H_𝕀*(i).

    With ``rates`` (needs :func:`outward_velocities`) also the inertial-frame velocities v(k), the
    composite momenta h(k) and the composite inertia rates Ṙ_𝕀(k), with Ṁ_𝕀 = v ×̄* M_𝕀 − M_𝕀 v ×̃
    (seed 004 eq. 3.19 for a whole body).  Needs :func:`outward_positions`."""
    nb = m.parent.shape[0]
    col = sw.t6[0]
    for k in range(nb):
        RI = sw.RI[k]
        for i in range(6):
            for j in range(6):
                RI[i, j] = 0.0
        add_phi_inertia(w.Rw[k], w.pw[k], m.inertia[k], RI, w.s66)      # M_𝕀(k)
        if rates:
            vk = sw.v[k]
            motion_to_world(w.Rw[k], w.pw[k], w.V[k], vk)
            matvec6(RI, vk, sw.h[k])
            X = sw.Rdot[k]
            for j in range(6):                  # X(:, j) = v ×̄* M_𝕀(:, j);  Ṁ_𝕀 = X + X*
                cross_force(vk, RI[j], col)
                for i in range(6):
                    X[i, j] = col[i]
            for i in range(6):
                for j in range(i, 6):
                    t = X[i, j] + X[j, i]
                    X[i, j] = t
                    X[j, i] = t
    for k in range(nb - 1, -1, -1):
        p = m.parent[k]
        if p >= 0:
            for i in range(6):
                for j in range(6):
                    sw.RI[p, i, j] += sw.RI[k, i, j]
            if rates:
                for i in range(6):
                    sw.h[p, i] += sw.h[k, i]
                    for j in range(6):
                        sw.Rdot[p, i, j] += sw.Rdot[k, i, j]
    for k in range(nb):
        for a in range(m.v0[k], m.v0[k] + m.nv[k]):
            motion_to_world(w.Rw[k], w.pw[k], m.S[a], sw.s[a])
            matvec6(sw.RI[k], sw.s[a], sw.F[a])


# ---------------------------------------------------------------- ∂M/∂θᵢ (eq. 5.52)
@njit(**JIT)
def mass_matrix_derivative_kernel(mi, mf, wf, sf, q, slot, dM):
    """dM[slot[i]] = ∂M/∂θᵢ for every i with slot[i] ≥ 0, by the composite-body form, eq. 5.52."""
    m, w = views(mi, mf, wf)
    sw = sensitivity_views(mi, sf)
    kind, idx = check_configuration(m, q)
    if kind != OK:
        return kind, idx
    outward_positions(m, w, q)
    inertial_frame_sweep(m, w, sw, False)
    nb = m.parent.shape[0]
    y, t, t2 = sw.t6[1], sw.t6[2], sw.t6[3]
    dM[:] = 0.0
    # j ≺ i ⪯ k:  H_𝕀(j) ℍ_𝕀(i) R_𝕀(k) H_𝕀*(k)   (k's body, its ancestors ib, their ancestors jb)
    for kb in range(nb):
        for k in range(m.v0[kb], m.v0[kb] + m.nv[kb]):
            ib = kb
            while m.parent[ib] >= 0:
                for i in range(m.v0[ib], m.v0[ib] + m.nv[ib]):
                    if slot[i] >= 0:
                        cross_force(sw.s[i], sw.F[k], y)
                        store_up(m, sw, m.parent[ib], y, k, dM[slot[i]])
                ib = m.parent[ib]
    # k ≺ i, j ⪯ k:  H_𝕀(j) [ℍ_𝕀(i) R_𝕀(i) + R_𝕀(i) ℍ_𝕀*(i)] H_𝕀*(k)
    for ib in range(nb):
        for i in range(m.v0[ib], m.v0[ib] + m.nv[ib]):
            if slot[i] < 0:
                continue
            si = sw.s[i]
            kb = m.parent[ib]
            while kb >= 0:
                for k in range(m.v0[kb], m.v0[kb] + m.nv[kb]):
                    matvec6(sw.RI[ib], sw.s[k], t)
                    cross_force(si, t, y)                  # ℍ_𝕀(i) R_𝕀(i) s(k)
                    cross_motion(si, sw.s[k], t)
                    matvec6(sw.RI[ib], t, t2)              # −R_𝕀(i) ℍ_𝕀*(i) s(k) = R_𝕀(i)(s(i) ×̃ s(k))
                    for c in range(6):
                        y[c] -= t2[c]
                    store_up(m, sw, kb, y, k, dM[slot[i]])
                kb = m.parent[kb]
    return OK, 0


# ---------------------------------------------------------------- Coriolis matrix
@njit(**JIT)
def coriolis_kernel(mi, mf, wf, sf, q, qd, C):
    """The Coriolis matrix (module docstring), O(N·nv) after O(N) sweeps.  For coordinates a ⪯ b
    (bodies A ⪯ B), inertial frame, with ũ(a) = s(a) ×̃ v(A), X(b) and Y(b) the two brackets:

        C(a, b) = s(a)·[½(Ṙ_𝕀(B) s(b) + s(b) ×̄* h(B)) − R_𝕀(B) ũ(b)]
        C(b, a) = s(a)·[½(Ṙ_𝕀(B) s(b) − s(b) ×̄* h(B))] − F(b)·ũ(a)          (A ≺ B)
    """
    m, w = views(mi, mf, wf)
    sw = sensitivity_views(mi, sf)
    kind, idx = check_state(m, q, qd)
    if kind != OK:
        return kind, idx
    outward_positions(m, w, q)
    outward_velocities(m, w, qd)
    inertial_frame_sweep(m, w, sw, True)
    nb = m.parent.shape[0]
    ut, X, Y = sw.u, sw.z, sw.zb
    t = sw.t6[1]
    g = sw.t6[2]
    for k in range(nb):
        for b in range(m.v0[k], m.v0[k] + m.nv[k]):
            cross_motion(sw.s[b], sw.v[k], ut[b])
            matvec6(sw.Rdot[k], sw.s[b], t)                  # Ṙ_𝕀 s
            cross_force(sw.s[b], sw.h[k], g)                 # s ×̄* h
            matvec6(sw.RI[k], ut[b], X[b])                   # R_𝕀 ũ
            for c in range(6):
                X[b, c] = 0.5 * (t[c] + g[c]) - X[b, c]
                Y[b, c] = 0.5 * (t[c] - g[c])
    C[:] = 0.0
    for B in range(nb):
        for b in range(m.v0[B], m.v0[B] + m.nv[B]):
            for a in range(m.v0[B], m.v0[B] + m.nv[B]):
                C[a, b] = dot6(sw.s[a], X[b])
            A = m.parent[B]
            while A >= 0:
                for a in range(m.v0[A], m.v0[A] + m.nv[A]):
                    C[a, b] = dot6(sw.s[a], X[b])
                    C[b, a] = dot6(sw.s[a], Y[b]) - dot6(sw.F[b], ut[a])
                A = m.parent[A]
    return OK, 0


# ---------------------------------------------------------------- Python API
def _derivative_slots(model: Model, i) -> tuple[np.ndarray, int]:
    """slot[j] = position of coordinate j in the output (−1: not requested), and the count."""
    nv = model.nv
    if i is None:
        return np.arange(nv, dtype=np.int64), nv
    idx = np.atleast_1d(np.asarray(i))
    if idx.ndim != 1 or idx.dtype.kind not in "iu" or np.any(idx < -nv) or np.any(idx >= nv):
        raise ValueError(f"i must be a velocity index (or indices) in [0, {nv}), got {i!r}")
    idx = idx % nv
    if len(set(idx.tolist())) != idx.size:
        raise ValueError(f"repeated velocity index in i = {i!r}")
    slot = np.full(nv, -1, dtype=np.int64)
    slot[idx] = np.arange(idx.size)
    return slot, idx.size


def mass_matrix_derivative(model: Model, q, i=None) -> np.ndarray:
    """∂𝓜/∂θᵢ along the velocity directions (module docstring), by the composite-body form 5.52.

    ``i=None``: all of them, an nv × nv × nv array with ``dM[i, j, k] = ∂𝓜(j, k)/∂θᵢ``;
    an integer i: the nv × nv matrix ∂𝓜/∂θᵢ; a sequence: stacked along the first axis."""
    q = as_vector(q, model.nq, "q")
    slot, n = _derivative_slots(model, i)
    dM = np.empty((n, model.nv, model.nv))
    raise_for_status(model, *mass_matrix_derivative_kernel(*packed(model), q, slot, dM))
    return dM[0] if i is not None and np.ndim(i) == 0 else dM


def joint_brackets(model: Model) -> list[tuple[int, int, np.ndarray]]:
    """[(v0, n, γ)] for every joint whose velocity directions do not commute: γ[e, a, b] (n × n × n)
    with H*(a) ×̃ H*(b) = Σ_e γ[e, a, b] H*(e), i.e. the Lie brackets [X_a, X_b] = Σ_e γ^e_ab X_e of
    the velocity directions (spherical, free, planar joints).  Constant; computed once per model."""
    m = model.arrays()
    cached = _brackets.get(model)
    if cached is not None and cached[0] is m.S:
        return cached[1]
    out = []
    for k in range(model.nbodies):
        v0, n = int(m.v0[k]), int(m.nv[k])
        if n < 2:
            continue
        S = m.S[v0:v0 + n].T                          # 6 × n, body frame
        br = np.empty(6)
        gamma = np.zeros((n, n, n))
        for a in range(n):
            for b in range(n):
                cross_motion(m.S[v0 + a], m.S[v0 + b], br)
                gamma[:, a, b] = np.linalg.lstsq(S, br, rcond=None)[0]
        if np.any(np.abs(gamma) > 1e-12):
            out.append((v0, n, gamma))
    _brackets[model] = (m.S, out)
    return out


def structure_constants(model: Model) -> np.ndarray:
    """γ[e, a, b] over all coordinates (nv × nv × nv, dense; zero across joints and for 1-dof or
    commuting joints), see :func:`joint_brackets`."""
    nv = model.nv
    gamma = np.zeros((nv, nv, nv))
    for v0, n, g in joint_brackets(model):
        gamma[v0:v0 + n, v0:v0 + n, v0:v0 + n] = g
    return gamma


def christoffel_symbols(model: Model, q, quasi_velocity: bool = False) -> np.ndarray:
    """ℂ[i, j, k] = ℂᵢ(j, k) = ½[∂_k 𝓜(i,j) + ∂_j 𝓜(i,k) − ∂_i 𝓜(j,k)]  (seed 004 eq. 5.53), with
    ∂ along the velocity directions.  C(i) = β*ℂᵢβ for trees of 1-dof joints.

    ``quasi_velocity=True`` adds the symmetrized structure-constant (Boltzmann–Hamel) term so that
    β*ℂᵢβ = C(i) for every joint type, including spherical and free joints (module docstring)."""
    dM = mass_matrix_derivative(model, q)
    Ch = 0.5 * (dM.transpose(1, 2, 0) + dM.transpose(1, 0, 2) - dM)
    if quasi_velocity:
        gamma = structure_constants(model)
        if np.any(gamma):
            Gam = np.einsum("eib,ec->ibc", gamma, mass_matrix(model, q))
            Ch = Ch + 0.5 * (Gam + Gam.transpose(0, 2, 1))
    return Ch


def coriolis_matrix(model: Model, q, qd) -> np.ndarray:
    """C(q, β) with C β = bias_forces − gravity_forces and Ṁ − 2C skew-symmetric: C(a, b) =
    Σ_c ℂ_a(b, c) β_c (eq. 5.53) for 1-dof joints, the Levi-Civita connection of the kinetic-energy
    metric in general (module docstring; equal to Pinocchio's computeCoriolisMatrix).  O(N·nv)."""
    q = as_vector(q, model.nq, "q")
    qd = as_vector(qd, model.nv, "qd")
    C = np.empty((model.nv, model.nv))
    raise_for_status(model, *coriolis_kernel(*packed(model), q, qd, C))
    return C


# ---------------------------------------------------------------- dense operator form (tests)
def force_cross_matrix(x: np.ndarray) -> np.ndarray:
    """S[x] = [[ω̃, ṽ], [0, ω̃]] (seed 004 eq. 2.7): S[x] f = x ×̄* f."""
    X = np.zeros((6, 6))
    X[:3, :3] = X[3:, 3:] = skew(np.ascontiguousarray(x[:3], dtype=float))
    X[:3, 3:] = skew(np.ascontiguousarray(x[3:], dtype=float))
    return X


def mass_matrix_derivative_operators(model: Model, q, i: int) -> np.ndarray:
    """∂𝓜/∂θᵢ from the dense spatial operators (seed 004 Lemma 4.2, eq. 4.43, in body frames):

        Hφ[ℍ^i_δ φM + Mφ*ℍ^{i*}_δ]φ*H* − H[ℍ^i_δ φMφ* + φMφ*ℍ^{i*}_δ]H*

    with ℍ^i_δ the 6n × 6n block-diagonal operator holding ℍ(i) = S[H*(i)] at the block of the body of
    coordinate i.  Verification only (sizes 6n × 6n)."""
    ops = build_operators(model, q)
    m = model.arrays()
    k = next(j for j, b in enumerate(model.bodies) if b.v_index <= i < b.v_index + b.joint.nv)
    Hd = np.zeros_like(ops.phi)
    Hd[6 * k:6 * k + 6, 6 * k:6 * k + 6] = force_cross_matrix(m.S[i])
    phi, H, Mop = ops.phi, ops.H, ops.M
    X = phi @ Mop @ phi.T
    return (H @ phi @ (Hd @ phi @ Mop + Mop @ phi.T @ Hd.T) @ phi.T @ H.T
            - H @ (Hd @ X + X @ Hd.T) @ H.T)


__all__ = ["mass_matrix_derivative", "christoffel_symbols", "coriolis_matrix", "structure_constants",
           "mass_matrix_derivative_operators"]
