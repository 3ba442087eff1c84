"""Flexible bodies in the recursion (issue 12; seed 000 §4, soa_fmu/core/flexible.c): the quality
bars — cantilever frequencies against Euler–Bernoulli, the factored mass matrix of the operator
layer (HB; h)[I + CφB] m [I + CφB]*(HB; h)* against the recursion's, FD ∘ ID = identity, O(N) FD
against a dense solve, energy and momentum conservation, a stiff beam converging to the rigid
body — plus the input paths and the clear refusal of the algorithms not extended to them."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import soa_fmu as sf
from soa_fmu import _core
from soa_fmu import flexible as fx
from soa_fmu import joints as J
from soa_fmu.io import load_model
from soa_fmu.model import ModelError
from soa_fmu.spatial import rpy_to_matrix
from soa_fmu.verify.builders import random_flexible_tree

BETA_L = (1.8751040687, 4.6940911330)


def beam_fe(length=1.0, rho_A=2.7, EA=1e6, EI_y=60.0, EI_z=45.0, GJ=40.0, elements=4):
    return fx.beam(length, rho_A, EA, EI_y, EI_z, GJ, elements)


def random_state(m, rng, scale=0.3):
    q = m.neutral_configuration()
    for b in m.bodies:
        i = b.q_index
        if b.joint.code in (J.SPHERICAL, J.FREE):
            e = rng.normal(size=4)
            q[i:i + 4] = e / np.linalg.norm(e)
        else:
            q[i:i + b.joint.nq] = rng.normal(size=b.joint.nq) * scale
        q[i + b.joint.nq:i + b.nq] = rng.normal(size=b.nmodes) * 0.05
    return q, rng.normal(size=m.nv) * scale


# ---------------------------------------------------------------- quality bars
def test_cantilever_frequencies_within_half_a_percent_of_euler_bernoulli():
    """A beam clamped to world, 10 elements: the linearization of the recursion's dynamics
    (M from the mass matrix, K = ∂τ_ID/∂η by central differences) has the first two bending
    frequencies of both planes within 0.5 % of ω = (βL)² √(EI / (ρA L⁴))."""
    L_, rho_A, EI_y, EI_z = 1.2, 2.7, 60.0, 45.0
    fe = fx.beam(L_, rho_A, 1e8, EI_y, EI_z, 1e4, 10)
    m = sf.Model("cantilever", gravity=(0, 0, 0))
    m.add_body("beam", "world", J.Fixed(), flexible=fx.reduce(fe, 6, 0.0))
    q0, z = m.neutral_configuration(), np.zeros(m.nv)
    M = sf.mass_matrix(m, q0)
    h = 1e-6
    K = np.column_stack([(sf.inverse_dynamics(m, q0 + h * e, z, z)
                          - sf.inverse_dynamics(m, q0 - h * e, z, z)) / (2 * h) for e in np.eye(m.nq)])
    w = np.sort(np.sqrt(np.linalg.eigvals(np.linalg.solve(M, K)).real))
    for EI in (EI_y, EI_z):
        closed = [b ** 2 * np.sqrt(EI / (rho_A * L_ ** 4)) for b in BETA_L]
        for wc in closed:
            assert np.min(np.abs(w - wc)) / wc < 5e-3


def _spatial_star(R, l):
    """φ*(p, k) as a 6 × 6 matrix: V_k = [Rᵀω; Rᵀ(v + ω × l)]."""
    lx = np.array([[0, -l[2], l[1]], [l[2], 0, -l[0]], [-l[1], l[0], 0]])
    X = np.zeros((6, 6))
    X[:3, :3] = X[3:, 3:] = R.T
    X[3:, :3] = -R.T @ lx
    return X


def _spatial_order(n):
    """Permutation of a node block from FE order [u; r] to spatial order [r; u]."""
    return np.concatenate([[6 * j + 3, 6 * j + 4, 6 * j + 5, 6 * j, 6 * j + 1, 6 * j + 2]
                           for j in range(n)])


@pytest.mark.parametrize("seed", range(5))
def test_factored_mass_matrix_of_the_operator_layer(seed):
    """Seed 000 (4.3): M^f = (HB; h)[I + CφB] m [I + CφB]*(HB; h)*, built from dense operators —
    φ = (I − E_φ)⁻¹, H*, C* (a child's joint frame riding on its parent's node: φ*(Q, O)),
    B* (nodal rigid maps), h*Ψ (the nodal mode shapes) and the nodal mass matrices m of the FE
    models — equals the recursion's mass matrix to 1e-12 (undeformed links, random joints)."""
    rng = np.random.default_rng(seed)
    m, fes = random_flexible_tree(rng, 7)
    q, _ = random_state(m, rng)
    for b in m.bodies:                                        # η = 0: the seed's linear B, C
        q[b.q_index + b.joint.nq:b.q_index + b.nq] = 0.0
    w = sf.forward_kinematics(m, q)
    nb, nv = m.nbodies, m.nv
    E = np.zeros((6 * nb, 6 * nb))                            # E_φ*: V_k ← φ*(p, k) V_p
    Hs = np.zeros((6 * nb, nv))                               # H* β and C* h* Ψ η̇
    for k, b in enumerate(m.bodies):
        R, l = w.R[k], w.l[k]
        for j in range(b.joint.nv):
            Hs[6 * k:6 * k + 6, b.v_index + j] = m.arrays().S[b.v_index + j]
        if b.parent < 0:
            continue
        E[6 * k:6 * k + 6, 6 * b.parent:6 * b.parent + 6] = _spatial_star(R, l)
        if b.node is not None:
            pb = m.bodies[b.parent]
            e = pb.v_index + pb.joint.nv
            Hs[6 * k:6 * k + 6, e:e + pb.nmodes] = (_spatial_star(R, l - pb.flexible.nodes[b.node])
                                                   @ pb.flexible.shapes[b.node])
    phi_star = np.linalg.inv(np.eye(6 * nb) - E)
    V = phi_star @ Hs                                         # body velocities per unit β
    rows, masses = [], []
    for k, b in enumerate(m.bodies):
        if b.flexible is None:                                # one node at the origin
            rows.append(V[6 * k:6 * k + 6])
            masses.append(m.arrays().inertia[k])
            continue
        fe, fl = fes[b.name], b.flexible
        n = len(fl.nodes)
        P = _spatial_order(n)
        Bs = np.vstack([_spatial_star(np.eye(3), x) for x in fl.nodes])   # B*: rigid node motion
        hPsi = np.zeros((6 * n, nv))
        e = b.v_index + b.joint.nv
        hPsi[:, e:e + fl.nmodes] = fl.shapes.reshape(6 * n, fl.nmodes)
        rows.append(Bs @ V[6 * k:6 * k + 6] + hPsi)
        masses.append(fe.M[np.ix_(P, P)])
    Vf = np.vstack(rows)
    mass = np.zeros((Vf.shape[0],) * 2)
    i = 0
    for mk in masses:
        mass[i:i + len(mk), i:i + len(mk)] = mk
        i += len(mk)
    Mf = Vf.T @ mass @ Vf
    M = sf.mass_matrix(m, q)
    assert np.abs(M - Mf).max() <= 1e-12 * np.abs(Mf).max()


@pytest.mark.parametrize("seed", range(8))
def test_fd_inverts_id_and_equals_a_dense_solve(seed):
    rng = np.random.default_rng(100 + seed)
    m, _ = random_flexible_tree(rng, 8)
    q, qd = random_state(m, rng)
    tau = rng.normal(size=m.nv)
    qdd = sf.forward_dynamics(m, q, qd, tau)
    M = sf.mass_matrix(m, q)
    bias = sf.inverse_dynamics(m, q, qd, np.zeros(m.nv))
    assert np.allclose(M, M.T, rtol=0, atol=1e-13 * np.abs(M).max())
    assert np.linalg.eigvalsh(M).min() > 0
    scale = np.abs(tau).max() + np.abs(bias).max()
    assert np.abs(sf.inverse_dynamics(m, q, qd, qdd) - tau).max() <= 1e-10 * scale
    assert np.abs(qdd - np.linalg.solve(M, tau - bias)).max() <= 1e-9 * (1 + np.abs(qdd).max())
    assert sf.kinetic_energy(m, q, qd) == pytest.approx(0.5 * qd @ M @ qd, rel=1e-12)


@pytest.mark.parametrize("modes", [3, 4])
def test_fd_of_a_chain_of_like_flexible_links(modes):
    """A chain of links with the same modes, each on its parent's tip node (a revolute, a spherical,
    a prismatic joint): every body runs the FD kernels compiled for 4 modes (flexible.c's
    FLEX_UNROLLED) or, for 3, the general ones; both invert ID and equal a dense solve."""
    rng = np.random.default_rng(11 + modes)
    red = fx.reduce(beam_fe(length=0.5, EI_y=30, EI_z=25), modes, 0.02)
    m = sf.Model("chain", gravity=(0, 0, -9.81))
    joints = [J.Revolute([0, 0, 1]), J.Revolute([0, 1, 0]), J.Spherical(), J.Prismatic([1, 0, 0]),
              J.Revolute([1, 0, 0]), J.Revolute([0, 1, 0])]
    parent = "world"
    for i, jt in enumerate(joints):
        m.add_body(f"l{i}", parent, jt, translation=(0.5 if i else 0.0, 0, 0), flexible=red)
        parent = f"l{i}"
    assert all(b.nmodes == modes for b in m.bodies) and all(b.node >= 0 for b in m.bodies[1:])
    q, qd = random_state(m, rng)
    tau = rng.normal(size=m.nv)
    qdd = sf.forward_dynamics(m, q, qd, tau)
    M = sf.mass_matrix(m, q)
    bias = sf.inverse_dynamics(m, q, qd, np.zeros(m.nv))
    scale = np.abs(tau).max() + np.abs(bias).max()
    assert np.abs(sf.inverse_dynamics(m, q, qd, qdd) - tau).max() <= 1e-10 * scale
    assert np.abs(qdd - np.linalg.solve(M, tau - bias)).max() <= 1e-9 * (1 + np.abs(qdd).max())


def test_fd_in_a_rotated_modal_basis():
    """The same links in modal coordinates xi = Q* eta for an orthogonal Q: fl_K and fl_D are no
    longer diagonal (flexible.c's general elastic term, not the normal modes' diagonal one), and
    the accelerations are those of the normal modes mapped, qdd_xi = Q* qdd_eta (4 modes: the
    unrolled kernels)."""
    rng = np.random.default_rng(5)
    red = fx.reduce(beam_fe(length=0.5, EI_y=30, EI_z=25), 4, 0.05)
    Q = np.linalg.qr(rng.normal(size=(4, 4)))[0]
    T = np.eye(10)
    T[6:, 6:] = Q
    rot = dataclasses.replace(red, shapes=red.shapes @ Q, mass_matrix=T.T @ red.mass_matrix @ T,
                              stiffness=Q.T @ red.stiffness @ Q, damping=Q.T @ red.damping @ Q)
    assert np.abs(rot.stiffness - np.diag(np.diag(rot.stiffness))).max() > 1e-3 * red.stiffness.max()

    def chain(r):
        m = sf.Model("chain", gravity=(0, 0, -9.81))
        parent = "world"
        for i in range(4):
            m.add_body(f"l{i}", parent, J.Revolute([0, 1, 0] if i % 2 else [0, 0, 1]),
                       translation=(0.5 if i else 0.0, 0, 0), flexible=r)
            parent = f"l{i}"
        return m

    m, mr = chain(red), chain(rot)
    q, qd = random_state(m, rng, 0.05)
    tau = rng.normal(size=m.nv)
    B = np.eye(m.nv)                                   # (theta, eta) -> (theta, xi): xi = Q* eta
    for k in range(4):
        B[5 * k + 1:5 * k + 5, 5 * k + 1:5 * k + 5] = Q.T
    qdd = sf.forward_dynamics(m, q, qd, tau)
    qdd_r = sf.forward_dynamics(mr, B @ q, B @ qd, B @ tau)
    assert np.abs(qdd_r - B @ qdd).max() <= 1e-9 * (1 + np.abs(qdd).max())


def test_energy_conserved_without_damping_or_input():
    """Hub + flexible beam + a spherical payload on the beam's tip node, gravity on, 10 s: total
    energy (kinetic + gravitational + strain) drifts by no more than DOP853's tolerance allows."""
    rng = np.random.default_rng(7)
    m = sf.Model("hub_beam_payload", gravity=(0, 0, -9.81))
    m.add_body("hub", "world", J.Revolute([0, 0, 1]), mass=2.0, inertia=np.eye(3) * 0.05)
    m.add_body("beam", "hub", J.Revolute([0, 1, 0]), flexible=fx.reduce(beam_fe(EI_y=30, EI_z=25), 4))
    m.add_body("payload", "beam", J.Spherical(), translation=(1.0, 0, 0), mass=0.3,
               com=(0.05, 0.02, 0), inertia=np.diag([1e-3, 2e-3, 3e-3]))
    assert m.bodies[2].node == 4
    q0, qd0 = random_state(m, rng, 0.5)
    r = sf.simulate(m, 10.0, 0.05, q0=q0, qd0=qd0, method="dop853", rtol=1e-11, atol=1e-12)
    E = np.array([sf.total_energy(m, q, qd) for q, qd in zip(r["q"], r["qd"])])
    scale = sf.kinetic_energy(m, q0, qd0) + abs(sf.potential_energy(m, q0))
    assert np.abs(E - E[0]).max() <= 1e-8 * scale
    # the payload really does ride on the deforming tip
    assert np.abs(r["q"][:, m.bodies[1].q_index + 1:m.bodies[1].q_index + 5]).max() > 1e-3


def test_energy_conserved_with_sliding_and_turning_joints_on_tip_nodes():
    """Flexible links on their parents' tip nodes through a prismatic joint along x and revolute
    joints about y and x (the joints about or along a coordinate axis that flexible.c writes out:
    velocity products, accelerations), gravity on, no damping, 2 s: total energy is conserved to
    DOP853's tolerance; FD and ID share the velocity sweep, so their agreement cannot check it."""
    rng = np.random.default_rng(5)
    red = fx.reduce(beam_fe(length=0.5, EI_y=30, EI_z=25), 4)
    m = sf.Model("slider_chain", gravity=(0, 0, -9.81))
    joints = [J.Revolute([0, 0, 1]), J.Prismatic([1, 0, 0]), J.Revolute([0, 1, 0]),
              J.Revolute([1, 0, 0])]
    parent = "world"
    for i, jt in enumerate(joints):
        m.add_body(f"l{i}", parent, jt, translation=(0.5 if i else 0.0, 0, 0), flexible=red)
        parent = f"l{i}"
    assert all(b.node >= 0 for b in m.bodies[1:])
    q0, qd0 = random_state(m, rng, 0.5)
    r = sf.simulate(m, 2.0, 0.05, q0=q0, qd0=qd0, method="dop853", rtol=1e-11, atol=1e-12)
    E = np.array([sf.total_energy(m, q, qd) for q, qd in zip(r["q"], r["qd"])])
    scale = sf.kinetic_energy(m, q0, qd0) + abs(sf.potential_energy(m, q0))
    assert np.abs(E - E[0]).max() <= 1e-8 * scale


def test_modal_damping_dissipates_and_momentum_is_conserved_in_free_flight():
    m = sf.Model("free_flyer", gravity=(0, 0, 0))
    m.add_body("bus", "world", J.Free(), mass=50.0, inertia=np.eye(3) * 5.0)
    for side, y in (("left", 0.6), ("right", -0.6)):
        m.add_body(f"panel_{side}", "bus", J.Revolute([1, 0, 0]), translation=(0, y, 0),
                   rotation=rpy_to_matrix([0, 0, np.sign(y) * np.pi / 2]),
                   flexible=fx.reduce(beam_fe(EI_y=8.0, EI_z=20.0), 3, 0.02))
    rng = np.random.default_rng(3)
    q0, qd0 = random_state(m, rng, 0.3)
    r = sf.simulate(m, 5.0, 0.1, q0=q0, qd0=qd0, method="dop853", rtol=1e-11, atol=1e-12)
    h = np.array([sf.spatial_momentum(m, q, qd) for q, qd in zip(r["q"], r["qd"])])
    assert np.abs(h - h[0]).max() <= 1e-8 * np.abs(h[0]).max()
    E = np.array([sf.total_energy(m, q, qd) for q, qd in zip(r["q"], r["qd"])])
    assert np.all(np.diff(E) <= 1e-9 * E[0]) and E[-1] < 0.99 * E[0]


def test_a_very_stiff_beam_moves_like_the_rigid_body():
    """A pendulum whose link is a beam: as EI grows the hinge angle converges to the rigid
    link's (same mass properties, read off the FE model), error falling like 1/EI."""
    def pendulum(EI):
        red = fx.reduce(fx.beam(1.0, 2.0, 1e9, EI, EI, 1e5, 6), 4, 0.0)
        m = sf.Model("p", gravity=(0, 0, -9.81))
        m.add_body("link", "world", J.Revolute([0, 1, 0]), flexible=red)
        rigid = sf.Model("r", gravity=(0, 0, -9.81))
        rigid.add_body("link", "world", J.Revolute([0, 1, 0]), mass=red.mass, com=red.com,
                       inertia=red.inertia)
        q0 = m.neutral_configuration()
        q0[0] = 1.0
        a = sf.simulate(m, 1.0, 0.05, q0=q0, method="dop853", rtol=1e-10, atol=1e-12)["q"][:, 0]
        b = sf.simulate(rigid, 1.0, 0.05, q0=[1.0], method="dop853", rtol=1e-10, atol=1e-12)["q"][:, 0]
        return np.abs(a - b).max()
    e1, e2 = pendulum(1e4), pendulum(1e6)
    assert e2 < 1e-4 and e2 < e1 / 30


def stiff_chain(n=20, modes=4):
    """benchmarks/bench_flexible.py's chain: 20 beam links (4 modes, the highest clamped one at
    967 rad/s), hinges about z and y in turn; the coupled modes reach 3720 rad/s, so RK4 at 1 ms
    (|lambda h| = 3.7 > 2.78) diverges."""
    red = fx.reduce(fx.beam(0.5, 1.0, 1e6, 100.0, 120.0, 80.0, 4), modes, 0.01)
    m = sf.Model("chain", gravity=(0, 0, -9.81))
    for i in range(n):
        m.add_body(f"l{i}", f"l{i - 1}" if i else "world",
                   J.Revolute([0, 1, 0] if i % 2 else [0, 0, 1]),
                   translation=(0.5 if i else 0.0, 0, 0), flexible=red)
    return m, red


def modal_stiffness(m, red):
    """The diagonal of K on the velocity dofs (the modes' K_ii, 0 on the joints)."""
    k = np.zeros(m.nv)
    for b in m.bodies:
        k[b.v_index + b.joint.nv:b.v_index + b.nv] = np.diag(red.stiffness)
    return k


def test_highest_modal_frequency_is_a_dense_eigensolve():
    """soa_flex_omega_max (power iteration through the O(N) solve) against the dense generalized
    eigenproblem K v = omega^2 M v, at rest and at a random pose; auto's sub-step is 1.4 / it."""
    m, red = stiff_chain()
    k = np.sqrt(modal_stiffness(m, red))
    rng = np.random.default_rng(3)
    for q in (m.neutral_configuration(), random_state(m, rng, 0.5)[0]):
        Minv = np.linalg.inv(sf.mass_matrix(m, q))
        omega = np.sqrt(np.linalg.eigvalsh(k[:, None] * Minv * k[None, :]).max())
        assert 1.4 / _core.auto_max_step(m.data, q) == pytest.approx(omega, rel=1e-3)
    assert omega > 3.5 * np.sqrt(red.stiffness.max())       # the coupling raises it
    rigid = sf.Model("r")
    rigid.add_body("a", "world", J.Revolute([0, 0, 1]), mass=1.0, inertia=np.eye(3))
    assert _core.auto_max_step(rigid.data, rigid.neutral_configuration()) == np.inf


def test_the_default_runs_a_stiff_flexible_chain_at_1_ms():
    """The issue-30 bar "no default run diverges where a method is stable": from rest under
    gravity, 2 s at 1 ms with the defaults (auto: RK4, sub-steps <= 1.4 / 3720 rad/s = 0.38 ms,
    so 3 per step) stays within 1e-6 rad of DOP853 at rtol 1e-10 (measured 6.9e-8); RK4 at the
    plain 1 ms step diverges."""
    m, _ = stiff_chain()
    sim = sf.Simulator(m)
    assert sim.integrator_used == "rk4" and 3.7e-4 < sim.auto_max_step < 3.8e-4
    ref = sf.Simulator(m, method="dop853", rtol=1e-10, atol=1e-12)
    for _ in range(2000):
        sim.step(1e-3)
        ref.step(1e-3)
    assert np.abs(ref.qd).max() > 1.0                       # the chain swings
    assert np.abs(sim.q - ref.q).max() < 1e-6
    assert np.abs(sim.qd - ref.qd).max() < 1e-4
    plain = sf.Simulator(m, method="rk4")
    with pytest.raises(sf.IntegrationError, match=r"diverged: qd\[\d+\] \(l\d+\).*a flexible "
                       r"model.*'dop853' or a smaller max_step$"):
        for _ in range(100):
            plain.step(1e-3)


# ---------------------------------------------------------------- inputs, names, refusals
def test_names_and_layout_of_the_modal_coordinates():
    m = load_model("model_descriptions/examples/flexible_arm.toml")
    assert m.position_names == ["slew"] + [f"beam.eta[{k}]" for k in range(1, 5)]
    assert m.velocity_names == m.position_names and m.nq == m.nv == 5
    assert m.frames["tip"].node == 10 and m.bodies[m.frames["tip"].body].frame_only
    q = m.neutral_configuration()
    R, p = sf.frame_pose(m, q, "tip")
    assert np.allclose(p, [1.05, 0, 0]) and np.allclose(R, np.eye(3))
    q[1] = 0.02                                      # the first mode bends the tip in the plane
    R, p = sf.frame_pose(m, q, "tip")
    shape = m.bodies[1].flexible.shapes[10][:, 0]
    assert np.allclose(p - [1.05, 0, 0], 0.02 * shape[3:], rtol=0, atol=1e-12)


@pytest.mark.parametrize("text, match", [
    ('kind = "shell"\nmodes = 2', "unknown flexible kind"),
    ('kind = "beam"\nmodes = 2\nlength = 1.0', "missing required key"),
    ('kind = "beam"\nmodes = 99\nlength = 1.0\nrho_A = 1.0\nEA = 1.0\nEI_y = 1.0\nEI_z = 1.0\n'
     'GJ = 1.0\nelements = 2', "modes"),
    ('kind = "fe"\nmodes = 2\nfile = "missing.npz"', "missing.npz"),
    ('kind = "beam"\nmodes = 2\nlength = 1.0\nrho_A = 1.0\nEA = 1.0\nEI_y = 1.0\nEI_z = 1.0\n'
     'GJ = 1.0\nelements = 2\nstiffness = 3', "unknown key"),
])
def test_bad_flexible_tables_name_file_and_key(tmp_path, text, match):
    path = tmp_path / "bad.toml"
    path.write_text('[[bodies]]\nname = "beam"\njoint = { type = "revolute", axis = [0, 0, 1] }\n'
                    f'[bodies.flexible]\n{text}\n')
    with pytest.raises(ModelError, match=match) as e:
        load_model(path)
    assert "bad.toml" in str(e.value) and "bodies[0].flexible" in str(e.value)


def test_fe_file_input(tmp_path):
    fe = beam_fe(elements=3)
    np.savez(tmp_path / "link.npz", nodes=fe.nodes, M=fe.M, K=fe.K, pinned=fe.pinned)
    (tmp_path / "m.toml").write_text(
        '[[bodies]]\nname = "link"\njoint = { type = "revolute", axis = [0, 0, 1] }\n'
        '[bodies.flexible]\nkind = "fe"\nfile = "link.npz"\nmodes = 3\n')
    a = load_model(tmp_path / "m.toml")
    b = sf.Model("b")
    b.add_body("link", "world", J.Revolute([0, 0, 1]), flexible=fx.reduce(fe, 3))
    q, qd = np.array([0.3, 0.01, -0.02, 0.005]), np.array([0.5, 0.1, 0.2, -0.3])
    assert np.array_equal(sf.forward_dynamics(a, q, qd, np.zeros(4)),
                          sf.forward_dynamics(b, q, qd, np.zeros(4)))


def test_model_errors():
    red = fx.reduce(beam_fe(), 2)
    m = sf.Model("m")
    m.add_body("a", "world", J.Revolute([0, 0, 1]), mass=1.0, inertia=np.eye(3))
    with pytest.raises(ModelError, match="not flexible"):
        m.add_body("b", "a", J.Fixed(), node=1, mass=1.0)
    with pytest.raises(ModelError, match="come from its finite-element model"):
        m.add_body("c", "a", J.Fixed(), flexible=red, mass=2.0)
    m.add_body("d", "a", J.Fixed(), flexible=red)
    with pytest.raises(ModelError, match="node must be an integer"):
        m.add_frame("f", "d", node=99)


def test_describe_lists_modes_and_node_frames():
    from soa_fmu.cli import describe
    text = describe(load_model("model_descriptions/examples/flexible_arm.toml"))
    assert "flexible: 11 nodes, 4 modes (3.28972, 20.617" in text
    assert "q: beam.eta[1] … beam.eta[4]" in text and "tip on node 10 of beam at (1, 0, 0)" in text


@pytest.mark.parametrize("seed", range(4))
def test_frame_jacobians_include_the_deformation(seed):
    """J(q) q̇ of every body and node frame equals the velocity of its origin (central differences
    of its pose along q̇) and the body's angular velocity from the recursion (R V_ω)."""
    rng = np.random.default_rng(200 + seed)
    m = random_flexible_tree(rng, 7)[0] if seed else load_model("model_descriptions/examples/spacecraft.toml")
    q, qd = random_state(m, rng)
    V = sf.body_velocities(m, q, qd)
    h = 1e-7
    for f in list(m.frames) + [b.name for b in m.bodies]:
        J_ = sf.frame_jacobian(m, q, f)
        up = sf.frame_pose(m, _core.integrate_configuration(m.core, q, h * qd), f)[1]
        dn = sf.frame_pose(m, _core.integrate_configuration(m.core, q, -h * qd), f)[1]
        assert np.abs(J_[3:] @ qd - (up - dn) / (2 * h)).max() < 1e-6 * (1 + np.abs(qd).max())
        k = m.frame_placement(f)[0]
        R = sf.forward_kinematics(m, q).Rw[k]
        assert np.allclose(J_[:3] @ qd, R @ V[k, :3], rtol=0, atol=1e-12)
