"""Flexible links: finite-element models and their modal reduction (SPEC E15; seed 000 §4).

A flexible link k is, as in seed 000 §4, a free-free finite-element model: n node points Q(j) in the
body frame, a mass matrix m_k and a stiffness K_k (6n × 6n, per node the dofs
[ux, uy, uz, rx, ry, rz]), and one node pinned at the inboard joint (its 6 dofs removed: the seed's
h_k, u_k = h_k u_kᶠ).  This module is pure numpy and runs once, at load time:

* :func:`beam` builds the model of a 3-D Euler–Bernoulli beam (consistent mass matrices);
* :func:`load_fe` reads one from a ``.npz`` file and checks it (located errors);
* :func:`reduce` keeps ``modes`` clamped-interface modes (or all nodal dofs) and returns the body's
  generalized mass matrix 𝓜 = [B; Ψ*] m [B; Ψ*]* of the velocity [ω; v; η̇] (seed 000 (4.3) for one
  link), the modal stiffness and damping, the mode shapes in spatial order and the rigid mass
  properties read off 𝓜.

The equations are in docs/flexible.md.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from numbers import Integral, Real

import numpy as np

SYMMETRY_RTOL = 1e-9          # |A − Aᵀ| ≤ SYMMETRY_RTOL · max |A|
DEFINITE_RTOL = 1e-12         # M (and K clamped): λ_min > DEFINITE_RTOL · λ_max
SEMIDEFINITE_RTOL = 1e-9      # K: λ_min ≥ −SEMIDEFINITE_RTOL · λ_max
RIGID_RTOL = 1e-6             # rigid-body checks of M (translation block m·I) and K (K Bᵀ = 0)


class FlexibleError(ValueError):
    """A finite-element model that cannot be used: names the file (or ``beam``), the key and the node
    or row."""


@dataclass(frozen=True)
class FEModel:
    """A link's free-free finite-element model (seed 000 §4)."""
    nodes: np.ndarray     # (n, 3) node locations Q(j), body frame, metres
    M: np.ndarray         # (6n, 6n) free-free mass matrix m_k, per node [ux, uy, uz, rx, ry, rz]
    K: np.ndarray         # (6n, 6n) free-free stiffness K_k
    pinned: int           # the node pinned at the inboard joint (0-based)

    @property
    def nnodes(self) -> int:
        return self.nodes.shape[0]


@dataclass(frozen=True)
class Reduced:
    """A flexible body ready for the recursion: m modal (or nodal) coordinates η."""
    nodes: np.ndarray        # (n, 3) as in FEModel
    pinned: int
    shapes: np.ndarray       # (n, 6, m) node j's deformation per unit η, SPATIAL order [r; u], body axes
    frequencies: np.ndarray  # (m,) rad/s, ascending (clamped-interface eigenfrequencies)
    mass_matrix: np.ndarray  # (6+m, 6+m) 𝓜 about the body origin, body axes, velocity [ω; v; η̇]
    stiffness: np.ndarray    # (m, m) Ψᵀ K Ψ
    damping: np.ndarray      # (m, m)
    mass: float              # rigid mass
    com: np.ndarray          # (3,) centre of mass, body frame
    inertia: np.ndarray      # (3, 3) rotational inertia about the centre of mass, body axes

    @property
    def nmodes(self) -> int:
        return self.frequencies.shape[0]


# ------------------------------------------------------------------------------------------------
# Rigid-body map Bᵀ (seed 000 (4.3): V_kᶠ = B_k* V(k) + h_k* u_k)

def _skew(p: np.ndarray) -> np.ndarray:
    return np.array([[0.0, -p[2], p[1]], [p[2], 0.0, -p[0]], [-p[1], p[0], 0.0]])


def rigid_map(nodes: np.ndarray) -> np.ndarray:
    """Bᵀ (6n × 6): the nodal velocities, FE order [u̇; ṙ] per node, of the rigid motion [ω; v] of
    the body frame at its origin: u̇(j) = v + ω × Q(j), ṙ(j) = ω (B_k* of seed 000 (4.3), rows
    reordered translation first)."""
    nodes = np.asarray(nodes, dtype=float)
    Bt = np.zeros((6 * nodes.shape[0], 6))
    for j, Q in enumerate(nodes):
        Bt[6 * j:6 * j + 3, 0:3] = -_skew(Q)
        Bt[6 * j:6 * j + 3, 3:6] = np.eye(3)
        Bt[6 * j + 3:6 * j + 6, 0:3] = np.eye(3)
    return Bt


# ------------------------------------------------------------------------------------------------
# The built-in beam

def _positive(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, Real) or not np.isfinite(value) or value <= 0:
        raise FlexibleError(f"beam: {name} must be a positive finite number (got {value!r})")
    return float(value)


def beam(length: float, rho_A: float, EA: float, EI_y: float, EI_z: float, GJ: float,
         elements: int, rho_J: float | None = None) -> FEModel:
    """A 3-D Euler–Bernoulli beam along the body's +x axis from the body origin, ``elements`` equal
    elements, node 0 at x = 0 pinned.  Consistent mass matrices: linear shape functions for axial
    (EA, ρA) and torsion (GJ, ρJ), cubic Hermite for bending in x–y (uy, rz; EI_z) and x–z (uz, ry;
    EI_y); no rotary inertia of the cross-section in bending (Euler–Bernoulli).  ``rho_J`` (polar
    mass moment per length, kg·m) defaults to that of a homogeneous section, ρA (EI_y + EI_z)/EA."""
    L = _positive("length", length)
    rA = _positive("rho_A", rho_A)
    EA = _positive("EA", EA)
    EIy = _positive("EI_y", EI_y)
    EIz = _positive("EI_z", EI_z)
    GJ = _positive("GJ", GJ)
    rJ = rA * (EIy + EIz) / EA if rho_J is None else _positive("rho_J", rho_J)
    if isinstance(elements, bool) or not isinstance(elements, Integral) or elements < 1:
        raise FlexibleError(f"beam: elements must be a positive integer (got {elements!r})")
    ne = int(elements)
    le = L / ne
    n = ne + 1
    nodes = np.zeros((n, 3))
    nodes[:, 0] = np.linspace(0.0, L, n)

    bar_k = np.array([[1.0, -1.0], [-1.0, 1.0]]) / le          # linear element: ∫ N'ᵀN'
    bar_m = np.array([[2.0, 1.0], [1.0, 2.0]]) * le / 6.0       # ∫ NᵀN
    l = le
    herm_k = np.array([[12, 6 * l, -12, 6 * l], [6 * l, 4 * l * l, -6 * l, 2 * l * l],
                       [-12, -6 * l, 12, -6 * l], [6 * l, 2 * l * l, -6 * l, 4 * l * l]]) / l**3
    herm_m = np.array([[156, 22 * l, 54, -13 * l], [22 * l, 4 * l * l, 13 * l, -3 * l * l],
                       [54, 13 * l, 156, -22 * l], [-13 * l, -3 * l * l, -22 * l, 4 * l * l]]) * l / 420
    flip = np.diag([1.0, -1.0, 1.0, -1.0])                      # x–z plane: dw/dx = −ry
    ke = np.zeros((12, 12))
    me = np.zeros((12, 12))
    # (element dof indices into [node a 0..5, node b 6..11], stiffness, mass)
    for idx, k, m in (([0, 6], EA * bar_k, rA * bar_m),                       # ux
                      ([3, 9], GJ * bar_k, rJ * bar_m),                       # rx
                      ([1, 5, 7, 11], EIz * herm_k, rA * herm_m),             # uy, rz
                      ([2, 4, 8, 10], EIy * flip @ herm_k @ flip, rA * flip @ herm_m @ flip)):
        ke[np.ix_(idx, idx)] += k
        me[np.ix_(idx, idx)] += m
    K = np.zeros((6 * n, 6 * n))
    M = np.zeros((6 * n, 6 * n))
    for e in range(ne):
        s = slice(6 * e, 6 * e + 12)
        K[s, s] += ke
        M[s, s] += me
    return FEModel(nodes=nodes, M=M, K=K, pinned=0)


# ------------------------------------------------------------------------------------------------
# Reading and checking a finite-element model

def _check_symmetric(where: str, key: str, A: np.ndarray) -> np.ndarray:
    scale = np.max(np.abs(A))
    d = np.tril(np.abs(A - A.T))
    if d.max() > SYMMETRY_RTOL * scale:
        row, col = (int(i) for i in np.unravel_index(np.argmax(d), d.shape))
        raise FlexibleError(f"{where}: {key} is not symmetric (max |{key} - {key}^T| = "
                            f"{d.max():.3g} at row {row}, column {col}; node {row // 6})")
    return 0.5 * (A + A.T)


def _extreme_eigenvalues(A: np.ndarray) -> tuple[float, float]:
    w = np.linalg.eigvalsh(A)
    return float(w[0]), float(w[-1])


def _lowest_mode_node(A: np.ndarray) -> int:
    """The node (6 rows each) where the eigenvector of A's lowest eigenvalue is largest (for errors)."""
    return int(np.argmax(np.abs(np.linalg.eigh(A)[1][:, 0]))) // 6


def check_fe(fe: FEModel, where: str = "fe") -> FEModel:
    """Check a finite-element model (shapes, finite, symmetric, M positive definite, K positive
    semi-definite, pinned in range, rigid-body consistency); return it with M, K symmetrized."""
    nodes = np.asarray(fe.nodes, dtype=float)
    if nodes.ndim != 2 or nodes.shape[1] != 3 or nodes.shape[0] < 2:
        raise FlexibleError(f"{where}: nodes must have shape (n, 3) with n >= 2 (got {nodes.shape})")
    n = nodes.shape[0]
    if not np.all(np.isfinite(nodes)):
        j = int(np.argwhere(~np.isfinite(nodes))[0, 0])
        raise FlexibleError(f"{where}: nodes has a non-finite entry (node {j})")
    mats = {}
    for key in ("M", "K"):
        A = np.asarray(getattr(fe, key), dtype=float)
        if A.shape != (6 * n, 6 * n):
            raise FlexibleError(f"{where}: {key} must have shape ({6 * n}, {6 * n}) for {n} nodes "
                                f"(got {A.shape})")
        if not np.all(np.isfinite(A)):
            r = int(np.argwhere(~np.isfinite(A))[0, 0])
            raise FlexibleError(f"{where}: {key} has a non-finite entry (row {r}, node {r // 6})")
        mats[key] = _check_symmetric(where, key, A)
    M, K = mats["M"], mats["K"]
    lo, hi = _extreme_eigenvalues(M)
    if not hi > 0 or lo <= DEFINITE_RTOL * hi:
        raise FlexibleError(f"{where}: M is not positive definite (eigenvalues {lo:.3g} .. {hi:.3g}; "
                            f"the lowest mode is largest at node {_lowest_mode_node(M)})")
    lo, hi = _extreme_eigenvalues(K)
    if lo < -SEMIDEFINITE_RTOL * max(hi, 0.0) or not hi > 0:
        raise FlexibleError(f"{where}: K is not positive semi-definite with some stiffness "
                            f"(eigenvalues {lo:.3g} .. {hi:.3g}; the lowest mode is largest at node "
                            f"{_lowest_mode_node(K)})")
    pinned = fe.pinned
    if isinstance(pinned, (bool, np.bool_)) or not isinstance(pinned, Integral) or not 0 <= pinned < n:
        raise FlexibleError(f"{where}: pinned must be a node index in 0..{n - 1} (got {pinned!r})")
    pinned = int(pinned)
    # rigid-body consistency: a rigid motion of the body neither deforms it (K Bᵀ = 0) nor has a
    # kinetic energy other than a rigid body's (translation block of B M Bᵀ = m·I)
    Bt = rigid_map(nodes)
    KB = K @ Bt
    kscale = np.max(np.abs(K)) * max(1.0, np.max(np.abs(Bt)))
    if np.max(np.abs(KB)) > RIGID_RTOL * kscale:
        r = int(np.unravel_index(np.argmax(np.abs(KB)), KB.shape)[0])
        raise FlexibleError(f"{where}: K resists a rigid-body motion (|K B^T| = {np.max(np.abs(KB)):.3g}"
                            f" at row {r}, node {r // 6}): a free-free stiffness is needed")
    Mt = (Bt.T @ M @ Bt)[3:6, 3:6]
    m = np.trace(Mt) / 3.0
    if np.max(np.abs(Mt - m * np.eye(3))) > RIGID_RTOL * m:
        raise FlexibleError(f"{where}: M does not move rigidly: the translational block of "
                            f"B M B^T is not m*I (m = {m:.6g}, max deviation "
                            f"{np.max(np.abs(Mt - m * np.eye(3))):.3g})")
    # the clamped structure must be stiff in every direction (no mechanism)
    free = np.setdiff1d(np.arange(6 * n), np.arange(6 * pinned, 6 * pinned + 6))
    Kcc = K[np.ix_(free, free)]
    lo, hi = _extreme_eigenvalues(Kcc)
    if lo <= DEFINITE_RTOL * hi:
        node = int(free[6 * _lowest_mode_node(Kcc)]) // 6
        raise FlexibleError(f"{where}: K clamped at the pinned node {pinned} is singular (a mechanism "
                            f"or an unattached node at node {node}; eigenvalues {lo:.3g} .. {hi:.3g})")
    return FEModel(nodes=nodes, M=M, K=K, pinned=pinned)


def load_fe(path: str | os.PathLike) -> FEModel:
    """Read a link's finite-element model from a ``.npz`` (keys ``nodes`` (n, 3), ``M``, ``K``
    (6n, 6n), ``pinned`` (integer)) and check it; every error names the file and the key."""
    where = os.fspath(path)
    try:
        with np.load(path, allow_pickle=False) as z:
            data = {k: z[k] for k in z.files}
    except FileNotFoundError:
        raise FlexibleError(f"{where}: no such file") from None
    except (OSError, ValueError) as exc:
        raise FlexibleError(f"{where}: not a readable .npz file ({exc})") from None
    for key in ("nodes", "M", "K", "pinned"):
        if key not in data:
            raise FlexibleError(f"{where}: missing key {key!r} (the file has {sorted(data)})")
    for key in ("nodes", "M", "K"):
        if data[key].dtype.kind not in "biuf":
            raise FlexibleError(f"{where}: {key} must be a real array (got dtype {data[key].dtype})")
    p = data["pinned"]
    if p.size != 1 or p.dtype.kind not in "iu":
        raise FlexibleError(f"{where}: pinned must be one integer node index (got {p!r})")
    return check_fe(FEModel(nodes=data["nodes"], M=data["M"], K=data["K"], pinned=int(p.reshape(()))),
                    where)


# ------------------------------------------------------------------------------------------------
# Modal reduction

def _clamped_modes(M: np.ndarray, K: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Solve K φ = ω² M φ by Cholesky M = L Lᵀ: eigh(L⁻¹ K L⁻ᵀ); Φ mass-normalized (Φᵀ M Φ = I),
    ascending, each mode's largest entry positive."""
    L = np.linalg.cholesky(M)
    Linv = np.linalg.solve(L, np.eye(M.shape[0]))
    A = Linv @ K @ Linv.T
    w, Y = np.linalg.eigh(0.5 * (A + A.T))
    Phi = Linv.T @ Y
    big = np.argmax(np.abs(Phi), axis=0)
    Phi = Phi * np.sign(Phi[big, np.arange(Phi.shape[1])])
    return np.sqrt(np.clip(w, 0.0, None)), Phi


def reduce(fe: FEModel, modes: int, damping_ratio: float = 0.0) -> Reduced:
    """Reduce a finite-element model to ``modes`` clamped-interface modes (the model clamped at its
    pinned node), mass-normalized, ascending; ``modes == 0`` keeps all 6(n−1) nodal dofs of the
    unpinned nodes.  Modal damping 2ζω (``modes == 0``: the classical damping M Φ diag(2ζω) Φᵀ M).
    Returns the body's generalized mass 𝓜 = [B; Ψᵀ] m [B; Ψᵀ]ᵀ (seed 000 (4.3)).  ``fe`` is
    expected checked: from :func:`beam`, :func:`load_fe` or :func:`check_fe`."""
    n = fe.nodes.shape[0]
    nf = 6 * (n - 1)
    if isinstance(modes, bool) or not isinstance(modes, Integral) or not 0 <= modes <= nf:
        raise FlexibleError(f"modes must be an integer in 0..{nf} (6 per unpinned node; 0 = all "
                            f"nodal dofs) (got {modes!r})")
    if (isinstance(damping_ratio, bool) or not isinstance(damping_ratio, Real)
            or not np.isfinite(damping_ratio) or damping_ratio < 0):
        raise FlexibleError(f"damping_ratio must be a finite number >= 0 (got {damping_ratio!r})")
    M, K, p = fe.M, fe.K, int(fe.pinned)
    free = np.setdiff1d(np.arange(6 * n), np.arange(6 * p, 6 * p + 6))
    Mcc, Kcc = M[np.ix_(free, free)], K[np.ix_(free, free)]
    omega, Phi = _clamped_modes(Mcc, Kcc)
    h = np.zeros((6 * n, nf))                                   # seed 000's h*: u_f = h* u
    h[free, np.arange(nf)] = 1.0
    if modes > 0:
        omega, Phi = omega[:modes], Phi[:, :modes]
        Psi = h @ Phi
        stiffness = np.diag(omega**2)
        damping = np.diag(2.0 * damping_ratio * omega)
    else:
        Psi = h
        stiffness = Kcc.copy()
        MPhi = Mcc @ Phi
        damping = MPhi @ np.diag(2.0 * damping_ratio * omega) @ MPhi.T
    m = Psi.shape[1]
    X = np.hstack([rigid_map(fe.nodes), Psi])                   # [Bᵀ, Ψ]: x = [ω; v; η̇] → u̇_f
    MM = X.T @ M @ X
    MM = 0.5 * (MM + MM.T)
    shapes = Psi.reshape(n, 6, m)[:, [3, 4, 5, 0, 1, 2], :]     # FE [u; r] → spatial [r; u]
    mass = float(np.trace(MM[3:6, 3:6]) / 3.0)
    c = MM[0:3, 3:6]                                            # = m [com]×
    mcx = 0.5 * (c - c.T)
    com = np.array([mcx[2, 1], mcx[0, 2], mcx[1, 0]]) / mass
    cx = _skew(com)
    inertia = MM[0:3, 0:3] + mass * cx @ cx                     # I_o = I_c − m [c]×[c]×
    inertia = 0.5 * (inertia + inertia.T)
    return Reduced(nodes=np.array(fe.nodes, dtype=float), pinned=p, shapes=shapes,
                   frequencies=omega.copy(), mass_matrix=MM, stiffness=0.5 * (stiffness + stiffness.T),
                   damping=0.5 * (damping + damping.T), mass=mass, com=com, inertia=inertia)
