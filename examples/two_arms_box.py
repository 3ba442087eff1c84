"""Two 7-dof arms holding a box by two welds (seed 003 Part II), releasing and catching it.

    python examples/two_arms_box.py      # writes out/two_arms_box.png

model_descriptions/examples/two_arms_box.toml (two copies of arm7.urdf and a free 2 kg box, grasps
``grasp_left`` / ``grasp_right``), or its Python-API twin.  The arms hold their pose with a PD law (20 rad/s,
critically damped, scaled by each joint's inertia) plus gravity compensation of their own links; the box hangs in the grasps.  At t = 1 s both grasps are
switched off (``Simulator.active``): the forces drop to zero and the box falls.  At t = 1.1 s they
are switched on again: the Simulator re-anchors each weld at the current relative pose and projects
the velocities onto the constraints (an inelastic catch), and the arms carry the box again.
"""
from __future__ import annotations

import numpy as np

import soa_fmu as sf

from four_bar import OUT, load

GRASPS = ("grasp_left", "grasp_right")


def main(t_end: float = 2.0, h: float = 1e-3, release=(1.0, 1.1)) -> dict:
    model, q0 = load("two_arms_box")
    arm = np.array([not name.startswith("box") for name in model.velocity_names])
    sim = sf.Simulator(model, q0)
    sim.stabilization = (20.0, 20.0)
    # PD gains per joint from the joint-space inertia at q0: ωn = 20 rad/s, critically damped
    Mii = np.diag(sf.mass_matrix(model, q0))[arm]
    Kp, Kd = 20.0 ** 2 * Mii, 2 * 20.0 * Mii
    n = int(round(t_end / h))
    t, zbox, held = np.empty(n), np.empty(n), np.empty(n, dtype=bool)
    F = {g: np.empty((n, 6)) for g in GRASPS}
    R = {g: np.empty(n) for g in GRASPS}
    Q = np.empty((n, model.nq))
    qa0 = q0[:int(arm.sum())]                          # the arms' joints come first (1 dof each)
    for i in range(n):
        on = not (release[0] <= sim.t + 1e-9 < release[1])
        for g in GRASPS:
            sim.active[g] = on
        tau = sf.gravity_forces(model, sim.q)
        tau[arm] += -Kp * (sim.q[:arm.sum()] - qa0) - Kd * sim.qd[arm]
        tau[~arm] = 0.0                                # the box has no actuator
        sim.tau = tau
        sim.step(h)
        t[i], zbox[i], held[i] = sim.t, sf.frame_pose(model, sim.q, "box")[1][2], on
        Q[i] = sim.q
        for g in GRASPS:
            F[g][i], R[g][i] = sim.constraint_forces[g], sim.constraint_residuals[g]
    print(f"two arms + box, {t_end:g} s: max residual while held "
          f"{max(R[g][held].max() for g in GRASPS):.2e}, forces while released "
          f"{max(np.abs(F[g][~held]).max() for g in GRASPS):.1e} N, box dropped "
          f"{1000 * (zbox[0] - zbox.min()):.1f} mm")

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(3, 1, figsize=(8, 8), sharex=True)
    for g in GRASPS:
        ax[0].plot(t, np.linalg.norm(F[g][:, 3:], axis=1), label=f"|F| {g}")
        ax[0].plot(t, np.linalg.norm(F[g][:, :3], axis=1), "--", label=f"|N| {g}")
        ax[1].semilogy(t, np.maximum(R[g], 1e-18), label=g)
    for a in ax:
        a.axvspan(*release, color="0.9")
    ax[0].set_ylabel("grasp force [N], moment [N m]")
    ax[0].set_ylim(0, None)
    ax[0].legend(loc="upper right", fontsize=8)
    ax[0].set_title("two arms holding a box: release at 1 s, catch at 1.1 s")
    ax[1].set_ylabel("residual |e|")
    ax[1].legend(loc="upper right", fontsize=8)
    ax[2].plot(t, zbox)
    ax[2].set_ylabel("box height [m]")
    ax[2].set_xlabel("t [s]")
    fig.tight_layout()
    OUT.mkdir(exist_ok=True)
    fig.savefig(OUT / "two_arms_box.png", dpi=110)
    sf.animate(model, {"t": t, "q": Q, **{f"{g}.f[{k + 1}]": F[g][:, k] for g in GRASPS for k in range(6)}},
               OUT / "two_arms_box.html")                 # grasp forces as arrows
    print(f"wrote {OUT / 'two_arms_box.png'} and {OUT / 'two_arms_box.html'}")
    return {"t": t, "force": F, "residual": R, "box_height": zbox}


if __name__ == "__main__":
    main()
