"""A bang-bang slew of the flexible arm, against the same arm with a rigid beam.

    python examples/flexible_slew.py        # writes out/flexible_slew.png

The model is model_descriptions/examples/flexible_arm.toml: a hub turning about the world z axis
carries a 1 m aluminium beam, 4 clamped-interface modes (docs/flexible.md).  Its rigid twin
(``rigid_twin``) has the same bodies and joints with each flexible body replaced by a rigid one of
the flexible body's rigid mass properties (``Reduced.mass``, ``.com``, ``.inertia``: exactly the
FE model's), and node frames placed at their nodes' undeformed locations.

The hub gets +τ for T/2 and −τ for T/2, τ = 4 J θ_f / T² with J the hub axis' inertia of the
undeformed arm (the mass matrix entry: the same for both models), which brings the rigid arm from
rest to rest through θ_f; then both coast with τ = 0 (the hub joint is free).  The flexible beam
starts in its static sag under gravity, at rest.  Plotted: (1) the hub angle of both, (2) the
flexible tip's deflection — its lateral displacement from the rigid line through the hub at the
current hub angle (along the hub's y axis), mm — and (3) the modal coordinates η_k.  Printed: the
peak deflection during the slew and the residual vibration amplitude after it.
"""
from __future__ import annotations

import copy
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import soa_fmu as sf  # noqa: E402
from model_descriptions import EXAMPLES_DIR  # noqa: E402

OUT = ROOT / "out"
HUB, JOINT, TIP = "hub", "slew", "tip"      # names in flexible_arm.toml
ANGLE, T_SLEW, T_COAST, DT = np.pi / 2, 1.5, 2.0, 1e-3


def arm() -> sf.Model:
    """The flexible arm (model_descriptions/examples/flexible_arm.toml)."""
    return sf.load_model(EXAMPLES_DIR / "flexible_arm.toml")


def rigid_twin(model: sf.Model) -> sf.Model:
    """The same tree with every flexible body rigid: its mass properties are the flexible body's
    rigid ones, node frames sit at their nodes' undeformed locations.  Initial state: the joint
    coordinates of ``model`` (the modal ones dropped)."""
    twin = sf.Model(f"{model.name}_rigid", gravity=model.gravity)
    name = {-1: sf.WORLD} | {i: b.name for i, b in enumerate(model.bodies)}
    for b in model.bodies:
        if b.frame_only:                      # a frame on a node: placement = node + offset
            twin.add_frame(b.name, name[b.parent], rotation=b.rotation, translation=b.translation)
            continue
        fl = b.flexible
        mass, com, inertia = (b.mass, b.com, b.inertia) if fl is None else (fl.mass, fl.com,
                                                                            fl.inertia)
        twin.add_body(b.name, name[b.parent], copy.deepcopy(b.joint), joint_name=b.joint_name,
                      rotation=b.rotation, translation=b.translation, mass=mass, com=com,
                      inertia=inertia, limits=dict(b.limits))
    for fname, fr in model.frames.items():
        if fr.node is None:
            twin.add_frame(fname, name[fr.body], rotation=fr.rotation, translation=fr.translation)
    if model.constraints:
        raise ValueError("rigid_twin: models with constraints are not supported")
    if model.initial_q is not None:
        twin.initial_q = np.asarray(model.initial_q)[[model.position_names.index(n)
                                                       for n in twin.position_names]]
    if model.initial_qd is not None:
        twin.initial_qd = np.asarray(model.initial_qd)[[model.velocity_names.index(n)
                                                         for n in twin.velocity_names]]
    return twin


def static_sag(model: sf.Model, q: np.ndarray) -> np.ndarray:
    """q with every modal coordinate at its static equilibrium under gravity: the modal rows of
    inverse dynamics at rest, g_f(q) + 𝒦 η, vanish (𝒦 η = −g_f at η = 0; linear in η)."""
    q = np.array(q, dtype=float)
    zero = np.zeros(model.nv)
    for b in model.bodies:
        if b.nmodes:
            iq, iv = b.q_index + b.joint.nq, b.v_index + b.joint.nv
            q[iq:iq + b.nmodes] = 0.0
            g = sf.inverse_dynamics(model, q, zero, zero)[iv:iv + b.nmodes]
            q[iq:iq + b.nmodes] = np.linalg.solve(b.flexible.stiffness, -g)
    return q


def slew(model: sf.Model, angle: float = ANGLE, duration: float = T_SLEW,
         coast: float = T_COAST, dt: float = DT) -> dict:
    """Bang-bang torque on the hub joint (+τ for duration/2, −τ for duration/2, then 0), from rest
    (the flexible beam in its static sag).  τ = 4 J angle / duration², J the hub's diagonal entry
    of the mass matrix at the start.  Returns t, tau, the hub angle, the tip deflection (m) and
    the modal coordinates (columns: ``eta_names``)."""
    ih = model.velocity_names.index(JOINT)
    q0 = static_sag(model, model.initial_q)
    J = sf.mass_matrix(model, q0)[ih, ih]
    torque = 4.0 * J * angle / duration ** 2
    half = round(duration / (2 * dt)) * dt            # switch on the output grid (τ is held)
    tau = np.zeros(model.nv)

    def control(t, q, qd):
        tau[ih] = torque if t < half - dt / 2 else -torque if t < 2 * half - dt / 2 else 0.0
        return tau

    r = sf.simulate(model, 2 * half + coast, dt, q0=q0, qd0=np.zeros(model.nv), tau=control,
                    method="dop853", rtol=1e-9, atol=1e-11)
    deflection = np.empty(len(r["t"]))
    for k, q in enumerate(r["q"]):
        R, p_hub = sf.frame_pose(model, q, HUB)
        _, p_tip = sf.frame_pose(model, q, TIP)
        deflection[k] = R[:, 1] @ (p_tip - p_hub)     # off the hub's x axis (the rigid line)
    eta = [i for i, n in enumerate(model.position_names) if ".eta[" in n]
    return {"t": r["t"], "tau": np.where(r["t"] < half - dt / 2, torque,
                                        np.where(r["t"] < 2 * half - dt / 2, -torque, 0.0)),
            "hub": r["q"][:, model.position_names.index(JOINT)], "deflection": deflection,
            "eta": r["q"][:, eta], "eta_names": [model.position_names[i] for i in eta],
            "t_slew": 2 * half, "torque": torque, "q": r["q"]}


def upward_crossings(t: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Times where x crosses zero upwards (linear interpolation between samples)."""
    k = np.nonzero((x[:-1] < 0) & (x[1:] >= 0))[0]
    return t[k] - x[k] * (t[k + 1] - t[k]) / (x[k + 1] - x[k])


def main() -> int:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    OUT.mkdir(exist_ok=True)
    flex = arm()
    res = slew(flex)
    rig = slew(rigid_twin(flex))
    t, after = res["t"], res["t"] >= res["t_slew"]
    d = res["deflection"] * 1e3
    residual = d[after] - d[after].mean()
    period = np.diff(upward_crossings(t[after], residual)).mean()
    f1 = flex.bodies[flex.body_index("beam")].flexible.frequencies[0] / (2 * np.pi)

    fig, ax = plt.subplots(3, 1, figsize=(10, 10), sharex=True)
    ax[0].plot(t, np.degrees(rig["hub"]), "k--", label="rigid beam")
    ax[0].plot(t, np.degrees(res["hub"]), label="flexible beam")
    ax[0].set_ylabel("hub angle [deg]")
    ax[0].set_title(f"bang-bang slew of {np.degrees(ANGLE):.0f}° in {res['t_slew']:.2f} s "
                    f"(τ = ±{res['torque']:.3f} N·m), then coast")
    ax[1].plot(t, d)
    ax[1].set_ylabel("tip deflection [mm]")
    for a in ax[:2]:
        a.axvline(res["t_slew"] / 2, color="0.7", lw=0.8)
        a.axvline(res["t_slew"], color="0.7", lw=0.8)
    for k, name in enumerate(res["eta_names"]):
        ax[2].plot(t, res["eta"][:, k], label=name)
    ax[2].set_ylabel("η (mass-normalized) [√kg·m]")
    ax[2].set_xlabel("t [s]")
    for a in (ax[0], ax[2]):
        a.legend(loc="best", fontsize=8)
    for a in ax:
        a.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(OUT / "flexible_slew.png", dpi=100)
    sf.animate(flex, {"t": t, "q": res["q"]}, OUT / "flexible_slew.html")   # the beam bending
    print(f"wrote {OUT / 'flexible_slew.png'} and {OUT / 'flexible_slew.html'}")
    print(f"peak tip deflection {np.abs(d[~after]).max():.2f} mm during the slew; residual "
          f"vibration ±{np.abs(residual).max():.2f} mm at {1 / period:.2f} Hz after it "
          f"(beam clamped: {f1:.2f} Hz); "
          f"final hub angle {np.degrees(res['hub'][-1]):.2f}° flexible (mean over the coast "
          f"{np.degrees(res['hub'][after].mean()):.2f}°), {np.degrees(rig['hub'][-1]):.2f}° rigid")
    return 0


if __name__ == "__main__":
    sys.exit(main())
