"""Sweeps on a many-core machine (issue 23), one mode per call; not part of ``make bench`` (it
wants a quiet machine with many cores).  The FMU is the native arm7 FMU
(``soa-build-fmu model_descriptions/examples/arm7.urdf``); each line printed is stamped with the
seconds since the start.

    python benchmarks/sweep_scale.py Arm7.fmu scale        # serial loop, first and second sweep
    python benchmarks/sweep_scale.py Arm7.fmu consecutive  # 1, 2, 4, all, 2, 1 workers in a row
    python benchmarks/sweep_scale.py Arm7.fmu busy         # the same with two busy BLAS threads

``scale``: 256 runs × 2 s (h = 1 ms) as a serial loop of ``simulate_fmu``, then the local
default's first sweep in this process (cluster start included; dask.distributed and xarray
imported before the timer) and a second one on the same cluster, timed with Dask's task stream:
the compute time of the batches against the wall time says how well the workers are used.
``consecutive``/``busy``: six sweeps of 4 runs × 0.5 s per worker, each under a watchdog
(faulthandler, which needs no GIL) that dumps every thread's stack and ends the process after
``--limit`` s."""
from __future__ import annotations

import argparse
import faulthandler
import os
import sys
import threading
import time

import numpy as np

T0 = time.time()


def log(*a) -> None:
    print(f"[{time.time() - T0:7.2f}]", *a, flush=True)


def busy(stop: threading.Event, lock: threading.Lock) -> None:
    """A notebook's other threads: BLAS work under a lock, all along."""
    a = np.random.default_rng(0).random((64, 64))
    while not stop.is_set():
        with lock:
            np.linalg.eigvals(a)


def consecutive(fmu: str, busy_threads: int, limit: float) -> None:
    import soa_fmu as sf
    stop, lock = threading.Event(), threading.Lock()
    for _ in range(busy_threads):
        threading.Thread(target=busy, args=(stop, lock), daemon=True).start()
    for k, w in enumerate([1, 2, 4, os.cpu_count(), 2, 1]):
        faulthandler.dump_traceback_later(limit, exit=True, file=sys.stdout)
        samples = sf.sample({"q0[1]": "uniform(-0.5, 0.5)"}, 4 * w, seed=k)
        t0 = time.perf_counter()
        ds = sf.sweep(fmu, samples, 0.5, outputs=["q[1]"], progress=False, workers=w)
        faulthandler.cancel_dump_traceback_later()
        log(f"sweep {k}: {w} workers {time.perf_counter() - t0:.2f} s, failures "
            f"{ds.attrs['failures']}, workers in the cluster {len(sf.sweep_cluster().nthreads())}")
    stop.set()


def scale(fmu: str) -> None:
    import dask.distributed  # noqa: F401
    import xarray  # noqa: F401
    from dask.distributed import get_task_stream
    from fmpy import simulate_fmu
    import soa_fmu as sf
    spec = {f"q0[{i}]": "uniform(-0.5, 0.5)" for i in range(1, 8)}
    s = sf.sample(spec, 256, 1)
    t0 = time.perf_counter()
    for _, row in s.iterrows():
        simulate_fmu(fmu, start_values=row.to_dict(), stop_time=2.0, step_size=1e-3,
                     output_interval=1e-3, output=["q[1]"])
    serial = time.perf_counter() - t0
    log(f"serial loop 256 x 2 s: {serial:.2f} s")
    t0 = time.perf_counter()
    sf.sweep(fmu, s, 2.0, outputs=["q[1]"], progress=False)
    first = time.perf_counter() - t0
    log(f"first sweep (cluster start included): {first:.2f} s = {serial / first:.2f} x serial")
    cl = sf.sweep_cluster()
    with get_task_stream(cl) as ts:
        t0 = time.perf_counter()
        sf.sweep(fmu, s, 2.0, outputs=["q[1]"], progress=False)
        wall = time.perf_counter() - t0
    comp = [sum(x["stop"] - x["start"] for x in t["startstops"] if x["action"] == "compute")
            for t in ts.data]
    n = len(cl.nthreads())
    log(f"second sweep 256 x 2 s on {n} workers: wall {wall:.2f} s = {serial / wall:.2f} x "
        f"serial; {len(comp)} tasks computing {sum(comp):.2f} s in all, {sum(comp) / n:.2f} s "
        f"per worker ({sum(comp) / n / wall:.0%} of the wall time)")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("fmu")
    ap.add_argument("mode", choices=["scale", "consecutive", "busy"])
    ap.add_argument("--limit", type=float, default=60.0, help="watchdog per sweep, s")
    args = ap.parse_args(argv)
    log("python", sys.version.split()[0], "numpy", np.__version__, "cpus", os.cpu_count(),
        args.mode)
    if args.mode == "scale":
        scale(args.fmu)
    else:
        consecutive(args.fmu, 2 if args.mode == "busy" else 0, args.limit)
    log("end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
