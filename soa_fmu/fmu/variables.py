"""The FMU's variable table: ONE source of truth for the slave and for modelDescription.xml.

:func:`build_table` turns a :class:`~soa_fmu.model.Model` (plus the build options) into a list of
:class:`Variable` rows.  The slave (:mod:`soa_fmu.fmu.slave`) binds every row to its storage through
``group``/``index`` (e.g. ``("tau", 2)`` is ``Simulator.tau[2]``); the generator
(:mod:`model_descriptions.generator`) writes the same rows, their units and their dependencies
(:meth:`VariableTable.output_dependencies`, :meth:`VariableTable.initial_dependencies`) to XML.

Layout (SPEC §4).  Value references are unique over all types and equal to the 0-based position in
``ModelVariables`` (so the XML index of a variable is ``value_reference + 1``).  Reals come first,
grouped as: parameters, inputs, outputs computed by every step (``q``, ``qd``, ``qdd``, constraint
forces and residuals), outputs computed on demand (``energy``, frame poses); then the Boolean inputs
(``<constraint>.active``); then the String parameter ``integrator``.  Vectors use 1-based structured
names in ``model.position_names`` / ``model.velocity_names`` order.

Physical parameters (fixed: set before fmi2ExitInitializationMode): per body ``<b>.mass``,
``<b>.com[1..3]``, ``<b>.inertia[1..6]`` (group ``inertial``, ten per body in body order), per
velocity dof ``damping[i]``, ``friction[i]`` and ``armature[i]`` (groups ``damping``,
``friction``, ``armature``); they follow the integrator options and gains among the parameters.
A model with joint stops adds the tunable ``stop_stiffness[i]``, ``stop_damping[i]`` (0 where a dof
has no stop), the Boolean parameter ``stops_enabled`` (after the constraint switches) and the
outputs ``stop_tau[i]``.  Every FMU has the Boolean parameter ``error_control`` (the mode of ros2, ros34pw2
and rk4w, before ``integrator``) and the output ``integrator_used`` (the integrator the ``integrator``
parameter resolved to at initialization: 0 rk4, 1 euler, 2 dop853, 3 implicit, 4 ros2, 5 ros34pw2,
6 rk4w; docs/joints.md).  With Model Exchange, joint stops add the locals ``stop_margin[k]``, one per stop
limit in dof order, lower first (q − lower, upper − q): the event indicators (FMI 3.0 declares
them as its ``EventIndicator`` elements; FMI 2.0 counts them).

With ``states=True`` (an FMU with Model Exchange) the continuous states are x = (``q``, ``qd``)
and the table adds their derivatives: the locals ``der(q[i])`` (θ̇ = f(θ)β) after the constraint
outputs, and ``qdd`` becomes the derivative of ``qd`` (the FMI ``derivative`` attribute,
:attr:`Variable.derivative`).

The controller FMU (``soa-build-fmu --controller``, docs/systems.md) has its own table,
:func:`build_controller_table` (a :class:`ControllerTable`): g and the physical parameters as
above (the controller's model of the plant), the gains and the trajectory, the inputs q, qd,
q_ref, qd_ref, qdd_ref, the outputs tau, q_des and three Booleans; no states.

Units are SI; a coordinate's unit follows from its joint type (angle or length, quaternion
components are "1"); generalized forces are N.m for rotational and N for translational dofs.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

import numpy as np

from .. import joints as J
from ..contact import LAW, contact_names, sphere_pairs
from ..integrators import METHODS, MIN_MAX_STEP   # METHODS: the index is soa.h's SOA_RK4 ...
from ..model import Model

FORMAT_VERSION = 1

# Unit name -> SI base-unit exponents (FMI 2.0 §2.2.2: kg, m, s, A, K, mol, cd, rad).
UNITS: dict[str, dict[str, int]] = {
    "1": {},
    "s": {"s": 1},
    "rad": {"rad": 1},
    "m": {"m": 1},
    "rad/s": {"rad": 1, "s": -1},
    "m/s": {"m": 1, "s": -1},
    "rad/s2": {"rad": 1, "s": -2},
    "m/s2": {"m": 1, "s": -2},
    "N": {"kg": 1, "m": 1, "s": -2},
    "N.m": {"kg": 1, "m": 2, "s": -2},
    "J": {"kg": 1, "m": 2, "s": -2},
    "1/s": {"s": -1},
    "1/s2": {"s": -2},
    "kg": {"kg": 1},
    "kg.m2": {"kg": 1, "m": 2},
    "N.m.s/rad": {"kg": 1, "m": 2, "s": -1, "rad": -1},
    "N.s/m": {"kg": 1, "s": -1},
    "N.m/rad": {"kg": 1, "m": 2, "s": -2, "rad": -1},
    "N/m": {"kg": 1, "s": -2},
    "s/m": {"s": 1, "m": -1},
    "N/m^n": {"kg": 1, "s": -2},      # (the exponent n makes it kg.m^(1-n)/s2; declared N/m^n)
}

# What each dof kind means: (coordinate, rate, acceleration, generalized force, viscous damping)
# units.
ANGULAR = ("rad", "rad/s", "rad/s2", "N.m", "N.m.s/rad")
LINEAR = ("m", "m/s", "m/s2", "N", "N.s/m")
# a flexible body's mass-normalized modal coordinate eta (dimension sqrt(kg).m), declared "1"
MODAL = ("1", "1/s", "1", "1", "1")

# The ten inertial parameters of a body, in the order of <b>.mass, <b>.com[1..3], <b>.inertia[1..6]
# (group "inertial", index 10 k + i for body k): name, unit, what.
INERTIAL = (("mass", "kg", "mass"),
            *((f"com[{k + 1}]", "m", f"centre of mass, body frame {c}") for k, c in enumerate("xyz")),
            *((f"inertia[{k + 1}]", "kg.m2", f"rotational inertia {c} about the centre of mass, "
               "body axes") for k, c in enumerate(("xx", "yy", "zz", "xy", "xz", "yz"))))

CONTACT_DOC = {"stiffness": "stiffness k of f_n = k delta^n (1 + d delta-dot)",
               "exponent": "exponent n of f_n = k delta^n (1 + d delta-dot)",
               "dissipation": "Hunt-Crossley dissipation d of f_n = k delta^n (1 + d delta-dot)",
               "friction": "Coulomb friction coefficient mu",
               "stiction_velocity": "regularization velocity v_s of the friction, "
                                    "f_t = -mu f_n v_t / sqrt(v_t^2 + v_s^2)"}

# Constraint rows: spatial order [angular; linear] (ω first, as everywhere in the engine).
CONSTRAINT_ROWS = {
    "weld": ("rx", "ry", "rz", "x", "y", "z"),
    "ball": ("x", "y", "z"),
    "hinge": ("r1", "r2", "x", "y", "z"),
    "soft_finger": ("rn", "x", "y", "z"),
}

_BNAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_INDEXED = re.compile(r"^(?P<base>.*)\[(?P<k>\d+)\]$")         # x[k]
_DER_INDEXED = re.compile(r"^der\((?P<base>.*)\[(?P<k>\d+)\]\)$")  # der(x[k])
_QCHARS = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_"
              "!#$%&()*+,-./:;<>=?@[]^{}|~ ")


ALL = None     # a dependency list that is every known (written by omitting "dependencies")


class TableError(ValueError):
    """A model that cannot be expressed as FMU variables (e.g. an unusable frame name)."""


@dataclass(frozen=True)
class Variable:
    """One FMI scalar variable and its binding to the slave's storage."""

    name: str
    value_reference: int
    type: str                    # "Real" | "Integer" | "Boolean" | "String"
    causality: str               # "parameter" | "input" | "output"
    variability: str             # "fixed" | "tunable" | "discrete" | "continuous"
    initial: str | None          # "exact" | "calculated" | None (inputs: not allowed in FMI 2.0)
    unit: str | None             # a key of UNITS for every Real, None otherwise
    start: object                # float | int | bool | str | None (outputs: None)
    description: str
    group: str                   # binding: the engine quantity ("tau", "q", "f_ext:tool", ...)
    index: int                   # binding: 0-based position inside the group
    derivative: int | None = None  # a state derivative: the value reference of its state


def structured_name(part: str, what: str) -> str:
    """``part`` as one component of an FMI 'structured' name: itself when it is a plain
    identifier, else quoted ('...'); TableError when FMI cannot express it."""
    if _BNAME.match(part):
        return part
    if part and all(c in _QCHARS for c in part):
        return f"'{part}'"
    raise TableError(f"{what} {part!r} cannot be used in an FMI variable name (use letters, digits "
                     "and _ . - etc.; no quotes, backslashes or non-ASCII characters)")


# ---------------------------------------------------------------- per-coordinate meaning
def coordinate_labels(model: Model):
    """Per joint coordinate: (position labels+units, velocity labels+units) in model order.

    Returns two lists of (joint name, joint type, what, kind) where ``kind`` is ANGULAR, LINEAR or
    None (a quaternion component, unit "1")."""
    pos, vel = [], []
    for b in model.bodies:
        j, name, t = b.joint, b.joint_name, b.joint.type_name
        if j.code == J.REVOLUTE:
            pos += [(name, t, "angle", ANGULAR)]
            vel += [(name, t, "rotation", ANGULAR)]
        elif j.code == J.PRISMATIC:
            pos += [(name, t, "displacement", LINEAR)]
            vel += [(name, t, "translation", LINEAR)]
        elif j.code == J.SPHERICAL:
            pos += [(name, t, f"quaternion {c}", None) for c in "wxyz"]
            vel += [(name, t, f"rotation about body {c}", ANGULAR) for c in "xyz"]
        elif j.code == J.FREE:
            pos += [(name, t, f"quaternion {c}", None) for c in "wxyz"]
            pos += [(name, t, f"position {c} (parent frame)", LINEAR) for c in "xyz"]
            vel += [(name, t, f"rotation about body {c}", ANGULAR) for c in "xyz"]
            vel += [(name, t, f"translation along body {c}", LINEAR) for c in "xyz"]
        elif j.code == J.PLANAR:
            pos += [(name, t, "angle about the normal", ANGULAR),
                    (name, t, "position along e1", LINEAR), (name, t, "position along e2", LINEAR)]
            vel += [(name, t, "rotation about the normal", ANGULAR),
                    (name, t, "translation along e1", LINEAR),
                    (name, t, "translation along e2", LINEAR)]
        elif j.code == J.GENERAL:
            S = j.motion_subspace()
            for k in range(S.shape[1]):
                kind = ANGULAR if np.linalg.norm(S[:3, k]) > 0 else LINEAR
                what = f"coordinate {k + 1} ({'rotation' if kind is ANGULAR else 'translation'})"
                pos.append((name, t, what, kind))
                vel.append((name, t, what, kind))
        elif j.nq or j.nv:       # a joint type this table does not know yet
            raise TableError(f"joint {name!r}: unsupported joint type {t!r} for the FMU")
        for k in range(b.nmodes):   # a flexible body's mass-normalized modal coordinates
            what, eta = "mass-normalized modal coordinate (sqrt(kg).m, declared 1)", f"{b.name}.eta[{k + 1}]"
            pos.append((eta, "flexible body", what, None))
            vel.append((eta, "flexible body", what, MODAL))
    return pos, vel


def describe_coordinate(labels, i: int) -> str:
    """The description of coordinate i of ``labels`` (one list of coordinate_labels):
    "<what> of joint '<name>' (<type>)"."""
    joint, jtype, what, _ = labels[i]
    return f"{what} of joint '{joint}' ({jtype})"


def exposed_frames(model: Model) -> list[str]:
    """Frames with external-force inputs and pose outputs: every named frame, then every leaf
    body (a body without children) that can move (a moving joint between it and world), in model
    order."""
    has_child = {b.parent for b in model.bodies}

    def moves(k: int) -> bool:
        while k >= 0:
            if model.bodies[k].joint.nv:
                return True
            k = model.bodies[k].parent
        return False

    leaves = [b.name for k, b in enumerate(model.bodies) if k not in has_child and moves(k)]
    return list(model.frames) + [n for n in leaves if n not in model.frames]


# ---------------------------------------------------------------- the table
class VariableTable:
    """The rows plus the lookups the slave and the generator need."""

    def __init__(self, variables: list[Variable], model: Model, frames: list[str],
                 joints_of_q: list[set[int]], frame_ancestry_q: dict[str, list[int]],
                 rate_deps: list[tuple[list[int], list[int]]] | None = None):
        self.variables = variables
        self.states = rate_deps is not None
        self._rate_deps = rate_deps or []
        self.by_name = {v.name: v for v in variables}
        self.frames = frames
        self._joints_of_q = joints_of_q
        self._frame_q = frame_ancestry_q
        self.groups: dict[str, tuple[int, int]] = {}
        for v in variables:
            first, n = self.groups.get(v.group, (v.value_reference, 0))
            if v.value_reference != first + n:
                raise AssertionError(f"group {v.group} is not contiguous")
            self.groups[v.group] = (first, n + 1)
        self.n_real = sum(v.type == "Real" for v in variables)
        self.n_boolean = sum(v.type == "Boolean" for v in variables)
        self.n_string = sum(v.type == "String" for v in variables)
        self.n_integer = sum(v.type == "Integer" for v in variables)
        self.constraints = [c.name for c in model.constraints]
        self.n_event_indicators = event_indicator_count(model) if self.states else 0

    def __len__(self) -> int:
        return len(self.variables)

    def __iter__(self):
        return iter(self.variables)

    def group_slice(self, group: str) -> slice:
        first, n = self.groups[group]
        return slice(first, first + n)

    def vrs(self, group: str) -> list[int]:
        first, n = self.groups.get(group, (0, 0))
        return list(range(first, first + n))

    def units_used(self) -> list[str]:
        used = {v.unit for v in self.variables if v.unit is not None}
        return [u for u in UNITS if u in used]

    def digest(self) -> str:
        """Hash of everything an importer sees (names, references, types, attributes, units,
        starts): the slave checks at instantiation that it registers exactly the built table."""
        h = hashlib.sha256()
        for v in self.variables:
            row = (v.name, v.value_reference, v.type, v.causality, v.variability, v.initial,
                   v.unit, v.start, v.group, v.index)
            h.update(repr(row if v.derivative is None else row + (v.derivative,)).encode())
        return h.hexdigest()

    def arrays(self) -> list[tuple[str, int, int, bool]]:
        """The FMI 3.0 variables: consecutive rows ``x[1]``, ``x[2]``, ... (and ``der(x[i])``)
        as one array ``x`` (``der(x)``); as (name, first value reference, count, is an array).
        A scalar row (``energy``, ``<c>.err``) stays a scalar."""
        out: list[tuple[str, int, int, bool]] = []
        for v in self.variables:
            der = _DER_INDEXED.match(v.name)
            m = der or _INDEXED.match(v.name)
            if m:
                base, k = (f"der({m['base']})" if der else m["base"]), int(m["k"])
                last = out[-1] if out else None
                if last and last[3] and last[0] == base and last[1] + last[2] == v.value_reference \
                        and k == last[2] + 1:
                    out[-1] = (base, last[1], last[2] + 1, True)
                    continue
                if k != 1:
                    raise AssertionError(f"{v.name}: an array that does not start at [1]")
                out.append((base, v.value_reference, 1, True))
            else:
                out.append((v.name, v.value_reference, 1, False))
        return out

    def state_vrs(self) -> list[int]:
        """The continuous states x = (q, qd) (empty without Model Exchange)."""
        return self.vrs("q") + self.vrs("qd") if self.states else []

    def derivative_dependencies(self) -> dict[int, list[int] | None]:
        """State derivative value reference -> the states and inputs it depends on: der(q[i]) on
        the coordinates and rates of its joint that θ̇ = f(θ)β involves, qdd on every state and
        input (ALL).  Empty without Model Exchange."""
        if not self.states:
            return {}
        q, qd = self.vrs("q"), self.vrs("qd")
        deps: dict[int, list[int] | None] = {}
        for i, vr in enumerate(self.vrs("qdot")):
            qs, vs = self._rate_deps[i]
            deps[vr] = sorted([q[k] for k in qs] + [qd[k] for k in vs])
        for vr in self.vrs("qdd"):
            deps[vr] = ALL
        return deps

    # ------------------------------------------------------------ ModelStructure
    def output_dependencies(self) -> dict[int, list[int] | None]:
        """Output value reference -> input value references it depends on at the same instant
        (direct feedthrough).  States and quantities of the state only (q, qd, energy, poses,
        residuals) depend on no input; accelerations and constraint forces depend on all inputs
        (β̇ = M⁻¹(τ − bias + Jᵀf) couples every joint force, external force and constraint) and,
        with Model Exchange, all states: ALL, every known."""
        deps: dict[int, list[int] | None] = {}
        for v in self.variables:
            if v.causality != "output":
                continue
            feedthrough = v.group == "qdd" or v.group.startswith("f:")   # (contact: the state)
            deps[v.value_reference] = ALL if feedthrough else []
        # (a residual is a function of q, and of the constraint's on/off switch)
        for c in self.constraints:
            err, active = self.groups[f"err:{c}"][0], self.groups[f"active:{c}"][0]
            deps[err] = [active]
        if self.states:       # Model Exchange: outputs are functions of the states x = (q, qd) too
            q, qd, x = self.vrs("q"), self.vrs("qd"), self.state_vrs()
            q_of_v = {vs[0]: i for i, (qs, vs) in enumerate(self._rate_deps)
                      if not qs and len(vs) == 1}            # 1-dof joints: θ̇_i = β_v
            for v in self.variables:
                if v.causality != "output":
                    continue
                g, vr = v.group, v.value_reference
                if g in ("q", "qd"):
                    extra = [vr]                              # the state itself
                elif g == "integrator_used":                  # decided at initialization
                    continue
                elif g == "stop_tau" and v.index in q_of_v:   # the stop of one dof: its q, qd
                    extra = [q[q_of_v[v.index]], qd[v.index]]
                elif g.startswith("pose:"):
                    extra = [q[i] for i in self._frame_q[g[5:]]]
                elif g.startswith("err:"):
                    extra = q
                elif deps[vr] is ALL:                         # qdd, forces
                    continue
                else:                                         # energy
                    extra = x
                deps[vr] = sorted(set(deps[vr]) | set(extra))
        return deps

    def initial_dependencies(self) -> dict[int, list[int] | None]:
        """InitialUnknowns (every output is initial="calculated", and with Model Exchange the
        state derivatives der(q)) -> the knowns (inputs and parameters) it depends on during
        initialization; ALL for accelerations and constraint forces (they depend on nearly every
        known: gravity, q0, qd0, the inputs and every physical parameter)."""
        vr = {g: self.vrs(g) for g in self.groups}
        deps: dict[int, list[int] | None] = {}
        for v in self.variables:
            if v.causality != "output":
                continue
            g = v.group
            if g == "q":          # the start value, normalized per quaternion joint
                d = [vr["q0"][i] for i in sorted(self._joints_of_q[v.index])]
            elif g == "qd":
                d = [vr["qd0"][v.index]]
            elif g == "energy":
                d = vr["g"] + vr.get("q0", []) + vr.get("qd0", []) + vr.get("inertial", [])
            elif g.startswith("pose:"):
                d = [vr["q0"][i] for i in self._frame_q[g[5:]]]
            elif g.startswith("err:"):
                d = vr.get("q0", []) + vr[f"active:{g[4:]}"]
            elif g in ("contact_force", "contact_depth"):
                d = vr.get("q0", []) + vr.get("qd0", []) + vr["contact_law"] + vr.get("plane_offset", [])
            else:                 # qdd, constraint forces
                deps[v.value_reference] = ALL
                continue
            deps[v.value_reference] = sorted(set(d))
        for i, vr_ in enumerate(vr.get("qdot", [])):     # der(q): q0 and qd0 of what it involves
            qs, vs = self._rate_deps[i]
            d = [vr["q0"][k] for k in sorted(set().union(*(self._joints_of_q[k] for k in qs)))]
            deps[vr_] = sorted(set(d + [vr["qd0"][k] for k in vs]))
        return deps


def build_table(model: Model, integrator: str = "auto", max_step: float = 1e-3,
                states: bool = False) -> VariableTable:
    """The FMU variables of ``model`` (see the module docstring for the layout); ``states``: with
    the continuous states and their derivatives (Model Exchange)."""
    if integrator not in METHODS:
        raise TableError(f"unknown integrator {integrator!r} (expected one of {', '.join(METHODS)})")
    if not (np.isfinite(max_step) and max_step >= MIN_MAX_STEP):
        raise TableError(f"max_step must be finite and ≥ {MIN_MAX_STEP:g} s, got {max_step}")
    rows: list[Variable] = []

    def add(name, type_, causality, variability, initial, unit, start, description, group, index,
            derivative=None):
        rows.append(Variable(name, len(rows), type_, causality, variability, initial, unit, start,
                             description, group, index, derivative))

    pos, vel = coordinate_labels(model)
    nq, nv = model.nq, model.nv
    q_start = model.initial_q if model.initial_q is not None else model.neutral_configuration()
    qd_start = model.initial_qd if model.initial_qd is not None else np.zeros(nv)
    frames = exposed_frames(model)
    fnames = {f: structured_name(f, "frame") for f in frames}
    cnames = {c.name: structured_name(c.name, "constraint") for c in model.constraints}

    def qdesc(i):
        return describe_coordinate(pos, i)

    def vdesc(i):
        return describe_coordinate(vel, i)

    def unit(kind, k):
        return "1" if kind is None else kind[k]

    # ---------------- parameters
    for k, c in enumerate("xyz"):
        add(f"g[{k + 1}]", "Real", "parameter", "tunable", "exact", "m/s2",
            float(model.gravity[k]), f"gravity acceleration, world {c}", "g", k)
    for i in range(nq):
        add(f"q0[{i + 1}]", "Real", "parameter", "fixed", "exact", unit(pos[i][3], 0),
            float(q_start[i]), f"initial {qdesc(i)}", "q0", i)
    for i in range(nv):
        add(f"qd0[{i + 1}]", "Real", "parameter", "fixed", "exact", unit(vel[i][3], 1),
            float(qd_start[i]), f"initial rate: {vdesc(i)}", "qd0", i)
    add("max_step", "Real", "parameter", "tunable", "exact", "s", float(max_step),
        "every integrator but dop853: largest internal step (a communication step is split into "
        "equal sub-steps no longer than this; with error_control, the longest sub-step)",
        "max_step", 0)
    add("rtol", "Real", "parameter", "tunable", "exact", "1", 1e-8,
        "dop853, and ros2 / ros34pw2 / rk4w with error_control: relative error tolerance",
        "rtol", 0)
    add("atol", "Real", "parameter", "tunable", "exact", "1", 1e-10,
        "dop853, and ros2 / ros34pw2 / rk4w with error_control: absolute error tolerance",
        "atol", 0)
    if model.constraints:
        add("stabilization[1]", "Real", "parameter", "tunable", "exact", "1/s", 0.0,
            "Baumgarte gain alpha on the constraint velocity error (e'' + 2 alpha e' + beta^2 e "
            "= 0; alpha = beta is critically damped)", "stabilization", 0)
        add("stabilization[2]", "Real", "parameter", "tunable", "exact", "1/s", 0.0,
            "Baumgarte gain beta on the constraint position error (e'' + 2 alpha e' + beta^2 e "
            "= 0)", "stabilization", 1)

    # ---------------- physical parameters (fixed; applied to the engine's model at initialization)
    for k, b in enumerate(model.bodies):
        bname = structured_name(b.name, "body")
        J = b.inertia
        values = (b.mass, *b.com, J[0, 0], J[1, 1], J[2, 2], J[0, 1], J[0, 2], J[1, 2])
        for i, ((suffix, u, what), x) in enumerate(zip(INERTIAL, values)):
            add(f"{bname}.{suffix}", "Real", "parameter", "fixed", "exact", u, float(x),
                f"{what} of body '{b.name}'", "inertial", 10 * k + i)
    damping, friction = model.joint_damping, model.joint_friction
    for i in range(nv):
        add(f"damping[{i + 1}]", "Real", "parameter", "fixed", "exact", vel[i][3][4],
            float(damping[i]), f"viscous damping (joint force -d qd) on dof {i + 1}: {vdesc(i)}",
            "damping", i)
    for i in range(nv):
        add(f"friction[{i + 1}]", "Real", "parameter", "fixed", "exact", vel[i][3][3],
            float(friction[i]), f"Coulomb friction (joint force -f tanh(qd / "
            f"{model.friction_velocity:g})) on dof {i + 1}: {vdesc(i)}", "friction", i)
    armature = model.joint_armature
    for i in range(nv):
        angular = vel[i][3] is ANGULAR
        add(f"armature[{i + 1}]", "Real", "parameter", "fixed", "exact",
            "kg.m2" if angular else "kg", float(armature[i]),
            f"rotor inertia (armature, M + diag(a)) on dof {i + 1}: {vdesc(i)}", "armature", i)
    lower, upper = model.joint_limits
    stops = bool(np.any(~np.isnan(lower) | ~np.isnan(upper)))
    if stops:
        k_stop, b_stop = model.stop_stiffness, model.stop_damping
        for i in range(nv):
            angular = vel[i][3] is ANGULAR
            add(f"stop_stiffness[{i + 1}]", "Real", "parameter", "tunable", "exact",
                "N.m/rad" if angular else "N/m", float(k_stop[i]),
                f"joint stop stiffness on dof {i + 1} beyond [{lower[i]:g}, {upper[i]:g}]: "
                f"{vdesc(i)}", "stop_stiffness", i)
        for i in range(nv):
            add(f"stop_damping[{i + 1}]", "Real", "parameter", "tunable", "exact", vel[i][3][4],
                float(b_stop[i]), f"joint stop damping on dof {i + 1}: {vdesc(i)}",
                "stop_damping", i)

    # ---------------- contact (tunable): the law's model-wide constants, each plane's offset
    if model.contact_spheres:
        law = model.contact_law
        for i, (key, (_, u, positive)) in enumerate(LAW.items()):
            add(f"contact.{key}", "Real", "parameter", "tunable", "exact", u, float(law[key]),
                f"contact law: {CONTACT_DOC[key]} (spheres and planes that do not override it; "
                f"{'> 0' if positive else '≥ 0'})", "contact_law", i)
        for j, pl in enumerate(model.contact_planes):
            add(f"{structured_name(pl.name, 'contact plane')}.offset", "Real", "parameter",
                "tunable", "exact", "m", float(pl.offset),
                f"offset o of contact plane '{pl.name}' along its normal {list(pl.normal)} "
                "(the plane is n.x = o)", "plane_offset", j)

    # ---------------- inputs
    for i in range(nv):
        kind = vel[i][3]
        what = "joint torque" if kind is ANGULAR else "joint force"
        add(f"tau[{i + 1}]", "Real", "input", "continuous", None, kind[3], 0.0,
            f"{what} on dof {i + 1}: {vdesc(i)}", "tau", i)
    for c in model.constraints:
        rows_ = CONSTRAINT_ROWS[c.kind]
        for k, r in enumerate(rows_):
            add(f"{cnames[c.name]}.u[{k + 1}]", "Real", "input", "continuous", None,
                "rad/s" if r.startswith("r") else "m/s", 0.0,
                f"prescribed relative velocity of {c.kind} constraint '{c.name}', row {r} "
                f"({c.frame_a} -> {c.frame_b})", f"u:{c.name}", k)
    for f in frames:
        for k, (r, u) in enumerate(zip(("Nx", "Ny", "Nz", "Fx", "Fy", "Fz"),
                                       ("N.m",) * 3 + ("N",) * 3)):
            kind = "moment" if u == "N.m" else "force"
            add(f"{fnames[f]}.f_ext[{k + 1}]", "Real", "input", "continuous", None, u, 0.0,
                f"external {kind} {r[1]} on frame '{f}' (frame axes, at the frame origin)",
                f"f_ext:{f}", k)

    # ---------------- outputs computed by every step
    for i in range(nq):
        add(f"q[{i + 1}]", "Real", "output", "continuous", "calculated", unit(pos[i][3], 0), None,
            qdesc(i), "q", i)
    for i in range(nv):
        add(f"qd[{i + 1}]", "Real", "output", "continuous", "calculated", unit(vel[i][3], 1), None,
            f"rate: {vdesc(i)}", "qd", i)
    qd_first = len(rows) - nv
    for i in range(nv):
        add(f"qdd[{i + 1}]", "Real", "output", "continuous", "calculated", unit(vel[i][3], 2), None,
            f"acceleration: {vdesc(i)}", "qdd", i, qd_first + i if states else None)
    for c in model.constraints:
        for k, r in enumerate(CONSTRAINT_ROWS[c.kind]):
            add(f"{cnames[c.name]}.f[{k + 1}]", "Real", "output", "continuous", "calculated",
                "N.m" if r.startswith("r") else "N", None,
                f"constraint force of {c.kind} constraint '{c.name}', row {r}", f"f:{c.name}", k)
        add(f"{cnames[c.name]}.err", "Real", "output", "continuous", "calculated", "1", None,
            f"position residual of {c.kind} constraint '{c.name}': norm of its position error "
            "(m and rad mixed; 0 when switched off)", f"err:{c.name}", 0)

    for i in range(nv if stops else 0):
        add(f"stop_tau[{i + 1}]", "Real", "output", "continuous", "calculated", vel[i][3][3], None,
            f"joint stop force on dof {i + 1} (part of the applied joint force): {vdesc(i)}",
            "stop_tau", i)
    add("integrator_used", "Real", "output", "discrete", "calculated", "1", None,
        "the integrator run (decided once, at initialization; integrator = auto picks rk4 or "
        "rk4w): 0 rk4, 1 euler, 2 dop853, 3 implicit, 4 ros2, 5 ros34pw2, 6 rk4w",
        "integrator_used", 0)
    # ---------------- contact outputs (of the state): force on each geometry, its penetration
    if model.contact_spheres:
        snames = [structured_name(sp.name, "contact geometry") for sp in model.contact_spheres]
        for s_, sp in enumerate(model.contact_spheres):
            for k, c in enumerate("xyz"):
                add(f"{snames[s_]}.force[{k + 1}]", "Real", "output", "continuous", "calculated",
                    "N", None, f"contact force on {sp.shape} '{sp.name}', world {c}", "contact_force",
                    3 * s_ + k)
        for s_, sp in enumerate(model.contact_spheres):
            add(f"{snames[s_]}.depth", "Real", "output", "continuous", "calculated", "m", None,
                f"deepest penetration of {sp.shape} '{sp.name}' (0 when free)", "contact_depth", s_)

    # ---------------- state derivatives (Model Exchange): der(q) = f(q) qd
    q_first = 0 if not states else next(v.value_reference for v in rows if v.group == "q")
    for i in range(nq if states else 0):
        add(f"der(q[{i + 1}])", "Real", "local", "continuous", "calculated",
            "1/s" if pos[i][3] is None else pos[i][3][1], None,
            f"rate of change of q[{i + 1}] ({qdesc(i)}): theta-dot = f(theta) beta", "qdot", i,
            q_first + i)

    # ---------------- joint stops' margins (Model Exchange: the first event indicators)
    margins = [(i, side, limit) for i in range(nv if states and stops else 0)
               for side, limit in (("lower", lower[i]), ("upper", upper[i])) if not np.isnan(limit)]
    for k, (i, side, limit) in enumerate(margins):
        what = "rad" if vel[i][3] is ANGULAR else "m"
        add(f"stop_margin[{k + 1}]", "Real", "local", "continuous", "calculated", what, None,
            f"{'q - lower' if side == 'lower' else 'upper - q'} of dof {i + 1} ({side} stop at "
            f"{limit:g} {what}; < 0: the stop acts; 1 while stops_enabled is false), an event "
            f"indicator: {vdesc(i)}", "stop_margin", k)

    # ---------------- contact pairs' penetrations (Model Exchange: the event indicators)
    if states and model.contact_spheres:
        names = contact_names(model)
        sp, pl = model.contact_spheres, model.contact_planes
        pairs = [(a.name, b.name) for a in sp for b in pl] + [
            tuple(n.split("/")) for n in names[len(sp) + len(pl):]]
        for p_, (a, b) in enumerate(pairs):
            add(f"contact.{structured_name(a, 'contact geometry')}.{structured_name(b, 'contact')}"
                ".depth", "Real", "local", "continuous", "calculated", "m", None,
                f"signed penetration of '{a}' into '{b}' (its deepest point; < 0: minus the exact "
                "gap): the event indicator of their touch-down and lift-off", "pair_depth", p_)

    # ---------------- outputs computed on demand
    add("energy", "Real", "output", "continuous", "calculated", "J", None,
        "total mechanical energy (kinetic + gravitational potential)", "energy", 0)
    for f in frames:
        for k, c in enumerate("xyz"):
            add(f"{fnames[f]}.position[{k + 1}]", "Real", "output", "continuous", "calculated", "m",
                None, f"origin of frame '{f}' in world, {c}", f"pose:{f}", k)
        for k, c in enumerate("wxyz"):
            add(f"{fnames[f]}.orientation[{k + 1}]", "Real", "output", "continuous", "calculated",
                "1", None, f"orientation of frame '{f}' in world, unit quaternion {c}",
                f"pose:{f}", 3 + k)

    # ---------------- Booleans and Strings
    for c in model.constraints:
        add(f"{cnames[c.name]}.active", "Boolean", "input", "discrete", None, None, bool(c.active),
            f"{c.kind} constraint '{c.name}' switched on ({c.frame_a} -> {c.frame_b})",
            f"active:{c.name}", 0)
    if stops:
        add("stops_enabled", "Boolean", "parameter", "tunable", "exact", None,
            bool(model.stops_enabled), "joint stops act (the builder's --no-stops sets false)",
            "stops_enabled", 0)
    add("error_control", "Boolean", "parameter", "tunable", "exact", None, False,
        "ros2, ros34pw2, rk4w: error-controlled sub-steps (no longer than max_step) that meet "
        "rtol/atol; false: "
        "fixed sub-steps of max_step (constant cost, real time)", "error_control", 0)
    add("integrator", "String", "parameter", "tunable", "exact", None, integrator,
        "integration method: auto (rk4w for a model with joint dissipation, stops or contact, "
        "else rk4; decided at initialization), rk4w (Rosenbrock W-method, third order, "
        "L-stable, four stages, linearly implicit in the dissipation, stops and contact, and "
        "fourth-order Runge-Kutta where none is engaged; fixed step or error_control), "
        "ros2 (Rosenbrock, second order, L-stable, two stages, as rk4w), "
        "ros34pw2 (Rosenbrock W-method, third order, L-stable, four stages, as rk4w), "
        "rk4 (fixed step), euler (semi-implicit, fixed step), implicit (linearly implicit Euler, "
        "first order, fixed step) or dop853 (adaptive, rtol/atol)", "integrator", 0)

    # bindings the generator needs for honest dependencies
    joints_of_q: list[set[int]] = [{i} for i in range(nq)]     # q[i] <- q0 it is built from
    for _, i in model.quaternion_slices():                       # normalized per quaternion
        for k in range(i, i + 4):
            joints_of_q[k] = set(range(i, i + 4))
    frame_q = {}
    for f in frames:
        k = model.frame_placement(f)[0]
        qs = []
        while k >= 0:
            b = model.bodies[k]
            qs += range(b.q_index, b.q_index + b.nq)    # its joint's and its modal coordinates
            k = b.parent
        frame_q[f] = sorted(qs)
    return VariableTable(rows, model, frames, joints_of_q, frame_q,
                         _rate_dependencies(model) if states else None)


def event_indicator_count(model: Model) -> int:
    """Model Exchange event indicators: one per joint stop limit (lower, upper) of each dof, in dof
    order, lower first (model_exchange.c fmu_me_event_indicators): q - lower, upper - q; then one
    per contact pair, its signed penetration (fmu_contact.c)."""
    lower, upper = model.joint_limits
    pairs = len(model.contact_spheres) * len(model.contact_planes) + len(sphere_pairs(model))
    return int((~np.isnan(lower)).sum() + (~np.isnan(upper)).sum()) + pairs


def _rate_dependencies(model: Model) -> list[tuple[list[int], list[int]]]:
    """Per coordinate i: the coordinates and velocities of its joint that θ̇_i = (f(θ)β)_i
    involves (joints.c joint_rate)."""
    out: list[tuple[list[int], list[int]]] = [([], [])] * model.nq
    for b in model.bodies:
        j, qi, vi = b.joint, b.q_index, b.v_index
        quat = list(range(qi, qi + 4))
        if j.code == J.SPHERICAL:
            rows = [(quat, list(range(vi, vi + 3)))] * 4
        elif j.code == J.FREE:
            rows = [(quat, list(range(vi, vi + 3)))] * 4 + [(quat, list(range(vi + 3, vi + 6)))] * 3
        elif j.code == J.PLANAR:
            rows = [([], [vi]), ([qi], [vi + 1, vi + 2]), ([qi], [vi + 1, vi + 2])]
        else:
            rows = [([], [vi + k]) for k in range(j.nq)]
        rows += [([], [vi + j.nv + k]) for k in range(b.nmodes)]    # eta-dot = modal velocity
        out[qi:qi + len(rows)] = rows
    return out


# FMI log categories of the slave (written to LogCategories; the slave logs under these names).
LOG_CATEGORIES = {
    "logStatusWarning": "Messages with status fmi2Warning (e.g. a communication point that does not "
                        "match the FMU's time).",
    "logStatusDiscard": "Messages with status fmi2Discard: a step that failed or was refused; the "
                        "state is unchanged.",
    "logStatusError": "Messages with status fmi2Error: rejected inputs/parameters (value not applied) "
                      "and failed calls.",
    "logStatusFatal": "Messages with status fmi2Fatal.",
    "logAll": "All messages.",
    "logDebug": "Python tracebacks of failed calls and diagnostics (engine location, timings).",
}


# ---------------------------------------------------------------- the controller's table
class ControllerTable(VariableTable):
    """The variables of the computed-torque controller FMU (``soa-build-fmu --controller``): no
    states (the controller is a static map of its inputs and, with its trajectory, of time), its
    outputs fed through from every input."""

    def __init__(self, variables: list[Variable], model: Model, me: bool):
        super().__init__(variables, model, [], [], {}, [] if me else None)
        self.n_event_indicators = 0

    def state_vrs(self) -> list[int]:
        return []

    def derivative_dependencies(self) -> dict[int, list[int] | None]:
        return {}

    def output_dependencies(self) -> dict[int, list[int] | None]:
        """tau: every input (q, qd and the reference: tau = ID(q, qd, qdd_ref + Kp e + Kd e-dot)
        is direct feedthrough); q_des: the input q_ref (it is q_ref unless the trajectory is on)."""
        inputs = [v.value_reference for v in self.variables if v.causality == "input"]
        return {**{vr: inputs for vr in self.vrs("tau")},
                **{vr: [self.vrs("q_ref")[i]] for i, vr in enumerate(self.vrs("q_des"))}}

    def initial_dependencies(self) -> dict[int, list[int] | None]:
        return {vr: ALL for vr in self.vrs("tau") + self.vrs("q_des")}


def controller_problem(model: Model) -> str | None:
    """Why the computed-torque controller cannot be built for ``model`` (None: it can): it needs
    coordinates that are the velocities (nq = nv, every dof actuated by tau), a tree, rigid
    links."""
    for b in model.bodies:
        if b.joint.nq != b.joint.nv:
            return (f"joint {b.joint_name!r} is {b.joint.type_name}: its coordinates are not its "
                    "velocities (a quaternion), so the tracking error q_ref - q is not defined; "
                    "the controller needs revolute, prismatic, planar or general joints")
        if b.nmodes:
            return (f"body {b.name!r} is flexible: its modal coordinates are not actuated; the "
                    "controller needs rigid bodies")
    if model.constraints:
        return (f"the model has closure constraints ({model.constraints[0].name!r}, ...): the "
                "controller inverts the tree's dynamics and needs a tree")
    mimics = model.mimics
    if mimics:
        return (f"joint {mimics[0].joint!r} mimics {mimics[0].driver!r}: the controller inverts "
                "the tree's dynamics without couplings (a mimic joint is not actuated on its own)")
    return None


def build_controller_table(model: Model, states: bool = False) -> ControllerTable:
    """The computed-torque controller's variables (docs/systems.md): parameters (gravity, the
    model's physical parameters, gains Kp, Kd, the trajectory q_from -> q_to), inputs q, qd (the
    measured state) and q_ref, qd_ref, qdd_ref, outputs tau and q_des, Booleans ff_dissipation,
    trajectory, sampled.  ``states``: the table of an FMU with Model Exchange (no states)."""
    problem = controller_problem(model)
    if problem:
        raise TableError(f"--controller: {problem}")
    plant = build_table(model)
    rows: list[Variable] = []

    def add(name, type_, causality, variability, initial, unit, start, description, group, index):
        rows.append(Variable(name, len(rows), type_, causality, variability, initial, unit, start,
                             description, group, index))

    def copy(group: str) -> None:        # the plant's rows: the same names, units, meaning
        for v in plant.variables:
            if v.group == group:
                add(v.name, v.type, v.causality, v.variability, v.initial, v.unit, v.start,
                    v.description, v.group, v.index)

    pos, vel = coordinate_labels(model)
    nv = model.nv
    q0 = model.initial_q if model.initial_q is not None else model.neutral_configuration()

    def qdesc(i):
        return describe_coordinate(pos, i)

    def vdesc(i):
        return describe_coordinate(vel, i)

    def unit(i, k):
        return vel[i][3][k]

    for g in ("g", "inertial", "damping", "friction", "armature"):
        copy(g)
    for i in range(nv):
        add(f"Kp[{i + 1}]", "Real", "parameter", "tunable", "exact", "1/s2", 100.0,
            f"position gain of dof {i + 1} (qdd_cmd = qdd_ref + Kp e + Kd e-dot): {vdesc(i)}",
            "Kp", i)
    for i in range(nv):
        add(f"Kd[{i + 1}]", "Real", "parameter", "tunable", "exact", "1/s", 20.0,
            f"velocity gain of dof {i + 1}: {vdesc(i)}", "Kd", i)
    for i in range(nv):
        add(f"q_from[{i + 1}]", "Real", "parameter", "tunable", "exact", unit(i, 0), float(q0[i]),
            f"trajectory: start of the quintic move, {qdesc(i)}", "q_from", i)
    for i in range(nv):
        add(f"q_to[{i + 1}]", "Real", "parameter", "tunable", "exact", unit(i, 0), float(q0[i]),
            f"trajectory: end of the quintic move, {qdesc(i)}", "q_to", i)
    add("move_start", "Real", "parameter", "tunable", "exact", "s", 0.0,
        "trajectory: time the quintic move starts (q_from before it)", "move_start", 0)
    add("move_duration", "Real", "parameter", "tunable", "exact", "s", 1.0,
        "trajectory: duration of the quintic move (> 0; q_to after it)", "move_duration", 0)
    for group, what, k in (("q", "measured {}", 0), ("qd", "measured rate: {}", 1),
                           ("q_ref", "reference {}", 0), ("qd_ref", "reference rate: {}", 1),
                           ("qdd_ref", "reference acceleration: {}", 2)):
        for i in range(nv):
            add(f"{group}[{i + 1}]", "Real", "input", "continuous", None, unit(i, k), 0.0,
                what.format(qdesc(i) if k == 0 else vdesc(i)), group, i)
    for i in range(nv):
        kind = vel[i][3]
        add(f"tau[{i + 1}]", "Real", "output", "continuous", "calculated", kind[3], None,
            f"computed-torque {'joint torque' if kind is ANGULAR else 'joint force'} on dof "
            f"{i + 1}: {vdesc(i)}", "tau", i)
    for i in range(nv):
        add(f"q_des[{i + 1}]", "Real", "output", "continuous", "calculated", unit(i, 0), None,
            f"the reference position in effect (q_ref, or the trajectory's): {qdesc(i)}",
            "q_des", i)
    add("ff_dissipation", "Boolean", "parameter", "tunable", "exact", None, True,
        "add the model's joint damping and Coulomb friction along the reference rate (d qd_ref + "
        "f_c tanh(qd_ref / v_s)) to tau",
        "ff_dissipation", 0)
    add("trajectory", "Boolean", "parameter", "tunable", "exact", None, False,
        "the reference is the quintic move q_from -> q_to over [move_start, move_start + "
        "move_duration] (the inputs q_ref, qd_ref, qdd_ref are then unused)", "trajectory", 0)
    add("sampled", "Boolean", "parameter", "fixed", "exact", None, False,
        "Co-Simulation: tau is computed at each doStep from the inputs at the step's start and "
        "held until the next (one sample of delay, 0 before the first step), so that every "
        "master's ordering gives the same loop; false: tau follows the inputs at once",
        "sampled", 0)
    return ControllerTable(rows, model, states)
