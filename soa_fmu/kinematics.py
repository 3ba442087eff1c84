"""Kinematics (SPEC E4): frames, V = φ*H*β, a(k), b(k), the Jacobian J = B*φ*H* of any point.

Seed 000 eqs. (2.8), (2.13)–(2.14); seed 001 eqs. (6)–(8), (20)–(21).  The outward sweeps are the C
core's ``soa_fmu/core/kinematics.c``, shared by every algorithm family; this module holds the
Python API over them and the argument helpers every API module uses.
"""
from __future__ import annotations

import numpy as np

from . import _core
from .model import Model, ModelError

StatusError = _core.StatusError     # a kernel refused its input (a ValueError naming the coordinate)
QUAT_TOL = 1e-6                     # tolerance on |q|²−1 of a joint quaternion (SOA_QUAT_TOL)
_F64 = np.dtype(np.float64)


def as_vector(x, n: int, name: str) -> np.ndarray:
    """A float64 vector of length n (no copy when it already is one), or a ValueError naming it."""
    if type(x) is np.ndarray and x.dtype is _F64 and x.shape == (n,):
        return x
    a = np.ascontiguousarray(x, dtype=np.float64)
    if a.shape != (n,):
        raise ValueError(f"{name} must have shape ({n},), got {a.shape}")
    return a


def pack_external_forces(model: Model, w, f_ext) -> bool:
    """Write f_ext {body or frame name: (N, F) in that body/frame's axes} into w.fext (body frames,
    ``w`` a workspace from :meth:`Model.workspace`).  Returns True when any force was given.  A
    frame force is moved to its body's origin by φ."""
    w.fext[:] = 0.0
    if not f_ext:
        return False
    if not hasattr(f_ext, "items"):
        raise ValueError("f_ext must be a mapping {body or frame name: 6-vector (N, F)}")
    for name, f in f_ext.items():
        fv = np.asarray(f, dtype=float)
        if fv.shape != (6,):
            raise ValueError(f"f_ext[{name!r}] must be a 6-vector (N, F), got shape {fv.shape}")
        if not np.all(np.isfinite(fv)):
            raise ValueError(f"f_ext[{name!r}] is not finite")
        try:
            k, R, p = model.frame_placement(name)
        except ModelError as e:
            raise ValueError(f"f_ext: {e}") from None
        if k < 0:
            raise ValueError("f_ext: a force on 'world' acts on nothing")
        F = R @ fv[3:]
        w.fext[k, :3] += R @ fv[:3] + np.cross(p, F)
        w.fext[k, 3:] += F
    return True


def external_forces(model: Model, data, f_ext) -> bool:
    """:func:`pack_external_forces` into ``data`` (None: the model's default workspace)."""
    return pack_external_forces(model, model.workspace(data), f_ext)


# ---------------------------------------------------------------- Python API
def forward_kinematics(model: Model, q, qd=None, data=None):
    """Run the outward sweeps; returns the workspace views (Rw, pw, V, a, b filled)."""
    _core.kinematics(data or model.data, q, np.zeros(model.nv) if qd is None else qd)
    return model.workspace(data)


def frame_pose(model: Model, q, frame: str) -> tuple[np.ndarray, np.ndarray]:
    """(R, p) of a body or named frame in world: x_world = R x_frame + p."""
    k, Rf, pf = model.frame_placement(frame)
    if k < 0:
        return Rf.copy(), pf.copy()
    w = forward_kinematics(model, q)
    return w.Rw[k] @ Rf, w.pw[k] + w.Rw[k] @ pf


def frame_jacobian(model: Model, q, frame: str, reference: str = "world") -> np.ndarray:
    """6 × nv Jacobian J = B*φ*H* of a body or frame: V_frame = J β with V = [ω; v].

    reference="world": world-aligned axes at the frame origin; "local": the frame's own axes.
    """
    if reference not in ("world", "local"):
        raise ValueError(f"reference must be 'world' or 'local', got {reference!r}")
    k, Rf, pf = model.frame_placement(frame)
    if k < 0:
        return np.zeros((6, model.nv))
    w = forward_kinematics(model, q)
    Jm = _core.point_jacobian(model.data, k, w.pw[k] + w.Rw[k] @ pf)
    if reference == "local":
        Rt = (w.Rw[k] @ Rf).T
        Jm[:3] = Rt @ Jm[:3]
        Jm[3:] = Rt @ Jm[3:]
    return Jm


def frame_velocity(model: Model, q, qd, frame: str, reference: str = "world") -> np.ndarray:
    """Spatial velocity [ω; v] of a frame origin: J(q) β."""
    return frame_jacobian(model, q, frame, reference) @ as_vector(qd, model.nv, "qd")


def body_velocities(model: Model, q, qd) -> np.ndarray:
    """V(k) of every body, in its own frame (nb × 6)."""
    return forward_kinematics(model, q, qd).V.copy()
