"""Flexible models as FMUs (issue 12): the flexible arm (hub + beam, 4 modes, a frame on the tip
node) in both flavours through fmpy — modal coordinates as states named after the body, results
equal to the engine's own integration bit for bit, the node frame's pose and external force
including the deformation, modelDescription valid, directional derivatives claimed by the native
flavour (tests/test_fmu_model_exchange.py holds them against finite differences)."""
from __future__ import annotations

import numpy as np
import pytest
from fmpy import read_model_description
from fmpy.validation import validate_fmu

import soa_fmu as sf
from fmu_fixtures import RUNTIMES, Instance, build, example
from soa_fmu.fmpy_logging import simulate_fmu
from soa_fmu.io import load_model


@pytest.fixture(scope="module", params=RUNTIMES)
def flexible_fmu(request):
    return build("flexible_arm.toml", runtime=request.param)


def test_description_names_the_modal_states(flexible_fmu):
    assert validate_fmu(str(flexible_fmu)) == []
    md = read_model_description(str(flexible_fmu))
    var = {v.name: v for v in md.modelVariables}
    for k in range(1, 5):
        assert f"beam.eta[{k}]" in var[f"q[{k + 1}]"].description
    assert "tip.position[1]" in var and "tip.f_ext[1]" in var
    native = md.modelExchange is not None                  # (the python flavour is CS only)
    for kind in (md.coSimulation, md.modelExchange):
        assert kind is None or kind.providesDirectionalDerivative is native


def test_slew_equals_the_engine_and_bends_the_tip(flexible_fmu):
    model = load_model(example("flexible_arm.toml"))
    res = simulate_fmu(str(flexible_fmu), stop_time=0.5, step_size=1e-3, output_interval=1e-3,
                       start_values={"tau[1]": 2.0},
                       output=[f"q[{i}]" for i in range(1, 6)] + ["tip.position[2]"])
    ref = sf.simulate(model, 0.5, 1e-3, tau=np.r_[2.0, 0, 0, 0, 0])
    got = np.column_stack([res[f"q[{i}]"] for i in range(1, 6)])
    # fmpy's steps are differences of k h, round-off apart from h: equal to round-off
    np.testing.assert_allclose(got, ref["q"], rtol=0, atol=1e-14)
    Q = ref["q"]
    assert np.abs(got[:, 1]).max() > 1e-4                    # the first mode is excited
    p = sf.frame_pose(model, Q[-1], "tip")[1]
    assert res["tip.position[2]"][-1] == pytest.approx(p[1], abs=1e-14)


def test_auto_sub_steps_a_flexible_model_below_its_modal_bound(flexible_fmu):
    """auto on a flexible model: RK4 sub-steps no longer than 1.4 / the highest modal frequency
    (366 rad/s here: 3.8 ms) whatever max_step.  At h = max_step = 10 ms (omega h = 3.7, beyond
    RK4's 2.78) both flavours take the engine's 3 sub-steps and stay near DOP853."""
    model = load_model(example("flexible_arm.toml"))
    tau = np.r_[2.0, 0, 0, 0, 0]
    res = simulate_fmu(str(flexible_fmu), stop_time=0.5, step_size=1e-2, output_interval=1e-2,
                       start_values={"tau[1]": 2.0, "max_step": 1e-2},
                       output=[f"q[{i}]" for i in range(1, 6)])
    got = np.column_stack([res[f"q[{i}]"] for i in range(1, 6)])
    ref = sf.simulate(model, 0.5, 1e-2, tau=tau, max_step=1e-2)
    np.testing.assert_allclose(got, ref["q"], rtol=0, atol=1e-14)
    tight = sf.simulate(model, 0.5, 1e-2, tau=tau, method="dop853", rtol=1e-10, atol=1e-12)
    assert np.abs(got - tight["q"]).max() < 1e-4


def test_a_force_on_the_tip_node_deflects_the_beam(flexible_fmu):
    """A vertical force P on the tip frame (an input on a node): the hub feels no torque about its
    vertical axis, so the beam is a cantilever; once the modal damping has settled the vibration,
    the tip sits lower by P L³ / (3 EI_y) than without the force.  The model keeps one out-of-plane
    mode, whose static tip deflection is 97.1 % of the exact one (Σ over cantilever modes of
    φ(L)² / ω², first term), hence the 4 % bound."""
    P, EI_y, L = -5.0, 1493.0, 1.0
    z = []
    for force in (0.0, P):
        inst = Instance(flexible_fmu).init()
        inst.set("tip.f_ext[6]", force)          # f_ext = [torque; force], world axes
        t = 0.0
        for _ in range(6000):                    # 6 s: e^(-zeta omega t) = e^-6 of the vibration
            inst.fmu.doStep(t, 1e-3)
            t += 1e-3
        z.append(inst.get("tip.position")[2])
        assert abs(inst.get("q")[0]) < 1e-9     # no slew (round-off only)
        inst.close()
    exact = P * L ** 3 / (3 * EI_y)
    assert abs((z[1] - z[0]) / exact - 1) < 0.04


def test_model_exchange_follows_the_engine():
    """The native FMU's Model Exchange interface (states q, qd incl. the modal coordinates),
    integrated by fmpy's CVode, follows the engine's DOP853 solution of the same slew."""
    fmu = build("flexible_arm.toml", runtime="native")
    res = simulate_fmu(str(fmu), fmi_type="ModelExchange", stop_time=0.3, output_interval=1e-2,
                       relative_tolerance=1e-10, start_values={"tau[1]": 2.0},
                       output=[f"q[{i}]" for i in range(1, 6)])
    model = load_model(example("flexible_arm.toml"))
    ref = sf.simulate(model, 0.3, 1e-2, tau=np.r_[2.0, 0, 0, 0, 0], method="dop853", rtol=1e-12,
                      atol=1e-14)
    got = np.column_stack([res[f"q[{i}]"] for i in range(1, 6)])
    np.testing.assert_allclose(got, ref["q"], rtol=0, atol=1e-7)
    assert np.abs(got[:, 1:]).max() > 1e-5
