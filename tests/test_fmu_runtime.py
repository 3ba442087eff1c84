"""What the FMU needs at run time, for both flavours: a fresh process from a fresh extraction without
this checkout (the native FMU: in a Python that cannot import soa_fmu at all), a non-Python host (C;
the native FMU as it is, the pythonfmu FMU with LD_PRELOAD=libpython), the native FMU's sources
compiled by the test and run, no sys.path growth per instance, and (slow) no memory growth over
10⁶ steps."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import numpy as np
import pytest

import soa_fmu as sf
from fmu_fixtures import REPO, Instance, arm_fmu, build, example, runtime_of  # noqa: F401
from soa_fmu.io import load_model

H = 1e-3
STEPS = 50
TAU = 0.5

CHILD = """
import json, sys, zipfile, tempfile
from fmpy import read_model_description
from fmpy.fmi2 import FMU2Slave
path = sys.argv[1]
md = read_model_description(path)
d = tempfile.mkdtemp(prefix="fresh_")
zipfile.ZipFile(path).extractall(d)
vr = {v.name: v.valueReference for v in md.modelVariables}
log = []
from fmpy.fmi2 import fmi2CallbackFunctions, fmi2CallbackLoggerTYPE
def logger(env, inst, status, cat, msg):
    log.append(msg.decode())
cb = fmi2CallbackFunctions()
cb.logger = fmi2CallbackLoggerTYPE(logger)
fmu = FMU2Slave(guid=md.guid, unzipDirectory=d, modelIdentifier=md.coSimulation.modelIdentifier,
                instanceName="child")
fmu.instantiate(callbacks=cb, loggingOn=True)
fmu.setupExperiment(startTime=0.0)
fmu.enterInitializationMode(); fmu.exitInitializationMode()
fmu.setReal([vr[f"tau[{i}]"] for i in range(1, 8)], [%(tau)r] * 7)
for k in range(%(steps)d):
    fmu.doStep(k * %(h)r, %(h)r)
q = fmu.getReal([vr[f"q[{i}]"] for i in range(1, 8)])
fmu.terminate(); fmu.freeInstance()
print(json.dumps({"q": q, "log": log, "soa_fmu": [m for m in sys.modules if m.startswith("soa_fmu")][:3]}))
""" % {"tau": TAU, "steps": STEPS, "h": H}


def reference_q() -> np.ndarray:
    sim = sf.Simulator(load_model(example("arm7.urdf")))
    sim.tau[:] = TAU
    for _ in range(STEPS):
        sim.step(H)
    return sim.q


# a Python in which soa_fmu cannot be imported: no site (so no .pth of the editable install), only
# the site-packages folder that holds fmpy and its dependencies
NO_SOA_FMU = """
import importlib.util, sys
sys.path.append(%(site)r)
assert importlib.util.find_spec("soa_fmu") is None, "soa_fmu is importable"
""" % {"site": sysconfig.get_paths()["purelib"]}


def test_fresh_process_without_the_checkout(arm_fmu, tmp_path):
    """A child Python running in another folder.  Native: soa_fmu cannot even be imported there,
    and the FMU needs nothing of it.  Python flavour: told to use the FMU's own engine (as it must
    when no soa_fmu of the same sources is installed — `make test` installs this checkout, so the
    test asks for the bundled engine explicitly), the FMU imports that engine from the stable cache
    folder — as ``soa_fmu``, or as ``soa_fmu_<hash>`` when another soa_fmu is installed.  Both get
    the engine's numbers."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["SOA_FMU_ENGINE"] = "bundled"
    native = runtime_of(arm_fmu) == "native"
    cmd = [sys.executable, "-S", "-c", NO_SOA_FMU + CHILD] if native else [sys.executable, "-c",
                                                                            CHILD]
    out = subprocess.run(cmd + [str(arm_fmu)], capture_output=True, text=True, env=env,
                         cwd=tmp_path, timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    res = json.loads(out.stdout.strip().splitlines()[-1])
    if native:
        # the one line a normal run logs: the integrator auto picked (docs/joints.md)
        assert res["soa_fmu"] == [] and [m for m in res["log"]
                                         if not m.startswith("integrator auto: ")] == []
        assert any(m.startswith("integrator auto: ") for m in res["log"])
        np.testing.assert_array_equal(res["q"], reference_q())
        return
    assert any("imported as soa_fmu" in m for m in res["log"]), res["log"]
    assert any(m == "soa_fmu" or m.startswith("soa_fmu_") and "." not in m and not m.endswith("_boot")
               for m in res["soa_fmu"]), res["soa_fmu"]
    np.testing.assert_array_equal(res["q"], reference_q())


def test_second_engine_version_in_one_process(tmp_path):
    """Python flavour (the native one imports no engine): with a different soa_fmu already
    imported, the FMU's engine is imported under its own name (soa_fmu_<hash>) and cache; the
    host's soa_fmu is left alone."""
    fmu = build("arm7.urdf", name="Arm7", runtime="python")
    env = dict(os.environ, SOA_FMU_ENGINE="bundled", PYTHONPATH=str(REPO))
    code = "import soa_fmu\n" + CHILD
    out = subprocess.run([sys.executable, "-c", code, str(fmu)], capture_output=True,
                         text=True, env=env, cwd=tmp_path, timeout=1800)
    assert out.returncode == 0, out.stderr[-3000:]
    res = json.loads(out.stdout.strip().splitlines()[-1])
    assert any("imported as soa_fmu_" in m for m in res["log"]), res["log"]
    np.testing.assert_array_equal(res["q"], reference_q())


def test_sys_path_does_not_grow(arm_fmu):
    before = list(sys.path)
    for k in range(4):
        inst = Instance(arm_fmu, name=f"p{k}").init()
        inst.fmu.doStep(0.0, H)
        inst.fmu.reset()
        inst.init()
        inst.close()
    assert sys.path == before


def _libpython() -> Path | None:
    name = sysconfig.get_config_var("INSTSONAME") or ""
    lib = Path(sysconfig.get_config_var("LIBDIR") or "", name)
    return lib if name and lib.is_file() else None


def run_c_host(fmu_dir: Path, md, tmp_path: Path, env: dict) -> np.ndarray:
    """tests/fmu_host.c (a C master that dlopens the FMU's binary) on an extracted FMU: q."""
    exe = tmp_path / "fmu_host"
    if not exe.exists():
        subprocess.run(["gcc", "-O1", "-o", str(exe), str(REPO / "tests" / "fmu_host.c"), "-ldl"],
                       check=True, capture_output=True)
    vr = {v.name: v.valueReference for v in md.modelVariables}
    out = subprocess.run([str(exe), str(fmu_dir), md.coSimulation.modelIdentifier, str(STEPS),
                          repr(H), repr(TAU), "7", str(vr["tau[1]"]), "7", str(vr["q[1]"]),
                          md.guid], capture_output=True, text=True, env=env, timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    return np.array([float(x) for x in out.stdout.split()])


@pytest.mark.skipif(sys.platform != "linux" or shutil.which("gcc") is None or _libpython() is None,
                    reason="needs Linux, gcc and a shared libpython")
def test_non_python_host(arm_fmu, tmp_path):
    """tests/fmu_host.c — a C master that dlopens the FMU.  The native FMU needs nothing (no
    Python variables in the environment); the pythonfmu FMU needs LD_PRELOAD=libpython3.11.so,
    PYTHONHOME and PYTHONPATH set as docs/fmu.md describes."""
    from fmpy import read_model_description
    unzip = tmp_path / "fmu"
    zipfile.ZipFile(arm_fmu).extractall(unzip)
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "LD_PRELOAD", "LD_LIBRARY_PATH")}
    if runtime_of(arm_fmu) == "python":
        env.update(LD_PRELOAD=str(_libpython()), PYTHONHOME=sys.base_prefix,
                   PYTHONPATH=os.pathsep.join(p for p in sys.path if p.endswith("site-packages")))
    q = run_c_host(unzip, read_model_description(str(arm_fmu)), tmp_path, env)
    np.testing.assert_array_equal(q, reference_q())


@pytest.mark.skipif(sys.platform != "linux" or shutil.which("gcc") is None,
                    reason="needs Linux and gcc")
def test_source_code_fmu_compiles_and_runs(tmp_path):
    """The native FMU as a source-code FMU: compile sources/*.c (the files SourceFiles lists) with
    the FMI headers, as an importer does for its own target, and run the result in the C host."""
    from fmpy import read_model_description
    from fmu_fixtures import build
    from soa_fmu.fmu.native import fmi_headers
    fmu = build("arm7.urdf", name="Arm7", runtime="native")
    md = read_model_description(str(fmu))
    unzip = tmp_path / "fmu"
    zipfile.ZipFile(fmu).extractall(unzip)
    lib = unzip / "binaries" / "linux64" / "Arm7.so"
    lib.unlink()                               # only the sources are left
    files = list(dict.fromkeys(str(unzip / "sources" / f.get("name")) for f in __import__(
        "lxml.etree").etree.parse(str(unzip / "modelDescription.xml")).iter("File")))
    subprocess.run(["gcc", "-std=c99", "-O2", "-shared", "-fPIC", f"-I{unzip / 'sources'}",
                    f"-I{fmi_headers()}", *files, "-o", str(lib), "-lm"], check=True,
                   capture_output=True)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LD_PRELOAD")}
    np.testing.assert_array_equal(run_c_host(unzip, md, tmp_path, env), reference_q())


def soak(fmu: Path, steps: int, first: int) -> list[float]:
    """Resident memory (MiB) after ``first`` and after ``steps`` steps of setReal + doStep + getReal."""
    def rss() -> float:
        with open("/proc/self/status") as fh:
            return next(int(l.split()[1]) for l in fh if l.startswith("VmRSS:")) / 1024

    inst = Instance(fmu, logging=False).init({"q0[2]": 0.5})
    tau, out = inst.refs("tau"), inst.refs("q") + inst.refs("qd") + inst.refs("qdd")
    samples = []
    for k in range(steps):
        inst.fmu.setReal(tau, [0.0] * 7)
        inst.fmu.doStep(k * H, H)
        inst.fmu.getReal(out)
        if k in (first, steps - 1):
            samples.append(rss())
    inst.close()
    return samples


@pytest.mark.skipif(sys.platform != "linux", reason="needs Linux (/proc/self/status)")
def test_hundred_thousand_steps_without_memory_growth(arm_fmu):
    """The soak in make test: 10⁵ steps, resident memory flat after the first 10⁴ (a leak of 24
    bytes per step would add 2 MiB)."""
    before, after = soak(arm_fmu, 100_000, 10_000)
    assert after - before < 2.0, (before, after)


@pytest.mark.slow
def test_million_steps_without_memory_growth(arm_fmu):
    before, after = soak(arm_fmu, 1_000_000, 100_000)
    assert after - before < 5.0, (before, after)
