"""OMSimulator accuracy (docs/fmu.md, "The OpenModelica route"): the four models of
tests/test_omsimulator.py run in OpenModelica's OMSimulator, against fmpy (Co-Simulation, same FMU
and step) and against a tight reference (Model Exchange in an oms_system_sc with CVODE, at its
default tolerance 1e-4 and tighter ones).  No timings: the differences only.

    python benchmarks/bench_omsimulator.py

Writes benchmarks/results/omsimulator.txt (or why it could not run).
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path[:0] = [str(HERE), str(REPO), str(REPO / "tests")]
from timing import table, write_result  # noqa: E402

import omsimulator_host as oms  # noqa: E402
import test_omsimulator as cases  # noqa: E402  (the cases and references the tests use)


def me_errors(fmu, case, names, ref, tolerance) -> tuple[float, float]:
    """Max |q - q_ref| and max |qd - qd_ref| of OMSimulator's ME run at ``tolerance``."""
    run = oms.simulate(fmu, "me", case.stop_time, cases.H, case.parameters, names,
                       tolerance=tolerance)
    err = np.abs(cases.table(run, names) - ref)
    q = np.array([n.startswith("q[") for n in names])
    return float(err[q].max()), float(err[~q].max())


def main() -> int:
    title = "OMSimulator: native FMUs against fmpy (CS) and a DOP853 rtol 1e-11 reference (ME)"
    why = oms.unavailable()
    if why:
        write_result("omsimulator.txt", f"{title}\nnot run: {why}\n")
        return 0
    rows = []
    for key, case in cases.CASES.items():
        fmu = cases.fmu_of(case)
        names = cases.coordinates(fmu)
        cs = oms.simulate(fmu, "cs", case.stop_time, cases.H, case.parameters, names, case.changes)
        b = cases.fmpy_cs(fmu, case, names, case.changes)
        cs_rel = float(np.abs(cases.table(cs, names) - b).max() / np.abs(b).max())
        ref = cases.fmpy_cs(fmu, case, names, extra=cases.TIGHT)
        for tol in (None, 1e-6, 1e-8):
            dq, dqd = me_errors(fmu, case, names, ref, tol)
            rows.append([key, f"{case.stop_time:g}", f"{cs_rel:.2g}" if tol is None else "",
                         "default 1e-4" if tol is None else f"{tol:g}", f"{dq:.2g}", f"{dqd:.2g}"])
    notes = ["CS: max |OMSimulator - fmpy| / max |value| over q, qd and every 1 ms step (bar 1e-9).",
             "ME: max abs difference in q and in qd over every 1 ms output (bar 1e-3 on q).",
             "OMSimulator's CVODE: BDF, atol = rtol x nominal (1), max step 1 ms (its default)."]
    write_result("omsimulator.txt", table(
        title, ["model", "T s", "CS vs fmpy rel", "ME rtol", "ME max |dq|", "ME max |dqd|"],
        rows, notes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
