"""The algorithm families beyond FD/ID/M with flexible bodies (issue 34; seed 000 §4 in the
recursions of soa_fmu/core/flexible.c): M⁻¹ in factored form (M⁻¹M = I), the correction
accelerations M⁻¹J*f and the operational-space Λ⁻¹ = J M⁻¹ Jᵀ (against dense solves), the ID/FD derivatives
and the state-space linearization (against central differences of the engine's own FD/ID), on the
flexible arm, the spacecraft (a free base with two flexible panels) and random flexible trees."""
from __future__ import annotations

import numpy as np
import pytest

import soa_fmu as sf
from soa_fmu.integrators import integrate_configuration
from soa_fmu.linearization import (configuration_difference, forward_dynamics_derivatives,
                                   inverse_dynamics_derivatives, linearize)
from soa_fmu.verify import differences
from soa_fmu.verify.builders import random_flexible_tree
from soa_fmu.verify.differences import plus

EX = "model_descriptions/examples/"
MODELS = {
    "arm": lambda: sf.load_model(EX + "flexible_arm.toml"),
    "spacecraft": lambda: sf.load_model(EX + "spacecraft.toml"),
    "tree": lambda: random_flexible_tree(np.random.default_rng(34), 5)[0],
}


@pytest.fixture(params=list(MODELS), scope="module")
def case(request):
    model = MODELS[request.param]()
    rng = np.random.default_rng(7)
    q = integrate_configuration(model, model.neutral_configuration(), rng.normal(scale=0.3, size=model.nv))
    return model, q, rng.normal(scale=0.5, size=model.nv), rng.normal(size=model.nv)


def jacobians(model, f, q, qd):
    """verify.differences.jacobians with a β step of 0.1 (exact for the quadratic ID, and away from
    the rounding that the modal stiffness forces carry) and a θ step of 1e-5."""
    return differences.jacobians(model, f, q, qd, h=1e-5, hv=0.1)


def rel(a, b):
    return np.abs(a - b).max() / np.abs(b).max()


def test_mass_matrix_inverse_in_factored_form(case):
    """M⁻¹ column by column through the held LDL* factors of the modal and joint steps:
    M⁻¹M = I to cond(M)·1e-15 (1e-9 on the examples), and exactly symmetric."""
    model, q, _, _ = case
    M, Minv = sf.mass_matrix(model, q), sf.mass_matrix_inverse(model, q)
    assert model.max_modes > 0 and np.array_equal(Minv, Minv.T)
    assert np.abs(Minv @ M - np.eye(model.nv)).max() <= max(1e-9, 1e-15 * np.linalg.cond(M))


def test_correction_accelerations_are_a_dense_solve(case):
    """Δβ̇ = M⁻¹J*f for forces on the bodies (body axes, at the body origins) by the bias-free
    filter and smoother with the forces as input, against M⁻¹ (dense) of Jᵀ f (frame_jacobian)."""
    model, q, _, _ = case
    rng = np.random.default_rng(2)
    Minv = np.linalg.inv(sf.mass_matrix(model, q))
    names = [b.name for b in model.bodies]
    f = {n: rng.normal(size=6) for n in names}
    JTf = sum(sf.frame_jacobian(model, q, n).T @ _body_to_world(model, q, n, f[n]) for n in names)
    assert rel(sf.correction_accelerations(model, q, f), Minv @ JTf) <= 1e-9


@pytest.mark.parametrize("reference", ["world", "local"])
def test_operational_space_inertia_is_j_minv_jt(case, reference):
    """Λ⁻¹ = J M⁻¹ Jᵀ (dense, frame_jacobian) for bodies and node frames together, world-aligned
    and local axes: block columns through the factored form, the smoother's α giving every
    point's acceleration."""
    model, q, _, _ = case
    frames = list(model.frames)[:3] + [model.bodies[-1].name, model.bodies[1].name]
    J = np.vstack([sf.frame_jacobian(model, q, f, reference=reference) for f in frames])
    Linv = sf.operational_space_inertia_inverse(model, q, frames, reference)
    assert np.array_equal(Linv, Linv.T)
    assert rel(Linv, J @ np.linalg.inv(sf.mass_matrix(model, q)) @ J.T) <= 1e-9


def _body_to_world(model, q, name, f):
    """A body force [n; f] (body axes, at the body origin) as [n; f] in world axes at that origin
    (the point frame_jacobian's rows refer to)."""
    R, _ = sf.frame_pose(model, q, name)
    return np.r_[R @ f[:3], R @ f[3:]]


def test_algorithm_2_equals_forward_dynamics_and_the_outward_accelerations(case):
    """Seed 001's Algorithm 2 (T′ = T − ID(θ, β, 0), β̇ = M⁻¹T′, α = λ + ζ): β̇ equals the articulated
    forward dynamics, and α the body accelerations of the Newton–Euler outward pass at that β̇ plus
    the base acceleration [0; −g] in each body's axes (as the rigid algorithm reports them)."""
    model, q, qd, tau = case
    f_ext = {model.bodies[-1].name: np.arange(1.0, 7.0)}
    qdd, alpha = sf.forward_dynamics_bias_free(model, q, qd, tau, f_ext)
    assert rel(qdd, sf.forward_dynamics(model, q, qd, tau, f_ext)) <= 1e-11
    sf.inverse_dynamics(model, q, qd, qdd)
    w = model.workspace()
    g = np.array([w.Rw[k].T @ -np.asarray(model.gravity) for k in range(len(model.bodies))])
    assert rel(alpha, w.alpha + np.c_[np.zeros_like(g), g]) <= 1e-10


def test_inverse_dynamics_derivatives(case):
    """∂T/∂β is exact (T is quadratic in β); ∂T/∂θ by the core's fourth-order differences."""
    model, q, qd, qdd = case
    f_ext = {model.bodies[-1].name: np.arange(1.0, 7.0)}
    dq, dv = inverse_dynamics_derivatives(model, q, qd, qdd, f_ext)
    ref_q, ref_v = jacobians(model, lambda a, b: sf.inverse_dynamics(model, a, b, qdd, f_ext), q, qd)
    assert rel(dq, ref_q) < 1e-6
    assert rel(dv, ref_v) < 1e-8


def test_forward_dynamics_derivatives(case):
    model, q, qd, tau = case
    ddq, ddv, Minv = forward_dynamics_derivatives(model, q, qd, tau)
    ref_q, ref_v = jacobians(model, lambda a, b: sf.forward_dynamics(model, a, b, tau), q, qd)
    assert rel(ddq, ref_q) < 1e-5
    assert rel(ddv, ref_v) < 1e-5
    assert rel(Minv, sf.mass_matrix_inverse(model, q)) < 1e-12
    dq, dv = inverse_dynamics_derivatives(model, q, qd, sf.forward_dynamics(model, q, qd, tau))
    assert rel(ddq, -Minv @ dq) < 1e-9 and rel(ddv, -Minv @ dv) < 1e-9


def test_state_space_model_matches_the_flow(case):
    """A, B against central differences of x ↦ ẋ in tangent coordinates x = (δ, β), θ = θ₀ ⊕ δ
    (the modal coordinates are plain vector coordinates of θ), at a moving operating point."""
    model, q, qd, tau = case
    A, B = linearize(model, q, qd, tau)
    Af, Bf = differences.state_space(model, q, qd, tau)
    assert np.abs(A - Af).max() < 1e-5 * np.abs(Af).max()
    assert np.abs(B - Bf).max() < 1e-6 * np.abs(Bf).max()


def test_configuration_difference_includes_the_modal_coordinates(case):
    """θ₁ = θ₀ ⊕ δ ⇒ configuration_difference(θ₀, θ₁) = δ, the modal entries included (the error
    signal of a state feedback on a flexible model, examples/flexible_lqr.py)."""
    model, q, _, _ = case
    delta = np.random.default_rng(3).normal(scale=0.1, size=model.nv)
    assert np.abs(configuration_difference(model, q, plus(model, q, delta)) - delta).max() < 1e-12
