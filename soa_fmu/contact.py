"""Compliant contact: spheres on bodies, planes fixed in world (docs/contact.md; core/contact.c).

Hunt–Crossley normal force f_n = k δ^n (1 + d δ̇) ≥ 0 along the contact normal and regularized
Coulomb friction f_t = −μ f_n v_t / sqrt(|v_t|² + v_s²), between every sphere and every plane
and between spheres on different bodies (not parent and child).  The simulator (Simulator, both
FMU flavours) applies the forces as external spatial forces in the O(N) sweeps;
:func:`contact_forces` evaluates them at a state.

The law's constants: the model's (:attr:`Model.contact_law`, TOML ``[contact]``), overridden per
sphere or plane (keyword arguments of :meth:`Model.add_contact_sphere` /
:meth:`Model.add_contact_plane`, TOML keys of ``[[contact.spheres]]`` / ``[[contact.planes]]``).
A pair uses the plane's (or the second sphere's) override of a constant, else the sphere's, else
the model's.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

# name -> (default, SI unit, strictly positive): the order of the C tables (SOA_CT_*)
LAW = {"stiffness": (1e5, "N/m^n", False), "exponent": (1.5, "1", True),
       "dissipation": (1.0, "s/m", False), "friction": (0.8, "1", False),
       "stiction_velocity": (1e-3, "m/s", True)}


class ContactError(ValueError):
    """A contact declaration that cannot be built (names the sphere, plane or constant)."""


def check_law(law: dict, what: str) -> dict:
    """The constants of ``law`` (a subset of :data:`LAW`'s names) as floats, checked."""
    out = {}
    for key, x in law.items():
        if key not in LAW:
            raise ContactError(f"{what}: unknown contact constant {key!r} (expected one of "
                               f"{', '.join(LAW)})")
        if isinstance(x, bool) or not isinstance(x, (int, float, np.integer, np.floating)):
            raise ContactError(f"{what}: {key} must be a number, got {x!r}")
        x = float(x)
        positive = LAW[key][2]
        if not np.isfinite(x) or x < 0 or (positive and x == 0):
            raise ContactError(f"{what}: {key} must be finite and {'> 0' if positive else '≥ 0'}, "
                               f"got {x!r}")
        out[key] = x
    return out


@dataclass
class ContactSphere:
    """A sphere fixed on ``body`` (centre in the body frame, m; radius 0: a point)."""

    name: str
    body: int
    center: np.ndarray
    radius: float
    law: dict = field(default_factory=dict)   # overrides of the model's constants
    collide: bool = True                      # takes part in sphere–sphere contact


@dataclass
class ContactPlane:
    """The half-space n·x ≤ offset fixed in world (n: unit normal out of the solid)."""

    name: str
    normal: np.ndarray
    offset: float
    law: dict = field(default_factory=dict)

    @property
    def point(self) -> np.ndarray:
        """The point of the plane closest to the world origin."""
        return self.offset * self.normal


def sphere_pairs(model) -> list[tuple[int, int]]:
    """The sphere–sphere pairs that may touch: both ``collide``, on different bodies that are not
    parent and child."""
    out = []
    sp = model.contact_spheres
    for a in range(len(sp)):
        for b in range(a + 1, len(sp)):
            ka, kb = sp[a].body, sp[b].body
            if not (sp[a].collide and sp[b].collide) or ka == kb:
                continue
            if model.bodies[ka].parent == kb or model.bodies[kb].parent == ka:
                continue
            out.append((a, b))
    return out


def contact_names(model) -> tuple[str, ...]:
    """Names of the contact elements as the C core numbers them: spheres, planes, sphere pairs."""
    sp = model.contact_spheres
    return (tuple(s.name for s in sp) + tuple(p.name for p in model.contact_planes)
            + tuple(f"{sp[a].name}/{sp[b].name}" for a, b in sphere_pairs(model)))


def fill_core(model, v: dict) -> None:
    """The contact tables of soa.h (views ``v`` of a new core model) from the Python model."""
    keys = list(LAW)
    v["ct_law"][:] = [model.contact_law[k] for k in keys]
    for s, sp in enumerate(model.contact_spheres):
        v["sp_body"][s], v["sp_center"][s], v["sp_radius"][s] = sp.body, sp.center, sp.radius
        v["sp_set"][s] = sum(1 << i for i, k in enumerate(keys) if k in sp.law)
        v["sp_law"][s] = [sp.law.get(k, 0.0) for k in keys]
    for j, pl in enumerate(model.contact_planes):
        v["pl_normal"][j], v["pl_offset"][j] = pl.normal, pl.offset
        v["pl_set"][j] = sum(1 << i for i, k in enumerate(keys) if k in pl.law)
        v["pl_law"][j] = [pl.law.get(k, 0.0) for k in keys]
    for p, (a, b) in enumerate(sphere_pairs(model)):
        v["ss_pair"][p] = (a, b)


@dataclass
class Contacts:
    """The contact forces at one state (:func:`contact_forces`).

    pairs: (sphere, other) names of every pair — sphere–plane pairs first (sphere-major), then
    sphere–sphere; force (npairs × 3, N, world axes): the force on the pair's sphere (the first
    sphere of a sphere–sphere pair; the other gets −force) at point (npairs × 3, world);
    depth (npairs, m): the penetration δ, negative for a gap.  sphere_force (nspheres × 3): the
    total contact force on each sphere; sphere_depth: its deepest penetration (0 when free)."""

    pairs: list[tuple[str, str]]
    force: np.ndarray
    point: np.ndarray
    depth: np.ndarray
    sphere_force: np.ndarray
    sphere_depth: np.ndarray

    @property
    def total_force(self) -> np.ndarray:
        """The sum of the contact forces on the spheres (world axes, N)."""
        return self.sphere_force.sum(axis=0)


def contact_forces(model, q, qd, data=None, f_ext=None) -> Contacts:
    """The contact forces of ``model`` at (q, qd) (core/contact.c)."""
    from . import _core
    d = model.data if data is None else data
    use = f_ext is not None
    if use:
        model.workspace(d if data is not None else None).fext[:] = np.asarray(f_ext, float).reshape(-1, 6)
    _core.contact_forces(d, np.asarray(q, dtype=float), np.asarray(qd, dtype=float), use)
    w = model.workspace(data)
    sp, pl = model.contact_spheres, model.contact_planes
    pairs = [(s.name, p.name) for s in sp for p in pl] + [(sp[a].name, sp[b].name)
                                                          for a, b in sphere_pairs(model)]
    return Contacts(pairs, w.ct_force.copy(), w.ct_point.copy(), w.ct_depth.copy(),
                    w.sp_force.copy(), w.sp_depth.copy())
