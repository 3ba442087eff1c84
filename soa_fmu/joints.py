"""Joints (SPEC E2; seed 000 §2.1, seed 001 §VIII, seed 003 App. B).

A joint of body k has ``nq`` configuration coordinates θ and ``nv`` velocity coordinates β.  Its joint
map H*(k) (6 × nv) is CONSTANT in the body frame: the relative spatial velocity across the joint is
H*(k) β(k), expressed in body k's frame.  Where θ is not a vector space (quaternions), θ̇ = f(θ) β
(seed 001 §VIII; seed 003 App. B).

| type      | nq | nv | θ                               | β (body frame)          |
|-----------|----|----|---------------------------------|-------------------------|
| fixed     | 0  | 0  |                                 |                         |
| revolute  | 1  | 1  | angle about ``axis``            | angular rate            |
| prismatic | 1  | 1  | displacement along ``axis``     | linear rate             |
| spherical | 4  | 3  | unit quaternion (w, x, y, z)    | ω                       |
| free      | 7  | 6  | quaternion (w, x, y, z), then   | [ω; v] of the body      |
|           |    |    | position of the body origin in  | origin (ω first)        |
|           |    |    | the parent frame (x, y, z)      |                         |
| planar    | 3  | 3  | (angle about n, x along e1,     | (ω_n, v_e1, v_e2)       |
|           |    |    |  y along e2)                    |                         |
| general   | r  | r  | coordinates of exp(Σ Sᵢ θᵢ)     | β, with V_rel = S β     |

The quaternion q = (w, x, y, z) gives the rotation of the body frame in its parent frame.  A
``general`` joint is any constant joint map H*(k) = S (6 × r, joint frame) whose columns commute as
twists (so that exp(S θ) has body velocity exactly S θ̇): helical, cylindrical, a translation plane...
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numba import njit

from .spatial import JIT, axis_angle_to_matrix, quat_to_matrix

FIXED, REVOLUTE, PRISMATIC, SPHERICAL, FREE, PLANAR, GENERAL = range(7)
TYPE_NAMES = ("fixed", "revolute", "prismatic", "spherical", "free", "planar", "general")


def _unit(v, what: str) -> np.ndarray:
    a = np.asarray(v, dtype=float).reshape(3)
    big = np.abs(a).max() if np.all(np.isfinite(a)) else np.inf
    if not np.isfinite(big) or big < 1e-12:
        raise ValueError(f"{what}: axis {a.tolist()} must be finite and non-zero")
    a = a / big                      # scale first: the norm of a huge axis would overflow
    return a / np.linalg.norm(a)


@dataclass
class Joint:
    """Base class of the joint descriptions handed to :meth:`soa_fmu.Model.add_body`."""

    code: int = field(init=False, default=FIXED)
    nq: int = field(init=False, default=0)
    nv: int = field(init=False, default=0)

    def motion_subspace(self) -> np.ndarray:
        """H*(k): 6 × nv, body frame."""
        return np.zeros((6, 0))

    def neutral(self) -> np.ndarray:
        return np.zeros(self.nq)

    def axis_vector(self) -> np.ndarray:
        return np.zeros(3)

    def basis(self) -> np.ndarray:
        return np.eye(3)

    @property
    def type_name(self) -> str:
        return TYPE_NAMES[self.code]


@dataclass
class Fixed(Joint):
    """Welds the body to its parent (no dof)."""


@dataclass
class Revolute(Joint):
    axis: tuple = (0.0, 0.0, 1.0)

    def __post_init__(self):
        self.code, self.nq, self.nv = REVOLUTE, 1, 1
        self.axis = tuple(_unit(self.axis, "revolute joint").tolist())

    def motion_subspace(self):
        return np.r_[self.axis, 0.0, 0.0, 0.0].reshape(6, 1)

    def axis_vector(self):
        return np.array(self.axis)


@dataclass
class Prismatic(Joint):
    axis: tuple = (0.0, 0.0, 1.0)

    def __post_init__(self):
        self.code, self.nq, self.nv = PRISMATIC, 1, 1
        self.axis = tuple(_unit(self.axis, "prismatic joint").tolist())

    def motion_subspace(self):
        return np.r_[0.0, 0.0, 0.0, self.axis].reshape(6, 1)

    def axis_vector(self):
        return np.array(self.axis)


@dataclass
class Spherical(Joint):
    """Ball joint: unit quaternion θ (w, x, y, z), β = body-frame angular velocity."""

    def __post_init__(self):
        self.code, self.nq, self.nv = SPHERICAL, 4, 3

    def motion_subspace(self):
        return np.vstack([np.eye(3), np.zeros((3, 3))])

    def neutral(self):
        return np.array([1.0, 0.0, 0.0, 0.0])


@dataclass
class Free(Joint):
    """6-dof joint: θ = (quaternion w, x, y, z; position x, y, z), β = [ω; v] in the body frame."""

    def __post_init__(self):
        self.code, self.nq, self.nv = FREE, 7, 6

    def motion_subspace(self):
        return np.eye(6)

    def neutral(self):
        return np.array([1.0, 0, 0, 0, 0, 0, 0])


@dataclass
class Planar(Joint):
    """Motion in the plane normal to ``axis``: θ = (angle, x, y), β = (ω, v₁, v₂) in the body frame."""

    axis: tuple = (0.0, 0.0, 1.0)

    def __post_init__(self):
        self.code, self.nq, self.nv = PLANAR, 3, 3
        self.axis = tuple(_unit(self.axis, "planar joint").tolist())

    def basis(self):
        n = np.array(self.axis)
        e1 = np.cross(n, [1.0, 0, 0]) if abs(n[0]) < 0.9 else np.cross(n, [0, 1.0, 0])
        e1 = np.cross(e1, n)
        e1 /= np.linalg.norm(e1)
        return np.column_stack([e1, np.cross(n, e1), n])

    def motion_subspace(self):
        E = self.basis()
        S = np.zeros((6, 3))
        S[:3, 0] = E[:, 2]
        S[3:, 1] = E[:, 0]
        S[3:, 2] = E[:, 1]
        return S

    def axis_vector(self):
        return np.array(self.axis)


@dataclass
class General(Joint):
    """Any constant joint map H*(k) = S (6 × r) with mutually commuting twist columns."""

    S: np.ndarray = field(default_factory=lambda: np.zeros((6, 1)))

    def __post_init__(self):
        S = np.asarray(self.S, dtype=float)
        if S.ndim == 1:
            S = S.reshape(6, 1)
        if S.shape[0] != 6 or not 1 <= S.shape[1] <= 6 or not np.all(np.isfinite(S)):
            raise ValueError(f"general joint: S must be a finite 6×r matrix, got shape {S.shape}")
        if np.linalg.matrix_rank(S) < S.shape[1]:
            raise ValueError("general joint: the columns of S must be linearly independent")
        for i in range(S.shape[1]):
            for j in range(i + 1, S.shape[1]):
                if np.linalg.norm(_twist_bracket(S[:, i], S[:, j])) > 1e-9:
                    raise ValueError(f"general joint: columns {i + 1} and {j + 1} of S do not commute "
                                     "as twists; compose such joints from several bodies")
        self.S = S
        self.code, self.nq, self.nv = GENERAL, S.shape[1], S.shape[1]

    def motion_subspace(self):
        return self.S.copy()


def _twist_bracket(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    wa, va, wb, vb = a[:3], a[3:], b[:3], b[3:]
    return np.r_[np.cross(wa, wb), np.cross(wa, vb) - np.cross(wb, va)]


# ---------------------------------------------------------------- compiled joint kinematics
@njit(**JIT)
def twist_exp(w: np.ndarray, v: np.ndarray, R: np.ndarray, t: np.ndarray) -> None:
    """SE(3) exponential of the twist (w, v): rotation R and translation t (body-frame twist)."""
    th = np.sqrt(w[0] * w[0] + w[1] * w[1] + w[2] * w[2])
    if th < 1e-12:
        for i in range(3):
            for j in range(3):
                R[i, j] = 1.0 if i == j else 0.0
            t[i] = v[i]
        return
    ax = w / th
    axis_angle_to_matrix(ax, th, R)
    # t = (I θ + (1 − cos θ) â + (θ − sin θ) â²) v / θ   with â the unit-axis skew
    c1 = (1.0 - np.cos(th)) / th
    c2 = (th - np.sin(th)) / th
    axv = np.array([ax[1] * v[2] - ax[2] * v[1], ax[2] * v[0] - ax[0] * v[2], ax[0] * v[1] - ax[1] * v[0]])
    axaxv = np.array([ax[1] * axv[2] - ax[2] * axv[1], ax[2] * axv[0] - ax[0] * axv[2],
                      ax[0] * axv[1] - ax[1] * axv[0]])
    for i in range(3):
        t[i] = v[i] + c1 * axv[i] + c2 * axaxv[i]


@njit(**JIT)
def joint_transform(jtype: int, axis: np.ndarray, basis: np.ndarray, S: np.ndarray, v0: int, nv: int,
                    q: np.ndarray, q0: int, Rj: np.ndarray, tj: np.ndarray) -> None:
    """Rotation Rj and translation tj of the body frame in its joint frame at configuration θ."""
    for i in range(3):
        tj[i] = 0.0
        for j in range(3):
            Rj[i, j] = 1.0 if i == j else 0.0
    if jtype == REVOLUTE:
        axis_angle_to_matrix(axis, q[q0], Rj)
    elif jtype == PRISMATIC:
        for i in range(3):
            tj[i] = axis[i] * q[q0]
    elif jtype == SPHERICAL:
        quat_to_matrix(q[q0], q[q0 + 1], q[q0 + 2], q[q0 + 3], Rj)
    elif jtype == FREE:
        quat_to_matrix(q[q0], q[q0 + 1], q[q0 + 2], q[q0 + 3], Rj)
        for i in range(3):
            tj[i] = q[q0 + 4 + i]
    elif jtype == PLANAR:
        n = np.array([basis[0, 2], basis[1, 2], basis[2, 2]])
        axis_angle_to_matrix(n, q[q0], Rj)
        for i in range(3):
            tj[i] = basis[i, 0] * q[q0 + 1] + basis[i, 1] * q[q0 + 2]
    elif jtype == GENERAL:
        w = np.zeros(3)
        v = np.zeros(3)
        for d in range(nv):
            for i in range(3):
                w[i] += S[v0 + d, i] * q[q0 + d]
                v[i] += S[v0 + d, 3 + i] * q[q0 + d]
        twist_exp(w, v, Rj, tj)


@njit(**JIT)
def joint_rate(jtype: int, basis: np.ndarray, q: np.ndarray, q0: int, beta: np.ndarray, v0: int,
               nq: int, qdot: np.ndarray) -> None:
    """θ̇ = f(θ) β for one joint (quaternion kinematics, seed 003 App. B)."""
    if jtype == SPHERICAL or jtype == FREE:
        w, x, y, z = q[q0], q[q0 + 1], q[q0 + 2], q[q0 + 3]
        a, b, c = beta[v0], beta[v0 + 1], beta[v0 + 2]
        # q̇ = ½ q ⊗ (0, ω)  with ω in the body frame
        qdot[q0] = 0.5 * (-x * a - y * b - z * c)
        qdot[q0 + 1] = 0.5 * (w * a + y * c - z * b)
        qdot[q0 + 2] = 0.5 * (w * b + z * a - x * c)
        qdot[q0 + 3] = 0.5 * (w * c + x * b - y * a)
        if jtype == FREE:
            R = np.empty((3, 3))
            quat_to_matrix(w, x, y, z, R)
            for i in range(3):
                qdot[q0 + 4 + i] = (R[i, 0] * beta[v0 + 3] + R[i, 1] * beta[v0 + 4]
                                    + R[i, 2] * beta[v0 + 5])
    elif jtype == PLANAR:
        c = np.cos(q[q0])
        s = np.sin(q[q0])
        qdot[q0] = beta[v0]
        qdot[q0 + 1] = c * beta[v0 + 1] - s * beta[v0 + 2]
        qdot[q0 + 2] = s * beta[v0 + 1] + c * beta[v0 + 2]
    else:
        for d in range(nq):
            qdot[q0 + d] = beta[v0 + d]


@njit(**JIT)
def quat_multiply_exp(q: np.ndarray, q0: int, w: np.ndarray, out: np.ndarray) -> None:
    """out[q0:q0+4] = q ⊗ exp(w / 2): rotate a quaternion by the body-frame rotation vector w."""
    th = np.sqrt(w[0] * w[0] + w[1] * w[1] + w[2] * w[2])
    if th < 1e-12:
        dw, dx, dy, dz = 1.0, 0.5 * w[0], 0.5 * w[1], 0.5 * w[2]
    else:
        s = np.sin(0.5 * th) / th
        dw, dx, dy, dz = np.cos(0.5 * th), s * w[0], s * w[1], s * w[2]
    a, b, c, d = q[q0], q[q0 + 1], q[q0 + 2], q[q0 + 3]
    r0 = a * dw - b * dx - c * dy - d * dz
    r1 = a * dx + b * dw + c * dz - d * dy
    r2 = a * dy - b * dz + c * dw + d * dx
    r3 = a * dz + b * dy - c * dx + d * dw
    n = np.sqrt(r0 * r0 + r1 * r1 + r2 * r2 + r3 * r3)
    out[q0], out[q0 + 1], out[q0 + 2], out[q0 + 3] = r0 / n, r1 / n, r2 / n, r3 / n


@njit(**JIT)
def joint_integrate(jtype: int, basis: np.ndarray, q: np.ndarray, q0: int, dv: np.ndarray, v0: int,
                    nq: int, out: np.ndarray) -> None:
    """out = θ ⊕ δ: move θ along the constant body-frame velocity δ for unit time (exponential map)."""
    if jtype == SPHERICAL:
        quat_multiply_exp(q, q0, dv[v0:v0 + 3], out)
    elif jtype == FREE:
        R = np.empty((3, 3))
        quat_to_matrix(q[q0], q[q0 + 1], q[q0 + 2], q[q0 + 3], R)
        dR = np.empty((3, 3))
        dt = np.empty(3)
        twist_exp(dv[v0:v0 + 3], dv[v0 + 3:v0 + 6], dR, dt)
        for i in range(3):
            out[q0 + 4 + i] = q[q0 + 4 + i] + R[i, 0] * dt[0] + R[i, 1] * dt[1] + R[i, 2] * dt[2]
        quat_multiply_exp(q, q0, dv[v0:v0 + 3], out)
    elif jtype == PLANAR:
        w = np.array([0.0, 0.0, dv[v0]])
        v = np.array([dv[v0 + 1], dv[v0 + 2], 0.0])
        dR = np.empty((3, 3))
        dt = np.empty(3)
        twist_exp(w, v, dR, dt)
        c = np.cos(q[q0])
        s = np.sin(q[q0])
        out[q0] = q[q0] + dv[v0]
        out[q0 + 1] = q[q0 + 1] + c * dt[0] - s * dt[1]
        out[q0 + 2] = q[q0 + 2] + s * dt[0] + c * dt[1]
    else:
        for d in range(nq):
            out[q0 + d] = q[q0 + d] + dv[v0 + d]
