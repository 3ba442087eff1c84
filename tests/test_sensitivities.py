"""Mass-matrix sensitivities, Christoffel symbols, Coriolis matrix (issue 6; SPEC E14; seed 004).

Checked three ways: the operator expression (4.43) against the composite-body form (5.52); finite
differences of the mass matrix along the velocity directions (θ ⊕ εeᵢ); Pinocchio.  And by physics:
C β = Newton–Euler bias, Ṁ − 2C skew-symmetric, the identities of seed 004 §5.3.  Models with
flexible bodies (issue 34): finite differences, C β = bias, Koszul's formula.
"""
from __future__ import annotations

import numpy as np
import pytest

import soa_fmu as sf
from soa_fmu.integrators import integrate_configuration
from soa_fmu.io import load_model
from soa_fmu.sensitivities import (christoffel_symbols, coriolis_matrix, force_cross_matrix,
                                   mass_matrix_derivative, mass_matrix_derivative_operators,
                                   structure_constants)
from soa_fmu.spatial import phi_matrix, skew
from soa_fmu.verify.builders import random_flexible_tree, random_state, random_tree, serial_chain

MIXED = ("revolute", "prismatic", "spherical", "planar", "helical", "cylindrical", "fixed")
MODELS = {
    "chain": lambda: serial_chain(6, seed=3),
    "one_dof_tree": lambda: random_tree(7, seed=5, joint_types=("prismatic", "revolute", "helical")),
    "commuting_tree": lambda: random_tree(9, seed=11, joint_types=MIXED),    # revolute, helical, …
    "tree": lambda: random_tree(9, seed=10, joint_types=MIXED),              # + spherical, planar
    "floating": lambda: random_tree(7, seed=12, joint_types=MIXED, floating_base=True),
}


@pytest.fixture(params=list(MODELS), scope="module")
def case(request):
    model = MODELS[request.param]()
    q, qd = random_state(model, seed=7)
    return request.param, model, q, qd


def plus(model, q, d):
    """θ ⊕ δ."""
    return integrate_configuration(model, q, np.asarray(d, dtype=float))


def central(f, model, q, d):
    """d/dε f(θ ⊕ εd) at ε = 0 by central differences (|d| is the step)."""
    return (f(plus(model, q, d)) - f(plus(model, q, -d))) / (2 * np.linalg.norm(d))


def fd_mass_matrix_derivative(model, q, h=1e-6):
    return np.array([central(lambda x: sf.mass_matrix(model, x), model, q, h * e)
                     for e in np.eye(model.nv)])


def rel(a, b, scale=None):
    """max |a − b| relative to max |b| (or to ``scale``)."""
    return np.abs(a - b).max() / (np.abs(b).max() if scale is None else scale)


def coordinate_bodies(model):
    return np.array([k for k, b in enumerate(model.bodies) for _ in range(b.joint.nv)])


def ancestor_or_equal(model):
    """A[a, b] ⇔ the body of coordinate a is an ancestor of (or is) the body of coordinate b."""
    body = coordinate_bodies(model)
    nb = model.nbodies
    anc = np.zeros((nb, nb), dtype=bool)
    for b in range(nb):
        a = b
        while a >= 0:
            anc[a, b] = True
            a = model.bodies[a].parent
    return anc[np.ix_(body, body)]


# ---------------------------------------------------------------- ∂M/∂θᵢ
def test_mass_matrix_derivative_matches_finite_differences(case):
    _, model, q, _ = case
    dM = mass_matrix_derivative(model, q)
    assert dM.shape == (model.nv,) * 3
    assert rel(dM, fd_mass_matrix_derivative(model, q)) < 1e-6
    assert np.abs(dM - dM.transpose(0, 2, 1)).max() == 0.0


def test_operator_form_equals_composite_body_form(case):
    """(4.43) with dense operators vs (5.52) compiled, ≤ 1e-10 relative."""
    _, model, q, _ = case
    dM = mass_matrix_derivative(model, q)
    ops = np.array([mass_matrix_derivative_operators(model, q, i) for i in range(model.nv)])
    assert rel(ops, dM) < 1e-10


def test_paper_operator_expression_verbatim_for_revolute_chain():
    """For revolute hinges ℍ is skew and 4.43 holds as printed: Hφ[ℍ_δ φM − Mφ*ℍ_δ]φ*H*."""
    from soa_fmu.verify.operators import build_operators
    model = serial_chain(5, seed=2)
    q, _ = random_state(model, seed=1)
    ops = build_operators(model, q)
    S = model.arrays().S
    dM = mass_matrix_derivative(model, q)
    for i in range(model.nv):
        Hd = np.zeros_like(ops.phi)
        Hd[6 * i:6 * i + 6, 6 * i:6 * i + 6] = force_cross_matrix(S[i])
        assert np.allclose(Hd + Hd.T, 0.0)
        paper = ops.H @ ops.phi @ (Hd @ ops.phi @ ops.M - ops.M @ ops.phi.T @ Hd) @ ops.phi.T @ ops.H.T
        assert rel(paper, dM[i], np.abs(dM).max()) < 1e-10


def test_single_and_selected_indices(case):
    _, model, q, _ = case
    dM = mass_matrix_derivative(model, q)
    i = model.nv - 2
    assert np.array_equal(mass_matrix_derivative(model, q, i), dM[i])
    assert np.array_equal(mass_matrix_derivative(model, q, [i, 1]), dM[[i, 1]])
    assert np.array_equal(mass_matrix_derivative(model, q, -1), dM[-1])
    for bad in (model.nv, [0, 0], 1.5):
        with pytest.raises(ValueError):
            mass_matrix_derivative(model, q, bad)


def test_bad_configuration_is_reported():
    model = random_tree(4, seed=1, joint_types=("spherical",))
    q, qd = random_state(model, seed=0)
    q[1] += 0.1                                     # a quaternion of the second body, not unit
    with pytest.raises(ValueError, match="unit"):
        mass_matrix_derivative(model, q)
    q[1] = np.nan
    with pytest.raises(ValueError, match="not finite"):
        coriolis_matrix(model, q, qd)


# ---------------------------------------------------------------- Christoffel symbols (5.53–5.55)
def test_christoffel_identities_of_section_5_3(case):
    """ℂᵢ(j,k) = ℂᵢ(k,j);  ℂᵢ(j,k) = −ℂ_k(j,i) and ℂᵢ(j,i) = 0 when j is inboard of i and k;
    ∂𝓜(k,j)/∂θᵢ = ℂ_j(i,k) + ℂ_k(j,i).  "Inboard" (the paper's j ≥ k, i with tip-to-base numbering)
    is body(j) ⪯ body(i), body(k) here; the dofs of one joint count as one body."""
    _, model, q, _ = case
    Ch = christoffel_symbols(model, q)
    dM = mass_matrix_derivative(model, q)
    anc = ancestor_or_equal(model)
    scale = np.abs(Ch).max()
    assert np.abs(Ch - Ch.transpose(0, 2, 1)).max() <= 1e-14 * scale
    minus = Ch + Ch.transpose(2, 1, 0)                          # ℂᵢ(j,k) + ℂ_k(j,i)
    inboard = anc.T[:, :, None] & anc[None, :, :]               # [i, j, k]: j ⪯ i and j ⪯ k
    assert np.abs(minus[inboard]).max() <= 1e-13 * scale
    zero = np.einsum("iji->ij", Ch)[anc.T]                      # ℂᵢ(j,i) for j ⪯ i
    assert np.abs(zero).max() <= 1e-13 * scale
    assert rel(Ch.transpose(1, 2, 0) + Ch.transpose(2, 0, 1), dM.transpose(0, 2, 1)) < 1e-12


def test_christoffel_depends_only_on_outboard_joints(case):
    """ℂᵢ(j,k) is a function of the joints outboard of the innermost of i, j, k only: its derivative
    along any coordinate l with body(l) ⪯ body(i), body(j), body(k) vanishes."""
    _, model, q, _ = case
    anc = ancestor_or_equal(model)
    scale = np.abs(christoffel_symbols(model, q)).max()
    for l, e in enumerate(np.eye(model.nv)):
        d = central(lambda x: christoffel_symbols(model, x), model, q, 1e-6 * e)
        inner = anc[l][:, None, None] & anc[l][None, :, None] & anc[l][None, None, :]
        assert np.abs(d[inner]).max() <= 1e-7 * scale


def inertial_quantities(model, q):
    """H_𝕀*(i) (5.47) and R_𝕀(k) (5.50) computed independently from the world placements."""
    w = sf.forward_kinematics(model, q)
    m = model.arrays()
    nb = model.nbodies
    X = [phi_matrix(w.Rw[k], w.pw[k]) for k in range(nb)]               # φ(𝕀, k), forces
    s = np.array([np.linalg.inv(X[k]).T @ m.S[i] for k in range(nb)
                  for i in range(m.v0[k], m.v0[k] + m.nvj[k])])
    RI = np.array([X[k] @ m.inertia[k] @ X[k].T for k in range(nb)])
    for k in range(nb - 1, -1, -1):
        if m.parent[k] >= 0:
            RI[m.parent[k]] += RI[k]
    return s, RI


def test_lemma_5_5_composite_body_christoffel_symbols():
    """ℂᵢ(j,k) from 𝒴(a,b,c) = ½H_𝕀(a)[−𝒬[R_𝕀(c)H_𝕀*(c)] + ℍ_𝕀(c)R_𝕀(c) + R_𝕀(c)ℍ_𝕀*(c)]H_𝕀*(b)
    (5.54–5.55) on a serial chain, in the paper's tip-to-base numbering."""
    n = 6
    model = serial_chain(n, seed=3)
    q, _ = random_state(model, seed=1)
    Ch = christoffel_symbols(model, q)
    s, RI = inertial_quantities(model, q)

    def Q(z):
        X = np.zeros((6, 6))
        X[:3, :3] = skew(z[:3])
        X[:3, 3:] = X[3:, :3] = skew(z[3:])
        return X

    def Y(a, b, c):
        a, b, c = n - a, n - b, n - c                  # paper link numbers → ours
        Hc = force_cross_matrix(s[c])
        return 0.5 * s[a] @ (-Q(RI[c] @ s[c]) + Hc @ RI[c] + RI[c] @ Hc.T) @ s[b]

    checked = 0
    for i in range(1, n + 1):
        for j in range(1, n + 1):
            for k in range(1, n + 1):
                c = Ch[n - i, n - j, n - k]
                if j > k > i:
                    expect = -Y(k, j, i)
                elif j >= k == i:
                    expect = 0.0
                    assert abs(Y(i, j, i)) < 1e-14
                elif j > i > k or i > j > k:
                    expect = Y(i, j, k)
                elif j == i > k:
                    expect = Y(i, i, k)
                elif i > k > j:
                    expect = Y(i, k, j)
                else:
                    continue
                assert abs(c - expect) < 1e-13
                checked += 1
    assert checked > n ** 3 / 2


# ---------------------------------------------------------------- Coriolis matrix
def test_coriolis_vector_equals_newton_euler_bias(case):
    _, model, q, qd = case
    bias = sf.bias_forces(model, q, qd) - sf.gravity_forces(model, q)
    C = coriolis_matrix(model, q, qd)
    assert rel(C @ qd, bias) < 1e-12
    quasi = christoffel_symbols(model, q, quasi_velocity=True)
    assert rel(np.einsum("ijk,j,k->i", quasi, qd, qd), bias) < 1e-12
    classical = np.einsum("ijk,j,k->i", christoffel_symbols(model, q), qd, qd)
    if not np.any(structure_constants(model)):                      # 1-dof / commuting joints
        assert rel(classical, bias) < 1e-12                         # C(i) = θ̇*ℂᵢθ̇
        assert rel(C, np.einsum("ijk,k->ij", christoffel_symbols(model, q), qd)) < 1e-12
    else:
        assert rel(classical, bias) > 1e-3                          # needs the structure constants


def test_mdot_minus_2c_is_skew_symmetric(case):
    _, model, q, qd = case
    dM = mass_matrix_derivative(model, q)
    Mdot = np.einsum("kij,k->ij", dM, qd)
    Mdot_fd = central(lambda x: sf.mass_matrix(model, x), model, q, 1e-6 * qd) * np.linalg.norm(qd)
    assert rel(Mdot, Mdot_fd) < 1e-6
    S = Mdot - 2 * coriolis_matrix(model, q, qd)
    assert np.abs(S + S.T).max() <= 1e-12 * np.abs(S).max()


def test_coriolis_is_the_levi_civita_connection(case):
    """C(a,b) = Σ_c Γ_a(c,b) β_c with
    Γ_a(c,b) = ℂ_a(b,c) + ½Σ_e[γ^e_ab 𝓜(e,c) + γ^e_cb 𝓜(e,a) − γ^e_ca 𝓜(e,b)]."""
    _, model, q, qd = case
    g = structure_constants(model)
    M = sf.mass_matrix(model, q)
    Gam = (christoffel_symbols(model, q).transpose(0, 2, 1)
           + 0.5 * (np.einsum("eab,ec->acb", g, M) + np.einsum("ecb,ea->acb", g, M)
                    - np.einsum("eca,eb->acb", g, M)))
    assert rel(coriolis_matrix(model, q, qd), np.einsum("acb,c->ab", Gam, qd)) < 1e-12
    sym = 0.5 * (Gam + Gam.transpose(0, 2, 1))
    assert rel(christoffel_symbols(model, q, quasi_velocity=True), sym) < 1e-12


# ---------------------------------------------------------------- Pinocchio
def pinocchio_cases():
    return {
        "chain": serial_chain(7, seed=1),
        "tree": random_tree(9, seed=3, joint_types=("revolute", "prismatic", "spherical", "fixed")),
        "floating": random_tree(8, seed=4, floating_base=True,
                                joint_types=("revolute", "prismatic", "spherical")),
    }


@pytest.mark.parametrize("name", ["chain", "tree", "floating"])
def test_agreement_with_pinocchio(name):
    pin = pytest.importorskip("pinocchio")
    from soa_fmu.verify.pinocchio_bridge import to_pinocchio
    model = pinocchio_cases()[name]
    pm = to_pinocchio(model)
    pmod, data = pm.pin_model, pm.pin_model.createData()
    q, qd = random_state(model, seed=2)
    qp, vp = pm.q_to_pin(q), pm.v_to_pin(qd)
    C = pm.matrix_from_pin(pin.computeCoriolisMatrix(pmod, data, qp, vp))
    assert rel(coriolis_matrix(model, q, qd), C) < 1e-9
    # ∂𝓜/∂θ column by column: ∂(𝓜e_k)/∂θ = ∂τ/∂θ at q̇ = 0, q̈ = e_k, no gravity
    pmod.gravity.linear[:] = 0.0
    nv = model.nv
    dM = mass_matrix_derivative(model, q)
    for k in range(nv):
        a = np.zeros(nv)
        a[k] = 1.0
        pin.computeRNEADerivatives(pmod, data, qp, np.zeros(nv), pm.v_to_pin(a))
        col = pm.matrix_from_pin(data.dtau_dq)                       # [j, i] = ∂𝓜(j,k)/∂θᵢ
        assert rel(dM[:, :, k], col.T, np.abs(dM).max()) < 1e-9


# ---------------------------------------------------------------- flexible bodies (issue 34)
def flexible_model(name):
    if name == "spacecraft":                        # free base, damped flexible panels, an arm
        return load_model("model_descriptions/examples/spacecraft.toml")
    return random_flexible_tree(np.random.default_rng(int(name[-1])), 7)[0]   # spherical joints


@pytest.fixture(params=["spacecraft", "flexible_tree_1", "flexible_tree_3"], scope="module")
def flex_case(request):
    model = flexible_model(request.param)
    q, qd = random_state(model, seed=8, scale=0.3)
    return request.param, model, q, qd, mass_matrix_derivative(model, q)


def modal_damping_forces(model, qd):
    """D η̇ of every flexible body's modes: part of bias − gravity, not of C (it is dissipative)."""
    out = np.zeros(model.nv)
    for b in model.bodies:
        if b.flexible is not None and b.nmodes:
            i = b.v_index + b.joint.nv
            out[i:i + b.nmodes] = b.flexible.damping @ qd[i:i + b.nmodes]
    return out


def test_flexible_mass_matrix_derivative_matches_finite_differences(flex_case):
    """∂𝓜/∂θᵢ = C(θ, eᵢ) + C(θ, eᵢ)* (the connection is metric) against central differences of
    the flexible mass matrix along the velocity directions, modal coordinates included."""
    _, model, q, _, dM = flex_case
    assert model.max_modes and dM.shape == (model.nv,) * 3
    assert rel(dM, fd_mass_matrix_derivative(model, q)) < 1e-6
    assert np.abs(dM - dM.transpose(0, 2, 1)).max() == 0.0
    i = model.nv - 1                                               # a modal coordinate
    assert np.array_equal(mass_matrix_derivative(model, q, [i, 1]), dM[[i, 1]])


def test_flexible_coriolis_vector_is_the_velocity_product_force(flex_case):
    """C β = bias − gravity − D η̇ to 1e-9 (the issue's bar), Ṁ − 2C skew-symmetric."""
    _, model, q, qd, dM = flex_case
    C = coriolis_matrix(model, q, qd)
    bias = sf.bias_forces(model, q, qd) - sf.gravity_forces(model, q) - modal_damping_forces(model, qd)
    assert rel(C @ qd, bias) < 1e-9
    S = np.einsum("kij,k->ij", dM, qd) - 2 * C
    assert np.abs(S + S.T).max() <= 1e-12 * np.abs(S).max()


def test_flexible_coriolis_is_the_levi_civita_connection(flex_case):
    """C(a,b) = Σ_c Γ_a(c,b) β_c from Koszul's formula with ℂ of the finite-difference ∂𝓜
    (independent of the Newton–Euler bias the kernel polarizes), the structure constants of the
    spherical and free joints and 𝓜; the Christoffel symbols are symmetric and give ∂𝓜 back."""
    _, model, q, qd, dM = flex_case
    fd = fd_mass_matrix_derivative(model, q)
    Ch_fd = 0.5 * (fd.transpose(1, 2, 0) + fd.transpose(1, 0, 2) - fd)
    g, M = structure_constants(model), sf.mass_matrix(model, q)
    assert np.any(g)
    Gam = (Ch_fd.transpose(0, 2, 1)
           + 0.5 * (np.einsum("eab,ec->acb", g, M) + np.einsum("ecb,ea->acb", g, M)
                    - np.einsum("eca,eb->acb", g, M)))
    assert rel(coriolis_matrix(model, q, qd), np.einsum("acb,c->ab", Gam, qd)) < 1e-6
    Ch = christoffel_symbols(model, q)
    assert np.abs(Ch - Ch.transpose(0, 2, 1)).max() <= 1e-14 * np.abs(Ch).max()
    assert rel(Ch.transpose(1, 2, 0) + Ch.transpose(2, 0, 1), dM.transpose(0, 2, 1)) < 1e-12
