"""The native FMU's five binaries (docs/fmu.md, Platforms): what building them costs, and what the
host binary's toolchain costs a HIL loop.

* building the 7-dof arm's FMU for every platform: zig's one-time setup (each target's C library
  and compiler_rt, into an empty zig cache), the first build with an empty engine cache (every
  platform's engine objects compiled, side by side), the build again (engine cached: fmu_model.c
  per platform and the links) and another model's build (only the model changed) — wall time and
  the CPU time of the compilers (children), on this machine's cores; the host platform alone
  (the system compiler's objects) for reference;
* the host binary in the C host (benchmarks/fmu_step_host.c through bench_fmu.c_host, the
  median step of setReal(τ) + doStep(h = 1 ms) + getReal, RK4): the shipped x86-64 Linux binary
  (gcc's objects linked by zig against glibc 2.17), gcc alone (compiled and linked by gcc: the
  build before zig) and zig cc alone (clang's objects); each ratio against gcc alone, measured in
  the same interleaved rounds.

    python benchmarks/bench_platforms.py [--no-setup]

Writes benchmarks/results/platforms.txt.
"""
from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import sys
import tempfile
import time
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path[:0] = [str(HERE), str(REPO)]
from bench_fmu import best_rounds  # noqa: E402
from timing import table, write_result  # noqa: E402

import build_fmu  # noqa: E402
from model_descriptions import EXAMPLES_DIR  # noqa: E402
from soa_fmu.fmu import native  # noqa: E402

BAR_COLD_S = 10.0          # all five binaries, empty engine cache (zig's setup excluded)
BAR_REBUILD_S = 2.0        # only the model changed
BAR_HOST_STEP = 1.05       # the shipped host binary's step / gcc's


def timed(fn) -> tuple[float, float]:
    """(wall s, CPU s of the child processes) of fn()."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    fn()
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def build_times(tmp: Path, setup: bool) -> tuple[list[list], list[str]]:
    arm, box = EXAMPLES_DIR / "arm7.urdf", EXAMPLES_DIR / "two_arms_box.toml"
    os.environ["SOA_FMU_CACHE_DIR"] = str(tmp / "cache")
    rows, notes = [], []
    if setup:
        os.environ["ZIG_GLOBAL_CACHE_DIR"] = str(tmp / "zig")
        w, c = timed(lambda: build_fmu.build(arm, tmp / "a.fmu", name="Arm7"))
        shutil.rmtree(tmp / "cache")
        w2, c2 = timed(lambda: build_fmu.build(arm, tmp / "a.fmu", name="Arm7"))
        shutil.rmtree(tmp / "cache")
        rows.append(["zig's one-time setup (empty zig cache; first build minus a cold build)",
                     w - w2, c - c2, ""])
        notes.append(f"first build with an empty zig cache: {w:.3g} s wall, {c:.3g} s CPU.")
    host = native.host_platform().name
    cold, warm, other, alone = [], [], [], []
    for _ in range(3):
        shutil.rmtree(tmp / "cache", ignore_errors=True)
        cold.append(timed(lambda: build_fmu.build(arm, tmp / "a.fmu", name="Arm7")))
        warm.append(timed(lambda: build_fmu.build(arm, tmp / "b.fmu", name="Arm7")))
        other.append(timed(lambda: build_fmu.build(box, tmp / "c.fmu")))
        shutil.rmtree(tmp / "cache")
        alone.append(timed(lambda: build_fmu.build(arm, tmp / "h.fmu", name="Arm7",
                                                   platforms="host")))
    med = lambda runs, i: statistics.median(r[i] for r in runs)
    rows += [["all five, empty engine cache", med(cold, 0), med(cold, 1), f"≤ {BAR_COLD_S:g} s"],
             ["all five again (engine cached)", med(warm, 0), med(warm, 1), f"≤ {BAR_REBUILD_S:g} s"],
             ["all five, another model (engine cached)", med(other, 0), med(other, 1),
              f"≤ {BAR_REBUILD_S:g} s"],
             [f"{host} alone, empty engine cache (gcc's objects)", med(alone, 0), med(alone, 1), ""]]
    notes.append(f"medians of 3; {os.cpu_count()} cores, load average at the end "
                 f"{os.getloadavg()[0]:.1f} (a shared machine: wall time waits for cores, CPU time "
                 f"does not); the model: 7-dof arm (another: two_arms_box).")
    return rows, notes


def host_step(tmp: Path) -> tuple[list[list], list[str]]:
    """The arm's x86-64 Linux binary from three toolchains, stepped in the C host."""
    fmu = build_fmu.build(EXAMPLES_DIR / "arm7.urdf", tmp / "Arm7.fmu", name="Arm7")
    host = native.host_platform()
    member = f"binaries/{host.fmi2}/Arm7{host.suffix}"
    with zipfile.ZipFile(fmu) as zf:
        sources = {Path(n).name: zf.read(n) for n in zf.namelist() if n.startswith("sources/")}
    gcc = [native.compiler()]
    zig = [native.zig(), "cc", "-target", host.target]
    chains = {"gcc (compiled and linked by gcc)": native.Toolchain(host, gcc, native.OBJECT_FLAGS, gcc),
              "zig cc (clang's objects)": native.Toolchain(
                  host, zig, native.ZIG_FLAGS + ("-fPIC",), zig)}
    fmus = [("shipped (gcc's objects, zig's link, glibc 2.17)", fmu, "rk4")]
    for k, (label, tc) in enumerate(chains.items()):
        lib = native.compile_with(sources, "Arm7", 2, [tc])[member]
        out = tmp / f"Arm7_{k}.fmu"
        with zipfile.ZipFile(fmu) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
            for n in src.namelist():
                dst.writestr(n, lib if n == member else src.read(n))
        fmus.append((label, out, "rk4"))
    best, kept, notes = best_rounds(fmus, tmp, rounds=5)
    ref = best["gcc (compiled and linked by gcc)"]
    rows = [[label, best[label] * 1e6, f"{best[label] / ref:.3f}",
             f"≤ {BAR_HOST_STEP:g}" if label.startswith("shipped") else ""] for label, _, _ in fmus]
    return rows, ["best of 5 interleaved rounds of 100000 steps (per row the round with the lowest "
                  "median); the host binary is the shipped one: gcc's objects are faster than "
                  "clang's here (gcc-tuned kernels: unroll pragmas, optimize attributes)."]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--no-setup", action="store_true", help="skip zig's one-time setup timing")
    args = ap.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="bench_platforms_"))
    saved = {k: os.environ.get(k) for k in ("SOA_FMU_CACHE_DIR", "ZIG_GLOBAL_CACHE_DIR")}
    try:
        rows, notes = build_times(tmp, not args.no_setup)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        text = table("Building the 7-dof arm's native FMU for every platform",
                     ["", "wall s", "CPU s (compilers)", "bar (wall)"], rows, notes)
        rows, notes = host_step(tmp)
        text += "\n" + table("The host binary in the C host: setReal(τ) + doStep(h = 1 ms) + "
                             "getReal(q, q̇, q̈), 7-dof arm, RK4",
                             ["", "median µs", "/ gcc", "bar"], rows, notes)
        write_result("platforms.txt", text)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
