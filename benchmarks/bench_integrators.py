"""Work–precision of the integrators (docs/joints.md): the error at t = 2 s against the C cost per
simulated second, for rk4, euler, implicit (Euler), ros2, ros34pw2 and rk4w (auto's stiff choice)
with fixed steps and with error control, and dop853, on a bouncing ball (1 kg, Hunt–Crossley
k = 1e5, n = 1.5, d = 0.2, dropped 5 cm) and three example-robot-data arms swinging under gravity
with zero torque, their URDF damping, friction and joint stops on (START):

* ur10: a free swing that reaches no stop — the issue's scenario (its rk4 error 8.8e-9 at 1 ms is
  this one's): from a pose found by a seeded search of random poses for one whose 2-s swing stays
  > 1.5 rad inside every stop (the neutral pose spins the wrist into its ±2π stop at 1.2 s);
* ur10, neutral pose: the same arm striking that stop, kept as a separate "stop impacts" panel
  (a stop's onset is not smooth: every fixed-step method loses its order there);
* panda: its SRDF "default" pose; it strikes its stops — no 2-s swing from rest avoids them (it
  has no stable equilibrium inside its limits, and 1500 random starts all reached one);
* xarm7: its SRDF "home" pose (the neutral one), heavily damped: it reaches no stop.

The results file lists each swing's least distance to a stop along the reference.

Each point is ONE call of the C kernel over the 2 s (``_core.rk4``, ``rosenbrock``, ... with nsub
steps; the adaptive kernels in 20 calls of 0.1 s, their step carried over), timed by CPU time,
best of 3: the C cost per simulated second, without Python per step.  The error is
max |q(2 s) − q_ref| (rad or m) against DOP853 at rtol = atol = 1e-12.  A method that diverges at
a step size has no point there.  Then the fixed-step rk4, ros2, ros34pw2 and rk4w against implicit
Euler in a C host (benchmarks/fmu_step_host.c, the native FMU of the 7-dof arm, setReal(τ) +
doStep(1 ms) + getReal(q, q̇)).  The issue's bars judge the default method, rk4w (DEFAULT): its
error at 1 ms (BARS_1MS) and its host step ≤ 2.5 × implicit Euler's.

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
START = {"ur10": (-0.38, 1.84, -1.59, 2.09, 1.27, -1.79),           # free swing (see above)
         "ur10, stop impacts": None,                                  # the neutral pose
         "panda": (0, -0.785398, 0, -2.35619, 0, 1.5707, 0.785398, 0.001, 0.001),   # SRDF default
         "xarm7": None}                                               # SRDF home = neutral
METHODS = ("rk4", "euler", "implicit", "ros2", "ros34pw2", "rk4w", "ros2 (error control)",
           "ros34pw2 (error control)", "rk4w (error control)", "dop853")
FIXED = {"rk4": "rk4", "euler": "euler", "implicit": "implicit", "ros2": "rosenbrock",
         "ros34pw2": "ros34pw2", "rk4w": "rk4w"}                      # _core kernels
ADAPTIVE = {"ros2 (error control)": "rosenbrock_adaptive", "rk4w (error control)": "rk4w_adaptive",
            "ros34pw2 (error control)": "ros34pw2_adaptive"}
STIFF = ("implicit", "ros2", "ros34pw2", "rk4w")      # the host-cost rows (and rk4)
DEFAULT = "rk4w"                # auto's choice for every stiff model: the method the bars judge
BARS_1MS = {"ur10": 1e-4, "panda": 2e-2, "xarm7": 5e-4}    # the stiff-stable method at 1 ms
CHUNKS = 20
BAR_COST = 2.5                  # the stiff method's fixed step in a C host <= 2.5 x implicit's


def ball() -> tuple[sf.Model, np.ndarray]:
    m = sf.Model("ball")
    m.add_body("ball", joint=sf.Free(), mass=1.0, inertia=np.eye(3) * 0.004)
    m.add_contact_sphere("s", "ball", radius=0.1, stiffness=1e5, exponent=1.5, dissipation=0.2)
    m.add_contact_plane("floor")
    q = m.neutral_configuration()
    q[6] = 0.15
    return m, q


def robot(name: str) -> tuple[sf.Model, np.ndarray]:
    """The arm of a START entry and its start pose."""
    from test_robot_data import robot_path
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ModelWarning)
        m = sf.load_model(robot_path(*ROBOTS[name.split(",")[0]]), strict=False)
    q0 = START[name]
    return m, m.neutral_configuration() if q0 is None else np.array(q0, dtype=float)


def stop_margin(model: sf.Model, q0: np.ndarray) -> float:
    """The least distance to a joint stop along the reference swing (sampled every 10 ms; < 0: it
    strikes one)."""
    lo, hi = model.joint_limits
    if not np.isfinite(np.r_[lo, hi]).any():
        return math.inf
    q, qd, hp, least = q0.copy(), np.zeros(model.nv), 0.0, math.inf
    for k in range(int(round(T_END / 0.01))):
        hp = _core.dop853(model.data, q, qd, np.zeros(model.nv), False, k * 0.01, 0.01, 1e-12,
                          1e-12, math.inf, hp)[1]
        least = min(least, float(np.nanmin(np.minimum(q - lo, hi - q))))
    return least


def run(model: sf.Model, q0: np.ndarray, method: str, x: float) -> tuple[np.ndarray, float]:
    """q at T_END and the best CPU time of 3 single kernel calls (x: the step, or the tolerance)."""
    best, q = math.inf, None
    for _ in range(3):
        q, qd, tau = q0.copy(), np.zeros(model.nv), np.zeros(model.nv)
        t0 = time.thread_time()
        if method == "dop853" or method in ADAPTIVE:      # 20 calls of 0.1 s (step limit)
            hp = 0.0
            for k in range(CHUNKS):
                if method == "dop853":
                    hp = _core.dop853(model.data, q, qd, tau, False, k * T_END / CHUNKS,
                                      T_END / CHUNKS, x, x, math.inf, hp)[1]
                else:
                    hp = getattr(_core, ADAPTIVE[method])(model.data, q, qd, tau, False,
                                                          T_END / CHUNKS, x, x, 0.01, hp)[1]
        else:
            getattr(_core, FIXED[method])(model.data, q, qd, tau, False, x, int(round(T_END / x)))
        best = min(best, time.thread_time() - t0)
    return q, best


def curves(model: sf.Model, q0: np.ndarray) -> dict[str, list[tuple[float, float, float]]]:
    """method -> [(x, cost per simulated second, error at T_END)]; "reference" -> [(1e-10, 0, the
    distance of DOP853 at 1e-10 from the reference at 1e-12)]."""
    ref, _ = run(model, q0, "dop853", 1e-12)
    out: dict[str, list] = {"reference": [(1e-10, 0.0, float(np.abs(
        run(model, q0, "dop853", 1e-10)[0] - ref).max()))]}
    for method in METHODS:
        xs = DOP_TOLS if method == "dop853" else TOLS if method in ADAPTIVE else STEPS
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


def host_cost(tmp: Path, ur10_1ms: dict[str, float]) -> str:
    """The fixed steps of rk4 and the STIFF methods in the C host (the 7-dof arm's native
    FMU), interleaved, best of 3 rounds; the verdict on the default (ur10_1ms: method -> ur10's
    free-swing error at 1 ms)."""
    import build_fmu
    from bench_fmu import best_rounds
    from model_descriptions import EXAMPLES_DIR
    native = build_fmu.build(EXAMPLES_DIR / "arm7.urdf", tmp / "Arm7.fmu", name="Arm7")
    methods = ("rk4",) + STIFF
    best, kept, notes = best_rounds([(f"native, 7-dof arm, {m}", native, m) for m in methods],
                                    tmp, 3, state_only=True)
    t = {m: best[f"native, 7-dof arm, {m}"] for m in methods}
    rows = [kept[f"native, 7-dof arm, {m}"][:7] for m in methods]
    verdict = [f"{m} / implicit = {t[m] / t['implicit']:.2f} (bar ≤ {BAR_COST}: "
               f"{'met' if t[m] / t['implicit'] <= BAR_COST else 'MISSED'}), {m} / rk4 = "
               f"{t[m] / t['rk4']:.2f}" for m in STIFF[1:]]
    r, cheap = t[DEFAULT] / t["implicit"], t["ros2"] / t["implicit"]
    ros2 = (f"ros2 {'meets' if cheap <= BAR_COST else 'misses'} the cost bar and "
            f"{'meets' if ur10_1ms['ros2'] <= BARS_1MS['ur10'] else 'misses'} ur10's accuracy bar "
            f"({ur10_1ms['ros2']:.3g} rad at 1 ms, bar ≤ {BARS_1MS['ur10']:g})")
    judged = (f"The bar judges the default, {DEFAULT}: {r:.2f} × implicit Euler, "
              + ("met" if r <= BAR_COST else
                 f"MISSED (bar ≤ {BAR_COST}): a fourth-order step evaluates M(θᵢ)⁻¹ exactly at "
                 "four stages, one articulated sweep each, the sweep implicit Euler's single stage "
                 "is, so any method on rk4's curve costs about rk4's "
                 f"{t['rk4'] / t['implicit']:.2f} × implicit Euler in this host") + f"; {ros2}.")
    return table("The stiff methods' step in a C host: setReal(τ) + doStep(h = 1 ms) + "
                 "getReal(q, q̇)",
                 ["", "median µs", "% of h", "p99 µs", "p99/median", "p99.9 µs", "worst µs"],
                 rows, ["best of 3 interleaved rounds. " + "; ".join(verdict) + ".", judged]
                 + notes)


def plot(results: dict, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, len(results), figsize=(3.9 * len(results), 4.4))
    style = {"rk4": "o-", "euler": "v-", "implicit": "s-", "ros2": "D-", "ros34pw2": "P-",
             "rk4w": "k*-", "ros2 (error control)": "D--", "ros34pw2 (error control)": "P--",
             "rk4w (error control)": "k*--", "dop853": "^-"}
    for ax, (name, res) in zip(axes, results.items()):
        for method, pts in res.items():
            if pts and method in style:
                ax.loglog([p[1] * 1e3 for p in pts], [max(p[2], 1e-16) for p in pts],
                          style[method], label=method, ms=4)
        ax.set_title(name)
        ax.set_xlabel("C cost per simulated second (ms)")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("error at t = 2 s (max |q − q_ref|)")
    handles, labels = axes[1].get_legend_handles_labels()       # ur10: every method has points
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=8)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    path.parent.mkdir(exist_ok=True)
    fig.savefig(path, dpi=110)


def main() -> int:
    results = {"ball": curves(*ball())}
    margins = {}
    for name in START:
        model, q0 = robot(name)
        margins[name] = stop_margin(model, q0)
        results[name] = curves(model, q0)
    text = table("The swings: start pose, least distance to a joint stop along the reference "
                 "(< 0: it strikes one), the reference's own error (DOP853 at 1e-10 against 1e-12)",
                 ["model", "start q0 (rad)", "least margin", "reference error"],
                 [[n, "neutral" if START[n] is None else " ".join(f"{x:g}" for x in START[n]),
                   f"{margins[n]:.3g}", f"{results[n]['reference'][0][2]:.2g}"] for n in START]
                 ) + "\n"
    for name, res in results.items():
        rows = [[method, f"{x:g}", cost * 1e3, err] for method, pts in res.items()
                if method != "reference" for x, cost, err in pts]
        text += table(f"Work–precision, {name}: error at t = 2 s vs C cost per simulated second",
                      ["method", "h or tol", "ms per s", "error"], rows,
                      ["(a method missing a step size diverged there)"]) + "\n"
    shown = ("rk4",) + STIFF
    at_1ms = {name: dict((m, next((e for x, _, e in pts if x == 1e-3), math.nan))
                         for m, pts in res.items() if m in shown)
              for name, res in results.items()}
    text += table(f"At h = 1 ms: error at t = 2 s; the bars judge the default, {DEFAULT}",
                  ["model", *shown, "bar", f"{DEFAULT}: bar"],
                  [[n, *(f"{v[m]:.3g}" for m in shown),
                    f"≤ {BARS_1MS[n]:g}" if n in BARS_1MS else "",
                    ("met" if v[DEFAULT] <= BARS_1MS[n] else "MISSED") if n in BARS_1MS else ""]
                   for n, v in at_1ms.items()]) + "\n"
    with tempfile.TemporaryDirectory() as tmp:
        text += host_cost(Path(tmp), at_1ms["ur10"])
    write_result("integrators.txt", text)
    plot(results, REPO / "docs" / "img" / "integrators.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
