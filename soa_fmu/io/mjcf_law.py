"""MuJoCo's contact parameters -> this engine's contact law, per pair (docs/mjcf.md, "Contact").

MuJoCo's contact is a soft constraint (MuJoCo documentation, "Computation: Soft constraints";
``engine_core_constraint.c``: ``getsolparam``, ``getimpedance``, ``mj_makeImpedance``,
``mj_referenceConstraint``): on a contact row of penetration δ (MuJoCo's ``pos`` = -δ) and
velocity v, with impedance d(δ) from ``solimp`` and (K, B) from ``solref``,

    a_ref = -B v + K d δ,     R = (1 - d)/d · Â,     (A + R) f = a_ref - a0

(Â = ``efc_diagApprox``: the pair's translational inverse weights ``body_invweight0``, Â_tran;
a pyramidal cone's edges share one R, a scale s of the normal's: :func:`cone_scale`).  At rest
(qacc = 0) each row carries f = a_ref / R, so a point loaded with f rests at the δ solving

    f = K d(δ)² δ / ((1 - d(δ)) Â)                                          (1)

— nearly linear in δ (d varies only over the first ``solimp[2]`` of penetration).  With a single
mode of N equally loaded points the vertical motion about rest obeys
δ̈ = -d_e B δ̇ - d_e K d δ (d_e = N d / (N d + (1 - d) s): the share of a_ref the solve delivers,
A = N Â_tran on that mode), a damping ratio ζ_M = B sqrt(d_e / (K d)) / 2.

This engine's law (docs/contact.md) is a penalty: f = k δ^n (1 + d_hc δ̇) per point.  Matched
here, per pair, for the load f₀ = g / (N Â_tran) (the weight of the pair's mass 1/Â_tran on its N
resting points: 1 sphere, 2 capsule, 3 cylinder, 4 box or mesh; a geometry pair: the fewer):

- n = 1, k = f₀ / δ₀ with δ₀ the root of (1) at f₀: the resting depth is MuJoCo's at that load,
  and, (1) being linear where d is saturated, at any load there;
- d_hc = 2 ζ_M / sqrt(g δ₀): the damping ratio of small vertical oscillations about rest is
  MuJoCo's (ours: ω² = g/δ₀, c = m g d_hc).

Not matched: the frequency (MuJoCo's ω_M² = d_e K d is far below g/δ₀ — its static depth comes
from the (1 - d) leak of the unforced acceleration, not from a stiffness), the variation of d over
``solimp``'s width (matched at δ₀ only), margins and gaps, torsional and rolling friction
(``condim`` 4 and 6), ``solreffriction`` and ``impratio``.  Friction: μ = the sliding friction
of MuJoCo's mixed parameters (``condim`` 1: 0).
"""
from __future__ import annotations

import math

import numpy as np

MINIMP, MAXIMP, MINVAL, MINMU = 1e-4, 0.9999, 1e-15, 1e-5     # mjMINIMP, mjMAXIMP, mjMINVAL, mjMINMU
DEFAULT_SOLREF = (0.02, 1.0)
RESTING_POINTS = {"sphere": 1, "ellipsoid": 1, "capsule": 2, "cylinder": 3, "box": 4, "mesh": 4}


def mixed_params(m, g1: int, g2: int) -> tuple[int, np.ndarray, np.ndarray, float]:
    """(condim, solref, solimp, sliding friction) of geoms g1, g2 as MuJoCo mixes them
    (``mj_contactParam``): the higher ``priority``'s; at equal priority condim and friction the
    larger, solref and solimp mixed by ``solmix`` (a direct solref on either side: the
    elementwise minimum)."""
    p1, p2 = int(m.geom_priority[g1]), int(m.geom_priority[g2])
    ref1, ref2 = np.asarray(m.geom_solref[g1], float), np.asarray(m.geom_solref[g2], float)
    imp1, imp2 = np.asarray(m.geom_solimp[g1], float), np.asarray(m.geom_solimp[g2], float)
    if p1 != p2:
        g = g1 if p1 > p2 else g2
        return (int(m.geom_condim[g]), np.asarray(m.geom_solref[g], float),
                np.asarray(m.geom_solimp[g], float), float(m.geom_friction[g][0]))
    s1, s2 = float(m.geom_solmix[g1]), float(m.geom_solmix[g2])
    if s1 >= MINVAL and s2 >= MINVAL:
        mix = s1 / (s1 + s2)
    else:
        mix = 0.5 if s1 < MINVAL and s2 < MINVAL else (0.0 if s1 < MINVAL else 1.0)
    ref = mix * ref1 + (1 - mix) * ref2 if ref1[0] > 0 and ref2[0] > 0 else np.minimum(ref1, ref2)
    return (max(int(m.geom_condim[g1]), int(m.geom_condim[g2])), ref, mix * imp1 + (1 - mix) * imp2,
            max(float(m.geom_friction[g1][0]), float(m.geom_friction[g2][0])))


def pair_params(m, i: int) -> tuple[int, np.ndarray, np.ndarray, float]:
    """(condim, solref, solimp, sliding friction) of explicit ``<pair>`` i (its own, as compiled:
    MuJoCo fills what the element omits from the geoms' mix)."""
    return (int(m.pair_dim[i]), np.asarray(m.pair_solref[i], float),
            np.asarray(m.pair_solimp[i], float), float(m.pair_friction[i][0]))


def impedance(solimp, delta: float) -> float:
    """MuJoCo's impedance d at penetration δ ≥ 0 (``getimpedance``, margin 0)."""
    d0, dw, width, mid, power = solimp
    if d0 == dw or width <= MINVAL:
        return 0.5 * (d0 + dw)
    x = delta / width
    if x >= 1 or x <= 0:
        return dw if x >= 1 else d0
    if power == 1:
        y = x
    elif x <= mid:
        y = x ** power / mid ** (power - 1)
    else:
        y = 1 - (1 - x) ** power / (1 - mid) ** (power - 1)
    return d0 + y * (dw - d0)


def reference(solref, solimp, timestep: float, refsafe: bool = True) -> tuple[float, float, np.ndarray]:
    """(K, B, solimp clamped) of MuJoCo's reference acceleration (``getsolparam``,
    ``mj_makeImpedance``): standard solref (τ, ζ): K = 1/(d_max² τ² ζ²), B = 2/(d_max τ), τ ≥ 2 h
    (refsafe); direct (−stiffness, −damping): K = stiffness/d_max², B = damping/d_max."""
    ref = np.array(solref, float)
    if (ref[0] > 0) != (ref[1] > 0):                  # mixed format: MuJoCo's default
        ref = np.array(DEFAULT_SOLREF)
    if refsafe and ref[0] > 0:
        ref[0] = max(ref[0], 2 * timestep)
    imp = np.array(solimp, float)
    imp[[0, 1, 3]] = np.clip(imp[[0, 1, 3]], MINIMP, MAXIMP)
    imp[2], imp[4] = max(0.0, imp[2]), max(1.0, imp[4])
    dmax = imp[1]
    if ref[0] > 0:
        K = 1 / max(MINVAL, dmax * dmax * ref[0] * ref[0] * ref[1] * ref[1])
        B = 2 / max(MINVAL, dmax * ref[0])
    else:
        K, B = -ref[0] / max(MINVAL, dmax * dmax), -ref[1] / max(MINVAL, dmax)
    return K, B, imp


def resting_depth(K: float, solimp, load: float) -> float:
    """δ solving (1) with load = f Â (an acceleration): K d(δ)² δ / (1 - d(δ)) = load (bisection
    to 1e-15 relative)."""
    if not load > 0:
        return 0.0
    f = lambda x: K * impedance(solimp, x) ** 2 * x / (1 - impedance(solimp, x)) - load
    lo, hi = 0.0, 1e-6
    while f(hi) < 0 and hi < 1e6:
        lo, hi = hi, 2 * hi
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if f(mid) < 0 else (lo, mid)
        if hi - lo <= 1e-15 * hi:
            break
    return 0.5 * (lo + hi)


def cone_scale(friction: float, condim: int, pyramidal: bool, impratio: float) -> float:
    """s = Â / Â_tran of the normal direction: 1 for an elliptic cone or condim 1; a pyramidal
    cone's 2 (condim − 1) edges share R = 2 μ² (1 − d)/d (1 + μ₀²) Â_tran (``mj_diagApprox``,
    ``mj_makeImpedance``; μ = μ₀ / sqrt(impratio)), so s = μ² (1 + μ₀²) / (condim − 1)."""
    if condim == 1 or not pyramidal:
        return 1.0
    mu0 = max(MINMU, friction)
    return (mu0 * mu0 / max(MINVAL, impratio)) * (1 + mu0 * mu0) / (condim - 1)


def hunt_crossley(solref, solimp, friction: float, condim: int, tran: float, points: int,
                  gravity: float, timestep: float, refsafe: bool = True, cone: float = 1.0) -> dict:
    """The law constants (stiffness, exponent, dissipation, friction) that rest a pair of MuJoCo
    parameters (solref, solimp, sliding friction, condim) at MuJoCo's depth with MuJoCo's damping
    ratio (module docstring): ``tran`` the pair's translational inverse weight (1/kg), ``cone``
    its normal's Â / tran (:func:`cone_scale`), ``points`` its resting points N, ``gravity`` |g|
    (0: 9.81 as the reference load)."""
    g = gravity if gravity > 0 else 9.81
    K, B, imp = reference(solref, solimp, timestep, refsafe)
    mu = max(MINMU, friction) if condim > 1 else 0.0
    if not (K > 0 and tran > 0):                       # no spring, or nothing that moves
        return {"friction": mu}
    delta = resting_depth(K, imp, g * cone / points)   # (1) with f Â = g s / N
    d = impedance(imp, delta)
    d_e = points * d / (points * d + (1 - d) * cone)   # A = N tran on the vertical mode
    zeta = B * math.sqrt(d_e / (K * d)) / 2
    return {"stiffness": g / (points * tran * delta), "exponent": 1.0,
            "dissipation": 2 * zeta / math.sqrt(g * delta), "friction": mu}
