"""Conserved quantities: kinetic/potential energy and spatial momentum (physics checks, FMU output)."""
from __future__ import annotations

import numpy as np

from .kinematics import forward_kinematics
from .model import Model


def kinetic_energy(model: Model, q, qd) -> float:
    """T = ½ Σ V(k)* M(k) V(k) = ½ β* 𝓜 β."""
    w = forward_kinematics(model, q, qd)
    M = model.arrays().inertia
    return 0.5 * float(np.einsum("ki,kij,kj->", w.V, M, w.V))


def potential_energy(model: Model, q) -> float:
    """U = −Σ m(k) g · c(k), c(k) the world position of body k's centre of mass."""
    w = forward_kinematics(model, q)
    g = model.gravity
    return -sum(b.mass * float(g @ (w.pw[k] + w.Rw[k] @ b.com)) for k, b in enumerate(model.bodies))


def total_energy(model: Model, q, qd) -> float:
    return kinetic_energy(model, q, qd) + potential_energy(model, q)


def spatial_momentum(model: Model, q, qd) -> np.ndarray:
    """Total spatial momentum [angular about the world origin; linear], world axes."""
    w = forward_kinematics(model, q, qd)
    M = model.arrays().inertia
    h = np.zeros(6)
    for k in range(model.nbodies):
        hk = M[k] @ w.V[k]                      # body-frame momentum about the body origin
        R, p = w.Rw[k], w.pw[k]
        L = R @ hk[3:]
        h[:3] += R @ hk[:3] + np.cross(p, L)    # φ(world, k) moves it to the world origin
        h[3:] += L
    return h
