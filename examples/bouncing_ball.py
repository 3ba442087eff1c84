"""A ball bouncing on the floor (model_descriptions/examples/bouncing_ball.toml, docs/contact.md).

Simulates the 2 kg ball dropped from 0.5 m (and sliding at 0.3 m/s) for 3 s with the Simulator
(RK4, sub-steps of 0.1 ms to resolve the 10 ms impacts; output every 1 ms), measures each bounce's coefficient of
restitution against the Hunt–Crossley relation d v_in − ln(1 + d v_in) = −d v_out − ln(1 − d v_out)
— exact without gravity (tests/test_contact.py checks it to 0.2 %); here gravity acts during the
10 ms impacts and the velocities are sampled every 1 ms, so the measured e is a few % lower —
and plots height and normal force: out/bouncing_ball.png.
"""
from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
from scipy.optimize import brentq

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import soa_fmu as sf  # noqa: E402
from model_descriptions import example_path  # noqa: E402

H, T_END = 1e-3, 3.0


def restitution(v_in: float, d: float) -> float:
    """Hunt–Crossley's v_out / v_in (docs/contact.md), independent of k, n and the mass."""
    g = lambda v: d * v - math.log1p(d * v)
    return brentq(lambda w: g(-w) - g(v_in), 1e-12, (1 - 1e-15) / d) / v_in


def simulate(method: str = "rk4", h: float = 1e-4) -> dict:
    model = sf.load_model(example_path("bouncing_ball.toml"))
    sim = sf.Simulator(model, method=method, max_step=h)
    n = int(round(T_END / H))
    t, z, vz, fz = np.arange(n + 1) * H, np.empty(n + 1), np.empty(n + 1), np.empty(n + 1)
    for i in range(n + 1):
        c = sf.contact_forces(model, sim.q, sim.qd)
        z[i], vz[i], fz[i] = sim.q[6], sim.qd[5], c.total_force[2]   # (no spin: body = world axes)
        if i < n:
            sim.step(H)
    return {"model": model, "t": t, "z": z, "vz": vz, "fz": fz}


def bounces(res: dict) -> list[tuple[float, float]]:
    """(v_in, v_out) of each contact interval of the record."""
    on = res["fz"] > 0
    out = []
    for i in np.flatnonzero(on[1:] & ~on[:-1]):
        j = i + 1 + np.argmax(~on[i + 1:]) if (~on[i + 1:]).any() else None
        if j is None:
            break
        out.append((-res["vz"][i], res["vz"][j]))
    return out


def main() -> int:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    res = simulate()
    d = res["model"].contact_dissipation
    for k, (v_in, v_out) in enumerate(b for b in bounces(res) if b[0] > 0.3):
        print(f"bounce {k + 1}: v_in {v_in:.3f} m/s, e = {v_out / v_in:.4f} "
              f"(Hunt–Crossley {restitution(v_in, d):.4f})")
    (Path(ROOT) / "out").mkdir(exist_ok=True)
    fig, ax = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
    ax[0].plot(res["t"], res["z"])
    ax[0].set(ylabel="centre height [m]", title="bouncing ball (k = 1e5, n = 1.5, d = 0.5 s/m)")
    ax[1].plot(res["t"], res["fz"])
    ax[1].set(xlabel="t [s]", ylabel="normal force [N]")
    fig.tight_layout()
    fig.savefig(ROOT / "out" / "bouncing_ball.png", dpi=110)
    return 0


if __name__ == "__main__":
    sys.exit(main())
