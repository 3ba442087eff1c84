"""Finite-difference references for the derivative kernels (tests): central differences of a
function of (θ, β) along the velocity directions of θ (θ ⊕ δ by the exponential map) and along β,
and of the state-space flow x = (δ, β) ↦ ẋ that `sf.linearize` differentiates exactly."""
from __future__ import annotations

import numpy as np

from ..articulated import forward_dynamics
from ..integrators import integrate_configuration
from ..linearization import configuration_difference


def plus(model, q, d) -> np.ndarray:
    """θ ⊕ δ: the configuration reached from q along the velocity-space step d."""
    return integrate_configuration(model, q, np.asarray(d, dtype=float))


def jacobians(model, f, q, qd, h: float = 1e-6, hv: float | None = None):
    """Central differences (∂f/∂θ along the velocity directions, step h; ∂f/∂β, step hv, default
    h) of f(θ, β) -> vector; returns the two matrices, one column per velocity dof."""
    hv = h if hv is None else hv
    cols = [[], []]
    for e in np.eye(model.nv):
        cols[0].append((f(plus(model, q, h * e), qd) - f(plus(model, q, -h * e), qd)) / (2 * h))
        cols[1].append((f(q, qd + hv * e) - f(q, qd - hv * e)) / (2 * hv))
    return np.column_stack(cols[0]), np.column_stack(cols[1])


def state_space(model, q, qd, tau, h: float = 1e-5):
    """(A, B) by central differences of x ↦ ẋ in tangent coordinates x = (δ, β), θ = q ⊕ δ, with
    δ̇ by the 5-point stencil along θ ⊕ tβ (the ½[δ, β] term of quaternion joints included)."""
    nv = model.nv

    def xdot(x, u):
        qq = plus(model, q, x[:nv])
        delta = lambda t: configuration_difference(model, q, plus(model, qq, t * x[nv:]))  # noqa: E731
        s = 1e-3
        ddelta = (8 * (delta(s) - delta(-s)) - (delta(2 * s) - delta(-2 * s))) / (12 * s)
        return np.r_[ddelta, forward_dynamics(model, qq, x[nv:], u)]

    x0 = np.r_[np.zeros(nv), qd]
    A = np.column_stack([(xdot(x0 + h * e, tau) - xdot(x0 - h * e, tau)) / (2 * h)
                         for e in np.eye(2 * nv)])
    B = np.column_stack([(xdot(x0, tau + h * e) - xdot(x0, tau - h * e)) / (2 * h)
                         for e in np.eye(nv)])
    return A, B
