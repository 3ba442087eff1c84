"""MJCF contact against MuJoCo on the same files (io/mjcf_law.py, docs/mjcf.md): each pair's law
from MuJoCo's solref/solimp (geom values, default classes, solmix), the larger friction and condim
of its geoms, explicit <pair>s.  Resting depths and the floor's force against MuJoCo's own
simulation, the damping ratio of the vertical oscillation about rest against MuJoCo's, sliding and
sticking on a slope against MuJoCo's."""
import math
import warnings

import numpy as np
import pytest

import soa_fmu as sf

mujoco = pytest.importorskip("mujoco")
G = 9.81
DROP = """<mujoco><option timestep="0.001"/>{default}<worldbody>
  <geom name="floor" type="plane" size="2 2 0.1" friction="0.9" {floor}/>
  <body name="b" pos="0 0 {z0}"><freejoint/>{geom}</body></worldbody>{contact}</mujoco>"""
SHAPES = {"box": ('<geom name="g" type="box" size="0.1 0.05 0.03" mass="1.2" {x}/>', 0.03),
          "capsule": ('<geom name="g" type="capsule" fromto="-0.1 0 0 0.1 0 0" size="0.03" '
                      'mass="0.8" {x}/>', 0.03),
          "cylinder": ('<geom name="g" type="cylinder" size="0.05 0.04" mass="2" {x}/>', 0.04)}


def load(tmp_path, xml: str, name: str = "m.xml"):
    """(MuJoCo's MjModel, ours) of the MJCF text."""
    p = tmp_path / name
    p.write_text(xml)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sf.ModelWarning)
        return mujoco.MjModel.from_xml_path(str(p)), sf.load_model(p)


def drop(mm, m, z0: float, t: float = 1.0, qvel=None, method: str = "auto", h: float = 1e-3):
    """Both dropped from their initial pose (our free joint at height z0) for t, MuJoCo at 1 ms,
    ours by the default integrator (or method) at h: (MuJoCo's data, our simulator)."""
    md = mujoco.MjData(mm)
    if qvel is not None:
        md.qvel[:] = qvel
    for _ in range(round(t / mm.opt.timestep)):
        mujoco.mj_step(mm, md)
    q = m.neutral_configuration()
    q[6] = z0
    qd = np.zeros(6) if qvel is None else np.r_[0, 0, 0, qvel[:3]]
    sim = sf.Simulator(m, q, qd, method=method, max_step=h)
    for _ in range(round(t / h)):
        sim.step(h)
    return md, sim


def mujoco_normal_force(mm, md) -> float:
    """The sum of MuJoCo's contact normal forces (mj_contactForce)."""
    f, total = np.zeros(6), 0.0
    for i in range(md.ncon):
        mujoco.mj_contactForce(mm, md, i, f)
        total += f[0]
    return total


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("where, x", [
    ("geom", ""),                                                   # MuJoCo's defaults
    ("geom", 'solref="0.05 0.7"'),
    ("geom", 'solref="-5000 -100"'),                                # the direct form
    ("class", 'solimp="0.5 0.8 0.01 0.3 3"'),                       # a default class's
    ("floor", 'solref="0.01 1" solmix="3"'),                        # mixed by solmix with the floor's
    ("floor", 'solref="0.05 0.7" priority="1"'),                    # the floor's alone: priority
])
def test_rests_at_mujocos_depth(tmp_path, shape, where, x):
    """A box, a capsule and a cylinder with MuJoCo's parameters on the geom, in a default class or
    on the floor (mixed by solmix, or the floor's alone by priority): at rest after 1 s at
    MuJoCo's depth (1 µm + 1 %; the issue's bar 2 mm) with the floor carrying the weight (1 %,
    both), still."""
    geom, h = SHAPES[shape]
    xml = DROP.format(z0=h + 0.02, geom=geom.format(x=x if where == "geom" else ""),
                      default=f'<default><geom {x}/></default>' if where == "class" else "",
                      floor=x if where == "floor" else "", contact="")
    mm, m = load(tmp_path, xml)
    md, sim = drop(mm, m, h + 0.02)
    depth_mj, depth = h - md.qpos[2], h - sim.q[6]
    W = float(mm.body_mass.sum()) * G
    assert depth == pytest.approx(depth_mj, rel=1e-2, abs=1e-6)
    assert abs(depth - depth_mj) < 2e-3
    assert mujoco_normal_force(mm, md) == pytest.approx(W, rel=1e-2)
    assert sf.contact_forces(m, sim.q, sim.qd).total_force[2] == pytest.approx(W, rel=1e-2)
    assert abs(abs(sim.q[0]) - 1) < 1e-6 and np.abs(sim.qd).max() < 1e-4


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("solref", ["0.005 1", "-10000 -150", "-20000 -200"])
def test_stiff_damped_contact_lands_at_every_step(tmp_path, shape, solref):
    """Solrefs that make the contact stiff and strongly damped (Hunt–Crossley d = 100–200 s/m, met
    at 0.63 m/s): the default (auto: rk4w), ros34pw2 and ros2 at 0.5, 1 and 2 ms bring each shape
    to rest at MuJoCo's depth (1 µm + 1 %), still.  (ros2 let the box fall through the floor with
    all three, the capsule and cylinder with some, at 1 or 2 ms: core/contact.c, docs/contact.md.)"""
    geom, h = SHAPES[shape]
    xml = DROP.format(z0=h + 0.02, geom=geom.format(x=f'solref="{solref}"'), default="",
                      floor="", contact="")
    mm, m = load(tmp_path, xml)
    for method in ("auto", "ros34pw2", "ros2"):
        for step in (5e-4, 1e-3, 2e-3):
            md, sim = drop(mm, m, h + 0.02, t=0.5, method=method, h=step)
            assert sim.integrator_used == ("rk4w" if method == "auto" else method)
            assert h - sim.q[6] == pytest.approx(h - md.qpos[2], rel=1e-2, abs=1e-6), (method, step)
            assert np.abs(sim.qd).max() < 1e-4, (method, step)


def test_mesh_rests_at_mujocos_depth(tmp_path):
    """A convex mesh (a cube's 8 vertices, MuJoCo's asset) with solref (0.03, 0.8): at MuJoCo's
    depth (1 µm + 1 %) on its 4 lowest vertices, as MuJoCo's 4 contacts."""
    cube = " ".join(f"{x} {y} {z}" for x in (-0.05, 0.05) for y in (-0.05, 0.05)
                    for z in (-0.05, 0.05))
    xml = DROP.format(z0=0.07, geom='<geom name="g" type="mesh" mesh="cube" mass="1.5" '
                      'solref="0.03 0.8"/>', floor="", contact="",
                      default=f'<asset><mesh name="cube" vertex="{cube}"/></asset>')
    mm, m = load(tmp_path, xml)
    md, sim = drop(mm, m, 0.07)
    assert md.ncon == 4
    assert (sf.contact_forces(m, sim.q, sim.qd).point_depth[0] > 0).sum() == 4
    assert 0.05 - sim.q[6] == pytest.approx(0.05 - md.qpos[2], rel=1e-2, abs=1e-6)


def test_solref_changes_the_depth_as_in_mujoco(tmp_path):
    """The box with solref time constants 0.01, 0.02, 0.04, 0.08 s: the resting depth grows with
    τ (MuJoCo's stiffness 1/(d² τ² ζ²), its impedance rising with the depth), ours in MuJoCo's
    ratio (1 %)."""
    geom, h = SHAPES["box"]
    depths = []
    for tau in (0.01, 0.02, 0.04, 0.08):
        xml = DROP.format(z0=h + 0.01, geom=geom.format(x=f'solref="{tau} 1"'), default="",
                          floor="", contact="")
        mm, m = load(tmp_path, xml)
        md, sim = drop(mm, m, h + 0.01, t=1.5)
        depths.append((h - md.qpos[2], h - sim.q[6]))
    mj, ours = np.array(depths).T
    assert mj[-1] / mj[0] > 5                        # (τ² = 64, less the impedance's change)
    np.testing.assert_allclose(ours / ours[0], mj / mj[0], rtol=1e-2)


def damping_ratio(z: np.ndarray) -> float:
    """ζ of a decaying oscillation from its first maximum and the next minimum about its final
    value: |min| / max = exp(−π ζ / sqrt(1 − ζ²))."""
    e = z - z[-1]
    i = int(np.argmax(e))
    r = -e[i:].min() / e[i]
    return -math.log(r) / math.sqrt(math.pi ** 2 + math.log(r) ** 2)


def test_damping_ratio_of_small_oscillations_is_mujocos(tmp_path):
    """The sphere at rest on the floor (solref damping ratio 0.2 on both), pushed up at 2 mm/s:
    its height rings about rest with MuJoCo's damping ratio (5 %; our frequency is higher:
    MuJoCo's static depth is not a stiffness, docs/mjcf.md)."""
    xml = DROP.format(z0=0.05, geom='<geom name="g" type="sphere" size="0.05" mass="1" '
                      'solref="0.03 0.2"/>', default="", floor='solref="0.03 0.2"', contact="")
    mm, m = load(tmp_path, xml)
    md, sim = drop(mm, m, 0.05, t=2.0)              # at rest first
    md.qvel[2] = 2e-3
    z_mj = []
    for _ in range(400):
        mujoco.mj_step(mm, md)
        z_mj.append(md.qpos[2])
    sim = sf.Simulator(m, sim.q, np.r_[0, 0, 0, 0, 0, 2e-3], method="implicit", max_step=2e-5)
    z = []
    for _ in range(3000):
        sim.step(2e-5)
        z.append(sim.q[6])
    zeta_mj, zeta = damping_ratio(np.array(z_mj)), damping_ratio(np.array(z))
    assert zeta_mj == pytest.approx(0.2, rel=0.2)      # (MuJoCo's own, near its solref's)
    assert zeta == pytest.approx(zeta_mj, rel=5e-2)


SLOPE = """<mujoco><option timestep="0.001" gravity="{gx} 0 {gz}"/><worldbody>
  <geom name="floor" type="plane" size="5 5 0.1" friction="{mu_floor}" condim="{condim}"/>
  <body name="b" pos="0 0 0.0299"><freejoint/>
    <geom name="g" type="box" size="0.05 0.05 0.03" mass="1" friction="{mu_box}" condim="{condim}"/>
  </body>
  </worldbody></mujoco>"""


@pytest.mark.parametrize("mu_box, mu_floor, condim, slides", [
    (0.3, 0.7, 3, False),      # max 0.7 > tan θ = 0.5: sticks (the floor's, not the box's)
    (0.7, 0.3, 3, False),      # the box's 0.7 wins over the floor's
    (0.3, 0.4, 3, True),       # max 0.4 < 0.5: slides at g (sin θ − 0.4 cos θ)
    (0.9, 0.9, 1, True),       # condim 1: frictionless, slides at g sin θ
])
def test_friction_is_the_larger_of_the_pair_as_in_mujoco(tmp_path, mu_box, mu_floor, condim, slides):
    """A box on a slope of tan θ = 0.5 (gravity tilted): it sticks where the larger of the two
    geoms' frictions exceeds tan θ and slides otherwise — as in MuJoCo, its slide after 0.5 s
    within 3 % of MuJoCo's and of g (sin θ − μ cos θ) t² / 2, ours by implicit Euler (the default,
    rk4w at 1 ms, slides 2.86 % beyond the closed form, ros34pw2 3.05 %, where DOP853 at 1e-10
    slides 1.6 %: the law's regularized friction, not Coulomb's, from rest)."""
    th = math.atan(0.5)
    xml = SLOPE.format(gx=G * math.sin(th), gz=-G * math.cos(th), mu_box=mu_box,
                       mu_floor=mu_floor, condim=condim)
    mm, m = load(tmp_path, xml)
    md, sim = drop(mm, m, 0.0299, t=0.5, method="implicit")
    mu = max(mu_box, mu_floor) if condim > 1 else 0.0
    expect = max(0.0, G * (math.sin(th) - mu * math.cos(th))) * 0.25 / 2
    if slides:
        assert md.qpos[0] == pytest.approx(expect, rel=3e-2)
        assert sim.q[4] == pytest.approx(expect, rel=3e-2)
    else:
        assert abs(md.qpos[0]) < 3e-3 and abs(sim.q[4]) < 3e-3     # (MuJoCo's creeps 1.4 mm)


PAIRS = """<mujoco><option timestep="0.001"/><worldbody>
  <geom name="floor" type="plane" size="2 2 0.1"/>
  <body name="a" pos="0 0 0.05"><freejoint/>
    <geom name="ga" type="sphere" size="0.05" mass="1" contype="0" conaffinity="0"/></body>
  <body name="b" pos="0.3 0 0.05"><freejoint/>
    <geom name="gb" type="sphere" size="0.05" mass="1" contype="0" conaffinity="0"/></body>
  <body name="c" pos="0.3 0 0.2"><freejoint/>
    <geom name="gc" type="box" size="0.04 0.04 0.04" mass="0.5" contype="2" conaffinity="2"/></body>
  </worldbody>
  <contact>
    <pair geom1="ga" geom2="floor" solref="0.05 1" friction="0.4 0.4 0.005 0.0001 0.0001"/>
    <pair geom1="gb" geom2="floor"/>
    <pair geom1="gc" geom2="gb" solref="0.01 1"/>
  </contact></mujoco>"""


def test_explicit_pairs_are_honoured_as_in_mujoco(tmp_path):
    """Geoms whose contype/conaffinity collide with nothing, and a box whose bits miss the
    sphere's, touch through <pair>s — with the pair's solref and friction: every body rests at
    MuJoCo's height (1 µm + 1 %), the box on the sphere; the pair table has the pair's friction."""
    mm, m = load(tmp_path, PAIRS)
    names = [g.name for g in m.contact_geoms]
    pairs = {frozenset((names[a], names[b])) for a, b in sf.contact.geom_pairs(m)}
    assert pairs == {frozenset(("gc", "gb"))}       # only the explicit one (bits: none)
    law = {(p.geom, p.other): p for p in m.contact_pairs}
    assert law[("ga", "floor")].law["friction"] == 0.4 and law[("ga", "floor")].explicit
    from soa_fmu.cli import describe
    assert "pair ga/floor (explicit); stiffness" in describe(m)        # soa-describe lists it
    md = mujoco.MjData(mm)
    for _ in range(1500):
        mujoco.mj_step(mm, md)
    sim = sf.Simulator(m, sf.io.mjcf.q_from_qpos(mm, mm.qpos0), np.zeros(m.nv), max_step=1e-3)
    for _ in range(1500):
        sim.step(1e-3)
    z_mj = md.qpos[[2, 9, 16]]
    z = sim.q[[6, 13, 20]]
    assert z_mj[2] > 0.13                            # the box on the sphere, not on the floor
    np.testing.assert_allclose(z, z_mj, rtol=0, atol=1e-6 + 1e-2 * np.abs(0.05 - z_mj).max())


def test_filtered_plane_pairs_carry_no_force(tmp_path):
    """A geom whose bits miss the floor's (contype 2 against the floor's 1; it may meet another
    geom) falls through it in MuJoCo and here (the engine's plane pair gets no force): the same
    free fall (both semi-implicit Euler there)."""
    xml = DROP.format(z0=0.05, geom='<geom name="g" type="sphere" size="0.05" mass="1" '
                      'contype="2" conaffinity="2"/></body><body name="o" pos="1 0 1">'
                      '<geom name="other" type="box" size=".1 .1 .1" contype="3" conaffinity="3"/>',
                      default="", floor="", contact="")
    mm, m = load(tmp_path, xml)
    assert [g.name for g in m.contact_geoms] == ["g", "other"] and len(m.contact_planes) == 1
    md, sim = drop(mm, m, 0.05, t=0.3, method="implicit")
    assert md.qpos[2] < -0.3 and sim.q[6] == pytest.approx(md.qpos[2], abs=1e-9)


def test_toml_geometry_override_wins_over_the_mjcf_pair(tmp_path):
    """A native file including the MJCF and overriding the box's stiffness: the pair keeps
    MuJoCo's other constants and takes the override's stiffness."""
    geom, h = SHAPES["box"]
    (tmp_path / "drop.xml").write_text(DROP.format(z0=h, geom=geom.format(x=""), default="",
                                                   floor="", contact=""))
    (tmp_path / "m.toml").write_text('name = "m"\n[[include]]\nmjcf = "drop.xml"\n'
                                     '[[contact.geoms]]\nname = "g"\nstiffness = 1234.0\n')
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sf.ModelWarning)
        m = sf.load_model(tmp_path / "m.toml")
    (pr,) = m.contact_pairs
    assert "stiffness" not in pr.law and pr.law["exponent"] == 1.0
    assert m.contact_geoms[0].law["stiffness"] == 1234.0
    v = m.core.views()
    assert v["pr_set"][0] & 1 == 0 and v["pr_set"][0] & 2 == 2
