"""Every example-robot-data URDF as a new user meets it (docs/model-files.md, "The robot census"):
``soa-build-fmu ROBOT.urdf --platforms host`` (the defaults, the host's binary only) — again with
``--lenient`` or ``--floating-base`` when its one-line error names that option — then 1 s in fmpy at
the defaults, ``soa-describe`` and ``soa-view`` on the result.  No command may print a traceback or
more than one error line.

The whole list (the installed package's files) is marked slow; the hard cases — a massless hand
(romeo), a degenerate axis (icub), a model with no moving joint (hector), mimic fingers (pr2; the
panda's are in tests/test_mimic.py) — run in the default suite.
"""
from __future__ import annotations

import io
import sys
import time
import warnings
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pinocchio")          # example-robot-data comes with the Pinocchio extra
fmpy = pytest.importorskip("fmpy")
from soa_fmu.fmpy_logging import simulate_fmu  # noqa: E402
from fmu_fixtures import REPO  # noqa: E402
from test_robot_data import robot_path  # noqa: E402

import build_fmu  # noqa: E402
from soa_fmu.cli import describe_main  # noqa: E402
from soa_fmu.view.cli import main as view_main  # noqa: E402

HINTS = ("--lenient", "--floating-base")      # options a build error may name as the way out
EMPTY = {"ur3.urdf"}       # the known failure: an empty <robot> (no link, no name), refused


def robots_dir() -> Path:
    return robot_path("panda_description/urdf", "panda.urdf").parents[2]


def all_robots() -> list[Path]:
    return sorted(robots_dir().rglob("*.urdf"))


def _cli(main, argv: list[str]) -> tuple[int, str, str]:
    """Run a command line in-process: (exit status, stdout, stderr); an exception escaping it (a
    traceback for the user) fails the test."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err), warnings.catch_warnings():
        try:
            code = main(argv)
        except SystemExit as e:
            code = e.code
    return code, out.getvalue(), err.getvalue()


def _one_line(err: str, command: str) -> None:
    """No traceback; at most one error line; every line the command's own (warnings may be many:
    soa-view names each mesh it cannot find)."""
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert "Traceback" not in err, f"{command}: {err}"
    assert sum(ln.startswith(f"{command}: error: ") for ln in lines) <= 1, err
    assert all(ln.startswith(f"{command}: ") for ln in lines), err


def census(path: Path, tmp: Path) -> dict:
    """What a new user gets from ``path``: status ``ok`` (built and ran 1 s), ``refused`` (one
    line from soa-build-fmu) or ``failed`` (the FMU stopped: its log's last message)."""
    fmu = tmp / f"{path.stem}.fmu"
    opts: list[str] = []
    while True:
        code, _, err = _cli(build_fmu.main, [str(path), "-o", str(fmu), "--platforms", "host",
                                             *opts])
        _one_line(err, "soa-build-fmu")
        hint = next((h for h in HINTS if h in err and h not in opts), None)
        if code == 0 or hint is None:
            break
        opts.append(hint)
    code_d, _, err_d = _cli(describe_main, [str(path), *opts])
    _one_line(err_d, "soa-describe")
    assert code_d == code, (path, err, err_d)           # both read the file the same way
    if code != 0:
        return {"status": "refused", "options": opts, "reason": err.strip()}
    log: list[str] = []
    try:
        res = simulate_fmu(fmu, stop_time=1.0, logger=lambda *a: log.append(a[-1]))
    except Exception as e:  # noqa: BLE001 (fmpy raises on fmi2Error / fmi2Discard)
        why = log[-1] if log else str(e)
        return {"status": "failed", "options": opts,
                "reason": " ".join(str(why.decode() if isinstance(why, bytes) else why).split())}
    q = np.column_stack([res[n] for n in res.dtype.names if n.startswith("q[")])
    if not (res["time"][-1] == pytest.approx(1.0) and np.isfinite(q).all()):
        return {"status": "failed", "options": opts, "reason": f"stopped at t = {res['time'][-1]}"}
    csv = tmp / f"{path.stem}.csv"
    fmpy.util.write_csv(str(csv), res)
    code_v, _, err_v = _cli(view_main, [str(path), str(csv), "-o", str(tmp / f"{path.stem}.html"),
                                        "--fps", "5", *opts])
    _one_line(err_v, "soa-view")
    assert code_v == 0, err_v
    return {"status": "ok", "options": opts, "reason": ""}


@pytest.mark.parametrize("folder, file, status, options, reason", [
    ("romeo_description/urdf", "romeo.urdf", "ok", ["--lenient"], ""),
    ("icub_description/robots", "icub.urdf", "ok", ["--lenient"], ""),
    ("hector_description/robots", "quadrotor_base.urdf", "ok", ["--floating-base"], ""),
    ("pr2_description/urdf", "pr2.urdf", "ok", ["--lenient"], ""),
])
def test_hard_cases(tmp_path, folder, file, status, options, reason):
    got = census(robot_path(folder, file), tmp_path)
    assert got == {"status": status, "options": options, "reason": reason}


def test_no_moving_joint_is_one_line(tmp_path):
    path = robot_path("hector_description/robots", "quadrotor_base.urdf")
    code, _, err = _cli(build_fmu.main, [str(path), "-o", str(tmp_path / "h.fmu"), "--platforms",
                                         "host"])
    assert code == 1 and err == (f"soa-build-fmu: error: {path}: the model has no moving joints, "
                                 "nothing to simulate; --floating-base gives its root body a free "
                                 "joint (a free-flying robot)\n")


def test_sweep_given_the_robot_file_is_one_line(tmp_path):
    from soa_fmu.sweep import main as sweep_main
    path = robot_path("panda_description/urdf", "panda.urdf")
    code, _, err = _cli(sweep_main, [str(path), "--vary", "panda_link7.mass=uniform(1,2)", "--n",
                                     "2", "--stop-time", "0.1", "--out", str(tmp_path / "r.nc")])
    assert code == 1 and err == (f"soa-sweep: error: {path}: not an FMU (not a zip archive); build "
                                 "one from the model file with soa-build-fmu\n")


@pytest.mark.slow
def test_census_of_every_example_robot(tmp_path):
    """The census of docs/model-files.md: every URDF of the installed example-robot-data."""
    robots = all_robots()
    rows, t0 = [], time.perf_counter()
    for path in robots:
        got = census(path, tmp_path)
        rows.append((path.relative_to(robots_dir()), got))
    ok = [r for r, g in rows if g["status"] == "ok"]
    print(f"\n{len(ok)} of {len(rows)} build and run 1 s ({time.perf_counter() - t0:.0f} s)")
    for r, g in rows:
        print(f"  {r}: {g['status']} {' '.join(g['options'])} {g['reason']}")
    bad = {r.name: g for r, g in rows if g["status"] != "ok"}
    assert set(bad) <= EMPTY, bad
    assert all(g["status"] == "refused" and "no <link> elements" in g["reason"]
               for g in bad.values())


if __name__ == "__main__":     # python tests/test_robot_census.py [DIR]: the census table
    import tempfile
    sys.path.insert(0, str(REPO))
    with tempfile.TemporaryDirectory() as d:
        for p in all_robots():
            print(p.relative_to(robots_dir()), census(p, Path(d)), flush=True)
