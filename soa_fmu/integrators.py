"""Time integration of (θ, β) with θ̇ = f(θ) β and β̇ from the forward dynamics.

Methods (all in the C core: ``soa_rk4``, ``soa_euler``, ``soa_dop853``, ``soa_implicit``,
``soa_rosenbrock``, ``soa_ros34pw2``, ``soa_rk4w``; a model with closure constraints steps
through ``soa_closure_step``, constraint_time.c, over the same integrators — the native FMU takes
the very same steps)
    ``auto``       (default) ``rk4w`` for a model with stiff terms (joint dissipation, stops,
                   contact), else ``rk4`` (``soa_auto_method``; :attr:`Simulator.integrator_used`;
                   docs/joints.md); flexible models: ``rk4`` with sub-steps no longer than
                   1.4 / their highest modal frequency at the start (:attr:`Simulator.auto_max_step`,
                   docs/flexible.md)
    ``rk4``        classical fixed-step Runge–Kutta 4
    ``euler``      semi-implicit (symplectic) Euler: β ← β + h β̇, θ ← θ ⊕ h β (exponential map)
    ``implicit``   linearly implicit Euler (first order), implicit in the joint damping, friction
                   and stops: (M + diag(a + h B + h² K)) β̇ = T − h K β − C − g by one articulated
                   sweep; stable for any joint dissipation at any step
    ``ros2``       the Rosenbrock method ROS2 (Verwer et al. 1999): second order, L-stable, two
                   stages of the implicit step's kind (implicit in the dissipation, stops and
                   contact); fixed sub-steps of max_step, or with ``error_control`` sub-steps
                   no longer than max_step chosen by its embedded estimate to meet rtol/atol
    ``ros34pw2``   the Rosenbrock W-method ROS34PW2 (Rang & Angermann 2005): third order,
                   L-stable, four stages of the same kind; fixed or ``error_control`` sub-steps
                   as ``ros2`` (its embedded estimate second order)
    ``rk4w``       RK4W, a fourth-order Runge–Kutta method made a stiffly accurate, L-stable
                   Rosenbrock W-method (derived for this engine, docs/joints.md): W-order 3,
                   four stages of the same kind; where no stiff term is engaged a step IS an
                   explicit fourth-order Runge–Kutta method (the c2 = u, c3 = v member of
                   Butcher's two-parameter family); fixed or ``error_control`` sub-steps as
                   ``ros2`` (its embedded estimate second order)
    ``dop853``     adaptive, error-controlled Dormand–Prince 8(5,3), rtol/atol, step for step as
                   scipy's ``solve_ivp(method="DOP853")``

Quaternions are renormalized after every (sub)step and before each stage evaluation (the rotation
of a quaternion is invariant to its scale, so this projection costs no accuracy).

:class:`Simulator` holds everything that evolves — time, state, held inputs, constraint status,
integrator memory — so that ``get_state``/``set_state`` capture ALL of it (FMU rollback).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from . import _core
from .articulated import forward_dynamics
from .kinematics import as_vector, external_forces
from .model import Model

METHODS = ("rk4", "euler", "dop853", "implicit", "ros2", "ros34pw2", "rk4w", "auto")
METHOD_CODES = {m: k for k, m in enumerate(METHODS[:-1])}    # soa.h SOA_RK4 ... SOA_RK4W
ROSENBROCK = ("ros2", "ros34pw2", "rk4w")   # linearly implicit, fixed or error-controlled sub-steps
_IDENTITY = np.eye(4)          # the default constraint anchor (shared, read-only)
_IDENTITY.flags.writeable = False
_constraints = None            # soa_fmu.constraints, imported on first use (tree models never load it)


def constraints_module():
    global _constraints
    if _constraints is None:
        from . import constraints
        _constraints = constraints
    return _constraints


MAX_SUBSTEPS = _core.MAX_SUBSTEPS     # sub-steps of a fixed-step method per step, at most
MIN_MAX_STEP = _core.MIN_MAX_STEP     # the smallest max_step (s)


class IntegrationError(RuntimeError):
    """A step failed: non-finite state, singular dynamics, or the adaptive solver gave up."""


# ---------------------------------------------------------------- configuration maps (C core)
def configuration_rate(model: Model, q, qd) -> np.ndarray:
    """θ̇ = f(θ) β for the whole model (quaternion kinematics, seed 003 App. B)."""
    return _core.configuration_rate(model.core, q, qd)


def integrate_configuration(model: Model, q, dv) -> np.ndarray:
    """θ ⊕ δ: every joint moved along the constant body-frame velocity δ for unit time."""
    return _core.integrate_configuration(model.core, q, dv)


def normalize_quaternions(model: Model, q: np.ndarray) -> None:
    """Scale every joint quaternion of q (a float64 array) to unit length, in place."""
    _core.normalize_quaternions(model.core, q)


# ---------------------------------------------------------------- the simulator
@dataclass
class IntegratorOptions:
    method: str = "auto"
    max_step: float = 1e-3      # fixed-step methods: sub-step ≤ max_step inside one step(h)
    rtol: float = 1e-8          # adaptive methods (dop853; a Rosenbrock method with error_control)
    atol: float = 1e-10
    error_control: bool = False  # ros2, ros34pw2, rk4w: error-controlled sub-steps (else fixed)


class Simulator:
    """Integrates a model with held inputs; owns the full evolving state (see module docstring)."""

    def __init__(self, model: Model, q0=None, qd0=None, method: str = "auto", max_step: float = 1e-3,
                 rtol: float = 1e-8, atol: float = 1e-10, error_control: bool = False):
        self.model = model
        self.options = IntegratorOptions(method, max_step, rtol, atol, bool(error_control))
        self._check_options()
        self.t = 0.0
        q0 = model.initial_q if q0 is None and model.initial_q is not None else q0
        qd0 = model.initial_qd if qd0 is None and model.initial_qd is not None else qd0
        self.q = model.neutral_configuration() if q0 is None else as_vector(q0, model.nq, "q0").copy()
        self.qd = np.zeros(model.nv) if qd0 is None else as_vector(qd0, model.nv, "qd0").copy()
        self.tau = np.zeros(model.nv)
        self.f_ext: dict[str, np.ndarray] = {}
        self.qdd = np.zeros(model.nv)
        self.last_h = 0.0          # adaptive solver memory: the next call's first internal step
        # loop closures / grasps: run-time status, prescribed velocities Ũ, Baumgarte gains
        self.active = {c.name: bool(c.active) for c in model.constraints}
        self.u = {c.name: np.zeros(c.size) for c in model.constraints}
        self.stabilization = (0.0, 0.0)
        self.constraint_forces = {c.name: np.zeros(c.size) for c in model.constraints}
        self.constraint_residuals = {c.name: 0.0 for c in model.constraints}
        # target pose of frame_b in frame_a per constraint (identity: the frames coincide); a
        # constraint switched on during the run is re-anchored at the current relative pose and the
        # velocities are projected onto it (an inelastic grasp): soa_closure_step (constraint_time.c)
        self.anchors = {c.name: _IDENTITY for c in model.constraints}
        self.reanchor_on_activate = True
        self._was_active = dict(self.active)
        _core.check_state(model.core, self.q, self.qd)
        _core.mimic_project(model.core, self.q, self.qd)     # mimic joints follow their drivers
        self.integrator_used = self._resolve(self.options.method)
        # auto on a flexible model: RK4 sub-steps no longer than 1.4 / its highest modal frequency
        # at the start (``soa_auto_max_step``; inf for the others)
        self.auto_max_step = (_core.auto_max_step(model.data, self.q)
                              if self.options.method == "auto" else math.inf)
        self.update_outputs()

    # -------------------------------------------------------------- configuration
    def _check_options(self) -> None:
        o = self.options
        if o.method not in METHODS:
            raise ValueError(f"unknown integrator {o.method!r} (expected one of {', '.join(METHODS)})")
        for name in ("max_step", "rtol", "atol"):
            v = getattr(o, name)
            if not (np.isfinite(v) and v > 0):
                raise ValueError(f"integrator option {name} must be finite and > 0, got {v}")
        if o.max_step < MIN_MAX_STEP:
            raise ValueError(f"integrator option max_step must be ≥ {MIN_MAX_STEP:g} s (the floor "
                             f"of every step's sub-steps), got {o.max_step}")

    def _substeps(self, h: float) -> int:
        """The equal sub-steps of a fixed-step method for step h (``soa_substeps``), no longer
        than max_step (and auto's :attr:`auto_max_step`); at most MAX_SUBSTEPS, else
        IntegrationError naming h, max_step and the count."""
        max_step = self.options.max_step
        if self.options.method == "auto":
            max_step = min(max_step, self.auto_max_step)
        nsub = max(1, math.ceil(h / max_step - 1e-9))
        if nsub > MAX_SUBSTEPS:
            raise IntegrationError(
                f"h / max_step = {h!r} / {max_step!r} needs {nsub:.6g} sub-steps, more than the "
                f"{MAX_SUBSTEPS} one step may take: raise max_step to at least "
                f"{h / MAX_SUBSTEPS:.6g} s or make shorter steps")
        return nsub

    def set_method(self, method: str, **options) -> None:
        for k, v in options.items():
            setattr(self.options, k, v)
        self.options.method = method
        self._check_options()
        if method != "auto":            # auto keeps what it decided at the start: no switching
            self.integrator_used = method

    def _resolve(self, method: str) -> str:
        """The integrator a method name runs: ``auto`` picks rk4w for a model with stiff terms,
        else rk4 (``soa_auto_method``, docs/joints.md)."""
        if method != "auto":
            return method
        return METHODS[_core.auto_method(self.model.data)]

    # -------------------------------------------------------------- dynamics
    def constrained(self) -> bool:
        """True when any loop closure / grasp is switched on."""
        return any(self.active.values())

    def acceleration(self, q: np.ndarray, qd: np.ndarray, t: float | None = None) -> np.ndarray:
        """β̇ at (θ, β) and time t (default: self.t) with the held inputs and the joints'
        dissipation τ − d q̇ − f_c tanh(q̇/v_s) (``soa_joint_forces``, as in every step), the mimic
        couplings (``soa_mimic_couple``), and active constraints (updating their forces and
        residuals)."""
        tau = _core.joint_forces(self.model.data, q, qd, self.tau)
        if self.model.contact_spheres:               # contact.c: f_ext + the contact forces
            qdd = self._contact_acceleration(q, qd, tau)
            _core.mimic_couple(self.model.data, qdd)  # (mimic.c: a no-op without couplings)
            return qdd
        if not self.constrained():
            self._clear_constraint_outputs()
            qdd = forward_dynamics(self.model, q, qd, tau, self.f_ext or None)
            _core.mimic_couple(self.model.data, qdd)
            return qdd
        res = constraints_module().constrained_forward_dynamics(
            self.model, q, qd, tau, self.f_ext or None, active=self.active, u=self.u,
            stabilization=self.stabilization, anchors=self._anchors_at(t))
        self.constraint_forces, self.constraint_residuals = res.forces, res.residuals
        return res.qdd

    def _contact_acceleration(self, q, qd, tau) -> np.ndarray:
        """β̇ with the contact forces at (θ, β) added to f_ext (as every step adds them)."""
        model = self.model
        use = external_forces(model, None, self.f_ext) if self.f_ext else False
        _core.contact_forces(model.data, q, qd, use)
        w = model.workspace()
        w.fext[:] = w.ct_fext
        return _core.aba(model.data, q, qd, tau, True)

    # -------------------------------------------------------------- constraints in time
    def _clear_constraint_outputs(self) -> None:
        """Released constraints carry no force and report no residual."""
        if any(self.constraint_residuals.values()) or any(f.any() for f in
                                                         self.constraint_forces.values()):
            self.constraint_forces = {c.name: np.zeros(c.size) for c in self.model.constraints}
            self.constraint_residuals = {c.name: 0.0 for c in self.model.constraints}

    def _anchors_at(self, t: float | None) -> dict | None:
        """Constraint targets at time t: each anchor moved by its held prescribed velocity Ũ since
        self.t (so the position error stays zero while A Ṽ = Ũ); None when all are the identity."""
        dt = 0.0 if t is None else t - self.t
        out = {}
        for name, T in self.anchors.items():
            if dt != 0.0 and self.active.get(name) and self.u[name].any():
                T = constraints_module().advance_anchor(self.model, name, T, self.u[name], dt)
            out[name] = T
        if all(T is _IDENTITY for T in out.values()):
            return None
        return out

    def update_outputs(self) -> None:
        """Recompute the reported accelerations at the current state."""
        self.qdd = self.acceleration(self.q, self.qd)

    def step(self, h: float) -> None:
        """Advance exactly from t to t + h with the inputs held.  On failure the state is left
        unchanged and IntegrationError is raised."""
        if not (math.isfinite(h) and h > 0):
            raise ValueError(f"step size must be finite and > 0, got {h}")
        q, qd = self.q.copy(), self.qd.copy()
        method = self.integrator_used
        if not self.model.constraints:
            if self._adaptive(method):
                qdd = self._step_adaptive(method, q, qd, h)
            else:
                nsub = self._substeps(h)
                qdd = self._step_fixed(method, q, qd, h / nsub, nsub)
        else:
            if not self._adaptive(method):
                self._substeps(h)
            qd, qdd = self._step_with_constraints(method, q, qd, h)
        self.q, self.qd, self.qdd = q, qd, qdd
        if method == "implicit" or method in ROSENBROCK:   # qdd: the step's mean acceleration
            self.qdd = self.acceleration(q, qd)
        self.t += h

    def _step_with_constraints(self, method, q, qd, h):
        """One step of a model with constraints in the C core (``soa_closure_step``): switch them
        (grasp / release) at t, integrate over the constrained acceleration (the tree's when none
        is active) with the targets moving with Ũ, move the anchors by Ũ h.  On failure nothing
        changes and a ConstraintError becomes an IntegrationError."""
        C = constraints_module()
        o = self.options
        try:
            qdd, F, res, anchors, last_h = C.closure_step(
                self.model, q, qd, self.tau, self.f_ext or None, self.active, self._was_active,
                self.u, self.anchors, self.stabilization, method, o.max_step, o.rtol, o.atol,
                self.reanchor_on_activate, self.t, h, self.last_h, o.error_control)
        except C.ConstraintError as e:
            raise IntegrationError(str(e)) from e
        except _core.StatusError as e:
            raise IntegrationError(e.args[0]) from None
        self.anchors = anchors
        self._was_active = dict(self.active)
        self.constraint_forces, self.constraint_residuals = F, res
        if self._adaptive(method):
            self.last_h = last_h
        return qd, qdd

    def _adaptive(self, method: str) -> bool:
        """True for the error-controlled methods: dop853; ros2, ros34pw2, rk4w with error_control."""
        return method == "dop853" or (method in ROSENBROCK and self.options.error_control)

    def _step_fixed(self, method, q, qd, hs, nsub) -> np.ndarray:
        """``nsub`` steps of a fixed-step method in the C core, q and qd in place."""
        model = self.model
        use = external_forces(model, None, self.f_ext) if self.f_ext else False
        kernel = {"rk4": _core.rk4, "euler": _core.euler, "implicit": _core.implicit,
                  "ros2": _core.rosenbrock, "ros34pw2": _core.ros34pw2, "rk4w": _core.rk4w}[method]
        try:
            return kernel(model.data, q, qd, self.tau, use, hs, nsub)
        except _core.StatusError as e:
            raise IntegrationError(e.args[0]) from None

    def _step_adaptive(self, method, q, qd, h) -> np.ndarray:
        """DOP853 (``soa_dop853``, scipy's DOP853 step for step) or ROS2 / ROS34PW2 / RK4W with
        error control (``soa_rosenbrock_adaptive``, ``soa_ros34pw2_adaptive``,
        ``soa_rk4w_adaptive``, sub-steps ≤ max_step)
        in the C core from t to t + h, q and qd in place; the step memory carries over as the
        next call's first (``last_h``).
        (Models with constraints step in :meth:`_step_with_constraints`.)"""
        o, model = self.options, self.model
        use = external_forces(model, None, self.f_ext) if self.f_ext else False
        try:
            if method in ROSENBROCK:
                kernel = {"ros2": _core.rosenbrock_adaptive, "ros34pw2": _core.ros34pw2_adaptive,
                          "rk4w": _core.rk4w_adaptive}[method]
                qdd, self.last_h = kernel(model.data, q, qd, self.tau, use, h, o.rtol, o.atol,
                                          o.max_step, self.last_h)
            else:
                qdd, self.last_h = _core.dop853(model.data, q, qd, self.tau, use, self.t, h,
                                                o.rtol, o.atol, math.inf, self.last_h)
        except _core.StatusError as e:
            raise IntegrationError(e.args[0]) from None
        return qdd

    # -------------------------------------------------------------- state capture
    def get_state(self) -> dict:
        """Everything that evolves (deep copy): time, state, held inputs, solver memory."""
        return {"t": self.t, "q": self.q.copy(), "qd": self.qd.copy(), "qdd": self.qdd.copy(),
                "tau": self.tau.copy(), "f_ext": {k: v.copy() for k, v in self.f_ext.items()},
                "last_h": self.last_h, "active": dict(self.active),
                "u": {k: v.copy() for k, v in self.u.items()},
                "stabilization": tuple(self.stabilization),
                "constraint_forces": {k: v.copy() for k, v in self.constraint_forces.items()},
                "constraint_residuals": dict(self.constraint_residuals),
                "anchors": {k: v.copy() for k, v in self.anchors.items()},
                "was_active": dict(self._was_active),
                "reanchor_on_activate": self.reanchor_on_activate,
                "method": self.options.method, "integrator_used": self.integrator_used,
                "max_step": self.options.max_step, "rtol": self.options.rtol,
                "atol": self.options.atol, "error_control": self.options.error_control}

    def set_state(self, s: dict) -> None:
        self.t = float(s["t"])
        self.q, self.qd, self.qdd = s["q"].copy(), s["qd"].copy(), s["qdd"].copy()
        self.tau = s["tau"].copy()
        self.f_ext = {k: v.copy() for k, v in s["f_ext"].items()}
        self.last_h = float(s["last_h"])
        self.active = dict(s["active"])
        self.u = {k: v.copy() for k, v in s["u"].items()}
        self.stabilization = tuple(s["stabilization"])
        self.constraint_forces = {k: v.copy() for k, v in s["constraint_forces"].items()}
        self.constraint_residuals = dict(s["constraint_residuals"])
        self.anchors = {k: _IDENTITY if np.array_equal(v, _IDENTITY) else v.copy()
                        for k, v in s["anchors"].items()}
        self._was_active = dict(s["was_active"])
        self.reanchor_on_activate = bool(s["reanchor_on_activate"])
        self.options = IntegratorOptions(s["method"], s["max_step"], s["rtol"], s["atol"],
                                         bool(s.get("error_control", False)))
        self.integrator_used = s.get("integrator_used") or self._resolve(s["method"])


def simulate(model: Model, t_end: float, dt: float = 1e-3, q0=None, qd0=None, tau=None,
             method: str = "auto", max_step: float | None = None, rtol: float = 1e-8,
             atol: float = 1e-10, error_control: bool = False) -> dict:
    """Simulate from t = 0 to t_end with output every dt.

    ``tau``: None (zero), a constant vector, or a callable tau(t, q, qd) -> vector held over each
    output interval.  Returns {"t", "q", "qd", "qdd"} arrays (rows = output times).
    """
    if not (math.isfinite(dt) and dt > 0):
        raise ValueError(f"simulate: dt must be finite and > 0, got {dt}")
    if not (math.isfinite(t_end) and t_end >= 0):
        raise ValueError(f"simulate: t_end must be finite and ≥ 0, got {t_end}")
    sim = Simulator(model, q0, qd0, method, dt if max_step is None else max_step, rtol, atol,
                    error_control)
    n = int(round(t_end / dt))
    T = np.arange(n + 1) * dt
    Q = np.empty((n + 1, model.nq))
    QD = np.empty((n + 1, model.nv))
    QDD = np.empty((n + 1, model.nv))

    def set_tau(t):
        if callable(tau):
            sim.tau = as_vector(tau(t, sim.q, sim.qd), model.nv, "tau")
        elif tau is not None:
            sim.tau = as_vector(tau, model.nv, "tau")

    set_tau(0.0)
    sim.update_outputs()
    Q[0], QD[0], QDD[0] = sim.q, sim.qd, sim.qdd
    for i in range(1, n + 1):
        set_tau(sim.t)
        sim.step(dt)
        Q[i], QD[i], QDD[i] = sim.q, sim.qd, sim.qdd
    return {"t": T, "q": Q, "qd": QD, "qdd": QDD}
