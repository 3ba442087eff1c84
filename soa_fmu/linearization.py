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
(the innovations factorization, seed 001 Identity 6) — the analogue of Pinocchio's
``computeABADerivatives``.  𝓜⁻¹ is applied to the columns of ∂T by the innovations filter and
smoother (seed 001 eqs. 49–54) on all of them at once: O(N·nv) per matrix, where a dense product
with 𝓜⁻¹ would cost O(nv³) (up to nv = 12 the dense product is the cheaper one and is used).

Flexible bodies (seed 000 §4; core/flexible.c): ∂T/∂β exactly (T is quadratic in β: the central
difference of unit steps), ∂T/∂θ by Richardson's fourth-order central difference of the O(N)
flexible Newton–Euler along θ ⊕ h eᵢ — O(N·nv) as above, not the analytic recursion — and 𝓜⁻¹ by
the factored form of the flexible innovations factorization (docs/flexible.md).

The kernels are the C core's ``soa_fmu/core/derivatives.c`` (``soa_rnea_derivatives``,
``soa_aba_derivatives``), over the shared sweeps (placements, H_𝕀*, M_𝕀, V_𝕀, ``soa_aba``,
``soa_minv_columns``, ``soa_innovations_solve``) and the composite inertias, rates and momenta of
``soa_fmu/core/sensitivities.c``.

State space:  δ̇ = β + ½[δ, β] + O(δ²) (right Jacobian of the exponential map; the bracket is non-zero
only inside spherical/free/planar joints, γ from :func:`~soa_fmu.sensitivities.structure_constants`),
so

    A = [[½Γ(β), I], [∂q̈/∂θ, ∂q̈/∂β]],   B = [[0], [𝓜⁻¹]],   Γ(β)[e, a] = Σ_b γ^e_ab β_b.
"""
from __future__ import annotations

import numpy as np

from . import _core
from .joints import FREE, PLANAR, SPHERICAL
from .kinematics import as_vector, external_forces
from .model import Model
from .sensitivities import joint_brackets


# ---------------------------------------------------------------- Python API
def inverse_dynamics_derivatives(model: Model, q, qd, qdd, f_ext=None) -> tuple[np.ndarray, np.ndarray]:
    """(∂τ/∂θ, ∂τ/∂β) of τ = inverse_dynamics(q, β, β̇): nv × nv each, ∂τ/∂β̇ being 𝓜 (the analogue
    of Pinocchio's ``computeRNEADerivatives``; derivatives along the velocity directions)."""
    use = external_forces(model, None, f_ext) if f_ext else False
    return _core.rnea_derivatives(model._data or model.data, q, qd, qdd, use)


def forward_dynamics_derivatives(model: Model, q, qd, tau, f_ext=None
                                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(∂q̈/∂θ, ∂q̈/∂β, ∂q̈/∂τ = 𝓜⁻¹) of q̈ = forward_dynamics(q, β, τ) (the analogue of Pinocchio's
    ``computeABADerivatives``; derivatives along the velocity directions)."""
    use = external_forces(model, None, f_ext) if f_ext else False
    return _core.aba_derivatives(model._data or model.data, q, qd, tau, use)


def linearize(model: Model, q, qd, tau, f_ext=None) -> tuple[np.ndarray, np.ndarray]:
    """First-order state-space model ẋ ≈ A x + B u about (θ, β, τ), x = (δ, β − β_op) with
    θ = θ_op ⊕ δ (tangent coordinates, 2nv), u = τ − τ_op (nv): A = [[½Γ(β), I], [∂q̈/∂θ, ∂q̈/∂β]],
    B = [[0], [𝓜⁻¹]] (module docstring).  For LQR: ``scipy.linalg.solve_continuous_are(A, B, Q, R)``;
    the feedback acts on δ = configuration_difference(model, θ_op, θ)."""
    use = external_forces(model, None, f_ext) if f_ext else False
    A, B = _core.linearize(model._data or model.data, q, qd, tau, use)
    brackets = joint_brackets(model)
    if brackets:
        beta = as_vector(qd, model.nv, "qd")
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
    differences otherwise, flexible bodies' modal coordinates included).  The error signal of a
    state feedback about θ₀."""
    m = model.arrays()
    q0 = as_vector(q0, model.nq, "q0")
    q1 = as_vector(q1, model.nq, "q1")
    d = np.empty(model.nv)
    for k in range(model.nbodies):
        a, v0, code = m.q0[k], m.v0[k], m.jtype[k]
        if code in (SPHERICAL, FREE):
            dq = _quat_conj_mul(q0[a:a + 4], q1[a:a + 4])
            d[v0:v0 + 3] = _rotation_log(*dq)
            if code == FREE:
                R0 = _core.quat_to_matrix(q0[a], q0[a + 1], q0[a + 2], q0[a + 3])
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
            d[v0:v0 + m.nvj[k]] = q1[a:a + m.nqj[k]] - q0[a:a + m.nqj[k]]
        if len(m.nmod):                                       # modal coordinates: vectors
            e, f, n = a + m.nqj[k], v0 + m.nvj[k], m.nmod[k]
            d[f:f + n] = q1[e:e + n] - q0[e:e + n]
    return d


__all__ = ["inverse_dynamics_derivatives", "forward_dynamics_derivatives", "linearize",
           "configuration_difference"]
