"""Contact shapes (core/collision.c, docs/contact.md): sphere, capsule, cylinder, box and convex
mesh against planes and each other — the manifolds against closed forms, GJK's gap against a
quadratic program over the hulls, MPR's depth against the axis-aligned overlap — and shapes from
URDF <collision> resting on a floor: upright, still, at their heights, carrying their weight."""
import itertools
import math

import numpy as np
import pytest

import soa_fmu as sf
from soa_fmu.model import ModelError

G = 9.81
CUBE = np.array(list(itertools.product((-0.05, 0.05), repeat=3)))


def two_bodies(ga: tuple, gb: tuple) -> sf.Model:
    """Free bodies a and b, each with one contact geometry (shape, keywords)."""
    m = sf.Model("two")
    for body, (shape, kw) in (("a", ga), ("b", gb)):
        m.add_body(body, joint=sf.Free(), mass=1.0, inertia=np.eye(3) * 0.01)
        m.add_contact_geom(body + "g", body, shape, **kw)
    return m


def pose(m, q, body: int, R=np.eye(3), p=(0, 0, 0)):
    from scipy.spatial.transform import Rotation
    x, y, z, w = Rotation.from_matrix(R).as_quat()
    q[7 * body:7 * body + 7] = [w, x, y, z, *p]


def pair(m, q):
    """The contact of the model's one geometry pair at q (depth, points, point depths, normal)."""
    c = sf.contact_forces(m, q, np.zeros(m.nv))
    (p,) = [i for i, (a, b) in enumerate(c.pairs) if b.endswith("g")]
    n = m.workspace().ct_normal.reshape(len(c.pairs), sf.contact.MANIFOLD, 3)[p, 0]
    return c.depth[p], c.points[p], c.point_depth[p], n


def rot(axis, angle):
    from scipy.spatial.transform import Rotation
    return Rotation.from_rotvec(np.asarray(axis, float) / np.linalg.norm(axis) * angle).as_matrix()


def hull_distance(A: np.ndarray, B: np.ndarray) -> float:
    """min |Σ λ_i a_i − Σ μ_j b_j| over the simplices: the distance of two hulls (SLSQP)."""
    from scipy.optimize import minimize
    na, nb = len(A), len(B)
    f = lambda x: np.sum((x[:na] @ A - x[na:] @ B) ** 2)
    cons = [{"type": "eq", "fun": lambda x: x[:na].sum() - 1},
            {"type": "eq", "fun": lambda x: x[na:].sum() - 1}]
    x0 = np.r_[np.ones(na) / na, np.ones(nb) / nb]
    r = minimize(f, x0, bounds=[(0, 1)] * (na + nb), constraints=cons, method="SLSQP",
                 options={"ftol": 1e-16, "maxiter": 500})
    return math.sqrt(max(r.fun, 0.0))


# ---------------------------------------------------------------- against planes: closed forms
@pytest.mark.parametrize("shape, kw, features", [
    ("box", dict(half_extents=(0.1, 0.05, 0.03)),
     lambda kw: np.array(list(itertools.product(*[(-e, e) for e in kw["half_extents"]])))),
    ("mesh", dict(vertices=CUBE), lambda kw: CUBE),
])
def test_polytope_on_a_plane_has_its_corners_as_points(shape, kw, features):
    """A tilted box / hull through a sloped plane: the points are its vertices below the plane,
    each at depth o − n·x (projected onto the plane), the deepest first; at most 4."""
    m = sf.Model("one")
    m.add_body("a", joint=sf.Free(), mass=1.0, inertia=np.eye(3) * 0.01)
    m.add_contact_geom("g", "a", shape, **kw)
    n = np.array([0.1, -0.2, 1.0]) / np.linalg.norm([0.1, -0.2, 1.0])
    m.add_contact_plane("slope", point=(0, 0, 0.01), normal=n)
    q = m.neutral_configuration()
    R, p = rot((1, 2, 0.5), 0.02), np.array([0.02, -0.01, 0.035])
    pose(m, q, 0, R, p)
    c = sf.contact_forces(m, q, np.zeros(6))
    X = features(kw) @ R.T + p
    depth = n @ [0, 0, 0.01] - X @ n
    below = np.sort(depth[depth > 0])[::-1]
    assert 1 <= len(below) <= 4
    got = np.sort(c.point_depth[0][c.point_depth[0] > 0])[::-1]
    np.testing.assert_allclose(got, below, rtol=0, atol=1e-15)
    assert c.depth[0] == pytest.approx(below[0], abs=1e-15)
    on_plane = c.points[0][c.point_depth[0] > 0] @ n
    np.testing.assert_allclose(on_plane, n @ [0, 0, 0.01], atol=1e-15)


def test_cylinder_and_capsule_on_a_plane():
    """An upright cylinder meets the plane at 3 rim points 120° apart, a lying one along its
    lowest line (2 points); a lying capsule at its two ends' lowest points: depths by hand."""
    for shape, R, z, expect in [("cylinder", np.eye(3), 0.039, [0.001] * 3),
                                ("cylinder", rot((1, 0, 0), np.pi / 2), 0.049, [0.001] * 2),
                                ("capsule", rot((0, 1, 0), np.pi / 2 + 0.01), 0.049,
                                 [0.001 + 0.04 * math.sin(0.01), 0.001 - 0.04 * math.sin(0.01)])]:
        m = sf.Model("one")
        m.add_body("a", joint=sf.Free(), mass=1.0, inertia=np.eye(3) * 0.01)
        m.add_contact_geom("g", "a", shape, radius=0.05, half_length=0.04)
        m.add_contact_plane("floor")
        q = m.neutral_configuration()
        pose(m, q, 0, R, (0, 0, z + (0.0 if shape == "cylinder" and R[2, 2] == 1 else 0.0)))
        c = sf.contact_forces(m, q, np.zeros(6))
        d = np.sort(c.point_depth[0][c.point_depth[0] > 0])[::-1]
        np.testing.assert_allclose(d, expect, rtol=0, atol=1e-14)
        if len(d) == 3:                         # the rim points: an equilateral triangle
            P = c.points[0][:3]
            sides = [np.linalg.norm(P[i] - P[(i + 1) % 3]) for i in range(3)]
            np.testing.assert_allclose(sides, 0.05 * math.sqrt(3), rtol=1e-12)


# ---------------------------------------------------------------- shape against shape
def test_gjk_gap_is_the_distance_of_the_hulls():
    """Random hulls, a box and a cylinder apart (bounding spheres overlapping, so GJK runs): the
    pair's depth is −(their distance), the distance of a quadratic program over the vertices
    (the cylinder's: its hull of 64 rim points, 1e-3 of the radius away)."""
    rng = np.random.default_rng(3)
    for trial in range(6):
        A, B = rng.normal(0, 0.05, (12, 3)), rng.normal(0, 0.05, (12, 3))
        m = two_bodies(("mesh", dict(vertices=A)), ("mesh", dict(vertices=B)))
        q = m.neutral_configuration()
        Ra, Rb = rot(rng.normal(size=3), 1.0), rot(rng.normal(size=3), 2.0)
        pa, pb = np.zeros(3), rng.normal(0, 1, 3)
        pb *= (0.12 + 0.03 * trial) / np.linalg.norm(pb)
        pose(m, q, 0, Ra, pa), pose(m, q, 1, Rb, pb)
        ga, gb = m.contact_geoms
        ref = hull_distance(ga.vertices @ Ra.T + pa, gb.vertices @ Rb.T + pb)
        depth = pair(m, q)[0]
        if ref > 1e-6:
            assert -depth == pytest.approx(ref, rel=1e-6, abs=1e-9), trial
        else:
            assert depth > -1e-9
    # a box and a cylinder: the least distance from the box (closed form: |p − clamp(p)|) over a
    # dense sampling of the cylinder's surface (caps and side, 0.1 mm apart or less)
    e = np.array([0.1, 0.05, 0.03])
    m = two_bodies(("box", dict(half_extents=e)), ("cylinder", dict(radius=0.05, half_length=0.04)))
    q = m.neutral_configuration()
    Rb, pb = rot((1, 1, 0), 0.7), np.array([0.1, 0.08, 0.12])
    pose(m, q, 1, Rb, pb)
    th, rr, zz = np.meshgrid(np.linspace(0, 2 * np.pi, 3142), np.linspace(0, 0.05, 9),
                             np.linspace(-0.04, 0.04, 9), indexing="ij")
    cap = np.stack([rr * np.cos(th), rr * np.sin(th), np.sign(zz) * 0.04], -1)[:, :, [0, -1]]
    side = np.stack([0.05 * np.cos(th), 0.05 * np.sin(th), zz], -1)[:, -1]
    P = np.concatenate([cap.reshape(-1, 3), side.reshape(-1, 3)]) @ Rb.T + pb
    ref = np.linalg.norm(P - np.clip(P, -e, e), axis=1).min()
    assert -pair(m, q)[0] == pytest.approx(ref, rel=1e-3)


def test_mpr_depth_and_box_on_box_manifold():
    """Axis-aligned boxes overlapping 2 mm in z (and far more across): MPR's normal is z and its
    depth 2 mm; the manifold is the upper box's 4 lower corners (inside the lower box's top) at
    2 mm each; rotated about z, the same."""
    for angle in (0.0, 0.3):
        m = two_bodies(("box", dict(half_extents=(0.3, 0.3, 0.1))),
                       ("box", dict(half_extents=(0.1, 0.05, 0.03))))
        q = m.neutral_configuration()
        pose(m, q, 1, rot((0, 0, 1), angle), (0.05, -0.02, 0.1 + 0.03 - 0.002))
        depth, pts, d, n = pair(m, q)
        assert depth == pytest.approx(0.002, abs=1e-9)
        np.testing.assert_allclose(n, [0, 0, 1], atol=1e-9)
        np.testing.assert_allclose(d, [0.002] * 4, atol=1e-9)
        corners = np.array(list(itertools.product((-0.1, 0.1), (-0.05, 0.05), (-0.03,))))
        corners = corners @ rot((0, 0, 1), angle).T + [0.05, -0.02, 0.128 + 0.001]
        got = sorted(map(tuple, np.round(pts, 9)))
        np.testing.assert_allclose(got, sorted(map(tuple, np.round(corners, 9))), atol=1e-9)


def test_capsules_and_spheres_closed_forms():
    """Crossed capsules: the gap is the axes' distance less the radii, at the midpoint of the
    overlap; sphere on a box face: radius − distance."""
    m = two_bodies(("capsule", dict(radius=0.03, half_length=0.2)),
                   ("capsule", dict(radius=0.02, half_length=0.1)))
    q = m.neutral_configuration()
    pose(m, q, 0, rot((0, 1, 0), np.pi / 2), (0, 0, 0))
    pose(m, q, 1, rot((1, 0, 0), np.pi / 2), (0.05, 0.03, 0.045))
    depth, pts, _, n = pair(m, q)
    assert depth == pytest.approx(0.005, abs=1e-15)
    np.testing.assert_allclose(n, [0, 0, 1], atol=1e-15)
    np.testing.assert_allclose(pts[0], [0.05, 0, 0.0275], atol=1e-15)
    m = two_bodies(("sphere", dict(radius=0.05)), ("box", dict(half_extents=(0.1, 0.1, 0.1))))
    q = m.neutral_configuration()
    pose(m, q, 1, np.eye(3), (0.03, -0.02, -0.149))
    assert pair(m, q)[0] == pytest.approx(0.001, abs=1e-12)


# ---------------------------------------------------------------- from URDF: resting on a floor
def cube_stl(path, half: float) -> None:
    """An ASCII STL cube of half-size ``half`` (12 triangles)."""
    V = np.array(list(itertools.product((-half, half), repeat=3)))
    faces = []
    for axis in range(3):
        for side in (-half, half):
            idx = [i for i in range(8) if V[i, axis] == side]
            a, b, c, d = idx
            faces += [(a, b, d), (a, d, c)]
    lines = ["solid cube"]
    for f in faces:
        lines += ["facet normal 0 0 0", "outer loop", *[f"vertex {' '.join(map(str, V[i]))}"
                                                        for i in f], "endloop", "endfacet"]
    path.write_text("\n".join(lines + ["endsolid cube"]))


@pytest.mark.parametrize("geometry, height", [
    ('<box size="0.2 0.1 0.06"/>', 0.03),
    ('<cylinder radius="0.05" length="0.08"/>', 0.04),
    ('<mesh filename="cube.stl" scale="1 1 1"/>', 0.05),
])
def test_urdf_shape_rests_upright_at_its_height(tmp_path, geometry, height):
    """A URDF link whose <collision> is a box / cylinder / convex-mesh cube, loaded with
    contact_floor=0 and dropped from 2 cm: after 2.5 s it is upright, still, at its height
    (−3/+0.5 mm: the compliant law's static depth), and the floor carries its weight (1 %)."""
    cube_stl(tmp_path / "cube.stl", 0.05)
    p = tmp_path / "shape.urdf"
    p.write_text(f"""<robot name="shape"><link name="body">
      <inertial><mass value="1.5"/><inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial>
      <collision><origin xyz="0 0 0" rpy="0 0 0"/><geometry>{geometry}</geometry></collision>
    </link></robot>""")
    m = sf.load_model(p, floating_base=True, contact_floor=0.0)
    (g,) = m.contact_geoms
    assert g.shape == geometry[1:geometry.index(" ")].replace("cylinder", "cylinder")
    q = m.neutral_configuration()
    q[6] = height + 0.02
    sim = sf.Simulator(m, q, np.zeros(6), max_step=1e-3)
    for _ in range(2500):
        sim.step(1e-3)
    c = sf.contact_forces(m, sim.q, sim.qd)
    assert height - 3e-3 <= sim.q[6] <= height + 0.5e-3
    assert abs(abs(sim.q[0]) - 1) < 1e-6                   # upright: the quaternion is 1
    assert np.abs(sim.qd).max() < 1e-4                      # still
    assert c.total_force[2] == pytest.approx(1.5 * G, rel=1e-2)
    assert (c.point_depth > 0).sum() == (3 if "cylinder" in geometry else 4)


# ---------------------------------------------------------------- declarations and bad input
def test_toml_geoms_and_overrides(tmp_path):
    """contact_geometry = true in an include, [[contact.geoms]] overriding an included geometry's
    friction and collide and declaring a new capsule; errors name the geometry."""
    (tmp_path / "r.urdf").write_text("""<robot name="r"><link name="base">
      <inertial><mass value="1"/><inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial>
      <collision><geometry><box size="0.1 0.1 0.1"/></geometry></collision></link></robot>""")
    t = tmp_path / "m.toml"
    t.write_text('[[include]]\nurdf = "r.urdf"\nfloating_base = true\ncontact_geometry = true\n'
                 '[[contact.planes]]\nname = "floor"\n'
                 '[[contact.geoms]]\nname = "base"\nfriction = 0.3\ncollide = true\n'
                 '[[contact.geoms]]\nname = "rod"\nbody = "base"\nshape = "capsule"\n'
                 'radius = 0.01\nhalf_length = 0.2\nrpy = [1.5707963267948966, 0, 0]\n'
                 'exclude = ["base"]\n')
    m = sf.load_model(t)
    box, rod = m.contact_geoms
    assert (box.shape, box.law, box.collide) == ("box", {"friction": 0.3}, True)
    assert rod.shape == "capsule" and rod.exclude == {"base"}
    np.testing.assert_allclose(rod.rotation @ [0, 0, 1], [0, -1, 0], atol=1e-12)
    t.write_text(t.read_text().replace('name = "base"\nfriction', 'name = "bse"\nfriction'))
    with pytest.raises(ModelError, match="no contact geometry 'bse' to override"):
        sf.load_model(t)


def test_bad_shapes_are_refused():
    m = sf.Model("bad")
    m.add_body("a", joint=sf.Free(), mass=1.0, inertia=np.eye(3) * 0.01)
    with pytest.raises(ModelError, match="unknown shape 'cone'"):
        m.add_contact_geom("g", "a", "cone")
    with pytest.raises(ModelError, match="capsule 'g': radius must be > 0"):
        m.add_contact_geom("g", "a", "capsule", half_length=0.1)
    with pytest.raises(ModelError, match="mesh 'g': the mesh's vertices span no volume"):
        m.add_contact_geom("g", "a", "mesh", vertices=[[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0]])
    with pytest.raises(ModelError, match="box 'g' half_extents: expected 3 finite numbers"):
        m.add_contact_geom("g", "a", "box", half_extents=(0.1, np.nan, 0.1))
    many = np.random.default_rng(0).normal(size=(500, 3))
    g = m.add_contact_geom("g", "a", "mesh", vertices=many)
    from scipy.spatial import ConvexHull
    assert len(g.vertices) == len(ConvexHull(many).vertices)          # every hull vertex kept


# ---------------------------------------------------------------- in the FMU
def test_fmu_from_urdf_with_contact_floor(tmp_path):
    """soa-build-fmu --contact-floor 0 on a URDF whose links collide as a convex-mesh cube and a
    box (the mesh bundled with the FMU): outputs <geom>.force / .depth per geometry, one Model
    Exchange event indicator per geometry–floor pair; after 1 s in fmpy the native FMU stands at
    the engine's state and the floor carries the weight."""
    import build_fmu
    from fmu_fixtures import Instance
    (tmp_path / "meshes").mkdir()
    cube_stl(tmp_path / "meshes" / "cube.stl", 0.05)
    (tmp_path / "robots").mkdir()
    p = tmp_path / "robots" / "duo.urdf"
    p.write_text("""<robot name="duo">
      <link name="base"><inertial><mass value="1.0"/><inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial>
        <collision><geometry><mesh filename="../meshes/cube.stl"/></geometry></collision></link>
      <joint name="j" type="fixed"><parent link="base"/><child link="foot"/><origin xyz="0.2 0 0"/></joint>
      <link name="foot"><inertial><mass value="0.5"/><inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial>
        <collision><geometry><box size="0.1 0.1 0.1"/></geometry></collision></link>
    </robot>""")
    fmu = tmp_path / "Duo.fmu"
    assert build_fmu.main([str(p), "-o", str(fmu), "--floating-base", "--contact-floor", "0"]) == 0
    import fmpy
    md = fmpy.read_model_description(str(fmu))
    names = {v.name for v in md.modelVariables}
    assert {"base.force[3]", "base.depth", "foot.force[3]", "foot.depth"} <= names
    assert md.numberOfEventIndicators == 2                 # base/floor, foot/floor
    model = sf.load_model(p, floating_base=True, contact_floor=0.0)
    q0 = model.neutral_configuration()
    q0[6] = 0.0495
    inst = Instance(fmu).init({f"q0[{i + 1}]": x for i, x in enumerate(q0)})
    sim = sf.Simulator(model, q0, np.zeros(model.nv), max_step=1e-3)
    for i in range(1000):
        inst.fmu.doStep(i * 1e-3, 1e-3)
        sim.step(1e-3)
    np.testing.assert_allclose(inst.get("q"), sim.q, rtol=0, atol=1e-9)
    fz = inst.get("base.force[3]")[0] + inst.get("foot.force[3]")[0]
    assert fz == pytest.approx(1.5 * G, rel=1e-2)
    assert inst.get("foot.depth")[0] > 0
    inst.close()


# ---------------------------------------------------------------- against MuJoCo (MJCF geoms)
MJCF = """<mujoco><option timestep="0.001"/><worldbody>
  <geom name="floor" type="plane" size="2 2 0.1" friction="0.9"/>
  <body name="b" pos="0 0 {z0}"><freejoint/>{geom}</body></worldbody></mujoco>"""


@pytest.mark.parametrize("geom, height", [
    ('<geom name="g" type="box" size="0.1 0.05 0.03" mass="1.2"/>', 0.03),
    ('<geom name="g" type="capsule" fromto="-0.1 0 0 0.1 0 0" size="0.03" mass="0.8"/>', 0.03),
    ('<geom name="g" type="cylinder" size="0.05 0.04" mass="2"/>', 0.04),
    ('<geom name="g" type="ellipsoid" size="0.06 0.045 0.03" mass="1.1"/>', 0.03),
])
def test_mjcf_geom_rests_as_in_mujoco(tmp_path, geom, height):
    """The same MJCF file in MuJoCo and here (its geoms as contact geometry, its plane as the
    floor), dropped from 2 cm for 3 s at 1 ms: both rest level at the shape's height, within
    2 mm of each other (−3/+0.5 mm of the height), and the floor's normal force is the weight
    (MuJoCo's mj_contactForce sum, ours the total force; 1 %)."""
    mujoco = pytest.importorskip("mujoco")
    p = tmp_path / "drop.xml"
    p.write_text(MJCF.format(z0=height + 0.02, geom=geom))
    mm = mujoco.MjModel.from_xml_path(str(p))
    md = mujoco.MjData(mm)
    for _ in range(3000):
        mujoco.mj_step(mm, md)
    fn = 0.0
    for i in range(md.ncon):
        f = np.zeros(6)
        mujoco.mj_contactForce(mm, md, i, f)
        fn += f[0]
    W = float(mm.body_mass.sum()) * G
    with pytest.warns(sf.ModelWarning, match="contact geometries and planes"):
        m = sf.load_model(p)
    q = m.neutral_configuration()
    q[6] = height + 0.02
    sim = sf.Simulator(m, q, np.zeros(6), max_step=1e-3)
    for _ in range(3000):
        sim.step(1e-3)
    c = sf.contact_forces(m, sim.q, sim.qd)
    assert fn == pytest.approx(W, rel=1e-2)
    assert c.total_force[2] == pytest.approx(W, rel=1e-2)
    assert abs(sim.q[6] - md.qpos[2]) < 2e-3
    assert height - 3e-3 <= sim.q[6] <= height + 0.5e-3
    assert abs(abs(sim.q[0]) - 1) < 1e-6 and np.abs(sim.qd).max() < 1e-4


def test_hopper_falls_onto_the_floor_as_in_mujoco():
    """gymnasium's hopper.xml (capsules, parent–child pairs filtered as MuJoCo does, the law of
    each pair from MuJoCo's solref/solimp/friction/condim) pushed over backwards (rooty rate
    −1 rad/s: the upright pose is an unstable equilibrium) with no torque: after 5 s it lies on
    the floor at rest, the floor carrying its weight (1 %), in MuJoCo's pose (each coordinate
    within 0.1), no point deeper than 5 mm in either (the foot's friction 2 makes MuJoCo's
    pyramidal cone soft there: its foot 2.1 mm deep, ours 4.3 mm, the load shared otherwise
    between foot and torso)."""
    mujoco = pytest.importorskip("mujoco")
    gym = pytest.importorskip("gymnasium")
    from pathlib import Path
    path = Path(gym.__file__).parent / "envs" / "mujoco" / "assets" / "hopper.xml"
    mm = mujoco.MjModel.from_xml_path(str(path))
    md = mujoco.MjData(mm)
    md.qvel[2] = -1.0
    for _ in range(round(5.0 / mm.opt.timestep)):
        mujoco.mj_step(mm, md)
    with pytest.warns(sf.ModelWarning):
        m = sf.load_model(path)
    assert [g.shape for g in m.contact_geoms] == ["capsule"] * 4
    assert sf.contact.geom_pairs(m) == [(0, 2), (0, 3), (1, 3)]   # MuJoCo's filter: not adjacent
    sim = sf.Simulator(m, np.array(mm.qpos0), np.array([0, 0, -1.0, 0, 0, 0]), max_step=1e-3)
    for _ in range(5000):
        sim.step(1e-3)
    c = sf.contact_forces(m, sim.q, sim.qd)
    assert c.point_depth.max() < 5e-3 and -min(x.dist for x in md.contact[:md.ncon]) < 5e-3
    assert c.total_force[2] == pytest.approx(m.total_mass * G, rel=1e-2)
    assert np.abs(sim.qd).max() < 1e-3
    np.testing.assert_allclose(sim.q, md.qpos, rtol=0, atol=0.1)


def test_mjcf_pair_filter_is_mujocos(tmp_path):
    """contype/conaffinity bits, <exclude> and geoms welded to one body: the pairs that may touch
    are MuJoCo's (the same filter decides which pairs its own collision runs)."""
    pytest.importorskip("mujoco")
    p = tmp_path / "f.xml"
    p.write_text("""<mujoco><worldbody><geom name="floor" type="plane" size="1 1 .1"/>
      <body name="a"><freejoint/><geom name="ga" type="sphere" size=".1" contype="1" conaffinity="1"/>
        <body name="aw" pos="0 0 .3"><geom name="gw" type="box" size=".05 .05 .05"/></body></body>
      <body name="b" pos="1 0 0"><freejoint/><geom name="gb" type="sphere" size=".1" contype="2" conaffinity="2"/></body>
      <body name="c" pos="2 0 0"><freejoint/><geom name="gc" type="capsule" size=".1 .2"/></body>
      <body name="d" pos="3 0 0"><freejoint/><geom name="gd" type="cylinder" size=".1 .2" contype="3" conaffinity="3"/></body>
    </worldbody><contact><exclude body1="c" body2="d"/></contact></mujoco>""")
    with pytest.warns(sf.ModelWarning):
        m = sf.load_model(p)
    names = [g.name for g in m.contact_geoms]
    pairs = {(names[a], names[b]) for a, b in sf.contact.geom_pairs(m)}
    # ga–gb: bits 1 & 2 disjoint; ga–gw: one weld body; gc–gd: <exclude>
    assert pairs == {("ga", "gc"), ("ga", "gd"), ("gw", "gc"), ("gw", "gd"), ("gb", "gd")}
