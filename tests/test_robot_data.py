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

import pytest

from soa_fmu.loading import ModelWarning, load_model

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
        warnings.simplefilter("ignore", ModelWarning)      # mimic fingers: independent, as in pin
        model = load_model(path, floating_base=floating)
    pmodel = (pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer()) if floating
              else pin.buildModelFromUrdf(str(path)))
    assert model.nv == pmodel.nv
    assert model.total_mass == pytest.approx(sum(i.mass for i in pmodel.inertias), rel=1e-12)
    err_fd, err_id = compare_dynamics(model, pmodel, n_states=10, seed=3)
    print(f"{name}: nv={model.nv} max rel. error FD {err_fd:.2e}, ID {err_id:.2e}")
    assert err_fd <= 1e-9 and err_id <= 1e-9


def test_talos_mimic_joints_are_reported():
    path = robot_path(*ROBOTS["talos"][:2])
    with pytest.warns(ModelWarning, match="mimic joints are read as independent joints"):
        model = load_model(path, floating_base=True)
    mimics = [b.joint_name for b in model.bodies if "mimic" in b.limits]
    assert len(mimics) == 12 and all(n.startswith("gripper_") for n in mimics)
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
