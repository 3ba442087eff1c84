"""What both model-file readers (:mod:`soa_fmu.io.urdf`, :mod:`soa_fmu.io.toml`) share.

The bounded file read, number parsing, the inertia checks with their ``strict=False`` warning
(:class:`ModelWarning`), the check that no moving joint carries a massless subtree (a singular D), and
the parents-first ordering of bodies.
"""
from __future__ import annotations

import heapq
import math
import os
import warnings
from typing import Callable, Iterable, TypeVar

import numpy as np

from ..model import Model, ModelError, check_inertia
from ..spatial import phi_matrix, spatial_inertia

MAX_FILE_BYTES = 20 * 1024 * 1024     # model files are text; anything larger is refused
MAX_MAGNITUDE = 1e12                  # |x| of a physical model number (SI units); beyond: refused
T = TypeVar("T")
LENIENT_NOTE = " (accepted with strict=False: not the inertia of a rigid body)"   # ends such warnings
LENIENT_HINT = ("; if these are the file's published values, strict=False accepts inertias that "
                "fail only the physical checks, with a warning each")


def for_cli(message: str) -> str:
    """A reader's message as a command line says it: the option ``strict=False`` is ``--lenient``."""
    return message.replace("strict=False", "--lenient")


def cli_error(message: str, path: str | os.PathLike, floating_base: bool, lenient: bool) -> str:
    """A model file's error as the command lines print it (one line, ``--lenient`` for
    ``strict=False``), with the hint that ``--lenient`` reads the file when its only problem is an
    inertia that fails the physical checks (as in some published robot files)."""
    from . import load_model
    text = " ".join(message.split())
    if not lenient and "inerti" in text:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                load_model(path, floating_base=floating_base, strict=False)
        except Exception:                    # noqa: BLE001 (another problem too: no hint)
            pass
        else:
            text += LENIENT_HINT
    return for_cli(text)


class ModelWarning(UserWarning):
    """A model file construct that was read with a simplification (e.g. a URDF ``mimic`` joint)."""


def read_bounded(path: str | os.PathLike) -> bytes:
    """The file's bytes, or a ModelError for a missing, unreadable or oversized file."""
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_FILE_BYTES + 1)
    except OSError as e:
        raise ModelError(f"{os.fspath(path)}: cannot read model file: {e.strerror or e}") from None
    if len(data) > MAX_FILE_BYTES:
        raise ModelError(f"{os.fspath(path)}: file larger than {MAX_FILE_BYTES // 2**20} MB; "
                         "refusing to read it as a model file")
    return data


def finite_numbers(values, n: int | None = None, limit: float = MAX_MAGNITUDE) -> list[float]:
    """``values`` (a whitespace-separated string or a sequence) as finite floats of magnitude at
    most ``limit``, exactly ``n`` of them when given.  Raises ValueError stating the problem
    (callers add file and element)."""
    items = values.split() if isinstance(values, str) else values
    if isinstance(items, (bytes, dict)) or not hasattr(items, "__len__"):
        raise ValueError(f"expected {n or 'a list of'} numbers, got {values!r}")
    if n is not None and len(items) != n:
        raise ValueError(f"expected {n} numbers, got {len(items)}: {values!r}")
    out = []
    for v in items:
        if isinstance(v, bool) or not isinstance(v, (int, float, str)):
            raise ValueError(f"expected a number, got {v!r}")
        try:
            x = float(v)
        except ValueError:
            raise ValueError(f"{v!r} is not a number") from None
        if not math.isfinite(x):
            raise ValueError(f"{v!r} is not a finite number")
        if abs(x) > limit:
            raise ValueError(f"{v!r} is out of range (magnitude above {limit:g})")
        out.append(x)
    return out


def inertia_problem(mass: float, inertia: np.ndarray, strict: bool) -> str:
    """Check a body's mass and inertia about its centre of mass.  Raises ModelError ("inertia: …")
    if m < 0 or J is not finite and symmetric, and, when ``strict``, if J is not positive
    semi-definite or breaks the triangle inequality; with ``strict=False`` returns that physical
    problem instead ("" for a physical inertia)."""
    check_inertia(mass, inertia, "inertia", physical=False)
    try:
        check_inertia(mass, inertia, "inertia")
    except ModelError as e:
        if strict:
            raise
        return str(e).removeprefix("inertia: ")
    return ""


def singular_joint(model: Model) -> tuple[int, str] | None:
    """(body index, reason) of the first moving joint whose joint-space inertia H* r(k) H is
    singular at the neutral configuration (r(k): composite inertia of body k and its descendants),
    e.g. a moving massless leaf.  That block is a diagonal block of M, so M and D are singular."""
    n = model.nbodies
    Ic = [spatial_inertia(b.mass, b.com, b.inertia) for b in model.bodies]
    mass = [b.mass for b in model.bodies]
    for k in range(n - 1, -1, -1):
        b = model.bodies[k]
        if b.parent >= 0:        # neutral configuration: body frame = joint frame
            X = phi_matrix(b.rotation, b.translation)
            Ic[b.parent] += X @ Ic[k] @ X.T
            mass[b.parent] += mass[k]
    for k, b in enumerate(model.bodies):
        if b.joint.nv == 0:
            continue
        if mass[k] <= 0.0:
            return k, "moves only massless bodies (no mass in it or its descendants)"
        S = b.joint.motion_subspace()
        lam, scale = np.linalg.eigvalsh(S.T @ Ic[k] @ S).min(), np.abs(Ic[k]).max()
        if lam < -1e-9 * max(1.0, scale):   # only with non-physical link inertias (strict=False)
            return k, ("has negative inertia along one of its dofs (the joint-space inertia of its "
                       "subtree is indefinite at the neutral configuration)")
        if lam <= 1e-12 * scale:
            return k, ("has no inertia along one of its dofs (the joint-space inertia of its subtree "
                       "is singular at the neutral configuration: point masses on the joint axis?)")
    return None


def parents_first(items: list[T], parent_of: Callable[[T], str], names_of: Callable[[T], Iterable[str]],
                  placed: Iterable[str]) -> list[T]:
    """Stable topological order: repeatedly the earliest item (in ``items`` order) whose parent is
    placed; placing it places ``names_of(item)``.  Items left out hang from a cycle or an unknown
    parent (the callers check which)."""
    waiting: dict[str, list[int]] = {}
    for i, item in enumerate(items):
        waiting.setdefault(parent_of(item), []).append(i)
    ready = [i for name in placed for i in waiting.get(name, [])]
    heapq.heapify(ready)
    out = []
    while ready:
        item = items[heapq.heappop(ready)]
        out.append(item)
        for name in names_of(item):
            for i in waiting.get(name, []):
                heapq.heappush(ready, i)
    return out
