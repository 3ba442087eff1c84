"""Closed chains: loop closures and grasps between frames (SPEC E11–E13).

Seed 000 §2.3 and §3 (steps (A)–(F), eqs. (2.16)–(2.17), (3.10)–(3.13), Appendix A (A.5)–(A.6));
seed 003 Part II (general CCFD algorithm (4.9), RCCFD1 (6.11); non-rigid grasps, Appendices A–B).

**Constraint rows.**  A constraint joins frame_a and frame_b.  Its rows act on the relative spatial
velocity of frame_b with respect to frame_a, taken at frame_b's origin and expressed in frame_a's
axes,

    Ṽ = Ṽ_b − Ṽ_a = [Rₐᵀ(ω_b − ω_a);  Rₐᵀ(v_b − v_a − ω_a × (x_b − x_a))],      A Ṽ = Ũ    (2.16)

with constant rows A (frame_a axes; n = ``axis``, t₁ = unit(n × e), e the coordinate axis least
aligned with n, t₂ = n × t₁):

    weld         6 rows  [I₃ 0; 0 I₃]                  rigid grasp
    ball         3 rows  [0 I₃]                         point contact / spherical joint
    hinge        5 rows  [t₁ᵀ 0; t₂ᵀ 0; 0 I₃]           rotation about n allowed
    soft_finger  4 rows  [nᵀ 0; 0 I₃]                   rotation about t₁, t₂ allowed (seed 003 App. A)

``u`` is the prescribed constraint velocity Ũ (rows, default 0).  Each closure contributes two
points of the papers' B operator (2.13): the point of frame_b's body at x_b and the point of
frame_a's body that coincides with it, both with frame_a's axes, so A(J_b − J_a) β = Ũ.

**Forward dynamics** (seed 000 steps (A)–(F), seed 003 RCCFD1 (6.11)):

    (A) β̇ᶠ = M⁻¹ T̂                       innovations filter/smoother, O(N)      (3.7), (A.2)
    (B) α̃ᶠ: the free relative acceleration of every closure, from the smoother's α(k) (3.8)
    (C) Λ⁻¹ = J M⁻¹ J* = B*ΩB                Ω recursion, O(N) per point pair      (3.10), (A.5)
    (D) (A Λ⁻¹ A*) f̃ = A α̃ᶠ − Ũ̇ + stabilization                                   (3.11)
    (E) Δβ̇ = −[I − HψK]* D⁻¹ H ψ B A* f̃     bias-free filter/smoother, O(N)        (3.12), (A.6)
    (F) β̇ = β̇ᶠ + Δβ̇

O(N) + O(n_c³).  A free body in the tree (the held object of seed 003, a secondary system in the
sense of seed 000 §2.3) needs no special treatment: its Υ = H*D⁻¹H = M(C)⁻¹ is the A M⁻¹(C) A*
term of (4.9c).  ``method="general"`` instead runs the general algorithm (4.9) literally — the
arms' free dynamics and M⁻¹ by any available method, the object by its own Newton–Euler equation
at C — as an independent check.

**Forces.**  ``forces[name]`` holds, row by row in the constraint's basis (frame_a axes, at
frame_b's origin: [N; F] for a weld), the force that frame_a's body exerts on frame_b's body; the
reaction acts on frame_a's body.  In the papers' sign, f̃ = −forces.

**Stabilization** (Baumgarte), gains (α, β) in 1/s: the acceleration-level rows are solved for

    A Ṽ̇ = Ũ̇ − 2α (A Ṽ − Ũ) − β² e,       so  ë + 2α ė + β² e = 0

for the position error e (α = β: critically damped).  e, per kind, in frame_a axes, relative to
the target pose (R₀, p₀) of frame_b in frame_a (identity unless re-anchored, see ``anchors``):
translation p_rel − p₀ for all kinds; rotation log(R_rel R₀ᵀ) for a weld; t_i · (n × R_rel R₀ᵀ n)
for a hinge; none for the soft finger's torsion row (that row is non-holonomic).  ``residuals`` is
the norm of e (m and rad mixed), 0 for inactive constraints.

**Rank.**  (A Λ⁻¹ A*) is factored after Jacobi scaling.  Rows that no joint can move (the
out-of-plane rows of a ball or hinge closing a planar loop) get zero force silently when their
free acceleration is zero; other dependent rows (redundant constraints) get the minimum-norm force
and one :class:`ConstraintWarning`; when the dependent rows' free accelerations cannot be
cancelled (a singular configuration) :class:`ConstraintError` names the constraints involved.
"""
from __future__ import annotations

import math
import warnings
import weakref
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
from numba import njit
from numba.extending import register_jitable

from .articulated import aba_kernel, forward_dynamics, mass_matrix_inverse
from .inverse_dynamics import rnea_kernel
from .joints import FREE
from .kinematics import (OK, as_vector, forward_kinematics, frame_pose, jacobian_kernel,
                         pack_external_forces, raise_for_status, world_placements)
from .model import CONSTRAINT_KINDS, Model, ModelError, view1, view2, view3, views
from .operational_space import correction_sweep, point_buffers, point_inertia_inverse, point_views
from .spatial import INLINE, JIT, apply_phi, apply_phi_star, cross_force

WELD, BALL, HINGE, SOFT_FINGER = (list(CONSTRAINT_KINDS).index(k)
                                  for k in ("weld", "ball", "hinge", "soft_finger"))
REDUNDANT, CONSTRAINT_SINGULAR, DEPENDENT = 20, 21, 22   # status codes of step (D)

ZERO_ROW = 1e-12      # A Λ⁻¹ A* diagonal below this fraction of the largest: a row no joint moves
PIVOT = 1e-10         # Cholesky pivot of the Jacobi-scaled matrix below this: rank-deficient
NULL = 1e-9           # eigenvalue (scaled) below this fraction of the largest: dependent direction
CONSISTENT = 1e-6     # free acceleration a dependent direction must cancel, relative to max(|rhs|, |g|, 1)


class ConstraintError(ValueError):
    """The active constraints cannot be satisfied: A·J lost rank at a singular configuration."""


class ConstraintWarning(UserWarning):
    """Redundant (dependent but consistent) constraint rows: the forces are the minimum-norm ones."""


@dataclass
class ConstrainedResult:
    """Result of :func:`constrained_forward_dynamics`."""

    qdd: np.ndarray                                   # β̇ (nv)
    forces: dict[str, np.ndarray]                     # per constraint, size rows, frame_a axes
    residuals: dict[str, float]                       # position-level residual norm
    lambda_matrix: np.ndarray | None = None           # A Λ⁻¹ A* = A J M⁻¹ J* A* of the active rows
    rows: dict[str, slice] = field(default_factory=dict)   # each active constraint's rows in it


# ---------------------------------------------------------------- packed constraint data
class ClosureSet(NamedTuple):
    """Constants and per-call arrays of the closure constraints (flat int / float buffers)."""

    kind: np.ndarray      # (nc,) WELD, BALL, HINGE, SOFT_FINGER
    body_a: np.ndarray    # (nc,) body of frame_a (−1 world)
    body_b: np.ndarray    # (nc,)
    size: np.ndarray      # (nc,) number of rows
    active: np.ndarray    # (nc,) 1 when switched on (input)
    row0: np.ndarray      # (nc + 1,) first row of each constraint among the active rows
    Ra: np.ndarray        # (nc, 3, 3) frame_a in its body
    pa: np.ndarray        # (nc, 3)
    Rb: np.ndarray        # (nc, 3, 3)
    pb: np.ndarray        # (nc, 3)
    axis: np.ndarray      # (nc, 3) n (hinge / soft finger), frame_a axes
    A: np.ndarray         # (nc, 6, 6) rows A (first ``size`` rows used)
    anchor_R: np.ndarray  # (nc, 3, 3) target orientation R₀ of frame_b in frame_a (input)
    anchor_p: np.ndarray  # (nc, 3) target position p₀ (input)
    u: np.ndarray         # (nc, 6) prescribed constraint velocity Ũ (input, rows)
    udot: np.ndarray      # (nc, 6) its derivative (input, rows)
    Vrel: np.ndarray      # (nc, 6) relative velocity Ṽ
    arel: np.ndarray      # (nc, 6) its derivative with the current α (free: α̃ᶠ)
    err: np.ndarray       # (nc, 6) position error rows e
    resid: np.ndarray     # (nc,) |e|
    S: np.ndarray         # (6nc, 6nc) A Λ⁻¹ A*
    C: np.ndarray         # (6nc, 6nc) its Jacobi-scaled Cholesky factor
    rhs_dyn: np.ndarray   # (6nc,) A α̃ᶠ − Ũ̇
    rhs_stab: np.ndarray  # (6nc,) 2α(AṼ − Ũ) + β² e
    f: np.ndarray         # (6nc,) f̃ (papers' sign)
    ds: np.ndarray        # (6nc,) Jacobi scaling
    y: np.ndarray         # (6nc,) scratch
    nullw: np.ndarray     # (6nc,) weight of each row in the dependent directions found
    qfree: np.ndarray     # (nv,) β̇ᶠ
    dq: np.ndarray        # (nv,) Δβ̇
    zero_nv: np.ndarray   # (nv,) zeros
    zero6: np.ndarray     # (6,) zeros
    s3: np.ndarray        # (4, 3) scratch
    s33: np.ndarray       # (5, 3, 3) scratch
    s6: np.ndarray        # (6, 6) scratch (6-vectors)
    LA: np.ndarray        # (6, 6) scratch block
    aref: np.ndarray      # (1,) acceleration (velocity) scale of the consistency test


@register_jitable
def closure_views(ci: np.ndarray, cf: np.ndarray) -> ClosureSet:
    nc, nv = ci[0], ci[1]
    o = 2
    kind, o = view1(ci, o, nc)
    body_a, o = view1(ci, o, nc)
    body_b, o = view1(ci, o, nc)
    size, o = view1(ci, o, nc)
    active, o = view1(ci, o, nc)
    row0, o = view1(ci, o, nc + 1)
    nr = 6 * nc
    o = 0
    Ra, o = view3(cf, o, nc, 3, 3)
    pa, o = view2(cf, o, nc, 3)
    Rb, o = view3(cf, o, nc, 3, 3)
    pb, o = view2(cf, o, nc, 3)
    axis, o = view2(cf, o, nc, 3)
    A, o = view3(cf, o, nc, 6, 6)
    anchor_R, o = view3(cf, o, nc, 3, 3)
    anchor_p, o = view2(cf, o, nc, 3)
    u, o = view2(cf, o, nc, 6)
    udot, o = view2(cf, o, nc, 6)
    Vrel, o = view2(cf, o, nc, 6)
    arel, o = view2(cf, o, nc, 6)
    err, o = view2(cf, o, nc, 6)
    resid, o = view1(cf, o, nc)
    S, o = view2(cf, o, nr, nr)
    C, o = view2(cf, o, nr, nr)
    rhs_dyn, o = view1(cf, o, nr)
    rhs_stab, o = view1(cf, o, nr)
    f, o = view1(cf, o, nr)
    ds, o = view1(cf, o, nr)
    y, o = view1(cf, o, nr)
    nullw, o = view1(cf, o, nr)
    qfree, o = view1(cf, o, nv)
    dq, o = view1(cf, o, nv)
    zero_nv, o = view1(cf, o, nv)
    zero6, o = view1(cf, o, 6)
    s3, o = view2(cf, o, 4, 3)
    s33, o = view3(cf, o, 5, 3, 3)
    s6, o = view2(cf, o, 6, 6)
    LA, o = view2(cf, o, 6, 6)
    aref, o = view1(cf, o, 1)
    return ClosureSet(kind, body_a, body_b, size, active, row0, Ra, pa, Rb, pb, axis, A, anchor_R,
                      anchor_p, u, udot, Vrel, arel, err, resid, S, C, rhs_dyn, rhs_stab, f, ds, y,
                      nullw, qfree, dq, zero_nv, zero6, s3, s33, s6, LA, aref)


def closure_float_size(nc: int, nv: int) -> int:
    nr = 6 * nc
    return (nc * (9 + 3 + 9 + 3 + 3 + 36 + 9 + 3 + 6 * 5 + 1) + 2 * nr * nr + 6 * nr + 3 * nv
            + 6 + 12 + 45 + 36 + 36 + 1)


def constraint_rows(kind: str, axis) -> np.ndarray:
    """The rows A (size × 6, frame_a axes) of a constraint kind (module docstring)."""
    n = np.asarray(axis, dtype=float)
    n = n / np.linalg.norm(n)
    e = np.eye(3)[int(np.argmin(np.abs(n)))]
    t1 = np.cross(n, e)
    t1 /= np.linalg.norm(t1)
    t2 = np.cross(n, t1)
    Z = np.zeros(3)
    translation = [np.r_[Z, ei] for ei in np.eye(3)]
    if kind == "weld":
        return np.eye(6)
    if kind == "ball":
        return np.array(translation)
    if kind == "hinge":
        return np.array([np.r_[t1, Z], np.r_[t2, Z], *translation])
    if kind == "soft_finger":
        return np.array([np.r_[n, Z], *translation])
    raise ModelError(f"unknown constraint kind {kind!r}")


# ---------------------------------------------------------------- closure kinematics (compiled)
@njit(**JIT)
def frame_in_world(Rw: np.ndarray, pw: np.ndarray, k: int, Rf: np.ndarray, pf: np.ndarray,
                   R: np.ndarray, x: np.ndarray) -> None:
    """World pose (R, x) of a frame placed at (Rf, pf) on body k (world when k < 0).

    (The per-constraint helpers take arrays, not the model/workspace tuples: that keeps both the
    call and the compilation cheap.)"""
    for i in range(3):
        if k < 0:
            x[i] = pf[i]
            for j in range(3):
                R[i, j] = Rf[i, j]
        else:
            x[i] = pw[k, i]
            for j in range(3):
                x[i] += Rw[k, i, j] * pf[j]
                s = 0.0
                for r in range(3):
                    s += Rw[k, i, r] * Rf[r, j]
                R[i, j] = s


@njit(**JIT)
def closure_point(Rw, pw, Vb, alpha, a0, k: int, RA: np.ndarray, xB: np.ndarray, R: np.ndarray,
                  l: np.ndarray, V: np.ndarray, acc: np.ndarray, with_acc: bool) -> None:
    """A point of B (2.13): the point of body k at x_b with frame_a's axes — B(k, ·) = φ(O(k), C)
    as (R, l) in body k's frame — and its spatial velocity Ṽ = B*V(k) and acceleration B*α(k)."""
    if k < 0:                      # world: V = 0, α = the base (gravity) acceleration
        for i in range(3):
            l[i] = xB[i]
            for j in range(3):
                R[i, j] = RA[i, j]
        V[:] = 0.0
        if with_acc:
            apply_phi_star(R, l, a0, acc)
        return
    for i in range(3):
        s = 0.0
        for r in range(3):
            s += Rw[k, r, i] * (xB[r] - pw[k, r])
        l[i] = s
        for j in range(3):
            s = 0.0
            for r in range(3):
                s += Rw[k, r, i] * RA[r, j]
            R[i, j] = s
    apply_phi_star(R, l, Vb[k], V)
    if with_acc:
        apply_phi_star(R, l, alpha[k], acc)


@njit(**JIT)
def relative_motion(Va, Vb, Aa, Ab, Vrel, arel) -> None:
    """Ṽ = Ṽ_b − Ṽ_a and its time derivative in frame_a's (moving) axes, from the points' spatial
    accelerations α̃ (same point x_b, same axes):

        d/dt ω_rel = α̃_b,ω − α̃_a,ω − ω_a × ω_b
        d/dt v_rel = (α̃_b,v + ω_b × v_b) − (α̃_a,v + ω_a × v_a) − 2 ω_a × (v_b − v_a)

    (the classical point accelerations a = α̃_v + ω × v, less the Coriolis term of the frame)."""
    for i in range(6):
        Vrel[i] = Vb[i] - Va[i]
    wa0, wa1, wa2 = Va[0], Va[1], Va[2]
    wb0, wb1, wb2 = Vb[0], Vb[1], Vb[2]
    va0, va1, va2 = Va[3], Va[4], Va[5]
    vb0, vb1, vb2 = Vb[3], Vb[4], Vb[5]
    arel[0] = Ab[0] - Aa[0] - (wa1 * wb2 - wa2 * wb1)
    arel[1] = Ab[1] - Aa[1] - (wa2 * wb0 - wa0 * wb2)
    arel[2] = Ab[2] - Aa[2] - (wa0 * wb1 - wa1 * wb0)
    d0, d1, d2 = vb0 - va0, vb1 - va1, vb2 - va2
    arel[3] = (Ab[3] + wb1 * vb2 - wb2 * vb1) - (Aa[3] + wa1 * va2 - wa2 * va1) - 2.0 * (wa1 * d2 - wa2 * d1)
    arel[4] = (Ab[4] + wb2 * vb0 - wb0 * vb2) - (Aa[4] + wa2 * va0 - wa0 * va2) - 2.0 * (wa2 * d0 - wa0 * d2)
    arel[5] = (Ab[5] + wb0 * vb1 - wb1 * vb0) - (Aa[5] + wa0 * va1 - wa1 * va0) - 2.0 * (wa0 * d1 - wa1 * d0)


@njit(**JIT)
def rotation_log(E: np.ndarray, out: np.ndarray) -> None:
    """Rotation vector (axis × angle) of the rotation matrix E, valid up to and at π."""
    v0 = 0.5 * (E[2, 1] - E[1, 2])
    v1 = 0.5 * (E[0, 2] - E[2, 0])
    v2 = 0.5 * (E[1, 0] - E[0, 1])
    s = math.sqrt(v0 * v0 + v1 * v1 + v2 * v2)
    c = 0.5 * (E[0, 0] + E[1, 1] + E[2, 2] - 1.0)
    if s < 1e-6 and c < 0.0:                       # angle near π: E ≈ 2nnᵀ − I
        i = 0
        for r in range(1, 3):
            if E[r, r] > E[i, i]:
                i = r
        d = math.sqrt(max(0.5 * (E[i, i] + 1.0), 1e-300))
        th = math.atan2(s, c)
        sgn = 1.0
        if (i == 0 and v0 < 0.0) or (i == 1 and v1 < 0.0) or (i == 2 and v2 < 0.0):
            sgn = -1.0
        for r in range(3):
            nr = 0.5 * (E[r, i] + E[i, r]) / (2.0 * d) if r != i else d
            out[r] = sgn * th * nr
        return
    k = math.atan2(s, c) / s if s > 1e-12 else 1.0
    out[0], out[1], out[2] = k * v0, k * v1, k * v2


@njit(**JIT)
def pose_error(kind: int, n: np.ndarray, A: np.ndarray, size: int, R0: np.ndarray, p0: np.ndarray,
               RA, xA, RB, xB, err: np.ndarray, Rrel: np.ndarray, E: np.ndarray,
               e6: np.ndarray) -> float:
    """Position error rows e = A e₆ of one constraint (module docstring) into err; returns |e|."""
    for i in range(3):
        for k in range(3):
            s = 0.0
            for r in range(3):
                s += RA[r, i] * RB[r, k]
            Rrel[i, k] = s
    for i in range(3):
        for k in range(3):
            s = 0.0
            for r in range(3):
                s += Rrel[i, r] * R0[k, r]
            E[i, k] = s
    for i in range(3):
        s = 0.0
        for r in range(3):
            s += RA[r, i] * (xB[r] - xA[r])
        e6[3 + i] = s - p0[i]
        e6[i] = 0.0
    if kind == WELD:
        rotation_log(E, e6[:3])
    elif kind == HINGE:
        En0 = E[0, 0] * n[0] + E[0, 1] * n[1] + E[0, 2] * n[2]
        En1 = E[1, 0] * n[0] + E[1, 1] * n[1] + E[1, 2] * n[2]
        En2 = E[2, 0] * n[0] + E[2, 1] * n[1] + E[2, 2] * n[2]
        e6[0] = n[1] * En2 - n[2] * En1
        e6[1] = n[2] * En0 - n[0] * En2
        e6[2] = n[0] * En1 - n[1] * En0
    r2 = 0.0
    for r in range(size):
        s = 0.0
        for i in range(6):
            s += A[r, i] * e6[i]
        err[r] = s
        r2 += s * s
    return math.sqrt(r2)


@njit(**INLINE)
def closure_kinematics(m, w, p, c, with_acc: bool) -> int:
    """Closure points, Ṽ, α̃ (from the current w.alpha), position errors and the active row offsets.
    Needs world placements and velocities (and α when ``with_acc``).  Returns the number of rows."""
    RA, RB = c.s33[0], c.s33[1]
    xA, xB = c.s3[0], c.s3[1]
    Va, Vb, Aa, Ab = c.s6[0], c.s6[1], c.s6[2], c.s6[3]
    nc = c.kind.shape[0]
    c.row0[0] = 0
    for j in range(nc):
        c.row0[j + 1] = c.row0[j] + (c.size[j] if c.active[j] else 0)
        if not c.active[j]:
            p.body[2 * j] = -1
            p.body[2 * j + 1] = -1
            c.resid[j] = 0.0
            continue
        ka, kb = c.body_a[j], c.body_b[j]
        frame_in_world(w.Rw, w.pw, ka, c.Ra[j], c.pa[j], RA, xA)
        frame_in_world(w.Rw, w.pw, kb, c.Rb[j], c.pb[j], RB, xB)
        p.body[2 * j], p.body[2 * j + 1] = ka, kb
        closure_point(w.Rw, w.pw, w.V, w.alpha, m.a0, ka, RA, xB, p.R[2 * j], p.l[2 * j], Va, Aa,
                      with_acc)
        closure_point(w.Rw, w.pw, w.V, w.alpha, m.a0, kb, RA, xB, p.R[2 * j + 1], p.l[2 * j + 1],
                      Vb, Ab, with_acc)
        relative_motion(Va, Vb, Aa, Ab, c.Vrel[j], c.arel[j])
        c.resid[j] = pose_error(c.kind[j], c.axis[j], c.A[j], c.size[j], c.anchor_R[j], c.anchor_p[j],
                                RA, xA, RB, xB, c.err[j], c.s33[3], c.s33[4], c.s6[4])
    return c.row0[nc]


@njit(**INLINE)
def closure_rhs(c, alpha: float, beta: float) -> None:
    """rhs_dyn = A α̃ᶠ − Ũ̇ and rhs_stab = 2α(AṼ − Ũ) + β²e, row by row (step (D), (3.11))."""
    for j in range(c.kind.shape[0]):
        if not c.active[j]:
            continue
        r0 = c.row0[j]
        for r in range(c.size[j]):
            a = 0.0
            v = 0.0
            for i in range(6):
                a += c.A[j, r, i] * c.arel[j, i]
                v += c.A[j, r, i] * c.Vrel[j, i]
            c.rhs_dyn[r0 + r] = a - c.udot[j, r]
            c.rhs_stab[r0 + r] = 2.0 * alpha * (v - c.u[j, r]) + beta * beta * c.err[j, r]


@njit(**INLINE)
def closure_matrix(p, c) -> None:
    """S = A Λ⁻¹ A* = Σ σ_s σ_t A_c L(s, t) A_d* over the two points (σ = −1 on frame_a's side,
    +1 on frame_b's) of every pair of active constraints (step (C)–(D))."""
    nc = c.kind.shape[0]
    n = c.row0[nc]
    for i in range(n):
        for j in range(n):
            c.S[i, j] = 0.0
    LA = c.LA
    for jc in range(nc):
        if not c.active[jc]:
            continue
        for jd in range(nc):
            if not c.active[jd]:
                continue
            for sa in range(2):
                s = 2 * jc + sa
                if p.body[s] < 0:
                    continue
                for sb in range(2):
                    t = 2 * jd + sb
                    if p.body[t] < 0:
                        continue
                    sign = 1.0 if sa == sb else -1.0
                    # LA = L(s, t) A_dᵀ  (6 × size_d)
                    for i in range(6):
                        for r in range(c.size[jd]):
                            a = 0.0
                            for k in range(6):
                                a += p.L[6 * s + i, 6 * t + k] * c.A[jd, r, k]
                            LA[i, r] = a
                    for r in range(c.size[jc]):
                        for rr in range(c.size[jd]):
                            a = 0.0
                            for i in range(6):
                                a += c.A[jc, r, i] * LA[i, rr]
                            c.S[c.row0[jc] + r, c.row0[jd] + rr] += sign * a


@njit(**INLINE)
def solve_closure(c, n: int, a_ref: float) -> int:
    """Step (D): f̃ = (A Λ⁻¹ A*)⁻¹ (rhs_dyn + rhs_stab) by Cholesky after Jacobi scaling (module
    docstring, "Rank").  Rows no joint moves get zero force (CONSTRAINT_SINGULAR when their free
    acceleration is not zero; nullw marks them).  Returns DEPENDENT when a pivot of the scaled matrix
    falls below PIVOT: :func:`solve_dependent` (numpy, rare) then finds the minimum-norm f̃."""
    S, C, f, ds, y = c.S, c.C, c.f, c.ds, c.y
    dmax = 0.0
    for i in range(n):
        dmax = max(dmax, S[i, i])
    tol = CONSISTENT * a_ref
    status = OK
    for i in range(n):
        c.nullw[i] = 0.0
        if S[i, i] > ZERO_ROW * dmax and dmax > 0.0:
            ds[i] = 1.0 / math.sqrt(S[i, i])
        else:
            ds[i] = 0.0                              # a row no joint moves: zero force
            if abs(c.rhs_dyn[i]) > tol:
                c.nullw[i] = 1.0
                status = CONSTRAINT_SINGULAR
    if status != OK:
        return status
    # Cholesky of the scaled matrix (identity on the zero rows)
    for j in range(n):
        for i in range(j, n):
            s = ds[i] * S[i, j] * ds[j] if ds[i] > 0.0 and ds[j] > 0.0 else (1.0 if i == j else 0.0)
            for k in range(j):
                s -= C[i, k] * C[j, k]
            if i == j:
                if not s > PIVOT:
                    return DEPENDENT
                C[j, j] = math.sqrt(s)
            else:
                C[i, j] = s / C[j, j]
    for i in range(n):
        y[i] = ds[i] * (c.rhs_dyn[i] + c.rhs_stab[i])
    for i in range(n):
        s = y[i]
        for k in range(i):
            s -= C[i, k] * y[k]
        y[i] = s / C[i, i]
    for i in range(n - 1, -1, -1):
        s = y[i]
        for k in range(i + 1, n):
            s -= C[k, i] * y[k]
        y[i] = s / C[i, i]
    for i in range(n):
        f[i] = ds[i] * y[i]
    return OK


def solve_dependent(c: ClosureSet, n: int, a_ref: float) -> int:
    """Step (D) when A·J has dependent rows: the minimum-norm f̃ from the eigen-decomposition of the
    Jacobi-scaled A Λ⁻¹ A*.  The free accelerations (rhs_dyn) of the dependent directions must
    vanish — else CONSTRAINT_SINGULAR (a singular configuration); REDUNDANT otherwise.  The
    stabilization terms of those directions are dropped (they can't be acted on).  nullw marks the
    rows of the dependent directions."""
    ds = np.array(c.ds[:n])
    rd, rs = np.array(c.rhs_dyn[:n]), np.array(c.rhs_stab[:n])
    St = ds[:, None] * c.S[:n, :n] * ds[None, :]
    lam, V = np.linalg.eigh(St)
    keep = lam > NULL * max(lam[-1], 0.0)
    if lam[-1] <= 0.0:
        keep[:] = False
    Vk, Vn = V[:, keep], V[:, ~keep & (ds[None, :] @ np.abs(V) > 0).ravel()]
    c.f[:n] = ds * (Vk @ ((Vk.T @ (ds * (rd + rs))) / lam[keep]))
    # null component of the scaled free accelerations, back in acceleration units (row by row)
    bd = Vn.T @ (ds * rd)
    scale = np.where(ds > 0, 1.0 / np.where(ds > 0, ds, 1.0), 0.0)
    residual = np.abs(scale[:, None] * Vn * bd[None, :])
    bad = residual.max(axis=0) > CONSISTENT * a_ref if Vn.shape[1] else np.zeros(0, bool)
    w = (Vn[:, bad] ** 2).sum(axis=1) if bad.any() else (Vn ** 2).sum(axis=1)
    c.nullw[:n] = np.where(ds > 0, w, 0.0)
    if bad.any():
        return CONSTRAINT_SINGULAR
    return REDUNDANT if Vn.shape[1] else OK


@njit(**INLINE)
def apply_closure_forces(m, w, p, c) -> None:
    """Δβ̇ = −M⁻¹ J* A* f̃ into c.dq (step (E), (3.12) by (A.6)): the force −A*f̃ acts on frame_b's
    body at x_b, +A*f̃ on frame_a's body, moved to the body origins by B = φ(O(k), C)."""
    w.fext[:] = 0.0
    F = c.s6[4]
    tmp = c.s6[5]
    for j in range(c.kind.shape[0]):
        if not c.active[j]:
            continue
        r0 = c.row0[j]
        for i in range(6):
            s = 0.0
            for r in range(c.size[j]):
                s += c.A[j, r, i] * c.f[r0 + r]
            F[i] = s
        for side in range(2):
            s = 2 * j + side
            k = p.body[s]
            if k < 0:
                continue
            apply_phi(p.R[s], p.l[s], F, tmp)
            sign = 1.0 if side == 0 else -1.0
            for i in range(6):
                w.fext[k, i] += sign * tmp[i]
    correction_sweep(m, w, c.zero_nv, c.zero6, c.dq)


@njit(**INLINE)
def reference_acceleration(m, c, n: int) -> float:
    """max(|rhs_dyn|, |g|, 1): the scale against which dependent rows must be consistent."""
    a = max(1.0, math.sqrt(m.a0[3] ** 2 + m.a0[4] ** 2 + m.a0[5] ** 2))
    for i in range(n):
        a = max(a, abs(c.rhs_dyn[i]))
    return a


# ---------------------------------------------------------------- the compiled entry point
FD, PROJECT, STATE, FINISH, SOLVE = range(5)      # modes of closure_kernel


@njit(**INLINE)
def velocity_rhs(c) -> float:
    """rhs_dyn = A Ṽ − Ũ (a velocity projection), rhs_stab = 0; returns the velocity scale."""
    scale = 1.0
    for j in range(c.kind.shape[0]):
        if c.active[j]:
            for r in range(c.size[j]):
                v = 0.0
                for i in range(6):
                    v += c.A[j, r, i] * c.Vrel[j, i]
                c.rhs_dyn[c.row0[j] + r] = v - c.u[j, r]
                c.rhs_stab[c.row0[j] + r] = 0.0
                scale = max(scale, abs(v - c.u[j, r]))
    return scale


@njit(**JIT)
def closure_kernel(mode, mi, mf, wf, pi, pf, ci, cf, base, alpha, beta, out):
    """Steps (B)–(F) of seed 000 §3 / RCCFD1 (6.11) of seed 003, after step (A) — the tree's
    innovations forward dynamics ``aba_kernel`` — has left the placements, velocities, articulated
    quantities (P, D⁻¹, G) and the free accelerations α(k) in the workspace:

        FD       (B) free relative accelerations, (C) Λ⁻¹ by the Ω recursion, (D) forces,
                 (E)–(F) out = base + Δβ̇ with base = β̇ᶠ
        PROJECT  the same on velocities: (A Λ⁻¹ A*) μ = A Ṽ − Ũ, out = β − M⁻¹J*A*μ (base = β)
        STATE    (B) only: Ṽ, its derivative with the workspace's α, errors, right-hand sides
        FINISH   (E)–(F) after :func:`solve_dependent` found f̃ (out = base + Δβ̇)
        SOLVE    (D) alone on the stored A Λ⁻¹ A* (the general form (4.9); scale = alpha)

    One entry point with one call site per step keeps the compiled code small."""
    m, w = views(mi, mf, wf)
    p = point_views(pi, pf)
    c = closure_views(ci, cf)
    n = c.row0[c.kind.shape[0]]
    if mode == FD or mode == PROJECT or mode == STATE:
        # (B) closure points, relative velocities / free accelerations, errors
        world_placements(m, w)
        n = closure_kinematics(m, w, p, c, mode != PROJECT)
        if mode == PROJECT:
            c.aref[0] = velocity_rhs(c)
        else:
            closure_rhs(c, alpha, beta)
            c.aref[0] = reference_acceleration(m, c, n)
        if mode == STATE:
            return OK, 0
        # (C) Λ⁻¹ = B*ΩB by the Ω recursion, and A Λ⁻¹ A*                      (6.11d–e)
        point_inertia_inverse(m, w, p)
        closure_matrix(p, c)
    elif mode == SOLVE:
        c.aref[0] = alpha
    if mode != FINISH:
        # (D) constraint forces                                               (6.11f)
        status = solve_closure(c, n, c.aref[0])
        if status != OK or mode == SOLVE:
            return status, 0
    # (E) correction accelerations by (A.6), (F) β̇ = β̇ᶠ + Δβ̇                  (6.11g–i)
    apply_closure_forces(m, w, p, c)
    for i in range(out.shape[0]):
        out[i] = base[i] + c.dq[i]
    return OK, 0


# ---------------------------------------------------------------- Python side: packing, inputs
class _Closures:
    """The packed constraints of one model (cached; rebuilt when bodies or constraints change)."""

    def __init__(self, model: Model):
        self.mi = model.packed()[0]
        cons = list(model.constraints)
        self.constraints = cons
        self.names = [c.name for c in cons]
        self.index = {c.name: j for j, c in enumerate(cons)}
        nc, nv = len(cons), model.nv
        self.ci = np.zeros(2 + 6 * nc + 1, dtype=np.int64)
        self.ci[0], self.ci[1] = nc, nv
        self.cf = np.zeros(closure_float_size(nc, nv))
        self.pi, self.pf = point_buffers(model, 2 * nc)
        v = self.v = closure_views(self.ci, self.cf)
        for j, c in enumerate(cons):
            v.kind[j] = list(CONSTRAINT_KINDS).index(c.kind)
            v.size[j] = c.size
            v.body_a[j], v.Ra[j], v.pa[j] = model.frame_placement(c.frame_a)
            v.body_b[j], v.Rb[j], v.pb[j] = model.frame_placement(c.frame_b)
            v.axis[j] = np.asarray(c.axis, dtype=float) / np.linalg.norm(c.axis)
            v.A[j, :c.size] = constraint_rows(c.kind, c.axis)
        v.anchor_R[:] = np.eye(3)
        self.anchored = False
        self.rows_zero = True
        self.warned: set = set()
        self.zero_v = np.zeros(nv)
        self.scratch_v = np.zeros(nv)

    def run(self, model: Model, mode: int, base=None, alpha=0.0, beta=0.0, out=None):
        """Call the compiled :func:`closure_kernel` on this model's buffers."""
        return closure_kernel(mode, *model.packed(), self.pi, self.pf, self.ci, self.cf,
                              self.zero_v if base is None else base, alpha, beta,
                              self.zero_v if out is None else out)

    def tree_state(self, model: Model, q, qd, tau=None, use_fext=False, qdd=None) -> None:
        """Step (A) by the tree's innovations FD (``aba_kernel``: placements, velocities, P, D⁻¹,
        G, free β̇ᶠ and α(k)), or — with ``qdd`` — the Newton–Euler outward sweeps at β̇ = qdd."""
        if qdd is None:
            kind, idx = aba_kernel(*model.packed(), q, qd, self.zero_v if tau is None else tau,
                                   use_fext, self.v.qfree)
        else:
            kind, idx = rnea_kernel(*model.packed(), q, qd, qdd, use_fext, self.scratch_v)
        raise_for_status(model, kind, idx)

    # inputs ------------------------------------------------------------
    def set_inputs(self, active, u, udot, anchors) -> None:
        v = self.v
        cons = self.constraints
        if active is None:
            for j, c in enumerate(cons):
                v.active[j] = bool(c.active)
        else:
            matched = 0
            for j, c in enumerate(cons):
                a = active.get(c.name)
                if a is None:
                    a = c.active
                else:
                    matched += 1
                v.active[j] = bool(a)
            if matched != len(active):
                unknown = sorted(set(active) - set(self.names))
                raise ValueError(f"active: unknown constraint(s) {unknown} (model has {self.names})")
        if not self.rows_zero:
            v.u[:] = 0.0
            v.udot[:] = 0.0
            self.rows_zero = True
        for arr, given, what in ((v.u, u, "u"), (v.udot, udot, "udot")):
            if not given:
                continue
            for name, val in given.items():
                j = self._lookup(name, what)
                x = val if type(val) is np.ndarray and val.dtype == np.float64 else \
                    np.asarray(val, dtype=float)
                if x.shape != (cons[j].size,):
                    raise ValueError(f"{what}[{name!r}] must have {cons[j].size} rows, got {x.shape}")
                if x.any():                                  # (NaN counts as non-zero)
                    if not np.isfinite(x).all():
                        raise ValueError(f"{what}[{name!r}] is not finite")
                    arr[j, :x.size] = x
                    self.rows_zero = False
        if anchors:
            for name, T in anchors.items():
                j = self._lookup(name, "anchors")
                T = np.asarray(T, dtype=float)
                if T.shape != (4, 4) or not np.all(np.isfinite(T)):
                    raise ValueError(f"anchors[{name!r}] must be a finite 4×4 pose")
                v.anchor_R[j] = T[:3, :3]
                v.anchor_p[j] = T[:3, 3]
            self.anchored = True
        elif self.anchored:
            v.anchor_R[:] = np.eye(3)
            v.anchor_p[:] = 0.0
            self.anchored = False

    def _lookup(self, name, what) -> int:
        j = self.index.get(name)
        if j is None:
            raise ValueError(f"{what}: unknown constraint {name!r} (model has {self.names})")
        return j

    # outputs -----------------------------------------------------------
    def result(self, qdd: np.ndarray, with_lambda: bool = True) -> ConstrainedResult:
        v = self.v
        forces, residuals, rows = {}, {}, {}
        for j, c in enumerate(self.constraints):
            if v.active[j]:
                r0 = v.row0[j]
                forces[c.name] = -v.f[r0:r0 + c.size]          # on frame_b's body (= −f̃)
                residuals[c.name] = float(v.resid[j])
                rows[c.name] = slice(int(r0), int(r0) + c.size)
            else:
                forces[c.name] = np.zeros(c.size)
                residuals[c.name] = 0.0
        n = int(v.row0[len(self.constraints)])
        lam = v.S[:n, :n].copy() if with_lambda else None
        return ConstrainedResult(qdd, forces, residuals, lam, rows)

    def involved(self, weights: np.ndarray) -> list[str]:
        v = self.v
        wmax = weights.max() if weights.size else 0.0
        names = []
        for j, c in enumerate(self.constraints):
            if v.active[j]:
                r0 = v.row0[j]
                if weights[r0:r0 + c.size].max() > 1e-3 * wmax:
                    names.append(c.name)
        return names

    def finish(self, model: Model, kind: int, idx: int, base, out, what: str) -> None:
        """A non-OK status of a compiled step (D): rank-deficient → :func:`solve_dependent` and,
        when consistent, steps (E)–(F) (mode FINISH); then warn or raise."""
        if kind == DEPENDENT:
            v = self.v
            kind = solve_dependent(v, int(v.row0[len(self.constraints)]), float(v.aref[0]))
            if kind != CONSTRAINT_SINGULAR:
                self.run(model, FINISH, base, out=out)
        if kind != OK:
            self.handle_status(model, kind, idx, what)

    def handle_status(self, model: Model, kind: int, idx: int, what: str) -> None:
        v = self.v
        n = int(v.row0[len(self.constraints)])
        if kind == CONSTRAINT_SINGULAR:
            names = self.involved(np.array(v.nullw[:n]))
            raise ConstraintError(
                f"{what}: the constraints {names} are singular at this configuration — the rows of "
                f"A·J they span are dependent (rank {self.rank(n)} of {n} active rows) and the motion "
                "demands a relative acceleration along them that no finite force can cancel "
                "(kinematic singularity, or constraints that contradict each other)")
        if kind == REDUNDANT:
            names = self.involved(np.array(v.nullw[:n]))
            key = tuple(names)
            if key not in self.warned:
                self.warned.add(key)
                warnings.warn(f"constraints {names} are redundant (rank {self.rank(n)} of {n} active "
                              "rows of A·J): their forces are statically indeterminate; the "
                              "minimum-norm forces are reported", ConstraintWarning, stacklevel=3)
            return
        raise_for_status(model, kind, idx)

    def rank(self, n: int) -> int:
        S = np.array(self.v.S[:n, :n])
        d = np.sqrt(np.maximum(np.diag(S), 0.0))
        keep = d > math.sqrt(ZERO_ROW) * (d.max() if d.size else 0.0)
        if not keep.any():
            return 0
        Sk = S[np.ix_(keep, keep)] / np.outer(d[keep], d[keep])
        ev = np.linalg.eigvalsh(Sk)
        return int(np.sum(ev > NULL * ev.max()))


_cache: "weakref.WeakKeyDictionary[Model, _Closures]" = weakref.WeakKeyDictionary()


def _closures(model: Model) -> _Closures:
    """The model's packed constraints, rebuilt when its bodies change or constraints are added or
    replaced (a Constraint edited in place after first use is not noticed: add a new one)."""
    cd = _cache.get(model)
    if cd is not None and cd.mi is model.packed()[0] and len(model.constraints) == len(cd.constraints) \
            and all(a is b for a, b in zip(model.constraints, cd.constraints)):
        return cd
    cd = _Closures(model)
    _cache[model] = cd
    return cd


_last_gains: list = [None, (0.0, 0.0)]


def _gains(stabilization) -> tuple[float, float]:
    if stabilization is _last_gains[0]:
        return _last_gains[1]
    try:
        alpha, beta = (float(x) for x in stabilization)
    except (TypeError, ValueError):
        raise ValueError(f"stabilization must be (alpha, beta), got {stabilization!r}") from None
    if not (math.isfinite(alpha) and math.isfinite(beta) and alpha >= 0 and beta >= 0):
        raise ValueError(f"stabilization gains must be finite and ≥ 0, got {stabilization!r}")
    if isinstance(stabilization, tuple):
        _last_gains[:] = stabilization, (alpha, beta)
    return alpha, beta


# ---------------------------------------------------------------- Python API
def constrained_forward_dynamics(model: Model, q, qd, tau, f_ext=None, active=None, u=None,
                                 stabilization=(0.0, 0.0), *, anchors=None, udot=None,
                                 method: str = "recursive") -> ConstrainedResult:
    """β̇ and the constraint forces of a tree with loop closures / grasps (module docstring).

    active: {name: bool} (None: each constraint's own ``active``); u, udot: {name: rows} prescribed
    constraint velocity Ũ and its derivative (default 0); stabilization: Baumgarte gains (α, β);
    anchors: {name: 4×4 target pose of frame_b in frame_a} (default identity: the frames coincide).
    method: "recursive" (O(N) + O(n_c³), steps (A)–(F)) or "general" (seed 003 (4.9) by dense
    building blocks, for verification).  Raises ConstraintError at a singular configuration."""
    cd = _closures(model)
    q = as_vector(q, model.nq, "q")
    qd = as_vector(qd, model.nv, "qd")
    tau = as_vector(tau, model.nv, "tau")
    alpha, beta = _gains(stabilization)
    cd.set_inputs(active, u, udot, anchors)
    if method == "general":
        return _general_form(model, cd, q, qd, tau, f_ext, alpha, beta)
    if method != "recursive":
        raise ValueError(f"method must be 'recursive' or 'general', got {method!r}")
    use = pack_external_forces(model, model.workspace(), f_ext) if f_ext else False
    qdd = np.empty(model.nv)
    cd.tree_state(model, q, qd, tau, use)                               # step (A)
    kind, idx = cd.run(model, FD, cd.v.qfree, alpha, beta, qdd)         # steps (B)–(F)
    if kind != OK:
        cd.finish(model, kind, idx, cd.v.qfree, qdd, "constrained forward dynamics")
    return cd.result(qdd)


def project_velocities(model: Model, q, qd, active=None, u=None) -> np.ndarray:
    """β⁺ closest to β in the kinetic-energy metric with A J β⁺ = Ũ for the active constraints: the
    velocity jump of an inelastic grasp (impulse μ = (A Λ⁻¹ A*)⁻¹(A J β − Ũ), Δβ = −M⁻¹J*A*μ)."""
    cd = _closures(model)
    q = as_vector(q, model.nq, "q")
    qd = as_vector(qd, model.nv, "qd")
    cd.set_inputs(active, u, None, None)
    out = np.empty(model.nv)
    cd.tree_state(model, q, qd)
    kind, idx = cd.run(model, PROJECT, qd, out=out)
    if kind != OK:
        cd.finish(model, kind, idx, qd, out, "velocity projection")
    return out


def _closure_state(model: Model, q, qd=None, qdd=None, active=None, anchors=None, u=None,
                   stabilization=(0.0, 0.0)) -> _Closures:
    cd = _closures(model)
    q = as_vector(q, model.nq, "q")
    qd = np.zeros(model.nv) if qd is None else as_vector(qd, model.nv, "qd")
    qdd = np.zeros(model.nv) if qdd is None else as_vector(qdd, model.nv, "qdd")
    cd.set_inputs(active, u, None, anchors)
    cd.tree_state(model, q, qd, qdd=qdd)
    cd.run(model, STATE, None, *_gains(stabilization))
    return cd


def constraint_residuals(model: Model, q, anchors=None) -> dict[str, float]:
    """Position-level residual |e| of every constraint (active or not) at θ."""
    cd = _closure_state(model, q, active={c.name: True for c in model.constraints}, anchors=anchors)
    return {name: float(cd.v.resid[j]) for j, name in enumerate(cd.names)}


def constraint_errors(model: Model, q, active=None, anchors=None) -> np.ndarray:
    """The position error rows e of the active constraints, stacked in model order (module
    docstring; 0 for the soft finger's non-holonomic torsion row)."""
    cd = _closure_state(model, q, active=active, anchors=anchors)
    return np.concatenate([cd.v.err[j, :c.size] for j, c in enumerate(cd.constraints)
                           if cd.v.active[j]] or [np.zeros(0)])


def constraint_velocities(model: Model, q, qd, active=None) -> np.ndarray:
    """A Ṽ = A J β of the active constraints, stacked (model order)."""
    cd = _closure_state(model, q, qd, active=active)
    return np.concatenate([cd.v.A[j, :c.size] @ cd.v.Vrel[j] for j, c in enumerate(cd.constraints)
                           if cd.v.active[j]] or [np.zeros(0)])


def constraint_bias(model: Model, q, qd, active=None) -> np.ndarray:
    """γ = A J̇ β: the constraint rows' relative acceleration at β̇ = 0 (the velocity-product terms
    of (2.17)), stacked; so that A Ṽ̇ = A J β̇ + γ."""
    cd = _closure_state(model, q, qd, active=active)
    return np.concatenate([cd.v.A[j, :c.size] @ cd.v.arel[j] for j, c in enumerate(cd.constraints)
                           if cd.v.active[j]] or [np.zeros(0)])


def constraint_jacobian(model: Model, q, active=None) -> np.ndarray:
    """G = A (J_b − J_a) (rows × nv), the dense constraint Jacobian of the active constraints (model
    order), from the point Jacobians B*φ*H* (2.14) — for KKT checks; the dynamics never forms it."""
    return _jacobian_rows(model, _closure_state(model, q, active=active))


def _jacobian_rows(model: Model, cd: _Closures) -> np.ndarray:
    """G of the active constraints at the configuration of the last closure kinematics."""
    w = model.workspace()
    v = cd.v
    rows = []
    for j, c in enumerate(cd.constraints):
        if not v.active[j]:
            continue
        ka, kb = int(v.body_a[j]), int(v.body_b[j])
        RA = v.Ra[j] if ka < 0 else w.Rw[ka] @ v.Ra[j]
        xB = np.array(v.pb[j] if kb < 0 else w.pw[kb] + w.Rw[kb] @ v.pb[j])
        Jrel = np.zeros((6, model.nv))
        for k, sign in ((kb, 1.0), (ka, -1.0)):
            if k >= 0:
                Jk = np.zeros((6, model.nv))
                jacobian_kernel(*model.packed(), k, xB, Jk)
                Jrel += sign * Jk
        Jrel = np.vstack([RA.T @ Jrel[:3], RA.T @ Jrel[3:]])
        rows.append(v.A[j, :c.size] @ Jrel)
    return np.vstack(rows) if rows else np.zeros((0, model.nv))


def relative_pose(model: Model, q, name: str) -> np.ndarray:
    """4×4 pose of frame_b in frame_a for constraint ``name`` (the target a re-anchoring uses)."""
    c = next((c for c in model.constraints if c.name == name), None)
    if c is None:
        raise ValueError(f"unknown constraint {name!r}")
    RA, xA = frame_pose(model, q, c.frame_a)
    RB, xB = frame_pose(model, q, c.frame_b)
    T = np.eye(4)
    T[:3, :3] = RA.T @ RB
    T[:3, 3] = RA.T @ (xB - xA)
    return T


def advance_anchor(model: Model, name: str, T0: np.ndarray, u, dt: float) -> np.ndarray:
    """The target pose moved by the prescribed velocity Ũ held for dt: the twist A*Ũ (frame_a axes)
    turns R₀ by exp(dt ω) on the left and shifts p₀ by dt v (so e stays 0 when A Ṽ = Ũ)."""
    j = _closures(model).index[name]
    c = model.constraints[j]
    tw = constraint_rows(c.kind, c.axis).T @ np.asarray(u, dtype=float)
    T = np.array(T0, dtype=float)
    th = np.linalg.norm(tw[:3]) * dt
    if th > 0.0:
        ax = tw[:3] / np.linalg.norm(tw[:3])
        K = np.array([[0, -ax[2], ax[1]], [ax[2], 0, -ax[0]], [-ax[1], ax[0], 0]])
        T[:3, :3] = (np.eye(3) + np.sin(th) * K + (1 - np.cos(th)) * K @ K) @ T[:3, :3]
    T[:3, 3] += dt * tw[3:]
    return T


# ---------------------------------------------------------------- general form (4.9)
def secondary_bodies(model: Model, active_names) -> list[int]:
    """Bodies forming a secondary system (seed 000 §2.3; the held object of seed 003): hung from
    world by a free joint, without children, and touched by an active constraint."""
    parents = {b.parent for b in model.bodies}
    touched = set()
    for c in model.constraints:
        if c.name in active_names:
            touched.add(model.frame_placement(c.frame_a)[0])
            touched.add(model.frame_placement(c.frame_b)[0])
    return [k for k, b in enumerate(model.bodies)
            if b.parent < 0 and b.joint.code == FREE and k not in parents and k in touched]


def _general_form(model: Model, cd: _Closures, q, qd, tau, f_ext, alpha, beta) -> ConstrainedResult:
    """Seed 003 Part II general CCFD algorithm (4.9) with the primary/secondary partition of seed
    000 §2.3, from independent building blocks (O(N²) — a verification path):

        (4.9a) θ̈_f of the arms by any forward dynamics (here the tree FD), the object's free
               acceleration from its own Newton–Euler equation at C: M(C)α + b(C) = f(C)
        (4.9b) α_f(0) = J θ̈_f + J̇ θ̇ at the closure points
        (4.9c) Ω = J M⁻¹ J* + A M(C)⁻¹ A*     (M⁻¹ of the arms by Identity 6, dense)
        (4.9d) Ω f = α_f(0) − (Ũ̇ − stabilization)
        (4.9e) M Δθ̈ = −J* f,  M(C) Δα(C) = −A* f
    """
    v = cd.v
    nv = model.nv
    active_names = {c.name for j, c in enumerate(cd.constraints) if v.active[j]}
    objects = secondary_bodies(model, active_names)
    obj = np.zeros(nv, dtype=bool)
    for k in objects:
        b = model.bodies[k]
        obj[b.v_index:b.v_index + 6] = True
    # (4.9a) primary: the tree forward dynamics; secondary: Newton–Euler at C = the object origin
    qdd_f = forward_dynamics(model, q, qd, tau, f_ext)
    w = model.workspace()
    if f_ext:
        pack_external_forces(model, w, f_ext)
    else:
        w.fext[:] = 0.0
    inertia = model.arrays().inertia
    g = model.gravity
    Minv = np.zeros((nv, nv))
    P = ~obj
    if P.any():
        Minv[np.ix_(P, P)] = mass_matrix_inverse(model, q)[np.ix_(P, P)]
    wk = forward_kinematics(model, q, qd)
    for k in objects:
        b = model.bodies[k]
        sl = slice(b.v_index, b.v_index + 6)
        Mc, V = inertia[k], qd[sl]
        bC = np.empty(6)
        cross_force(V, Mc @ V, bC)                             # b(C) = V ×̄* M(C) V
        McInv = np.linalg.inv(Mc)
        qdd_f[sl] = np.r_[0.0, 0.0, 0.0, wk.Rw[k].T @ g] + McInv @ (w.fext[k] - bC)
        Minv[sl, sl] = McInv
    # (4.9b) free closure-point accelerations (kinematics with θ̈_f), right-hand sides
    cd.tree_state(model, q, qd, qdd=qdd_f)
    cd.run(model, STATE, None, alpha, beta)
    n = int(v.row0[len(cd.constraints)])
    # (4.9c) Ω = G M⁻¹ G*, G = A J (arms and object columns)
    G = _jacobian_rows(model, cd)
    v.S[:n, :n] = G @ Minv @ G.T
    # (4.9d) the forces (same rank handling as the recursive form)
    a_ref = max(1.0, float(np.linalg.norm(g)), float(np.abs(v.rhs_dyn[:n]).max(initial=0.0)))
    kind, _ = cd.run(model, SOLVE, alpha=a_ref)
    if kind == DEPENDENT:
        kind = solve_dependent(v, n, a_ref)
    if kind != OK:
        cd.handle_status(model, kind, 0, "constrained forward dynamics (general form)")
    # (4.9e–g) corrections and total accelerations
    qdd = qdd_f - Minv @ (G.T @ v.f[:n])
    return cd.result(qdd)


__all__ = ["ConstraintError", "ConstraintWarning", "ConstrainedResult", "constrained_forward_dynamics",
           "constraint_residuals", "constraint_errors", "constraint_jacobian", "constraint_bias",
           "constraint_velocities", "project_velocities", "relative_pose", "advance_anchor",
           "constraint_rows"]
