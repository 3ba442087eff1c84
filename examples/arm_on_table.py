"""A 7-dof arm pressing on a table with a force controller (docs/contact.md).

The arm of model_descriptions/examples/arm7.urdf gets a contact sphere (r = 2 cm) on its tool
and a table (a plane at z = 0.3 m, k = 1e6 N/m^1.5).  Starting 3 cm above the table at the
target point, an operational-space controller holds x, y by a PD law, pushes down with a force
set-point that steps from 10 N to 25 N at t = 1.5 s, corrected by an integral of the measured
contact force, and damps the joints:

    τ = b(q, q̇) + J_vᵀ F − D q̇,   F = [Kp (x_ref − x) − Kd v]_xy,
    F_z = −(F_ref + Ki ∫ (F_ref − F_meas) dt) − Kd v_z   (the integral clamped to ±F_ref / 2)

The Simulator (its default, auto: rk4w, linearly implicit in the contact, h = 1 ms) runs 3 s;
out/arm_on_table.png shows the measured contact force against the set-point and the tool height.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import soa_fmu as sf  # noqa: E402
from model_descriptions import example_path  # noqa: E402

H, T_END = 1e-3, 3.0
TABLE, RADIUS = 0.3, 0.02
TARGET = np.array([0.45, 0.1, TABLE + RADIUS + 0.03])
KP, KD, KI, DAMP = 200.0, 10.0, 20.0, 0.05


def model_on_table() -> sf.Model:
    m = sf.load_model(example_path("arm7.urdf"))
    m.add_contact_sphere("tip", "tool0", radius=RADIUS)
    m.add_contact_plane("table", point=(0, 0, TABLE), stiffness=1e6)
    return m


def reach(model: sf.Model, target: np.ndarray) -> np.ndarray:
    """Joint angles putting the tool at ``target`` (damped least squares from a bent pose)."""
    q = np.array([0.0, 0.6, 0.0, -1.2, 0.0, 0.9, 0.0])
    for _ in range(200):
        e = target - sf.frame_pose(model, q, "tool0")[1]
        J = sf.frame_jacobian(model, q, "tool0")[3:]
        q = q + J.T @ np.linalg.solve(J @ J.T + 1e-4 * np.eye(3), e)
    return q


def force_ref(t: float) -> float:
    return 10.0 if t < 1.5 else 25.0


def run() -> dict:
    m = model_on_table()
    q0 = reach(m, TARGET)
    sim = sf.Simulator(m, q0, max_step=H)          # auto: rk4w (contact)
    n = int(round(T_END / H))
    rec = np.empty((n + 1, 4))
    integral = 0.0
    for i in range(n + 1):
        t, q, qd = i * H, sim.q, sim.qd
        f_meas = sf.contact_forces(m, q, qd).total_force[2]
        x = sf.frame_pose(m, q, "tool0")[1]
        J = sf.frame_jacobian(m, q, "tool0")[3:]
        rec[i] = t, f_meas, force_ref(t), x[2]
        if i == n:
            break
        v = J @ qd
        integral += (force_ref(t) - f_meas) * H if f_meas > 0 else 0.0
        integral = float(np.clip(integral, -0.5 * force_ref(t) / KI, 0.5 * force_ref(t) / KI))
        F = np.r_[KP * (TARGET[:2] - x[:2]), -(force_ref(t) + KI * integral)] - KD * v
        sim.tau = sf.bias_forces(m, q, qd) + J.T @ F - DAMP * qd
        sim.step(H)
    return {"t": rec[:, 0], "force": rec[:, 1], "ref": rec[:, 2], "z": rec[:, 3]}


def main() -> int:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    res = run()
    for t_end, f in ((1.5, 10.0), (3.0, 25.0)):
        k = np.searchsorted(res["t"], t_end) - 1
        print(f"t = {res['t'][k]:.3f} s: contact force {res['force'][k]:.3f} N (set-point {f} N), "
              f"tool at z = {res['z'][k]:.5f} m")
    (ROOT / "out").mkdir(exist_ok=True)
    fig, ax = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
    ax[0].plot(res["t"], res["force"], label="measured")
    ax[0].plot(res["t"], res["ref"], "--", label="set-point")
    ax[0].set(ylabel="normal force [N]", title="7-dof arm pressing on a table (force control)")
    ax[0].legend()
    ax[1].plot(res["t"], res["z"])
    ax[1].set(xlabel="t [s]", ylabel="tool height [m]")
    fig.tight_layout()
    fig.savefig(ROOT / "out" / "arm_on_table.png", dpi=110)
    return 0


if __name__ == "__main__":
    sys.exit(main())
