"""Real robots at 1 kHz (docs/joints.md): the DEFAULT native FMU of example-robot-data arms and
hands (integrator auto, stops on) runs 10 s at h = 1 ms under gravity with zero torque in fmpy with
no discard, and q at 1 s is within 1e-3 rad of a tight reference of the same ODE (the engine's
implicit step at h = 20 and 10 µs, Richardson-extrapolated).  xarm7 and z1 (URDF
damping 10 / friction 1 on ~1e-4 kg·m² links: RK4 diverges at 1 ms) run in the default suite; the
full set is marked slow."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import soa_fmu as sf
from soa_fmu import _core
from soa_fmu.integrators import METHOD_CODES
from soa_fmu.io import ModelWarning

pytest.importorskip("pinocchio")          # example-robot-data comes with the Pinocchio extra
fmpy = pytest.importorskip("fmpy")
from soa_fmu.fmpy_logging import simulate_fmu  # noqa: E402
from fmu_fixtures import build  # noqa: E402
from test_robot_data import robot_path  # noqa: E402

ROBOTS = {  # name: (folder, file)
    "xarm7": ("xarm_description/urdf", "xarm7.urdf"),
    "z1": ("z1_description/urdf", "z1.urdf"),
    "panda": ("panda_description/urdf", "panda.urdf"),
    "ur10": ("ur_description/urdf", "ur10_robot.urdf"),
    "baxter": ("baxter_description/urdf", "baxter.urdf"),
    "allegro": ("allegro_hand_description/urdf", "allegro_left_hand.urdf"),
}
DEFAULT_SUITE = ("xarm7", "z1")


def reference_at_1s(model: sf.Model) -> np.ndarray:
    """The implicit step at h = 20 and 10 µs, Richardson-extrapolated (second order)."""
    out = []
    for n in (50_000, 100_000):
        q, qd = model.neutral_configuration(), np.zeros(model.nv)
        _core.implicit(model.data, q, qd, np.zeros(model.nv), False, 1.0 / n, n)
        out.append(q)
    return 2 * out[1] - out[0]


def check_robot(name: str) -> None:
    path = robot_path(*ROBOTS[name])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ModelWarning)
        model = sf.load_model(path, strict=False)          # (--lenient: published inertias)
        fmu = build(path, name=f"R_{name}", strict=False)  # the default native FMU
    log = []
    res = simulate_fmu(fmu, stop_time=10.0, step_size=1e-3, output_interval=1e-3,
                       output=["q[1]", "integrator_used"] + [f"q[{i + 1}]" for i in
                                                             range(1, model.nq)],
                       logger=lambda *a: log.append(a))
    t = res["time"]
    assert t[-1] == pytest.approx(10.0) and len(t) == 10001, f"{name} stopped at {t[-1]}"
    q = np.column_stack([res[f"q[{i + 1}]"] for i in range(model.nq)])
    assert np.isfinite(q).all()
    used = res["integrator_used"][-1]
    assert used == METHOD_CODES[sf.Simulator(model).integrator_used]
    err = np.abs(q[1000] - reference_at_1s(model)).max()
    print(f"{name}: nv={model.nv} integrator {int(used)}, |q(1 s) - ref| = {err:.2e} rad")
    assert err < 1e-3


@pytest.mark.parametrize("name", DEFAULT_SUITE)
def test_default_fmu_runs_at_1khz(name):
    check_robot(name)


@pytest.mark.slow
@pytest.mark.parametrize("name", [n for n in ROBOTS if n not in DEFAULT_SUITE])
def test_default_fmu_runs_at_1khz_all(name):
    check_robot(name)
