"""Physical parameters (issue 11): body inertias, joint damping and Coulomb friction — from Python
(Model.set_body_inertia, joint_damping, joint_friction) and as FMU parameters of both flavours
(<b>.mass, <b>.com[1..3], <b>.inertia[1..6], damping[i], friction[i]), with the same checks; the
joint forces τ − d q̇ − f_c tanh(q̇/v_s) applied by the simulator (core/dissipation.c)."""
from __future__ import annotations

import numpy as np
import pytest

import soa_fmu as sf
from fmu_fixtures import RUNTIMES, build, example
from soa_fmu.fmpy_logging import simulate_fmu
from soa_fmu.fmu.variables import build_table

G = 9.81


def pendulum() -> sf.Model:
    return sf.load_model(example("pendulum.toml"))


def run(fmu, stop=1.0, dt=1e-3, start=None, output=("q[1]", "qd[1]", "qdd[1]", "energy")):
    """fmpy's simulate_fmu, and the messages the FMU logged with status Discard or worse."""
    log = []

    def logger(env, name, status, category, message):
        if status >= 2:
            log.append(message.decode())

    try:
        res = simulate_fmu(str(fmu), stop_time=stop, output_interval=dt, start_values=start or {},
                           output=list(output), logger=logger, debug_logging=True)
    except Exception:                          # noqa: BLE001 — the log says why
        res = None
    return res, log


# ---------------------------------------------------------------- Python API
def test_set_body_inertia_checks_name_the_body():
    m = pendulum()
    with pytest.raises(sf.ModelError, match=r"body 'bob': mass must be finite and ≥ 0, got -1"):
        m.set_body_inertia("bob", mass=-1.0)
    with pytest.raises(sf.ModelError, match=r"body 'bob': inertia tensor is not positive semi"):
        m.set_body_inertia("bob", inertia=(1.0, 1.0, -1.0, 0, 0, 0))
    with pytest.raises(sf.ModelError, match=r"body 'bob': principal inertias .* triangle"):
        m.set_body_inertia("bob", inertia=np.diag([1.0, 1.0, 3.0]))
    m.set_body_inertia("bob", inertia=np.diag([1.0, 1.0, 3.0]), physical=False)   # as --lenient
    m.set_body_inertia(0, mass=2.0, com=(0.0, 0.0, -0.5), inertia=(0.2, 0.2, 0.3, 0.01, 0.02, 0.03))
    mass, com, J = m.body_inertia("bob")
    assert mass == 2.0 and np.array_equal(com, [0.0, 0.0, -0.5])
    np.testing.assert_array_equal(J, [[0.2, 0.01, 0.02], [0.01, 0.2, 0.03], [0.02, 0.03, 0.3]])
    np.testing.assert_array_equal(m.arrays().mass, [2.0])          # the engine's model follows


def test_damping_and_friction_checks():
    m = sf.load_model(example("arm7.urdf"))
    np.testing.assert_array_equal(m.joint_damping, [0.5, 0.5, 0.3, 0.3, 0.2, 0.1, 0.1])  # <dynamics>
    np.testing.assert_array_equal(m.joint_friction, [0.1, 0.1, 0.1, 0.1, 0.05, 0.05, 0.05])
    assert pendulum().joint_damping.tolist() == [0.0]             # absent: 0
    with pytest.raises(sf.ModelError, match=r"damping\[3\] \(joint3\) must be finite and ≥ 0"):
        m.joint_damping = [0, 0, -1, 0, 0, 0, 0]
    with pytest.raises(sf.ModelError, match=r"friction\[1\] \(joint1\) must be finite and ≥ 0"):
        m.joint_friction = [np.nan] * 7
    with pytest.raises(sf.ModelError, match="friction_velocity must be finite and > 0"):
        m.friction_velocity = 0.0
    m.joint_damping = 0.0
    assert not m.joint_damping.any()


def test_joint_forces_formula():
    """_core.joint_forces (what every step applies) is τ − d q̇ − f_c tanh(q̇ / v_s)."""
    m = sf.load_model(example("arm7.urdf"))
    m.friction_velocity = 0.05
    qd, tau = np.linspace(-0.2, 0.3, 7), np.linspace(1.0, -1.0, 7)
    expect = tau - m.joint_damping * qd - m.joint_friction * np.tanh(qd / 0.05)
    np.testing.assert_allclose(sf._core.joint_forces(m.data, m.neutral_configuration(), qd, tau), expect, rtol=1e-15, atol=1e-15)
    m.joint_damping, m.joint_friction = 0.0, 0.0
    np.testing.assert_array_equal(sf._core.joint_forces(m.data, m.neutral_configuration(), qd, tau), tau)


def test_simulator_applies_dissipation():
    """A damped pendulum loses energy at the rate d q̇² (dE/dt = −d q̇², integrated over the run)."""
    m = pendulum()
    m.joint_damping = [0.3]
    r = sf.simulate(m, 2.0, 1e-3)
    E = np.array([sf.total_energy(m, q, qd) for q, qd in zip(r["q"], r["qd"])])
    lost = _simpson(0.3 * r["qd"][:, 0] ** 2, 1e-3)
    assert E[0] - E[-1] == pytest.approx(lost, rel=1e-6)
    assert lost > 0.05                                     # (a visible loss, not round-off)


def _simpson(y: np.ndarray, h: float) -> float:
    """∫ y dt over an even number of intervals of width h."""
    assert (len(y) - 1) % 2 == 0
    return h / 3 * (y[0] + y[-1] + 4 * y[1:-1:2].sum() + 2 * y[2:-1:2].sum())


# ---------------------------------------------------------------- the FMU parameters
def test_table_has_the_parameters():
    model = sf.load_model(example("arm7.urdf"))
    t = build_table(model)
    v = t.by_name
    assert v["link7.mass"].start == 0.3 and v["link7.mass"].unit == "kg"
    assert v["link7.mass"].variability == "fixed" and v["link7.mass"].causality == "parameter"
    assert v["link7.com[3]"].start == 0.022 and v["link7.com[3]"].unit == "m"
    assert [v[f"link7.inertia[{i}]"].start for i in range(1, 7)] == [0.000170625, 0.000170625,
                                                                     0.00024, 0.0, 0.0, 0.0]
    assert v["link7.inertia[1]"].unit == "kg.m2"
    assert v["damping[7]"].start == 0.1 and v["damping[7]"].unit == "N.m.s/rad"
    assert v["friction[5]"].start == 0.05 and v["friction[5]"].unit == "N.m"
    assert v["damping[1]"].variability == v["friction[1]"].variability == "fixed"
    # qdd's initial dependencies include them: qdd depends on every known (ALL: the attribute is
    # omitted), the energy on the inertias
    assert t.initial_dependencies()[v["qdd[7]"].value_reference] is None
    deps = t.initial_dependencies()[v["energy"].value_reference]
    assert v["link7.mass"].value_reference in deps and v["damping[7]"].value_reference not in deps


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_payload_mass_changes_qdd_as_expected(runtime):
    """A pendulum's bob of mass m and inertia J_yy about its centre at L = 1: q̈ = −m g L sin q /
    (m L² + J_yy), at t = 0 and after the parameters were set."""
    fmu = build("pendulum.toml", runtime=runtime)
    for mass, jyy in ((1.0, 0.001), (2.5, 0.004)):
        res, log = run(fmu, stop=0.01, start={"bob.mass": mass, "bob.inertia[1]": jyy,
                                              "bob.inertia[2]": jyy, "bob.inertia[3]": jyy})
        assert not log, log
        q0 = res["q[1]"][0]
        assert res["qdd[1]"][0] == pytest.approx(-mass * G * np.sin(q0) / (mass + jyy), rel=1e-13)


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_damping_dissipates_energy_at_the_analytic_rate(runtime):
    """With viscous damping d and Coulomb friction f_c the energy output falls by
    ∫ (d q̇² + f_c q̇ tanh(q̇/v_s)) dt."""
    fmu = build("pendulum.toml", runtime=runtime)
    d, fc, vs = 0.2, 0.05, sf.model.FRICTION_VELOCITY
    res, log = run(fmu, stop=2.0, start={"damping[1]": d, "friction[1]": fc})
    assert not log, log
    qd, E = res["qd[1]"], res["energy"]
    lost = _simpson(d * qd ** 2 + fc * qd * np.tanh(qd / vs), 1e-3)
    assert E[0] - E[-1] == pytest.approx(lost, rel=1e-5)
    free, _ = run(fmu, stop=2.0)
    assert free["energy"][-1] == pytest.approx(free["energy"][0], rel=1e-9)   # none without


@pytest.mark.parametrize("runtime", RUNTIMES)
@pytest.mark.parametrize("start, message", [
    ({"link7.mass": -1.0}, r"initialization failed: body 'link7': mass must be finite and ≥ 0"),
    ({"link3.inertia[3]": -0.5}, r"initialization failed: body 'link3': inertia tensor is not "
                                 r"positive semi-definite"),
    ({"link2.inertia[3]": 0.05}, r"initialization failed: body 'link2': principal inertias .* "
                                 r"violate the triangle inequality"),
    ({"damping[4]": -0.1}, r"initialization failed: damping\[4\] .*\(joint4\) must be finite and ≥ 0"),
])
def test_impossible_parameters_refused_at_initialization(runtime, start, message):
    fmu = build("arm7.urdf", name="Arm7", runtime=runtime)
    res, log = run(fmu, stop=0.01, start=start, output=("q[1]",))
    assert log and any(__import__("re").search(message, m) for m in log), log
    assert "fmi2ExitInitializationMode" in log[0]
    assert res is None or not np.isfinite(res["q[1]"]).all() or len(res) < 10


def test_flavours_agree_bit_for_bit_with_parameters():
    start = {"link7.mass": 1.3, "link7.com[3]": 0.05, "link7.inertia[3]": 0.0003,
             "link5.inertia[4]": 1e-4, "damping[2]": 1.0, "friction[6]": 0.2, "q0[2]": 0.4,
             "q0[4]": -0.6, "qd0[1]": 0.5}
    out = [f"q[{i}]" for i in range(1, 8)] + [f"qdd[{i}]" for i in range(1, 8)] + ["energy"]
    native, log1 = run(build("arm7.urdf", name="Arm7", runtime="native"), 0.3, start=start,
                       output=out)
    python, log2 = run(build("arm7.urdf", name="Arm7", runtime="python"), 0.3, start=start,
                       output=out)
    assert not log1 and not log2
    for n in out[:-1]:
        np.testing.assert_array_equal(native[n], python[n])
    # and the Python API's Simulator with the same parameters
    m = sf.load_model(example("arm7.urdf"))
    m.set_body_inertia("link7", mass=1.3, com=(0, 0, 0.05), inertia=(0.000170625, 0.000170625,
                                                                       0.0003, 0, 0, 0))
    m.set_body_inertia("link5", inertia=(0.00597479, 0.00597479, 0.00172125, 1e-4, 0, 0))
    d, f = m.joint_damping, m.joint_friction
    d[1], f[5] = 1.0, 0.2
    m.joint_damping, m.joint_friction = d, f
    q0 = np.zeros(7)
    q0[1], q0[3] = 0.4, -0.6
    r = sf.simulate(m, 0.3, 1e-3, q0=q0, qd0=[0.5, 0, 0, 0, 0, 0, 0])
    # (fmpy's communication steps differ from 1e-3 in the last bits: round-off, not bits)
    np.testing.assert_allclose(native["q[7]"], r["q"][:, 6], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(native["qdd[3]"], r["qdd"][:, 2], rtol=1e-9, atol=1e-9)


def test_state_restore_reapplies_parameters():
    """fmi2SetFMUstate of an instance initialized with other parameters restores them too."""
    from fmpy import extract, read_model_description
    from fmpy.fmi2 import FMU2Slave
    fmu = build("pendulum.toml", runtime="native")
    md = read_model_description(str(fmu))
    vr = {v.name: v.valueReference for v in md.modelVariables}
    d = extract(str(fmu))
    insts = []
    for mass, jyy in ((1.0, 0.001), (3.0, 0.5)):
        s = FMU2Slave(guid=md.guid, unzipDirectory=d, modelIdentifier=md.coSimulation.modelIdentifier,
                      instanceName=f"m{mass}")
        s.instantiate()
        s.setupExperiment(startTime=0.0)
        s.setReal([vr["bob.mass"]] + [vr[f"bob.inertia[{i}]"] for i in (1, 2, 3)], [mass] + [jyy] * 3)
        s.enterInitializationMode()
        s.exitInitializationMode()
        insts.append(s)
    a, b = insts
    state = b.getFMUState()
    for k in range(5):
        b.doStep(k * 1e-3, 1e-3)
    ref = b.getReal([vr["q[1]"], vr["qd[1]"]])
    a.setFMUState(state)
    for k in range(5):
        a.doStep(k * 1e-3, 1e-3)
    assert a.getReal([vr["q[1]"], vr["qd[1]"]]) == ref
    a.setFMUState(state)                       # (and a differs from what it was without it)
    b.freeFMUState(state)
    for s in insts:
        s.terminate()
        s.freeInstance()
