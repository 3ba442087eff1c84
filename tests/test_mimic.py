"""URDF ``<mimic>`` couplings q_m = k q_j + c (core/mimic.c, docs/model-files.md) against Pinocchio's
mimic joints, and held by the Simulator and both FMU flavours while a force drives the driver.

Pinocchio (``buildModelFromUrdf(..., mimic=True)``) reduces the mimicking coordinates away: its
mass matrix and bias are those of the reduced coordinates, q̈_r = M_r⁻¹ (Tᵀ τ − C_r).  Ours keeps
every joint's coordinate and adds the coupling rows G = e_m* − k e_j*: the two must give the same
accelerations of the independent joints, the mimic's being k times its driver's.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import soa_fmu as sf
from soa_fmu import joints as J
from soa_fmu.io import ModelWarning

pin = pytest.importorskip("pinocchio")
fmpy = pytest.importorskip("fmpy")
from soa_fmu.fmpy_logging import simulate_fmu  # noqa: E402
from fmu_fixtures import build  # noqa: E402
from test_robot_data import robot_path  # noqa: E402

PANDA = ("panda_description/urdf", "panda.urdf")
PR2 = ("pr2_description/urdf", "pr2.urdf")      # 2 x 5 revolute mimics, multipliers +1 and -1


def _coupled(model: sf.Model) -> sf.Simulator:
    """A Simulator of the rigid-body dynamics alone (no dissipation, no stops): its acceleration
    is the coupled forward dynamics of τ as given."""
    model.joint_damping, model.joint_friction = 0.0, 0.0
    model.stops_enabled = False
    return sf.Simulator(model, method="rk4")


def _pin_reduced(model: sf.Model, pmodel, q, qd, tau):
    """Pinocchio's reduced accelerations at our (consistent) state, mapped back to our dofs."""
    mim = {m.joint: m for m in model.mimics}
    bodies = {b.joint_name: b for b in model.bodies}
    qp, vp = np.zeros(pmodel.nq), np.zeros(pmodel.nv)
    T = np.zeros((model.nv, pmodel.nv))                  # v_full = T v_reduced
    for i in range(1, pmodel.njoints):
        pj, name = pmodel.joints[i], pmodel.names[i]
        b = bodies[name]
        if name in mim:
            continue
        assert b.joint.code in (J.REVOLUTE, J.PRISMATIC) and pj.nv == 1, name
        s = q[b.q_index]
        if pj.nq == 2:
            qp[pj.idx_q:pj.idx_q + 2] = np.cos(s), np.sin(s)
        else:
            qp[pj.idx_q] = s
        vp[pj.idx_v] = qd[b.v_index]
        T[b.v_index, pj.idx_v] = 1.0
    pin_index = {pmodel.names[i]: pmodel.joints[i].idx_v for i in range(1, pmodel.njoints)}
    for m in model.mimics:
        T[bodies[m.joint].v_index, pin_index[m.driver]] = m.multiplier
    data = pmodel.createData()
    M = pin.crba(pmodel, data, qp)
    M = np.triu(M) + np.triu(M, 1).T
    bias = pin.rnea(pmodel, data, qp, vp, np.zeros(pmodel.nv))
    return T @ np.linalg.solve(M, T.T @ tau - bias)


@pytest.mark.parametrize("robot", [PANDA, PR2], ids=["panda", "pr2"])
def test_coupled_accelerations_match_pinocchio_mimic(robot):
    path = robot_path(*robot)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ModelWarning)          # pr2: two non-physical inertias
        model = sf.load_model(path, strict=False)
    pmodel = pin.buildModelFromUrdf(str(path), mimic=True)
    assert len(model.mimics) == pmodel.nvExtended - pmodel.nv > 0
    sim = _coupled(model)
    rng = np.random.default_rng(7)
    worst = 0.0
    for _ in range(5):
        q = rng.uniform(-1.0, 1.0, model.nq) * 0.5
        qd = rng.uniform(-1.0, 1.0, model.nv)
        tau = rng.uniform(-5.0, 5.0, model.nv)                # the mimics' torques too: folded
        sf._core.mimic_project(model.core, q, qd)
        sim.tau[:] = tau
        qdd = sim.acceleration(q, qd)
        ref = _pin_reduced(model, pmodel, q, qd, tau)
        worst = max(worst, np.abs(qdd - ref).max() / max(1.0, np.abs(ref).max()))
        for m in model.mimics:
            i, j = (model.velocity_names.index(n) for n in (m.joint, m.driver))
            assert qdd[i] == pytest.approx(m.multiplier * qdd[j], abs=1e-9)
    print(f"{path.name}: {len(model.mimics)} mimics, max rel. error against Pinocchio {worst:.2e}")
    assert worst < 1e-9
    model.mimics.clear()                                     # (the check can fail: uncoupled)
    model._invalidate()
    sim = _coupled(model)
    sim.tau[:] = tau
    assert np.abs(sim.acceleration(q, qd) - ref).max() > 1e-3


@pytest.mark.parametrize("runtime, interface", [("native", "cs"), ("native", "me"),
                                                ("python", "cs")])
def test_panda_fingers_stay_coupled_in_the_fmus(runtime, interface):
    """A force drives finger_joint1 (and 2 N the mimic, folded into it); finger_joint2 follows it
    to 1e-6 over 1 s while the fingers travel their stroke (the quality bar of issue 32)."""
    path = robot_path(*PANDA)
    model = sf.load_model(path)
    fmu = build(path, name=f"Panda_{runtime}", runtime=runtime,
                **({"platforms": "host"} if runtime == "native" else {}))
    i1 = model.velocity_names.index("panda_finger_joint1")
    inputs = np.array([(0.0, 20.0, 2.0), (1.0, 20.0, 2.0)],
                      dtype=[("time", float), (f"tau[{i1 + 1}]", float), (f"tau[{i1 + 2}]", float)])
    res = simulate_fmu(fmu, stop_time=1.0, output_interval=1e-3, step_size=1e-3, input=inputs,
                       fmi_type="ModelExchange" if interface == "me" else "CoSimulation",
                       output=[f"q[{i1 + 1}]", f"q[{i1 + 2}]", f"qdd[{i1 + 1}]",
                               f"qdd[{i1 + 2}]"])
    gap = res[f"q[{i1 + 2}]"] - res[f"q[{i1 + 1}]"]
    stroke = res[f"q[{i1 + 1}]"]
    print(f"{runtime} {interface}: stroke {stroke.max():.4f} m, |gap| <= {np.abs(gap).max():.2e}")
    assert stroke.max() > 0.03                             # the finger moved (to its stop, 0.04)
    assert np.abs(gap).max() <= 1e-6
    assert np.abs(res[f"qdd[{i1 + 2}]"] - res[f"qdd[{i1 + 1}]"]).max() <= 1e-6
    md = fmpy.read_model_description(fmu)       # the couplings' derivatives are not formed
    assert not (md.coSimulation.providesDirectionalDerivative
                or (md.modelExchange and md.modelExchange.providesDirectionalDerivative))


@pytest.mark.parametrize("method", ["rk4", "euler", "implicit", "ros2", "ros34pw2", "rk4w", "dop853"])
def test_simulator_holds_a_coupling_with_offset_and_multiplier(tmp_path, method):
    """A mimic with k = −2, c = 0.01: the Simulator starts consistent (the mimic's q
    projected) and keeps q_m − (k q_j + c) at round-off under a torque on the mimic alone, which
    drives the driver as k τ_m would (virtual work)."""
    text = (robot_path(*PANDA).read_text()
            .replace('<mimic joint="panda_finger_joint1"/>',
                     '<mimic joint="panda_finger_joint1" multiplier="-2" offset="0.01"/>'))
    path = tmp_path / "panda_k.urdf"
    path.write_text(text)
    model = sf.load_model(path)
    assert model.mimics == [sf.model.Mimic("panda_finger_joint2", "panda_finger_joint1", -2.0, 0.01)]
    i1 = model.velocity_names.index("panda_finger_joint1")
    sim = _coupled(model)
    assert sim.q[i1 + 1] == pytest.approx(0.01)            # projected: q_m = k·0 + c
    sim.tau[i1 + 1] = -1.0
    a = sim.acceleration(sim.q, sim.qd)
    sim.tau[:] = 0.0
    sim.tau[i1] = 2.0                                      # k τ_m on the driver: the same motion
    b = sim.acceleration(sim.q, sim.qd)
    assert np.abs(a - b).max() <= 1e-12 * np.abs(a).max()
    sim.tau[:] = 0.0
    sim.tau[i1 + 1] = -1.0
    sim.set_method(method)
    for _ in range(500):
        sim.step(1e-3)
    assert abs(sim.q[i1 + 1] - (-2.0 * sim.q[i1] + 0.01)) <= 1e-12
    assert abs(sim.q[i1]) > 1e-3


def test_bad_mimic_is_one_located_error(tmp_path):
    text = robot_path(*PANDA).read_text()
    for old, new, message in [
            ('<mimic joint="panda_finger_joint1"/>', '<mimic joint="no_such_joint"/>',
             r"joint 'panda_finger_joint2' <mimic>: unknown joint 'no_such_joint'"),
            ('<mimic joint="panda_finger_joint1"/>', '<mimic joint="panda_joint8"/>',
             r"mimic joint 'panda_finger_joint2': driver 'panda_joint8' is a fixed joint")]:
        path = tmp_path / "bad.urdf"
        path.write_text(text.replace(old, new))
        with pytest.raises(sf.ModelError, match=rf"^{path}:\d+: {message}"):
            sf.load_model(path)
