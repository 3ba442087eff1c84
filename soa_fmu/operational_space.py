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

Cost: Υ is swept only over the bodies on the paths from the points to the base, ψ(c, k_s) is
carried up each path once (6 × 6 blocks), and each pair costs one 6 × 6 congruence where the two
paths meet: O(N) for the articulated-body quantities + O(Σ_s depth(k_s)) + O(n_p²) — never O(N³)
(without Lemma 4, (3.9), it would be).

Tip-force correction accelerations (seed 002 eq. 18; seed 000 (3.12), (A.6)):

    Δβ̇ = M⁻¹ J* f = [I − HψK]* D⁻¹ H ψ B f

is the bias-free innovations filter/smoother run with the forces f as the only input.

The recursions are the C core's ``soa_fmu/core/operational_space.c`` (``soa_point_inertia_inverse``,
``soa_correction_sweep``), in the inertial frame where φ is the identity and ψ(p, k) = τ̄(k).

Conventions: the papers' "Λ = J M⁻¹ J*" (seed 000) is here ``operational_space_inertia_inverse``;
the operational-space inertia of Khatib (seed 002 §5.2) is its inverse,
``operational_space_inertia``.  Forces f = [N; F], velocities V = [ω; v].
"""
from __future__ import annotations

import numpy as np

from . import _core
from .kinematics import external_forces
from .model import Model, ModelError


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
    bodies = np.empty(n, dtype=np.intc)
    R = np.empty((n, 3, 3))
    pos = np.empty((n, 3))
    for s, name in enumerate(names):
        try:
            bodies[s], R[s], pos[s] = model.frame_placement(name)
        except ModelError as e:
            raise ValueError(f"frames: {e}") from None
    return _core.operational_space_inverse(model.data, q, bodies, R.reshape(-1), pos.reshape(-1),
                                           reference == "world")


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
    if not external_forces(model, None, forces):
        _core.check_state(model.core, q)
        return np.zeros(model.nv)
    return _core.correction_accelerations(model.data, q)


__all__ = ["operational_space_inertia_inverse", "operational_space_inertia",
           "correction_accelerations"]
