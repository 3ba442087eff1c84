"""Native TOML model files: every feature, the example models, URDF includes."""
from __future__ import annotations

import textwrap

import numpy as np
import pytest

import soa_fmu as sf
from model_descriptions import EXAMPLES_DIR, example_path
from soa_fmu.io import load_model
from soa_fmu.spatial import rpy_to_matrix

G = 9.81


def write(tmp_path, text: str, name: str = "m.toml"):
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return p


def closure_residual(model: sf.Model, q: np.ndarray, c: sf.Constraint) -> tuple[float, float]:
    """(position gap, orientation gap) between the two frames of a constraint."""
    Ra, pa = sf.frame_pose(model, q, c.frame_a)
    Rb, pb = sf.frame_pose(model, q, c.frame_b)
    return float(np.linalg.norm(pa - pb)), float(np.abs(Ra - Rb).max())


# ---------------------------------------------------------------- the example models
def test_examples_folder_and_lookup():
    names = sorted(p.name for p in EXAMPLES_DIR.iterdir() if p.suffix in (".toml", ".urdf"))
    assert names == ["arm7.urdf", "bouncing_ball.toml", "double_pendulum.toml",
                     "flexible_arm.toml", "four_bar.toml", "pendulum.toml", "slider_crank.toml",
                     "spacecraft.toml", "spacecraft_rigid.toml", "two_arms_box.toml"]
    assert example_path("four_bar") == EXAMPLES_DIR / "four_bar.toml"
    with pytest.raises(FileNotFoundError, match="known: arm7.urdf"):
        example_path("nope")


def test_pendulum_matches_closed_form():
    m = load_model(example_path("pendulum"))
    assert (m.name, m.nq, m.position_names) == ("pendulum", 1, ["hinge"])
    np.testing.assert_array_equal(m.initial_q, [0.5])
    np.testing.assert_array_equal(m.initial_qd, [0.0])
    _, p = sf.frame_pose(m, [0.5], "bob_centre")
    np.testing.assert_allclose(p, [-np.sin(0.5), 0, -np.cos(0.5)], atol=1e-15)
    for th in (0.5, -2.0):
        qdd = sf.forward_dynamics(m, [th], [0.0], [0.0])[0]
        assert qdd == pytest.approx(-1.0 * G * 1.0 * np.sin(th) / (1.0 + 0.001), rel=1e-12)


def test_double_pendulum_mass_matrix_matches_closed_form():
    """Two uniform rods: M = [[I1 + m1 c² + m2 l² + I2 + m2 c² + 2 m2 l c cos θ2, …], …]."""
    m = load_model(example_path("double_pendulum"))
    assert m.position_names == ["shoulder", "elbow"]
    np.testing.assert_array_equal(m.initial_q, [1.0, -0.5])
    I, l, c = 0.083358, 1.0, 0.5
    for th2 in (0.0, 0.7, -2.1):
        M = sf.mass_matrix(m, [0.3, th2])
        m12 = I + c * c + l * c * np.cos(th2)
        np.testing.assert_allclose(M, [[2 * I + c * c + l * l + c * c + 2 * l * c * np.cos(th2), m12],
                                       [m12, I + c * c]], rtol=1e-13)


@pytest.mark.parametrize("name, nv, names", [
    ("four_bar", 3, ["crank_joint", "coupler_joint", "rocker_joint"]),
    ("slider_crank", 3, ["crank_joint", "rod_joint", "slider_joint"]),
])
def test_planar_loops_close_at_the_initial_configuration(name, nv, names):
    m = load_model(example_path(name))
    assert m.nv == nv and m.velocity_names == names
    (c,) = m.constraints
    assert c.kind == "ball" and c.size == 3 and c.active
    gap, _ = closure_residual(m, m.initial_q, c)
    assert gap < 1e-12
    # and the loop is really open away from it: the closure is a constraint, not a tautology
    assert closure_residual(m, m.initial_q + 0.1, c)[0] > 1e-3


def test_four_bar_geometry():
    m = load_model(example_path("four_bar"))
    q = m.initial_q
    _, B = sf.frame_pose(m, q, "coupler")
    np.testing.assert_allclose(B, [0.1 * np.cos(np.pi / 3), 0, 0.1 * np.sin(np.pi / 3)], atol=1e-15)
    _, C = sf.frame_pose(m, q, "rocker")
    assert np.linalg.norm(C - B) == pytest.approx(0.35) and np.linalg.norm(C - [0.4, 0, 0]) == \
        pytest.approx(0.3)


def test_two_arms_box_grasps_hold_initially():
    m = load_model(example_path("two_arms_box"))
    assert (m.nq, m.nv, len(m.constraints)) == (21, 20, 2)
    assert m.total_mass == pytest.approx(2 * 21.5 + 2.0)
    assert m.position_names[:7] == [f"left_joint{i}" for i in range(1, 8)]
    assert m.position_names[14:] == [f"box_joint[{i}]" for i in range(1, 8)]
    for c in m.constraints:
        assert c.kind == "weld"
        gap, rot = closure_residual(m, m.initial_q, c)
        assert gap < 1e-12 and rot < 1e-12
    # the right arm is the left one turned by 180° about z, at x = +0.9
    right = m.bodies[m.body_index("right_base_link")]
    np.testing.assert_allclose(right.translation, [0.9, 0, 0])
    np.testing.assert_allclose(right.rotation, rpy_to_matrix([0, 0, np.pi]))


@pytest.mark.parametrize("name, nq, nv", [("spacecraft_rigid", 11, 10), ("spacecraft", 19, 18)])
def test_spacecraft_is_free_floating_without_gravity(name, nq, nv):
    """Both variants: the rigid one, and spacecraft.toml whose panels are flexible (4 modes each,
    their rigid mass properties those of the rigid panels: 25 kg, centre 1 m out)."""
    m = load_model(example_path(name))
    np.testing.assert_array_equal(m.gravity, [0, 0, 0])
    assert isinstance(m.bodies[0].joint, sf.Free) and (m.nq, m.nv) == (nq, nv)
    assert m.total_mass == pytest.approx(600 + 2 * 25 + 8 + 5)
    np.testing.assert_array_equal(m.initial_qd[:6], [0, 0, 0.01, 0, 0, 0])
    # no gravity, no torque, at rest: nothing accelerates; pushing a joint moves the bus
    zero = np.zeros(m.nv)
    np.testing.assert_allclose(sf.forward_dynamics(m, m.initial_q, zero, zero), 0, atol=1e-15)
    tau = zero.copy()
    tau[m.velocity_names.index("shoulder")] = 1.0
    assert np.abs(sf.forward_dynamics(m, m.initial_q, zero, tau)[:6]).max() > 1e-4
    # the panels leave the bus along +-y, 2 m long, whichever way they are modelled
    for side, y in (("left", 1.0), ("right", -1.0)):
        b = m.bodies[m.body_index(f"panel_{side}")]
        mass, com, _ = m.body_inertia(b.name)
        np.testing.assert_allclose(b.translation + b.rotation @ com, [0, 1.75 * y, 0], atol=1e-12)
        assert mass == pytest.approx(25.0)


# ---------------------------------------------------------------- features
FEATURES = """
    name = "features"
    gravity = [0.0, -1.62, 0.0]

    [[bodies]]
    name = "slide"
    mass = 1.0
    inertia = { ixx = 0.1, iyy = 0.2, izz = 0.25, ixy = 0.01 }
    joint = { type = "prismatic", axis = [0, 0, 3], xyz = [1, 2, 3], rpy = [0.1, 0.2, 0.3] }

    [[bodies]]
    name = "ball"
    parent = "slide"
    mass = 2.0
    com = [0.0, 0.0, -0.1]
    inertia = [[0.1, 0.0, 0.0], [0.0, 0.1, 0.0], [0.0, 0.0, 0.1]]
    [bodies.joint]
    type = "spherical"
    name = "ball_joint"
    limits = { effort = 5.0, damping = 0.2 }

    [[bodies]]
    name = "floater"
    mass = 1.0
    inertia = [0.1, 0.1, 0.1]
    joint = { type = "free" }

    [[bodies]]
    name = "sled"
    parent = "floater"
    mass = 1.0
    inertia = [0.1, 0.1, 0.1]
    joint = { type = "planar", axis = [0, 0, 1] }

    [[bodies]]
    name = "screw"
    parent = "sled"
    mass = 1.0
    inertia = [0.1, 0.1, 0.1]
    joint = { type = "general", name = "helix", S = [[0], [0], [1], [0], [0], [0.05]] }

    [[bodies]]
    name = "bracket"
    parent = "screw"
    mass = 0.5
    inertia = [0.01, 0.01, 0.01]
    joint = { type = "fixed", xyz = [0, 0, 0.2] }

    [[bodies]]
    name = "wheel"
    parent = "bracket"
    mass = 1.0
    inertia = [0.1, 0.1, 0.1]
    joint = { type = "revolute", axis = [1, 0, 0], limits = { lower = -1.0, upper = 1.0 } }

    [[frames]]
    name = "tip"
    body = "wheel"
    xyz = [0.0, 0.5, 0.0]
    rpy = [0.0, 0.0, 1.5707963267948966]

    [[constraints]]
    name = "c_weld"
    kind = "weld"
    frame_a = "tip"
    frame_b = "world"

    [[constraints]]
    name = "c_hinge"
    kind = "hinge"
    frame_a = "tip"
    frame_b = "ball"
    axis = [0, 2, 0]
    active = false

    [[constraints]]
    name = "c_finger"
    kind = "soft_finger"
    frame_a = "bracket"
    frame_b = "slide"

    [initial]
    q = { slide = 0.25, ball_joint = [0.0, 1.0, 0.0, 0.0], helix = 1.5 }
    qd = { wheel = -2.0, floater = [1, 2, 3, 4, 5, 6] }
"""


def test_every_feature(tmp_path):
    m = load_model(write(tmp_path, FEATURES))
    assert m.name == "features"
    np.testing.assert_array_equal(m.gravity, [0, -1.62, 0])
    kinds = [type(b.joint) for b in m.bodies]
    assert kinds == [sf.Prismatic, sf.Spherical, sf.Free, sf.Planar, sf.General, sf.Fixed, sf.Revolute]
    assert (m.nq, m.nv) == (1 + 4 + 7 + 3 + 1 + 0 + 1, 1 + 3 + 6 + 3 + 1 + 0 + 1)
    slide = m.bodies[0]
    np.testing.assert_allclose(slide.joint.axis, [0, 0, 1])
    np.testing.assert_allclose(slide.translation, [1, 2, 3])
    np.testing.assert_allclose(slide.rotation, rpy_to_matrix([0.1, 0.2, 0.3]))
    np.testing.assert_allclose(slide.inertia, [[0.1, 0.01, 0], [0.01, 0.2, 0], [0, 0, 0.25]])
    np.testing.assert_allclose(m.bodies[1].inertia, 0.1 * np.eye(3))
    np.testing.assert_allclose(m.bodies[1].com, [0, 0, -0.1])
    assert m.bodies[1].joint_name == "ball_joint" and m.bodies[1].limits == {"effort": 5, "damping": 0.2}
    assert m.bodies[2].joint_name == "floater"            # joint name defaults to the body name
    np.testing.assert_allclose(m.bodies[4].joint.S, [[0], [0], [1], [0], [0], [0.05]])
    assert m.bodies[6].limits == {"lower": -1.0, "upper": 1.0}
    tip = m.frames["tip"]
    assert m.bodies[tip.body].name == "wheel"
    np.testing.assert_allclose(tip.rotation, rpy_to_matrix([0, 0, np.pi / 2]))
    c = {c.name: c for c in m.constraints}
    assert [c[n].size for n in ("c_weld", "c_hinge", "c_finger")] == [6, 5, 4]
    np.testing.assert_allclose(c["c_hinge"].axis, [0, 1, 0])
    assert not c["c_hinge"].active and c["c_weld"].active
    q = m.neutral_configuration()
    q[0], q[1:5], q[15] = 0.25, [0, 1, 0, 0], 1.5
    np.testing.assert_array_equal(m.initial_q, q)
    qd = np.zeros(m.nv)
    qd[4:10], qd[-1] = [1, 2, 3, 4, 5, 6], -2.0
    np.testing.assert_array_equal(m.initial_qd, qd)


def test_full_vector_initial_state_and_quaternion_normalization(tmp_path):
    m = load_model(write(tmp_path, """
        [[bodies]]
        name = "b"
        mass = 1.0
        inertia = [1, 1, 1]
        joint = { type = "spherical" }
        [initial]
        q = [0.6, 0.0, 0.8000000001, 0.0]
        qd = [0.1, 0.2, 0.3]
    """))
    assert m.name == "m"                                   # defaults to the file stem
    np.testing.assert_allclose(m.initial_q, [0.6, 0, 0.8, 0], atol=1e-9)
    assert np.linalg.norm(m.initial_q) == pytest.approx(1.0, abs=1e-15)
    np.testing.assert_array_equal(m.initial_qd, [0.1, 0.2, 0.3])


def test_bodies_may_be_listed_before_their_parents(tmp_path):
    m = load_model(write(tmp_path, """
        [[bodies]]
        name = "child"
        parent = "mid"
        mass = 1.0
        inertia = [1, 1, 1]
        joint = { type = "revolute", axis = [0, 0, 1] }
        [[bodies]]
        name = "mid"
        mass = 1.0
        inertia = [1, 1, 1]
        joint = { type = "revolute", axis = [0, 1, 0] }
    """))
    assert [b.name for b in m.bodies] == ["mid", "child"]
    assert m.position_names == ["mid", "child"]


# ---------------------------------------------------------------- URDF includes
def test_top_level_urdf_include_equals_the_urdf(tmp_path):
    arm = example_path("arm7.urdf")
    direct = load_model(arm, floating_base=True)
    via = load_model(write(tmp_path, f'urdf = "{arm}"\nfloating_base = true\n'))
    via2 = load_model(write(tmp_path, f'urdf = "{arm}"\n', "b.toml"), floating_base=True)
    assert via.name == "arm7" and via.position_names == direct.position_names
    rng = np.random.default_rng(0)
    q = direct.neutral_configuration()
    q[7:] = rng.uniform(-2, 2, 7)
    qd, tau = rng.normal(size=13), rng.normal(size=13)
    for other in (via, via2):
        np.testing.assert_array_equal(sf.forward_dynamics(other, q, qd, tau),
                                      sf.forward_dynamics(direct, q, qd, tau))


def test_prefixed_placed_includes_extended_with_bodies_and_frames(tmp_path):
    (tmp_path / "arm7.urdf").write_text(example_path("arm7.urdf").read_text())
    m = load_model(write(tmp_path, """
        [[bodies]]
        name = "cart"
        mass = 10.0
        inertia = [1, 1, 1]
        joint = { type = "prismatic", axis = [1, 0, 0] }

        [[include]]
        urdf = "arm7.urdf"
        prefix = "a_"
        parent = "cart"
        xyz = [0.0, 0.0, 0.5]
        rpy = [0.0, 0.0, 1.0]

        [[bodies]]
        name = "gripper"
        parent = "a_tool0"
        mass = 0.5
        inertia = [0.001, 0.001, 0.001]
        joint = { type = "prismatic", name = "finger", axis = [0, 1, 0] }

        [[frames]]
        name = "tcp"
        body = "a_tool0"
        xyz = [0, 0, 0.05]

        [initial]
        q = { a_joint2 = 0.5 }
    """))
    assert m.position_names == ["cart"] + [f"a_joint{i}" for i in range(1, 8)] + ["finger"]
    base = m.bodies[m.body_index("a_base_link")]
    assert m.bodies[base.parent].name == "cart" and base.joint_name == "a_root_joint"
    np.testing.assert_allclose(base.rotation, rpy_to_matrix([0, 0, 1.0]))
    assert m.total_mass == pytest.approx(10 + 21.5 + 0.5)
    _, p = sf.frame_pose(m, np.zeros(9), "tcp")
    np.testing.assert_allclose(p, [0, 0, 0.5 + 1.366 + 0.05])
    assert m.initial_q[2] == 0.5
