"""Operational-space inertia by the Ω recursion (SPEC E10).

Seed 000 (3.10) with Appendix A (A.3)–(A.5), seed 002 eqs. (18)–(20), seed 003 Part II (6.7)–(6.10):

    J M⁻¹ J* = B* ψ* H* D⁻¹ H ψ B = B* Ω B,        Ω ≜ ψ* H* D⁻¹ H ψ          (3.10), (20)

Ω is never formed.  Its diagonal blocks Υ(k) = Ω(k, k) satisfy the outward (base-to-tip) recursion

    Υ(k) = ψ*(p, k) Υ(p) ψ(p, k) + H*(k) D⁻¹(k) H(k),   ψ(p, k) = φ(p, k) τ̄(k)      (A.3)–(A.5)

and an off-diagonal block between bodies i and j whose deepest common ancestor is c — on the same
branch (c = i or c = j) or on different branches of the tree — is

    Ω(i, j) = ψ*(c, i) Υ(c) ψ(c, j)                                                  (A.4), (A.5)

(Ω(i, j) = 0 when i and j hang from world on different roots).  So for a set of points C_s on
bodies k_s with B(k_s, s) = φ(O(k_s), C_s):

    Λ⁻¹(s, t) = [ψ(c, k_s) B_s]* Υ(c) [ψ(c, k_t) B_t]

Cost: Υ is swept only over the bodies on the paths from the points to the base, ψ(k, k_s) B_s is
carried up each point's path once (6 × 6 blocks), and each pair costs one 6 × 6 congruence at its
common ancestor: O(N) for the articulated-body quantities + O(Σ_s depth(k_s)) + O(n_p²) — O(N) per
point / point pair, never O(N³) (without Lemma 4, (3.9), it would be).

Tip-force correction accelerations (seed 002 eq. 18; seed 000 (3.12), (A.6)):

    Δβ̇ = M⁻¹ J* f = [I − HψK]* D⁻¹ H ψ B f

is the bias-free innovations filter/smoother (articulated.py) run with the forces f as the only
input — :func:`correction_sweep`.

Conventions: the papers' "Λ = J M⁻¹ J*" (seed 000) is here ``operational_space_inertia_inverse``;
the operational-space inertia of Khatib (seed 002 §5.2) is its inverse,
``operational_space_inertia``.  Forces f = [N; F], velocities V = [ω; v].
"""
from __future__ import annotations

from typing import NamedTuple
import weakref

import numpy as np
from numba import njit
from numba.extending import register_jitable
from numpy.lib.stride_tricks import as_strided

from .articulated import aba_kernel, innovations_filter, innovations_smoother
from .kinematics import as_vector, pack_external_forces, raise_for_status, world_placements
from .model import Model, ModelError, view1, view2, view3, views
from .spatial import INLINE, JIT, add_phi_block, add_phi_inertia


# ---------------------------------------------------------------- a set of points on the tree
class PointSet(NamedTuple):
    """Per-call arrays of the Ω recursion for n_p points (one flat int and one float buffer)."""

    body: np.ndarray    # (np,) body carrying point s; −1: world (no dof moves it)
    depth: np.ndarray   # (nb,) number of ancestors of each body
    mask: np.ndarray    # (nb,) 1 on the paths from the points to the base
    R: np.ndarray       # (np, 3, 3) point axes in the body frame (x_body = R x_point)
    l: np.ndarray       # (np, 3) body origin -> point, body frame
    Ups: np.ndarray     # (nb, 6, 6) Υ(k) = Ω(k, k)
    Y: np.ndarray       # (np, nb, 6, 6) ψ(k, k_s) B_s for every ancestor k of point s
    L: np.ndarray       # (6np, 6np) B* Ω B = J M⁻¹ J*
    eye: np.ndarray     # (6, 6) identity
    t66: np.ndarray     # (6, 6, 6) scratch


@register_jitable
def point_views(pi: np.ndarray, pf: np.ndarray) -> PointSet:
    """Named views into the flat point buffers (compiled inline, or plain numpy from Python)."""
    npt, nb = pi[0], pi[1]
    o = 2
    body, o = view1(pi, o, npt)
    depth, o = view1(pi, o, nb)
    mask, o = view1(pi, o, nb)
    o = 0
    R, o = view3(pf, o, npt, 3, 3)
    l, o = view2(pf, o, npt, 3)
    Ups, o = view3(pf, o, nb, 6, 6)
    Y = as_strided(pf[o:], shape=(npt, nb, 6, 6), strides=(8 * nb * 36, 8 * 36, 8 * 6, 8))
    o += npt * nb * 36
    L, o = view2(pf, o, 6 * npt, 6 * npt)
    eye, o = view2(pf, o, 6, 6)
    t66, o = view3(pf, o, 6, 6, 6)
    return PointSet(body, depth, mask, R, l, Ups, Y, L, eye, t66)


def point_buffers(model: Model, npt: int) -> tuple[np.ndarray, np.ndarray]:
    """Flat (int, float) buffers of a point set of ``npt`` points on ``model`` (allocated once)."""
    nb = model.nbodies
    depth = np.zeros(nb, dtype=np.int64)
    for k, b in enumerate(model.bodies):
        depth[k] = 0 if b.parent < 0 else depth[b.parent] + 1
    pi = np.zeros(2 + npt + 2 * nb, dtype=np.int64)
    pi[0], pi[1] = npt, nb
    pi[2:] = -1
    pi[2 + npt:2 + npt + nb] = depth
    pi[2 + npt + nb:] = 0
    nf = npt * 12 + nb * 36 + npt * nb * 36 + 36 * npt * npt + 36 + 6 * 36
    pf = np.zeros(nf)
    point_views(pi, pf).eye[:] = np.eye(6)
    return pi, pf


# ---------------------------------------------------------------- Ω recursion (compiled)
@njit(**INLINE)
def mark_paths(m, p) -> None:
    """mask(k) = 1 for every body on the path from a point to the base."""
    p.mask[:] = 0
    for s in range(p.body.shape[0]):
        k = p.body[s]
        while k >= 0 and p.mask[k] == 0:
            p.mask[k] = 1
            k = m.parent[k]


@njit(**JIT)
def tau_bar_block(S: np.ndarray, v0: int, n: int, G: np.ndarray, X: np.ndarray,
                  out: np.ndarray) -> None:
    """out = τ̄(k) X = X − G(k) H(k) X for a 6 × 6 block of forces (seed 000 (3.2)); S holds the rows
    H(k) from v0, G = G(k).  (Per-body helpers take arrays: passing the model tuples costs more
    than the arithmetic.)"""
    for c in range(6):
        for i in range(6):
            out[i, c] = X[i, c]
        for d in range(n):
            hx = 0.0
            for i in range(6):
                hx += S[v0 + d, i] * X[i, c]
            for i in range(6):
                out[i, c] -= G[i, d] * hx


@njit(**JIT)
def tau_bar_congruence(S: np.ndarray, v0: int, n: int, G: np.ndarray, Dinv: np.ndarray,
                       X: np.ndarray, Y: np.ndarray, Gam: np.ndarray) -> None:
    """X ← τ̄*(k) X τ̄(k) + H*(k) D⁻¹(k) H(k) for a symmetric 6 × 6 X (the joint step of (A.5)):

        with Y = X G, Γ = G*Y + D⁻¹:   X − H*Y* − Y H + H*Γ H        (Y, Γ: 6 × 6 scratch)"""
    if n == 0:
        return
    for d in range(n):
        for i in range(6):
            s = 0.0
            for j in range(6):
                s += X[i, j] * G[j, d]
            Y[d, i] = s
    for d in range(n):
        for e in range(n):
            s = Dinv[d, e]
            for i in range(6):
                s += G[i, d] * Y[e, i]
            Gam[d, e] = s
    for i in range(6):
        for j in range(i, 6):
            s = X[i, j]
            for d in range(n):
                sdi = S[v0 + d, i]
                sdj = S[v0 + d, j]
                s -= sdi * Y[d, j] + Y[d, i] * sdj
                for e in range(n):
                    s += sdi * Gam[d, e] * S[v0 + e, j]
            X[i, j] = s
            X[j, i] = s


@njit(**JIT)
def phi_star_congruence(R: np.ndarray, l: np.ndarray, U: np.ndarray, out: np.ndarray,
                        t: np.ndarray) -> None:
    """out = φ*(p, k) U φ(p, k) for a symmetric 6 × 6 U (force -> motion map, parent frame).

    With the block swap Π = [[0, I], [I, 0]], Π φ*(p, k) Π = φ(R ᵀ, −Rᵀl) is the placement of the
    parent in the child, so out = Π [φ(Rᵀ, −Rᵀl) (Π U Π) φ*(Rᵀ, −Rᵀl)] Π: the inertia transform
    ``add_phi_inertia`` of spatial.py does the work.  ``t`` is a (≥4, 6, 6) scratch."""
    Rt = t[2, :3, :3]
    lt = t[2, 3, :3]
    for i in range(3):
        for j in range(3):
            Rt[i, j] = R[j, i]
    for i in range(3):
        lt[i] = -(R[0, i] * l[0] + R[1, i] * l[1] + R[2, i] * l[2])
    V = t[3]
    for i in range(6):
        ii = i + 3 if i < 3 else i - 3
        for j in range(6):
            jj = j + 3 if j < 3 else j - 3
            V[ii, jj] = U[i, j]
    acc = t[4]
    acc[:] = 0.0
    add_phi_inertia(Rt, lt, V, acc, t)
    for i in range(6):
        ii = i + 3 if i < 3 else i - 3
        for j in range(6):
            jj = j + 3 if j < 3 else j - 3
            out[ii, jj] = acc[i, j]


@njit(**INLINE)
def omega_sweep(m, w, p) -> None:
    """Υ(k) = ψ*(p, k) Υ(p) ψ(p, k) + H*(k) D⁻¹(k) H(k), base to tip, on the marked paths
    (seed 000 (A.3)–(A.5); seed 002 eq. (20) recursion; seed 003 (6.10))."""
    for k in range(m.parent.shape[0]):
        if p.mask[k] == 0:
            continue
        U = p.Ups[k]
        q = m.parent[k]
        if q < 0:
            U[:] = 0.0
        else:
            phi_star_congruence(w.R[k], w.l[k], p.Ups[q], U, p.t66)
        tau_bar_congruence(m.S, m.v0[k], m.nv[k], w.G[k], w.Dinv[k], U, p.t66[1], p.t66[2])


@njit(**INLINE)
def psi_paths(m, w, p) -> None:
    """Y_s(k) = ψ(k, k_s) B_s on each point's path to the base: Y_s(k_s) = φ(O(k_s), C_s),
    Y_s(parent) = φ(parent, k) τ̄(k) Y_s(k)  (the transfer Ω(k, m) = Ω(k, 1_j) ψ(1_j, m) of (A.5))."""
    T = p.t66[5]
    for s in range(p.body.shape[0]):
        k = p.body[s]
        if k < 0:
            continue
        Yk = p.Y[s, k]
        Yk[:] = 0.0
        add_phi_block(p.R[s], p.l[s], p.eye, Yk)
        while m.parent[k] >= 0:
            q = m.parent[k]
            tau_bar_block(m.S, m.v0[k], m.nv[k], w.G[k], p.Y[s, k], T)
            Yq = p.Y[s, q]
            Yq[:] = 0.0
            add_phi_block(w.R[k], w.l[k], T, Yq)
            k = q


@njit(**JIT)
def common_ancestor(parent: np.ndarray, depth: np.ndarray, i: int, j: int) -> int:
    """Deepest common ancestor of bodies i and j (i or j itself), −1 when none."""
    while depth[i] > depth[j]:
        i = parent[i]
    while depth[j] > depth[i]:
        j = parent[j]
    while i != j:
        i = parent[i]
        j = parent[j]
    return i


@njit(**JIT)
def point_inertia_inverse(m, w, p) -> None:
    """L = B* Ω B = J M⁻¹ J* for the point set: L(s, t) = Y_s(c)* Υ(c) Y_t(c), c the common ancestor
    of k_s and k_t.  Needs the Riccati sweep (P, D⁻¹, G) at the current configuration."""
    mark_paths(m, p)
    omega_sweep(m, w, p)
    psi_paths(m, w, p)
    npt = p.body.shape[0]
    UY = p.t66[0]
    p.L[:] = 0.0
    for s in range(npt):
        ks = p.body[s]
        if ks < 0:
            continue
        for t in range(s, npt):
            kt = p.body[t]
            if kt < 0:
                continue
            c = common_ancestor(m.parent, p.depth, ks, kt)
            if c < 0:
                continue
            Ys, Yt, U = p.Y[s, c], p.Y[t, c], p.Ups[c]
            for i in range(6):
                for j in range(6):
                    a = 0.0
                    for r in range(6):
                        a += U[i, r] * Yt[r, j]
                    UY[i, j] = a
            for i in range(6):
                for j in range(6):
                    a = 0.0
                    for r in range(6):
                        a += Ys[r, i] * UY[r, j]
                    p.L[6 * s + i, 6 * t + j] = a
                    p.L[6 * t + j, 6 * s + i] = a


@njit(**JIT)
def correction_sweep(m, w, zero_T: np.ndarray, zero6: np.ndarray, dqdd: np.ndarray) -> None:
    """Δβ̇ = M⁻¹ H φ f = [I − HψK]* D⁻¹ H ψ f for body forces f in w.fext (seed 000 (A.6), seed 002
    eq. 18 algorithm, seed 003 (6.4)): the bias-free innovations filter with the forces as its only
    input, then the bias-free smoother.  Needs the Riccati sweep; overwrites w.f, w.alpha (= Δα)."""
    innovations_filter(m, w, zero_T, False, True)
    innovations_smoother(m, w, zero6, False, dqdd)


@njit(**INLINE)
def point_placements(m, w, p, bodies: np.ndarray, Rf: np.ndarray, pf: np.ndarray,
                     world_axes: bool) -> None:
    """B_s for frames fixed on bodies: the frame's own axes, or world-aligned axes at its origin."""
    for s in range(bodies.shape[0]):
        k = bodies[s]
        p.body[s] = k
        if k < 0:
            continue
        for i in range(3):
            p.l[s, i] = pf[s, i]
            for j in range(3):
                p.R[s, i, j] = w.Rw[k, j, i] if world_axes else Rf[s, i, j]


@njit(**JIT)
def osim_kernel(mi, mf, wf, pi, pfb, bodies, Rf, pf, world_axes, L, dqdd):
    """After ``aba_kernel`` (placements, P, D⁻¹, G in the workspace): J M⁻¹ J* of the frames into L
    by the Ω recursion when ``bodies`` is not empty, else Δβ̇ = M⁻¹ J* f for the forces packed in
    w.fext into dqdd (seed 002 eq. 18 with f = −f(0))."""
    m, w = views(mi, mf, wf)
    if bodies.shape[0] == 0:
        correction_sweep(m, w, np.zeros(dqdd.shape[0]), np.zeros(6), dqdd)
        return
    p = point_views(pi, pfb)
    world_placements(m, w)
    point_placements(m, w, p, bodies, Rf, pf, world_axes)
    point_inertia_inverse(m, w, p)
    L[:] = p.L


def _articulated(model: Model, q) -> None:
    """Placements and the Riccati sweep (P, D⁻¹, G) at θ, by the tree's compiled forward dynamics."""
    q = as_vector(q, model.nq, "q")
    z = np.zeros(model.nv)
    raise_for_status(model, *aba_kernel(*model.packed(), q, z, z, False, np.empty(model.nv)))


# ---------------------------------------------------------------- Python API
_point_cache: "weakref.WeakKeyDictionary[Model, dict]" = weakref.WeakKeyDictionary()


def _points(model: Model, npt: int) -> tuple[np.ndarray, np.ndarray]:
    """Cached point buffers of ``npt`` points (rebuilt when the model's bodies change)."""
    mi = model.packed()[0]
    per_model = _point_cache.get(model)
    if per_model is None or per_model.get("mi") is not mi:
        per_model = {"mi": mi}
        _point_cache[model] = per_model
    buf = per_model.get(npt)
    if buf is None:
        buf = per_model[npt] = point_buffers(model, npt)
    return buf


def _frame_list(frames) -> list[str]:
    if isinstance(frames, str):
        return [frames]
    frames = list(frames)
    if not frames:
        raise ValueError("frames: give at least one body or frame name")
    return frames


def operational_space_inertia_inverse(model: Model, q, frames, reference: str = "world") -> np.ndarray:
    """Λ⁻¹ = J M⁻¹ J* (6m × 6m) of m bodies/frames by the O(N) Ω recursion (seed 000 (3.10),
    (A.3)–(A.5); seed 002 eqs. 19–20).

    J stacks the frames' Jacobians as :func:`soa_fmu.frame_jacobian` gives them: ``reference="world"``
    (world-aligned axes at each frame origin, the default) or ``"local"`` (each frame's own axes).
    Off-diagonal 6 × 6 blocks couple frames on the same or on different branches of the tree.
    A frame on ``world`` gives zero rows.  (Seed 000 calls this matrix Λ.)"""
    if reference not in ("world", "local"):
        raise ValueError(f"reference must be 'world' or 'local', got {reference!r}")
    names = _frame_list(frames)
    n = len(names)
    bodies = np.empty(n, dtype=np.int64)
    Rf = np.empty((n, 3, 3))
    pf = np.empty((n, 3))
    for s, name in enumerate(names):
        try:
            bodies[s], Rf[s], pf[s] = model.frame_placement(name)
        except ModelError as e:
            raise ValueError(f"frames: {e}") from None
    _articulated(model, q)
    pi, pfb = _points(model, n)
    L = np.empty((6 * n, 6 * n))
    osim_kernel(*model.packed(), pi, pfb, bodies, Rf, pf, reference == "world", L, np.zeros(model.nv))
    return L


def operational_space_inertia(model: Model, q, frames, reference: str = "world") -> np.ndarray:
    """Λ = (J M⁻¹ J*)⁻¹, the operational-space inertia of the frames (seed 002 §5.2).

    Raises ValueError when J M⁻¹ J* is singular: the frames' Jacobian has lost rank (a kinematic
    singularity, or more task coordinates than joints moving them)."""
    Linv = operational_space_inertia_inverse(model, q, frames, reference)
    ev = np.linalg.eigvalsh(Linv)
    if not ev[-1] > 0 or ev[0] <= 1e-12 * ev[-1]:
        raise ValueError(f"operational-space inertia of {_frame_list(frames)} is singular: J M⁻¹ J* "
                         f"has rank {int(np.sum(ev > 1e-12 * max(ev[-1], 0.0)))} of {Linv.shape[0]} "
                         "(kinematic singularity or too few joints moving these frames)")
    return np.linalg.inv(Linv)


def correction_accelerations(model: Model, q, forces) -> np.ndarray:
    """Δβ̇ = M⁻¹ J* f: the joint accelerations caused solely by spatial forces f = (N, F) applied TO
    bodies/frames (mapping name -> 6-vector in that frame's axes, as ``f_ext``), by the O(N)
    recursion of seed 002 eq. (18) / seed 000 (A.6).  With the papers' tip force f(0) exerted BY the
    tip on the environment, f = −f(0) and Δθ̈ = −M⁻¹ J* f(0)."""
    q = as_vector(q, model.nq, "q")
    if not pack_external_forces(model, model.workspace(), forces):
        return np.zeros(model.nv)
    _articulated(model, q)
    dqdd = np.empty(model.nv)
    pi, pfb = _points(model, 0)
    osim_kernel(*model.packed(), pi, pfb, np.zeros(0, np.int64), np.zeros((0, 3, 3)),
                np.zeros((0, 3)), False, np.zeros((0, 0)), dqdd)
    return dqdd


__all__ = ["operational_space_inertia_inverse", "operational_space_inertia",
           "correction_accelerations"]
