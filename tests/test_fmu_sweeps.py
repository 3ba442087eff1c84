"""The native FMU's RK4 step reuses the articulated factors of the last evaluation for its first
stage (issue 24), and a ros2 / ros34pw2 / rk4w step is one sweep per stage (issue 30): counted in
a test build of the FMU's own sources (-DSOA_COUNT_SWEEPS, tests/fmu_sweeps_host.c), so that
neither can silently go."""
from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from fmu_fixtures import REPO, build

pytestmark = pytest.mark.skipif(sys.platform != "linux" or shutil.which("gcc") is None,
                                reason="needs Linux and gcc")
STEPS = 50


def compile_host(tmp, integrator: str):
    """The arm7 FMU (integrator start value ``integrator``) with its sources/ compiled with the
    sweep counter into the host; its run(energy)."""
    from fmpy import read_model_description
    from soa_fmu.fmu.native import fmi_headers
    fmu = build("arm7.urdf", name="Arm7", runtime="native", integrator=integrator)
    zipfile.ZipFile(fmu).extractall(tmp / "fmu")
    src = tmp / "fmu" / "sources"
    exe = tmp / "fmu_sweeps_host"
    subprocess.run(["gcc", "-std=c99", "-O1", "-DSOA_COUNT_SWEEPS", f"-I{src}", f"-I{fmi_headers()}",
                    str(REPO / "tests" / "fmu_sweeps_host.c"), *map(str, sorted(src.glob("*.c"))),
                    "-o", str(exe), "-lm"], check=True, capture_output=True)
    md = read_model_description(str(fmu))
    vr = {v.name: v.valueReference for v in md.modelVariables}

    def run(energy: bool) -> tuple[int, int, np.ndarray]:
        out = subprocess.run([str(exe), (tmp / "fmu" / "resources").as_uri(), md.guid,
                              str(vr["tau[1]"]), "7", str(vr["q[1]"]), str(vr["energy"]),
                              str(STEPS), str(int(energy))], capture_output=True, text=True,
                             timeout=300)
        assert out.returncode == 0, out.stderr[-3000:]
        lines = out.stdout.split("\n")
        full, refilter = map(int, lines[0].split()[1:])
        return full, refilter, np.array([float(x) for x in lines[1:] if x])
    return run


@pytest.fixture(scope="module")
def host(tmp_path_factory):
    return compile_host(tmp_path_factory.mktemp("sweeps"), "rk4")     # (auto: rk4w)


@pytest.mark.parametrize("method,stages", [("ros2", 2), ("ros34pw2", 4), ("rk4w", 4)])
def test_rosenbrock_step_is_one_sweep_per_stage(tmp_path, method, stages):
    """setReal(tau) + doStep + getReal(q, qd, qdd) with ros2, ros34pw2 or rk4w (auto's choice for
    the arm's damping): its stages, and the reported beta-dot at the new state (computed when
    read): 3, 5 and 5 full sweeps a step, as implicit Euler's 2."""
    full, refilter, q = compile_host(tmp_path, method)(False)
    assert (full, refilter) == ((stages + 1) * STEPS, 0) and np.all(np.isfinite(q))


def test_rk4_step_reuses_the_first_stage(host):
    """setReal(tau) + doStep + getReal(q, qd, qdd): 3 stages + the final beta-dot are full sweeps,
    the first stage (at the state of the last evaluation) the filter and smoother alone."""
    full, refilter, _ = host(False)
    assert (full, refilter) == (4 * STEPS, STEPS)


def test_reuse_is_exact_and_stops_when_the_data_was_used(host):
    """getReal(energy) between steps uses the data: every stage is then a full sweep; the states
    of the two loops are the same to the bit (the reuse changes no number)."""
    full_r, refilter_r, q_reused = host(False)
    full, refilter, q = host(True)
    assert (full, refilter) == (5 * STEPS, 0)
    assert refilter_r == STEPS
    np.testing.assert_array_equal(q_reused, q)
    assert np.all(np.isfinite(q)) and np.ptp(q) > 0
