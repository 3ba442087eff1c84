"""Spatial algebra (E1): the C core's helpers (core/spatial.h) against their dense 6×6 definitions,
and algebraic laws."""
import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from soa_fmu.spatial import phi_matrix, rpy_to_matrix, skew, spatial_helpers, spatial_inertia

C = spatial_helpers()

rng = np.random.default_rng(42)


def crm(V):
    """Dense motion cross-product matrix [[ω̃, 0], [ṽ, ω̃]]."""
    X = np.zeros((6, 6))
    X[:3, :3] = skew(V[:3])
    X[3:, 3:] = skew(V[:3])
    X[3:, :3] = skew(V[3:])
    return X


@pytest.mark.parametrize("seed", range(5))
def test_phi_helpers_match_dense_operator(seed):
    R = Rotation.random(random_state=seed).as_matrix()
    l = rng.normal(size=3)
    X = phi_matrix(R, l)
    f, V = rng.normal(size=6), rng.normal(size=6)
    np.testing.assert_allclose(C.apply_phi(R, l, f), X @ f, atol=1e-14)
    np.testing.assert_allclose(C.apply_phi_star(R, l, V), X.T @ V, atol=1e-14)
    A = rng.normal(size=(6, 6))
    P = A @ A.T
    acc = C.add_phi_inertia(R, l, P, np.eye(6))
    np.testing.assert_allclose(acc - np.eye(6), X @ P @ X.T, atol=1e-13)


def test_phi_is_the_rigid_body_force_shift():
    """φ(l) = [[I, l̃], [0, I]]: a force F at y gives moment l × F about x (seed 000 §2)."""
    l = np.array([0.0, 0.0, 2.0])
    F = np.array([1.0, 0.0, 0.0])
    np.testing.assert_allclose(C.apply_phi(np.eye(3), l, np.r_[0, 0, 0, F]), [0, 2, 0, 1, 0, 0])


def test_cross_products():
    V, x, f = rng.normal(size=6), rng.normal(size=6), rng.normal(size=6)
    np.testing.assert_allclose(C.cross_motion(V, x), crm(V) @ x, atol=1e-14)
    np.testing.assert_allclose(C.cross_force(V, f), -crm(V).T @ f, atol=1e-14)   # ×̄* = −(×̃)*
    np.testing.assert_allclose(C.cross_motion(V, V), 0, atol=1e-14)


def test_spatial_inertia_parallel_axis_and_kinetic_energy():
    m, c = 2.5, np.array([0.1, -0.2, 0.3])
    Jc = np.diag([0.1, 0.2, 0.25])
    M = spatial_inertia(m, c, Jc)
    assert np.allclose(M, M.T) and np.linalg.eigvalsh(M).min() > 0
    np.testing.assert_allclose(M[:3, :3], Jc + m * (c @ c * np.eye(3) - np.outer(c, c)), atol=1e-14)
    # ½ Vᵀ M V = ½ m |v_c|² + ½ ωᵀ J_C ω with v_c = v + ω × c
    V = rng.normal(size=6)
    vc = V[3:] + np.cross(V[:3], c)
    assert 0.5 * V @ M @ V == pytest.approx(0.5 * m * vc @ vc + 0.5 * V[:3] @ Jc @ V[:3], rel=1e-13)


def test_rotations():
    rpy = rng.uniform(-np.pi, np.pi, 3)
    np.testing.assert_allclose(rpy_to_matrix(rpy), Rotation.from_euler("xyz", rpy).as_matrix(), atol=1e-14)
    qx, qy, qz, qw = Rotation.from_euler("xyz", rpy).as_quat()
    np.testing.assert_allclose(C.quat_to_matrix(qw, qx, qy, qz), rpy_to_matrix(rpy), atol=1e-14)
