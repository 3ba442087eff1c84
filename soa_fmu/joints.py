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

These classes describe joints for :meth:`soa_fmu.Model.add_body`; the joint transform, θ̇ = f(θ)β
and the exponential map θ ⊕ δ are computed by the C core (``soa_fmu/core/joints.c``).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

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
