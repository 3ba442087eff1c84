"""Sweep throughput (issues 11, 23): 64 runs of the 7-dof arm FMU (h = 1 ms, RK4), of 1 s (native
and python flavours) and of 10 s (native), as a serial loop of fmpy.simulate_fmu in one process,
and by soa_fmu.sweep with 1 and 2 local worker processes (1 thread each); bar: the local default's
first sweep (client=None: the process's cluster started by the call — its fork server, scheduler
and 2 workers on this 2-core machine) ≥ 1.7 × the serial loop, its start included.

    python benchmarks/bench_sweep.py [--runs 64] [--repeat 5]

Writes benchmarks/results/sweep.txt.  Wall times (throughput is what a user waits for), medians of
``--repeat`` runs (3 for the 10 s runs), each ratio against a serial loop run just before it; the
sweeps run in a fresh process each time (no cluster, fork server, FMU or worker left over), which
times:

* **first sweep**: ``sweep(client=None)`` from the call to its return — the fork server's start
  (its imports), the scheduler's and the workers' starts, loading the FMU on every worker, the
  runs, the Dataset — in a process that has imported the library and its dependencies
  (dask.distributed, xarray) before;
* **… + imports**: the same, its timer started before those imports (the first sweep of a fresh
  process, e.g. the ``soa-sweep`` command, pays both);
* **second sweep**: the next ``sweep(client=None)`` of that process (other samples), on the
  cluster the first one started, its workers holding the FMU: what every later sweep costs.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path[:0] = [str(HERE), str(REPO)]
from timing import table, write_result  # noqa: E402

import build_fmu  # noqa: E402
import soa_fmu as sf  # noqa: E402
from model_descriptions import EXAMPLES_DIR  # noqa: E402

BAR = 1.7
SPEC = {f"q0[{i}]": "uniform(-0.5, 0.5)" for i in range(1, 8)}


def serial(fmu: Path, samples, stop: float) -> float:
    from fmpy import simulate_fmu
    t0 = time.perf_counter()
    for _, row in samples.iterrows():
        simulate_fmu(str(fmu), start_values=row.to_dict(), stop_time=stop, step_size=1e-3,
                     output_interval=1e-3, output=["q[1]"])
    return time.perf_counter() - t0


def child(fmu: str, runs: int, stop: float, workers: int | None, imports: bool) -> None:
    """In a fresh process: time two sweep(client=None) calls, the first starting the local
    cluster (``imports``: its timer started before the library's imports too), the second reusing
    it; prints {"first": s, "second": s}."""
    t0 = time.perf_counter()
    import dask.distributed  # noqa: F401
    import xarray  # noqa: F401
    try:
        import dask.array  # noqa: F401  (xarray imports it when it builds a Dataset)
    except ImportError:
        pass
    first, second = sf.sample(SPEC, runs, 1), sf.sample(SPEC, runs, 2)
    t1 = time.perf_counter()
    ds = sf.sweep(fmu, first, stop, step=1e-3, outputs=["q[1]"], workers=workers,
                  progress=False)
    t2 = time.perf_counter()
    again = sf.sweep(fmu, second, stop, step=1e-3, outputs=["q[1]"], progress=False)
    t3 = time.perf_counter()
    assert ds.attrs["failures"] == again.attrs["failures"] == 0
    assert ds.sizes["sample"] == again.sizes["sample"] == runs
    assert again.attrs["scheduler"] == ds.attrs["scheduler"]           # the same cluster
    sf.shutdown_cluster()
    # end and reap the fork server, so that its and its workers' CPU time counts as this
    # process's own (measured() below tells the sweep's load from other jobs')
    from multiprocessing import forkserver
    pid = getattr(forkserver._forkserver, "_forkserver_pid", None)
    if pid:
        os.kill(pid, signal.SIGTERM)
        os.waitpid(pid, 0)
    print(json.dumps({"first": (t2 - t0) if imports else (t2 - t1), "second": t3 - t2}))


def forkserver_child() -> None:
    """In a fresh process that imported what ``child`` imports: the local cluster's fork server
    started and one process forked from it (sweep's first step, before any worker can start);
    prints {"forkserver": s}."""
    import dask.distributed  # noqa: F401
    import xarray  # noqa: F401
    import multiprocessing
    from soa_fmu.sweep import _start_forkserver   # (its preload: the workers' modules)
    t0 = time.perf_counter()
    _start_forkserver()
    p = multiprocessing.get_context("forkserver").Process(target=os.getpid)
    p.start()
    p.join()
    print(json.dumps({"forkserver": time.perf_counter() - t0}))


def forkserver_ready() -> float:
    cmd = [sys.executable, __file__, "--forkserver-child"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, cwd=REPO).stdout
    return json.loads(out.strip().splitlines()[-1])["forkserver"]


def local_default(fmu: Path, runs: int, stop: float, workers: int | None,
                  imports: bool) -> dict:
    cmd = [sys.executable, __file__, "--child", str(fmu), "--runs", str(runs), "--stop",
           str(stop), "--workers", str(workers or 0)] + (["--imports"] if imports else [])
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, cwd=REPO).stdout
    return json.loads(out.strip().splitlines()[-1])


def median(xs: list[float]) -> float:
    return sorted(xs)[len(xs) // 2]


# ---- other jobs on this (shared) machine: a 2-worker speed-up needs both cores
def _busy_s() -> float:
    """CPU seconds all processes of the machine have used since boot (/proc/stat)."""
    with open("/proc/stat") as fh:
        f = [int(x) for x in fh.readline().split()[1:]]
    return (sum(f[:8]) - f[3] - f[4]) / os.sysconf("SC_CLK_TCK")     # less idle and iowait


def _own_s() -> float:
    """CPU seconds of this process and its ended children (the sweeps' processes)."""
    import resource
    a, b = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return a.ru_utime + a.ru_stime + b.ru_utime + b.ru_stime


_PATIENCE = [300.0]      # seconds of waiting left for the whole benchmark


def wait_quiet(limit: float = 60.0, cores: float = 0.2) -> None:
    """Wait (≤ ``limit`` s, ≤ 300 s in all) until other jobs keep less than ``cores`` cores busy."""
    t_start = time.monotonic()
    t_end = t_start + min(limit, _PATIENCE[0])
    while time.monotonic() < t_end:
        b0, t0 = _busy_s(), time.monotonic()
        time.sleep(0.5)
        if (_busy_s() - b0) / (time.monotonic() - t0) < cores:
            break
    _PATIENCE[0] -= time.monotonic() - t_start


def measured(fn) -> tuple[float, float]:
    """(fn's result, the cores other jobs kept busy on average meanwhile)."""
    b0, o0, t0 = _busy_s(), _own_s(), time.monotonic()
    r = fn()
    dt = time.monotonic() - t0
    return r, max(0.0, (_busy_s() - b0) - (_own_s() - o0)) / dt


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=64)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--stop", type=float, default=1.0, help=argparse.SUPPRESS)
    ap.add_argument("--workers", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--imports", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--forkserver-child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.forkserver_child:
        forkserver_child()
        return 0
    if args.child:
        child(args.child, args.runs, args.stop, args.workers or None, args.imports)
        return 0
    tmp = Path(tempfile.mkdtemp(prefix="bench_sweep_"))
    rows, verdict, loaded = [], [], []
    cases = [("native", 1.0, args.repeat), ("python", 1.0, args.repeat),
             ("native", 10.0, max(1, min(args.repeat, 3)))]
    try:
        fmus = {rt: build_fmu.build(EXAMPLES_DIR / "arm7.urdf", tmp / f"Arm7_{rt}.fmu",
                                    name=f"Arm7_{rt}", runtime=rt) for rt in ("native", "python")}
        for runtime, stop, repeat in cases:
            fmu, case = fmus[runtime], f"{runtime}, {stop:g} s"
            samples = sf.sample(SPEC, args.runs, 1)
            children = [  # workers, + imports?
                (1, False), (None, False), (None, True)]
            labels = {(1, False, "first"): ("1 worker, first sweep", False),
                      (1, False, "second"): ("1 worker, second sweep", False),
                      (None, False, "first"): ("2 workers, first sweep", True),
                      (None, True, "first"): ("2 workers, first sweep + imports", False),
                      (None, False, "second"): ("2 workers, second sweep", False)}
            t_serial = []
            pairs: dict[tuple, list] = {key: [] for key in labels}
            for _ in range(repeat):          # each measurement next to its own serial loop
                for workers, imports in children:
                    wait_quiet()
                    (ts, t), other = measured(lambda: (
                        serial(fmu, samples, stop),
                        local_default(fmu, args.runs, stop, workers, imports)))
                    t_serial.append(ts)
                    loaded.append(other)
                    for which in ("first", "second"):
                        if (workers, imports, which) in pairs:
                            pairs[workers, imports, which].append((ts / t[which], t[which], other))
            ts = median(t_serial)
            rows.append([f"{case}: serial loop of simulate_fmu", ts, args.runs / ts, "1", "", ""])
            if (runtime, stop) == ("native", 1.0):     # what no first sweep can go below
                fs = []
                for _ in range(repeat):
                    wait_quiet()
                    fs.append(forkserver_ready())
                second = median([p[1] for p in pairs[None, False, "second"]])
                floor = (f"{case}: the fork server's start alone (a fresh Python importing the "
                         f"workers' modules, then one fork) takes {median(fs):.3g} s (median of "
                         f"{repeat}); with the {second:.3g} s the second sweep takes on the "
                         f"started cluster, no first sweep beats serial / (fork server + second "
                         f"sweep) = {ts / (median(fs) + second):.2f} ×")
            for key, (label, bar) in labels.items():
                # pairs during which other jobs kept < 0.25 core busy; all if there is none
                quiet = [p for p in pairs[key] if p[2] < 0.25] or pairs[key]
                t, r = median([p[1] for p in quiet]), median([p[0] for p in quiet])
                mark = f"≥ {BAR:g}" if bar else ""
                ok = ("PASS" if r >= BAR else "FAIL") if bar else ""
                rows.append([f"{case}: sweep, {label}", t, args.runs / t, f"{r:.2f}", mark, ok])
                if bar:
                    verdict.append(f"{case}: the first local-default sweep {r:.2f} × the serial "
                                   f"loop (bar ≥ {BAR:g}): {ok}")
        verdict.append(floor)
        write_result("sweep.txt", table(
            f"Sweep throughput: {args.runs} runs of the 7-dof arm FMU, h = 1 ms, on this 2-core "
            f"machine (medians of {args.repeat}, 3 for 10 s)",
            ["", "wall s", "runs/s", "× serial", "bar", ""], rows,
            [*verdict,
             "× serial: median of the ratios of each measurement to a serial loop run just "
             "before it; wall s: medians; both over the pairs during which other jobs on the "
             "machine kept < 0.25 core busy (all pairs if none was; each pair starts once the "
             f"machine is quiet, or after 60 s, 300 s in all): {sum(o < 0.25 for o in loaded)} of "
             f"{len(loaded)} pairs were.",
             "first sweep: sweep(client=None) from call to return in a fresh process that "
             "imported dask.distributed and xarray beforehand — the fork server started (its "
             "imports), the scheduler and workers started, the FMU loaded on each worker, the "
             "runs, the Dataset; + imports: the timer started before those imports; second "
             "sweep: the next sweep(client=None) of that process, on the cluster the first "
             "started. 2 workers = the local default on this 2-core machine. No 16-core machine "
             "was available: the 16-core bar of issue 23 (≥ 10 × for 256 runs × 2 s) is not "
             "measured here."]))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
