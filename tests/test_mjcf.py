"""MJCF reader against MuJoCo itself: M, forward and inverse dynamics, site poses at random states
on the MJCF robots gymnasium ships, conventions (the q/v maps), warnings, errors, TOML includes."""
from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import soa_fmu as sf
from soa_fmu.io import ModelWarning, load_model
from soa_fmu.constraints import constraint_errors
from soa_fmu.io import mjcf as X
from soa_fmu.model import ModelError
from soa_fmu.verify.mujoco_bridge import (SMOOTH, compare, mj_model, mujoco_pair, mujoco_trajectory,
                                          random_qpos, rel)

mujoco = pytest.importorskip("mujoco")
gymnasium = pytest.importorskip("gymnasium")

ASSETS = Path(gymnasium.__file__).parent / "envs" / "mujoco" / "assets"
ROBOTS = ["ant", "half_cheetah", "hopper", "humanoid", "humanoidstandup", "inverted_double_pendulum",
          "inverted_pendulum", "point", "pusher", "reacher", "swimmer", "walker2d"]
STATES = 100                   # random states per robot (M, FD, ID and every site at each)
TOL = 1e-9


def quiet_load(path, **kw) -> sf.Model:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ModelWarning)
        return load_model(path, **kw)


def with_sites(src: Path, dst: Path, rng) -> Path:
    """``src`` with a site at a random pose on every body (MjSpec), written to ``dst``: frame
    poses are then checked on every body, not only on the few sites the robots have."""
    spec = mujoco.MjSpec.from_file(str(src))
    for i, body in enumerate(spec.bodies):
        quat = rng.standard_normal(4)
        body.add_site(name=f"probe{i}", pos=rng.uniform(-0.3, 0.3, 3), quat=quat / np.linalg.norm(quat))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dst.write_text(spec.to_xml())
    return dst


@pytest.mark.parametrize("robot", ROBOTS)
def test_robot_matches_mujoco(robot, tmp_path):
    rng = np.random.default_rng(sum(map(ord, robot)))
    path = with_sites(ASSETS / f"{robot}.xml", tmp_path / f"{robot}.xml", rng)
    model = quiet_load(path)
    m, d = mujoco_pair(path, armature=True)        # armature on both sides (M + diag(a))
    assert (model.nq, model.nv) == (m.nq, m.nv)
    assert m.nsite > m.nbody - 1
    err = compare(model, m, d, rng)
    assert max(err.values()) <= TOL, err


def test_enough_robots_with_sites_free_joints_and_chains():
    """The robots above cover what the reader maps: free joints, several joints in one body with
    anchors off the body origin, slide joints, sites of their own, >= 8 models."""
    ms = {r: mj_model(str(ASSETS / f"{r}.xml")) for r in ROBOTS}
    assert len(ms) >= 8
    assert sum(any(m.jnt_type == X.FREE) for m in ms.values()) >= 3
    assert any(np.any(m.body_jntnum > 1) for m in ms.values())
    assert any(np.any(np.abs(m.jnt_pos[m.jnt_type == X.HINGE]) > 0) for m in ms.values())
    assert any(any(m.jnt_type == X.SLIDE) for m in ms.values())
    assert sum(m.nsite for m in ms.values()) >= 1


# ---------------------------------------------------------------- a model with every feature
FEATURES = """
<mujoco model="features">
  <compiler angle="degree"/>
  <option gravity="0.3 -0.2 -9.7" timestep="0.004"/>
  <worldbody>
    <site name="anchor" pos="0.3 0.2 1.1" euler="10 20 30"/>
    <body name="base" pos="0.1 0.2 1.5" euler="20 -10 35">
      <freejoint name="float"/>
      <inertial pos="0.01 0.02 -0.03" mass="2" fullinertia="0.1 0.12 0.09 0.01 -0.02 0.005"/>
      <site name="base_site" pos="0.05 0 0.1" xyaxes="0 1 0 -1 0 0"/>
      <body name="arm" pos="0.2 0 0" axisangle="1 1 0 40">
        <joint name="h1" type="hinge" axis="0 1 1" pos="0.05 -0.02 0.03" ref="25"/>
        <joint name="s1" type="slide" axis="1 0.2 0" pos="0.1 0 0" ref="0.05"/>
        <joint name="h2" type="hinge" axis="1 0 0" pos="0 0.04 0" ref="-10"/>
        <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03" density="900"/>
        <site name="arm_tip" pos="0.3 0 0" zaxis="0 1 1"/>
        <body name="wrist" pos="0.3 0.01 0" quat="0.9 0.1 0.3 0.2">
          <joint name="ball" type="ball" pos="0.02 0.01 -0.03"/>
          <geom type="box" size="0.04 0.03 0.02" pos="0.05 0 0" euler="0 30 0" mass="0.4"/>
          <site name="tool" pos="0.1 0.02 0" euler="90 0 0"/>
        </body>
      </body>
      <body name="leg" pos="-0.1 0 -0.1">
        <joint name="k" type="hinge" axis="0 0 1" pos="0 0 0.05" range="-30 60" limited="true"
               armature="0.02" damping="0.7" frictionloss="0.1"/>
        <geom type="sphere" size="0.05" pos="0 0 -0.1" mass="0.3"/>
      </body>
    </body>
  </worldbody>
</mujoco>
"""


@pytest.fixture
def features(tmp_path) -> Path:
    p = tmp_path / "features.xml"
    p.write_text(FEATURES)
    return p


def test_features_match_mujoco(features):
    """Frames in every MJCF form, free joint off the origin, three joints in one body with anchors
    and refs, a ball joint off-centre, inertia from geoms and fullinertia: M, FD, ID, sites."""
    model = quiet_load(features)
    m, d = mujoco_pair(features, armature=True)
    np.testing.assert_array_equal(model.gravity, [0.3, -0.2, -9.7])
    assert model.timestep == 0.004
    assert model.position_names[:7] == [f"float[{k}]" for k in range(1, 8)]
    assert [b.name for b in model.bodies] == ["base", "arm/h1", "arm/s1", "arm", "wrist", "leg"]
    assert model.bodies[1].mass == model.bodies[2].mass == 0.0         # the chain's carriers
    err = compare(model, m, d, np.random.default_rng(7), states=50)
    assert max(err.values()) <= TOL, err


def test_ref_and_qpos0_are_mujocos_coordinates(features):
    """Hinge and slide coordinates equal MuJoCo's qpos (ref folded into the joint placement); the
    initial state is MuJoCo's qpos0 (free joint at its body pose, hinges at ref)."""
    model = quiet_load(features)
    m = mj_model(str(features))
    np.testing.assert_allclose(model.initial_q, X.q_from_qpos(m, m.qpos0))
    h1 = model.position_names.index("h1")
    assert model.initial_q[h1] == pytest.approx(np.radians(25))
    assert model.initial_q[model.position_names.index("s1")] == pytest.approx(0.05)
    np.testing.assert_allclose(model.initial_q[4:7], [0.1, 0.2, 1.5])
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)                       # at qpos0 the bodies sit where the file puts them
    for name in ("arm", "wrist", "leg"):
        b = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, name)
        R, p = sf.frame_pose(model, model.initial_q, name)
        np.testing.assert_allclose(R, d.xmat[b].reshape(3, 3), atol=1e-12)
        offset = m.jnt_pos[m.body_jntadr[b] + m.body_jntnum[b] - 1]   # ours: at the last anchor
        np.testing.assert_allclose(p, d.xpos[b] + R @ offset, atol=1e-12)


def test_free_joint_armature_is_warned(tmp_path):
    p = tmp_path / "armature.xml"
    p.write_text(FEATURES.replace('<freejoint name="float"/>',
                                  '<joint type="free" name="float" armature="0.1"/>'))
    with pytest.warns(ModelWarning, match=r"1 free-joint armature ignored.*'float'"):
        model = load_model(p)
    np.testing.assert_array_equal(model.joint_armature[:6], 0.0)


def test_joint_parameters_and_limits_read(features):
    model = quiet_load(features)
    leg = model.bodies[model.body_index("leg")]
    assert leg.limits["armature"] == pytest.approx(0.02)
    assert leg.limits["damping"] == pytest.approx(0.7)
    assert leg.limits["friction"] == pytest.approx(0.1)
    assert (leg.limits["lower"], leg.limits["upper"]) == pytest.approx(np.radians([-30, 60]))
    assert "lower" not in model.bodies[model.body_index("arm/h1")].limits     # not limited
    k = model.velocity_names.index("k")
    assert model.joint_damping[k] == pytest.approx(0.7)
    assert model.joint_friction[k] == pytest.approx(0.1)


def test_features_the_file_switches_off_are_not_read(tmp_path):
    """<flag gravity/damper/frictionloss/limit="disable"/>: MuJoCo applies none of them, so
    neither does the model read from the file."""
    p = tmp_path / "off.xml"
    p.write_text(FEATURES.replace('timestep="0.004"/>', 'timestep="0.004"><flag gravity="disable" '
                                  'damper="disable" frictionloss="disable" limit="disable"/>'
                                  '</option>'))
    model = quiet_load(p)
    np.testing.assert_array_equal(model.gravity, 0.0)
    leg = model.bodies[model.body_index("leg")].limits
    assert (leg["damping"], leg["friction"], leg["armature"]) == (0.0, 0.0, pytest.approx(0.02))
    assert "lower" not in leg and "upper" not in leg


def test_coordinate_maps_are_inverse_and_energy_preserving(features):
    m = mj_model(str(features))
    rng = np.random.default_rng(3)
    qpos, qvel, x = random_qpos(m, rng), rng.standard_normal(m.nv), rng.standard_normal(m.nv)
    q = X.q_from_qpos(m, qpos)
    np.testing.assert_array_equal(q[:4], qpos[3:7])                    # quaternion first
    np.testing.assert_array_equal(q[4:7], qpos[:3])
    np.testing.assert_allclose(X.qpos_from_q(m, q), qpos, rtol=0, atol=0)
    qd = X.qd_from_qvel(m, q, qvel)
    np.testing.assert_allclose(X.qvel_from_qd(m, q, qd), qvel, atol=1e-15)
    np.testing.assert_allclose(X.qacc_from_qdd(m, q, qd, X.qdd_from_qacc(m, q, qd, x)), x, atol=1e-14)
    np.testing.assert_allclose(X.qfrc_from_tau(m, q, X.tau_from_qfrc(m, q, x)), x, atol=1e-15)
    assert X.qfrc_from_tau(m, q, qd) @ qvel == pytest.approx(qd @ qd)   # power: τ·q̇ is invariant
    R = X.quat_to_matrix(qpos[3:7])
    np.testing.assert_allclose(qd[:3], qvel[3:6])                      # ω: body axes in both
    np.testing.assert_allclose(qd[3:6], R.T @ qvel[:3])                # v: world -> body axes
    # the free joint's linear acceleration: d/dt (Rᵀ v) = Rᵀ a − ω × Rᵀ v, checked by a finite step
    h, omega = 1e-6, qd[:3]
    a = rng.standard_normal(3)
    R2 = R @ X._axis_angle(omega / np.linalg.norm(omega), h * np.linalg.norm(omega))
    fd = (R2.T @ (qvel[:3] + h * a) - R.T @ qvel[:3]) / h
    acc = np.zeros(m.nv)
    acc[:3] = a
    np.testing.assert_allclose(X.qdd_from_qacc(m, q, qd, acc)[3:6], fd, atol=1e-5)


def test_damping_matches_mujoco_passive_forces(features):
    """Joint damping on both sides (MuJoCo's dampers on, springs off; our Simulator applies
    −d q̇; limits and stops off): the accelerations agree."""
    model = quiet_load(features)
    model.joint_friction = 0.0
    model.stops_enabled = False
    model.joint_damping = model.joint_damping + 0.3          # every dof damped, the free one too
    m, d = mujoco_pair(features, disable=tuple(s for s in SMOOTH if s not in ("PASSIVE", "DAMPER")),
                       armature=True)
    m.dof_damping[:] += 0.3
    if "PASSIVE" in SMOOTH:
        m.jnt_stiffness[:] = 0.0
    sim = sf.Simulator(model)
    rng = np.random.default_rng(11)
    for _ in range(10):
        d.qpos[:], d.qvel[:] = random_qpos(m, rng), 3 * rng.standard_normal(m.nv)
        mujoco.mj_forward(m, d)
        assert np.abs(d.qfrc_passive).max() > 0.1
        q = X.q_from_qpos(m, d.qpos)
        qd = X.qd_from_qvel(m, q, d.qvel)
        qacc = X.qacc_from_qdd(m, q, qd, sim.acceleration(q, qd))
        assert rel(qacc, d.qacc) <= TOL


def test_armature_matches_mujoco(features):
    """MuJoCo's armature (M + diag(a)) on both sides, changed after loading on both: the file's
    (read into ``model.joint_armature``) plus 0.05 on every dof but the free joint's (there MuJoCo's
    acts on world-axis accelerations, ours on body-axis ones: docs/mjcf.md)."""
    model = quiet_load(features)
    k = model.velocity_names.index("k")
    assert model.joint_armature[k] == pytest.approx(0.02)
    m, d = mujoco_pair(features, armature=True)
    m.dof_armature[6:] += 0.05
    mujoco.mj_setConst(m, d)
    model.joint_armature = np.asarray(model.joint_armature) + np.r_[np.zeros(6), np.full(m.nv - 6, 0.05)]
    err = compare(model, m, d, np.random.default_rng(5), states=20)
    assert max(err.values()) <= TOL, err


# ---------------------------------------------------------------- equalities
EQUALITY = """
<mujoco model="loop">
  <worldbody>
    <body name="a" pos="0 0 1">
      <joint name="ja" type="hinge" axis="0 1 0"/>
      <geom type="capsule" fromto="0 0 0 0.5 0 0" size="0.02"/>
      <body name="b" pos="0.5 0 0">
        <joint name="jb" type="hinge" axis="0 1 0"/>
        <geom type="capsule" fromto="0 0 0 0 0 -0.5" size="0.02"/>
        <site name="sb" pos="0.02 0.01 -0.3" euler="0.3 0.1 -0.2"/>
      </body>
    </body>
    <body name="c" pos="0.6 0.1 1.2" euler="0.1 0.2 0.3">
      <joint name="jc" type="ball" pos="0.01 0 0"/>
      <geom type="box" size="0.1 0.05 0.02"/>
      <site name="sc" pos="0.05 -0.02 0.01" euler="-0.1 0.4 0.2"/>
    </body>
  </worldbody>
  <equality>
    <connect name="close" body1="b" body2="world" anchor="0 0 -0.5"/>
    <weld name="hold" body1="c" body2="a" active="false"/>
    <weld name="grip" body1="b" body2="c" anchor="0.1 0.05 -0.02"/>
    <connect name="pin" site1="sb" site2="sc"/>
    <weld name="glue" site1="sc" site2="sb"/>
  </equality>
</mujoco>
"""


def test_connect_and_weld_become_constraints(tmp_path):
    """connect -> ball, weld -> weld (relpose from qpos0, an anchor, sites), active from eq_active0;
    the residuals equal MuJoCo's: |Δp| of a connect, |Δp| and the rotation angle of a weld."""
    p = tmp_path / "loop.xml"
    p.write_text(EQUALITY)
    model = quiet_load(p)
    kinds = {"close": "ball", "hold": "weld", "grip": "weld", "pin": "ball", "glue": "weld"}
    assert [(c.name, c.kind, c.active) for c in model.constraints] == [
        (n, k, n != "hold") for n, k in kinds.items()]
    m, d = mujoco_pair(p, disable=("CONTACT",))
    d.eq_active[:] = 1
    rng = np.random.default_rng(2)
    for i in range(6):
        d.qpos[:] = m.qpos0 if i == 0 else random_qpos(m, rng)
        mujoco.mj_forward(m, d)
        q = X.q_from_qpos(m, d.qpos)
        e = constraint_errors(model, q, active=dict.fromkeys(kinds, True))
        pos = d.efc_pos[d.efc_type == int(mujoco.mjtConstraint.mjCNSTR_EQUALITY)]
        for kind in kinds.values():
            if kind == "ball":
                assert np.linalg.norm(e[:3]) == pytest.approx(np.linalg.norm(pos[:3]), rel=1e-9,
                                                              abs=1e-14)
                e, pos = e[3:], pos[3:]
            else:   # ours [rotation; translation] (ω first), MuJoCo's [translation; sin(θ/2) n]
                assert np.linalg.norm(e[3:6]) == pytest.approx(np.linalg.norm(pos[:3]), rel=1e-9,
                                                               abs=1e-14)
                angle = 2 * np.arcsin(min(1.0, np.linalg.norm(pos[3:6])))
                assert np.linalg.norm(e[:3]) == pytest.approx(angle, rel=1e-7, abs=1e-14)
                e, pos = e[6:], pos[6:]


# ---------------------------------------------------------------- contact geoms
CONTACT = """
<mujoco model="ball_on_ramp">
  <worldbody>
    <geom name="ramp" type="plane" size="5 5 0.1" pos="0.1 0.2 -0.3" euler="0.2 -0.1 0.4"
          friction="0.6 0.005 0.0001"/>
    <geom name="post" type="box" size="0.05 0.05 0.5" pos="2 0 0"/>
    <body name="arm" pos="0 0 1">
      <joint name="swing" type="hinge" axis="0 1 0" pos="0.05 0 0.1"/>
      <geom name="rod" type="capsule" fromto="0 0 0 0.4 0 0" size="0.02" contype="0"
            conaffinity="0"/>
      <geom name="ball" type="sphere" size="0.07" pos="0.4 0.01 -0.02" friction="0.9 0 0"/>
      <geom name="knob" type="capsule" fromto="0 0 0 0 0 0.1" size="0.01"/>
    </body>
  </worldbody>
</mujoco>
"""


def test_sphere_and_plane_geoms_become_contact(tmp_path):
    """A colliding sphere geom -> a contact sphere on its body (the centre where MuJoCo puts the
    geom, at random states), a capsule -> a contact capsule placed and turned as MuJoCo's, a plane
    of the world -> a contact plane (normal = the geom's z axis), each pair with the larger of its
    geoms' frictions; the world's other colliding shapes are named in one warning."""
    p = tmp_path / "contact.xml"
    p.write_text(CONTACT)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = load_model(p)
    msgs = [str(w.message) for w in caught]
    if not hasattr(model, "add_contact_sphere"):
        assert any("4 contact geoms ignored" in msg and "'knob'" in msg for msg in msgs), msgs
        pytest.skip("the engine has no contact yet (issue 19)")
    assert any("1 contact geoms ignored" in msg and "'post'" in msg for msg in msgs), msgs
    assert not any("'rod'" in msg for msg in msgs)                           # cannot collide
    (sphere, knob), (plane,) = model.contact_geoms, model.contact_planes
    assert (sphere.name, sphere.radius) == ("ball", 0.07)
    assert (knob.shape, knob.radius, knob.half_length) == ("capsule", 0.01, pytest.approx(0.05))
    assert plane.name == "ramp"
    friction = {(p.geom, p.other): p.law["friction"] for p in model.contact_pairs}
    assert friction == {("ball", "ramp"): 0.9, ("knob", "ramp"): 1.0}   # MuJoCo's max of the two
    m, d = mujoco_pair(p)
    g_ball, g_ramp = (mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, n) for n in ("ball", "ramp"))
    rng = np.random.default_rng(4)
    for _ in range(5):
        d.qpos[:] = rng.uniform(-3, 3, m.nq)
        mujoco.mj_forward(m, d)
        R, pos = sf.frame_pose(model, X.q_from_qpos(m, d.qpos), "arm")
        np.testing.assert_allclose(pos + R @ sphere.center, d.geom_xpos[g_ball], atol=1e-14)
        g_knob = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, "knob")       # placed and turned
        np.testing.assert_allclose(pos + R @ knob.center, d.geom_xpos[g_knob], atol=1e-14)
        np.testing.assert_allclose(R @ knob.rotation, d.geom_xmat[g_knob].reshape(3, 3), atol=1e-12)
    n = d.geom_xmat[g_ramp].reshape(3, 3)[:, 2]
    np.testing.assert_allclose(plane.normal, n, atol=1e-15)
    assert plane.offset == pytest.approx(n @ d.geom_xpos[g_ramp], abs=1e-15)


# ---------------------------------------------------------------- warnings and errors
def test_one_warning_per_kind_naming_the_elements():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        load_model(ASSETS / "humanoid.xml")
    msgs = [str(w.message) for w in caught if issubclass(w.category, ModelWarning)]
    kinds = [msg.split(": ", 1)[1].split(" ignored")[0] for msg in msgs]
    assert len(kinds) == len(set(kinds)), kinds
    springs = next(msg for msg in msgs if "joint springs" in msg)
    assert "'abdomen_z'" in springs and "stiffness" in springs
    assert any("actuators ignored" in msg and "'abdomen_y'" in msg for msg in msgs)
    assert any("tendons ignored" in msg for msg in msgs)
    assert not any("free-joint armature" in msg for msg in msgs)      # humanoid's root: armature 0
    if hasattr(sf.Model, "add_contact_sphere"):       # issue 19: the floor and spheres are read
        assert any("read as contact geometries and planes" in msg and "'floor'" in msg
                   and "'head'" in msg for msg in msgs)
        assert not any("contact geoms ignored" in msg for msg in msgs)   # capsules read too
    else:
        assert any("contact geoms ignored" in msg and "'floor'" in msg for msg in msgs)


def test_refused_model_gives_mujocos_message_in_one_line(tmp_path):
    bad = tmp_path / "bad.xml"
    bad.write_text('<mujoco><worldbody><body><joint type="hinge" axis="0 0 0"/>'
                   '<geom size="0.1"/></body></worldbody></mujoco>')
    with pytest.raises(ModelError) as e:
        load_model(bad)
    msg = str(e.value)
    assert msg.startswith(f"{bad}: MuJoCo refused the model: ") and "\n" not in msg
    assert "axis" in msg.lower()
    with pytest.raises(ModelError, match="no such model file"):
        load_model(tmp_path / "missing.xml")
    for cmd in ([sys.executable, "-m", "soa_fmu.cli", str(bad)],
                [sys.executable, "build_fmu.py", str(bad), "-o", str(tmp_path / "x.fmu")]):
        r = subprocess.run(cmd, capture_output=True, text=True, cwd=Path(__file__).parents[1])
        assert r.returncode == 1, r.stderr
        assert len(r.stderr.strip().splitlines()) == 1 and "MuJoCo refused" in r.stderr


def test_without_mujoco_the_error_names_the_extra(features, monkeypatch):
    monkeypatch.setitem(sys.modules, "mujoco", None)         # import mujoco -> ImportError
    with pytest.raises(ModelError, match=r"soa_fmu\[mjcf\]"):
        load_model(features)


def test_unnamed_bodies_and_joints_get_names(tmp_path):
    p = tmp_path / "anon.xml"
    p.write_text('<mujoco><worldbody><body pos="0 0 1"><joint axis="0 1 0"/><geom size="0.1"/>'
                 '<body pos="0 0 -0.5"><joint axis="1 0 0"/><joint axis="0 1 0"/>'
                 '<geom size="0.1"/></body></body></worldbody></mujoco>')
    model = quiet_load(p)
    assert [b.name for b in model.bodies] == ["body1", "body2/joint1", "body2"]
    assert model.position_names == ["joint0", "joint1", "joint2"]


# ---------------------------------------------------------------- TOML include and the CLIs
def test_toml_include_places_a_prefixed_copy(tmp_path):
    """Two ant copies in one native file: prefixes, a placement, and the floating base of a
    fixed-base MJCF; dynamics equal the lone model's (bodies apart, no coupling)."""
    (tmp_path / "reacher.xml").write_text((ASSETS / "reacher.xml").read_text())
    (tmp_path / "two.toml").write_text(
        '[[include]]\nmjcf = "reacher.xml"\nprefix = "r1_"\n\n'
        '[[include]]\nmjcf = "reacher.xml"\nprefix = "r2_"\nxyz = [1.0, 0.0, 0.0]\n'
        'rpy = [0.0, 0.0, 0.5]\n')
    one, two = quiet_load(tmp_path / "reacher.xml"), quiet_load(tmp_path / "two.toml")
    assert two.nv == 2 * one.nv and "r2_fingertip" in [b.name for b in two.bodies]
    rng = np.random.default_rng(1)
    q, qd = rng.standard_normal(two.nv), rng.standard_normal(two.nv)
    n = one.nv
    np.testing.assert_allclose(sf.mass_matrix(two, q)[n:, n:], sf.mass_matrix(one, q[n:]), atol=1e-14)
    R1, p1 = sf.frame_pose(one, q[n:], "fingertip")
    R2, p2 = sf.frame_pose(two, q, "r2_fingertip")
    Rz = X._axis_angle(np.array([0.0, 0.0, 1.0]), 0.5)
    np.testing.assert_allclose(p2, [1.0, 0, 0] + Rz @ p1, atol=1e-14)
    np.testing.assert_allclose(R2, Rz @ R1, atol=1e-14)
    # the FMU holds each MJCF include as MuJoCo's compiled .mjb, the reference rewritten (the build
    # reads the bundle back and compares its variable table with the original's)
    import zipfile
    import build_fmu
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ModelWarning)
        fmu = build_fmu.build(tmp_path / "two.toml", tmp_path / "two.fmu", runtime="python")
    names = zipfile.ZipFile(fmu).namelist()
    assert {"resources/model/_included/0_reacher.mjb", "resources/model/two.toml"} <= set(names)
    assert not any(n.endswith(".xml") and "/model/" in n for n in names)
    # floating_base: the one top-level body without joints gets a free joint (reacher has none)
    (tmp_path / "float.toml").write_text('[[include]]\nmjcf = "reacher.xml"\nfloating_base = true\n')
    with pytest.raises(ModelError, match="floating_base needs exactly one top-level body"):
        quiet_load(tmp_path / "float.toml")
    (tmp_path / "arm.xml").write_text('<mujoco><worldbody><body name="base" pos="0 0 0.5">'
                                      '<geom size="0.1"/><body name="l"><joint name="j"/>'
                                      '<geom size="0.1" pos="0.2 0 0"/></body></body></worldbody>'
                                      '</mujoco>')
    (tmp_path / "float.toml").write_text('[[include]]\nmjcf = "arm.xml"\nfloating_base = true\n'
                                         'prefix = "a_"\n')
    model = quiet_load(tmp_path / "float.toml")
    assert model.position_names[:7] == [f"a_root_joint[{k}]" for k in range(1, 8)]
    assert model.velocity_names[6] == "a_j"


def test_describe_and_build_fmu_read_mjcf(tmp_path, capsys):
    from soa_fmu.cli import describe_main
    assert describe_main([str(ASSETS / "hopper.xml")]) == 0
    out, err = capsys.readouterr()
    assert "rootz: prismatic 'rootz'" in out and "nv = 6" in out
    assert "soa-describe: warning:" in err and "actuators ignored" in err
    import build_fmu
    from fmpy import read_model_description

    from soa_fmu.fmpy_logging import simulate_fmu
    idp = ASSETS / "inverted_double_pendulum.xml"
    with pytest.warns(ModelWarning, match="actuators ignored"):
        fmu = build_fmu.build(idp, tmp_path / "idp.fmu", integrator="rk4", stops=False)
    md = read_model_description(str(fmu))
    m = mj_model(idp)
    assert float(md.defaultExperiment.stepSize) == m.opt.timestep       # MuJoCo's timestep
    # fmpy runs the FMU (RK4, stops off) at its default step; MuJoCo's RK4 at the same step, limits
    # off (damping on both)
    res = simulate_fmu(str(fmu), stop_time=1.0, start_values={"q0[2]": 0.1, "q0[3]": -0.05},
                       output=["q[1]", "q[2]", "q[3]"])
    q = np.column_stack([res[f"q[{i}]"] for i in (1, 2, 3)])
    q_mj = mujoco_trajectory(idp, [0.0, 0.1, -0.05], len(q) - 1)
    assert np.abs(q - q_mj).max() <= 1e-9 * np.abs(q_mj).max()
    assert np.abs(q_mj[-1, 1:]).max() > 0.5                              # it fell: not a rest state
