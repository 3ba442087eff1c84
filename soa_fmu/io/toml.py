"""Native model files (TOML, read with ``tomllib``): everything URDF cannot say.

Every joint type of :mod:`soa_fmu.joints`, named frames, loop closures and grasps, the initial state,
gravity, and URDF and MJCF includes (optionally prefixed, placed anywhere, several times).  The format is
documented, with examples, in docs/model-files.md.  The reader is strict: unknown keys, wrong types,
non-finite numbers and unknown names are errors that name the file, the element path (e.g.
``bodies[3].joint.axis``) and, where it can be found, the line.  ``strict = false`` at the top level
(or ``load_native(..., strict=False)``) accepts inertias that fail only the physical checks, in the
file's bodies and its URDF includes, with a ModelWarning each (see :mod:`soa_fmu.io.urdf`).
"""
from __future__ import annotations

import math
import os
import re
import tomllib
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .. import joints as J
from ..contact import LAW
from ..model import CONSTRAINT_KINDS, WORLD, Model, ModelError
from ..spatial import rpy_to_matrix
from .checks import (LENIENT_NOTE, MAX_MAGNITUDE, ModelWarning, degenerate_axes, finite_numbers,
                     inertia_problem, parents_first, read_bounded, singular_joint)
from .mjcf import MjcfModel, add_mjcf, parse_mjcf, warn_unsupported
from .urdf import UrdfRobot, add_urdf, parse_urdf, warn_unphysical

KEYS = {
    "top": {"name", "gravity", "urdf", "floating_base", "strict", "include", "bodies", "frames",
            "constraints", "initial", "contact"},
    "include": {"urdf", "mjcf", "prefix", "parent", "xyz", "rpy", "floating_base", "contact_spheres",
                "contact_geometry"},
    "body": {"name", "parent", "mass", "com", "inertia", "joint", "flexible", "node",
             "visual"},     # visual: drawn by soa_fmu.view (checked there), no dynamics
    "frame": {"name", "body", "xyz", "rpy", "node"},
    "flexible": {"kind", "modes", "damping_ratio"},
    "constraint": {"name", "kind", "frame_a", "frame_b", "axis", "active"},
    "initial": {"q", "qd"},
    "contact": set(LAW) | {"planes", "spheres", "geoms"},
    "contact.planes": set(LAW) | {"name", "point", "normal"},
    "contact.spheres": set(LAW) | {"name", "body", "center", "radius", "collide"},
    "contact.geoms": set(LAW) | {"name", "body", "shape", "center", "rpy", "radius", "half_length",
                                 "half_extents", "radii", "mesh", "scale", "collide", "exclude"},
    "limits": {"lower", "upper", "velocity", "effort", "damping", "friction", "armature",
               "stop_stiffness", "stop_damping"},
}
JOINT_KEYS = {"type", "name", "xyz", "rpy", "limits"}
JOINT_TYPES: dict[str, tuple[type[J.Joint], set[str]]] = {     # type -> (class, its own keys)
    "fixed": (J.Fixed, set()),
    "revolute": (J.Revolute, {"axis"}),
    "prismatic": (J.Prismatic, {"axis"}),
    "spherical": (J.Spherical, set()),
    "free": (J.Free, set()),
    "planar": (J.Planar, {"axis"}),
    "general": (J.General, {"S"}),
}
INERTIA_KEYS = ("ixx", "iyy", "izz", "ixy", "ixz", "iyz")
FLEXIBLE_KINDS = {                                   # [bodies.flexible] kind -> its own keys
    "beam": {"length", "rho_A", "EA", "EI_y", "EI_z", "GJ", "rho_J", "elements"},
    "fe": {"file"},
}


class _Reader:
    """One native file being read; ``error`` builds located ModelErrors."""

    def __init__(self, path: str, text: str):
        self.path, self.text = path, text
        self.strict = True          # False: accept non-physical inertias (with a ModelWarning each)
        self.where_of_body: dict[str, str] = {}

    # ------------------------------------------------------------ errors and checked access
    def error(self, where: str, problem: str) -> ModelError:
        line = _line_of(self.text, where)
        return ModelError(f"{self.path}{f':{line}' if line else ''}: {where}: {problem}")

    def table(self, value, where: str, keys: set[str]) -> dict:
        if not isinstance(value, dict):
            raise self.error(where, f"expected a table, got {_kind(value)}")
        unknown = sorted(set(value) - keys)
        if unknown:
            raise self.error(f"{where}.{unknown[0]}" if where else unknown[0],
                             f"unknown key (expected one of {', '.join(sorted(keys))})")
        return value

    def tables(self, doc: dict, key: str, keys: set[str]) -> list[tuple[str, dict]]:
        value = doc.get(key, [])
        if not isinstance(value, list):
            raise self.error(key, f"expected an array of tables ([[{key}]]), got {_kind(value)}")
        return [(f"{key}[{i}]", self.table(v, f"{key}[{i}]", keys)) for i, v in enumerate(value)]

    def get(self, t: dict, key: str, where: str, kind: type, default: Any = ...) -> Any:
        if key not in t:
            if default is ...:
                raise self.error(where, f"missing required key {key!r}")
            return default
        value, path = t[key], f"{where}.{key}" if where else key
        if kind is float:
            return self.number(value, path)
        if not isinstance(value, kind):
            raise self.error(path, f"expected a {_TYPE_NAMES.get(kind, kind.__name__)}, "
                                   f"got {_kind(value)}")
        return value

    def name(self, t: dict, key: str, where: str, default: Any = ...) -> str:
        value = self.get(t, key, where, str, default)
        if not value:
            raise self.error(f"{where}.{key}", "expected a non-empty name")
        return value

    def number(self, value, where: str, limit: float = MAX_MAGNITUDE) -> float:
        """A finite number (of magnitude at most ``limit``)."""
        try:
            return finite_numbers([value], 1, limit)[0]
        except ValueError as e:
            raise self.error(where, str(e)) from None

    def numbers(self, value, where: str, n: int | None) -> np.ndarray:
        """An array of (exactly ``n``) finite numbers."""
        if not isinstance(value, list):
            raise self.error(where, f"expected an array of {n or ''} numbers, got {_kind(value)}")
        try:
            return np.array(finite_numbers(value, n), dtype=float)
        except ValueError as e:
            raise self.error(where, str(e)) from None

    def vector(self, t: dict, key: str, where: str, default=(0.0, 0.0, 0.0)) -> np.ndarray:
        return self.numbers(t[key], f"{where}.{key}", 3) if key in t else np.array(default, dtype=float)

    def placement(self, t: dict, where: str) -> tuple[np.ndarray, np.ndarray]:
        """(rotation, translation) from optional ``rpy`` (radians, URDF convention) and ``xyz``."""
        return rpy_to_matrix(self.vector(t, "rpy", where)), self.vector(t, "xyz", where)

    def axis(self, t: dict, key: str, where: str, default=None) -> np.ndarray:
        if key not in t and default is not None:
            return np.array(default, dtype=float)
        a = self.numbers(self.get(t, key, where, object), f"{where}.{key}", 3)
        if np.linalg.norm(a) < 1e-12:
            raise self.error(f"{where}.{key}", f"zero-length axis {list(a)}")
        return a

    # ------------------------------------------------------------ sections
    def include(self, model: Model, item: "_Item") -> None:
        spec, where = item.spec, item.where
        R, t = self.placement(spec, where)
        floating = self.get(spec, "floating_base", where, bool, False)
        spheres = self.get(spec, "contact_spheres", where, bool, False)
        geometry = self.get(spec, "contact_geometry", where, bool, False)
        place = dict(prefix=spec.get("prefix", ""), parent=item.parent, rotation=R, translation=t,
                     floating_base=floating)
        try:
            if isinstance(item.robot, MjcfModel):
                if spheres or geometry:
                    raise ValueError(f"{'contact_spheres' if spheres else 'contact_geometry'} "
                                     "applies to a URDF include (an MJCF include's geoms are read "
                                     "by soa_fmu.io.mjcf)")
                add_mjcf(model, item.robot, strict=self.strict, **place)
            else:
                add_urdf(model, item.robot, contact_spheres=spheres, contact_geometry=geometry,
                         **place)
        except ValueError as e:
            raise self.error(where, str(e)) from None
        for name in item.names:
            self.where_of_body[name] = f"{where} ({spec.get('urdf') or spec.get('mjcf')})"

    def flexible(self, spec: dict, where: str):
        """A body's ``flexible`` table: a built-in beam or a finite-element file, reduced to its
        ``modes`` (docs/flexible.md)."""
        from .. import flexible as fx
        kind = self.get(spec, "kind", where, str)
        if kind not in FLEXIBLE_KINDS:
            raise self.error(f"{where}.kind", f"unknown flexible kind {kind!r} (expected one of "
                                              f"{', '.join(FLEXIBLE_KINDS)})")
        self.table(spec, where, KEYS["flexible"] | FLEXIBLE_KINDS[kind])
        modes = self.get(spec, "modes", where, int)
        zeta = self.get(spec, "damping_ratio", where, float, 0.0)
        try:
            if kind == "beam":
                args = {k: self.get(spec, k, where, float) for k in
                        ("length", "rho_A", "EA", "EI_y", "EI_z", "GJ")}
                fe = fx.beam(**args, elements=self.get(spec, "elements", where, int),
                             rho_J=self.get(spec, "rho_J", where, float, None))
            else:
                path = Path(self.get(spec, "file", where, str))
                fe = fx.load_fe(path if path.is_absolute() else Path(self.path).parent / path)
            return fx.reduce(fe, modes, zeta)
        except (fx.FlexibleError, ValueError) as e:
            raise self.error(where, str(e)) from None

    def body(self, model: Model, item: "_Item") -> None:
        spec, where, name = item.spec, item.where, item.names[0]
        flexible = None
        if "flexible" in spec:
            flexible = self.flexible(self.get(spec, "flexible", where, dict), f"{where}.flexible")
            for key in ("mass", "com", "inertia"):
                if key in spec:
                    raise self.error(f"{where}.{key}", "a flexible body's mass properties come from "
                                                       "its finite-element model; remove it")
        node = self.get(spec, "node", where, int, None)
        mass = self.get(spec, "mass", where, float, 0.0)
        if mass < 0:
            raise self.error(f"{where}.mass", f"negative mass {mass}")
        inertia = self.inertia(spec.get("inertia"), f"{where}.inertia")
        try:
            problem = inertia_problem(mass, inertia, self.strict)
        except ModelError as e:
            raise self.error(f"{where}.inertia", str(e).removeprefix("inertia: ")) from None
        if problem:
            warnings.warn(f"{self.error(f'{where}.inertia', f'body {name!r}: {problem}')}{LENIENT_NOTE}",
                          ModelWarning, stacklevel=2)
        jw = f"{where}.joint"
        jspec = self.get(spec, "joint", where, dict)
        jtype = self.get(jspec, "type", jw, str)
        if jtype not in JOINT_TYPES:
            raise self.error(f"{jw}.type", f"unknown joint type {jtype!r} (expected one of "
                                           f"{', '.join(JOINT_TYPES)})")
        cls, extra = JOINT_TYPES[jtype]
        self.table(jspec, jw, JOINT_KEYS | extra)
        args = {}
        if "axis" in extra:
            args["axis"] = self.axis(jspec, "axis", jw)
        if "S" in extra:
            args["S"] = self.matrix_s(self.get(jspec, "S", jw, list), f"{jw}.S")
        try:
            joint = cls(**args)
        except ValueError as e:
            raise self.error(jw, str(e)) from None
        lw = f"{jw}.limits"
        lim = self.table(jspec.get("limits", {}), lw, KEYS["limits"])
        limits = {k: self.number(v, f"{lw}.{k}", limit=math.inf) for k, v in lim.items()}
        R, t = self.placement(jspec, jw)
        jname, com = self.name(jspec, "name", jw, name), self.vector(spec, "com", where)
        try:
            model.add_body(name, item.parent, joint, joint_name=jname, rotation=R, translation=t,
                           mass=mass, com=com, inertia=None if flexible else inertia,
                           limits=limits, physical=not problem, flexible=flexible, node=node)
        except ValueError as e:
            raise self.error(where, str(e)) from None
        self.where_of_body[name] = where

    def inertia(self, value, where: str) -> np.ndarray:
        """[ixx, iyy, izz] (principal), a 3×3 matrix, or {ixx, iyy, izz, ixy=0, ixz=0, iyz=0}."""
        if value is None:
            return np.zeros((3, 3))
        if isinstance(value, dict):
            self.table(value, where, set(INERTIA_KEYS))
            xx, yy, zz, xy, xz, yz = (self.get(value, k, where, float, ... if k in INERTIA_KEYS[:3]
                                               else 0.0) for k in INERTIA_KEYS)
            return np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
        if isinstance(value, list) and value and all(isinstance(r, list) for r in value):
            if len(value) != 3:
                raise self.error(where, f"a 3×3 matrix needs 3 rows, got {len(value)}")
            return np.array([self.numbers(r, f"{where}[{i}]", 3) for i, r in enumerate(value)])
        return np.diag(self.numbers(value, where, 3))

    def matrix_s(self, rows: list, where: str) -> np.ndarray:
        """The 6 × r joint map of a general joint, given as 6 rows of r numbers."""
        if len(rows) != 6 or not all(isinstance(r, list) for r in rows):
            raise self.error(where, "expected 6 rows (a 6×r matrix: one column per dof)")
        r = len(rows[0])
        return np.array([self.numbers(row, f"{where}[{i}]", r) for i, row in enumerate(rows)])

    def frame(self, model: Model, spec: dict, where: str) -> None:
        R, t = self.placement(spec, where)
        name, body = self.name(spec, "name", where), self.name(spec, "body", where)
        try:
            model.add_frame(name, body, R, t, node=self.get(spec, "node", where, int, None))
        except ValueError as e:
            raise self.error(where, str(e)) from None

    def constraint(self, model: Model, spec: dict, where: str) -> None:
        kind = self.get(spec, "kind", where, str)
        if kind not in CONSTRAINT_KINDS:
            raise self.error(f"{where}.kind", f"unknown constraint kind {kind!r} (expected one of "
                                              f"{', '.join(CONSTRAINT_KINDS)})")
        args = (self.name(spec, "name", where), kind, self.name(spec, "frame_a", where),
                self.name(spec, "frame_b", where), self.axis(spec, "axis", where, (0.0, 0.0, 1.0)),
                self.get(spec, "active", where, bool, True))
        try:
            model.add_constraint(*args)
        except ValueError as e:
            raise self.error(where, str(e)) from None

    def initial(self, model: Model, spec: dict) -> None:
        self.table(spec, "initial", KEYS["initial"])
        if "q" in spec:
            q = self.state(model, spec["q"], "initial.q", model.neutral_configuration(), "nq")
            for jname, s in model.quaternion_slices():
                n = np.linalg.norm(q[s:s + 4])
                if abs(n - 1.0) > 1e-6:
                    raise self.error("initial.q", f"quaternion of joint {jname!r} "
                                                  f"(q[{s + 1}..{s + 4}]) has norm {n:.9g}, not 1")
                q[s:s + 4] /= n
            model.initial_q = q
        if "qd" in spec:
            model.initial_qd = self.state(model, spec["qd"], "initial.qd", np.zeros(model.nv), "nv")

    def state(self, model: Model, value, where: str, x: np.ndarray, size: str) -> np.ndarray:
        """A full vector, or {joint name: value(s)} over the given default ``x``."""
        if not isinstance(value, dict):
            return self.numbers(value, where, len(x))
        joints = {b.joint_name: b for b in model.bodies}
        for jname, v in value.items():
            b = joints.get(jname)
            if b is None:
                raise self.error(f"{where}.{jname}", "unknown joint")
            n = getattr(b.joint, size)
            if n == 0:
                raise self.error(f"{where}.{jname}", f"{b.joint.type_name} joint has no coordinates")
            s = b.q_index if size == "nq" else b.v_index
            x[s:s + n] = self.numbers(v, f"{where}.{jname}", n) if n > 1 or isinstance(v, list) \
                else self.number(v, f"{where}.{jname}")
        return x


@dataclass
class _Item:
    """An include or a body: what it hangs from and the body names it adds."""

    where: str
    spec: dict
    parent: str
    names: list[str]
    robot: UrdfRobot | MjcfModel | None = None


def load_native(path: str | os.PathLike, floating_base: bool = False, strict: bool = True) -> Model:
    """Read a native TOML model file (see docs/model-files.md) into a Model.  The file is read
    leniently (non-physical inertias accepted with a ModelWarning) if ``strict=False`` or the file
    says ``strict = false``.  A file that exhausts the parser (arrays or inline tables nested
    hundreds deep, no memory left) is refused with one ModelError naming it."""
    path = os.fspath(path)
    try:
        return _load_native(path, floating_base, strict)
    except (RecursionError, MemoryError) as e:
        what = "nested too deeply" if isinstance(e, RecursionError) else "too large"
        raise ModelError(f"{path}: malformed TOML: arrays or tables {what} for the reader "
                         f"(a model file needs only a few levels)") from None


def _load_native(path: str, floating_base: bool, strict: bool) -> Model:
    try:
        text = read_bounded(path).decode("utf-8")
    except UnicodeDecodeError as e:
        raise ModelError(f"{path}: not a UTF-8 text file (byte {e.start})") from None
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ModelError(f"{path}: malformed TOML: {e}") from None
    rd = _Reader(path, text)
    rd.table(doc, "", KEYS["top"])
    rd.strict = rd.get(doc, "strict", "", bool, True) and strict
    includes = rd.tables(doc, "include", KEYS["include"])
    if "urdf" in doc:       # shorthand for an unprefixed include at the world origin
        includes.insert(0, ("urdf", {"urdf": doc["urdf"], "floating_base": floating_base
                                     or rd.get(doc, "floating_base", "", bool, False)}))
    elif floating_base or "floating_base" in doc:
        raise rd.error("floating_base", "applies only to a top-level 'urdf' include; give each "
                                        "[[include]] its own floating_base, or use a 'free' joint")
    items = [_include_item(rd, where, spec) for where, spec in includes]
    items += [_Item(where, spec, rd.name(spec, "parent", where, WORLD), [rd.name(spec, "name", where)])
              for where, spec in rd.tables(doc, "bodies", KEYS["body"])]
    name = rd.name(doc, "name", "", items[0].robot.name if "urdf" in doc else Path(path).stem)
    model = Model(name)
    model.source = path
    if "gravity" in doc:
        model.gravity = rd.numbers(doc["gravity"], "gravity", 3)
    for item in _tree_order(rd, items):
        (rd.include if item.robot else rd.body)(model, item)
    for where, spec in rd.tables(doc, "frames", KEYS["frame"]):
        rd.frame(model, spec, where)
    for where, spec in rd.tables(doc, "constraints", KEYS["constraint"]):
        rd.constraint(model, spec, where)
    bad = singular_joint(model) or degenerate_axes(model, rd.strict)
    if bad is not None:
        b = model.bodies[bad[0]]
        raise rd.error(rd.where_of_body.get(b.name, b.name),
                       f"joint {b.joint_name!r} (body {b.name!r}) {bad[1]}")
    if "contact" in doc:
        _contact(rd, model, doc["contact"])
    if "initial" in doc:
        rd.initial(model, doc["initial"])
    return model


def _contact(rd: _Reader, model: Model, spec) -> None:
    """``[contact]`` (the law's model-wide constants), ``[[contact.planes]]``,
    ``[[contact.spheres]]``, ``[[contact.geoms]]`` (new geometries, or overrides of an included
    one's law, ``collide`` and ``exclude``; docs/contact.md)."""
    spec = rd.table(spec, "contact", KEYS["contact"])

    def law(t: dict, where: str) -> dict:
        out = {}
        for key in LAW:
            if key in t:
                x = rd.get(t, key, where, float)
                positive = LAW[key][2]
                if x < 0 or (positive and x == 0):
                    raise _contact_error(rd, where, key, f"must be {'> 0' if positive else '≥ 0'}, "
                                                         f"got {x!r}")
                out[key] = x
        return out

    model.contact_law = law(spec, "contact")
    for kind in ("planes", "spheres", "geoms"):
        items = spec.get(kind, [])
        if not isinstance(items, list):
            raise rd.error(f"contact.{kind}", f"expected an array of tables ([[contact.{kind}]]), "
                                              f"got {_kind(items)}")
        for i, t in enumerate(items):
            where = f"contact.{kind}[{i}]"
            t = rd.table(t, where, KEYS[f"contact.{kind}"])
            name, lw = rd.name(t, "name", where), law(t, where)
            if kind == "geoms":
                _geom(rd, model, t, where, name, lw)
                continue
            if kind == "planes":
                args = (rd.vector(t, "point", where), rd.axis(t, "normal", where, (0.0, 0.0, 1.0)))
            else:
                args = (rd.name(t, "body", where), rd.vector(t, "center", where),
                        rd.get(t, "radius", where, float, 0.0))
                lw["collide"] = rd.get(t, "collide", where, bool, True)
            try:
                if kind == "planes":
                    model.add_contact_plane(name, *args, **lw)
                else:
                    model.add_contact_sphere(name, *args, **lw)
            except ModelError as e:
                raise _contact_error(rd, where, None, str(e)) from None


def _geom(rd: _Reader, model: Model, t: dict, where: str, name: str, lw: dict) -> None:
    """One ``[[contact.geoms]]``: a new geometry (with ``body``), or the overrides of an existing
    one (an included URDF's: its law constants, ``collide``, ``exclude``)."""
    exclude = rd.get(t, "exclude", where, list, [])
    if not all(isinstance(x, str) for x in exclude):
        raise _contact_error(rd, where, "exclude", "expected a list of geometry names")
    if "body" not in t:
        g = next((g for g in model.contact_geoms if g.name == name), None)
        if g is None:
            raise _contact_error(rd, where, "name", f"no contact geometry {name!r} to override "
                                                   "(a new one needs a body)")
        extra = set(t) - set(LAW) - {"name", "collide", "exclude"}
        if extra:
            raise _contact_error(rd, where, sorted(extra)[0], "an override sets only the law's "
                                 "constants, collide and exclude (a new geometry needs a body)")
        g.law = g.law | lw
        for pr in model.contact_pairs:       # the geometry's override wins over its pairs' (MJCF)
            if name in (pr.geom, pr.other):
                pr.law = {k: x for k, x in pr.law.items() if k not in lw}
        g.collide = rd.get(t, "collide", where, bool, g.collide)
        g.exclude = g.exclude | frozenset(exclude)
        model._invalidate()
        return
    shape = rd.get(t, "shape", where, str, "sphere")
    kw = dict(center=rd.vector(t, "center", where), radius=rd.get(t, "radius", where, float, 0.0),
              half_length=rd.get(t, "half_length", where, float, 0.0),
              half_extents=rd.vector(t, "half_extents", where), radii=rd.vector(t, "radii", where),
              collide=rd.get(t, "collide", where, bool, True), exclude=exclude, **lw)
    if "rpy" in t:
        kw["rotation"] = rpy_to_matrix(rd.vector(t, "rpy", where))
    if shape == "mesh":
        from .urdf import UrdfCollision, add_collision
        c = UrdfCollision("mesh", kw.pop("rotation", np.eye(3)), kw.pop("center"), 0,
                          mesh=rd.get(t, "mesh", where, str),
                          scale=rd.vector(t, "scale", where, (1.0, 1.0, 1.0)))
        try:
            add_collision(model, name, rd.name(t, "body", where), c, Path(rd.path).parent,
                          collide=kw["collide"], exclude=exclude, **lw)
        except ModelError as e:
            raise _contact_error(rd, where, None, str(e)) from None
        return
    try:
        model.add_contact_geom(name, rd.name(t, "body", where), shape, **kw)
    except ModelError as e:
        raise _contact_error(rd, where, None, str(e)) from None


def _contact_error(rd: _Reader, where: str, key: str | None, problem: str) -> ModelError:
    """A located error in ``[contact]`` / ``[[contact.<kind>]]`` (the n-th header, then the key)."""
    lines = rd.text.splitlines()
    m = re.match(r"contact\.(\w+)\[(\d+)\]", where)
    header = (rf"\s*\[\[\s*contact\.{m.group(1)}\s*\]\]" if m else r"\s*\[\s*contact\s*\]")
    hits = [i for i, ln in enumerate(lines) if re.match(header, ln)]
    n = int(m.group(2)) if m else 0
    line = None
    if n < len(hits):
        line = hits[n] + 1
        end = next((i for i in range(hits[n] + 1, len(lines)) if re.match(r"\s*\[", lines[i])),
                   len(lines))
        if key is not None:
            line = next((i + 1 for i in range(hits[n], end)
                         if re.match(rf"\s*{key}\s*=", lines[i])), line)
    path = f"{where}.{key}" if key else where
    return ModelError(f"{rd.path}{f':{line}' if line else ''}: {path}: {problem}")


def _include_item(rd: _Reader, where: str, spec: dict) -> _Item:
    """Parse an included URDF or MJCF file (its body names are needed to order the tree)."""
    if ("urdf" in spec) == ("mjcf" in spec):
        raise rd.error(where, "give exactly one of 'urdf' and 'mjcf' (the file to include)")
    kind = "urdf" if "urdf" in spec else "mjcf"
    file = Path(rd.path).parent / rd.get(spec, kind, where, str)   # an absolute file stays absolute
    prefix = rd.get(spec, "prefix", where, str, "")
    try:
        robot = parse_urdf(file, rd.strict) if kind == "urdf" else parse_mjcf(file)
    except ModelError as e:
        raise rd.error(where, str(e)) from None
    if kind == "mjcf":
        warn_unsupported(robot, str(rd.error(where, "")))
        return _Item(where, spec, rd.name(spec, "parent", where, WORLD),
                     [prefix + n for n in robot.names], robot)
    warn_unphysical(robot, str(rd.error(where, "")))
    names = [prefix + n for n in robot.links if n != WORLD or robot.root != WORLD]
    return _Item(where, spec, rd.name(spec, "parent", where, WORLD), names, robot)


def _tree_order(rd: _Reader, items: list[_Item]) -> list[_Item]:
    """Includes and bodies, parents before children (includes first, then file order)."""
    known: dict[str, str] = {}
    for item in items:
        for name in item.names:
            if name in known:
                raise rd.error(item.where, f"duplicate body name {name!r} (also in {known[name]})")
            known[name] = item.where
    for item in items:
        if item.parent != WORLD and item.parent not in known:
            raise rd.error(f"{item.where}.parent", f"unknown parent body {item.parent!r}")
    ordered = parents_first(items, lambda it: it.parent, lambda it: it.names, [WORLD])
    if len(ordered) < len(items):
        left = [it.where for it in items if it not in ordered]
        raise rd.error(left[0], f"not connected to world: the parents of {', '.join(left)} form a cycle")
    return ordered


def _line_of(text: str, where: str) -> int | None:
    """Best-effort line of an element path (tomllib gives none after parsing): for ``array[n].a.b``
    the n-th ``[[array]]`` header, then the first lines below it (before the next header of that
    kind) that mention ``a``, then ``b``; for ``key.a`` the line that sets ``key`` or opens ``[key]``."""
    m = re.match(r"(\w+)(?:\[(\d+)\])?(.*)", where)
    if not m:
        return None
    key, index, segments = m.group(1), m.group(2), re.findall(r"\.(\w+)", m.group(3))
    lines = text.splitlines()
    pattern = (rf"\s*\[\[\s*{key}\s*\]\]" if index is not None
               else rf"\s*(\[\s*{key}\s*[\].]|{key}\s*=)")
    hits = [i for i, line in enumerate(lines) if re.match(pattern, line)]
    n = int(index or 0)
    if n >= len(hits):
        return None
    end = next((i for i in range(hits[n] + 1, len(lines))
                if re.match(r"\s*\[\[" if index is not None else r"\s*\[(?!\s*" + key + r"\b)",
                            lines[i])), len(lines))
    pos = hits[n]
    for seg in segments:
        found = next((i for i in range(pos, end) if re.search(rf"(^|[{{,\s.\[]){seg}\s*[=\]]", lines[i])),
                     None)
        if found is None:
            break
        pos = found
    return pos + 1


def _kind(value) -> str:
    return {dict: "a table", list: "an array", str: "a string", bool: "a boolean"}.get(
        type(value), type(value).__name__)


_TYPE_NAMES = {str: "string", bool: "boolean (true/false)", dict: "table", list: "array"}
