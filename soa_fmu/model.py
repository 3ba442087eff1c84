"""Topology and constants of a mechanism (SPEC E3; seed 000 §2.1–2.2, eqs. 2.6–2.11).

A :class:`Model` is a tree of bodies hanging from ``world``.  Bodies are numbered in the order they
are added, parents before children, so ``parent[k] < k``: an *outward* (base-to-tip, φ*) sweep is a
loop k = 0 … n−1 and an *inward* (tip-to-base, φ) sweep is k = n−1 … 0 accumulating into
``parent[k]``.  The papers number links from the tip (1) to the base (n); with that relabelling the
connectivity map ι(k) of seed 000 (2.7) is ``parent``.

``Model`` is built once (Python, readable); :meth:`Model.arrays` packs the constants into the tuple of
flat arrays that the compiled sweeps read, and :class:`Workspace` holds every per-call array,
allocated once and reused (the Model / Data split of Pinocchio).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
from numba.extending import register_jitable
from numpy.lib.stride_tricks import as_strided

from . import joints as J
from .spatial import spatial_inertia

WORLD = "world"
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
    limits: dict = field(default_factory=dict)   # lower, upper, velocity, effort, damping, friction


@dataclass
class Frame:
    """A named frame fixed on a body (tool point, grasp point, sensor)."""

    name: str
    body: int
    rotation: np.ndarray
    translation: np.ndarray


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


class ModelArrays(NamedTuple):
    """Constants read by the compiled sweeps (all contiguous)."""

    parent: np.ndarray      # (nb,) int64, −1 = world
    jtype: np.ndarray       # (nb,) int64, joints.FIXED …
    q0: np.ndarray          # (nb,) first configuration index of each joint
    v0: np.ndarray          # (nb,) first velocity index of each joint
    nq: np.ndarray          # (nb,)
    nv: np.ndarray          # (nb,)
    vend: np.ndarray        # (nb,) one past the last velocity index of the body's subtree
    axis: np.ndarray        # (nb, 3) revolute/prismatic axis, planar normal
    basis: np.ndarray       # (nb, 3, 3) planar basis (e1, e2, n)
    S: np.ndarray           # (nv, 6) joint map H*(k) columns, body frame, one per velocity dof
    Xr: np.ndarray          # (nb, 3, 3) joint placement rotation in the parent frame
    Xp: np.ndarray          # (nb, 3) joint placement offset in the parent frame
    inertia: np.ndarray     # (nb, 6, 6) M(k) about the body origin, body frame
    a0: np.ndarray          # (6,) base acceleration [0; −g] (gravity as a base acceleration)


class Workspace(NamedTuple):
    """Per-call arrays of the sweeps, allocated once per model (never in a hot path)."""

    R: np.ndarray        # (nb, 3, 3) body rotation in its parent
    l: np.ndarray        # (nb, 3) parent origin -> body origin, parent frame
    Rw: np.ndarray       # (nb, 3, 3) body rotation in world
    pw: np.ndarray       # (nb, 3) body origin in world
    Rj: np.ndarray       # (nb, 3, 3) joint rotation (scratch)
    tj: np.ndarray       # (nb, 3) joint translation (scratch)
    V: np.ndarray        # (nb, 6) spatial velocity V(k)
    a: np.ndarray        # (nb, 6) Coriolis acceleration a(k)
    b: np.ndarray        # (nb, 6) gyroscopic force b(k)
    alpha: np.ndarray    # (nb, 6) spatial acceleration α(k)
    f: np.ndarray        # (nb, 6) spatial force f(k) / filtered residual z(k)
    fext: np.ndarray     # (nb, 6) external forces on the bodies, body frames
    P: np.ndarray        # (nb, 6, 6) articulated inertia P(k) / composite inertia r(k)
    Dinv: np.ndarray     # (nb, 6, 6) D(k)⁻¹ (nv_k × nv_k block)
    G: np.ndarray        # (nb, 6, 6) Kalman gain G(k) = P H* D⁻¹ (6 × nv_k block)
    X: np.ndarray        # (nb, 6, nv) per-body 6 × nv blocks (CRBA x(k), M⁻¹ sweeps)
    Y: np.ndarray        # (6, nv) scratch block
    eps: np.ndarray      # (nv,) innovations ε
    nu: np.ndarray       # (nv,) weighted residuals ν
    s6: np.ndarray       # (4, 6) 6-vector scratch
    s66: np.ndarray      # (4, 6, 6) 6×6 scratch
    Sw: np.ndarray       # (nv, 6) joint maps H* in the inertial frame (world axes, world origin)


# ---------------------------------------------------------------- flat buffers for the compiled code
# The model constants live in one int64 and one float64 buffer, the workspace in one float64
# buffer: a compiled entry point takes (mi, mf, wf) — three arrays are cheap to pass from Python,
# a tuple of twenty is not — and rebuilds the named views below, so the sweeps read ``m.parent``,
# ``w.P``.  ``views`` is plain numpy (as_strided views cost nothing, unlike reshape in numba) and is
# compiled inline into every entry point; from Python it gives the same views of the same memory.
@register_jitable
def view1(buf, o, n):
    return buf[o:o + n], o + n


@register_jitable
def view2(buf, o, a, b):
    return as_strided(buf[o:], shape=(a, b), strides=(8 * b, 8)), o + a * b


@register_jitable
def view3(buf, o, a, b, c):
    return as_strided(buf[o:], shape=(a, b, c), strides=(8 * b * c, 8 * c, 8)), o + a * b * c


@register_jitable
def views(mi: np.ndarray, mf: np.ndarray, wf: np.ndarray):
    """(ModelArrays, Workspace): named views into the flat buffers (mi, mf, wf)."""
    nb, nv = mi[0], mi[1]
    o = 2
    parent, o = view1(mi, o, nb)
    jtype, o = view1(mi, o, nb)
    q0, o = view1(mi, o, nb)
    v0, o = view1(mi, o, nb)
    nq, o = view1(mi, o, nb)
    nvj, o = view1(mi, o, nb)
    vend, o = view1(mi, o, nb)
    o = 0
    axis, o = view2(mf, o, nb, 3)
    basis, o = view3(mf, o, nb, 3, 3)
    S, o = view2(mf, o, nv, 6)
    Xr, o = view3(mf, o, nb, 3, 3)
    Xp, o = view2(mf, o, nb, 3)
    inertia, o = view3(mf, o, nb, 6, 6)
    a0, o = view1(mf, o, 6)
    m = ModelArrays(parent, jtype, q0, v0, nq, nvj, vend, axis, basis, S, Xr, Xp, inertia, a0)
    o = 0
    R, o = view3(wf, o, nb, 3, 3)
    l, o = view2(wf, o, nb, 3)
    Rw, o = view3(wf, o, nb, 3, 3)
    pw, o = view2(wf, o, nb, 3)
    Rj, o = view3(wf, o, nb, 3, 3)
    tj, o = view2(wf, o, nb, 3)
    V, o = view2(wf, o, nb, 6)
    a, o = view2(wf, o, nb, 6)
    b, o = view2(wf, o, nb, 6)
    alpha, o = view2(wf, o, nb, 6)
    f, o = view2(wf, o, nb, 6)
    fext, o = view2(wf, o, nb, 6)
    P, o = view3(wf, o, nb, 6, 6)
    Dinv, o = view3(wf, o, nb, 6, 6)
    G, o = view3(wf, o, nb, 6, 6)
    X, o = view3(wf, o, nb, 6, nv)
    Y, o = view2(wf, o, 6, nv)
    eps, o = view1(wf, o, nv)
    nu, o = view1(wf, o, nv)
    s6, o = view2(wf, o, 4, 6)
    s66, o = view3(wf, o, 4, 6, 6)
    Sw, o = view2(wf, o, nv, 6)
    w = Workspace(R, l, Rw, pw, Rj, tj, V, a, b, alpha, f, fext, P, Dinv, G, X, Y, eps, nu, s6, s66,
                  Sw)
    return m, w


def workspace_size(nb: int, nv: int) -> int:
    return nb * (9 + 3 + 9 + 3 + 9 + 3 + 6 * 6 + 36 * 3 + 6 * nv) + 6 * nv + 2 * nv + 24 + 144 + 6 * nv


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
        self.initial_q: np.ndarray | None = None
        self.initial_qd: np.ndarray | None = None
        self.source: str | None = None
        self._gravity = _vec3(gravity, "gravity")
        self._nq = 0
        self._nv = 0
        self._packed: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self._views: tuple[ModelArrays, Workspace] | None = None

    # ------------------------------------------------------------------ building
    def add_body(self, name: str, parent: str = WORLD, joint: J.Joint | None = None, *,
                 joint_name: str | None = None, rotation=None, translation=(0.0, 0.0, 0.0),
                 mass: float = 0.0, com=(0.0, 0.0, 0.0), inertia=None,
                 limits: dict | None = None, physical: bool = True) -> int:
        """Add body ``name`` attached to ``parent`` by ``joint`` placed at (rotation, translation)
        in the parent frame; (mass, com, inertia about the com) in the body frame.  Returns its
        index.  Parents must be added before their children.

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
        inertia = np.zeros((3, 3)) if inertia is None else np.asarray(inertia, dtype=float)
        check_inertia(float(mass), inertia, f"body {name!r}", physical)
        body = Body(name, p, joint, jname, _rotation(rotation, f"joint {jname!r}"),
                    _vec3(translation, f"joint {jname!r} origin"), float(mass),
                    _vec3(com, f"body {name!r} centre of mass"), inertia, limits=dict(limits or {}))
        body.q_index = self._nq
        body.v_index = self._nv
        self.bodies.append(body)
        self._nq += joint.nq
        self._nv += joint.nv
        self._invalidate()
        return len(self.bodies) - 1

    def add_frame(self, name: str, body: str, rotation=None, translation=(0.0, 0.0, 0.0)) -> Frame:
        """Name a frame fixed on ``body`` (placement in the body frame); ``body="world"`` gives a
        frame fixed in world (an anchor for loop closures)."""
        if name in self.frames or name in self._body_names() or name == WORLD:
            raise ModelError(f"duplicate frame name {name!r}")
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
        return c

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
        if self._views is not None:
            self._views[0].a0[3:] = -self._gravity

    @property
    def position_names(self) -> list[str]:
        """One name per configuration coordinate: the joint name, or ``joint[k]`` (1-based)."""
        return [n for b in self.bodies for n in _coord_names(b.joint_name, b.joint.nq)]

    @property
    def velocity_names(self) -> list[str]:
        return [n for b in self.bodies for n in _coord_names(b.joint_name, b.joint.nv)]

    @property
    def total_mass(self) -> float:
        return sum(b.mass for b in self.bodies)

    def neutral_configuration(self) -> np.ndarray:
        """Zero angles/displacements, identity quaternions."""
        return np.concatenate([b.joint.neutral() for b in self.bodies] or [np.zeros(0)])

    def joint_of_position(self, i: int) -> str:
        return self.position_names[i]

    def quaternion_slices(self) -> list[tuple[str, int]]:
        """(joint name, first q index) of every unit quaternion in θ."""
        return [(b.joint_name, b.q_index) for b in self.bodies
                if b.joint.code in (J.SPHERICAL, J.FREE)]

    # ------------------------------------------------------------------ compiled view
    def _invalidate(self) -> None:
        self._packed = None
        self._views = None

    def packed(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(mi, mf, wf): the flat int constants, float constants and workspace of the compiled
        entry points (built once, cached; the workspace is the model's own, not thread-safe)."""
        if self._packed is None:
            nb, nv = self.nbodies, self.nv
            S = np.zeros((nv, 6))
            for b in self.bodies:
                if b.joint.nv:
                    S[b.v_index:b.v_index + b.joint.nv] = b.joint.motion_subspace().T
            vend = [b.v_index + b.joint.nv for b in self.bodies]
            for k in range(nb - 1, -1, -1):       # children come after parents
                if self.bodies[k].parent >= 0:
                    vend[self.bodies[k].parent] = max(vend[self.bodies[k].parent], vend[k])
            ints = [[nb, nv], [b.parent for b in self.bodies], [b.joint.code for b in self.bodies],
                    [b.q_index for b in self.bodies], [b.v_index for b in self.bodies],
                    [b.joint.nq for b in self.bodies], [b.joint.nv for b in self.bodies], vend]
            mi = np.concatenate([np.asarray(x, dtype=np.int64) for x in ints])
            floats = [[b.joint.axis_vector() for b in self.bodies], [b.joint.basis() for b in self.bodies],
                      S, [b.rotation for b in self.bodies], [b.translation for b in self.bodies],
                      [spatial_inertia(b.mass, b.com, b.inertia) for b in self.bodies],
                      np.r_[0.0, 0.0, 0.0, -self._gravity]]
            mf = np.concatenate([np.asarray(x, dtype=float).reshape(-1) for x in floats])
            wf = np.zeros(workspace_size(nb, nv))
            self._packed = (mi, mf, wf)
            self._views = views(mi, mf, wf)
        return self._packed

    def arrays(self) -> ModelArrays:
        """The constants as named numpy views (the same memory the compiled sweeps read)."""
        self.packed()
        return self._views[0]

    def workspace(self) -> Workspace:
        """The model's workspace as named numpy views (filled by the last compiled call)."""
        self.packed()
        return self._views[1]

    def __repr__(self) -> str:
        return (f"Model({self.name!r}, bodies={self.nbodies}, nq={self.nq}, nv={self.nv}, "
                f"frames={len(self.frames)}, constraints={len(self.constraints)})")


def _coord_names(joint_name: str, n: int) -> list[str]:
    if n == 1:
        return [joint_name]
    return [f"{joint_name}[{k + 1}]" for k in range(n)]
