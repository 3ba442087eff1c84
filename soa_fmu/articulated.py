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

The sweeps are the C core's ``soa_fmu/core/articulated.c`` (``soa_riccati_sweep``,
``soa_innovations_filter``, ``soa_innovations_smoother``; ``soa_aba``, ``soa_aba_bias_free``,
``soa_minv``).
"""
from __future__ import annotations

import numpy as np

from . import _core
from .kinematics import external_forces
from .model import Model


def forward_dynamics(model: Model, q, qd, tau, f_ext=None, data=None) -> np.ndarray:
    """q̈ = M⁻¹(τ − C − g + J*f_ext) by the O(N) innovations algorithm (SPEC §5)."""
    use = external_forces(model, data, f_ext) if f_ext else False
    return _core.aba(data or model._data or model.data, q, qd, tau, use)


def forward_dynamics_bias_free(model: Model, q, qd, tau, f_ext=None) -> tuple[np.ndarray, np.ndarray]:
    """Algorithm 2 of seed 001: (q̈, α) with α(k) the spatial acceleration of every body (nb × 6,
    body frames, gravity included as the base acceleration)."""
    use = external_forces(model, None, f_ext) if f_ext else False
    qdd = _core.aba_bias_free(model.data, q, qd, tau, use)
    return qdd, model.workspace().alpha.copy()


def mass_matrix_inverse(model: Model, q, data=None) -> np.ndarray:
    """M(q)⁻¹ by the innovations factorization (seed 001 Identity 6)."""
    return _core.minv(data or model._data or model.data, q)
