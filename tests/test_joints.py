"""Joints (E2): θ̇ = f(θ)β and the joint map H*: the pose derivative equals H*β in the body frame."""
import numpy as np
import pytest

import soa_fmu as sf
from soa_fmu.integrators import configuration_rate, integrate_configuration
from soa_fmu.verify.builders import JOINT_FACTORIES, random_state


def one_joint_model(joint):
    m = sf.Model("one")
    m.add_body("b", joint=joint, mass=1.0, com=(0.1, 0.2, 0.3), inertia=np.eye(3) * 0.01)
    return m


def pose(model, q):
    return sf.frame_pose(model, q, "b")


@pytest.mark.parametrize("kind", ["revolute", "prismatic", "spherical", "free", "planar", "helical",
                                  "cylindrical"])
def test_joint_rate_moves_body_with_velocity_H_beta(kind):
    rng = np.random.default_rng(7)
    model = one_joint_model(JOINT_FACTORIES[kind](rng))
    q, beta = random_state(model, seed=3)
    qdot = configuration_rate(model, q, beta)
    h = 1e-6
    R0, p0 = pose(model, q - h * qdot)
    R1, p1 = pose(model, q + h * qdot)
    R, _ = pose(model, q)
    # body-frame angular velocity from Ṙ = R ω̃, linear velocity of the origin in the body frame
    Rdot = (R1 - R0) / (2 * h)
    W = R.T @ Rdot
    omega = np.array([W[2, 1], W[0, 2], W[1, 0]])
    v = R.T @ (p1 - p0) / (2 * h)
    S = model.bodies[0].joint.motion_subspace()
    np.testing.assert_allclose(np.r_[omega, v], S @ beta, atol=1e-7)


@pytest.mark.parametrize("kind", ["spherical", "free", "planar", "helical"])
def test_exponential_map_agrees_with_rate(kind):
    rng = np.random.default_rng(1)
    model = one_joint_model(JOINT_FACTORIES[kind](rng))
    q, beta = random_state(model, seed=5)
    h = 1e-5
    out = integrate_configuration(model, q, h * beta)
    qdot = configuration_rate(model, q, beta)
    np.testing.assert_allclose((out - q) / h, qdot, atol=1e-4)
    # a constant body-frame velocity for unit time: exp map composes
    out = integrate_configuration(model, q, 0.3 * beta)
    q2 = integrate_configuration(model, out, 0.7 * beta)
    q3 = integrate_configuration(model, q, beta)
    R2, p2 = pose(model, q2)
    R3, p3 = pose(model, q3)
    np.testing.assert_allclose(R2, R3, atol=1e-12)
    np.testing.assert_allclose(p2, p3, atol=1e-12)


def test_general_joint_rejects_non_commuting_columns():
    S = np.zeros((6, 2))
    S[0, 0] = 1.0   # rotation about x
    S[1, 1] = 1.0   # rotation about y: [ωx, ωy] ≠ 0
    with pytest.raises(ValueError, match="do not commute"):
        sf.General(S)


def test_bad_axes_are_rejected():
    with pytest.raises(ValueError, match="non-zero"):
        sf.Revolute((0, 0, 0))
    with pytest.raises(ValueError, match="finite"):
        sf.Prismatic((np.nan, 0, 1))


def test_coordinate_names_and_neutral_configuration():
    m = sf.Model()
    m.add_body("base", joint=sf.Free(), joint_name="root", mass=1, inertia=np.eye(3))
    m.add_body("arm", "base", sf.Revolute((0, 0, 1)), joint_name="shoulder", mass=1,
               inertia=np.eye(3))
    m.add_body("ball", "arm", sf.Spherical(), joint_name="wrist", mass=1, inertia=np.eye(3))
    assert m.nq == 12 and m.nv == 10
    assert m.position_names[:7] == [f"root[{i}]" for i in range(1, 8)]
    assert m.velocity_names == [f"root[{i}]" for i in range(1, 7)] + ["shoulder"] + \
        [f"wrist[{i}]" for i in range(1, 4)]
    np.testing.assert_array_equal(m.neutral_configuration(),
                                  [1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0])
