"""The flexible examples: the slew of examples/flexible_slew.py (flexible_arm.toml against its rigid
twin) and the free-flying spacecraft with flexible solar panels (spacecraft.toml)."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.linalg

import soa_fmu as sf
from model_descriptions import example_path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
import flexible_slew as fs  # noqa: E402

ANGLE, DURATION, COAST = np.pi / 4, 0.8, 1.2


def hub_and_modes(model: sf.Model, q: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """(J, c, eta columns): the hub's mass-matrix entry and its coupling row to the modes."""
    ih = model.velocity_names.index(fs.JOINT)
    eta = [i for i, n in enumerate(model.velocity_names) if ".eta[" in n]
    M = sf.mass_matrix(model, q)
    return M[ih, ih], M[ih, eta], np.asarray(eta)


def residual_frequency(res: dict) -> tuple[float, float, float]:
    """(frequency in rad/s, amplitude, mean) of the tip deflection after the slew, from its upward
    zero crossings about the mean over whole periods."""
    t, d = res["t"], res["deflection"]
    after = t >= res["t_slew"]
    t, d = t[after], d[after]
    up = fs.upward_crossings(t, d - d.mean())
    whole = (t >= up[0]) & (t <= up[-1])
    up = fs.upward_crossings(t, d - d[whole].mean())
    return 2 * np.pi * (len(up) - 1) / (up[-1] - up[0]), np.abs(d - d.mean()).max(), d[whole].mean()


@pytest.fixture(scope="module")
def slews() -> dict:
    flex = fs.arm()
    return {"flex": flex, "res": fs.slew(flex, ANGLE, DURATION, COAST),
            "rigid": fs.slew(fs.rigid_twin(flex), ANGLE, DURATION, COAST)}


def test_rigid_twin_has_the_flexible_bodys_rigid_mass_properties():
    flex = fs.arm()
    twin = fs.rigid_twin(flex)
    fl = flex.bodies[flex.body_index("beam")].flexible
    assert twin.position_names == ["slew"]
    mass, com, inertia = twin.body_inertia("beam")
    assert mass == fl.mass == pytest.approx(0.432)
    np.testing.assert_allclose(com, [0.5, 0, 0], atol=1e-14)
    np.testing.assert_allclose(inertia, fl.inertia, atol=1e-15)
    # the hub axis' inertia and the tip at rest are the same in both models
    q = np.zeros(flex.nq)
    J = sf.mass_matrix(flex, q)[0, 0]
    assert sf.mass_matrix(twin, [0.0])[0, 0] == pytest.approx(J, rel=1e-14)
    np.testing.assert_allclose(sf.frame_pose(twin, [0.3], "tip")[1],
                               sf.frame_pose(flex, np.r_[0.3, np.zeros(4)], "tip")[1], atol=1e-15)


def test_rigid_slew_is_rest_to_rest(slews):
    rig = slews["rigid"]
    end = rig["t"] >= rig["t_slew"]
    np.testing.assert_allclose(rig["hub"][end], ANGLE, atol=1e-7)
    np.testing.assert_allclose(rig["deflection"], 0, atol=1e-14)


def test_flexible_hub_follows_the_rigid_one_up_to_the_modal_momentum(slews):
    """No moment about the hub axis but τ (gravity is along it), so both models have the angular
    momentum ∫τ dt about it; the mass matrix does not depend on q here (the hub angle is cyclic,
    the modal terms are linear), so J θ + c·η = J θ_rigid + c·η(0) at every instant: the flexible
    hub moves as the rigid one, less the modal momentum's share c·(η − η(0))/J."""
    flex, res, rig = slews["flex"], slews["res"], slews["rigid"]
    J, c, _ = hub_and_modes(flex, np.zeros(flex.nq))
    J2, c2, _ = hub_and_modes(flex, np.r_[1.0, 0.02, -0.01, 0.003, 0.001])
    np.testing.assert_allclose(np.r_[J2, c2], np.r_[J, c], rtol=1e-13, atol=1e-14)
    predicted = rig["hub"] - (res["eta"] - res["eta"][0]) @ c / J
    np.testing.assert_allclose(res["hub"], predicted, atol=1e-10)
    assert np.abs(res["hub"] - rig["hub"]).max() > 1e-3          # and the difference is real


def test_tip_vibrates_about_the_rigid_line_at_the_system_frequency(slews):
    """After the slew the tip oscillates about the rigid line through the hub (mean deflection ≈ 0)
    at the first flexible frequency of the hub + beam system — not the cantilever's ω₁: the hub is
    free and counter-rotates.  Sound bracket from the model's own numbers: clamping the hub (one
    constraint) gives the 4-mode cantilever, whose eigenvalues interlace with the free system's,
    so ω₁ ≤ ω_sys (Rayleigh's theorem of constraints); the Ritz value of the subspace (θ, η₁),
    ω₁ / √(1 − c₁²/J) with J, c₁ the mass-matrix entries, is an upper bound (Poincaré).  Here the
    hub (0.05 kg m²) is light against the beam about the hub (0.17 kg m²): ω_sys ≈ 1.94 ω₁, inside
    the bracket [ω₁, 1.95 ω₁]; it equals the linearization's eigenfrequency (K, M at rest: the
    slew is a pure rotation about a cyclic coordinate) to the crossings' resolution."""
    flex, res = slews["flex"], slews["res"]
    fl = flex.bodies[flex.body_index("beam")].flexible
    w1 = fl.frequencies[0]
    J, c, eta = hub_and_modes(flex, np.zeros(flex.nq))
    upper = w1 / np.sqrt(1 - c[0] ** 2 / J)
    w, amplitude, mean = residual_frequency(res)
    assert w1 < w < upper
    assert 1.9 < w / w1 < 1.96
    M = sf.mass_matrix(flex, np.zeros(flex.nq))
    K = np.zeros_like(M)
    K[np.ix_(eta, eta)] = fl.stiffness
    w_sys = np.sqrt(scipy.linalg.eigh(K, M, eigvals_only=True)[1])
    assert w == pytest.approx(w_sys, rel=2e-3)
    assert amplitude > 1e-3 and abs(mean) < 0.02 * amplitude


def test_heavy_hub_vibrates_at_the_cantilever_frequency():
    """With a hub 1000 × heavier the hub barely counter-rotates: the bracket above closes to
    [ω₁, ω₁ (1 + c₁²/(2J))], c₁²/(2J) ≈ 2e-3, so the tip vibrates at the beam's first clamped
    frequency ``flexible.frequencies[0]`` (within 0.3 %)."""
    flex = fs.arm()
    flex.set_body_inertia("hub", inertia=np.diag([30.0, 30.0, 50.0]))
    J, c, _ = hub_and_modes(flex, np.zeros(flex.nq))
    assert c[0] ** 2 / (2 * J) < 2e-3
    w, amplitude, mean = residual_frequency(fs.slew(flex, ANGLE, DURATION, 0.6))
    w1 = flex.bodies[flex.body_index("beam")].flexible.frequencies[0]
    assert w == pytest.approx(w1, rel=3e-3)
    assert w1 * (1 - 5e-4) < w < w1 / np.sqrt(1 - c[0] ** 2 / J) * (1 + 5e-4)   # crossings: 5e-4
    assert amplitude > 1e-3 and abs(mean) < 0.02 * amplitude


# ---------------------------------------------------------------- the flexible spacecraft
def spacecraft(tmp_path: Path, damping: bool) -> sf.Model:
    """spacecraft.toml, or a copy with damping_ratio = 0 (then nothing dissipates)."""
    path = example_path("spacecraft")
    if damping:
        return sf.load_model(path)
    text = path.read_text(encoding="utf-8")
    assert text.count("damping_ratio = 0.005") == 2
    (tmp_path / "spacecraft.toml").write_text(text.replace("damping_ratio = 0.005",
                                                           "damping_ratio = 0.0"), encoding="utf-8")
    return sf.load_model(tmp_path / "spacecraft.toml")


def momentum(model: sf.Model, q: np.ndarray, qd: np.ndarray) -> np.ndarray:
    """Total spatial momentum [angular about the world origin; linear], world axes, from the
    mass matrix: the rows of the bus' free joint of M q̇ are the system's momentum conjugate to
    the bus twist [ω; v] (bus frame, about the bus origin), modal velocities included."""
    h = sf.mass_matrix(model, q)[:6] @ qd
    w, x, y, z = q[:4]
    R = np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                  [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                  [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])
    P = R @ h[3:]
    return np.r_[R @ h[:3] + np.cross(q[4:7], P), P]


def tumbling_start(model: sf.Model) -> tuple[np.ndarray, np.ndarray]:
    """A tumbling bus with both panel drives, the arm and some modes moving."""
    qd = model.initial_qd.copy()
    qd[:6] = [0.02, -0.01, 0.01, 0.01, 0.0, -0.02]
    for name, v in (("panel_left_drive", 0.05), ("panel_right_drive", -0.03), ("shoulder", 0.1),
                    ("panel_left.eta[1]", 0.3), ("panel_right.eta[2]", -0.2),
                    ("panel_right.eta[3]", 0.1)):
        qd[model.velocity_names.index(name)] = v
    q = model.initial_q.copy()
    q[model.position_names.index("panel_left.eta[1]")] = 0.02
    return q, qd


def test_momentum_from_the_mass_matrix_matches_spatial_momentum_when_rigid():
    """The check of ``momentum`` itself: on spacecraft_rigid.toml it is sf.spatial_momentum."""
    m = sf.load_model(example_path("spacecraft_rigid"))
    rng = np.random.default_rng(3)
    q = m.initial_q.copy()
    q[:4] = rng.normal(size=4)
    q[:4] /= np.linalg.norm(q[:4])
    q[4:7] = rng.normal(size=3)
    qd = rng.normal(size=m.nv)
    np.testing.assert_allclose(momentum(m, q, qd), sf.spatial_momentum(m, q, qd), atol=1e-12)


def test_flexible_spacecraft_conserves_energy_and_momentum(tmp_path):
    """Free flight, no gravity, no input, no damping: energy (kinetic + strain) and the spatial
    momentum are constant to the integrator's tolerance (dop853, rtol 1e-10) over 5 s while the
    first panel mode (1 Hz) swings through 5 periods and exchanges momentum with the bus."""
    m = spacecraft(tmp_path, damping=False)
    q0, qd0 = tumbling_start(m)
    r = sf.simulate(m, 5.0, 0.05, q0=q0, qd0=qd0, method="dop853", rtol=1e-10, atol=1e-12)
    E = np.array([sf.total_energy(m, q, v) for q, v in zip(r["q"], r["qd"])])
    H = np.array([momentum(m, q, v) for q, v in zip(r["q"], r["qd"])])
    assert E[0] > 0.3
    assert np.ptp(E) < 1e-9 * E[0]
    np.testing.assert_allclose(H, np.broadcast_to(H[0], H.shape), atol=1e-10 * np.abs(H[0]).max())
    # the modes did move and the bus felt them: the bus' own momentum share changes
    eta = r["q"][:, m.position_names.index("panel_left.eta[1]")]
    assert np.ptp(eta) > 0.05
    assert np.ptp(r["qd"][:, :3], axis=0).max() > 1e-4


def test_panel_damping_dissipates_energy_but_keeps_momentum(tmp_path):
    """With the panels' modal damping (ζ = 0.005, internal forces) the energy only decreases
    while the momentum stays constant."""
    m = spacecraft(tmp_path, damping=True)
    q0, qd0 = tumbling_start(m)
    r = sf.simulate(m, 5.0, 0.05, q0=q0, qd0=qd0, method="dop853", rtol=1e-10, atol=1e-12)
    E = np.array([sf.total_energy(m, q, v) for q, v in zip(r["q"], r["qd"])])
    H = np.array([momentum(m, q, v) for q, v in zip(r["q"], r["qd"])])
    assert np.all(np.diff(E) < 1e-12 * E[0]) and E[0] - E[-1] > 1e-4 * E[0]
    np.testing.assert_allclose(H, np.broadcast_to(H[0], H.shape), atol=1e-10 * np.abs(H[0]).max())


def test_flexible_lqr_damps_the_tip_vibration():
    """examples/flexible_lqr.py: the LQR from the flexible linearization stabilizes every
    controllable mode (the out-of-plane pair, which the hub torque cannot reach, keeps its
    open-loop decay), and on the nonlinear plant it brings the hub back and damps the knocked tip:
    a tenth of the free beam's ringing after 1.5 s, less than half the rigid-design PD's
    integrated squared deflection, and 0.6 of its peak."""
    import flexible_lqr as fl
    model = fl.arm()
    q0, tau0 = fl.operating_point(model)
    A, B, K = fl.lqr_gain(model, q0, tau0)
    ev_ol, ev_cl = np.linalg.eigvals(A), np.linalg.eigvals(A - B @ K)
    untouched = [e for e in ev_cl if np.min(np.abs(ev_ol - e)) < 1e-6 * abs(e)]
    assert len(untouched) == 2                      # the out-of-plane bending pair
    assert max(e.real for e in ev_cl if all(e != u for u in untouched)) < -2.0
    lqr, pd, free = (fl.run(model, q0, tau0, k, t_end=2.0) for k in (K, fl.pd_gain(model, q0), 0 * K))
    late = lqr["t"] >= 1.5
    assert abs(lqr["hub"][-1]) < 1e-3 and abs(pd["hub"][-1]) < 1e-3
    assert np.abs(lqr["deflection"][late]).max() < 0.1 * np.abs(free["deflection"][late]).max()
    ise = [np.trapezoid(r["deflection"] ** 2, r["t"]) for r in (lqr, pd)]
    assert ise[0] < 0.5 * ise[1]
    assert np.abs(lqr["deflection"]).max() < 0.6 * np.abs(pd["deflection"]).max()
