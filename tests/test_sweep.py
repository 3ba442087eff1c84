"""Sweeps and Monte Carlo on a real dask.distributed LocalCluster: results bit-identical to a serial
loop of fmpy.simulate_fmu (open loop and with a co-simulated controller), failures isolated and
recorded, reproducible samples, the CLI (NetCDF and Zarr, its exit status, a quiet stderr), the
process's local cluster started once and reused, and consecutive sweeps under a watchdog."""
from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from fmu_fixtures import build

pytest.importorskip("dask.distributed")
import soa_fmu as sf  # noqa: E402
from soa_fmu.sweep import Feedback  # noqa: E402

STOP, STEP = 0.05, 1e-3


class TrackingPD:
    """u = Kp (r(t) − q) − Kd q̇ for the double pendulum, r(t) = 0.3 sin(5 t): a stateless law."""

    def __init__(self, kp: float, kd: float):
        self.kp, self.kd = kp, kd

    def __call__(self, t: float, y: np.ndarray) -> np.ndarray:
        return self.kp * (0.3 * np.sin(5.0 * t) - y[:2]) - self.kd * y[2:]


def pd_feedback() -> Feedback:
    return Feedback(TrackingPD(20.0, 3.0), ["q[1]", "q[2]", "qd[1]", "qd[2]"],
                    ["tau[1]", "tau[2]"])


@pytest.fixture(scope="module", autouse=True)
def _pickled_by_value():
    # the cluster's workers do not have tests/ on their path: ship this module's classes by value
    import sys

    import cloudpickle
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    yield
    cloudpickle.unregister_pickle_by_value(sys.modules[__name__])


@pytest.fixture(scope="module", autouse=True)
def _local_cluster_closed_afterwards():
    yield
    sf.shutdown_cluster()          # the rest of the test session gets its cores back


@pytest.fixture
def cluster():
    """A Client of the test's own (the ``client=`` path) on the process's local sweep cluster."""
    from dask.distributed import Client
    with Client(sf.sweep_cluster(2).scheduler.address, set_as_default=False) as client:
        yield client


@pytest.fixture(scope="module")
def pendulum():
    return build("double_pendulum.toml", runtime="native")


def test_sweep_equals_serial_simulate_fmu_bit_for_bit(cluster, pendulum):
    from soa_fmu.fmpy_logging import simulate_fmu
    samples = sf.sample({"q0[1]": "uniform(-1, 1)", "g[3]": ("normal", -9.81, 0.5),
                         "tau[2]": "choice(0, 0.1)"}, 19, seed=3)
    ds = sf.sweep(pendulum, samples, STOP, step=STEP, outputs=["q[*]", "qdd[1]"], client=cluster,
                  progress=False)                  # 2 workers: batches of 3 samples, one of 1
    assert ds.sizes == {"sample": 19, "time": int(round(STOP / STEP)) + 1}
    assert list(ds["status"].values) == ["ok"] * 19
    np.testing.assert_array_equal(ds["q0[1]"].values, samples["q0[1]"].values)
    for i, row in samples.iterrows():
        ref = simulate_fmu(str(pendulum), start_values=row.to_dict(), stop_time=STOP,
                           step_size=STEP, output_interval=STEP, output=["q[1]", "q[2]", "qdd[1]"])
        for name in ("q[1]", "q[2]", "qdd[1]"):
            np.testing.assert_array_equal(ds[name].values[i], ref[name])   # max |Δ| = 0
    # the samples matter: different start angles, different trajectories
    assert np.ptp(ds["q[1]"].values[:, -1]) > 0.1


def test_a_failing_sample_is_recorded_and_the_rest_complete(cluster, pendulum):
    # 9 samples on 2 workers: batches of 2, the failures inside batches with good samples
    q0 = [0.1, math.nan, 0.3, 0.2, 0.0, -0.1, -0.2, -0.3, 0.4]
    samples = {"q0[1]": q0, "max_step": [1e-3, 1e-3, -1.0] + [1e-3] * 6}
    ds = sf.sweep(pendulum, samples, STOP, step=STEP, client=cluster, progress=False)
    assert list(ds["status"].values) == ["ok", "failed", "failed"] + ["ok"] * 6
    assert "q0[1]" in str(ds["message"].values[1]) and "NaN" in str(ds["message"].values[1])
    assert "max_step" in str(ds["message"].values[2])
    assert np.all(np.isfinite(ds["q[1]"].values[[0, 3, 4, 5, 6, 7, 8]]))
    assert np.all(np.isnan(ds["q[1]"].values[[1, 2]]))
    q0[2] = math.nan                                                # each row where it belongs
    np.testing.assert_array_equal(ds["q[1]"].values[:, 0], q0)
    assert ds.attrs["failures"] == 2


def test_sample_is_reproducible_and_checked():
    a = sf.sample({"x": "normal(0, 1)", "y": "lognormal(0, 0.1)", "z": "uniform(2, 3)"}, 50, 7)
    b = sf.sample({"x": "normal(0, 1)", "y": "lognormal(0, 0.1)", "z": "uniform(2, 3)"}, 50, 7)
    assert a.equals(b) and not a.equals(sf.sample({"x": "normal(0, 1)"}, 50, 8))
    assert a["z"].between(2, 3).all() and (a["y"] > 0).all()
    assert abs(a["x"].mean()) < 0.5
    for bad, text in [({"x": "gauss(0, 1)"}, "unknown distribution"),
                      ({"x": "uniform(3, 2)"}, "low <= high"),
                      ({"x": "normal(0)"}, "two finite numbers")]:
        with pytest.raises(ValueError, match=text):
            sf.sample(bad, 3)


def test_bad_arguments_name_the_problem(pendulum):
    with pytest.raises(ValueError, match="not variables"):
        sf.sweep(pendulum, {"link9.mass": [1.0]}, STOP, progress=False)
    with pytest.raises(ValueError, match="different lengths"):
        sf.sweep(pendulum, {"q0[1]": [1.0, 2.0], "q0[2]": [1.0]}, STOP, progress=False)
    with pytest.raises(ValueError, match="matches no variable"):
        sf.sweep(pendulum, {"q0[1]": [1.0]}, STOP, outputs=["nope[*]"], progress=False)


def test_cli_exits_1_when_every_run_failed(tmp_path, pendulum, capsys):
    """Issue 17.5: 2 of 2 runs refused (a max_step below its floor) -> exit status 1, and stderr
    says how many failed and the first reason."""
    from soa_fmu.sweep import main
    assert main([str(pendulum), "--vary", "max_step=uniform(1e-301,1e-300)", "--n", "2",
                 "--stop-time", str(STOP), "--out", str(tmp_path / "f.nc"), "--no-progress"]) == 1
    out, err = capsys.readouterr()
    assert out.startswith("2 runs, 2 failed")
    assert err.startswith("soa-sweep: error: all 2 runs failed (first: sample 0: ") and "max_step" in err
    assert len(err.strip().splitlines()) == 1


def test_cli_runs_and_reports_in_one_line(tmp_path, pendulum, capsys):
    import xarray as xr
    from soa_fmu.sweep import main
    out = tmp_path / "r.nc"
    assert main([str(pendulum), "--vary", "q0[1]=uniform(0,1)", "--n", "4", "--seed", "1",
                 "--stop-time", str(STOP), "--workers", "2", "--out", str(out),
                 "--no-progress"]) == 0
    line = capsys.readouterr().out.strip()
    assert line.startswith("4 runs, 0 failed") and "runs/s" in line
    ds = xr.open_dataset(out, engine="h5netcdf")
    assert ds.sizes["sample"] == 4 and "q[1]" in ds and "q0[1]" in ds.coords
    ds.close()
    for args, text in [(["--vary", "q0[1]=uniform(0,1)", "--stop-time", "1"], "--n"),
                       (["--vary", "q0[1]=gauss(0,1)", "--n", "2", "--stop-time", "1"],
                        "unknown distribution"),
                       (["--samples", str(tmp_path / "no.csv"), "--stop-time", "1"],
                        "no such samples file"),
                       (["--vary", "q0[1]=uniform(0,1)", "--n", "2", "--stop-time", "-1"],
                        "stop_time must be a positive"),
                       (["--vary", "q0[1]=uniform(0,1)", "--n", "2", "--stop-time", "1",
                         "--output", "nope"], "matches no variable")]:
        assert main([str(pendulum), *args, "--out", str(tmp_path / "x.nc")]) == 1
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and text in err
    for out, text in [("x.csv", "NetCDF file (.nc) or a Zarr store (.zarr)"),
                      ("no/dir/x.zarr", "no such directory")]:
        assert main([str(pendulum), "--vary", "q0[1]=uniform(0,1)", "--n", "2", "--stop-time",
                     "1", "--out", str(tmp_path / out)]) == 1
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and text in err
    with pytest.raises(SystemExit) as e:                 # argparse's own errors: one line too
        main([str(pendulum), "--vary", "q0[1]=uniform(0,1)", "--n", "2", "--stop-time", "abc",
              "--out", str(tmp_path / "x.nc")])
    assert e.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "invalid float value" in err


def test_a_co_simulated_controller_gives_the_serial_results_bit_for_bit(cluster, pendulum):
    from soa_fmu.fmpy_logging import simulate_fmu
    samples = sf.sample({"q0[1]": "uniform(-0.5, 0.5)", "g[3]": ("normal", -9.81, 0.5)}, 6, seed=5)
    common = {"tau[1]": 0.25}                        # u over the first step [0, h)
    ds = sf.sweep(pendulum, samples, STOP, step=STEP, outputs=["q[*]", "tau[*]"],
                  controller=pd_feedback(), start_values=common, client=cluster, progress=False)
    assert list(ds["status"].values) == ["ok"] * 6
    for i, row in samples.iterrows():
        ref = simulate_fmu(str(pendulum), start_values={**common, **row.to_dict()},
                           stop_time=STOP, step_size=STEP, output_interval=STEP,
                           output=["q[1]", "q[2]", "qd[1]", "qd[2]", "tau[1]", "tau[2]"],
                           step_finished=pd_feedback())
        for name in ("q[1]", "q[2]", "tau[1]", "tau[2]"):
            np.testing.assert_array_equal(ds[name].values[i], ref[name])   # max |Δ| = 0
        # sample and hold: tau over [t_k, t_k+1) (recorded at t_k+1) is the law at t_k
        law, t = TrackingPD(20.0, 3.0), ref["time"]
        y = np.stack([ref[n] for n in ("q[1]", "q[2]", "qd[1]", "qd[2]")], axis=1)
        u = np.stack([ref["tau[1]"], ref["tau[2]"]], axis=1)
        assert u[0, 0] == u[1, 0] == 0.25 and u[0, 1] == u[1, 1] == 0.0
        for k in range(1, len(t) - 1):
            np.testing.assert_array_equal(u[k + 1], law(t[k], y[k]))
    # closed loop: the controller pulls q[1] toward r(t) whatever the start angle
    spread0 = np.ptp(ds["q[1]"].values[:, 0])
    assert np.ptp(ds["q[1]"].values[:, -1]) < spread0


class KillsItsWorker:
    """A law that ends its worker process (as a crash in an FMU would) once q[1] > 1.5."""

    def __call__(self, t: float, y: np.ndarray) -> np.ndarray:
        if y[0] > 1.5:
            import os
            os._exit(3)
        return np.zeros(2)


def test_a_sample_that_kills_its_worker_fails_alone(pendulum):
    """The nanny restarts the worker; the lost batches' samples (the crashing one's, maybe one
    queued on that worker) run once more, alone and one at a time: the crashing one is recorded
    as failed, all others complete.  (Should the nannies bring no worker back, the sweep starts a
    new local cluster.)"""
    q0 = [0.1, 2.0, 0.2, 0.3, 0.4, 0.5]
    ds = sf.sweep(pendulum, {"q0[1]": q0}, STOP, step=STEP, progress=False, workers=2,
                  controller=Feedback(KillsItsWorker(), ["q[1]"], ["tau[1]", "tau[2]"]))
    assert list(ds["status"].values) == ["ok", "failed", "ok", "ok", "ok", "ok"]
    assert "worker" in str(ds["message"].values[1]) and ds.attrs["failures"] == 1
    assert np.all(np.isfinite(ds["q[1]"].values[[0, 2, 3, 4, 5]]))
    # the cluster is still of use afterwards (and a zero law is the open loop, tau = 0)
    again = sf.sweep(pendulum, {"q0[1]": [0.1]}, STOP, step=STEP, progress=False)
    np.testing.assert_array_equal(again["q[1]"].values[0], ds["q[1]"].values[0])


def test_a_controller_is_checked_against_the_fmu(pendulum):
    with pytest.raises(ValueError, match="not variables"):
        sf.sweep(pendulum, {"q0[1]": [0.1]}, STOP, controller=Feedback(
            TrackingPD(1, 1), ["q[9]"], ["tau[1]"]), progress=False)
    with pytest.raises(ValueError, match="not Real inputs"):
        sf.sweep(pendulum, {"q0[1]": [0.1]}, STOP, controller=Feedback(
            TrackingPD(1, 1), ["q[1]"], ["q0[1]"]), progress=False)
    table = np.array([(0.0, 0.0), (1.0, 0.0)], dtype=[("time", float), ("tau[1]", float)])
    with pytest.raises(ValueError, match="input table too"):
        sf.sweep(pendulum, {"q0[1]": [0.1]}, STOP, inputs=table, controller=pd_feedback(),
                 progress=False)
    with pytest.raises(ValueError, match="start_values"):
        sf.sweep(pendulum, {"q0[1]": [0.1]}, STOP, start_values={"nope": 1.0}, progress=False)


def test_the_local_default_cluster_and_zarr_output(tmp_path, pendulum, capsys):
    """client=None: the process's local cluster (sweep_cluster); the results (here through the
    CLI, to Zarr) are the serial ones bit for bit."""
    import pandas as pd
    import xarray as xr
    from soa_fmu.fmpy_logging import simulate_fmu
    from soa_fmu.sweep import main, save
    samples = pd.DataFrame({"q0[1]": [0.1, 0.4, -0.3], "g[3]": [-9.81, -9.0, -10.5]})
    samples.to_csv(tmp_path / "s.csv", index=False)
    out = tmp_path / "r.zarr"
    assert main([str(pendulum), "--samples", str(tmp_path / "s.csv"), "--stop-time", str(STOP),
                 "--output", "q[*]", "--out", str(out), "--no-progress"]) == 0
    assert capsys.readouterr().out.startswith("3 runs, 0 failed")
    ds = xr.open_zarr(out).load()
    for i, row in samples.iterrows():
        ref = simulate_fmu(str(pendulum), start_values=row.to_dict(), stop_time=STOP,
                           step_size=STEP, output_interval=STEP, output=["q[1]", "q[2]"])
        for name in ("q[1]", "q[2]"):
            np.testing.assert_array_equal(ds[name].values[i], ref[name])
    np.testing.assert_array_equal(ds["g[3]"].values, samples["g[3]"].values)
    assert list(ds["status"].values) == ["ok"] * 3 and ds.attrs["runs"] == 3
    # the Python way round: save() writes what open_zarr / open_dataset read back identically
    for name in ("again.zarr", "again.nc"):
        save(ds, tmp_path / name)
        back = (xr.open_zarr(tmp_path / name) if name.endswith(".zarr") else
                xr.open_dataset(tmp_path / name, engine="h5netcdf")).load()
        assert back.identical(ds), name


def test_the_local_cluster_is_started_once_and_reused(pendulum):
    """The first local-default sweep starts the cluster; the next ones reuse it (the same
    scheduler, the same worker processes); another worker count scales it; shutdown_cluster()
    closes it.  Its workers are forked by the fork server, not by this multi-threaded process."""
    import multiprocessing
    sf.shutdown_cluster()
    a = sf.sweep(pendulum, {"q0[1]": [0.1, 0.2, 0.3]}, STOP, step=STEP, workers=2, progress=False)
    client = sf.sweep_cluster()
    pids = client.run(os.getpid)
    assert len(pids) == 2 and a.attrs["scheduler"] == client.scheduler.address
    b = sf.sweep(pendulum, {"q0[1]": [0.3]}, STOP, step=STEP, progress=False)
    assert b.attrs["scheduler"] == a.attrs["scheduler"]
    assert sf.sweep_cluster() is client and client.run(os.getpid) == pids   # no new worker
    np.testing.assert_array_equal(b["q[1]"].values[0], a["q[1]"].values[2])
    if "forkserver" in multiprocessing.get_all_start_methods():
        parents = set(client.run(os.getppid).values())
        assert len(parents) == 1 and os.getpid() not in parents           # the fork server's
    c = sf.sweep(pendulum, {"q0[1]": [0.1]}, STOP, step=STEP, workers=1, progress=False)
    assert c.attrs["scheduler"] == a.attrs["scheduler"] and len(client.nthreads()) == 1
    np.testing.assert_array_equal(c["q[1]"].values[0], a["q[1]"].values[0])
    sf.shutdown_cluster()
    assert client.status == "closed" and sf.sweep_cluster(1) is not client
    with pytest.raises(ValueError, match="workers must be a positive integer"):
        sf.sweep_cluster(0)


def test_batches_are_sized_to_the_work():
    from soa_fmu.sweep import _BATCH_VALUES, _batch_size
    assert _batch_size(1000, 2, 100) == 125                # about 4 batches per worker thread
    assert _batch_size(3, 2, 100) == 1
    assert _batch_size(1000, 2, 14 * 10001) == _BATCH_VALUES // (14 * 10001) == 14  # 10 s, 14 outputs
    assert _batch_size(10, 1, 10 * _BATCH_VALUES) == 1     # one huge run: one per batch


def _soa_sweep() -> list[str]:
    exe = shutil.which("soa-sweep", path=str(Path(sys.executable).parent))
    return [exe] if exe else [sys.executable, "-m", "soa_fmu.sweep"]


def test_soa_sweep_writes_nothing_but_its_progress_bar_on_stderr(tmp_path, pendulum):
    """A successful soa-sweep, in a process of its own: the cluster starts, runs and closes at exit
    with no traceback or log line on stderr, only the progress bar."""
    r = subprocess.run([*_soa_sweep(), str(pendulum), "--vary", "q0[1]=uniform(0,1)", "--n", "8",
                        "--seed", "1", "--stop-time", "0.2", "--workers", "2",
                        "--out", str(tmp_path / "r.nc")],
                       capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("8 runs, 0 failed"), r.stdout
    pieces = [p for p in re.split(r"[\r\n]", r.stderr) if p.strip()]
    assert pieces and all(p.startswith(f"sweep {pendulum.name}: ") for p in pieces), r.stderr
    assert "8/8" in pieces[-1]


def test_soa_sweep_exit_status_counts_the_failed_runs(tmp_path, pendulum, capsys):
    """Every run failed: exit 1, one error line saying how many; some failed: exit 0 and one
    warning line saying how many, the results written with their status and message."""
    import xarray as xr
    from soa_fmu.sweep import main
    common = ["--stop-time", str(STOP), "--workers", "2", "--no-progress"]
    assert main([str(pendulum), "--vary", "max_step=choice(-1)", "--n", "3", *common,
                 "--out", str(tmp_path / "all.nc")]) == 1
    out, err = capsys.readouterr()
    assert out.startswith("3 runs, 3 failed")
    assert err.count("\n") == 1 and err.startswith("soa-sweep: error: all 3 runs failed")
    assert "max_step" in err
    (tmp_path / "s.csv").write_text("q0[1]\n0.1\nnan\n0.3\n")
    assert main([str(pendulum), "--samples", str(tmp_path / "s.csv"), *common,
                 "--out", str(tmp_path / "some.nc")]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("3 runs, 1 failed")
    assert err.count("\n") == 1 and err.startswith("soa-sweep: warning: 1 of 3 runs failed")
    assert "sample 1" in err and "some.nc" in err
    with xr.open_dataset(tmp_path / "some.nc", engine="h5netcdf") as ds:
        assert list(ds["status"].values) == ["ok", "failed", "ok"]


CONSECUTIVE = r"""
import faulthandler, json, os, sys, threading, time
import numpy as np
import dask.distributed, xarray                      # imported before the timers, as in a session
from soa_fmu.fmpy_logging import simulate_fmu
import soa_fmu as sf

STOP, STEP, OUT = 0.2, 1e-3, ["q[1]", "q[2]"]


def load() -> float:    # how many times over its cores the machine is busy (>= 1): a shared
    # CI machine's allowance (a hang is unbounded anyway)
    return max(1.0, os.getloadavg()[0] / (os.cpu_count() or 1))


def busy(stop, lock):            # a notebook's other threads: BLAS work under a lock, all along
    a = np.random.default_rng(0).random((64, 64))
    while not stop.is_set():
        with lock:
            np.linalg.eigvals(a)


def main(fmu):
    stop, lock = threading.Event(), threading.Lock()
    for _ in range(2):
        threading.Thread(target=busy, args=(stop, lock), daemon=True).start()
    report = []
    for k, (workers, client) in enumerate([(1, None), (2, None), (4, None), (2, "address"),
                                           (2, None), (1, None)]):
        samples = sf.sample({"q0[1]": "uniform(-1, 1)", "g[3]": "uniform(-10, -9)"}, 6, seed=k)
        t0 = time.perf_counter()
        ref = [simulate_fmu(fmu, start_values=row.to_dict(), stop_time=STOP, step_size=STEP,
                            output_interval=STEP, output=OUT) for _, row in samples.iterrows()]
        # a hang detector, not a timing bound: the busy threads hold the GIL, so this process's
        # own imports and the cluster's start take 2-13 s on a quiet 2-core machine (more on a
        # loaded one); the hang this guards against was unbounded
        limit = 4 * (time.perf_counter() - t0) + 60 * load()
        faulthandler.dump_traceback_later(limit, exit=True)    # the watchdog: a hang ends here
        t0 = time.perf_counter()
        if client:
            ds = sf.sweep(fmu, samples, STOP, step=STEP, outputs=OUT, progress=False,
                          client=sf.sweep_cluster().scheduler.address)
        else:
            ds = sf.sweep(fmu, samples, STOP, step=STEP, outputs=OUT, progress=False,
                          workers=workers)
        wall = time.perf_counter() - t0
        faulthandler.cancel_dump_traceback_later()
        same = all(np.array_equal(ds[n].values[i], r[n]) for i, r in enumerate(ref) for n in OUT)
        report.append({"workers": workers, "wall": wall, "limit": limit, "same": same,
                       "scheduler": ds.attrs["scheduler"],
                       "nworkers": len(sf.sweep_cluster().nthreads())})
    stop.set()
    print(json.dumps(report))


if __name__ == "__main__":
    main(sys.argv[1])
"""


def test_consecutive_local_sweeps_never_hang(tmp_path, pendulum):
    """Six sweeps in one process that has busy threads of its own — local default with 1, 2, 4,
    2 (by address), 2, 1 workers — each under a watchdog of four times its serial loop + 60 s (the
    60 s times the machine's load, if over its cores; the watchdog dumps every thread's stack and
    ends the process): none hangs, all give the serial results bit for bit, all on the one cluster
    (the same scheduler), scaled to each worker count, stderr empty."""
    script = tmp_path / "consecutive.py"
    script.write_text(CONSECUTIVE)
    r = subprocess.run([sys.executable, str(script), str(pendulum)], capture_output=True,
                       text=True, timeout=600, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    report = json.loads(r.stdout.strip().splitlines()[-1])
    assert [s["nworkers"] for s in report] == [1, 2, 4, 4, 2, 1]
    assert all(s["same"] for s in report), report
    assert all(s["wall"] < s["limit"] for s in report), report
    assert len({s["scheduler"] for s in report}) == 1
    assert r.stderr == ""
