"""Export a :class:`~soa_fmu.Model` to Pinocchio (optional interop; used by tests and benchmarks).

Pinocchio is not a runtime dependency: it is imported when :func:`to_pinocchio` is called.

Coordinate conventions mapped here (ours → Pinocchio):

| joint     | our θ / β                                   | Pinocchio q / v                          |
|-----------|---------------------------------------------|------------------------------------------|
| spherical | (w, x, y, z) / ω                            | (x, y, z, w) / ω                         |
| free      | (w, x, y, z, px, py, pz) / [ω; v]           | (px, py, pz, x, y, z, w) / [v; ω]        |
| planar    | (θ, x, y) / (ω, v₁, v₂)                     | (x, y, cos θ, sin θ) / (v₁, v₂, ω)       |

Fixed joints become inertia appended to the parent's Pinocchio joint (as its URDF parser does).
Only ``planar`` joints about the z axis of their joint frame and no ``general`` joints are supported.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import joints as J
from ..model import Model


@dataclass
class PinocchioMap:
    """Index maps between our (θ, β) and Pinocchio's (q, v) for one exported model."""

    model: Model
    pin_model: object
    joints: list  # (our body index, pin joint id)

    def q_to_pin(self, q: np.ndarray) -> np.ndarray:
        out = np.zeros(self.pin_model.nq)
        for k, jid in self.joints:
            b = self.model.bodies[k]
            s, t = b.q_index, self.pin_model.idx_qs[jid]
            x = q[s:s + b.joint.nq]
            if b.joint.code == J.SPHERICAL:
                out[t:t + 4] = [x[1], x[2], x[3], x[0]]
            elif b.joint.code == J.FREE:
                out[t:t + 7] = [x[4], x[5], x[6], x[1], x[2], x[3], x[0]]
            elif b.joint.code == J.PLANAR:
                out[t:t + 4] = [x[1], x[2], np.cos(x[0]), np.sin(x[0])]
            else:
                out[t:t + b.joint.nq] = x
        return out

    def _v_perm(self) -> np.ndarray:
        """perm such that v_pin = v_ours[perm]."""
        perm = np.zeros(self.pin_model.nv, dtype=int)
        for k, jid in self.joints:
            b = self.model.bodies[k]
            s, t, n = b.v_index, self.pin_model.idx_vs[jid], b.joint.nv
            local = np.arange(n)
            if b.joint.code == J.FREE:
                local = np.array([3, 4, 5, 0, 1, 2])
            elif b.joint.code == J.PLANAR:
                local = np.array([1, 2, 0])
            perm[t:t + n] = s + local
        return perm

    def v_to_pin(self, v: np.ndarray) -> np.ndarray:
        return np.asarray(v)[self._v_perm()]

    def v_from_pin(self, v: np.ndarray) -> np.ndarray:
        out = np.empty(self.model.nv)
        out[self._v_perm()] = v
        return out

    def matrix_from_pin(self, A: np.ndarray) -> np.ndarray:
        """An nv × nv matrix in Pinocchio's velocity order → ours."""
        p = self._v_perm()
        out = np.empty_like(A)
        out[np.ix_(p, p)] = A
        return out


def to_pinocchio(model: Model) -> PinocchioMap:
    """Build the equivalent ``pinocchio.Model`` (same placements, inertias, gravity)."""
    import pinocchio as pin

    pm = pin.Model()
    pm.name = model.name
    pm.gravity.linear = model.gravity
    placement_in_joint: dict = {}     # body frame in its Pinocchio joint frame
    joint_of: dict[int, int] = {}
    joints = []
    for k in _depth_first(model):       # Pinocchio needs each subtree contiguous
        b = model.bodies[k]
        if b.parent < 0:
            parent_jid, parent_M = 0, pin.SE3.Identity()
        else:
            parent_jid, parent_M = joint_of[b.parent], placement_in_joint[b.parent]
        M = parent_M * pin.SE3(b.rotation, b.translation)
        inertia = pin.Inertia(b.mass, b.com, b.inertia)
        code = b.joint.code
        if code == J.FIXED:
            pm.appendBodyToJoint(parent_jid, inertia, M)
            joint_of[k] = parent_jid
            placement_in_joint[k] = M
            continue
        if code == J.REVOLUTE:
            jm = pin.JointModelRevoluteUnaligned(b.joint.axis_vector())
        elif code == J.PRISMATIC:
            jm = pin.JointModelPrismaticUnaligned(b.joint.axis_vector())
        elif code == J.SPHERICAL:
            jm = pin.JointModelSpherical()
        elif code == J.FREE:
            jm = pin.JointModelFreeFlyer()
        elif code == J.PLANAR and np.allclose(b.joint.axis_vector(), [0, 0, 1]):
            jm = pin.JointModelPlanar()
        else:
            raise ValueError(f"joint {b.joint_name!r} ({b.joint.type_name}) has no Pinocchio export")
        jid = pm.addJoint(parent_jid, jm, M, b.joint_name)
        pm.appendBodyToJoint(jid, inertia, pin.SE3.Identity())
        joint_of[k] = jid
        placement_in_joint[k] = pin.SE3.Identity()
        joints.append((k, jid))
    return PinocchioMap(model, pm, joints)


def _depth_first(model: Model) -> list[int]:
    children: dict[int, list[int]] = {}
    for k, b in enumerate(model.bodies):
        children.setdefault(b.parent, []).append(k)
    order, stack = [], list(reversed(children.get(-1, [])))
    while stack:
        k = stack.pop()
        order.append(k)
        stack.extend(reversed(children.get(k, [])))
    return order
