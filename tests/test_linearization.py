"""Derivatives of inverse/forward dynamics and the state-space linearization (issue 6).

Against finite differences along the velocity directions (θ ⊕ εeᵢ), against the sensitivities of
:mod:`soa_fmu.sensitivities` (∂τ/∂θ = ∂𝓜/∂θ q̈ at rest without gravity; ∂τ/∂β = 2C for 1-dof
trees), against Pinocchio's computeRNEADerivatives / computeABADerivatives, and by an LQR design.
"""
from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg

import soa_fmu as sf
from soa_fmu.linearization import (configuration_difference, forward_dynamics_derivatives,
                                   inverse_dynamics_derivatives, linearize)
from soa_fmu.sensitivities import coriolis_matrix, mass_matrix_derivative
from soa_fmu.verify import differences
from soa_fmu.verify.builders import random_state, random_tree, serial_chain
from soa_fmu.verify.differences import jacobians, plus

MIXED = ("revolute", "prismatic", "spherical", "planar", "helical", "cylindrical", "fixed")
MODELS = {
    "chain": lambda: serial_chain(6, seed=3),
    "tree": lambda: random_tree(9, seed=10, joint_types=MIXED),
    "floating": lambda: random_tree(7, seed=12, joint_types=MIXED, floating_base=True),
}


@pytest.fixture(params=list(MODELS), scope="module")
def case(request):
    model = MODELS[request.param]()
    q, qd = random_state(model, seed=7)
    rng = np.random.default_rng(3)
    return model, q, qd, rng.normal(size=model.nv), rng.normal(size=model.nv)


def rel(a, b):
    return np.abs(a - b).max() / np.abs(b).max()


@pytest.mark.parametrize("with_fext", [False, True])
def test_inverse_dynamics_derivatives(case, with_fext):
    model, q, qd, qdd, _ = case
    f_ext = {model.bodies[-1].name: np.arange(1.0, 7.0)} if with_fext else None
    dq, dv = inverse_dynamics_derivatives(model, q, qd, qdd, f_ext)
    ref_q, ref_v = jacobians(model, lambda a, b: sf.inverse_dynamics(model, a, b, qdd, f_ext), q, qd)
    assert rel(dq, ref_q) < 1e-6
    assert rel(dv, ref_v) < 1e-6


def test_forward_dynamics_derivatives(case):
    model, q, qd, _, tau = case
    ddq, ddv, Minv = forward_dynamics_derivatives(model, q, qd, tau)
    ref_q, ref_v = jacobians(model, lambda a, b: sf.forward_dynamics(model, a, b, tau), q, qd)
    assert rel(ddq, ref_q) < 1e-6
    assert rel(ddv, ref_v) < 1e-6
    assert rel(Minv, sf.mass_matrix_inverse(model, q)) < 1e-12


@pytest.mark.parametrize("model", [serial_chain(16, seed=4), random_tree(14, seed=6, joint_types=MIXED)],
                         ids=["chain16", "tree14"])
def test_forward_dynamics_derivatives_of_larger_systems(model):
    """Past nv = 12 the core applies 𝓜⁻¹ by the filter and smoother on the columns of ∂τ instead of
    a dense product: the same check against finite differences, and −𝓜⁻¹∂τ from the ID derivatives."""
    q, qd = random_state(model, seed=2)
    tau = np.random.default_rng(5).normal(size=model.nv)
    ddq, ddv, Minv = forward_dynamics_derivatives(model, q, qd, tau)
    ref_q, ref_v = jacobians(model, lambda a, b: sf.forward_dynamics(model, a, b, tau), q, qd)
    assert rel(ddq, ref_q) < 1e-6
    assert rel(ddv, ref_v) < 1e-6
    dq, dv = inverse_dynamics_derivatives(model, q, qd, sf.forward_dynamics(model, q, qd, tau))
    assert rel(ddq, -Minv @ dq) < 1e-12
    assert rel(ddv, -Minv @ dv) < 1e-12


def test_consistency_with_mass_matrix_sensitivities(case):
    """At rest and without gravity ∂τ/∂θ = Σ_k ∂𝓜(·,k)/∂θ q̈_k, i.e. eq. 5.52 contracted with q̈."""
    model, q, _, qdd, _ = case
    g = model.gravity
    model.gravity = (0.0, 0.0, 0.0)
    try:
        dq, _ = inverse_dynamics_derivatives(model, q, np.zeros(model.nv), qdd)
    finally:
        model.gravity = g
    assert rel(dq, np.einsum("ijk,k->ji", mass_matrix_derivative(model, q), qdd)) < 1e-12


def test_velocity_derivative_is_twice_the_christoffel_coriolis_matrix():
    """For 1-dof joints C(i) = β*ℂᵢβ with ℂᵢ symmetric, so ∂τ/∂β = 2C."""
    model = random_tree(8, seed=5, joint_types=("revolute", "prismatic", "helical"))
    q, qd = random_state(model, seed=1)
    _, dv = inverse_dynamics_derivatives(model, q, qd, np.ones(model.nv))
    assert rel(dv, 2 * coriolis_matrix(model, q, qd)) < 1e-12


def test_state_space_model_matches_the_flow(case):
    """A, B against central differences of x ↦ ẋ in tangent coordinates x = (δ, β), θ = θ₀ ⊕ δ,
    at a moving operating point (β ≠ 0, so the ½[δ, β] term of quaternion joints matters)."""
    model, q, qd, _, tau = case
    nv = model.nv
    A, B = linearize(model, q, qd, tau)
    assert A.shape == (2 * nv, 2 * nv) and B.shape == (2 * nv, nv)
    Af, Bf = differences.state_space(model, q, qd, tau)
    assert np.abs(A - Af).max() < 1e-5 * np.abs(Af).max()
    assert np.abs(B - Bf).max() < 1e-6 * np.abs(Bf).max()


def test_configuration_difference_inverts_the_exponential_map(case):
    model, q, _, _, _ = case
    d = np.random.default_rng(0).uniform(-1, 1, model.nv)
    assert np.abs(configuration_difference(model, q, plus(model, q, d)) - d).max() < 1e-12
    assert np.abs(configuration_difference(model, q, q)).max() < 1e-15


def test_bad_inputs_are_reported():
    model = serial_chain(3)
    q, qd = random_state(model)
    with pytest.raises(ValueError, match="tau"):
        forward_dynamics_derivatives(model, q, qd, [0.0, np.nan, 0.0])
    with pytest.raises(ValueError, match="qd"):
        linearize(model, q, [0.0, np.inf, 0.0], np.zeros(3))
    with pytest.raises(ValueError, match="shape"):
        inverse_dynamics_derivatives(model, q, qd, np.zeros(4))


@pytest.mark.parametrize("name", ["chain", "tree", "floating"])
def test_agreement_with_pinocchio(name):
    pin = pytest.importorskip("pinocchio")
    from soa_fmu.verify.pinocchio_bridge import to_pinocchio
    model = {"chain": lambda: serial_chain(7, seed=1),
             "tree": lambda: random_tree(9, seed=3,
                                         joint_types=("revolute", "prismatic", "spherical", "fixed")),
             "floating": lambda: random_tree(8, seed=4, floating_base=True,
                                             joint_types=("revolute", "prismatic", "spherical"))}[name]()
    pm = to_pinocchio(model)
    pmod, data = pm.pin_model, pm.pin_model.createData()
    q, qd = random_state(model, seed=2)
    tau = np.random.default_rng(1).normal(size=model.nv)
    qp, vp, tp = pm.q_to_pin(q), pm.v_to_pin(qd), pm.v_to_pin(tau)
    pin.computeABADerivatives(pmod, data, qp, vp, tp)
    ddq, ddv, Minv = forward_dynamics_derivatives(model, q, qd, tau)
    assert rel(ddq, pm.matrix_from_pin(data.ddq_dq)) < 1e-9
    assert rel(ddv, pm.matrix_from_pin(data.ddq_dv)) < 1e-9
    qdd = sf.forward_dynamics(model, q, qd, tau)
    pin.computeRNEADerivatives(pmod, data, qp, vp, pm.v_to_pin(qdd))
    dq, dv = inverse_dynamics_derivatives(model, q, qd, qdd)
    assert rel(dq, pm.matrix_from_pin(data.dtau_dq)) < 1e-9
    assert rel(dv, pm.matrix_from_pin(data.dtau_dv)) < 1e-9


def cart_pole() -> sf.Model:
    model = sf.Model("cart_pole")
    model.add_body("cart", joint=sf.Prismatic((1.0, 0.0, 0.0)), mass=1.0,
                   inertia=np.diag([0.01, 0.01, 0.01]))
    model.add_body("pole", "cart", sf.Revolute((0.0, 1.0, 0.0)), mass=0.2, com=(0.0, 0.0, 0.5),
                   inertia=np.diag([0.2 * 1.0 / 12, 0.2 * 1.0 / 12, 1e-4]))
    return model


def test_lqr_stabilizes_the_upright_cart_pole():
    """Linearize at the upright (unstable) equilibrium, solve the Riccati equation for the cart force
    alone, and check the closed loop: stable eigenvalues, and a simulated recovery from 0.2 rad."""
    model = cart_pole()
    q0, v0, tau0 = np.zeros(2), np.zeros(2), np.zeros(2)
    A, B = linearize(model, q0, v0, tau0)
    assert np.max(np.linalg.eigvals(A).real) > 1.0                   # the pole falls
    Bu = B[:, :1]
    K = Bu.T @ scipy.linalg.solve_continuous_are(A, Bu, np.diag([10.0, 10.0, 1.0, 1.0]), np.eye(1))
    assert np.max(np.linalg.eigvals(A - Bu @ K).real) < -1.0

    def control(t, q, qd):
        x = np.r_[configuration_difference(model, q0, q), qd - v0]
        return tau0 + np.r_[-(K @ x)[0], 0.0]

    out = sf.simulate(model, 5.0, dt=0.01, q0=[0.0, 0.2], tau=control)
    assert np.abs(out["q"][-1]).max() < 1e-2 and np.abs(out["qd"][-1]).max() < 1e-2
