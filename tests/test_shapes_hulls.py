"""Convex hulls of any size and ellipsoids (core/collision.c, docs/contact.md): a hull's support
function (hill climbing over its edges) against a brute-force maximum over its vertices, a finely
tessellated mesh resting at its shape's height (a hull thinned to 32 vertices would not), and an
ellipsoid against its closed form, a dense sampling and MuJoCo."""
import numpy as np
import pytest

import soa_fmu as sf
from soa_fmu.model import ModelError

G = 9.81


def quat(R: np.ndarray) -> np.ndarray:
    from scipy.spatial.transform import Rotation
    x, y, z, w = Rotation.from_matrix(R).as_quat()
    return np.array([w, x, y, z])


def lying_cylinder(radius: float, length: float, sections: int) -> np.ndarray:
    """trimesh's cylinder of ``sections`` facets with its axis along x and a facet at the bottom."""
    trimesh = pytest.importorskip("trimesh")
    a = np.pi / sections
    Rz = np.array([[np.cos(a), -np.sin(a), 0], [np.sin(a), np.cos(a), 0], [0, 0, 1]])
    Ry = np.array([[0.0, 0, 1], [0, 1, 0], [-1, 0, 0]])
    v = np.asarray(trimesh.creation.cylinder(radius=radius, height=length, sections=sections).vertices)
    return v @ (Ry @ Rz).T


@pytest.mark.parametrize("cloud", ["cylinder", "blob"])
def test_hull_support_is_the_farthest_vertex(cloud):
    """A hull of hundreds of vertices (a 128-facet cylinder: 256; the hull of 3000 points on a
    bumpy ellipsoid: ~1000) placed at a random pose, 60 planes of random normals beyond its
    bounding sphere: each pair's depth −(n·s(−n) − o) from the core's support point equals the
    brute-force minimum of n·x − o over the mesh's points (to round-off).  A hull thinned to 32
    vertices (the old cap) misses it by up to 1.6 mm (cylinder) and 15 mm (blob)."""
    rng = np.random.default_rng(7)
    if cloud == "cylinder":
        pts = lying_cylinder(0.1, 0.3, 128)
    else:
        u = rng.normal(size=(3000, 3))
        u /= np.linalg.norm(u, axis=1)[:, None]
        pts = u * [0.2, 0.1, 0.05] * (1 + 0.05 * rng.random((3000, 1)))
    m = sf.Model("hull")
    m.add_body("a", joint=sf.Free(), mass=1.0, inertia=np.eye(3) * 0.01)
    g = m.add_contact_geom("g", "a", "mesh", vertices=pts, center=(0.01, -0.02, 0.03))
    assert len(g.vertices) >= 200
    normals = rng.normal(size=(60, 3))
    normals /= np.linalg.norm(normals, axis=1)[:, None]
    for i, n in enumerate(normals):
        m.add_contact_plane(f"p{i}", point=-1.0 * n, normal=n)        # 1 m away: apart
    from scipy.spatial.transform import Rotation
    R = Rotation.from_rotvec(rng.normal(size=3)).as_matrix()
    p = np.array([0.3, -0.1, 0.2])
    q = m.neutral_configuration()
    q[:7] = [*quat(R), *p]
    c = sf.contact_forces(m, q, np.zeros(6))
    X = (pts + g.center) @ R.T + p                                        # every point given
    brute = -((X @ normals.T).min(axis=0) + 1.0)                          # −gap
    np.testing.assert_allclose(c.depth, brute, rtol=0, atol=1e-13)
    assert (c.depth < -0.2).all()                                         # (every one apart)


def test_tessellated_cylinder_rests_at_its_height():
    """An upright 128-facet mesh cylinder (r = 0.1 m, half-height 0.05 m, 256 hull vertices: all
    128 of its bottom rim touch, streamed through the manifold's reduction), dropped from 2 cm:
    after 2.5 s it rests level and still at its half-height (−3/+0.5 mm: the law's static depth)
    on 4 rim points, carrying its weight (1 %)."""
    m = sf.Model("cyl")
    m.add_body("a", joint=sf.Free(), mass=1.5, inertia=np.diag([0.005, 0.005, 0.0075]))
    upright = lying_cylinder(0.1, 0.1, 128) @ np.array([[0.0, 0, -1], [0, 1, 0], [1, 0, 0]]).T
    g = m.add_contact_geom("g", "a", "mesh", vertices=upright)
    assert len(g.vertices) == 256 and np.ptp(g.vertices[:, 2]) == pytest.approx(0.1)
    m.add_contact_plane("floor")
    q = m.neutral_configuration()
    q[6] = 0.05 + 0.02
    sim = sf.Simulator(m, q, np.zeros(6), max_step=1e-3)
    for _ in range(2500):
        sim.step(1e-3)
    c = sf.contact_forces(m, sim.q, sim.qd)
    assert 0.05 - 3e-3 <= sim.q[6] <= 0.05 + 0.5e-3
    assert abs(abs(sim.q[0]) - 1) < 1e-6 and np.abs(sim.qd).max() < 1e-4
    assert c.total_force[2] == pytest.approx(1.5 * G, rel=1e-2)
    assert (c.point_depth > 0).sum() == 4


def test_hull_above_the_bound_is_refused_naming_the_mesh():
    m = sf.Model("big")
    m.add_body("a", joint=sf.Free(), mass=1.0, inertia=np.eye(3) * 0.01)
    u = np.random.default_rng(1).normal(size=(6000, 3))
    u /= np.linalg.norm(u, axis=1)[:, None]                              # all on the hull
    with pytest.raises(ModelError, match=r"contact mesh 'g' \(parts/ball\.stl\): its convex hull "
                                         r"has 6000 vertices, more than 4096"):
        m.add_contact_geom("g", "a", "mesh", vertices=u, mesh="parts/ball.stl")


def test_ellipsoid_support_is_its_closed_form():
    """An ellipsoid (radii 0.09, 0.05, 0.03) at a random pose against 40 planes of random normals
    beyond its bounding sphere: each depth is −(n·c − |diag(r) Rᵀ n| − o), its lowest point's
    closed form."""
    rng = np.random.default_rng(3)
    r = np.array([0.09, 0.05, 0.03])
    m = sf.Model("ell")
    m.add_body("a", joint=sf.Free(), mass=1.0, inertia=np.eye(3) * 0.01)
    m.add_contact_geom("g", "a", "ellipsoid", radii=r)
    normals = rng.normal(size=(40, 3))
    normals /= np.linalg.norm(normals, axis=1)[:, None]
    for i, n in enumerate(normals):
        m.add_contact_plane(f"p{i}", point=-0.5 * n, normal=n)
    from scipy.spatial.transform import Rotation
    R = Rotation.from_rotvec(rng.normal(size=3)).as_matrix()
    c = np.array([0.05, 0.1, -0.02])
    q = m.neutral_configuration()
    q[:7] = [*quat(R), *c]
    depth = sf.contact_forces(m, q, np.zeros(6)).depth
    closed = -(normals @ c - np.linalg.norm((normals @ R) * r, axis=1) + 0.5)
    np.testing.assert_allclose(depth, closed, rtol=0, atol=1e-14)


def ellipsoid_distance(ca, Ra, ra, cb, Rb, rb) -> float:
    """The distance of two ellipsoids: min |x − y| over their surfaces parametrized by the unit
    sphere (SLSQP from the nearest pair of a 4000-point sampling of each)."""
    from scipy.optimize import minimize
    from scipy.spatial import cKDTree
    u = np.random.default_rng(0).normal(size=(4000, 3))
    u /= np.linalg.norm(u, axis=1)[:, None]
    pa, pb = (u * ra) @ Ra.T + ca, (u * rb) @ Rb.T + cb
    d, j = cKDTree(pb).query(pa)
    i = int(np.argmin(d))
    unit = lambda w: w / np.linalg.norm(w)
    f = lambda x: np.sum(((unit(x[:3]) * ra) @ Ra.T + ca - (unit(x[3:]) * rb) @ Rb.T - cb) ** 2)
    res = minimize(f, np.r_[u[i], u[j[i]]], method="BFGS", options={"gtol": 1e-14})
    return float(np.sqrt(res.fun)), float(d[i])


def test_two_ellipsoids_gap_is_their_distance():
    """Two ellipsoids at random poses, apart by up to a few centimetres (the draws that overlap
    left out): the pair's depth is minus their distance — GJK on the closed-form support against
    a minimization over their surfaces (1e-7 m), itself below a dense sampling's nearest pair."""
    rng = np.random.default_rng(5)
    from scipy.spatial.transform import Rotation
    ra, rb = np.array([0.08, 0.05, 0.03]), np.array([0.06, 0.06, 0.02])
    m = sf.Model("two")
    for body, rr in (("a", ra), ("b", rb)):
        m.add_body(body, joint=sf.Free(), mass=1.0, inertia=np.eye(3) * 0.01)
        m.add_contact_geom(body + "g", body, "ellipsoid", radii=rr)
    apart = 0
    for _ in range(8):
        Ra, Rb = (Rotation.from_rotvec(rng.normal(size=3)).as_matrix() for _ in range(2))
        u = rng.normal(size=3)
        x = u / np.linalg.norm(u) * rng.uniform(0.09, 0.16)
        ref, sampled = ellipsoid_distance(np.zeros(3), Ra, ra, x, Rb, rb)
        if sampled < 1e-3:
            continue
        q = m.neutral_configuration()
        q[:7], q[7:] = [*quat(Ra), 0, 0, 0], [*quat(Rb), *x]
        c = sf.contact_forces(m, q, np.zeros(12))
        assert -c.depth[0] == pytest.approx(ref, abs=1e-7)
        assert ref <= sampled + 1e-12
        apart += 1
    assert apart >= 4


def point_hull_distance(p: np.ndarray, V: np.ndarray) -> float:
    """The distance from p (outside) to the convex hull of V: the least over the hull's triangles
    of p's distance to the triangle (its plane where p projects inside it, else its edges)."""
    from scipy.spatial import ConvexHull
    T = V[ConvexHull(V).simplices]                                      # (nt, 3, 3)
    a, b, c = T[:, 0], T[:, 1], T[:, 2]
    n = np.cross(b - a, c - a)
    n /= np.linalg.norm(n, axis=1)[:, None]
    h = np.einsum("ij,ij->i", p - a, n)
    x = p - h[:, None] * n                                              # projections
    inside = np.ones(len(T), bool)
    for u, v in ((a, b), (b, c), (c, a)):
        inside &= np.einsum("ij,ij->i", np.cross(v - u, x - u), n) >= 0
    best = np.abs(h[inside]).min() if inside.any() else np.inf
    for u, v in ((a, b), (b, c), (c, a)):
        t = np.clip(np.einsum("ij,ij->i", p - u, v - u) / np.einsum("ij,ij->i", v - u, v - u), 0, 1)
        best = min(best, np.linalg.norm(u + t[:, None] * (v - u) - p, axis=1).min())
    return float(best)


def test_gjk_gap_to_a_large_hull():
    """A sphere (r = 2 cm) at 20 random places 1–6 cm from the hull of 3000 points on a bumpy
    ellipsoid (~1000 vertices, on another body): the pair's depth is minus the gap by GJK, its
    support points climbing the hull from call to call, against the exact distance from the
    centre to the hull's triangles, less r (1e-9 m)."""
    rng = np.random.default_rng(11)
    u = rng.normal(size=(3000, 3))
    u /= np.linalg.norm(u, axis=1)[:, None]
    pts = u * [0.2, 0.1, 0.05] * (1 + 0.05 * rng.random((3000, 1)))
    m = sf.Model("pair")
    for body in ("a", "b"):
        m.add_body(body, joint=sf.Free(), mass=1.0, inertia=np.eye(3) * 0.01)
    g = m.add_contact_geom("hull", "a", "mesh", vertices=pts)
    m.add_contact_geom("ball", "b", "sphere", radius=0.02)
    assert len(g.vertices) > 500
    for _ in range(20):
        d = rng.normal(size=3)
        d /= np.linalg.norm(d)
        centre = d * [0.2, 0.1, 0.05] * 1.05 + d * rng.uniform(0.03, 0.08)
        ref = point_hull_distance(centre, g.vertices) - 0.02
        q = m.neutral_configuration()
        q[7 + 4:14] = centre
        c = sf.contact_forces(m, q, np.zeros(12))
        if ref > 1e-3:
            assert -c.depth[0] == pytest.approx(ref, abs=1e-9)
