"""The C DOP853 (core/dop853.c): step for step as scipy's solve_ivp(method="DOP853"), closed forms,
conservation, and its failures as statuses."""
import math
import warnings

import numpy as np
import pytest
from scipy.integrate import solve_ivp
from scipy.special import ellipj, ellipk

import soa_fmu as sf
from soa_fmu import _core, joints as J
from soa_fmu.energy import spatial_momentum, total_energy
from soa_fmu.integrators import configuration_rate, normalize_quaternions
from soa_fmu.model import Model
from soa_fmu.verify.builders import random_state, random_tree, serial_chain


def pendulum(length: float = 0.7, mass: float = 1.3, jyy: float = 0.02) -> Model:
    """A body hanging at -length (z) from a revolute joint about y."""
    model = Model("pendulum")
    model.add_body("bob", joint=J.Revolute((0.0, 1.0, 0.0)), joint_name="swing", mass=mass,
                   com=(0.0, 0.0, -length), inertia=np.diag([jyy, jyy, jyy]))
    return model


def free_body() -> Model:
    model = Model("free")
    model.add_body("body", joint=J.Free(), joint_name="base", mass=2.0, com=(0.0, 0.0, 0.0),
                   inertia=np.diag([0.1, 0.2, 0.3]))
    return model


MODELS = {"pendulum": lambda: pendulum(), "chain7": lambda: serial_chain(7, seed=3),
          "free_body": free_body,
          "floating_tree": lambda: random_tree(6, seed=2, floating_base=True)}


def scipy_dop853(model, q, qd, tau, t0, h, rtol, atol, first_step, max_step=math.inf):
    """The reference: scipy over the same right-hand side (θ projected before evaluating θ̇ and
    β̇), as Simulator._step_adaptive did before the port."""
    nq = model.nq

    def rhs(t, y):
        qs = y[:nq].copy()
        normalize_quaternions(model, qs)
        return np.concatenate([configuration_rate(model, qs, y[nq:]),
                               sf.forward_dynamics(model, qs, y[nq:], tau)])

    sol = solve_ivp(rhs, (t0, t0 + h), np.r_[q, qd], method="DOP853", rtol=rtol, atol=atol,
                    first_step=first_step, max_step=max_step)
    assert sol.success
    y = sol.y[:, -1].copy()
    normalize_quaternions(model, y[:nq])
    return sol, y


def c_dop853(model, q, qd, tau, t0, h, rtol, atol, first_step, max_step=math.inf):
    data = model.create_data()
    q, qd = q.copy(), qd.copy()
    qdd, last = _core.dop853(data, q, qd, tau, False, t0, h, rtol, atol, max_step, first_step or 0.0)
    return np.r_[q, qd], qdd, last, data.views()["dop_stats"].copy()


# ---------------------------------------------------------------- scipy, step for step
class _InOrderNumpy:
    """numpy, except that dot products and norms are summed in index order (as dop853.c does)
    instead of by BLAS's blocked kernels: with it, scipy's DOP853 is bit for bit the C one."""

    class linalg:
        @staticmethod
        def norm(x):
            s = 0.0
            for v in np.asarray(x):
                s += v * v
            return math.sqrt(s)

    @staticmethod
    def dot(a, x):
        a, x = np.asarray(a), np.asarray(x)
        out = np.zeros(a.shape[0])
        for j in range(a.shape[1]):
            out = out + a[:, j] * x[j]
        return out

    def __getattr__(self, name):
        return getattr(np, name)


@pytest.fixture
def in_order_scipy(monkeypatch):
    from scipy.integrate._ivp import common, rk
    monkeypatch.setattr(rk, "np", _InOrderNumpy())
    monkeypatch.setattr(common, "np", _InOrderNumpy())


@pytest.mark.parametrize("name", list(MODELS))
@pytest.mark.parametrize("first_step", [None, 1e-3])
def test_bit_for_bit_scipy_dop853(name, first_step, in_order_scipy):
    model = MODELS[name]()
    q, qd = random_state(model, 1)
    tau = np.random.default_rng(5).uniform(-1, 1, model.nv)
    sol, ref = scipy_dop853(model, q, qd, tau, 0.3, 0.5, 1e-9, 1e-11, first_step)
    y, qdd, last, (nfev, accepted, rejected) = c_dop853(model, q, qd, tau, 0.3, 0.5, 1e-9, 1e-11,
                                                        first_step)
    assert (nfev, accepted) == (sol.nfev, sol.t.size - 1)
    assert nfev == 1 + (first_step is None) + 12 * (accepted + rejected)
    assert last == sol.t[-1] - sol.t[-2]
    np.testing.assert_array_equal(y, ref)
    np.testing.assert_array_equal(qdd, sf.forward_dynamics(model, y[:model.nq], y[model.nq:], tau))


@pytest.mark.parametrize("name", list(MODELS))
def test_same_state_as_scipy_with_blas(name):
    """Against scipy as installed: the summation order of BLAS changes the (cancelling) error
    estimate in its last digits, so the step sizes agree to ~1e-5 and the state to round-off."""
    model = MODELS[name]()
    q, qd = random_state(model, 2)
    sol, ref = scipy_dop853(model, q, qd, np.zeros(model.nv), 0.0, 0.5, 1e-9, 1e-11, None)
    y = c_dop853(model, q, qd, np.zeros(model.nv), 0.0, 0.5, 1e-9, 1e-11, None)[0]
    np.testing.assert_allclose(y, ref, rtol=1e-10, atol=1e-10 * np.abs(ref).max())


def test_simulator_steps_equal_the_scipy_loop_with_step_memory(in_order_scipy):
    """Several Simulator.step calls (the step size carried between them) against the pre-port
    loop over scipy with the same memory."""
    model = random_tree(4, seed=7, floating_base=True, joint_types=("revolute", "spherical"))
    q, qd = random_state(model, 2)
    sim = sf.Simulator(model, q, qd, method="dop853", rtol=1e-10, atol=1e-12)
    sim.tau = np.linspace(-0.5, 0.5, model.nv)
    y, t, last = np.r_[q, qd], 0.0, 0.0
    for h in (0.01, 0.03, 0.002, 0.05):
        sim.step(h)
        first = min(last, h) if last > 0 else None
        sol, y = scipy_dop853(model, y[:model.nq], y[model.nq:], sim.tau, t, h, 1e-10, 1e-12, first)
        t, last = t + h, sol.t[-1] - sol.t[-2]
        np.testing.assert_array_equal(np.r_[sim.q, sim.qd], y)
        assert sim.last_h == last


def test_step_memory_lives_in_the_data():
    model = serial_chain(3, seed=1)
    q, qd = random_state(model, 3)
    data = model.create_data()
    qdd, last = _core.dop853(data, q.copy(), qd.copy(), np.zeros(3), False, 0.0, 0.1, 1e-8, 1e-10,
                             math.inf, 0.0)
    assert last > 0 and data.views()["dop_h"][0] == last
    # a given first step is used as is (only the start differs from a chosen one)
    _core.dop853(data, q.copy(), qd.copy(), np.zeros(3), False, 0.0, 0.1, 1e-8, 1e-10, math.inf, 0.1)
    assert data.views()["dop_stats"][0] == 1 + 12 * data.views()["dop_stats"][1:].sum()


@pytest.mark.parametrize("rtol", [1e-6, 1e-30])          # 1e-30: raised to 100 eps, as scipy does
def test_max_step_and_loose_or_tight_tolerances_bit_for_bit(rtol, in_order_scipy):
    model = serial_chain(2, seed=4)
    q, qd = random_state(model, 1)
    tau = np.zeros(2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")          # scipy's "rtol is too small"
        sol, ref = scipy_dop853(model, q, qd, tau, 0.0, 0.3, rtol, 1e-8, None, max_step=0.01)
    y, _, last, (nfev, accepted, _) = c_dop853(model, q, qd, tau, 0.0, 0.3, rtol, 1e-8, None, 0.01)
    assert accepted >= 30 and (nfev, accepted, last) == (sol.nfev, sol.t.size - 1,
                                                         sol.t[-1] - sol.t[-2])
    np.testing.assert_array_equal(y, ref)


def test_python_acceleration_equals_the_tree_path_bit_for_bit():
    """The function-pointer design: the same integrator over a Python callback (the path of
    constrained models) gives exactly the tree result when the callback is the tree's."""
    model = random_tree(5, seed=3, floating_base=True)
    q, qd = random_state(model, 4)
    tau = np.random.default_rng(1).normal(size=model.nv)
    a = (q.copy(), qd.copy())
    b = (q.copy(), qd.copy())
    ra = _core.dop853(model.create_data(), *a, tau, False, 0.0, 0.2, 1e-9, 1e-11, math.inf, 0.0)
    rb = _core.dop853_callback(model.create_data(), *b,
                               lambda q, qd, t: sf.forward_dynamics(model, q, qd, tau),
                               0.0, 0.2, 1e-9, 1e-11, math.inf, 0.0)
    for x, y in zip(a + ra[:1], b + rb[:1]):
        np.testing.assert_array_equal(x, y)
    assert ra[1] == rb[1]


def test_simulator_with_active_constraints_steps_in_the_core():
    """With an active loop closure the Simulator steps through soa_closure_step: the same C DOP853
    over constrained forward dynamics in C — equal to DOP853 over constrained_forward_dynamics
    given as a Python acceleration."""
    from model_descriptions import example_path
    model = sf.load_model(example_path("four_bar"))
    sim = sf.Simulator(model, method="dop853")
    sim.stabilization = (5.0, 5.0)
    q, qd = sim.q.copy(), sim.qd.copy()
    for _ in range(2):
        sim.step(0.05)
    times = []

    def accel(q, qd, t):
        times.append(t)
        return sf.constrained_forward_dynamics(model, q, qd, np.zeros(model.nv), active=sim.active,
                                               stabilization=(5.0, 5.0)).qdd

    data, t, last = model.create_data(), 0.0, 0.0
    for _ in range(2):
        qdd, last = _core.dop853_callback(data, q, qd, accel, t, 0.05, 1e-8, 1e-10, math.inf, last)
        t += 0.05
    np.testing.assert_allclose(np.r_[sim.q, sim.qd, sim.qdd], np.r_[q, qd, qdd], rtol=1e-12,
                               atol=1e-12)
    assert sim.last_h == pytest.approx(last, rel=1e-12)
    assert min(times) == 0.0 and max(times) == pytest.approx(0.1)
    assert sim.constraint_residuals and all(r < 1e-6 for r in sim.constraint_residuals.values())


# ---------------------------------------------------------------- closed forms
def test_harmonic_oscillator():
    model = Model("slider")
    model.add_body("cart", joint=J.Prismatic((1.0, 0.0, 0.0)), joint_name="x", mass=1.0,
                   inertia=np.eye(3) * 0.1)
    w, x0, v0 = 3.0, 0.4, -1.1
    q, qd, t = np.array([x0]), np.array([v0]), 0.0
    last = 0.0
    for _ in range(10):        # ten calls, the step size carried over
        qdd, last = _core.dop853_callback(model.data, q, qd, lambda q, qd, t: -w * w * q, t, 0.25,
                                          1e-12, 1e-14, math.inf, last)
        t += 0.25
    exact = x0 * np.cos(w * t) + v0 / w * np.sin(w * t)
    assert abs(q[0] - exact) < 1e-10
    assert abs(qd[0] - (-x0 * w * np.sin(w * t) + v0 * np.cos(w * t))) < 1e-10
    assert qdd[0] == -w * w * q[0]


@pytest.mark.parametrize("theta0", [1e-3, 1.0, 2.5])
def test_pendulum_released_from_rest_follows_the_elliptic_solution(theta0):
    """θ(t) = 2 asin(k sn(K(k²) − ω t | k²)), k = sin(θ₀/2), ω² = m g l / (J + m l²); for small
    θ₀ this is θ₀ cos ω t."""
    length, mass, jyy = 0.7, 1.3, 0.02
    model = pendulum(length, mass, jyy)
    w = math.sqrt(mass * 9.81 * length / (jyy + mass * length ** 2))
    sim = sf.Simulator(model, [theta0], [0.0], method="dop853", rtol=1e-12, atol=1e-14)
    k = math.sin(theta0 / 2)
    for _ in range(20):
        sim.step(0.1)
        sn = ellipj(ellipk(k * k) - w * sim.t, k * k)[0]
        assert abs(sim.q[0] - 2 * math.asin(k * sn)) < 1e-9 * theta0
    if theta0 < 0.01:
        assert abs(sim.q[0] - theta0 * math.cos(w * sim.t)) < 1e-6 * theta0


def test_free_body_spinning_about_a_principal_axis():
    """Torque-free spin about a principal axis through the centre of mass: ω constant, the
    quaternion q₀ ⊗ (cos(|ω|t/2), sin(|ω|t/2) ω/|ω|), and a velocity along ω keeps its direction."""
    model = free_body()
    model.gravity = (0.0, 0.0, 0.0)
    q0 = np.r_[np.array([0.9, 0.1, -0.3, 0.2]) / np.linalg.norm([0.9, 0.1, -0.3, 0.2]), 1.0, 2.0, 3.0]
    wz, vz = 2.3, 0.4
    sim = sf.Simulator(model, q0, [0, 0, wz, 0, 0, vz], method="dop853", rtol=1e-12, atol=1e-14)
    for _ in range(8):
        sim.step(0.25)
    th = wz * sim.t
    a, b, c, d = q0[:4]
    rz = np.array([math.cos(th / 2), 0, 0, math.sin(th / 2)])
    quat = np.array([a * rz[0] - d * rz[3], b * rz[0] + c * rz[3], c * rz[0] - b * rz[3],
                     d * rz[0] + a * rz[3]])
    np.testing.assert_allclose(sim.q[:4], quat, atol=1e-10)
    R0 = np.array(_core.quat_to_matrix(*q0[:4]))
    np.testing.assert_allclose(sim.q[4:], q0[4:] + R0 @ [0, 0, vz * sim.t], atol=1e-10)
    np.testing.assert_allclose(sim.qd, [0, 0, wz, 0, 0, vz], atol=1e-10)


def test_energy_of_a_free_chain_and_momentum_of_a_floating_tree_are_conserved():
    chain = serial_chain(7, seed=2)
    q, qd = random_state(chain, 6)
    sim = sf.Simulator(chain, q, qd, method="dop853", rtol=1e-10, atol=1e-12)
    e0 = total_energy(chain, q, qd)
    for _ in range(20):
        sim.step(0.05)
        assert abs(total_energy(chain, sim.q, sim.qd) - e0) < 1e-7 * abs(e0)
    tree = random_tree(6, seed=8, floating_base=True)
    tree.gravity = (0.0, 0.0, 0.0)
    q, qd = random_state(tree, 2)
    sim = sf.Simulator(tree, q, qd, method="dop853", rtol=1e-10, atol=1e-12)
    e0, h0 = total_energy(tree, q, qd), spatial_momentum(tree, q, qd)
    sim.step(1.0)
    assert abs(total_energy(tree, sim.q, sim.qd) - e0) < 1e-7 * abs(e0)
    np.testing.assert_allclose(spatial_momentum(tree, sim.q, sim.qd), h0, atol=1e-8)


# ---------------------------------------------------------------- failures are statuses
def call(model, q, qd, tau=None, t=0.0, h=0.01, rtol=1e-8, atol=1e-10, max_step=math.inf, prev=0.0):
    tau = np.zeros(model.nv) if tau is None else tau
    return _core.dop853(model.data, np.asarray(q, float).copy(), np.asarray(qd, float).copy(), tau,
                        False, t, h, rtol, atol, max_step, prev)


@pytest.mark.parametrize("kw, match", [
    ({"h": 0.0}, "a step size must be finite and > 0"), ({"h": -1e-3}, "step size"),
    ({"h": math.nan}, "step size"), ({"h": math.inf}, "step size"), ({"t": math.nan}, "step size"),
    ({"prev": -1.0}, "step size"), ({"prev": math.nan}, "step size"),
    ({"rtol": -1.0}, "tolerances"), ({"atol": math.nan}, "tolerances"),
    ({"max_step": 0.0}, "max_step"), ({"max_step": math.nan}, "max_step")])
def test_bad_arguments(kw, match):
    model = serial_chain(2)
    with pytest.raises(_core.StatusError, match=match) as e:
        call(model, [0.1, 0.2], [0.0, 0.0], **kw)
    assert e.value.args[1] == _core.BAD_ARG


def test_bad_state_gives_the_messages_of_rk4():
    model = serial_chain(2)
    bad = [([np.nan, 0], [0, 0], None), ([0, 0], [0, np.inf], None), ([0, 0], [0, 0], [np.inf, 0])]
    for q, qd, tau in bad:
        sims = {m: sf.Simulator(model, method=m) for m in ("rk4", "dop853")}
        msgs = {}
        for m, sim in sims.items():
            sim.q[:], sim.qd[:] = q, qd
            if tau is not None:
                sim.tau = np.array(tau, float)
            with pytest.raises(sf.IntegrationError) as e:
                sim.step(0.01)
            msgs[m] = str(e.value)
            assert sim.t == 0.0 and sim.last_h == 0.0
        assert msgs["rk4"] == msgs["dop853"] and "is not finite" in msgs["rk4"]
    model = free_body()
    with pytest.raises(_core.StatusError, match="quaternion of joint 'base'.*not unit length"):
        call(model, [2.0, 0, 0, 0, 0, 0, 0], np.zeros(6))


def test_singular_dynamics_is_reported_like_rk4():
    model = Model("massless")
    model.add_body("b", joint=J.Revolute((0, 0, 1)), joint_name="j", mass=0.0,
                   inertia=np.zeros((3, 3)))
    args = (model.data, np.zeros(1), np.zeros(1), np.zeros(1), False)
    singular = "articulated inertia D of joint 'j' is singular"
    with pytest.raises(_core.StatusError, match=singular) as rk4:
        _core.rk4(*args, 0.01, 1)
    with pytest.raises(_core.StatusError, match=singular) as dop853:
        _core.dop853(*args, 0.0, 0.01, 1e-8, 1e-10, math.inf, 0.0)
    assert rk4.value.args == dop853.value.args


def test_blow_up_and_nan_rates_end_in_a_step_size_failure():
    model = Model("slider")
    model.add_body("cart", joint=J.Prismatic((1.0, 0.0, 0.0)), joint_name="x", mass=1.0,
                   inertia=np.eye(3) * 0.1)
    q, qd = np.zeros(1), np.ones(1)
    with pytest.raises(_core.StatusError, match="adaptive integrator failed: required step size is "
                                                "less than spacing between numbers") as e:
        # v' = v², v(0) = 1 blows up at t = 1
        _core.dop853_callback(model.data, q, qd, lambda q, qd, t: qd * qd, 0.0, 2.0, 1e-8, 1e-10,
                              math.inf, 0.0)
    assert e.value.args[1] == _core.STEP_TOO_SMALL and "(x)" in e.value.args[0]
    np.testing.assert_array_equal(np.r_[q, qd], [0.0, 1.0])        # untouched on failure
    with pytest.raises(_core.StatusError, match="adaptive integrator failed"):
        _core.dop853_callback(model.data, q, qd, lambda q, qd, t: np.array([np.nan]), 0.0, 1.0,
                              1e-8, 1e-10, math.inf, 0.0)


def test_python_acceleration_errors_propagate():
    model = serial_chain(1)

    def accel(q, qd, t):
        raise KeyError("boom")

    with pytest.raises(KeyError, match="boom"):
        _core.dop853_callback(model.data, np.zeros(1), np.zeros(1), accel, 0.0, 0.1, 1e-8, 1e-10,
                              math.inf, 0.0)
    with pytest.raises(ValueError, match=r"qdd must have shape \(1,\)"):
        _core.dop853_callback(model.data, np.zeros(1), np.zeros(1), lambda q, qd, t: [1.0, 2.0],
                              0.0, 0.1, 1e-8, 1e-10, math.inf, 0.0)
    with pytest.raises(TypeError, match="callable"):
        _core.dop853_callback(model.data, np.zeros(1), np.zeros(1), None, 0.0, 0.1, 1e-8, 1e-10,
                              math.inf, 0.0)


def test_a_state_out_of_range_ends_after_a_bounded_number_of_steps():
    """Spinning at 1e6 rad/s needs ~1e7 steps for one second: the call gives up (scipy would run
    on) after SOA_DOP853_MAX_STEPS attempts, state untouched."""
    model = free_body()
    q, qd = model.neutral_configuration(), np.array([1e6, 2e6, -1e6, 0, 0, 0])
    sim = sf.Simulator(model, q, qd, method="dop853")
    with pytest.raises(sf.IntegrationError, match="adaptive integrator failed: more than 20000 steps"):
        sim.step(1.0)
    np.testing.assert_array_equal(np.r_[sim.q, sim.qd], np.r_[q, qd])
    assert sim.t == 0.0 and sim.last_h == 0.0
