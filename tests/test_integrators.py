"""Integrators and the Simulator: order of accuracy, manifold, full-state capture, errors; the
implicit step with flexible bodies (issue 34)."""
import numpy as np
import pytest

import soa_fmu as sf
from soa_fmu.verify.builders import random_state, random_tree, serial_chain


def final_state(model, q, qd, method, step):
    sim = sf.Simulator(model, q, qd, method=method, max_step=step)
    sim.step(0.5)
    return np.r_[sim.q, sim.qd]


def test_rk4_is_fourth_order_and_euler_first_order():
    model = serial_chain(3, seed=2)
    q, qd = random_state(model, 1)
    ref = final_state(model, q, qd, "dop853", 1e-3)
    e = {h: np.abs(final_state(model, q, qd, "rk4", h) - ref).max() for h in (0.02, 0.01)}
    assert 12 < e[0.02] / e[0.01] < 20
    e = {h: np.abs(final_state(model, q, qd, "euler", h) - ref).max() for h in (0.002, 0.001)}
    assert 1.7 < e[0.002] / e[0.001] < 2.3


def test_quaternions_stay_unit_and_methods_agree_on_floating_tree():
    model = random_tree(5, seed=9, floating_base=True, joint_types=("spherical", "revolute"))
    q, qd = random_state(model, 3)
    a = final_state(model, q, qd, "rk4", 1e-3)
    b = final_state(model, q, qd, "dop853", 1e-3)
    assert np.abs(a - b).max() < 1e-7
    for _, i in model.quaternion_slices():
        assert abs(np.linalg.norm(a[i:i + 4]) - 1) < 1e-14


def test_step_is_exact_and_variable_steps_compose():
    model = serial_chain(4, seed=1)
    q, qd = random_state(model, 2)
    one = sf.Simulator(model, q, qd)
    one.step(0.01)
    two = sf.Simulator(model, q, qd)
    two.step(0.004)
    two.step(0.006)
    assert two.t == pytest.approx(0.01, abs=1e-15)
    assert np.abs(one.q - two.q).max() < 1e-10


@pytest.mark.parametrize("method", ["rk4", "euler", "dop853"])
def test_state_round_trip_is_bit_exact(method):
    model = serial_chain(5, seed=3)
    q, qd = random_state(model, 4)
    sim = sf.Simulator(model, q, qd, method=method)
    sim.tau = np.linspace(-1, 1, 5)
    sim.step(0.01)
    saved = sim.get_state()
    for _ in range(3):
        sim.step(0.01)
    first = (sim.q.copy(), sim.qd.copy(), sim.qdd.copy())
    sim.tau = np.zeros(5)
    sim.set_state(saved)
    for _ in range(3):
        sim.step(0.01)
    for a, b in zip(first, (sim.q, sim.qd, sim.qdd)):
        np.testing.assert_array_equal(a, b)


def test_simulate_with_feedback_torque_reaches_setpoint():
    model = serial_chain(2, seed=5)
    model.gravity = (0, 0, 0)
    target = np.array([0.5, -0.3])
    out = sf.simulate(model, 6.0, dt=0.01, tau=lambda t, q, qd: 40 * (target - q) - 12 * qd)
    np.testing.assert_allclose(out["q"][-1], target, atol=1e-3)


def test_bad_options_and_failed_step_leave_state_unchanged():
    model = serial_chain(2)
    with pytest.raises(ValueError, match="unknown integrator 'rk5'"):
        sf.Simulator(model, method="rk5")
    with pytest.raises(ValueError, match="max_step must be finite and > 0"):
        sf.Simulator(model, max_step=-1)
    sim = sf.Simulator(model)
    with pytest.raises(ValueError, match="step size"):
        sim.step(np.nan)
    sim.tau = np.array([np.inf, 0.0])
    q0 = sim.q.copy()
    with pytest.raises(sf.IntegrationError):
        sim.step(0.01)
    np.testing.assert_array_equal(sim.q, q0)
    assert sim.t == 0.0


# ---------------------------------------------------------------- flexible bodies (issue 34)
def flexible_case(name):
    model = sf.load_model(f"model_descriptions/examples/{name}.toml")
    q, qd = random_state(model, seed=4, scale=0.3)
    for b in model.bodies:                          # small deformations, fast modal rates
        i = b.q_index + b.joint.nq
        q[i:i + b.nmodes] *= 1e-2
    return model, q, qd


def modal_diagonals(model):
    """diag K and diag D over the velocity coordinates (0 on the joints)."""
    K, D = np.zeros(model.nv), np.zeros(model.nv)
    for b in model.bodies:
        j = b.v_index + b.joint.nv
        if b.nmodes:
            K[j:j + b.nmodes] = np.diag(b.flexible.stiffness)
            D[j:j + b.nmodes] = np.diag(b.flexible.damping)
    return K, D


@pytest.mark.parametrize("name", ["flexible_arm", "spacecraft"])
def test_flexible_implicit_step_is_the_dense_linearly_implicit_solve(name):
    """One implicit Euler step with flexible bodies: (M + h D + h² K) x = −ID(θ, β, 0) − h K β,
    β⁺ = β + h x, the modes' strain and damping implicit (normal modes: K, D diagonal), against a
    dense solve with the flexible M and Newton–Euler."""
    model, q, qd = flexible_case(name)
    h = 2e-3
    K, D = modal_diagonals(model)
    assert np.any(K > 0)
    sim = sf.Simulator(model, q, qd, method="implicit", max_step=h)
    sim.step(h)
    z = np.zeros(model.nv)
    A = sf.mass_matrix(model, q) + np.diag(h * D + h * h * K)
    x = np.linalg.solve(A, -sf.inverse_dynamics(model, q, qd, z) - h * K * qd)
    assert np.abs((sim.qd - qd) / h - x).max() <= 1e-10 * np.abs(x).max()


@pytest.mark.parametrize("method,ratio", [("implicit", 2.0), ("ros2", 4.0), ("ros34pw2", 8.0),
                                          ("rk4w", 8.0)])
def test_flexible_implicit_methods_converge_and_stay_stable_where_rk4_diverges(method, ratio):
    """The flexible arm (modes up to 363 rad/s): over 50 ms the errors against DOP853 (rtol 1e-12)
    fall as h (implicit Euler), h² (ROS2) and h³ (ROS34PW2; RK4W: the modes' stiffness in its A,
    W-order 3); at h = 20 ms (h ω = 7) RK4 diverges while all stay bounded and dissipative over 2 s
    (the modes' stiffness in their stage matrix)."""
    model, q, qd = flexible_case("flexible_arm")

    def final(method, h, **kw):
        sim = sf.Simulator(model, q, qd, method=method, max_step=h, **kw)
        sim.step(0.05)
        return np.r_[sim.q, sim.qd]
    ref = final("dop853", 0.05, rtol=1e-12, atol=1e-14)
    e = {h: np.abs(final(method, h) - ref).max() for h in (5e-5, 2.5e-5)}
    assert 0.9 * ratio < e[5e-5] / e[2.5e-5] < 1.1 * ratio
    sim = sf.Simulator(model, q, qd, method=method, max_step=0.02)
    E0 = sf.total_energy(model, q, qd)
    sim.step(2.0)
    assert np.all(np.isfinite(sim.qd)) and sf.total_energy(model, sim.q, sim.qd) <= E0
    with pytest.raises(sf.integrators.IntegrationError):
        sf.Simulator(model, q, qd, method="rk4", max_step=0.02).step(2.0)
