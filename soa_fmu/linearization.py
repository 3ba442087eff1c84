"""Linearization of the dynamics: derivatives of inverse and forward dynamics, state-space (A, B).

Coordinates as in :mod:`soa_fmu.sensitivities`: ∂/∂θᵢ is the derivative along the i-th velocity
direction, d/dε X(θ ⊕ ε eᵢ); the state is x = (δ, β) with θ = θ_op ⊕ δ (tangent coordinates, nv + nv)
so quaternion joints need no special care from the caller.

Inverse-dynamics derivatives: an O(N·nv) spatial recursion (chosen over −𝓜⁻¹(∂𝓜/∂θ q̈ + ∂(Cq̇ + g)/∂θ)
from the Christoffel tensor, which costs O(nv³) and needs second derivatives of 𝓜 for ∂(Cq̇)/∂θ).
A motion along velocity direction i moves the subtree of its body n rigidly by exp(ε s(i)), s(i) =
H_𝕀*(i) in the inertial frame (seed 004 §5.2); every inertial-frame quantity of the subtree then
rotates (the operator identities 3.19–3.21, 3.25–3.27) and the relative velocities/accelerations
with it.  Differentiating the Newton–Euler recursion f(k) = M_𝕀 α + v ×̄* M_𝕀 v, T = H f under
that motion, with the composite inertia R_𝕀, its rate Ṙ_𝕀, the composite momentum h and the
composite force F (all inertial frame, all O(N)), gives for coordinates a and i, body(i) = n with
parent λ, and u = s(i) ×̃ v(λ) ("i ⪯ a": the body of i is an ancestor of, or is, the body of a):

    ∂T(a)/∂θᵢ = −F(a)·y(i) − K(a)·u(i)                         i ⪯ a
              =  s(a)·[s(i) ×̄* F(n) − R_𝕀(n) y(i) − Ṙ_𝕀(n) u(i) − u(i) ×̄* h(n)]     a ≺ i
    ∂T(a)/∂βᵢ =  K(a)·s(i) + F(a)·c(i)                          i ⪯ a
              =  s(a)·[Ṙ_𝕀(n) s(i) + R_𝕀(n) c(i) + s(i) ×̄* h(n)]                   a ≺ i

where F(a) = R_𝕀 s(a), K(a) = Ṙ_𝕀 s(a) − s(a) ×̄* h (body of a), y(i) = s(i) ×̃ α(λ) − u(i) ×̃ v(λ),
c(i) = (v(n) + v(λ)) ×̃ s(i), gravity entering as the base acceleration α(world) = [0; −g].  Forces in
``f_ext`` are fixed in their bodies and rotate with them.

Forward dynamics:  q̈ = 𝓜⁻¹(τ − C − g),  ∂q̈/∂θ = −𝓜⁻¹ ∂T/∂θ, ∂q̈/∂β = −𝓜⁻¹ ∂T/∂β (at q̈), ∂q̈/∂τ = 𝓜⁻¹
(the innovations factorization, seed 001 Identity 6) — the O(N·nv) analogue of Pinocchio's
``computeABADerivatives``.

State space:  δ̇ = β + ½[δ, β] + O(δ²) (right Jacobian of the exponential map; the bracket is non-zero
only inside spherical/free/planar joints, γ from :func:`~soa_fmu.sensitivities.structure_constants`),
so

    A = [[½Γ(β), I], [∂q̈/∂θ, ∂q̈/∂β]],   B = [[0], [𝓜⁻¹]],   Γ(β)[e, a] = Σ_b γ^e_ab β_b.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .articulated import minv_kernel
from .inverse_dynamics import inward_forces, project_forces, rnea_kernel
from .joints import FREE, PLANAR, SPHERICAL
from .kinematics import (BAD_TAU, OK, as_vector, check_state, first_nonfinite, outward_accelerations,
                         outward_velocities, pack_external_forces, raise_for_status,
                         world_placements)
from .model import Model, views
from .sensitivities import (dot6, force_to_world, inertial_frame_sweep, joint_brackets, matvec6,
                            motion_to_world, packed, sensitivity_views)
from .spatial import JIT, cross_force, cross_motion, quat_to_matrix


# ---------------------------------------------------------------- inverse-dynamics derivatives
@njit(**JIT)
def inverse_dynamics_derivative_sweep(m, w, sw, dq, dv) -> None:
    """∂T/∂θ, ∂T/∂β (module docstring).  Needs the Newton–Euler sweeps at (θ, β, β̇): w.R, w.l,
    w.V, w.alpha and the composite forces w.f."""
    nb = m.parent.shape[0]
    world_placements(m, w)
    inertial_frame_sweep(m, w, sw, True)
    for k in range(nb):
        motion_to_world(w.Rw[k], w.pw[k], w.alpha[k], sw.acc[k])
        force_to_world(w.Rw[k], w.pw[k], w.f[k], sw.f[k])
    t = sw.t6[1]
    g = sw.t6[2]
    vl = sw.t6[3]
    zero = np.zeros(6)
    for n in range(nb):
        p = m.parent[n]
        v_lam = zero if p < 0 else sw.v[p]
        a_lam = m.a0 if p < 0 else sw.acc[p]
        for c in range(6):
            vl[c] = sw.v[n, c] + v_lam[c]
        for i in range(m.v0[n], m.v0[n] + m.nv[n]):
            si = sw.s[i]
            u, y, z, zb, K, cv = sw.u[i], sw.y[i], sw.z[i], sw.zb[i], sw.K[i], sw.cv[i]
            cross_motion(si, v_lam, u)                       # u = s ×̃ v(λ)
            cross_motion(si, a_lam, y)
            cross_motion(u, v_lam, t)
            for c in range(6):
                y[c] -= t[c]                                 # y = s ×̃ α(λ) − u ×̃ v(λ)
            cross_motion(vl, si, cv)                         # c = (v(n) + v(λ)) ×̃ s
            matvec6(sw.Rdot[n], si, K)
            cross_force(si, sw.h[n], g)
            for c in range(6):
                zb[c] = K[c] + g[c]
                K[c] -= g[c]                                 # K = Ṙ s − s ×̄* h
            matvec6(sw.RI[n], cv, t)
            for c in range(6):
                zb[c] += t[c]                                # z̄ = Ṙ s + R c + s ×̄* h
            cross_force(si, sw.f[n], z)
            matvec6(sw.RI[n], y, t)
            for c in range(6):
                z[c] -= t[c]
            matvec6(sw.Rdot[n], u, t)
            cross_force(u, sw.h[n], g)
            for c in range(6):
                z[c] -= t[c] + g[c]                          # z = s ×̄* F − R y − Ṙ u − u ×̄* h
    dq[:] = 0.0
    dv[:] = 0.0
    for A in range(nb):
        for a in range(m.v0[A], m.v0[A] + m.nv[A]):
            I = A
            while I >= 0:
                for i in range(m.v0[I], m.v0[I] + m.nv[I]):
                    dq[a, i] = -dot6(sw.F[a], sw.y[i]) - dot6(sw.K[a], sw.u[i])
                    dv[a, i] = dot6(sw.K[a], sw.s[i]) + dot6(sw.F[a], sw.cv[i])
                    if I != A:
                        dq[i, a] = dot6(sw.s[i], sw.z[a])
                        dv[i, a] = dot6(sw.s[i], sw.zb[a])
                I = m.parent[I]


@njit(**JIT)
def rnea_derivatives_kernel(mi, mf, wf, sf, q, qd, qdd, use_fext, tau, dq, dv):
    kind, i = rnea_kernel(mi, mf, wf, q, qd, qdd, use_fext, tau)
    if kind != OK:
        return kind, i
    m, w = views(mi, mf, wf)
    inverse_dynamics_derivative_sweep(m, w, sensitivity_views(mi, sf), dq, dv)
    return OK, 0


@njit(**JIT)
def aba_derivatives_kernel(mi, mf, wf, sf, q, qd, tau, use_fext, qdd, Minv, dq, dv, dqdd_dq,
                           dqdd_dv):
    """𝓜⁻¹ by the innovations factorization (seed 001 Identity 6), the bias C + g − J*f_ext by
    Newton–Euler at β̇ = 0, q̈ = 𝓜⁻¹(τ − bias), the Newton–Euler sweeps again at q̈, and
    ∂q̈/∂θ = −𝓜⁻¹ ∂T/∂θ, ∂q̈/∂β = −𝓜⁻¹ ∂T/∂β."""
    i = first_nonfinite(tau)
    if i >= 0:
        return BAD_TAU, i
    kind, i = minv_kernel(mi, mf, wf, q, Minv)            # checks θ, sets the placements R, l
    if kind != OK:
        return kind, i
    m, w = views(mi, mf, wf)
    kind, i = check_state(m, q, qd)
    if kind != OK:
        return kind, i
    nv = qdd.shape[0]
    outward_velocities(m, w, qd)
    qdd[:] = 0.0
    outward_accelerations(m, w, qdd, m.a0)
    inward_forces(m, w, use_fext)
    bias = np.empty(nv)
    project_forces(m, w, bias)
    for r in range(nv):
        bias[r] = tau[r] - bias[r]
    np.dot(Minv, bias, qdd)
    outward_accelerations(m, w, qdd, m.a0)
    inward_forces(m, w, use_fext)
    inverse_dynamics_derivative_sweep(m, w, sensitivity_views(mi, sf), dq, dv)
    np.dot(Minv, dq, dqdd_dq)
    np.dot(Minv, dv, dqdd_dv)
    for r in range(nv):
        for c in range(nv):
            dqdd_dq[r, c] = -dqdd_dq[r, c]
            dqdd_dv[r, c] = -dqdd_dv[r, c]
    return OK, 0


# ---------------------------------------------------------------- Python API
def inverse_dynamics_derivatives(model: Model, q, qd, qdd, f_ext=None) -> tuple[np.ndarray, np.ndarray]:
    """(∂τ/∂θ, ∂τ/∂β) of τ = inverse_dynamics(q, β, β̇): nv × nv each, ∂τ/∂β̇ being 𝓜 (the analogue
    of Pinocchio's ``computeRNEADerivatives``; derivatives along the velocity directions)."""
    q = as_vector(q, model.nq, "q")
    qd = as_vector(qd, model.nv, "qd")
    qdd = as_vector(qdd, model.nv, "qdd")
    use = pack_external_forces(model, model.workspace(), f_ext) if f_ext else False
    nv = model.nv
    tau, dq, dv = np.empty(nv), np.empty((nv, nv)), np.empty((nv, nv))
    raise_for_status(model, *rnea_derivatives_kernel(*packed(model), q, qd, qdd, use, tau, dq, dv))
    return dq, dv


def forward_dynamics_derivatives(model: Model, q, qd, tau, f_ext=None
                                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(∂q̈/∂θ, ∂q̈/∂β, ∂q̈/∂τ = 𝓜⁻¹) of q̈ = forward_dynamics(q, β, τ) (the analogue of Pinocchio's
    ``computeABADerivatives``; derivatives along the velocity directions)."""
    q = as_vector(q, model.nq, "q")
    qd = as_vector(qd, model.nv, "qd")
    tau = as_vector(tau, model.nv, "tau")
    use = pack_external_forces(model, model.workspace(), f_ext) if f_ext else False
    nv = model.nv
    qdd, Minv = np.empty(nv), np.empty((nv, nv))
    dq, dv, ddq, ddv = (np.empty((nv, nv)) for _ in range(4))
    raise_for_status(model, *aba_derivatives_kernel(*packed(model), q, qd, tau, use, qdd, Minv, dq,
                                                    dv, ddq, ddv))
    return ddq, ddv, Minv


def linearize(model: Model, q, qd, tau, f_ext=None) -> tuple[np.ndarray, np.ndarray]:
    """First-order state-space model ẋ ≈ A x + B u about (θ, β, τ), x = (δ, β − β_op) with
    θ = θ_op ⊕ δ (tangent coordinates, 2nv), u = τ − τ_op (nv): A = [[½Γ(β), I], [∂q̈/∂θ, ∂q̈/∂β]],
    B = [[0], [𝓜⁻¹]] (module docstring).  For LQR: ``scipy.linalg.solve_continuous_are(A, B, Q, R)``;
    the feedback acts on δ = configuration_difference(model, θ_op, θ)."""
    ddq, ddv, Minv = forward_dynamics_derivatives(model, q, qd, tau, f_ext)
    nv = model.nv
    A = np.zeros((2 * nv, 2 * nv))
    B = np.zeros((2 * nv, nv))
    A[:nv, nv:] = np.eye(nv)
    A[nv:, :nv] = ddq
    A[nv:, nv:] = ddv
    B[nv:] = Minv
    brackets = joint_brackets(model)
    if brackets:
        beta = as_vector(qd, nv, "qd")
        for v0, n, gamma in brackets:
            A[v0:v0 + n, v0:v0 + n] = 0.5 * np.einsum("eab,b->ea", gamma, beta[v0:v0 + n])
    return A, B


# ---------------------------------------------------------------- θ ⊖ θ₀ (the inverse of ⊕)
def _rotation_log(qw: float, qx: float, qy: float, qz: float) -> np.ndarray:
    """Rotation vector δ with quaternion (w, x, y, z) = exp(δ/2)."""
    if qw < 0:
        qw, qx, qy, qz = -qw, -qx, -qy, -qz
    v = np.array([qx, qy, qz])
    s = np.linalg.norm(v)
    if s < 1e-12:
        return 2.0 * v
    return 2.0 * np.arctan2(s, qw) / s * v


def _quat_conj_mul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a⁻¹ ⊗ b for unit quaternions (w, x, y, z)."""
    aw, ax, ay, az = a[0], -a[1], -a[2], -a[3]
    bw, bx, by, bz = b
    return np.array([aw * bw - ax * bx - ay * by - az * bz,
                     aw * bx + ax * bw + ay * bz - az * by,
                     aw * by - ax * bz + ay * bw + az * bx,
                     aw * bz + ax * by - ay * bx + az * bw])


def _twist_translation_inverse(w: np.ndarray, t: np.ndarray) -> np.ndarray:
    """v with twist_exp(w, v) translating by t: solve V(w) v = t."""
    th = np.linalg.norm(w)
    if th < 1e-12:
        return t.copy()
    a = w / th
    A = np.array([[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]])
    V = np.eye(3) + (1.0 - np.cos(th)) / th * A + (th - np.sin(th)) / th * A @ A
    return np.linalg.solve(V, t)


def configuration_difference(model: Model, q0, q1) -> np.ndarray:
    """δ (nv) with θ₁ = θ₀ ⊕ δ, the inverse of :func:`soa_fmu.integrators.integrate_configuration`
    (rotation vectors for quaternions, SE(3)/SE(2) logarithms for free/planar joints, plain
    differences otherwise).  The error signal of a state feedback about θ₀."""
    m = model.arrays()
    q0 = as_vector(q0, model.nq, "q0")
    q1 = as_vector(q1, model.nq, "q1")
    d = np.empty(model.nv)
    R0 = np.empty((3, 3))
    for k in range(model.nbodies):
        a, v0, code = m.q0[k], m.v0[k], m.jtype[k]
        if code in (SPHERICAL, FREE):
            dq = _quat_conj_mul(q0[a:a + 4], q1[a:a + 4])
            d[v0:v0 + 3] = _rotation_log(*dq)
            if code == FREE:
                quat_to_matrix(q0[a], q0[a + 1], q0[a + 2], q0[a + 3], R0)
                d[v0 + 3:v0 + 6] = _twist_translation_inverse(d[v0:v0 + 3],
                                                              R0.T @ (q1[a + 4:a + 7] - q0[a + 4:a + 7]))
        elif code == PLANAR:
            th = q0[a]
            c, s = np.cos(th), np.sin(th)
            dx, dy = q1[a + 1] - q0[a + 1], q1[a + 2] - q0[a + 2]
            d[v0] = q1[a] - th
            v = _twist_translation_inverse(np.array([0.0, 0.0, d[v0]]),
                                           np.array([c * dx + s * dy, -s * dx + c * dy, 0.0]))
            d[v0 + 1:v0 + 3] = v[:2]
        else:
            d[v0:v0 + m.nv[k]] = q1[a:a + m.nq[k]] - q0[a:a + m.nq[k]]
    return d


__all__ = ["inverse_dynamics_derivatives", "forward_dynamics_derivatives", "linearize",
           "configuration_difference"]
