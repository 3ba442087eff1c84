"""Sweeps and Monte Carlo on a real dask.distributed LocalCluster: results bit-identical to a serial
loop of fmpy.simulate_fmu (open loop and with a co-simulated controller), failures isolated and
recorded, reproducible samples, the CLI (NetCDF and Zarr, the local default cluster)."""
from __future__ import annotations

import logging
import math

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


@pytest.fixture(scope="module")
def cluster():
    from dask.distributed import Client, LocalCluster
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                      silence_logs=logging.ERROR) as lc, Client(lc) as client:
        yield client


@pytest.fixture(scope="module")
def pendulum():
    return build("double_pendulum.toml", runtime="native")


def test_sweep_equals_serial_simulate_fmu_bit_for_bit(cluster, pendulum):
    from fmpy import simulate_fmu
    samples = sf.sample({"q0[1]": "uniform(-1, 1)", "g[3]": ("normal", -9.81, 0.5),
                         "tau[2]": "choice(0, 0.1)"}, 7, seed=3)
    ds = sf.sweep(pendulum, samples, STOP, step=STEP, outputs=["q[*]", "qdd[1]"], client=cluster,
                  progress=False)
    assert ds.sizes == {"sample": 7, "time": int(round(STOP / STEP)) + 1}
    assert list(ds["status"].values) == ["ok"] * 7
    np.testing.assert_array_equal(ds["q0[1]"].values, samples["q0[1]"].values)
    for i, row in samples.iterrows():
        ref = simulate_fmu(str(pendulum), start_values=row.to_dict(), stop_time=STOP,
                           step_size=STEP, output_interval=STEP, output=["q[1]", "q[2]", "qdd[1]"])
        for name in ("q[1]", "q[2]", "qdd[1]"):
            np.testing.assert_array_equal(ds[name].values[i], ref[name])   # max |Δ| = 0
    # the samples matter: different start angles, different trajectories
    assert np.ptp(ds["q[1]"].values[:, -1]) > 0.1


def test_a_failing_sample_is_recorded_and_the_rest_complete(cluster, pendulum):
    samples = {"q0[1]": [0.1, math.nan, 0.3], "max_step": [1e-3, 1e-3, -1.0]}
    ds = sf.sweep(pendulum, samples, STOP, step=STEP, client=cluster, progress=False)
    assert list(ds["status"].values) == ["ok", "failed", "failed"]
    assert "q0[1]" in str(ds["message"].values[1]) and "NaN" in str(ds["message"].values[1])
    assert "max_step" in str(ds["message"].values[2])
    assert np.all(np.isfinite(ds["q[1]"].values[0])) and np.all(np.isnan(ds["q[1]"].values[1]))
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
    assert err.startswith("soa-sweep: 2 of 2 runs failed; the first: ") and "max_step" in err
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
    from fmpy import simulate_fmu
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


def test_a_sample_that_kills_its_worker_fails_alone(cluster, pendulum):
    """The nanny restarts the worker, dask retries the batch elsewhere (and loses that worker too,
    and maybe a batch queued there), then gives up; the lost batches' samples run once more, alone
    and one at a time: the crashing one is recorded as failed, all others complete."""
    q0 = [0.1, 2.0, 0.2, 0.3, 0.4, 0.5]
    ds = sf.sweep(pendulum, {"q0[1]": q0}, STOP, step=STEP, progress=False, client=cluster,
                  controller=Feedback(KillsItsWorker(), ["q[1]"], ["tau[1]", "tau[2]"]))
    assert list(ds["status"].values) == ["ok", "failed", "ok", "ok", "ok", "ok"]
    assert "worker" in str(ds["message"].values[1]) and ds.attrs["failures"] == 1
    assert np.all(np.isfinite(ds["q[1]"].values[[0, 2, 3, 4, 5]]))
    # the cluster is still of use afterwards (and a zero law is the open loop, tau = 0)
    again = sf.sweep(pendulum, {"q0[1]": [0.1]}, STOP, step=STEP, client=cluster, progress=False)
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
    """client=None: a LocalCluster of forked worker processes started and closed by the call;
    the results (here through the CLI, to Zarr) are the serial ones bit for bit."""
    import pandas as pd
    import xarray as xr
    from fmpy import simulate_fmu
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
