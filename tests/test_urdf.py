"""URDF reader: inertials, joint types, placements, order, metadata; random trees against Pinocchio."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import soa_fmu as sf
from model_descriptions import example_path
from soa_fmu.io import ModelWarning, load_model
from soa_fmu.model import Mimic
from soa_fmu.spatial import rpy_to_matrix

LINK = '<link name="{}"><inertial><mass value="1"/><inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" ' \
       'iyz="0" izz="0.1"/></inertial></link>'


def robot(body: str, name: str = "r") -> str:
    return f'<?xml version="1.0"?>\n<robot name="{name}">\n{body}\n</robot>\n'


def joint(name: str, parent: str, child: str, jtype: str = "revolute", extra: str = "") -> str:
    return (f'<joint name="{name}" type="{jtype}"><parent link="{parent}"/><child link="{child}"/>'
            f'{extra}</joint>')


def write(tmp_path, text: str, name: str = "m.urdf"):
    p = tmp_path / name
    p.write_text(text)
    return p


# ---------------------------------------------------------------- the example arm
def test_arm7_structure_and_masses():
    m = load_model(example_path("arm7.urdf"))
    assert (m.name, m.nq, m.nv, m.nbodies) == ("arm7", 7, 7, 9)
    assert m.position_names == [f"joint{i}" for i in range(1, 8)]
    assert m.total_mass == pytest.approx(4 + 4 + 4 + 3 + 2.7 + 1.7 + 1.8 + 0.3)
    assert m.source == str(example_path("arm7.urdf"))
    # the joint origins stack up along z at the zero configuration: tool0 at 1.366 m
    R, p = sf.frame_pose(m, np.zeros(7), "tool0")
    np.testing.assert_allclose(p, [0, 0, 0.15 + 0.19 + 0.21 + 0.19 + 0.21 + 0.19 + 0.081 + 0.145])
    j4 = m.bodies[m.body_index("link4")]
    assert j4.limits == {"lower": -2.094, "upper": 2.094, "velocity": 2.27, "effort": 110.0,
                         "damping": 0.3, "friction": 0.1}
    # link4's inertial frame is rolled by 90°: the cylinder axis (izz of the file) lies along y
    ixx, izz = 2.7 * (3 * 0.055**2 + 0.21**2) / 12, 2.7 * 0.055**2 / 2
    np.testing.assert_allclose(np.diag(j4.inertia), [ixx, izz, ixx], rtol=1e-5)
    np.testing.assert_allclose(j4.com, [0, 0, 0.09])


def test_inertial_origin_rotates_inertia_and_places_com(tmp_path):
    text = robot('<link name="a"><inertial><origin xyz="0.1 -0.2 0.3" rpy="0.3 -0.4 1.1"/>'
                 '<mass value="2"/><inertia ixx="1" ixy="0.1" ixz="0" iyy="2" iyz="0.2" izz="2.5"/>'
                 '</inertial></link><link name="b"/>'
                 + joint("j", "b", "a", extra='<axis xyz="0 0 1"/>'))
    m = load_model(write(tmp_path, text))
    b = m.bodies[m.body_index("a")]
    R = rpy_to_matrix([0.3, -0.4, 1.1])
    Jf = np.array([[1, 0.1, 0], [0.1, 2, 0.2], [0, 0.2, 2.5]])
    np.testing.assert_allclose(b.inertia, R @ Jf @ R.T, atol=1e-15)
    np.testing.assert_allclose(b.com, [0.1, -0.2, 0.3])
    assert b.mass == 2.0
    # eigenvalues are invariant under the rotation
    np.testing.assert_allclose(np.linalg.eigvalsh(b.inertia), np.linalg.eigvalsh(Jf))


def test_joint_types_axes_origins_and_metadata(tmp_path):
    links = "".join(LINK.format(n) for n in "abcdefg")
    joints = "".join([
        joint("rev", "a", "b", extra='<origin xyz="1 2 3" rpy="0.1 0.2 0.3"/><axis xyz="0 0 2"/>'
              '<limit lower="-1" upper="1.5" velocity="3" effort="40"/><dynamics damping="0.7"/>'),
        joint("cont", "b", "c", "continuous", '<axis xyz="0 1 0"/>'),
        joint("pri", "c", "d", "prismatic", '<axis xyz="0 0 -1"/><limit lower="0" upper="0.2" '
              'velocity="1" effort="100"/>'),
        joint("fix", "d", "e", "fixed", '<origin xyz="0 0 0.5"/>'),
        joint("flo", "e", "f", "floating"),
        joint("pla", "f", "g", "planar", '<axis xyz="1 0 0"/>'),
    ])
    m = load_model(write(tmp_path, robot(links + joints)))
    kinds = {b.joint_name: type(b.joint) for b in m.bodies}
    assert kinds == {"root_joint": sf.Fixed, "rev": sf.Revolute, "cont": sf.Revolute,
                     "pri": sf.Prismatic, "fix": sf.Fixed, "flo": sf.Free, "pla": sf.Planar}
    assert (m.nq, m.nv) == (1 + 1 + 1 + 7 + 3, 1 + 1 + 1 + 6 + 3)
    rev = m.bodies[m.body_index("b")]
    np.testing.assert_allclose(rev.joint.axis, [0, 0, 1])            # normalized
    np.testing.assert_allclose(rev.translation, [1, 2, 3])
    np.testing.assert_allclose(rev.rotation, rpy_to_matrix([0.1, 0.2, 0.3]))
    assert rev.limits == {"lower": -1.0, "upper": 1.5, "velocity": 3.0, "effort": 40.0, "damping": 0.7}
    assert m.bodies[m.body_index("c")].limits == {"continuous": True}
    np.testing.assert_allclose(m.bodies[m.body_index("d")].joint.axis, [0, 0, -1])
    np.testing.assert_allclose(m.bodies[m.body_index("g")].joint.axis, [1, 0, 0])
    np.testing.assert_allclose(m.bodies[m.body_index("e")].translation, [0, 0, 0.5])


def test_default_axis_is_x(tmp_path):
    m = load_model(write(tmp_path, robot(LINK.format("a") + LINK.format("b") + joint("j", "a", "b"))))
    np.testing.assert_allclose(m.bodies[1].joint.axis, [1, 0, 0])


def test_joint_order_is_file_order_with_parents_first(tmp_path):
    # tree: base -> (a -> a2), (b);  joint "a2j" is written before its parent joint "aj"
    links = "".join(LINK.format(n) for n in ("base", "a", "a2", "b", "b2"))
    joints = (joint("bj", "base", "b") + joint("a2j", "a", "a2") + joint("b2j", "b", "b2")
              + joint("aj", "base", "a"))
    m = load_model(write(tmp_path, robot(links + joints)))
    assert m.position_names == ["bj", "b2j", "aj", "a2j"]
    assert [b.name for b in m.bodies] == ["base", "b", "b2", "a", "a2"]


def test_floating_base_and_world_link(tmp_path):
    text = robot(LINK.format("a") + LINK.format("b") + joint("j", "a", "b"))
    m = load_model(write(tmp_path, text), floating_base=True)
    assert isinstance(m.bodies[0].joint, sf.Free) and m.bodies[0].joint_name == "root_joint"
    assert m.position_names[:7] == [f"root_joint[{i}]" for i in range(1, 8)]
    assert (m.nq, m.nv) == (8, 7)
    # a massless root link called "world" is the world itself (common in ROS URDFs)
    text = robot('<link name="world"/>' + LINK.format("a") + LINK.format("b")
                 + joint("w", "world", "a", "fixed", '<origin xyz="0 0 1"/>') + joint("j", "a", "b"))
    m = load_model(write(tmp_path, text))
    assert [b.name for b in m.bodies] == ["a", "b"] and m.bodies[0].parent == -1
    np.testing.assert_allclose(m.bodies[0].translation, [0, 0, 1])


def test_mimic_joint_is_a_coupling_and_kept_as_metadata(tmp_path):
    links = "".join(LINK.format(n) for n in "abc")
    text = robot(links + joint("j1", "a", "b") + joint(
        "j2", "a", "c", extra='<mimic joint="j1" multiplier="-2" offset="0.1"/>'))
    with warnings.catch_warnings():
        warnings.simplefilter("error", ModelWarning)
        m = load_model(write(tmp_path, text))
    assert m.nv == 2      # both coordinates kept; j2 = -2 j1 + 0.1 enforced (tests/test_mimic.py)
    assert m.mimics == [Mimic("j2", "j1", -2.0, 0.1)]
    assert m.bodies[m.body_index("c")].limits["mimic"] == {"joint": "j1", "multiplier": -2.0,
                                                           "offset": 0.1}


def test_ignored_elements_do_not_change_the_model(tmp_path):
    plain = robot(LINK.format("a") + LINK.format("b") + joint("j", "a", "b"))
    decorated = plain.replace("</robot>", '<transmission name="t"><type>x</type></transmission>'
                              '<gazebo><plugin name="p"/></gazebo><material name="m"/></robot>')
    decorated = decorated.replace('<link name="b">', '<link name="b"><visual><geometry><box '
                                  'size="1 1 1"/></geometry></visual>')
    m1, m2 = load_model(write(tmp_path, plain, "a.urdf")), load_model(write(tmp_path, decorated, "b.urdf"))
    q = np.array([0.3])
    np.testing.assert_array_equal(sf.mass_matrix(m1, q), sf.mass_matrix(m2, q))


# ---------------------------------------------------------------- random trees against Pinocchio
def random_tree_urdf(n: int, seed: int) -> str:
    """n links in a random tree: random joint types, axes, origins, inertial origins/rotations."""
    rng = np.random.default_rng(seed)
    f = lambda v: " ".join(f"{x:.17g}" for x in v)     # noqa: E731
    parts = []
    for k in range(n + 1):
        d = rng.uniform(0.01, 0.1, 3)
        Jd = np.diag([d[1] + d[2], d[0] + d[2], d[0] + d[1]])
        parts.append(f'<link name="l{k}"><inertial><origin xyz="{f(rng.uniform(-0.2, 0.2, 3))}" '
                     f'rpy="{f(rng.uniform(-3, 3, 3))}"/><mass value="{rng.uniform(0.5, 3):.17g}"/>'
                     f'<inertia ixx="{Jd[0, 0]:.17g}" ixy="0" ixz="0" iyy="{Jd[1, 1]:.17g}" iyz="0" '
                     f'izz="{Jd[2, 2]:.17g}"/></inertial></link>')
    order = rng.permutation(np.arange(1, n + 1))      # joints written in a shuffled order
    parent = {k: int(rng.integers(0, k)) for k in range(1, n + 1)}
    for k in order:
        jt = rng.choice(["revolute", "continuous", "prismatic", "fixed"], p=[0.45, 0.2, 0.2, 0.15])
        parts.append(joint(f"j{k}", f"l{parent[k]}", f"l{k}", jt,
                           f'<origin xyz="{f(rng.uniform(-0.3, 0.3, 3))}" rpy="{f(rng.uniform(-3, 3, 3))}"/>'
                           f'<axis xyz="{f(rng.normal(size=3))}"/>'
                           '<limit lower="-1" upper="1" velocity="1" effort="1"/>'))
    return robot("\n".join(parts), f"tree{n}")


@pytest.mark.parametrize("floating", [False, True])
def test_random_100_link_tree_matches_pinocchio(tmp_path, floating):
    pin = pytest.importorskip("pinocchio")
    from pin_mapping import compare_dynamics
    path = write(tmp_path, random_tree_urdf(100, seed=7 + floating))
    model = load_model(path, floating_base=floating)
    pmodel = (pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer()) if floating
              else pin.buildModelFromUrdf(str(path)))
    assert model.nv == pmodel.nv and model.nbodies == 101
    err_fd, err_id = compare_dynamics(model, pmodel, n_states=3, seed=1)
    assert err_fd < 1e-9 and err_id < 1e-9, (err_fd, err_id)


def test_pendulum_urdf_matches_closed_form(tmp_path):
    """θ̈ = −m g l sin θ / (m l² + I) for a bob on a massless rod (independent physics check)."""
    m_, l, I = 2.0, 0.8, 0.01
    text = robot(f'<link name="base"/><link name="bob"><inertial><origin xyz="0 0 {-l}"/>'
                 f'<mass value="{m_}"/><inertia ixx="{I}" ixy="0" ixz="0" iyy="{I}" iyz="0" izz="{I}"/>'
                 '</inertial></link>' + joint("hinge", "base", "bob", "continuous", '<axis xyz="0 1 0"/>'))
    model = load_model(write(tmp_path, text))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for th in (0.3, -1.2, 2.5):
            qdd = sf.forward_dynamics(model, [th], [0.0], [0.0])
            assert qdd[0] == pytest.approx(-m_ * 9.81 * l * np.sin(th) / (m_ * l * l + I), rel=1e-12)
