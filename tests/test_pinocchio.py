"""Agreement with Pinocchio (independent reference) on random chains and trees, ≤ 1e-9 relative."""
import numpy as np
import pytest

pin = pytest.importorskip("pinocchio")

import soa_fmu as sf
from soa_fmu.verify.builders import random_state, random_tree, serial_chain
from soa_fmu.verify.pinocchio_bridge import to_pinocchio

PIN_JOINTS = ("revolute", "prismatic", "spherical", "fixed")


def rel(a, b):
    return np.abs(a - b).max() / max(1.0, np.abs(b).max())


def sym(A):
    return np.triu(A) + np.triu(A, 1).T


MODELS = {
    "chain7": lambda: serial_chain(7, seed=3),
    "chain40": lambda: serial_chain(40, seed=4),
    "tree20": lambda: random_tree(20, seed=5, joint_types=PIN_JOINTS),
    "floating_tree15": lambda: random_tree(15, seed=6, joint_types=PIN_JOINTS, floating_base=True),
}


@pytest.mark.parametrize("name", MODELS)
def test_against_pinocchio(name):
    model = MODELS[name]()
    pm = to_pinocchio(model)
    data = pm.pin_model.createData()
    for seed in range(3):
        q, qd = random_state(model, seed)
        tau = np.random.default_rng(seed).normal(size=model.nv) * 3
        qp, vp = pm.q_to_pin(q), pm.v_to_pin(qd)
        qdd = sf.forward_dynamics(model, q, qd, tau)
        assert rel(qdd, pm.v_from_pin(pin.aba(pm.pin_model, data, qp, vp, pm.v_to_pin(tau)))) < 1e-9
        assert rel(sf.inverse_dynamics(model, q, qd, qdd),
                   pm.v_from_pin(pin.rnea(pm.pin_model, data, qp, vp, pm.v_to_pin(qdd)))) < 1e-9
        assert rel(sf.mass_matrix(model, q), pm.matrix_from_pin(sym(pin.crba(pm.pin_model, data, qp)))) < 1e-9
        Mi = pm.matrix_from_pin(sym(pin.computeMinverse(pm.pin_model, data, qp)))
        assert rel(sf.mass_matrix_inverse(model, q), Mi) < 1e-9


def test_planar_joint_against_pinocchio():
    model = sf.Model()
    model.add_body("cart", joint=sf.Planar((0, 0, 1)), mass=2.0, com=(0.1, 0.05, 0.0),
                   inertia=np.diag([0.1, 0.2, 0.3]))
    model.add_body("pole", "cart", sf.Revolute((0, 1, 0)), translation=(0.2, 0, 0.1), mass=0.5,
                   com=(0, 0, 0.4), inertia=np.diag([0.02, 0.02, 0.001]))
    model.gravity = (0.3, -0.2, -9.81)
    pm = to_pinocchio(model)
    data = pm.pin_model.createData()
    q, qd = random_state(model, 1)
    tau = np.array([0.1, 0.5, -0.3, 0.2])
    ref = pm.v_from_pin(pin.aba(pm.pin_model, data, pm.q_to_pin(q), pm.v_to_pin(qd), pm.v_to_pin(tau)))
    assert rel(sf.forward_dynamics(model, q, qd, tau), ref) < 1e-9
