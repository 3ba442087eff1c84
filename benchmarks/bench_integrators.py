"""Work–precision of the integrators (docs/joints.md): the error at t = 2 s against the C cost per
simulated second, for rk4, euler, implicit (Euler), ros2 with fixed steps and with error control,
and dop853, on a bouncing ball (1 kg, Hunt–Crossley k = 1e5, n = 1.5, d = 0.2, dropped 5 cm) and
three example-robot-data arms swinging freely under gravity from their neutral pose with zero
torque (ur10, panda, xarm7; their URDF damping, friction and joint stops on).

Each point is ONE call of the C kernel over the 2 s (``_core.rk4``, ``rosenbrock``, ... with nsub
steps; the adaptive kernels in 20 calls of 0.1 s, their step carried over), timed by CPU time,
best of 3: the C cost per simulated second, without Python per step.  The error is max |q(2 s) − q_ref| (rad or m) against DOP853 at
rtol = atol = 1e-12.  A method that diverges at a step size has no point there.  Then the
fixed-step ros2 against implicit Euler in a C host (benchmarks/fmu_step_host.c, the native FMU of
the 7-dof arm, setReal(τ) + doStep(1 ms) + getReal(q, q̇)): the bar ros2 ≤ 2.5 × implicit.

    python benchmarks/bench_integrators.py

Writes benchmarks/results/integrators.txt and docs/img/integrators.png.
"""
from __future__ import annotations

import math
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path[:0] = [str(HERE), str(REPO), str(REPO / "tests")]
from timing import table, write_result  # noqa: E402

import soa_fmu as sf  # noqa: E402
from soa_fmu import _core  # noqa: E402
from soa_fmu.io import ModelWarning  # noqa: E402

T_END = 2.0
STEPS = (4e-3, 2e-3, 1e-3, 5e-4, 2.5e-4, 1.25e-4)
TOLS = (1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7)
DOP_TOLS = (1e-4, 1e-6, 1e-8, 1e-10)
ROBOTS = {"ur10": ("ur_description/urdf", "ur10_robot.urdf"),
          "panda": ("panda_description/urdf", "panda.urdf"),
          "xarm7": ("xarm_description/urdf", "xarm7.urdf")}
CHUNKS = 20
BAR_COST = 2.5                  # ros2 fixed step in a C host <= 2.5 x implicit Euler's


def ball() -> tuple[sf.Model, np.ndarray]:
    m = sf.Model("ball")
    m.add_body("ball", joint=sf.Free(), mass=1.0, inertia=np.eye(3) * 0.004)
    m.add_contact_sphere("s", "ball", radius=0.1, stiffness=1e5, exponent=1.5, dissipation=0.2)
    m.add_contact_plane("floor")
    q = m.neutral_configuration()
    q[6] = 0.15
    return m, q


def robot(name: str) -> tuple[sf.Model, np.ndarray]:
    from test_robot_data import robot_path
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ModelWarning)
        m = sf.load_model(robot_path(*ROBOTS[name]), strict=False)
    return m, m.neutral_configuration()


def run(model: sf.Model, q0: np.ndarray, method: str, x: float) -> tuple[np.ndarray, float]:
    """q at T_END and the best CPU time of 3 single kernel calls (x: the step, or the tolerance)."""
    best, q = math.inf, None
    for _ in range(3):
        q, qd, tau = q0.copy(), np.zeros(model.nv), np.zeros(model.nv)
        t0 = time.thread_time()
        if method in ("dop853", "ros2 (error control)"):      # 20 calls of 0.1 s (step limit)
            hp = 0.0
            for k in range(CHUNKS):
                if method == "dop853":
                    hp = _core.dop853(model.data, q, qd, tau, False, k * T_END / CHUNKS,
                                      T_END / CHUNKS, x, x, math.inf, hp)[1]
                else:
                    hp = _core.rosenbrock_adaptive(model.data, q, qd, tau, False, T_END / CHUNKS,
                                                   x, x, 0.01, hp)[1]
        else:
            kernel = {"rk4": _core.rk4, "euler": _core.euler, "implicit": _core.implicit,
                      "ros2": _core.rosenbrock}[method]
            kernel(model.data, q, qd, tau, False, x, int(round(T_END / x)))
        best = min(best, time.thread_time() - t0)
    return q, best


def curves(model: sf.Model, q0: np.ndarray) -> dict[str, list[tuple[float, float, float]]]:
    """method -> [(x, cost per simulated second, error at T_END)]."""
    ref, _ = run(model, q0, "dop853", 1e-12)
    out: dict[str, list] = {}
    for method, xs in (("rk4", STEPS), ("euler", STEPS), ("implicit", STEPS), ("ros2", STEPS),
                       ("ros2 (error control)", TOLS), ("dop853", DOP_TOLS)):
        pts = []
        for x in xs:
            try:
                q, t = run(model, q0, method, x)
            except _core.StatusError:
                continue                        # diverged at this step
            err = float(np.abs(q - ref).max())
            if np.isfinite(err):
                pts.append((x, t / T_END, err))
        out[method] = pts
    return out


def host_cost(tmp: Path) -> tuple[str, float]:
    """ros2's and implicit's fixed step in the C host (the 7-dof arm's native FMU)."""
    import build_fmu
    from bench_fmu import best_rounds
    from model_descriptions import EXAMPLES_DIR
    native = build_fmu.build(EXAMPLES_DIR / "arm7.urdf", tmp / "Arm7.fmu", name="Arm7")
    best, kept, notes = best_rounds([(f"native, 7-dof arm, {m}", native, m)
                                     for m in ("rk4", "implicit", "ros2")], tmp, 3,
                                    state_only=True)
    ratio = best["native, 7-dof arm, ros2"] / best["native, 7-dof arm, implicit"]
    rows = [kept[f"native, 7-dof arm, {m}"][:7] for m in ("rk4", "implicit", "ros2")]
    text = table("The ros2 step in a C host: setReal(τ) + doStep(h = 1 ms) + getReal(q, q̇)",
                 ["", "median µs", "% of h", "p99 µs", "p99/median", "p99.9 µs", "worst µs"],
                 rows, [f"best of 3 interleaved rounds. ros2 / implicit = {ratio:.2f} (bar ≤ "
                        f"{BAR_COST}: {'met' if ratio <= BAR_COST else 'MISSED'}); ros2 / rk4 = "
                        f"{best['native, 7-dof arm, ros2'] / best['native, 7-dof arm, rk4']:.2f}."]
                 + notes)
    return text, ratio


def plot(results: dict, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, len(results), figsize=(4.2 * len(results), 4.0))
    style = {"rk4": "o-", "euler": "v-", "implicit": "s-", "ros2": "D-",
             "ros2 (error control)": "D--", "dop853": "^-"}
    for ax, (name, res) in zip(axes, results.items()):
        for method, pts in res.items():
            if pts:
                ax.loglog([p[1] * 1e3 for p in pts], [max(p[2], 1e-16) for p in pts],
                          style[method], label=method, ms=4)
        ax.set_title(name)
        ax.set_xlabel("C cost per simulated second (ms)")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("error at t = 2 s (max |q − q_ref|)")
    axes[-1].legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(exist_ok=True)
    fig.savefig(path, dpi=110)


def main() -> int:
    results = {"ball": curves(*ball())}
    for name in ROBOTS:
        results[name] = curves(*robot(name))
    text = ""
    for name, res in results.items():
        rows = [[method, f"{x:g}", cost * 1e3, err] for method, pts in res.items()
                for x, cost, err in pts]
        text += table(f"Work–precision, {name}: error at t = 2 s vs C cost per simulated second",
                      ["method", "h or tol", "ms per s", "error"], rows,
                      ["(a method missing a step size diverged there)"]) + "\n"
    at_1ms = {name: dict((m, next((e for x, _, e in pts if x == 1e-3), math.nan))
                         for m, pts in res.items() if m in ("rk4", "implicit", "ros2"))
              for name, res in results.items()}
    text += table("At h = 1 ms: error at t = 2 s", ["model", "rk4", "implicit", "ros2"],
                  [[n, *(f"{v[m]:.3g}" for m in ("rk4", "implicit", "ros2"))]
                   for n, v in at_1ms.items()]) + "\n"
    with tempfile.TemporaryDirectory() as tmp:
        host, _ = host_cost(Path(tmp))
    text += host
    write_result("integrators.txt", text)
    plot(results, REPO / "docs" / "img" / "integrators.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
