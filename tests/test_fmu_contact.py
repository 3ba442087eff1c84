"""Contact through the FMUs (both flavours, FMI 2.0 / 3.0, CS and ME): the outputs
<sphere>.force / .depth follow the engine, the tunable constants act and are checked with the
variable named, Model Exchange locates touch-down through the event indicators, and directional
derivatives are declared unavailable."""
from __future__ import annotations

import math
import zipfile
from pathlib import Path

import fmpy
import numpy as np
import pytest

import soa_fmu as sf
from fmu_fixtures import RUNTIMES, Instance, build, example, status_of
from soa_fmu.fmpy_logging import simulate_fmu

H = 1e-3
BALL = "bouncing_ball.toml"


@pytest.fixture(scope="module", params=RUNTIMES)
def ball_fmu(request):
    return build(BALL, runtime=request.param)


def engine_run(model, n, h=H, **law):
    """The Simulator's run of the example ball (the reference of the FMUs)."""
    model.contact_law = law
    sim = sf.Simulator(model)
    out = []
    for _ in range(n):
        sim.step(h)
        c = sf.contact_forces(model, sim.q, sim.qd)
        out.append((sim.q.copy(), c.sphere_force[0].copy(), c.sphere_depth[0]))
    return out


def test_cosimulation_follows_the_engine(ball_fmu):
    """The FMU's steps are the Simulator's: q, force and depth agree to round-off, through the
    bounce (the ball touches the floor at t ≈ 0.29 s)."""
    model = sf.load_model(example(BALL))
    ref = engine_run(model, 500, dissipation=0.8)
    inst = Instance(ball_fmu).init({"contact.dissipation": 0.8})
    touched = False
    for i in range(500):
        inst.fmu.doStep(i * H, H)
        q, f, depth = ref[i]
        np.testing.assert_allclose(inst.get("q"), q, rtol=0, atol=1e-12)
        np.testing.assert_allclose(inst.get("ball_s.force"), f, rtol=1e-9, atol=1e-9)
        assert inst.get("ball_s.depth")[0] == pytest.approx(depth, rel=1e-9, abs=1e-15)
        touched |= depth > 0
    assert touched
    inst.close()


def test_bad_contact_constants_are_refused_by_name(ball_fmu):
    inst = Instance(ball_fmu).init()
    inst.fmu.doStep(0.0, H)
    assert status_of(lambda: inst.set("contact.stiffness", -5.0)) == inst.rejected
    assert "contact.stiffness must be ≥ 0" in inst.log_text()
    assert status_of(lambda: inst.set("contact.exponent", 0.0)) == inst.rejected
    assert "contact.exponent must be > 0" in inst.log_text()
    from fmpy.fmi1 import FMICallException
    with pytest.raises(FMICallException):              # steps refused until it is corrected
        inst.fmu.doStep(H, H)
    inst.set("contact.stiffness", 2e5)
    inst.set("contact.exponent", 1.0)
    inst.fmu.doStep(H, H)
    inst.close()


def test_plane_offset_is_tunable(ball_fmu):
    """Raising the floor to z = 0.45 between steps: the ball (centre at 0.5, r = 0.1) is in
    contact at once with δ = 0.05 − the fall since."""
    inst = Instance(ball_fmu).init()
    inst.fmu.doStep(0.0, H)
    assert inst.get("ball_s.depth")[0] == 0.0
    inst.set("floor.offset", 0.45)
    inst.fmu.doStep(H, H)
    z = inst.get("q[7]")[0]
    assert inst.get("ball_s.depth")[0] == pytest.approx(0.1 - (z - 0.45), rel=1e-12)
    assert inst.get("ball_s.force[3]")[0] > 0
    inst.close()


@pytest.mark.parametrize("fmi", [2, 3])
def test_model_exchange_event_indicators(fmi):
    """CVode through the event indicators: the ME run matches the CS run (the bounce included),
    and the description declares one indicator per pair and no directional derivatives."""
    fmu = build(BALL, fmi=fmi, interface="both")
    md = fmpy.read_model_description(str(fmu))
    assert md.numberOfEventIndicators == 1
    assert not md.modelExchange.providesDirectionalDerivative
    assert not md.coSimulation.providesDirectionalDerivative
    opts = dict(stop_time=0.6, output_interval=1e-3, start_values={"contact.dissipation": 0.8})
    out = ["q", "ball_s.force", "ball_s.depth"] if fmi == 3 else ["q[7]", "ball_s.force[3]"]
    me = simulate_fmu(str(fmu), fmi_type="ModelExchange", relative_tolerance=1e-8,
                      output=out, **opts)
    opts["start_values"] = dict(opts["start_values"], integrator="rk4")    # (auto: rk4w)
    cs = simulate_fmu(str(fmu), fmi_type="CoSimulation", output=out, step_size=1e-4, **opts)
    z = (lambda r: r["q"][:, 6]) if fmi == 3 else (lambda r: r["q[7]"])
    f = (lambda r: r["ball_s.force"][:, 2]) if fmi == 3 else (lambda r: r["ball_s.force[3]"])
    assert f(cs).max() > 100                               # it bounced
    assert len(me) > len(cs)             # CVode stopped at the located events (extra rows)
    np.testing.assert_allclose(np.interp(cs["time"], me["time"], z(me)), z(cs), atol=2e-4)
    assert abs(f(me).max() - f(cs).max()) < 0.02 * f(cs).max()
    if fmi == 2:
        with zipfile.ZipFile(fmu) as zf:
            xml = zf.read("modelDescription.xml").decode()
        assert 'numberOfEventIndicators="1"' in xml


def test_directional_derivatives_refused_with_contact():
    """A native contact FMU refuses fmi2GetDirectionalDerivative (declared false) rather than
    answer without the contact forces."""
    inst = Instance(build(BALL)).init()
    from fmpy.fmi1 import FMICallException
    with pytest.raises(FMICallException):
        inst.fmu.getDirectionalDerivative(inst.refs("qdd"), inst.refs("tau"), [1.0] * 6)
    assert "no directional derivatives" in inst.log_text()
    inst.close()


def test_solo12_stands_in_fmpy(tmp_path):
    """solo12 (examples/quadruped_contact.py) as a native FMU in fmpy, h = 1 ms, integrator
    the default (auto: rk4w with contact), PD posture control, feet touching at t = 0: 10 s without a
    discarded step; over the last second the feet carry the weight (≤ 1 %), and once landed
    no foot sinks 2 mm."""
    import sys
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
    import quadruped_contact as qc
    urdf = qc.solo12_urdf()
    if urdf is None:
        pytest.skip("example-robot-data is not installed")
    path = qc.write_model(tmp_path, urdf)
    model = sf.load_model(path)
    fmu = build(path, name="Solo12", strict=False)
    res = qc.run(fmu, qc.start_height(model, 0.0), 10.0)
    last = res["t"] >= 9.0
    weight = model.total_mass * 9.81
    total = res["force"][last].sum(axis=1)
    assert np.abs(total - weight).max() <= 0.01 * weight
    assert res["depth"][res["t"] >= 1.0].max() < 2e-3        # (the first landing: 2.1 mm)
    assert res["depth"][last].min() > 1e-3                 # all four feet carry it


def test_read_acceleration_changes_no_step():
    """Reading q̈ after an implicit step evaluates the tree with contact at the new state, and the
    next step from there takes those contact forces as they are (fmu_step.c, hold_contact): the
    run is the same to the bit as one that never reads q̈ — also when a contact constant changes
    between the read and the next step (the held forces are the old law's)."""
    fmu = build(BALL, runtime="native")
    runs, depths = [], []
    for read in (False, True):
        inst = Instance(fmu)
        inst.set("integrator", "implicit")
        inst.init({"contact.dissipation": 0.8})
        qs = []
        for i in range(320):
            if i == 300:
                if read:                            # (an output read at the state, as q̈'s)
                    depths.append(inst.get("ball_s.depth")[0])
                inst.set("contact.stiffness", 5e4)
            inst.fmu.doStep(i * H, H)
            if read:
                assert np.all(np.isfinite(inst.get("qdd")))
            qs.append(np.concatenate([inst.get("q"), inst.get("qd")]))
        runs.append(np.array(qs))
        inst.close()
    assert min(depths) > 0                          # the constant changes while in contact
    np.testing.assert_array_equal(runs[0], runs[1])
