"""A model's 3-D shape inside an FMU: packed once when the FMU is built, read back by the viewer.

Build (``build_fmu.build`` calls :func:`pack_visuals`): every mesh the bundled model file's visuals
reference — URDF ``<visual>`` meshes (``package://``, ``file://`` and relative paths; in a URDF model
file or in the URDFs a native file includes) and a native file's ``shape = "mesh"`` visuals — is read
once through trimesh (:func:`~soa_fmu.view.geometry.load_mesh`), simplified by quadric decimation
when it has more than :data:`MAX_TRIANGLES` triangles, and written as binary glTF (float32
positions, 32-bit indices, its colour as the material's base colour) to
``resources/model/visuals/<name>_<hash>.glb``.  The model file inside the FMU is rewritten to point
at it (a path relative to the file).  Collision meshes are not converted: those the contact
geometry comes from travel as they are (``build_fmu.bundle_meshes``); the viewer draws their
hulls.

Read (``soa-view``, ``sf.animate``, ``soa-sweep --view``): :func:`model_from_fmu` loads the model
file with the options ``resources/fmu.json`` records (floating base, strict/lenient); everything else
(prefixes, contact spheres and floor) is in the model file itself.
"""
from __future__ import annotations

import hashlib
import json
import posixpath
import re
import tomllib
import warnings
import tempfile
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..fmu import load_bundled_model
from ..io import load_model
from ..model import Model
from .geometry import ViewWarning, load_mesh, read_mesh, resolve_uri, toml_mesh_files, urdf_includes

VISUALS = "visuals"          # the folder under resources/model/
MAX_TRIANGLES = 10_000       # a mesh with more is simplified to this many (docs/viewing.md)


def glb_bytes(mesh, max_triangles: int = MAX_TRIANGLES) -> bytes:
    """A :class:`~soa_fmu.view.geometry.Mesh` as binary glTF, simplified above ``max_triangles``
    (fast-simplification's quadric decimation, through trimesh)."""
    import trimesh
    tm = trimesh.Trimesh(mesh.vertices, mesh.faces, process=False)
    if len(tm.faces) > max_triangles:
        tm = tm.simplify_quadric_decimation(face_count=max_triangles)
    rgba = [int(round(255 * c)) for c in mesh.color]
    tm.visual = trimesh.visual.TextureVisuals(material=trimesh.visual.material.PBRMaterial(
        baseColorFactor=rgba, metallicFactor=0.0, roughnessFactor=1.0))
    return tm.export(file_type="glb", include_normals=False)


class _Packer:
    """Converts each mesh file once and names it by its content."""

    def __init__(self, out: dict[str, bytes], tmp: Path):
        self.out, self.tmp = out, tmp
        self.names: dict[Path, str | None] = {}

    def bundled(self, key: str, uri: str) -> Path | None:
        """A mesh the bundle holds already (a contact mesh, build_fmu.bundle_meshes), referenced
        by ``uri`` from the file at ``key``: as a file in the packer's temporary folder."""
        rel = posixpath.normpath(posixpath.join(posixpath.dirname(key), uri))
        if "://" in uri or rel not in self.out or rel.startswith(".."):
            return None
        file = self.tmp / rel
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_bytes(self.out[rel])
        return file

    def mesh(self, file: Path) -> str | None:
        """The converted mesh's path under resources/model/ (None: unreadable, already warned)."""
        if file not in self.names:
            m = read_mesh(file) if file.is_relative_to(self.tmp) else load_mesh(file)   # (no cache)
            name = None
            if m is not None:
                data = glb_bytes(m)
                stem = re.sub(r"[^A-Za-z0-9_.-]", "_", file.stem)
                name = f"{VISUALS}/{stem}_{hashlib.sha256(data).hexdigest()[:10]}.glb"
                self.out[name] = data
            self.names[file] = name
        return self.names[file]

    def urdf(self, source: Path, key: str, data: bytes) -> bytes:
        """URDF ``data`` (bundled at ``key``, read from ``source``) with its visual meshes packed
        and its ``<mesh filename>`` pointing at them."""
        from lxml import etree

        from ..io.urdf import _parse_xml
        root = _parse_xml(str(source), data)
        changed = False
        for el in root.iterfind("link/visual/geometry/mesh"):
            uri = el.get("filename") or ""
            file = resolve_uri(uri, source.parent) or self.bundled(key, uri)
            if file is None:
                warnings.warn(f"{source}:{el.sourceline}: mesh {uri!r} not found; the FMU carries no "
                              "shape for it", ViewWarning, stacklevel=4)
                continue
            name = self.mesh(file)
            if name is not None:
                el.set("filename", posixpath.relpath(name, posixpath.dirname(key) or "."))
                changed = True
        return etree.tostring(root, xml_declaration=True, encoding="UTF-8") if changed else data


def pack_visuals(model_path, files: dict[str, bytes], top: str) -> dict[str, bytes]:
    """``files`` (what :func:`build_fmu.bundle_model` bundles under resources/model/, the model
    file at ``top``) plus the converted meshes, with the model files pointing at them.  An MJCF
    model (bundled as MuJoCo's compiled .mjb) carries its meshes already."""
    with tempfile.TemporaryDirectory(prefix="soa_fmu_visuals_") as tmp:
        return _pack(Path(model_path).resolve(), dict(files), top, _Packer(dict(files), Path(tmp)))


def _pack(model_path: Path, files: dict[str, bytes], top: str, packer: _Packer) -> dict[str, bytes]:
    out = packer.out
    suffix = model_path.suffix.lower()
    if suffix == ".urdf":
        out[top] = packer.urdf(model_path, top, files[top])
    elif suffix == ".toml":
        source = tomllib.loads(model_path.read_text(encoding="utf-8"))
        text = files[top].decode("utf-8")
        bundled = tomllib.loads(text)
        done = set()
        for (ref, _), (new, _) in zip(urdf_includes(source), urdf_includes(bundled)):
            key = posixpath.normpath(posixpath.join(posixpath.dirname(top), new))
            if key in files and key not in done:
                done.add(key)
                out[key] = packer.urdf(model_path.parent / ref, key, files[key])
        for ref in dict.fromkeys(toml_mesh_files(source)):
            file = resolve_uri(ref, model_path.parent)
            name = packer.mesh(file) if file is not None else None
            quoted = [q + ref + q for q in ('"', "'") if q + ref + q in text]
            if name is not None and quoted:
                text = text.replace(quoted[0], json.dumps(posixpath.relpath(name, posixpath.dirname(top)
                                                                            or ".")))
        out[top] = text.encode("utf-8")
    return out


# ---------------------------------------------------------------- reading an FMU
def model_from_fmu(path, tmp) -> Model:
    """The model inside an FMU built by soa-build-fmu, extracted into folder ``tmp`` (with its
    includes and visuals) and loaded as the FMU loads it: the options of ``resources/fmu.json``."""
    path = Path(path)
    try:
        with zipfile.ZipFile(path) as z:
            names = [n for n in z.namelist() if (n.startswith("resources/model/") or
                                                 n == "resources/fmu.json") and not n.endswith("/")]
            z.extractall(tmp, names)
    except zipfile.BadZipFile:
        raise ValueError(f"{path}: not an FMU (not a zip archive)") from None
    except OSError as e:
        raise ValueError(f"{path}: cannot read the FMU: {e.strerror or e}") from None
    resources = Path(tmp) / "resources"
    if "resources/fmu.json" not in names:
        raise ValueError(f"{path}: no resources/fmu.json (not built by soa-build-fmu?)")
    try:
        cfg = json.loads((resources / "fmu.json").read_text(encoding="utf-8"))
    except ValueError as e:
        raise ValueError(f"{path}: resources/fmu.json is not JSON ({e})") from None
    if not (isinstance(cfg, dict) and isinstance(cfg.get("model_file"), str) and "floating_base" in cfg):
        raise ValueError(f"{path}: resources/fmu.json names no model_file and floating_base")
    model_file = (resources / cfg["model_file"]).resolve()
    if not (model_file.is_relative_to(resources.resolve()) and model_file.is_file()):
        raise ValueError(f"{path}: resources/{cfg['model_file']} (named by resources/fmu.json) is "
                         "missing")
    with warnings.catch_warnings():               # (the build reported them)
        warnings.simplefilter("ignore")
        return load_bundled_model(resources, cfg)


@contextmanager
def opened_model(model, floating_base: bool = False, strict: bool = True,
                 contact_floor: float | None = None) -> Iterator[Model]:
    """A Model as it is; a model file loaded (``floating_base``: a URDF's free-flyer root;
    ``strict=False``: as ``--lenient``; ``contact_floor``: its collision geometry on a floor);
    an FMU's model loaded from a temporary folder that lasts
    as long as the ``with`` block (its meshes are read meanwhile), the warnings about its files
    naming the FMU, not that folder."""
    if isinstance(model, Model):
        yield model
        return
    path = Path(model)
    if path.suffix.lower() != ".fmu":
        yield load_model(path, floating_base=floating_base, strict=strict,
                         contact_floor=contact_floor)
        return
    if floating_base or not strict or contact_floor is not None:
        raise ValueError(f"--floating-base, --lenient and --contact-floor apply to model files; "
                         f"{path.name} says in its resources/fmu.json how its model is read")
    with tempfile.TemporaryDirectory(prefix="soa_view_") as tmp:
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                yield model_from_fmu(path, tmp)
        finally:
            inside = str(Path(tmp) / "resources")
            for w in caught:
                warnings.warn_explicit(str(w.message).replace(inside, f"{path}:resources"),
                                       w.category, w.filename, w.lineno)
