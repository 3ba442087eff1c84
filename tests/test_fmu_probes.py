"""The probes that found issue 18's failures, kept as tests (tests/fmu_probe_host.c, a C master):
8 instances stepped by 8 threads bit-identical to serial runs; instantiate/free life cycles with
a flat resident set; two different FMUs in one process, each bit-identical to its solo run."""
from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from fmu_fixtures import REPO, build

pytestmark = pytest.mark.skipif(sys.platform != "linux" or shutil.which("gcc") is None,
                                reason="needs Linux and gcc")


@pytest.fixture(scope="module")
def host(tmp_path_factory) -> Path:
    from soa_fmu.fmu.native import fmi_headers
    exe = tmp_path_factory.mktemp("probe") / "fmu_probe_host"
    subprocess.run(["gcc", "-std=c99", "-O1", "-Wall", "-Wextra", f"-I{fmi_headers(2)}", "-o",
                    str(exe), str(REPO / "tests" / "fmu_probe_host.c"), "-ldl", "-lpthread"],
                   check=True, capture_output=True)
    return exe


def fmu_args(name: str, tmp: Path, identifier: str) -> list[str]:
    """dir identifier guid n_tau vr_tau0 n_q vr_q0 of a native FMU of an example model."""
    from fmpy import read_model_description
    path = build(name, name=identifier)
    unzip = tmp / identifier
    zipfile.ZipFile(path).extractall(unzip)
    md = read_model_description(str(path))
    vr = {v.name: v.valueReference for v in md.modelVariables}
    n_tau = sum(1 for v in md.modelVariables if v.name.startswith("tau["))
    n_q = sum(1 for v in md.modelVariables if v.name.startswith("q["))
    return [str(unzip), identifier, md.guid, str(n_tau), str(vr["tau[1]"]), str(n_q),
            str(vr["q[1]"])]


def probe(host: Path, *args: str) -> list[str]:
    out = subprocess.run([str(host), *args], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, (out.returncode, out.stdout, out.stderr[-2000:])
    return out.stdout.split()


def test_eight_threads_bit_identical_to_serial(host, tmp_path):
    assert probe(host, "threads", *fmu_args("arm7.urdf", tmp_path, "Arm7"), "500") == ["identical"]


def test_life_cycles_keep_the_resident_set_flat(host, tmp_path):
    """2,000 instantiate / initialize / 10 steps / get-state / free cycles: the resident set after
    the first 200 and after all 2,000 differ by less than 1 MB (a leak of one instance's buffers
    per cycle would add ~20 MB)."""
    early, late = (int(x) for x in probe(host, "cycles", *fmu_args("arm7.urdf", tmp_path, "Arm7"),
                                         "2000"))
    assert late - early < 1024, (early, late)


def test_two_different_fmus_in_one_process(host, tmp_path):
    a = fmu_args("arm7.urdf", tmp_path, "Arm7")
    b = fmu_args("double_pendulum.toml", tmp_path, "DoublePendulum")
    assert probe(host, "two", *a, "500", *b) == ["identical"]
