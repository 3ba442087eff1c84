"""Operator identities (E9): the O(N) recursions against the dense operators they come from.

Seed 000 §3 Lemmas 1–4 and eq. (3.1); seed 001 Identities 1, 3–6 and eqs. (23), (56).
Random trees with mixed joints (revolute, prismatic, spherical, planar, helical, cylindrical,
fixed), fixed and floating base; all ≤ 1e-10 relative.
"""
import numpy as np
import pytest

import soa_fmu as sf
from soa_fmu.verify.builders import random_state, random_tree
from soa_fmu.verify.operators import build_operators

CASES = [(n, seed, fb) for n, seed, fb in [(1, 0, False), (5, 1, False), (9, 2, False),
                                          (7, 3, True), (12, 4, True)]]


def rel(a, b):
    return np.abs(a - b).max() / max(1.0, np.abs(b).max())


@pytest.fixture(params=CASES, ids=[f"n{n}-s{s}-{'float' if f else 'fixed'}" for n, s, f in CASES])
def system(request):
    n, seed, fb = request.param
    model = random_tree(n, seed=seed, floating_base=fb)
    q, qd = random_state(model, seed=seed + 10)
    return model, q, qd, build_operators(model, q, qd)


def test_newton_euler_factorization_equals_composite_body_mass_matrix(system):
    model, q, _, O = system
    assert rel(O.H @ O.phi @ O.M @ O.phi.T @ O.H.T, sf.mass_matrix(model, q)) < 1e-10


def test_identity_1_composite_inertias(system):
    """φMφ* = r + Φr + rΦ*, r = diag of composite inertias (seed 001 eq. 28)."""
    model, q, _, O = system
    n = model.nbodies
    r = np.zeros_like(O.M)
    PM = O.phi @ O.M @ O.phi.T
    for k in range(n):
        r[6 * k:6 * k + 6, 6 * k:6 * k + 6] = PM[6 * k:6 * k + 6, 6 * k:6 * k + 6]
    Phi = O.phi - np.eye(6 * n)
    assert rel(r + Phi @ r + r @ Phi.T, PM) < 1e-10


def test_articulated_inertia_riccati_form(system):
    """M = P − E_φ[P − PH*D⁻¹HP]E_φ* (seed 000 eq. 3.1) for the P of the recursion."""
    _, _, _, O = system
    inner = O.P - O.P @ O.H.T @ np.linalg.inv(O.D) @ O.H @ O.P
    assert rel(O.P - O.E_phi @ inner @ O.E_phi.T, O.M) < 1e-10


def test_lemma_1_innovations_factorization(system):
    """𝓜 = [I + HφK] D [I + HφK]* (seed 000 eq. 3.4; seed 001 Identity 3)."""
    model, q, _, O = system
    L = np.eye(model.nv) + O.H @ O.phi @ O.K
    assert rel(L @ O.D @ L.T, sf.mass_matrix(model, q)) < 1e-10


def test_lemma_2_inverse_factor(system):
    """[I + HφK]⁻¹ = I − HψK (seed 000 eq. 3.5; seed 001 Identity 5)."""
    model, _, _, O = system
    I = np.eye(model.nv)
    assert rel((I - O.H @ O.psi @ O.K) @ (I + O.H @ O.phi @ O.K), I) < 1e-10


def test_lemma_3_mass_matrix_inverse(system):
    """𝓜⁻¹ = [I − HψK]* D⁻¹ [I − HψK] (seed 000 eq. 3.6; seed 001 Identity 6) — dense vs O(N²)."""
    model, q, _, O = system
    Li = np.eye(model.nv) - O.H @ O.psi @ O.K
    dense = Li.T @ np.linalg.inv(O.D) @ Li
    Minv = sf.mass_matrix_inverse(model, q)
    assert rel(Minv, dense) < 1e-10
    assert rel(Minv @ sf.mass_matrix(model, q), np.eye(model.nv)) < 1e-10


def test_lemma_4(system):
    """(I − HψK) Hφ = Hψ (seed 000 eq. 3.9; seed 002 Lemma 4)."""
    model, _, _, O = system
    lhs = (np.eye(model.nv) - O.H @ O.psi @ O.K) @ O.H @ O.phi
    assert rel(lhs, O.H @ O.psi) < 1e-10


def test_phi_minus_psi(system):
    """φ − ψ = ψKHφ, the tree form of seed 001 Identity 4 (Φ − Ψ = ΨGHΦ)."""
    _, _, _, O = system
    assert rel(O.phi - O.psi, O.psi @ O.K @ O.H @ O.phi) < 1e-10


def test_coriolis_term_and_algorithm_2_accelerations(system):
    """C = Hφ(Mφ*a + b) (seed 001 eq. 23) is the Newton–Euler bias without gravity, and Algorithm 2's
    link accelerations are α = φ*(H*β̇ + a) (seed 001 eqs. 25, 56) with gravity as base motion."""
    model, q, qd, O = system
    C = O.H @ O.phi @ (O.M @ O.phi.T @ O.a + O.b)
    assert rel(C, sf.bias_forces(model, q, qd) - sf.gravity_forces(model, q)) < 1e-10
    model.gravity = (0.0, 0.0, 0.0)
    tau = np.random.default_rng(0).normal(size=model.nv)
    qdd, alpha = sf.forward_dynamics_bias_free(model, q, qd, tau)
    assert rel(qdd, sf.forward_dynamics(model, q, qd, tau)) < 1e-10
    assert rel(alpha.reshape(-1), O.phi.T @ (O.H.T @ qdd + O.a)) < 1e-10


def test_jacobian_factorization(system):
    """J = B*φ*H* (seed 000 eq. 2.14) against the recursive frame Jacobian (local axes)."""
    model, q, _, O = system
    leaf = model.bodies[-1].name
    model.frames.clear()
    model.add_frame("tool", leaf, rotation=sf.spatial.rpy_to_matrix([0.3, -0.2, 1.0]),
                    translation=(0.1, 0.2, -0.3))
    B = O.point_map(model, ["tool"])
    J_dense = B.T @ O.phi.T @ O.H.T
    assert rel(sf.frame_jacobian(model, q, "tool", reference="local"), J_dense) < 1e-10
