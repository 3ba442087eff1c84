"""The native FMU's five binaries (docs/fmu.md, Platforms): what building them costs, and what the
host binary's toolchain costs a HIL loop.

* building the 7-dof arm's FMU for every platform: zig's one-time setup (each target's C library
  and compiler_rt, into an empty zig cache), the first build with an empty engine cache (every
  platform's engine objects compiled, side by side), the build again (engine cached: fmu_model.c
  per platform and the links) and another model's build (only the model changed) — wall time and
  the CPU time of the compilers (children), on this machine's cores; the host platform alone
  (the system compiler's objects) for reference.  A cold build is honest: an empty engine cache
  and a fresh zig local cache (native.compile_with gives every build its own, so zig reuses none
  of our compile outputs; only zig's C libraries stay, in its global cache), every compile job
  run and counted;
* where a cold build's CPU goes: the compiler CPU seconds of each platform's engine and of the
  costliest engine sources on each (native.BUILD_STATS' per-job rusage, medians of the cold
  builds), and the wall two idle cores would need for those jobs in the build's own order
  (longest first, one worker per core);
* the host binary in the C host (benchmarks/fmu_step_host.c through bench_fmu.c_host, the
  median step of setReal(τ) + doStep(h = 1 ms) + getReal, RK4): the shipped x86-64 Linux binary
  (gcc's objects linked by zig against glibc 2.17), gcc alone (compiled and linked by gcc: the
  build before zig) and zig cc alone (clang's objects); each ratio against gcc alone, measured in
  the same interleaved rounds.

* with --flags, what cheaper zig cc flags would save and cost (platforms_flags.txt): per flag set,
  the compiler CPU of the aarch64-linux engine (sources one after another) and the step of the
  7-dof arm (RK4) and of the flexible arm in the C host, their x86-64 Linux binaries compiled by
  zig cc with those flags (the step of the other targets cannot be timed here: qemu, wine), each
  as a ratio to the shipped -O2, in the same interleaved rounds.

    python benchmarks/bench_platforms.py [--no-setup] [--flags]

Writes benchmarks/results/platforms.txt, and platforms_setup.txt (zig's setup, measured in a
fresh zig cache of its own: about 2 minutes more) unless --no-setup; with --no-setup the run takes
about 2 minutes on 2 idle cores.
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


def idle_wall(jobs: list[tuple[str, str, float]], workers: int) -> float:
    """The wall ``workers`` idle cores need for the jobs (CPU s each) started in the order given,
    each on the first free core (what native._run_all's pool does)."""
    free = [0.0] * workers
    for _, _, cpu in jobs:
        free[free.index(min(free))] += cpu
    return max(free)


def where_cpu_goes(builds: list[list[tuple[str, str, float]]]) -> tuple[list[list], list[str]]:
    """Per engine source (the costliest, then the rest) and platform: the median compiler CPU s
    over the cold builds."""
    platforms = list(dict.fromkeys(p for p, _, _ in builds[0]))
    cpu = lambda b, p, n: sum(c for q, m, c in b if q == p and m == n)
    sources = list(dict.fromkeys(n for _, n, _ in builds[0]))
    med = {(p, n): statistics.median(cpu(b, p, n) for b in builds) for p in platforms
           for n in sources}
    order = sorted(sources, key=lambda n: -sum(med[p, n] for p in platforms))
    top, rest = order[:8], order[8:]
    rows = [[n] + [med[p, n] for p in platforms] + [sum(med[p, n] for p in platforms)]
            for n in top]
    rows.append([f"the other {len(rest)}"] + [sum(med[p, n] for n in rest) for p in platforms]
                + [sum(med[p, n] for p in platforms for n in rest)])
    rows.append(["all"] + [sum(med[p, n] for n in sources) for p in platforms]
                + [sum(med.values())])
    walls = [idle_wall(b, native.cores()) for b in builds]
    return [["", *platforms, "all"], rows], [
        f"{len(builds[0])} compile jobs per cold build ({len(sources)} sources incl. fmu_model.c, "
        f"{len(platforms)} platforms), each a real compilation (a new zig local cache for "
        f"every build; the cheapest job took {min(c for b in builds for _, _, c in b):.2f} s, "
        f"the costliest {max(c for b in builds for _, _, c in b):.2f} s); x86_64-linux: gcc -O3 "
        f"({' '.join(native.OBJECT_FLAGS)}), the others zig cc -O2.",
        f"these jobs in the build's order (longest first) on {native.cores()} idle cores: "
        f"{statistics.median(walls):.3g} s wall (a schedule of the measured CPU times, not a "
        "measurement); the bar needs half of that."]


def zig_setup(tmp: Path) -> str:
    """zig's one-time setup: the first build into an empty zig cache minus a cold build."""
    arm = EXAMPLES_DIR / "arm7.urdf"
    os.environ["SOA_FMU_CACHE_DIR"] = str(tmp / "cache")
    os.environ["ZIG_GLOBAL_CACHE_DIR"] = str(tmp / "zig")
    w, c = timed(lambda: build_fmu.build(arm, tmp / "a.fmu", name="Arm7"))
    shutil.rmtree(tmp / "cache")
    w2, c2 = timed(lambda: build_fmu.build(arm, tmp / "a.fmu", name="Arm7"))
    shutil.rmtree(tmp / "cache")
    return table("zig's one-time setup (each target's C library and compiler_rt, into an empty "
                 "zig cache)", ["", "wall s", "CPU s (compilers)"],
                 [["first build minus a cold build", w - w2, c - c2]],
                 [f"first build with an empty zig cache: {w:.3g} s wall, {c:.3g} s CPU; "
                  f"{os.cpu_count()} cores, load average at the end {os.getloadavg()[0]:.1f}."])


def build_times(tmp: Path) -> tuple[list[list], list[str], list]:
    arm, box = EXAMPLES_DIR / "arm7.urdf", EXAMPLES_DIR / "two_arms_box.toml"
    os.environ["SOA_FMU_CACHE_DIR"] = str(tmp / "cache")
    rows, notes = [], []
    host = native.host_platform().name
    cold, warm, other, alone, jobs = [], [], [], [], []
    for _ in range(3):
        shutil.rmtree(tmp / "cache", ignore_errors=True)
        cold.append(timed(lambda: build_fmu.build(arm, tmp / "a.fmu", name="Arm7")))
        jobs.append(native.BUILD_STATS["jobs"])
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
                 f"{os.getloadavg()[0]:.1f} (a shared machine: wall time waits for cores; CPU time "
                 f"grows less, with the cores' contention); the model: 7-dof arm (another: two_arms_box).")
    return rows, notes, jobs


# zig cc flag sets evaluated by --flags (zig cc takes -O1 as its -O2, ReleaseFast: clang's own -O1
# goes through -Xclang)
FLAG_SETS = {"-O2 (shipped)": ("-O2",), "-Os": ("-Os",),
             "-O2 -fno-slp-vectorize": ("-O2", "-fno-slp-vectorize"),
             "-O2 -fno-unroll-loops": ("-O2", "-fno-unroll-loops"),
             "clang -O1": ("-O2", "-Xclang", "-O1")}


def flag_sets(tmp: Path) -> tuple[list[list], list[str]]:
    """Per FLAG_SETS entry: the aarch64-linux engine's compiler CPU (one job at a time) and the
    x86-64 Linux binary's step (arm, flexible arm) in the C host, ratios to the shipped -O2."""
    os.environ["SOA_FMU_CACHE_DIR"] = str(tmp / "flags_cache")
    host, arm64 = native.host_platform(), native.PLATFORMS["aarch64-linux"]
    zig_for = lambda p: [native.zig(), "cc", "-target", p.target]
    base = tuple(f for f in native.ZIG_FLAGS if f != "-O2")
    cpu, fmus = {}, []
    for label, flags in FLAG_SETS.items():
        for model, ident in (("arm7.urdf", "Arm7"), ("flexible_arm.toml", "flexible_arm")):
            fmu = build_fmu.build(EXAMPLES_DIR / model, tmp / f"{ident}.fmu", name=ident,
                                  platforms="host")
            member = f"binaries/{host.fmi2}/{ident}{host.suffix}"
            with zipfile.ZipFile(fmu) as zf:
                sources = {Path(n).name: zf.read(n) for n in zf.namelist()
                           if n.startswith("sources/")}
            if ident == "Arm7":                   # the aarch64 engine, one job at a time
                os.environ["SOA_FMU_CACHE_DIR"] = str(tmp / f"flags_cache_{len(cpu)}")
                with_one_core(lambda: native.compile_with(
                    sources, ident, 2, [native.Toolchain(arm64, zig_for(arm64), base + flags
                                                         + ("-fPIC",), zig_for(arm64))]))
                cpu[label] = sum(c for _, n, c in native.BUILD_STATS["jobs"]
                                 if n != native.MODEL_SOURCE)
            tc = native.Toolchain(host, zig_for(host), base + flags + ("-fPIC",), zig_for(host))
            lib = native.compile_with(sources, ident, 2, [tc])[member]
            out = tmp / f"{ident}_{len(fmus)}.fmu"
            with zipfile.ZipFile(fmu) as src, zipfile.ZipFile(out, "w") as dst:
                for n in src.namelist():
                    dst.writestr(n, lib if n == member else src.read(n))
            fmus.append((f"{ident} {label}", out))
    best, _, _ = best_rounds(fmus, tmp, rounds=5)
    ref = next(iter(FLAG_SETS))
    rows = [[label, cpu[label], f"{cpu[label] / cpu[ref]:.3f}",
             *(f"{best[f'{i} {label}'] / best[f'{i} {ref}']:.3f}" for i in ("Arm7", "flexible_arm"))]
            for label in FLAG_SETS]
    return rows, [
        f"the shipped -O2 steps: arm {best[f'Arm7 {ref}'] * 1e6:.3g} µs, flexible arm "
        f"{best[f'flexible_arm {ref}'] * 1e6:.3g} µs (zig cc's x86-64 Linux binary; RK4 for the "
        "arm, the flexible arm's own integrator); best of 5 interleaved rounds; load average at the "
        f"end {os.getloadavg()[0]:.1f}."]


def with_one_core(fn):
    """fn() with native's compile pool cut to one worker (each job's CPU time undisturbed by the
    others)."""
    saved = native.cores
    native.cores = lambda: 1
    try:
        return fn()
    finally:
        native.cores = saved


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
    ap.add_argument("--flags", action="store_true",
                    help="only evaluate cheaper zig cc flags (platforms_flags.txt)")
    args = ap.parse_args(argv)
    if args.flags:
        tmp = Path(tempfile.mkdtemp(prefix="bench_platforms_"))
        saved = os.environ.get("SOA_FMU_CACHE_DIR")
        try:
            rows, notes = flag_sets(tmp)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
            if saved is None:
                os.environ.pop("SOA_FMU_CACHE_DIR", None)
            else:
                os.environ["SOA_FMU_CACHE_DIR"] = saved
        write_result("platforms_flags.txt", table(
            "Cheaper zig cc flags: what they would save (aarch64-linux engine) and cost (x86-64 step)",
            ["flags", "engine CPU s", "/ -O2", "arm step / -O2", "flexible arm step / -O2"],
            rows, notes))
        return 0
    tmp = Path(tempfile.mkdtemp(prefix="bench_platforms_"))
    saved = {k: os.environ.get(k) for k in ("SOA_FMU_CACHE_DIR", "ZIG_GLOBAL_CACHE_DIR")}
    try:
        if not args.no_setup:
            write_result("platforms_setup.txt", zig_setup(tmp))
        rows, notes, jobs = build_times(tmp)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        text = table("Building the 7-dof arm's native FMU for every platform",
                     ["", "wall s", "CPU s (compilers)", "bar (wall)"], rows, notes)
        (header, rows), notes = where_cpu_goes(jobs)
        text += "\n" + table("Where a cold build's compiler CPU goes: seconds per engine source and "
                             "platform", header, rows, notes)
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
