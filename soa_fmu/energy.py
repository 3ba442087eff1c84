"""Conserved quantities: kinetic/potential energy and spatial momentum (physics checks, FMU output).

Energy is computed by the C core (``soa_energy``, core/energy.c) — the same kernel the native FMU
reports as its ``energy`` output."""
from __future__ import annotations

import numpy as np

from . import _core
from .kinematics import as_vector, forward_kinematics
from .model import Model


def _energies(model: Model, q, qd) -> tuple[float, float]:
    q = as_vector(q, model.nq, "q")
    qd = as_vector(qd, model.nv, "qd")
    return _core.energy(model.data, q, qd)


def kinetic_energy(model: Model, q, qd) -> float:
    """T = ½ Σ V(k)* M(k) V(k) = ½ β* 𝓜 β."""
    return _energies(model, q, qd)[0]


def potential_energy(model: Model, q) -> float:
    """U = −Σ m(k) g · c(k), c(k) the world position of body k's centre of mass."""
    return _energies(model, q, np.zeros(model.nv))[1]


def total_energy(model: Model, q, qd) -> float:
    T, U = _energies(model, q, qd)
    return T + U


def spatial_momentum(model: Model, q, qd) -> np.ndarray:
    """Total spatial momentum [angular about the world origin; linear], world axes."""
    w = forward_kinematics(model, q, qd)
    a = model.arrays()
    qd = np.asarray(qd, dtype=float)
    h = np.zeros(6)
    for k, b in enumerate(model.bodies):
        if model.flexible:                      # seed 000 (4.3): (V, η̇) through fl_M's V rows
            m, e = b.nmodes, b.v_index + b.joint.nv
            hk = a.fl_M[k, :6, :6 + m] @ np.concatenate((w.V[k], qd[e:e + m]))
        else:
            hk = a.inertia[k] @ w.V[k]          # body-frame momentum about the body origin
        R, p = w.Rw[k], w.pw[k]
        L = R @ hk[3:]
        h[:3] += R @ hk[:3] + np.cross(p, L)    # φ(world, k) moves it to the world origin
        h[3:] += L
    return h
