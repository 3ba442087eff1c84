"""The gap of separated pairs (core/collision.c, core/contact.c; docs/contact.md): the depth the
contact state reports for a pair apart is minus its exact distance — GJK's (Gilbert, Johnson &
Keerthi 1988) between boxes, the closest points of segments between capsules, a support point
against a plane — whether the broad phase set the pair apart (bounding spheres apart: a bound
in the step, made exact for the observers) or the narrow phase ran.  References: closed forms
computed here, to 1e-9 m."""
import itertools
import math

import numpy as np
import pytest

import soa_fmu as sf
from test_shapes import pose, rot, two_bodies

BOX_A, BOX_B = np.array([0.1, 0.2, 0.3]), np.array([0.05, 0.15, 0.1])


def gap(m: sf.Model, q: np.ndarray) -> float:
    """Minus the depth of the model's geometry pair (the last pair) at q."""
    return -float(sf.contact_forces(m, q, np.zeros(m.nv)).depth[-1])


def point_box_distance(x: np.ndarray, R: np.ndarray, p: np.ndarray, e: np.ndarray) -> float:
    """Distance of point x to the box (half-extents e) at (R, p): the clamp in its frame."""
    xl = R.T @ (x - p)
    return float(np.linalg.norm(xl - np.clip(xl, -e, e)))


def segment_distance(p1, q1, p2, q2) -> float:
    """Distance of two segments: the minimum over the interior stationary point of
    |p1 + s d1 − p2 − t d2|² (where it lies in the unit square) and each edge of the square
    (s or t at 0 or 1, the other clamped)."""
    d1, d2, r = q1 - p1, q2 - p2, p1 - p2
    f = lambda s, t: float(np.linalg.norm(r + s * d1 - t * d2))
    best = min(f(s, t) for s, t in itertools.product((0.0, 1.0), repeat=2))
    A = np.array([[d1 @ d1, -d1 @ d2], [-d1 @ d2, d2 @ d2]])
    if abs(np.linalg.det(A)) > 1e-14:
        s, t = np.linalg.solve(A, [-d1 @ r, d2 @ r])
        if 0 <= s <= 1 and 0 <= t <= 1:
            best = min(best, f(s, t))
    for s in (0.0, 1.0):            # t clamped on the edges s = 0, 1, and s on t = 0, 1
        best = min(best, f(s, float(np.clip((d2 @ (r + s * d1)) / (d2 @ d2), 0, 1))))
    for t in (0.0, 1.0):
        best = min(best, f(float(np.clip(-(d1 @ (r - t * d2)) / (d1 @ d1), 0, 1)), t))
    return best


@pytest.mark.parametrize("far", [0.004, 0.5])      # bounding spheres overlapping / apart
def test_sphere_box_gap_is_the_point_box_distance(far):
    """A sphere and a turned box at random directions: the gap is the distance of the centre to
    the box less the radius."""
    rng = np.random.default_rng(1)
    m = two_bodies(("sphere", dict(radius=0.05)), ("box", dict(half_extents=BOX_A)))
    seen = 0
    for _ in range(30):
        q = m.neutral_configuration()
        R = rot(rng.normal(size=3), rng.uniform(0, math.pi))
        u = rng.normal(size=3)
        u /= np.linalg.norm(u)
        x = R @ (u / np.max(np.abs(u) / BOX_A) + u * (0.05 + far + rng.uniform(0, 0.02)))
        pose(m, q, 0, np.eye(3), x)
        pose(m, q, 1, R, (0, 0, 0))
        expect = point_box_distance(x, R, np.zeros(3), BOX_A) - 0.05
        if expect <= 0:
            continue
        seen += 1
        assert gap(m, q) == pytest.approx(expect, abs=1e-9)
    assert seen >= 15


@pytest.mark.parametrize("offset", [(0.16, 0.02, -0.1), (0.2, 0.4, 0.0), (0.3, 0.5, 0.6),
                                    (0.151, 0.351, 0.401), (1.5, 0.0, 0.0), (0.9, -1.2, 0.7)])
def test_box_box_gap_axis_aligned(offset):
    """Two axis-aligned boxes at an offset c: the gap is |max(0, |c_i| − (a_i + b_i))|."""
    m = two_bodies(("box", dict(half_extents=BOX_A)), ("box", dict(half_extents=BOX_B)))
    q = m.neutral_configuration()
    pose(m, q, 1, np.eye(3), offset)
    expect = float(np.linalg.norm(np.maximum(0.0, np.abs(offset) - BOX_A - BOX_B)))
    assert expect > 0
    assert gap(m, q) == pytest.approx(expect, abs=1e-9)


def test_capsule_capsule_gap_is_the_segments_distance():
    """Capsules at random poses, near and far: the gap is the distance of their segments less
    both radii."""
    rng = np.random.default_rng(2)
    m = two_bodies(("capsule", dict(radius=0.03, half_length=0.2)),
                   ("capsule", dict(radius=0.05, half_length=0.1)))
    seen = 0
    for _ in range(40):
        q = m.neutral_configuration()
        Ra, Rb = (rot(rng.normal(size=3), rng.uniform(0, math.pi)) for _ in range(2))
        pa, pb = np.zeros(3), rng.normal(size=3) * rng.choice([0.15, 1.0])
        pose(m, q, 0, Ra, pa)
        pose(m, q, 1, Rb, pb)
        expect = segment_distance(pa - 0.2 * Ra[:, 2], pa + 0.2 * Ra[:, 2],
                                  pb - 0.1 * Rb[:, 2], pb + 0.1 * Rb[:, 2]) - 0.08
        if expect <= 0:
            continue
        seen += 1
        assert gap(m, q) == pytest.approx(expect, abs=1e-9)
    assert seen >= 20


@pytest.mark.parametrize("shape, kw, lowest", [
    ("box", dict(half_extents=BOX_A), lambda R: float(np.abs(R.T[:, 2]) @ BOX_A)),
    ("cylinder", dict(radius=0.05, half_length=0.2),
     lambda R: 0.2 * abs(R[2, 2]) + 0.05 * math.hypot(R[2, 0], R[2, 1])),
    ("capsule", dict(radius=0.05, half_length=0.2), lambda R: 0.2 * abs(R[2, 2]) + 0.05),
])
def test_shape_above_a_plane_gap(shape, kw, lowest):
    """A turned shape high above the floor (bounding sphere clear of it): the gap is its centre's
    height less its support along −z (closed forms)."""
    rng = np.random.default_rng(4)
    m = sf.Model("one")
    m.add_body("a", joint=sf.Free(), mass=1.0, inertia=np.eye(3) * 0.01)
    m.add_contact_geom("g", "a", shape, **kw)
    m.add_contact_plane("floor")
    for z in (0.35, 0.8, 3.0):
        R = rot(rng.normal(size=3), rng.uniform(0, math.pi))
        q = m.neutral_configuration()
        pose(m, q, 0, R, (0.1, -0.2, z))
        expect = z - lowest(R)
        c = sf.contact_forces(m, q, np.zeros(6))
        assert -c.depth[0] == pytest.approx(expect, abs=1e-9)
        assert c.point[0][2] == pytest.approx(0.0, abs=1e-12)      # on the plane, under it


@pytest.mark.parametrize("delta, shift", [(1e-3, (0.0, 0.0)), (4e-3, (0.03, -0.02))])
def test_crossed_box_edges_meet_at_one_point(delta, shift):
    """Box A turned 45° about x (an edge along x lowest) δ into box B turned 45° about y (an
    edge along y highest): one contact point, where the two edges cross (x of B's edge, y of A's,
    midway in z), depth δ, normal −z (A towards B), the law's force k δ^n at it — not four points
    at the edges' ends, over B's slopes (closed forms from the turned corners)."""
    a, b = np.array([0.1, 0.2, 0.15]), np.array([0.12, 0.1, 0.05])
    m = two_bodies(("box", dict(half_extents=a)), ("box", dict(half_extents=b)))
    RA, RB = rot((1, 0, 0), math.pi / 4), rot((0, 1, 0), math.pi / 4)
    corners = lambda e, R, p: np.array(list(itertools.product(*[(-x, x) for x in e]))) @ R.T + p
    pB = np.array([shift[0], 0.02, 0.0])
    top = corners(b, RB, pB)[:, 2].max()
    pA = np.array([0.01, shift[1], 0.0])
    pA[2] = top - delta - corners(a, RA, pA)[:, 2].min()
    q = m.neutral_configuration()
    pose(m, q, 0, RA, pA)
    pose(m, q, 1, RB, pB)
    ca, cb = corners(a, RA, pA), corners(b, RB, pB)
    low = ca[np.argsort(ca[:, 2])[:2]]              # A's lowest edge (along x), B's highest
    high = cb[np.argsort(cb[:, 2])[-2:]]            # (along y)
    expect = np.array([high[0, 0], low[0, 1], top - delta / 2])
    c = sf.contact_forces(m, q, np.zeros(m.nv))
    touching = c.point_depth[-1] > 0
    assert touching.sum() == 1
    np.testing.assert_allclose(c.points[-1][touching][0], expect, rtol=0, atol=1e-12)
    assert c.depth[-1] == pytest.approx(delta, abs=1e-12)
    n = m.workspace().ct_normal.reshape(len(c.pairs), sf.contact.MANIFOLD, 3)[-1, 0]
    np.testing.assert_allclose(n, [0, 0, -1], atol=1e-12)
    np.testing.assert_allclose(c.force[-1], [0, 0, 1e5 * delta ** 1.5], rtol=1e-9, atol=1e-9)


CRATE = """name = "crate"
[[bodies]]
name = "crate"
mass = 2.0
inertia = {{ixx = 0.1, iyy = 0.1, izz = 0.1}}
joint = {{type = "free"}}
[[bodies]]
name = "ball"
mass = 1.0
inertia = {{ixx = 0.001, iyy = 0.001, izz = 0.001}}
joint = {{type = "free"}}
[initial]
q = [{qa}, 0.0, 0.1, 1.0, 1, 0, 0, 0, {pb}]
[[contact.planes]]
name = "floor"
[[contact.geoms]]
name = "box"
body = "crate"
shape = "box"
half_extents = [0.1, 0.2, 0.3]
[[contact.spheres]]
name = "pebble"
body = "ball"
radius = 0.05
"""


def test_fmu_event_indicators_are_the_exact_gaps(tmp_path):
    """A Model Exchange FMU (native) with a turned box and a ball high above the floor and apart
    from each other (every bounding sphere clear): its event indicators and its pair depths
    `contact.<geom>.<other>.depth` are minus the closed-form gaps (1e-9 m)."""
    from test_fmu_model_exchange import ME
    from fmu_fixtures import build
    from scipy.spatial.transform import Rotation
    R = rot((1, 2, 0.5), 0.7)
    x, y, z, w = Rotation.from_matrix(R).as_quat()
    pb = np.array([0.9, 0.2, 0.6])
    path = tmp_path / "crate.toml"
    path.write_text(CRATE.format(qa=", ".join(map(str, (w, x, y, z))),
                                 pb=", ".join(map(str, pb))))
    me = ME(build(path, interface="me"))
    import ctypes
    z_ind = (ctypes.c_double * 3)()
    me.dx()
    me.fmu.getEventIndicators(z_ind, 3)
    names = ["contact.pebble.floor.depth", "contact.box.floor.depth", "contact.pebble.box.depth"]
    depths = me.fmu.getReal([me.vr[n] for n in names])
    expect = [-(0.6 - 0.05), -(1.0 - float(np.abs(R.T[:, 2]) @ BOX_A)),
              -(point_box_distance(pb, R, np.array([0.0, 0.1, 1.0]), BOX_A) - 0.05)]
    np.testing.assert_allclose(list(z_ind), expect, rtol=0, atol=1e-9)
    np.testing.assert_allclose(depths, expect, rtol=0, atol=1e-9)
    me.close()
