"""Issue 18 / 17.5 through the FMI interface: every doStep bounded (a floor on max_step, a cap on
sub-steps, refused at once), honest discards (fmi2Terminated is false, the last successful time
is the state's; fmpy stops with the FMU's own message), and FMU states bound to their model
(refused at fmi2DeSerializeFMUstate with fmi2Error and a message, the instance unchanged and
usable)."""
from __future__ import annotations

import struct

import numpy as np
import pytest
from fmpy.fmi1 import FMICallException
from fmpy.fmi2 import fmi2Discard, fmi2Error, fmi2LastSuccessfulTime, fmi2Terminated

from fmu_fixtures import Instance, arm_fmu, build, example, status_of  # noqa: F401

H = 1e-3


def last(inst: Instance, status: int | None = None) -> str:
    msgs = [m for s, _, m in inst.messages if status is None or s == status]
    return msgs[-1] if msgs else ""


# ---------------------------------------------------------------- bounded steps
def test_max_step_floor_and_substep_cap(arm_fmu):
    """max_step = 1e-300 is refused by name (not applied); max_step = 1e-9 with h = 1e5 s (1e14
    sub-steps) is refused at once with Discard naming h, max_step and the count; the state is
    unchanged and the instance steps on once max_step is sane."""
    inst = Instance(arm_fmu).init()
    vr = inst.vr["max_step"]
    assert status_of(lambda: inst.fmu.setReal([vr], [1e-300])) == inst.rejected
    assert "max_step must be ≥ 1e-09 s" in last(inst) and "1e-300" in last(inst)
    assert inst.fmu.getReal([vr]) == [1e-3]                      # not applied
    inst.fmu.setReal([vr], [1e-9])                               # the floor itself: accepted
    q = inst.get("q")
    assert status_of(lambda: inst.fmu.doStep(0.0, 1e5)) == fmi2Discard
    msg = last(inst, fmi2Discard)
    assert "h / max_step = 100000" in msg and "1e+14 sub-steps" in msg and "100000" in msg
    np.testing.assert_array_equal(inst.get("q"), q)
    inst.fmu.setReal([vr], [1e-3])
    inst.fmu.doStep(0.0, H)
    assert inst.get("q").shape == q.shape and np.all(np.isfinite(inst.get("q")))
    inst.close()


# ---------------------------------------------------------------- honest discards
def diverging_start() -> dict:
    """Explicit Euler at h = 1 ms with a damping of 1000 N·m·s/rad on the arm's light links."""
    start = {f"damping[{i}]": 1e3 for i in range(1, 8)}
    start.update({"integrator": "euler", "qd0[5]": 0.1})
    return start


def test_terminated_status_after_a_discarded_step():
    """FMI 2.0 sec. 4.2.3: after a Discard, fmi2Terminated answers fmi2OK with fmi2False and
    fmi2LastSuccessfulTime the time the state is at; the same step asked again unchanged is an
    Error naming the first failure (a master that retries it would loop for ever)."""
    inst = Instance(build("arm7.urdf", name="Arm7")).init(diverging_start())
    start = inst.fmu.getFMUstate()
    t = 0.0
    while status_of(lambda: inst.fmu.doStep(t, H)) == 0:
        t += H
        assert t < 1.0
    msg = last(inst, fmi2Discard)
    assert "the step diverged: " in msg and "reached" in msg and "singular" not in msg
    assert "integrator" in msg and "max_step" in msg
    assert inst.fmu.getBooleanStatus(fmi2Terminated) is False or \
        inst.fmu.getBooleanStatus(fmi2Terminated) == 0
    assert inst.fmu.getRealStatus(fmi2LastSuccessfulTime) == pytest.approx(t, abs=1e-12)
    assert status_of(lambda: inst.fmu.doStep(t, H)) == fmi2Error
    assert "asked again with nothing changed" in last(inst, fmi2Error)
    inst.fmu.setFMUstate(start)                                  # back to t = 0, and change
    inst.fmu.setString([inst.vr["integrator"]], ["dop853"])      # what the message says
    for k in range(3):
        inst.fmu.doStep(k * H, H)
    assert np.all(np.isfinite(inst.get("q")))
    inst.fmu.freeFMUstate(start)
    inst.close()


def test_fmpy_stops_with_the_fmus_own_message():
    from soa_fmu.fmpy_logging import simulate_fmu
    messages = []

    def logger(component, instance, status, category, message):
        messages.append((status, message.decode()))
    with pytest.raises(FMICallException) as e:
        simulate_fmu(str(build("arm7.urdf", name="Arm7")), stop_time=0.1, step_size=H,
                     start_values=diverging_start(), logger=logger)
    assert "fmi2DoStep" in str(e.value)                  # not fmi2GetBooleanStatus
    assert any(s == fmi2Discard and "the step diverged: " in m for s, m in messages)


# ---------------------------------------------------------------- states bound to their model
@pytest.fixture(scope="module")
def moved_fmu(tmp_path_factory):
    """The double pendulum with its elbow moved by 1 mm: the same variable table (no joint limits,
    so no stop defaults derived from the geometry), another model."""
    from soa_fmu.fmu.variables import build_table
    from soa_fmu.io import load_model
    text = example("double_pendulum.toml").read_text()
    old = "xyz = [0.0, 0.0, -1.0] }"
    assert text.count(old) == 1
    path = tmp_path_factory.mktemp("moved") / "double_pendulum.toml"
    path.write_text(text.replace(old, "xyz = [0.0, 0.0, -1.001] }"))
    assert build_table(load_model(path), states=True).digest() == \
        build_table(load_model(example("double_pendulum.toml")), states=True).digest()
    return build(path)


def pendulum_state(steps: int = 3) -> tuple[bytes, Instance]:
    a = Instance(build("double_pendulum.toml"), "a").init()
    for k in range(steps):
        a.fmu.doStep(k * H, H)
    return bytes(a.fmu.serializeFMUstate(a.fmu.getFMUstate())), a


def arm_state(t_steps: int = 3) -> tuple[bytes, Instance]:
    a = Instance(build("arm7.urdf", name="Arm7"), "a").init()
    for k in range(t_steps):
        a.fmu.doStep(k * H, H)
    return bytes(a.fmu.serializeFMUstate(a.fmu.getFMUstate())), a


def refused_at_deserialize(inst: Instance, blob: bytes, why: str) -> None:
    q, t = inst.get("q"), inst.fmu.getRealStatus(fmi2LastSuccessfulTime)
    with pytest.raises(FMICallException) as e:
        inst.fmu.deSerializeFMUstate(blob)
    assert e.value.status == fmi2Error
    msg = last(inst, fmi2Error)
    assert "fmi2DeSerializeFMUstate was given an unusable state" in msg and why in msg, msg
    assert "the instance is unchanged" in msg
    np.testing.assert_array_equal(inst.get("q"), q)
    assert inst.fmu.getRealStatus(fmi2LastSuccessfulTime) == t


def test_state_of_another_model_is_refused_and_the_instance_steps_on(moved_fmu):
    blob, a = pendulum_state()
    b = Instance(moved_fmu, "b").init()
    b.fmu.doStep(0.0, H)
    refused_at_deserialize(b, blob, "different model")
    b.fmu.doStep(H, H)                                           # usable: not blocked
    b.fmu.doStep(2 * H, H)
    assert b.fmu.getRealStatus(fmi2LastSuccessfulTime) == pytest.approx(3 * H)
    # and the same model's state still restores, bit for bit
    q = a.get("q")
    a.fmu.doStep(3 * H, H)
    a.fmu.setFMUstate(a.fmu.deSerializeFMUstate(blob))
    np.testing.assert_array_equal(a.get("q"), q)
    a.close()
    b.close()


def test_damaged_states_are_refused_at_deserialization():
    blob, a = arm_state()
    cases = {"truncated": (blob[:-1], "truncated or padded"),
             "padded": (blob + b"\0", "truncated or padded"),
             "version": (blob[:8] + struct.pack("<I", 2) + blob[12:], "another state format version"),
             "magic": (b"X" + blob[1:], "not a soa_fmu FMU state")}
    rng = np.random.default_rng(0)
    for bit in rng.choice(8 * len(blob), 64, replace=False):     # single-bit flips anywhere
        flipped = bytearray(blob)
        flipped[bit // 8] ^= 1 << (bit % 8)
        cases[f"bit {bit}"] = (bytes(flipped), "")
    for name, (data, why) in cases.items():
        refused_at_deserialize(a, data, why)
    a.fmu.doStep(3 * H, H)                                       # still usable
    a.close()


def test_model_exchange_and_co_simulation_states_do_not_mix():
    from fmpy import extract, read_model_description
    from fmpy.fmi2 import FMU2Model
    from fmu_fixtures import _callbacks
    path = build("arm7.urdf", name="Arm7")
    blob, a = arm_state()
    md = read_model_description(str(path))
    messages = []
    me = FMU2Model(guid=md.guid, unzipDirectory=extract(str(path)),
                   modelIdentifier=md.modelExchange.modelIdentifier, instanceName="me")
    me.instantiate(callbacks=_callbacks(messages))
    me.setupExperiment(startTime=0.0)
    me.enterInitializationMode()
    me.exitInitializationMode()
    with pytest.raises(FMICallException) as e:
        me.deSerializeFMUstate(blob)
    assert e.value.status == fmi2Error
    assert "state of a Co-Simulation instance" in messages[-1][2]
    me_blob = bytes(me.serializeFMUstate(me.getFMUstate()))
    refused_at_deserialize(a, me_blob, "state of a Model Exchange instance")
    me.terminate()
    me.freeInstance()
    a.close()


def test_fmi3_refuses_another_models_state_and_accepts_fmi2s(moved_fmu):
    """FMI 3.0 shares the byte format and the checks: a state of the moved pendulum (FMI 2.0) is
    refused at fmi3DeserializeFMUState; the FMI 2.0 state of the same model is accepted and
    repeats the steps bit for bit."""
    from fmpy import extract, read_model_description
    from fmpy.fmi3 import FMU3Slave
    f3 = build("double_pendulum.toml", fmi=3)
    md3 = read_model_description(str(f3))
    vr3 = {v.name: v.valueReference for v in md3.modelVariables}
    messages = []
    s3 = FMU3Slave(guid=md3.guid, unzipDirectory=extract(str(f3)),
                   modelIdentifier=md3.coSimulation.modelIdentifier, instanceName="s3")
    s3.instantiate(logMessage=lambda env, status, cat, msg: messages.append(msg.decode()))
    s3.enterInitializationMode(startTime=0.0)
    s3.exitInitializationMode()
    b = Instance(moved_fmu, "b").init({"qd0[2]": 1.0})
    foreign = bytes(b.fmu.serializeFMUstate(b.fmu.getFMUstate()))
    with pytest.raises(FMICallException) as e:
        s3.deserializeFMUState(foreign)
    assert e.value.status == 3 and "different model" in messages[-1]
    s3.doStep(0.0, H)                                            # usable
    a = Instance(build("double_pendulum.toml"), "a").init({"qd0[2]": 1.0})
    a.fmu.doStep(0.0, H)
    s3.setFMUState(s3.deserializeFMUState(bytes(a.fmu.serializeFMUstate(a.fmu.getFMUstate()))))
    a.fmu.doStep(H, H)
    s3.doStep(H, H)
    np.testing.assert_array_equal(s3.getFloat64([vr3["q"]], 2), a.get("q"))
    s3.terminate()
    s3.freeInstance()
    a.close()
    b.close()
