"""The C core's closed-chain kernels through soa_fmu._core (operational_space.c, closures.c):
RCCFD1 (steps A–F) against the dense general form (4.9) and a KKT solve, the Ω recursion against
dense J M⁻¹ Jᵀ, the rank handling of step (D) against numpy's pseudo-inverse, and hostile inputs
(NaN, wrong sizes, bad indices, bad constants) giving clean errors."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import soa_fmu as sf
from soa_fmu import _core
from soa_fmu.constraints import (ConstraintError, ConstraintWarning, constraint_bias,
                                 constraint_jacobian, constrained_forward_dynamics)
from soa_fmu.spatial import rpy_to_matrix
from soa_fmu.verify.builders import random_state, random_tree

from model_descriptions import example_path

from closed_chain_models import four_bar, random_closed_tree, two_arms_box

KINDS = ("weld", "ball", "hinge", "soft_finger")


def rel(a, b) -> float:
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-300))


def inputs(model, active=None):
    """(active, u, udot, anchors) for the engine: all on, zero velocities, identity anchors."""
    nc = len(model.constraints)
    on = np.ones(nc, np.intc) if active is None else np.asarray(active, np.intc)
    return on, None, None, None


# ---------------------------------------------------------------- RCCFD1 = general form (4.9)
@pytest.mark.parametrize("seed", range(8))
def test_rccfd1_equals_the_general_form_on_random_closed_chains(seed):
    rng = np.random.default_rng(100 + seed)
    kinds = tuple(rng.choice(KINDS, size=1 + seed % 3))
    model, q, qd = random_closed_tree(14 + 2 * seed, kinds, seed=100 + seed, world=seed % 4 == 1)
    tau = rng.normal(size=model.nv)
    u = {c.name: rng.normal(size=c.size) for c in model.constraints}
    udot = {c.name: rng.normal(size=c.size) for c in model.constraints}
    stab = (2.0, 3.0)
    rec = constrained_forward_dynamics(model, q, qd, tau, u=u, udot=udot, stabilization=stab)
    gen = constrained_forward_dynamics(model, q, qd, tau, u=u, udot=udot, stabilization=stab,
                                       method="general")
    assert rel(rec.qdd, gen.qdd) <= 1e-10
    F = np.concatenate([rec.forces[c.name] for c in model.constraints])
    Fg = np.concatenate([gen.forces[c.name] for c in model.constraints])
    assert rel(F, Fg) <= 1e-10
    assert rel(rec.lambda_matrix, gen.lambda_matrix) <= 1e-10
    # the C entry point itself: the same numbers, forces and residuals per constraint (nc x 6)
    active, *_ = inputs(model)
    urows = np.zeros((len(model.constraints), 6))
    for j, c in enumerate(model.constraints):
        urows[j, :c.size] = u[c.name]
    ud = np.zeros_like(urows)
    for j, c in enumerate(model.constraints):
        ud[j, :c.size] = udot[c.name]
    qdd, forces, resid, warning = _core.constrained_fd(model.data, q, qd, tau, False, active,
                                                       urows.ravel(), ud.ravel(), None, *stab)
    assert warning is None
    np.testing.assert_array_equal(qdd, rec.qdd)
    for j, c in enumerate(model.constraints):
        np.testing.assert_array_equal(forces[j, :c.size], rec.forces[c.name])
        assert np.all(forces[j, c.size:] == 0.0) and resid[j] == rec.residuals[c.name]


def test_two_arms_box_model_file_recursive_equals_general_with_tau_on_the_box():
    """The model file's two arms and box, a generalized force on the box's free joint too (it enters
    the object's own Newton–Euler equation in (4.9a))."""
    model = sf.load_model(example_path("two_arms_box"))
    q = model.initial_q
    rng = np.random.default_rng(1)
    qd = sf.project_velocities(model, q, rng.normal(scale=0.3, size=model.nv))
    tau = rng.normal(size=model.nv)
    rec = constrained_forward_dynamics(model, q, qd, tau, stabilization=(20.0, 20.0))
    gen = constrained_forward_dynamics(model, q, qd, tau, stabilization=(20.0, 20.0), method="general")
    assert rel(rec.qdd, gen.qdd) <= 1e-10
    for c in model.constraints:
        assert rel(rec.forces[c.name], gen.forces[c.name]) <= 1e-10


def test_two_arms_grasp_accelerations_satisfy_the_constraints():
    """Seed 003 Part II: A J β̇ + γ = Ũ̇ − 2α(A J β − Ũ) − β²e at every row (box as a free branch)."""
    model, q0 = two_arms_box()
    rng = np.random.default_rng(9)
    qd = rng.normal(scale=0.2, size=model.nv)
    tau = rng.normal(size=model.nv)
    res = constrained_forward_dynamics(model, q0, qd, tau, stabilization=(4.0, 6.0))
    G, gamma = constraint_jacobian(model, q0), constraint_bias(model, q0, qd)
    lhs = G @ res.qdd + gamma
    assert np.abs(lhs + 2 * 4.0 * (G @ qd)).max() <= 1e-10 * max(1.0, np.abs(gamma).max())


# ---------------------------------------------------------------- Λ⁻¹ by the Ω recursion
def frames_model(seed: int, n_frames: int, floating: bool):
    model = random_tree(16, seed=seed, floating_base=floating)
    rng = np.random.default_rng(seed)
    names = []
    bodies = list(rng.integers(0, model.nbodies, size=n_frames))
    bodies[-1] = bodies[0]                              # two frames on one body
    for i, k in enumerate(bodies):
        names.append(f"p{i}")
        model.add_frame(names[-1], model.bodies[int(k)].name,
                        rotation=rpy_to_matrix(rng.uniform(-3, 3, 3)), translation=rng.uniform(-.4, .4, 3))
    model.add_frame("fixed_in_world", sf.WORLD, translation=(1.0, 0.0, 0.0))
    return model, names + ["fixed_in_world"]


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("world_axes", [True, False])
def test_point_inertia_inverse_against_dense_and_its_inverse(seed, world_axes):
    model, frames = frames_model(seed, 4, floating=seed % 2 == 1)
    q, _ = random_state(model, seed)
    placements = [model.frame_placement(f) for f in frames]
    bodies = np.array([p[0] for p in placements], np.intc)
    R = np.array([p[1] for p in placements])
    pos = np.array([p[2] for p in placements])
    L = _core.operational_space_inverse(model.data, q, bodies, R.ravel(), pos.ravel(), world_axes)
    ref = "world" if world_axes else "local"
    J = np.vstack([sf.frame_jacobian(model, q, f, reference=ref) for f in frames])
    M = sf.mass_matrix(model, q)
    dense = J @ np.linalg.solve(M, J.T)
    assert rel(L, dense) <= 1e-12
    assert np.array_equal(L, L.T)
    # Λ = (J M⁻¹ Jᵀ)⁻¹ of one frame (6 × 6 block, full rank for a deep enough body): Λ⁻¹ Λ = I
    for s in range(len(frames) - 1):
        B = L[6 * s:6 * s + 6, 6 * s:6 * s + 6]
        if np.linalg.matrix_rank(J[6 * s:6 * s + 6]) == 6:
            Lam = np.linalg.inv(dense[6 * s:6 * s + 6, 6 * s:6 * s + 6])
            assert np.abs(B @ Lam - np.eye(6)).max() <= 1e-9
    assert np.all(L[-6:] == 0.0) and np.all(L[:, -6:] == 0.0)      # the world frame


def test_correction_sweep_against_dense_minv_jt():
    model = random_tree(12, seed=4, floating_base=True)
    q, _ = random_state(model, 4)
    rng = np.random.default_rng(4)
    w = model.workspace()
    w.fext[:] = rng.normal(size=w.fext.shape)
    dq = _core.correction_accelerations(model.data, q)
    # dense: Σ_k J_kᵀ f_k with f_k at body k's origin in body axes
    Jt_f = np.zeros(model.nv)
    for k, b in enumerate(model.bodies):
        Jt_f += sf.frame_jacobian(model, q, b.name, reference="local").T @ w.fext[k]
    assert rel(dq, np.linalg.solve(sf.mass_matrix(model, q), Jt_f)) <= 1e-11


# ---------------------------------------------------------------- rank handling of step (D)
def test_redundant_rows_give_the_minimum_norm_forces_of_the_scaled_system():
    model, q, qd = random_closed_tree(12, ("weld",), seed=0)
    c = model.constraints[0]
    model.add_constraint("twin", "ball", c.frame_a, c.frame_b)
    active, *_ = inputs(model)
    tau = np.zeros(model.nv)
    qdd, F, resid, warning = _core.constrained_fd(model.data, q, qd, tau, False, active, None, None,
                                                  None, 0.0, 0.0)
    msg, names = warning
    assert names == (c.name, "twin") and "rank 6 of 9 active rows" in msg and "redundant" in msg
    w = model.workspace()
    assert list(w.cl_info) == [6, 9, 1] and list(w.cl_involved) == [1, 1]
    S, rhs = w.cl_S[:9, :9], w.cl_rhs_dyn[:9] + w.cl_rhs_stab[:9]
    ds = 1.0 / np.sqrt(np.diag(S))
    f_ref = ds * (np.linalg.pinv(ds[:, None] * S * ds[None, :], rcond=1e-9, hermitian=True) @ (ds * rhs))
    assert rel(w.cl_f[:9], f_ref) <= 1e-10
    # the accelerations equal those with the weld alone
    single = constrained_forward_dynamics(model, q, qd, tau, active={"twin": False})
    assert rel(qdd, single.qdd) <= 1e-9


def test_inconsistent_rows_raise_with_the_constraints_and_rank():
    model = sf.Model("pinned_arm")
    for k, parent in enumerate((sf.WORLD, "l1")):
        model.add_body(f"l{k + 1}", parent, sf.Revolute((0, 1, 0)), translation=(0.5 * k, 0, 0),
                       mass=1.0, com=(0.25, 0, 0), inertia=np.diag([1e-4, 0.02, 0.02]))
    model.add_frame("tip", "l2", translation=(0.5, 0, 0))
    model.add_frame("pin", sf.WORLD, translation=(np.cos(0.5), 0, -np.sin(0.5)))
    model.add_constraint("pin_tip", "ball", "pin", "tip")
    q, qd = np.array([0.5, 0.0]), np.array([1.0, -0.5])
    with pytest.raises(_core.StatusError) as e:
        _core.constrained_fd(model.data, q, qd, np.zeros(2), False, *inputs(model), 0.0, 0.0)
    assert e.value.args[1:] == (_core.CONSTRAINT_SINGULAR, 0)
    assert e.value.args[0].startswith("constrained forward dynamics: the constraints ['pin_tip'] "
                                      "are singular at this configuration")
    assert "(rank 1 of 3 active rows)" in e.value.args[0]
    radial = {"pin_tip": [np.cos(0.5), 0.0, -np.sin(0.5)]}       # a velocity no joint can give
    with pytest.raises(ConstraintError, match=r"velocity projection: the constraints \['pin_tip'\]"):
        sf.project_velocities(model, q, np.array([0.0, 1.0]), u=radial)
    # at rest the free acceleration is tangential: consistent, redundant — a warning, finite forces
    with pytest.warns(ConstraintWarning, match=r"\['pin_tip'\] are redundant \(rank 1 of 3"):
        res = constrained_forward_dynamics(model, q, np.zeros(2), np.zeros(2))
    assert np.all(np.isfinite(res.qdd)) and np.all(np.isfinite(res.forces["pin_tip"]))


def test_planar_loop_zero_rows_are_silent():
    model, q0 = four_bar("ball")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        qdd, F, _, warning = _core.constrained_fd(model.data, q0, np.array([1.0, -0.5, 0.2]),
                                                  np.zeros(3), False, *inputs(model), 0.0, 0.0)
    assert warning is None and F[0, 1] == 0.0 and np.all(np.isfinite(qdd))
    assert model.workspace().cl_ds[1] == 0.0


# ---------------------------------------------------------------- velocity projection, anchors
def test_projection_is_the_kinetic_energy_nearest_admissible_velocity():
    model, q0 = two_arms_box()
    rng = np.random.default_rng(2)
    qd = rng.normal(size=model.nv)
    u = np.zeros((2, 6))
    u[0] = rng.normal(size=6)
    out, warning = _core.project_velocities(model.data, q0, qd, np.ones(2, np.intc), u.ravel())
    G = constraint_jacobian(model, q0)
    M = sf.mass_matrix(model, q0)
    K = np.block([[M, G.T], [G, np.zeros((12, 12))]])
    ref = np.linalg.solve(K, np.r_[M @ qd, u.ravel()])[:model.nv]
    assert warning is None and rel(out, ref) <= 1e-10


def test_relative_pose_and_advance_anchor():
    model, q0 = two_arms_box()
    T = _core.relative_pose(model.data, q0, 0)
    assert np.abs(T - np.eye(4)).max() <= 1e-12                      # grasp frames coincide at q0
    u = np.array([0.0, 0.0, 2.0, 0.1, -0.2, 0.3])
    T1 = _core.advance_anchor(model.core, 0, np.eye(4).ravel(), u, 0.5)
    assert np.allclose(T1[:3, 3], 0.5 * u[3:]) and np.allclose(T1[3], [0, 0, 0, 1])
    assert np.allclose(T1[:3, :3], [[np.cos(1), -np.sin(1), 0], [np.sin(1), np.cos(1), 0], [0, 0, 1]])


# ---------------------------------------------------------------- hostile inputs
def test_hostile_inputs_give_clean_errors():
    model, q0 = four_bar()
    d, z, on = model.data, np.zeros(3), np.ones(1, np.intc)
    fd = _core.constrained_fd

    def status(call):
        with pytest.raises(_core.StatusError) as e:
            call()
        return e.value.args

    assert status(lambda: fd(d, np.full(3, np.nan), z, z, False, on, None, None, None, 0, 0))[1:] \
        == (_core.BAD_Q, 0)
    assert status(lambda: fd(d, q0, z, [0, np.inf, 0], False, on, None, None, None, 0, 0))[1:] \
        == (_core.BAD_TAU, 1)
    u = np.zeros(6)
    u[2] = np.nan
    msg, kind, idx = status(lambda: fd(d, q0, z, z, False, on, u, None, None, 0, 0))
    assert (kind, idx) == (_core.BAD_U, 0) and msg == "u['closure_D'] is not finite"
    assert status(lambda: fd(d, q0, z, z, False, on, None, u, None, 0, 0))[1] == _core.BAD_UDOT
    T = np.eye(4).ravel()
    T[3] = np.nan
    msg, kind, _ = status(lambda: fd(d, q0, z, z, False, on, None, None, T, 0, 0))
    assert kind == _core.BAD_ANCHOR and msg == "anchors['closure_D'] must be a finite 4×4 pose"
    assert status(lambda: fd(d, q0, z, z, False, on, None, None, None, -1.0, 0))[1] == _core.BAD_GAINS
    assert status(lambda: fd(d, q0, z, z, False, on, None, None, None, np.nan, 0))[1] == _core.BAD_GAINS
    # wrong sizes
    with pytest.raises(ValueError, match=r"u must have shape \(6,\)"):
        fd(d, q0, z, z, False, on, np.zeros(5), None, None, 0, 0)
    with pytest.raises(ValueError, match=r"active must have shape \(1,\)"):
        fd(d, q0, z, z, False, np.ones(2, np.intc), None, None, None, 0, 0)
    with pytest.raises(ValueError, match=r"anchors must have shape \(16,\)"):
        fd(d, q0, z, z, False, on, None, None, np.eye(4), 0, 0)
    with pytest.raises(TypeError):
        fd(d, q0, z, z, False, on, None, None, None, "fast", 0)
    with pytest.raises(TypeError, match="takes 11 or 12 arguments"):
        fd(d, q0, z, z)
    for method in (0, 4):
        msg, kind, idx = status(lambda: fd(d, q0, z, z, False, on, None, None, None, 0, 0, method))
        assert (kind, idx) == (_core.BAD_ARG, 3) and "method must be RCCFD1, 2 or 3" in msg
    # point sets: a body index out of range, a non-finite placement
    R, zero3 = np.eye(3).ravel(), np.zeros(3)
    for body, l in ((7, zero3), (-2, zero3), (1, np.array([0.0, np.nan, 0.0]))):
        msg, kind, idx = status(lambda: _core.operational_space_inverse(
            d, q0, np.array([0, body], np.intc), np.r_[R, R], np.r_[zero3, l], True))
        assert (kind, idx) == (_core.BAD_FRAME, 1) and "frames[1]" in msg
    with pytest.raises(ValueError, match=r"R must have shape \(18,\)"):
        _core.operational_space_inverse(d, q0, np.array([0, 1], np.intc), R, np.zeros(6), True)
    # constraint indices
    assert status(lambda: _core.relative_pose(d, q0, 3))[1] == _core.BAD_ARG
    with pytest.raises(IndexError):
        _core.advance_anchor(model.core, 1, np.eye(4).ravel(), np.zeros(3), 0.1)
    assert status(lambda: _core.advance_anchor(model.core, 0, np.eye(4).ravel(), [0, np.nan, 0],
                                               0.1))[1] == _core.BAD_U
    with pytest.raises(ValueError, match="unknown constraint kind"):
        _core.constraint_rows(4, np.ones(3))
    with pytest.raises(ValueError, match="non-zero"):
        _core.constraint_rows(2, np.zeros(3))
    # the model still works afterwards
    res = constrained_forward_dynamics(model, q0, z, z)
    assert np.all(np.isfinite(res.qdd))


def test_finish_refuses_bad_constraint_constants():
    names = (("a", "b"), ("ja", "jb"), ("ja", "jb"), ("ja", "jb"), ("loop",))

    def tables():
        cm = _core.Model(2, 2, 2, names, 1)
        v = cm.views()
        v["parent"][:] = [-1, 0]
        v["jtype"][:] = [1, 1]
        v["nqj"][:] = v["nvj"][:] = 1
        v["q0"][:] = v["v0"][:] = [0, 1]
        v["S"][:, 2] = 1.0
        v["mass"][:] = 1.0
        v["Jc"][:] = np.eye(3)
        v["Xr"][:] = v["basis"][:] = np.eye(3)
        v["cn_kind"][0], v["cn_size"][0] = 1, 3
        v["cn_body_a"][0], v["cn_body_b"][0] = -1, 1
        v["cn_Ra"][0] = v["cn_Rb"][0] = np.eye(3)
        v["cn_axis"][0] = (0, 0, 1)
        return cm, v

    for name, value in (("cn_kind", 7), ("cn_size", 6), ("cn_body_b", 2), ("cn_axis", np.nan),
                        ("cn_axis", 0.0), ("cn_pa", np.inf)):
        cm, v = tables()
        v[name][0] = value
        with pytest.raises(ValueError, match="constraint 'loop'") as e:
            cm.finish()
        assert e.value.args[1:] == (_core.BAD_CONSTRAINT, 0)
    cm, v = tables()
    cm.finish()
    assert np.array_equal(cm.views()["cn_A"][0, :3], np.c_[np.zeros((3, 3)), np.eye(3)])
    with pytest.raises(ValueError, match="needs their names"):
        _core.Model(2, 2, 2, names[:4], 1)
    with pytest.raises(ValueError, match="invalid model sizes"):
        _core.Model(2, 2, 2, names, -1)
