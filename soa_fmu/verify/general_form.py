"""The general constrained forward dynamics of seed 003 Part II (4.9), from independent dense
building blocks — the verification path of :func:`soa_fmu.constrained_forward_dynamics`
(``method="general"``), kept outside the engine: the tests hold the O(N) + O(n_c³) recursion of
core/closures.c against it."""
from __future__ import annotations

import numpy as np

from .. import _core
from ..articulated import forward_dynamics, mass_matrix_inverse
from ..constraints import ConstrainedResult, _call as call, secondary_bodies
from ..kinematics import forward_kinematics
from ..model import Model


def general_form(model: Model, inp, q, qd, tau, f_ext, alpha, beta, args) -> ConstrainedResult:
    """Seed 003 Part II general CCFD algorithm (4.9) with the primary/secondary partition of seed
    000 §2.3, from independent building blocks (O(N²) — a verification path):

        (4.9a) θ̈_f of the arms by any forward dynamics (here the tree FD), the object's free
               acceleration from its own Newton–Euler equation at C: M(C)α + b(C) = f(C)
               (f(C): its external force and the generalized force τ of its free joint)
        (4.9b) α_f(0) = J θ̈_f + J̇ θ̇ at the closure points
        (4.9c) Ω = J M⁻¹ J* + A M(C)⁻¹ A*     (M⁻¹ of the arms by Identity 6, dense)
        (4.9d) Ω f = α_f(0) − (Ũ̇ − stabilization)
        (4.9e) M Δθ̈ = −J* f,  M(C) Δα(C) = −A* f
    """
    nv = model.nv
    q = np.asarray(q, dtype=float)
    qd = np.asarray(qd, dtype=float)
    tau = np.asarray(tau, dtype=float)
    active_names = {c.name for j, c in enumerate(inp.constraints) if inp.active[j]}
    objects = secondary_bodies(model, active_names)
    obj = np.zeros(nv, dtype=bool)
    for k in objects:
        b = model.bodies[k]
        obj[b.v_index:b.v_index + 6] = True
    # (4.9a) primary: the tree forward dynamics; secondary: Newton–Euler at C = the object origin
    qdd_f = forward_dynamics(model, q, qd, tau, f_ext)
    w = model.workspace()
    if not f_ext:
        w.fext[:] = 0.0
    inertia = model.arrays().inertia
    g = model.gravity
    Minv = np.zeros((nv, nv))
    P = ~obj
    if P.any():
        Minv[np.ix_(P, P)] = mass_matrix_inverse(model, q)[np.ix_(P, P)]
    wk = forward_kinematics(model, q, qd)
    for k in objects:
        b = model.bodies[k]
        sl = slice(b.v_index, b.v_index + 6)
        Mc, V = inertia[k], qd[sl]
        bC = _core.cross_force(V, Mc @ V)                          # b(C) = V ×̄* M(C) V
        McInv = np.linalg.inv(Mc)
        qdd_f[sl] = np.r_[0.0, 0.0, 0.0, wk.Rw[k].T @ g] + McInv @ (w.fext[k] + tau[sl] - bC)
        Minv[sl, sl] = McInv
    # (4.9b) free closure-point accelerations (kinematics with θ̈_f), right-hand sides
    data = model.data
    _core.closure_state(data, q, qd, qdd_f, *args, alpha, beta)
    n = int(w.cl_row0[len(inp.constraints)])
    # (4.9c) Ω = G M⁻¹ G*, G = A J (arms and object columns)
    G = _core.closure_jacobian(data, inp.active)
    w.cl_S[:n, :n] = G @ Minv @ G.T
    # (4.9d) the forces (same rank handling as the recursive form)
    inp.warn(call(_core.closure_solve, data, inp.active,
                   "constrained forward dynamics (general form)"))
    # (4.9e–g) corrections and total accelerations
    f = w.cl_f[:n]
    qdd = qdd_f - Minv @ (G.T @ f)
    F = np.zeros((len(inp.constraints), 6))
    for j, c in enumerate(inp.constraints):
        if inp.active[j]:
            r0 = int(w.cl_row0[j])
            F[j, :c.size] = -f[r0:r0 + c.size]
    return inp.result(model, qdd, F, np.where(inp.active, w.cl_resid, 0.0))
