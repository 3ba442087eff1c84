"""Shared helpers of the FMU tests: FMUs built once per test session, fmpy instances with a
capturing logger, and the value-reference lookups.

Import the fixtures into a test module (``from fmu_fixtures import arm_fmu, ...``); the builds are
cached at module level, so every FMU is built once per process however many modules use it.  The
FMU fixtures are parametrized over both runtimes (``native``, ``python``): every test of an FMU runs
against both flavours, which must agree.  Where the flavours' FMI status discipline differs (a C
library returns fmi2Error from a setter; pythonfmu can only log it), :attr:`Instance.native` says
which one a test talks to.
"""
from __future__ import annotations

import atexit
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:                 # build_fmu.py lives at the repository root
    sys.path.insert(0, str(REPO))

import build_fmu  # noqa: E402
from model_descriptions import EXAMPLES_DIR  # noqa: E402

_BUILD_DIR = Path(tempfile.mkdtemp(prefix="soa_fmu_tests_"))
atexit.register(shutil.rmtree, _BUILD_DIR, True)
_BUILT: dict[tuple, Path] = {}


def example(name: str) -> Path:
    return EXAMPLES_DIR / name


def build(model: str | Path, name: str | None = None, **options) -> Path:
    """The FMU of an example model (by file name) or a model path, built once per process."""
    path = Path(model) if Path(model).is_absolute() else example(str(model))
    options.setdefault("runtime", "native")
    key = (str(path), name, tuple(sorted(options.items())))
    if key not in _BUILT:
        out = _BUILD_DIR / f"{len(_BUILT)}_{name or path.stem}.fmu"
        _BUILT[key] = build_fmu.build(path, out, name=name, **options)
    return _BUILT[key]


def example_models() -> list[str]:
    return sorted(p.name for p in EXAMPLES_DIR.iterdir() if p.suffix in (".urdf", ".toml"))


RUNTIMES = ("native", "python")


@pytest.fixture(scope="session", params=RUNTIMES)
def arm_fmu(request) -> Path:
    return build("arm7.urdf", name="Arm7", runtime=request.param)


@pytest.fixture(scope="session", params=RUNTIMES)
def pendulum_fmu(request) -> Path:
    return build("double_pendulum.toml", runtime=request.param)


@pytest.fixture(scope="session", params=RUNTIMES)
def four_bar_fmu(request) -> Path:
    return build("four_bar.toml", runtime=request.param)


@pytest.fixture(scope="session", params=RUNTIMES)
def spacecraft_fmu(request) -> Path:
    return build("spacecraft_rigid.toml", runtime=request.param)


def runtime_of(fmu_path: Path) -> str:
    """'native' or 'python': the flavour an FMU was built as (resources/fmu.json)."""
    import zipfile
    with zipfile.ZipFile(fmu_path) as z:
        return json.loads(z.read("resources/fmu.json"))["runtime"]


def status_of(call) -> int:
    """The FMI status of ``call()`` (fmpy raises FMICallException for anything but fmi2OK)."""
    from fmpy.fmi1 import FMICallException
    try:
        call()
    except FMICallException as e:
        return e.status
    return 0


# ---------------------------------------------------------------- fmpy instances
class Instance:
    """An fmpy FMU2Slave with a capturing logger and name-based access."""

    def __init__(self, fmu_path: Path, name: str = "inst", unzip_dir: str | None = None,
                 logging: bool = True):
        from fmpy import extract, read_model_description
        from fmpy.fmi2 import FMU2Slave
        self.md = read_model_description(str(fmu_path))
        self.native = runtime_of(fmu_path) == "native"
        # what a setter returns for a rejected value: fmi2Error (native), fmi2OK (pythonfmu can
        # only log it; the step that follows is refused in both)
        self.rejected = 3 if self.native else 0
        self.unzip = unzip_dir or str(extract(str(fmu_path)))
        self._own_unzip = unzip_dir is None
        self.vr = {v.name: v.valueReference for v in self.md.modelVariables}
        self.var = {v.name: v for v in self.md.modelVariables}
        self.messages: list[tuple[int, str, str]] = []
        self.fmu = FMU2Slave(guid=self.md.guid, unzipDirectory=self.unzip,
                             modelIdentifier=self.md.coSimulation.modelIdentifier,
                             instanceName=name)
        self._callbacks = _callbacks(self.messages)
        self.fmu.instantiate(callbacks=self._callbacks, loggingOn=logging)

    def init(self, start_values: dict | None = None, start_time: float = 0.0) -> "Instance":
        self.fmu.setupExperiment(startTime=start_time)
        for k, v in (start_values or {}).items():
            self.set(k, v)
        self.fmu.enterInitializationMode()
        self.fmu.exitInitializationMode()
        return self

    def refs(self, prefix: str, n: int | None = None) -> list[int]:
        """Value references of ``prefix[1..n]`` (all indices when n is None)."""
        out, i = [], 1
        while f"{prefix}[{i}]" in self.vr and (n is None or i <= n):
            out.append(self.vr[f"{prefix}[{i}]"])
            i += 1
        return out

    def set(self, name: str, value) -> None:
        t = self.var[name].type
        if t == "Real":
            self.fmu.setReal([self.vr[name]], [float(value)])
        elif t == "Boolean":
            self.fmu.setBoolean([self.vr[name]], [bool(value)])
        elif t == "String":
            self.fmu.setString([self.vr[name]], [str(value)])
        else:
            self.fmu.setInteger([self.vr[name]], [int(value)])

    def get(self, prefix: str) -> np.ndarray:
        if prefix in self.vr:
            return np.array(self.fmu.getReal([self.vr[prefix]]))
        return np.array(self.fmu.getReal(self.refs(prefix)))

    def log_text(self) -> str:
        return "\n".join(m for _, _, m in self.messages)

    def close(self, terminate: bool = True) -> None:
        if terminate:
            self.fmu.terminate()
        self.fmu.freeInstance()
        if self._own_unzip:
            shutil.rmtree(self.unzip, ignore_errors=True)


def _callbacks(messages: list):
    from fmpy import calloc, free
    from fmpy.fmi2 import (fmi2CallbackAllocateMemoryTYPE, fmi2CallbackFreeMemoryTYPE,
                           fmi2CallbackFunctions, fmi2CallbackLoggerTYPE)

    def logger(env, instance, status, category, message):
        messages.append((status, category.decode() if category else "",
                         message.decode() if message else ""))

    cb = fmi2CallbackFunctions()
    cb.logger = fmi2CallbackLoggerTYPE(logger)
    cb.allocateMemory = fmi2CallbackAllocateMemoryTYPE(calloc)
    cb.freeMemory = fmi2CallbackFreeMemoryTYPE(free)
    cb._keep = logger            # the ctypes thunk must outlive the instance
    return cb


def subprocess_env() -> dict:
    """Environment for a child Python that imports this checkout's soa_fmu (same sources, so
    the FMU uses it and shares its compiled-code cache)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env
