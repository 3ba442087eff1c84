"""Real robot URDFs of the ``example-robot-data`` package against Pinocchio (SPEC §6: ≤ 1e-9 relative).

The package (≥ 4.4) ships only the robot files, installed under ``<site-packages>/cmeel.prefix/share/
example-robot-data/robots``; its Python loaders live in the separate ``example-robot-data-loaders``
package, used when installed.  Geometry (package:// meshes) is irrelevant here.
"""
from __future__ import annotations

import re
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import soa_fmu as sf
from soa_fmu.io import ModelWarning, load_model

pin = pytest.importorskip("pinocchio")
from pin_mapping import compare_dynamics  # noqa: E402

# name: (folder, file, floating base) — the choices of example_robot_data's loaders
ROBOTS = {
    "panda": ("panda_description/urdf", "panda.urdf", False),
    "ur5": ("ur_description/urdf", "ur5_robot.urdf", False),
    "talos": ("talos_data/robots", "talos_reduced.urdf", True),
    "solo12": ("solo_description/robots", "solo12.urdf", True),
    "a1": ("a1_description/urdf", "a1.urdf", True),
    "baxter": ("baxter_description/urdf", "baxter.urdf", False),
    "kinova": ("kinova_description/robots", "kinova.urdf", False),
}


def robot_path(folder: str, file: str) -> Path:
    try:
        import example_robot_data
        return Path(example_robot_data.getModelPath(f"{folder}/{file}")) / folder / file
    except (ImportError, AttributeError, OSError, IOError):
        pass
    for entry in sys.path:
        p = Path(entry) / "cmeel.prefix/share/example-robot-data/robots" / folder / file
        if p.is_file():
            return p
    pytest.skip(f"example-robot-data file {folder}/{file} not installed")


@pytest.mark.parametrize("name", sorted(ROBOTS))
def test_dynamics_match_pinocchio(name):
    folder, file, floating = ROBOTS[name]
    path = robot_path(folder, file)
    with warnings.catch_warnings():
        model = load_model(path, floating_base=floating)   # (the bare algorithms: the tree's, as
        #                                                     pin's without mimic=True)
    pmodel = (pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer()) if floating
              else pin.buildModelFromUrdf(str(path)))
    assert model.nv == pmodel.nv
    assert model.total_mass == pytest.approx(sum(i.mass for i in pmodel.inertias), rel=1e-12)
    err_fd, err_id = compare_dynamics(model, pmodel, n_states=10, seed=3)
    print(f"{name}: nv={model.nv} max rel. error FD {err_fd:.2e}, ID {err_id:.2e}")
    assert err_fd <= 1e-9 and err_id <= 1e-9


def test_talos_fixed_mimic_joints_carry_no_coupling():
    # talos's 12 gripper joints with <mimic> are all type="fixed": nothing to couple, no warning
    path = robot_path(*ROBOTS["talos"][:2])
    with warnings.catch_warnings():
        warnings.simplefilter("error", ModelWarning)
        model = load_model(path, floating_base=True)
    mimics = [b.joint_name for b in model.bodies if "mimic" in b.limits]
    assert len(mimics) == 12 and all(n.startswith("gripper_") for n in mimics)
    assert model.mimics == [] and all(model.bodies[model.body_index(b.name)].joint.nv == 0
                                      for b in model.bodies if "mimic" in b.limits)
    assert model.bodies[0].joint_name == "root_joint" and (model.nq, model.nv) == (39, 38)


@pytest.mark.parametrize("folder, file, line, message", [
    # physically impossible inertias shipped in real files: refused, with file, line and link named
    ("pr2_description/urdf", "pr2.urdf", 786,
     r"link 'sensor_mount_link' <inertia>: principal inertias .* violate the triangle inequality"),
    ("tiago_description/robots", "tiago_no_hand.urdf", 180,
     r"link 'base_antenna_left_link' <inertia>: inertia tensor is not positive semi-definite"),
    # massless fingers on a moving joint: D would be singular
    ("romeo_description/urdf", "romeo.urdf", 1443,
     r"joint 'LHand' \(child link 'LFinger11Link'\) moves only massless bodies"),
])
def test_invalid_real_robot_files_are_refused_clearly(folder, file, line, message):
    from soa_fmu.model import ModelError
    path = robot_path(folder, file)
    with pytest.raises(ModelError, match=f"^{re.escape(str(path))}:{line}: {message}"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ModelWarning)
            load_model(path)


# Files whose only problem is inertias that no rigid body can have (not positive semi-definite, or
# breaking the triangle inequality): read with strict=False, one ModelWarning per such link.
# name: (folder, file, floating base, {offending link: line})
NON_PHYSICAL = {
    "pr2": ("pr2_description/urdf", "pr2.urdf", True,
            {"sensor_mount_link": 786, "double_stereo_link": 877}),
    "tiago": ("tiago_description/robots", "tiago_no_hand.urdf", False,
              {"base_antenna_left_link": 180, "base_antenna_right_link": 209}),
    "tiago_dual": ("tiago_description/robots", "tiago_dual.urdf", False,
                   {"base_antenna_left_link": 179, "base_antenna_right_link": 208}),
    "allegro": ("allegro_hand_description/urdf", "allegro_right_hand.urdf", False,
                {"link_3.0": 143, "link_7.0": 281, "link_11.0": 419, "link_15.0": 565}),
    "anymal": ("anymal_b_simple_description/robots", "anymal.urdf", True, {"base": 105}),
    "anymal_c": ("anymal_c_simple_description/urdf", "anymal.urdf", True,
                 {"depth_camera_front_camera": 203, "depth_camera_rear_camera": 354,
                  "depth_camera_left_camera": 527, "depth_camera_right_camera": 605, "hatch": 1704}),
    "go1": ("go1_description/urdf", "go1.urdf", True, {"base": 19}),
    "b1": ("b1_description/urdf", "b1.urdf", True, {"base": 16}),
    "hyq": ("hyq_description/robots", "hyq_no_sensors.urdf", True,
            {"base_link": 84, "lf_foot": 223, "rf_foot": 438, "lh_foot": 653, "rh_foot": 868}),
    "romeo_small": ("romeo_description/urdf", "romeo_small.urdf", True,
                    {"RShoulderYawLink": 550, "RElbowYawLink": 588}),
    "alex": ("alex_description/urdf", "alex_psyonic_hands.urdf", True,
             {"LeftPsyonicAbilityBaseLink": 945, "Left_thumb_base": 964,
              "RightPsyonicAbilityBaseLink": 1323, "Right_thumb_base": 1342}),
}
PHYSICAL_PROBLEM = (r"(principal inertias .* violate the triangle inequality|inertia tensor is not "
                    r"positive semi-definite \(eigenvalues .*\))")


@pytest.mark.parametrize("name", sorted(NON_PHYSICAL))
def test_non_physical_inertias_load_with_strict_false(name):
    from soa_fmu.model import ModelError
    folder, file, floating, bad_links = NON_PHYSICAL[name]
    path = robot_path(folder, file)
    first = min(bad_links, key=bad_links.get)
    with pytest.raises(ModelError, match=f"^{re.escape(str(path))}:{bad_links[first]}: link "
                                         f"{re.escape(repr(first))} <inertia>: {PHYSICAL_PROBLEM}$"):
        load_model(path, floating_base=floating)                 # strict=True: refused, as before
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = load_model(path, floating_base=floating, strict=False)
    messages = [str(w.message) for w in caught
                if w.category is ModelWarning and "<mimic>" not in str(w.message)]
    assert len(messages) == len(bad_links), messages               # one per offending link
    for msg, (link, line) in zip(messages, sorted(bad_links.items(), key=lambda kv: kv[1])):
        assert re.fullmatch(f"{re.escape(str(path))}:{line}: link {re.escape(repr(link))} <inertia>: "
                            f"{PHYSICAL_PROBLEM} \\(accepted with strict=False: .*\\)", msg), msg
    pmodel = (pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer()) if floating
              else pin.buildModelFromUrdf(str(path)))
    assert model.nv == pmodel.nv
    err_fd, err_id = compare_dynamics(model, pmodel, n_states=10, seed=5)
    print(f"{name}: nv={model.nv} max rel. error FD {err_fd:.2e}, ID {err_id:.2e}")
    assert err_fd <= 1e-9 and err_id <= 1e-9


def test_massless_fingers_are_locked_with_strict_false():
    # romeo's hand joints (LHand, RHand and their 22 mimic finger joints) move only massless links:
    # refused, the error saying that strict=False locks them; strict=False reads them as fixed, with
    # one warning naming them
    from soa_fmu.model import ModelError
    path = robot_path("romeo_description/urdf", "romeo.urdf")
    with pytest.raises(ModelError, match=f"^{re.escape(str(path))}:1443: joint 'LHand' \\(child "
                                         "link 'LFinger11Link'\\) moves only massless bodies .*; "
                                         "strict=False locks such joints"):
        load_model(path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = load_model(path, strict=False)
    (msg,) = [str(w.message) for w in caught]
    assert msg.startswith(f"{path}: 24 joints moving only massless links locked (read as fixed; "
                          "accepted with strict=False): 'LHand' (line 1443), 'RHand' (line 1451)")
    assert model.nv == 31 and model.mimics == []
    assert all(model.bodies[model.body_index(n)].joint.nv == 0 for n in ("LFinger11Link",
                                                                          "RFinger11Link"))
    pmodel = pin.buildModelFromUrdf(str(path))                 # the same tree, hands held still
    lock = [pmodel.getJointId(b.joint_name) for b in model.bodies
            if b.joint.nv == 0 and pmodel.existJointName(b.joint_name)]
    pmodel = pin.buildReducedModel(pmodel, lock, pin.neutral(pmodel))
    err_fd, err_id = compare_dynamics(model, pmodel, n_states=5, seed=4)
    assert err_fd <= 1e-9 and err_id <= 1e-9


def test_degenerate_axis_gets_armature_with_strict_false():
    # icub's neck: neck_roll moves point masses (neck_2, head: no rotational inertia) whose centre
    # lines up with its axis at the neutral configuration: D(neck_roll) ~ 1e-13 of its subtree's
    # rigid inertia, singular (the run-time failure used to name neck_pitch, the next joint in)
    from soa_fmu.io.checks import WELL_CONDITIONED
    from soa_fmu.model import ModelError
    path = robot_path("icub_description/robots", "icub.urdf")
    with pytest.raises(ModelError, match=f"^{re.escape(str(path))}:1042: joint 'neck_roll' "
                       r"\(child link 'neck_2'\) has a degenerate axis: articulated inertia about "
                       r"its axis (\S+) at the neutral configuration, against (\S+) for its "
                       r"subtree held rigid .*strict=False adds the smallest armature") as err:
        load_model(path)
    D, Mkk = (float(x) for x in re.search(r"axis (\S+) at .* against (\S+) for", str(err.value)).groups())
    assert D < 1e-9 * Mkk
    with pytest.warns(ModelWarning, match=r"armature added to 1 joint with a degenerate axis.*: "
                                          r"'neck_roll' (\S+) ") as caught:
        model = load_model(path, strict=False)
    a = model.joint_armature
    i = model.velocity_names.index("neck_roll")
    assert np.count_nonzero(a) == 1 and a[i] == pytest.approx(WELL_CONDITIONED * Mkk - D, rel=1e-2)
    assert f"{a[i]:.3g}" in str(caught[0].message)
    q, z = model.neutral_configuration(), np.zeros(model.nv)
    qdd = sf.forward_dynamics(model, q, z, z)                   # D is now well-conditioned
    M = sf.mass_matrix(model, q)                                # (M + diag(a): the armature in)
    tau0 = sf.inverse_dynamics(model, q, z, np.zeros(model.nv))
    assert np.abs(M @ qdd + tau0).max() <= 1e-9 * np.abs(tau0).max()


def test_degenerate_axis_of_an_included_urdf(tmp_path):
    path = tmp_path / "icub.toml"
    urdf = robot_path("icub_description/robots", "icub.urdf")
    path.write_text(f'name = "two"\n\n[[include]]\nurdf = "{urdf}"\nprefix = "a_"\n')
    from soa_fmu.model import ModelError
    with pytest.raises(ModelError, match=rf"^{re.escape(str(path))}:3: include\[0\] .*joint "
                                         r"'a_neck_roll' \(body 'a_neck_2'\) has a degenerate axis"):
        load_model(path)
    with pytest.warns(ModelWarning, match=r"armature added to 1 joint .*'a_neck_roll' 1\.64e-06"):
        model = load_model(path, strict=False)
    assert np.count_nonzero(model.joint_armature) == 1


def test_native_include_with_strict_false(tmp_path):
    urdf = robot_path("pr2_description/urdf", "pr2.urdf")
    path = tmp_path / "pr2.toml"
    path.write_text(f'name = "pr2"\nstrict = false\n\n[[include]]\nurdf = "{urdf}"\nprefix = "a_"\n')
    with pytest.warns(ModelWarning) as caught:
        model = load_model(path)
    messages = [str(w.message) for w in caught]
    assert len(messages) == 2
    assert messages[0].startswith(f"{path}:4: include[0]: {urdf}:786: link 'sensor_mount_link' "
                                  "<inertia>: principal inertias")
    assert "a_sensor_mount_link" in {b.name for b in model.bodies}
    path.write_text(path.read_text().replace("strict = false\n", ""))
    from soa_fmu.model import ModelError
    with pytest.raises(ModelError, match=f"{re.escape(str(path))}:3: include\\[0\\]: .*pr2\\.urdf:786: "
                                         "link 'sensor_mount_link'"):
        load_model(path)
    with pytest.warns(ModelWarning) as caught:
        assert load_model(path, strict=False).nv == model.nv
    assert sum("sensor_mount_link" in str(w.message) for w in caught) == 1
