"""The closed-chain examples run as FMUs (examples/closed_chains_fmu.py): constraint outputs over time."""
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
import closed_chains_fmu as ex  # noqa: E402


def test_two_arms_release_and_grasp_through_the_active_inputs():
    r = ex.run("two_arms_box", 1.3)
    t, f, err = r["t"], r["force"], r["residual"]
    held = t < ex.RELEASE - 1e-9
    released = (t > ex.RELEASE + 1e-9) & (t < ex.GRASP - 1e-9)
    regrasped = t > ex.GRASP + 1e-9
    assert r["closures"] == ["grasp_left", "grasp_right"]
    assert np.all(f[held] > 5.0) and np.all(err[held] < 1e-8)       # carrying the box
    assert np.all(f[released] == 0.0) and np.all(err[released] == 0.0)
    assert f[regrasped].max() > 50.0                                # the arms arrest the falling box
    assert np.all(err[regrasped] < 1e-8)                            # re-anchored where it was caught


def test_four_bar_fmu_residual_stays_bounded():
    r = ex.run("four_bar", 2.0)
    assert r["residual"].max() < 1e-6
    assert 1.0 < r["force"].min() and r["force"].max() < 20.0
