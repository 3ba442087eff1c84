"""The FMU run through fmpy: trajectories equal the engine's own integration, FMI call sequences,
several instances and FMUs in one process, variable communication steps, FMU state."""
from __future__ import annotations

import numpy as np
import pytest

import soa_fmu as sf
from fmu_fixtures import (Instance, arm_fmu, example, four_bar_fmu, pendulum_fmu,  # noqa: F401
                          spacecraft_fmu)
from soa_fmu.fmpy_logging import simulate_fmu
from soa_fmu.io import load_model

H = 1e-3


def arm_model():
    return load_model(example("arm7.urdf"))


def reference(model, steps, tau=None, q0=None, qd0=None, method="auto", **options):
    """The engine's own integration over the step sizes ``steps`` with held inputs tau(k)."""
    sim = sf.Simulator(model, q0, qd0, method=method, **options)
    Q, QD, QDD = [sim.q.copy()], [sim.qd.copy()], []
    for k, h in enumerate(steps):
        if tau is not None:
            sim.tau = np.asarray(tau(k), dtype=float)
        sim.step(h)
        Q.append(sim.q.copy())
        QD.append(sim.qd.copy())
        QDD.append(sim.qdd.copy())
    return np.array(Q), np.array(QD), np.array(QDD)


def run(inst: Instance, steps, tau=None, t0=0.0):
    """Step an initialized instance; returns q, qd (with the initial row) and qdd per step."""
    tr, qr, qdr, qddr = inst.refs("tau"), inst.refs("q"), inst.refs("qd"), inst.refs("qdd")
    Q, QD, QDD = [inst.fmu.getReal(qr)], [inst.fmu.getReal(qdr)], []
    t = t0
    for k, h in enumerate(steps):
        if tau is not None:
            inst.fmu.setReal(tr, list(tau(k)))
        inst.fmu.doStep(t, h)
        t += h
        Q.append(inst.fmu.getReal(qr))
        QD.append(inst.fmu.getReal(qdr))
        QDD.append(inst.fmu.getReal(qddr))
    return np.array(Q), np.array(QD), np.array(QDD)


def torque(k):
    return 2.0 * np.sin(0.05 * k + np.arange(7))


# ---------------------------------------------------------------- fmpy.simulate_fmu
def test_simulate_fmu_equals_engine(arm_fmu):
    model = arm_model()
    q0 = model.neutral_configuration() + 0.1 * np.arange(model.nq)
    tau = 0.5 * np.ones(model.nv)
    start = {f"q0[{i + 1}]": q0[i] for i in range(model.nq)}
    start.update({f"tau[{i + 1}]": tau[i] for i in range(model.nv)})
    res = simulate_fmu(str(arm_fmu), stop_time=0.3, output_interval=H, start_values=start,
                       output=[f"q[{i}]" for i in range(1, 8)] + [f"qdd[{i}]" for i in range(1, 8)])
    ref = sf.simulate(model, 0.3, H, q0=q0, tau=tau)
    assert len(res) == len(ref["t"]) == 301
    np.testing.assert_allclose(res["time"], ref["t"], rtol=0, atol=1e-15)
    Q = np.column_stack([res[f"q[{i}]"] for i in range(1, 8)])
    QDD = np.column_stack([res[f"qdd[{i}]"] for i in range(1, 8)])
    # fmpy's step sizes are differences of k*h (round-off apart from h): equal to round-off (q̈ of
    # this fast, spinning arm amplifies it: M is poorly conditioned along its path)
    np.testing.assert_allclose(Q, ref["q"], rtol=0, atol=1e-11)
    np.testing.assert_allclose(QDD, ref["qdd"], rtol=1e-8, atol=1e-8)
    assert np.abs(Q[-1] - Q[0]).max() > 0.05           # it moved


def test_simulate_fmu_time_varying_input_and_dop853(arm_fmu):
    model = arm_model()
    t = np.arange(0, 0.2 + H / 2, H)
    sig = np.zeros(len(t), dtype=[("time", float)] + [(f"tau[{i}]", float) for i in range(1, 8)])
    sig["time"] = t
    for i in range(7):
        sig[f"tau[{i + 1}]"] = 3.0 * np.sin(10 * t + i)
    res = simulate_fmu(str(arm_fmu), stop_time=0.2, output_interval=H, input=sig,
                       start_values={"integrator": "dop853", "rtol": 1e-10, "atol": 1e-12},
                       output=[f"q[{i}]" for i in range(1, 8)])
    ref = sf.simulate(model, 0.2, H, method="dop853", rtol=1e-10, atol=1e-12,
                      tau=lambda tt, q, qd: 3.0 * np.sin(10 * tt + np.arange(7)))
    Q = np.column_stack([res[f"q[{i}]"] for i in range(1, 8)])
    np.testing.assert_allclose(Q, ref["q"], rtol=0, atol=1e-9)


# ---------------------------------------------------------------- FMU2Slave call sequences
def test_call_sequence_three_times_bit_identical(arm_fmu):
    """instantiate → setup → init → steps → terminate → free, three times in one process: each
    run equals the engine's integration exactly (same step sizes, same compiled code)."""
    model = arm_model()
    steps = [H] * 60
    ref = reference(model, steps, torque)
    for k in range(3):
        inst = Instance(arm_fmu, name=f"run{k}").init()
        Q, QD, QDD = run(inst, steps, torque)
        inst.close()
        np.testing.assert_array_equal(Q, ref[0])
        np.testing.assert_array_equal(QD, ref[1])
        np.testing.assert_array_equal(QDD, ref[2])


def test_variable_communication_steps(arm_fmu):
    model = arm_model()
    rng = np.random.default_rng(3)
    steps = list(rng.choice([2.5e-4, 1e-3, 1.7e-3, 4e-3], size=40))
    ref = reference(model, steps, torque)
    inst = Instance(arm_fmu).init()
    Q, QD, QDD = run(inst, steps, torque)
    inst.close()
    np.testing.assert_array_equal(Q, ref[0])
    np.testing.assert_array_equal(QDD, ref[2])
    # a 4 ms step is split into 4 sub-steps of 1 ms (max_step): not the same as one 4 ms RK4 step
    one = reference(model, [4e-3], torque)
    four = reference(model, [1e-3] * 4, torque)
    assert not np.array_equal(one[0][-1], four[0][-1])


def test_two_instances_side_by_side(arm_fmu):
    model = arm_model()
    steps = [H] * 50
    tau_a = lambda k: 1.5 * np.ones(7)           # noqa: E731
    tau_b = lambda k: -np.arange(7.0)            # noqa: E731
    a = Instance(arm_fmu, "a").init()
    b = Instance(arm_fmu, "b").init({"q0[2]": 0.4})
    qa, qb = [], []
    for k, h in enumerate(steps):               # interleaved
        a.fmu.setReal(a.refs("tau"), list(tau_a(k)))
        b.fmu.setReal(b.refs("tau"), list(tau_b(k)))
        a.fmu.doStep(k * h, h)
        b.fmu.doStep(k * h, h)
        qa.append(a.get("q"))
        qb.append(b.get("q"))
    a.close()
    b.close()
    q0b = model.neutral_configuration()
    q0b[1] = 0.4
    np.testing.assert_array_equal(np.array(qa), reference(model, steps, tau_a)[0][1:])
    np.testing.assert_array_equal(np.array(qb), reference(model, steps, tau_b, q0=q0b)[0][1:])


def test_two_different_fmus_in_one_process(arm_fmu, pendulum_fmu):
    arm, pend = arm_model(), load_model(example("double_pendulum.toml"))
    steps = [H] * 40
    a = Instance(arm_fmu, "arm").init()
    p = Instance(pendulum_fmu, "pendulum").init()
    assert len(a.refs("q")) == arm.nq and len(p.refs("q")) == pend.nq != arm.nq
    for k, h in enumerate(steps):
        a.fmu.setReal(a.refs("tau"), list(torque(k)))
        a.fmu.doStep(k * h, h)
        p.fmu.doStep(k * h, h)
    qa, qp = a.get("q"), p.get("q")
    a.close()
    p.close()
    np.testing.assert_array_equal(qa, reference(arm, steps, torque)[0][-1])
    np.testing.assert_array_equal(qp, reference(pend, steps)[0][-1])


def test_outputs_at_end_of_step_and_feedthrough(arm_fmu):
    """q, qd, qdd after doStep(t, h) are the state at t + h; a new tau changes qdd immediately
    (direct feedthrough, as declared in ModelStructure) but not q."""
    model = arm_model()
    inst = Instance(arm_fmu).init()
    tau1 = np.linspace(-1, 1, 7)
    inst.fmu.setReal(inst.refs("tau"), list(tau1))
    inst.fmu.doStep(0.0, H)
    q, qd = inst.get("q"), inst.get("qd")

    def joint_forces(tau):      # the arm's <dynamics> damping and friction (docs/fmu.md)
        return (tau - model.joint_damping * qd
                - model.joint_friction * np.tanh(qd / model.friction_velocity))

    np.testing.assert_allclose(inst.get("qdd"), sf.forward_dynamics(model, q, qd, joint_forces(tau1)),
                               rtol=1e-13, atol=1e-12)
    tau2 = np.full(7, 3.0)
    inst.fmu.setReal(inst.refs("tau"), list(tau2))
    np.testing.assert_array_equal(inst.get("q"), q)
    np.testing.assert_allclose(inst.get("qdd"), sf.forward_dynamics(model, q, qd, joint_forces(tau2)),
                               rtol=1e-13, atol=1e-12)
    # energy and frame pose outputs
    assert inst.get("energy")[0] == pytest.approx(sf.total_energy(model, q, qd), rel=1e-12)
    R, p = sf.frame_pose(model, q, "tool0")
    np.testing.assert_allclose(inst.get("tool0.position"), p, rtol=0, atol=1e-14)
    quat = inst.get("tool0.orientation")
    w, x, y, z = quat
    R_q = np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                    [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                    [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])
    np.testing.assert_allclose(R_q, R, rtol=0, atol=1e-14)
    inst.close()


def test_parameters_gravity_and_initial_state(arm_fmu):
    model = arm_model()
    q0 = model.neutral_configuration() + 0.2
    qd0 = np.linspace(0.1, 0.7, 7)
    start = {f"q0[{i + 1}]": q0[i] for i in range(7)}
    start.update({f"qd0[{i + 1}]": qd0[i] for i in range(7)})
    start.update({"g[1]": 1.0, "g[3]": -3.0})
    inst = Instance(arm_fmu).init(start)
    np.testing.assert_array_equal(inst.get("q"), q0)        # initial unknowns
    np.testing.assert_array_equal(inst.get("qd"), qd0)
    Q = run(inst, [H] * 20)[0]
    inst.close()
    model.gravity = (1.0, 0.0, -3.0)
    np.testing.assert_array_equal(Q, reference(model, [H] * 20, q0=q0, qd0=qd0)[0])


def test_tunable_gravity_between_steps(arm_fmu):
    model = arm_model()
    inst = Instance(arm_fmu).init()
    run(inst, [H] * 5)
    inst.set("g[3]", 0.0)                       # switch gravity off mid-run
    inst.set("tau[1]", 0.0)
    q, qd = inst.get("q"), inst.get("qd")
    inst.fmu.doStep(5 * H, H)
    model.gravity = (0.0, 0.0, 0.0)
    sim = sf.Simulator(model, q, qd)
    sim.step(H)
    np.testing.assert_array_equal(inst.get("q"), sim.q)
    inst.close()


def test_external_force_input(arm_fmu):
    model = arm_model()
    frame = "tool0"
    inst = Instance(arm_fmu).init()
    f = np.array([0.0, 0.5, 0.0, 10.0, 0.0, -5.0])
    inst.fmu.setReal(inst.refs(f"{frame}.f_ext"), list(f))
    Q = run(inst, [H] * 20)[0]
    inst.close()
    sim = sf.Simulator(model)
    sim.f_ext = {frame: f}
    for _ in range(20):
        sim.step(H)
    np.testing.assert_array_equal(Q[-1], sim.q)


# ---------------------------------------------------------------- FMU state
def test_get_set_state_rollback_bit_identical(arm_fmu):
    inst = Instance(arm_fmu).init()
    run(inst, [H] * 10, torque)
    state = inst.fmu.getFMUstate()
    first = run(inst, [H] * 30, lambda k: torque(k + 10), t0=10 * H)
    inst.fmu.setFMUstate(state)
    again = run(inst, [H] * 30, lambda k: torque(k + 10), t0=10 * H)
    for x, y in zip(first, again):
        np.testing.assert_array_equal(x, y)
    # the held input is part of the state: without setting tau, the restored tau is used
    inst.fmu.setFMUstate(state)
    held = run(inst, [H] * 5, None, t0=10 * H)[0]
    inst.fmu.setFMUstate(state)
    explicit = run(inst, [H] * 5, lambda k: torque(9), t0=10 * H)[0]
    np.testing.assert_array_equal(held, explicit)
    inst.fmu.freeFMUstate(state)
    inst.close()


def test_serialized_state_into_a_new_instance(arm_fmu):
    a = Instance(arm_fmu, "a").init({"integrator": "dop853", "g[2]": 2.0})
    run(a, [H] * 8, torque)
    state = a.fmu.getFMUstate()
    blob = a.fmu.serializeFMUstate(state)
    a.fmu.freeFMUstate(state)
    ref = run(a, [2.5e-3] * 10, lambda k: torque(k + 8), t0=8 * H)
    a.close()
    b = Instance(arm_fmu, "b").init()                  # default parameters: rk4, g[2] = 0
    restored = b.fmu.deSerializeFMUstate(blob)
    b.fmu.setFMUstate(restored)
    b.fmu.freeFMUstate(restored)
    assert b.fmu.getString([b.vr["integrator"]]) == [b"dop853"]
    assert b.get("g[2]")[0] == 2.0
    got = run(b, [2.5e-3] * 10, lambda k: torque(k + 8), t0=8 * H)
    b.close()
    for x, y in zip(ref, got):                         # includes dop853's step-size memory
        np.testing.assert_array_equal(x, y)


def test_reset_restarts_from_parameters(arm_fmu):
    inst = Instance(arm_fmu).init({"q0[1]": 0.3})
    first = run(inst, [H] * 10, torque)
    inst.fmu.reset()
    inst.init({"q0[1]": 0.3})
    second = run(inst, [H] * 10, torque)
    inst.close()
    for x, y in zip(first, second):
        np.testing.assert_array_equal(x, y)


# ---------------------------------------------------------------- closed chains
def test_four_bar_constraint_outputs_and_switching(four_bar_fmu):
    model = load_model(example("four_bar.toml"))
    inst = Instance(four_bar_fmu).init({"stabilization[1]": 20.0, "stabilization[2]": 20.0,
                                        "tau[1]": 0.05})
    Q = run(inst, [H] * 200)[0]
    f = inst.get("closure_D.f")
    err = inst.get("closure_D.err")[0]
    assert np.abs(f).max() > 1e-3                       # the closure carries load
    assert err < 1e-6
    sim = sf.Simulator(model)
    sim.stabilization = (20.0, 20.0)
    sim.tau = np.r_[0.05, np.zeros(model.nv - 1)]
    for _ in range(200):
        sim.step(H)
    np.testing.assert_array_equal(Q[-1], sim.q)
    np.testing.assert_array_equal(f, sim.constraint_forces["closure_D"])
    # rollback across a switch-off of the loop closure
    state = inst.fmu.getFMUstate()
    inst.set("closure_D.active", False)
    free = run(inst, [H] * 50, t0=0.2)[0]
    assert np.all(inst.get("closure_D.f") == 0.0) and inst.get("closure_D.err")[0] == 0.0
    inst.fmu.setFMUstate(state)
    assert inst.fmu.getBoolean([inst.vr["closure_D.active"]]) == [1]
    closed = run(inst, [H] * 50, t0=0.2)[0]
    assert np.abs(free[-1] - closed[-1]).max() > 1e-3
    inst.fmu.setFMUstate(state)
    np.testing.assert_array_equal(run(inst, [H] * 50, t0=0.2)[0], closed)
    inst.close()


def test_spacecraft_quaternion_start_values(spacecraft_fmu):
    model = load_model(example("spacecraft_rigid.toml"))
    joint, i = model.quaternion_slices()[0]
    inst = Instance(spacecraft_fmu)
    q = np.array([0.7071, 0.7071, 0.0, 0.0])          # 4 digits: normalized at initialization
    inst.init({f"q0[{i + k + 1}]": q[k] for k in range(4)})
    got = inst.get("q")[i:i + 4]
    np.testing.assert_allclose(got, q / np.linalg.norm(q), atol=1e-15)
    assert np.linalg.norm(inst.get("q")[i:i + 4]) == pytest.approx(1.0, abs=1e-15)
    inst.close()


# ---------------------------------------------------------------- directional derivatives
def test_directional_derivatives_equal_finite_differences(arm_fmu):
    """Native: fmi2GetDirectionalDerivative of qdd with respect to tau and a frame's f_ext equals
    central differences of the feedthrough output qdd (qdd is affine in the inputs: exact to
    round-off); columns of d qdd / d tau are M^-1."""
    inst = Instance(arm_fmu).init({"q0[2]": 0.4, "qd0[3]": 1.0})
    if not inst.native:
        assert inst.md.coSimulation.providesDirectionalDerivative is False
        inst.close()
        return
    inst.fmu.setReal(inst.refs("tau"), list(0.3 * np.arange(7)))
    inst.fmu.doStep(0.0, H)
    unknown, tau = inst.refs("qdd"), inst.refs("tau")
    known = tau + inst.refs("tool0.f_ext")
    base = inst.fmu.getReal(known)
    rng = np.random.default_rng(3)
    for _ in range(3):
        v = rng.normal(size=len(known))
        d = np.array(inst.fmu.getDirectionalDerivative(unknown, known, list(v)))
        eps = 1e-3
        inst.fmu.setReal(known, list(np.array(base) + eps * v))
        plus = np.array(inst.fmu.getReal(unknown))
        inst.fmu.setReal(known, list(np.array(base) - eps * v))
        minus = np.array(inst.fmu.getReal(unknown))
        inst.fmu.setReal(known, base)
        np.testing.assert_allclose(d, (plus - minus) / (2 * eps), rtol=1e-7, atol=1e-9)
    # d qdd / d tau = M^-1 at the current state
    model = arm_model()
    Minv = sf.mass_matrix_inverse(model, inst.get("q"))
    J = np.column_stack([inst.fmu.getDirectionalDerivative(unknown, [r], [1.0]) for r in tau])
    np.testing.assert_allclose(J, Minv, rtol=1e-10, atol=1e-12)
    # outputs that do not depend on the inputs at the same instant have a zero derivative
    assert inst.fmu.getDirectionalDerivative(inst.refs("q"), tau[:1], [1.0]) == [0.0] * 7
    inst.close()


def test_directional_derivatives_with_constraints():
    """Native, two arms holding a box (two active grasps): d(qdd, constraint forces)/d(tau, u,
    f_ext) from fmi2GetDirectionalDerivative equals central differences of the outputs."""
    from fmu_fixtures import build
    inst = Instance(build("two_arms_box.toml", runtime="native"))
    inst.init({"stabilization[1]": 10.0, "stabilization[2]": 10.0})
    inst.fmu.doStep(0.0, H)
    names = [v.name for v in inst.md.modelVariables]
    forces = [inst.vr[n] for n in names if ".f[" in n]
    us = [inst.vr[n] for n in names if ".u[" in n]
    fext = [inst.vr[n] for n in names if ".f_ext[" in n][:6]
    unknown, known = inst.refs("qdd") + forces, inst.refs("tau") + us + fext
    assert len(forces) >= 6 and len(us) >= 6
    base = inst.fmu.getReal(known)
    rng = np.random.default_rng(7)
    for _ in range(3):
        v = rng.normal(size=len(known))
        d = np.array(inst.fmu.getDirectionalDerivative(unknown, known, list(v)))
        eps = 1e-4
        inst.fmu.setReal(known, list(np.array(base) + eps * v))
        plus = np.array(inst.fmu.getReal(unknown))
        inst.fmu.setReal(known, list(np.array(base) - eps * v))
        minus = np.array(inst.fmu.getReal(unknown))
        inst.fmu.setReal(known, base)
        fd = (plus - minus) / (2 * eps)
        np.testing.assert_allclose(d, fd, rtol=1e-6, atol=1e-6 * np.abs(fd).max())
        assert np.abs(d).max() > 1e-3
    inst.close()
