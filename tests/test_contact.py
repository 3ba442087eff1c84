"""Compliant contact (core/contact.c, soa_fmu/contact.py): closed forms of the Hunt–Crossley law
and of Coulomb friction, momentum, and refused parameters naming the offender."""
import math

import numpy as np
import pytest
from scipy.optimize import brentq

import soa_fmu as sf
from soa_fmu import _core

G = 9.81


def ball(mass=2.0, r=0.1, joint=None, **law):
    m = sf.Model("ball")
    m.add_body("ball", joint=joint or sf.Free(), mass=mass, inertia=np.eye(3) * 0.4 * mass * r * r)
    m.add_contact_sphere("s", "ball", radius=r, **law)
    m.add_contact_plane("floor")
    return m


def test_static_force_is_hertz():
    """At the Hertz depth δ = (mg/k)^(1/n) the contact force is mg, along the normal, at rest."""
    m = ball()
    k, n = m.contact_stiffness, m.contact_exponent
    q = m.neutral_configuration()
    q[6] = 0.1 - (2.0 * G / k) ** (1 / n)
    c = sf.contact_forces(m, q, np.zeros(6))
    assert c.pairs == [("s", "floor")]
    np.testing.assert_allclose(c.force[0], [0, 0, 2.0 * G], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(c.point[0], [0, 0, 0], atol=1e-15)
    assert c.depth[0] == pytest.approx((2.0 * G / k) ** (1 / n), rel=1e-12)
    np.testing.assert_allclose(sf.Simulator(m, q, method="rk4").qdd, 0, atol=1e-10)
    q[6] = 0.2                                          # a gap: negative depth, no force
    c = sf.contact_forces(m, q, np.zeros(6))
    assert c.depth[0] == pytest.approx(-0.1) and not c.force.any() and c.sphere_depth[0] == 0


def test_resting_sphere_carries_its_weight():
    """Dropped from 1 cm, the ball settles: normal force = mg (≤ 1e-6), depth = Hertz (≤ 1 %)."""
    m = ball(stiffness=2e5)
    q = m.neutral_configuration()
    q[6] = 0.11
    sim = sf.Simulator(m, q, max_step=1e-3)
    for _ in range(4000):
        sim.step(1e-3)
    c = sf.contact_forces(m, sim.q, sim.qd)
    assert c.total_force[2] == pytest.approx(2.0 * G, rel=1e-6)
    assert c.depth[0] == pytest.approx((2.0 * G / 2e5) ** (1 / 1.5), rel=1e-2)
    assert abs(c.total_force[0]) + abs(c.total_force[1]) < 1e-9


def hunt_crossley_exit_speed(v_in: float, d: float) -> float:
    """v_out of m δ̈ = −k δ^n (1 + d δ̇) with no other force: m v dv/(1 + d v) = −k δ^n dδ
    integrates to d v − ln(1 + d v) being equal at entry (v_in) and exit (−v_out), whatever k, n
    and m (docs/contact.md)."""
    g = lambda v: d * v - math.log1p(d * v)
    return brentq(lambda w: g(-w) - g(v_in), 1e-12, (1 - 1e-15) / d)


@pytest.mark.parametrize("v_in,d,n", [(0.5, 1.0, 1.5), (2.0, 0.3, 1.5), (1.0, 0.5, 1.0)])
def test_restitution_matches_hunt_crossley(v_in, d, n):
    m = ball(joint=sf.Prismatic(axis=(0, 0, 1)), dissipation=d, exponent=n)
    m.gravity = (0, 0, 0)
    sim = sf.Simulator(m, [0.1], [-v_in], method="dop853", rtol=1e-11, atol=1e-13)
    for _ in range(20000):
        sim.step(1e-4)
        if sim.q[0] > 0.1:
            break
    e = sim.qd[0] / v_in
    e_hc = hunt_crossley_exit_speed(v_in, d) / v_in
    assert e < 1.0
    assert e == pytest.approx(e_hc, rel=2e-3)


def box_on_spheres(mu=0.8):
    """A 1 kg box (0.2 × 0.2 × 0.1 m) on four point spheres at its bottom corners (dissipation
    20 s/m: its bounce and pitch settle within 0.3 s)."""
    m = sf.Model("box")
    a, b, h, mass = 0.2, 0.2, 0.1, 1.0
    J = mass / 12 * np.diag([b * b + h * h, a * a + h * h, a * a + b * b])
    m.add_body("box", joint=sf.Free(), mass=mass, inertia=J)
    for i, (x, y) in enumerate([(1, 1), (1, -1), (-1, 1), (-1, -1)]):
        m.add_contact_sphere(f"c{i}", "box", center=(x * a / 2, y * b / 2, -h / 2))
    m.add_contact_plane("floor")
    m.contact_friction = mu
    m.contact_dissipation = 20.0
    q = m.neutral_configuration()
    q[6] = h / 2 - (mass * G / 4 / m.contact_stiffness) ** (1 / 1.5)
    return m, q


@pytest.mark.parametrize("theta", [0.9, 1.0])
def test_incline_slides_with_coulomb_acceleration(theta):
    """Above atan μ the box slides with g (sin θ − μ cos θ) (incline = gravity tilted)."""
    m, q = box_on_spheres()
    m.gravity = (G * math.sin(theta), 0, -G * math.cos(theta))
    sim = sf.Simulator(m, q, method="rk4", max_step=1e-4)
    for _ in range(300):
        sim.step(1e-3)
    v0 = sim.qd.copy()
    for _ in range(200):
        sim.step(1e-3)
    R = _quat_matrix(sim.q[:4])
    a = (R @ sim.qd[3:] - R @ v0[3:]) / 0.2             # (body ~ world axes: no rotation)
    assert a[0] == pytest.approx(G * (math.sin(theta) - 0.8 * math.cos(theta)), rel=1e-2)
    assert abs(a[1]) < 1e-6


def test_incline_sticks_below_atan_mu():
    """Below atan μ the box stays: friction carries the slope force, and the only motion is the
    creep of the regularized law, where μ f_n v / sqrt(v² + v_s²) = f_n tan θ:
    v = v_s r / sqrt(1 − r²), r = tan θ / μ (about v_s; sliding would reach 0.3 m/s here)."""
    m, q = box_on_spheres()
    theta = math.atan(0.8) - 0.15
    m.gravity = (G * math.sin(theta), 0, -G * math.cos(theta))
    sim = sf.Simulator(m, q, method="rk4", max_step=1e-4)
    for _ in range(1000):
        sim.step(1e-3)
    r = math.tan(theta) / 0.8
    creep = m.contact_stiction_velocity * r / math.sqrt(1 - r * r)
    assert np.linalg.norm(sim.qd[3:]) == pytest.approx(creep, rel=1e-2)
    assert abs(sim.q[4]) < 2e-3
    c = sf.contact_forces(m, sim.q, sim.qd)             # friction carries the slope force
    assert c.total_force[0] == pytest.approx(-G * math.sin(theta), rel=1e-3)


def _quat_matrix(e):
    w, x, y, z = e / np.linalg.norm(e)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def test_two_spheres_conserve_momentum():
    """An oblique collision of two spheres (on x-y-z slides, no gravity): the forces are equal and
    opposite, so m1 v1 + m2 v2 is conserved to round-off, and the kinetic energy drops."""
    m = sf.Model("pair")
    masses = (1.0, 3.0)
    for i, mass in enumerate(masses):
        m.add_body(f"x{i}", joint=sf.Prismatic(axis=(1, 0, 0)))
        m.add_body(f"y{i}", f"x{i}", joint=sf.Prismatic(axis=(0, 1, 0)))
        m.add_body(f"b{i}", f"y{i}", joint=sf.Prismatic(axis=(0, 0, 1)), mass=mass,
                   inertia=np.eye(3) * 0.01)
        m.add_contact_sphere(f"s{i}", f"b{i}", radius=0.1)
    m.gravity = (0, 0, 0)
    q0 = np.array([0.0, 0.0, 0.0, 0.3, 0.05, 0.0])
    qd0 = np.array([1.0, 0.2, 0.0, -0.5, 0.0, 0.1])
    sim = sf.Simulator(m, q0, qd0, method="rk4", max_step=1e-4)
    p0 = masses[0] * qd0[:3] + masses[1] * qd0[3:]
    touched = False
    for _ in range(400):
        sim.step(1e-3)
        touched |= sf.contact_forces(m, sim.q, sim.qd).depth[0] > 0
        p = masses[0] * sim.qd[:3] + masses[1] * sim.qd[3:]
        np.testing.assert_allclose(p, p0, rtol=0, atol=1e-13)
    assert touched
    ke = lambda v: 0.5 * (masses[0] * v[:3] @ v[:3] + masses[1] * v[3:] @ v[3:])
    assert ke(sim.qd) < ke(qd0)
    assert not np.allclose(sim.qd, qd0)


def test_energy_never_increases():
    """A ball bouncing with spin on the floor: kinetic + potential + elastic energy k δ^(n+1)/(n+1)
    is non-increasing along the run (friction and Hunt–Crossley dissipation are ≥ 0)."""
    m = ball(stiffness=1e5)
    q = m.neutral_configuration()
    q[6] = 0.15
    qd = np.array([0, 30.0, 0, 0.5, 0, 0])              # spin about y, slide along x (body axes)
    sim = sf.Simulator(m, q, qd, method="dop853", rtol=1e-10, atol=1e-12)
    k, n = m.contact_stiffness, m.contact_exponent
    last = math.inf
    for _ in range(600):
        sim.step(1e-3)
        delta = max(0.0, 0.1 - sim.q[6])
        E = sf.total_energy(m, sim.q, sim.qd) + k * delta ** (n + 1) / (n + 1)
        assert E <= last + 1e-9 * abs(E)
        last = E


def test_bad_parameters_name_the_offender():
    m = ball()
    with pytest.raises(sf.ModelError, match="contact sphere 'x': radius"):
        m.add_contact_sphere("x", "ball", radius=-1)
    with pytest.raises(sf.ModelError, match="contact sphere 'y': stiffness"):
        m.add_contact_sphere("y", "ball", radius=0.1, stiffness=float("nan"))
    with pytest.raises(sf.ModelError, match="contact plane 'w': unknown contact constant 'mu'"):
        m.add_contact_plane("w", mu=1.0)
    with pytest.raises(sf.ModelError, match="exponent must be finite and > 0"):
        m.contact_exponent = 0.0
    with pytest.raises(sf.ModelError, match="duplicate contact name 'floor'"):
        m.add_contact_plane("floor")
    with pytest.raises(sf.ModelError, match="unknown body 'nope'"):
        m.add_contact_sphere("z", "nope")
    # the C core's own guard (soa_contact_finish), with the Python checks bypassed
    m = ball()
    m._contact_law["stiction_velocity"] = 0.0
    with pytest.raises(_core.StatusError, match="contact: stiction_velocity must be finite and > 0"):
        m.core
    m = ball()
    m.contact_spheres[0].law["friction"] = -math.inf
    with pytest.raises(_core.StatusError, match="contact sphere 's': friction"):
        m.core
    m = ball()
    m.contact_planes[0].normal = np.array([0, 0, 2.0])
    with pytest.raises(_core.StatusError, match="contact plane 'floor': its body, centre"):
        m.core


def test_fuzzed_contact_states_and_constants():
    """Random states and constants (hostile ones included): a result or a StatusError, never a
    crash; every finite result keeps |f_t| ≤ μ f_n and f_n ≥ 0."""
    rng = np.random.default_rng(7)
    hostile = [0.0, -1.0, 1e308, -1e308, math.inf, math.nan, 1e-320]
    for _ in range(200):
        m = ball()
        for key in ("stiffness", "dissipation", "friction"):
            m._contact_law[key] = float(rng.choice(hostile)) if rng.random() < 0.2 else rng.uniform(0, 10) * 10 ** rng.integers(0, 6)
        q = m.neutral_configuration()
        q[4:] = rng.normal(0, 0.1, 3)
        qd = rng.normal(0, 5, 6)
        if rng.random() < 0.1:
            qd[rng.integers(6)] = float(rng.choice(hostile))
        try:
            c = sf.contact_forces(m, q, qd)
        except (_core.StatusError, sf.ModelError):
            continue
        f = c.force[0]
        if np.all(np.isfinite(f)) and c.depth[0] > 0:
            assert f[2] >= 0
            assert math.hypot(f[0], f[1]) <= m.contact_friction * f[2] * (1 + 1e-12) + 1e-300


def test_native_file_contact(tmp_path):
    p = tmp_path / "ball.toml"
    p.write_text("""
[[bodies]]
name = "ball"
mass = 2.0
inertia = {ixx = 0.008, iyy = 0.008, izz = 0.008}
joint = {type = "free"}

[contact]
stiffness = 2e5
friction = 0.5

[[contact.planes]]
name = "floor"
point = [0, 0, -1]
normal = [0, 0, 2]
dissipation = 0.0

[[contact.spheres]]
name = "ball_s"
body = "ball"
radius = 0.1
exponent = 1.0
""")
    m = sf.load_model(p)
    assert m.contact_stiffness == 2e5 and m.contact_friction == 0.5
    assert m.contact_planes[0].offset == -1.0 and m.contact_spheres[0].law == {"exponent": 1.0}
    q = m.neutral_configuration()
    q[6] = -0.91                                          # δ = 0.01, linear law, no dissipation
    c = sf.contact_forces(m, q, np.array([0, 0, 0, 0, 0, -1.0]))
    np.testing.assert_allclose(c.force[0], [0, 0, 2e5 * 0.01], rtol=1e-12)
    p.write_text(p.read_text().replace("radius = 0.1", "radius = 0.1\nstiffness = -3"))
    with pytest.raises(sf.ModelError, match=r"ball.toml:\d+: contact.spheres\[0\].stiffness: must be ≥ 0"):
        sf.load_model(p)


URDF = """<robot name="pogo">
  <link name="base">
    <inertial><mass value="1.0"/><inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial>
    <collision><origin xyz="0 0 -0.2"/><geometry><sphere radius="0.05"/></geometry></collision>
    <collision><geometry><box size="0.1 0.1 0.1"/></geometry></collision>
  </link>
</robot>"""


def test_urdf_collision_spheres_and_floor(tmp_path):
    """load_model(contact_floor=h): <collision> geometries become contact geometries and a floor
    plane sits at h; the robot then rests at the Hertz depth on it.  contact_spheres = true in a
    native file's include: the spheres only."""
    p = tmp_path / "pogo.urdf"
    p.write_text(URDF)
    m = sf.load_model(p, floating_base=True, contact_floor=-0.5)
    assert [(s.name, s.shape, s.radius) for s in m.contact_geoms] == [("base_1", "sphere", 0.05),
                                                                       ("base_2", "box", 0.0)]
    np.testing.assert_array_equal(m.contact_spheres[0].center, [0, 0, -0.2])
    np.testing.assert_array_equal(m.contact_geoms[1].half_extents, [0.05] * 3)
    assert m.contact_planes[0].offset == -0.5
    q = m.neutral_configuration()
    delta = (G / m.contact_stiffness) ** (1 / 1.5)
    q[6] = -0.5 + 0.25 - delta
    c = sf.contact_forces(m, q, np.zeros(6))
    np.testing.assert_allclose(c.total_force, [0, 0, G], rtol=1e-12, atol=1e-12)
    assert not sf.load_model(p).contact_spheres          # off by default
    native = tmp_path / "pogo.toml"
    native.write_text('[[include]]\nurdf = "pogo.urdf"\ncontact_spheres = true\n'
                      '[[contact.planes]]\nname = "ground"\n')
    m = sf.load_model(native)
    assert [s.name for s in m.contact_spheres] == ["base"] and m.contact_planes[0].name == "ground"


def test_describe_lists_contacts():
    from soa_fmu.cli import describe
    from model_descriptions import example_path
    text = describe(sf.load_model(example_path("bouncing_ball.toml")))
    assert "sphere ball_s on ball at (0, 0, 0), radius 0.1" in text
    assert "plane floor: normal (0, 0, 1), offset 0" in text
    assert "stiffness 100000, exponent 1.5, dissipation 0.5, friction 0.5" in text


# ---------------------------------------------------------------- implicit contact (implicit, auto)
def pair_jacobians(F, m_, v, delta, law, h):
    """C = h B + h² K and K of a touching pair, from the law by hand (docs/contact.md)."""
    k, n, d, mu, vs = (law[key] for key in sf.contact.LAW)
    fn = -F @ m_
    vt = v - (m_ @ v) * m_
    s = math.sqrt(vt @ vt + vs * vs)
    e = m_ + mu * vt / s
    B = k * delta ** n * d * np.outer(e, m_) + mu * fn / s * (np.eye(3) - np.outer(m_, m_)
                                                             - np.outer(vt, vt) / s ** 2)
    K = n * k * delta ** (n - 1) * (1 + d * (m_ @ v)) * np.outer(e, m_)
    return h * B + h * h * K, K


def test_implicit_contact_is_the_dense_linearized_backward_euler():
    """soa_contact_implicit (Woodbury through Λ⁻¹ of the Ω recursion) against the dense
    (M + Jᵀ C J)⁻¹ (M x − h Jᵀ K J β) with C, K and J formed by hand: sphere–plane and
    sphere–sphere pairs on a tree with a free base, a hinge and a second free body."""
    rng = np.random.default_rng(1)
    m = sf.Model("two")
    m.add_body("a", joint=sf.Free(), mass=1.3, inertia=np.diag([0.02, 0.03, 0.04]))
    m.add_body("b", "a", joint=sf.Revolute(axis=(0, 1, 0)), translation=(0.2, 0, 0), mass=0.5,
               com=(0.1, 0, 0), inertia=np.diag([0.01, 0.02, 0.01]))
    m.add_body("c", joint=sf.Free(), mass=0.7, inertia=np.diag([0.01, 0.01, 0.01]))
    m.add_contact_sphere("sa", "a", center=(0.0, 0.0, -0.05), radius=0.05, exponent=1.0)
    m.add_contact_sphere("sb", "b", center=(0.2, 0.0, 0.0), radius=0.05, friction=0.3)
    m.add_contact_sphere("sc", "c", radius=0.1, dissipation=3.0)
    m.add_body("d", joint=sf.Free(), mass=0.4, inertia=np.diag([0.01, 0.01, 0.01]))
    m.add_contact_geom("bx", "d", "box", half_extents=(0.05, 0.04, 0.03), friction=0.6)
    m.add_contact_plane("floor", normal=(0.1, 0, 1))
    q = m.neutral_configuration()
    q[:4] = np.array([0.99, 0.05, 0.1, 0.02]) / np.linalg.norm([0.99, 0.05, 0.1, 0.02])
    q[4:7], q[7], q[8:12], q[12:15] = [0, 0, 0.098], 0.3, [1, 0, 0, 0], [0.35, 0.05, 0.02]
    q[15:19], q[19:22] = [np.cos(0.05), 0, np.sin(0.05), 0], [1.0, 0.3, -0.1 + 0.029]   # bx on its face
    # three on the floor, sb on sc, bx's 4
    assert implicit_against_dense(m, q, rng.normal(0, 0.3, m.nv), rng) == 4 + 4


def test_implicit_contact_blocks_deep_in_a_tree():
    """The same against the dense solve where the blocks sit deep in one tree, as a humanoid's
    feet do: a 4-point box block (6 rows) and a lone sphere (3 rows) at the ends of two hinged
    legs under a free base, their paths sharing the base (n = 6) and a hip (n = 1); a 6-row
    block between two bodies of the same tree (box on box)."""
    rng = np.random.default_rng(2)
    m = sf.Model("legs")
    m.add_body("base", joint=sf.Free(), mass=2.0, inertia=np.diag([0.05, 0.04, 0.03]))
    m.add_body("hip", "base", joint=sf.Revolute(axis=(1, 0, 0)), translation=(0, 0, -0.1),
               mass=0.6, inertia=np.diag([0.01, 0.01, 0.01]))
    m.add_body("shin", "hip", joint=sf.Revolute(axis=(0, 1, 0)), translation=(0.1, 0, -0.2),
               mass=0.4, com=(0, 0, -0.1), inertia=np.diag([0.01, 0.02, 0.01]))
    m.add_body("foot", "shin", joint=sf.Revolute(axis=(0, 1, 0)), translation=(0, 0, -0.2),
               mass=0.3, inertia=np.diag([0.002, 0.003, 0.002]))
    m.add_body("leg2", "hip", joint=sf.Revolute(axis=(0, 1, 0)), translation=(-0.1, 0, -0.2),
               mass=0.4, com=(0, 0, -0.1), inertia=np.diag([0.01, 0.02, 0.01]))
    m.add_contact_geom("sole", "foot", "box", half_extents=(0.06, 0.04, 0.02), friction=0.6)
    m.add_contact_sphere("toe", "leg2", center=(0, 0, -0.19), radius=0.03, exponent=1.0)
    m.add_contact_geom("crate", "foot", "box", half_extents=(0.02, 0.02, 0.02),
                       center=(0.0, 0.0, 0.05))
    m.add_contact_geom("pad", "hip", "box", half_extents=(0.02, 0.02, 0.02),
                       center=(0.1, 0.0, -0.32))             # 1 cm into the crate
    m.add_contact_plane("floor")
    q = m.neutral_configuration()
    q[4:7] = [0, 0, 0.52 - 0.001]                               # sole and toe 1 mm into the floor
    c = sf.contact_forces(m, q, np.zeros(m.nv))
    touching = {pair: int((c.point_depth[p] > 0).sum()) for p, pair in enumerate(c.pairs)}
    assert {k: v for k, v in touching.items() if v} == {("sole", "floor"): 4, ("toe", "floor"): 1,
                                                        ("crate", "pad"): 4}
    assert implicit_against_dense(m, q, rng.normal(0, 0.3, m.nv), rng) == 4 + 1 + 4


def test_implicit_contact_lone_point():
    """One touching point in the model takes the lone-point path (its own 3 × 3 C, Cramer's 3 × 3
    solve; ci_C, the general path's block constants, is left untouched) and agrees with the dense
    solve: a sphere at the end of a hinged leg under a free base on the floor, and a sphere on a
    sphere of another free body (the relative rows of two bodies)."""
    rng = np.random.default_rng(3)
    m = sf.Model("leg")
    m.add_body("base", joint=sf.Free(), mass=2.0, inertia=np.diag([0.05, 0.04, 0.03]))
    m.add_body("shin", "base", joint=sf.Revolute(axis=(0, 1, 0)), translation=(0.1, 0, -0.2),
               mass=0.4, com=(0, 0, -0.1), inertia=np.diag([0.01, 0.02, 0.01]))
    m.add_contact_sphere("toe", "shin", center=(0, 0, -0.2), radius=0.03, friction=0.4)
    m.add_contact_plane("floor")
    q = m.neutral_configuration()
    q[4:7] = [0, 0, 0.43 - 0.001]
    w = m.workspace()
    w.ci_C[:] = np.nan
    assert implicit_against_dense(m, q, rng.normal(0, 0.3, m.nv), rng) == 1
    assert np.isnan(w.ci_C).all()                        # the lone-point path, not the blocks'
    m = sf.Model("two")
    for b in "ab":
        m.add_body(b, joint=sf.Free(), mass=1.0, inertia=np.eye(3) * 0.01)
    m.add_contact_sphere("sa", "a", radius=0.1)
    m.add_contact_sphere("sb", "b", radius=0.1, dissipation=2.0)
    q = np.array([1, 0, 0, 0, 0, 0, 5, 1, 0.1, 0, 0, 0.05, 0.02, 5.19])
    q[7:11] /= np.linalg.norm(q[7:11])
    w = m.workspace()
    w.ci_C[:] = np.nan
    assert implicit_against_dense(m, q, rng.normal(0, 0.3, m.nv), rng) == 1
    assert np.isnan(w.ci_C).all()


def implicit_against_dense(m, q, qd, rng) -> int:
    """soa_contact_implicit at (q, qd) against the dense (M + Jᵀ C J)⁻¹ (M x − h Jᵀ K J β), C, K
    and J formed by hand; the number of touching points."""
    c = sf.contact_forces(m, q, qd)
    d, w = m.data, m.workspace()
    _core.aba(d, q, qd, np.zeros(m.nv), False)           # the articulated factors at q
    x, h = rng.normal(0, 1, m.nv), 1e-2
    y = x.copy()
    _core.contact_implicit(d, h, y)
    M = sf.mass_matrix(m, q)
    names = [s.name for s in m.contact_spheres]
    Js, Cs, Ks = [], [], []
    normal = w.ct_normal.reshape(len(c.pairs), sf.contact.MANIFOLD, 3)
    for p, (a, o) in enumerate(c.pairs):
        for i in range(sf.contact.MANIFOLD):
            x_, F_, delta = c.points[p, i], c.point_force[p, i], c.point_depth[p, i]
            if delta <= 0 or not F_.any():
                continue
            sa = m.contact_geoms[names.index(a)]
            J = _core.point_jacobian(d, sa.body, x_)[3:]
            if o in names:
                J = J - _core.point_jacobian(d, m.contact_geoms[names.index(o)].body, x_)[3:]
            law = m.contact_law | sa.law | (m.contact_geoms[names.index(o)].law if o in names else {})
            C, K = pair_jacobians(F_, normal[p, i], J @ qd, delta, law, h)
            Js.append(J), Cs.append(C), Ks.append(K)
    from scipy.linalg import block_diag
    J, C, K = np.vstack(Js), block_diag(*Cs), block_diag(*Ks)
    ref = np.linalg.solve(M + J.T @ C @ J, M @ x - h * J.T @ K @ J @ qd)
    np.testing.assert_allclose(y, ref, rtol=0, atol=1e-11 * np.abs(ref).max())
    assert np.abs(ref - x).max() > 0.1 * np.abs(x).max()  # the correction is not small
    return len(Js)


def light_box():
    m, q = box_on_spheres()
    m.set_body_inertia("box", mass=0.02, inertia=np.eye(3) * 0.02 * 0.02 / 6)
    m.contact_dissipation = 1.0
    q[6] = 0.05 - (0.02 * G / 4 / m.contact_stiffness) ** (1 / 1.5)
    qd = np.zeros(6)
    qd[3] = 0.01
    return m, q, qd


def test_implicit_integrator_in_the_contact():
    """A 20 g box nudged on the floor at h = 1 ms: its friction (μ f_n / v_s ≈ 40 N·s/m on each
    corner) and rocking are far beyond the explicit step bound; RK4 rattles on in a limit cycle,
    the implicit step comes to rest (its damping: the tight solution still rocks at 2e-4 rad/s
    at 0.3 s) and carries the weight; the default (auto: rk4w for a model with contact) follows
    the tight solution's decay."""
    m, q, qd = light_box()
    assert sf.Simulator(m, q, qd).integrator_used == "rk4w"
    ros = sf.Simulator(m, q, qd, max_step=1e-3)
    for _ in range(300):
        ros.step(1e-3)
    assert np.abs(ros.qd).max() < 1e-3
    sim = sf.Simulator(m, q, qd, method="implicit", max_step=1e-3)
    for _ in range(300):
        sim.step(1e-3)
    assert np.abs(sim.qd).max() < 1e-9
    c = sf.contact_forces(m, sim.q, sim.qd)
    assert c.total_force[2] == pytest.approx(0.02 * G, rel=1e-9)
    rk = sf.Simulator(m, q, qd, method="rk4", max_step=1e-3)
    for _ in range(300):
        rk.step(1e-3)
    assert np.abs(rk.qd).max() > 1e-4
