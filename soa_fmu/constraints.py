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
term of (4.9c).  ``method="rccfd2"`` / ``"rccfd3"`` run seed 003's other two recursive algorithms
(6.12–6.18, 6.19–6.22: the tip forces from a causal filtering of the bias-free moments T′ and an
anticausal pass that builds Ω on the way), the same numbers to round-off.  ``method="general"`` instead runs the general algorithm (4.9) literally — the
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
(from a symmetric eigen-decomposition of the scaled matrix) and one :class:`ConstraintWarning`;
when the dependent rows' free accelerations cannot be cancelled (a singular configuration)
:class:`ConstraintError` names the constraints involved.

Every step is the C core's ``soa_fmu/core/closures.c`` (``soa_constrained_fd``,
``soa_project_velocities``, ``soa_closure_state``, ``soa_relative_pose``, ``soa_advance_anchor``) over
``operational_space.c`` and the articulated-body sweeps; the constraints' constants live in the
engine's model (``cn_*``), the per-call arrays in its data (``cl_*``).  This module converts the
named inputs and outputs; the dense general form (4.9) stays here as the verification path.
"""
from __future__ import annotations

import math
import warnings
import weakref
from dataclasses import dataclass, field

import numpy as np

from . import _core
from .joints import FREE
from .integrators import METHOD_CODES
from .kinematics import external_forces
from .model import CONSTRAINT_KINDS, Model, ModelError


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


def constraint_rows(kind: str, axis) -> np.ndarray:
    """The rows A (size × 6, frame_a axes) of a constraint kind (module docstring)."""
    if kind not in CONSTRAINT_KINDS:
        raise ModelError(f"unknown constraint kind {kind!r}")
    return _core.constraint_rows(list(CONSTRAINT_KINDS).index(kind), np.asarray(axis, dtype=float))


def _call(kernel, *args):
    """Run a closure entry point of the engine; a singular constraint set → ConstraintError."""
    try:
        return kernel(*args)
    except _core.StatusError as e:
        if e.args[1] == _core.CONSTRAINT_SINGULAR:
            raise ConstraintError(e.args[0]) from None
        raise


# ---------------------------------------------------------------- inputs in the engine's layout
class _Inputs:
    """The closure inputs of one model in the engine's layout: active (nc ints), u and udot (nc × 6
    rows), anchors (nc 4 × 4 poses); rebuilt with the engine's model (bodies or constraints
    changed)."""

    def __init__(self, model: Model):
        self.core = model.core
        self.constraints = list(model.constraints)
        self.names = [c.name for c in self.constraints]
        self.index = {c.name: j for j, c in enumerate(self.constraints)}
        nc = len(self.constraints)
        self.active = np.zeros(nc, dtype=np.intc)
        self.u = np.zeros((nc, 6))
        self.udot = np.zeros((nc, 6))
        self.anchors = np.zeros((nc, 4, 4))
        self.warned: set = set()

    def set(self, active, u, udot, anchors) -> tuple:
        """(active, u, udot, anchors) for the engine from the API's mappings (None: 0 / identity)."""
        cons = self.constraints
        if active is None:
            for j, c in enumerate(cons):
                self.active[j] = bool(c.active)
        else:
            matched = 0
            for j, c in enumerate(cons):
                a = active.get(c.name)
                if a is None:
                    a = c.active
                else:
                    matched += 1
                self.active[j] = bool(a)
            if matched != len(active):
                unknown = sorted(set(active) - set(self.names))
                raise ValueError(f"active: unknown constraint(s) {unknown} (model has {self.names})")
        return (self.active, self._rows(u, self.u, "u"), self._rows(udot, self.udot, "udot"),
                self._anchors(anchors))

    def _rows(self, given, buf: np.ndarray, what: str) -> np.ndarray | None:
        if not given:
            return None
        buf[:] = 0.0
        nonzero = False
        for name, val in given.items():
            j = self.lookup(name, what)
            size = self.constraints[j].size
            x = val if type(val) is np.ndarray and val.dtype == np.float64 else \
                np.asarray(val, dtype=float)
            if x.shape != (size,):
                raise ValueError(f"{what}[{name!r}] must have {size} rows, got {x.shape}")
            if x.any():                                  # (NaN counts: the engine refuses it)
                buf[j, :size] = x
                nonzero = True
        return buf.reshape(-1) if nonzero else None

    def _anchors(self, anchors) -> np.ndarray | None:
        if not anchors:
            return None
        self.anchors[:] = np.eye(4)
        for name, T in anchors.items():
            j = self.lookup(name, "anchors")
            T = np.asarray(T, dtype=float)
            if T.shape != (4, 4):
                raise ValueError(f"anchors[{name!r}] must be a finite 4×4 pose")
            self.anchors[j] = T
        return self.anchors.reshape(-1)

    def lookup(self, name: str, what: str) -> int:
        j = self.index.get(name)
        if j is None:
            raise ValueError(f"{what}: unknown constraint {name!r} (model has {self.names})")
        return j

    def warn(self, warning) -> None:
        """One ConstraintWarning per set of redundant constraints (warning: (message, names))."""
        if warning is not None and warning[1] not in self.warned:
            self.warned.add(warning[1])
            warnings.warn(warning[0], ConstraintWarning, stacklevel=3)

    def result(self, model: Model, qdd: np.ndarray, F: np.ndarray, res) -> ConstrainedResult:
        """ConstrainedResult from the per-constraint forces F (nc × 6) and residuals."""
        w = model.workspace()
        row0 = w.cl_row0
        forces, residuals, rows = {}, {}, {}
        for j, c in enumerate(self.constraints):
            forces[c.name] = F[j, :c.size]
            residuals[c.name] = float(res[j])
            if self.active[j]:
                rows[c.name] = slice(int(row0[j]), int(row0[j]) + c.size)
        n = int(row0[len(self.constraints)])
        return ConstrainedResult(qdd, forces, residuals, w.cl_S[:n, :n].copy(), rows)


_cache: "weakref.WeakKeyDictionary[Model, _Inputs]" = weakref.WeakKeyDictionary()


def _inputs(model: Model) -> _Inputs:
    inp = _cache.get(model)
    if inp is None or inp.core is not model.core:
        inp = _cache[model] = _Inputs(model)
    return inp


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
RCCFD = {"recursive": 1, "rccfd1": 1, "rccfd2": 2, "rccfd3": 3}   # soa.h: SOA_RCCFD1 ... SOA_RCCFD3


def constrained_forward_dynamics(model: Model, q, qd, tau, f_ext=None, active=None, u=None,
                                 stabilization=(0.0, 0.0), *, anchors=None, udot=None,
                                 method: str = "recursive") -> ConstrainedResult:
    """β̇ and the constraint forces of a tree with loop closures / grasps (module docstring).

    active: {name: bool} (None: each constraint's own ``active``); u, udot: {name: rows} prescribed
    constraint velocity Ũ and its derivative (default 0); stabilization: Baumgarte gains (α, β);
    anchors: {name: 4×4 target pose of frame_b in frame_a} (default identity: the frames coincide).
    method: "recursive" or "rccfd1" (O(N) + O(n_c³), steps (A)–(F) = RCCFD1 (6.11)), "rccfd2"
    (6.12–6.18), "rccfd3" (6.19–6.22) — the three recursive algorithms of seed 003 Part II, the
    same numbers to round-off — or "general" (seed 003 (4.9) by dense building blocks, for
    verification).  Raises ConstraintError at a singular configuration."""
    inp = _inputs(model)
    alpha, beta = _gains(stabilization)
    args = inp.set(active, u, udot, anchors)
    if method == "general":
        from .verify.general_form import general_form          # the verification path
        return general_form(model, inp, q, qd, tau, f_ext, alpha, beta, args)
    if method not in RCCFD:
        raise ValueError("method must be 'recursive', 'rccfd1', 'rccfd2', 'rccfd3' or 'general', "
                         f"got {method!r}")
    use = external_forces(model, None, f_ext) if f_ext else False
    qdd, F, res, warning = _call(_core.constrained_fd, model.data, q, qd, tau, use, *args, alpha,
                                 beta, RCCFD[method])
    inp.warn(warning)
    return inp.result(model, qdd, F, res)


def project_velocities(model: Model, q, qd, active=None, u=None) -> np.ndarray:
    """β⁺ closest to β in the kinetic-energy metric with A J β⁺ = Ũ for the active constraints: the
    velocity jump of an inelastic grasp (impulse μ = (A Λ⁻¹ A*)⁻¹(A J β − Ũ), Δβ = −M⁻¹J*A*μ)."""
    inp = _inputs(model)
    active, u, _, _ = inp.set(active, u, None, None)
    out, warning = _call(_core.project_velocities, model.data, q, qd, active, u)
    inp.warn(warning)
    return out


def closure_step(model: Model, q: np.ndarray, qd: np.ndarray, tau, f_ext, active: dict,
                 was_active: dict, u: dict, anchors: dict, stabilization, method: str,
                 max_step: float, rtol: float, atol: float, reanchor: bool, t: float, h: float,
                 dop_h: float, error_control: bool = False):
    """One step t → t + h of a model with closure constraints in the C core (constraint_time.c):
    grasp / release at t (a constraint switched on since the last step, i.e. not in
    ``was_active``, is re-anchored at the current relative pose when ``reanchor``, and β is
    projected onto the active constraints), the integrator over the constrained acceleration with
    each target moving with its held Ũ, the targets at t + h.  q, qd are updated in place; returns
    (β̇, forces, residuals, anchors at t + h, the step memory of dop853 and of ros2 / ros34pw2 /
    rk4w with ``error_control``).  Nothing changes on failure
    (StatusError, ConstraintError)."""
    inp = _inputs(model)
    alpha, beta = _gains(stabilization)
    act, u_rows, _, _ = inp.set(active, u, None, None)
    nc = len(inp.constraints)
    was = np.array([bool(was_active.get(c.name, False)) for c in inp.constraints], dtype=np.intc)
    A = np.empty((nc, 4, 4))
    for j, c in enumerate(inp.constraints):
        A[j] = anchors[c.name]
    use = external_forces(model, None, f_ext) if f_ext else False
    qdd, F, res, dop_h, warning = _call(
        _core.closure_step, model.data, q, qd, tau, use, act, was,
        np.zeros(6 * nc) if u_rows is None else u_rows, A.reshape(-1), alpha, beta,
        METHOD_CODES[method],
        max_step, rtol, atol, reanchor, t, h, dop_h, error_control)
    inp.warn(warning)
    r = inp.result(model, qdd, F, res)
    return qdd, r.forces, r.residuals, {c.name: A[j] for j, c in enumerate(inp.constraints)}, dop_h


def _closure_state(model: Model, q, qd=None, qdd=None, active=None, anchors=None, u=None,
                   udot=None, stabilization=(0.0, 0.0)) -> _Inputs:
    """Step (B) at (θ, β, β̇) (default β = β̇ = 0) into the model's workspace (``cl_*``)."""
    inp = _inputs(model)
    args = inp.set(active, u, udot, anchors)
    zero = np.zeros(model.nv)
    _core.closure_state(model.data, q, zero if qd is None else qd, zero if qdd is None else qdd,
                        *args, *_gains(stabilization))
    return inp


def _stacked(model: Model, inp: _Inputs, rows) -> np.ndarray:
    """rows(j, c) of the active constraints, stacked in model order."""
    return np.concatenate([rows(j, c) for j, c in enumerate(inp.constraints) if inp.active[j]]
                          or [np.zeros(0)])


def constraint_residuals(model: Model, q, anchors=None) -> dict[str, float]:
    """Position-level residual |e| of every constraint (active or not) at θ."""
    inp = _closure_state(model, q, active={c.name: True for c in model.constraints}, anchors=anchors)
    resid = model.workspace().cl_resid
    return {name: float(resid[j]) for j, name in enumerate(inp.names)}


def constraint_errors(model: Model, q, active=None, anchors=None) -> np.ndarray:
    """The position error rows e of the active constraints, stacked in model order (module
    docstring; 0 for the soft finger's non-holonomic torsion row)."""
    inp = _closure_state(model, q, active=active, anchors=anchors)
    err = model.workspace().cl_err
    return _stacked(model, inp, lambda j, c: err[j, :c.size].copy())


def constraint_velocities(model: Model, q, qd, active=None) -> np.ndarray:
    """A Ṽ = A J β of the active constraints, stacked (model order)."""
    inp = _closure_state(model, q, qd, active=active)
    A, V = model.arrays().cn_A, model.workspace().cl_Vrel
    return _stacked(model, inp, lambda j, c: A[j, :c.size] @ V[j])


def constraint_bias(model: Model, q, qd, active=None) -> np.ndarray:
    """γ = A J̇ β: the constraint rows' relative acceleration at β̇ = 0 (the velocity-product terms
    of (2.17)), stacked; so that A Ṽ̇ = A J β̇ + γ."""
    inp = _closure_state(model, q, qd, active=active)
    A, a = model.arrays().cn_A, model.workspace().cl_arel
    return _stacked(model, inp, lambda j, c: A[j, :c.size] @ a[j])


def constraint_jacobian(model: Model, q, active=None) -> np.ndarray:
    """G = A (J_b − J_a) (rows × nv), the dense constraint Jacobian of the active constraints (model
    order), from the point Jacobians B*φ*H* (2.14) — for KKT checks; the dynamics never forms it."""
    inp = _closure_state(model, q, active=active)
    return _core.closure_jacobian(model.data, inp.active)


def relative_pose(model: Model, q, name: str) -> np.ndarray:
    """4×4 pose of frame_b in frame_a for constraint ``name`` (the target a re-anchoring uses)."""
    j = next((j for j, c in enumerate(model.constraints) if c.name == name), None)
    if j is None:
        raise ValueError(f"unknown constraint {name!r}")
    return _core.relative_pose(model.data, q, j)


def advance_anchor(model: Model, name: str, T0: np.ndarray, u, dt: float) -> np.ndarray:
    """The target pose moved by the prescribed velocity Ũ held for dt: the twist A*Ũ (frame_a axes)
    turns R₀ by exp(dt ω) on the left and shifts p₀ by dt v (so e stays 0 when A Ṽ = Ũ)."""
    j = _inputs(model).lookup(name, "advance_anchor")
    return _core.advance_anchor(model.core, j, np.asarray(T0, dtype=float).reshape(16), u, dt)


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


__all__ = ["ConstraintError", "ConstraintWarning", "ConstrainedResult", "constrained_forward_dynamics",
           "constraint_residuals", "constraint_errors", "constraint_jacobian", "constraint_bias",
           "constraint_velocities", "project_velocities", "relative_pose", "advance_anchor",
           "constraint_rows"]
