"""Shared timing helpers for the benchmarks: medians of repeated runs, tables written to results/."""
from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results"


def median_time(fn, number: int | None = None, repeat: int = 9) -> float:
    """Median over ``repeat`` runs of the mean CPU time (this thread) of ``number`` calls, in seconds.

    CPU time, not wall time: on a shared machine it leaves out the time this process waits for a
    core, so ratios measured in one run stay meaningful while other jobs run."""
    if number is None:   # aim for ~20 ms per run
        t0 = time.thread_time()
        fn()
        one = max(time.thread_time() - t0, 1e-7)
        number = max(1, int(0.02 / one))
    runs = []
    for _ in range(repeat):
        t0 = time.thread_time()
        for _ in range(number):
            fn()
        runs.append((time.thread_time() - t0) / number)
    runs.sort()
    return runs[len(runs) // 2]


def median_ratio(ours, ref, repeat: int = 21) -> tuple[float, float, float]:
    """(median time of ``ours``, median time of ``ref``, median of the per-run ratios), in seconds,
    with the runs of the two interleaved (ours, ref, ours, ref, …) so that both see the same load of
    a shared machine; each run is the mean CPU time of a batch of ~10 ms.  Use it for ratios."""
    t_ours, t_ref = interleaved_runs(ours, ref, repeat)
    ratios = sorted(a / b for a, b in zip(t_ours, t_ref))
    return sorted(t_ours)[repeat // 2], sorted(t_ref)[repeat // 2], ratios[repeat // 2]


def interleaved_runs(ours, ref, repeat: int = 21) -> tuple[list[float], list[float]]:
    """The per-run times (seconds per call) of median_ratio: ``repeat`` runs of each, interleaved,
    each the mean CPU time of a batch of ~10 ms."""
    number = []
    for fn in (ours, ref):
        t0 = time.thread_time()
        fn()
        number.append(max(1, int(0.01 / max(time.thread_time() - t0, 1e-7))))
    t_ours, t_ref = [], []
    for _ in range(repeat):
        for fn, n, out in ((ours, number[0], t_ours), (ref, number[1], t_ref)):
            t0 = time.thread_time()
            for _ in range(n):
                fn()
            out.append((time.thread_time() - t0) / n)
    return t_ours, t_ref


def table(title: str, header: list[str], rows: list[list], notes: list[str] = ()) -> str:
    """A plain-text table."""
    cells = [header] + [[c if isinstance(c, str) else f"{c:.3g}" for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    line = lambda r: "  ".join(c.rjust(w) for c, w in zip(r, widths))
    out = [title, "=" * len(title), line(header), line(["-" * w for w in widths])]
    out += [line(r) for r in cells[1:]] + list(notes)
    return "\n".join(out) + "\n"


def write_result(name: str, text: str) -> None:
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / name).write_text(text)
    print(text)


def chain_case(n: int):
    """A random n-link revolute chain, its Pinocchio twin, and one random state in both coordinate
    conventions: (model, pinocchio map, pinocchio data, q, qd, tau, q_pin, v_pin, tau_pin)."""
    from soa_fmu.verify.builders import random_state, serial_chain
    from soa_fmu.verify.pinocchio_bridge import to_pinocchio
    model = serial_chain(n, seed=1)
    pm = to_pinocchio(model)
    q, qd = random_state(model, 2)
    tau = np.random.default_rng(0).normal(size=n)
    return (model, pm, pm.pin_model.createData(), q, qd, tau,
            pm.q_to_pin(q), pm.v_to_pin(qd), pm.v_to_pin(tau))


def callgrind_per_call(args: list[str], functions: list[str], calls: int) -> dict[str, float] | None:
    """Instructions per call inside each C function of ``functions`` (callgrind collecting in that
    function only, one run per function) of ``python *args``, which must make ``calls`` calls of
    it; None without valgrind.  Repeatable where times on a loaded machine are not."""
    if shutil.which("valgrind") is None:
        return None
    out = {}
    with tempfile.TemporaryDirectory() as d:
        for fn in functions:
            path = Path(d, f"cg.{fn}")
            subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={path}",
                            f"--toggle-collect={fn}", sys.executable, *args],
                           check=True, capture_output=True)
            line = next(ln for ln in path.read_text().splitlines() if ln.startswith("totals:"))
            out[fn] = int(line.split()[1]) / calls
    return out
