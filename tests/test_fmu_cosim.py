"""The FMU under DNV's libcosim (OSP, via libcosimpy): runs, and matches fmpy's results."""
from __future__ import annotations

import numpy as np
import pytest

from fmu_fixtures import Instance, arm_fmu, pendulum_fmu  # noqa: F401

libcosimpy = pytest.importorskip("libcosimpy")
from libcosimpy.CosimEnums import CosimVariableType  # noqa: E402
from libcosimpy.CosimExecution import CosimExecution  # noqa: E402
from libcosimpy.CosimLogging import CosimLogLevel, log_output_level  # noqa: E402
from libcosimpy.CosimObserver import CosimObserver  # noqa: E402
from libcosimpy.CosimSlave import CosimLocalSlave  # noqa: E402

STEPS = 150
H_NS = 1_000_000            # 1 ms


def fmpy_run(fmu, tau: np.ndarray | None, steps: int):
    inst = Instance(fmu, logging=False).init()
    if tau is not None:
        inst.fmu.setReal(inst.refs("tau"), list(tau))
    q1 = []
    for k in range(steps):
        inst.fmu.doStep(k * 1e-3, 1e-3)
        q1.append(inst.get("q[1]")[0])
    out = inst.get("q"), inst.get("qd"), inst.get("qdd"), np.array(q1)
    inst.close()
    return out


def test_libcosim_runs_two_fmus_and_matches_fmpy(arm_fmu, pendulum_fmu):
    log_output_level(CosimLogLevel.ERROR)
    arm_inst, pend_inst = Instance(arm_fmu, logging=False), Instance(pendulum_fmu, logging=False)
    arm_vr, pend_vr = arm_inst.vr, pend_inst.vr
    arm_inst.close(terminate=False)
    pend_inst.close(terminate=False)

    ex = CosimExecution.from_step_size(H_NS)
    arm = ex.add_local_slave(CosimLocalSlave(fmu_path=str(arm_fmu), instance_name="arm"))
    pend = ex.add_local_slave(CosimLocalSlave(fmu_path=str(pendulum_fmu), instance_name="pend"))
    tau = 0.4 * np.arange(1, 8)
    for i in range(7):
        assert ex.real_initial_value(arm, arm_vr[f"tau[{i + 1}]"], float(tau[i]))
    last = CosimObserver.create_last_value()
    series = CosimObserver.create_time_series()
    ex.add_observer(last)
    ex.add_observer(series)
    assert series.start_time_series(arm, arm_vr["q[1]"], CosimVariableType.REAL)
    assert ex.step(step_count=STEPS)
    status = ex.status()
    assert status.current_time == STEPS * H_NS

    refs = lambda vr, p, n: [vr[f"{p}[{i}]"] for i in range(1, n + 1)]   # noqa: E731
    q = np.array(last.last_real_values(arm, refs(arm_vr, "q", 7)))
    qd = np.array(last.last_real_values(arm, refs(arm_vr, "qd", 7)))
    qdd = np.array(last.last_real_values(arm, refs(arm_vr, "qdd", 7)))
    q_ref, qd_ref, qdd_ref, q1_ref = fmpy_run(arm_fmu, tau, STEPS)
    # same FMU and held inputs; libcosim's 1 ms is 1e6 ns × 1e-9 s (an ulp away from fmpy's 1e-3),
    # so the two agree to round-off (grown over 150 steps of a fast, spinning arm), not bit for bit
    np.testing.assert_allclose(q, q_ref, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(qd, qd_ref, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(qdd, qdd_ref, rtol=1e-10, atol=1e-10)
    samples = series.time_series_real_samples(arm, arm_vr["q[1]"], from_step=1,
                                              sample_count=STEPS)
    times, steps, values = (np.array(x) for x in samples)
    assert len(values) >= STEPS - 1
    np.testing.assert_allclose(values, q1_ref[steps - 1], rtol=1e-10, atol=1e-10)
    np.testing.assert_array_equal(times, steps * H_NS)
    assert np.abs(q).max() > 0.01

    npend = sum(1 for n in pend_vr if n.startswith("q["))
    qp = np.array(last.last_real_values(pend, refs(pend_vr, "q", npend)))
    np.testing.assert_allclose(qp, fmpy_run(pendulum_fmu, None, STEPS)[0], rtol=1e-12, atol=1e-12)
    assert np.abs(qp).max() > 1e-3
