"""URDF reader: links, joints and inertials of a ``<robot>`` -> :class:`~soa_fmu.model.Model`.

Read: ``<link>`` ``<inertial>`` (mass, origin xyz/rpy, full inertia tensor about the centre of mass;
the inertial rpy rotates the tensor into the link frame, J = R J' Rᵀ), ``<joint>`` of type revolute,
continuous (a revolute joint, one coordinate), prismatic, fixed, floating (free joint) and planar
(``axis`` = plane normal), its ``origin`` (xyz, rpy) and ``axis`` (default 1 0 0).  ``<limit>``,
``<dynamics>`` and ``<safety_controller>`` are kept as metadata in ``Body.limits``.  A ``<mimic joint
multiplier offset>`` becomes a coupling q = k q_driver + c of the model (``Model.add_mimic``), enforced
by the simulator and the FMUs.  Geometry, materials, transmissions and simulator tags carry no
dynamics and are ignored.

``strict=False`` reads a link whose inertia fails only the physical checks (not positive
semi-definite, or principal moments breaking the triangle inequality; several published robot files
have such links) with one :class:`~soa_fmu.io.checks.ModelWarning` per link naming file, line, link and
problem; the body is added with ``Model.add_body(..., physical=False)``.  It also locks (reads as
fixed) the joints that move only massless links, with one warning naming them.  Every other problem
is still an error.

Bodies are named by their links, joints by their URDF names.  The root link hangs from world by a
fixed joint, or by a free joint ``root_joint`` when ``floating_base=True``.  **Joint order** (hence the
order of q, qd, tau): the order in which the joints appear in the file, parents before children (a
stable topological sort by file position).

The file is untrusted input: it is read up to :data:`~soa_fmu.io.checks.MAX_FILE_BYTES`, DTDs and entity
declarations are refused before parsing (billion laughs, XXE), and lxml runs without entity
resolution, network or DTD loading.  Every error names the file, the line and the element.
"""
from __future__ import annotations

import math
import os
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from lxml import etree

from .. import joints as J
from ..model import WORLD, Model, ModelError
from ..spatial import rpy_to_matrix
from .checks import (LENIENT_NOTE, MAX_MAGNITUDE, ModelWarning, degenerate_axes, finite_numbers,
                     inertia_problem, parents_first, read_bounded, singular_joint)

JOINT_TYPES = ("revolute", "continuous", "prismatic", "fixed", "floating", "planar")
LIMIT_ATTRIBUTES = {"limit": ("lower", "upper", "velocity", "effort"),
                    "dynamics": ("damping", "friction"),
                    "safety_controller": ("soft_lower_limit", "soft_upper_limit", "k_position",
                                          "k_velocity")}
ROOT_JOINT = "root_joint"


@dataclass
class UrdfLink:
    name: str
    line: int
    mass: float = 0.0
    com: np.ndarray = field(default_factory=lambda: np.zeros(3))
    inertia: np.ndarray = field(default_factory=lambda: np.zeros((3, 3)))  # about the com, link axes
    unphysical: str = ""    # strict=False: why the inertia fails the physical checks (located)
    collisions: list = field(default_factory=list)   # its <collision> elements (UrdfCollision)


@dataclass
class UrdfCollision:
    """A ``<collision>`` geometry: its shape (sphere, box, cylinder, capsule, mesh), placement in
    the link frame and sizes (``size``: a box's full sizes; ``length``: a cylinder's or capsule's;
    ``mesh``, ``scale``: a mesh file's name and scale)."""

    shape: str
    rotation: np.ndarray
    translation: np.ndarray
    line: int
    radius: float = 0.0
    length: float = 0.0
    size: np.ndarray = field(default_factory=lambda: np.zeros(3))
    mesh: str = ""
    scale: np.ndarray = field(default_factory=lambda: np.ones(3))


@dataclass
class UrdfJoint:
    name: str
    line: int
    type: str
    parent: str
    child: str
    rotation: np.ndarray        # joint frame in the parent link frame
    translation: np.ndarray
    axis: np.ndarray
    limits: dict


@dataclass
class UrdfRobot:
    """The parsed file: links by name (file order) and joints, parents before children."""

    path: str
    name: str
    root: str
    links: dict[str, UrdfLink]
    joints: list[UrdfJoint]
    locked: list[UrdfJoint] = field(default_factory=list)  # strict=False: massless, read as fixed
    unmimicked: list[UrdfJoint] = field(default_factory=list)  # strict=False: <mimic> of no joint


class _Located:
    """Builds ModelErrors that name the file, the line and the element."""

    def __init__(self, path: str):
        self.path = path

    def error(self, el, problem: str, attr: str | None = None) -> ModelError:
        return ModelError(f"{self.path}:{el.sourceline}: {_describe(el)}"
                          f"{f' {attr}' if attr else ''}: {problem}")

    def attr(self, el, name: str, default: str | None = None) -> str:
        value = el.get(name)
        if value is None:
            if default is None:
                raise self.error(el, "missing required attribute", name)
            return default
        return value

    def numbers(self, el, name: str, n: int, default: str | None, limit: float = MAX_MAGNITUDE
                ) -> np.ndarray:
        try:
            return np.array(finite_numbers(self.attr(el, name, default), n, limit))
        except ValueError as e:
            raise self.error(el, str(e), name) from None

    def number(self, el, name: str, default: str | None = None, limit: float = MAX_MAGNITUDE) -> float:
        return float(self.numbers(el, name, 1, default, limit)[0])

    def one(self, parent, tag: str, required: bool = False):
        found = list(parent.iterchildren(tag))
        if len(found) > 1:
            raise self.error(found[1], f"more than one <{tag}> in this <{parent.tag}>")
        if not found and required:
            raise self.error(parent, f"missing required <{tag}> element")
        return found[0] if found else None

    def origin(self, parent) -> tuple[np.ndarray, np.ndarray]:
        """(rotation, translation) of an optional ``<origin xyz rpy>`` child."""
        el = self.one(parent, "origin")
        if el is None:
            return np.eye(3), np.zeros(3)
        return rpy_to_matrix(self.numbers(el, "rpy", 3, "0 0 0")), self.numbers(el, "xyz", 3, "0 0 0")


def _describe(el) -> str:
    """``joint 'elbow' <axis>``: the element and the named link/joint it belongs to."""
    owner = next((a for a in el.iterancestors() if a.tag in ("link", "joint")), None)
    own = f"<{el.tag}>" if el.get("name") is None else f"{el.tag} {el.get('name')!r}"
    if el.tag in ("link", "joint", "robot") or owner is None:
        return own
    return f"{owner.tag} {owner.get('name')!r} <{el.tag}>"


# ---------------------------------------------------------------- parsing
_ENCODING = re.compile(rb"(?:\xef\xbb\xbf)?\s*<\?xml[^>]*encoding\s*=\s*[\"']([^\"']*)[\"']")
_ENCODINGS = {b"utf-8", b"utf8", b"us-ascii", b"ascii", b"iso-8859-1", b"latin-1", b"latin1"}


def _parse_xml(path: str, data: bytes):
    for marker in (b"<!DOCTYPE", b"<!ENTITY"):
        i = data.find(marker)
        if i >= 0:
            line = data.count(b"\n", 0, i) + 1
            raise ModelError(f"{path}:{line}: {marker.decode()[2:]} declarations are not allowed in "
                             "a URDF file (entity expansion / external entities are refused)")
    declared = _ENCODING.match(data)
    if b"\x00" in data[:4096] or (declared and declared.group(1).lower() not in _ENCODINGS):
        raise ModelError(f"{path}: a URDF file must be UTF-8 (or ASCII / ISO-8859-1) encoded")
    parser = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=False, load_dtd=False,
                             remove_comments=True)
    try:
        root = etree.fromstring(data, parser)
    except etree.XMLSyntaxError as e:
        msg = (e.msg or str(e)).split(" (<string>")[0]
        raise ModelError(f"{path}:{e.lineno}: malformed XML: {msg}") from None
    if root is None:
        raise ModelError(f"{path}: empty XML document")
    if root.getroottree().docinfo.internalDTD is not None:
        raise ModelError(f"{path}: DTD declarations are not allowed in a URDF file")
    return root


def _parse_link(loc: _Located, el, strict: bool) -> UrdfLink:
    link = UrdfLink(loc.attr(el, "name"), el.sourceline)
    for col in el.iterchildren("collision"):      # contact geometry (soa_fmu/contact.py)
        geometry = loc.one(col, "geometry")
        shape = next((g for g in geometry.iterchildren() if isinstance(g.tag, str)), None) \
            if geometry is not None else None
        if shape is None or shape.tag not in ("sphere", "box", "cylinder", "capsule", "mesh"):
            continue
        R, t = loc.origin(col)
        c = UrdfCollision(shape.tag, R, t, col.sourceline)
        if shape.tag in ("sphere", "cylinder", "capsule"):
            c.radius = loc.number(shape, "radius")
            if c.radius < 0 or (c.radius == 0 and shape.tag != "sphere"):
                raise loc.error(shape, f"{'negative' if c.radius < 0 else 'zero'} {shape.tag} "
                                       f"radius {c.radius}", "radius")
        if shape.tag in ("cylinder", "capsule"):
            c.length = loc.number(shape, "length")
            if c.length < 0:
                raise loc.error(shape, f"negative {shape.tag} length {c.length}", "length")
        if shape.tag == "box":
            c.size = loc.numbers(shape, "size", 3, None)
            if (c.size < 0).any():
                raise loc.error(shape, f"negative box size {list(c.size)}", "size")
        if shape.tag == "mesh":
            c.mesh = loc.attr(shape, "filename")
            c.scale = loc.numbers(shape, "scale", 3, "1 1 1")
        link.collisions.append(c)
    inertial = loc.one(el, "inertial")
    if inertial is None:
        return link
    R, link.com = loc.origin(inertial)
    mass_el = loc.one(inertial, "mass", required=True)
    link.mass = loc.number(mass_el, "value")
    if link.mass < 0:
        raise loc.error(mass_el, f"negative mass {link.mass}", "value")
    i_el = loc.one(inertial, "inertia", required=True)
    xx, xy, xz, yy, yz, zz = (loc.number(i_el, a) for a in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz"))
    link.inertia = R @ np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]]) @ R.T
    try:
        problem = inertia_problem(link.mass, link.inertia, strict)
    except ModelError as e:
        raise loc.error(i_el, str(e).removeprefix("inertia: ")) from None
    if problem:
        link.unphysical = str(loc.error(i_el, problem))
    return link


def _parse_joint(loc: _Located, el) -> UrdfJoint:
    name, jtype = loc.attr(el, "name"), loc.attr(el, "type")
    if jtype not in JOINT_TYPES:
        raise loc.error(el, f"unknown joint type {jtype!r} (expected one of {', '.join(JOINT_TYPES)})",
                        "type")
    parent = loc.attr(loc.one(el, "parent", required=True), "link")
    child = loc.attr(loc.one(el, "child", required=True), "link")
    if parent == child:
        raise loc.error(el, f"parent and child are the same link {parent!r}")
    R, t = loc.origin(el)
    axis = np.array([1.0, 0.0, 0.0])
    axis_el = loc.one(el, "axis")
    if axis_el is not None:
        axis = loc.numbers(axis_el, "xyz", 3, "1 0 0")
        if jtype not in ("fixed", "floating") and np.linalg.norm(axis) < 1e-12:
            raise loc.error(axis_el, f"zero-length axis {axis_el.get('xyz')!r}", "xyz")
    limits: dict = {"continuous": True} if jtype == "continuous" else {}
    for tag, names in LIMIT_ATTRIBUTES.items():
        sub = loc.one(el, tag)
        if sub is not None:
            limits.update({a: loc.number(sub, a, limit=math.inf) for a in names if sub.get(a) is not None})
    mimic = loc.one(el, "mimic")
    if mimic is not None:
        limits["mimic"] = {"joint": loc.attr(mimic, "joint"),
                           "multiplier": loc.number(mimic, "multiplier", "1"),
                           "offset": loc.number(mimic, "offset", "0")}
    return UrdfJoint(name, el.sourceline, jtype, parent, child, R, t, axis, limits)


def parse_urdf(path: str | os.PathLike, strict: bool = True) -> UrdfRobot:
    """Parse and check a URDF file (no Model yet): tree structure, numbers, inertias.  With
    ``strict=False`` a non-physical inertia is kept and explained in ``UrdfLink.unphysical`` (the
    caller warns: :func:`warn_unphysical`)."""
    path = os.fspath(path)
    loc = _Located(path)
    root = _parse_xml(path, read_bounded(path))
    if root.tag != "robot":
        raise loc.error(root, "the root element must be <robot>")
    links: dict[str, UrdfLink] = {}
    for el in root.iterchildren("link"):
        link = _parse_link(loc, el, strict)
        if link.name in links:
            raise loc.error(el, f"duplicate link name (first defined on line {links[link.name].line})")
        links[link.name] = link
    if not links:                  # (e.g. ur3.urdf of example-robot-data: an empty <robot>)
        raise loc.error(root, "no <link> elements: an empty robot")
    name = loc.attr(root, "name")
    joints: list[UrdfJoint] = []
    seen: dict[str, UrdfJoint] = {}
    parent_joint: dict[str, UrdfJoint] = {}
    for el in root.iterchildren("joint"):
        j = _parse_joint(loc, el)
        if j.name in seen:
            raise loc.error(el, f"duplicate joint name (first defined on line {seen[j.name].line})")
        for role, link in (("parent", j.parent), ("child", j.child)):
            if link not in links:
                raise loc.error(el.find(role), f"unknown {role} link {link!r}", "link")
        if j.child in parent_joint:
            first = parent_joint[j.child]
            raise loc.error(el, f"link {j.child!r} has two parents: joint {first.name!r} (line "
                                f"{first.line}) and this one; a URDF must be a tree")
        seen[j.name] = parent_joint[j.child] = j
        joints.append(j)
    roots = [n for n in links if n not in parent_joint]
    if len(roots) > 1:
        where = ", ".join(f"{n!r} (line {links[n].line})" for n in roots[:5])
        raise ModelError(f"{path}: more than one root link: {where}; the links must form one tree "
                         "connected by joints")
    ordered = parents_first(joints, lambda j: j.parent, lambda j: (j.child,), roots)
    if len(ordered) < len(joints):
        raise _cycle_error(path, joints, parent_joint, {j.name for j in ordered})
    robot = UrdfRobot(path, name, roots[0], links, ordered)
    by_name = {j.name: j for j in ordered}
    for j in ordered:
        driver = j.limits.get("mimic", {}).get("joint")
        if driver is not None and driver not in by_name:
            if strict:
                raise ModelError(f"{path}:{j.line}: joint {j.name!r} <mimic>: unknown joint "
                                 f"{driver!r}; strict=False reads the joint as an independent one")
            robot.unmimicked.append(j)
    if not strict:
        _lock_massless(robot)
    return robot


def _lock_massless(robot: UrdfRobot) -> None:
    """strict=False: read as fixed every moving joint whose child subtree has no mass (its D would
    be singular), and a mimic joint whose driver is so locked (fixed at its offset)."""
    mass = {name: link.mass for name, link in robot.links.items()}
    for j in reversed(robot.joints):                    # children after parents: sum inward
        mass[j.parent] += mass[j.child]
    moving = [j for j in robot.joints if j.type != "fixed"]
    locked = {j.name for j in moving if mass[j.child] <= 0.0}
    for j in moving:
        driver = j.limits.get("mimic", {}).get("joint")
        if driver in locked and j.name not in locked:
            locked.add(j.name)
            c = j.limits["mimic"]["offset"]           # q = k 0 + c: the joint frame at c
            if j.type in ("revolute", "continuous"):
                j.rotation = j.rotation @ _axis_rotation(j.axis, c)
            elif j.type == "prismatic":
                j.translation = j.translation + j.rotation @ (j.axis * c / np.linalg.norm(j.axis))
    for j in moving:
        if j.name in locked:
            j.type = "fixed"
            robot.locked.append(j)


def _axis_rotation(axis: np.ndarray, angle: float) -> np.ndarray:
    n = axis / np.linalg.norm(axis)
    K = np.array([[0.0, -n[2], n[1]], [n[2], 0.0, -n[0]], [-n[1], n[0], 0.0]])
    return np.eye(3) + math.sin(angle) * K + (1.0 - math.cos(angle)) * K @ K


def _cycle_error(path: str, joints, parent_joint, placed: set[str]) -> ModelError:
    j = next(j for j in joints if j.name not in placed)
    chain = [j.child]
    while j.parent not in chain:
        chain.append(j.parent)
        j = parent_joint.get(j.parent, j)
    chain = chain[chain.index(j.parent):] + [j.parent]
    return ModelError(f"{path}:{j.line}: joint {j.name!r}: the links form a cycle "
                      f"({' -> '.join(reversed(chain))}); a URDF must be a tree")


def warn_unphysical(robot: UrdfRobot, context: str = "") -> None:
    """One ModelWarning per link read with a non-physical inertia (``strict=False``), and one
    naming the joints locked for moving only massless links; ``context`` (e.g. the including native
    file and element) prefixes the message."""
    for link in robot.links.values():
        if link.unphysical:
            warnings.warn(f"{context}{link.unphysical}{LENIENT_NOTE}", ModelWarning, stacklevel=2)
    if robot.unmimicked:
        listed = ", ".join(f"{j.name!r} (line {j.line}) mimics {j.limits['mimic']['joint']!r}"
                           for j in robot.unmimicked[:4])
        more = f" and {len(robot.unmimicked) - 4} more" if len(robot.unmimicked) > 4 else ""
        warnings.warn(f"{context}{robot.path}: <mimic> of an unknown joint, read as an independent "
                      f"joint (accepted with strict=False): {listed}{more}", ModelWarning,
                      stacklevel=2)
    if robot.locked:
        listed = ", ".join(f"{j.name!r} (line {j.line})" for j in robot.locked[:4])
        more = f" and {len(robot.locked) - 4} more" if len(robot.locked) > 4 else ""
        warnings.warn(f"{context}{robot.path}: {len(robot.locked)} joint"
                      f"{'s' if len(robot.locked) > 1 else ''} moving only massless links locked "
                      f"(read as fixed; accepted with strict=False): {listed}{more}", ModelWarning,
                      stacklevel=2)


# ---------------------------------------------------------------- Model building
def _joint(j: UrdfJoint) -> J.Joint:
    if j.type in ("revolute", "continuous"):
        return J.Revolute(j.axis)
    if j.type == "prismatic":
        return J.Prismatic(j.axis)
    if j.type == "planar":
        return J.Planar(j.axis)
    if j.type == "floating":
        return J.Free()
    return J.Fixed()


def add_urdf(model: Model, robot: UrdfRobot, *, prefix: str = "", parent: str = WORLD,
             rotation=None, translation=(0.0, 0.0, 0.0), floating_base: bool = False,
             contact_spheres: bool = False, contact_geometry: bool = False) -> None:
    """Add the robot's links as bodies of ``model`` (names prefixed by ``prefix``), its root placed
    at (rotation, translation) in ``parent``, by a fixed joint or a free joint ``<prefix>root_joint``.
    ``contact_geometry``: every ``<collision>`` of a link (sphere, box, cylinder, capsule, mesh:
    its convex hull) becomes a contact geometry named after the link (``<link>_<i>`` when it has
    several); ``contact_spheres``: its spheres only.  The spheres meet each other (``collide``),
    the other shapes only the planes (a robot's collision meshes overlap at its joints)."""
    R0 = np.eye(3) if rotation is None else np.asarray(rotation, dtype=float)
    t0 = np.asarray(translation, dtype=float)
    root = robot.links[robot.root]

    def add(link: UrdfLink, joint: J.Joint, jname: str, at: str, R, t, limits: dict, line: int):
        try:
            model.add_body(prefix + link.name, at, joint, joint_name=jname, rotation=R, translation=t,
                           mass=link.mass, com=link.com, inertia=link.inertia, limits=limits,
                           physical=not link.unphysical)
        except ValueError as e:
            raise ModelError(f"{robot.path}:{line}: {e}") from None

    if robot.root == WORLD:      # a massless link named "world" is the world itself
        if floating_base:
            raise ModelError(f"{robot.path}:{root.line}: the root link is 'world'; it cannot be "
                             "given a floating base")
        placed = {WORLD: (parent, R0, t0)}
    else:
        names = {j.name for j in robot.joints}
        jname = ROOT_JOINT
        while jname in names:
            jname = "_" + jname
        add(root, J.Free() if floating_base else J.Fixed(), prefix + jname, parent, R0, t0, {},
            root.line)
        placed = {}
    for j in robot.joints:
        at, R, t = placed.get(j.parent, (prefix + j.parent, np.eye(3), np.zeros(3)))
        add(robot.links[j.child], _joint(j), prefix + j.name, at, R @ j.rotation, t + R @ j.translation,
            j.limits, j.line)
    skip = {j.name for j in robot.locked + robot.unmimicked}
    for j in robot.joints:                   # <mimic>: q = k q_driver + c (core/mimic.c)
        mimic = j.limits.get("mimic")
        if mimic is None or j.type == "fixed" or j.name in skip:
            continue
        try:
            model.add_mimic(prefix + j.name, prefix + mimic["joint"], mimic["multiplier"],
                            mimic["offset"])
        except ValueError as e:
            raise ModelError(f"{robot.path}:{j.line}: {e}") from None
    for link in robot.links.values() if contact_spheres or contact_geometry else ():
        cols = [c for c in link.collisions if contact_geometry or c.shape == "sphere"]
        if link.name == WORLD and robot.root == WORLD:
            continue
        for i, c in enumerate(cols):
            name = prefix + link.name + (f"_{i + 1}" if len(cols) > 1 else "")
            try:
                add_collision(model, name, prefix + link.name, c, Path(robot.path).parent)
            except ValueError as e:
                raise ModelError(f"{robot.path}:{c.line}: {e}") from None


def add_collision(model: Model, name: str, body: str, c: UrdfCollision, base: Path,
                  **options) -> None:
    """A ``<collision>`` as the contact geometry ``name`` of ``body`` (a mesh: the convex hull of
    its file's vertices, found as soa-view finds it, relative to ``base`` or a ROS package);
    ``options``: Model.add_contact_geom's (collide, exclude, the law's constants)."""
    kw = dict(center=c.translation, rotation=c.rotation, collide=c.shape == "sphere") | options
    if c.shape == "sphere":
        kw.update(radius=c.radius)
    elif c.shape in ("cylinder", "capsule"):
        kw.update(radius=c.radius, half_length=c.length / 2)
    elif c.shape == "box":
        kw.update(half_extents=c.size / 2)
    else:
        try:
            from ..view.geometry import load_mesh, resolve_uri
        except ImportError as e:
            raise ModelError(f"collision mesh {c.mesh!r}: reading meshes needs trimesh "
                             f"(pip install 'soa_fmu[view]'): {e}") from None
        file = resolve_uri(c.mesh, base)
        mesh = load_mesh(file) if file is not None else None
        if mesh is None:
            raise ModelError(f"collision mesh {c.mesh!r} {'not found' if file is None else 'unreadable'}"
                             f" (searched from {base} and ROS_PACKAGE_PATH)")
        kw.update(vertices=np.asarray(mesh.vertices, dtype=float) * c.scale, mesh=str(file))
    model.add_contact_geom(name, body, c.shape, **kw)


def load_urdf(path: str | os.PathLike, floating_base: bool = False, strict: bool = True,
              contact_floor: float | None = None) -> Model:
    """Read a URDF file into a new Model named after the robot (``model.source = path``);
    ``strict=False``: see the module docstring.  ``contact_floor``: the height of a floor plane
    (``floor``, normal +z), and every ``<collision>`` becomes contact geometry (add_urdf)."""
    robot = parse_urdf(path, strict)
    warn_unphysical(robot)
    model = Model(robot.name)
    model.source = robot.path
    add_urdf(model, robot, floating_base=floating_base, contact_geometry=contact_floor is not None)
    if contact_floor is not None:
        model.add_contact_plane("floor", (0.0, 0.0, float(contact_floor)))
    bad = singular_joint(model)
    if bad is not None and "massless" in bad[1]:
        bad = bad[0], f"{bad[1]}; strict=False locks such joints (reads them as fixed)"
    bad = bad or degenerate_axes(model, strict)
    if bad is not None:
        b = model.bodies[bad[0]]
        line = next((j.line for j in robot.joints if j.name == b.joint_name), robot.links[b.name].line)
        raise ModelError(f"{robot.path}:{line}: joint {b.joint_name!r} (child link {b.name!r}) "
                         f"{bad[1]}")
    return model
