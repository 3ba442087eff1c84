"""What both model-file readers (:mod:`soa_fmu.io.urdf`, :mod:`soa_fmu.io.toml`) share.

The bounded file read, number parsing, the inertia checks with their ``strict=False`` warning
(:class:`ModelWarning`), the checks that no moving joint carries a massless subtree or has a
degenerate axis (a singular D; ``strict=False`` adds armature to the latter), and the parents-first
ordering of bodies.
"""
from __future__ import annotations

import argparse
import heapq
import math
import os
import sys
import warnings
from typing import Callable, Iterable, TypeVar

import numpy as np

from .. import _core
from ..model import Model, ModelError, check_inertia
from ..spatial import phi_matrix, spatial_inertia

MAX_FILE_BYTES = 20 * 1024 * 1024     # model files are text; anything larger is refused
MAX_MAGNITUDE = 1e12                  # |x| of a physical model number (SI units); beyond: refused
T = TypeVar("T")
LENIENT_NOTE = " (accepted with strict=False: not the inertia of a rigid body)"   # ends such warnings
LENIENT_HINT = ("; if these are the file's published values, strict=False accepts inertias that "
                "fail only the physical checks, with a warning each")


class OneLineParser(argparse.ArgumentParser):
    """An argparse parser whose usage errors are one line, ``<prog>: error: <message> (see
    --help)``, exiting with ``usage_status`` (2 as argparse does; soa-view uses 1) — the command
    lines' shared form of a bad option."""

    def __init__(self, *args, usage_status: int = 2, **kwargs):
        super().__init__(*args, **kwargs)
        self.usage_status = usage_status

    def error(self, message):
        print(f"{self.prog}: error: {message} (see --help)", file=sys.stderr)
        raise SystemExit(self.usage_status)


def for_cli(message: str) -> str:
    """A reader's message as a command line says it: the option ``strict=False`` is ``--lenient``."""
    return message.replace("strict=False", "--lenient")


def cli_error(message: str, path: str | os.PathLike, floating_base: bool, lenient: bool) -> str:
    """A model file's error as the command lines print it (one line, ``--lenient`` for
    ``strict=False``), with the hint that ``--lenient`` reads the file when its only problem is an
    inertia that fails the physical checks (as in some published robot files)."""
    from . import load_model
    text = " ".join(message.split())
    if not lenient and "inerti" in text and "strict=False" not in text:   # (else it says so)
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
    """A model file construct read with a simplification or an addition (``strict=False``: a
    non-physical inertia accepted, a massless joint locked, armature added to a degenerate axis)."""


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


SINGULAR_D = 1e-9      # D(k) below this fraction of the joint's rigid-subtree inertia: degenerate
WELL_CONDITIONED = 1e-4   # ... and the fraction the armature of strict=False brings it up to


def degenerate_axes(model: Model, strict: bool) -> tuple[int, str] | None:
    """Check the articulated inertia D(k) of every 1-dof joint at the neutral configuration (the
    Riccati sweep, tip to base) against its subtree's rigid inertia about the axis, M_kk.  D(k) <
    SINGULAR_D M_kk is a degenerate axis (e.g. bodies with no rotational inertia lined up on it:
    icub's neck), singular for every forward dynamics.  ``strict``: returns (body index, reason)
    of the first; else adds to each, tip first, the smallest armature that lifts D(k) to
    WELL_CONDITIONED M_kk, and returns None after one ModelWarning naming them."""
    if not model.nv or model.flexible:
        return None
    q = model.neutral_configuration()
    zero = np.zeros(model.nv)
    added: list[str] = []
    for _ in range(model.nv):
        Mkk = np.diag(_core.crba(model.data, q)) + model.joint_armature
        try:
            _core.aba(model.data, q, zero, zero, False)
            failed = -1
        except _core.StatusError as e:
            failed = e.args[2]
        Dinv = model.workspace().Dinv
        bad = None
        for k in range(model.nbodies - 1, max(failed, 0) - 1, -1):   # the sweep's order: tip first
            b = model.bodies[k]
            if b.joint.nv != 1:
                continue
            i = b.v_index
            D = 0.0 if k == failed else 1.0 / Dinv[k][0][0]
            if not D >= SINGULAR_D * Mkk[i]:
                bad = (k, i, max(D, 0.0))
                break
        if bad is None:
            break
        k, i, D = bad
        b = model.bodies[k]
        what = (f"articulated inertia about its axis {D:.3g} at the neutral configuration, "
                f"against {Mkk[i]:.3g} for its subtree held rigid (kg·m² or kg): D is singular "
                f"(links with no inertia about the axis lined up on it?)")
        if strict:
            return k, (f"has a degenerate axis: {what}; strict=False adds the smallest armature "
                       "that makes D well-conditioned")
        a = model.joint_armature
        a[i] += WELL_CONDITIONED * Mkk[i] - D
        model.joint_armature = a
        added.append(f"{b.joint_name!r} {a[i]:.3g} ({what.split(' at ')[0]})")
    if added:
        warnings.warn(f"armature added to {len(added)} joint{'s' if len(added) > 1 else ''} with a "
                      f"degenerate axis, to make D well-conditioned (accepted with strict=False): "
                      + "; ".join(added), ModelWarning, stacklevel=3)
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
