"""A slider-crank driven by a motor: the wrist-pin closure force and residual.

    python examples/slider_crank.py      # writes out/slider_crank.png

model_descriptions/examples/slider_crank.toml (crank and connecting rod on revolute joints, the
piston on a prismatic joint from world, closed at the wrist pin by a ``ball`` constraint).  A motor with a linear torque-speed curve (1 N m at rest, idle at 20 rad/s) drives
the crank for 3 s; the piston's inertia makes the pin force oscillate twice per revolution.
"""
from __future__ import annotations

import numpy as np

import soa_fmu as sf

from four_bar import OUT, load


def main(t_end: float = 3.0, h: float = 1e-3) -> dict:
    model, q0 = load("slider_crank")
    sim = sf.Simulator(model, q0)
    sim.stabilization = (20.0, 20.0)
    n = int(round(t_end / h))
    t, R, x, w = (np.empty(n) for _ in range(4))
    F = np.empty((n, 3))
    Q = np.empty((n, model.nq))
    for i in range(n):
        sim.tau = np.array([1.0 - 0.05 * sim.qd[0], 0.0, 0.0])     # motor torque, held over the step
        sim.step(h)
        t[i], F[i], R[i] = sim.t, sim.constraint_forces["wrist_pin"], sim.constraint_residuals["wrist_pin"]
        x[i], w[i], Q[i] = sim.q[2], sim.qd[0], sim.q
    print(f"slider-crank, {t_end:g} s: crank at {w[-1]:.1f} rad/s, max residual {R.max():.2e} m, "
          f"max |f| {np.abs(F).max():.2f} N")

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(3, 1, figsize=(8, 8), sharex=True)
    ax[0].plot(t, F[:, 0], label="F_x (along the rod)")
    ax[0].plot(t, F[:, 2], label="F_z (across the rod)")
    ax[0].set_ylabel("pin force on the piston [N]\n(rod_tip axes)")
    ax[0].legend(loc="upper right", fontsize=8)
    ax[0].set_title("slider-crank driven by a motor: wrist-pin force, residual, piston stroke")
    ax[1].semilogy(t, np.maximum(R, 1e-18))
    ax[1].set_ylabel("residual |e| [m]")
    ax[2].plot(t, x, label="piston x [m]")
    ax[2].plot(t, w / 100, label="crank speed / 100 [rad/s]")
    ax[2].legend(loc="upper right", fontsize=8)
    ax[2].set_xlabel("t [s]")
    fig.tight_layout()
    OUT.mkdir(exist_ok=True)
    fig.savefig(OUT / "slider_crank.png", dpi=110)
    sf.animate(model, {"t": t, "q": Q, **{f"wrist_pin.f[{k + 1}]": F[:, k] for k in range(3)}},
               OUT / "slider_crank.html")
    print(f"wrote {OUT / 'slider_crank.png'} and {OUT / 'slider_crank.html'}")
    return {"t": t, "force": F, "residual": R, "piston": x}


if __name__ == "__main__":
    main()
