"""Sweeps and Monte Carlo on a real dask.distributed LocalCluster: results bit-identical to a serial
loop of fmpy.simulate_fmu, failures isolated and recorded, reproducible samples, the CLI."""
from __future__ import annotations

import logging
import math

import numpy as np
import pytest

from fmu_fixtures import build

pytest.importorskip("dask.distributed")
import soa_fmu as sf  # noqa: E402

STOP, STEP = 0.05, 1e-3


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
                        "no such samples file")]:
        assert main([str(pendulum), *args, "--out", str(tmp_path / "x.nc")]) == 1
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and text in err
