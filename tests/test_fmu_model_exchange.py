"""Model Exchange (FMI 2.0 and 3.0) and FMI 3.0 from the native FMU (issue 13).

The ME FMUs run through fmpy's own solvers (CVode, explicit Euler) and agree with the
Co-Simulation FMU and soa_fmu.Simulator to the integrator's tolerance; the directional derivatives
(state and input seeds) equal central differences; FMI 3.0 Co-Simulation equals FMI 2.0
Co-Simulation bit for bit; every flavour passes fmpy's validation and its XSD."""
from __future__ import annotations

import ctypes
import json
import shutil
import zipfile

import numpy as np
import pytest
from fmpy import extract, read_model_description
from fmpy.fmi1 import FMICallException
from fmpy.validation import validate_fmu
from lxml import etree

import build_fmu
import soa_fmu as sf
from fmu_fixtures import build, example
from model_descriptions import generator, generator_fmi3
from soa_fmu.fmpy_logging import simulate_fmu

P = ctypes.POINTER(ctypes.c_double)

# Every joint type with a non-trivial theta-dot = f(theta) beta: free, ball, planar (and prismatic).
MIXED = """
name = "mixed"
gravity = [0.0, -3.0, -9.81]
[[bodies]]
name = "base"
mass = 3.0
com = [0.1, 0.0, 0.05]
inertia = [0.2, 0.3, 0.25]
joint = { type = "free", name = "base_joint" }
[[bodies]]
name = "ball_link"
parent = "base"
mass = 1.5
com = [0.0, 0.1, 0.3]
inertia = [0.05, 0.06, 0.02]
joint = { type = "spherical", name = "ball", xyz = [0.0, 0.0, 0.2] }
[[bodies]]
name = "slider"
parent = "ball_link"
mass = 0.7
com = [0.05, 0.0, 0.0]
inertia = [0.01, 0.02, 0.015]
joint = { type = "prismatic", name = "slide", axis = [0.0, 0.0, 1.0], xyz = [0.0, 0.0, 0.4] }
[[bodies]]
name = "puck"
parent = "base"
mass = 0.9
com = [0.02, 0.03, 0.0]
inertia = [0.01, 0.01, 0.02]
joint = { type = "planar", name = "plane", axis = [0.0, 0.0, 1.0], xyz = [0.3, 0.0, -0.1] }
[[frames]]
name = "tip"
body = "slider"
xyz = [0.0, 0.1, 0.05]
"""


@pytest.fixture(scope="module")
def mixed_fmu(tmp_path_factory):
    path = tmp_path_factory.mktemp("mixed") / "mixed.toml"
    path.write_text(MIXED)
    return build(path, interface="me")


# ---------------------------------------------------------------- an fmpy ME instance
class ME:
    """fmpy's FMU2Model (or FMU3Model) after initialization, in continuous-time mode."""

    def __init__(self, fmu, start: dict | None = None, fmi: int = 2):
        self.md = read_model_description(str(fmu))
        self.unzip = extract(str(fmu))
        self.vr = {v.name: v.valueReference for v in self.md.modelVariables}
        self.nx = self.md.numberOfContinuousStates
        self.messages = []
        if fmi == 2:
            from fmpy.fmi2 import FMU2Model
            from fmu_fixtures import _callbacks
            self.fmu = FMU2Model(guid=self.md.guid, unzipDirectory=self.unzip,
                                 modelIdentifier=self.md.modelExchange.modelIdentifier,
                                 instanceName="me")
            self.fmu.instantiate(callbacks=_callbacks(self.messages))
            self.fmu.setupExperiment(startTime=0.0)
            self.fmu.enterInitializationMode()
        else:
            from fmpy.fmi3 import FMU3Model
            self.fmu = FMU3Model(guid=self.md.guid, unzipDirectory=self.unzip,
                                 modelIdentifier=self.md.modelExchange.modelIdentifier,
                                 instanceName="me")
            self.fmu.instantiate(logMessage=lambda env, status, cat, msg:
                                 self.messages.append(msg.decode()))
            self.fmu.enterInitializationMode(startTime=0.0)
        for k, v in (start or {}).items():
            self.fmu.setReal([self.vr[k]], [v]) if fmi == 2 else \
                self.fmu.setFloat64([self.vr[k]], [v])
        self.fmu.exitInitializationMode()
        self.event()

    def event(self) -> bool:
        """Event iteration (FMI 2.0 newDiscreteStates) into continuous-time mode; returns
        valuesOfContinuousStatesChanged."""
        update = getattr(self.fmu, "newDiscreteStates", None) or self.fmu.updateDiscreteStates
        changed = update()[3]
        self.fmu.enterContinuousTimeMode()
        return changed

    def x(self) -> np.ndarray:
        x = np.zeros(self.nx)
        self.fmu.getContinuousStates(x.ctypes.data_as(P), self.nx)
        return x

    def set_x(self, x) -> None:
        x = np.ascontiguousarray(x, dtype=float)
        self.fmu.setContinuousStates(x.ctypes.data_as(P), self.nx)

    def dx(self) -> np.ndarray:
        d = np.zeros(self.nx)
        get = getattr(self.fmu, "getDerivatives", None) or self.fmu.getContinuousStateDerivatives
        get(d.ctypes.data_as(P), self.nx)
        return d

    def close(self) -> None:
        self.fmu.terminate()
        self.fmu.freeInstance()
        shutil.rmtree(self.unzip, ignore_errors=True)


def outputs(result, names) -> np.ndarray:
    return np.column_stack([result[n] for n in names])


def at(result, names, t) -> np.ndarray:
    return np.column_stack([np.interp(t, result["time"], result[n]) for n in names])


# ---------------------------------------------------------------- ME through fmpy's solvers
CASES = {
    # model, start values, horizon
    "arm7.urdf": ({"q0[2]": 0.5, "qd0[3]": 1.0, "tau[1]": 2.0, "tau[4]": -1.0}, 0.6),
    "spacecraft_rigid.toml": ({"qd0[2]": 0.3, "qd0[3]": 0.2, "tau[9]": 5.0}, 1.0),
    "four_bar.toml": ({"stabilization[1]": 20.0, "stabilization[2]": 20.0, "tau[1]": 1.0}, 0.3),
}


def simulator_reference(name: str, start: dict, times: np.ndarray) -> np.ndarray:
    """soa_fmu.Simulator (DOP853, tolerance 1e-12) sampled at `times`: q then qd."""
    model = sf.load_model(example(name))
    q0 = model.initial_q.copy() if model.initial_q is not None else model.neutral_configuration()
    qd0 = model.initial_qd.copy() if model.initial_qd is not None else np.zeros(model.nv)
    sim = sf.Simulator(model, q0, qd0, method="dop853", rtol=1e-12, atol=1e-12)
    for k, v in start.items():
        group, i = k.split("[")[0], int(k.split("[")[1][:-1]) - 1
        if group == "q0":
            sim.q[i] = v
        elif group == "qd0":
            sim.qd[i] = v
        elif group == "tau":
            sim.tau[i] = v
    sim.stabilization = (start.get("stabilization[1]", 0.0), start.get("stabilization[2]", 0.0))
    out = [np.concatenate([sim.q, sim.qd])]
    for t0, t1 in zip(times[:-1], times[1:]):
        sim.step(t1 - t0)
        out.append(np.concatenate([sim.q, sim.qd]))
    return np.array(out)


@pytest.mark.parametrize("name", CASES)
def test_model_exchange_matches_co_simulation_and_simulator(name):
    """fmpy's CVode on the ME FMU converges to the Simulator's trajectory as its tolerance
    tightens (and the CS FMU equals the Simulator to round-off); fmpy's explicit Euler converges
    to it at first order (error / 4 for h / 4)."""
    start, T = CASES[name]
    fmu = build(name, runtime="native")
    md = read_model_description(str(fmu))
    names = [v.name for v in md.modelVariables if v.name.startswith(("q[", "qd["))]
    times = np.linspace(0.0, T, 7)
    ref = simulator_reference(name, start, times)
    scale = np.abs(ref).max()
    cs = simulate_fmu(str(fmu), stop_time=T, output_interval=T / 6, fmi_type="CoSimulation",
                      start_values={**start, "integrator": "dop853", "rtol": 1e-12, "atol": 1e-12},
                      output=names)
    np.testing.assert_allclose(outputs(cs, names), ref, rtol=0, atol=1e-12 * scale)
    err = {}
    for rtol in (1e-7, 1e-10):
        me = simulate_fmu(str(fmu), stop_time=T, output_interval=T / 60, fmi_type="ModelExchange",
                          solver="CVode", relative_tolerance=rtol, start_values=start,
                          output=names)
        err[rtol] = np.abs(at(me, names, times) - ref).max() / scale
    assert err[1e-10] < 3e-7 and err[1e-10] < err[1e-7] / 20, err
    Te = T / 3                                   # (explicit Euler: a shorter horizon)
    times = np.linspace(0.0, Te, 5)
    ref = simulator_reference(name, start, times)
    euler = []
    for n in (200, 800):                   # (the stops make the arm's ODE stiffer: finer steps)
        me = simulate_fmu(str(fmu), stop_time=Te, step_size=Te / n, output_interval=Te / n,
                          fmi_type="ModelExchange", solver="Euler", start_values=start,
                          output=names)
        euler.append(np.abs(at(me, names, times) - ref).max() / scale)
    # first order: 4 x fewer steps, about 4 x the error (the arm's smoothed joint friction makes
    # the ODE stiffer, so at these steps the ratio may still be above its asymptotic 4)
    assert 3.5 < euler[0] / euler[1] < 6.0 and euler[1] < 5e-3, euler


def test_quaternion_renormalization_is_a_reported_state_change():
    """The dynamics see each quaternion normalized (the derivatives at a scaled state are those
    at the unit one); fmi2CompletedIntegratorStep renormalizes a drifted quaternion and asks for
    an event, whose update reports valuesOfContinuousStatesChanged."""
    me = ME(build("spacecraft_rigid.toml", runtime="native"), {"qd0[1]": 0.4, "qd0[3]": -0.2})
    x = me.x()
    d0 = me.dx()
    assert me.fmu.completedIntegratorStep() == (False, False)      # unit: nothing to do
    x[:4] *= 1.001
    me.set_x(x)
    np.testing.assert_allclose(me.dx(), d0, rtol=1e-12, atol=1e-15)
    assert me.fmu.completedIntegratorStep() == (True, False)
    me.fmu.enterEventMode()
    assert me.event() is True
    np.testing.assert_allclose(np.linalg.norm(me.x()[:4]), 1.0, rtol=0, atol=1e-15)
    me.fmu.enterEventMode()
    assert me.event() is False                                       # reported once
    me.close()


# ---------------------------------------------------------------- directional derivatives
def jacobian_check(me: ME, unknowns, knowns, getter, setter, eps, rng, rtol):
    """J v from the FMU against central differences of `getter` along v (`setter` moves the
    knowns), for random v."""
    base = setter(None)
    for _ in range(3):
        v = rng.normal(size=len(base))
        d = np.array(me.fmu.getDirectionalDerivative(unknowns, knowns, list(v)))
        setter(base + eps * v)
        plus = getter()
        setter(base - eps * v)
        minus = getter()
        setter(base)
        fd = (plus - minus) / (2 * eps)
        np.testing.assert_allclose(d, fd, rtol=rtol, atol=rtol * np.abs(fd).max())
        assert np.abs(d).max() > 1e-2


@pytest.mark.parametrize("which", ["mixed", "arm7.urdf", "flexible_arm.toml", "spacecraft.toml"])
def test_directional_derivatives_equal_finite_differences(which, mixed_fmu):
    """d(x-dot, outputs)/d(x, inputs) from fmi2GetDirectionalDerivative (analytic: derivatives.c
    and the joints' kinematics; with flexible bodies the core's fourth-order differences in θ)
    equals central differences, at a state whose quaternions are off unit norm: state derivatives
    of der(q) and qdd, of q, qd, energy and frame poses (node frames included); input derivatives
    of qdd."""
    fmu = mixed_fmu if which == "mixed" else build(which, name=which.split(".")[0].title(),
                                                     runtime="native")
    me = ME(fmu)
    rng = np.random.default_rng(5)
    md = me.md
    assert md.modelExchange.providesDirectionalDerivative is True
    states = [d.variable.derivative.valueReference for d in md.derivatives]
    ders = [d.variable.valueReference for d in md.derivatives]
    inputs = [v.valueReference for v in md.modelVariables if v.causality == "input"]
    outs = [v.valueReference for v in md.modelVariables if v.causality == "output"]
    me.fmu.setReal(inputs, list(rng.normal(size=len(inputs))))
    x = me.x() + 0.3 * rng.normal(size=me.nx)
    me.set_x(x)
    x = me.x()

    def values():
        return np.concatenate([me.dx(), me.fmu.getReal(outs)])

    def move_x(v):
        if v is None:
            return me.x()
        me.set_x(v)

    def move_u(v):
        if v is None:
            return np.array(me.fmu.getReal(inputs))
        me.fmu.setReal(inputs, list(v))

    jacobian_check(me, ders + outs, states, values, move_x, 1e-6, rng, 2e-6)
    jacobian_check(me, ders + outs, inputs, values, move_u, 1e-3, rng, 1e-8)
    # the columns: d der(q) / d qd is f(theta), d q / d q the identity
    J = np.column_stack([me.fmu.getDirectionalDerivative(ders + states, states, list(e))
                         for e in np.eye(me.nx)])
    np.testing.assert_array_equal(J[me.nx:], np.eye(me.nx))
    me.close()


def test_closed_chain_derivatives_inputs_exact_states_refused_while_active():
    """Four-bar (ME): derivatives with respect to the inputs are exact (constrained dynamics of
    the direction); with respect to the state they are refused with a message while the closure
    is switched on -- and provided (exact) once it is switched off in event mode.  The ME flag
    providesDirectionalDerivative is false for a model with constraints."""
    fmu = build("four_bar.toml", runtime="native")
    md = read_model_description(str(fmu))
    assert md.modelExchange.providesDirectionalDerivative is False
    assert md.coSimulation.providesDirectionalDerivative is True
    me = ME(fmu, {"stabilization[1]": 10.0, "stabilization[2]": 10.0})
    rng = np.random.default_rng(2)
    states = [d.variable.derivative.valueReference for d in md.derivatives]
    qdd = me.fmu.getDirectionalDerivative
    unknown = [me.vr[f"qdd[{i}]"] for i in (1, 2, 3)] + [me.vr["closure_D.f[1]"]]
    inputs = [me.vr["tau[1]"], me.vr["closure_D.u[1]"], me.vr["rocker.f_ext[5]"]]

    def values():
        return np.array(me.fmu.getReal(unknown))

    def move_u(v):
        if v is None:
            return np.array(me.fmu.getReal(inputs))
        me.fmu.setReal(inputs, list(v))

    jacobian_check(me, unknown, inputs, values, move_u, 1e-3, rng, 1e-7)
    with pytest.raises(FMICallException):
        qdd(unknown, states[:1], [1.0])
    assert "not provided while constraint 'closure_D' is switched on" in me.messages[-1][2]
    # q-dot and the states themselves do not involve the constraint
    assert qdd([me.vr["der(q[1])"], me.vr["q[1]"]], states[3:4] + states[:1], [1.0, 2.0]) == \
        [1.0, 2.0]
    me.fmu.enterEventMode()
    me.fmu.setBoolean([me.vr["closure_D.active"]], [False])
    me.event()
    jacobian_check(me, unknown[:3], states, lambda: me.dx()[3:], lambda v: me.x() if v is None
                   else me.set_x(v), 1e-6, rng, 1e-6)
    me.close()


# ---------------------------------------------------------------- events, modes, errors
def test_grasp_and_release_in_event_mode_match_co_simulation():
    """Two arms holding a box: released at t = 0.1 and grasped again at t = 0.2 through the
    discrete inputs, in event mode (ME: re-anchored at the grasp, velocities projected, reported
    as a state change) -- the same trajectory as the CS FMU, whose step at the switch does the
    same."""
    fmu = build("two_arms_box.toml", runtime="native")
    stab = {"stabilization[1]": 10.0, "stabilization[2]": 10.0}
    signal = np.array([(0.0, True, True), (0.1, False, False), (0.2, True, True)],
                      dtype=[("time", float), ("grasp_left.active", bool),
                             ("grasp_right.active", bool)])
    names = ["q[1]", "q[15]", "q[21]", "qd[3]", "qd[18]", "grasp_left.err"]
    cs = simulate_fmu(str(fmu), stop_time=0.3, output_interval=1e-3, fmi_type="CoSimulation",
                      start_values={**stab, "integrator": "dop853", "rtol": 1e-11, "atol": 1e-12},
                      input=signal, output=names)
    me = simulate_fmu(str(fmu), stop_time=0.3, output_interval=1e-3, fmi_type="ModelExchange",
                      solver="CVode", relative_tolerance=1e-10, start_values=stab, input=signal,
                      output=names)
    t = np.array([0.05, 0.15, 0.25, 0.3])
    a, b = at(cs, names[:5], t), at(me, names[:5], t)
    assert np.abs(a[1] - a[0]).max() > 1e-3                      # the box fell while released
    np.testing.assert_allclose(b, a, rtol=0, atol=1e-6 * np.abs(a).max())
    assert me["grasp_left.err"][me["time"] > 0.2].max() < 1e-6  # held where it was caught


def test_modes_and_refusals():
    """Co-Simulation-only and ME-only FMUs refuse the other kind; ME functions on a CS instance,
    a discrete input in continuous-time mode and a state vector of the wrong size are refused
    with a logged fmi2Error; the python runtime and unknown options are refused in one line."""
    from fmpy.fmi2 import FMU2Model
    cs_only = build("four_bar.toml", interface="cs")
    md = read_model_description(str(cs_only))
    assert md.modelExchange is None and md.numberOfContinuousStates == 0
    assert not any(v.name.startswith("der(") for v in md.modelVariables)
    fmu = FMU2Model(guid=md.guid, unzipDirectory=extract(str(cs_only)),
                    modelIdentifier=md.coSimulation.modelIdentifier, instanceName="x")
    from fmu_fixtures import _callbacks
    refused = []                                             # (the FMU's messages, captured)
    with pytest.raises(Exception, match="Failed to instantiate") as e:
        fmu.instantiate(callbacks=_callbacks(refused))
    assert type(e.value) is Exception           # fmpy raises a bare Exception for a NULL instance
    assert [m for m in refused if m[0] == 3 and "Co-Simulation" in m[2]], refused   # fmi2Error, why
    me = ME(build("four_bar.toml", runtime="native"))
    with pytest.raises(FMICallException):
        me.fmu.setBoolean([me.vr["closure_D.active"]], [False])
    assert "discrete input; set it in event mode" in me.messages[-1][2]
    with pytest.raises(FMICallException):
        me.fmu.getDerivatives(np.zeros(2).ctypes.data_as(P), 2)
    assert "has 6 continuous states, 2 were passed" in me.messages[-1][2]
    with pytest.raises(FMICallException):
        me.fmu.enterContinuousTimeMode()                         # already there
    me.close()


def test_build_options_refused_in_one_line(tmp_path, capsys):
    model = str(example("pendulum.toml"))
    assert build_fmu.main([model, "-o", str(tmp_path / "p.fmu"), "--runtime", "python", "--fmi",
                           "3"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "FMI 2.0 Co-Simulation FMUs only" in err
    assert build_fmu.main([model, "-o", str(tmp_path / "p.fmu"), "--runtime", "python",
                           "--interface", "me"]) == 1
    with pytest.raises(SystemExit):
        build_fmu.main([model, "--fmi", "4"])


# ---------------------------------------------------------------- FMI 3.0
@pytest.mark.parametrize("name, start", [
    ("arm7.urdf", {"q0[2]": 0.5, "tau[1]": 2.0, "integrator": "dop853"}),
    ("four_bar.toml", {"stabilization[1]": 20.0, "stabilization[2]": 20.0, "integrator": "rk4"}),
    ("flexible_arm.toml", {"tau[1]": 1.0, "integrator": "dop853"})])
def test_fmi3_co_simulation_equals_fmi2(name, start):
    """The FMI 3.0 FMU (arrays) steps exactly as the FMI 2.0 one (the same instance code) -- the
    arm with the adaptive integrator, the four-bar (a closed chain) with RK4:
    q, qd, qdd equal bit for bit; its FMU state, serialized and restored, repeats the steps bit
    for bit; directional derivatives equal FMI 2.0's and the adjoint ones are their transpose."""
    from fmpy.fmi2 import FMU2Slave
    from fmpy.fmi3 import FMU3Slave
    f2, f3 = build(name, runtime="native"), build(name, runtime="native", fmi=3)
    md2, md3 = read_model_description(str(f2)), read_model_description(str(f3))
    vr2 = {v.name: v.valueReference for v in md2.modelVariables}
    vr3 = {v.name: v.valueReference for v in md3.modelVariables}
    dims = {v.name: int(v.dimensions[0].start) for v in md3.modelVariables if v.dimensions}
    s2 = FMU2Slave(guid=md2.guid, unzipDirectory=extract(str(f2)),
                   modelIdentifier=md2.coSimulation.modelIdentifier, instanceName="a")
    s3 = FMU3Slave(guid=md3.guid, unzipDirectory=extract(str(f3)),
                   modelIdentifier=md3.coSimulation.modelIdentifier, instanceName="b")
    s2.instantiate()
    s3.instantiate()
    s2.setupExperiment(startTime=0.0)
    s2.enterInitializationMode()
    s3.enterInitializationMode(startTime=0.0)
    for k, v in start.items():
        if k == "integrator":
            s2.setString([vr2[k]], [v])
            s3.setString([vr3[k]], [v])
            continue
        s2.setReal([vr2[k]], [v])
        group, i = k.split("[")[0], int(k.split("[")[1][:-1]) - 1
        cur = s3.getFloat64([vr3[group]], dims[group])
        cur[i] = v
        s3.setFloat64([vr3[group]], cur)
    s2.exitInitializationMode()
    s3.exitInitializationMode()
    nq, nv = dims["q"], dims["qd"]
    out2 = [vr2[f"{g}[{i}]"] for g, n in (("q", nq), ("qd", nv), ("qdd", nv))
            for i in range(1, n + 1)]
    out3 = [vr3["q"], vr3["qd"], vr3["qdd"]]

    def run(k0, k1):
        a, b = [], []
        for k in range(k0, k1):
            s2.doStep(k * 1e-2, 1e-2)
            s3.doStep(k * 1e-2, 1e-2)
            a.append(s2.getReal(out2))
            b.append(s3.getFloat64(out3, nq + 2 * nv))
        return np.array(a), np.array(b)

    a, b = run(0, 10)
    np.testing.assert_array_equal(a, b)
    assert s3.getFloat64([vr3["time"]]) == [pytest.approx(0.1)]
    state2 = s2.getFMUstate()
    state3 = s3.deserializeFMUState(s3.serializeFMUState(s3.getFMUState()))
    a, b = run(10, 20)
    np.testing.assert_array_equal(a, b)
    s2.setFMUstate(state2)
    s3.setFMUState(state3)
    _, again = run(10, 20)
    np.testing.assert_array_equal(again, b)
    # directional derivatives: FMI 3.0 arrays == FMI 2.0 scalars; adjoint == transpose
    unknown3, known3 = [vr3["qdd"]], [vr3["tau"]]
    J3 = np.column_stack([s3.getDirectionalDerivative(unknown3, known3, list(e), nv)
                          for e in np.eye(nv)])
    J2 = np.column_stack([s2.getDirectionalDerivative(out2[nq + nv:], [vr2[f"tau[{i + 1}]"]],
                                                      [1.0]) for i in range(nv)])
    np.testing.assert_array_equal(J3, J2)
    w = np.linspace(-1.0, 1.0, nv)
    adj = s3.getAdjointDerivative(unknown3, known3, list(w), nv)
    np.testing.assert_allclose(adj, J3.T @ w, rtol=1e-14, atol=1e-14 * np.abs(J3).max())
    for s in (s2, s3):
        s.terminate()
        s.freeInstance()


def test_fmi3_model_exchange_through_fmpy():
    """FMI 3.0 ME through fmpy's FMI 3 API and CVode gives the FMI 2.0 ME FMU's trajectory (the
    same derivatives, the same solver calls); state-derivative directional derivatives of the
    arrays equal FMI 2.0's."""
    start, T = CASES["arm7.urdf"]
    f2 = build("arm7.urdf", runtime="native")
    f3 = build("arm7.urdf", runtime="native", fmi=3)
    var3 = {v.name: v for v in read_model_description(str(f3)).modelVariables}
    start3 = {g: [float(x) for x in var3[g].start.split()] for g in ("q0", "qd0", "tau")}
    for k, v in start.items():
        group, i = k.split("[")[0], int(k.split("[")[1][:-1]) - 1
        start3[group][i] = v
    # the joint stops off in both: FMI 2.0 ME locates stop events, FMI 3.0 declares no stop event
    # indicators (docs/limitations.md), so with stops the solver calls would differ
    off = {"stops_enabled": False}
    r2 = simulate_fmu(str(f2), stop_time=T, output_interval=T / 20, fmi_type="ModelExchange",
                      relative_tolerance=1e-9, start_values=start | off)
    r3 = simulate_fmu(str(f3), stop_time=T, output_interval=T / 20, fmi_type="ModelExchange",
                      relative_tolerance=1e-9, start_values=start3 | off, output=["q", "qd"])
    q2 = outputs(r2, [f"q[{i}]" for i in range(1, 8)])
    assert np.abs(q2[-1] - q2[0]).max() > 0.1
    np.testing.assert_allclose(r3["q"], q2, rtol=0, atol=1e-13)
    me2, me3 = ME(f2, start, fmi=2), ME(f3, fmi=3)
    v = np.random.default_rng(1).normal(size=me2.nx)
    d2 = me2.fmu.getDirectionalDerivative(
        [d.variable.valueReference for d in me2.md.derivatives],
        [d.variable.derivative.valueReference for d in me2.md.derivatives], list(v))
    me3.set_x(me2.x())
    me3.fmu.setFloat64([me3.vr["tau"]], start3["tau"])
    d3 = me3.fmu.getDirectionalDerivative([me3.vr["der(q)"], me3.vr["qdd"]],
                                          [me3.vr["q"], me3.vr["qd"]], list(v), me3.nx)
    np.testing.assert_array_equal(d2, d3)
    me2.close()
    me3.close()


@pytest.mark.parametrize("fmi, interface", [(2, "cs"), (2, "me"), (2, "both"), (3, "cs"),
                                            (3, "me"), (3, "both")])
def test_every_flavour_validates(fmi, interface, tmp_path, monkeypatch):
    """fmpy's validation (schema, names, model structure, start values, units) and the FMI 2.0 /
    3.0 XSD accept every flavour; ME flavours declare the states and their derivatives.  (The
    flavours other tests do not run are built without compiling: the XML is what is checked.)"""
    if (fmi, interface) in ((2, "cs"), (2, "both"), (3, "both")):
        fmu = build("four_bar.toml", runtime="native",
                    **({"interface": "cs"} if interface == "cs" else {}),
                    **({"fmi": 3} if fmi == 3 else {}))
    else:
        from soa_fmu.fmu import native
        monkeypatch.setattr(native, "compile_libraries", lambda *args: {})
        fmu = build_fmu.build(example("four_bar.toml"), tmp_path / "f.fmu", fmi=fmi,
                              interface=interface)
    assert validate_fmu(str(fmu)) == []
    xml = zipfile.ZipFile(fmu).read("modelDescription.xml")
    assert (generator_fmi3 if fmi == 3 else generator).validate(xml) == []
    md = read_model_description(str(fmu))
    assert (md.modelExchange is not None) == (interface != "cs")
    assert (md.coSimulation is not None) == (interface != "me")
    cfg = json.loads(zipfile.ZipFile(fmu).read("resources/fmu.json"))
    assert cfg["fmi"] == fmi and cfg["interfaces"] == {"cs": ["cs"], "me": ["me"],
                                                       "both": ["cs", "me"]}[interface]
    if interface == "cs":
        assert md.numberOfContinuousStates == 0 and not md.derivatives
        return
    assert md.numberOfContinuousStates == 6
    ders = [d.variable.name for d in md.derivatives]
    if fmi == 2:
        assert ders == ["der(q[1])", "der(q[2])", "der(q[3])", "qdd[1]", "qdd[2]", "qdd[3]"]
        assert [d.variable.derivative.name for d in md.derivatives] == \
            ["q[1]", "q[2]", "q[3]", "qd[1]", "qd[2]", "qd[3]"]
        outs = {u.variable.name: u.dependencies for u in md.outputs}
        assert [d.name for d in outs["q[1]"]] == ["q[1]"]
        assert outs["qdd[1]"] is None              # every state and input: "depends on all"
        init = {u.variable.name for u in md.initialUnknowns}
        assert "der(q[2])" in init
    else:
        assert ders == ["der(q)", "qdd"]
        var = {v.name: v for v in md.modelVariables}
        assert var["tau"].unit == "N.m" and [int(d.start) for d in var["tau"].dimensions] == [3]
        assert var["der(q)"].derivative is var["q"] and var["qdd"].derivative is var["qd"]
        assert var["time"].causality == "independent"
        assert "buildDescription.xml" in "".join(zipfile.ZipFile(fmu).namelist())
