"""Dynamics (E5–E8) against closed forms, against each other, and by physics."""
import re

import numpy as np
import pytest

import soa_fmu as sf
from soa_fmu.verify.builders import random_state, random_tree, serial_chain

G = 9.81


def rel(a, b):
    return np.abs(a - b).max() / max(1.0, np.abs(b).max())


@pytest.mark.parametrize("seed,fb", [(0, False), (1, True), (2, False), (3, True)])
def test_forward_inverse_dynamics_are_inverse(seed, fb):
    model = random_tree(15, seed=seed, floating_base=fb)
    q, qd = random_state(model, seed)
    tau = np.random.default_rng(seed).normal(size=model.nv) * 5
    qdd = sf.forward_dynamics(model, q, qd, tau)
    assert rel(sf.inverse_dynamics(model, q, qd, qdd), tau) < 1e-10
    M = sf.mass_matrix(model, q)
    assert rel(M @ qdd + sf.bias_forces(model, q, qd), tau) < 1e-10
    assert rel(M @ sf.mass_matrix_inverse(model, q), np.eye(model.nv)) < 1e-10


def test_pendulum_closed_form():
    """Compound pendulum: θ̈ = −m g c sin θ / (I_c + m c²)."""
    m, c, Ic = 2.0, 0.7, 0.05
    model = sf.Model("pendulum")
    model.add_body("rod", joint=sf.Revolute((0, 1, 0)), mass=m, com=(0, 0, -c),
                   inertia=np.diag([Ic, Ic, 1e-4]))
    for th in (0.0, 0.4, 2.0, -1.1):
        qdd = sf.forward_dynamics(model, [th], [0.3], [0.0])
        # rotation about +y moves the bob (0,0,−c) towards −x; gravity gives θ̈ = −m g c sin θ / I_O
        assert qdd[0] == pytest.approx(-m * G * c * np.sin(th) / (Ic + m * c * c), rel=1e-12)
    assert sf.mass_matrix(model, [0.3])[0, 0] == pytest.approx(Ic + m * c * c, rel=1e-14)


def test_double_pendulum_closed_form():
    """Point-mass double pendulum (Lagrange), angles from the vertical, both about +y."""
    m1, m2, l1, l2 = 1.3, 0.7, 0.9, 0.6
    eps = 1e-9   # a point mass needs a (tiny) inertia to be a valid rigid body
    model = sf.Model("double_pendulum")
    model.add_body("l1", joint=sf.Revolute((0, 1, 0)), mass=m1, com=(0, 0, -l1), inertia=eps * np.eye(3))
    model.add_body("l2", "l1", sf.Revolute((0, 1, 0)), translation=(0, 0, -l1), mass=m2,
                   com=(0, 0, -l2), inertia=eps * np.eye(3))
    t1, t2, w1, w2 = 0.5, -0.8, 0.7, -1.2
    # absolute angle of link 2 is φ2 = t1 + t2; standard equations in (φ1, φ2)
    p1, p2, v1, v2 = t1, t1 + t2, w1, w1 + w2
    d = p1 - p2
    A = np.array([[(m1 + m2) * l1, m2 * l2 * np.cos(d)], [l1 * np.cos(d), l2]])
    b = np.array([-m2 * l2 * v2 ** 2 * np.sin(d) - (m1 + m2) * G * np.sin(p1),
                  l1 * v1 ** 2 * np.sin(d) - G * np.sin(p2)])
    a1, a2 = np.linalg.solve(A, b)
    qdd = sf.forward_dynamics(model, [t1, t2], [w1, w2], [0.0, 0.0])
    np.testing.assert_allclose(qdd, [a1, a2 - a1], rtol=1e-7)


def test_energy_conservation_7dof_arm_rk4():
    model = serial_chain(7, seed=1)
    q, qd = random_state(model, 2)
    E0 = sf.total_energy(model, q, qd)
    out = sf.simulate(model, 10.0, dt=0.01, q0=q, qd0=qd, method="rk4", max_step=1e-3)
    E = np.array([sf.total_energy(model, a, b) for a, b in zip(out["q"][::50], out["qd"][::50])])
    scale = sf.kinetic_energy(model, q, qd) + abs(sf.potential_energy(model, q))
    assert np.abs(E - E0).max() / scale < 1e-6


def test_energy_balance_with_constant_torque():
    """Work done by a constant τ: ΔE = τ·Δθ (prismatic/revolute coordinates are vector spaces)."""
    model = serial_chain(4, seed=3)
    q, qd = random_state(model, 4)
    tau = np.array([0.5, -0.2, 0.1, 0.3])
    out = sf.simulate(model, 2.0, dt=0.01, q0=q, qd0=qd, tau=tau, method="dop853", rtol=1e-11,
                      atol=1e-12)
    dE = sf.total_energy(model, out["q"][-1], out["qd"][-1]) - sf.total_energy(model, q, qd)
    assert dE == pytest.approx(tau @ (out["q"][-1] - q), rel=1e-7, abs=1e-8)


def test_momentum_conservation_free_floating_tree():
    model = random_tree(8, seed=4, floating_base=True, joint_types=("revolute", "spherical", "prismatic"))
    model.gravity = (0.0, 0.0, 0.0)
    q, qd = random_state(model, 2)
    h0 = sf.spatial_momentum(model, q, qd)
    out = sf.simulate(model, 1.0, dt=0.01, q0=q, qd0=qd, max_step=1e-3)
    for qk, vk in zip(out["q"][::20], out["qd"][::20]):
        assert rel(sf.spatial_momentum(model, qk, vk), h0) < 1e-9
    for _, i in model.quaternion_slices():
        assert np.linalg.norm(out["q"][-1, i:i + 4]) == pytest.approx(1.0, abs=1e-14)


def test_external_force_equals_jacobian_transpose_torque():
    model = random_tree(6, seed=5)
    leaf = model.bodies[-1].name
    model.add_frame("tip", leaf, translation=(0.1, 0.0, 0.2))
    q, qd = random_state(model, 5)
    f = np.array([0.3, -0.1, 0.2, 1.0, 2.0, -0.5])
    J = sf.frame_jacobian(model, q, "tip", reference="local")
    a = sf.forward_dynamics(model, q, qd, np.zeros(model.nv), f_ext={"tip": f})
    b = sf.forward_dynamics(model, q, qd, J.T @ f)
    assert rel(a, b) < 1e-10
    tau = sf.inverse_dynamics(model, q, qd, a, f_ext={"tip": f})
    assert rel(tau, np.zeros(model.nv)) < 1e-10


def test_gravity_is_settable():
    model = serial_chain(3)
    q, qd = random_state(model)
    model.gravity = (0, 0, 0)
    assert rel(sf.gravity_forces(model, q), np.zeros(3)) < 1e-15
    model.gravity = (0, 0, -9.81)
    assert np.abs(sf.gravity_forces(model, q)).max() > 0.1


class TestBadInput:
    model = random_tree(4, seed=1, floating_base=True)

    def test_wrong_shape(self):
        q, qd = random_state(self.model)
        with pytest.raises(ValueError, match=r"qd must have shape \(%d,\)" % self.model.nv):
            sf.forward_dynamics(self.model, q, qd[:-1], np.zeros(self.model.nv))

    def test_nan_names_the_coordinate(self):
        q, qd = random_state(self.model)
        tau = np.zeros(self.model.nv)
        tau[7] = np.nan
        name = re.escape(self.model.velocity_names[7])
        with pytest.raises(ValueError, match=rf"tau\[8\] \({name}\) is not finite"):
            sf.forward_dynamics(self.model, q, qd, tau)
        q[8] = np.inf
        with pytest.raises(ValueError, match=r"q\[9\]"):
            sf.inverse_dynamics(self.model, q, qd, tau)

    def test_non_unit_quaternion(self):
        q, qd = random_state(self.model)
        q[0:4] *= 1.1
        with pytest.raises(ValueError, match="quaternion of joint 'j0'.*not unit"):
            sf.mass_matrix(self.model, q)

    def test_unknown_frame_in_f_ext(self):
        q, qd = random_state(self.model)
        with pytest.raises(ValueError, match="unknown body 'nowhere'"):
            sf.forward_dynamics(self.model, q, qd, np.zeros(self.model.nv), f_ext={"nowhere": np.zeros(6)})

    def test_massless_leaf_is_singular(self):
        model = sf.Model()
        model.add_body("a", joint=sf.Revolute(), mass=1, com=(0.1, 0, 0), inertia=np.eye(3))
        model.add_body("ghost", "a", sf.Revolute())
        with pytest.raises(ValueError, match="joint 'ghost' is singular"):
            sf.forward_dynamics(model, [0, 0], [0, 0], [0, 0])
