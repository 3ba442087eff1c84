"""The native FMU's C code (core + FMI wrapper) under AddressSanitizer and UBSan, driven by a
hostile master (tests/fmu_fuzz_host.c for FMI 2.0 Co-Simulation and Model Exchange instances,
tests/fmu3_fuzz_host.c for FMI 3.0): random FMI call sequences in every state with NaN/Inf/huge
values, invalid value references, random bytes and corrupted real states as serialized FMU states.
Any memory error, leak or undefined behaviour fails the run.

The C core's files are the same in every FMU: they are compiled once per session (the wrapper,
fmu_model.c and the host for each FMU)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import pytest
from fmpy import read_model_description

from fmu_fixtures import REPO, build
from soa_fmu.fmu.native import CORE_DIR, fmi_headers

pytestmark = pytest.mark.skipif(sys.platform != "linux" or shutil.which("gcc") is None,
                                reason="needs Linux and gcc")
SANITIZE = ["-fsanitize=address,undefined", "-fno-sanitize-recover=undefined",
            "-fno-omit-frame-pointer", "-g", "-O1"]
WARN = ["-Wall", "-Wextra", "-Wno-missing-field-initializers"]
_CORE_OBJECTS: list[str] = []


def core_objects() -> list[str]:
    """The C core compiled with the sanitizers, once per session."""
    if not _CORE_OBJECTS:
        out = Path(tempfile.mkdtemp(prefix="soa_fmu_fuzz_core_"))
        sources = sorted(str(p) for p in CORE_DIR.glob("*.c"))
        r = subprocess.run(["gcc", "-std=c99", *SANITIZE, *WARN, "-c", *sources],
                           capture_output=True, text=True, cwd=out)
        assert r.returncode == 0 and "warning" not in r.stderr, r.stderr[-3000:]
        _CORE_OBJECTS.extend(sorted(str(p) for p in out.glob("*.o")))
    return _CORE_OBJECTS


def sanitized_host(tmp_path: Path, fmu: Path, host: str, fmi: int) -> Path:
    """The FMU's wrapper and fmu_model.c with the host, linked against the sanitized core."""
    zipfile.ZipFile(fmu).extractall(tmp_path)
    src = tmp_path / "sources"
    core = {Path(o).stem for o in core_objects()}
    exe = tmp_path / "fuzz"
    r = subprocess.run(["gcc", "-std=c99", *SANITIZE, *WARN, f"-I{src}", f"-I{fmi_headers(fmi)}",
                        *sorted(str(p) for p in src.glob("*.c") if p.stem not in core),
                        str(REPO / "tests" / host), *core_objects(), "-o", str(exe), "-lm"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "warning" not in r.stderr, r.stderr[-3000:]     # -Wall -Wextra clean, sanitizer build
    return exe


def run_seeds(exe: Path, args: list[str], kinds=("cs", "me", "me")) -> None:
    """Three seeds, each on an instance of the kind given ("KIND" in args stands for it)."""
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1:abort_on_error=0",
               UBSAN_OPTIONS="print_stacktrace=1")
    env.pop("LD_PRELOAD", None)
    for seed, kind in enumerate(kinds):
        argv = [kind if a == "KIND" else a for a in args]
        out = subprocess.run([str(exe), argv[0], str(seed), "3000", *argv[1:]],
                             capture_output=True, text=True, env=env, timeout=600)
        assert out.returncode == 0, out.stderr[-4000:]
        assert out.stdout.startswith("ok"), out.stdout
        assert "runtime error" not in out.stderr, out.stderr[-4000:]


@pytest.mark.parametrize("model, name", [("arm7.urdf", "Arm7"), ("spacecraft_rigid.toml", None),
                                         ("flexible_arm.toml", None)])
def test_hostile_master_under_sanitizers(tmp_path, model, name):
    """FMI 2.0: a Co-Simulation instance, then Model Exchange instances of the same FMU."""
    fmu = build(model, name=name, runtime="native")
    md = read_model_description(str(fmu))
    exe = sanitized_host(tmp_path, fmu, "fmu_fuzz_host.c", 2)
    nreal = sum(v.type == "Real" for v in md.modelVariables)
    nbool = sum(v.type == "Boolean" for v in md.modelVariables)
    run_seeds(exe, [md.guid, str(nreal), str(nbool), str(len(md.modelVariables)), "KIND",
                    str(md.numberOfContinuousStates)])


def test_hostile_fmi3_master_under_sanitizers(tmp_path):
    """The FMI 3.0 interface (fmi3.c) under the same sanitizers: array value references and
    counts, Co-Simulation and Model Exchange instances of a closed chain (grasp / release
    events), adjoint derivatives, serialized states."""
    fmu = build("four_bar.toml", runtime="native", fmi=3)
    md = read_model_description(str(fmu))
    exe = sanitized_host(tmp_path, fmu, "fmu3_fuzz_host.c", 3)
    arrays = ",".join(f"{v.valueReference}:{int(v.dimensions[0].start) if v.dimensions else 1}"
                      for v in md.modelVariables if v.type == "Float64")
    run_seeds(exe, [md.guid, "KIND", str(md.numberOfContinuousStates), arrays])



def test_hostile_master_on_the_controller(tmp_path):
    """The controller role (controller.c; no states) under the same hostile master (FMI 2.0 CS
    and ME): its inputs, gains and trajectory parameters set to NaN/Inf/huge values in every
    state, sampled steps, serialized states."""
    fmu = build("arm7.urdf", name="Controller", runtime="native", controller=True)
    md = read_model_description(str(fmu))
    exe = sanitized_host(tmp_path, fmu, "fmu_fuzz_host.c", 2)
    nreal = sum(v.type == "Real" for v in md.modelVariables)
    nbool = sum(v.type == "Boolean" for v in md.modelVariables)
    run_seeds(exe, [md.guid, str(nreal), str(nbool), str(len(md.modelVariables)), "KIND", "0"])
