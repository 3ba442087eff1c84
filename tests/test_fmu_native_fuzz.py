"""The native FMU's C code (core + FMI wrapper) under AddressSanitizer and UBSan, driven by a
hostile master (tests/fmu_fuzz_host.c for FMI 2.0 Co-Simulation and Model Exchange instances,
tests/fmu3_fuzz_host.c for FMI 3.0): random FMI call sequences in every state with NaN/Inf/huge
values, invalid value references, random bytes and corrupted real states as serialized FMU states.
Any memory error, leak or undefined behaviour fails the run."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile

import pytest
from fmpy import read_model_description

from fmu_fixtures import REPO, build
from soa_fmu.fmu.native import fmi_headers

pytestmark = pytest.mark.skipif(sys.platform != "linux" or shutil.which("gcc") is None,
                                reason="needs Linux and gcc")
SANITIZE = ["-fsanitize=address,undefined", "-fno-sanitize-recover=undefined",
            "-fno-omit-frame-pointer", "-g", "-O1"]


@pytest.mark.parametrize("model, name, kind", [("arm7.urdf", "Arm7", "cs"),
                                               ("spacecraft.toml", None, "me"),
                                               ("four_bar.toml", None, "me")])
def test_hostile_master_under_sanitizers(tmp_path, model, name, kind):
    fmu = build(model, name=name, runtime="native")
    md = read_model_description(str(fmu))
    zipfile.ZipFile(fmu).extractall(tmp_path)
    src = tmp_path / "sources"
    exe = tmp_path / "fuzz"
    r = subprocess.run(["gcc", "-std=c99", *SANITIZE, "-Wall", "-Wextra",
                        "-Wno-missing-field-initializers", f"-I{src}", f"-I{fmi_headers()}",
                        *sorted(str(p) for p in src.glob("*.c")),
                        str(REPO / "tests" / "fmu_fuzz_host.c"), "-o", str(exe), "-lm"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "warning" not in r.stderr, r.stderr[-3000:]     # -Wall -Wextra clean, sanitizer build
    nreal = sum(v.type == "Real" for v in md.modelVariables)
    nbool = sum(v.type == "Boolean" for v in md.modelVariables)
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1:abort_on_error=0",
               UBSAN_OPTIONS="print_stacktrace=1")
    env.pop("LD_PRELOAD", None)
    for seed in range(3):
        out = subprocess.run([str(exe), md.guid, str(seed), "3000", str(nreal), str(nbool),
                              str(len(md.modelVariables)), kind,
                              str(md.numberOfContinuousStates)], capture_output=True, text=True,
                             env=env, timeout=600)
        assert out.returncode == 0, out.stderr[-4000:]
        assert out.stdout.startswith("ok"), out.stdout
        assert "runtime error" not in out.stderr, out.stderr[-4000:]
