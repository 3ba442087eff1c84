""""No allocation in fmi2DoStep" (docs/fmu.md, SPEC): benchmarks/fmu_step_host.c, a C host that
interposes malloc/calloc/realloc, steps the native FMU 10⁴ times (τ new every step, q, q̇, q̈ read)
and counts the heap allocations made during those steps: 0, for a tree arm and for the two arms
holding a box (the constrained step).  The pythonfmu flavour, which allocates, proves the counter
sees an FMU's allocations."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from fmu_fixtures import build

REPO = Path(__file__).resolve().parents[1]
STEPS = 10_000

pytestmark = pytest.mark.skipif(sys.platform != "linux" or shutil.which("gcc") is None,
                                reason="needs Linux and gcc")


@pytest.fixture(scope="module")
def host(tmp_path_factory) -> Path:
    exe = tmp_path_factory.mktemp("host") / "fmu_step_host"
    subprocess.run(["gcc", "-O2", "-rdynamic", "-o", str(exe),
                    str(REPO / "benchmarks" / "fmu_step_host.c"), "-ldl", "-lm"],
                   check=True, capture_output=True)
    return exe


def step_host(exe: Path, fmu: Path, tmp: Path, steps: int, env: dict | None = None) -> dict:
    from fmpy import read_model_description
    unzip = tmp / fmu.stem
    zipfile.ZipFile(fmu).extractall(unzip)
    md = read_model_description(str(fmu))
    vr = {v.name: v.valueReference for v in md.modelVariables}
    nq = sum(1 for n in vr if n.startswith("q["))
    nv = sum(1 for n in vr if n.startswith("tau["))
    env = env or {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LD_PRELOAD")}
    out = subprocess.run([str(exe), str(unzip), md.coSimulation.modelIdentifier, md.guid, "0.001",
                          str(steps), str(vr["tau[1]"]), str(nv), str(vr["q[1]"]),
                          str(nq + 2 * nv)], capture_output=True, text=True, env=env, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("model,name", [("arm7.urdf", "Arm7"), ("two_arms_box.toml", None),
                                        ("bouncing_ball.toml", None)])
def test_native_step_allocates_nothing(host, tmp_path, model, name):
    r = step_host(host, build(model, name=name), tmp_path, STEPS)
    assert r["allocations"] == 0, r
    assert abs(r["check"]) < 1e3                      # the steps ran on a finite state


def test_the_counter_sees_an_fmus_allocations(host, tmp_path):
    name = sysconfig.get_config_var("INSTSONAME") or ""
    libpython = Path(sysconfig.get_config_var("LIBDIR") or "", name)
    if not (name and libpython.is_file()):
        pytest.skip("needs a shared libpython (the pythonfmu flavour in a C host)")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LD_PRELOAD")}
    env.update(LD_PRELOAD=str(libpython), PYTHONHOME=sys.base_prefix,
               PYTHONPATH=os.pathsep.join([str(REPO)] + [p for p in sys.path
                                                         if p.endswith("site-packages")]))
    r = step_host(host, build("pendulum.toml", runtime="python"), tmp_path, 50, env)
    assert r["allocations"] > 50, r                    # Python objects every step
