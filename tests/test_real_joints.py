"""Real joints (docs/joints.md): rotor inertia (armature) in every algorithm family, the linearly
implicit integrator, auto's choice, and joint stops — against Pinocchio's ``model.armature``,
closed forms, and tight reference solutions."""
import math

import numpy as np
import pytest

import soa_fmu as sf
from soa_fmu import _core
from soa_fmu.verify.builders import random_state, random_tree, serial_chain

G = 9.81


def rel(a, b):
    return np.abs(a - b).max() / max(1.0, np.abs(b).max())


def pendulum(length=1.0, mass=1.0, inertia=1e-3, armature=0.0, limits=None):
    """A bob on a massless rod about the world y axis; q = 0 hanging."""
    m = sf.Model("pendulum")
    lim = {"armature": armature} if armature else {}
    lim.update(limits or {})
    m.add_body("bob", joint=sf.Revolute((0, 1, 0)), joint_name="hinge", mass=mass,
               com=(0, 0, -length), inertia=np.eye(3) * inertia, limits=lim)
    return m


# ---------------------------------------------------------------- armature
PIN_JOINTS = ("revolute", "prismatic", "spherical", "fixed")
MODELS = {
    "chain7": lambda: serial_chain(7, seed=3),
    "tree20": lambda: random_tree(20, seed=5, joint_types=PIN_JOINTS),
    "floating_tree15": lambda: random_tree(15, seed=6, joint_types=PIN_JOINTS, floating_base=True),
}


@pytest.mark.parametrize("name", MODELS)
def test_armature_against_pinocchio(name):
    """M + diag(a), FD and ID with armature equal Pinocchio's with model.armature set."""
    pin = pytest.importorskip("pinocchio")
    from soa_fmu.verify.pinocchio_bridge import to_pinocchio
    model = MODELS[name]()
    a = np.random.default_rng(7).uniform(0.05, 2.0, model.nv)
    model.joint_armature = a
    pm = to_pinocchio(model)
    pm.pin_model.armature = pm.v_to_pin(a)
    data = pm.pin_model.createData()
    for seed in range(2):
        q, qd = random_state(model, seed)
        tau = np.random.default_rng(seed).normal(size=model.nv) * 3
        qp, vp = pm.q_to_pin(q), pm.v_to_pin(qd)
        M = sf.mass_matrix(model, q)
        Mp = pin.crba(pm.pin_model, data, qp)
        Mp = np.triu(Mp) + np.triu(Mp, 1).T
        assert rel(M, pm.matrix_from_pin(Mp)) < 1e-12
        qdd = sf.forward_dynamics(model, q, qd, tau)
        assert rel(qdd, pm.v_from_pin(pin.aba(pm.pin_model, data, qp, vp, pm.v_to_pin(tau)))) < 1e-12
        ref = pin.rnea(pm.pin_model, data, qp, vp, pm.v_to_pin(qdd))
        assert rel(sf.inverse_dynamics(model, q, qd, qdd), pm.v_from_pin(ref)) < 1e-12
        # M^-1 (Identity 6 with D + a) is the inverse of M + diag(a)
        assert np.abs(sf.mass_matrix_inverse(model, q) @ M - np.eye(model.nv)).max() < 1e-10
        assert np.abs(M - sf.mass_matrix(model, q) * 0 - M).max() == 0.0
        # the armature is in M: it is not in M without it
        model.joint_armature = np.zeros(model.nv)
        assert np.abs(sf.mass_matrix(model, q) + np.diag(a) - M).max() < 1e-12 * np.abs(M).max()
        model.joint_armature = a


def test_armature_in_energy_linearization_and_flexible():
    """Kinetic energy ½ β*(M + a)β; the linearization's ∂β̇/∂β̇-free terms use M + a; a flexible
    body's joint dof sees a in its D."""
    model = serial_chain(4, seed=9)
    a = np.array([0.3, 0.1, 0.0, 0.7])
    model.joint_armature = a
    q, qd = random_state(model, 2)
    M = sf.mass_matrix(model, q)
    assert math.isclose(sf.kinetic_energy(model, q, qd), 0.5 * qd @ M @ qd, rel_tol=1e-12)
    dq, dv, Minv = sf.forward_dynamics_derivatives(model, q, qd, np.zeros(model.nv))
    assert np.abs(Minv @ M - np.eye(model.nv)).max() < 1e-10
    # finite differences of forward dynamics along beta, with armature
    eps = 1e-6
    fd = np.column_stack([(sf.forward_dynamics(model, q, qd + eps * e, np.zeros(4))
                           - sf.forward_dynamics(model, q, qd - eps * e, np.zeros(4))) / (2 * eps)
                          for e in np.eye(4)])
    assert np.abs(fd - dv).max() < 1e-6 * max(1.0, np.abs(dv).max())
    flex = sf.load_model("model_descriptions/examples/flexible_arm.toml")
    qf = flex.neutral_configuration()
    M0 = sf.mass_matrix(flex, qf)
    af = np.zeros(flex.nv)
    af[0] = 0.25
    flex.joint_armature = af
    M1 = sf.mass_matrix(flex, qf)
    assert np.abs(M1 - M0 - np.diag(af)).max() < 1e-12
    tau = np.zeros(flex.nv)
    tau[0] = 1.0
    qdd = sf.forward_dynamics(flex, qf, np.zeros(flex.nv), tau)
    qdd0 = sf.forward_dynamics(flex, qf, np.zeros(flex.nv), np.zeros(flex.nv))
    assert np.abs(M1 @ (qdd - qdd0) - tau).max() < 1e-9


def test_armature_pendulum_period_closed_form():
    """Small oscillations: T = 2π √((m l² + I + a) / (m g l)), to 1e-6."""
    m, l, I, a = 1.0, 1.0, 1e-3, 0.4
    model = pendulum(l, m, I, armature=a)
    T = 2 * math.pi * math.sqrt((m * l * l + I + a) / (m * G * l))
    res = sf.simulate(model, 3.0 * T, dt=1e-3, q0=[1e-3], method="dop853", rtol=1e-12, atol=1e-15)
    t, x = res["t"], res["q"][:, 0]
    up = np.flatnonzero((x[:-1] < 0) & (x[1:] >= 0))
    cross = t[up] - x[up] * (t[up + 1] - t[up]) / (x[up + 1] - x[up])
    period = (cross[-1] - cross[0]) / (len(cross) - 1)
    assert abs(period / T - 1) < 1e-6
    # the linearization's eigenvalues give the same ω
    A = sf.linearize(model, [0.0], [0.0], [0.0])[0]
    w = np.abs(np.linalg.eigvals(A).imag).max()
    assert abs(w * T / (2 * math.pi) - 1) < 1e-9
    # without the armature the period is visibly shorter (the test can fail)
    model.joint_armature = [0.0]
    A0 = sf.linearize(model, [0.0], [0.0], [0.0])[0]
    assert np.abs(np.linalg.eigvals(A0).imag).max() > 1.1 * w


# ---------------------------------------------------------------- the implicit integrator
def stiff_joint(friction=1.0, damping=10.0, inertia=1e-4):
    """xarm7's wrist: ~1e-4 kg·m² about the axis, URDF damping 10, friction 1."""
    m = sf.Model("stiff")
    m.add_body("link", joint=sf.Revolute((1, 0, 0)), joint_name="j", mass=0.2, com=(0, 0.05, 0),
               inertia=np.eye(3) * inertia, limits={"damping": damping, "friction": friction})
    return m


def test_implicit_stable_where_rk4_diverges_and_first_order():
    model = stiff_joint()
    q0, h, t_end = [0.3], 1e-3, 0.2
    with pytest.raises(sf.IntegrationError):
        sf.simulate(model, t_end, dt=h, q0=q0, method="rk4")
    ref = sf.simulate(model, t_end, dt=h, q0=q0, method="dop853", rtol=1e-11, atol=1e-13)["q"]
    err = []
    for hh in (h, h / 2):
        r = sf.simulate(model, t_end, dt=h, q0=q0, method="implicit", max_step=hh)
        assert np.all(np.isfinite(r["q"]))
        err.append(np.abs(r["q"] - ref).max())
    assert err[0] < 1e-2
    assert 1.6 < err[0] / err[1] < 2.6          # first order


def test_implicit_matches_euler_without_dissipation():
    """With no dissipation, stops or armature terms the implicit step IS semi-implicit Euler."""
    model = serial_chain(5, seed=1)
    q, qd = random_state(model, 3)
    tau = np.random.default_rng(1).normal(size=model.nv)
    q1, v1, q2, v2 = q.copy(), qd.copy(), q.copy(), qd.copy()
    _core.implicit(model.data, q1, v1, tau, False, 1e-3, 3)
    _core.euler(model.data, q2, v2, tau, False, 1e-3, 3)
    assert np.abs(q1 - q2).max() < 1e-14 and np.abs(v1 - v2).max() < 1e-12


def test_implicit_solves_with_the_diagonal_in_the_sweep():
    """One implicit step equals the dense solve (M + a + h B + h² K) x = T − h K β − C − g."""
    model = serial_chain(4, seed=2)
    model.joint_damping = [3.0, 0.0, 1.0, 2.0]
    model.joint_friction = [0.5, 0.2, 0.0, 0.1]
    model.joint_armature = [0.1, 0.2, 0.3, 0.0]
    q, qd = random_state(model, 4)
    tau = np.array([0.3, -0.2, 0.1, 0.4])
    h = 2e-3
    vs = model.friction_velocity
    B = model.joint_damping + model.joint_friction * (1 - np.tanh(qd / vs) ** 2) / vs
    T = _core.joint_forces(model.data, q, qd, tau)
    x = np.linalg.solve(sf.mass_matrix(model, q) + h * np.diag(B),
                        T - sf.inverse_dynamics(model, q, qd, np.zeros(4)))
    q1, v1 = q.copy(), qd.copy()
    qdd = _core.implicit(model.data, q1, v1, tau, False, h, 1)
    assert np.abs(qdd - x).max() < 1e-10 * max(1, np.abs(x).max())
    assert np.abs(v1 - (qd + h * x)).max() < 1e-12


def test_auto_picks_ros34pw2_for_stiff_terms():
    """auto: rk4 for a model without dissipation, stops or contact, ros34pw2 for one with any (the
    explicit bound it used to test is gone: a bound checked once at q0 let g1_with_hands and
    human diverge later in the run; docs/joints.md)."""
    assert sf.Simulator(pendulum()).integrator_used == "rk4"
    assert sf.Simulator(pendulum(limits={"lower": -1.0, "upper": 1.0})).integrator_used == "rk4w"
    stiff = stiff_joint()
    assert sf.Simulator(stiff).integrator_used == "rk4w"
    assert sf.Simulator(stiff, max_step=1e-6).integrator_used == "rk4w"
    sim = sf.Simulator(stiff, q0=[0.3])
    for _ in range(100):
        sim.step(1e-3)
    assert np.isfinite(sim.q).all() and sim.integrator_used == "rk4w"
    # decided once: the state capture keeps it
    s = sim.get_state()
    sim.set_method("rk4")
    sim.set_state(s)
    assert sim.integrator_used == "rk4w"


def test_implicit_refuses_active_closures_and_runs_flexible():
    model = sf.load_model("model_descriptions/examples/four_bar.toml")
    sim = sf.Simulator(model, method="implicit")
    with pytest.raises(sf.IntegrationError, match="implicit integrator does not handle closure"):
        sim.step(1e-3)
    flex = sf.load_model("model_descriptions/examples/flexible_arm.toml")
    assert sf.Simulator(flex).integrator_used == "rk4"
    sim = sf.Simulator(flex, method="implicit")      # tests/test_integrators.py checks its numbers
    sim.step(1e-3)
    assert sim.integrator_used == "implicit" and np.all(np.isfinite(sim.qd))


# ---------------------------------------------------------------- joint stops
def test_stop_holds_gravity_within_documented_deflection():
    """Released 30° beyond a lower stop at 0.5 rad (gravity pushes into it): settles within the
    documented static deflection (≤ 1°) and the stop torque balances gravity to 1 %."""
    lo = 0.5
    model = pendulum(limits={"lower": lo, "upper": 2.0})
    k, b = model.stop_stiffness[0], model.stop_damping[0]
    assert math.isclose(k, 1.0 * G * 1.0 / math.radians(1.0), rel_tol=1e-9)
    assert math.isclose(b, 2 * math.sqrt(k * (1.0 + 1e-3)), rel_tol=1e-9)
    res = sf.simulate(model, 3.0, dt=1e-3, q0=[lo - math.radians(30)])
    q = res["q"][-1]
    assert 0 < lo - q[0] < math.radians(1.0)
    assert abs(res["qd"][-1, 0]) < 1e-6
    stop = _core.stop_forces(model.data, q, np.zeros(1))
    g = sf.inverse_dynamics(model, q, [0.0], [0.0])      # the torque that holds it: gravity's
    assert abs(stop[0] / g[0] - 1) < 0.01
    # the stop's static deflection is m g l sin(q) / k
    assert math.isclose(lo - q[0], G * math.sin(q[0]) / k, rel_tol=1e-6)
    # switched off, it falls through
    model.stops_enabled = False
    assert sf.simulate(model, 1.0, q0=[lo - 0.01])["q"][-1, 0] < 0.2


def stop_energy(model, q, qd):
    k = model.stop_stiffness
    lo, hi = model.joint_limits
    delta = np.where(q < lo, q - lo, np.where(q > hi, q - hi, 0.0))
    return sf.total_energy(model, q, qd) + 0.5 * (k * delta ** 2).sum()


def test_stop_bounce_energy_conserved_to_order_and_decreasing_with_damping():
    model = pendulum(limits={"lower": -0.2, "upper": 0.2, "stop_damping": 0.0})
    E0 = stop_energy(model, [0.0], [2.0])
    drift = []
    for h in (1e-3, 5e-4):
        r = sf.simulate(model, 2.0, dt=1e-3, q0=[0.0], qd0=[2.0], method="rk4", max_step=h)
        E = np.array([stop_energy(model, q, v) for q, v in zip(r["q"], r["qd"])])
        assert (np.abs(r["q"][:, 0]) > 0.2).sum() > 50            # it hit the stops
        drift.append(np.abs(E - E0).max() / abs(E0))
    # conserved to 1e-5 and converging with h; the stiffness's jump at contact (a kink in the
    # force) limits RK4's observed order there to 1-2 (drift 8.1e-6, 3.8e-6, 1.1e-6 at h = 1, 0.5,
    # 0.25 ms)
    assert drift[0] < 1e-5 and drift[1] < drift[0] / 1.8
    model.stop_damping = [3.0]
    model.joint_damping = [0.0]
    r = sf.simulate(model, 2.0, dt=1e-3, q0=[0.0], qd0=[2.0], method="rk4")
    E = np.array([stop_energy(model, q, v) for q, v in zip(r["q"], r["qd"])])
    assert np.all(np.diff(E) <= 1e-9 * abs(E0))                  # step by step
    assert E[-1] < E0 - 1.0                                       # it lost most of its 2 J
    # semi-implicit Euler's energy error oscillates by O(h) (staggered q, qd): the rise above the
    # lowest energy so far is 3.8e-4 |E0| at 1 ms and halves with h
    rise = []
    for h in (1e-3, 5e-4):
        r = sf.simulate(model, 2.0, dt=1e-3, q0=[0.0], qd0=[2.0], method="implicit", max_step=h)
        E = np.array([stop_energy(model, q, v) for q, v in zip(r["q"], r["qd"])])
        assert E[-1] < E0 - 1.0
        rise.append((E - np.minimum.accumulate(E)).max() / abs(E0))
    assert rise[0] < 5e-4 and 1.8 < rise[0] / rise[1] < 2.2


def test_stops_implicit_at_a_stiff_stop():
    """A 1e6 N·m/rad stop on a 1e-3 kg·m² link: h² k / m = 1000 at 1 ms, far beyond RK4's bound;
    auto takes ros34pw2 (implicit in the stop, L-stable), which holds the link at the stop and
    leaves it at DOP853's speed (0.30 rad/s, to 2 %; ros2's second stage rebounds at 3.6)."""
    model = pendulum(mass=0.01, length=0.1, inertia=1e-3,
                     limits={"lower": -0.1, "upper": 0.1, "stop_stiffness": 1e6})
    runs = {}
    for method in ("auto", "ros2", "dop853"):
        sim = sf.Simulator(model, q0=[0.0], qd0=[5.0], method=method, rtol=1e-10, atol=1e-10)
        for _ in range(500):
            sim.step(1e-3)
        runs[sim.integrator_used] = sim
    auto, ref = runs["rk4w"], runs["dop853"]
    assert abs(auto.q[0]) < 0.1 + 1e-3 and np.isfinite(auto.qd).all()
    assert auto.qd[0] == pytest.approx(ref.qd[0], rel=0.02)
    assert abs(runs["ros2"].qd[0]) > 5 * abs(ref.qd[0])


def test_bad_joint_parameters_are_named():
    with pytest.raises(sf.ModelError, match="joint 'hinge': armature must be finite"):
        pendulum(limits={"armature": -1.0})
    with pytest.raises(sf.ModelError, match="lower limit 1.0 is above upper limit 0.0"):
        pendulum(limits={"lower": 1.0, "upper": 0.0})
    with pytest.raises(sf.ModelError, match=r"stop_damping\[1\] \(hinge\)"):
        pendulum(limits={"lower": 0.0}).stop_damping = [math.nan]
