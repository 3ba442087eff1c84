"""What each body looks like: URDF ``<visual>`` elements, the native file's ``visual`` entries, MJCF
geoms (:func:`mjcf_visuals`), and meshes read by trimesh.

* URDF: ``<visual>`` with ``<origin>``, ``<geometry>`` (``box size``, ``cylinder radius length``,
  ``sphere radius``, ``mesh filename scale``) and ``<material>`` (inline ``<color rgba>`` or a named
  top-level material).  Mesh file names: ``package://PKG/rest`` (searched in the URDF's parent
  folders, as ``A/PKG/rest`` or, for a folder ``A`` named PKG, ``A/rest``, then in
  ``ROS_PACKAGE_PATH``), ``file://`` and paths relative to the URDF.
* Native TOML: a body's optional ``visual`` table (or array of tables), see docs/viewing.md::

      visual = { shape = "box", size = [0.1, 0.1, 0.5], xyz = [0, 0, 0.25], color = [0.8, 0.3, 0.1] }

  shapes ``box`` (size), ``cylinder`` (radius, length; along z), ``sphere`` (radius), ``mesh``
  (file relative to the TOML file, scale); ``xyz``/``rpy`` place it in the body frame; ``color`` is
  RGB or RGBA in 0..1.  URDF includes bring their links' visuals, prefixed.

A mesh that cannot be found or read gives a :class:`ViewWarning` and a primitive in its place (a
small box); a mesh shared by several links is read — and embedded — once, and what trimesh read is
kept in a cache folder (:func:`cache_dir`) for the next conversion.
"""
from __future__ import annotations

import hashlib
import math
import os
import tomllib
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..model import Model, ModelError
from ..spatial import rpy_to_matrix

SHAPES = {"box": {"size"}, "cylinder": {"radius", "length"}, "sphere": {"radius"},
          "mesh": {"file", "scale"}}
TOML_KEYS = {"shape", "xyz", "rpy", "color"}
DEFAULT_COLOR = (0.72, 0.74, 0.78, 1.0)
MESH_CACHE_VERSION = 1                # bump when read_mesh changes what it returns


class ViewWarning(UserWarning):
    """A visual that is drawn differently than the file asks (e.g. a missing mesh)."""


@dataclass
class Mesh:
    """Triangles of a mesh file (vertices float32, faces uint32) and its own colour."""
    vertices: np.ndarray
    faces: np.ndarray
    color: tuple


@dataclass
class Visual:
    """One shape fixed on a body: ``kind`` box/cylinder/sphere/mesh, placed by (R, p) in the body."""
    kind: str
    R: np.ndarray = field(default_factory=lambda: np.eye(3))
    p: np.ndarray = field(default_factory=lambda: np.zeros(3))
    size: tuple = (0.1, 0.1, 0.1)     # box: edges; cylinder: (radius, length, 0); sphere: (radius,)
    file: Path | None = None          # mesh: resolved path
    mesh: Mesh | None = None          # mesh: the triangles themselves (an MJCF model's meshes)
    scale: tuple = (1.0, 1.0, 1.0)
    color: tuple | None = None        # RGBA in 0..1; None: the mesh's own colour or the default


# ---------------------------------------------------------------- URDF
def _floats(text: str | None, n: int, what: str) -> list[float]:
    try:
        vals = [float(x) for x in (text or "").split()]
    except ValueError:
        vals = []
    if len(vals) != n or not all(math.isfinite(v) for v in vals):
        raise ModelError(f"{what}: expected {n} finite numbers, got {text!r}")
    return vals


def resolve_uri(uri: str, base: Path) -> Path | None:
    """A URDF mesh filename as a local, resolved path (None when not found)."""
    p = _find(uri, base)
    return None if p is None else p.resolve()


def _find(uri: str, base: Path) -> Path | None:
    if uri.startswith("file://"):
        p = Path(uri[7:])
        return p if p.is_file() else None
    if uri.startswith("package://"):
        pkg, _, rest = uri[10:].partition("/")
        roots = [base, *base.parents]
        roots += [Path(d) for d in os.environ.get("ROS_PACKAGE_PATH", "").split(os.pathsep) if d]
        for a in roots:
            for cand in (a / pkg / rest, a / rest if a.name == pkg else None):
                if cand is not None and cand.is_file():
                    return cand
        return None
    p = Path(uri) if os.path.isabs(uri) else base / uri
    return p if p.is_file() else None


def urdf_visuals(path: str | os.PathLike, prefix: str = "") -> dict[str, list[Visual]]:
    """{prefix + link name: its visuals} of a URDF file (read as safely as the model reader)."""
    from ..io.checks import read_bounded
    from ..io.urdf import _parse_xml
    path = Path(path)
    root = _parse_xml(str(path), read_bounded(path))
    materials = {}
    for m in root.iterchildren("material"):
        c = m.find("color")
        if m.get("name") and c is not None:
            materials[m.get("name")] = tuple(_floats(c.get("rgba"), 4, f"{path}:{c.sourceline}: rgba"))
    out: dict[str, list[Visual]] = {}
    for link in root.iterchildren("link"):
        name = prefix + (link.get("name") or "")
        for el in link.iterchildren("visual"):
            v = _urdf_visual(el, path, materials)
            if v is not None:
                out.setdefault(name, []).append(v)
    return out


def _urdf_visual(el, path: Path, materials: dict) -> Visual | None:
    where = f"{path}:{el.sourceline}"
    o = el.find("origin")
    R, p = np.eye(3), np.zeros(3)
    if o is not None:
        p = np.array(_floats(o.get("xyz", "0 0 0"), 3, f"{where}: origin xyz"))
        R = rpy_to_matrix(_floats(o.get("rpy", "0 0 0"), 3, f"{where}: origin rpy"))
    color = None
    mat = el.find("material")
    if mat is not None:
        c = mat.find("color")
        if c is not None:
            color = tuple(_floats(c.get("rgba"), 4, f"{where}: material rgba"))
        else:
            color = materials.get(mat.get("name"))
    g = el.find("geometry")
    shape = next(iter(g), None) if g is not None else None
    if shape is None:
        return None
    if shape.tag == "box":
        return Visual("box", R, p, tuple(_floats(shape.get("size"), 3, f"{where}: box size")), color=color)
    if shape.tag == "cylinder":
        r = _floats(shape.get("radius"), 1, f"{where}: cylinder radius")[0]
        h = _floats(shape.get("length"), 1, f"{where}: cylinder length")[0]
        return Visual("cylinder", R, p, (r, h, 0.0), color=color)
    if shape.tag == "sphere":
        return Visual("sphere", R, p, (_floats(shape.get("radius"), 1, f"{where}: sphere radius")[0],),
                      color=color)
    if shape.tag == "mesh":
        uri = shape.get("filename") or ""
        scale = tuple(_floats(shape.get("scale", "1 1 1"), 3, f"{where}: mesh scale"))
        file = resolve_uri(uri, path.parent)
        v = Visual("mesh", R, p, file=file, scale=scale, color=color)
        if file is None:
            warnings.warn(f"{where}: mesh {uri!r} not found; a box is drawn in its place",
                          ViewWarning, stacklevel=3)
            v.kind, v.size = "missing", (0.05, 0.05, 0.05)
        return v
    return None


# ---------------------------------------------------------------- native TOML
def _toml_visual(spec, where: str, base: Path) -> Visual:
    if not isinstance(spec, dict):
        raise ModelError(f"{where}: a visual must be a table, got {type(spec).__name__}")
    shape = spec.get("shape")
    if shape not in SHAPES:
        raise ModelError(f"{where}.shape: expected one of {', '.join(SHAPES)}, got {shape!r}")
    unknown = set(spec) - TOML_KEYS - SHAPES[shape]
    if unknown:
        raise ModelError(f"{where}: unknown key(s) {', '.join(sorted(unknown))} for shape {shape!r}")

    def nums(key, n, default=None):
        v = spec.get(key, default)
        if v is None:
            raise ModelError(f"{where}.{key}: required for shape {shape!r}")
        v = [v] if isinstance(v, (int, float)) and n == 1 else v
        if (not isinstance(v, list) or len(v) != n or
                not all(isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in v)):
            raise ModelError(f"{where}.{key}: expected {n} finite number(s), got {spec.get(key)!r}")
        return [float(x) for x in v]

    R = rpy_to_matrix(nums("rpy", 3, [0, 0, 0]))
    p = np.array(nums("xyz", 3, [0, 0, 0]))
    color = None
    if "color" in spec:
        c = spec["color"]
        c = nums("color", len(c) if isinstance(c, list) and len(c) in (3, 4) else 3)
        if not all(0 <= x <= 1 for x in c):
            raise ModelError(f"{where}.color: components must be in 0..1, got {c}")
        color = tuple(c) + ((1.0,) if len(c) == 3 else ())
    if shape == "box":
        return Visual("box", R, p, tuple(nums("size", 3)), color=color)
    if shape == "cylinder":
        return Visual("cylinder", R, p, (nums("radius", 1)[0], nums("length", 1)[0], 0.0), color=color)
    if shape == "sphere":
        return Visual("sphere", R, p, (nums("radius", 1)[0],), color=color)
    f = spec.get("file")
    if not isinstance(f, str) or not f:
        raise ModelError(f"{where}.file: a mesh file name (STL, DAE or OBJ) is required")
    file = resolve_uri(f, base)
    v = Visual("mesh", R, p, file=file, scale=tuple(nums("scale", 3, [1, 1, 1])), color=color)
    if file is None:
        warnings.warn(f"{where}.file: mesh {f!r} not found; a box is drawn in its place",
                      ViewWarning, stacklevel=3)
        v.kind, v.size = "missing", (0.05, 0.05, 0.05)
    return v


def urdf_includes(doc: dict) -> list[tuple[str, str]]:
    """(file as written, prefix) of the URDFs a native model file includes, in the file's order:
    the top-level ``urdf``, then each ``[[include]]`` with ``urdf``."""
    includes = list(doc.get("include", [])) if isinstance(doc.get("include", []), list) else []
    if "urdf" in doc:
        includes.insert(0, {"urdf": doc["urdf"]})
    return [(inc["urdf"], str(inc.get("prefix", ""))) for inc in includes
            if isinstance(inc, dict) and isinstance(inc.get("urdf"), str)]


def toml_mesh_files(doc: dict) -> list[str]:
    """The mesh files of a native model file's body visuals, as written (relative to the file)."""
    out = []
    for body in doc.get("bodies", []) if isinstance(doc.get("bodies", []), list) else []:
        spec = body.get("visual", []) if isinstance(body, dict) else []
        for v in spec if isinstance(spec, list) else [spec]:
            if isinstance(v, dict) and v.get("shape") == "mesh" and isinstance(v.get("file"), str):
                out.append(v["file"])
    return out


def toml_visuals(path: str | os.PathLike) -> dict[str, list[Visual]]:
    """{body name: visuals} of a native model file: its bodies' ``visual`` entries and the visuals
    of the URDFs it includes (prefixed)."""
    path = Path(path)
    where0 = str(path)
    doc = tomllib.loads(path.read_text(encoding="utf-8"))
    out: dict[str, list[Visual]] = {}
    for ref, prefix in urdf_includes(doc):
        out.update(urdf_visuals(path.parent / ref, prefix))
    for inc in doc.get("include", []) if isinstance(doc.get("include", []), list) else []:
        if isinstance(inc, dict) and isinstance(inc.get("mjcf"), str):
            out.update(mjcf_visuals(path.parent / inc["mjcf"], str(inc.get("prefix", ""))))
    for i, body in enumerate(doc.get("bodies", [])):
        if not isinstance(body, dict) or "visual" not in body:
            continue
        spec = body["visual"]
        where = f"{where0}: bodies[{i}].visual"
        specs = spec if isinstance(spec, list) else [spec]
        out[body.get("name", "")] = [_toml_visual(s, f"{where}[{j}]" if isinstance(spec, list) else where,
                                                  path.parent) for j, s in enumerate(specs)]
    return out


# ---------------------------------------------------------------- MJCF
MJCF_SHAPES = {2: "sphere", 3: "capsule", 4: "ellipsoid", 5: "cylinder", 6: "box", 7: "mesh"}   # mjtGeom
MJCF_FREE = 0                          # mjtJoint
MJCF_VISIBLE_GROUPS = 3                # MuJoCo's viewer shows geom groups 0, 1, 2 at first


def mjcf_visuals(path: str | os.PathLike, prefix: str = "") -> dict[str, list[Visual]]:
    """{prefix + body name: visuals} of an MJCF file (``.xml`` or compiled ``.mjb``): the geoms of
    groups 0-2 on bodies (not the world's), placed in our body frame — MuJoCo's body frame moved
    to its last joint's anchor, as :func:`soa_fmu.io.mjcf.add_mjcf` places it — with their
    material's or their own colour; meshes from the compiled model's vertices."""
    from ..io.mjcf import parse_mjcf, quat_to_matrix
    mj = parse_mjcf(path)
    m = mj.m
    meshes: dict[int, Mesh] = {}
    out: dict[str, list[Visual]] = {}
    for g in range(m.ngeom):
        b, kind = int(m.geom_bodyid[g]), MJCF_SHAPES.get(int(m.geom_type[g]))
        mat = int(m.geom_matid[g])
        rgba = tuple(float(x) for x in (m.mat_rgba[mat] if mat >= 0 else m.geom_rgba[g]))
        if b == 0 or kind is None or int(m.geom_group[g]) >= MJCF_VISIBLE_GROUPS or rgba[3] == 0:
            continue
        n, a = int(m.body_jntnum[b]), int(m.body_jntadr[b])
        last = a + n - 1
        anchor = m.jnt_pos[last] if n and int(m.jnt_type[last]) != MJCF_FREE else np.zeros(3)
        R, p = quat_to_matrix(m.geom_quat[g]), np.asarray(m.geom_pos[g], dtype=float) - anchor
        size = [float(x) for x in m.geom_size[g]]
        if kind == "mesh":
            i = int(m.geom_dataid[g])
            if i not in meshes:
                va, vn = int(m.mesh_vertadr[i]), int(m.mesh_vertnum[i])
                fa, fn = int(m.mesh_faceadr[i]), int(m.mesh_facenum[i])
                meshes[i] = Mesh(np.asarray(m.mesh_vert[va:va + vn], dtype=np.float32),
                                 np.asarray(m.mesh_face[fa:fa + fn], dtype=np.uint32), rgba)
            shapes = [Visual("mesh", R, p, mesh=meshes[i])]
        elif kind == "ellipsoid":                    # a unit sphere's mesh, scaled by the semi-axes
            shapes = [Visual("mesh", R, p, mesh=_unit_sphere(), scale=tuple(size))]
        elif kind == "box":
            shapes = [Visual("box", R, p, tuple(2 * x for x in size))]
        elif kind == "sphere":
            shapes = [Visual("sphere", R, p, (size[0],))]
        else:                                        # cylinder, capsule: along z, half-length size[1]
            shapes = [Visual("cylinder", R, p, (size[0], 2 * size[1], 0.0))]
            if kind == "capsule":
                shapes += [Visual("sphere", R, p + s * size[1] * R[:, 2], (size[0],)) for s in (-1, 1)]
        for v in shapes:
            v.color = rgba
        out.setdefault(prefix + mj.body_names[b - 1], []).extend(shapes)
    return out


_SPHERE: list[Mesh] = []


def _unit_sphere() -> Mesh:
    if not _SPHERE:
        import trimesh
        s = trimesh.creation.icosphere(subdivisions=2)
        _SPHERE.append(Mesh(s.vertices.astype(np.float32), s.faces.astype(np.uint32), DEFAULT_COLOR))
    return _SPHERE[0]


def model_visuals(model: Model) -> dict[str, list[Visual]]:
    """Visuals of the model's bodies, read from its source file (URDF, native, MJCF); {} otherwise."""
    src = model.source
    if not src or not Path(src).is_file():
        return {}
    suffix = Path(src).suffix.lower()
    if suffix == ".urdf":
        return urdf_visuals(src)
    if suffix == ".toml":
        return toml_visuals(src)
    if suffix in (".xml", ".mjb"):
        return mjcf_visuals(src)
    return {}


# ---------------------------------------------------------------- meshes
def cache_dir() -> Path:
    """Where read meshes are kept: ``$SOA_FMU_CACHE`` or ``~/.cache/soa_fmu``, then ``meshes/``."""
    root = os.environ.get("SOA_FMU_CACHE") or Path(os.environ.get("XDG_CACHE_HOME") or
                                                   Path.home() / ".cache") / "soa_fmu"
    return Path(root) / "meshes"


def _cache_file(file: Path) -> Path:
    st = file.stat()
    key = hashlib.sha1(f"{MESH_CACHE_VERSION}|{file}|{st.st_size}|{st.st_mtime_ns}".encode()).hexdigest()
    return cache_dir() / f"{key}.npz"


def load_mesh(file: Path) -> Mesh | None:
    """A mesh file's triangles (cached by path, size and modification time: a DAE file takes
    trimesh and pycollada a good fraction of a second to read), None when unreadable."""
    if file.suffix.lower() == ".glb":     # what an FMU carries (soa_fmu.view.bundle): read directly
        return read_mesh(file)
    try:
        cached = _cache_file(file)
        with np.load(cached) as z:
            return Mesh(z["vertices"], z["faces"], tuple(z["color"].tolist()))
    except (OSError, KeyError, ValueError):
        pass
    mesh = read_mesh(file)
    if mesh is not None:
        try:
            cached.parent.mkdir(parents=True, exist_ok=True)
            tmp = cached.with_name(f".{cached.stem}.{os.getpid()}.npz")
            np.savez(tmp, vertices=mesh.vertices, faces=mesh.faces, color=np.array(mesh.color))
            os.replace(tmp, cached)
        except OSError:                 # a read-only home: no cache, no harm
            pass
    return mesh


def read_mesh(file: Path) -> Mesh | None:
    """A mesh file's triangles through trimesh (STL, DAE via pycollada, OBJ, binary glTF), None when
    unreadable."""
    import trimesh
    try:
        loaded = trimesh.load(str(file), force="scene", process=False)
        geoms = [g for g in loaded.dump() if hasattr(g, "faces") and len(g.faces)] \
            if isinstance(loaded, trimesh.Scene) else [loaded]
    except Exception as e:  # noqa: BLE001 — a broken mesh is drawn as a primitive
        warnings.warn(f"{file}: cannot read the mesh ({' '.join(str(e).split())[:100]}); a box is "
                      "drawn in its place", ViewWarning, stacklevel=3)
        return None
    if not geoms:
        warnings.warn(f"{file}: the mesh has no triangles; a box is drawn in its place", ViewWarning,
                      stacklevel=3)
        return None
    mesh = trimesh.util.concatenate(geoms) if len(geoms) > 1 else geoms[0]
    color = DEFAULT_COLOR
    try:
        glb = file.suffix.lower() == ".glb"               # glTF: the material's base colour
        c = np.asarray(mesh.visual.material.baseColorFactor if glb else mesh.visual.main_color,
                       dtype=float) / 255.0
        if c.shape == (4,) and not np.allclose(c[:3], 102 / 255.0):     # trimesh's default grey
            color = tuple(float(x) for x in c)
    except Exception:  # noqa: BLE001 — a mesh without colour information
        pass
    try:
        mesh.merge_vertices(merge_tex=True, merge_norm=True)      # DAE repeats corners per face
    except Exception:  # noqa: BLE001 — keep the mesh as read
        pass
    return Mesh(np.asarray(mesh.vertices, dtype=np.float32), np.asarray(mesh.faces, dtype=np.uint32),
                color)
