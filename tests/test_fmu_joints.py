"""Joints in the FMU (docs/joints.md, docs/fmu.md): armature, joint stops (parameters, switch,
stop_tau, Model Exchange event indicators), the integrators implicit / ros2 / ros34pw2 / rk4w /
auto, their mode error_control and integrator_used (FMI 2.0 and 3.0 Co-Simulation; Model Exchange
ignores them), an unknown integrator refused naming the accepted ones — both flavours bit for bit
against the Simulator."""
from __future__ import annotations

import math

import numpy as np
import pytest

import soa_fmu as sf
from soa_fmu import _core

fmpy = pytest.importorskip("fmpy")
from soa_fmu.fmpy_logging import simulate_fmu  # noqa: E402
from fmu_fixtures import RUNTIMES, Instance, build  # noqa: E402

LOWER = 0.5
MODEL = f"""
name = "stopped_pendulum"
gravity = [0.0, 0.0, -9.81]
[[bodies]]
name = "bob"
parent = "world"
mass = 1.0
com = [0.0, 0.0, -1.0]
inertia = [0.001, 0.001, 0.001]
[bodies.joint]
type = "revolute"
name = "hinge"
axis = [0.0, 1.0, 0.0]
limits = {{ lower = {LOWER}, upper = 2.0, armature = 0.2, damping = 0.1 }}
"""
Q0 = LOWER - math.radians(30)        # released 30° beyond the lower stop (gravity pushes into it)


@pytest.fixture(scope="module")
def model_file(tmp_path_factory):
    p = tmp_path_factory.mktemp("joints") / "stopped_pendulum.toml"
    p.write_text(MODEL)
    return p


@pytest.fixture(scope="module", params=RUNTIMES)
def stopped_fmu(request, model_file):
    return build(model_file, name="Stopped", runtime=request.param)


def run(inst, n, h=1e-3):
    rows = []
    for _ in range(n):
        t = getattr(inst, "t", 0.0)
        inst.fmu.doStep(t, h)           # (fmpy raises on a status above warning)
        inst.t = t + h
        rows.append((inst.get("q")[0], inst.get("qd")[0], inst.get("stop_tau")[0]))
    return np.array(rows)


def test_stop_fmu_matches_the_simulator(stopped_fmu, model_file):
    model = sf.load_model(model_file)
    inst = Instance(stopped_fmu).init({"q0[1]": Q0})
    assert inst.get("armature")[0] == 0.2
    assert inst.get("stop_stiffness")[0] == model.stop_stiffness[0]
    assert inst.get("integrator_used")[0] == 6                  # auto: rk4w (a stop, damping)
    assert "integrator auto: rk4w" in inst.log_text()
    rows = run(inst, 1500)
    sim = sf.Simulator(model, q0=[Q0])
    for _ in range(1500):
        sim.step(1e-3)
    assert rows[-1, 0] == sim.q[0] and rows[-1, 1] == sim.qd[0]       # bit for bit
    assert rows[-1, 2] == _core.stop_forces(model.data, sim.q, sim.qd)[0]
    assert 0 < LOWER - rows[-1, 0] < math.radians(1.0)                 # held within 1°
    # the switch is tunable: off, the pendulum falls through the stop
    inst.set("stops_enabled", False)
    rows = run(inst, 500)
    assert rows[-1, 0] < 0.3 and rows[-1, 2] == 0.0
    # a negative stiffness is refused (not applied), naming the dof
    from fmpy.fmi1 import FMICallException
    try:
        inst.fmu.setReal([inst.vr["stop_stiffness[1]"]], [-1.0])
        error = False
    except FMICallException:
        error = True
    assert error == inst.native and "stop_stiffness[1]" in inst.log_text()
    assert "must be >= 0, got -1" in inst.log_text()
    assert inst.get("stop_stiffness")[0] == model.stop_stiffness[0]
    inst.close()


def test_implicit_and_auto_in_the_fmu(stopped_fmu, model_file):
    """integrator = implicit runs the C core's implicit step (the Simulator's, bit for bit); the
    qdd output is β̇ at the new state."""
    model = sf.load_model(model_file)
    inst = Instance(stopped_fmu).init({"q0[1]": Q0, "integrator": "implicit"})
    assert inst.get("integrator_used")[0] == 3
    rows = run(inst, 300)
    sim = sf.Simulator(model, q0=[Q0], method="implicit")
    for _ in range(300):
        sim.step(1e-3)
    assert rows[-1, 0] == sim.q[0] and rows[-1, 1] == sim.qd[0]
    np.testing.assert_array_equal(inst.get("qdd"), sim.qdd)
    T = _core.joint_forces(model.data, sim.q, sim.qd, np.zeros(1))
    np.testing.assert_allclose(sim.qdd, sf.forward_dynamics(model, sim.q, sim.qd, T), rtol=1e-14)
    inst.close()


@pytest.mark.parametrize("method,code", [("ros2", 4), ("ros34pw2", 5), ("rk4w", 6)])
def test_rosenbrock_error_control_in_the_fmu(stopped_fmu, model_file, method, code):
    """integrator = ros2 / ros34pw2 / rk4w with error_control = true runs the C core's error-controlled
    sub-steps (the Simulator's, to 1e-12), the step memory carried between doSteps; switched off
    during the run (tunable), fixed sub-steps of max_step follow, again as the Simulator's."""
    model = sf.load_model(model_file)
    inst = Instance(stopped_fmu).init({"q0[1]": Q0, "integrator": method, "error_control": True,
                                       "rtol": 1e-6, "atol": 1e-8})
    assert inst.get("integrator_used")[0] == code
    rows = run(inst, 300)
    sim = sf.Simulator(model, q0=[Q0], method=method, error_control=True, rtol=1e-6, atol=1e-8)
    for _ in range(300):
        sim.step(1e-3)
    assert abs(rows[-1, 0] - sim.q[0]) < 1e-12 and abs(rows[-1, 1] - sim.qd[0]) < 1e-12
    np.testing.assert_allclose(inst.get("qdd"), sim.qdd, rtol=0, atol=1e-9)
    inst.set("error_control", False)
    sim.options.error_control = False
    rows = run(inst, 100)
    for _ in range(100):
        sim.step(1e-3)
    assert abs(rows[-1, 0] - sim.q[0]) < 1e-12 and abs(rows[-1, 1] - sim.qd[0]) < 1e-12
    inst.close()


@pytest.mark.parametrize("fmi", [2, 3])
def test_rosenbrock_methods_in_fmi2_and_fmi3_co_simulation(model_file, fmi):
    """The native FMU, FMI 2.0 and 3.0 CS, describes ros34pw2 and rk4w (auto's choice for this
    stopped, damped pendulum) in its integrator parameter, takes each as a start value, reports
    integrator_used = 5 / 6 and steps as the Simulator in both modes (fixed 1 ms sub-steps, then
    error_control, to 1e-12).  Its Model Exchange interface (same binary) ignores the integrator
    and its mode: the importer integrates (CVode's result the same to the bit for every value)."""
    fmu = build(model_file, name="Stopped", runtime="native", fmi=fmi, interface="both")
    md = fmpy.read_model_description(str(fmu))
    var = {v.name: v for v in md.modelVariables}
    described = var["integrator"].description
    assert "auto (rk4w for a model with" in described
    assert all(f"{m} (" in described for m in sf.integrators.METHODS)
    assert "6 rk4w" in var["integrator_used"].description
    assert "rk4w" in var["error_control"].description and "rk4w" in var["rtol"].description
    model = sf.load_model(model_file)
    q0 = {"q0": [Q0]} if fmi == 3 else {"q0[1]": Q0}
    q = "q" if fmi == 3 else "q[1]"
    for method, code in (("ros34pw2", 5), ("rk4w", 6)):
        for control in (False, True):
            res = fmpy.simulate_fmu(fmu, fmi_type="CoSimulation", stop_time=0.3,
                                    output_interval=1e-3,
                                    start_values={**q0, "integrator": method,
                                                  "error_control": control, "rtol": 1e-6,
                                                  "atol": 1e-8},
                                    output=[q, "integrator_used"])
            assert res["integrator_used"][-1] == code
            sim = sf.Simulator(model, q0=[Q0], method=method, error_control=control, rtol=1e-6,
                               atol=1e-8)
            for _ in range(300):
                sim.step(1e-3)
            assert abs(res[q][-1] - sim.q[0]) < 1e-12, (method, control)
    me = [simulate_fmu(fmu, fmi_type="ModelExchange", stop_time=0.3, output_interval=1e-3,
                       start_values={**q0, **options}, relative_tolerance=1e-8, output=[q])[q]
          for options in ({"integrator": "rk4"}, {"integrator": "rk4w", "error_control": True,
                                                  "rtol": 1e-3, "max_step": 0.1})]
    np.testing.assert_array_equal(me[0], me[1])


def test_error_controlled_rk4w_approaches_the_true_solution(stopped_fmu, model_file):
    """What a Modelica tool's CS export with CVODE gives: the FMU (integrator = rk4w, error_control
    true, atol = rtol / 100) released inside its range and swinging into the stop comes closer to
    DOP853 at rtol 1e-12 as rtol tightens: at t = 0.4 s, past the impact, 2.6e-6 rad at rtol 1e-4,
    8.6e-8 at 1e-6, 1.3e-10 at 1e-8 (fixed 1 ms sub-steps: 2.8e-4)."""
    model = sf.load_model(model_file)
    ref = sf.Simulator(model, q0=[LOWER + 0.3], method="dop853", rtol=1e-12, atol=1e-14)
    for _ in range(400):
        ref.step(1e-3)
    assert ref.q[0] < LOWER                                   # in the stop
    err = []
    for options in ({"error_control": False}, {"error_control": True, "rtol": 1e-4},
                    {"error_control": True, "rtol": 1e-6}, {"error_control": True, "rtol": 1e-8}):
        inst = Instance(stopped_fmu).init({"q0[1]": LOWER + 0.3, "integrator": "rk4w",
                                           "atol": options.get("rtol", 1e-8) / 100, **options})
        err.append(abs(run(inst, 400)[-1, 0] - ref.q[0]))
        inst.close()
    assert err[0] > 1e-4 and err[0] > 30 * err[1] > 30 * 10 * err[2] > 30 * 10 * 100 * err[3]
    assert err[3] < 1e-9


UNKNOWN = f"integrator 'rk5' is not one of {', '.join(sf.integrators.METHODS)}"


def test_an_unknown_integrator_is_refused_naming_the_methods(stopped_fmu):
    """integrator = 'rk5': refused, not applied, with one error naming it and every accepted
    method (soa_fmu.integrators.METHODS, in order: rk4w among them; the native setter returns
    fmi2Error); rk4w set instead, the instance steps with it (integrator_used 6)."""
    from fmpy.fmi1 import FMICallException
    inst = Instance(stopped_fmu)
    inst.fmu.setupExperiment(startTime=0.0)
    try:
        inst.set("integrator", "rk5")
        status = 0
    except FMICallException as e:
        status = e.status
    assert status == inst.rejected
    (error,) = [m for level, _, m in inst.messages if level >= 3]
    assert error.startswith(UNKNOWN + "; value rejected (not applied)")
    inst.set("integrator", "rk4w")
    inst.fmu.enterInitializationMode()
    inst.fmu.exitInitializationMode()
    assert inst.get("integrator_used")[0] == 6
    inst.fmu.doStep(0.0, 1e-3)
    inst.close()


def test_an_unknown_integrator_is_refused_in_fmi3(model_file):
    """The same refusal through FMI 3.0 (fmi3SetString returns fmi3Error, the message logged)."""
    from fmpy import extract
    from fmpy.fmi1 import FMICallException
    from fmpy.fmi3 import FMU3Slave
    fmu = build(model_file, name="Stopped", runtime="native", fmi=3, interface="both")
    md = fmpy.read_model_description(str(fmu))
    vr = {v.name: v.valueReference for v in md.modelVariables}
    messages = []
    s3 = FMU3Slave(guid=md.guid, unzipDirectory=extract(str(fmu)),
                   modelIdentifier=md.coSimulation.modelIdentifier, instanceName="s3")
    s3.instantiate(logMessage=lambda env, level, cat, msg: messages.append((level, msg.decode())))
    with pytest.raises(FMICallException) as e:
        s3.setString([vr["integrator"]], ["rk5"])
    (error,) = [m for level, m in messages if level >= 3]
    assert e.value.status == 3 and error.startswith(UNKNOWN + "; value rejected (not applied)")
    s3.setString([vr["integrator"]], ["rk4w"])
    s3.enterInitializationMode(startTime=0.0)
    s3.exitInitializationMode()
    assert s3.getFloat64([vr["integrator_used"]]) == [6.0]
    s3.doStep(0.0, 1e-3)
    s3.terminate()
    s3.freeInstance()


@pytest.mark.parametrize("fmi", [2, 3])
def test_model_exchange_event_indicators(model_file, fmi):
    """One event indicator per stop limit (FMI 3.0: the stop_margin array it declares as its
    EventIndicator, holding q - lower and upper - q): released inside its range, the pendulum
    swings into the lower stop, CVode lands on the contact instants, and agrees with a tight
    reference run."""
    fmu = build(model_file, name="Stopped", runtime="native", fmi=fmi, interface="both")
    md = fmpy.read_model_description(str(fmu))
    assert md.numberOfEventIndicators == 2
    margin = ["stop_margin"] if fmi == 3 else ["stop_margin[1]", "stop_margin[2]"]
    if fmi == 3:
        assert [u.variable.name for u in md.eventIndicators] == ["stop_margin"]
    start = {"q0": [LOWER + 0.3]} if fmi == 3 else {"q0[1]": LOWER + 0.3}
    me = simulate_fmu(fmu, fmi_type="ModelExchange", stop_time=1.0, output_interval=1e-3,
                      start_values=start,
                      relative_tolerance=1e-8,
                      output=["q" if fmi == 3 else "q[1]"] + margin)
    q = me["q"] if fmi == 3 else me["q[1]"]
    z = me["stop_margin"] if fmi == 3 else np.column_stack([me[n] for n in margin])
    np.testing.assert_allclose(z, np.column_stack([q - LOWER, 2.0 - q]), rtol=0, atol=1e-15)
    assert z[0, 0] > 0 > z[:, 0].min()          # released inside its range, into the stop
    assert len(me) > 1001                # CVode stopped at the located events (extra rows)
    model = sf.load_model(model_file)
    ref = sf.simulate(model, 1.0, dt=1e-3, q0=[LOWER + 0.3], method="dop853", rtol=1e-10,
                      atol=1e-12)
    assert abs(q[-1] - ref["q"][-1, 0]) < 1e-5
