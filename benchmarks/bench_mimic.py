"""What the mimic couplings cost (core/mimic.c): one RK4 step of 1 ms (four stages, each the tree's
forward dynamics then the coupling: the innovations solve of G*'s columns, G M⁻¹ G*, the correction)
on example-robot-data's panda (1 mimic) and pr2 (10), against the same model with its couplings
removed, interleaved in one run (timing.median_ratio).

    python benchmarks/bench_mimic.py
"""
from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import soa_fmu as sf  # noqa: E402
from soa_fmu import _core  # noqa: E402
from timing import median_ratio, table, write_result  # noqa: E402

ROBOTS = {"panda": "panda_description/urdf/panda.urdf", "pr2": "pr2_description/urdf/pr2.urdf"}


def robots_dir() -> Path:
    for entry in sys.path:
        p = Path(entry) / "cmeel.prefix/share/example-robot-data/robots"
        if p.is_dir():
            return p
    raise SystemExit("example-robot-data is not installed (pip install example-robot-data)")


def stepper(path: Path, coupled: bool):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = sf.load_model(path, strict=False)
    if not coupled:
        model.mimics.clear()
        model._invalidate()
    q, qd = model.neutral_configuration(), np.zeros(model.nv)
    _core.mimic_project(model.core, q, qd)
    tau, data = np.zeros(model.nv), model.data

    def step():
        _core.rk4(data, q.copy(), qd.copy(), tau, False, 1e-3, 1)
    return step, model


def main() -> None:
    rows = []
    for name, rel in ROBOTS.items():
        path = robots_dir() / rel
        ours, model = stepper(path, True)
        ref, _ = stepper(path, False)
        t_ours, t_ref, ratio = median_ratio(ours, ref)
        rows.append([name, str(model.nv), str(len(model.mimics)), f"{t_ours * 1e6:.3g}",
                     f"{t_ref * 1e6:.3g}", f"{ratio:.3g}"])
    write_result("mimic.txt", table(
        "Mimic couplings: one RK4 step (1 ms), coupled / uncoupled (CPU time, medians of 21 "
        "interleaved runs, the shared 2-core machine)",
        ["robot", "nv", "mimics", "coupled µs", "uncoupled µs", "ratio"], rows))


if __name__ == "__main__":
    main()
