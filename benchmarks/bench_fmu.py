"""FMU speed (SPEC §6): the 7-dof arm at h = 1 ms (RK4) through fmpy's FMU2Slave, measured as
setReal(τ) + doStep + getReal(q, q̇, q̈) per step, next to a trivial pythonfmu FMU with the same
interface (the floor set by fmpy + pythonfmu) and the engine's own Simulator.step in the same run;
instantiate + initialize in a fresh process from a fresh extraction (warm and cold kernel cache);
and, with --soak N, the resident memory over N steps.

    python benchmarks/bench_fmu.py [--steps 20000] [--soak 1000000]

Writes benchmarks/results/fmu.txt.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path


HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path[:0] = [str(HERE), str(REPO)]
from timing import median_time, table, write_result  # noqa: E402

import build_fmu  # noqa: E402
from model_descriptions import EXAMPLES_DIR  # noqa: E402

H = 1e-3
Q0 = {f"q0[{i + 1}]": 0.4 + 0.1 * i for i in range(7)}
BAR_STEP_US = 40.0
BAR_WARM_S = 1.0
BAR_COLD_S = 60.0

TRIVIAL = '''
from pythonfmu import Fmi2Causality, Fmi2Slave, Real


class Trivial(Fmi2Slave):
    """7 inputs, 21 outputs, do_step does nothing: the cost of fmpy + pythonfmu alone."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.values = [0.0] * 28
        for i in range(28):
            self.register_variable(Real(
                f"x{i}", causality=Fmi2Causality.input if i < 7 else Fmi2Causality.output,
                getter=lambda i=i: self.values[i],
                setter=lambda v, i=i: self.values.__setitem__(i, v)))

    def get_real(self, vrs):
        v = self.values
        return [v[i] for i in vrs]

    def set_real(self, vrs, values):
        v = self.values
        for i, x in zip(vrs, values):
            v[i] = x

    def do_step(self, t, h):
        return True
'''


def build_fmus(tmp: Path) -> tuple[Path, Path]:
    arm = build_fmu.build(EXAMPLES_DIR / "arm7.urdf", tmp / "Arm7.fmu", name="Arm7")
    src = tmp / "trivial_src"
    src.mkdir()
    (src / "trivial.py").write_text(TRIVIAL)
    from pythonfmu.builder import FmuBuilder
    trivial = FmuBuilder.build_FMU(src / "trivial.py", dest=tmp / "Trivial.fmu")
    return arm, Path(trivial)


class Slave:
    """An fmpy FMU2Slave, initialized, with the benchmark's value references."""

    def __init__(self, path: Path, tau: list[str], out: list[str], start: dict | None = None):
        from fmpy import extract, read_model_description
        from fmpy.fmi2 import FMU2Slave
        md = read_model_description(str(path))
        vr = {v.name: v.valueReference for v in md.modelVariables}
        self.tau, self.out = [vr[n] for n in tau], [vr[n] for n in out]
        self.dir = extract(str(path))
        self.fmu = FMU2Slave(guid=md.guid, unzipDirectory=self.dir,
                             modelIdentifier=md.coSimulation.modelIdentifier, instanceName="bench")
        self.fmu.instantiate()
        self.fmu.setupExperiment(startTime=0.0)
        for name, value in (start or {}).items():
            self.fmu.setReal([vr[name]], [value])
        self.fmu.enterInitializationMode()
        self.fmu.exitInitializationMode()
        self.t = 0.0
        self.u = [0.0] * 7

    def step(self) -> None:
        """setReal(τ) + doStep + getReal(q, q̇, q̈): one communication step."""
        fmu = self.fmu
        fmu.setReal(self.tau, self.u)
        fmu.doStep(self.t, H)
        fmu.getReal(self.out)
        self.t += H

    def close(self) -> None:
        self.fmu.terminate()
        self.fmu.freeInstance()
        shutil.rmtree(self.dir, ignore_errors=True)


def step_costs(arm: Path, trivial: Path) -> list[list]:
    import soa_fmu as sf
    from soa_fmu.io import load_model
    names = ([f"tau[{i}]" for i in range(1, 8)],
             [f"{p}[{i}]" for p in ("q", "qd", "qdd") for i in range(1, 8)])
    ours = Slave(arm, *names, start=Q0)                   # swinging under gravity, τ = 0
    triv = Slave(trivial, [f"x{i}" for i in range(7)], [f"x{i}" for i in range(7, 28)])
    for _ in range(500):
        ours.step()
        triv.step()
    sim = sf.Simulator(load_model(EXAMPLES_DIR / "arm7.urdf"), q0=list(Q0.values()))
    t_ours = median_time(ours.step, number=2000, repeat=11)
    t_triv = median_time(triv.step, number=2000, repeat=11)
    t_sim = median_time(lambda: sim.step(H), number=2000, repeat=11)
    ours.close()
    triv.close()
    us = 1e6
    return [["soa_fmu FMU (7-dof arm, RK4)", t_ours * us, t_ours / t_triv, f"≤ {BAR_STEP_US:g} µs"],
            ["trivial pythonfmu FMU (floor)", t_triv * us, 1.0, ""],
            ["Simulator.step alone (no FMU)", t_sim * us, t_sim / t_triv, ""],
            ["FMU layer (FMU − floor − step)", (t_ours - t_triv - t_sim) * us,
             (t_ours - t_triv - t_sim) / t_triv, ""]]


INSTANTIATE = textwrap.dedent('''
    import json, sys, tempfile, time, zipfile
    t0 = time.perf_counter()
    from fmpy import read_model_description
    from fmpy.fmi2 import FMU2Slave
    path = sys.argv[1]
    md = read_model_description(path)
    d = tempfile.mkdtemp(prefix="fresh_extraction_")
    zipfile.ZipFile(path).extractall(d)
    t1 = time.perf_counter()
    fmu = FMU2Slave(guid=md.guid, unzipDirectory=d,
                    modelIdentifier=md.coSimulation.modelIdentifier, instanceName="i")
    fmu.instantiate()
    fmu.setupExperiment(startTime=0.0)
    fmu.enterInitializationMode()
    fmu.exitInitializationMode()
    fmu.doStep(0.0, 1e-3)
    t2 = time.perf_counter()
    fmu.terminate()
    fmu.freeInstance()
    print(json.dumps({"instantiate_init": t2 - t1, "process": t2 - t0}))
''')


def fresh_process(arm: Path, env: dict, cwd: str) -> dict:
    out = subprocess.run([sys.executable, "-c", INSTANTIATE, str(arm)], capture_output=True,
                         text=True, env=env, cwd=cwd, timeout=900)
    if out.returncode != 0:
        raise RuntimeError(f"fresh-process instantiation failed: {out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def startup(arm: Path, tmp: Path) -> list[list]:
    base = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "SOA_FMU_ENGINE")}
    installed = dict(base, PYTHONPATH=str(REPO))       # soa_fmu importable (pip install -e)
    rows = []
    for label, env in (("installed soa_fmu, warm cache", installed),
                       ("bundled engine only, warm cache", base)):
        fresh_process(arm, env, str(tmp))               # warms the kernel cache if needed
        runs = sorted(fresh_process(arm, env, str(tmp))["instantiate_init"] for _ in range(3))
        rows.append([label, runs[1], f"≤ {BAR_WARM_S:g} s"])
    cold = dict(base, SOA_FMU_CACHE_DIR=str(tmp / "cold_cache"))
    rows.append(["bundled engine, cold (empty cache)",
                 fresh_process(arm, cold, str(tmp))["instantiate_init"], f"≤ {BAR_COLD_S:g} s"])
    return rows


def rss_mib() -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def soak(arm: Path, n: int) -> list[list]:
    s = Slave(arm, [f"tau[{i}]" for i in range(1, 8)],
              [f"{p}[{i}]" for p in ("q", "qd", "qdd") for i in range(1, 8)], start=Q0)
    rows, checkpoints = [], {n // 10, n // 2, n}
    t0 = time.perf_counter()
    for k in range(1, n + 1):
        s.step()
        if k in checkpoints:
            rows.append([f"{k:,}", rss_mib(), time.perf_counter() - t0])
    s.close()
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--soak", type=int, default=0, help="also run N steps and report RSS")
    ap.add_argument("--no-startup", action="store_true", help="skip the fresh-process timings")
    args = ap.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="bench_fmu_"))
    try:
        arm, trivial = build_fmus(tmp)
        text = table("FMU step: setReal(τ) + doStep(h = 1 ms) + getReal(q, q̇, q̈) via fmpy FMU2Slave",
                     ["", "µs per step", "× trivial FMU", "bar"], step_costs(arm, trivial),
                     ["7-dof arm (model_descriptions/examples/arm7.urdf), RK4, max_step = h; "
                      "medians of 11 × 2000 steps, CPU time of the calling thread."])
        if not args.no_startup:
            text += "\n" + table("Instantiate + initialize + first step, fresh process, fresh "
                                 "extraction", ["engine", "seconds", "bar"], startup(arm, tmp),
                                 ["warm: median of 3 runs after one warm-up run; cold: every "
                                  "kernel compiled (empty SOA_FMU_CACHE_DIR)."])
        if args.soak:
            rows = soak(arm, args.soak)
            growth = rows[-1][1] - rows[0][1]
            text += "\n" + table(f"Memory over {args.soak:,} steps", ["step", "RSS MiB", "s"], rows,
                                 [f"RSS growth from step {rows[0][0]} to {rows[-1][0]}: "
                                  f"{growth:+.2f} MiB"])
        write_result("fmu.txt", text)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
