"""The C core's Model / Data (soa_fmu/core/soa.h, soa_fmu._core): tables, checks, workspaces, and
the pipelines that only the core has (inertial-frame FD, depth-first M⁻¹ columns)."""
import numpy as np
import pytest

import soa_fmu as sf
from soa_fmu import _core
from soa_fmu import joints as J
from soa_fmu.verify.builders import random_state, random_tree, serial_chain
from soa_fmu.verify.operators import build_operators


def rel(a, b):
    return np.abs(a - b).max() / max(1.0, np.abs(b).max())


def test_views_follow_the_table_and_model_constants_are_read_only():
    model = random_tree(6, seed=3)
    a = model.arrays()
    assert a.parent.shape == (6,) and a.S.shape == (model.nv, 6) and a.inertia.shape == (6, 6, 6)
    assert a.Jc.shape == (6, 3, 3) and a.com.shape == (6, 3)
    with pytest.raises(ValueError):
        a.inertia[0, 0, 0] = 1.0                     # immutable once finished
    w = model.workspace()
    assert w.P.shape == (6, 6, 6) and w.blocks.shape == (6, 6, model.nv) and w.eps.shape == (model.nv,)
    # the derived 6×6 inertia is M = [[J − m p̃p̃, m p̃], [−m p̃, m I]] of each body
    for k, b in enumerate(model.bodies):
        np.testing.assert_allclose(a.inertia[k], sf.spatial.spatial_inertia(b.mass, b.com, b.inertia),
                                   atol=1e-15)


def test_data_objects_are_independent_workspaces():
    model = serial_chain(5, seed=2)
    q1, qd1 = random_state(model, 1)
    q2, qd2 = random_state(model, 2)
    d1, d2 = model.create_data(), model.create_data()
    tau = np.ones(model.nv)
    a1 = sf.forward_dynamics(model, q1, qd1, tau, data=d1)
    a2 = sf.forward_dynamics(model, q2, qd2, tau, data=d2)
    w1 = model.workspace(d1)
    sf.forward_dynamics(model, q2, qd2, tau, data=d2)          # must not touch d1
    np.testing.assert_array_equal(sf.forward_dynamics(model, q1, qd1, tau, data=d1), a1)
    assert not np.array_equal(a1, a2)
    assert d1.model is model.core and w1.P is not model.workspace(d2).P


def test_model_changes_rebuild_the_core_and_gravity_reaches_it():
    model = serial_chain(3, seed=0)
    core = model.core
    q, qd = random_state(model, 0)
    g0 = sf.gravity_forces(model, q)
    model.gravity = (0.0, 0.0, -2 * 9.81)
    assert model.core is core                                  # gravity: set in place
    np.testing.assert_allclose(sf.gravity_forces(model, q), 2 * g0, rtol=1e-12)
    model.add_body("extra", "link3", J.Revolute((1, 0, 0)), mass=1.0, inertia=np.eye(3) * 0.1)
    assert model.core is not core and model.core.nb == 4


@pytest.mark.parametrize("seed", range(3))
def test_inertial_and_body_frame_pipelines_agree(seed):
    """soa_aba (inertial frame, seed 004 §5) against Algorithm 2 (body frames) and M q̈ = τ − bias."""
    model = random_tree(14, seed=seed, floating_base=seed == 1)
    q, qd = random_state(model, seed)
    tau = np.random.default_rng(seed).normal(size=model.nv)
    f_ext = {model.bodies[-1].name: np.arange(1.0, 7.0)}
    qdd = sf.forward_dynamics(model, q, qd, tau, f_ext)
    qdd2, _ = sf.forward_dynamics_bias_free(model, q, qd, tau, f_ext)
    assert rel(qdd, qdd2) < 1e-11
    M = sf.mass_matrix(model, q)
    assert rel(M @ qdd, tau - sf.bias_forces(model, q, qd, f_ext)) < 1e-11


@pytest.mark.parametrize("joint", ["revolute", "prismatic"])
def test_joints_about_any_axis_in_every_quadrant(joint):
    """The inertial pipeline's forms for a joint about a non-coordinate axis (model.c jrot: fXr Rj
    split by Rodrigues; the inline sin/cos of spatial.h, quadrants n mod 4 and libm beyond
    2^19 π/2) against Algorithm 2 in body frames (soa_joint_transform, libm) and M q̈ = τ − bias."""
    model = serial_chain(12, joint=joint, seed=5)
    _, qd = random_state(model, 5)
    rng = np.random.default_rng(5)
    q = np.pi / 2 * np.arange(-6, 6) + rng.uniform(-0.3, 0.3, 12)   # every quadrant, both signs
    q[[3, 8]] = [1e6 + 0.4, -3.2e7]                                 # past the inline reduction
    if joint == "prismatic":
        q *= 1e-6
    tau = rng.normal(size=12)
    qdd = sf.forward_dynamics(model, q, qd, tau)
    w = model.workspace()
    fast = {k: getattr(w, k).copy() for k in ("R", "l", "Rj", "tj", "Rw", "pw")}
    sf.forward_kinematics(model, q)                 # soa_joint_transform, body by body
    for k, v in fast.items():
        assert rel(v, getattr(w, k)) < 1e-12, k
    qdd2, _ = sf.forward_dynamics_bias_free(model, q, qd, tau)
    assert rel(qdd, qdd2) < 1e-10
    M = sf.mass_matrix(model, q)
    assert rel(M @ qdd, tau - sf.bias_forces(model, q, qd)) < 1e-10


def test_minv_with_columns_not_in_depth_first_order():
    """A tree numbered breadth first: subtree columns are not contiguous, the core permutes them."""
    model = sf.Model("bfs")
    rng = np.random.default_rng(4)
    for name, parent in [("a", "world"), ("b", "a"), ("c", "a"), ("d", "b"), ("e", "c"), ("f", "b")]:
        model.add_body(name, parent, J.Revolute(rng.normal(size=3)), translation=rng.normal(size=3),
                       mass=1.0 + rng.random(), com=rng.normal(size=3) * 0.1,
                       inertia=np.diag(rng.uniform(0.1, 0.2, 3)))
    model.add_body("g", "d", J.Spherical(), mass=1.0, inertia=np.eye(3) * 0.1)
    assert not np.array_equal(model.arrays().vdfs, np.arange(model.nv))
    q, _ = random_state(model, 1)
    M, Minv = sf.mass_matrix(model, q), sf.mass_matrix_inverse(model, q)
    np.testing.assert_allclose(M @ Minv, np.eye(model.nv), atol=1e-12)
    np.testing.assert_allclose(M, build_operators(model, q).mass_matrix, atol=1e-12)


def test_status_errors_are_value_errors_naming_the_input():
    model = serial_chain(4, seed=1)
    q, qd = random_state(model, 1)
    qd[2] = np.inf
    with pytest.raises(_core.StatusError, match=r"qd\[3\] \(j3\) is not finite") as e:
        sf.forward_dynamics(model, q, qd, np.zeros(4))
    assert isinstance(e.value, ValueError) and e.value.args[1:] == (_core.BAD_QD, 2)
    qd[2], tau = 0.0, np.zeros(4)
    for bad in (np.nan, np.inf):                 # τ is checked before the sweeps (soa_check_inputs)
        tau[1] = bad
        with pytest.raises(_core.StatusError, match=r"tau\[2\] \(j2\) is not finite") as e:
            sf.forward_dynamics(model, q, qd, tau)
        assert e.value.args[1:] == (_core.BAD_TAU, 1)
    with pytest.raises(ValueError, match=r"tau must have shape \(4,\), got \(3,\)"):
        sf.forward_dynamics(model, q, np.zeros(4), np.zeros(3))
    with pytest.raises(ValueError, match="tau must be a vector of 4 numbers"):
        sf.forward_dynamics(model, q, np.zeros(4), "abcd")
    with pytest.raises(TypeError, match="expected a soa_fmu._core.Data"):
        _core.aba(model.core, q, qd, np.zeros(4), False)


def test_finish_refuses_inconsistent_tables():
    names = (("a", "b"), ("ja", "jb"), ("ja", "jb"), ("ja", "jb"))
    cm = _core.Model(2, 2, 2, names)
    v = cm.views()
    v["parent"][:] = [-1, 0]
    v["jtype"][:] = [1, 1]
    v["nqj"][:] = v["nvj"][:] = 1
    v["q0"][:] = v["v0"][:] = [0, 1]
    v["S"][:, 2] = 1.0
    v["mass"][:] = 1.0
    v["Jc"][:] = np.eye(3)
    v["Xr"][:] = v["basis"][:] = np.eye(3)
    v["parent"][1] = 1                                       # its own parent
    with pytest.raises(ValueError, match="body 'b'"):
        cm.finish()
    v["parent"][1] = 0
    v["mass"][0] = -1.0                                     # negative mass
    with pytest.raises(ValueError, match="body 'a'"):
        cm.finish()
    v["mass"][0] = 1.0
    cm.finish()
    d = _core.Data(cm)
    assert _core.aba(d, [0, 0], [0, 0], [0, 0], False).shape == (2,)
    with pytest.raises(ValueError, match="invalid model sizes nb=-1"):
        _core.Model(-1, 0, 0, ((), (), (), ()))


def test_model_readers_and_viewer_load_on_first_use():
    """`import soa_fmu` leaves the model readers (lxml) and the viewer unimported (a sweep's fork
    server and workers import the package and use neither); the names still resolve."""
    import subprocess
    import sys
    code = ("import sys, soa_fmu as sf; before = sorted(m for m in ('soa_fmu.io', 'soa_fmu.view', "
            "'lxml') if m in sys.modules); sf.load_model, sf.ModelWarning, sf.animate; "
            "print(before, 'soa_fmu.io' in sys.modules and 'soa_fmu.view' in sys.modules, "
            "'load_model' in dir(sf))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["[]", "True", "True"]
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        sf.no_such_name
