"""Operational-space inertia by the Ω recursion (SPEC E10): seed 000 (3.10), (A.3)–(A.6); seed 002
eqs. (18)–(20).  Checked against the dense J M⁻¹ J*, the dense operator expression B*ψ*H*D⁻¹HψB, and
a dense M⁻¹ J* f; with flexible bodies (issue 34) against J M⁻¹ J* of the dense flexible M."""
from __future__ import annotations

import numpy as np
import pytest

import soa_fmu as sf
from soa_fmu.operational_space import (correction_accelerations, operational_space_inertia,
                                       operational_space_inertia_inverse)
from soa_fmu.spatial import rpy_to_matrix
from soa_fmu.verify.builders import random_state, random_tree, serial_chain
from soa_fmu.verify.operators import build_operators

TOL = 1e-10


def rel(a, b) -> float:
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-300))


def with_frames(model: sf.Model, bodies, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    names = []
    for i, k in enumerate(bodies):
        name = f"f{i}"
        model.add_frame(name, model.bodies[int(k)].name, rotation=rpy_to_matrix(rng.uniform(-3, 3, 3)),
                        translation=rng.uniform(-0.5, 0.5, 3))
        names.append(name)
    return names


def dense(model, q, frames, reference):
    J = np.vstack([sf.frame_jacobian(model, q, f, reference=reference) for f in frames])
    return J @ np.linalg.solve(sf.mass_matrix(model, q), J.T)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("nframes", [1, 3])
def test_omega_recursion_equals_dense(seed, nframes):
    model = random_tree(14, seed=seed, floating_base=seed % 2 == 1)
    rng = np.random.default_rng(100 + seed)
    frames = with_frames(model, rng.choice(model.nbodies, nframes, replace=False), seed)
    q, _ = random_state(model, seed)
    for reference in ("world", "local"):
        L = operational_space_inertia_inverse(model, q, frames, reference=reference)
        assert L.shape == (6 * nframes, 6 * nframes)
        assert rel(L, dense(model, q, frames, reference)) <= TOL
        assert np.allclose(L, L.T, rtol=0, atol=1e-13 * np.abs(L).max())


@pytest.mark.parametrize("seed", range(4))
def test_omega_recursion_equals_operator_expression(seed):
    """Λ⁻¹ = B* ψ* H* D⁻¹ H ψ B with the dense operators (seed 000 (3.10))."""
    model = random_tree(9, seed=seed)
    rng = np.random.default_rng(seed)
    frames = with_frames(model, rng.choice(model.nbodies, 3, replace=False), seed)
    q, _ = random_state(model, seed)
    ops = build_operators(model, q)
    B = ops.point_map(model, frames)
    expected = B.T @ ops.psi.T @ ops.H.T @ np.linalg.inv(ops.D) @ ops.H @ ops.psi @ B
    assert rel(operational_space_inertia_inverse(model, q, frames, reference="local"), expected) <= TOL
    # Lemma 4 route: B*ψ*H*D⁻¹HψB equals B*φ*H* M⁻¹ H φ B
    J = B.T @ ops.phi.T @ ops.H.T
    assert rel(expected, J @ np.linalg.inv(ops.mass_matrix) @ J.T) <= 1e-9


def test_cross_branch_blocks_use_the_common_ancestor():
    """Frames on two leaves of different branches: the off-diagonal block is Ω(i, j) =
    ψ*(c, i) Υ(c) ψ(c, j) with c their deepest common ancestor, not zero."""
    model = sf.Model("fork")
    Jr = sf.Revolute
    model.add_body("trunk", joint=Jr((0, 0, 1)), mass=2.0, inertia=np.eye(3) * 0.1)
    model.add_body("mid", "trunk", Jr((0, 1, 0)), translation=(0, 0, 0.4), mass=1.0,
                   inertia=np.eye(3) * 0.05)
    for side, y in (("left", 0.2), ("right", -0.2)):
        parent = "mid"
        for k in range(3):
            name = f"{side}{k}"
            model.add_body(name, parent, Jr((1, 0, 0) if k % 2 else (0, 1, 0)), translation=(0, y, 0.3),
                           mass=1.0, com=(0, 0, 0.15), inertia=np.eye(3) * 0.02)
            parent = name
        model.add_frame(f"{side}_tip", parent, translation=(0, 0, 0.3))
    q = np.linspace(0.1, 0.8, model.nq)
    L = operational_space_inertia_inverse(model, q, ["left_tip", "right_tip"])
    D = dense(model, q, ["left_tip", "right_tip"], "world")
    assert rel(L, D) <= TOL
    assert np.abs(L[:6, 6:]).max() > 1e-3 * np.abs(L).max()


def test_separate_roots_and_world_frames_are_uncoupled():
    model = serial_chain(4, seed=1)
    model.add_body("other", joint=sf.Revolute((0, 1, 0)), mass=1.0, inertia=np.eye(3))
    model.add_frame("anchor", sf.WORLD, translation=(1, 0, 0))
    q, _ = random_state(model, 3)
    L = operational_space_inertia_inverse(model, q, ["link4", "other", "anchor"])
    assert np.all(L[:6, 6:12] == 0.0) and np.all(L[12:] == 0.0)
    assert rel(L, dense(model, q, ["link4", "other", "anchor"], "world")) <= TOL


def test_serial_chain_tip_inertia_matches_seed_002():
    """Seed 002 §5.2: Ω(0) = J M⁻¹ J* for a 6-dof chain's tip; Λ = Ω(0)⁻¹ is its inverse."""
    model = serial_chain(6, seed=5)
    model.add_frame("tip", "link6", translation=(0.1, 0.0, 0.05))
    q, _ = random_state(model, 5)
    L = operational_space_inertia(model, q, "tip")
    assert rel(L @ dense(model, q, ["tip"], "world"), np.eye(6)) <= 1e-9


def test_singular_operational_space_inertia_is_reported():
    model = serial_chain(3, seed=2)                # 3 dofs cannot move a 6-D frame freely
    q, _ = random_state(model, 1)
    with pytest.raises(ValueError, match="singular"):
        operational_space_inertia(model, q, "link3")


@pytest.mark.parametrize("seed", range(4))
def test_tip_force_correction_accelerations(seed):
    """Δβ̇ = M⁻¹ J* f by the (A.6) recursion (seed 002 eq. 18 with f = −f(0))."""
    model = random_tree(12, seed=seed, floating_base=seed == 3)
    rng = np.random.default_rng(seed)
    frames = with_frames(model, rng.choice(model.nbodies, 2, replace=False), seed)
    q, _ = random_state(model, seed)
    forces = {f: rng.normal(size=6) for f in frames}
    J = np.vstack([sf.frame_jacobian(model, q, f, reference="local") for f in frames])
    expected = np.linalg.solve(sf.mass_matrix(model, q), J.T @ np.concatenate(list(forces.values())))
    assert rel(correction_accelerations(model, q, forces), expected) <= TOL
    # equivalently: forward dynamics with the forces as f_ext minus without them
    qd = rng.normal(size=model.nv)
    tau = rng.normal(size=model.nv)
    diff = sf.forward_dynamics(model, q, qd, tau, forces) - sf.forward_dynamics(model, q, qd, tau)
    assert rel(correction_accelerations(model, q, forces), diff) <= 1e-9


def test_bad_arguments():
    model = serial_chain(3)
    q = model.neutral_configuration()
    with pytest.raises(ValueError, match="unknown"):
        operational_space_inertia_inverse(model, q, ["nope"])
    with pytest.raises(ValueError, match="reference"):
        operational_space_inertia_inverse(model, q, ["link1"], reference="body")
    with pytest.raises(ValueError):
        operational_space_inertia_inverse(model, np.full(model.nq, np.nan), ["link1"])


# ---------------------------------------------------------------- flexible bodies (issue 34)
@pytest.mark.parametrize("name", ["spacecraft", "tree_1", "tree_3"])
def test_flexible_lambda_inverse_equals_dense(name):
    """Λ⁻¹ = J M⁻¹ J* to 1e-9 (the issue's bar) with M⁻¹ the dense inverse of the flexible M, frames
    on rigid and flexible bodies, on nodes and on world, both references; Λ Λ⁻¹ = I."""
    from soa_fmu.io import load_model
    from soa_fmu.verify.builders import random_flexible_tree
    if name == "spacecraft":
        model = load_model("model_descriptions/examples/spacecraft.toml")
    else:
        model = random_flexible_tree(np.random.default_rng(int(name[-1])), 7)[0]
    flexible = [k for k, b in enumerate(model.bodies) if b.nmodes]
    frames = with_frames(model, [flexible[0], model.nbodies - 1, flexible[-1]], seed=4)
    model.add_frame("anchor", sf.WORLD, translation=(0.1, 0.2, 0.3))
    frames += ["anchor"] + [f for f in model.frames if "tip" in f]   # world; the panels' nodes
    q, _ = random_state(model, seed=5, scale=0.3)
    Minv = np.linalg.inv(sf.mass_matrix(model, q))
    for reference in ("world", "local"):
        J = np.vstack([sf.frame_jacobian(model, q, f, reference=reference) for f in frames])
        Li = operational_space_inertia_inverse(model, q, frames, reference)
        assert rel(Li, J @ Minv @ J.T) <= 1e-9, reference
    L = operational_space_inertia(model, q, frames[1])
    assert np.abs(L @ operational_space_inertia_inverse(model, q, frames[1]) - np.eye(6)).max() <= 1e-9
