"""Newton–Euler inverse dynamics (SPEC E5): seed 001 eqs. (6)–(12), (23)–(27); seed 000 eq. (2.11).

    α = φ*(H* β̇ + a)          outward, with gravity as the base acceleration α(world) = [0; −g]
    f = φ(M α + b − f_ext)     inward
    T = H f

The sweeps are the C core's ``soa_fmu/core/rnea.c`` (``soa_rnea``).
"""
from __future__ import annotations

import numpy as np

from . import _core
from .kinematics import external_forces
from .model import Model


def inverse_dynamics(model: Model, q, qd, qdd, f_ext=None, data=None) -> np.ndarray:
    """τ = M(q) q̈ + C(q, q̇) + g(q) − J*f_ext  (SPEC §5)."""
    use = external_forces(model, data, f_ext) if f_ext else False
    return _core.rnea(data or model._data or model.data, q, qd, qdd, use)


def bias_forces(model: Model, q, qd, f_ext=None) -> np.ndarray:
    """C(q, q̇) + g(q) − J*f_ext: inverse dynamics at q̈ = 0 (seed 001 eq. (27))."""
    return inverse_dynamics(model, q, qd, np.zeros(model.nv), f_ext)


def gravity_forces(model: Model, q) -> np.ndarray:
    """g(q): inverse dynamics at q̇ = q̈ = 0."""
    z = np.zeros(model.nv)
    return inverse_dynamics(model, q, z, z)
