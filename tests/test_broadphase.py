"""The broad phase (core/broadphase.c, docs/contact.md): sweep and prune over the geometries' world
boxes.  Its candidate pairs are exactly the allowed pairs whose boxes overlap (brute force over
every pair) on random moving scenes, each box holds its shape and is tight (support points in
numpy), and the contact forces are those of testing every pair (the switch bp_info[SOA_BP_OFF]),
step for step, on a pile of boxes, an MJCF humanoid and talos standing."""
import re
from pathlib import Path

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

import soa_fmu as sf
from soa_fmu.contact import BP_NEAR, BP_OFF, BP_TESTED, geom_pairs

SOA_H = Path(sf.__file__).parent / "core" / "soa.h"
ROBOTS = "cmeel.prefix/share/example-robot-data/robots"


def test_info_indices_are_the_c_enum():
    """soa_fmu.contact's BP_* are the positions of SOA_BP_* in soa.h's enum."""
    enum = re.search(r"enum \{ (SOA_BP_VALID[^}]*)\}", SOA_H.read_text()).group(1)
    names = [n.strip() for n in enum.split(",")]
    assert (names.index("SOA_BP_NNEAR"), names.index("SOA_BP_TESTED"),
            names.index("SOA_BP_OFF")) == (BP_NEAR, BP_TESTED, BP_OFF)


def random_scene(seed: int, n: int = 36, side: float = 1.2) -> tuple[sf.Model, np.ndarray, np.ndarray]:
    """n free bodies in a cube of ``side``, each with a geometry of every shape in turn (some with
    a second one on the same body), some not colliding or excluding a neighbour; random poses and
    velocities, no gravity."""
    rng = np.random.default_rng(seed)
    m = sf.Model(f"scene{seed}", gravity=(0.0, 0.0, 0.0))
    shapes = ("sphere", "capsule", "cylinder", "box", "mesh")
    for i in range(n):
        m.add_body(f"b{i}", joint=sf.Free(), mass=1.0, inertia=np.eye(3) * 0.01)
        for j in range(1 + (i % 6 == 0)):
            shape = shapes[(i + j) % 5]
            kw = {"sphere": {"radius": rng.uniform(0.03, 0.12)},
                  "capsule": {"radius": rng.uniform(0.02, 0.06), "half_length": rng.uniform(0.02, 0.15)},
                  "cylinder": {"radius": rng.uniform(0.02, 0.08), "half_length": rng.uniform(0.02, 0.12)},
                  "box": {"half_extents": rng.uniform(0.02, 0.12, 3)},
                  "mesh": {"vertices": rng.normal(0.0, 0.06, (12, 3)) + rng.uniform(-0.05, 0.05, 3)},
                  }[shape]
            m.add_contact_geom(f"g{i}_{j}", f"b{i}", shape, center=rng.uniform(-0.05, 0.05, 3),
                               rotation=Rotation.random(random_state=rng).as_matrix(),
                               collide=i % 9 != 4, exclude=(f"g{i - 1}_0",) if i % 7 == 3 else (),
                               **kw)
    q = np.zeros(m.nq)
    for i in range(n):
        x, y, z, w = Rotation.random(random_state=rng).as_quat()
        q[7 * i:7 * i + 7] = [w, x, y, z, *rng.uniform(0.0, side, 3)]
    qd = np.concatenate([np.r_[rng.normal(0, 2, 3), rng.normal(0, 0.5, 3)] for _ in range(n)])
    return m, q, qd


def support_box(shape: str, R: np.ndarray, p: np.ndarray, g) -> np.ndarray:
    """(lo, hi) of the shape's points along the world axes, from points on it: corners, vertices,
    the ends of a capsule's segment, a cylinder's two rims sampled at 0.05°."""
    if shape == "sphere":
        return np.r_[p - g.radius, p + g.radius]
    if shape == "mesh":
        x = g.vertices @ R.T + p
        return np.r_[x.min(axis=0), x.max(axis=0)]
    if shape == "box":
        corners = np.array(np.meshgrid(*[[-h, h] for h in g.half_extents])).reshape(3, -1).T
        x = corners @ R.T + p
        return np.r_[x.min(axis=0), x.max(axis=0)]
    ends = np.array([[0, 0, -g.half_length], [0, 0, g.half_length]]) @ R.T + p
    if shape == "capsule":
        return np.r_[ends.min(axis=0) - g.radius, ends.max(axis=0) + g.radius]
    t = np.linspace(0.0, 2 * np.pi, 7200, endpoint=False)
    rim = g.radius * (np.outer(np.cos(t), R[:, 0]) + np.outer(np.sin(t), R[:, 1]))
    x = np.concatenate([rim + e for e in ends])
    return np.r_[x.min(axis=0), x.max(axis=0)]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_candidates_are_the_overlapping_allowed_pairs(seed):
    """A random scene of 36 moving bodies (all five shapes, excluded and non-colliding ones, two
    geometries on some bodies), 60 steps: at each, the broad phase's pairs are exactly the allowed
    pairs (geom_pairs) whose boxes overlap — brute force over every pair — and each box holds its
    shape's points and is tight to them (1 µm)."""
    m, q, qd = random_scene(seed)
    geoms, allowed = m.contact_geoms, geom_pairs(m)
    swept = sorted({g for pr in allowed for g in pr})
    sim = sf.Simulator(m, q, qd, method="implicit", max_step=2e-3)
    w = m.workspace()
    seen, sizes = set(), []
    for _ in range(60):
        sim.step(4e-3)
        box = w.bp_box
        for s in swept:
            ref = support_box(geoms[s].shape, w.sp_R[s], w.sp_x[s], geoms[s])
            np.testing.assert_allclose(box[s], ref + np.r_[-1e-9, -1e-9, -1e-9, 1e-9, 1e-9, 1e-9],
                                       rtol=0, atol=1e-6)
        brute = [p for p, (a, b) in enumerate(allowed)
                 if np.all(box[a, :3] <= box[b, 3:]) and np.all(box[b, :3] <= box[a, 3:])]
        near = w.bp_near[:w.bp_info[BP_NEAR]]
        assert list(near) == brute
        assert w.bp_info[BP_TESTED] < len(allowed)           # the sweep tested fewer than all
        seen.add(tuple(near))
        sizes.append(len(near))
    assert len(seen) > 10 and 0 < min(sizes) and max(sizes) < len(allowed) / 4   # it moved


def run(m: sf.Model, q, qd, steps: int, off: bool, h: float = 1e-3) -> tuple[np.ndarray, np.ndarray]:
    """The trajectory (q per step) and the contact forces of every point per step, with the broad
    phase or testing every pair (off)."""
    m.workspace().bp_info[BP_OFF] = int(off)
    sim = sf.Simulator(m, q, qd, method="implicit", max_step=h)
    qs, fs = [], []
    for _ in range(steps):
        sim.step(h)
        qs.append(sim.q.copy())
        fs.append(m.workspace().ct_force.copy())
    return np.array(qs), np.array(fs)


def same_with_and_without(build, q, qd, steps: int) -> tuple[np.ndarray, np.ndarray]:
    """Two copies of the model (``build()``), one without the broad phase: the same steps."""
    on, off = build(), build()
    q_on, f_on = run(on, q, qd, steps, off=False)
    q_off, f_off = run(off, q, qd, steps, off=True)
    assert on.workspace().bp_info[BP_OFF] == 0 and off.workspace().bp_info[BP_OFF] == 1
    np.testing.assert_allclose(f_on, f_off, rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(q_on, q_off, rtol=0, atol=1e-12)
    return q_on, f_on


def box_pile() -> sf.Model:
    m = sf.Model("pile")
    for i in range(16):
        m.add_body(f"box{i}", joint=sf.Free(), mass=1.0, inertia=np.eye(3) * 0.0067)
        m.add_contact_geom(f"g{i}", f"box{i}", "box", half_extents=(0.1, 0.1, 0.1))
    m.add_contact_plane("floor")
    return m


def pile_state(n: int = 16, seed: int = 7) -> np.ndarray:
    """n boxes of 0.2 m in layers of 2 × 2 columns, each turned by up to ±0.15 rad and shifted by
    up to 1 cm, 5 mm above the one below."""
    rng = np.random.default_rng(seed)
    q = np.zeros(n * 7)
    for i in range(n):
        layer, k = divmod(i, 4)
        x, y, z, w = Rotation.from_euler("z", rng.uniform(-0.15, 0.15)).as_quat()
        q[7 * i:7 * i + 7] = [w, x, y, z, 0.25 * (k % 2) + rng.uniform(-0.01, 0.01),
                              0.25 * (k // 2) + rng.uniform(-0.01, 0.01), 0.1 + 0.205 * layer]
    return q


def test_box_pile_forces_unchanged():
    """16 boxes dropped in four columns onto a floor (120 pairs; they land on each other): 300
    steps with the broad phase and testing every pair give the same forces at every point and the
    same motion, to round-off — and the columns stand, boxes on the floor and on boxes."""
    qs, fs = same_with_and_without(box_pile, pile_state(), np.zeros(16 * 6), 300)
    touching = np.abs(fs[-1]).sum(axis=1) > 0
    assert touching[:4 * 16].sum() >= 12                    # the bottom boxes on the floor
    assert touching[4 * 16:].sum() >= 12                    # boxes on boxes
    np.testing.assert_allclose(qs[-1].reshape(16, 7)[:, 6], 0.1 + 0.2 * np.repeat(np.arange(4), 4),
                               atol=0.02)


def test_mjcf_humanoid_forces_unchanged():
    """gymnasium's humanoid.xml (capsules, spheres, MuJoCo's pair filter) dropped on its floor:
    400 steps with the broad phase and testing every pair agree to round-off."""
    gym = pytest.importorskip("gymnasium")
    path = Path(gym.__file__).parent / "envs" / "mujoco" / "assets" / "humanoid.xml"

    def build():
        with pytest.warns(sf.ModelWarning):
            return sf.load_model(path)
    m = build()
    assert len(geom_pairs(m)) > 50
    q0 = m.neutral_configuration()
    q0[6] += sf.contact_forces(m, q0, np.zeros(m.nv)).depth.max() + 0.02   # its lowest 2 cm up
    same_with_and_without(build, q0, np.zeros(m.nv), 400)


def test_talos_standing_forces_unchanged(tmp_path):
    """talos_reduced with all 52 collision geometries on a floor, standing: 200 steps with the
    broad phase and testing every pair agree to round-off."""
    import sys
    urdf = next((Path(e) / ROBOTS / "talos_data" / "robots" / "talos_reduced.urdf"
                 for e in sys.path if (Path(e) / ROBOTS / "talos_data").is_dir()), None)
    if urdf is None:
        pytest.skip("example-robot-data is not installed")
    import os
    os.environ["ROS_PACKAGE_PATH"] = str(urdf.parents[4])
    toml = tmp_path / "talos.toml"
    toml.write_text(f'name = "talos"\nstrict = false\n[[include]]\nurdf = "{urdf.as_posix()}"\n'
                    'floating_base = true\ncontact_geometry = true\n[[contact.planes]]\nname = "floor"\n')

    def build():
        return sf.load_model(toml)
    m = build()
    q = m.neutral_configuration()
    q[6] = sf.contact_forces(m, q, np.zeros(m.nv)).depth.max()
    _, fs = same_with_and_without(build, q, np.zeros(m.nv), 200)
    assert np.abs(fs[-1]).sum() > 0


def test_random_scene_forces_unchanged():
    """The random scene of 36 moving bodies (bodies knocking into each other and flying apart, so
    that pairs leave the broad phase's set while their last record was a touch): 150 steps with
    the broad phase and testing every pair give the same forces at every point, to round-off."""
    m, q, qd = random_scene(4, side=0.8)
    same_with_and_without(lambda: random_scene(4, side=0.8)[0], q, qd, 150)


def test_a_pair_that_leaves_is_cleared():
    """Two spheres touching, then b leaving at 50 m/s: in that step (the C core's implicit step
    alone: no evaluation of every pair after it) the pair leaves the broad phase's set, and its
    record says so — no force, and minus the gap between its boxes (along the line of centres: the
    true gap) as its depth."""
    from soa_fmu import _core
    m = sf.Model("two", gravity=(0.0, 0.0, 0.0))
    for b in "ab":
        m.add_body(b, joint=sf.Free(), mass=1.0, inertia=np.eye(3) * 0.01)
        m.add_contact_geom(b + "g", b, "sphere", radius=0.1)
    q = np.array([1, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0.19, 0, 0], float)
    qd, tau, w = np.zeros(12), np.zeros(12), m.workspace()
    _core.implicit(m.data, q, qd, tau, False, 1e-3, 1)
    assert list(w.bp_near[:w.bp_info[BP_NEAR]]) == [0] and w.ct_force[0, 0] < -10
    qd[9] = 50.0
    for _ in range(2):
        _core.implicit(m.data, q, qd, tau, False, 1e-3, 1)
    assert w.bp_info[BP_NEAR] == 0
    assert not w.ct_force.any() and not w.sp_force.any()
    gap = w.sp_x[1, 0] - w.sp_x[0, 0] - 0.2
    assert gap > 0.03 and w.ct_pdepth[0] == pytest.approx(-gap, abs=1e-8)


RODS = """name = "rods"
[[bodies]]
name = "a"
mass = 1.0
inertia = {ixx = 0.01, iyy = 0.01, izz = 0.01}
joint = {type = "free"}
[[bodies]]
name = "b"
mass = 1.0
inertia = {ixx = 0.01, iyy = 0.01, izz = 0.01}
joint = {type = "free"}
[initial]
q = [1, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0.3, 1]
[[contact.planes]]
name = "floor"
point = [0, 0, -100]
[[contact.geoms]]
name = "ra"
body = "a"
shape = "capsule"
radius = 0.05
half_length = 0.5
[[contact.geoms]]
name = "rb"
body = "b"
shape = "capsule"
radius = 0.05
half_length = 0.5
"""


def test_fmu_pair_depth_of_a_pair_not_tested_is_its_gap(tmp_path):
    """Two parallel rods 0.3 m apart (bounding spheres overlapping, boxes apart: the broad phase
    never tests the pair), then 0.5 m apart: the Model Exchange FMU's pair depth
    contact.ra.rb.depth is minus the segments' gap at each state (0.2, 0.4 m), not the record of
    an earlier evaluation."""
    sys_path = str(Path(__file__).parent)
    import sys
    if sys_path not in sys.path:
        sys.path.insert(0, sys_path)
    from fmu_fixtures import build
    from test_fmu_model_exchange import ME
    path = tmp_path / "rods.toml"
    path.write_text(RODS)
    me = ME(build(path, interface="me"))
    vr = me.vr["contact.ra.rb.depth"]
    me.dx()
    assert me.fmu.getReal([vr])[0] == pytest.approx(-0.2, abs=1e-9)
    x = me.x()
    assert x[12] == pytest.approx(0.3)
    x[12] = 0.5
    me.set_x(x)
    me.dx()
    assert me.fmu.getReal([vr])[0] == pytest.approx(-0.4, abs=1e-9)
    me.close()


def test_boxes_not_finite_fall_back_to_every_pair():
    """Velocities of 1e306 m/s: the boxes overflow within the step, the broad phase says so (its
    status) and the evaluation tests every pair; the step ends in one clear error, no crash."""
    from soa_fmu import _core
    m, q, qd = random_scene(5)
    qd[:] = 1e306
    with pytest.raises(_core.StatusError, match="diverged"):
        _core.implicit(m.data, q, qd, np.zeros(m.nv), False, 1e-3, 3)
    w = m.workspace()
    assert w.bp_info[BP_NEAR] == w.bp_info[BP_TESTED] == len(geom_pairs(m))
