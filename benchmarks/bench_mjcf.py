"""MJCF models in: loading time of gymnasium's MuJoCo robots through ``sf.load_model`` (bar: ≤ 1 s
each), MuJoCo's own compile of the same file in the same run (the reference: our reading adds what is
above it), and the largest differences to MuJoCo over 100 random states (M, forward and inverse
dynamics, site poses; the tests assert ≤ 1e-9).  Writes ``results/mjcf.txt``.

    python benchmarks/bench_mjcf.py [--repeat 7]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from timing import RESULTS  # noqa: E402

from soa_fmu.io import load_model  # noqa: E402

ROBOTS = ["ant", "half_cheetah", "hopper", "humanoid", "humanoidstandup", "inverted_double_pendulum",
          "inverted_pendulum", "point", "pusher", "reacher", "swimmer", "walker2d"]


def median_s(fn, repeat: int) -> float:
    """Median wall time of ``repeat`` calls (after one warm-up), in seconds."""
    fn()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args(argv)
    try:
        import gymnasium
        from soa_fmu.verify.mujoco_bridge import compare, mj_model, mujoco_pair
    except ImportError as e:
        print(f"bench_mjcf: skipped ({e}): pip install 'soa_fmu[mjcf]' gymnasium")
        return 0
    assets = Path(gymnasium.__file__).parent / "envs" / "mujoco" / "assets"
    warnings.simplefilter("ignore")
    lines = ["MJCF models in (bench_mjcf.py): gymnasium's MuJoCo robots, sf.load_model vs MuJoCo's "
             "compile alone (same run, wall-time medians)",
             f"{'model':<26} {'nv':>3} {'load ms':>8} {'mujoco ms':>9} {'ratio':>6}   "
             "max rel. difference to MuJoCo, 100 random states: M, FD, ID, sites",
             ]
    worst = 0.0
    for robot in ROBOTS:
        path = assets / f"{robot}.xml"
        t_ours = median_s(lambda: load_model(path), args.repeat)
        t_mj = median_s(lambda: mj_model(path), args.repeat)
        model = load_model(path)
        m, d = mujoco_pair(path, armature=True)
        err = compare(model, m, d, np.random.default_rng(0))
        worst = max(worst, t_ours)
        lines.append(f"{robot:<26} {model.nv:>3} {1e3 * t_ours:8.1f} {1e3 * t_mj:9.1f} "
                     f"{t_ours / t_mj:6.2f}   " + "  ".join(f"{k} {v:.1e}" for k, v in err.items()))
    lines.append(f"slowest load: {1e3 * worst:.1f} ms (bar: <= 1000 ms each)")
    text = "\n".join(lines) + "\n"
    print(text, end="")
    (RESULTS / "mjcf.txt").write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
