"""The plant + controller SSP archive (soa-build-ssp, docs/systems.md): valid SSP 1.0, its FMUs
valid, no algebraic loop, and the same closed loop in three real tools — fmpy's SSP simulation,
OMSimulator and libcosim — and in Python: pairwise and against Python within 1e-6 over 4 s at
1 ms; the arm follows its quintic move."""
from __future__ import annotations

import io
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
from fmpy.validation import validate_fmu
from lxml import etree

import build_ssp
import omsimulator_host as oms
import soa_fmu as sf
import ssp_hosts as H
from fmu_fixtures import REPO, example
from model_descriptions import generator_ssp

AGREE = 1e-6          # the bar, rad
N = 7


@pytest.fixture(scope="module")
def ssp(tmp_path_factory) -> Path:
    return build_ssp.build(example("arm7.urdf"), tmp_path_factory.mktemp("ssp") / "System.ssp")


@pytest.fixture(scope="module")
def model():
    return sf.load_model(example("arm7.urdf"))


@pytest.fixture(scope="module")
def python_run(model, ssp):
    return H.python_loop(model, ssp)


def ssd_of(ssp: Path) -> etree._Element:
    with zipfile.ZipFile(ssp) as z:
        return etree.fromstring(z.read("SystemStructure.ssd"))


def test_archive_is_valid_ssp_and_wires_the_loop(ssp):
    """Every XML document passes the SSP 1.0 XSD (and a broken one does not); the components,
    connections and default experiment are those of the loop; both FMUs pass fmpy's validation."""
    with zipfile.ZipFile(ssp) as z:
        names = z.namelist()
        assert names[0] == "SystemStructure.ssd"
        assert generator_ssp.validate(z.read("SystemStructure.ssd"), "ssd") == []
        for c in ("plant", "controller"):
            assert generator_ssp.validate(z.read(f"resources/{c}.ssv"), "ssv") == []
            fmu = Path(z.extract(f"resources/{c}.fmu", ssp.parent / "x"))
            assert validate_fmu(str(fmu)) == []
    root = ssd_of(ssp)
    broken = etree.fromstring(etree.tostring(root))
    broken.find("{*}System/{*}Connections/{*}Connection").attrib.pop("endConnector")
    assert generator_ssp.validate(etree.tostring(broken), "ssd")
    comps = {c.get("name"): c.get("source")
             for c in root.iterfind("{*}System/{*}Elements/{*}Component")}
    assert comps == {"plant": "resources/plant.fmu", "controller": "resources/controller.fmu"}
    links = {(c.get("startElement"), c.get("startConnector"), c.get("endElement"),
              c.get("endConnector"))
             for c in root.iterfind("{*}System/{*}Connections/{*}Connection")}
    want = {("plant", f"{g}[{i}]", "controller", f"{g}[{i}]") for g in ("q", "qd")
            for i in range(1, N + 1)} | {("controller", f"tau[{i}]", "plant", f"tau[{i}]")
                                         for i in range(1, N + 1)}
    assert links == want
    assert float(root.find("{*}DefaultExperiment").get("stopTime")) == 4.0
    params = H.parameters(ssp, "controller")
    assert params["sampled"] is True and params["trajectory"] is True
    assert params["Kp[3]"] == build_ssp.DEFAULT_KP and params["Kd[3]"] == build_ssp.DEFAULT_KD
    assert H.parameters(ssp, "plant")["damping[1]"] == params["damping[1]"] > 0


def test_no_algebraic_loop(ssp):
    """The plant's q and qd depend on no input (its tau acts through the state), the controller's
    tau on q and qd: the loop's only direct feedthrough is the controller's."""
    def outputs(component):
        with zipfile.ZipFile(ssp) as z, zipfile.ZipFile(io.BytesIO(
                z.read(f"resources/{component}.fmu"))) as f:
            root = etree.fromstring(f.read("modelDescription.xml"))
        names = [v.get("name") for v in root.iter("ScalarVariable")]
        return {names[int(u.get("index")) - 1]: u.get("dependencies")
                for u in root.find("ModelStructure/Outputs")}, names
    plant, pnames = outputs("plant")
    controller, names = outputs("controller")
    for i in range(1, N + 1):
        for g in ("q", "qd"):       # (Model Exchange: itself, a state; never an input)
            assert {pnames[int(k) - 1] for k in plant[f"{g}[{i}]"].split()} == {f"{g}[{i}]"}
        deps = {names[int(k) - 1] for k in controller[f"tau[{i}]"].split()}
        assert {f"q[{i}]", f"qd[{i}]"} <= deps


def check_agrees(t, q, python_run, what):
    tp, qp, _ = python_run
    np.testing.assert_allclose(t, tp, rtol=0, atol=1e-12, err_msg=f"{what}: communication points")
    err = np.abs(q - qp).max()
    assert err <= AGREE, f"{what} vs Python: {err:.3g}"
    return q


def test_the_arm_follows_its_trajectory(ssp, python_run):
    """The Python loop (the reference of the tools below) tracks the quintic move: the figures of
    docs/systems.md (worst dof: the wrist, 2.4e-4 kg m2 with 0.05 N.m Coulomb friction)."""
    t, q, integrator = python_run
    e = np.abs(q - H.reference_of(ssp, t, N))
    assert integrator == "rk4w"                      # (auto: the friction is stiff at 1 ms)
    assert e.max() < 1e-3                            # (0.38 mrad)
    goal = np.array([H.parameters(ssp, "controller")[f"q_to[{i + 1}]"] for i in range(N)])
    assert np.abs(q[-1] - goal).max() < 5e-4 and np.abs(goal).min() >= 0.4


@pytest.fixture(scope="module")
def fmpy_run(ssp):
    return H.run_fmpy(ssp, N)


def test_fmpy_runs_the_ssp(fmpy_run, python_run):
    check_agrees(*fmpy_run, python_run, "fmpy")


@pytest.fixture(scope="module")
def oms_run(ssp):
    missing = oms.unavailable()
    if missing:
        pytest.skip(missing)
    return H.run_omsimulator(ssp, N)


@pytest.fixture(scope="module")
def libcosim_run(ssp):
    pytest.importorskip("libcosimpy")
    return H.run_libcosim(ssp, N)


def test_libcosim_runs_the_ssp(libcosim_run, python_run, fmpy_run):
    t, q, end = libcosim_run
    assert end == pytest.approx(4.0, abs=1e-9)
    check_agrees(t, q, python_run, "libcosim")
    assert np.abs(q - fmpy_run[1]).max() <= AGREE


def test_omsimulator_runs_the_ssp(oms_run, python_run, fmpy_run, libcosim_run):
    t, q, errors = oms_run
    assert errors == []
    check_agrees(t, q, python_run, "OMSimulator")
    assert np.abs(q - fmpy_run[1]).max() <= AGREE
    assert np.abs(q - libcosim_run[1]).max() <= AGREE


def _binaries(ssp: Path, component: str) -> set[str]:
    """The platform folders under binaries/ of one component FMU inside the archive."""
    with zipfile.ZipFile(ssp) as z, zipfile.ZipFile(io.BytesIO(z.read(f"resources/{component}.fmu"))) as f:
        return {n.split("/")[1] for n in f.namelist() if n.startswith("binaries/") and n.count("/") > 1}


def test_platforms_reach_both_fmus(ssp, tmp_path):
    """Both FMUs carry every platform by default; --platforms host gives the host's alone."""
    every = {"linux64", "aarch64-linux", "win64", "darwin64"}
    assert _binaries(ssp, "plant") == _binaries(ssp, "controller") == every
    out = tmp_path / "Host.ssp"
    r = subprocess.run([sys.executable, str(REPO / "build_ssp.py"), str(example("arm7.urdf")),
                        "--platforms", "host", "-o", str(out)], capture_output=True, text=True,
                       cwd=REPO)
    assert r.returncode == 0, r.stderr
    assert _binaries(out, "plant") == _binaries(out, "controller") == {"linux64"}


@pytest.mark.parametrize("args,words", [
    (["arm7.urdf", "--platforms", "amiga"], "amiga"),
    (["spacecraft_rigid.toml"], "quaternion"),
    (["arm7.urdf", "--goal", "1,2"], "7 finite numbers"),
    (["arm7.urdf", "--step", "0"], "--step must be a positive"),
    (["nope.urdf"], "no such model file"),
])
def test_cli_errors_are_one_line(tmp_path, args, words):
    argv = [str(example(args[0])), *args[1:], "-o", str(tmp_path / "S.ssp")]
    r = subprocess.run([sys.executable, str(REPO / "build_ssp.py"), *argv], capture_output=True,
                       text=True, cwd=REPO)
    assert r.returncode == 1, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and words in r.stderr, r.stderr
