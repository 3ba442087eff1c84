"""``soa-describe`` / ``python -m soa_fmu.cli``: the model description and one-line errors."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from model_descriptions import example_path
from soa_fmu.cli import describe_main

ROOT = Path(__file__).resolve().parents[1]


def test_describe_two_arms_box(capsys):
    assert describe_main([str(example_path("two_arms_box.toml"))]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    lines = out.splitlines()
    assert lines[0].startswith("two_arms_box  (") and lines[0].endswith("two_arms_box.toml)")
    assert "19 bodies, nq = 21, nv = 20, total mass 45 kg, gravity (0, 0, -9.81) m/s²" in lines[1]
    # the tree is indented by depth: world, base (1), link1 (2) ... tool0 (9)
    assert "  left_base_link: fixed 'left_root_joint'; 4 kg" in lines
    assert "    left_link1: revolute 'left_joint1' axis (0, 0, 1), q: left_joint1; 4 kg" in lines
    assert "                  left_tool0: fixed 'left_tool_joint'; massless" in lines
    assert ("  box: free 'box_joint', q: box_joint[1] … box_joint[7] (7), qd: box_joint[1] … "
            "box_joint[6] (6); 2 kg") in lines
    assert "  box_grasp_left on box at (-0.15, 0, 0)" in lines
    assert "  grasp_right: weld (6 rows) right_tool0 -> box_grasp_right" in lines
    assert any(line.startswith("  q: left_joint1=0, left_joint2=0.359486") for line in lines)


def test_describe_urdf_with_floating_base(capsys):
    assert describe_main([str(example_path("arm7.urdf")), "--floating-base"]) == 0
    out = capsys.readouterr().out
    assert "9 bodies, nq = 14, nv = 13, total mass 21.5 kg" in out
    assert "  base_link: free 'root_joint', q: root_joint[1] … root_joint[7] (7)" in out


def test_bad_file_gives_one_line_and_status_1(tmp_path, capsys):
    bad = tmp_path / "bad.toml"
    bad.write_text('[[bodies]]\nname = "a"\nmass = -1.0\njoint = { type = "fixed" }\n')
    assert describe_main([str(bad)]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err == f"soa-describe: error: {bad}:3: bodies[0].mass: negative mass -1.0\n"


def test_mimic_coupling_is_described(tmp_path, capsys):
    link = ('<link name="{}"><inertial><mass value="1"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" '
            'iyz="0" izz="1"/></inertial></link>')
    path = tmp_path / "m.urdf"
    path.write_text(f'<robot name="r">{link.format("a")}{link.format("b")}{link.format("c")}'
                    '<joint name="j1" type="revolute"><parent link="a"/><child link="b"/></joint>'
                    '<joint name="j2" type="revolute"><parent link="a"/><child link="c"/>'
                    '<mimic joint="j1" multiplier="-2" offset="0.5"/></joint></robot>')
    assert describe_main([str(path)]) == 0
    out, err = capsys.readouterr()
    assert err == "" and "mimic couplings (enforced; q = k q_driver + c):\n  j2 = -2 j1 + 0.5" in out


def test_lenient_reads_non_physical_inertias(tmp_path, capsys):
    link = ('<link name="{}"><inertial><mass value="1"/><inertia ixx="{}" ixy="0" ixz="0" iyy="1" '
            'iyz="0" izz="1"/></inertial></link>\n')
    path = tmp_path / "m.urdf"        # link 'b': principal inertias 3, 1, 1 (no rigid body has them)
    path.write_text(f'<robot name="r">\n{link.format("a", 1)}{link.format("b", 3)}'
                    '<joint name="j" type="revolute"><parent link="a"/><child link="b"/></joint></robot>')
    assert describe_main([str(path)]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err.startswith(f"soa-describe: error: {path}:3: link 'b' <inertia>: principal "
                                        "inertias [1. 1. 3.] violate the triangle inequality")
    # the way out is named as the command line spells it
    assert "--lenient accepts inertias" in err and "strict=False" not in err
    assert describe_main([str(path), "--lenient"]) == 0
    out, err = capsys.readouterr()
    assert "    b: revolute 'j' axis (1, 0, 0), q: j; 1 kg" in out.splitlines()
    assert err == (f"soa-describe: warning: {path}:3: link 'b' <inertia>: principal inertias [1. 1. 3.] "
                   "violate the triangle inequality (accepted with --lenient: not the inertia of a "
                   "rigid body)\n")


@pytest.mark.parametrize("good", [True, False])
def test_python_dash_m(tmp_path, good):
    path = example_path("slider_crank.toml") if good else tmp_path / "missing.urdf"
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-m", "soa_fmu.cli", str(path)], capture_output=True,
                       text=True, env=env, cwd=tmp_path, timeout=120)
    if good:
        assert r.returncode == 0 and r.stderr == ""
        assert "  wrist_pin: ball (3 rows) rod_tip -> slider_pin" in r.stdout
    else:
        assert r.returncode == 1 and r.stdout == ""
        assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
        assert r.stderr.startswith(f"soa-describe: error: {path}: cannot read model file")
