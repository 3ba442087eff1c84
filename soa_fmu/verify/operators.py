"""Dense spatial operators of a small system, for verification (SPEC E9).

Builds the stacked operators of seed 000 §2.1–2.2 and §3 — E_φ, φ = (I − E_φ)⁻¹, H, M, and from the
articulated-body quantities P, D, G, K = E_φ G, τ̄ = I − GH, E_ψ = E_φ τ̄, ψ = (I − E_ψ)⁻¹ — as
dense matrices, so tests can check Lemmas 1–5 / Identities 1–6 numerically against the O(N)
recursions.  No engine algorithm uses them; the engine module :mod:`soa_fmu.sensitivities` imports
them for its own cross-check ``mass_matrix_derivative_operators`` (eq. 4.43).

Indexing: block k is body k (base-first numbering).  E_φ has the block φ(p, k) at (p, k) for every
body k with parent p, exactly the connectivity of seed 000 (2.7); with the papers' tip-to-base
numbering the same matrices are lower triangular, here they are upper triangular.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..kinematics import forward_kinematics
from ..model import Model
from ..spatial import phi_matrix


@dataclass
class Operators:
    E_phi: np.ndarray    # 6n × 6n
    phi: np.ndarray      # (I − E_φ)⁻¹
    H: np.ndarray        # nv × 6n, block-diagonal H(k)
    M: np.ndarray        # 6n × 6n, block-diagonal spatial inertias M(k)
    P: np.ndarray        # 6n × 6n, block-diagonal articulated inertias P(k)
    D: np.ndarray        # nv × nv, block-diagonal D(k) = H P H*
    G: np.ndarray        # 6n × nv, block-diagonal G(k) = P H* D⁻¹
    K: np.ndarray        # E_φ G
    tau_bar: np.ndarray  # I − G H
    E_psi: np.ndarray    # E_φ τ̄
    psi: np.ndarray      # (I − E_ψ)⁻¹
    a: np.ndarray        # stacked Coriolis accelerations a(k)
    b: np.ndarray        # stacked gyroscopic forces b(k)
    V: np.ndarray        # stacked spatial velocities

    @property
    def mass_matrix(self) -> np.ndarray:
        """𝓜 = H φ M φ* H*  (seed 000 eq. 2.11; seed 001 eq. 22)."""
        return self.H @ self.phi @ self.M @ self.phi.T @ self.H.T

    def point_map(self, model: Model, frames: list[str]) -> np.ndarray:
        """B (6n × 6 n_c): B(k, c) = φ(O(k), C_c) for each frame C_c on body k (seed 000 eq. 2.13),
        with the point's velocity expressed in the frame's axes (so J = B*φ*H* is the local Jacobian)."""
        n = model.nbodies
        B = np.zeros((6 * n, 6 * len(frames)))
        for c, name in enumerate(frames):
            k, R, p = model.frame_placement(name)
            B[6 * k:6 * k + 6, 6 * c:6 * c + 6] = phi_matrix(R, p)
        return B


def _blkdiag(blocks: list[np.ndarray]) -> np.ndarray:
    rows = sum(b.shape[0] for b in blocks)
    cols = sum(b.shape[1] for b in blocks)
    out = np.zeros((rows, cols))
    r = c = 0
    for b in blocks:
        out[r:r + b.shape[0], c:c + b.shape[1]] = b
        r += b.shape[0]
        c += b.shape[1]
    return out


def _riccati(parent, Hk, inertia, phis) -> list[np.ndarray]:
    """P(k) = M(k) + Σ_c φ(k, c) τ̄(c) P(c) φ*(k, c), τ̄ = I − P H*(H P H*)⁻¹H (seed 001 eqs. 34–36),
    written densely block by block — independent of the C core's sweep."""
    P = [np.array(Mk, dtype=float) for Mk in inertia]
    for k in range(len(P) - 1, -1, -1):
        p = parent[k]
        if p < 0:
            continue
        Pp = P[k]
        if Hk[k].shape[0]:
            D = Hk[k] @ Pp @ Hk[k].T
            if np.linalg.matrix_rank(D) < D.shape[0]:
                raise ValueError("articulated inertia is singular")
            Pp = Pp - Pp @ Hk[k].T @ np.linalg.solve(D, Hk[k] @ Pp)
        P[p] = P[p] + phis[k] @ Pp @ phis[k].T
    return P


def build_operators(model: Model, q, qd=None) -> Operators:
    """Dense operators at (q, q̇).  Only for small systems (sizes 6n × 6n)."""
    w = forward_kinematics(model, q, qd)
    m = model.arrays()
    n = model.nbodies
    E_phi = np.zeros((6 * n, 6 * n))
    for k, p in enumerate(m.parent):
        if p >= 0:
            E_phi[6 * p:6 * p + 6, 6 * k:6 * k + 6] = phi_matrix(w.R[k], w.l[k])
    I6n = np.eye(6 * n)
    phi = np.linalg.inv(I6n - E_phi)
    Hk = [m.S[m.v0[k]:m.v0[k] + m.nvj[k]] for k in range(n)]
    H = _blkdiag(Hk)
    M = _blkdiag(list(m.inertia))
    P = _blkdiag(_riccati(m.parent, Hk, m.inertia, [phi_matrix(w.R[k], w.l[k]) for k in range(n)]))
    D = H @ P @ H.T
    G = P @ H.T @ np.linalg.inv(D)
    tau_bar = I6n - G @ H
    E_psi = E_phi @ tau_bar
    return Operators(E_phi=E_phi, phi=phi, H=H, M=M, P=P, D=D, G=G, K=E_phi @ G, tau_bar=tau_bar,
                     E_psi=E_psi, psi=np.linalg.inv(I6n - E_psi), a=w.a.reshape(-1).copy(),
                     b=w.b.reshape(-1).copy(), V=w.V.reshape(-1).copy())
