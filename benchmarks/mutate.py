"""`make mutate`: apply named mutants to the C core and the FMU wrapper, one at a time, in a copy of
the checkout, and run the tests that guard each promise against it.  A mutant is *killed* when those
tests fail.  Every mutant must be killed: one that survives names a promise no test holds.  The
table goes to benchmarks/results/mutate.txt (kill rate, time per mutant).

    python benchmarks/mutate.py                 # every mutant
    python benchmarks/mutate.py malloc-per-step # some, by name
    python benchmarks/mutate.py --list

Each mutant is an exact text replacement (the original must occur exactly once, so a mutant whose
code moved fails loudly instead of testing nothing).  A C-core mutant rebuilds the extension in the
copy; a wrapper mutant (fmu/native/) reuses the built extension: the tests build their FMUs from the
copy's sources.  A mutant marked ``pending`` is run and reported but not counted: it names a promise
another piece of work will make testable (the reason says which).
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results" / "mutate.txt"


@dataclass(frozen=True)
class Mutant:
    name: str
    path: str                  # relative to the repository root
    old: str
    new: str
    tests: tuple[str, ...]     # pytest arguments (files, -k expressions)
    what: str
    pending: str = ""          # why it cannot be killed yet (not counted)


STATE = "soa_fmu/fmu/native/fmu_state.c"
STEP = "soa_fmu/fmu/native/fmu_step.c"
VALUES = "soa_fmu/fmu/native/fmu_values.c"
CONTROLLER = "soa_fmu/fmu/native/controller.c"
MUTANTS = [
    Mutant("state-checksum-removed", STATE,
           '    if (get_u64(&end) != fnv1a(buf, n - 8)) return "it is corrupted (checksum mismatch)";\n',
           "", ("tests/test_fmu_hardening.py", "tests/test_fmu_errors.py", "tests/test_fmu_native_fuzz.py"),
           "drop a check: fmi2SetFMUstate/DeSerialize accept a corrupted state"),
    Mutant("malloc-per-step", STEP,
           "    const soa_status st = plant ? integrate(c, h) : fmu_controller_step(c);\n",
           "    const soa_status st = plant ? integrate(c, h) : fmu_controller_step(c);\n"
           "    { void *malloc(size_t), free(void *); void *volatile leak = malloc(16); free(leak); }\n",
           ("tests/test_fmu_allocations.py",),
           "allocate in a step: one malloc per fmi2DoStep"),
    Mutant("rk4-first-stage-reuse-disabled", "soa_fmu/core/integrators.c",
           "    if (in->q_factored && memcmp(q, in->q_factored, sizeof(double) * m->nq) == 0",
           "    if (0 && in->q_factored && memcmp(q, in->q_factored, sizeof(double) * m->nq) == 0",
           ("tests/test_fmu_sweeps.py", "tests/test_integrators.py"),
           "skip a reuse: RK4's first stage recomputes the articulated factors"),
    Mutant("ros34pw2-coefficient-rounded", "soa_fmu/core/integrators.c",
           "     {-6.3681792001283597, -6.7956209444668367, 2.8700986043310555}},\n",
           "     {-6.3681792001283597, -6.7956209444668367, 2.87}},\n",
           ("tests/test_rosenbrock.py",),
           "round a coefficient: ROS34PW2's c43 to three digits (order 3 lost)"),
    Mutant("rk4w-coefficient-rounded", "soa_fmu/core/integrators.c",
           "     {-2.0976924435965714099, -0.66365159308339904312, 1.1472475548785371776}},\n",
           "     {-2.0976924435965714099, -0.66365159308339904312, 1.147}},\n",
           ("tests/test_rk4w.py",),
           "round a coefficient: RK4W's c43 to four digits (its order conditions and order lost)"),
    Mutant("rk4w-theta-always-coupled", "soa_fmu/core/integrators.c",
           "    4, 2, 1, RK4W_GAMMA,\n", "    4, 2, 0, RK4W_GAMMA,\n",
           ("tests/test_rk4w.py",),
           "couple theta in every stage: RK4W's step on a smooth model is no longer RK4 (order 3)"),
    Mutant("baumgarte-gains-div40", "soa_fmu/core/closures.c",
           "            d->cl_rhs_stab[r0 + r] = 2.0 * alpha * (v - (u ? u[6 * j + r] : 0.0))\n"
           "                                     + beta * beta * d->cl_err[6 * j + r];\n",
           "            d->cl_rhs_stab[r0 + r] = 2.0 * (alpha / 40.0) * (v - (u ? u[6 * j + r] : 0.0))\n"
           "                                     + (beta / 40.0) * (beta / 40.0) * d->cl_err[6 * j + r];\n",
           ("tests/test_constraints.py::test_four_bar_residual_stays_bounded_over_10_s",
            "tests/test_fmu_closed_chains.py"),
           "loosen a gain: Baumgarte alpha, beta divided by 40"),
    Mutant("tau-check-dropped", "soa_fmu/core/joints.c",
           "    const int i = soa_first_nonfinite(tau, m->nv);\n    if (i >= 0) {\n        st.kind = SOA_BAD_TAU;",
           "    const int i = -1; (void)tau;\n    if (i >= 0) {\n        st.kind = SOA_BAD_TAU;",
           ("tests/test_bad_models.py", "tests/test_core.py", "tests/test_fuzz_core.py"),
           "drop a check: a non-finite tau reaches the sweeps"),
    Mutant("setreal-nan-accepted", VALUES,
           "    if (isnan(x)) {\n        snprintf(text, n, \"%s is NaN\"",
           "    if (0 && isnan(x)) {\n        snprintf(text, n, \"%s is NaN\"",
           ("tests/test_fmu_errors.py",),
           "drop a check: fmi2SetReal accepts NaN"),
    Mutant("damping-term-dropped", "soa_fmu/core/dissipation.c",
           "        T[i] = tau[i] - dmp[i] * qd[i];\n",
           "        T[i] = tau[i];\n",
           ("tests/test_physical_parameters.py", "tests/test_fmu_pinocchio.py"),
           "drop a term: viscous joint damping"),
    Mutant("friction-sign-swapped", "soa_fmu/core/dissipation.c",
           "        if (fc[i] != 0.0) T[i] -= fc[i] * tanh(qd[i] / vs);\n",
           "        if (fc[i] != 0.0) T[i] += fc[i] * tanh(qd[i] / vs);\n",
           ("tests/test_physical_parameters.py", "tests/test_fmu_pinocchio.py"),
           "swap a sign: Coulomb friction feeds energy in"),
    Mutant("controller-feedforward-sign-swapped", CONTROLLER,
           "            tau[i] += m->damping[i] * qdr[i];\n",
           "            tau[i] -= m->damping[i] * qdr[i];\n",
           ("tests/test_controller_fmu.py",),
           "swap a sign: the controller subtracts the damping it should feed forward"),
    Mutant("controller-sampled-not-held", CONTROLLER,
           "    if (!c->stale || held(c)) return 1;\n",
           "    if (!c->stale) return 1;\n",
           ("tests/test_controller_fmu.py", "tests/test_system_ssp.py"),
           "drop a hold: a sampled controller's tau follows its inputs between steps"),
    Mutant("controller-trajectory-clock-frozen", CONTROLLER,
           "    reference(c, c->t, qr, qdr, a);\n",
           "    reference(c, c->start_time, qr, qdr, a);\n",
           ("tests/test_controller_fmu.py",),
           "freeze a clock: the quintic move is evaluated at the start time"),
    Mutant("cross-motion-sign-swapped", "soa_fmu/core/spatial.h",
           "    out[3] = v1 * a2 - v2 * a1 + w1 * b2 - w2 * b1;\n",
           "    out[3] = v1 * a2 - v2 * a1 - w1 * b2 + w2 * b1;\n",
           ("tests/test_pinocchio.py", "tests/test_dynamics.py"),
           "swap a sign: a velocity-product term of the spatial cross product"),
]


def copy_checkout(dest: Path) -> None:
    ignore = shutil.ignore_patterns(".venv", ".git", "build", "out", "__pycache__", ".pytest_cache",
                                    ".hypothesis", "*.egg-info")
    shutil.copytree(REPO, dest, ignore=ignore, symlinks=True)


def run_mutant(m: Mutant, python: str) -> tuple[str, float, str]:
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix=f"mutant_{m.name}_") as tmp:
        root = Path(tmp) / "repo"
        copy_checkout(root)
        src = root / m.path
        text = src.read_text()
        if text.count(m.old) != 1:
            return "stale", time.perf_counter() - t0, f"{m.path}: the original text occurs {text.count(m.old)} times"
        src.write_text(text.replace(m.old, m.new))
        env = {**os.environ, "PYTHONPATH": str(root), "CI": ""}
        if not m.path.startswith("soa_fmu/fmu/"):
            for so in root.glob("soa_fmu/_core*.so"):
                so.unlink()
            b = subprocess.run([python, "setup.py", "-q", "build_ext", "--inplace"], cwd=root,
                               env=env, capture_output=True, text=True)
            if b.returncode != 0:
                return "killed (build)", time.perf_counter() - t0, b.stderr[-300:]
        tests = [t for t in m.tests if not t.startswith("tests/") or (root / t.split("::")[0]).exists()]
        if not tests:
            return "survived", time.perf_counter() - t0, "no guarding test exists"
        r = subprocess.run([python, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *tests],
                           cwd=root, env=env, capture_output=True, text=True)
        lines = r.stdout.strip().splitlines() or [""]
        failed = [ln for ln in lines if ln.startswith(("FAILED", "ERROR"))]
        detail = (failed[0][:150] + " | " if failed else "") + lines[-1]
        return ("killed" if r.returncode != 0 else "survived"), time.perf_counter() - t0, detail


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("names", nargs="*", help="mutants to run (default: all)")
    ap.add_argument("--list", action="store_true", help="list the mutants and exit")
    args = ap.parse_args(argv)
    if args.list:
        for m in MUTANTS:
            print(f"{m.name:34s} {m.path:34s} {m.what}{'  [pending]' if m.pending else ''}")
        return 0
    chosen = [m for m in MUTANTS if not args.names or m.name in args.names]
    rows = []
    for m in chosen:
        outcome, secs, detail = run_mutant(m, sys.executable)
        print(f"{m.name}: {outcome} ({secs:.0f} s) {detail}", flush=True)
        rows.append((m, outcome, secs, detail))
    counted = [r for r in rows if not r[0].pending]
    killed = sum(r[1].startswith("killed") for r in counted)
    lines = ["Mutation check (benchmarks/mutate.py): each mutant applied alone to a copy of the checkout",
             "=" * 88,
             f"{'mutant':34s}  {'outcome':14s}  {'s':>5s}  what / guarding tests"]
    for m, outcome, secs, detail in rows:
        lines.append(f"{m.name:34s}  {outcome + (' *' if m.pending else ''):14s}  {secs:5.0f}  {m.what}")
        lines.append(f"{'':34s}  {'':14s}  {'':5s}  {' '.join(m.tests)}")
        lines.append(f"{'':34s}  {'':14s}  {'':5s}  -> {detail.split(' | ')[0]}")
        if m.pending:
            lines.append(f"{'':34s}  {'':14s}  {'':5s}  * pending: {m.pending}")
    lines.append(f"kill rate: {killed} of {len(counted)} counted mutants"
                 f" ({len(rows) - len(counted)} pending, not counted); machine: "
                 f"{os.cpu_count()} cores, shared")
    if not args.names:
        RESULTS.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))
    return 0 if killed == len(counted) and all(r[1] != "stale" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
