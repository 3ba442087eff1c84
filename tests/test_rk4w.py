"""RK4W (core/integrators.c, docs/joints.md): a fourth-order explicit Runge-Kutta method made a
stiffly accurate, L-stable Rosenbrock W-method of W-order 3, gamma = 0.42.  From the C tableau
(``_core.rosenbrock_tableau``) these tests recover the untransformed (alpha, Gamma, b, b^) and check
every property the comment claims to round-off: Butcher's eight order-4 conditions, the W-method's
conditions up to order 3 for any Jacobian (enumerated as trees of f and A vertices), stiff
accuracy, L- and A-stability, the embedded estimate; the same for ROS34PW2 and ROS2.  They
re-derive the free coefficients from their five equations, and check the behaviour: a step is
that explicit Runge-Kutta method where no stiff term is engaged, the observed orders 4 and 3, the
stability function on a linear damped joint, a stiff stop's rebound at every phase of the impact
within the step, and the error control."""
from __future__ import annotations

import functools
import math

import numpy as np
import pytest
from scipy.linalg import solve_triangular
from scipy.optimize import fsolve

import soa_fmu as sf
from soa_fmu import _core
from soa_fmu.integrators import METHODS
from soa_fmu.verify.builders import random_state, serial_chain
from test_real_joints import pendulum
from test_rosenbrock import damped_pendulum, run

GAMMA = 0.42
ONE = np.ones(4)


# ---------------------------------------------------------------- the tableau and its trees
def untransformed(method: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(alpha, Gamma, b, b^) of a C tableau: Hairer & Wanner IV.7's transformed form a = alpha
    Gamma^-1, c = diag(1/gamma) - Gamma^-1, m = b Gamma^-1, e = (b - b^) Gamma^-1 inverted."""
    t = _core.rosenbrock_tableau(METHODS.index(method))
    s = len(t["m"])
    G = solve_triangular(np.eye(s) / t["gamma"] - t["c"], np.eye(s), lower=True)
    b = t["m"] @ G
    return t["a"] @ G, G, b, b - t["e"] @ G


def forests(n: int) -> tuple:
    """The multisets of trees with n vertices in all (sorted tuples)."""
    if n == 0:
        return ((),)
    return tuple(sorted({tuple(sorted((t,) + rest)) for k in range(1, n + 1) for t in trees(k)
                         for rest in forests(n - k)}))


@functools.cache
def trees(n: int) -> tuple:
    """The W-method's rooted trees with n vertices: ("f", children...) a derivative of f with any
    number of children, ("A", child) the Jacobian the method uses, one child (Hairer & Wanner
    IV.7, Steihaug & Wolfbrandt 1979)."""
    if n == 1:
        return (("f",),)
    return tuple([("A", t) for t in trees(n - 1)] + [("f",) + kids for kids in forests(n - 1)])


def phi(t: tuple, alpha: np.ndarray, G: np.ndarray) -> np.ndarray:
    """Elementary weight per stage: an f vertex multiplies its children's alpha Phi, an A vertex
    is Gamma Phi of its child (gamma_ii included)."""
    if t[0] == "A":
        return G @ phi(t[1], alpha, G)
    out = np.ones(len(alpha))
    for kid in t[1:]:
        out = out * (alpha @ phi(kid, alpha, G))
    return out


def density(t: tuple) -> int:
    """gamma(t) of a tree of f vertices only: its order times its children's densities."""
    return order(t) * math.prod(density(k) for k in t[1:])


def order(t: tuple) -> int:
    return 1 + sum(order(k) for k in t[1:])


def explicit(t: tuple) -> bool:
    return t[0] == "f" and all(explicit(k) for k in t[1:])


def residuals(alpha, G, b, max_order: int, explicit_only: bool = False) -> np.ndarray:
    """b Phi(t) - 1/gamma(t) for the trees of f vertices, b Phi(t) for those with an A vertex, up
    to max_order."""
    return np.array([b @ phi(t, alpha, G) - (1.0 / density(t) if explicit(t) else 0.0)
                     for n in range(1, max_order + 1) for t in trees(n)
                     if explicit(t) or not explicit_only])


def stability(b, beta, z):
    """R(z) = 1 + z b^T (I - z beta)^-1 1 (beta = alpha + Gamma)."""
    s = len(b)
    return 1 + z * b @ np.linalg.solve(np.eye(s) - z * beta, np.ones(s))


def r_closed(z, g):
    """The stability function of a four-stage W-method of order 3 with R(-inf) = 0
    (ROS34PW2's, core/integrators.c): its z^4 term vanishes."""
    return (1 + (1 - 4 * g) * z + (0.5 - 4 * g + 6 * g * g) * z ** 2
            + (1 / 6 - 2 * g + 6 * g * g - 4 * g ** 3) * z ** 3) / (1 - g * z) ** 4


def test_tree_enumeration():
    """The enumeration has the known counts: 1, 2, 5 W-trees of order 1-3 (the 8 conditions of
    core/integrators.c's list) and 1, 1, 2, 4 trees of f vertices of order 1-4 (Butcher's 8)."""
    assert [len(trees(n)) for n in (1, 2, 3)] == [1, 2, 5]
    assert [sum(explicit(t) for t in trees(n)) for n in (1, 2, 3, 4)] == [1, 1, 2, 4]


def test_rk4w_is_rk4_and_a_stiffly_accurate_l_stable_w_method_of_order_3():
    """RK4W's C tableau, untransformed: (alpha, b) meets the 8 order-4 conditions of an explicit
    RK method and the W-method's 8 conditions to order 3 for any A (to 1e-14); it is stiffly
    accurate (b_j = alpha_4j + gamma_4j), R(-inf) = 0, max |R(iy)| <= 1 and R is ROS34PW2's closed
    form with gamma = 0.42; the stage abscissae are 0, u, v, 1 with u, v in (0, 1) (no stage
    beyond the step)."""
    alpha, G, b, _ = untransformed("rk4w")
    assert np.all(np.triu(alpha) == 0) and np.allclose(np.diag(G), GAMMA, rtol=0, atol=1e-16)
    assert np.abs(residuals(alpha, G, b, 4, explicit_only=True)).max() < 1e-14
    assert np.abs(residuals(alpha, G, b, 3)).max() < 1e-14
    beta = alpha + G
    assert np.abs(b - beta[3]).max() < 1e-14
    assert abs(1 - b @ np.linalg.solve(beta, ONE)) < 1e-14
    assert abs(stability(b, beta, -1e12)) < 1e-10
    assert max(abs(stability(b, beta, 1j * y)) for y in np.logspace(-3, 6, 400)) <= 1 + 1e-14
    for z in (-0.1, -1.0, -10.0, -1e3, 2j - 1, 0.5):
        assert stability(b, beta, z) == pytest.approx(r_closed(z, GAMMA), rel=1e-13, abs=1e-15)
    c = alpha @ ONE
    assert c[0] == 0 and np.all((0 < c[1:3]) & (c[1:3] < 1)) and c[3] == pytest.approx(1, abs=1e-15)


def test_rk4w_embedded_estimate():
    """RK4W's embedded b^ (the error estimate b - b^): sum b^ = 1, b^ alpha = 1/2, b^ gamma' = 0
    (W-order 2 for any A) and R^(-inf) = 1 - b^T beta^-1 1 = -1/2, to 1e-14; it is not b (the
    estimate does not vanish)."""
    alpha, G, b, bh = untransformed("rk4w")
    assert np.abs(residuals(alpha, G, bh, 2)).max() < 1e-14
    assert 1 - bh @ np.linalg.solve(alpha + G, ONE) == pytest.approx(-0.5, abs=1e-14)
    assert np.abs(b - bh).max() > 0.1


@pytest.mark.parametrize("method,w_order", [("ros34pw2", 3), ("ros2", 2)])
def test_ros34pw2_and_ros2_tableaus(method, w_order):
    """ROS34PW2: W-order 3 for any A, stiffly accurate, R(-inf) = 0 and R its closed form (its
    gamma the root of g^3 - 3 g^2 + 3/2 g - 1/6), A-stable; embedded b^ of W-order 2.  ROS2:
    W-order 2, R(-inf) = 0, A-stable; b^ = (1, 0) (first order).  As core/integrators.c lists."""
    alpha, G, b, bh = untransformed(method)
    g = G[0, 0]
    beta = alpha + G
    assert np.abs(residuals(alpha, G, b, w_order)).max() < 1e-14
    assert np.abs(residuals(alpha, G, bh, w_order - 1)).max() < 1e-14
    assert abs(1 - b @ np.linalg.solve(beta, np.ones(len(b)))) < 1e-14
    assert max(abs(stability(b, beta, 1j * y)) for y in np.logspace(-3, 6, 400)) <= 1 + 1e-14
    if method == "ros34pw2":
        assert abs(g ** 3 - 3 * g * g + 1.5 * g - 1 / 6) < 1e-16
        assert np.abs(b - beta[3]).max() < 1e-14
        for z in (-0.1, -1.0, -10.0, -1e3, 2j - 1):
            assert stability(b, beta, z) == pytest.approx(r_closed(z, g), rel=1e-13)
    else:
        assert g == pytest.approx(1 - 1 / math.sqrt(2), abs=1e-16)
        assert np.abs(bh - [1, 0]).max() < 1e-15 and np.abs(b - [0, 1]).max() < 1e-15


# ---------------------------------------------------------------- re-derived
def rk4_family(u: float, v: float) -> tuple[np.ndarray, np.ndarray]:
    """The four-stage fourth-order explicit RK method with c = (0, u, v, 1) (Butcher, Numerical
    Methods for ODEs, sec. 235)."""
    D = 6 * u * v - 4 * u - 4 * v + 3
    b2 = (2 * v - 1) / (12 * u * (v - u) * (1 - u))
    b3 = (1 - 2 * u) / (12 * v * (v - u) * (1 - v))
    b4 = D / (12 * (1 - u) * (1 - v))
    a32 = v * (v - u) / (2 * u * (1 - 2 * u))
    a42 = (1 - u) * (u + v - 1 - (2 * v - 1) ** 2) / (2 * u * (v - u) * D)
    a43 = (1 - 2 * u) * (1 - u) * (1 - v) / (v * (v - u) * D)
    alpha = np.array([[0, 0, 0, 0], [u, 0, 0, 0], [v - a32, a32, 0, 0],
                      [1 - a42 - a43, a42, a43, 0]], float)
    return alpha, np.array([1 - b2 - b3 - b4, b2, b3, b4])


def rk4w_of(x) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(alpha, Gamma, b) of x = (u, v, gamma_21, gamma_31, gamma_32), stiffly accurate:
    gamma_4j = b_j - alpha_4j."""
    alpha, b = rk4_family(x[0], x[1])
    G = np.eye(4) * GAMMA
    G[1, 0], G[2, 0], G[2, 1] = x[2:]
    G[3, :3] = b[:3] - alpha[3, :3]
    return alpha, G, b


def five_equations(x) -> np.ndarray:
    """b_4 = gamma and the four W-order-3 conditions RK4 does not meet by itself."""
    alpha, G, b = rk4w_of(x)
    gp, c = G @ ONE, alpha @ ONE
    return np.array([b[3] - GAMMA, b @ gp, b @ alpha @ gp, b @ G @ c, b @ G @ gp])


def test_rk4w_coefficients_re_derived():
    """The five equations solved afresh (fsolve from (0.8, 0.6, -0.7, -0.5, -0.2)) give the u, v,
    gamma_ij of the comment and of the C tableau untransformed (to 5e-14: the solve's round-off,
    condition 240) and, transformed, its a, c, m (to 3e-13); the embedded b^ = b + t n (n spanning
    the null space of its three order conditions, t setting R^(-inf) = -1/2) gives its e."""
    x = fsolve(five_equations, [0.8, 0.6, -0.7, -0.5, -0.2], xtol=1e-14)
    assert np.abs(five_equations(x)).max() < 1e-15
    alpha_c, G_c, _, _ = untransformed("rk4w")
    for ref in ([0.82541543480477112856, 0.64482029598308668076, -0.73720899509929073378,
                 -0.5277301545207767054, -0.17946629861296051569],
                [alpha_c[1, 0], alpha_c[2] @ ONE, G_c[1, 0], G_c[2, 0], G_c[2, 1]]):
        np.testing.assert_allclose(x, ref, rtol=0, atol=5e-14)
    alpha, G, b = rk4w_of(x)
    Gi = np.linalg.inv(G)
    t = _core.rosenbrock_tableau(METHODS.index("rk4w"))
    assert t["gamma"] == GAMMA
    np.testing.assert_allclose(t["a"], alpha @ Gi, rtol=0, atol=3e-13)
    np.testing.assert_allclose(t["c"], np.eye(4) / GAMMA - Gi, rtol=0, atol=3e-13)
    np.testing.assert_allclose(t["m"], b @ Gi, rtol=0, atol=3e-13)
    N = np.array([ONE, alpha @ ONE, G @ ONE])              # sum, b^ alpha_i, b^ gamma'_i
    n = np.r_[np.linalg.solve(N[:, :3], -N[:, 3]), 1.0]
    bh = b + n / (2 * n @ np.linalg.solve(alpha + G, ONE))
    np.testing.assert_allclose(t["e"], (b - bh) @ Gi, rtol=0, atol=3e-13)


def test_rosenbrock_tableau_rejects_other_methods():
    """The accessor names what it refuses: the explicit methods, auto, out-of-range codes."""
    for code in (0, 3, 7, -1, 2 ** 33 + 6):
        with pytest.raises(ValueError, match=f"method {code} is not a Rosenbrock method"):
            _core.rosenbrock_tableau(code)


# ---------------------------------------------------------------- behaviour
def smooth_chain():
    """Three revolute links under gravity, no dissipation, stops or contact (auto: rk4)."""
    model = serial_chain(3, seed=2)
    q, qd = random_state(model, 1)
    return model, q, qd


def test_a_step_without_stiff_terms_is_the_explicit_rk_method():
    """Where no stiff term is engaged (sigma_i = 0, A = 0) one rk4w step of 10 ms is the explicit
    RK method of the untransformed (alpha, b), computed here from the Simulator's acceleration,
    to 1e-13 (relative); ros34pw2's step is not (sigma_i = 1: its A keeps theta-dot's f(theta))."""
    model, q, qd = smooth_chain()
    assert sf.Simulator(model).integrator_used == "rk4"
    sim = sf.Simulator(model, q, qd, method="rk4w")
    alpha, _, b, _ = untransformed("rk4w")
    h, n = 0.01, model.nv

    def F(y):
        return np.r_[y[n:], sim.acceleration(y[:n], y[n:])]
    y0, K = np.r_[q, qd], []
    for i in range(4):
        K.append(F(y0 + h * sum(alpha[i, j] * K[j] for j in range(i))))
    y1 = y0 + h * sum(bi * k for bi, k in zip(b, K))
    qq, vv = q.copy(), qd.copy()
    _core.rk4w(model.data, qq, vv, np.zeros(n), False, h, 1)
    assert np.abs(np.r_[qq, vv] - y1).max() < 1e-13 * np.abs(y1 - y0).max()
    qq, vv = q.copy(), qd.copy()
    _core.ros34pw2(model.data, qq, vv, np.zeros(n), False, h, 1)
    assert np.abs(np.r_[qq, vv] - y1).max() > 1e-7 * np.abs(y1 - y0).max()


def test_observed_orders_4_smooth_and_3_damped():
    """Halving h divides the error at 1 s against DOP853 (1e-13) by 16 on the smooth chain (RK4:
    order 4) and by 8 on the damped pendulum (its damping in A: W-order 3), within 12 %."""
    model, q, qd = smooth_chain()

    def final(method, h, **kw):
        sim = sf.Simulator(model, q, qd, method=method, max_step=h, **kw)
        sim.step(1.0)
        return np.r_[sim.q, sim.qd]
    ref = final("dop853", 1.0, rtol=1e-13, atol=1e-13)
    e = [np.abs(final("rk4w", h) - ref).max() for h in (0.02, 0.01, 0.005)]
    assert all(0.88 * 16 < r < 1.12 * 16 for r in (e[0] / e[1], e[1] / e[2])), e
    damped = damped_pendulum()
    ref = run(damped, "dop853", 1.0, 0.01, rtol=1e-13, atol=1e-13)
    e = [np.abs(run(damped, "rk4w", 1.0, h) - ref).max() for h in (0.01, 0.005, 0.0025)]
    assert all(0.88 * 8 < r < 1.12 * 8 for r in (e[0] / e[1], e[1] / e[2])), e


def test_stability_function_on_a_linear_damped_joint():
    """A damped joint without gravity is linear: one rk4w step multiplies beta by R(z), ROS34PW2's
    closed form with gamma = 0.42, z = -h b / I, for b from 1e-3 to 1e9 (z = -1e6: beta gone in
    one step)."""
    h = 1e-3
    for damping in (1e-3, 1.0, 1e3, 1e9):
        model = damped_pendulum(damping=damping, gravity=False)
        z = -h * damping / (1.0 + 1e-3)                 # m l² + I about the hinge
        q, qd = np.array([0.0]), np.array([1.0])
        _core.rk4w(model.data, q, qd, np.zeros(1), False, h, 1)
        assert qd[0] == pytest.approx(r_closed(z, GAMMA), rel=1e-8, abs=1e-15), damping
    assert abs(qd[0]) < 1e-5


def test_a_stiff_stop_struck_at_every_phase_of_the_step():
    """tests/test_real_joints.py's 1e6 N m/rad stop (h^2 k / I = 1000 at 1 ms) struck at six
    phases within a 1 ms step (q0 from 0 to 4.9 mm at 5 rad/s): rk4w leaves it at DOP853's speed
    (1e-10) within 2 % at every phase (measured: 1.1 % at most); ros2 and ros34pw2 miss it by far
    at some phase (ros2 leaves at 5-15x that speed at five of the six, ros34pw2 sticks to the stop
    at one: 0.5 % of it)."""
    model = pendulum(mass=0.01, length=0.1, inertia=1e-3,
                     limits={"lower": -0.1, "upper": 0.1, "stop_stiffness": 1e6})

    def leaving(method, q0):
        sim = sf.Simulator(model, q0=[q0], qd0=[5.0], method=method, rtol=1e-10, atol=1e-10)
        for _ in range(500):
            sim.step(1e-3)
        assert abs(sim.q[0]) < 0.1 + 1e-3, (method, q0)
        return sim.qd[0]
    miss = {"ros2": 0.0, "ros34pw2": 0.0}
    for q0 in np.linspace(0.0, 0.0049, 6):
        ref = leaving("dop853", q0)
        assert ref == pytest.approx(-0.2956, rel=1e-3)
        assert leaving("rk4w", q0) == pytest.approx(ref, rel=0.02), q0
        for method in miss:
            miss[method] = max(miss[method], abs(leaving(method, q0) / ref - 1))
    assert miss["ros2"] > 3 and miss["ros34pw2"] > 0.5, miss


@pytest.mark.parametrize("model_of", ["damped", "smooth"])
def test_error_control_meets_the_tolerance(model_of):
    """rk4w with error control at rtol = atol = 1e-8, 1e-9: the error at 1 s against DOP853
    (1e-13) is below rtol on the damped pendulum and the smooth chain (its b^ second order, the
    step fourth or third), and ten times tighter is at least three times smaller."""
    model, q, qd = (damped_pendulum(), [1.0], [0.0]) if model_of == "damped" else smooth_chain()
    ref = run(model, "dop853", 1.0, 0.01, q, qd, rtol=1e-13, atol=1e-13)
    errs = [np.abs(run(model, "rk4w", 1.0, 0.01, q, qd, error_control=True, rtol=rtol, atol=rtol)
                   - ref).max() for rtol in (1e-8, 1e-9)]
    assert errs[0] < 1e-8 and errs[1] < 1e-9 and errs[0] > 3 * errs[1], errs
