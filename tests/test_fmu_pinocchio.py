"""The native FMU's trajectory against a reference outside the C core: Pinocchio's ``aba`` under the
same classical RK4 steps (h = 1 ms, max_step = h), written out here in Python, with the joint forces
docs/model-files.md documents for URDF ``<dynamics damping friction>``: τ − d q̇ − f_c tanh(q̇/v_s).
So a wrong term or sign in the FMU's dissipation, dynamics or integrator shows up against an engine
that shares none of that code."""
from __future__ import annotations

import numpy as np
import pytest

import soa_fmu as sf
from fmu_fixtures import Instance, build, example
from soa_fmu.verify.pinocchio_bridge import to_pinocchio

pin = pytest.importorskip("pinocchio")
H, STEPS = 1e-3, 300


def rk4_reference(pm, q, v, tau, damping, friction, vs, steps):
    data = pm.pin_model.createData()

    def accel(q, v):
        t = tau - damping * v - friction * np.tanh(v / vs)
        return pin.aba(pm.pin_model, data, q, v, t)

    for _ in range(steps):                               # q is a vector space here (revolute joints)
        k1q, k1v = v, accel(q, v)
        k2q, k2v = v + 0.5 * H * k1v, accel(q + 0.5 * H * k1q, v + 0.5 * H * k1v)
        k3q, k3v = v + 0.5 * H * k2v, accel(q + 0.5 * H * k2q, v + 0.5 * H * k2v)
        k4q, k4v = v + H * k3v, accel(q + H * k3q, v + H * k3v)
        q = q + H / 6 * (k1q + 2 * k2q + 2 * k3q + k4q)
        v = v + H / 6 * (k1v + 2 * k2v + 2 * k3v + k4v)
    return q, v


@pytest.mark.parametrize("dissipation", [False, True], ids=["ideal", "damping+friction"])
def test_arm_fmu_follows_pinocchio_under_rk4(dissipation):
    model = sf.load_model(example("arm7.urdf"))
    pm = to_pinocchio(model)
    nv = model.nv
    q0 = np.linspace(-0.4, 0.5, nv)
    qd0 = np.linspace(0.8, -0.6, nv)
    tau = 0.3 * np.sin(np.arange(1, nv + 1))
    damping = np.asarray(model.joint_damping) if dissipation else np.zeros(nv)
    friction = np.asarray(model.joint_friction) if dissipation else np.zeros(nv)
    if dissipation:
        assert damping.min() > 0 and friction.min() > 0       # arm7.urdf's <dynamics>
    inst = Instance(build("arm7.urdf", name="Arm7"), logging=False)
    start = {"max_step": H, "integrator": "rk4", "stops_enabled": False}   # (the reference: no stops)
    for i in range(nv):
        start |= {f"q0[{i + 1}]": q0[i], f"qd0[{i + 1}]": qd0[i], f"damping[{i + 1}]": damping[i],
                  f"friction[{i + 1}]": friction[i]}
    inst.init(start)
    inst.fmu.setReal(inst.refs("tau"), list(tau))
    for k in range(STEPS):
        inst.fmu.doStep(k * H, H)                         # fmpy raises on a refused step
    q, qd = inst.get("q"), inst.get("qd")
    inst.close()
    vs = model.friction_velocity                          # v_s, the documented default 0.01 m/s, rad/s
    q_ref, v_ref = rk4_reference(pm, pm.q_to_pin(q0), pm.v_to_pin(qd0), pm.v_to_pin(tau),
                                 pm.v_to_pin(damping), pm.v_to_pin(friction), vs, STEPS)
    moved = np.abs(q - q0).max()
    assert moved > 0.05                                   # the arm did move
    np.testing.assert_allclose(pm.q_to_pin(q), q_ref, rtol=0, atol=1e-10)
    np.testing.assert_allclose(pm.v_to_pin(qd), v_ref, rtol=0, atol=1e-9)
