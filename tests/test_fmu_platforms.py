"""Every native FMU carries five binaries (docs/fmu.md, Platforms), and each runs where it can here:
the Windows DLL under wine and the aarch64 library under qemu-user, each in tests/fmu_host.c built
for its platform by the same zig, equal to the x86-64 Linux run to 1e-12 — the FMI 2.0 and the
FMI 3.0 FMU's binaries (fmu_host.c built with -DFMI3 for the latter); the Linux binaries need
no glibc newer than 2.17 and nothing but libc/libm, the DLL nothing but the UCRT and kernel32; the
macOS images (which cannot run here) are checked for their CPU, file type, libraries and exported
FMI functions.  The FMI 3.0 source-code FMU compiles with fmpy's build_platform_binary to the
shipped binary's results.  A missing or failing toolchain is one line naming the platform.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from fmu_fixtures import REPO, build
import build_fmu
from soa_fmu.fmu import native
from soa_fmu.verify import binaries

H = 1e-3
# (model, identifier, steps of H, tau on every dof): a serial arm, a closed chain (two arms holding
# a box: two grasps), a ball bouncing on the floor (contact; it lands and bounces within 0.6 s)
RUNS = [("arm7.urdf", "Arm7", 300, 0.5), ("two_arms_box.toml", "two_arms_box", 200, 0.2),
        ("bouncing_ball.toml", "bouncing_ball", 600, 0.0)]
FMI2_FOLDERS = {"linux64": ".so", "aarch64-linux": ".so", "win64": ".dll", "darwin64": ".dylib"}
MACHO_LINKER = {"__mh_dylib_header", "___dso_handle"}   # what every dylib's linker defines
FMI_FUNCTIONS = {"fmi2Instantiate", "fmi2DoStep", "fmi2GetReal", "fmi2SetReal", "fmi2GetDerivatives",
                 "fmi2GetFMUstate", "fmi2FreeInstance"}


def _fmu(model: str, ident: str, fmi: int = 2) -> Path:
    return build(model, name=ident, runtime="native", fmi=fmi)


def _extract(fmu: Path, to: Path) -> Path:
    if not to.is_dir():
        zipfile.ZipFile(fmu).extractall(to)
    return to


def _zig_env() -> dict:
    return dict(os.environ, ZIG_GLOBAL_CACHE_DIR=str(native.zig_cache()))


def _host_args(unzip: str, fmu: Path, steps: int, tau: float) -> list[str]:
    """fmu_host.c's arguments: FMI 2.0's tau[1..] and q[1..] (consecutive references), or FMI
    3.0's arrays tau and q (one reference, n values each)."""
    from fmpy import read_model_description
    md = read_model_description(str(fmu))
    var = {v.name: v for v in md.modelVariables}
    if md.fmiVersion.startswith("3"):
        (nv,), (nq,) = ([int(d.start) for d in var[n].dimensions] for n in ("tau", "q"))
        vr_tau, vr_q = var["tau"].valueReference, var["q"].valueReference
    else:
        nv = sum(1 for n in var if n.startswith("tau["))
        nq = sum(1 for n in var if n.startswith("q["))
        vr_tau, vr_q = var["tau[1]"].valueReference, var["q[1]"].valueReference
    return [unzip, md.coSimulation.modelIdentifier, str(steps), repr(H), repr(tau), str(nv),
            str(vr_tau), str(nq), str(vr_q), md.guid]


def _run(cmd: list[str], env: dict | None = None) -> np.ndarray:
    """The host's printed q.  (Its output goes through files, not pipes: wine's services outlive
    the host for seconds with the pipes open, and reading a pipe would wait for them.)"""
    import tempfile
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        rc = subprocess.run(cmd, stdout=out, stderr=err, env=env, timeout=300).returncode
        out.seek(0)
        err.seek(0)
        assert rc == 0, err.read().decode(errors="replace")[-3000:]
        return np.array([float(x) for x in out.read().split()])


@pytest.fixture(scope="module")
def all_hosts(tmp_path_factory) -> dict[int, dict[str, Path]]:
    """tests/fmu_host.c for x86-64 Linux (gcc), x86-64 Windows and aarch64 Linux (zig cc), as an
    FMI 2.0 host and (-DFMI3) an FMI 3.0 one: {2 or 3: {"linux", "windows", "aarch64": exe}}."""
    d = tmp_path_factory.mktemp("hosts")
    src = str(REPO / "tests" / "fmu_host.c")
    z = [native.zig(), "cc", "-std=c99", "-O2", "-g0"]   # (-O2: the mode zig built its libc for)
    out = {}
    for fmi, flag in ((2, []), (3, ["-DFMI3"])):
        exe = {"linux": d / f"linux{fmi}", "windows": d / f"host{fmi}.exe",
               "aarch64": d / f"aarch64_{fmi}"}
        subprocess.run(["gcc", "-O1", *flag, "-o", str(exe["linux"]), src, "-ldl"], check=True)
        subprocess.run([*z, "-target", "x86_64-windows-gnu", *flag, src, "-o",
                        str(exe["windows"])], check=True, env=_zig_env())
        subprocess.run([*z, "-target", "aarch64-linux-gnu.2.17", *flag,
                        '-DFMU_PLATFORM="aarch64-linux"', src, "-o", str(exe["aarch64"]), "-ldl"],
                       check=True, env=_zig_env())
        out[fmi] = exe
    return out


@pytest.fixture(scope="module", params=[2, 3], ids=["fmi2", "fmi3"])
def fmi(request) -> int:
    return request.param


@pytest.fixture(scope="module")
def hosts(all_hosts, fmi) -> dict[str, Path]:
    return all_hosts[fmi]


@pytest.fixture(scope="module")
def runs(tmp_path_factory, fmi) -> list[tuple[str, Path, Path, int, float]]:
    """(identifier, FMU, its extraction, steps, tau) of each RUNS model, FMI 2.0 or 3.0."""
    d = tmp_path_factory.mktemp(f"unzip{fmi}")
    return [(ident, _fmu(m, ident, fmi), _extract(_fmu(m, ident, fmi), d / ident), steps, tau)
            for m, ident, steps, tau in RUNS]


@pytest.fixture(scope="module")
def references(hosts, runs) -> dict[str, np.ndarray]:
    """q after the steps of each RUNS model from the x86-64 Linux binary (gcc's host)."""
    out = {}
    for ident, fmu, unzip, steps, tau in runs:
        q = _run([str(hosts["linux"]), *_host_args(str(unzip), fmu, steps, tau)])
        assert np.all(np.isfinite(q)) and np.ptp(q) > 0
        out[ident] = q
    return out


@pytest.fixture(scope="module")
def wine_env(tmp_path_factory) -> dict:
    """One wine prefix for every wine run of the module (creating one takes seconds)."""
    return dict(os.environ, WINEPREFIX=str(tmp_path_factory.mktemp("wineprefix")),
                WINEDEBUG="-all")


def _close(q: np.ndarray, ref: np.ndarray) -> None:
    np.testing.assert_allclose(q, ref, rtol=1e-12, atol=1e-12 * np.max(np.abs(ref)))


def test_every_platform_in_the_default_fmu():
    """FMI 2.0: linux64, aarch64-linux, win64, darwin64 (one universal image of both macOS CPUs);
    FMI 3.0: the five platform tuples; fmu.json lists the platforms built."""
    import json
    with zipfile.ZipFile(_fmu("arm7.urdf", "Arm7")) as zf:
        names = set(zf.namelist())
        cfg = json.loads(zf.read("resources/fmu.json"))
    assert {n for n in names if n.startswith("binaries/")} == {
        f"binaries/{f}/Arm7{s}" for f, s in FMI2_FOLDERS.items()}
    assert cfg["platforms"] == list(native.PLATFORMS)
    with zipfile.ZipFile(build("arm7.urdf", name="Arm7", runtime="native", fmi=3)) as zf:
        assert {n for n in zf.namelist() if n.startswith("binaries/")} == {
            f"binaries/{p.name}/Arm7{p.suffix}" for p in native.PLATFORMS.values()}


def test_linux_binaries_need_glibc_2_17_and_libc_libm_only(tmp_path):
    """objdump -T (readelf for aarch64): no GLIBC symbol version newer than 2.17; DT_NEEDED only
    libc and libm; only fmi2* exported — x86-64 and aarch64."""
    unzip = _extract(_fmu("arm7.urdf", "Arm7"), tmp_path / "arm")
    for folder, machine in (("linux64", 62), ("aarch64-linux", 183)):
        lib = unzip / "binaries" / folder / "Arm7.so"
        assert binaries.elf_machine(lib) == machine
        versions = binaries.glibc_versions(lib)
        assert versions and max(versions) <= (2, 17), (folder, sorted(versions)[-3:])
        assert sorted(binaries.elf_needed(lib)) == ["libc.so.6", "libm.so.6"], folder
        exports = binaries.elf_exports(lib)
        assert FMI_FUNCTIONS <= exports and all(s.startswith("fmi2") for s in exports), folder


def test_windows_dll_imports_only_the_ucrt_and_kernel32(tmp_path):
    unzip = _extract(_fmu("arm7.urdf", "Arm7"), tmp_path / "arm")
    imports, exports = binaries.pe_imports_exports(unzip / "binaries" / "win64" / "Arm7.dll")
    assert "KERNEL32.dll" in imports and any(i.startswith("api-ms-win-crt-") for i in imports)
    assert all(i == "KERNEL32.dll" or i.startswith("api-ms-win-crt-") for i in imports), imports
    assert FMI_FUNCTIONS <= exports and all(s.startswith("fmi2") for s in exports), exports


def test_macos_images_cpu_libraries_and_fmi_exports(tmp_path):
    """darwin64 (FMI 2.0): one universal file with an x86_64 and an arm64 dylib; FMI 3.0's
    x86_64-darwin / aarch64-darwin: one image each.  Each loads only libSystem and exports the
    FMI functions the Linux library does (with Mach-O's leading underscore), nothing else."""
    unzip = _extract(_fmu("arm7.urdf", "Arm7"), tmp_path / "arm")
    linux = binaries.elf_exports(unzip / "binaries" / "linux64" / "Arm7.so")
    images = binaries.macho_slices((unzip / "binaries" / "darwin64" / "Arm7.dylib").read_bytes())
    assert [i.cpu for i in images] == ["x86_64", "arm64"]
    unzip3 = _extract(build("arm7.urdf", name="Arm7", runtime="native", fmi=3), tmp_path / "arm3")
    for tup, cpu in (("x86_64-darwin", "x86_64"), ("aarch64-darwin", "arm64")):
        [image] = binaries.macho_slices((unzip3 / "binaries" / tup / "Arm7.dylib").read_bytes())
        assert image.cpu == cpu
        assert any(s == "_fmi3DoStep" for s in image.exports)
        assert all(s.startswith("_fmi3") for s in image.exports - MACHO_LINKER), image.exports
    for image in images:
        assert image.filetype == binaries.MH_DYLIB
        assert image.dylibs == ["/usr/lib/libSystem.B.dylib"], image.dylibs
        assert {s.removeprefix("_") for s in image.exports - MACHO_LINKER} == linux
        assert image.min_macos == (11, 0)           # Big Sur (zig's default would be 15.0)


@pytest.mark.skipif(shutil.which("wine") is None, reason="needs wine (apt: wine64)")
def test_windows_dll_runs_under_wine(hosts, runs, references, wine_env):
    """The Windows DLL (FMI 2.0's win64, FMI 3.0's x86_64-windows) in fmu_host.exe (zig cc,
    x86_64-windows) under wine: q after the steps equals the x86-64 Linux binary's to 1e-12
    relative — arm, closed chain, bouncing ball."""
    for ident, fmu, unzip, steps, tau in runs:
        q = _run(["wine", str(hosts["windows"]), *_host_args(f"Z:{unzip}", fmu, steps, tau)],
                 wine_env)
        _close(q, references[ident])


@pytest.mark.skipif(shutil.which("qemu-aarch64") is None or not Path("/usr/aarch64-linux-gnu").is_dir(),
                    reason="needs qemu-user and libc6-arm64-cross (apt)")
def test_aarch64_library_runs_under_qemu(hosts, runs, references):
    """The aarch64-linux library (FMI 2.0 and 3.0) in fmu_host (zig cc, aarch64-linux-gnu.2.17)
    under qemu-aarch64 with Debian's aarch64 glibc: q equals the x86-64 Linux binary's to 1e-12
    relative."""
    for ident, fmu, unzip, steps, tau in runs:
        q = _run(["qemu-aarch64", "-L", "/usr/aarch64-linux-gnu", str(hosts["aarch64"]),
                  *_host_args(str(unzip), fmu, steps, tau)])
        _close(q, references[ident])


@pytest.mark.skipif(shutil.which("cmake") is None or shutil.which("cc") is None,
                    reason="needs cmake and a C compiler (fmpy's build_platform_binary)")
def test_fmi3_source_fmu_compiles_with_fmpy(tmp_path, monkeypatch):
    """The FMI 3.0 FMU without its binaries: fmpy reads sources/buildDescription.xml and compiles
    the sources (fmpy.build.build_platform_binary, CMake and the system compiler); the result
    steps the arm as the shipped binary does, to 1e-12."""
    from fmpy import read_model_description
    from fmpy.build import build_platform_binary

    from soa_fmu.fmpy_logging import simulate_fmu
    fmu = build("arm7.urdf", name="Arm7", runtime="native", fmi=3)
    unzip = _extract(fmu, tmp_path / "src")
    shutil.rmtree(unzip / "binaries")
    [config] = read_model_description(str(unzip)).buildConfigurations
    assert config.modelIdentifier == "Arm7"
    assert set(config.sourceFileSets[0].sourceFiles) == {
        p.name for p in (unzip / "sources").glob("*.c")}
    monkeypatch.setenv("CMAKE_BUILD_PARALLEL_LEVEL", str(os.cpu_count() or 2))
    (tmp_path / "cmake").mkdir()
    build_platform_binary(unzip, build_dir=tmp_path / "cmake", configuration="Debug")   # (-O0: quick)
    assert (unzip / "binaries" / "x86_64-linux" / "Arm7.so").is_file()
    start = {"tau": [0.5] * 7, "q0": [0.1 * k for k in range(7)]}
    a, b = (simulate_fmu(str(f), stop_time=0.3, output_interval=1e-3, start_values=start,
                         output=["q"]) for f in (fmu, unzip))
    qa, qb = np.array(a["q"].tolist()), np.array(b["q"].tolist())
    assert np.ptp(qa) > 0.01
    _close(qb, qa)


def test_missing_toolchain_is_one_line(tmp_path, monkeypatch, capsys):
    """Without zig: one line naming the first platform that needs it and --platforms host, no
    FMU; --platforms host then builds with the system compiler alone."""
    def missing():
        raise native.NativeBuildError("the cross toolchain is not installed (pip install ziglang)")
    monkeypatch.setattr(native, "zig", missing)
    model = str(REPO / "model_descriptions" / "examples" / "pendulum.toml")
    assert build_fmu.main([model, "-o", str(tmp_path / "p.fmu")]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err == ["soa-build-fmu: error: platform aarch64-linux: the cross toolchain is not "
                   "installed (pip install ziglang); build with --platforms host (or a list "
                   "without it)"]
    assert not (tmp_path / "p.fmu").exists()
    assert build_fmu.main([model, "-o", str(tmp_path / "h.fmu"), "--platforms", "host"]) == 0
    assert "binaries: linux64 (x86_64-linux)" in capsys.readouterr().out
    with zipfile.ZipFile(tmp_path / "h.fmu") as zf:
        assert [n for n in zf.namelist() if n.startswith("binaries/")] == [
            "binaries/linux64/pendulum.so"]


def test_failing_toolchain_and_unknown_platform_are_one_line(tmp_path, monkeypatch, capsys):
    """A platform whose compiler fails: one line naming it (and the way out); an unknown platform
    name: one line listing the known ones."""
    win = native.PLATFORMS["x86_64-windows"]
    monkeypatch.setitem(native.PLATFORMS, "x86_64-windows",
                        native.Platform(win.name, win.fmi2, "x86_64-nosuchos-gnu", win.suffix))
    model = str(REPO / "model_descriptions" / "examples" / "pendulum.toml")
    assert build_fmu.main([model, "-o", str(tmp_path / "p.fmu"),
                           "--platforms", "x86_64-windows,x86_64-linux"]) == 1
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith("soa-build-fmu: error: compiling the x86_64-windows binary failed "
                           "(zig cc): ") and line.endswith("build with --platforms host (or a "
                                                           "list without it) to skip it"), line
    assert not (tmp_path / "p.fmu").exists()
    assert build_fmu.main([model, "-o", str(tmp_path / "p.fmu"), "--platforms", "win64x"]) == 1
    assert capsys.readouterr().err == (
        "soa-build-fmu: error: unknown platform 'win64x': use all, host or a comma-separated list "
        f"of {', '.join(native.PLATFORMS)}\n")


def test_describe_and_build_log_list_the_platforms(capsys):
    from soa_fmu.cli import describe_main
    assert describe_main([str(_fmu("arm7.urdf", "Arm7"))]) == 0
    out = capsys.readouterr().out
    assert ("binaries: aarch64-linux, darwin64 (x86_64-darwin, aarch64-darwin), linux64 "
            "(x86_64-linux), win64 (x86_64-windows)") in out
    assert "7 bodies" in out or "nv = 7" in out
