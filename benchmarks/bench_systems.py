"""The plant + controller SSP (docs/systems.md) in three tools: agreement and tracking, and each
tool's wall time for the 4 s run relative to the same loop in Python (tests/ssp_hosts.py, the
runners the tests use; wall time: the tools run in child processes or C++).

    python benchmarks/bench_systems.py

Writes benchmarks/results/systems.txt.
"""
from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path[:0] = [str(HERE), str(REPO), str(REPO / "tests")]
from timing import table, write_result  # noqa: E402

import build_ssp  # noqa: E402
import omsimulator_host as oms  # noqa: E402
import soa_fmu as sf  # noqa: E402
import ssp_hosts as H  # noqa: E402
from model_descriptions import EXAMPLES_DIR  # noqa: E402

N = 7


def main() -> int:
    model = sf.load_model(EXAMPLES_DIR / "arm7.urdf")
    with tempfile.TemporaryDirectory() as tmp:
        ssp = build_ssp.build(EXAMPLES_DIR / "arm7.urdf", Path(tmp, "System.ssp"))
        runners = {"Python loop": lambda: H.python_loop(model, ssp),
                   "fmpy": lambda: H.run_fmpy(ssp, N),
                   "libcosim": lambda: H.run_libcosim(ssp, N)}
        if oms.unavailable() is None:
            runners["OMSimulator"] = lambda: H.run_omsimulator(ssp, N)
        q, wall = {}, {}
        for name, run in runners.items():
            t0 = time.perf_counter()
            q[name] = run()[1]
            wall[name] = time.perf_counter() - t0
        t = np.arange(q["Python loop"].shape[0]) * 1e-3
        err = np.abs(q["Python loop"] - H.reference_of(ssp, t, N))
    names = list(q)
    rows = [[a, *[f"{np.abs(q[a] - q[b]).max():.2g}" if a != b else "" for b in names],
             f"{wall[a]:.2f}", f"{wall[a] / wall['Python loop']:.3g}"] for a in names]
    text = table("arm7 under its computed-torque controller, SSP, 4 s at 1 ms: max |dq| (rad) "
                 "between tools, wall time", ["", *names, "wall s", "/ Python"], rows,
                 [f"tracking (Python loop): max {1e3 * err.max():.3g} mrad (joint "
                  f"{err.max(0).argmax() + 1}), other joints {1e3 * err[:, :N - 1].max():.3g} mrad,"
                  f" at 4 s {1e3 * err[-1].max():.3g} mrad",
                  "OMSimulator: its result file's 12 digits; wall times on the shared 2-core "
                  "machine, one run each (tool start-up included)."])
    write_result("systems.txt", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
