"""LQR from the engine's linearization: a cart-pole balanced upright and a 7-dof arm held at a pose.

    python examples/lqr.py            # writes out/lqr.png

For each plant: ``linearize`` at the operating point (θ₀, 0, τ₀) gives ẋ ≈ A x + B u with
x = (θ ⊖ θ₀, β) in tangent coordinates; ``scipy.linalg.solve_continuous_are`` gives the gain K;
``simulate`` runs the nonlinear closed loop τ = τ₀ − K x from a perturbed start.  The linear
prediction x(t) = exp((A − BK)t) x(0) is drawn dashed next to the nonlinear response.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import scipy.linalg

import soa_fmu as sf
from soa_fmu.linearization import configuration_difference, linearize

OUT = Path(__file__).resolve().parents[1] / "out"
ARM = Path(__file__).resolve().parents[1] / "model_descriptions" / "examples" / "arm7.urdf"


def cart_pole() -> sf.Model:
    """Cart on a prismatic x joint, 1 m pole on a revolute y joint; upright is θ_pole = 0."""
    model = sf.Model("cart_pole")
    model.add_body("cart", joint=sf.Prismatic((1.0, 0.0, 0.0)), joint_name="cart_x", mass=1.0,
                   inertia=np.diag([0.01, 0.01, 0.01]))
    model.add_body("pole", "cart", sf.Revolute((0.0, 1.0, 0.0)), joint_name="pole_angle", mass=0.2,
                   com=(0.0, 0.0, 0.5), inertia=np.diag([0.2 / 12, 0.2 / 12, 1e-4]))
    return model


def arm() -> sf.Model:
    """The 7-dof example arm (model_descriptions/examples/arm7.urdf)."""
    return sf.load_model(ARM)


def lqr(model, q0, tau0, Q, R, actuated=None):
    """Gain K (u = −K x) about the equilibrium (q0, 0, tau0); ``actuated`` selects input columns."""
    A, B = linearize(model, q0, np.zeros(model.nv), tau0)
    Bu = B if actuated is None else B[:, actuated]
    P = scipy.linalg.solve_continuous_are(A, Bu, Q, R)
    K = np.linalg.solve(R, Bu.T @ P)
    return A, Bu, K


def closed_loop(model, q0, tau0, K, actuated, start, t_end, dt=0.005):
    sel = np.arange(model.nv) if actuated is None else np.asarray(actuated)

    def control(t, q, qd):
        x = np.r_[configuration_difference(model, q0, q), qd]
        tau = tau0.copy()
        tau[sel] -= K @ x
        return tau

    out = sf.simulate(model, t_end, dt=dt, q0=start, tau=control)
    err = np.array([configuration_difference(model, q0, q) for q in out["q"]])
    return out["t"], err, out["qd"]


def linear_prediction(A, Bu, K, x0, t):
    Acl = A - Bu @ K
    return np.array([scipy.linalg.expm(Acl * s) @ x0 for s in t])


def main() -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))

    # cart-pole: only the cart is actuated
    cp = cart_pole()
    q0, tau0 = np.zeros(2), np.zeros(2)
    A, Bu, K = lqr(cp, q0, tau0, np.diag([10.0, 10.0, 1.0, 1.0]), np.eye(1), actuated=[0])
    start = np.array([0.0, 0.3])
    t, err, qd = closed_loop(cp, q0, tau0, K, [0], start, 6.0)
    lin = linear_prediction(A, Bu, K, np.r_[start, 0.0, 0.0], t[::10])
    ax = axes[0]
    ax.plot(t, err[:, 1], label="pole angle [rad]")
    ax.plot(t, err[:, 0], label="cart position [m]")
    ax.plot(t[::10], lin[:, 1], "k--", lw=0.8, label="linear prediction")
    ax.plot(t[::10], lin[:, 0], "k--", lw=0.8)
    ax.set(title=f"cart-pole balanced upright (open loop: λ_max = {np.linalg.eigvals(A).real.max():.2f} /s)",
           xlabel="t [s]")
    ax.legend()
    ax.grid(alpha=0.3)
    print(f"cart-pole: K = {np.round(K, 2)}, final |x| = {np.abs(np.r_[err[-1], qd[-1]]).max():.1e}")

    # 7-dof arm: hold a bent pose against gravity, all joints actuated.  Weights scaled by the mass
    # matrix (Q = diag(a𝓜, b𝓜), R = 𝓜⁻¹) give every joint the same closed-loop bandwidth, so the
    # light wrist does not get a 1000/s mode that a 5 ms zero-order hold could not follow.
    model = arm()
    nv = model.nv
    q0 = model.neutral_configuration() + np.array([0.3, 0.6, -0.2, -1.0, 0.4, 0.5, 0.0])[:nv]
    tau0 = sf.gravity_forces(model, q0)
    M = sf.mass_matrix(model, q0)
    A, Bu, K = lqr(model, q0, tau0, scipy.linalg.block_diag(400.0 * M, 10.0 * M), np.linalg.inv(M))
    start = q0 + np.random.default_rng(0).uniform(-0.25, 0.25, nv)
    t, err, qd = closed_loop(model, q0, tau0, K, None, start, 3.0)
    x0 = np.r_[configuration_difference(model, q0, start), np.zeros(nv)]
    lin = linear_prediction(A, Bu, K, x0, t[::10])
    t_ol = sf.simulate(model, 1.0, dt=0.005, q0=start, tau=tau0)
    err_ol = np.array([configuration_difference(model, q0, q) for q in t_ol["q"]])
    ax = axes[1]
    ax.semilogy(t, np.linalg.norm(err, axis=1), label="LQR, nonlinear plant")
    ax.semilogy(t[::10], np.linalg.norm(lin[:, :nv], axis=1), "k--", lw=0.8, label="linear prediction")
    ax.semilogy(t_ol["t"], np.linalg.norm(err_ol, axis=1), label="gravity feed-forward only")
    ax.set(title=f"{model.name}: |θ ⊖ θ₀| from a ±0.25 rad start", xlabel="t [s]", ylabel="[rad]",
           ylim=(1e-6, 10))
    ax.legend()
    ax.grid(alpha=0.3, which="both")
    print(f"{model.name}: final |θ ⊖ θ₀| = {np.linalg.norm(err[-1]):.1e} rad")
    OUT.mkdir(exist_ok=True)                   # revolute joints: θ = θ₀ + (θ ⊖ θ₀)
    sf.animate(model, {"t": t, "q": q0 + err}, OUT / "lqr.html")

    fig.tight_layout()
    OUT.mkdir(exist_ok=True)
    fig.savefig(OUT / "lqr.png", dpi=120)
    print(f"wrote {OUT / 'lqr.png'} and {OUT / 'lqr.html'}")


if __name__ == "__main__":
    main()
