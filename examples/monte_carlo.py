"""Monte Carlo of the 7-dof arm FMU under the demo's PD controller on Dask: how the payload mass
and the joint friction spread the tracking error.

1. builds out/Arm7.fmu (native);
2. 200 runs of 4 s (the demo's) on a local Dask cluster (soa_fmu.sweep): the last link's mass (the payload,
   FMU parameter ``link7.mass``) and every joint's Coulomb friction (``friction[i]``) each drawn
   uniformly within ±20 % of its model value; in every run the arm tracks the demo's reference
   (examples/demo.py) under the demo's computed-torque PD law
   τ = M(q) (q̈_ref + Kp (q_ref − q) + Kd (q̇_ref − q̇)) + b(q, q̇), co-simulated with the FMU at
   every 1-ms communication step (soa_fmu.sweep.Feedback: fmpy's ``step_finished``); the law uses
   the nominal model and, like the demo's, leaves the joints' damping and friction out of b(q, q̇):
   so the error is mostly the uncompensated dissipation (the demo's own run shows it), and its
   spread over the runs is what the payload and friction uncertainties add;
3. a fan plot of the percentiles of the tracking error |q_ref − q| over the runs, and the final
   error against the payload mass → out/monte_carlo.png.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "examples")]

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import cloudpickle  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402

import build_fmu  # noqa: E402
import demo  # noqa: E402  (its reference path and gains; main() is not run)
import soa_fmu as sf  # noqa: E402
from model_descriptions import EXAMPLES_DIR  # noqa: E402
from soa_fmu.sweep import Feedback  # noqa: E402

OUT = ROOT / "out"
T_END, H, RUNS = demo.T_END, demo.H, 200
URDF = EXAMPLES_DIR / "arm7.urdf"
cloudpickle.register_pickle_by_value(demo)     # workers need not find examples/ on their path


class ComputedTorquePD:
    """The demo's control law on the nominal model, u = law(t, [q, q̇]); the model is loaded
    where the law runs (on each worker), as the engine's Model does not pickle."""

    def __init__(self, urdf: Path):
        self.urdf, self.model = str(urdf), None

    def __getstate__(self):
        return {"urdf": self.urdf, "model": None}

    def __call__(self, t: float, y: np.ndarray) -> np.ndarray:
        if self.model is None:
            self.model = sf.load_model(self.urdf)
        n = self.model.nv
        q, qd = y[:n], y[n:]
        q_ref, qd_ref, qdd_ref = demo.reference(t, n)
        a = qdd_ref + demo.KP * (q_ref - q) + demo.KD * (qd_ref - qd)
        return sf.mass_matrix(self.model, q) @ a + sf.bias_forces(self.model, q, qd)


def main() -> int:
    OUT.mkdir(exist_ok=True)
    fmu = build_fmu.build(URDF, OUT / "Arm7.fmu", name="Arm7")
    model = sf.load_model(URDF)
    n = model.nv
    law = ComputedTorquePD(URDF)
    controller = Feedback(law, [f"q[{i}]" for i in range(1, n + 1)]
                          + [f"qd[{i}]" for i in range(1, n + 1)],
                          [f"tau[{i}]" for i in range(1, n + 1)])
    q0, qd0, _ = demo.reference(0.0, n)            # start on the path, with u(0) applied
    tau0 = law(0.0, np.concatenate([q0, qd0]))
    start = {**{f"q0[{i + 1}]": q0[i] for i in range(n)},
             **{f"qd0[{i + 1}]": qd0[i] for i in range(n)},
             **{f"tau[{i + 1}]": tau0[i] for i in range(n)}}
    mass = model.bodies[model.body_index("link7")].mass
    friction = np.asarray(model.joint_friction, dtype=float)
    spec = {"link7.mass": f"uniform({0.8 * mass}, {1.2 * mass})"}
    spec.update({f"friction[{i + 1}]": f"uniform({0.8 * f}, {1.2 * f})"
                 for i, f in enumerate(friction)})
    samples = sf.sample(spec, RUNS, seed=11)
    outputs = [f"q[{i}]" for i in range(1, n + 1)]
    runs = sf.sweep(fmu, samples, T_END, step=H, outputs=outputs, controller=controller,
                    start_values=start)
    ok = runs["status"].values == "ok"
    t = runs["time"].values
    q = np.stack([runs[name].values[ok] for name in outputs], axis=-1)      # (run, time, joint)
    q_ref = np.stack([demo.reference(tk, n)[0] for tk in t])                # (time, joint)
    err = np.linalg.norm(q - q_ref, axis=-1) * 1e3                          # mrad

    fig, ax = plt.subplots(1, 2, figsize=(13, 5), gridspec_kw={"width_ratios": [3, 2]})
    p = np.percentile(err, [5, 25, 50, 75, 95], axis=0)
    ax[0].fill_between(t, p[0], p[4], alpha=0.25, label="5–95 %")
    ax[0].fill_between(t, p[1], p[3], alpha=0.45, label="25–75 %")
    ax[0].plot(t, p[2], "k", lw=1.2, label="median")
    ax[0].set(xlabel="t [s]", ylabel="tracking error |q_ref − q| [mrad]",
              title="tracking error percentiles over the runs")
    ax[0].legend()
    m = samples["link7.mass"].to_numpy()[ok]
    fsum = samples[[f"friction[{i + 1}]" for i in range(n)]].to_numpy()[ok].sum(axis=1)
    sc = ax[1].scatter(m, err[:, -1], c=fsum, s=12, cmap="viridis")
    fig.colorbar(sc, ax=ax[1], label="Σ joint friction [N·m]")
    ax[1].axvline(mass, color="k", lw=0.8, ls="--", label="nominal payload")
    ax[1].set(xlabel="payload mass link7.mass [kg]", ylabel=f"error at t = {T_END:g} s [mrad]",
              title="final error vs payload")
    ax[1].legend()
    fig.suptitle(f"7-dof arm FMU under the demo's computed-torque PD control: {ok.sum()} of "
                 f"{RUNS} runs on Dask (payload mass and joint friction ±20 %)")
    fig.tight_layout()
    fig.savefig(OUT / "monte_carlo.png", dpi=110)
    worst = int(np.argmax(err[:, -1]))                     # the run to look at: the worst one
    sf.animate(model, {"t": t, "q": q[worst]}, OUT / "monte_carlo.html",
               title=f"Monte Carlo: worst of {ok.sum()} runs (sample {np.flatnonzero(ok)[worst]})")
    print(f"wrote {OUT / 'monte_carlo.png'}: {ok.sum()}/{RUNS} runs, tracking error at "
          f"t = {T_END:g} s: median {p[2, -1]:.2f} mrad, 95 % {p[4, -1]:.2f} mrad, "
          f"{runs.attrs['wall_time_s']:.1f} s on Dask")
    return 0 if ok.all() else 1


if __name__ == "__main__":
    sys.exit(main())
