"""The FMI 2.0 Co-Simulation slave (pythonfmu) — a thin layer over :class:`~soa_fmu.Simulator`.

One instance holds a Model, a Simulator (state, integrator memory, held inputs, constraint status)
and flat value buffers laid out by :func:`soa_fmu.fmu.variables.build_table` — the table the
modelDescription.xml is generated from.  ``build_fmu.py`` puts a small entry module into each FMU
whose class derives from :class:`SoaSlave`; pythonfmu's C library calls the methods below.

Error handling.  pythonfmu 0.7 turns ANY Python exception escaping a slave method into fmi2Fatal
and releases the Python instance — a later fmi2FreeInstance would release it again — so nothing
here raises after construction.  The statuses a Python slave can return are fmi2OK and, from
``do_step``, fmi2Discard.  Therefore:

* a failed or refused step returns False (fmi2Discard) with the reason logged (status Discard/Error,
  traceback under category ``logDebug``); the state is unchanged;
* a rejected value (NaN/Inf input, fixed parameter set after initialization, unknown integrator,
  a non-Real reference passed to fmi2GetReal ...) is NOT applied, is logged with status fmi2Error
  naming the variable and its joint ("tau[3] (joint3) is NaN"), and is remembered: every doStep
  returns fmi2Discard (repeating the reason) until a valid value is set for that variable, or
  fmi2SetFMUstate / fmi2Reset restores a clean instance.

Only instantiation may raise (pythonfmu then returns NULL from fmi2Instantiate with the message
logged): a missing or inconsistent FMU resource is not recoverable.
"""
from __future__ import annotations

import atexit
import ctypes
import hashlib
import json
import math
import os
import sys
import traceback
import warnings
from pathlib import Path

import numpy as np
from pythonfmu import Fmi2Slave
from pythonfmu.enums import Fmi2Status

from .. import _core
from ..contact import LAW, contact_forces
from ..energy import total_energy
from ..integrators import MIN_MAX_STEP, ROSENBROCK, IntegrationError, Simulator
from ..kinematics import forward_kinematics
from . import load_bundled_model
from .variables import FORMAT_VERSION, LOG_CATEGORIES, METHODS, build_table

CONFIG_FILE = "fmu.json"
STATE_FORMAT = "soa_fmu-fmu-state/2"
INSTANTIATED, INITIALIZATION, STEPPING, TERMINATED = "instantiated", "initialization", "step", \
    "terminated"
QUAT_NORM_TOL = 1e-3        # q0 quaternions are normalized when |‖q‖ − 1| is below this


def _after_pythonfmu_ctor(path: str, entry_module: str) -> None:
    """Repair what pythonfmu 0.7's C constructor leaves behind on every fmi2Instantiate (not on
    fmi2Reset, which only re-creates the Python object):

    * it inserts the resources folder at sys.path[0]: removed again (the entry module is imported
      by now), so sys.path does not grow with every instance;
    * its class lookup (``findClass``) releases a reference to the entry module's ``__dict__``
      that it never owned (``Py_DECREF`` of the borrowed ``PyModule_GetDict`` result): one
      ``Py_IncRef`` gives it back, else the dict is freed after a few instantiations and the next
      one fails ("module has no attribute ''") or crashes the host.
    """
    try:
        sys.path.remove(path)
    except ValueError:
        return                                # fmi2Reset: no constructor ran
    mod = sys.modules.get(entry_module)
    if mod is not None:
        ctypes.pythonapi.Py_IncRef(ctypes.py_object(mod.__dict__))


_EXIT_GUARDED: set[str] = set()


def _guard_pythonfmu_exit(resources: Path, identifier: str) -> None:
    """Work around a pythonfmu 0.7 bug that corrupts the C heap when its library is still loaded
    at process exit (hosts that never unload FMUs, and Python hosts in which it stays loaded):
    exit() runs the library's static destructors — releasing the
    shared_ptr that owns its PyState — before its ``__attribute__((destructor))``, which assigns
    nullptr to that destroyed shared_ptr and releases the freed control block a second time
    ("corrupted double-linked list" at exit, or a later crash).  A Python atexit handler (run by
    Py_Finalize, before the C exit handlers) calls the library's exported
    ``finalizePythonInterpreter()`` first, so both later releases find a null pointer."""
    if not hasattr(os, "RTLD_NOLOAD"):
        return                                  # Windows: DllMain runs before the destructors
    suffix = ".dylib" if sys.platform == "darwin" else ".so"
    for lib in (resources.parent / "binaries").glob(f"*/{identifier}{suffix}"):
        path = str(lib)
        if path not in _EXIT_GUARDED:
            _EXIT_GUARDED.add(path)
            atexit.register(_release_pythonfmu_state, path)


def _release_pythonfmu_state(path: str) -> None:
    try:
        lib = ctypes.CDLL(path, mode=os.RTLD_NOW | os.RTLD_NOLOAD)
    except OSError:
        return                                  # unloaded already (destructors ran in order)
    try:
        lib.finalizePythonInterpreter()
    except AttributeError:
        pass                                    # another pythonfmu version


class SoaSlave(Fmi2Slave):
    """Co-simulation slave of one soa_fmu model (configured by ``resources/fmu.json``)."""

    log_categories = LOG_CATEGORIES

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        resources = Path(self.resources)
        _after_pythonfmu_ctor(self.resources, type(self).__module__)
        cfg = json.loads((resources / CONFIG_FILE).read_text(encoding="utf-8"))
        if cfg.get("format") != FORMAT_VERSION:
            raise RuntimeError(f"{resources / CONFIG_FILE}: unsupported FMU configuration format "
                               f"{cfg.get('format')!r} (expected {FORMAT_VERSION})")
        self.cfg = cfg
        _guard_pythonfmu_exit(resources, cfg["identifier"])
        with warnings.catch_warnings(record=True) as caught:    # reported when the FMU was built
            warnings.simplefilter("always")
            self.model = load_bundled_model(resources, cfg)
        self.table = table = build_table(self.model, cfg["integrator"], cfg["max_step"])
        if table.digest() != cfg["table_digest"]:
            raise RuntimeError("the variable table built from the bundled model differs from the one "
                               "in modelDescription.xml (FMU built with another engine version?)")
        self.modelName = cfg["identifier"]
        self.description = cfg.get("description")
        model = self.model
        # a state is bound to the model: every constant of its core tables (soa.h) and the table
        digest = hashlib.sha256(cfg["table_digest"].encode())
        for name, a in model.core.views().items():
            digest.update(name.encode() + np.ascontiguousarray(a).tobytes())
        self.model_digest = digest.hexdigest()

        # ---- value buffers: value reference -> slot (Reals first, then Booleans, then Strings)
        self.n_real = nr = table.n_real
        self.real = np.full(nr, np.nan)
        self.boolean: list[bool] = []
        self.string: list[str] = []
        for v in table.variables:
            if v.type == "Real":
                if v.start is not None:
                    self.real[v.value_reference] = v.start
            elif v.type == "Boolean":
                self.boolean.append(bool(v.start))
            elif v.type == "String":
                self.string.append(str(v.start))
        self.bool_base = nr
        self.str_base = nr + table.n_boolean
        self.vars_by_ref = table.variables
        g = table.group_slice
        empty = slice(nr, nr)

        def sl(group):
            return g(group) if group in table.groups else empty

        self.sl_g, self.sl_q0, self.sl_qd0 = sl("g"), sl("q0"), sl("qd0")
        self.sl_tau, self.sl_q, self.sl_qd, self.sl_qdd = sl("tau"), sl("q"), sl("qd"), sl("qdd")
        self.vr_max_step, self.vr_rtol, self.vr_atol = (table.groups[k][0] for k in
                                                        ("max_step", "rtol", "atol"))
        self.sl_stab = g("stabilization") if "stabilization" in table.groups else None
        self.sl_inertial, self.sl_damping, self.sl_friction = (sl("inertial"), sl("damping"),
                                                               sl("friction"))
        self.sl_armature, self.sl_stop_k, self.sl_stop_b = (sl("armature"), sl("stop_stiffness"),
                                                            sl("stop_damping"))
        self.sl_stop_tau = sl("stop_tau")
        self.vr_integrator_used = table.groups["integrator_used"][0]
        self.b_stops = (table.groups["stops_enabled"][0] - nr if "stops_enabled" in table.groups
                        else None)
        self.b_error_control = table.groups["error_control"][0] - nr
        self.inertial_start = self.real[self.sl_inertial].copy()
        # contact (soa_fmu/contact.py): tunable law and plane offsets, per-sphere outputs
        self.sl_law, self.sl_offset = sl("contact_law"), sl("plane_offset")
        self.sl_cforce, self.sl_cdepth = sl("contact_force"), sl("contact_depth")
        self.cons = [(c.name, g(f"u:{c.name}"), g(f"f:{c.name}"), table.groups[f"err:{c.name}"][0],
                      table.groups[f"active:{c.name}"][0] - nr) for c in model.constraints]
        self.frames = [(f, g(f"f_ext:{f}"), g(f"pose:{f}")) for f in table.frames]
        self.vr_energy = table.groups["energy"][0]
        self.vr_integrator = table.groups["integrator"][0] - self.str_base
        # Real value references are ordered: parameters < inputs (tau first) < outputs of every
        # step (q, qd, then the feedthrough ones: qdd, constraint forces) < on-demand outputs.
        causal = [v.causality for v in table.variables[:nr]]
        self.input_lo = causal.index("input") if "input" in causal else nr
        self.input_hi = nr - causal[::-1].index("input") if "input" in causal else nr
        self.tau_hi = self.sl_tau.stop
        r = self.real                  # views into the buffer (never re-bound: they stay valid)
        self.v_tau = r[self.sl_tau]
        if not (self.sl_q.stop == self.sl_qd.start and self.sl_qd.stop == self.sl_qdd.start):
            raise RuntimeError("variable table: q, qd, qdd are not contiguous")
        self.v_state = r[self.sl_q.start:self.sl_qdd.stop]     # q, qd, qdd are contiguous
        self.get_key: list | None = None      # the last fmi2GetReal request (masters repeat it)
        self.get_idx, self.get_hi = slice(0, 0), -1
        self.get_lazy = (False, False)        # ... asks for (energy, frame poses)
        self.set_key: list | None = None      # the last all-inputs fmi2SetReal request
        self.set_idx, self.set_push = slice(0, 0), False
        self.feedthrough_lo = self.sl_qdd.start
        self.lazy_lo = self.vr_energy
        self.labels = [self._label(v) for v in table.variables]

        # ---- run-time status
        self.mode = INSTANTIATED
        self.hot = False              # stepping mode: the lean set_real path applies
        self.sim: Simulator | None = None
        self.start_time = 0.0
        self.pending: dict[int, str] = {}     # value reference (or < 0) -> why steps are refused
        self.push = 2                 # 2: held inputs other than tau to copy into the Simulator
        self.stale = True             # feedthrough outputs not computed with the current inputs
        self.lazy_valid = False       # energy and poses up to date
        self.energy_valid = self.poses_valid = False
        self.params_dirty = True      # parameters changed since the Simulator was built
        self.refresh_from = self.input_hi    # lowest Real reference whose value is out of date
        for note in getattr(self, "boot_notes", ()):
            self._log(note, Fmi2Status.ok, "logDebug")
        if caught:
            self._log(f"{len(caught)} model warning(s) accepted when the FMU was built "
                      f"(--lenient), e.g.: {str(caught[0].message).splitlines()[0]}",
                      Fmi2Status.ok, "logDebug")

    def _mark(self) -> None:
        """Recompute ``refresh_from`` from the status flags."""
        if self.sim is None or self.params_dirty:
            self.refresh_from = self.input_hi
        elif self.stale:
            self.refresh_from = self.feedthrough_lo
        elif not self.lazy_valid:
            self.refresh_from = self.lazy_lo
        else:
            self.refresh_from = self.n_real

    # ------------------------------------------------------------------ helpers
    def _label(self, v) -> str:
        m, grp = self.model, v.group
        if grp in ("tau", "qd0", "qd", "qdd"):
            return m.velocity_names[v.index]
        if grp in ("q0", "q"):
            return m.position_names[v.index]
        if ":" in grp:
            return grp.split(":", 1)[1]
        return ""

    def _named(self, vr: int) -> str:
        v = self.vars_by_ref[vr]
        return f"{v.name} ({self.labels[vr]})" if self.labels[vr] else v.name

    def _log(self, msg: str, status=Fmi2Status.ok, category: str | None = None) -> None:
        self.log(msg, status, category)

    def _fail(self, what: str, exc: BaseException, status=Fmi2Status.error) -> None:
        """Log ``what: exc`` with ``status``; an unexpected exception (not a refused input or a
        failed step, which the message says all about) also with its traceback under logDebug."""
        self._log(f"{what}: {exc}", status)
        if not isinstance(exc, (ValueError, IntegrationError)):   # (StatusError, ConstraintError)
            self._log("".join(traceback.format_exception(exc)), Fmi2Status.ok, "logDebug")

    def _reject(self, vr: int, reason: str, refuse_steps: bool = True) -> None:
        """Log a rejected value (not applied).  A value the model cannot run with also refuses
        every doStep until it is corrected; a late fixed parameter or an output does not."""
        if not refuse_steps:
            self._log(f"{reason}; value rejected (not applied), the FMU keeps the value it has",
                      Fmi2Status.error)
            return
        msg = f"{reason}; value rejected (not applied), doStep is refused until it is corrected"
        self.pending[vr] = msg
        self._log(msg, Fmi2Status.error)

    def _check_refs(self, vrs, lo: int, hi: int, kind: str) -> bool:
        if vrs and (min(vrs) < lo or max(vrs) >= hi):
            bad = [vr for vr in vrs if not lo <= vr < hi]
            self._log(f"fmi2{kind}: value reference(s) {bad} are not {kind[3:]} variables of this "
                      "FMU", Fmi2Status.error)
            self.pending[-1] = f"fmi2{kind} was called with invalid value references {bad}"
            return False
        return True

    # ------------------------------------------------------------------ the simulator
    def _apply_parameters(self) -> None:
        """The physical parameters into the model (fixed ones: before initialization ends, and
        from a restored FMU state): each body's (mass, com, inertia), checked as a model file's
        when they differ from the start values (a ModelError names the body), damping, friction."""
        model, x = self.model, self.real[self.sl_inertial]
        for k in range(model.nbodies):
            p = x[10 * k:10 * k + 10]
            model.set_body_inertia(k, p[0], p[1:4], p[4:10], physical=not np.array_equal(
                p, self.inertial_start[10 * k:10 * k + 10]))
        for name, sl in (("joint_damping", self.sl_damping), ("joint_friction", self.sl_friction),
                         ("joint_armature", self.sl_armature)):
            if not np.array_equal(getattr(model, name), self.real[sl]):
                setattr(model, name, self.real[sl])
        self._apply_stops()
        self._apply_contact()

    def _apply_stops(self) -> None:
        """The joint stops' tunable gains and switch into the model (docs/joints.md)."""
        if self.b_stops is None:
            return
        model = self.model
        for name, sl in (("stop_stiffness", self.sl_stop_k), ("stop_damping", self.sl_stop_b)):
            if not np.array_equal(getattr(model, name), self.real[sl]):
                setattr(model, name, self.real[sl])
        if model.stops_enabled != self.boolean[self.b_stops]:
            model.stops_enabled = self.boolean[self.b_stops]

    def _apply_contact(self) -> None:
        """The tunable contact parameters into the model (the engine model is rebuilt if they
        changed)."""
        model, r = self.model, self.real
        if not model.contact_spheres:
            return
        law = dict(zip(LAW, (float(x) for x in r[self.sl_law])))
        if law != model.contact_law:
            model.contact_law = law
        for pl, x in zip(model.contact_planes, r[self.sl_offset]):
            if pl.offset != x:
                pl.offset = float(x)
                model._invalidate()

    def _build(self) -> None:
        """(Re)create the Simulator from the parameters and inputs (instantiated/init mode)."""
        model, r = self.model, self.real
        self._apply_parameters()
        model.gravity = r[self.sl_g]
        q0 = r[self.sl_q0].copy()
        for joint, i in model.quaternion_slices():
            n = float(np.linalg.norm(q0[i:i + 4]))
            if not abs(n - 1.0) < QUAT_NORM_TOL:
                raise ValueError(f"q0[{i + 1}..{i + 4}] (quaternion of joint {joint!r}) has norm "
                                 f"{n:.6g}; give a unit quaternion")
            q0[i:i + 4] /= n
        sim = Simulator(model, q0, r[self.sl_qd0], method=self.string[self.vr_integrator],
                        max_step=float(r[self.vr_max_step]), rtol=float(r[self.vr_rtol]),
                        atol=float(r[self.vr_atol]),
                        error_control=bool(self.boolean[self.b_error_control]))
        sim.t = self.start_time
        sim.tau = self.v_tau           # the held joint forces ARE the input buffer (no copy)
        if sim.options.method == "auto":
            why = ("the model has joint dissipation, stops or contact"
                   if sim.integrator_used in ROSENBROCK else "no stiff terms")
            self._log(f"integrator auto: {sim.integrator_used} ({why}; docs/joints.md)")
        if self.sl_stab is not None:
            sim.stabilization = tuple(float(x) for x in r[self.sl_stab])
        self.sim = sim
        self.params_dirty = False
        self._push_inputs()
        sim.update_outputs()
        self._pull_outputs()

    def _push_inputs(self) -> None:
        """Copy the held inputs from the value buffers into the Simulator."""
        sim, r = self.sim, self.real
        sim.tau = self.v_tau           # (already so, unless the Simulator replaced it)
        f_ext = {}
        for name, sl, _ in self.frames:
            f = r[sl]
            if f.any():
                f_ext[name] = f.copy()
        sim.f_ext = f_ext
        for name, sl_u, _, _, b in self.cons:
            sim.active[name] = self.boolean[b]
            sim.u[name] = r[sl_u].copy()
        self.push = 0

    def _pull_outputs(self) -> None:
        """Copy the Simulator's state and outputs into the value buffers (after a step/update)."""
        sim, r = self.sim, self.real
        np.concatenate((sim.q, sim.qd, sim.qdd), out=self.v_state)
        if self.b_stops is not None:
            r[self.sl_stop_tau] = _core.stop_forces(self.model.data, sim.q, sim.qd)
        r[self.vr_integrator_used] = METHODS.index(sim.integrator_used)
        for name, _, sl_f, vr_err, _ in self.cons:
            on = sim.active[name]
            r[sl_f] = sim.constraint_forces[name] if on else 0.0
            r[vr_err] = sim.constraint_residuals[name] if on else 0.0
        if self.model.contact_spheres:
            c = contact_forces(self.model, sim.q, sim.qd)
            r[self.sl_cforce], r[self.sl_cdepth] = c.sphere_force.ravel(), c.sphere_depth
        self.stale = self.lazy_valid = self.energy_valid = self.poses_valid = False
        self.refresh_from = self.lazy_lo

    def _update_lazy(self, energy: bool, poses: bool) -> None:
        """Compute the on-demand outputs that are asked for (energy; frame poses)."""
        sim, r, model = self.sim, self.real, self.model
        if energy and not self.energy_valid:
            r[self.vr_energy] = total_energy(model, sim.q, sim.qd)
            self.energy_valid = True
        if poses and not self.poses_valid and self.frames:
            w = forward_kinematics(model, sim.q)
            for name, _, sl in self.frames:
                k, Rf, pf = model.frame_placement(name)
                R, p = w.Rw[k] @ Rf, w.pw[k] + w.Rw[k] @ pf
                r[sl] = np.r_[p, _quaternion(R)]
            self.poses_valid = True
        self.lazy_valid = self.energy_valid and (self.poses_valid or not self.frames)

    def _refresh(self, hi: int, lazy=(True, True)) -> None:
        """Bring outputs up to reference ``hi`` up to date: (re)build the Simulator before
        initialization has ended, recompute the feedthrough outputs after new inputs, compute the
        on-demand outputs."""
        if self.sim is None or (self.params_dirty and self.mode != STEPPING):
            self._build()
        elif self.stale and hi >= self.feedthrough_lo:
            self._push_inputs()
            self.sim.update_outputs()
            self._pull_outputs()
        if not self.lazy_valid and hi >= self.lazy_lo:
            self._update_lazy(*lazy)
        self._mark()

    # ------------------------------------------------------------------ FMI life cycle
    def setup_experiment(self, start_time=0.0, stop_time=None, tolerance=None):
        try:
            self.start_time = float(start_time)
            if self.sim is not None:
                self.sim.t = self.start_time
        except Exception as e:        # noqa: BLE001 — nothing may escape into pythonfmu
            self._fail("fmi2SetupExperiment", e)

    def enter_initialization_mode(self):
        self.mode = INITIALIZATION

    def exit_initialization_mode(self):
        try:
            if self.sim is None or self.params_dirty:
                self._build()
            self.pending.pop(-2, None)
        except Exception as e:        # noqa: BLE001
            self.sim = None
            self.pending[-2] = f"initialization failed: {e}"
            self._fail("fmi2ExitInitializationMode: initialization failed", e)
        self.mode = STEPPING
        self.hot = self.sim is not None
        self._mark()

    def terminate(self):
        self.mode = TERMINATED
        self.hot = False

    def do_step(self, current_time, step_size, no_set_fmu_state_prior=False) -> bool:
        try:
            if self.pending or not self.hot:
                return self._refuse()
            sim = self.sim
            if self.push:
                self._push_inputs()
            if abs(current_time - sim.t) > 1e-9 * max(1.0, abs(current_time)):
                self._log(f"communication point t = {current_time!r} differs from the FMU's time "
                          f"{sim.t!r}; continuing from the FMU's state at t = {current_time!r}",
                          Fmi2Status.warning)
                sim.t = float(current_time)
            sim.step(step_size)
            self._pull_outputs()
            return True
        except Exception as e:        # noqa: BLE001
            self._fail(f"step from t = {current_time!r} by h = {step_size!r} failed (state "
                       "unchanged)", e, Fmi2Status.discard)
            return False

    def _refuse(self) -> bool:
        if self.mode != STEPPING:
            self._log(f"fmi2DoStep called in {self.mode} mode (allowed only after "
                      "fmi2ExitInitializationMode and before fmi2Terminate)", Fmi2Status.error)
        else:
            self._log("step refused: " + "; ".join(self.pending.values()), Fmi2Status.discard)
        return False

    # ------------------------------------------------------------------ getters
    def get_real(self, vrs):
        try:
            if vrs != self.get_key and not self._prepare_get(vrs):
                return [math.nan] * len(vrs)
            if self.get_hi >= self.refresh_from:
                self._refresh(self.get_hi, self.get_lazy)
            return self.real[self.get_idx].tolist()
        except Exception as e:        # noqa: BLE001
            self._fail("fmi2GetReal", e)
            return [math.nan] * len(vrs)

    def _prepare_get(self, vrs) -> bool:
        """Check a new fmi2GetReal request and remember its index (a slice when contiguous)."""
        if not self._check_refs(vrs, 0, self.n_real, "GetReal"):
            return False
        self.get_key = list(vrs)
        self.get_hi = max(vrs) if vrs else -1
        self.get_lazy = (self.vr_energy in vrs, self.get_hi > self.vr_energy)
        self.get_idx = _index(vrs)
        return True

    def get_integer(self, vrs):
        if vrs:
            self._check_refs(vrs, 0, 0, "GetInteger")
        return [0] * len(vrs)

    def get_boolean(self, vrs):
        try:
            b = self.bool_base
            if not self._check_refs(vrs, b, self.str_base, "GetBoolean"):
                return [False] * len(vrs)
            return [self.boolean[vr - b] for vr in vrs]
        except Exception as e:        # noqa: BLE001
            self._fail("fmi2GetBoolean", e)
            return [False] * len(vrs)

    def get_string(self, vrs):
        try:
            s = self.str_base
            if not self._check_refs(vrs, s, s + len(self.string), "GetString"):
                return [""] * len(vrs)
            return [self.string[vr - s] for vr in vrs]
        except Exception as e:        # noqa: BLE001
            self._fail("fmi2GetString", e)
            return [""] * len(vrs)

    # ------------------------------------------------------------------ setters
    def set_real(self, vrs, values):
        try:
            if vrs == self.set_key and self.hot and all(map(math.isfinite, values)):
                self.real[self.set_idx] = values      # the hot path: the same inputs again
                if self.pending:
                    for vr in vrs:
                        self.pending.pop(vr, None)
                if self.set_push:
                    self.push = 2
                self.stale = True
                self.refresh_from = self.feedthrough_lo
                return
            if not vrs or not self._check_refs(vrs, 0, self.n_real, "SetReal"):
                return
            for vr, x in zip(vrs, values):
                self._set_one_real(vr, float(x))
            self._mark()
            if self.hot and min(vrs) >= self.input_lo and max(vrs) < self.input_hi:
                self.set_key, self.set_idx = list(vrs), _index(vrs)
                self.set_push = max(vrs) >= self.tau_hi
        except Exception as e:        # noqa: BLE001
            self._fail("fmi2SetReal", e)

    def _set_one_real(self, vr: int, x: float) -> None:
        v = self.vars_by_ref[vr]
        if not math.isfinite(x):
            self._reject(vr, f"{self._named(vr)} is {'NaN' if x != x else 'infinite'}")
            return
        if v.causality == "output":
            self._reject(vr, f"{v.name} is an output and cannot be set", refuse_steps=False)
            return
        if v.causality == "parameter":
            if v.variability == "fixed" and self.mode in (STEPPING, TERMINATED):
                self._reject(vr, f"{self._named(vr)} is a fixed parameter; it can only be set "
                                 "before fmi2ExitInitializationMode", refuse_steps=False)
                return
            if v.group in ("max_step", "rtol", "atol") and not x > 0:
                self._reject(vr, f"{v.name} must be > 0, got {x!r}")
                return
            if v.group == "max_step" and x < MIN_MAX_STEP:
                self._reject(vr, f"max_step must be ≥ {MIN_MAX_STEP:g} s (the floor of every "
                                 f"step's sub-steps), got {x!r}")
                return
            if v.group in ("stop_stiffness", "stop_damping") and not x >= 0:
                self._reject(vr, f"{self._named(vr)} must be >= 0, got {x!r}")
                return
            if v.group == "contact_law" and (x < 0 or (x == 0 and list(LAW.values())[v.index][2])):
                self._reject(vr, f"{v.name} must be {'> 0' if list(LAW.values())[v.index][2] else '≥ 0'}"
                                 f", got {x!r}")
                return
            self.real[vr] = x
            self.pending.pop(vr, None)
            if self.mode == STEPPING:
                self._apply_tunable(v)
            else:
                self.params_dirty = True
            return
        self.real[vr] = x                              # an input
        self.pending.pop(vr, None)
        if vr >= self.tau_hi:                          # (tau is read by the Simulator in place)
            self.push = 2
        self.stale = True

    def _apply_tunable(self, v) -> None:
        """A tunable parameter changed between steps: update the running Simulator."""
        sim, r = self.sim, self.real
        if sim is None:
            return
        if v.group == "g":
            self.model.gravity = r[self.sl_g]
        elif v.group in ("contact_law", "plane_offset"):
            self._apply_contact()
        elif v.group == "stabilization":
            sim.stabilization = tuple(float(x) for x in r[self.sl_stab])
        elif v.group in ("stop_stiffness", "stop_damping"):
            self._apply_stops()
        else:
            sim.set_method(self.string[self.vr_integrator], max_step=float(r[self.vr_max_step]),
                           rtol=float(r[self.vr_rtol]), atol=float(r[self.vr_atol]),
                           error_control=bool(self.boolean[self.b_error_control]))
        self.stale = True

    def set_integer(self, vrs, values):
        if vrs:
            self._check_refs(vrs, 0, 0, "SetInteger")

    def set_boolean(self, vrs, values):
        try:
            b = self.bool_base
            if not self._check_refs(vrs, b, self.str_base, "SetBoolean"):
                return
            for vr, x in zip(vrs, values):
                self.boolean[vr - b] = bool(x)
                self.pending.pop(vr, None)
            if self.b_stops is not None and self.mode == STEPPING:
                self._apply_stops()                    # a tunable parameter
            if self.mode == STEPPING:                  # the Rosenbrock methods' mode, tunable
                self.sim.options.error_control = bool(self.boolean[self.b_error_control])
            self.push = 2
            self.stale = True
            self._mark()
        except Exception as e:        # noqa: BLE001
            self._fail("fmi2SetBoolean", e)

    def set_string(self, vrs, values):
        try:
            s = self.str_base
            if not self._check_refs(vrs, s, s + len(self.string), "SetString"):
                return
            for vr, x in zip(vrs, values):
                x = str(x)
                if vr - s == self.vr_integrator:
                    if x not in METHODS:
                        self._reject(vr, f"integrator {x!r} is not one of {', '.join(METHODS)}")
                        continue
                    self.string[vr - s] = x
                    self.pending.pop(vr, None)
                    if self.mode == STEPPING:
                        self._apply_tunable(self.vars_by_ref[vr])
                    else:
                        self.params_dirty = True
            self._mark()
        except Exception as e:        # noqa: BLE001
            self._fail("fmi2SetString", e)

    # ------------------------------------------------------------------ FMU state
    def _get_fmu_state(self):
        """Everything that evolves: Simulator state (time, q, β, β̇, held inputs, constraint status
        and forces, integrator options and memory), all variable values, mode and pending errors."""
        try:
            return {"format": STATE_FORMAT, "fmu": self.cfg["table_digest"],
                    "model": self.model_digest, "mode": self.mode,
                    "real": self.real.copy(), "boolean": list(self.boolean),
                    "string": list(self.string), "pending": dict(self.pending),
                    "start_time": self.start_time,
                    "flags": [self.push, self.stale, self.params_dirty, self.hot],
                    "sim": None if self.sim is None else self.sim.get_state()}
        except Exception as e:        # noqa: BLE001
            self._fail("fmi2GetFMUstate", e)
            return {"format": "invalid", "reason": f"fmi2GetFMUstate failed: {e}"}

    def _set_fmu_state(self, state):
        try:
            problem = self._state_problem(state)
            if problem:      # refused: the instance stays exactly as it was, and usable
                self._log(f"fmi2SetFMUstate was given an unusable state ({problem}); the "
                          "instance is unchanged", Fmi2Status.error)
                return       # (pythonfmu answers fmi2OK: a Python exception here is fmi2Fatal)
            self.mode = state["mode"]
            self.real[:] = state["real"]
            self.boolean[:] = state["boolean"]
            self.string[:] = state["string"]
            self.pending = {int(k): v for k, v in state["pending"].items()}
            self.start_time = float(state["start_time"])
            self._apply_parameters()
            self.model.gravity = self.real[self.sl_g]
            if state["sim"] is None:
                self.sim = None
            else:
                if self.sim is None:
                    self._build()
                self.sim.set_state(state["sim"])
                self.v_tau[:] = self.sim.tau            # (restored into the buffer: equal values)
                self.sim.tau = self.v_tau
            push, stale, params_dirty, hot = state["flags"]
            self.push, self.stale, self.params_dirty = int(push), bool(stale), bool(params_dirty)
            self.hot = bool(hot) and self.sim is not None
            self.lazy_valid = self.energy_valid = self.poses_valid = False
            self._mark()
        except Exception as e:        # noqa: BLE001
            self.pending[-3] = f"fmi2SetFMUstate failed: {e}"
            self._fail("fmi2SetFMUstate failed", e)

    def _state_problem(self, state) -> str:
        if not isinstance(state, dict) or state.get("format") != STATE_FORMAT:
            return (state.get("reason") if isinstance(state, dict) and state.get("reason")
                    else "not a soa_fmu FMU state")
        if state.get("fmu") != self.cfg["table_digest"]:
            return "it belongs to a different FMU (other variable table)"
        if state.get("model") != self.model_digest:
            return ("it belongs to a different model (the model digest differs: other topology, "
                    "joints, placements, inertias or constraints)")
        if np.shape(state["real"]) != self.real.shape or len(state["boolean"]) != \
                len(self.boolean) or len(state["string"]) != len(self.string):
            return "its variable vectors have the wrong sizes"
        if state["mode"] not in (INSTANTIATED, INITIALIZATION, STEPPING, TERMINATED):
            return f"unknown mode {state['mode']!r}"
        return ""

    @staticmethod
    def _fmu_state_to_bytes(state) -> bytes:
        """JSON (floats as exact round-trip reprs; arrays tagged) — no pickle, so a serialized state
        from an untrusted store cannot execute code."""
        try:
            return json.dumps(_encode(state), allow_nan=True, separators=(",", ":")).encode()
        except Exception as e:        # noqa: BLE001
            return json.dumps({"format": "invalid", "reason": f"serialization failed: {e}"}).encode()

    @staticmethod
    def _fmu_state_from_bytes(data) -> dict:
        try:
            return _decode(json.loads(bytes(data).decode("utf-8")))
        except Exception as e:        # noqa: BLE001
            return {"format": "invalid", "reason": f"not a serialized soa_fmu FMU state ({e})"}


# ---------------------------------------------------------------- helpers
def _index(vrs):
    """A slice for a contiguous ascending run of references, else an index array."""
    if vrs and list(vrs) == list(range(vrs[0], vrs[0] + len(vrs))):
        return slice(vrs[0], vrs[0] + len(vrs))
    return np.array(vrs, dtype=np.intp)


def _quaternion(R: np.ndarray) -> np.ndarray:
    """Unit quaternion (w, x, y, z), w ≥ 0, of a rotation matrix (Shepperd's method)."""
    t = np.trace(R)
    if t > 0:
        s = 2.0 * math.sqrt(1.0 + t)
        q = np.array([0.25 * s, (R[2, 1] - R[1, 2]) / s, (R[0, 2] - R[2, 0]) / s,
                      (R[1, 0] - R[0, 1]) / s])
    else:
        i = int(np.argmax(np.diag(R)))
        j, k = (i + 1) % 3, (i + 2) % 3
        s = 2.0 * math.sqrt(max(1.0 + R[i, i] - R[j, j] - R[k, k], 0.0))
        q = np.empty(4)
        q[0] = (R[k, j] - R[j, k]) / s
        q[1 + i] = 0.25 * s
        q[1 + j] = (R[j, i] + R[i, j]) / s
        q[1 + k] = (R[k, i] + R[i, k]) / s
    q /= np.linalg.norm(q)
    return -q if q[0] < 0 else q


def _encode(x):
    if isinstance(x, np.ndarray):
        return {"__ndarray__": x.tolist(), "dtype": str(x.dtype), "shape": list(x.shape)}
    if isinstance(x, tuple):
        return {"__tuple__": [_encode(y) for y in x]}
    if isinstance(x, dict):
        return {str(k): _encode(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_encode(y) for y in x]
    if isinstance(x, (np.floating, np.integer, np.bool_)):
        return x.item()
    return x


def _decode(x):
    if isinstance(x, dict):
        if "__ndarray__" in x:
            return np.array(x["__ndarray__"], dtype=x["dtype"]).reshape(x["shape"])
        if "__tuple__" in x:
            return tuple(_decode(y) for y in x["__tuple__"])
        return {k: _decode(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_decode(y) for y in x]
    return x
