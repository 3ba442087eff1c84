"""Kinematics (SPEC E4): frames, V = φ*H*β, a(k), b(k), the Jacobian J = B*φ*H* of any point.

Seed 000 eqs. (2.8), (2.13)–(2.14); seed 001 eqs. (6)–(8), (20)–(21).  The outward sweeps here are
shared by every algorithm family (inverse dynamics, articulated-body forward dynamics, constraints).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .joints import SPHERICAL, FREE, joint_transform
from .model import Model, ModelError, Workspace, views
from .spatial import JIT, apply_phi_star, cross_force, cross_motion

# status codes returned by the compiled entry points: (kind, index)
OK, BAD_Q, BAD_QD, BAD_TAU, BAD_QDD, BAD_QUAT, BAD_FEXT, SINGULAR = range(8)
QUAT_TOL = 1e-6


# ---------------------------------------------------------------- input checks (compiled)
@njit(**JIT)
def first_nonfinite(x: np.ndarray) -> int:
    for i in range(x.shape[0]):
        if not np.isfinite(x[i]):
            return i
    return -1


@njit(**JIT)
def check_configuration(m, q: np.ndarray):
    """(BAD_Q, i) for a non-finite θ(i), (BAD_QUAT, k) for a non-unit quaternion of body k."""
    i = first_nonfinite(q)
    if i >= 0:
        return BAD_Q, i
    for k in range(m.parent.shape[0]):
        if m.jtype[k] == SPHERICAL or m.jtype[k] == FREE:
            s = m.q0[k]
            n2 = q[s] ** 2 + q[s + 1] ** 2 + q[s + 2] ** 2 + q[s + 3] ** 2
            if abs(n2 - 1.0) > QUAT_TOL:
                return BAD_QUAT, k
    return OK, 0


@njit(**JIT)
def check_state(m, q: np.ndarray, qd: np.ndarray):
    kind, i = check_configuration(m, q)
    if kind != OK:
        return kind, i
    i = first_nonfinite(qd)
    if i >= 0:
        return BAD_QD, i
    return OK, 0


def raise_for_status(model: Model, kind: int, index: int) -> None:
    """Turn a compiled status into a ValueError that names the offending coordinate/joint."""
    if kind == OK:
        return
    if kind == BAD_Q:
        raise ValueError(f"q[{index + 1}] ({model.position_names[index]}) is not finite")
    if kind in (BAD_QD, BAD_TAU, BAD_QDD):
        name = {BAD_QD: "qd", BAD_TAU: "tau", BAD_QDD: "qdd"}[kind]
        raise ValueError(f"{name}[{index + 1}] ({model.velocity_names[index]}) is not finite")
    if kind == BAD_QUAT:
        b = model.bodies[index]
        raise ValueError(f"quaternion of joint {b.joint_name!r} (q[{b.q_index + 1}..{b.q_index + 4}])"
                         f" is not unit length (tolerance {QUAT_TOL:g} on |q|²−1); normalize it")
    if kind == BAD_FEXT:
        raise ValueError(f"f_ext on body {model.bodies[index].name!r} is not finite")
    if kind == SINGULAR:
        b = model.bodies[index]
        raise ValueError(f"articulated inertia D of joint {b.joint_name!r} is singular "
                         "(massless subtree?)")
    raise ValueError(f"invalid input (status {kind}, index {index})")


_F64 = np.dtype(np.float64)


def as_vector(x, n: int, name: str) -> np.ndarray:
    """A float64 vector of length n (no copy when it already is one), or a ValueError naming it."""
    if type(x) is np.ndarray and x.dtype is _F64 and x.shape == (n,):
        return x
    a = np.ascontiguousarray(x, dtype=np.float64)
    if a.shape != (n,):
        raise ValueError(f"{name} must have shape ({n},), got {a.shape}")
    return a


def pack_external_forces(model: Model, w: Workspace, f_ext) -> bool:
    """Write f_ext {body or frame name: (N, F) in that body/frame's axes} into w.fext (body frames).

    Returns True when any force was given.  A frame force is moved to its body's origin by φ.
    """
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


# ---------------------------------------------------------------- outward sweeps (compiled)
@njit(**JIT)
def outward_placements(m, w, q: np.ndarray) -> None:
    """R(k), l(k): each body's placement in its parent at θ (what the dynamics sweeps need)."""
    for k in range(m.parent.shape[0]):
        joint_transform(m.jtype[k], m.axis[k], m.basis[k], m.S, m.v0[k], m.nv[k], q, m.q0[k],
                        w.Rj[k], w.tj[k])
        Xr, Rj, tj = m.Xr[k], w.Rj[k], w.tj[k]
        for i in range(3):
            for j in range(3):
                w.R[k, i, j] = Xr[i, 0] * Rj[0, j] + Xr[i, 1] * Rj[1, j] + Xr[i, 2] * Rj[2, j]
            w.l[k, i] = m.Xp[k, i] + Xr[i, 0] * tj[0] + Xr[i, 1] * tj[1] + Xr[i, 2] * tj[2]


@njit(**JIT)
def world_placements(m, w) -> None:
    """Rw(k), pw(k): each body's placement in world, base to tip (after outward_placements)."""
    for k in range(m.parent.shape[0]):
        p = m.parent[k]
        if p < 0:
            w.Rw[k] = w.R[k]
            w.pw[k] = w.l[k]
        else:
            for i in range(3):
                for j in range(3):
                    w.Rw[k, i, j] = (w.Rw[p, i, 0] * w.R[k, 0, j] + w.Rw[p, i, 1] * w.R[k, 1, j]
                                     + w.Rw[p, i, 2] * w.R[k, 2, j])
                w.pw[k, i] = (w.pw[p, i] + w.Rw[p, i, 0] * w.l[k, 0] + w.Rw[p, i, 1] * w.l[k, 1]
                              + w.Rw[p, i, 2] * w.l[k, 2])


@njit(**JIT)
def outward_positions(m, w, q: np.ndarray) -> None:
    """Body placements in the parent (R, l) and in world (Rw, pw)."""
    outward_placements(m, w, q)
    world_placements(m, w)


@njit(**JIT)
def add_joint_motion(m, k: int, x: np.ndarray, out: np.ndarray) -> None:
    """out += H*(k) x(v0 : v0 + nv)  (relative spatial velocity across joint k)."""
    v0 = m.v0[k]
    for d in range(m.nv[k]):
        xd = x[v0 + d]
        for i in range(6):
            out[i] += m.S[v0 + d, i] * xd


@njit(**JIT)
def outward_velocities(m, w, qd: np.ndarray) -> None:
    """V(k) = φ*(p, k) V(p) + H*(k) β(k);  a(k) = V(k) ×̃ H*(k)β(k);  b(k) = V(k) ×̄* M(k) V(k).

    Seed 000 eq. (2.8); seed 001 eqs. (6)–(9).  Needs :func:`outward_placements` first.
    """
    rel = w.s6[0]
    MV = w.s6[1]
    for k in range(m.parent.shape[0]):
        p = m.parent[k]
        if p < 0:
            for i in range(6):
                w.V[k, i] = 0.0
        else:
            apply_phi_star(w.R[k], w.l[k], w.V[p], w.V[k])
        for i in range(6):
            rel[i] = 0.0
        add_joint_motion(m, k, qd, rel)
        for i in range(6):
            w.V[k, i] += rel[i]
        cross_motion(w.V[k], rel, w.a[k])
        for i in range(6):
            s = 0.0
            for j in range(6):
                s += m.inertia[k, i, j] * w.V[k, j]
            MV[i] = s
        cross_force(w.V[k], MV, w.b[k])


@njit(**JIT)
def outward_accelerations(m, w, qdd: np.ndarray, base: np.ndarray) -> None:
    """α(k) = φ*(p, k) α(p) + H*(k) β̇(k) + a(k), with α(world) = ``base`` (seed 001 eq. (25))."""
    for k in range(m.parent.shape[0]):
        p = m.parent[k]
        if p < 0:
            apply_phi_star(w.R[k], w.l[k], base, w.alpha[k])
        else:
            apply_phi_star(w.R[k], w.l[k], w.alpha[p], w.alpha[k])
        add_joint_motion(m, k, qdd, w.alpha[k])
        for i in range(6):
            w.alpha[k, i] += w.a[k, i]


@njit(**JIT)
def kinematics_kernel(mi, mf, wf, q, qd):
    m, w = views(mi, mf, wf)
    kind, i = check_state(m, q, qd)
    if kind != OK:
        return kind, i
    outward_positions(m, w, q)
    outward_velocities(m, w, qd)
    return OK, 0


@njit(**JIT)
def point_jacobian(m, w, body: int, p_world: np.ndarray, Jout: np.ndarray) -> None:
    """J = B*φ*H* for a point fixed on ``body`` (seed 000 eq. 2.14), world-aligned axes at the point.

    Column block of joint j (an ancestor of body, or body itself):  φ*(j, point) H*(j), i.e. the
    world-axes twist [ω; v + ω × (p_j − p_point)] of each joint map column.
    """
    for i in range(6):
        for c in range(Jout.shape[1]):
            Jout[i, c] = 0.0
    k = body
    while k >= 0:
        Rw = w.Rw[k]
        for d in range(m.nv[k]):
            c = m.v0[k] + d
            s = m.S[c]
            wv = np.empty(3)
            for i in range(3):
                wv[i] = Rw[i, 0] * s[0] + Rw[i, 1] * s[1] + Rw[i, 2] * s[2]
                Jout[i, c] = wv[i]
            r0 = p_world[0] - w.pw[k, 0]
            r1 = p_world[1] - w.pw[k, 1]
            r2 = p_world[2] - w.pw[k, 2]
            for i in range(3):
                Jout[3 + i, c] = Rw[i, 0] * s[3] + Rw[i, 1] * s[4] + Rw[i, 2] * s[5]
            Jout[3, c] += wv[1] * r2 - wv[2] * r1
            Jout[4, c] += wv[2] * r0 - wv[0] * r2
            Jout[5, c] += wv[0] * r1 - wv[1] * r0
        k = m.parent[k]


@njit(**JIT)
def jacobian_kernel(mi, mf, wf, body, p_world, Jout):
    m, w = views(mi, mf, wf)
    point_jacobian(m, w, body, p_world, Jout)


# ---------------------------------------------------------------- Python API
def forward_kinematics(model: Model, q, qd=None) -> Workspace:
    """Run the outward sweeps; returns the model's workspace (Rw, pw, V, a, b filled)."""
    q = as_vector(q, model.nq, "q")
    qd = np.zeros(model.nv) if qd is None else as_vector(qd, model.nv, "qd")
    raise_for_status(model, *kinematics_kernel(*model.packed(), q, qd))
    return model.workspace()


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
    Jm = np.zeros((6, model.nv))
    if k < 0:
        return Jm
    w = forward_kinematics(model, q)
    p = w.pw[k] + w.Rw[k] @ pf
    jacobian_kernel(*model.packed(), k, p, Jm)
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
