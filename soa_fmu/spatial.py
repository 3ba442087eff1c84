"""Spatial algebra (SPEC E1; seed 000 §2, seed 004 §2.2): the Python side.

Conventions (as in the papers):

* spatial velocity / acceleration  V = [ω; v]   (angular first)
* spatial force                    f = [N; F]   (moment first)
* φ(x, y) = [[I, l̃(x, y)], [0, I]] moves a force from point y to point x, where l(x, y) is the
  vector from x to y;  its adjoint φ*(x, y) moves a velocity from x to y.

Every body carries its own frame.  The placement of body k in its parent p is stored as the rotation
``R`` (body axes expressed in the parent: x_parent = R x_body) and the offset ``l`` (parent origin to
body origin, parent coordinates).  With rotations folded in, the operators used by the sweeps are

    φ(p, k)  f_k   = [R N + l × (R F);  R F]            (force, child frame -> parent frame)
    φ*(p, k) V_p   = [Rᵀ ω;  Rᵀ (v + ω × l)]            (velocity, parent frame -> child frame)
    φ(p, k) P φ*(p, k)                                   (inertia, child frame -> parent frame)

The sweeps use these as ``static inline`` C helpers (``soa_fmu/core/spatial.h``: ``apply_phi``,
``apply_phi_star``, ``add_phi_inertia``, ``cross_motion``, ``cross_force``); :func:`spatial_helpers`
reaches them from Python for tests.  This module holds the dense forms the model builder, the
operator layer and the tests use.
"""
from __future__ import annotations

import numpy as np

from . import _core


def skew(x) -> np.ndarray:
    """x̃: the 3×3 cross-product matrix, x̃ y = x × y."""
    return np.array([[0.0, -x[2], x[1]], [x[2], 0.0, -x[0]], [-x[1], x[0], 0.0]])


def spatial_helpers():
    """The C core's spatial helpers as Python functions returning new arrays (for tests):
    ``apply_phi(R, l, f)``, ``apply_phi_star(R, l, V)``, ``add_phi_inertia(R, l, P, acc)``,
    ``cross_motion(V, x)``, ``cross_force(V, f)``, ``quat_to_matrix(w, x, y, z)``."""
    from types import SimpleNamespace
    return SimpleNamespace(**{n: getattr(_core, n) for n in (
        "apply_phi", "apply_phi_star", "add_phi_inertia", "cross_motion", "cross_force",
        "quat_to_matrix")})


# ---------------------------------------------------------------- inertia
def spatial_inertia(mass: float, com: np.ndarray, inertia_com: np.ndarray) -> np.ndarray:
    """M(k) about the body origin from (m, p, J_C) (seed 000 §2; seed 004 §2.2):

        M = [[J_C − m p̃ p̃,  m p̃], [−m p̃,  m I]]
    """
    p = np.asarray(com, dtype=float)
    J = np.asarray(inertia_com, dtype=float)
    pt = skew(p)
    M = np.zeros((6, 6))
    M[:3, :3] = J - mass * pt @ pt
    M[:3, 3:] = mass * pt
    M[3:, :3] = -mass * pt
    M[3:, 3:] = mass * np.eye(3)
    return M


# ---------------------------------------------------------------- dense 6×6 forms (tests, operators)
def phi_matrix(R: np.ndarray, l: np.ndarray) -> np.ndarray:
    """Dense 6×6 φ(p, k) = [[R, l̃R], [0, R]] (force transform child -> parent)."""
    X = np.zeros((6, 6))
    X[:3, :3] = R
    X[3:, 3:] = R
    X[:3, 3:] = skew(np.asarray(l, dtype=float)) @ R
    return X


def rpy_to_matrix(rpy) -> np.ndarray:
    """URDF roll-pitch-yaw (fixed axes X, Y, Z): R = Rz(yaw) Ry(pitch) Rx(roll)."""
    r, p, y = (float(v) for v in rpy)
    cr, sr, cp, sp, cy, sy = np.cos(r), np.sin(r), np.cos(p), np.sin(p), np.cos(y), np.sin(y)
    return np.array([
        [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
        [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
        [-sp, cp * sr, cp * cr],
    ])
