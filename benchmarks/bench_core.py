"""Engine speed vs Pinocchio in one run (SPEC §6): FD, ID, M, M⁻¹ at 7 dof and on long chains,
FD on the robots (arm7, panda, ur10), O(N) scaling of FD, and start-up cost (import + first call in a fresh process: nothing compiles at
run time, the C core is compiled at install).  With valgrind on PATH, the instructions per FD call
at 7 and 100 dof (callgrind, in the C kernel and with the extension's entry point) are added."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pinocchio as pin

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from timing import (callgrind_per_call, chain_case, median_ratio, table,  # noqa: E402
                    write_result)

import soa_fmu as sf  # noqa: E402
from soa_fmu.verify.builders import random_state, serial_chain  # noqa: E402

BARS = {"FD": 0.5, "ID": 0.7, "M": 1.0, "M⁻¹": 1.0}          # issue 9, ratios to Pinocchio


def compare(n: int, which=("FD", "ID", "M", "M⁻¹")) -> list[list]:
    model, pm, data, q, qd, tau, qp, vp, tp = chain_case(n)
    pmod = pm.pin_model
    pairs = {
        "FD": (lambda: sf.forward_dynamics(model, q, qd, tau), lambda: pin.aba(pmod, data, qp, vp, tp)),
        "ID": (lambda: sf.inverse_dynamics(model, q, qd, tau), lambda: pin.rnea(pmod, data, qp, vp, tp)),
        "M": (lambda: sf.mass_matrix(model, q), lambda: pin.crba(pmod, data, qp)),
        "M⁻¹": (lambda: sf.mass_matrix_inverse(model, q), lambda: pin.computeMinverse(pmod, data, qp)),
    }
    rows = []
    for name in which:
        ours, ref = pairs[name]
        ours(), ref()
        t_ours, t_pin, ratio = median_ratio(ours, ref)   # interleaved: both see the same load
        bar = BARS[name] if n == 7 else (0.4 if name == "FD" else BARS[name])
        rows.append([name, str(n), t_ours * 1e6, t_pin * 1e6, ratio, f"≤ {bar}"])
    return rows


def robots() -> list[list]:
    """FD from Python on the robots of bench_native (arm7, panda, ur10): ``sf.forward_dynamics``
    on our model of the URDF against ``pin.aba`` on Pinocchio's own model of the same file
    (``buildModelFromUrdf``, what a Pinocchio user calls), checked equal first, timed interleaved."""
    import warnings
    from bench_native import ROBOTS, robot_file
    from model_descriptions import EXAMPLES_DIR
    files = {"arm7": EXAMPLES_DIR / "arm7.urdf",
             **{n: robot_file(folder, f) for n, (folder, f) in ROBOTS.items()}}
    rows = []
    for name, path in files.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = sf.load_model(path)
        pmod = pin.buildModelFromUrdf(str(path))
        data = pmod.createData()
        if pmod.nq != model.nq or pmod.nv != model.nv:
            raise RuntimeError(f"{name}: Pinocchio's model has nq, nv = {pmod.nq}, {pmod.nv}")
        q, qd = random_state(model, 3)
        tau = np.random.default_rng(1).normal(size=model.nv)
        ours = sf.forward_dynamics(model, q, qd, tau)
        ref = pin.aba(pmod, data, q, qd, tau)
        if not np.allclose(ours, ref, rtol=1e-9, atol=1e-9 * np.abs(ref).max()):
            raise RuntimeError(f"{name}: FD differs from pin.aba by {np.abs(ours - ref).max():g}")
        t_ours, t_pin, ratio = median_ratio(lambda: sf.forward_dynamics(model, q, qd, tau),
                                            lambda: pin.aba(pmod, data, q, qd, tau))
        rows.append([f"FD, {name}", str(model.nv), t_ours * 1e6, t_pin * 1e6, ratio, "≤ 0.5"])
    return rows


def startup() -> tuple[float, float]:
    """Fresh processes, seconds: (import + first FD call, the same plus the first ID, M, M⁻¹ and
    simulate calls)."""
    setup = ("import time; t=time.perf_counter(); import numpy as np, soa_fmu as sf; "
             "from soa_fmu.verify.builders import serial_chain, random_state; m=serial_chain(7); "
             "q,qd=random_state(m); sf.forward_dynamics(m,q,qd,np.zeros(7)); ")
    rest = ("sf.inverse_dynamics(m,q,qd,qd); sf.mass_matrix(m,q); sf.mass_matrix_inverse(m,q); "
            "sf.simulate(m,0.01,0.01); ")
    stop = "print(time.perf_counter()-t)"

    def run(code: str) -> float:
        return float(subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                                    text=True, env=dict(os.environ)).stdout)

    run(setup + stop)                                         # the OS file cache, not ours
    first = sorted(run(setup + stop) for _ in range(5))[2]
    everything = sorted(run(setup + rest + stop) for _ in range(5))[2]
    return first, everything


def fd_scaling() -> tuple[float, float, float]:
    """Our FD on the chains of 100 and 1000 links, interleaved (Pinocchio's Data for N = 1000
    needs more memory than these machines have): (t(1000), t(100), the median per-run ratio)."""
    calls = []
    for n in (1000, 100):
        model = serial_chain(n, seed=1)
        q, qd = random_state(model, 2)
        tau = np.zeros(n)
        sf.forward_dynamics(model, q, qd, tau)
        calls.append(lambda m=model, q=q, qd=qd, tau=tau: sf.forward_dynamics(m, q, qd, tau))
    return median_ratio(*calls)


def fd_calls(n: int, calls: int) -> None:
    """`calls` forward dynamics of the chain of n links through the extension (the callgrind
    runs of fd_instructions; the model is built before, the first call is one of them)."""
    model = serial_chain(n, seed=1)
    q, qd = random_state(model, 2)
    tau = np.random.default_rng(0).normal(size=n)
    for _ in range(calls):
        sf.forward_dynamics(model, q, qd, tau)


def fd_instructions(n: int, calls: int = 200) -> dict[str, float] | None:
    """Instructions per FD call on the chain of n links: in the C kernel (soa_aba) and with the
    extension's entry point (py_aba: argument checks, output array); None without valgrind."""
    return callgrind_per_call([__file__, "--calls", str(n), str(calls)], ["soa_aba", "py_aba"],
                              calls)


def main() -> None:
    if sys.argv[1:2] == ["--calls"]:                  # the callgrind runs of fd_instructions
        fd_calls(int(sys.argv[2]), int(sys.argv[3]))
        return
    rows = compare(7) + compare(100) + compare(300, ("FD", "ID"))
    t1000, t100, scaling = fd_scaling()
    first_fd, all_first = startup()
    notes = [
        "",
        f"FD O(N): t(1000)/t(100) = {scaling:.2f}   (bar ≤ 11; t(100) = {t100 * 1e6:.1f} µs, "
        f"t(1000) = {t1000 * 1e6:.1f} µs; interleaved runs, the median per-run ratio)",
        f"import + first forward_dynamics call (fresh process, median of 5): {first_fd:.3f} s"
        "   (bar ≤ 0.3 s)",
        f"import + first FD, ID, M, M⁻¹ and simulate calls: {all_first:.3f} s",
        f"model: serial chain of revolute joints (random axes/inertias); pinocchio {pin.__version__}; "
        "called from Python; ratios: the median of the per-run ratios of 21 interleaved runs "
        "(ours, Pinocchio, ours, ...; each the mean CPU time of a ~10 ms batch), times their medians",
    ]
    text = table("Engine vs Pinocchio (µs per call)",
                 ["algorithm", "N", "soa_fmu µs", "pin µs", "ratio", "bar"], rows, notes)
    text += "\n" + table("Forward dynamics from Python on the robots: sf.forward_dynamics vs pin.aba "
                         "(µs per call)", ["algorithm", "nv", "soa_fmu µs", "pin µs", "ratio", "bar"],
                         robots(),
                         ["each library's own model of the same URDF (ours: sf.load_model, fixed "
                          "links folded; Pinocchio: buildModelFromUrdf), results checked equal "
                          "before timing; interleaved runs as above (issue 24's bar: ≤ 0.5)"])
    counts = {n: fd_instructions(n) for n in (7, 100)}
    if all(c is not None for c in counts.values()):
        text += "\n" + table("Instructions per forward dynamics call (callgrind)",
                             ["N", "C kernel (soa_aba)", "per body", "with the entry point (py_aba)"],
                             [[str(n), f"{c['soa_aba']:.0f}", f"{c['soa_aba'] / n:.0f}",
                               f"{c['py_aba']:.0f}"] for n, c in counts.items()])
    write_result("core.txt", text)


if __name__ == "__main__":
    main()
