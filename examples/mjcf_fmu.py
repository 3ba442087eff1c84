"""An MJCF robot as an FMU: gymnasium's inverted double pendulum, built and run in fmpy, against MuJoCo.

    python examples/mjcf_fmu.py        # writes out/mjcf_fmu.png

The MJCF file (gymnasium's MuJoCo asset: a cart on a rail carrying a two-link pole) is read through
MuJoCo's compiler (``sf.load_model`` of an ``.xml``; docs/mjcf.md) and built into a native FMU whose
default step is the file's ``timestep`` (10 ms), with RK4 and the joint stops off (as MuJoCo's run).  fmpy runs it for 3 s from the poles tilted by
0.1 and −0.05 rad, the cart free (its motor is one of the warned-about actuators: the FMU's input is
the joint force ``tau[1]``).  MuJoCo simulates the same file with its RK4 at the same step, contacts
and joint limits off, the joints' damping on: the plot shows both and their difference.
"""
from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
OUT = ROOT / "out"

import gymnasium  # noqa: E402
import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from fmpy import simulate_fmu  # noqa: E402

import build_fmu  # noqa: E402
from soa_fmu.io import ModelWarning  # noqa: E402
from soa_fmu.verify.mujoco_bridge import mujoco_trajectory  # noqa: E402

MJCF = Path(gymnasium.__file__).parent / "envs" / "mujoco" / "assets" / "inverted_double_pendulum.xml"
Q0 = {"q0[2]": 0.1, "q0[3]": -0.05}          # hinge, hinge2 (rad); q0[1]: the cart's slider
T_END = 3.0


def run_fmu() -> tuple[np.ndarray, np.ndarray]:
    """(time, q) of the FMU built from the MJCF file, run by fmpy at the FMU's default step."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ModelWarning)       # the motor and the floor geom
        fmu = build_fmu.build(MJCF, OUT / "idp.fmu", integrator="rk4", stops=False)
    res = simulate_fmu(str(fmu), stop_time=T_END, start_values=Q0,
                       output=["q[1]", "q[2]", "q[3]"])
    return res["time"], np.column_stack([res[f"q[{i}]"] for i in (1, 2, 3)])


def main() -> None:
    OUT.mkdir(exist_ok=True)
    t, q = run_fmu()
    q_mj = mujoco_trajectory(MJCF, [0.0, Q0["q0[2]"], Q0["q0[3]"]], len(t) - 1)
    diff = np.abs(q - q_mj).max()
    print(f"FMU (fmpy) vs MuJoCo over {T_END} s at h = {t[1] - t[0]:g} s: max |Δq| = {diff:.2e}")
    fig, (ax, ax2) = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
    for i, name in enumerate(("cart x (m)", "hinge (rad)", "hinge2 (rad)")):
        ax.plot(t, q[:, i], label=f"{name}: FMU")
        ax.plot(t, q_mj[:, i], "k:", lw=1)
    ax.set_title("gymnasium's inverted_double_pendulum.xml as an FMU (dotted: MuJoCo)")
    ax.legend(fontsize=8)
    ax2.semilogy(t[1:], np.abs(q - q_mj)[1:].max(axis=1) + 1e-18)
    ax2.set_ylabel("max |q_FMU − q_MuJoCo|")
    ax2.set_xlabel("time (s)")
    fig.tight_layout()
    fig.savefig(OUT / "mjcf_fmu.png", dpi=110)
    print(f"wrote {OUT / 'mjcf_fmu.png'}")


if __name__ == "__main__":
    main()
