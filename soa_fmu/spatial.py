"""Spatial algebra (SPEC E1; seed 000 §2, seed 004 §2.2).

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

The helpers below are small compiled functions writing into caller-owned arrays, so the recursive
sweeps built from them allocate nothing.
"""
from __future__ import annotations

import numpy as np
from numba import njit

JIT = dict(cache=True, nogil=True)
INLINE = dict(JIT, inline="always")


# ---------------------------------------------------------------- 3-vectors and rotations
@njit(**JIT)
def skew(x: np.ndarray) -> np.ndarray:
    """x̃: the 3×3 cross-product matrix, x̃ y = x × y."""
    return np.array([[0.0, -x[2], x[1]], [x[2], 0.0, -x[0]], [-x[1], x[0], 0.0]])


@njit(**INLINE)
def quat_to_matrix(qw: float, qx: float, qy: float, qz: float, R: np.ndarray) -> None:
    """Rotation matrix of the unit quaternion (w, x, y, z) (scalar first, Hamilton), into R."""
    R[0, 0] = 1.0 - 2.0 * (qy * qy + qz * qz)
    R[0, 1] = 2.0 * (qx * qy - qw * qz)
    R[0, 2] = 2.0 * (qx * qz + qw * qy)
    R[1, 0] = 2.0 * (qx * qy + qw * qz)
    R[1, 1] = 1.0 - 2.0 * (qx * qx + qz * qz)
    R[1, 2] = 2.0 * (qy * qz - qw * qx)
    R[2, 0] = 2.0 * (qx * qz - qw * qy)
    R[2, 1] = 2.0 * (qy * qz + qw * qx)
    R[2, 2] = 1.0 - 2.0 * (qx * qx + qy * qy)


@njit(**INLINE)
def axis_angle_to_matrix(axis: np.ndarray, angle: float, R: np.ndarray) -> None:
    """Rodrigues' formula for a unit axis, into R."""
    c = np.cos(angle)
    s = np.sin(angle)
    t = 1.0 - c
    x, y, z = axis[0], axis[1], axis[2]
    R[0, 0] = t * x * x + c
    R[0, 1] = t * x * y - s * z
    R[0, 2] = t * x * z + s * y
    R[1, 0] = t * x * y + s * z
    R[1, 1] = t * y * y + c
    R[1, 2] = t * y * z - s * x
    R[2, 0] = t * x * z - s * y
    R[2, 1] = t * y * z + s * x
    R[2, 2] = t * z * z + c


# ---------------------------------------------------------------- 6-D cross products
@njit(**INLINE)
def cross_motion(V: np.ndarray, x: np.ndarray, out: np.ndarray) -> None:
    """out = V ×̃ x for a motion vector x: [ω × xω;  v × xω + ω × xv]  (seed 004 §2.2)."""
    w0, w1, w2, v0, v1, v2 = V[0], V[1], V[2], V[3], V[4], V[5]
    a0, a1, a2, b0, b1, b2 = x[0], x[1], x[2], x[3], x[4], x[5]
    out[0] = w1 * a2 - w2 * a1
    out[1] = w2 * a0 - w0 * a2
    out[2] = w0 * a1 - w1 * a0
    out[3] = v1 * a2 - v2 * a1 + w1 * b2 - w2 * b1
    out[4] = v2 * a0 - v0 * a2 + w2 * b0 - w0 * b2
    out[5] = v0 * a1 - v1 * a0 + w0 * b1 - w1 * b0


@njit(**INLINE)
def cross_force(V: np.ndarray, f: np.ndarray, out: np.ndarray) -> None:
    """out = V ×̄* f for a force f: [ω × N + v × F;  ω × F]  (the gyroscopic operator)."""
    w0, w1, w2, v0, v1, v2 = V[0], V[1], V[2], V[3], V[4], V[5]
    n0, n1, n2, f0, f1, f2 = f[0], f[1], f[2], f[3], f[4], f[5]
    out[0] = w1 * n2 - w2 * n1 + v1 * f2 - v2 * f1
    out[1] = w2 * n0 - w0 * n2 + v2 * f0 - v0 * f2
    out[2] = w0 * n1 - w1 * n0 + v0 * f1 - v1 * f0
    out[3] = w1 * f2 - w2 * f1
    out[4] = w2 * f0 - w0 * f2
    out[5] = w0 * f1 - w1 * f0


# ---------------------------------------------------------------- φ and φ* with frames
@njit(**INLINE)
def apply_phi_star(R: np.ndarray, l: np.ndarray, V: np.ndarray, out: np.ndarray) -> None:
    """out = φ*(p, k) V: a parent-frame velocity/acceleration seen at body k, in body k's frame."""
    w0, w1, w2 = V[0], V[1], V[2]
    u0 = V[3] + w1 * l[2] - w2 * l[1]
    u1 = V[4] + w2 * l[0] - w0 * l[2]
    u2 = V[5] + w0 * l[1] - w1 * l[0]
    for i in range(3):
        out[i] = R[0, i] * w0 + R[1, i] * w1 + R[2, i] * w2
        out[3 + i] = R[0, i] * u0 + R[1, i] * u1 + R[2, i] * u2


@njit(**INLINE)
def apply_phi(R: np.ndarray, l: np.ndarray, f: np.ndarray, out: np.ndarray) -> None:
    """out = φ(p, k) f: a body-k force moved to the parent origin, in the parent frame."""
    F0 = R[0, 0] * f[3] + R[0, 1] * f[4] + R[0, 2] * f[5]
    F1 = R[1, 0] * f[3] + R[1, 1] * f[4] + R[1, 2] * f[5]
    F2 = R[2, 0] * f[3] + R[2, 1] * f[4] + R[2, 2] * f[5]
    for i in range(3):
        out[i] = R[i, 0] * f[0] + R[i, 1] * f[1] + R[i, 2] * f[2]
    out[0] += l[1] * F2 - l[2] * F1
    out[1] += l[2] * F0 - l[0] * F2
    out[2] += l[0] * F1 - l[1] * F0
    out[3] = F0
    out[4] = F1
    out[5] = F2


@njit(**INLINE)
def add_phi(R: np.ndarray, l: np.ndarray, f: np.ndarray, acc: np.ndarray, tmp: np.ndarray) -> None:
    """acc += φ(p, k) f."""
    apply_phi(R, l, f, tmp)
    for i in range(6):
        acc[i] += tmp[i]


@njit(**INLINE)
def add_phi_inertia(R: np.ndarray, l: np.ndarray, P: np.ndarray, acc: np.ndarray,
                    scratch: np.ndarray) -> None:
    """acc += φ(p, k) P φ*(p, k) for a symmetric 6×6 inertia-like P given in body k's frame.

    With P = [[A, B], [Bᵀ, C]]: rotate, A' = R A Rᵀ, B' = R B Rᵀ, C' = R C Rᵀ, then shift by l:
        C'' = C',   B'' = B' + l̃ C',   A'' = A' + l̃ B'ᵀ + B' l̃ᵀ + l̃ C' l̃ᵀ.
    Symmetric blocks are formed on their upper triangle only.  ``scratch``: a (≥2, 6, 6) array.
    """
    T = scratch[0]        # T = P blkdiag(Rᵀ, Rᵀ) on the blocks A, B, C
    X = scratch[1]        # rotated blocks A', B', C'
    for i in range(3):
        for j in range(3):
            T[i, j] = P[i, 0] * R[j, 0] + P[i, 1] * R[j, 1] + P[i, 2] * R[j, 2]
            T[i, 3 + j] = P[i, 3] * R[j, 0] + P[i, 4] * R[j, 1] + P[i, 5] * R[j, 2]
            T[3 + i, 3 + j] = P[3 + i, 3] * R[j, 0] + P[3 + i, 4] * R[j, 1] + P[3 + i, 5] * R[j, 2]
    for i in range(3):
        for j in range(3):
            X[i, 3 + j] = R[i, 0] * T[0, 3 + j] + R[i, 1] * T[1, 3 + j] + R[i, 2] * T[2, 3 + j]
        for j in range(i, 3):
            X[i, j] = R[i, 0] * T[0, j] + R[i, 1] * T[1, j] + R[i, 2] * T[2, j]
            X[3 + i, 3 + j] = R[i, 0] * T[3, 3 + j] + R[i, 1] * T[4, 3 + j] + R[i, 2] * T[5, 3 + j]
    for i in range(3):
        for j in range(i):
            X[i, j] = X[j, i]
            X[3 + i, 3 + j] = X[3 + j, 3 + i]
    lx, ly, lz = l[0], l[1], l[2]
    # LC = l̃ C' and LB = l̃ B'ᵀ, column by column (l × column)
    for j in range(3):
        c0, c1, c2 = X[3, 3 + j], X[4, 3 + j], X[5, 3 + j]
        T[3, j] = ly * c2 - lz * c1
        T[4, j] = lz * c0 - lx * c2
        T[5, j] = lx * c1 - ly * c0
        b0, b1, b2 = X[j, 3], X[j, 4], X[j, 5]
        T[0, j] = ly * b2 - lz * b1
        T[1, j] = lz * b0 - lx * b2
        T[2, j] = lx * b1 - ly * b0
    for i in range(3):
        for j in range(3):
            bij = X[i, 3 + j] + T[3 + i, j]
            acc[i, 3 + j] += bij
            acc[3 + j, i] += bij
        # row i of (l̃ C') l̃ᵀ is l × (row i of l̃ C')
        m0, m1, m2 = T[3 + i, 0], T[3 + i, 1], T[3 + i, 2]
        row0 = ly * m2 - lz * m1
        row1 = lz * m0 - lx * m2
        row2 = lx * m1 - ly * m0
        for j in range(i, 3):
            rj = row0 if j == 0 else (row1 if j == 1 else row2)
            aij = X[i, j] + T[i, j] + T[j, i] + rj
            acc[i, j] += aij
            cij = X[3 + i, 3 + j]
            acc[3 + i, 3 + j] += cij
            if j != i:
                acc[j, i] += aij
                acc[3 + j, 3 + i] += cij


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


# ---------------------------------------------------------------- φ on 6 × n blocks (M⁻¹, Ω sweeps)
@njit(**INLINE)
def add_phi_block(R: np.ndarray, l: np.ndarray, X: np.ndarray, acc: np.ndarray) -> None:
    """acc += φ(p, k) X for a 6 × n block X of forces (columns)."""
    for c in range(X.shape[1]):
        F0 = R[0, 0] * X[3, c] + R[0, 1] * X[4, c] + R[0, 2] * X[5, c]
        F1 = R[1, 0] * X[3, c] + R[1, 1] * X[4, c] + R[1, 2] * X[5, c]
        F2 = R[2, 0] * X[3, c] + R[2, 1] * X[4, c] + R[2, 2] * X[5, c]
        N0 = R[0, 0] * X[0, c] + R[0, 1] * X[1, c] + R[0, 2] * X[2, c]
        N1 = R[1, 0] * X[0, c] + R[1, 1] * X[1, c] + R[1, 2] * X[2, c]
        N2 = R[2, 0] * X[0, c] + R[2, 1] * X[1, c] + R[2, 2] * X[2, c]
        acc[0, c] += N0 + l[1] * F2 - l[2] * F1
        acc[1, c] += N1 + l[2] * F0 - l[0] * F2
        acc[2, c] += N2 + l[0] * F1 - l[1] * F0
        acc[3, c] += F0
        acc[4, c] += F1
        acc[5, c] += F2


@njit(**INLINE)
def phi_star_block(R: np.ndarray, l: np.ndarray, X: np.ndarray, out: np.ndarray) -> None:
    """out = φ*(p, k) X for a 6 × n block X of motions (columns)."""
    for c in range(X.shape[1]):
        w0, w1, w2 = X[0, c], X[1, c], X[2, c]
        u0 = X[3, c] + w1 * l[2] - w2 * l[1]
        u1 = X[4, c] + w2 * l[0] - w0 * l[2]
        u2 = X[5, c] + w0 * l[1] - w1 * l[0]
        for i in range(3):
            out[i, c] = R[0, i] * w0 + R[1, i] * w1 + R[2, i] * w2
            out[3 + i, c] = R[0, i] * u0 + R[1, i] * u1 + R[2, i] * u2
