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
    * composite-body form (Lemma 5.3, eq. 5.52), :func:`mass_matrix_derivative`, in the C core
      (``soa_mass_matrix_derivative``, ``soa_fmu/core/sensitivities.c``).  With inertial-frame
      quantities (§5.2) — H_𝕀*(k) = s(k) (5.47), ℍ_𝕀(i) = S[s(i)] (5.48) and the composite inertias
      R_𝕀(k) = Σ_{c ⪰ k} M_𝕀(c) (5.44 with 5.50) — and, for a pair j ⪯ k (body of j an ancestor of,
      or equal to, the body of k):

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

    with h the composite momentum, Ṙ_𝕀 the rate of the composite inertia and F(b) = R_𝕀(B) s(b)
    (``soa_coriolis_matrix`` in ``soa_fmu/core/sensitivities.c``).

Flexible bodies (seed 000 §4)
    The modal coordinates η are vector-space coordinates, and the composite inertias no longer add
    up as rigid blocks (children on nodes move with η).  The C core then polarizes the Newton–Euler
    velocity-product forces c(x) = β*ℂ^qv β of the flexible recursion (a quadratic form):
    C(:, b) = [c(β + t e_b) − c(β − t e_b)]/(4t) + ½𝓜 w(b), w(b) the joint coordinates of
    (H*_J β_J) ×̃ H*(b) (Koszul's part antisymmetric in (b, c)), O(N·nv); and ∂𝓜/∂θᵢ = C(θ, eᵢ) +
    C(θ, eᵢ)* (the connection is metric).  Modal damping D η̇ is not part of C.
"""
from __future__ import annotations

import weakref

import numpy as np

from . import _core
from .mass_matrix import mass_matrix
from .model import Model
from .spatial import skew

_brackets: "weakref.WeakKeyDictionary[Model, tuple]" = weakref.WeakKeyDictionary()


def _derivative_slots(model: Model, i) -> np.ndarray:
    """slot[j] = position of coordinate j in the output (−1: not requested)."""
    nv = model.nv
    if i is None:
        return np.arange(nv, dtype=np.intc)
    idx = np.atleast_1d(np.asarray(i))
    if idx.ndim != 1 or idx.dtype.kind not in "iu" or np.any(idx < -nv) or np.any(idx >= nv):
        raise ValueError(f"i must be a velocity index (or indices) in [0, {nv}), got {i!r}")
    idx = idx % nv
    if len(set(idx.tolist())) != idx.size:
        raise ValueError(f"repeated velocity index in i = {i!r}")
    slot = np.full(nv, -1, dtype=np.intc)
    slot[idx] = np.arange(idx.size)
    return slot


def mass_matrix_derivative(model: Model, q, i=None) -> np.ndarray:
    """∂𝓜/∂θᵢ along the velocity directions (module docstring), by the composite-body form 5.52.

    ``i=None``: all of them, an nv × nv × nv array with ``dM[i, j, k] = ∂𝓜(j, k)/∂θᵢ``;
    an integer i: the nv × nv matrix ∂𝓜/∂θᵢ; a sequence: stacked along the first axis."""
    dM = _core.mass_matrix_derivative(model._data or model.data, q, _derivative_slots(model, i))
    return dM[0] if i is not None and np.ndim(i) == 0 else dM


def joint_brackets(model: Model) -> list[tuple[int, int, np.ndarray]]:
    """[(v0, n, γ)] for every joint whose velocity directions do not commute: γ[e, a, b] (n × n × n)
    with H*(a) ×̃ H*(b) = Σ_e γ[e, a, b] H*(e), i.e. the Lie brackets [X_a, X_b] = Σ_e γ^e_ab X_e of
    the velocity directions (spherical, free, planar joints).  Constant; computed once per model."""
    core = model.core
    cached = _brackets.get(model)
    if cached is not None and cached[0] is core:
        return cached[1]
    m = model.arrays()
    out = []
    for k in range(model.nbodies):
        v0, n = int(m.v0[k]), int(m.nvj[k])
        if n < 2:
            continue
        S = m.S[v0:v0 + n].T                          # 6 × n, body frame
        gamma = np.zeros((n, n, n))
        for a in range(n):
            for b in range(n):
                br = _core.cross_motion(m.S[v0 + a], m.S[v0 + b])
                gamma[:, a, b] = np.linalg.lstsq(S, br, rcond=None)[0]
        if np.any(np.abs(gamma) > 1e-12):
            out.append((v0, n, gamma))
    _brackets[model] = (core, out)
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
    return _core.coriolis_matrix(model._data or model.data, q, qd)


# ---------------------------------------------------------------- dense operator form (tests)
def force_cross_matrix(x: np.ndarray) -> np.ndarray:
    """S[x] = [[ω̃, ṽ], [0, ω̃]] (seed 004 eq. 2.7): S[x] f = x ×̄* f."""
    X = np.zeros((6, 6))
    X[:3, :3] = X[3:, 3:] = skew(x[:3])
    X[:3, 3:] = skew(x[3:])
    return X


def mass_matrix_derivative_operators(model: Model, q, i: int) -> np.ndarray:
    """∂𝓜/∂θᵢ from the dense spatial operators (seed 004 Lemma 4.2, eq. 4.43, in body frames):

        Hφ[ℍ^i_δ φM + Mφ*ℍ^{i*}_δ]φ*H* − H[ℍ^i_δ φMφ* + φMφ*ℍ^{i*}_δ]H*

    with ℍ^i_δ the 6n × 6n block-diagonal operator holding ℍ(i) = S[H*(i)] at the block of the body of
    coordinate i.  Verification only (sizes 6n × 6n)."""
    from .verify.operators import build_operators
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
           "joint_brackets", "force_cross_matrix", "mass_matrix_derivative_operators"]
