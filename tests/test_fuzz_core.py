"""Fuzzing every entry point of soa_fmu._core (the C core behind its CPython extension).

Random trees of every joint type, random states, and hostile inputs: NaN, ±inf, huge and subnormal
values, non-unit and zero quaternions, wrong sizes, shapes and dtypes, non-contiguous, byte-swapped
and read-only arrays, arguments of the wrong type, zero / negative / non-finite step sizes and
tolerances, corrupted model tables and misbehaving Python accelerations.  Every call either returns
finite results or raises a clean error: StatusError / ValueError / TypeError (IndexError or
OverflowError for an integer argument out of range) — never a crash, a SystemError or a silently
non-finite result.  ``make test-sanitize`` runs this file against an AddressSanitizer + UBSan build.
"""
from __future__ import annotations

import functools
import math
import os
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from hypothesis.extra.numpy import arrays

from soa_fmu import _core
from soa_fmu.model import Model
from soa_fmu.verify.builders import random_flexible_tree, random_state, random_tree, serial_chain

CLEAN = (ValueError, TypeError, IndexError, OverflowError)   # StatusError is a ValueError
# SOA_FUZZ_EXAMPLES=2000 for a deeper run than the default few seconds
FUZZ = settings(max_examples=int(os.environ.get("SOA_FUZZ_EXAMPLES", 60)), deadline=None,
                suppress_health_check=list(HealthCheck))
MODERATE = 1e3          # |x| below this: a plausible state, whose results must be finite

ALL_JOINTS = ("revolute", "prismatic", "spherical", "planar", "helical", "cylindrical", "fixed")


@functools.lru_cache(maxsize=None)
def model_for(kind: int, seed: int) -> Model:
    """Kind 0: no bodies; 1: a serial chain; 2: a fixed-base tree of all joint types; 3: the same
    floating (free joint at the root); 4: a tree of rigid and flexible bodies (flexible.c)."""
    if kind == 4:
        return random_flexible_tree(np.random.default_rng(seed), 2 + seed % 5)[0]
    if kind == 0:
        return Model("empty")
    if kind == 1:
        return serial_chain(1 + seed % 4, joint=("revolute", "prismatic")[seed % 2], seed=seed)
    return random_tree(2 + seed % 5, seed=seed, joint_types=ALL_JOINTS, floating_base=kind == 3)


models = st.builds(model_for, st.sampled_from([0, 1, 2, 3, 3, 4, 4]), st.integers(0, 11))


# ---------------------------------------------------------------- hostile values
def _strided(a: np.ndarray) -> np.ndarray:
    b = np.zeros(2 * a.size)
    b[::2] = a
    return b[::2]


def _as(dtype):
    def cast(a: np.ndarray) -> np.ndarray:
        with np.errstate(all="ignore"):
            return a.astype(dtype)
    return cast


def _readonly(a: np.ndarray) -> np.ndarray:
    a = a.copy()
    a.flags.writeable = False
    return a


class Falsy:
    """An object whose truth value cannot be taken (as a use_fext flag)."""

    def __bool__(self):
        raise TypeError("no truth value")


def float_arrays(n: int, moderate: bool = False):
    if moderate:
        return arrays(np.float64, n, elements=st.floats(-MODERATE, MODERATE))
    return st.one_of(
        arrays(np.float64, n, elements=st.floats(-MODERATE, MODERATE)),
        arrays(np.float64, n, elements=st.floats(allow_nan=True, allow_infinity=True)),
        arrays(np.float64, n, elements=st.sampled_from(
            [0.0, -0.0, 1.0, 1e150, -1e200, 1e300, 1.7e308, 5e-324, math.nan, math.inf, -math.inf])))


def vectors(n: int):
    """Anything a caller might pass where a float64 vector of n numbers is expected."""
    good = float_arrays(n)
    return st.one_of(
        good, good,
        good.map(_strided), good.map(_as(">f8")), good.map(_readonly), good.map(_as(np.float32)),
        good.map(_as(object)), good.map(_as(np.complex128)), good.map(list), good.map(tuple),
        good.map(lambda a: a.reshape(n, 1)), good.map(lambda a: np.asfortranarray(np.c_[a, a])),
        arrays(np.int64, n, elements=st.integers(-2**62, 2**62)), arrays(np.bool_, n),
        st.integers(0, 3).map(lambda k: np.ones(n + 1 + k)), st.just(np.ones(max(n - 1, 0))),
        st.just(np.ones(n, dtype="U3")), st.just(np.array(["x"] * n, dtype=object)),
        st.sampled_from([None, "abc", 1.0, 7, {}, [[1.0]], object(), np.float64(2.0)]))


def configurations(model: Model):
    """Valid configurations (unit quaternions) at several scales, slightly or grossly non-unit
    quaternions, zero quaternions, and every hostile vector."""
    def state(seed: int, scale: float, quat_scale: float, zero: bool):
        with np.errstate(all="ignore"):
            q = random_state(model, seed, scale)[0]
        for _, i in model.quaternion_slices():
            q[i:i + 4] *= quat_scale
            if zero:
                q[i:i + 4] = 0.0
        return q

    valid = st.builds(state, st.integers(0, 99), st.sampled_from([1e-3, 1.0, 1e2, 1e150, 1e300]),
                      st.just(1.0), st.just(False))
    return st.one_of(valid, valid, valid,
                     st.builds(state, st.integers(0, 99), st.just(1.0),
                               st.sampled_from([1 + 1e-8, 1.1, 1e-200, 1e200]), st.booleans()),
                     vectors(model.nq))


def flags():
    return st.sampled_from([False, True, 0, 1, None, "", "yes", np.bool_(True), Falsy(),
                            np.array([1, 2])])


def reals():
    return st.one_of(st.floats(allow_nan=True, allow_infinity=True),
                     st.sampled_from([0.0, -1.0, 1e-300, 1e-3, 0.01, 1e300]),
                     st.sampled_from([None, "0.1", 1, True, [0.1], np.float32(0.01)]))


# ---------------------------------------------------------------- the contract
def finite(x) -> bool:
    if x is None:
        return True
    if isinstance(x, (tuple, list)):
        return all(finite(v) for v in x)
    if isinstance(x, dict):
        return all(finite(v) for v in x.values())
    return bool(np.all(np.isfinite(np.asarray(x, dtype=float))))


def outcome(f, *args):
    """f(*args) -> its result (checked finite), or None when it raised a clean error."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")       # numpy's ComplexWarning on a complex argument
        try:
            r = f(*args)
        except CLEAN as e:
            assert str(e), f"{f.__name__}: an error without a message"
            return None
    assert finite(r), f"{f.__name__} returned a non-finite result without an error"
    return r


def outcome_maybe_nan(f, *args):
    """As outcome(), for the maps documented "no checks: any finite input" (NaN in, NaN out)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return f(*args)
        except CLEAN:
            return None


def plausible(*xs) -> bool:
    """Finite float64 vectors of moderate size: inputs whose results must not overflow."""
    return all(isinstance(x, np.ndarray) and x.dtype.kind == "f" and np.all(np.isfinite(x))
               and np.all(np.abs(x) <= MODERATE) for x in xs)


def poison_fext(d: _core.Data, draw) -> None:
    """Sometimes leave hostile values in the external forces a use_fext call reads."""
    fext = d.views()["fext"]
    fext[...] = draw(arrays(np.float64, fext.shape, elements=st.floats(-MODERATE, MODERATE)))
    if fext.size and draw(st.booleans()):
        fext.flat[draw(st.integers(0, fext.size - 1))] = draw(st.sampled_from([math.nan, 1e308]))


# ---------------------------------------------------------------- tree algorithms
@FUZZ
@given(st.data())
def test_dynamics(data):
    draw = data.draw
    model = draw(models)
    d = model.create_data()
    poison_fext(d, draw)
    q, qd, x = draw(configurations(model)), draw(vectors(model.nv)), draw(vectors(model.nv))
    use = draw(flags())
    for name, args in [("aba", (d, q, qd, x, use)), ("aba_bias_free", (d, q, qd, x, use)),
                       ("rnea", (d, q, qd, x, use)), ("crba", (d, q)), ("minv", (d, q)),
                       ("kinematics", (d, q, qd))]:
        outcome(getattr(_core, name), *args)
    outcome(_core.check_state, model.core, q, qd)
    outcome(_core.check_state, model.core, q)
    outcome(_core.check_state, model.core, q, None)
    body = draw(st.one_of(st.integers(-2, model.nbodies + 1), st.just(2**70), st.just("0"),
                          st.just(1.5)))
    outcome(_core.point_jacobian, d, body, draw(vectors(3)))
    # wrong argument counts and types
    for name in ("aba", "rnea", "crba", "minv", "kinematics", "point_jacobian", "check_state"):
        outcome(getattr(_core, name), *([d, q, qd, x, use, 0][:draw(st.integers(0, 6))]))
        outcome(getattr(_core, name), model.core if name != "check_state" else d, q, qd, x, use)


@FUZZ
@given(st.data())
def test_configuration_maps(data):
    draw = data.draw
    model = draw(models)
    cm = model.core
    q, qd = draw(configurations(model)), draw(vectors(model.nv))
    rate = outcome_maybe_nan(_core.configuration_rate, cm, q, qd)
    step = outcome_maybe_nan(_core.integrate_configuration, cm, q, qd)
    must = plausible(q, qd) and _valid(cm, q)
    for r in (rate, step):
        assert r is None or not must or finite(r)
    qq = draw(st.one_of(st.just(q), vectors(model.nq)))
    outcome_maybe_nan(_core.normalize_quaternions, cm, qq)
    if must and isinstance(qq, np.ndarray) and qq is q:
        assert finite(qq)


def _valid(cm, q) -> bool:
    try:
        _core.check_state(cm, q)
        return True
    except CLEAN:
        return False


# ---------------------------------------------------------------- integrators
def inout(draw, n: int, base):
    """For q / qd updated in place: base (mostly a writeable float64 array), or anything else."""
    return draw(st.one_of(st.just(base), st.just(base), vectors(n)))


def fresh(a):
    """A copy of a proper in/out array (so that each kernel starts from it); others as they are."""
    ok = isinstance(a, np.ndarray) and a.dtype == np.float64 and a.flags.writeable \
        and a.flags.c_contiguous
    return a.copy() if ok else a


@FUZZ
@given(st.data())
def test_fixed_step_integrators(data):
    draw = data.draw
    model = draw(models)
    d = model.create_data()
    poison_fext(d, draw)
    q = inout(draw, model.nq, draw(configurations(model)))
    qd = inout(draw, model.nv, draw(float_arrays(model.nv)))
    h = draw(st.one_of(st.sampled_from([1e-3, 1e-2]), reals()))
    nsub = draw(st.one_of(st.integers(1, 4), st.sampled_from([0, -1, 2**31, 2**70, 1.5, "2", None])))
    tau, use = draw(vectors(model.nv)), draw(flags())
    for kernel in (_core.rk4, _core.euler):
        qc, vc = fresh(q), fresh(qd)
        r = outcome(kernel, d, qc, vc, tau, use, h, nsub)
        if r is not None:
            assert finite(qc) and finite(vc)


@FUZZ
@given(st.data())
def test_dop853(data):
    draw = data.draw
    model = draw(models)
    d = model.create_data()
    poison_fext(d, draw)
    q = inout(draw, model.nq, draw(configurations(model)))
    qd = inout(draw, model.nv, draw(float_arrays(model.nv)))
    t = draw(st.one_of(st.just(0.0), reals()))
    h = draw(st.one_of(st.sampled_from([1e-3, 0.05]), reals()))
    rtol, atol = draw(st.one_of(st.just(1e-6), reals())), draw(st.one_of(st.just(1e-8), reals()))
    max_step = draw(st.one_of(st.just(math.inf), reals()))
    prev = draw(st.one_of(st.just(0.0), reals()))
    if isinstance(h, float) and h > 0.05:
        h = 0.05              # a plausible communication step: the work must stay small
    tau, use = draw(vectors(model.nv)), draw(flags())
    r = outcome(_core.dop853, d, q, qd, tau, use, t, h, rtol, atol, max_step, prev)
    if r is not None:
        assert finite(q) and finite(qd) and r[1] >= 0


def _accelerations(model: Model):
    nv = model.nv
    tree = lambda q, qd, t: _core.aba(model.data, q, qd, np.zeros(nv), False)   # noqa: E731

    def raises(q, qd, t):
        raise RuntimeError("boom")

    def reentrant(q, qd, t):      # runs the same integrator on the same Data from inside
        _core.dop853(model.data, q.copy(), qd.copy(), np.zeros(nv), False, 0.0, 1e-3, 1e-6, 1e-8,
                     math.inf, 0.0)
        return tree(q, qd, t)

    return st.sampled_from([tree, reentrant, raises, lambda q, qd, t: None,
                            lambda q, qd, t: np.full(nv, math.nan), lambda q, qd, t: np.ones(nv + 1),
                            lambda q, qd, t: np.full(nv, 1e300), lambda q, qd, t: "x",
                            lambda q, qd, t: -qd, None, 3.0])


@FUZZ
@given(st.data())
def test_dop853_with_a_python_acceleration(data):
    draw = data.draw
    model = draw(models)
    q, qd = random_state(model, draw(st.integers(0, 99)))
    accel = draw(_accelerations(model))
    h = draw(st.sampled_from([1e-3, 0.05, -1.0, math.nan]))
    try:
        data = model.data if draw(st.booleans()) else model.create_data()   # re-entered or not
        r = _core.dop853_callback(data, q, qd, accel, 0.0, h, 1e-6, 1e-8, math.inf, 0.0)
    except (*CLEAN, RuntimeError):
        return
    assert finite(r) and finite(q) and finite(qd)


# ---------------------------------------------------------------- spatial helpers
@FUZZ
@given(st.data())
def test_spatial_helpers(data):
    draw = data.draw
    R, l, x6, x36 = (draw(st.one_of(float_arrays(n, moderate=True), vectors(n)))
                     for n in (9, 3, 6, 36))
    R = np.reshape(R, (3, 3)) if isinstance(R, np.ndarray) and R.size == 9 and draw(st.booleans()) \
        else R
    calls = [(_core.apply_phi, (R, l, x6)), (_core.apply_phi_star, (R, l, x6)),
             (_core.add_phi_inertia, (R, l, x36, x36)), (_core.cross_motion, (x6, x6)),
             (_core.cross_force, (l, x6)), (_core.quat_to_matrix, tuple(draw(reals())
                                                                      for _ in range(4)))]
    for f, args in calls:
        r = outcome_maybe_nan(f, *args)
        if r is not None and plausible(*[np.asarray(a, dtype=float) if _numeric(a) else None
                                         for a in args]):
            assert finite(r), f.__name__
        outcome_maybe_nan(f, *args[:-1])


def _numeric(a) -> bool:
    try:
        np.asarray(a, dtype=float)
        return True
    except (TypeError, ValueError):
        return False


# ---------------------------------------------------------------- Model / Data and corrupted tables
@FUZZ
@given(st.data())
def test_model_tables_fuzzed_then_finished(data):
    """A model whose tables were overwritten with hostile values is either refused by finish()
    (StatusError) or safe for every kernel."""
    draw = data.draw
    src = draw(models)
    names = (tuple(b.name for b in src.bodies), tuple(b.joint_name for b in src.bodies),
             tuple(src.position_names), tuple(src.velocity_names))
    cm = _core.Model(src.nbodies, src.nq, src.nv, names, 0, src.max_modes)
    views, ref = cm.views(), src.core.views()
    for k, v in views.items():
        v[...] = ref[k]
    for _ in range(draw(st.integers(0, 3))):
        key = draw(st.sampled_from(sorted(views)))
        v = views[key]
        if v.size == 0:
            continue
        i = draw(st.integers(0, v.size - 1))
        if v.dtype.kind == "i":
            v.flat[i] = draw(st.one_of(st.integers(-3, 12), st.sampled_from([2**31 - 1, -2**31])))
        else:
            v.flat[i] = draw(st.sampled_from([math.nan, math.inf, -1.0, 0.0, 1e300, -1e300, 1e-300]))
    try:
        cm.finish()
    except _core.StatusError:
        with pytest.raises(ValueError, match="not been finished"):
            _core.Data(cm)
        return
    d = _core.Data(cm)
    q = src.neutral_configuration()
    qd = np.linspace(-1, 1, cm.nv)
    for f, args in [(_core.aba, (d, q, qd, qd, False)), (_core.rnea, (d, q, qd, qd, True)),
                    (_core.crba, (d, q)), (_core.minv, (d, q)), (_core.kinematics, (d, q, qd)),
                    (_core.aba_bias_free, (d, q, qd, qd, False)),
                    (_core.rk4, (d, q.copy(), qd.copy(), qd, False, 1e-3, 2)),
                    (_core.euler, (d, q.copy(), qd.copy(), qd, False, 1e-3, 2)),
                    (_core.dop853, (d, q.copy(), qd.copy(), qd, False, 0.0, 1e-2, 1e-6, 1e-8,
                                    math.inf, 0.0)),
                    (_core.configuration_rate, (cm, q, qd)),
                    (_core.integrate_configuration, (cm, q, qd))]:
        outcome(f, *args)
    outcome(cm.set_gravity, draw(vectors(3)))
    assert isinstance(d.views(), dict) and d.model is cm


@FUZZ
@given(nb=st.one_of(st.integers(-2, 6), st.sampled_from([2**31, 2**64, "1", None])),
       nq=st.integers(-1, 12), nv=st.integers(-1, 12),
       names=st.one_of(st.none(), st.just(()), st.tuples(*[st.just(("a",))] * 4),
                       st.tuples(*[st.lists(st.sampled_from(["a", 1]), max_size=7).map(tuple)] * 4)))
def test_model_and_data_constructors(nb, nq, nv, names):
    try:
        cm = _core.Model(nb, nq, nv, names)
    except CLEAN:
        return
    views = cm.views()
    assert set(views) >= {"parent", "jtype", "mass"}
    with pytest.raises(ValueError, match="not been finished"):
        _core.Data(cm)
    try:
        cm.finish()
    except _core.StatusError:
        return
    d = _core.Data(cm)
    assert isinstance(d.views(), dict)


@pytest.mark.parametrize("arg", [None, 1, "model", object()])
def test_data_of_a_non_model(arg):
    with pytest.raises(TypeError, match="expected a soa_fmu._core.Model"):
        _core.Data(arg)
