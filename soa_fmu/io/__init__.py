"""Model files -> :class:`~soa_fmu.model.Model` (SPEC §1 step 1, §5 ``load_model``).

``load_model`` dispatches on the file suffix: ``.urdf`` (the robotics standard, :mod:`.urdf`) or
``.toml`` (the project's own format, :mod:`.toml`; see docs/model-files.md) or ``.xml`` / ``.mjb``
(MJCF, compiled by MuJoCo, :mod:`.mjcf`; see docs/mjcf.md).  What the readers share is in
:mod:`.checks`.  Imports run one way: this module -> toml -> urdf, mjcf -> checks (a native file can
include URDF and MJCF files).
"""
from __future__ import annotations

import os
from pathlib import Path

from ..model import Model, ModelError
from .checks import ModelWarning
from .mjcf import load_mjcf
from .toml import load_native
from .urdf import load_urdf

__all__ = ["load_model", "ModelWarning", "MODEL_SUFFIXES"]
MJCF_SUFFIXES = (".xml", ".mjb")
MODEL_SUFFIXES = (".urdf", ".toml") + MJCF_SUFFIXES


def load_model(path: str | os.PathLike, floating_base: bool = False, strict: bool = True,
               contact_floor: float | None = None) -> Model:
    """Read a ``.urdf``, ``.toml`` or MJCF (``.xml``, or MuJoCo's compiled ``.mjb``) model file.

    ``floating_base=True`` attaches the root body to world by a free joint named ``root_joint``
    (URDF; for a native file it applies to its top-level ``urdf`` include).  Raises
    :class:`~soa_fmu.model.ModelError` naming the file, line/element and problem.

    ``strict=False`` accepts a body whose inertia fails only the physical checks (not positive
    semi-definite, or breaking the triangle inequality — as in some published robot files), with one
    :class:`ModelWarning` per such body naming file, line, link and problem.  Everything else
    (NaN, negative mass, asymmetric tensor, bad XML, a massless moving subtree, …) is still an error.

    ``contact_floor`` (URDF): every ``<collision>`` sphere becomes a contact sphere, and a floor
    plane ``floor`` is added at this height (docs/contact.md; a native file says the same with
    ``contact_spheres = true`` in an include and ``[[contact.planes]]``).
    """
    suffix = Path(path).suffix.lower()
    if suffix == ".urdf":
        return load_urdf(path, floating_base=floating_base, strict=strict,
                         contact_floor=contact_floor)
    if contact_floor is not None:
        raise ModelError(f"{os.fspath(path)}: contact_floor applies to a URDF file; a native file "
                         "declares its contact in [contact] (docs/contact.md)")
    if suffix == ".toml":
        return load_native(path, floating_base=floating_base, strict=strict)
    if suffix in MJCF_SUFFIXES:
        return load_mjcf(path, floating_base=floating_base, strict=strict)
    raise ModelError(f"{os.fspath(path)}: unknown model file type {suffix or '(no suffix)'!r} "
                     "(expected .urdf, .toml, or MJCF .xml / .mjb)")
