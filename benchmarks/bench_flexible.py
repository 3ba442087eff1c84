"""Flexible bodies (issue 12): forward dynamics of a chain of 20 flexible links × 4 modes (beam
elements, alternating hinge axes) against the rigid chain of the same links (the same mass
properties); bar: ≤ 3 ×.  With valgrind on PATH the instructions per call of the C kernel
(callgrind, collected inside soa_aba only) are added: repeatable where times on a loaded machine
are not.

    python benchmarks/bench_flexible.py

Writes benchmarks/results/flexible.txt.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]
from timing import interleaved_runs, table, write_result  # noqa: E402

import soa_fmu as sf  # noqa: E402
from soa_fmu import flexible as fx  # noqa: E402
from soa_fmu import joints as J  # noqa: E402

BAR = 3.0
RUNS = 41
ROUNDS = 3


def chain(flexible: bool, n: int = 20, modes: int = 4) -> sf.Model:
    red = fx.reduce(fx.beam(0.5, 1.0, 1e6, 100.0, 120.0, 80.0, 4), modes, 0.01)
    m = sf.Model("chain", gravity=(0, 0, -9.81))
    parent = "world"
    for i in range(n):
        kw = {"flexible": red} if flexible else {"mass": red.mass, "com": red.com,
                                                 "inertia": red.inertia}
        m.add_body(f"l{i}", parent, J.Revolute([0, 1, 0] if i % 2 else [0, 0, 1]),
                   translation=(0.5 if i else 0.0, 0, 0), **kw)
        parent = f"l{i}"
    return m


def call(flexible: bool):
    """(nv, a call of sf.forward_dynamics on the chain at a fixed random state)."""
    m = chain(flexible)
    rng = np.random.default_rng(0)
    q, qd, tau = rng.normal(size=m.nq) * 0.1, rng.normal(size=m.nv) * 0.1, rng.normal(size=m.nv)
    return m.nv, lambda: sf.forward_dynamics(m, q, qd, tau)


def instructions(flexible: bool, calls: int = 200) -> float | None:
    """Instructions per forward dynamics inside the C core (callgrind collecting in soa_aba only,
    over `calls` calls of this script's --calls mode); None without valgrind."""
    if shutil.which("valgrind") is None:
        return None
    with tempfile.TemporaryDirectory() as d:
        out = Path(d, "cg")
        subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
                        "--toggle-collect=soa_aba", sys.executable, __file__, "--calls",
                        "flexible" if flexible else "rigid", str(calls)],
                       check=True, capture_output=True)
        line = next(ln for ln in out.read_text().splitlines() if ln.startswith("totals:"))
        return int(line.split()[1]) / calls


def main() -> int:
    if sys.argv[1:2] == ["--calls"]:                     # the callgrind run of instructions()
        fn = call(sys.argv[2] == "flexible")[1]
        for _ in range(int(sys.argv[3])):
            fn()
        return 0
    (nv_flex, flex), (nv_rigid, rigid) = call(True), call(False)
    t_flex, t_rigid, round_medians = [], [], []
    for _ in range(ROUNDS):
        tf, tr = interleaved_runs(flex, rigid, RUNS)
        t_flex += tf
        t_rigid += tr
        round_medians.append(float(np.median(np.array(tf) / np.array(tr))))
    ratios = np.array(t_flex) / np.array(t_rigid)
    ratio, q1, q3 = (float(np.percentile(ratios, p)) for p in (50, 25, 75))
    rows = [["rigid chain, 20 links", nv_rigid, np.median(t_rigid) * 1e6, 1.0, "", ""],
            ["flexible chain, 20 links × 4 modes", nv_flex, np.median(t_flex) * 1e6, ratio,
             f"{q1:.3g} – {q3:.3g}", f"≤ {BAR:g}"]]
    text = table(
        "Forward dynamics: 20 flexible links × 4 modes vs the rigid chain (Python API, one run)",
        ["", "dofs", "median µs", "× rigid", "quartiles", "bar"], rows,
        [f"Both through sf.forward_dynamics (the same Python call overhead); {ROUNDS} rounds of "
         f"{RUNS} runs of each, interleaved; the ratio is the median of the per-run ratios, with "
         "their quartiles.",
         "Median ratio of each round: " + ", ".join(f"{r:.3g}" for r in round_medians) + "."])
    i_flex, i_rigid = instructions(True), instructions(False)
    if i_flex is not None and i_rigid is not None:
        text += "\n" + table("Instructions per forward dynamics in the C core (callgrind)",
                             ["", "thousands", "× rigid"],
                             [["rigid chain, 20 links", i_rigid / 1e3, 1.0],
                              ["flexible chain, 20 links × 4 modes", i_flex / 1e3, i_flex / i_rigid]])
    write_result("flexible.txt", text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
