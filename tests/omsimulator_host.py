"""OMSimulator (OpenModelica's FMI/SSP co-simulation tool) as a host for the tests.

The tool is found at ``$SOA_FMU_OMSIMULATOR``, else at ``<repo>/../shared/tools/omsimulator``
(or ``shared/tools/omsimulator`` beside a folder further up: :func:`tool_dir`; ``bin/OMSimulator``, ``lib/x86_64-linux-gnu/{libOMSimulator.so,OMSimulator/}``). Every use runs it
in a child process, so a crash of the tool fails one test instead of taking pytest down, and its
log (stdout and stderr, where OMSimulator writes its own messages and the FMU's logger output) comes
back as text:

- :func:`simulate` runs one FMU through OMSimulator's Python API (``oms_newModel``,
  ``oms_addSystem`` -- ``oms_system_wc`` for Co-Simulation, ``oms_system_sc`` with CVODE for Model
  Exchange --, ``oms_addSubModel``, ``oms_setReal`` ..., ``oms_stepUntil``) and records outputs
  after every communication step with ``oms_getReal`` (full precision, unlike its CSV writer);
- :func:`run_python` and :func:`run_lua` run any script against the tool (for SSP files,
  several FMUs, connections), :func:`run_cli` its command line; :func:`errors` picks the error
  lines out of a log (the tool often exits 0 after logging an error).

This file is also the child of :func:`simulate`: ``python omsimulator_host.py spec.json``.
"""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
ENV_VAR = "SOA_FMU_OMSIMULATOR"
PY_LIB = "lib/x86_64-linux-gnu"                # the Python package and libOMSimulator.so
WC, SC, CVODE = 1, 2, 3                        # oms_system_wc, oms_system_sc, oms_solver_sc_cvode


def tool_dir() -> Path:
    """The OMSimulator installation: ``$SOA_FMU_OMSIMULATOR``, else ``shared/tools/omsimulator``
    beside the repository (a CI clone) or beside a folder above it (a git worktree)."""
    if os.environ.get(ENV_VAR):
        return Path(os.environ[ENV_VAR])
    beside = [p / "shared" / "tools" / "omsimulator" for p in REPO.parents]
    return next((p for p in beside if p.is_dir()), beside[0])


def unavailable() -> str | None:
    """Why OMSimulator cannot run here (missing, or its runtime libraries absent), else None."""
    exe = tool_dir() / "bin" / "OMSimulator"
    if not exe.is_file():
        return f"OMSimulator not found at {tool_dir()} (set {ENV_VAR})"
    r = subprocess.run([str(exe), "--version"], capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        return (f"OMSimulator at {exe} does not start (apt-get install -y libcurl4 libicu72): "
                f"{(r.stderr or r.stdout).strip()[-300:]}")
    return None


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(tool_dir() / PY_LIB), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def _run(argv: list[str], cwd: Path | str | None, timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run(argv, cwd=cwd, env=_env(), capture_output=True, text=True,
                          timeout=timeout)


def run_cli(args: list[str], cwd: Path | str, timeout: float = 120) -> subprocess.CompletedProcess:
    """``bin/OMSimulator args...`` in ``cwd`` (an FMU, an SSP file or a Lua script, options)."""
    return _run([str(tool_dir() / "bin" / "OMSimulator"), *args], cwd, timeout)


def run_lua(script: str, cwd: Path | str, timeout: float = 120) -> subprocess.CompletedProcess:
    """A Lua script (``oms_newModel(...)`` ...) through ``bin/OMSimulator``, in ``cwd``."""
    path = Path(cwd) / "script.lua"
    path.write_text(script)
    return run_cli([path.name], cwd, timeout)


def run_python(code: str, cwd: Path | str, timeout: float = 120) -> subprocess.CompletedProcess:
    """Python code that imports ``OMSimulator`` (its ctypes API), in a child process in ``cwd``."""
    return _run([sys.executable, "-c", code], cwd, timeout)


def errors(log: str) -> list[str]:
    """The ``error:`` lines of an OMSimulator log (its own and the FMUs' fmi2Error/fmi2Discard
    messages) and a Python traceback's first line."""
    return [line for line in log.splitlines() if line.startswith(("error:", "Traceback"))]


@dataclass
class Result:
    """What :func:`simulate` recorded: ``time[k]`` and ``values[name][k]`` after each step, the
    statuses OMSimulator returned (``calls``: the name of each call that did not return oms_status_ok),
    the child's exit code and OMSimulator's log."""
    time: np.ndarray
    values: dict[str, np.ndarray]
    calls: list[str]
    returncode: int
    log: str

    def __getitem__(self, name: str) -> np.ndarray:
        return self.values[name]


def simulate(fmu: Path | str, kind: str, stop_time: float, step: float = 1e-3,
             parameters: dict | None = None, outputs: list[str] = (),
             changes: list[tuple[float, str, float]] = (), tolerance: float | None = None,
             timeout: float = 120) -> Result:
    """Run ``fmu`` in OMSimulator as ``kind`` = ``"cs"`` (an ``oms_system_wc``, fixed step ``step``)
    or ``"me"`` (an ``oms_system_sc`` with CVODE, adaptive, at ``tolerance`` or the tool's
    default), from 0 to ``stop_time``, recording ``outputs`` every ``step``.  ``parameters``
    (name -> value, by type: float, bool, int, str) are set before ``oms_instantiate`` as start
    values (strings after it, before ``oms_initialize``: OMSimulator drops them before);
    ``changes`` (time, name, value) are set with ``oms_setReal`` just before the step that starts
    at that time."""
    with tempfile.TemporaryDirectory(prefix="oms_") as tmp:
        spec = {"fmu": str(Path(fmu).resolve()), "kind": kind, "stop_time": stop_time,
                "step": step, "parameters": parameters or {}, "outputs": list(outputs),
                "changes": [list(c) for c in changes], "tolerance": tolerance,
                "out": str(Path(tmp) / "result.json")}
        (Path(tmp) / "spec.json").write_text(json.dumps(spec))
        r = _run([sys.executable, __file__, str(Path(tmp) / "spec.json")], tmp, timeout)
        out = Path(spec["out"])
        data = json.loads(out.read_text()) if out.exists() else \
            {"time": [], "values": {n: [] for n in outputs}, "calls": ["(no result)"]}
    return Result(np.array(data["time"]), {k: np.array(v) for k, v in data["values"].items()},
                  data["calls"], r.returncode, r.stdout + r.stderr)


# ---------------------------------------------------------------- the child process
def _child(spec_path: str) -> int:
    from OMSimulator.capi import Capi, Status   # the child's PYTHONPATH holds the tool's lib
    spec = json.loads(Path(spec_path).read_text())
    calls: list[str] = []
    record = {"time": [], "values": {n: [] for n in spec["outputs"]}, "calls": calls}

    def call(name: str, status) -> None:
        if status != Status.ok:
            calls.append(f"{name}: {status.name}")

    def save() -> None:
        Path(spec["out"]).write_text(json.dumps(record))

    def put(name: str, value) -> None:
        cref = f"m.root.fmu.{name}"
        if isinstance(value, str):        # its wrapper hands a str to a char* argument: bytes here
            status = Capi.setString(cref, value.encode())
        else:
            setter = (Capi.setBoolean if isinstance(value, bool) else
                      Capi.setInteger if isinstance(value, int) else Capi.setReal)
            status = setter(cref, value)
        call(f"set {name}", status)

    Capi.setTempDirectory(str(Path(spec_path).parent))
    call("newModel", Capi.newModel("m"))
    call("addSystem", Capi.addSystem("m.root", WC if spec["kind"] == "cs" else SC))
    call("addSubModel", Capi.addSubModel("m.root.fmu", spec["fmu"]))
    if spec["kind"] == "cs":
        call("setFixedStepSize", Capi.setFixedStepSize("m.root", spec["step"]))
    else:
        call("setSolver", Capi.setSolver("m.root", CVODE))
    if spec["tolerance"] is not None:
        call("setTolerance", Capi.setTolerance("m.root", spec["tolerance"]))
    strings = {k: v for k, v in spec["parameters"].items() if isinstance(v, str)}
    for name, value in spec["parameters"].items():
        if name not in strings:
            put(name, value)
    call("setStopTime", Capi.setStopTime("m", spec["stop_time"]))
    call("setResultFile", Capi.setResultFile("m", ""))
    call("instantiate", Capi.instantiate("m"))
    for name, value in strings.items():   # a String set before oms_instantiate never reaches the FMU
        put(name, value)
    call("initialize", Capi.initialize("m"))
    changes = sorted(spec["changes"])
    n = int(round(spec["stop_time"] / spec["step"]))
    for k in range(n + 1):
        t = k * spec["step"]
        if k:
            status = Capi.stepUntil("m", t)
            call(f"stepUntil({t:g})", status)
            if status not in (Status.ok, Status.warning):
                break
        record["time"].append(t)
        for name in spec["outputs"]:
            value, status = Capi.getReal(f"m.root.fmu.{name}")
            call(f"getReal {name}", status)
            record["values"][name].append(value if math.isfinite(value) else None)
        while changes and changes[0][0] <= t + 0.5 * spec["step"]:
            put(changes[0][1], changes.pop(0)[2])
    save()
    call("terminate", Capi.terminate("m"))
    call("delete", Capi.delete("m"))
    save()
    return 0


if __name__ == "__main__":
    sys.exit(_child(sys.argv[1]))
