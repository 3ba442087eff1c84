"""Bad inputs and failures through the FMI interface, for both FMU flavours: a logged message naming
the variable, an error status (the native FMU: fmi2Error from the setter; pythonfmu lets a slave
return a status only from doStep, so the step that follows a rejected value is refused with
fmi2Discard in both), never a crash or a corrupted state, and a usable instance after fmi2Reset /
fmi2SetFMUstate."""
from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest
from fmpy.fmi1 import FMICallException
from fmpy.fmi2 import fmi2Discard, fmi2Error

from fmu_fixtures import (Instance, arm_fmu, example, spacecraft_fmu, status_of,  # noqa: F401
                          subprocess_env)
from soa_fmu.io import load_model

H = 1e-3


def discards(inst: Instance, t: float, h: float = H) -> bool:
    try:
        inst.fmu.doStep(t, h)
    except FMICallException as e:
        assert e.status == fmi2Discard
        return True
    return False


def errors(inst: Instance) -> list[str]:
    return [m for s, _, m in inst.messages if s >= fmi2Error]


def refused_call(inst: Instance, call) -> None:
    """A call given a bad value: fmi2Error (native) / fmi2OK with the error logged (pythonfmu)."""
    assert status_of(call) == inst.rejected


def test_nan_tau_rejected_named_and_recoverable(arm_fmu):
    model = load_model(example("arm7.urdf"))
    inst = Instance(arm_fmu).init()
    inst.fmu.setReal(inst.refs("tau"), [0.5] * 7)
    inst.fmu.doStep(0.0, H)
    q = inst.get("q")
    tau = inst.refs("tau")
    refused_call(inst, lambda: inst.fmu.setReal(tau, [0.5, 0.5, math.nan, 0.5, 0.5, 0.5, 0.5]))
    msg = errors(inst)[-1]
    assert f"tau[3] ({model.velocity_names[2]}) is NaN" in msg
    assert discards(inst, H)                                  # the step is refused ...
    assert "tau[3]" in inst.messages[-1][2]
    np.testing.assert_array_equal(inst.get("q"), q)           # ... and the state is unchanged
    assert inst.get("tau[3]")[0] == 0.5                       # the NaN was not applied
    inst.fmu.setReal([tau[2]], [0.25])                        # a valid value clears it
    inst.fmu.doStep(H, H)
    assert not np.array_equal(inst.get("q"), q)
    inst.close()


def test_inf_external_force_then_reset(arm_fmu):
    inst = Instance(arm_fmu).init()
    ref = inst.vr["tool0.f_ext[4]"]
    refused_call(inst, lambda: inst.fmu.setReal([ref], [math.inf]))
    assert "tool0.f_ext[4] (tool0) is infinite" in errors(inst)[-1]
    assert discards(inst, 0.0)
    inst.fmu.reset()                                          # a fresh instance
    inst.init()
    assert inst.get("tool0.f_ext[4]")[0] == 0.0
    inst.fmu.doStep(0.0, H)
    inst.close()


def test_setfmustate_recovers_from_rejected_input(arm_fmu):
    inst = Instance(arm_fmu).init()
    inst.fmu.doStep(0.0, H)
    good = inst.fmu.getFMUstate()
    refused_call(inst, lambda: inst.fmu.setReal(inst.refs("tau")[:1], [math.nan]))
    assert discards(inst, H)
    inst.fmu.setFMUstate(good)
    inst.fmu.doStep(H, H)                                     # works again
    inst.fmu.freeFMUstate(good)
    inst.close()


def test_bad_parameters_are_rejected(arm_fmu):
    inst = Instance(arm_fmu)
    inst.fmu.setupExperiment(startTime=0.0)
    refused_call(inst, lambda: inst.fmu.setString([inst.vr["integrator"]], ["leapfrog"]))
    assert "integrator 'leapfrog' is not one of rk4, euler, dop853" in errors(inst)[-1]
    refused_call(inst, lambda: inst.fmu.setReal([inst.vr["max_step"]], [-1.0]))
    assert "max_step must be > 0" in errors(inst)[-1]
    inst.fmu.enterInitializationMode()
    inst.fmu.exitInitializationMode()
    assert discards(inst, 0.0)
    inst.fmu.setString([inst.vr["integrator"]], ["euler"])    # corrected → usable
    inst.fmu.setReal([inst.vr["max_step"]], [1e-3])
    inst.fmu.doStep(0.0, H)
    # a fixed parameter cannot change after initialization
    refused_call(inst, lambda: inst.fmu.setReal([inst.vr["q0[1]"]], [1.0]))
    assert "q0[1]" in errors(inst)[-1] and "fixed parameter" in errors(inst)[-1]
    assert inst.get("q0[1]")[0] == 0.0
    inst.fmu.doStep(H, H)                    # nothing was applied: the instance stays usable
    refused_call(inst, lambda: inst.fmu.setReal([inst.vr["q0[1]"]], [0.0]))   # even the same value
    inst.fmu.doStep(2 * H, H)
    inst.close()


def test_invalid_value_references_do_not_crash(arm_fmu):
    inst = Instance(arm_fmu).init()
    n = len(inst.md.modelVariables)
    if inst.native:                                           # fmi2Error, named
        assert status_of(lambda: inst.fmu.getReal([10_000])) == fmi2Error
        assert status_of(lambda: inst.fmu.getBoolean([0])) == fmi2Error   # a Real reference
        assert status_of(lambda: inst.fmu.getInteger([n + 5])) == fmi2Error
    else:                                                     # NaN / defaults, logged
        assert math.isnan(inst.fmu.getReal([10_000])[0])
        assert inst.fmu.getBoolean([0]) == [0]
        assert inst.fmu.getInteger([n + 5]) == [0]
    assert any("10000" in m for m in errors(inst))
    refused_call(inst, lambda: inst.fmu.setReal([inst.vr["q[1]"]], [1.0]))      # an output
    assert "q[1] is an output" in errors(inst)[-1]
    inst.close()


def test_diverging_step_is_discarded_state_unchanged(arm_fmu):
    inst = Instance(arm_fmu).init()
    inst.fmu.doStep(0.0, H)
    q, qd = inst.get("q"), inst.get("qd")
    inst.fmu.setReal(inst.refs("tau"), [1e300] * 7)           # finite, but the state overflows
    assert discards(inst, H, 0.5)
    assert any("failed (state unchanged)" in m for m in errors(inst) +
               [m for _, _, m in inst.messages])
    assert not any("Traceback" in m for _, _, m in inst.messages)   # the message says it all
    np.testing.assert_array_equal(inst.get("q"), q)
    np.testing.assert_array_equal(inst.get("qd"), qd)
    inst.fmu.setReal(inst.refs("tau"), [0.0] * 7)
    inst.fmu.doStep(H, H)                                     # and it continues
    assert np.all(np.isfinite(inst.get("q")))
    inst.close()


@pytest.mark.parametrize("h", [0.0, -1e-3, math.nan])
def test_bad_step_size(arm_fmu, h):
    inst = Instance(arm_fmu).init()
    assert discards(inst, 0.0, h)
    inst.fmu.doStep(0.0, H)
    inst.close()


def test_step_before_initialization_and_after_terminate(arm_fmu):
    inst = Instance(arm_fmu)
    wrong_state = fmi2Error if inst.native else fmi2Discard
    assert status_of(lambda: inst.fmu.doStep(0.0, H)) == wrong_state
    assert "fmi2DoStep called in instantiated mode" in errors(inst)[-1]
    inst.init()
    inst.fmu.doStep(0.0, H)
    inst.fmu.terminate()
    assert status_of(lambda: inst.fmu.doStep(H, H)) == wrong_state
    inst.close(terminate=False)


def refused_state(inst: Instance, blob: bytes) -> None:
    """A foreign buffer: the native FMU refuses it at fmi2DeSerializeFMUstate (fmi2Error); the
    python flavour can only refuse it at fmi2SetFMUstate (logged).  Either way the instance is
    unchanged and usable (not blocked)."""
    if inst.native:
        assert status_of(lambda: inst.fmu.deSerializeFMUstate(blob)) == fmi2Error
    else:
        state = inst.fmu.deSerializeFMUstate(blob)
        refused_call(inst, lambda: inst.fmu.setFMUstate(state))
        inst.fmu.freeFMUstate(state)
    assert "unusable state" in errors(inst)[-1] and "the instance is unchanged" in errors(inst)[-1]


def test_garbage_serialized_state(arm_fmu):
    inst = Instance(arm_fmu).init()
    inst.fmu.doStep(0.0, H)
    q = inst.get("q")
    refused_state(inst, b"\x00 not a state")
    np.testing.assert_array_equal(inst.get("q"), q)           # unchanged
    inst.fmu.doStep(H, H)                                     # and usable
    inst.close()


def test_state_of_another_fmu_is_refused(arm_fmu, spacecraft_fmu):
    a = Instance(arm_fmu, "a").init()
    s = Instance(spacecraft_fmu, "s").init()
    blob = bytes(s.fmu.serializeFMUstate(s.fmu.getFMUstate()))
    refused_state(a, blob)
    if a.native == s.native:                # (a state of the other flavour is not even readable)
        assert "different FMU" in errors(a)[-1]
    a.fmu.doStep(0.0, H)
    a.close()
    s.close()


def test_non_unit_quaternion_start_value(spacecraft_fmu):
    model = load_model(example("spacecraft_rigid.toml"))
    joint, i = model.quaternion_slices()[0]
    inst = Instance(spacecraft_fmu)
    assert status_of(lambda: inst.init({f"q0[{i + 1}]": 0.5})) == inst.rejected   # ‖q‖ = 0.5
    assert f"quaternion of joint {joint!r}" in errors(inst)[-1]
    assert discards(inst, 0.0)
    inst.close()


def test_fatal_paths_do_not_crash_the_host(arm_fmu):
    """A child process hammers one instance with bad calls and frees it; it must exit normally."""
    code = f"""
import math, sys
sys.path.insert(0, {str(example('x').parents[2] / 'tests')!r})
from fmu_fixtures import Instance
inst = Instance({str(arm_fmu)!r}).init()
def attempt(call, *args):
    try:
        call(*args)
    except Exception:
        pass
for k in range(50):
    attempt(inst.fmu.setReal, [10**6], [1.0])
    attempt(inst.fmu.getReal, [10**6, 0])
    attempt(inst.fmu.setReal, inst.refs('tau'), [math.nan] * 7)
    attempt(inst.fmu.doStep, 0.0, 1e-3)
    try:                                  # (native: refused already here, fmi2Error)
        state = inst.fmu.deSerializeFMUstate(bytes(range(256)) * k)
    except Exception:
        state = None
    if state is not None:
        attempt(inst.fmu.setFMUstate, state)
        inst.fmu.freeFMUstate(state)
    inst.fmu.reset(); inst.init()
inst.close()
print('alive')
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=subprocess_env(), timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().endswith("alive")


@pytest.mark.parametrize("start", [{"tau[1]": math.nan}, {"tau[1]": 1e300}])
def test_simulate_fmu_fails_instead_of_truncating(start):
    """Native: a bad start value (fmi2Error from the setter) or a step that fails (fmi2Discard and no
    'terminated' status) makes fmpy.simulate_fmu raise — never a result cut short at t = 0."""
    from soa_fmu.fmpy_logging import simulate_fmu
    from fmu_fixtures import build
    from fmpy.fmi1 import FMICallException
    with pytest.raises(FMICallException) as e:
        simulate_fmu(str(build("arm7.urdf", name="Arm7", runtime="native")), stop_time=0.01,
                     step_size=H, start_values=start)
    assert e.value.status in (2, 3)             # fmi2Discard (the failed step) or fmi2Error (the setter)
