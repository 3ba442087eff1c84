"""Each limitation docs/limitations.md states is still real: when one is lifted, its test here fails
and the page must change with it (the page names this file)."""
from __future__ import annotations

import re
import subprocess
import sys
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pytest

import soa_fmu as sf
from soa_fmu import _core
from soa_fmu.io import ModelWarning
from soa_fmu.model import ModelError
from fmu_fixtures import build

REPO = Path(__file__).resolve().parents[1]
EX = REPO / "model_descriptions" / "examples"
PAGE = (REPO / "docs" / "limitations.md").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def flexible():
    model = sf.load_model(EX / "flexible_arm.toml")
    q = model.neutral_configuration()
    return model, q, np.zeros(model.nv)


def test_page_names_this_test():
    assert "tests/test_limitations.py" in PAGE


def test_flexible_bodies_run_the_documented_algorithms(flexible):
    model, q, z = flexible
    for f in (lambda: sf.forward_dynamics(model, q, z, z), lambda: sf.inverse_dynamics(model, q, z, z),
              lambda: sf.mass_matrix(model, q), lambda: sf.mass_matrix_derivative(model, q),
              lambda: sf.coriolis_matrix(model, q, z), lambda: sf.mass_matrix_inverse(model, q),
              lambda: sf.linearize(model, q, z, z)[0],
              lambda: sf.correction_accelerations(model, q, {model.bodies[-1].name: np.ones(6)}),
              lambda: sf.operational_space_inertia_inverse(model, q, [model.bodies[-1].name]),
              lambda: sf.forward_dynamics_bias_free(model, q, z, z)[0]):
        assert np.all(np.isfinite(f()))


def test_constraint_kinds_are_two_sided_only():
    model = sf.load_model(EX / "four_bar.toml")
    kinds = ("weld", "ball", "hinge", "soft_finger")
    assert all(f"`{k}`" in PAGE for k in kinds)
    with pytest.raises(ModelError, match="weld"):
        model.add_constraint("c", "unilateral", "rocker_tip", "pivot_D")


def test_me_fmu_with_constraints_has_no_directional_derivatives():
    with zipfile.ZipFile(build("four_bar.toml")) as z:
        xml = z.read("modelDescription.xml").decode()
    me = re.search(r"<ModelExchange[^>]*>", xml).group(0)
    assert 'providesDirectionalDerivative="true"' not in me


@pytest.mark.parametrize("extra", [["--fmi", "3"], ["--interface", "me"], ["--interface", "both"]])
def test_python_flavour_is_fmi2_cs_only(tmp_path, extra):
    r = subprocess.run([sys.executable, str(REPO / "build_fmu.py"), str(EX / "pendulum.toml"),
                        "-o", str(tmp_path / "P.fmu"), "--runtime", "python", *extra],
                       capture_output=True, text=True)
    assert r.returncode == 1 and r.stderr.strip() and not (tmp_path / "P.fmu").exists(), r.stderr


def test_threads_statement_matches_the_code():
    threshold = re.search(r"#define SOA_PY_NOGIL_NV (\d+)",
                          (REPO / "soa_fmu/_core/pycore.h").read_text()).group(1)
    assert f"≥ {threshold} velocity dofs" in PAGE
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert "data" in sf.forward_dynamics.__code__.co_varnames


def test_implicit_integrators_refuse_closed_chains_and_take_flexible_bodies():
    from soa_fmu.integrators import IntegrationError
    assert "`implicit`, `ros2`, `ros34pw2` and `rk4w` integrators" in PAGE
    assert "closure constraints" in PAGE
    for method in ("implicit", "ros2", "ros34pw2", "rk4w"):
        with pytest.raises(IntegrationError, match="implicit integrator does not handle closure"):
            sf.simulate(sf.load_model(EX / "four_bar.toml"), 0.01, method=method)
        res = sf.simulate(sf.load_model(EX / "flexible_arm.toml"), 0.01, method=method)
        assert np.all(np.isfinite(res["q"]))


def test_rosenbrock_methods_diverge_on_the_stiff_flexible_chain_at_1_ms():
    """bench_flexible's chain (20 links x 4 modes) from rest under gravity at 1 ms: the W-methods
    treat the modes' coupling to the joints' speed explicitly and diverge (ros34pw2 after 0.81 s,
    rk4w after 1.93 s, as the page says); auto (rk4, sub-stepped) runs it (test_flexible.py)."""
    from test_flexible import stiff_chain
    model, _ = stiff_chain()
    for method, t in (("ros34pw2", "0.81"), ("rk4w", "1.93")):
        assert f"`{method}` diverges after {t} s" in PAGE or f"`{method}` after {t} s" in PAGE
        sim = sf.Simulator(model, method=method)
        steps = 0
        with pytest.raises(sf.IntegrationError, match=r"diverged: qd\[\d+\] \(l\d+\)"):
            for steps in range(1, 2501):
                sim.step(1e-3)
        assert steps == pytest.approx(1000 * float(t), abs=20), (method, steps)


def test_the_stiff_default_takes_four_full_sweeps_a_step(tmp_path):
    """The cost bar's miss: the native FMU's rk4w step (auto's choice for the 7-dof arm's damping)
    is four full articulated sweeps, one per stage, where implicit Euler's is one (+ one for the
    q-dot-dot read: tests/test_fmu_sweeps.py counts both in a build with -DSOA_COUNT_SWEEPS)."""
    from test_fmu_sweeps import STEPS, compile_host
    assert "four stage states, one\n  articulated sweep each" in PAGE
    full, refilter, q = compile_host(tmp_path, "rk4w")(False)
    assert (full, refilter) == (5 * STEPS, 0) and np.all(np.isfinite(q))
