"""Sweep throughput (issue 11): 64 runs of 1 s of the 7-dof arm FMU (native, h = 1 ms, RK4) as a
serial loop of fmpy.simulate_fmu in one process, and by soa_fmu.sweep on a local Dask cluster of
1 and 2 worker processes (1 thread each); bar: ≥ 1.7 × the serial loop with 2 workers.

    python benchmarks/bench_sweep.py [--runs 64]

Writes benchmarks/results/sweep.txt.  Wall time (the cluster's start-up included): throughput is
what a user waits for.
"""
from __future__ import annotations

import argparse
import shutil
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


def serial(fmu: Path, samples, stop: float) -> float:
    from fmpy import simulate_fmu
    t0 = time.perf_counter()
    for _, row in samples.iterrows():
        simulate_fmu(str(fmu), start_values=row.to_dict(), stop_time=stop, step_size=1e-3,
                     output_interval=1e-3, output=["q[1]"])
    return time.perf_counter() - t0


def on_cluster(fmu: Path, samples, stop: float, workers: int) -> tuple[float, float]:
    """(wall time on an already running cluster, wall time including its start-up)."""
    from dask.distributed import Client, LocalCluster
    t0 = time.perf_counter()
    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                      dashboard_address=":0", silence_logs=40) as lc, Client(lc) as client:
        t1 = time.perf_counter()
        sf.sweep(fmu, samples.iloc[:2 * workers], stop, step=1e-3, outputs=["q[1]"],
                 client=client, progress=False)                 # workers load the FMU once
        t2 = time.perf_counter()
        ds = sf.sweep(fmu, samples, stop, step=1e-3, outputs=["q[1]"], client=client,
                      progress=False)
        t3 = time.perf_counter()
    assert ds.attrs["failures"] == 0
    return t3 - t2, (t3 - t2) + (t1 - t0) + (t2 - t1)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=64)
    args = ap.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="bench_sweep_"))
    rows = []
    try:
        for runtime, stop in (("native", 1.0), ("python", 1.0)):
            fmu = build_fmu.build(EXAMPLES_DIR / "arm7.urdf", tmp / f"Arm7_{runtime}.fmu",
                                  name=f"Arm7_{runtime}", runtime=runtime)
            samples = sf.sample({f"q0[{i}]": "uniform(-0.5, 0.5)" for i in range(1, 8)},
                                args.runs, 1)
            t_serial = serial(fmu, samples, stop)
            rows.append([f"{runtime}: serial loop of simulate_fmu", t_serial,
                         args.runs / t_serial, 1.0, "", ""])
            for workers in (1, 2):
                warm, cold = on_cluster(fmu, samples, stop, workers)
                rows.append([f"{runtime}: sweep, {workers} local worker(s)", warm,
                             args.runs / warm, t_serial / warm, f"{t_serial / cold:.2f}",
                             f"≥ {BAR:g}" if workers == 2 else ""])
        write_result("sweep.txt", table(
            f"Sweep throughput: {args.runs} runs of 1 s of the 7-dof arm FMU, h = 1 ms",
            ["", "wall s", "runs/s", "× serial", "× serial incl. cluster start", "bar"], rows,
            ["Wall time of the sweep on a running local cluster (each worker loaded the FMU "
             "beforehand), and including the cluster's start-up and the first load."]))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
