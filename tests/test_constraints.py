"""Closed chains (SPEC E11–E13): loop closures and grasps, constrained forward dynamics by steps
(A)–(F) of seed 000 §3 / RCCFD1 of seed 003, against a dense KKT solve, the general algorithm (4.9),
finite differences, and physics (residuals, energy) in simulation; with flexible links in the loops
and in the grasping arms (issue 34)."""
from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np
import pytest

import soa_fmu as sf
from model_descriptions import example_path
from soa_fmu.constraints import (ConstraintError, ConstraintWarning, advance_anchor, constraint_bias,
                                 constraint_errors, constraint_jacobian, constraint_residuals,
                                 constraint_velocities, constrained_forward_dynamics,
                                 project_velocities, relative_pose)
from soa_fmu.integrators import IntegrationError, integrate_configuration
from soa_fmu.io import load_model

from closed_chain_models import (flexible_closed_tree, four_bar, random_closed_tree, slider_crank,
                                 two_arms_box)

KINDS = ("weld", "ball", "hinge", "soft_finger")


def rel(a, b) -> float:
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-300))


def stacked_forces(model, res):
    return np.concatenate([res.forces[c.name] for c in model.constraints if res.rows.get(c.name)])


def kkt(model, q, qd, tau, stabilization=(0.0, 0.0), f_ext=None, u=None, anchors=None, udot=None):
    """Dense reference: [[M, −Gᵀ], [G, 0]] [β̇; λ] = [τ − C; −γ + Ũ̇ − 2α(Gβ − Ũ) − β²e]."""
    M = sf.mass_matrix(model, q)
    C = sf.bias_forces(model, q, qd, f_ext)
    G = constraint_jacobian(model, q)
    gamma = constraint_bias(model, q, qd)
    e = constraint_errors(model, q, anchors=anchors)
    def rows(d):
        return np.concatenate([np.asarray((d or {}).get(c.name, np.zeros(c.size)), float)
                               for c in model.constraints if c.active])
    urows = rows(u)
    a, b = stabilization
    n, nv = G.shape
    assert np.linalg.matrix_rank(G) == n, "test configuration must have full-rank constraints"
    K = np.block([[M, -G.T], [G, np.zeros((n, n))]])
    rhs = np.r_[tau - C, -gamma + rows(udot) - 2 * a * (G @ qd - urows) - b * b * e]
    sol = np.linalg.solve(K, rhs)
    return sol[:nv], sol[nv:]


# ---------------------------------------------------------------- agreement with dense KKT
CASES = [(("weld",), 14, s) for s in range(3)] + [(("ball",), 10, s) for s in range(3)] + \
        [(("hinge",), 12, s) for s in range(3)] + [(("soft_finger",), 12, s) for s in range(3)] + \
        [(("weld", "ball"), 16, 0), (("hinge", "soft_finger"), 18, 1), (KINDS, 24, 5), (KINDS, 30, 6)]


@pytest.mark.parametrize("kinds,n,seed", CASES)
def test_recursive_and_general_forms_equal_dense_kkt(kinds, n, seed):
    model, q, qd = random_closed_tree(n, kinds, seed=seed)
    rng = np.random.default_rng(seed)
    tau = rng.normal(size=model.nv)
    for stab in ((0.0, 0.0), (3.0, 7.0)):
        qdd_ref, lam_ref = kkt(model, q, qd, tau, stab)
        for method in ("recursive", "rccfd2", "rccfd3", "general"):
            res = constrained_forward_dynamics(model, q, qd, tau, stabilization=stab, method=method)
            assert rel(res.qdd, qdd_ref) <= 1e-9, (method, stab)
            assert rel(stacked_forces(model, res), lam_ref) <= 1e-9, (method, stab)


def test_world_anchor_external_force_and_prescribed_velocity():
    """A constraint to a world frame, f_ext on a body, a prescribed constraint velocity Ũ and its
    derivative, and a re-anchored target pose all enter the KKT right-hand side."""
    model, q, qd = random_closed_tree(12, ("weld",), seed=7, world=True)
    name = model.constraints[0].name
    rng = np.random.default_rng(7)
    tau = rng.normal(size=model.nv)
    f_ext = {model.bodies[3].name: rng.normal(size=6)}
    u = {name: rng.normal(size=6)}
    udot = {name: rng.normal(size=6)}
    anchors = {name: relative_pose(model, q, name) @ np.array(
        [[1, 0, 0, 0.01], [0, 0, -1, 0], [0, 1, 0, 0], [0, 0, 0, 1]])}
    stab = (2.0, 5.0)
    res = constrained_forward_dynamics(model, q, qd, tau, f_ext, u=u, udot=udot, stabilization=stab,
                                       anchors=anchors)
    qdd_ref, lam_ref = kkt(model, q, qd, tau, stab, f_ext, u, anchors, udot)
    assert rel(res.qdd, qdd_ref) <= 1e-9 and rel(res.forces[name], lam_ref) <= 1e-9
    general = constrained_forward_dynamics(model, q, qd, tau, f_ext, u=u, udot=udot,
                                           stabilization=stab, anchors=anchors, method="general")
    assert rel(general.qdd, res.qdd) <= 1e-9
    assert rel(general.forces[name], res.forces[name]) <= 1e-9


def every_method_agrees(model, q0, qd, tau):
    """RCCFD1 and the general form (4.9) against the dense KKT solve (1e-9), RCCFD2 and RCCFD3
    against RCCFD1 (1e-10), Baumgarte gains (5, 5); returns RCCFD1's and (4.9)'s results and the
    KKT forces."""
    rec = constrained_forward_dynamics(model, q0, qd, tau, stabilization=(5.0, 5.0))
    gen = constrained_forward_dynamics(model, q0, qd, tau, stabilization=(5.0, 5.0), method="general")
    qdd_ref, lam_ref = kkt(model, q0, qd, tau, (5.0, 5.0))
    assert rel(rec.qdd, qdd_ref) <= 1e-9 and rel(gen.qdd, rec.qdd) <= 1e-9
    for method in ("rccfd2", "rccfd3"):                 # seed 003's other two
        res = constrained_forward_dynamics(model, q0, qd, tau, stabilization=(5.0, 5.0), method=method)
        assert rel(res.qdd, rec.qdd) <= 1e-10 and rel(stacked_forces(model, res),
                                                       stacked_forces(model, rec)) <= 1e-10
    assert rel(stacked_forces(model, rec), lam_ref) <= 1e-9
    return rec, gen, lam_ref


def test_two_arms_holding_a_box_recursive_equals_general_form():
    """Seed 003 Part II: the box is the secondary system — the general algorithm (4.9) treats it by
    its own Newton–Euler equation at C, RCCFD1 as a free branch of the tree (Υ = M(C)⁻¹)."""
    model, q0 = two_arms_box()
    rng = np.random.default_rng(3)
    qd = rng.normal(scale=0.3, size=model.nv)
    qd = project_velocities(model, q0, qd)
    tau = rng.normal(scale=5.0, size=model.nv)
    tau[-6:] = 0.0
    rec, gen, lam_ref = every_method_agrees(model, q0, qd, tau)
    assert rel(stacked_forces(model, gen), lam_ref) <= 1e-9
    assert rec.lambda_matrix.shape == (12, 12)
    # the constraints hold at acceleration level: G β̇ + γ = 0
    G, gamma = constraint_jacobian(model, q0), constraint_bias(model, q0, qd)
    assert np.abs(G @ rec.qdd + gamma).max() <= 1e-9 * np.abs(gamma).max() + 1e-9


def test_rccfd2_and_rccfd3_equal_rccfd1_and_the_general_form_on_the_two_arm_grasp():
    """Seed 003 Part II: RCCFD2 (6.12–6.18) and RCCFD3 (6.19–6.22) regroup the same solution (3.6)
    as RCCFD1 (6.11) — equal to round-off (≤ 1e-10 relative) at random states of the two-arm grasp
    (off the constraint manifold, so the stabilization terms of a'(C) matter, with f_ext, Ũ and
    Ũ̇), and to the general algorithm (4.9) by dense building blocks."""
    model = sf.load_model(example_path("two_arms_box"))
    rng = np.random.default_rng(34)
    for _ in range(4):
        q = integrate_configuration(model, model.initial_q, rng.normal(scale=0.02, size=model.nv))
        qd = rng.normal(scale=0.5, size=model.nv)
        tau = rng.normal(scale=5.0, size=model.nv)
        f_ext = {"box": rng.normal(size=6), model.bodies[4].name: rng.normal(size=6)}
        u = {"grasp_left": rng.normal(scale=0.1, size=6)}
        udot = {"grasp_right": rng.normal(scale=0.1, size=6)}
        ref = constrained_forward_dynamics(model, q, qd, tau, f_ext, u=u, udot=udot,
                                           stabilization=(3.0, 4.0), method="rccfd1")
        assert np.abs(ref.qdd).max() > 1.0
        for method in ("rccfd2", "rccfd3", "general"):
            res = constrained_forward_dynamics(model, q, qd, tau, f_ext, u=u, udot=udot,
                                               stabilization=(3.0, 4.0), method=method)
            assert rel(res.qdd, ref.qdd) <= 1e-10, method
            assert rel(stacked_forces(model, res), stacked_forces(model, ref)) <= 1e-10, method
            assert res.residuals == pytest.approx(ref.residuals, rel=1e-12)


@pytest.mark.parametrize("method", ["rccfd2", "rccfd3"])
def test_rccfd2_and_rccfd3_redundant_and_singular_rows_as_rccfd1(method):
    """The dependent-rows path of step (D) (the eigen-decomposition) serves every right-hand side
    RCCFD3 splits the forces into: minimum-norm forces, one warning, and the same error at a
    singular configuration."""
    model, q, qd = random_closed_tree(12, ("weld",), seed=0)
    c = model.constraints[0]
    model.add_constraint("twin", "ball", c.frame_a, c.frame_b)
    tau = np.random.default_rng(1).normal(size=model.nv)
    with pytest.warns(ConstraintWarning, match="redundant"):
        res = constrained_forward_dynamics(model, q, qd, tau, stabilization=(2.0, 2.0), method=method)
    assert list(model.workspace().cl_eigen) == [1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConstraintWarning)     # (one warning per set: given above)
        ref = constrained_forward_dynamics(model, q, qd, tau, stabilization=(2.0, 2.0))
    assert rel(res.qdd, ref.qdd) <= 1e-9 and rel(res.forces["twin"], ref.forces["twin"]) <= 1e-8
    pinned, q = planar_arm_with_tip_pinned(0.5)
    with pytest.raises(ConstraintError, match="pin_tip"):
        constrained_forward_dynamics(pinned, q, np.array([1.0, -0.5]), np.zeros(2), method=method)


def test_unknown_method_is_refused():
    model, q0 = four_bar()
    with pytest.raises(ValueError, match="'rccfd2', 'rccfd3' or 'general', got 'rccfd4'"):
        constrained_forward_dynamics(model, q0, np.zeros(3), np.zeros(3), method="rccfd4")


# ---------------------------------------------------------------- kinematics of the rows
@pytest.mark.parametrize("kind", KINDS)
def test_bias_and_errors_against_finite_differences(kind):
    """γ = d/dt (G(θ(t)) β) along θ(t) = θ ⊕ tβ, and d/dt e = G β at a satisfied constraint."""
    model, q, qd = random_closed_tree(12, (kind,), seed=11)
    h = 1e-5

    def moved(t):
        return integrate_configuration(model, q, t * qd)

    G = constraint_jacobian(model, q)
    fd = (constraint_jacobian(model, moved(h)) @ qd - constraint_jacobian(model, moved(-h)) @ qd) / (2 * h)
    assert rel(constraint_bias(model, q, qd), fd) <= 1e-6
    assert rel(constraint_velocities(model, q, qd), G @ qd) <= 1e-12
    anchors = {c.name: relative_pose(model, q, c.name) for c in model.constraints}
    assert np.abs(constraint_errors(model, q, anchors=anchors)).max() <= 1e-12
    de = (constraint_errors(model, moved(h), anchors=anchors)
          - constraint_errors(model, moved(-h), anchors=anchors)) / (2 * h)
    holonomic = np.ones(G.shape[0], bool)
    if kind == "soft_finger":
        holonomic[0] = False                       # the torsion row has no position error
        assert np.all(de[0] == 0.0)
    assert rel(de[holonomic], (G @ qd)[holonomic]) <= 1e-6


def test_model_examples_close_their_loops():
    for build, name in ((four_bar, "closure_D"), (slider_crank, "wrist_pin"), (two_arms_box, None)):
        model, q0 = build()
        res = constraint_residuals(model, q0)
        assert max(res.values()) <= 1e-12, res


# ---------------------------------------------------------------- rank
def test_planar_loop_with_ball_closure_is_not_reported():
    """A planar four-bar closed by a ball: the out-of-plane row is identically zero — zero force,
    no warning, accelerations equal the KKT solve on the two in-plane rows."""
    model, q0 = four_bar("ball")
    qd = np.array([2.0, -1.0, 0.5])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = constrained_forward_dynamics(model, q0, qd, np.zeros(3))
    f = res.forces["closure_D"]
    assert f[1] == 0.0 and np.all(np.isfinite(f))
    G = constraint_jacobian(model, q0)[[0, 2]]
    gamma = constraint_bias(model, q0, qd)[[0, 2]]
    M = sf.mass_matrix(model, q0)
    K = np.block([[M, -G.T], [G, np.zeros((2, 2))]])
    sol = np.linalg.solve(K, np.r_[-sf.bias_forces(model, q0, qd), -gamma])
    assert rel(res.qdd, sol[:3]) <= 1e-9 and rel(f[[0, 2]], sol[3:]) <= 1e-9


def test_redundant_constraints_warn_and_give_unique_accelerations():
    model, q, qd = random_closed_tree(12, ("weld",), seed=0)
    c = model.constraints[0]
    single = constrained_forward_dynamics(model, q, qd, np.zeros(model.nv))
    model.add_constraint("twin", "ball", c.frame_a, c.frame_b)
    with pytest.warns(ConstraintWarning, match="redundant"):
        double = constrained_forward_dynamics(model, q, qd, np.zeros(model.nv))
    assert rel(double.qdd, single.qdd) <= 1e-9
    F = np.concatenate([double.forces[c.name][3:] + double.forces["twin"]])
    assert rel(F, single.forces[c.name][3:]) <= 1e-8


def planar_arm_with_tip_pinned(angle: float):
    """Two 0.5 m links about y, tip ball-constrained to the world point it reaches fully stretched
    at ``angle`` (a singular configuration of the closure)."""
    model = sf.Model("pinned_arm")
    for k, parent in enumerate((sf.WORLD, "l1")):
        model.add_body(f"l{k + 1}", parent, sf.Revolute((0, 1, 0)), translation=(0.5 * k, 0, 0),
                       mass=1.0, com=(0.25, 0, 0), inertia=np.diag([1e-4, 0.02, 0.02]))
    model.add_frame("tip", "l2", translation=(0.5, 0, 0))
    model.add_frame("pin", sf.WORLD, translation=(np.cos(angle), 0, -np.sin(angle)))
    model.add_constraint("pin_tip", "ball", "pin", "tip")
    return model, np.array([angle, 0.0])


def test_singular_configuration_raises_constraint_error_not_nan():
    model, q = planar_arm_with_tip_pinned(0.5)
    with pytest.raises(ConstraintError, match="pin_tip"):
        constrained_forward_dynamics(model, q, np.array([1.0, -0.5]), np.zeros(2))
    for method in ("general",):
        with pytest.raises(ConstraintError, match="pin_tip"):
            constrained_forward_dynamics(model, q, np.array([1.0, -0.5]), np.zeros(2), method=method)
    with pytest.warns(ConstraintWarning):             # at rest the free acceleration is
        sim = sf.Simulator(model, q, np.zeros(2))     # tangential: consistent, redundant rows
    sim.qd = np.array([1.0, -0.5])
    state = sim.get_state()
    with pytest.raises(IntegrationError, match="singular"):
        sim.step(1e-3)
    assert np.array_equal(sim.q, state["q"]) and np.array_equal(sim.qd, state["qd"])


# ---------------------------------------------------------------- in time
@pytest.fixture(scope="module")
def four_bar_run():
    """10 s of the four-bar, crank spinning, Baumgarte (α, β) = (20, 20), RK4 h = 1 ms."""
    model, q0 = four_bar()
    G = constraint_jacobian(model, q0)[[0, 2]]
    qd0 = np.r_[6.0, np.linalg.lstsq(G[:, 1:], -G[:, 0] * 6.0, rcond=None)[0]]
    sim = sf.Simulator(model, q0, qd0)
    sim.stabilization = (20.0, 20.0)
    E, R, F = [], [], []
    for _ in range(10000):
        sim.step(1e-3)
        E.append(sf.total_energy(model, sim.q, sim.qd))
        R.append(sim.constraint_residuals["closure_D"])
        F.append(sim.constraint_forces["closure_D"].copy())
    return model, sim, np.array(E), np.array(R), np.array(F), sf.total_energy(model, q0, qd0)


def documented(pattern: str) -> float:
    """A figure docs/closed-chains.md states (the first group of ``pattern``)."""
    text = (Path(__file__).resolve().parents[1] / "docs" / "closed-chains.md").read_text(encoding="utf-8")
    return float(re.search(pattern, text).group(1))


def test_four_bar_residual_stays_bounded_over_10_s(four_bar_run):
    """At the documented figure with 10× headroom: Baumgarte gains cut 40× (1.8e-7 m) fail here."""
    model, sim, E, R, F, E0 = four_bar_run
    assert sim.t == pytest.approx(10.0)
    assert R.max() <= 10 * documented(r"Four-bar, 10 s, RK4 1 ms, Baumgarte 20/20: residual ≤ ([0-9.e-]+) m")
    assert np.all(np.isfinite(F)) and np.abs(F).max() > 0.1


def test_four_bar_conserves_energy(four_bar_run):
    model, sim, E, R, F, E0 = four_bar_run
    assert np.abs(E - E0).max() <= 1e-6 * abs(E0)


def test_slider_crank_with_torque_stays_closed():
    model, q0 = slider_crank()
    sim = sf.Simulator(model, q0)
    sim.stabilization = (20.0, 20.0)
    worst = 0.0
    for _ in range(2000):
        sim.tau = np.array([1.0 - 0.05 * sim.qd[0], 0.0, 0.0])    # a motor: 1 N m, 20 rad/s idle
        sim.step(1e-3)
        worst = max(worst, sim.constraint_residuals["wrist_pin"])
    assert worst <= 1e-6
    assert sim.qd[0] > 5.0                             # the motor spins the crank


def test_grasp_release_and_regrasp():
    model, q0 = two_arms_box()
    sim = sf.Simulator(model, q0)
    sim.stabilization = (20.0, 20.0)
    names = ("grasp_left", "grasp_right")
    held = []
    for i in range(150):
        if i == 50:
            for n in names:
                sim.active[n] = False
        if i == 100:
            sim.active["grasp_left"] = True
        sim.step(1e-3)
        held.append((dict(sim.constraint_residuals), {n: sim.constraint_forces[n].copy() for n in names}))
    res, f = zip(*held)
    # grasped: residuals at drift level, forces carry the box
    assert max(r[n] for r in res[:50] for n in names) <= 1e-8
    assert min(np.linalg.norm(x["grasp_left"]) for x in f[:50]) > 1.0
    # released: no force, no residual (the box falls freely)
    assert all(np.all(x[n] == 0) for x in f[50:100] for n in names)
    assert all(r[n] == 0.0 for r in res[50:100] for n in names)
    # re-grasped by the left hand where the box is: re-anchored, velocities projected
    assert max(r["grasp_left"] for r in res[100:]) <= 1e-8
    assert all(np.linalg.norm(x["grasp_left"]) > 0 for x in f[100:])
    assert np.abs(constraint_velocities(model, sim.q, sim.qd, active={"grasp_right": False})).max() <= 1e-6
    assert not np.allclose(sim.anchors["grasp_left"], np.eye(4))
    # rollback covers the constraint state
    state = sim.get_state()
    sim.step(1e-3)
    q1, f1 = sim.q.copy(), sim.constraint_forces["grasp_left"].copy()
    sim.active["grasp_left"] = False
    sim.anchors["grasp_left"] = np.eye(4)
    sim.set_state(state)
    sim.step(1e-3)
    assert np.array_equal(sim.q, q1) and np.array_equal(sim.constraint_forces["grasp_left"], f1)


def test_prescribed_constraint_velocity_is_tracked():
    """A free body welded to a world frame with Ũ = a constant twist: the relative velocity follows
    Ũ and the (moving) target keeps the residual at drift level."""
    model = sf.Model("driven")
    model.add_body("body", joint=sf.Free(), mass=1.0, inertia=np.diag([0.01, 0.02, 0.03]))
    model.add_constraint("drive", "weld", sf.WORLD, "body")
    u = np.array([0.0, 0.0, 1.0, 0.1, 0.0, 0.0])
    sim = sf.Simulator(model, qd0=u)                  # body axes = world axes at t = 0
    sim.stabilization = (10.0, 10.0)
    sim.u["drive"] = u
    for _ in range(200):
        sim.step(5e-3)
    assert np.abs(constraint_velocities(model, sim.q, sim.qd) - u).max() <= 1e-6
    assert sim.constraint_residuals["drive"] <= 1e-6
    R, p = sf.frame_pose(model, sim.q, "body")
    assert np.allclose(p, [0.1, 0, 0], atol=1e-6)                 # 1 s at 0.1 m/s along x
    assert np.allclose(R[:2, :2], [[np.cos(1), -np.sin(1)], [np.sin(1), np.cos(1)]], atol=1e-6)
    T = advance_anchor(model, "drive", np.eye(4), u, 1.0)
    assert np.allclose(T[:3, 3], [0.1, 0, 0]) and np.allclose(T[:3, :3], R, atol=1e-6)


def test_input_checks():
    model, q0 = four_bar()
    z = np.zeros(3)
    with pytest.raises(ValueError, match="unknown"):
        constrained_forward_dynamics(model, q0, z, z, active={"closure_X": True})
    with pytest.raises(ValueError, match="rows"):
        constrained_forward_dynamics(model, q0, z, z, u={"closure_D": np.zeros(6)})
    with pytest.raises(ValueError, match="finite"):
        constrained_forward_dynamics(model, q0, z, z, u={"closure_D": [np.nan, 0, 0]})
    with pytest.raises(ValueError, match="stabilization"):
        constrained_forward_dynamics(model, q0, z, z, stabilization=(-1.0, 0.0))
    with pytest.raises(ValueError):
        constrained_forward_dynamics(model, np.full(3, np.nan), z, z)
    off = constrained_forward_dynamics(model, q0, z, z, active={"closure_D": False})
    assert rel(off.qdd, sf.forward_dynamics(model, q0, z, z)) <= 1e-12
    assert np.all(off.forces["closure_D"] == 0) and off.residuals["closure_D"] == 0.0


def test_model_file_four_bar():
    """The example model file four_bar.toml is closed at its initial configuration."""
    model = load_model(example_path("four_bar"))
    q0 = model.initial_q
    assert max(constraint_residuals(model, q0).values()) <= 1e-9
    res = constrained_forward_dynamics(model, q0, np.zeros(model.nv), np.zeros(model.nv))
    assert np.all(np.isfinite(res.qdd))


@pytest.mark.parametrize("arms", ["limp", "gravity-compensated"])
def test_grasp_forces_carry_the_box_by_newtons_law(arms):
    """docs/closed-chains.md: forces[name] is the force frame_a's body exerts on frame_b's body, in
    frame_a's axes.  The box's own Newton equation then reads F_left + F_right + m g = m a_C (at rest,
    a_C = R (v̇ + ω̇ × c)): the grasp forces against m·g, from the documented conventions alone."""
    from soa_fmu.kinematics import frame_pose
    model = sf.load_model(example_path("two_arms_box"))
    q, qd = model.initial_q, np.zeros(model.nv)
    box = next(b for b in model.bodies if b.name == "box")
    i = box.v_index
    tau = np.zeros(model.nv)
    if arms == "gravity-compensated":
        tau = sf.gravity_forces(model, q)
        tau[i:i + 6] = 0.0                                      # the box's free joint is not driven
    res = sf.constrained_forward_dynamics(model, q, qd, tau)
    F = sum(frame_pose(model, q, fa)[0] @ res.forces[name][3:]
            for name, fa in (("grasp_left", "left_tool0"), ("grasp_right", "right_tool0")))
    R = frame_pose(model, q, "box")[0]
    a_c = R @ (res.qdd[i + 3:i + 6] + np.cross(res.qdd[i:i + 3], box.com))
    m_g = box.mass * np.asarray(model.gravity)
    assert np.linalg.norm(m_g) == pytest.approx(2.0 * 9.81)    # the 2 kg box of the example
    np.testing.assert_allclose(F + m_g, box.mass * a_c, rtol=0, atol=1e-9 * np.linalg.norm(m_g))
    assert abs(F[2]) > 0.1 * np.linalg.norm(m_g)                 # the grasps do carry it


# ---------------------------------------------------------------- flexible links (issue 34)
@pytest.mark.parametrize("seed,kinds", [(1, ("ball", "hinge")), (2, ("soft_finger",)),
                                        (7, ("hinge", "ball")), (8, ("weld",))])
def test_flexible_links_in_closed_loops_equal_dense_kkt_and_the_general_form(seed, kinds):
    """Random trees of rigid and flexible links (children on nodes) closed between two leaves:
    RCCFD1 with flexible.c's body-frame sweeps and factored M⁻¹ (closures.c, operational_space.c)
    and the general form (4.9) against the dense KKT solve of the flexible M and bias."""
    model, q, qd = flexible_closed_tree(seed, kinds)
    assert model.max_modes > 0
    tau = np.random.default_rng(seed).normal(size=model.nv)
    qdd_ref, lam_ref = kkt(model, q, qd, tau, (3.0, 7.0))
    for method in ("recursive", "rccfd2", "rccfd3", "general"):
        res = constrained_forward_dynamics(model, q, qd, tau, stabilization=(3.0, 7.0), method=method)
        assert rel(res.qdd, qdd_ref) <= 1e-9, method
        assert rel(stacked_forces(model, res), lam_ref) <= 1e-9, method


def test_flexible_constraint_bias_against_finite_differences():
    """γ = d/dt (G(θ(t)) β) with the modal rates in β: the body-frame motion of flexible.c carried to
    the inertial frame for the closure points."""
    model, q, qd = flexible_closed_tree(1, ("ball", "hinge"))
    h = 1e-5
    G = [constraint_jacobian(model, integrate_configuration(model, q, s * qd)) for s in (h, -h)]
    assert rel(constraint_bias(model, q, qd), (G[0] - G[1]) @ qd / (2 * h)) <= 1e-6


def test_flexible_arms_holding_a_box():
    """Two arms with a flexible link each grasping the box: RCCFD1 = (4.9) = KKT, the constraints
    hold at acceleration level, the grasp's velocity projection, and 0.3 s in the Simulator
    (RK4 1 ms, Baumgarte 20/20) keeps the grasp closed and the energy."""
    model, q0 = two_arms_box(flexible=True)
    assert model.max_modes == 2 and max(constraint_residuals(model, q0).values()) <= 1e-12
    rng = np.random.default_rng(3)
    qd = project_velocities(model, q0, rng.normal(scale=0.3, size=model.nv))
    G = constraint_jacobian(model, q0)
    assert np.abs(G @ qd).max() <= 1e-12
    tau = rng.normal(scale=5.0, size=model.nv)
    tau[-6:] = 0.0
    rec, _, _ = every_method_agrees(model, q0, qd, tau)
    gamma = constraint_bias(model, q0, qd)
    assert np.abs(G @ rec.qdd + gamma).max() <= 1e-9 * np.abs(gamma).max() + 1e-9
    sim = sf.Simulator(model, q0, qd)
    sim.stabilization = (20.0, 20.0)
    E0 = sf.total_energy(model, q0, qd)
    for _ in range(300):
        sim.step(1e-3)
        assert max(sim.constraint_residuals.values()) <= 1e-5
    assert abs(sf.total_energy(model, sim.q, sim.qd) - E0) <= 1e-3 * abs(E0)
