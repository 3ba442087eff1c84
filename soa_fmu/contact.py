"""Compliant contact: geometries on bodies — sphere, capsule, cylinder, box, ellipsoid, convex
mesh — and planes fixed in world (docs/contact.md; core/contact.c, core/collision.c).

Hunt–Crossley normal force f_n = k δ^n (1 + d δ̇) ≥ 0 along the contact normal and regularized
Coulomb friction f_t = −μ f_n v_t / sqrt(|v_t|² + v_s²), at each contact point (up to 4 a pair:
a box or a cylinder rests on its face's corners) between every geometry and every plane and
between geometries on different bodies (not parent and child) that both ``collide``.  The simulator (Simulator, both
FMU flavours) applies the forces as external spatial forces in the O(N) sweeps;
:func:`contact_forces` evaluates them at a state.

The law's constants: the model's (:attr:`Model.contact_law`, TOML ``[contact]``), overridden per
geometry or plane (keyword arguments of :meth:`Model.add_contact_geom` /
:meth:`Model.add_contact_sphere` / :meth:`Model.add_contact_plane`, TOML keys of
``[[contact.geoms]]`` / ``[[contact.spheres]]`` / ``[[contact.planes]]``) and per pair
(:meth:`Model.add_contact_pair`: an MJCF file's pairs).  A pair uses its own constant, else the
plane's (or the second geometry's) override, else the first geometry's, else the model's.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

# name -> (default, SI unit, strictly positive): the order of the C tables (SOA_CT_*)
LAW = {"stiffness": (1e5, "N/m^n", False), "exponent": (1.5, "1", True),
       "dissipation": (1.0, "s/m", False), "friction": (0.8, "1", False),
       "stiction_velocity": (1e-3, "m/s", True)}


# the shapes, in the order of the C core's SOA_SHAPE_* (core/collision.h)
SHAPES = ("sphere", "capsule", "cylinder", "box", "mesh", "ellipsoid")
HULL_MAX = 4096        # SOA_HULL_MAX: the vertices of one mesh's hull, at most
# SOA_HULL_SEEDS: a hull's first vertices, the farthest along the axes and the cube's diagonals
SEEDS = np.array([[1, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0], [0, 0, 1], [0, 0, -1],
                  *[[x, y, z] for x in (1, -1) for y in (1, -1) for z in (1, -1)]], dtype=float)
MANIFOLD = 4           # SOA_MANIFOLD: the contact points of one pair
# positions in a workspace's bp_info (soa.h SOA_BP_*, core/broadphase.c): the pairs the last
# evaluation tested (bp_near), the box tests its sweep made, and the switch that tests every pair
BP_NEAR, BP_TESTED, BP_OFF = 2, 3, 4


class ContactError(ValueError):
    """A contact declaration that cannot be built (names the geometry, plane or constant)."""


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
class ContactGeom:
    """A convex geometry fixed on ``body``: its origin ``center`` and axes ``rotation`` in the body
    frame (x_body = rotation x + center).  ``shape``: sphere (``radius``; 0: a point), capsule and
    cylinder (``radius``, ``half_length`` along the geometry's z), box (``half_extents``),
    ellipsoid (``radii``: its semi-axes along the geometry's axes), mesh (``vertices``: its convex
    hull's, at most :data:`HULL_MAX`, geometry frame; ``edges``: each vertex's neighbours on the
    hull, :func:`hull_edges`; ``mesh``: the file it came from)."""

    name: str
    body: int
    center: np.ndarray
    radius: float = 0.0
    law: dict = field(default_factory=dict)   # overrides of the model's constants
    collide: bool = True                      # takes part in geometry–geometry contact
    shape: str = "sphere"
    rotation: np.ndarray = field(default_factory=lambda: np.eye(3))
    half_length: float = 0.0
    half_extents: np.ndarray = field(default_factory=lambda: np.zeros(3))
    vertices: np.ndarray | None = None
    mesh: str | None = None
    exclude: frozenset = frozenset()          # names of geometries it never meets
    radii: np.ndarray = field(default_factory=lambda: np.zeros(3))
    edges: list | None = None

    @property
    def size(self) -> np.ndarray:
        """The core's size row (sp_size): a box's half-extents, an ellipsoid's radii, else
        (half_length, 0, 0)."""
        if self.shape == "box":
            return self.half_extents
        return self.radii if self.shape == "ellipsoid" else np.array([self.half_length, 0.0, 0.0])


ContactSphere = ContactGeom       # the name from when every contact geometry was a sphere


def hull_vertices(points, what: str) -> tuple[np.ndarray, list[np.ndarray]]:
    """The vertices of the convex hull of ``points`` (n × 3), all of them (at most
    :data:`HULL_MAX`), and each one's neighbours on the hull: the edges of Qhull's triangulated
    hull, the graph over which the core's support function climbs (scipy.spatial.ConvexHull).
    The vertices farthest along :data:`SEEDS` come first (where the climbs start)."""
    try:
        from scipy.spatial import ConvexHull, QhullError
    except ImportError:
        raise ContactError(f"{what}: a convex mesh's hull needs scipy (pip install scipy, or "
                           "'soa_fmu[plot]')") from None
    p = np.asarray(points, dtype=float).reshape(-1, 3)
    if len(p) < 4 or not np.isfinite(p).all():
        raise ContactError(f"{what}: a convex mesh needs at least 4 finite vertices, got {len(p)}")
    try:
        hull = ConvexHull(p)
    except QhullError:
        raise ContactError(f"{what}: the mesh's vertices span no volume (flat or degenerate)") \
            from None
    if len(hull.vertices) > HULL_MAX:
        raise ContactError(f"{what}: its convex hull has {len(hull.vertices)} vertices, more than "
                           f"{HULL_MAX} (decimate the mesh)")
    v = hull.vertices
    first = list(dict.fromkeys(v[np.argmax(p[v] @ SEEDS.T, axis=0)]))
    v = np.r_[first, np.setdiff1d(v, first)].astype(int)
    index = np.full(len(p), -1)
    index[v] = np.arange(len(v))
    return p[v], hull_edges(len(v), index[hull.simplices])


def hull_edges(nv: int, triangles: np.ndarray) -> list[np.ndarray]:
    """Each of ``nv`` vertices' neighbours (ascending) on the triangulated hull ``triangles``."""
    t = np.asarray(triangles, dtype=int).reshape(-1, 3)
    e = np.concatenate([t[:, [0, 1]], t[:, [1, 2]], t[:, [2, 0]]])
    e = np.unique(np.concatenate([e, e[:, ::-1]]), axis=0)
    cut = np.searchsorted(e[:, 0], np.arange(nv + 1))
    return [e[cut[i]:cut[i + 1], 1] for i in range(nv)]


def hull_vertex_count(model) -> int:
    """soa_sizes.nhv: the vertices of every mesh's hull, together."""
    return sum(len(g.vertices) for g in model.contact_geoms if g.shape == "mesh")


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


@dataclass
class ContactPair:
    """One contact pair's own constants: geometry ``geom`` against the geometry or plane ``other``
    (names).  ``law``: constants that win over the geometries' and the plane's (an MJCF pair's,
    derived from MuJoCo's solref/solimp/friction: io/mjcf_law.py); ``explicit``: the pair may
    touch even where ``collide`` or ``exclude`` would keep it apart (MuJoCo's ``<pair>``)."""

    geom: str
    other: str
    law: dict = field(default_factory=dict)
    explicit: bool = False


def sphere_pairs(model) -> list[tuple[int, int]]:
    """The geometry pairs that may touch: both ``collide``, on different bodies that are not parent
    and child, neither excluding the other — and every explicit pair (:class:`ContactPair`) of
    geometries on different bodies."""
    out = []
    sp = model.contact_geoms
    explicit = {frozenset((p.geom, p.other)) for p in model.contact_pairs if p.explicit}
    for a in range(len(sp)):
        for b in range(a + 1, len(sp)):
            ka, kb = sp[a].body, sp[b].body
            if explicit and ka != kb and frozenset((sp[a].name, sp[b].name)) in explicit:
                out.append((a, b))
                continue
            if not (sp[a].collide and sp[b].collide) or ka == kb:
                continue
            if model.bodies[ka].parent == kb or model.bodies[kb].parent == ka:
                continue
            if sp[b].name in sp[a].exclude or sp[a].name in sp[b].exclude:
                continue
            out.append((a, b))
    return out


geom_pairs = sphere_pairs


def contact_names(model) -> tuple[str, ...]:
    """Names of the contact elements as the C core numbers them: geometries, planes, pairs."""
    sp = model.contact_spheres
    return (tuple(s.name for s in sp) + tuple(p.name for p in model.contact_planes)
            + tuple(f"{sp[a].name}/{sp[b].name}" for a, b in sphere_pairs(model)))


def fill_core(model, v: dict) -> None:
    """The contact tables of soa.h (views ``v`` of a new core model) from the Python model."""
    keys = list(LAW)
    v["ct_law"][:] = [model.contact_law[k] for k in keys]
    hv = 0
    for s, sp in enumerate(model.contact_geoms):
        v["sp_body"][s], v["sp_center"][s], v["sp_radius"][s] = sp.body, sp.center, sp.radius
        v["sp_shape"][s], v["sp_rot"][s], v["sp_size"][s] = SHAPES.index(sp.shape), sp.rotation, sp.size
        if sp.shape == "mesh":           # its hull's vertices and edges, after the others'
            nv, edges = len(sp.vertices), sp.edges
            if edges is None:                # (a geometry built by hand: its hull's own order)
                from scipy.spatial import ConvexHull
                edges = hull_edges(nv, ConvexHull(sp.vertices).simplices)
            v["sp_nvert"][s], v["sp_hv0"][s] = nv, hv
            v["sp_hull"][hv:hv + nv] = sp.vertices
            for i, nb in enumerate(edges):
                v["hv_adj0"][hv + i + 1] = v["hv_adj0"][hv + i] + len(nb)
                a = v["hv_adj0"][hv + i]
                v["hv_adj"][a:a + len(nb)] = nb
            hv += nv
        v["sp_set"][s] = sum(1 << i for i, k in enumerate(keys) if k in sp.law)
        v["sp_law"][s] = [sp.law.get(k, 0.0) for k in keys]
    for j, pl in enumerate(model.contact_planes):
        v["pl_normal"][j], v["pl_offset"][j] = pl.normal, pl.offset
        v["pl_set"][j] = sum(1 << i for i, k in enumerate(keys) if k in pl.law)
        v["pl_law"][j] = [pl.law.get(k, 0.0) for k in keys]
    pairs = sphere_pairs(model)
    for p, (a, b) in enumerate(pairs):
        v["ss_pair"][p] = (a, b)
    index = {(sp.name, pl.name): s * len(model.contact_planes) + j
             for s, sp in enumerate(model.contact_geoms) for j, pl in enumerate(model.contact_planes)}
    base, g = len(index), model.contact_geoms
    index.update({(g[a].name, g[b].name): base + p for p, (a, b) in enumerate(pairs)})
    for pr in model.contact_pairs:       # a pair's own constants (pairs that never touch: none)
        p = index.get((pr.geom, pr.other), index.get((pr.other, pr.geom)))
        if p is not None:
            v["pr_set"][p] = sum(1 << i for i, k in enumerate(keys) if k in pr.law)
            v["pr_law"][p] = [pr.law.get(k, 0.0) for k in keys]


@dataclass
class Contacts:
    """The contact forces at one state (:func:`contact_forces`).

    pairs: (geometry, other) names of every pair — geometry–plane pairs first (geometry-major),
    then geometry–geometry; force (npairs × 3, N, world axes): the force on the pair's first
    geometry (the other gets −force), the sum over its points; point (npairs × 3, world): its
    deepest point; depth (npairs, m): its deepest penetration δ, negative for a gap.
    points, point_force, point_depth (npairs × :data:`MANIFOLD` × 3, … × 3, …): every contact
    point of each pair (depth 0 and no force in a slot it does not use).  sphere_force (ngeoms
    × 3): the total contact force on each geometry; sphere_depth: its deepest penetration (0 when
    free)."""

    pairs: list[tuple[str, str]]
    force: np.ndarray
    point: np.ndarray
    depth: np.ndarray
    sphere_force: np.ndarray
    sphere_depth: np.ndarray
    points: np.ndarray
    point_force: np.ndarray
    point_depth: np.ndarray

    @property
    def total_force(self) -> np.ndarray:
        """The sum of the contact forces on the geometries (world axes, N)."""
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
    sp, pl = model.contact_geoms, model.contact_planes
    pairs = [(s.name, p.name) for s in sp for p in pl] + [(sp[a].name, sp[b].name)
                                                          for a, b in sphere_pairs(model)]
    n = len(pairs)
    pts = w.ct_point.reshape(n, MANIFOLD, 3).copy()
    pf = w.ct_force.reshape(n, MANIFOLD, 3).copy()
    pd = w.ct_depth.reshape(n, MANIFOLD).copy()
    deepest = np.argmax(pd, axis=1) if n else np.zeros(0, dtype=int)
    return Contacts(pairs, pf.sum(axis=1), pts[np.arange(n), deepest], w.ct_pdepth.copy(),
                    w.sp_force.copy(), w.sp_depth.copy(), pts, pf, pd)
