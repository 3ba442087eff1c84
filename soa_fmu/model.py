"""Topology and constants of a mechanism (SPEC E3; seed 000 §2.1–2.2, eqs. 2.6–2.11).

A :class:`Model` is a tree of bodies hanging from ``world``.  Bodies are numbered in the order they
are added, parents before children, so ``parent[k] < k``: an *outward* (base-to-tip, φ*) sweep is a
loop k = 0 … n−1 and an *inward* (tip-to-base, φ) sweep is k = n−1 … 0 accumulating into
``parent[k]``.  The papers number links from the tip (1) to the base (n); with that relabelling the
connectivity map ι(k) of seed 000 (2.7) is ``parent``.

``Model`` is built in Python (readable, checked with located errors); :attr:`Model.core` packs it
into the C engine's ``soa_model`` (constants, immutable) and :meth:`Model.create_data` makes a
``soa_data`` (every per-call array, allocated once and reused): the Model / Data split of
Pinocchio, with both buffer tables declared once in ``soa_fmu/core/soa.h``.  The Python API
functions use the model's own default Data unless they are handed another (``data=``): one Data
per thread (the tree kernels release the GIL; docs/engine.md, "Threads").
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from types import SimpleNamespace

import numpy as np

from . import _core
from . import contact as C
from . import joints as J
from .flexible import FlexibleError, Reduced

WORLD = "world"
FRICTION_VELOCITY = 0.01     # default regularization velocity v_s of joint friction (rad/s or m/s)
CONSTRAINT_KINDS = {"weld": 6, "ball": 3, "hinge": 5, "soft_finger": 4}


class ModelError(ValueError):
    """A model that cannot be built: names the offending body, joint, frame, file or line."""


@dataclass
class Body:
    name: str
    parent: int                  # −1 for world
    joint: J.Joint
    joint_name: str
    rotation: np.ndarray         # joint frame in parent frame (x_parent = R x_joint)
    translation: np.ndarray      # joint origin in parent frame
    mass: float
    com: np.ndarray              # centre of mass in the body frame
    inertia: np.ndarray          # 3×3 rotational inertia about the centre of mass, body axes
    q_index: int = 0
    v_index: int = 0
    limits: dict = field(default_factory=dict)   # lower, upper, velocity, effort, damping, friction,
    #                                             armature, stop_stiffness, stop_damping
    flexible: Reduced | None = None   # a flexible link (seed 000 §4): its modes follow the joint's dofs
    node: int | None = None           # the node of the flexible parent carrying the joint frame
    frame_only: bool = False          # the massless carrier of a frame on a node (add_frame(node=))

    @property
    def nmodes(self) -> int:
        """Modal coordinates η of the body (0: rigid), in q and qd right after its joint's."""
        return 0 if self.flexible is None else self.flexible.nmodes

    @property
    def nq(self) -> int:
        """Configuration coordinates of the body: its joint's, then its modes."""
        return self.joint.nq + self.nmodes

    @property
    def nv(self) -> int:
        return self.joint.nv + self.nmodes

    def coordinate_names(self, velocity: bool = False) -> list[str]:
        """``joint`` / ``joint[k]`` for the joint's coordinates, then ``<body>.eta[k]``."""
        n = self.joint.nv if velocity else self.joint.nq
        return _coord_names(self.joint_name, n) + [f"{self.name}.eta[{k + 1}]"
                                                   for k in range(self.nmodes)]


@dataclass
class Frame:
    """A named frame fixed on a body (tool point, grasp point, sensor)."""

    name: str
    body: int
    rotation: np.ndarray
    translation: np.ndarray
    node: int | None = None      # on this node of a flexible body: ``body`` is its massless carrier


@dataclass
class Constraint:
    """A loop closure or grasp between two frames (seed 000 §2.3; seed 003 Part II, App. A).

    kind: ``weld`` (rigid grasp, 6), ``ball`` (point contact / spherical joint, 3), ``hinge``
    (1-dof rotation about ``axis`` of frame_a allowed, 5), ``soft_finger`` (rotation about the two
    tangential axes allowed: translation and torsion about ``axis`` constrained, 4).
    """

    name: str
    kind: str
    frame_a: str
    frame_b: str
    axis: np.ndarray = field(default_factory=lambda: np.array([0.0, 0.0, 1.0]))
    active: bool = True

    @property
    def size(self) -> int:
        return CONSTRAINT_KINDS[self.kind]


@dataclass
class Mimic:
    """A URDF ``<mimic>`` coupling of two 1-dof joints, q_joint = multiplier · q_driver + offset,
    enforced as a holonomic constraint by the simulator and the FMUs (core/mimic.c)."""

    joint: str
    driver: str
    multiplier: float = 1.0
    offset: float = 0.0


def _vec3(x, what: str) -> np.ndarray:
    a = np.asarray(x, dtype=float)
    if a.shape != (3,) or not np.all(np.isfinite(a)):
        raise ModelError(f"{what}: expected 3 finite numbers, got {x!r}")
    return a


def _rotation(R, what: str) -> np.ndarray:
    R = np.eye(3) if R is None else np.asarray(R, dtype=float)
    if R.shape != (3, 3) or not np.all(np.isfinite(R)):
        raise ModelError(f"{what}: rotation must be a finite 3×3 matrix")
    if np.abs(R @ R.T - np.eye(3)).max() > 1e-6 or np.linalg.det(R) < 0:
        raise ModelError(f"{what}: rotation matrix is not orthonormal with det +1")
    return R


def check_inertia(mass: float, inertia: np.ndarray, what: str, physical: bool = True) -> None:
    """Validity: m ≥ 0, J finite and symmetric; and when ``physical``, J positive semi-definite
    with principal moments obeying the triangle inequality."""
    if not np.isfinite(mass) or mass < 0:
        raise ModelError(f"{what}: mass must be finite and ≥ 0, got {mass}")
    if inertia.shape != (3, 3) or not np.all(np.isfinite(inertia)):
        raise ModelError(f"{what}: inertia must be a finite 3×3 matrix")
    if np.abs(inertia - inertia.T).max() > 1e-9 * max(1.0, np.abs(inertia).max()):
        raise ModelError(f"{what}: inertia tensor is not symmetric")
    if not physical:
        return
    ev = np.linalg.eigvalsh(inertia)
    tol = 1e-12 * max(1.0, ev.max())
    if ev.min() < -tol:
        raise ModelError(f"{what}: inertia tensor is not positive semi-definite (eigenvalues {ev})")
    a, b, c = np.sort(ev)
    if a + b < c - 1e-9 * max(1.0, c):
        raise ModelError(f"{what}: principal inertias {ev} violate the triangle inequality")


class Model:
    """A tree of rigid bodies, fixed or mobile base (SPEC §5)."""

    def __init__(self, name: str = "model", gravity=(0.0, 0.0, -9.81)):
        self.name = name
        self.bodies: list[Body] = []
        self.frames: dict[str, Frame] = {}
        self.constraints: list[Constraint] = []
        self.mimics: list[Mimic] = []      # add_mimic: q_joint = k q_driver + c (core/mimic.c)
        self.initial_q: np.ndarray | None = None
        self.initial_qd: np.ndarray | None = None
        self.source: str | None = None
        self.timestep: float | None = None    # the file's time step (MJCF): the FMU's default step
        self._gravity = _vec3(gravity, "gravity")
        self._nq = 0
        self._nv = 0
        # ---- joint dissipation applied by the simulator (core/dissipation.c), per velocity dof
        self._damping = np.zeros(0)
        self._friction = np.zeros(0)
        self._friction_velocity = FRICTION_VELOCITY
        # ---- rotor inertia (M + diag(a)) and joint stops (core/dissipation.c), per velocity dof;
        # stop limits NaN where none, stop gains NaN where the model derives them
        self._armature = np.zeros(0)
        self._stop_lower = np.zeros(0)
        self._stop_upper = np.zeros(0)
        self._stop_k = np.zeros(0)
        self._stop_b = np.zeros(0)
        self._stops_enabled = True
        # ---- contact (core/contact.c, soa_fmu/contact.py)
        self.contact_geoms: list[C.ContactGeom] = []
        self.contact_planes: list[C.ContactPlane] = []
        self.contact_pairs: list[C.ContactPair] = []
        self._contact_law = {k: v[0] for k, v in C.LAW.items()}
        self._core: _core.Model | None = None        # built on first use, see :attr:`core`
        self._data: _core.Data | None = None         # the default workspace
        self._arrays: SimpleNamespace | None = None
        self._workspace: SimpleNamespace | None = None

    # ------------------------------------------------------------------ building
    def add_body(self, name: str, parent: str = WORLD, joint: J.Joint | None = None, *,
                 joint_name: str | None = None, rotation=None, translation=(0.0, 0.0, 0.0),
                 mass: float = 0.0, com=(0.0, 0.0, 0.0), inertia=None,
                 limits: dict | None = None, physical: bool = True,
                 flexible: Reduced | None = None, node: int | None = None) -> int:
        """Add body ``name`` attached to ``parent`` by ``joint`` placed at (rotation, translation)
        in the parent frame; (mass, com, inertia about the com) in the body frame.  Returns its
        index.  Parents must be added before their children.

        ``flexible`` (a :class:`soa_fmu.flexible.Reduced`, from ``flexible.reduce``) makes the body
        a flexible link: its mass properties come from it (mass, com, inertia must not be given),
        and its modal coordinates ``<name>.eta[k]`` follow the joint's in q and qd.  On a flexible
        parent the joint frame moves with the parent's node ``node`` (default: the node at the
        joint's origin, if one is there; none: the parent's reference frame).

        ``physical=False`` accepts an inertia tensor that is not positive semi-definite or breaks
        the triangle inequality (as some published robot files do); it must still be finite and
        symmetric, with m ≥ 0."""
        if not isinstance(name, str) or not name:
            raise ModelError(f"body name must be a non-empty string, got {name!r}")
        if name == WORLD or name in self._body_names():
            raise ModelError(f"duplicate body name {name!r}")
        if name in self.frames:
            raise ModelError(f"body name {name!r} is already a frame name")
        joint = J.Fixed() if joint is None else joint
        if not isinstance(joint, J.Joint):
            raise ModelError(f"body {name!r}: joint must be a soa_fmu joint, got {joint!r}")
        jname = joint_name or name
        if jname in {b.joint_name for b in self.bodies}:
            raise ModelError(f"duplicate joint name {jname!r}")
        p = -1 if parent == WORLD else self.body_index(parent)
        translation = _vec3(translation, f"joint {jname!r} origin")
        node = self._attachment_node(name, p, translation, node)
        if flexible is not None:
            if not isinstance(flexible, Reduced):
                raise ModelError(f"body {name!r}: flexible must be a soa_fmu.flexible.Reduced, got "
                                 f"{type(flexible).__name__}")
            if mass != 0.0 or inertia is not None or np.any(np.asarray(com, dtype=float) != 0.0):
                raise ModelError(f"body {name!r}: a flexible body's mass, com and inertia come from "
                                 "its finite-element model; do not give them")
            mass, com, inertia = flexible.mass, flexible.com, flexible.inertia
        inertia = np.zeros((3, 3)) if inertia is None else np.asarray(inertia, dtype=float)
        check_inertia(float(mass), inertia, f"body {name!r}", physical)
        inertia = 0.5 * (inertia + inertia.T)   # exactly symmetric, as the FMU's six parameters
        body = Body(name, p, joint, jname, _rotation(rotation, f"joint {jname!r}"),
                    translation, float(mass),
                    _vec3(com, f"body {name!r} centre of mass"), inertia, limits=dict(limits or {}),
                    flexible=flexible, node=node)
        body.q_index = self._nq
        body.v_index = self._nv
        dissipation = {}
        for key in ("damping", "friction"):      # URDF <dynamics>, native limits; 0 where absent
            x = body.limits.get(key, 0.0)
            if not (isinstance(x, (int, float)) and np.isfinite(x) and x >= 0):
                raise ModelError(f"joint {jname!r}: {key} must be finite and ≥ 0, got {x!r}")
            dissipation[key] = np.concatenate((np.full(joint.nv, float(x)), np.zeros(body.nmodes)))
        joint_keys = self._joint_keys(body, jname)
        self.bodies.append(body)
        for key, x in joint_keys.items():
            setattr(self, key, np.concatenate((getattr(self, key), x)))
        self._damping = np.concatenate((self._damping, dissipation["damping"]))
        self._friction = np.concatenate((self._friction, dissipation["friction"]))
        self._nq += body.nq
        self._nv += body.nv
        self._invalidate()
        return len(self.bodies) - 1

    def _joint_keys(self, body: "Body", jname: str) -> dict:
        """The armature and stop entries of a new body's velocity dofs from its joint's limits
        (armature ≥ 0; lower/upper of a revolute or prismatic joint, not a continuous one, become
        its stops; stop_stiffness/stop_damping ≥ 0 override the derived defaults)."""
        lim, nv, nm = body.limits, body.joint.nv, body.nmodes

        def num(key, default):
            if key not in lim:
                return default
            x = lim[key]
            if not (isinstance(x, (int, float)) and np.isfinite(x) and x >= 0):
                raise ModelError(f"joint {jname!r}: {key} must be finite and ≥ 0, got {x!r}")
            return float(x)

        out = {"_armature": np.concatenate((np.full(nv, num("armature", 0.0)), np.zeros(nm)))}
        stoppable = body.joint.code in (J.REVOLUTE, J.PRISMATIC) and not lim.get("continuous")
        lo = hi = math.nan
        if stoppable:                  # (an infinite limit is no stop on that side)
            for key in ("lower", "upper"):
                x = lim.get(key)
                if x is not None and not isinstance(x, (int, float)) or x != x:
                    raise ModelError(f"joint {jname!r}: limit {key} must be a number, got {x!r}")
            lo, hi = (float(lim.get(k, math.nan)) for k in ("lower", "upper"))
            lo, hi = (x if math.isfinite(x) else math.nan for x in (lo, hi))
            if lo > hi:
                raise ModelError(f"joint {jname!r}: lower limit {lo} is above upper limit {hi}")
        nan = np.full(nm, math.nan)
        out["_stop_lower"] = np.concatenate((np.full(nv, lo), nan))
        out["_stop_upper"] = np.concatenate((np.full(nv, hi), nan))
        out["_stop_k"] = np.concatenate((np.full(nv, num("stop_stiffness", math.nan)), nan))
        out["_stop_b"] = np.concatenate((np.full(nv, num("stop_damping", math.nan)), nan))
        return out

    def _attachment_node(self, name: str, p: int, origin: np.ndarray, node) -> int | None:
        """The node of flexible parent p carrying body ``name``'s joint frame (None: rigid)."""
        fl = self.bodies[p].flexible if p >= 0 else None
        if fl is None:
            if node is not None:
                raise ModelError(f"body {name!r}: node {node} given but its parent is not flexible")
            return None
        if node is None:
            hit = np.flatnonzero(np.linalg.norm(fl.nodes - origin, axis=1) <= 1e-9 * (1 + np.abs(fl.nodes).max()))
            return int(hit[0]) if hit.size else None
        if not isinstance(node, (int, np.integer)) or isinstance(node, bool) or not 0 <= node < len(fl.nodes):
            raise ModelError(f"body {name!r}: node must be an integer in 0..{len(fl.nodes) - 1} of "
                             f"the flexible parent {self.bodies[p].name!r}, got {node!r}")
        return int(node)

    @property
    def max_modes(self) -> int:
        """The most modal coordinates of one body (0: every body rigid)."""
        return max((b.nmodes for b in self.bodies), default=0)

    @property
    def flexible(self) -> bool:
        """True when some body is flexible (seed 000 §4)."""
        return self.max_modes > 0

    def add_frame(self, name: str, body: str, rotation=None, translation=(0.0, 0.0, 0.0),
                  node: int | None = None) -> Frame:
        """Name a frame fixed on ``body`` (placement in the body frame); ``body="world"`` gives a
        frame fixed in world (an anchor for loop closures).

        ``node``: the frame rides on that node of the flexible ``body`` (placement relative to the
        node's undeformed location): its pose, velocity, Jacobian and external force include the
        deformation.  It is carried by a massless body ``name`` welded to the node."""
        if name in self.frames or name in self._body_names() or name == WORLD:
            raise ModelError(f"duplicate frame name {name!r}")
        if node is not None:
            k = self.body_index(body)
            fl = self.bodies[k].flexible
            if fl is None:
                raise ModelError(f"frame {name!r}: node {node} given but body {body!r} is not flexible")
            if not isinstance(node, (int, np.integer)) or isinstance(node, bool) or not 0 <= node < len(fl.nodes):
                raise ModelError(f"frame {name!r}: node must be an integer in 0..{len(fl.nodes) - 1} "
                                 f"of body {body!r}, got {node!r}")
            R = _rotation(rotation, f"frame {name!r}")
            t = fl.nodes[int(node)] + _vec3(translation, f"frame {name!r} origin")
            self.add_body(name, body, J.Fixed(), joint_name=f"{name}.weld", rotation=R,
                          translation=t, node=int(node))
            self.bodies[-1].frame_only = True
            fr = Frame(name, len(self.bodies) - 1, np.eye(3), np.zeros(3), int(node))
            self.frames[name] = fr
            return fr
        fr = Frame(name, -1 if body == WORLD else self.body_index(body),
                   _rotation(rotation, f"frame {name!r}"), _vec3(translation, f"frame {name!r} origin"))
        self.frames[name] = fr
        return fr

    def add_constraint(self, name: str, kind: str, frame_a: str, frame_b: str, axis=(0.0, 0.0, 1.0),
                       active: bool = True) -> Constraint:
        """Declare a loop closure / grasp between two frames (or bodies)."""
        if kind not in CONSTRAINT_KINDS:
            raise ModelError(f"constraint {name!r}: unknown kind {kind!r} "
                             f"(expected one of {', '.join(CONSTRAINT_KINDS)})")
        if name in {c.name for c in self.constraints}:
            raise ModelError(f"duplicate constraint name {name!r}")
        for fr in (frame_a, frame_b):
            self.frame_placement(fr)   # raises if unknown
        try:
            unit_axis = J._unit(axis, f"constraint {name!r}")
        except ValueError as e:
            raise ModelError(str(e)) from None
        c = Constraint(name, kind, frame_a, frame_b, unit_axis, active)
        self.constraints.append(c)
        self._invalidate()                         # the engine's model holds the constraints
        return c

    def add_mimic(self, joint: str, driver: str, multiplier: float = 1.0,
                  offset: float = 0.0) -> Mimic:
        """Couple the 1-dof (revolute or prismatic) ``joint`` to ``driver``: q_joint =
        multiplier · q_driver + offset (a URDF ``<mimic>``), enforced by the Simulator and the
        FMUs as a holonomic constraint (``core/mimic.c``); its torque acts on the driver.  A driver
        that itself mimics a third joint is resolved to that joint (the couplings compose)."""
        by_name = {b.joint_name: b for b in self.bodies}
        for role, name in (("joint", joint), ("driver", driver)):
            b = by_name.get(name)
            if b is None:
                raise ModelError(f"mimic joint {joint!r}: unknown {role} {name!r}")
            if b.joint.code not in (J.REVOLUTE, J.PRISMATIC):
                raise ModelError(f"mimic joint {joint!r}: {role} {name!r} is a {b.joint.type_name} "
                                 "joint; a mimic couples two revolute or prismatic joints")
        k, c = float(multiplier), float(offset)
        if not (math.isfinite(k) and math.isfinite(c)):
            raise ModelError(f"mimic joint {joint!r}: multiplier and offset must be finite, got "
                             f"{multiplier!r}, {offset!r}")
        if joint == driver or any(m.joint == joint for m in self.mimics):
            why = "mimics itself" if joint == driver else "already mimics a joint"
            raise ModelError(f"mimic joint {joint!r}: it {why}")
        first = next((m for m in self.mimics if m.joint == driver), None)
        if first is not None:                  # q_d = k1 q_j1 + c1: compose
            if first.driver == joint:
                raise ModelError(f"mimic joints {joint!r} and {driver!r} mimic each other")
            driver, k, c = first.driver, k * first.multiplier, k * first.offset + c
        mimic = Mimic(joint, driver, k, c)
        for i, m in enumerate(self.mimics):    # those mimicking this joint follow its driver
            if m.driver == joint:
                self.mimics[i] = Mimic(m.joint, driver, m.multiplier * k,
                                       m.multiplier * c + m.offset)
        self.mimics.append(mimic)
        self._invalidate()
        return mimic

    # ------------------------------------------------------------------ contact (soa_fmu/contact.py)
    @property
    def contact_spheres(self) -> list[C.ContactGeom]:
        """Every contact geometry (the name from when they were all spheres): ``contact_geoms``."""
        return self.contact_geoms

    def add_contact_sphere(self, name: str, body: str, center=(0.0, 0.0, 0.0), radius: float = 0.0,
                           *, collide: bool = True, **law) -> C.ContactGeom:
        """A contact sphere of ``radius`` (m; 0: a point) centred at ``center`` in the frame of
        ``body``.  ``law``: overrides of the model's constants (stiffness, exponent, dissipation,
        friction, stiction_velocity); ``collide=False`` keeps it out of geometry–geometry contact."""
        return self.add_contact_geom(name, body, "sphere", center=center, radius=radius,
                                     collide=collide, **law)

    def add_contact_geom(self, name: str, body: str, shape: str, *, center=(0.0, 0.0, 0.0),
                         rotation=None, radius: float = 0.0, half_length: float = 0.0,
                         half_extents=(0.0, 0.0, 0.0), vertices=None, mesh: str | None = None,
                         collide: bool = True, exclude=(), radii=(0.0, 0.0, 0.0),
                         **law) -> C.ContactGeom:
        """A contact geometry on ``body``: its origin ``center`` and axes ``rotation`` (3×3) in the
        body frame; ``shape`` one of sphere (``radius``), capsule and cylinder (``radius``,
        ``half_length`` along its z), box (``half_extents``), ellipsoid (``radii``: its semi-axes
        along its x, y, z), mesh (``vertices``: any points, of which the convex hull is kept, at
        most 4096 vertices — contact.hull_vertices; ``mesh``: the file they came from).  ``collide=False`` keeps it out of geometry–geometry
        contact, ``exclude`` names geometries it never meets; ``law``: overrides of the model's
        constants (stiffness, exponent, dissipation, friction, stiction_velocity)."""
        self._new_contact_name(name)
        what = f"contact {shape if isinstance(shape, str) else 'geometry'} {name!r}"
        if shape not in C.SHAPES:
            raise ModelError(f"contact geometry {name!r}: unknown shape {shape!r} (expected one of "
                             f"{', '.join(C.SHAPES)})")
        k = self.body_index(body)

        def length(x, key: str) -> float:
            r = float(x) if isinstance(x, (int, float, np.integer, np.floating)) else np.nan
            if not (np.isfinite(r) and r >= 0) or isinstance(x, bool):
                raise ModelError(f"{what}: {key} must be finite and ≥ 0, got {x!r}")
            return r

        r, hl = length(radius, "radius"), length(half_length, "half_length")
        he = _vec3(half_extents, f"{what} half_extents")
        if shape == "box" and not (he >= 0).all():
            raise ModelError(f"{what}: half_extents must be ≥ 0, got {half_extents!r}")
        if shape in ("capsule", "cylinder") and r == 0:
            raise ModelError(f"{what}: radius must be > 0")
        ra = _vec3(radii, f"{what} radii")
        if shape == "ellipsoid" and not (ra > 0).all():
            raise ModelError(f"{what}: radii must be > 0, got {radii!r}")
        R = np.eye(3) if rotation is None else _rotation(rotation, f"{what} rotation")
        try:
            v, edges = (None, None) if shape != "mesh" else C.hull_vertices(
                vertices if vertices is not None else np.zeros((0, 3)),
                what + (f" ({mesh})" if mesh is not None else ""))
            g = C.ContactGeom(name, k, _vec3(center, f"{what} centre"),
                              r if shape not in ("box", "ellipsoid") else 0.0,
                              C.check_law(law, what), bool(collide), shape, R, hl, he, v,
                              None if mesh is None else str(mesh), frozenset(exclude), ra, edges)
        except C.ContactError as e:
            raise ModelError(str(e)) from None
        self.contact_geoms.append(g)
        self._invalidate()
        return g

    def add_contact_plane(self, name: str, point=(0.0, 0.0, 0.0), normal=(0.0, 0.0, 1.0),
                          **law) -> C.ContactPlane:
        """A contact plane through ``point`` (world) with ``normal`` pointing out of the solid
        (normalized); the solid is the half-space behind it.  ``law``: overrides of the model's
        constants."""
        self._new_contact_name(name)
        what = f"contact plane {name!r}"
        n = _vec3(normal, f"{what} normal")
        if np.linalg.norm(n) < 1e-12:
            raise ModelError(f"{what}: normal must not be zero")
        n = n / np.linalg.norm(n)
        try:
            pl = C.ContactPlane(name, n, float(n @ _vec3(point, f"{what} point")),
                                C.check_law(law, what))
        except C.ContactError as e:
            raise ModelError(str(e)) from None
        self.contact_planes.append(pl)
        self._invalidate()
        return pl

    def add_contact_pair(self, geom: str, other: str, *, explicit: bool = False,
                         **law) -> C.ContactPair:
        """The constants of the pair geometry ``geom`` – geometry or plane ``other`` (names),
        which win over both elements' (``law``: stiffness, exponent, dissipation, friction,
        stiction_velocity); ``explicit=True``: the pair may touch even where ``collide`` or
        ``exclude`` would keep it apart (MuJoCo's ``<pair>``).  Declaring a pair again updates
        it."""
        names = {g.name: g for g in self.contact_geoms}
        planes = {p.name for p in self.contact_planes}
        what = f"contact pair {geom!r}/{other!r}"
        if geom not in names:
            raise ModelError(f"{what}: no contact geometry {geom!r}")
        if other not in names and other not in planes:
            raise ModelError(f"{what}: no contact geometry or plane {other!r}")
        if other in names and names[other].body == names[geom].body:
            raise ModelError(f"{what}: both geometries are on body "
                             f"{self.bodies[names[geom].body].name!r}")
        try:
            law = C.check_law(law, what)
        except C.ContactError as e:
            raise ModelError(str(e)) from None
        pr = next((p for p in self.contact_pairs if {p.geom, p.other} == {geom, other}), None)
        if pr is None:
            pr = C.ContactPair(geom, other, law, bool(explicit))
            self.contact_pairs.append(pr)
        else:
            pr.law, pr.explicit = pr.law | law, pr.explicit or bool(explicit)
        self._invalidate()
        return pr

    def _new_contact_name(self, name) -> None:
        if not isinstance(name, str) or not name or "/" in name:
            raise ModelError(f"contact name must be a non-empty string without '/', got {name!r}")
        if name in {c.name for c in self.contact_geoms + self.contact_planes}:
            raise ModelError(f"duplicate contact name {name!r}")

    @property
    def contact_law(self) -> dict:
        """The model's contact constants (copy): stiffness k (N/m^n), exponent n, dissipation d
        (s/m), friction μ, stiction_velocity v_s (m/s); assign a dict of some of them to change
        those."""
        return dict(self._contact_law)

    @contact_law.setter
    def contact_law(self, law: dict) -> None:
        try:
            self._contact_law.update(C.check_law(dict(law), f"model {self.name!r} contact"))
        except C.ContactError as e:
            raise ModelError(str(e)) from None
        self._invalidate()

    contact_stiffness = property(lambda self: self._contact_law["stiffness"],
                                 lambda self, x: setattr(self, "contact_law", {"stiffness": x}),
                                 doc="Model-wide contact stiffness k (N/m^n, default 1e5).")
    contact_exponent = property(lambda self: self._contact_law["exponent"],
                                lambda self, x: setattr(self, "contact_law", {"exponent": x}),
                                doc="Model-wide exponent n of the contact force (default 1.5).")
    contact_dissipation = property(lambda self: self._contact_law["dissipation"],
                                   lambda self, x: setattr(self, "contact_law", {"dissipation": x}),
                                   doc="Model-wide Hunt–Crossley dissipation d (s/m, default 1).")
    contact_friction = property(lambda self: self._contact_law["friction"],
                                lambda self, x: setattr(self, "contact_law", {"friction": x}),
                                doc="Model-wide Coulomb friction coefficient μ (default 0.8).")
    contact_stiction_velocity = property(
        lambda self: self._contact_law["stiction_velocity"],
        lambda self, x: setattr(self, "contact_law", {"stiction_velocity": x}),
        doc="Model-wide friction regularization velocity v_s (m/s, default 1e-3).")

    # ------------------------------------------------------------------ queries
    def _body_names(self) -> list[str]:
        return [b.name for b in self.bodies]

    def body_index(self, name: str) -> int:
        for i, b in enumerate(self.bodies):
            if b.name == name:
                return i
        raise ModelError(f"unknown body {name!r}")

    def frame_placement(self, name: str) -> tuple[int, np.ndarray, np.ndarray]:
        """(body index, rotation, translation) of a frame or body name; world (and a frame fixed in
        world) has body index −1."""
        if name == WORLD:
            return -1, np.eye(3), np.zeros(3)
        if name in self.frames:
            fr = self.frames[name]
            return fr.body, fr.rotation, fr.translation
        return self.body_index(name), np.eye(3), np.zeros(3)

    @property
    def nbodies(self) -> int:
        return len(self.bodies)

    @property
    def nq(self) -> int:
        return self._nq

    @property
    def nv(self) -> int:
        return self._nv

    @property
    def gravity(self) -> np.ndarray:
        return self._gravity.copy()

    @gravity.setter
    def gravity(self, g) -> None:
        self._gravity = _vec3(g, "gravity")
        if self._core is not None:
            self._core.set_gravity(self._gravity)

    # ------------------------------------------------------------------ physical parameters
    # (the FMU's parameters <b>.mass, <b>.com[1..3], <b>.inertia[1..6], damping[i], friction[i])
    def set_body_inertia(self, body: str | int, mass: float | None = None, com=None,
                         inertia=None, *, physical: bool = True) -> None:
        """Change the inertial parameters of ``body`` (name or index); ``None`` keeps a value.

        ``inertia`` about the centre of mass, body axes: a 3×3 matrix or the six numbers
        (xx, yy, zz, xy, xz, yz) of the FMU's ``<b>.inertia[1..6]``.  The checks are the model
        file's (m ≥ 0; J symmetric, and with ``physical``, positive semi-definite with principal
        moments obeying the triangle inequality): a ModelError names the body."""
        k = body if isinstance(body, (int, np.integer)) else self.body_index(body)
        if not 0 <= k < len(self.bodies):
            raise ModelError(f"unknown body index {k}")
        b = self.bodies[k]
        m = b.mass if mass is None else float(mass)
        c = b.com if com is None else _vec3(com, f"body {b.name!r} centre of mass")
        J = b.inertia if inertia is None else _inertia_matrix(inertia, f"body {b.name!r}")
        check_inertia(m, J, f"body {b.name!r}", physical)
        J = 0.5 * (J + J.T)
        if m == b.mass and np.array_equal(c, b.com) and np.array_equal(J, b.inertia):
            return
        b.mass, b.com, b.inertia = m, c.copy(), J.copy()
        self._invalidate()

    def body_inertia(self, body: str | int) -> tuple[float, np.ndarray, np.ndarray]:
        """(mass, centre of mass, 3×3 inertia about it) of ``body`` (name or index), copies."""
        b = self.bodies[body if isinstance(body, (int, np.integer)) else self.body_index(body)]
        return b.mass, b.com.copy(), b.inertia.copy()

    @property
    def joint_damping(self) -> np.ndarray:
        """Viscous damping d per velocity dof (N.m.s/rad or N.s/m; copy): the simulator applies
        −d q̇ (Simulator, FMU).  Start: URDF ``<dynamics damping>`` / native ``limits.damping``."""
        return self._damping.copy()

    @joint_damping.setter
    def joint_damping(self, d) -> None:
        self._damping = self._dissipation(d, "damping")
        self._invalidate()

    @property
    def joint_friction(self) -> np.ndarray:
        """Coulomb friction f_c per velocity dof (N.m or N; copy): the simulator applies
        −f_c tanh(q̇ / v_s), v_s = :attr:`friction_velocity`.  Start: URDF ``<dynamics
        friction>`` / native ``limits.friction``."""
        return self._friction.copy()

    @joint_friction.setter
    def joint_friction(self, f) -> None:
        self._friction = self._dissipation(f, "friction")
        self._invalidate()

    @property
    def friction_velocity(self) -> float:
        """Regularization velocity v_s of the Coulomb friction (rad/s or m/s, default 0.01): the
        friction reaches 76 % of f_c at |q̇| = v_s and acts like a damping f_c / v_s near rest."""
        return self._friction_velocity

    @friction_velocity.setter
    def friction_velocity(self, v: float) -> None:
        v = float(v)
        if not (np.isfinite(v) and v > 0):
            raise ModelError(f"friction_velocity must be finite and > 0, got {v}")
        self._friction_velocity = v
        self._invalidate()

    @property
    def joint_armature(self) -> np.ndarray:
        """Rotor inertia a per velocity dof (kg·m² or kg; copy), e.g. J_rotor · gear ratio²: the
        mass matrix is M + diag(a) in every algorithm.  Start: ``limits.armature`` (TOML)."""
        return self._armature.copy()

    @joint_armature.setter
    def joint_armature(self, a) -> None:
        self._armature = self._dissipation(a, "armature")
        self._invalidate()

    @property
    def joint_limits(self) -> tuple[np.ndarray, np.ndarray]:
        """(lower, upper) stop limits per velocity dof (rad or m; NaN: none): URDF ``<limit>`` /
        ``limits.lower/upper`` of revolute and prismatic joints (not continuous ones)."""
        return self._stop_lower.copy(), self._stop_upper.copy()

    @property
    def stops_enabled(self) -> bool:
        """Whether the joint stops act (default True; FMU parameter ``stops_enabled``)."""
        return self._stops_enabled

    @stops_enabled.setter
    def stops_enabled(self, on: bool) -> None:
        self._stops_enabled = bool(on)
        self._invalidate()

    @property
    def stop_stiffness(self) -> np.ndarray:
        """Stop stiffness k per velocity dof (N·m/rad or N/m; 0 where no stop): the
        ``limits.stop_stiffness`` override, else derived so that the robot's own gravity load
        deflects a stop by at most 1° (1 mm): k = m_sub |g| r / 1°, m_sub the mass beyond the
        joint, r the distance of its centre of mass from the axis at the neutral configuration
        (docs/joints.md)."""
        return self._stop_gains()[0]

    @stop_stiffness.setter
    def stop_stiffness(self, k) -> None:
        self._stop_k = self._dissipation(k, "stop_stiffness")
        self._invalidate()

    @property
    def stop_damping(self) -> np.ndarray:
        """Stop damping b per velocity dof (N·m·s/rad or N·s/m): the ``limits.stop_damping``
        override, else critical, b = 2 √(k (M_ii + a_i)) at the neutral configuration."""
        return self._stop_gains()[1]

    @stop_damping.setter
    def stop_damping(self, b) -> None:
        self._stop_b = self._dissipation(b, "stop_damping")
        self._invalidate()

    def _stop_gains(self) -> tuple[np.ndarray, np.ndarray]:
        """(k, b) per dof: overrides where given, derived defaults elsewhere, 0 without a stop."""
        has = ~(np.isnan(self._stop_lower) & np.isnan(self._stop_upper))
        k, b = self._stop_k.copy(), self._stop_b.copy()
        if np.any(has & (np.isnan(k) | np.isnan(b))):
            kd, bd = self._default_stop_gains(k)
            k = np.where(np.isnan(k), kd, k)
            b = np.where(np.isnan(b), bd, b)
        return np.where(has, k, 0.0), np.where(has, b, 0.0)

    def _default_stop_gains(self, k_given: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Default stop stiffness and damping at the neutral configuration (see stop_stiffness)."""
        data = self.data
        q = self.neutral_configuration()
        M = _core.crba(data, q)                       # also the world placements and H*_I
        w = SimpleNamespace(**data.views())
        g = float(np.linalg.norm(self._gravity))
        nb, nv = self.nbodies, self.nv
        mass = np.array([b.mass for b in self.bodies])
        cw = np.array([w.pw[j] + w.Rw[j] @ self.bodies[j].com for j in range(nb)]).reshape(nb, 3)
        k = np.zeros(nv)
        for kb, body in enumerate(self.bodies):
            sub = [j for j in range(kb, nb) if self._descends(j, kb)]
            msub = mass[sub].sum()
            csub = (mass[sub, None] * cw[sub]).sum(axis=0) / msub if msub > 0 else np.zeros(3)
            for i in range(body.v_index, body.v_index + body.joint.nv):
                s = w.Sw[i]
                arm = np.linalg.norm(np.cross(s[:3], csub) + s[3:])     # |∂(com)/∂q_i|
                defl = math.radians(1.0) if body.joint.code == J.REVOLUTE else 1e-3
                k[i] = msub * g * arm / defl
                if not k[i] > 0:                     # no gravity load: a 10 Hz stop
                    k[i] = max(M[i, i] + self._armature[i], 1e-12) * (2 * math.pi * 10) ** 2
        kk = np.where(np.isnan(k_given), k, k_given)
        b = 2.0 * np.sqrt(kk * (np.diag(M) + self._armature))
        return k, b

    def _descends(self, j: int, k: int) -> bool:
        while j > k:
            j = self.bodies[j].parent
        return j == k

    def _dissipation(self, x, what: str) -> np.ndarray:
        a = np.array(x, dtype=float)
        if a.ndim == 0:
            a = np.full(self.nv, float(a))
        if a.shape != (self.nv,):
            raise ModelError(f"joint {what} must have shape ({self.nv},), got {a.shape}")
        for i in np.flatnonzero(~(np.isfinite(a) & (a >= 0))):
            raise ModelError(f"{what}[{i + 1}] ({self.velocity_names[i]}) must be finite and ≥ 0, "
                             f"got {a[i]}")
        return a

    @property
    def position_names(self) -> list[str]:
        """One name per configuration coordinate: the joint name, or ``joint[k]`` (1-based)."""
        return [n for b in self.bodies for n in b.coordinate_names()]

    @property
    def velocity_names(self) -> list[str]:
        return [n for b in self.bodies for n in b.coordinate_names(velocity=True)]

    @property
    def total_mass(self) -> float:
        return sum(b.mass for b in self.bodies)

    def neutral_configuration(self) -> np.ndarray:
        """Zero angles/displacements, identity quaternions."""
        return np.concatenate([np.concatenate((b.joint.neutral(), np.zeros(b.nmodes)))
                               for b in self.bodies] or [np.zeros(0)])

    def joint_of_position(self, i: int) -> str:
        return self.position_names[i]

    def quaternion_slices(self) -> list[tuple[str, int]]:
        """(joint name, first q index) of every unit quaternion in θ."""
        return [(b.joint_name, b.q_index) for b in self.bodies
                if b.joint.code in (J.SPHERICAL, J.FREE)]

    # ------------------------------------------------------------------ the C engine's Model / Data
    def _invalidate(self) -> None:
        self._core = self._data = self._arrays = self._workspace = None

    @property
    def core(self) -> _core.Model:
        """The model packed into the C engine (``soa_model``, checked and immutable); rebuilt after
        the model changes."""
        if self._core is None:
            self._core = self._build_core()
        return self._core

    def _build_core(self) -> _core.Model:
        nb, nv, nc, nm = self.nbodies, self.nv, len(self.constraints), self.max_modes
        if self.mimics and (nm or nc):
            raise ModelError(f"model {self.name!r}: mimic joints on a model with "
                             f"{'flexible bodies' if nm else 'closure constraints'} are not "
                             "supported")
        nsph, npln = len(self.contact_spheres), len(self.contact_planes)
        if nsph and (nm or nc):
            raise ModelError(f"model {self.name!r}: contact on a model with "
                             f"{'flexible bodies' if nm else 'closure constraints'} is not supported")
        nssp = len(C.sphere_pairs(self))
        names = (tuple(b.name for b in self.bodies), tuple(b.joint_name for b in self.bodies),
                 tuple(self.position_names), tuple(self.velocity_names),
                 tuple(c.name for c in self.constraints), C.contact_names(self))
        cm = _core.Model(nb, self.nq, nv, names, nc, nm, nsph, npln, nssp,
                         C.hull_vertex_count(self))
        v = cm.views()
        for k, b in enumerate(self.bodies):
            v["parent"][k], v["jtype"][k] = b.parent, b.joint.code
            v["q0"][k], v["v0"][k], v["nqj"][k], v["nvj"][k] = b.q_index, b.v_index, b.joint.nq, b.joint.nv
            v["axis"][k], v["basis"][k] = b.joint.axis_vector(), b.joint.basis()
            v["Xr"][k], v["Xp"][k] = b.rotation, b.translation
            v["mass"][k], v["com"][k], v["Jc"][k] = b.mass, b.com, b.inertia   # M(k): in finish()
            if b.joint.nv:
                v["S"][b.v_index:b.v_index + b.joint.nv] = b.joint.motion_subspace().T
        for k, b in enumerate(self.bodies):     # flexible.c: modes, attachments (seed 000 §4)
            if not nm:
                break
            fl, m = b.flexible, b.nmodes
            v["nmod"][k] = m
            if fl is not None:
                v["fl_M"][k, :6 + m, :6 + m] = fl.mass_matrix   # rigid block: set again by finish()
                v["fl_K"][k, :m, :m], v["fl_D"][k, :m, :m] = fl.stiffness, fl.damping
            if b.node is not None:
                pfl = self.bodies[b.parent].flexible
                v["attach"][k] = 1
                v["at_r"][k] = pfl.nodes[b.node]
                v["at_Psi"][k, :, :pfl.nmodes] = pfl.shapes[b.node]
        v["a0"][3:] = -self._gravity
        v["damping"][:], v["friction"][:] = self._damping, self._friction   # dissipation.c
        v["vfric"][0] = self._friction_velocity
        v["armature"][:] = self._armature               # M + diag(a)
        lo, hi = self._stop_lower, self._stop_upper      # joint stops (dissipation.c)
        v["stop_on"][:] = (~np.isnan(lo)) * 1 + (~np.isnan(hi)) * 2
        v["stop_lo"][:], v["stop_hi"][:] = np.nan_to_num(lo), np.nan_to_num(hi)
        v["stops"][0] = int(self._stops_enabled)
        joints = {b.joint_name: b for b in self.bodies}       # mimic.c: the couplings
        for mim in self.mimics:
            i = joints[mim.joint].v_index
            v["mim_drv"][i] = 1 + joints[mim.driver].v_index
            v["mim_k"][i], v["mim_c"][i] = mim.multiplier, mim.offset
        # ---- closures.c: the constraints (rows A derived by finish) ----
        kinds = list(CONSTRAINT_KINDS)
        for j, c in enumerate(self.constraints):
            v["cn_kind"][j], v["cn_size"][j] = kinds.index(c.kind), c.size
            v["cn_body_a"][j], v["cn_Ra"][j], v["cn_pa"][j] = self.frame_placement(c.frame_a)
            v["cn_body_b"][j], v["cn_Rb"][j], v["cn_pb"][j] = self.frame_placement(c.frame_b)
            v["cn_axis"][j] = c.axis
        C.fill_core(self, v)                    # contact.c: spheres, planes, pairs, the law
        cm.finish()
        if v["stop_on"].any():                           # the gains need M at q0: this core
            self._core = cm
            v["stop_k"][:], v["stop_b"][:] = self._stop_gains()
            cm.finish()
        return cm

    def create_data(self) -> _core.Data:
        """A new workspace (``soa_data``) for this model: pass it as ``data=`` to run the sweeps
        in it (one per thread, or to keep intermediate results apart)."""
        return _core.Data(self.core)

    @property
    def data(self) -> _core.Data:
        """The model's default workspace, used by the API functions unless given ``data=``."""
        if self._data is None:
            self._data = self.create_data()
        return self._data

    def arrays(self) -> SimpleNamespace:
        """The constants as named read-only numpy views of the engine's memory (soa.h table)."""
        if self._arrays is None:
            self._arrays = SimpleNamespace(**self.core.views())
        return self._arrays

    def workspace(self, data: _core.Data | None = None) -> SimpleNamespace:
        """A workspace's buffers as named numpy views (filled by the last call that used it)."""
        if data is not None:
            return SimpleNamespace(**data.views())
        if self._workspace is None:
            self._workspace = SimpleNamespace(**self.data.views())
        return self._workspace

    def __repr__(self) -> str:
        return (f"Model({self.name!r}, bodies={self.nbodies}, nq={self.nq}, nv={self.nv}, "
                f"frames={len(self.frames)}, constraints={len(self.constraints)}"
                + (f", contact geometries={len(self.contact_geoms)}, planes={len(self.contact_planes)}"
                   if self.contact_geoms or self.contact_planes else "") + ")")


def _inertia_matrix(x, what: str) -> np.ndarray:
    """A 3×3 inertia from a 3×3 matrix or the six numbers (xx, yy, zz, xy, xz, yz)."""
    a = np.asarray(x, dtype=float)
    if a.shape == (6,):
        xx, yy, zz, xy, xz, yz = a
        a = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
    if a.shape != (3, 3):
        raise ModelError(f"{what}: inertia must be a 3×3 matrix or 6 numbers (xx, yy, zz, xy, xz, "
                         f"yz), got shape {a.shape}")
    return a


def _coord_names(joint_name: str, n: int) -> list[str]:
    if n == 1:
        return [joint_name]
    return [f"{joint_name}[{k + 1}]" for k in range(n)]
