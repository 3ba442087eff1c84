"""Composite-body mass matrix (SPEC E6): seed 001 Identity 1, eqs. (28)–(33); seed 004 (5.44)–(5.46).

    r(k) = Σ_children φ(k, c) r(c) φ*(k, c) + M(k)      composite inertia, inward      (eq. 31)
    x(k) = r(k) H*(k);   m(k, k) = H(k) x(k)                                             (eq. 32)
    x ← φ(i, j) x up the ancestors i of k;  m(i, k) = H(i) x                            (eq. 33)

evaluated, as seed 004 §5 does for its composite inertias, in the inertial frame at the world origin
(the C core's ``soa_fmu/core/crba.c``): there every φ(k, c) is absorbed into the one transform of
each body's inertia to that frame, r_𝕀(k) = M_𝕀(k) + Σ_c r_𝕀(c) is a plain sum, and
m(i, k) = H_𝕀(i)·x_𝕀(k) is a 6-vector dot product — O(N·depth) dot products in all.
"""
from __future__ import annotations

import numpy as np

from . import _core
from .model import Model


def mass_matrix(model: Model, q, data=None) -> np.ndarray:
    """M(q) = HφMφ*H* by the composite-body recursion (nv × nv, symmetric)."""
    return _core.crba(data or model._data or model.data, q)
