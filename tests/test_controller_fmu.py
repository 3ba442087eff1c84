"""The computed-torque controller FMU (``soa-build-fmu MODEL --controller``, docs/systems.md): its
tau against the engine's inverse dynamics (sf.inverse_dynamics) at random inputs, in FMI 2.0
Co-Simulation and Model Exchange and FMI 3.0; the quintic trajectory against its closed form; the
sampled mode's hold; ModelStructure (direct feedthrough); fmpy's validation; bad input."""
from __future__ import annotations

import subprocess
import sys
import zipfile

import numpy as np
import pytest
from fmpy import extract, read_model_description
from fmpy.fmi2 import FMU2Model, FMU2Slave
from fmpy.fmi3 import FMU3Slave
from fmpy.validation import validate_fmu
from lxml import etree

import soa_fmu as sf
from fmu_fixtures import REPO, build, example

ARM = "arm7.urdf"
TOL = 1e-12          # the bar: relative to max(1, |tau|)


@pytest.fixture(scope="module")
def model():
    return sf.load_model(example(ARM))


def computed_torque(model, x: dict, Kp, Kd, ff: bool = True) -> np.ndarray:
    """The reference: ID(q, qd, qdd_ref + Kp e + Kd e-dot) (+ d qd_ref + f_c tanh(qd_ref / v_s))."""
    a = x["qdd_ref"] + Kp * (x["q_ref"] - x["q"]) + Kd * (x["qd_ref"] - x["qd"])
    tau = sf.inverse_dynamics(model, x["q"], x["qd"], a)
    if ff:
        tau = tau + model.joint_damping * x["qd_ref"] + model.joint_friction * np.tanh(
            x["qd_ref"] / model.friction_velocity)
    return tau


class Controller:
    """An instance of a controller FMU through fmpy (FMI 2.0 CS / ME, FMI 3.0 CS)."""

    def __init__(self, path, kind: str = "cs", **start):
        md = read_model_description(str(path))
        self.fmi3 = md.fmiVersion.startswith("3")
        self.vr = {v.name: v.valueReference for v in md.modelVariables}
        self.n = sum(1 for v in md.modelVariables if v.name.startswith("tau[")) or \
            next(v for v in md.modelVariables if v.name == "tau").dimensions[0].start
        d = extract(str(path))
        iface = md.modelExchange if kind == "me" else md.coSimulation
        args = dict(guid=md.guid, unzipDirectory=d, modelIdentifier=iface.modelIdentifier,
                    instanceName="controller")
        self.kind = kind
        self.f = (FMU3Slave if self.fmi3 else FMU2Model if kind == "me" else FMU2Slave)(**args)
        self.f.instantiate()
        if self.fmi3:
            self.f.enterInitializationMode(startTime=0.0)
        else:
            self.f.setupExperiment(startTime=0.0)
            self.f.enterInitializationMode()
        for name, value in start.items():
            self.set(name, value)
        self.f.exitInitializationMode()
        if kind == "me":
            self.f.enterContinuousTimeMode()

    def refs(self, group):
        if self.fmi3:
            return [self.vr[group]]
        return [self.vr[f"{group}[{i + 1}]"] for i in range(self.n)] if f"{group}[1]" in self.vr \
            else [self.vr[group]]

    def set(self, group, value):
        if isinstance(value, bool):
            self.f.setBoolean([self.vr[group]], [value])
        elif self.fmi3:
            self.f.setFloat64(self.refs(group), list(np.atleast_1d(value).astype(float)))
        else:
            self.f.setReal(self.refs(group), list(np.atleast_1d(value).astype(float)))

    def get(self, group):
        if self.fmi3:
            return np.array(self.f.getFloat64(self.refs(group), nValues=self.n))
        return np.array(self.f.getReal(self.refs(group)))


def random_inputs(rng, n):
    return {g: rng.normal(size=n) for g in ("q", "qd", "q_ref", "qd_ref", "qdd_ref")}


@pytest.mark.parametrize("fmi,kind", [(2, "cs"), (2, "me"), (3, "cs")])
def test_tau_is_the_computed_torque_of_the_model(model, fmi, kind):
    c = Controller(build(ARM, controller=True, fmi=fmi), kind)
    rng = np.random.default_rng(7)
    worst = 0.0
    for trial in range(12):
        x = random_inputs(rng, model.nv)
        Kp, Kd = rng.uniform(10, 900, model.nv), rng.uniform(1, 60, model.nv)
        ff = trial % 3 != 2
        for g, v in x.items():
            c.set(g, v)
        c.set("Kp", Kp)
        c.set("Kd", Kd)
        c.set("ff_dissipation", ff)
        tau, ref = c.get("tau"), computed_torque(model, x, Kp, Kd, ff)
        worst = max(worst, np.max(np.abs(tau - ref)) / max(1.0, np.max(np.abs(ref))))
        assert np.array_equal(c.get("q_des"), x["q_ref"])
    assert worst <= TOL


def test_default_gains_and_dissipation_flag(model):
    """Kp, Kd start at 100, 20 and ff_dissipation at true; switching it off drops exactly the
    model's damping and friction."""
    c = Controller(build(ARM, controller=True))
    x = random_inputs(np.random.default_rng(3), model.nv)
    for g, v in x.items():
        c.set(g, v)
    on = c.get("tau")
    np.testing.assert_allclose(on, computed_torque(model, x, 100.0, 20.0), rtol=0, atol=1e-10)
    c.set("ff_dissipation", False)
    off = c.get("tau")
    np.testing.assert_allclose(on - off, model.joint_damping * x["qd_ref"] + model.joint_friction
                               * np.tanh(x["qd_ref"] / model.friction_velocity), rtol=0, atol=1e-10)


def quintic(t, t0, T, q0, q1):
    s = np.clip((t - t0) / T, 0.0, 1.0)
    p = 10 * s**3 - 15 * s**4 + 6 * s**5
    dp = (30 * s**2 - 60 * s**3 + 30 * s**4) / T
    ddp = (60 * s - 180 * s**2 + 120 * s**3) / T**2
    return q0 + (q1 - q0) * p, (q1 - q0) * dp, (q1 - q0) * ddp


def test_trajectory_is_the_quintic_move(model):
    """With trajectory = true the reference is the quintic rest-to-rest move: q_des and tau
    against the closed form at communication points before, inside and after the move."""
    n, rng = model.nv, np.random.default_rng(11)
    q0, q1 = rng.uniform(-1, 1, n), rng.uniform(-1, 1, n)
    c = Controller(build(ARM, controller=True), trajectory=True, q_from=q0, q_to=q1,
                   move_start=0.1, move_duration=0.5)
    x = random_inputs(rng, n)
    for g in ("q", "qd"):
        c.set(g, x[g])
    t, h = 0.0, 0.025
    while t < 0.8:
        qr, qdr, qddr = quintic(t, 0.1, 0.5, q0, q1)
        ref = computed_torque(model, {**x, "q_ref": qr, "qd_ref": qdr, "qdd_ref": qddr},
                              100.0, 20.0)
        np.testing.assert_allclose(c.get("q_des"), qr, rtol=0, atol=1e-14)
        np.testing.assert_allclose(c.get("tau"), ref, rtol=0, atol=TOL * max(1, np.abs(ref).max()))
        c.f.doStep(t, h)
        t += h
    np.testing.assert_array_equal(c.get("q_des"), q1)


def test_model_exchange_follows_the_time(model):
    n = model.nv
    c = Controller(build(ARM, controller=True), "me", trajectory=True, q_to=np.ones(n),
                   move_duration=2.0)
    assert c.f.fmi2GetDerivatives(c.f.component, None, 0) == 0        # no states: fmi2OK
    assert c.f.fmi2GetEventIndicators(c.f.component, None, 0) == 0
    assert c.f.fmi2GetContinuousStates(c.f.component, None, 0) == 0
    assert c.f.fmi2SetContinuousStates(c.f.component, None, 0) == 0
    with pytest.raises(Exception):                                     # one state: refused
        c.f.getDerivatives(1)
    c.f.setTime(0.7)
    np.testing.assert_allclose(c.get("q_des"), quintic(0.7, 0.0, 2.0, np.zeros(n), np.ones(n))[0],
                               rtol=0, atol=1e-15)


def test_sampled_holds_tau_over_each_step(model):
    """sampled = true: tau is 0 until the first doStep, then the computed torque of the inputs at
    the step's start, unchanged by later inputs until the next step."""
    n, rng = model.nv, np.random.default_rng(5)
    c = Controller(build(ARM, controller=True), sampled=True)
    x = random_inputs(rng, n)
    for g, v in x.items():
        c.set(g, v)
    assert np.array_equal(c.get("tau"), np.zeros(n))
    c.f.doStep(0.0, 1e-3)
    first = c.get("tau")
    np.testing.assert_allclose(first, computed_torque(model, x, 100.0, 20.0), rtol=0,
                               atol=TOL * np.abs(first).max())
    c.set("q", x["q"] + 0.3)                        # a new measurement: held until the next step
    assert np.array_equal(c.get("tau"), first)
    c.f.doStep(1e-3, 1e-3)
    assert not np.allclose(c.get("tau"), first)


def test_model_structure_and_fmpy_validation(model):
    """tau depends on every input (direct feedthrough), q_des on q_ref; no states, no event
    indicators; fmpy's validation passes (FMI 2.0 and 3.0)."""
    for fmi in (2, 3):
        path = build(ARM, controller=True, fmi=fmi)
        assert validate_fmu(str(path)) == []
    path = build(ARM, controller=True)
    with zipfile.ZipFile(path) as z:
        root = etree.fromstring(z.read("modelDescription.xml"))
    names = [sv.get("name") for sv in root.iter("ScalarVariable")]
    inputs = {str(i + 1) for i, sv in enumerate(root.iter("ScalarVariable"))
              if sv.get("causality") == "input"}
    assert len(inputs) == 5 * model.nv
    outs = {names[int(u.get("index")) - 1]: set(u.get("dependencies", "").split())
            for u in root.find("ModelStructure/Outputs")}
    assert sorted(outs) == sorted([f"tau[{i + 1}]" for i in range(model.nv)]
                                  + [f"q_des[{i + 1}]" for i in range(model.nv)])
    for i in range(model.nv):
        assert outs[f"tau[{i + 1}]"] == inputs
        assert outs[f"q_des[{i + 1}]"] == {str(names.index(f"q_ref[{i + 1}]") + 1)}
    assert root.find("ModelStructure/Derivatives") is None
    assert root.get("numberOfEventIndicators") is None


def test_bad_values_are_refused(model):
    c = Controller(build(ARM, controller=True))
    with pytest.raises(Exception):
        c.set("q", [np.nan] + [0.0] * (model.nv - 1))
    with pytest.raises(Exception):
        c.f.setReal([c.vr["move_duration"]], [0.0])
    with pytest.raises(Exception):
        c.f.setReal([c.vr["tau[1]"]], [1.0])
    assert np.all(np.isfinite(c.get("tau")))


@pytest.mark.parametrize("model_file,args,words", [
    ("spacecraft_rigid.toml", [], "quaternion"),
    ("four_bar.toml", [], "closure constraints"),
    ("arm7.urdf", ["--runtime", "python"], "native FMUs only"),
])
def test_cli_refuses_what_it_cannot_build(tmp_path, model_file, args, words):
    r = subprocess.run([sys.executable, str(REPO / "build_fmu.py"), str(example(model_file)),
                        "--controller", "-o", str(tmp_path / "c.fmu"), *args],
                       capture_output=True, text=True, cwd=REPO)
    assert r.returncode == 1, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and words in r.stderr, r.stderr


def test_mimic_couplings_are_refused():
    """A URDF <mimic> coupling makes a joint follow another: the tree's inverse dynamics is not
    the coupled model's, so the controller table refuses it, naming the joint."""
    from soa_fmu.fmu.variables import TableError, build_controller_table
    model = sf.load_model(example(ARM))
    build_controller_table(model)
    model.add_mimic("joint2", "joint1", 0.5)
    with pytest.raises(TableError, match="'joint2' mimics 'joint1'"):
        build_controller_table(model)
